"""Produce v0-2 and Fetch v0-3 on the wire: message formats v0/v1 converted to and from the stored v2 batches,
Kafka 3's per-version rules (ProduceRequest.validateRecords, zstd before Fetch v10, message.downconversion.enable)
and the conversion metrics."""
from __future__ import annotations

import struct
import time

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, encode_request, make_request, request_class
from kafkalab.records import SimpleRecord, build_batch, decode_batches
from kafkalab.records.legacy import build_message_set, iter_records, read_message_set

from ._raw_wire import Conn

Produce = request_class(ApiKey.PRODUCE)
Fetch = request_class(ApiKey.FETCH)
T0 = 1_700_000_000_000
ROWS = [(0, T0, b"k0", b"v0"), (1, T0 + 1, b"k1", b"v1"), (2, T0 + 2, None, b"v2")]


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": "false"}) as c:
        for name, config in [("legacy", {}), ("zstd-topic", {"compression.type": "zstd"}),
                             ("no-downconversion", {"message.downconversion.enable": "false"}),
                             ("producer-codec", {})]:
            c.create_topic(name, 1, config=config)
        yield c


@pytest.fixture
def port(cluster):
    return cluster.broker(0).bound_endpoints[0].port


def produce(port, topic, records, version):
    body = Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=topic, partition_data=(Produce.PartitionProduceData(index=0, records=records),)),))
    with Conn(port) as c:
        [t] = c.call(body, version).responses
    [p] = t.partition_responses
    return p


def fetch(port, topic, offset, version, max_bytes=1 << 20):
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, topics=(Fetch.FetchTopic(
        topic=topic, partitions=(Fetch.FetchPartition(partition=0, fetch_offset=offset,
                                                      partition_max_bytes=max_bytes),)),))
    with Conn(port) as c:
        [t] = c.call(body, version).responses
    [p] = t.partitions
    return p


def produce_records(cluster):
    return [r for r in cluster.broker(0).channel.request_log.records if r.api_key == ApiKey.PRODUCE]


def wait_for_record(cluster, seen: int):
    """The request log's record of the next Produce (written just after the response went out)."""
    deadline = time.monotonic() + 5
    while len(produce_records(cluster)) <= seen:
        assert time.monotonic() < deadline, "the Produce never reached the request log"
        time.sleep(0.01)
    return produce_records(cluster)[seen]


def end_offset(cluster, topic):
    return cluster.broker(0).replica_manager.partitions[(topic, 0)].log.log_end_offset


@pytest.mark.parametrize("version,magic", [(0, 0), (1, 0), (2, 1)])
def test_produce_v0_to_v2_with_a_message_set_is_stored_as_v2(cluster, port, version, magic):
    before = end_offset(cluster, "legacy")
    metrics = cluster.broker(0).metrics()
    seen = len(produce_records(cluster))
    p = produce(port, "legacy", build_message_set(ROWS, magic=magic, compression="gzip"), version)
    assert (p.error_code, p.base_offset) == (0, before)
    log = cluster.broker(0).replica_manager.partitions[("legacy", 0)].log
    [stored] = decode_batches(log.read(before, 1 << 20, isolation="log_end").records)
    assert (stored.magic, stored.base_offset, stored.last_offset) == (2, before, before + 2)
    assert [r.timestamp for r in stored.records] == ([-1] * 3 if magic == 0 else [T0, T0 + 1, T0 + 2])
    after = cluster.broker(0).metrics()
    assert after["ProduceMessageConversionsPerSec"] - metrics["ProduceMessageConversionsPerSec"] == 3
    assert after["ProduceMessageConversionsPerSec,topic=legacy"] >= 3
    record = wait_for_record(cluster, seen)
    assert record.api_version == version and record.message_conversions_time_ms > 0
    assert record.temporary_memory_bytes > 0


def test_produce_v2_may_still_carry_a_v2_batch(port):
    p = produce(port, "legacy", build_batch([SimpleRecord(b"k", b"v", (), T0)]), 2)
    assert p.error_code == 0 and p.log_append_time_ms == -1


@pytest.mark.parametrize("case,code,message", [
    ("magic-1", 87, "Produce requests with version 3 are only allowed to contain record batches with magic version 2"),
    ("two-batches", 87, "Produce requests with version 3 are only allowed to contain exactly one record batch per "
                        "partition"),
    ("empty", 87, "Produce requests with version 3 must have at least one record batch per partition"),
    ("zstd", 76, "Produce requests with version 3 are not allowed to use ZStandard compression"),
])
def test_produce_v3_validate_records(port, case, code, message):
    one = build_batch([SimpleRecord(b"k", b"v", (), T0)])
    records = {"magic-1": build_message_set(ROWS, magic=1), "two-batches": one + one, "empty": b"",
               "zstd": build_batch([SimpleRecord(b"k", b"v", (), T0)], compression="zstd")}[case]
    p = produce(port, "legacy", records, 3)
    assert (p.error_code, p.base_offset) == (code, -1)


def test_produce_v1_with_a_corrupt_message_is_corrupt_message(port):
    data = bytearray(build_message_set(ROWS, magic=0))
    data[-1] ^= 0xFF
    assert produce(port, "legacy", bytes(data), 1).error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("version,magic", [(0, 0), (1, 0), (2, 1), (3, 1)])
@pytest.mark.parametrize("codec", [None, "snappy"])
def test_fetch_v0_to_v3_down_converts(cluster, port, version, magic, codec):
    topic = "producer-codec"
    base = end_offset(cluster, topic)
    batch = build_batch([SimpleRecord(b"k%d" % i, b"v%d" % i, (("h", b"x"),), T0 + i) for i in range(4)],
                        compression=codec)
    assert produce(port, topic, batch, 9).error_code == 0
    before = cluster.broker(0).metrics()["FetchMessageConversionsPerSec"]
    p = fetch(port, topic, base + 1, version)
    assert p.error_code == 0 and p.high_watermark == base + 4
    entries = read_message_set(p.records)
    assert {e.magic for e in entries} == {magic}
    got = [(r.offset, r.timestamp, r.key, r.value) for r in iter_records(p.records)]
    expected = [(base + i, T0 + i if magic else -1, b"k%d" % i, b"v%d" % i) for i in range(4)]
    assert got == (expected if codec else expected[1:])     # a wrapper keeps every record; plain ones from offset
    converted = cluster.broker(0).metrics()["FetchMessageConversionsPerSec"] - before
    assert converted == (4 if codec else 3)


def test_fetch_v4_is_not_converted(cluster, port):
    p = fetch(port, "producer-codec", 0, 4)
    assert p.records[16] == 2


def test_zstd_topic_needs_fetch_v10(cluster, port):
    assert produce(port, "zstd-topic", build_batch([SimpleRecord(b"k", b"v", (), T0)]), 9).error_code == 0
    assert fetch(port, "zstd-topic", 0, 9).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE == 76
    assert fetch(port, "zstd-topic", 0, 10).error_code == 0


def test_a_zstd_batch_cannot_be_down_converted(cluster, port):
    topic = "producer-codec"
    base = end_offset(cluster, topic)
    zstd = build_batch([SimpleRecord(b"k", b"v", (), T0)], compression="zstd")
    assert produce(port, topic, zstd, 7).error_code == 0
    assert fetch(port, topic, base, 3).error_code == 76


def test_message_downconversion_enable_false_refuses_old_consumers(cluster, port):
    assert produce(port, "no-downconversion", build_message_set(ROWS, magic=1), 2).error_code == 0
    p = fetch(port, "no-downconversion", 0, 3)
    assert (p.error_code, p.high_watermark) == (ErrorCode.UNSUPPORTED_VERSION, -1)
    assert fetch(port, "no-downconversion", 0, 4).error_code == 0


def test_fetch_v2_hard_limit_sends_no_batch_larger_than_partition_max_bytes(cluster, port):
    topic = "producer-codec"
    base = end_offset(cluster, topic)
    big = build_batch([SimpleRecord(b"k", b"x" * 500, (), T0)])
    assert produce(port, topic, big, 9).error_code == 0
    assert fetch(port, topic, base, 2, max_bytes=100).records == b""          # v0-2: hard limit
    p = fetch(port, topic, base, 3, max_bytes=100)                           # v3: at least one message
    assert [r.value for r in iter_records(p.records)] == [b"x" * 500]


def test_produce_v0_response_has_no_log_append_time_field(port):
    body = Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name="legacy", partition_data=(Produce.PartitionProduceData(index=0, records=build_message_set(
            ROWS[:1], magic=0)),)),))
    with Conn(port) as c:
        c.send(encode_request(make_request(body, api_version=0, correlation_id=9), size_prefix=True))
        frame = c.recv_frame()
    # correlation id, [topics: name, [index, error_code, base_offset]] -- nothing else in v0
    assert struct.unpack_from(">i", frame)[0] == 9
    assert len(frame) == 4 + 4 + 2 + len("legacy") + 4 + 4 + 2 + 8


def test_fetch_v17_is_served_and_v18_is_not_advertised(cluster, port):
    import uuid

    from kafkalab.server.apis import enabled_apis

    assert enabled_apis()[ApiKey.FETCH] == (0, 17) and enabled_apis()[ApiKey.PRODUCE] == (0, 11)
    topic_id = cluster.broker(0).metadata_cache.topic_id("producer-codec")
    base = end_offset(cluster, "producer-codec")
    assert produce(port, "producer-codec", build_batch([SimpleRecord(b"k", b"v", (), T0)]), 9).error_code == 0
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=(Fetch.FetchTopic(
        topic_id=topic_id, partitions=(Fetch.FetchPartition(partition=0, fetch_offset=base, partition_max_bytes=1 << 20,
                                                            replica_directory_id=uuid.uuid4()),)),))
    with Conn(port) as c:
        response = c.call(body, 17)
    [t] = response.responses
    assert t.topic_id == topic_id and t.partitions[0].error_code == 0 and t.partitions[0].records[16] == 2
