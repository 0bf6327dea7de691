"""A live lab in a real Jupyter kernel: restarting or shutting the kernel down leaves no broker, port or thread.

A notebook starts its brokers inside the kernel's process (``Cluster(...)``) and its live widgets run threads
there. A learner who restarts the kernel (or closes the notebook, which shuts the kernel down) must get every
port back -- the next run binds them again -- and no process left behind. This drives a real ipykernel through
jupyter_client, exactly as JupyterLab does.
"""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

ROOT = Path(__file__).resolve().parents[2]

START = """
import json, os, threading
from kafkalab.cluster import Cluster
from kafkalab.viz import ClusterControls, ClusterDashboard, LiveRequestLog
cluster = Cluster(brokers=3).start()
cluster.create_topic("restart", 3, 3)
dashboard, controls, request_log = ClusterDashboard(cluster), ClusterControls(cluster), LiveRequestLog(cluster)
print(json.dumps({"pid": os.getpid(), "ports": [e.port for b in cluster.brokers.values() for e in b.bound_endpoints],
                  "threads": sorted(t.name for t in threading.enumerate() if t.name.startswith("kafkalab-refresh"))}))
"""

THREADS = """
import json, threading
print(json.dumps(sorted(t.name for t in threading.enumerate())))
"""


def run(client, code: str, timeout: float = 120.0) -> str:
    """Execute ``code`` in the kernel; its stdout (fails on an error)."""
    out, error = [], []

    def collect(msg):
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            out.append(content["text"])
        elif kind == "error":
            error.append("\n".join(content["traceback"]))
    reply = client.execute_interactive(code, timeout=timeout, output_hook=collect)
    assert reply["content"]["status"] == "ok" and not error, "\n".join(error)
    return "".join(out)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def process_gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def kernel():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)


def test_a_kernel_restart_frees_every_port_and_leaves_no_process_or_thread(kernel):
    manager, client = kernel
    started = json.loads(run(client, START).strip().splitlines()[-1])
    assert len(started["ports"]) == 3 and not any(port_is_free(p) for p in started["ports"])   # bound now
    assert [t.split("-", 3)[-1].split("-")[0] for t in started["threads"]] == ["dashboard", "request"]  # refreshers
    manager.restart_kernel(now=True)
    client.wait_for_ready(timeout=60)
    assert process_gone(started["pid"]), "the old kernel process is still there"
    assert all(port_is_free(p) for p in started["ports"]), "a broker port is still bound after the restart"
    threads = json.loads(run(client, THREADS).strip().splitlines()[-1])
    assert not [t for t in threads if t.startswith("kafkalab")], threads
    again = json.loads(run(client, START).strip().splitlines()[-1])      # the lab runs again from the top
    assert again["pid"] != started["pid"] and len(again["ports"]) == 3


def test_closing_the_notebook_shuts_the_kernel_down_with_its_brokers(kernel):
    manager, client = kernel
    started = json.loads(run(client, START).strip().splitlines()[-1])
    manager.shutdown_kernel(now=False)        # what closing a notebook (and its kernel) does: a polite shutdown
    assert process_gone(started["pid"], timeout=30), "the kernel did not exit"
    assert all(port_is_free(p) for p in started["ports"])
