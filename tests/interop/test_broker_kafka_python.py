"""kafka-python 3.0.12 against the kafkalab broker.

Its producer is idempotent by default (InitProducerId v4, then Produce v9); it infers the broker's version from
the ApiVersions answer (protocol-compat.md §5.4), so a wrong advertisement shows up here as a downgraded
magic or a disabled feature. The consumer has no ``group_id``: ``assign()``, ``seek_to_beginning()``, and the
offset lookups (ListOffsets) need no coordinator. Only gzip is tested among the codecs: the other three need
optional packages (lz4, python-snappy/cramjam, zstandard) that kafka-python does not find here.
"""
from __future__ import annotations

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import (CODEC_IDS, GROUP_APIS, assert_same_records, kafka_python_consume, kafka_python_consumer,
                              kafka_python_produce, kafka_python_read, requests, sample_records, stored_batches,
                              unique, used_apis)

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_default_producer_then_assign_consumer(cluster, topic, codec):
    records = sample_records(f"kp-{codec}")
    client_id = unique("kp-producer")
    conf = {"client_id": client_id}
    if codec != "none":
        conf["compression_type"] = codec
    offsets = kafka_python_produce(cluster.bootstrap_servers, topic, records, **conf)
    for p in (0, 1):
        assert [o for q, o in offsets if q == p] == list(range(6))

    assert requests(cluster, client_id=client_id, api_key=ApiKey.INIT_PRODUCER_ID), \
        "kafka-python 3 is idempotent by default (broker version inferred >= 0.11)"
    assert {r.api_version for r in requests(cluster, client_id=client_id, api_key=ApiKey.PRODUCE)} == {9}
    for p in (0, 1):
        batches = stored_batches(cluster, topic, p)
        assert {b.compression_type for b in batches} == {CODEC_IDS[codec]}
        assert all(b.producer_id >= 0 and b.base_sequence >= 0 for b in batches)

    consumer_id = unique("kp-consumer")
    got = kafka_python_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), client_id=consumer_id)
    assert_same_records(got, records, "kafka-python consumer")
    assert not used_apis(cluster, consumer_id) & (GROUP_APIS | {"FindCoordinator"})


def test_offset_lookups_and_seek(cluster, topic):
    from kafka import TopicPartition

    records = sample_records("kp-offsets")
    kafka_python_produce(cluster.bootstrap_servers, topic, records)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    p1 = [r for r in records if r.partition == 1]
    consumer = kafka_python_consumer(cluster.bootstrap_servers)
    try:
        assert consumer.end_offsets(tps) == {tps[0]: 6, tps[1]: 6}
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        found = consumer.offsets_for_times({tps[1]: p1[3].timestamp, tps[0]: records[-1].timestamp + 1})
        assert found[tps[0]] is None                      # nothing that late
        assert (found[tps[1]].offset, found[tps[1]].timestamp) == (3, p1[3].timestamp)

        consumer.assign(tps)
        consumer.seek_to_beginning(tps[1])
        consumer.seek(tps[0], 6)                          # partition 0: at its end, nothing to read
        got = kafka_python_read(consumer, 6)
        assert_same_records(got, p1, "after seek_to_beginning")
        consumer.seek(tps[1], 4)
        got = kafka_python_read(consumer, 2)
        assert_same_records(got, p1[4:], "after seek(4)")
        assert consumer.position(tps[1]) == 6
    finally:
        consumer.close()
