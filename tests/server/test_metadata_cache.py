"""The metadata cache answers from the last UpdateMetadata the controller sent, and nothing else."""
from __future__ import annotations

import uuid

import pytest

from kafkalab.protocol import ApiKey, request_class
from kafkalab.server.metadata_cache import NO_LEADER, ZERO_UUID, MetadataCache

UM = request_class(ApiKey.UPDATE_METADATA)
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def broker(b: int, rack=None, listeners=(("PLAINTEXT", 0), ("CLIENT", 3))):
    return UM.UpdateMetadataBroker(id=b, rack=rack, endpoints=tuple(
        UM.UpdateMetadataEndpoint(port=9090 + b, host=f"broker{b}", listener=name, security_protocol=proto)
        for name, proto in listeners))


def pstate(topic, p, leader, isr, replicas, leader_epoch=0, offline=()):
    return UM.UpdateMetadataPartitionState(topic_name=topic, partition_index=p, controller_epoch=1, leader=leader,
                                           leader_epoch=leader_epoch, isr=tuple(isr), zk_version=3,
                                           replicas=tuple(replicas), offline_replicas=tuple(offline))


def update(states, brokers=(0, 1, 2), controller_id=0, controller_epoch=1, topic_ids=None):
    by_topic = {}
    for s in states:
        by_topic.setdefault(s.topic_name, []).append(s)
    return UM(controller_id=controller_id, controller_epoch=controller_epoch, broker_epoch=-1,
              live_brokers=tuple(broker(b) for b in brokers),
              topic_states=tuple(UM.UpdateMetadataTopicState(topic_name=t, topic_id=(topic_ids or {}).get(t, ZERO_UUID),
                                                             partition_states=tuple(ps)) for t, ps in by_topic.items()))


@pytest.fixture
def cache():
    c = MetadataCache(broker_id=0)
    c.update_metadata(update([pstate("orders", 0, 0, [0, 1], [0, 1]), pstate("orders", 1, 1, [1, 2], [1, 2]),
                              pstate("orders", 2, 2, [2], [2, 0], offline=())],
                             topic_ids={"orders": TOPIC_ID}), 7)
    return c


def test_an_empty_cache_knows_nothing():
    c = MetadataCache(broker_id=5)
    assert c.topics() == [] and c.alive_brokers() == [] and c.controller_id == NO_LEADER
    assert c.partition_state("t", 0) is None and c.leader_of("t", 0) == NO_LEADER
    assert c.topic_id("t") == ZERO_UUID and c.partition_count("t") == 0


def test_brokers_and_their_listeners(cache):
    assert cache.alive_broker_ids() == [0, 1, 2] and cache.is_alive(1) and not cache.is_alive(3)
    assert cache.broker_endpoint(1, "PLAINTEXT") == ("broker1", 9091)
    assert cache.broker_endpoint(1, "CLIENT") == ("broker1", 9091)
    assert cache.alive_brokers()[1].endpoints["CLIENT"] == ("broker1", 9091, "SASL_SSL")
    assert cache.broker_endpoint(1, "INTERNAL") is None and cache.broker_endpoint(9, "PLAINTEXT") is None
    assert (cache.controller_id, cache.controller_epoch) == (0, 1)


def test_topics_and_partitions(cache):
    assert cache.topics() == ["orders"] and cache.contains_topic("orders") and not cache.contains_topic("other")
    assert cache.partition_count("orders") == 3
    p1 = cache.partition_state("orders", 1)
    assert (p1.leader, p1.isr, p1.replicas, p1.zk_version, p1.controller_epoch) == (1, (1, 2), (1, 2), 3, 1)
    assert [p.partition for p in cache.partitions("orders")] == [0, 1, 2]
    assert cache.leader_of("orders", 2) == 2
    assert cache.topic_id("orders") == TOPIC_ID and cache.topic_name(TOPIC_ID) == "orders"


def test_a_later_update_changes_leaders_and_brokers(cache):
    cache.update_metadata(update([pstate("orders", 0, 1, [1], [0, 1], leader_epoch=1, offline=[0])],
                                 brokers=(1, 2)), 7)
    assert cache.alive_broker_ids() == [1, 2]          # live brokers are replaced, not merged
    p0 = cache.partition_state("orders", 0)
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.offline_replicas) == (1, 1, (1,), (0,))
    assert cache.leader_of("orders", 1) == 1           # partitions not in the update are unchanged
    assert cache.updates == 2


def test_an_update_from_an_older_controller_epoch_is_refused(cache):
    cache.update_metadata(update([], controller_id=2, controller_epoch=5), 7)
    with pytest.raises(ValueError, match="older than 5"):
        cache.update_metadata(update([pstate("orders", 0, 1, [1], [0, 1])], controller_id=0, controller_epoch=4), 7)
    assert cache.controller_id == 2 and cache.leader_of("orders", 0) == 0


def test_leader_during_delete_removes_partitions_and_then_the_topic(cache):
    assert cache.update_metadata(update([pstate("orders", 0, -2, [], [0, 1])]), 7) == []
    assert cache.partition_count("orders") == 2
    deleted = cache.update_metadata(update([pstate("orders", 1, -2, [], []), pstate("orders", 2, -2, [], [])]), 7)
    assert deleted == ["orders"]
    assert not cache.contains_topic("orders") and cache.topic_name(TOPIC_ID) is None
    assert cache.topic_id("orders") == ZERO_UUID


def test_a_topic_recreated_with_a_new_id(cache):
    new_id = uuid.uuid4()
    cache.update_metadata(update([pstate("orders", 0, 0, [0], [0])], topic_ids={"orders": new_id}), 7)
    assert cache.topic_id("orders") == new_id and cache.topic_name(new_id) == "orders"
    assert cache.topic_name(TOPIC_ID) is None


def test_old_versions_ungrouped_states_and_v0_host_port():
    c = MetadataCache(broker_id=0)
    body = UM(controller_id=1, controller_epoch=1, broker_epoch=-1,
              ungrouped_partition_states=(pstate("t", 0, 1, [1], [1]),),
              live_brokers=(UM.UpdateMetadataBroker(id=1, v0_host="old-host", v0_port=9092),))
    c.update_metadata(body, 0)
    assert c.broker_endpoint(1, "PLAINTEXT") == ("old-host", 9092)
    assert c.leader_of("t", 0) == 1
    assert c.topic_id("t") == ZERO_UUID


def test_snapshot_is_plain_data(cache):
    snap = cache.snapshot()
    assert snap["controller_id"] == 0 and set(snap["brokers"]) == {0, 1, 2}
    assert snap["topics"]["orders"]["topic_id"] == str(TOPIC_ID)
    assert snap["topics"]["orders"]["partitions"][2]["replicas"] == (2, 0)


def test_a_broker_answers_metadata_from_its_cache_after_an_update_metadata():
    """Through the real request path: the controller's UpdateMetadata body -> cache, the same body kafkalab's
    ControllerBrokerRequestBatch builds (version 7, grouped topic states, topic ids)."""
    from kafkalab.controller.channel import UPDATE_METADATA_VERSION
    c = MetadataCache(broker_id=1)
    c.update_metadata(update([pstate("events", 0, 1, [1, 0], [1, 0])], topic_ids={"events": TOPIC_ID}),
                      UPDATE_METADATA_VERSION)
    assert c.partitions("events")[0].isr == (1, 0) and c.topic_id("events") == TOPIC_ID
