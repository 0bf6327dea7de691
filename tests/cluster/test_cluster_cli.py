"""``kafkalab cluster`` serves real clients from the shell: a ready line naming every listener, kcat -L sees
every broker, SIGTERM stops it cleanly."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.interop


def start(*args):
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "cluster", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise AssertionError(f"no ready line: {line!r} {proc.stderr.read()}")
    return proc, line


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in out


def test_cluster_command_serves_three_brokers():
    proc, line = start("--brokers", "3", "--override", "offsets.topic.replication.factor=1")
    try:
        bootstrap = re.search(r"bootstrap.servers=(\S+)", line).group(1)
        assert len(bootstrap.split(",")) == 3
        assert all(f"{b}=127.0.0.1:" in line for b in range(3))
        kcat = shutil.which("kcat")
        if kcat is not None:
            md = json.loads(subprocess.run([kcat, "-b", bootstrap, "-L", "-J", "-m", "5"], capture_output=True,
                                           timeout=20, check=True).stdout)
            assert sorted(b["id"] for b in md["brokers"]) == [0, 1, 2]
            assert md["controllerid"] in (0, 1, 2)
        elif os.environ.get("KAFKALAB_REQUIRE_KCAT") == "1":
            pytest.fail("kcat is required (KAFKALAB_REQUIRE_KCAT=1) but not installed")
        else:
            pytest.importorskip("confluent_kafka")
            from confluent_kafka.admin import AdminClient
            md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
            assert sorted(md.brokers) == [0, 1, 2]
    finally:
        if proc.poll() is None:
            stop(proc)


def test_cluster_command_with_a_base_port(unused_port_block):
    base = unused_port_block
    proc, line = start("--brokers", "2", "--base-port", str(base))
    try:
        assert f"bootstrap.servers=127.0.0.1:{base},127.0.0.1:{base + 1}" in line
    finally:
        stop(proc)


@pytest.fixture
def unused_port_block():
    import socket
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base > 60000:
            continue
        try:
            with socket.socket() as s2:
                s2.bind(("127.0.0.1", base + 1))
            return base
        except OSError:
            time.sleep(0.01)
    pytest.skip("no two consecutive free ports")
