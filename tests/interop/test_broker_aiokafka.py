"""aiokafka 0.14 against the kafkalab broker.

aiokafka sends ApiVersions v0 only and no flexible version at all (Metadata 5, Produce 7, Fetch 11,
ListOffsets 3). Its producer is not idempotent by default; with ``enable_idempotence=True`` it asks for a
producer id with InitProducerId v0. It writes snappy with xerial framing and lz4 as independent-block frames
(cramjam), which the broker stores as they came and every other client must read. The consumer has no
``group_id``: ``assign()`` and ``seek_to_beginning()`` need no coordinator.
"""
from __future__ import annotations

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import (CODEC_IDS, CODECS, GROUP_APIS, aiokafka_consume, aiokafka_produce, aiokafka_read,
                              assert_same_records, confluent_consume, requests, run_async, sample_records,
                              stored_batches, unique, used_apis)

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("idempotent", [False, True], ids=["default", "idempotent"])
def test_producer_then_assign_consumer(cluster, topic, idempotent):
    records = sample_records(f"aio-{idempotent}")
    client_id = unique("aio-producer")
    conf = {"client_id": client_id}
    if idempotent:
        conf.update(enable_idempotence=True, acks="all")
    offsets = aiokafka_produce(cluster.bootstrap_servers, topic, records, **conf)
    for p in (0, 1):
        assert [o for q, o in offsets if q == p] == list(range(6))
    assert bool(requests(cluster, client_id=client_id, api_key=ApiKey.INIT_PRODUCER_ID,
                         wait=5 if idempotent else 0.1)) == idempotent
    for p in (0, 1):
        batches = stored_batches(cluster, topic, p)
        assert all((b.producer_id >= 0) == idempotent for b in batches)
    assert {r.api_version for r in requests(cluster, client_id=client_id, api_key=ApiKey.PRODUCE)} == {7}

    consumer_id = unique("aio-consumer")
    got = aiokafka_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), client_id=consumer_id)
    assert_same_records(got, records, "aiokafka consumer")
    assert not used_apis(cluster, consumer_id) & (GROUP_APIS | {"FindCoordinator"})


@pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"])
def test_compressed_batches_read_by_aiokafka_and_librdkafka(cluster, topic, codec):
    records = sample_records(f"aio-{codec}")
    aiokafka_produce(cluster.bootstrap_servers, topic, records, compression_type=codec, enable_idempotence=True)
    for p in (0, 1):
        assert {b.compression_type for b in stored_batches(cluster, topic, p)} == {CODEC_IDS[codec]}
    assert_same_records(aiokafka_consume(cluster.bootstrap_servers, topic, [0, 1], len(records)), records,
                        f"aiokafka reads its own {codec}")
    assert_same_records(confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records)), records,
                        f"librdkafka reads aiokafka's {codec}")


def test_offset_lookups(cluster, topic):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    records = sample_records("aio-offsets")
    aiokafka_produce(cluster.bootstrap_servers, topic, records)
    p0 = [r for r in records if r.partition == 0]
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]

    async def main():
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=5000,
                                    fetch_max_wait_ms=100)
        await consumer.start()
        try:
            assert await consumer.end_offsets(tps) == {tps[0]: 6, tps[1]: 6}
            assert await consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
            found = await consumer.offsets_for_times({tps[0]: p0[2].timestamp, tps[1]: 10 ** 13})
            assert (found[tps[0]].offset, found[tps[0]].timestamp) == (2, p0[2].timestamp)
            assert found[tps[1]] is None
            consumer.assign([tps[0]])
            consumer.seek(tps[0], 3)
            assert_same_records(await aiokafka_read(consumer, 3), p0[3:], "after seek(3)")
        finally:
            await consumer.stop()
    run_async(main())
