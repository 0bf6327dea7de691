"""Produce v0-2 and Fetch v0-3 (removed by Kafka 4.0, served by Kafka 3.9; ``scripts/kafka-3.9-versions.json``):
the codec writes and reads them, with exactly the fields those versions have."""
from __future__ import annotations

import pytest

import kafkalab.protocol as kp

Produce, Fetch = kp.request_class(0), kp.request_class(1)
PRODUCE = Produce(acks=1, timeout_ms=5, topic_data=(Produce.TopicProduceData(name="t", partition_data=(
    Produce.PartitionProduceData(index=3, records=b"\x00" * 30),)),))
FETCH = Fetch(replica_id=-1, max_wait_ms=5, min_bytes=1, topics=(Fetch.FetchTopic(topic="t", partitions=(
    Fetch.FetchPartition(partition=3, fetch_offset=7, partition_max_bytes=99),)),))


@pytest.mark.parametrize("body,version", [(PRODUCE, v) for v in range(3)] + [(FETCH, v) for v in range(4)])
def test_old_produce_and_fetch_round_trip(body, version):
    frame = kp.encode_request(kp.make_request(body, api_version=version, correlation_id=4))
    again = kp.decode_request(frame)
    assert (again.api_version, again.body) == (version, body)
    assert kp.encode_request(again) == frame


def test_produce_v0_and_fetch_v0_layouts():
    produce = kp.encode_request(kp.make_request(PRODUCE, api_version=0, correlation_id=4, client_id=None))
    # header v1 (key, version, correlation id, null client id), acks, timeout, [topic, [index, records]]
    assert len(produce) == 10 + 2 + 4 + 4 + 3 + 4 + 4 + 4 + 30
    fetch = kp.encode_request(kp.make_request(FETCH, api_version=0, correlation_id=4, client_id=None))
    # replica id, max wait, min bytes (no max_bytes before v3), [topic, [partition, offset, partition max bytes]]
    assert len(fetch) == 10 + 4 + 4 + 4 + 4 + 3 + 4 + 4 + 8 + 4
