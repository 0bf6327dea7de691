"""A broker in a process of its own (``python -m kafkalab.cli broker``) under an address-space cap.

For tests whose failure mode is memory: a broker that allocates what it should not hits ``RLIMIT_AS`` and fails
the test, instead of swapping the machine. ``rss()`` reads the process's resident memory from ``/proc``.
"""
from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from ._raw_wire import Conn


class BrokerProcess:
    def __init__(self, workdir: Path, overrides: dict, memory_cap: int = 1 << 30):
        self.workdir = workdir
        self.overrides = dict(overrides)
        self.memory_cap = memory_cap
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0
        self.log_path = workdir / "broker.log"

    def _cap(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.memory_cap, self.memory_cap))

    def __enter__(self) -> "BrokerProcess":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        props = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": str(self.workdir / "kafka-logs"),
                 **self.overrides}
        args = [sys.executable, "-m", "kafkalab.cli", "broker", "--log-level", "INFO"]
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._log, preexec_fn=self._cap)
        deadline = time.monotonic() + 60
        while "started (listeners" not in self.log_text():
            assert self.proc.poll() is None, f"the broker did not start:\n{self.log_text()[-3000:]}"
            assert time.monotonic() < deadline, "the broker did not start within 60 s"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss(self) -> int:
        """Resident memory in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def conn(self, timeout: float = 5.0) -> Conn:
        return Conn(self.port, timeout=timeout)
