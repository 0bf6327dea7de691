"""Request memory is bounded: ``queued.max.request.bytes`` (Kafka's memory pool) and buffers that grow as bytes
arrive, not when a size prefix promises them.

The memory tests run the broker in its own process under RLIMIT_AS, so a broker that allocates from a size prefix
fails the test (out of memory, or a resident size far above the bound) instead of the machine.
"""
from __future__ import annotations

import socket
import struct
import time

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, decode_response, request_class
from kafkalab.records import build_batch

from ._broker_process import BrokerProcess
from ._raw_wire import Conn, request_frame

ApiVersions = request_class(ApiKey.API_VERSIONS)
Produce = request_class(ApiKey.PRODUCE)
MiB = 1 << 20


def api_versions_answered(conn: Conn, correlation_id: int) -> bool:
    body = conn.call(ApiVersions(client_software_name="probe", client_software_version="1"), 3, correlation_id)
    return body.error_code == 0


def open_attackers(port: int, n: int, declared: int, body: bytes) -> list[socket.socket]:
    """``n`` connections, each sending a size prefix of ``declared`` bytes and then only ``body`` (as much of it
    as the socket takes without blocking)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(struct.pack(">i", declared))
        s.setblocking(False)
        try:
            s.send(body)
        except BlockingIOError:
            pass
        socks.append(s)
    return socks


def still_open(s: socket.socket) -> bool:
    try:
        return s.recv(1, socket.MSG_PEEK) != b""    # non-blocking: nothing to read and not closed
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_size_prefixes_alone_cost_no_memory(tmp_path):
    """30 clients each announce a 100 MB request (the default socket.request.max.bytes) and send one byte: the
    broker holds kilobytes for them, not 3 GB, and keeps serving everyone else."""
    with BrokerProcess(tmp_path, {}, memory_cap=1 << 30) as broker:
        with broker.conn() as probe:
            assert api_versions_answered(probe, 1)
            before = broker.rss()
            attackers = open_attackers(broker.port, 30, 100 * MiB - 1, b"\x00")
            try:
                time.sleep(0.5)
                assert api_versions_answered(probe, 2)        # the broker is not stuck
                with broker.conn() as newcomer:
                    assert api_versions_answered(newcomer, 3)
                grown = broker.rss() - before
                assert grown < 32 * MiB, f"the broker grew by {grown / MiB:.0f} MiB for 30 one-byte requests"
                assert all(still_open(s) for s in attackers)   # waiting for their bytes, as Kafka waits
            finally:
                for s in attackers:
                    s.close()
        assert broker.alive()


def test_queued_max_request_bytes_bounds_what_requests_hold(tmp_path):
    """With queued.max.request.bytes = 8 MiB, 30 clients that each send 2 MiB of an 8 MiB request make the broker
    hold at most about two of them (the pool is not strict: one request may overshoot it); the others, and a
    newcomer, are muted until memory is released -- delayed, not failed."""
    overrides = {"queued.max.request.bytes": 8 * MiB, "socket.request.max.bytes": 8 * MiB}
    with BrokerProcess(tmp_path, overrides, memory_cap=1 << 30) as broker:
        with broker.conn(timeout=10) as probe:
            assert api_versions_answered(probe, 1)
            before = broker.rss()
            attackers = open_attackers(broker.port, 30, 8 * MiB, bytes(2 * MiB))
            try:
                time.sleep(1.0)
                grown = broker.rss() - before
                assert grown < 8 * MiB + 8 * MiB + 16 * MiB, f"the broker grew by {grown / MiB:.0f} MiB"
                probe.send(request_frame(ApiVersions(client_software_name="probe", client_software_version="1"),
                                         3, correlation_id=2))
                probe.assert_open(wait=0.3)                    # muted: no memory for its request yet
            finally:
                for s in attackers:
                    s.close()
            frame = probe.recv_frame()                         # the attackers' memory came back: answered
            assert frame is not None and decode_response(frame, ApiKey.API_VERSIONS, 3).body.error_code == 0
        assert broker.alive()


def produce_frame(correlation_id: int, value_bytes: int) -> bytes:
    batch = build_batch([(None, b"v" * value_bytes, [], 1_700_000_000_000)])
    body = Produce(transactional_id=None, acks=1, timeout_ms=10000, topic_data=(Produce.TopicProduceData(
        name="pool", partition_data=(Produce.PartitionProduceData(index=0, records=batch),)),))
    return request_frame(body, 9, correlation_id)


@pytest.fixture
def pooled_cluster():
    with Cluster(brokers=1, overrides={"queued.max.request.bytes": MiB, "socket.request.max.bytes": MiB}) as c:
        c.create_topic("pool", 1)
        yield c


def test_a_request_that_does_not_fit_waits_for_memory_and_then_completes(pooled_cluster):
    c = pooled_cluster
    broker = c.broker(0)
    port = broker.bound_endpoints[0].port

    def metrics():
        return c.call(broker.metrics)

    assert metrics()["MemoryPoolAvailable"] == MiB and metrics()["MemoryPoolUsed"] == 0
    holder = socket.create_connection(("127.0.0.1", port), timeout=5)
    holder.sendall(struct.pack(">i", MiB) + b"\x00" * 10)     # takes the whole pool, sends 10 bytes of it
    c.wait_until(lambda: metrics()["MemoryPoolUsed"] == MiB, timeout=5, message="the pool was not taken")
    with Conn(port, timeout=10) as producer:
        producer.send(produce_frame(7, 200_000))
        producer.assert_open(wait=0.5)                         # muted, not failed
        assert metrics()["MemoryPoolUsed"] == MiB
        holder.close()                                         # its half-received request gives its memory back
        answer = decode_response(producer.recv_frame(), ApiKey.PRODUCE, 9)
        assert answer.correlation_id == 7
        assert answer.body.responses[0].partition_responses[0].error_code == 0
    c.wait_until(lambda: metrics()["MemoryPoolUsed"] == 0, timeout=5, message="request memory was not released")


def test_requests_release_their_memory_once_handled(pooled_cluster):
    c = pooled_cluster
    broker = c.broker(0)
    with Conn(broker.bound_endpoints[0].port, timeout=10) as conn:
        for n in range(20):                                    # 20 x 600 KB through a 1 MiB pool, one at a time
            conn.send(produce_frame(n, 600_000))
            answer = decode_response(conn.recv_frame(), ApiKey.PRODUCE, 9)
            assert answer.body.responses[0].partition_responses[0].error_code == 0
    c.wait_until(lambda: c.call(broker.metrics)["MemoryPoolUsed"] == 0, timeout=5,
                 message="request memory was not released")
