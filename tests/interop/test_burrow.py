"""Burrow (LinkedIn's consumer-lag monitor; Debian's 1.2.1, Sarama 1.22 inside) against a kafkalab cluster.

Burrow learns committed offsets the way a Kafka 0.9+ tool does: it *consumes* ``__consumer_offsets`` and
decodes the OffsetCommit records (key version 1, value version 1 or 3), asks the brokers for each partition's
log end offset (ListOffsets), and serves the lag over HTTP (``/v3/kafka/<cluster>/consumer/<group>/lag``). The
test checks its numbers against the lag ``kafkalab consumer-groups --describe`` prints.

``kafka-version="1.0.0"`` in Burrow's client profile: Sarama then speaks the RecordBatch v2 era (Fetch v4+,
Produce v3+), so nothing needs the v0/v1 message-format conversions. Burrow also needs a ZooKeeper of its own
(its coordinator keeps a root znode, whatever the clusters it watches); kafkalab's coordination store is
in-process and speaks no ZooKeeper wire protocol, so the test starts Apache ZooKeeper from the jars PySpark
ships (``pyspark/jars/zookeeper-*.jar``) on a free port.

Skipped when Burrow (``/usr/bin/Burrow``, Debian package ``burrow``), Java or those jars are missing, unless
``KAFKALAB_REQUIRE_BURROW=1`` (CI).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.protocol import ApiKey

from ._broker_support import requests

pytestmark = pytest.mark.interop

GROUP, TOPIC = "burrow-watched", "burrow-lagged"
CLIENT_ID = "burrow-lab"
KAFKA_VERSION = "1.0.0"


def _missing(what: str) -> None:
    if os.environ.get("KAFKALAB_REQUIRE_BURROW") == "1":
        pytest.fail(f"KAFKALAB_REQUIRE_BURROW=1, but {what}")
    pytest.skip(what)


def _burrow() -> str:
    found = shutil.which("Burrow") or shutil.which("burrow")
    if found is None:
        _missing("Burrow is not installed (Debian: apt-get install burrow)")
    return found


def _zookeeper_classpath() -> str:
    try:
        import pyspark
    except ImportError:
        _missing("PySpark (whose jars hold Apache ZooKeeper, which Burrow needs) is not installed")
    jars = Path(pyspark.__file__).parent / "jars"
    if not list(jars.glob("zookeeper-*.jar")) or shutil.which("java") is None:
        _missing(f"no java, or no zookeeper-*.jar in {jars}")
    return str(jars / "*")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:   # Burrow waits for its modules; it holds nothing worth waiting for
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@contextlib.contextmanager
def _zookeeper(tmp: Path):
    port = _free_port()
    proc = subprocess.Popen(["java", "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.4lw.commands.whitelist=srvr",
                             "-cp", _zookeeper_classpath(),
                             "org.apache.zookeeper.server.ZooKeeperServerMain", str(port), str(tmp / "zk")],
                            stdout=open(tmp / "zookeeper.out", "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as s:
                s.sendall(b"srvr")     # "Mode: standalone" once it serves sessions (before: "not currently serving")
                if b"Mode:" in s.recv(4096):
                    break
            assert proc.poll() is None and time.monotonic() < deadline, (tmp / "zookeeper.out").read_text()[-2000:]
            time.sleep(0.2)
        yield port
    finally:
        _stop(proc)


def _config(tmp: Path, bootstrap: str, zookeeper_port: int, http_port: int) -> None:
    (tmp / "burrow.toml").write_text(f"""
[general]
pidfile="{tmp}/burrow.pid"
[logging]
filename="{tmp}/burrow.log"
level="info"
[zookeeper]
servers=["127.0.0.1:{zookeeper_port}"]
timeout=6
root-path="/burrow"
[client-profile.lab]
client-id="{CLIENT_ID}"
kafka-version="{KAFKA_VERSION}"
[cluster.lab]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="lab"
topic-refresh=1
offset-refresh=1
[consumer.lab]
class-name="kafka"
cluster="lab"
servers=["{bootstrap}"]
client-profile="lab"
offsets-topic="__consumer_offsets"
start-latest=false
[httpserver.default]
address="127.0.0.1:{http_port}"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
""", encoding="utf-8")


def _kafkalab_lag(bootstrap: str) -> dict:
    """{partition: lag} from ``kafkalab consumer-groups --describe`` (kafka-consumer-groups.sh's table)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", GROUP]) == 0
    lines = [line.split() for line in out.getvalue().splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols[:1] == ["GROUP"])
    names = lines[header]
    rows = [dict(zip(names, cols)) for cols in lines[header + 1:]]
    return {int(r["PARTITION"]): int(r["LAG"]) for r in rows if r["TOPIC"] == TOPIC}


def _burrow_lag(http_port: int, deadline: float) -> dict:
    url = f"http://127.0.0.1:{http_port}/v3/kafka/lab/consumer/{GROUP}/lag"
    last = None
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            last = json.loads(urllib.request.urlopen(url, timeout=2).read())
            partitions = (last.get("status") or {}).get("partitions") or []
            if not last["error"] and len(partitions) == 2:
                return {p["partition"]: p["current_lag"] for p in partitions if p["topic"] == TOPIC}
        time.sleep(0.5)
    raise AssertionError(f"Burrow never reported the group's lag; last answer: {last}")


def test_burrow_reads_the_lag_kafkalab_computes(cluster, tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    burrow = _burrow()
    cluster.create_topic(TOPIC, 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(20):
        producer.produce(TOPIC, str(i).encode(), partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP,
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 4), TopicPartition(TOPIC, 1, 7)], asynchronous=False)
    consumer.close()
    expected = _kafkalab_lag(cluster.bootstrap_servers)
    assert expected == {0: 6, 1: 3}
    with _zookeeper(tmp_path) as zookeeper_port:
        http_port = _free_port()
        _config(tmp_path, cluster.bootstrap_servers, zookeeper_port, http_port)
        proc = subprocess.Popen([burrow, "-config-dir", str(tmp_path)], stdout=open(tmp_path / "burrow.out", "wb"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            got = _burrow_lag(http_port, time.monotonic() + 60)
        except AssertionError:
            raise AssertionError(((tmp_path / "burrow.out").read_text(errors="replace")
                                  + (tmp_path / "burrow.log").read_text(errors="replace"))[-3000:]) from None
        finally:
            _stop(proc)
    assert got == expected
    # Sarama at 1.0.0 reads __consumer_offsets with Fetch v4+ (RecordBatch v2): no message-format conversion
    fetches = {r.api_version for r in requests(cluster, client_id=CLIENT_ID, api_key=ApiKey.FETCH)}
    assert fetches and min(fetches) >= 4, fetches
