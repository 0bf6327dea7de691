"""Real clients through the tap against a three-broker kafkalab cluster; tshark reads the tap's pcap.

Every client must work through the tap unmodified: it bootstraps on the tap's port, learns the tap's other
ports from the rewritten Metadata/FindCoordinator responses and never connects to a broker directly (the test
checks that the tap saw traffic on one port per broker). What the tap forwards is what the broker sent, except
for the rewritten addresses (:func:`_assert_pass_through`).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

import pytest

from kafkalab.cluster import Cluster
from kafkalab.protocol import decode_response
from kafkalab.trace import Tap
from kafkalab.trace.pcap import read_pcap, write_pcap

from ._broker_support import (aiokafka_consume, aiokafka_produce, assert_same_records, confluent_consume,
                              confluent_produce, kafka_python_consume, kafka_python_produce, kcat, kcat_consume,
                              kcat_lines, require_kcat, sample_records, unique)
from ._support import require_client

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3) as c:
        yield c


@pytest.fixture
def tap(cluster):
    with Tap(cluster.bootstrap_servers.split(",")[0]) as t:
        yield t


@pytest.fixture
def topic(cluster):
    name = unique("tap")
    cluster.create_topic(name, partitions=3, replication_factor=3)
    return name


def _assert_pass_through(cluster, tap: Tap) -> None:
    """One tap port per broker used; responses forwarded as sent except the rewritten broker addresses."""
    upstream = {(e.host, e.port) for b in cluster.brokers.values() for e in b.bound_endpoints[:1]}
    assert set(tap.broker_ports) == upstream
    assert {c.tap for c in tap.connections} == set(tap.broker_ports.values())
    assert {c.upstream for c in tap.rewrites()} == upstream
    for f in tap.responses():
        assert f.error is None, f
        if f.forwarded is None:
            continue
        sent, got = (decode_response(b, f.api_key, f.api_version) for b in (f.frame, f.forwarded))
        field = "coordinators" if f.api_key == 10 and f.api_version >= 4 else "brokers"
        if f.api_key == 10 and f.api_version < 4:
            assert got.body._replace(host=sent.body.host, port=sent.body.port) == sent.body
        else:
            assert got.body._replace(**{field: getattr(sent.body, field)}) == sent.body
            assert [(x.host, x.port) for x in getattr(got.body, field) if x.port >= 0] == [
                tap.broker_ports[(x.host, x.port)] for x in getattr(sent.body, field) if x.port >= 0]
    assert not [f for f in tap.requests() if f.error], "a client request did not decode"


def test_confluent_kafka_produce_and_group_consume(cluster, tap, topic):
    require_client("confluent-kafka")
    records = sample_records("tap-ck", partitions=3)
    confluent_produce(tap.bootstrap_servers, topic, records)
    got = confluent_consume(tap.bootstrap_servers, topic, [0, 1, 2], len(records))
    assert_same_records(got, records)
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": tap.bootstrap_servers, "group.id": unique("tap-group"),
                            "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        seen = 0
        for _ in range(60):
            msgs = consumer.consume(100, 0.5)
            seen += len([m for m in msgs if not m.error()])
            if seen >= len(records):
                break
        assert seen == len(records)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert {"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "Produce", "Fetch"} <= {
        f.api_name for f in tap.requests()}
    _assert_pass_through(cluster, tap)


def test_kcat_lists_tap_addresses_produces_and_consumes(cluster, tap, topic):
    require_kcat()
    md = json.loads(kcat(tap.bootstrap_servers, "-L", "-J"))
    assert sorted(b["name"] for b in md["brokers"]) == sorted(f"{h}:{p}" for h, p in tap.broker_ports.values())
    records = [r._replace(headers=(), partition=r.partition) for r in sample_records("tap-kcat", partitions=3,
                                                                                     ascii_only=True)
               if r.key is not None and r.value]
    for p in range(3):
        kcat(tap.bootstrap_servers, "-P", "-t", topic, "-p", str(p), "-K:",
             input=kcat_lines([r for r in records if r.partition == p]))
    got = kcat_consume(tap.bootstrap_servers, topic, [0, 1, 2])
    assert [(r.partition, r.key, r.value) for r in got] == [(r.partition, r.key, r.value) for r in records]
    _assert_pass_through(cluster, tap)


def _three_free_ports() -> int:
    """A port P with P+1 and P+2 free too (the tap takes them for the brokers): a free port's neighbours are often
    in use by outgoing connections (on a busy machine, about one run in ten failed to open the brokers' ports)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            others = [socket.socket() for _ in range(2)]
            try:
                for i, o in enumerate(others, 1):
                    o.bind(("127.0.0.1", port + i))
                return port
            except OSError:
                continue
            finally:
                for o in others:
                    o.close()
    raise RuntimeError("no three consecutive free ports")


def test_a_fixed_listen_port_gives_the_brokers_the_next_ports(cluster):
    require_kcat()
    port = _three_free_ports()
    first = cluster.broker(0).bound_endpoints[0]
    with Tap(f"{first.host}:{first.port}", f"127.0.0.1:{port}") as tap:
        md = json.loads(kcat(tap.bootstrap_servers, "-L", "-J"))
        by_id = {b["id"]: b["name"] for b in md["brokers"]}
        assert by_id[0] == f"127.0.0.1:{port}"                      # the bootstrap broker is broker 0
        assert sorted(by_id.values()) == [f"127.0.0.1:{port + i}" for i in range(3)]


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_python_clients_through_the_tap(cluster, tap, topic, client):
    require_client(client)
    produce, consume = ((kafka_python_produce, kafka_python_consume) if client == "kafka-python"
                        else (aiokafka_produce, aiokafka_consume))
    records = sample_records(f"tap-{client}", partitions=3)
    produce(tap.bootstrap_servers, topic, records)
    assert_same_records(consume(tap.bootstrap_servers, topic, [0, 1, 2], len(records)), records)
    _assert_pass_through(cluster, tap)


def _tshark(path, ports) -> list[list[str]]:
    tshark = shutil.which("tshark")
    if tshark is None:
        if os.environ.get("KAFKALAB_REQUIRE_TSHARK") == "1":
            pytest.fail("tshark is required (KAFKALAB_REQUIRE_TSHARK=1) but not on PATH: apt-get install -y tshark")
        pytest.skip("tshark is not installed (apt-get install -y tshark)")
    args = [tshark, "-r", str(path)]
    for port in sorted(ports):
        args += ["-d", f"tcp.port=={port},kafka"]
    args += ["-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-e", "kafka.correlation_id",
             "-e", "_ws.malformed", "-e", "_ws.expert.message", "-e", "tcp.analysis.flags"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [line.split("\t") for line in res.stdout.splitlines()]


def test_tshark_decodes_the_pcap(cluster, tap, topic, tmp_path):
    """kafka-python pinned to Kafka 2.0's API versions (Wireshark 4.0's Kafka dissector knows Metadata only up to
    v9, Produce up to v8, ApiVersions up to v3, and flags newer ones as malformed): not one malformed frame,
    no TCP analysis complaint, every frame the tap recorded seen by tshark with its correlation id; the file
    reads back to the same frames."""
    require_client("kafka-python")
    records = sample_records("tap-pcap", partitions=3)
    kafka_python_produce(tap.bootstrap_servers, topic, records, api_version=(2, 0, 0))
    kafka_python_consume(tap.bootstrap_servers, topic, [0, 1, 2], len(records), api_version=(2, 0, 0))
    path = tmp_path / "tap.pcap"
    frames = list(tap.frames)    # one snapshot: a closing client may still add a frame after the file is written
    write_pcap(path, frames, list(tap.connections), list(tap.events), tap.started_at)
    rows = _tshark(path, [p for _, p in tap.broker_ports.values()])
    assert rows and not [r for r in rows if r[1] or r[3]], rows[:5]
    seen = sorted(int(cid) for r in rows for cid in r[0].split(",") if cid)
    assert seen == sorted(f.correlation_id for f in frames)
    in_time_order = sorted(frames, key=lambda f: (f.time, f.index))      # the order write_pcap lays them out
    assert [f.frame for f in read_pcap(path)] == [f.forwarded or f.frame for f in in_time_order]


def test_tshark_frames_the_pcap_of_a_recent_client(cluster, tap, topic, tmp_path):
    """confluent-kafka speaks versions newer than Wireshark 4.0's dissector knows (it then says "Unsupported ...
    version" and marks the frame malformed): the framing is still right -- tshark finds every frame, and flags
    no frame for any other reason and no TCP segment."""
    require_client("confluent-kafka")
    records = sample_records("tap-pcap-ck", partitions=3)
    confluent_produce(tap.bootstrap_servers, topic, records)
    confluent_consume(tap.bootstrap_servers, topic, [0, 1, 2], len(records))
    path = tmp_path / "tap.pcap"
    # One snapshot for the file and the comparison: a client's late request (librdkafka closes asynchronously)
    # may still be recorded after the file is written.
    frames = list(tap.frames)
    write_pcap(path, frames, list(tap.connections), list(tap.events), tap.started_at)
    rows = _tshark(path, [p for _, p in tap.broker_ports.values()])
    seen = sorted(int(cid) for r in rows for cid in r[0].split(",") if cid)
    assert seen == sorted(f.correlation_id for f in frames)
    assert not [r for r in rows if r[3]]
    for r in rows:
        if r[1]:
            assert "Unsupported" in r[2] and "version" in r[2], r
