"""Lab 05's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". Fast: no client or broker, except the trace helpers fed with hand-made events."""
from __future__ import annotations

import zlib

import pytest

from kafkalab.clients.producer import murmur2, to_positive
from kafkalab.clients.producer.accumulator import RecordAccumulator, TopicPartition, estimate_size
from kafkalab.clients.tracing import TraceEvent
from kafkalab.labs import NOT_ANSWERED, lab05
from kafkalab.protocol import ApiKey, make_request, request_class
from kafkalab.records import SimpleRecord, build_batch, decode_batch


# -- helpers ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [b"", b"a", b"ab", b"abc", b"key1", b"user-42", b"hello world", b"customer-042",
                                 "é-ключ".encode()])
def test_murmur2_steps_end_in_kafkas_murmur2(key):
    steps = lab05.murmur2_steps(key)
    assert steps[-1]["h (Java int)"] == murmur2(key)
    assert [s["step"] for s in steps][0] == "start" and steps[-1]["step"] == "final mix"
    assert sum(s["step"].startswith("block") for s in steps) == len(key) // 4
    assert any(s["step"] == "tail" for s in steps) == bool(len(key) % 4)


def test_partition_table_matches_the_reference_values():
    # ../shared/reference/protocol-compat.md §9 (checked against librdkafka 2.16.0 and Java's Utils.murmur2)
    rows = {r["key"]: r for r in lab05.partition_table(["key1", "user-42", "a", "hello world", ""], 6)}
    assert rows["a"]["murmur2"] == -1563381124 and rows["a"]["toPositive"] == 584102524
    assert [rows[k]["Java: % 6"] for k in ("key1", "user-42", "a", "hello world", "")] == [2, 4, 4, 1, 3]
    assert [rows[k]["librdkafka: % 6"] for k in ("key1", "user-42", "a", "hello world")] == [4, 1, 3, 3]
    assert rows[""]["librdkafka: % 6"] == "random"


def test_plan_batches_agrees_with_the_accumulator():
    values = [b"x" * n for n in (10, 200, 35, 90, 400, 12, 12, 12, 800, 60, 60, 60, 60)]
    for batch_size in (200, 500, 1024):
        acc = RecordAccumulator(batch_size=batch_size, linger_ms=0)
        sizes = []
        for i, v in enumerate(values):
            size = estimate_size(None, v, ())
            sizes.append(size)
            acc.append(TopicPartition("t", 0), SimpleRecord(None, v, (), i), size, now_ms=0)
        assert [b.record_count for b in acc.batches[TopicPartition("t", 0)]] == lab05.plan_batches(sizes, batch_size)


def test_sequence_outcome_rules():
    stored = [(0, 5), (5, 3), (8, 4)]
    assert lab05.sequence_outcome(stored, 12, 2) == "append"
    assert lab05.sequence_outcome(stored, 5, 3) == "duplicate"
    assert lab05.sequence_outcome(stored, 14, 1) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert lab05.sequence_outcome(stored, 5, 2) == "OUT_OF_ORDER_SEQUENCE_NUMBER"   # not the same batch
    six = [(i, 1) for i in range(6)]
    assert lab05.sequence_outcome(six, 0, 1) == "OUT_OF_ORDER_SEQUENCE_NUMBER"      # only five are remembered
    assert lab05.sequence_outcome([], 0, 3) == "append"


def test_order_events_are_seeded_and_compression_rows_are_stable():
    a, b = lab05.order_events(50), lab05.order_events(50)
    assert a == b and a != lab05.order_events(50, seed=6)
    rows = lab05.compression_rows(a)
    assert [r["compression.type"] for r in rows] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert rows[0]["ratio"] == 1.0 and all(r["ratio"] > 1.5 for r in rows[1:])
    assert rows == lab05.compression_rows(lab05.order_events(50))
    alone = "50 one-record batches, bytes"                      # each record compressed on its own
    assert rows[0][alone] > rows[0]["batch bytes"] + 49 * 55       # 49 more 61-byte headers, a few delta bytes less
    assert all(r[alone] > 2 * r["batch bytes"] for r in rows[1:])


def _produce_event(node, corr, batches, acks=-1, producer_id=-1, base_sequence=-1):
    cls = request_class(ApiKey.PRODUCE)
    topics = {}
    for topic, partition, n in batches:
        records = build_batch([SimpleRecord(b"k", b"v" * 10, (), lab05.T0 + i) for i in range(n)],
                              producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                              base_sequence=base_sequence)
        topics.setdefault(topic, []).append(cls.PartitionProduceData(index=partition, records=records))
    body = cls(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=tuple(
        cls.TopicProduceData(name=t, partition_data=tuple(p)) for t, p in topics.items()))
    request = make_request(body, api_version=9, correlation_id=corr, client_id="t")
    return TraceEvent("t", node, "127.0.0.1:1", corr, 0, 9, request, b"")


def test_batch_rows_reads_batches_in_the_order_each_connection_sent_them():
    events = [_produce_event(2, 1, [("orders", 5, 2)]), _produce_event(0, 1, [("orders", 3, 1), ("clicks", 0, 4)]),
              _produce_event(0, 2, [("orders", 0, 1)], producer_id=1004, base_sequence=7)]
    rows = lab05.batch_rows(events, sequences=True)
    assert [(r["request"], r["broker"], r["topic"], r["partition"], r["records"]) for r in rows] == [
        (1, 0, "clicks", 0, 4), (1, 0, "orders", 3, 1), (2, 0, "orders", 0, 1), (3, 2, "orders", 5, 2)]
    assert rows[2]["producer_id"] == "pid 1004" and rows[2]["base_sequence"] == 7
    assert rows[0]["producer_id"] == "-1 (none)" and rows[0]["compression"] == "none"
    assert decode_batch(events[0].request.body.topic_data[0].partition_data[0].records).records[0].value == b"v" * 10


def test_routing_diagram_is_deterministic():
    placements = [("customer-042", 4), ("customer-007", 4), ("customer-019", 5)]
    leaders = {p: p % 3 for p in range(6)}
    a = lab05.routing_diagram(placements, leaders)
    assert a.source == lab05.routing_diagram(placements, leaders).source
    assert '"p4" -> "b1"' in a.source.replace("p4 -> b1", '"p4" -> "b1"') and "customer-042" in a.source


def test_config_uses_kafkas_names():
    assert lab05.config("h:1", linger_ms=5, enable_idempotence=False) == {
        "bootstrap.servers": "h:1", "client.id": lab05.CLIENT_ID, "linger.ms": 5, "enable.idempotence": False}


# -- checks ----------------------------------------------------------------------------------------------------------------
def test_check_java_partition():
    key, n = "invoice-2024-0117", 12
    right = to_positive(murmur2(key.encode())) % n
    assert lab05.check_java_partition(right, key, n).status == "pass"
    assert lab05.check_java_partition(NOT_ANSWERED, key, n).status == "todo"
    assert lab05.check_java_partition(str(right), key, n).status == "fail"
    crc = zlib.crc32(key.encode()) % n
    if crc != right:
        assert "consistent_random" in lab05.check_java_partition(crc, key, n).text()
    # a key whose murmur2 is negative, and where abs() lands elsewhere: the hint names toPositive
    neg = next(k for k in (f"k{i}" for i in range(1000)) if murmur2(k.encode()) < 0
               and abs(murmur2(k.encode())) % 7 != to_positive(murmur2(k.encode())) % 7
               and abs(murmur2(k.encode())) % 7 != zlib.crc32(k.encode()) % 7)
    r = lab05.check_java_partition(abs(murmur2(neg.encode())) % 7, neg, 7)
    assert r.status == "fail" and "toPositive" in r.text()


def test_check_librdkafka_partition():
    key, n = "invoice-2024-0117", 12
    right = zlib.crc32(key.encode()) % n
    assert lab05.check_librdkafka_partition(right, key, n).status == "pass"
    java = to_positive(murmur2(key.encode())) % n
    assert java != right
    r = lab05.check_librdkafka_partition(java, key, n)
    assert r.status == "fail" and "CRC-32" in r.text()


def test_check_batches():
    sizes, cap = [100, 150, 200, 90, 120, 130, 180, 70, 60, 110], 500
    right = lab05.plan_batches(sizes, cap)
    assert right == [2, 3, 3, 2]
    assert lab05.check_batches(right, sizes, cap).status == "pass"
    assert lab05.check_batches(NOT_ANSWERED, sizes, cap).status == "todo"
    no_header = lab05.plan_batches(sizes, cap, overhead=0)
    assert no_header != right
    assert "header" in lab05.check_batches(no_header, sizes, cap).text()
    assert "exactly one batch" in lab05.check_batches([3, 3], sizes, cap).text()
    assert lab05.check_batches("3,3,3,1", sizes, cap).status == "fail"


def test_check_sequences():
    stored, incoming = [(0, 5), (5, 3), (8, 4)], {"A": (12, 2), "B": (5, 3), "C": (14, 1), "D": (8, 4)}
    right = {"A": "append", "B": "duplicate", "C": "OUT_OF_ORDER_SEQUENCE_NUMBER", "D": "duplicate"}
    assert lab05.check_sequences(right, stored, incoming).status == "pass"
    assert lab05.check_sequences(NOT_ANSWERED, stored, incoming).status == "todo"
    wrong = dict(right, C="append")
    r = lab05.check_sequences(wrong, stored, incoming)
    assert r.status == "fail" and "3 of 4" in r.text()
    assert "answer with one of" in lab05.check_sequences(dict(right, A="ok"), stored, incoming).text()
    partial = {"A": "append"}
    assert lab05.check_sequences(partial, stored, incoming).status == "todo"
