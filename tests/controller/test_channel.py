"""ControllerBrokerRequestBatch: the changes of one controller event become one LeaderAndIsr per replica broker,
one UpdateMetadata per live broker and one StopReplica per broker -- in that order -- and ControllerContext
answers the questions the controller asks of its copy of the cluster."""
from __future__ import annotations

import asyncio
import base64
import uuid

from kafkalab.controller.channel import (LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION,
                                         ControllerBrokerRequestBatch, send_all, topic_uuid)
from kafkalab.controller.context import ControllerContext
from kafkalab.protocol import ApiKey
from kafkalab.zk.paths import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch

TOPIC_UUID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
TOPIC_ID = base64.urlsafe_b64encode(TOPIC_UUID.bytes).rstrip(b"=").decode()


def broker_info(b: int) -> BrokerInfo:
    return BrokerInfo(b, (EndPoint(f"client{b}", 9000 + b, "CLIENT", "SASL_SSL"),
                          EndPoint(f"internal{b}", 9100 + b, "INTERNAL", "PLAINTEXT")), rack=f"rack{b % 2}")


def state(leader, isr, epoch=3, cepoch=2, partition_epoch=5):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, epoch, tuple(isr), partition_epoch=partition_epoch),
                                       cepoch)


def cluster(live=(0, 1, 2)) -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = 2
    ctx.inter_broker_listener = "INTERNAL"
    ctx.live_brokers = {b: broker_info(b) for b in live}
    ctx.topic_ids = {"orders": TOPIC_ID, "logs": None}
    ctx.assignments = {("orders", 0): (0, 1), ("orders", 1): (1, 2), ("orders", 2): (2, 0), ("logs", 0): (3, 0)}
    ctx.partition_states = {("orders", 0): state(0, [0, 1]), ("orders", 1): state(1, [1, 2]),
                            ("orders", 2): state(2, [2, 0]), ("logs", 0): state(3, [3, 0])}
    return ctx


def kinds(requests):
    return [(b, ApiKey(k).name, v) for b, k, v, _ in requests]


# -- the context ----------------------------------------------------------------------------------------------------
def test_context_queries():
    ctx = cluster()
    ctx.shutting_down_brokers = {2}
    assert ctx.live_broker_ids() == [0, 1] and ctx.live_or_shutting_down_broker_ids() == [0, 1, 2]
    assert ctx.is_live(0) and not ctx.is_live(2) and not ctx.is_live(3)
    assert ctx.topics == ["logs", "orders"]
    assert ctx.partitions_of("orders") == [("orders", 0), ("orders", 1), ("orders", 2)]
    assert ctx.partitions_on(0) == [("logs", 0), ("orders", 0), ("orders", 2)]
    assert ctx.partitions_led_by(1) == [("orders", 1)]
    # leader 3 is not registered, leader 2 is shutting down: both partitions need a new leader
    assert ctx.offline_partitions() == [("logs", 0), ("orders", 2)]
    ctx.topics_being_deleted.add("logs")
    assert ctx.offline_partitions() == [("orders", 2)]
    assert ctx.leader_endpoints([1, 0, 1, 7]) == [(0, "internal0", 9100), (1, "internal1", 9101)]


def test_context_remove_topic_and_snapshot():
    ctx = cluster()
    ctx.topics_being_deleted.add("orders")
    ctx.remove_topic("orders")
    assert ctx.topics == ["logs"] and "orders" not in ctx.topic_ids and not ctx.topics_being_deleted
    snap = ctx.snapshot()
    assert snap["partitions"] == {"logs-0": {"replicas": [3, 0], "leader": 3, "leader_epoch": 3, "isr": [3, 0]}}
    ctx.clear()
    assert ctx.topics == [] and ctx.epoch == 0


# -- batching -------------------------------------------------------------------------------------------------------
def test_one_request_per_broker_and_kind_in_kafkas_order():
    ctx = cluster()
    batch = ControllerBrokerRequestBatch(controller_id=1, context=ctx)
    assert batch.is_empty()
    for p in range(3):
        tp = ("orders", p)
        batch.add_leader_and_isr(ctx.replicas(tp), tp)
    batch.add_stop_replica([2], ("orders", 0), delete=False)
    assert not batch.is_empty()
    out = batch.build(controller_epoch=2, broker_epochs={0: 100, 1: 101, 2: 102})
    assert kinds(out) == [
        (0, "LEADER_AND_ISR", LEADER_AND_ISR_VERSION), (1, "LEADER_AND_ISR", LEADER_AND_ISR_VERSION),
        (2, "LEADER_AND_ISR", LEADER_AND_ISR_VERSION),
        (0, "UPDATE_METADATA", UPDATE_METADATA_VERSION), (1, "UPDATE_METADATA", UPDATE_METADATA_VERSION),
        (2, "UPDATE_METADATA", UPDATE_METADATA_VERSION),
        (2, "STOP_REPLICA", STOP_REPLICA_VERSION)]
    lai_to_0 = out[0][3]
    assert (lai_to_0.controller_id, lai_to_0.controller_epoch, lai_to_0.broker_epoch) == (1, 2, 100)
    [topic] = lai_to_0.topic_states                       # partitions of one topic grouped under it
    assert (topic.topic_name, topic.topic_id) == ("orders", TOPIC_UUID)
    assert [(p.partition_index, p.leader, p.isr, p.replicas) for p in topic.partition_states] == \
        [(0, 0, (0, 1), (0, 1)), (2, 2, (2, 0), (2, 0))]  # broker 0 replicates partitions 0 and 2 only
    ps = topic.partition_states[0]
    assert (ps.controller_epoch, ps.leader_epoch, ps.partition_epoch, ps.is_new) == (2, 3, 5, False)
    assert [(l.broker_id, l.host_name, l.port) for l in lai_to_0.live_leaders] == \
        [(0, "internal0", 9100), (2, "internal2", 9102)]  # the leaders' inter-broker listener


def test_update_metadata_goes_to_every_live_broker_with_every_changed_partition():
    ctx = cluster(live=(0, 1, 2))
    batch = ControllerBrokerRequestBatch(1, ctx)
    batch.add_leader_and_isr([0, 1], ("orders", 0))
    batch.add_update_metadata([0, 1, 2, -1], [("logs", 0)])
    um = [r for r in batch.build(2, {}) if r[1] == ApiKey.UPDATE_METADATA]
    assert [r[0] for r in um] == [0, 1, 2]
    body = um[0][3]
    assert body.broker_epoch == -1
    assert [(t.topic_name, t.topic_id) for t in body.topic_states] == \
        [("logs", uuid.UUID(int=0)), ("orders", TOPIC_UUID)]
    logs0 = body.topic_states[0].partition_states[0]
    assert (logs0.leader, logs0.replicas, logs0.offline_replicas, logs0.zk_version) == (3, (3, 0), (3,), 5)
    assert [b.id for b in body.live_brokers] == [0, 1, 2]
    b1 = body.live_brokers[1]
    assert b1.rack == "rack1"
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in b1.endpoints] == \
        [("CLIENT", "client1", 9001, 3), ("INTERNAL", "internal1", 9101, 0)]


def test_a_topic_being_deleted_is_announced_with_leader_during_delete():
    ctx = cluster()
    ctx.topics_being_deleted.add("orders")
    batch = ControllerBrokerRequestBatch(1, ctx)
    batch.add_update_metadata([0], [("orders", 1)])
    [(_, _, _, body)] = batch.build(2, {})
    ps = body.topic_states[0].partition_states[0]
    assert (ps.leader, ps.leader_epoch, ps.isr) == (-2, 3, (1, 2))


def test_stop_replica_delete_wins_and_uses_the_delete_epoch():
    ctx = cluster()
    batch = ControllerBrokerRequestBatch(1, ctx)
    batch.add_stop_replica([1, -1], ("orders", 1), delete=True)
    batch.add_stop_replica([1], ("orders", 1), delete=False)     # a later non-delete does not undo the delete
    batch.add_stop_replica([1], ("orders", 0), delete=False)
    [(broker, key, _, body)] = batch.build(2, {1: 55})
    assert (broker, key, body.broker_epoch) == (1, ApiKey.STOP_REPLICA, 55)
    [topic] = body.topic_states
    assert [(p.partition_index, p.leader_epoch, p.delete_partition) for p in topic.partition_states] == \
        [(0, 3, False), (1, -2, True)]


def test_leader_and_isr_for_an_unknown_partition_is_skipped():
    batch = ControllerBrokerRequestBatch(1, cluster())
    batch.add_leader_and_isr([0], ("nope", 0))
    assert batch.is_empty()


def test_topic_uuid_decodes_kafkas_base64():
    assert topic_uuid(TOPIC_ID) == TOPIC_UUID
    assert topic_uuid(None) == topic_uuid("") == uuid.UUID(int=0)


# -- sending --------------------------------------------------------------------------------------------------------
def test_send_all_keeps_per_broker_order_and_survives_a_dead_broker():
    class Channel:
        def __init__(self):
            self.sent = []

        async def send(self, broker_id, api_key, api_version, body):
            self.sent.append((broker_id, api_key))
            if broker_id == 2:
                raise ConnectionError("broker 2 is gone")
            await asyncio.sleep(0.01 if broker_id == 0 else 0)
            return f"ok-{broker_id}-{api_key}"

    ctx = cluster()
    batch = ControllerBrokerRequestBatch(1, ctx)
    for p in range(3):
        batch.add_leader_and_isr(ctx.replicas(("orders", p)), ("orders", p))
    channel, responses = Channel(), []
    asyncio.run(send_all(channel, batch.build(2, {}), lambda b, k, r: responses.append((b, k, r))))
    for b in (0, 1, 2):
        assert [k for bb, k in channel.sent if bb == b] == [ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA]
    assert sorted(responses) == sorted((b, k, f"ok-{b}-{k}") for b in (0, 1)
                                       for k in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA))
