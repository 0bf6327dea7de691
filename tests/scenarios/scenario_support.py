"""Shared helpers of the scenario tests: record a confluent-kafka run into a :class:`History`."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafkalab.cluster import History

# tests/ is on sys.path (tests/conftest.py puts it there): one kcat check for interop and scenarios alike
from interop._broker_support import require_kcat  # noqa: E402,F401

# Errors after which a write certainly did not happen (the broker refused it before appending).
DEFINITE_FAILURES = {KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_REQUIRED_ACKS}


def recorder(history: History, value: bytes):
    """A delivery callback ending the send of ``value``: ok / fail (definite) / info (unknown)."""
    op = history.send(value)

    def on_delivery(err, msg):
        if err is None:
            op.ok(msg.partition(), msg.offset())
        elif err.code() in DEFINITE_FAILURES:
            op.fail(err.name())
        else:
            op.info(err.name())
    return on_delivery


def read_everything(bootstrap: str, topic: str, history: History, timeout: float = 20.0) -> list:
    """Read partition 0 from the start to its high watermark, recording each poll; then mark the read
    complete. Returns the values read."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "log_level": 0})
    try:
        _, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        history.seek(0, 0, process="reader")
        values, position = [], 0
        deadline = time.monotonic() + timeout
        while position < end and time.monotonic() < deadline:
            batch = [m for m in c.consume(100, 0.5) if not m.error()]
            if batch:
                history.poll([(m.partition(), m.offset(), m.value()) for m in batch], process="reader")
                values += [m.value() for m in batch]
                position = batch[-1].offset() + 1
        assert position >= end, f"read stopped at {position} of {end}"
        history.read_to_end(0, end)
        return values
    finally:
        c.close()


def log_batches(cluster, broker_id: int, topic: str, partition: int = 0) -> list[tuple[int, int, int]]:
    """``(base_offset, last_offset, partition_leader_epoch)`` of every batch in a replica's ``.log`` files."""
    import struct
    out = []
    for raw in segment_bytes(cluster, broker_id, topic, partition):
        pos = 0
        while pos + 27 <= len(raw):
            base, length, epoch = struct.unpack_from(">qii", raw, pos)
            (delta,) = struct.unpack_from(">i", raw, pos + 23)
            out.append((base, base + delta, epoch))
            pos += 12 + length
    return out


def segment_bytes(cluster, broker_id: int, topic: str, partition: int = 0) -> list[bytes]:
    """The bytes of each ``.log`` segment of a replica, in offset order."""
    d = cluster.base_dir / f"broker-{broker_id}" / f"{topic}-{partition}"
    return [p.read_bytes() for p in sorted(d.glob("*.log"))]


def make_producer(cluster, acks, **extra):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "retries": 0, "linger.ms": 0,
                     "message.timeout.ms": 8000, "request.timeout.ms": 2000, "log_level": 0, **extra})


def produce(cluster, topic: str, history: History, values, acks, **extra) -> None:
    """Send ``values`` to partition 0 one by one, recording each in ``history``."""
    p = make_producer(cluster, acks, **extra)
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=recorder(history, v))
    assert p.flush(15) == 0
