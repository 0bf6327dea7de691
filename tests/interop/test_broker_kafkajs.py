"""kafkajs 2.2.4 (Node.js, npm) against the kafkalab broker.

kafkajs tries ApiVersions v2, then 1, then 0, ignores the broker's minimum versions, speaks no flexible version
(Metadata 6, Produce 7, ListOffsets 3) and sends its idempotent producer's InitProducerId (v1) to the
*controller* named in Metadata (protocol-compat.md §5.5). The driver (``kafkajs/driver.js``) runs one action
per subprocess and prints a JSON report.

What kafkajs writes is read back by librdkafka (confluent-kafka), kafka-python and kcat in
``test_broker_cross_client.py`` and here by confluent-kafka. kafkajs 2.2.4 has **no consumer without a group**:
``kafka.consumer()`` requires a ``groupId`` and ``run()`` joins the group (FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, OffsetFetch/Commit): ``test_consumer_group`` runs it. Codecs: kafkajs ships gzip only (snappy, lz4, zstd need extra npm packages).
"""
from __future__ import annotations

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import (CODEC_IDS, assert_same_records, confluent_consume, confluent_produce, kafkajs,
                              kafkajs_records,
                              requests, sample_records, stored_batches, stored_records, unique)

pytestmark = pytest.mark.interop


def test_metadata(cluster, topic):
    port = cluster.broker(0).bound_endpoints[0].port
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "metadata", "topic": topic})
    assert report["brokers"] == [{"node_id": 0, "host": "127.0.0.1", "port": port}]
    assert report["controller"] == 0        # a live broker: kafkajs sends InitProducerId there
    [t] = report["topics"]
    assert t == {"name": topic, "partitions": [{"partition": 0, "leader": 0, "replicas": [0], "isr": [0]},
                                               {"partition": 1, "leader": 0, "replicas": [0], "isr": [0]}]}
    assert {r.api_version for r in requests(cluster, client_id="kafkajs-kafkalab", api_key=ApiKey.API_VERSIONS)} \
        == {2}


@pytest.mark.parametrize("codec,idempotent", [("none", True), ("gzip", True), ("gzip", False)])
def test_produce_read_back(cluster, topic, codec, idempotent):
    records = sample_records(f"js-{codec}")
    client_id = unique("kafkajs")
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "produce", "topic": topic,
                      "client_id": client_id,
                      "produce": {"idempotent": idempotent, "acks": -1, "compression": codec,
                                  "records": kafkajs_records(records)}})
    assert sorted((a["partition"], a["error_code"], a["base_offset"]) for a in report["acks"]) == \
        [(0, 0, "0"), (1, 0, "0")]
    assert bool(requests(cluster, client_id=client_id, api_key=ApiKey.INIT_PRODUCER_ID,
                         wait=5 if idempotent else 0.1)) == idempotent
    assert {r.api_version for r in requests(cluster, client_id=client_id, api_key=ApiKey.PRODUCE)} == {7}
    for p in (0, 1):
        batches = stored_batches(cluster, topic, p)
        assert {b.compression_type for b in batches} == {CODEC_IDS[codec]}
        assert all((b.producer_id >= 0) == idempotent for b in batches)
    assert_same_records(stored_records(cluster, topic, (0, 1)), records, "stored log")
    assert_same_records(confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records)), records,
                        "librdkafka reads kafkajs")


def test_admin_offsets(cluster, topic):
    """ListOffsets through kafkajs's admin client (no group needed): earliest, latest, by timestamp."""
    records = sample_records("js-offsets")
    kafkajs({"brokers": [cluster.bootstrap_servers], "action": "produce", "topic": topic,
             "produce": {"idempotent": True, "records": kafkajs_records(records)}})
    p1 = [r for r in records if r.partition == 1]
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "offsets", "topic": topic,
                      "offsets": {"timestamp": p1[4].timestamp}})
    assert sorted((o["partition"], o["low"], o["high"]) for o in report["offsets"]) == [(0, "0", "6"), (1, "0", "6")]
    by_time = {o["partition"]: o["offset"] for o in report["by_timestamp"]}
    assert by_time == {0: "6", 1: "4"}      # partition 0 has nothing that late: kafkajs reports its end


def test_consumer_group(cluster, topic):
    """kafkajs has no consumer without a group: it joins (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
    OffsetFetch), reads, commits and leaves; a second run of the same group continues after the commit."""
    records = sample_records("js-group", null_values=False)
    confluent_produce_records(cluster, topic, records)
    group = unique("kafkajs-group")
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "consume", "topic": topic,
                      "consume": {"group": group, "count": len(records)}}, timeout=60)
    got = sorted((r["partition"], int(r["offset"])) for r in report["records"])
    assert got == sorted((r.partition, i) for p in (0, 1) for i, r in enumerate(x for x in records if x.partition == p))
    offsets = cluster.call(cluster.broker(0).group_coordinator.handle_fetch_offsets, group)[1]
    assert {tp: om.offset for tp, om in offsets.items()} == {(topic, 0): 6, (topic, 1): 6}


def confluent_produce_records(cluster, topic, records):
    confluent_produce(cluster.bootstrap_servers, topic, records)
