"""The teardown helper ends a whole process tree, including a child in a session of its own (as a kernel is)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from tests.browser.processes import descendants, stop_tree

#: a parent that starts one child in its own group and one in a new session, and ignores SIGTERM itself
TREE = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
subprocess.Popen(sleep)
subprocess.Popen(sleep, start_new_session=True)
print("ready", flush=True)
time.sleep(60)
"""


def test_stop_tree_ends_every_descendant_even_in_another_session():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 10
        while len(descendants(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = descendants(proc.pid)
        assert len(tree) == 3
        assert len({os.getsid(p.pid) for p in tree}) == 2   # one child escaped the process group's session
        survivors = stop_tree(proc.pid, grace_s=1.0)
        assert survivors == []
        assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        proc.kill()
        proc.wait(timeout=5)
