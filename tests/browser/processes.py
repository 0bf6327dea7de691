"""Stopping what a browser test started: a process, everything it started, and nothing else.

JupyterLab starts each kernel in a session of its own, and chromedriver starts chromium, so killing one process
group is not enough. :func:`stop_tree` collects the whole tree of descendants of the process the test started
(by parent links, which a new session does not cut), asks them to end, kills what is left and reports what
survived, so a teardown can fail loudly instead of leaving a server, kernel or browser behind.
"""
from __future__ import annotations

import contextlib
import os
import signal

import psutil


def descendants(pid: int) -> list[psutil.Process]:
    """``pid`` and every process below it, found while they are all still alive."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


def stop_tree(pid: int, *, known: list[psutil.Process] = (), grace_s: float = 10.0) -> list[str]:
    """End ``pid``'s process group and every descendant (plus ``known`` ones seen earlier); return survivors.

    SIGTERM first (JupyterLab then shuts its kernels down), SIGKILL after ``grace_s``.
    """
    procs = {p.pid: p for p in [*known, *descendants(pid)]}
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    for p in procs.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    _, alive = psutil.wait_procs(list(procs.values()), timeout=grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=5)
    return [f"{p.pid} {p.name()}" for p in _alive(list(procs.values()))]
