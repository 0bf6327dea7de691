"""kafka-python told to speak to an old broker (``api_version=(0, 9)``, ``(0, 10, 0)``, ``(0, 10, 1)``): magic 0 and
1 message sets on Produce v1/v2 and Fetch v1-v3, converted to and from the v2 batches the broker stores.

The consumer is assigned its partition and seeks to offset 0 (no group, no ListOffsets: what those old versions of
the other APIs need is a different part of the broker). aiokafka is not here: since 0.13 its ``api_version`` is a
no-op (it always negotiates), so it has no old mode left to test.
"""
from __future__ import annotations

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import TIMEOUT_MS, requests, stored_batches, unique

pytestmark = pytest.mark.interop

#: api_version -> (Produce version, Fetch version, magic on the wire)
OLD = {(0, 9): (1, 1, 0), (0, 10, 0): (2, 2, 1), (0, 10, 1): (2, 3, 1)}
TS = 1_700_000_000_000


@pytest.mark.parametrize("codec", [None, "gzip"])
@pytest.mark.parametrize("api_version", list(OLD), ids=lambda v: ".".join(map(str, v)))
def test_old_kafka_python_produces_and_consumes(cluster, topic, api_version, codec):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    produce_version, fetch_version, magic = OLD[api_version]
    rows = [(f"k{i}".encode() if i % 3 else None, f"value-{i}".encode(), TS + i) for i in range(7)]
    producer_id, consumer_id = unique("old-kp-p"), unique("old-kp-c")
    before = cluster.broker(0).metrics()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=api_version, client_id=producer_id,
                             compression_type=codec, linger_ms=20, request_timeout_ms=TIMEOUT_MS)
    try:
        futures = [producer.send(topic, key=k, value=v, timestamp_ms=ts, partition=0) for k, v, ts in rows]
        producer.flush(20)
        offsets = [f.get(timeout=20).offset for f in futures]
    finally:
        producer.close(timeout=5)
    assert offsets == list(range(7))
    assert {r.api_version for r in requests(cluster, client_id=producer_id, api_key=ApiKey.PRODUCE)} == \
        {produce_version}
    batches = stored_batches(cluster, topic, 0)
    assert {b.magic for b in batches} == {2} and {b.compression_type for b in batches} == {1 if codec else 0}
    assert all(b.producer_id == -1 for b in batches)

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, api_version=api_version,
                             client_id=consumer_id, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100,
                             request_timeout_ms=TIMEOUT_MS, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got = []
        for message in consumer:
            got.append((message.offset, message.key, message.value, message.timestamp))
            if len(got) == len(rows):
                break
    finally:
        consumer.close()
    expected_ts = [ts if magic == 1 else None for _, _, ts in rows]
    assert got == [(i, k, v, ts) for i, ((k, v, _), ts) in enumerate(zip(rows, expected_ts))]
    assert {r.api_version for r in requests(cluster, client_id=consumer_id, api_key=ApiKey.FETCH)} == {fetch_version}
    after = cluster.broker(0).metrics()
    assert after["ProduceMessageConversionsPerSec"] - before["ProduceMessageConversionsPerSec"] == 7
    assert after["FetchMessageConversionsPerSec"] - before["FetchMessageConversionsPerSec"] >= 7
