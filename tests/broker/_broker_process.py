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
    """``python -m kafkalab.cli broker`` on a free port under ``RLIMIT_AS``, its stderr in ``broker.log``. A context
    manager (``start``/``stop``); ``start`` again after ``stop`` runs a fresh broker on new log dirs."""

    def __init__(self, workdir: Path, overrides: dict, memory_cap: int = 1 << 30, log_level: str = "INFO"):
        self.workdir = workdir
        self.overrides = dict(overrides)
        self.memory_cap = memory_cap
        self.log_level = log_level
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0
        self.log_path = workdir / "broker.log"
        self.starts = 0

    def _cap(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.memory_cap, self.memory_cap))

    def start(self) -> "BrokerProcess":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.starts += 1
        logs = "kafka-logs" if self.starts == 1 else f"kafka-logs-{self.starts}"
        props = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": str(self.workdir / logs),
                 **self.overrides}
        args = [sys.executable, "-m", "kafkalab.cli", "broker", "--log-level", self.log_level]
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        seen = len(self.log_text()) if self.log_path.exists() else 0
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._log, preexec_fn=self._cap)
        deadline = time.monotonic() + 60
        while "started (listeners" not in self.log_text()[seen:]:
            assert self.proc.poll() is None, f"the broker did not start:\n{self.log_text()[-3000:]}"
            assert time.monotonic() < deadline, "the broker did not start within 60 s"
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> "BrokerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

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
