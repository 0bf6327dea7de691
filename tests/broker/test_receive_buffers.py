"""Reused receive buffers and in-place patching, end to end: what was acknowledged is what every replica has.

The leader receives Produce requests into reusable buffers and patches base offsets and leader epochs into the
request's own bytes; followers receive Fetch responses into reusable buffers. Here one connection pipelines
large batches (each frame above LARGE_FRAME_BYTES, the next one arriving while the previous one waits in the
produce purgatory), then every replica's segment file is compared byte for byte and decoded against what was
sent.
"""
from __future__ import annotations

import os

import pytest

from kafkalab import Cluster
from kafkalab.protocol import LARGE_FRAME_BYTES, ApiKey, decode_response, request_class
from kafkalab.records import build_batch, decode_batches

from ._raw_wire import Conn, request_frame

Produce = request_class(ApiKey.PRODUCE)
BATCHES = 12
RECORDS = 70


def batch_of(n: int, grow: bool = True) -> bytes:
    """Batch ``n``: 70 records with distinct contents; with ``grow`` each batch is a little larger than the last."""
    values = [bytes([(n * 31 + i) % 251]) * (1000 + (n if grow else 0)) for i in range(RECORDS)]
    return build_batch([(b"k%03d-%03d" % (n, i), v, [], 1_700_000_000_000 + n * 1000 + i)
                        for i, v in enumerate(values)])


def produce_request(n: int, acks: int, grow: bool = True):
    return Produce(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=(Produce.TopicProduceData(
        name="reuse", partition_data=(Produce.PartitionProduceData(index=0, records=batch_of(n, grow)),)),))


@pytest.mark.parametrize("acks", [-1, 1])
def test_pipelined_large_produces_reach_every_replica_intact(tmp_path, acks):
    with Cluster(brokers=3, log_dirs=str(tmp_path)) as c:
        c.create_topic("reuse", 1, replication_factor=3, config={"min.insync.replicas": 2})
        leader = c.partition_state("reuse", 0)["leader"]
        frames = [request_frame(produce_request(n, acks), 9, correlation_id=100 + n) for n in range(BATCHES)]
        assert all(len(f) > LARGE_FRAME_BYTES for f in frames)
        with Conn(c.broker(leader).bound_endpoints[0].port, timeout=20) as conn:
            conn.send(b"".join(frames))                    # all at once: the broker reads ahead while waiting
            offsets = []
            for n in range(BATCHES):
                answer = decode_response(conn.recv_frame(), ApiKey.PRODUCE, 9)
                assert answer.correlation_id == 100 + n
                [p] = answer.body.responses[0].partition_responses
                assert p.error_code == 0
                offsets.append(p.base_offset)
        assert offsets == [n * RECORDS for n in range(BATCHES)]
        c.wait_until(lambda: all(r["log_end_offset"] == BATCHES * RECORDS
                                 for r in c.partition_state("reuse", 0)["logs"].values()),
                     timeout=20, message="followers did not catch up")
        logs = {}
        for broker_id in range(3):
            d = os.path.join(c.broker(broker_id).log_manager.log_dirs[0], "reuse-0")
            with open(os.path.join(d, "00000000000000000000.log"), "rb") as f:
                logs[broker_id] = f.read()
    assert logs[0] == logs[1] == logs[2]
    batches = decode_batches(logs[0])
    assert [b.base_offset for b in batches] == offsets
    for n, b in enumerate(batches):
        sent = decode_batches(batch_of(n))[0]
        assert [(r.key, r.value) for r in b.records] == [(r.key, r.value) for r in sent.records]
        assert b.partition_leader_epoch >= 0


def test_one_connection_needs_at_most_two_buffers_for_its_large_requests():
    """A Produce request lets go of its frame once answered -- the handler coroutine included, which would
    otherwise keep its last request until the next one came -- so its connection receives into the same
    buffers again (one for the request in flight, one for the next arriving)."""
    with Cluster(brokers=1) as c:
        c.create_topic("reuse", 1)
        server = c.broker(0).socket_server
        buffers = set()
        with Conn(c.broker(0).bound_endpoints[0].port, timeout=10) as conn:
            for n in range(8):
                conn.send(request_frame(produce_request(n, 1, grow=False), 9, correlation_id=n))
                answer = decode_response(conn.recv_frame(), ApiKey.PRODUCE, 9)
                assert answer.body.responses[0].partition_responses[0].error_code == 0
                for connection in c.call(lambda: list(server._connections.values())):
                    buffers.update(id(b) for b in connection.frames._large.spares)   # (the controller's too)
        assert 1 <= len(buffers) <= 2, buffers
