"""JupyterLab started the way ``make lab`` starts it, for a test: own port, known token, own settings.

The command is the Makefile's own recipe, run by ``make`` with ``LAB_FLAGS`` (the Makefile's hook for extra
``jupyter lab`` flags) adding only what a test needs: no browser of its own, a free port, a token the test
knows. ``VENV`` is this interpreter's environment and its setup stamp counts as fresh (``make -o``), so
``make`` does not reinstall anything. Two more flags are for the test alone: ``window.jupyterapp`` exposed to
the page (as JupyterLab's own Galata tests do) and checkpoints kept out of the repository. The per-user state
goes to a temporary folder, through JupyterLab's own environment variables: the user settings (no autosave, so the repository's notebooks are never
overwritten; no notebook windowing, so every cell is in the page; no news toast), the workspaces (a fresh
layout), the runtime files and the data folder (so the notebook signatures ``make lab`` records with
``jupyter trust`` go to the test's own folder, not the user's).
"""
from __future__ import annotations

import html
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.browser.processes import descendants, stop_tree

REPO = Path(__file__).resolve().parents[2]

#: user settings: {plugin settings file (under the settings dir): values}
SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def makefile_has_target(target: str) -> bool:
    return any(line.startswith(f"{target}:") for line in (REPO / "Makefile").read_text().splitlines())


class LabServer:
    """``make <target>`` (``lab`` or ``lab-instructor``) as a running JupyterLab; use as a context manager."""

    def __init__(self, state_dir: Path, target: str = "lab"):
        self.target = target
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.state_dir = state_dir
        self.log_path = state_dir / f"make-{target}.log"
        self.proc: subprocess.Popen | None = None
        self._seen = []

    def _env(self) -> dict:
        settings = self.state_dir / "settings"
        for rel, values in SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(values))
        for sub in ("workspaces", "runtime", "data", "checkpoints"):
            (self.state_dir / sub).mkdir(exist_ok=True)
        env = dict(os.environ)
        env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(self.state_dir / "workspaces"),
                   JUPYTER_RUNTIME_DIR=str(self.state_dir / "runtime"),
                   JUPYTER_DATA_DIR=str(self.state_dir / "data"))
        env.pop("MAKEFLAGS", None)
        env.pop("MFLAGS", None)
        return env

    def command(self) -> list[str]:
        venv = Path(sys.prefix)
        flags = (f"--no-browser --ip=127.0.0.1 --port={self.port} --ServerApp.port_retries=0 "
                 f"--IdentityProvider.token={self.token} --ServerApp.allow_root=True --LabApp.expose_app_in_browser=True "
                 f"--FileCheckpoints.root_dir={self.state_dir / 'checkpoints'}")
        return ["make", "--no-print-directory", "-o", str(venv / ".kafkalab-setup"), self.target,
                f"VENV={venv}", f"PYTHON={sys.executable}", f"LAB_FLAGS={flags}"]

    def start(self, timeout_s: float = 60.0) -> LabServer:
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(self.command(), cwd=REPO, env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"`make {self.target}` exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.api("status")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer within {timeout_s:.0f} s:\n{self.log()}")

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def url(self, path: str = "") -> str:
        return f"{self.base}/{path}?token={self.token}"

    def opening_url(self) -> str:
        """The address ``make lab`` opens in the learner's browser (token included).

        The server writes it, browser or not, into its runtime folder: ``jpserver-file-to-run-<pid>-open.html``
        when a file to open was named on the command line, else ``jpserver-<pid>-open.html`` (its default URL).
        """
        runtime = self.state_dir / "runtime"
        pages = sorted(runtime.glob("jpserver-file-to-run-*-open.html")) or sorted(runtime.glob("jpserver-*-open.html"))
        if not pages:
            raise RuntimeError(f"JupyterLab wrote no browser-open page in {runtime}:\n{self.log()}")
        found = re.search(r'href="([^"]+)"', pages[0].read_text())
        if not found:
            raise RuntimeError(f"no address in {pages[0]}")
        return html.unescape(found.group(1))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def remember_processes(self) -> None:
        """Note the server's processes now (kernels included) so stop() ends them even if they outlive it."""
        if self.proc is not None:
            self._seen += descendants(self.proc.pid)

    def stop(self) -> list[str]:
        """Shut the server and its kernels down; return the processes that survived (should be none)."""
        if self.proc is None:
            return []
        self.remember_processes()
        if self.proc.poll() is None:
            try:
                self.api("shutdown", method="POST")
                self.proc.wait(timeout=10)
            except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
                pass
        survivors = stop_tree(self.proc.pid, known=self._seen)
        self.proc.wait(timeout=5)
        return survivors

    def __enter__(self) -> LabServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        survivors = self.stop()
        assert not survivors, f"left behind by `make {self.target}`: {survivors}"
