"""confluent-kafka 2.16.1 (librdkafka 2.16) against the kafkalab broker.

Idempotent producer with ``acks=all`` and each ``compression.type``; the codec is checked on the stored batches
(the broker keeps the producer's batch as it arrived). The consumer uses ``assign()``: the Python binding
insists on a ``group.id`` but never joins the group without ``subscribe()`` (it only looks up the
coordinator), so no group API is needed. Then the offset APIs: watermarks, offsets for times, seek.
"""
from __future__ import annotations

import time

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import (CODEC_IDS, CODECS, GROUP_APIS, TIMEOUT_MS, assert_same_records, assert_used,
                              confluent_consume, confluent_produce, deadline, large_records, requests, sample_records,
                              stored_batches, stored_records, unique, used_apis)

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_produce_each_codec_then_assign_consume(cluster, topic, codec):
    records = sample_records(codec)
    client_id = unique(f"ck-{codec}")
    offsets = confluent_produce(cluster.bootstrap_servers, topic, records, **{"compression.type": codec,
                                                                             "client.id": client_id})
    # offsets are assigned in order, from 0, per partition
    for p in (0, 1):
        assert [o for q, o in offsets if q == p] == list(range(sum(1 for r in records if r.partition == p)))

    for p in (0, 1):
        batches = stored_batches(cluster, topic, p)
        assert {b.compression_type for b in batches} == {CODEC_IDS[codec]}, f"{codec} did not arrive compressed"
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        assert [b.base_sequence for b in batches][0] == 0
    assert_used(cluster, client_id, ApiKey.INIT_PRODUCER_ID)
    assert {r.api_version for r in requests(cluster, client_id=client_id, api_key=ApiKey.PRODUCE)} == {10}
    assert_same_records(stored_records(cluster, topic, (0, 1)), records, "stored log")

    consumer_id = unique("ck-consumer")
    got = confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **{"client.id": consumer_id})
    assert_same_records(got, records, f"confluent-kafka consumer ({codec})")
    assert not used_apis(cluster, consumer_id) & GROUP_APIS


def test_large_records_fetched_with_sendfile(cluster, topic):
    """Values of 120 KB: the fetched segment slices are big enough to be sent with sendfile."""
    records = large_records("ck")
    confluent_produce(cluster.bootstrap_servers, topic, records, **{"linger.ms": 0, "batch.size": 200_000})
    consumer_id = unique("ck-big")
    server = cluster.broker(0).socket_server
    sent_with_sendfile = []
    original = server._sendfile

    async def counting_sendfile(writer, region):
        sent_with_sendfile.append(region.size)
        await original(writer, region)

    server._sendfile = counting_sendfile
    try:
        got = confluent_consume(cluster.bootstrap_servers, topic, [0], len(records), **{"client.id": consumer_id})
    finally:
        del server._sendfile
    assert_same_records(got, records, "large records")
    assert sent_with_sendfile and min(sent_with_sendfile) >= 64 * 1024
    fetches = requests(cluster, client_id=consumer_id, api_key=ApiKey.FETCH)
    assert max(r.response_bytes for r in fetches) > 2 * 64 * 1024


def test_offset_apis_watermarks_times_seek(cluster, topic):
    import confluent_kafka as ck

    records = sample_records("offsets")
    confluent_produce(cluster.bootstrap_servers, topic, records)
    per_partition = {p: [r for r in records if r.partition == p] for p in (0, 1)}
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": unique("unused"),
                            "enable.auto.commit": False, "socket.timeout.ms": TIMEOUT_MS,
                            "fetch.wait.max.ms": 100})
    try:
        for p in (0, 1):
            assert consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=10) == (0, 6)
        # offsets_for_times: the first offset whose timestamp is >= the one asked for
        wanted = [ck.TopicPartition(topic, 0, per_partition[0][2].timestamp),
                  ck.TopicPartition(topic, 1, per_partition[1][4].timestamp - 1),
                  ck.TopicPartition(topic, 0, 0)]
        found = consumer.offsets_for_times(wanted[:2], timeout=10)
        assert [(t.partition, t.offset, t.error) for t in found] == [(0, 2, None), (1, 4, None)]
        found = consumer.offsets_for_times([ck.TopicPartition(topic, 1, records[-1].timestamp + 1)], timeout=10)
        assert found[0].offset == ck.OFFSET_END          # nothing that late: -1
        found = consumer.offsets_for_times([wanted[2]], timeout=10)
        assert found[0].offset == 0                      # everything is later than the epoch

        # seek: assign, read one record, seek back and forth
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        first = _poll_one(consumer)
        assert (first.offset(), first.key()) == (0, per_partition[0][0].key)
        consumer.seek(ck.TopicPartition(topic, 0, 4))
        m = _poll_one(consumer)
        assert (m.offset(), m.key(), m.value()) == (4, per_partition[0][4].key, per_partition[0][4].value)
        consumer.seek(ck.TopicPartition(topic, 0, 1))
        m = _poll_one(consumer)
        assert (m.offset(), m.headers()) == (1, None)    # record 1 has no headers
        assert consumer.position([ck.TopicPartition(topic, 0)])[0].offset == 2
    finally:
        consumer.close()


def _poll_one(consumer):
    end = deadline(10)
    while time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is not None:
            assert not m.error(), m.error()
            return m
    raise AssertionError("no record within 10 s")
