"""What the controller reports, with Kafka 3.9's names: the ``ControllerStats`` meter
``UncleanLeaderElectionsPerSec`` and the event timers, the ``KafkaController`` gauges, and the
``state.change.logger`` line of each election (Kafka's wording; no warning of kafkalab's own)."""
from __future__ import annotations

import asyncio
import logging

import pytest

from kafkalab.common import MockTime
from kafkalab.controller.context import ControllerContext
from kafkalab.controller.controller import KafkaController
from kafkalab.controller.controller_stats import (GAUGES, RATE_AND_TIME_METRICS, STATE_CHANGE_LOGGER,
                                                  controller_gauges, leader_and_isr_string)
from kafkalab.zk import KafkaZkClient, ZkStore
from kafkalab.zk.paths import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch


class RecordingChannel:
    """The channel manager's interface; requests are queued and forgotten."""

    def add_broker(self, broker_id, host, port):
        pass

    def remove_broker(self, broker_id):
        pass

    def enqueue(self, *args, **kwargs):
        return None

    def shutdown(self):
        pass


def _info(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("127.0.0.1", 9000 + broker_id, "PLAINTEXT", "PLAINTEXT"),))


async def _until(condition, what: str) -> None:
    for _ in range(300):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def _lose_the_isr_then_the_leader(unclean: bool) -> tuple[dict, list]:
    """Brokers 0 (the controller), 1 and 2; ``t-0`` on [1, 2]. Broker 2 dies (ISR [1]) and comes back (not in
    the ISR: nothing here fetches), then broker 1, the leader, dies. Returns the controller's metrics and its
    ``(epoch, leader_and_isr)`` once it has decided."""
    store = ZkStore(time=MockTime())
    zks = {b: KafkaZkClient.connect(store, 6000) for b in range(3)}
    zks[0].create_top_level_paths()
    for b, zk in zks.items():
        zk.register_broker(_info(b))
    controller = KafkaController(0, zks[0], RecordingChannel(), unclean_election=lambda topic: unclean,
                                 time=MockTime())
    await controller.startup()
    await _until(lambda: controller.is_active, "no controller")
    zks[0].create_topic("t", {0: [1, 2]})
    state = lambda: controller.context.partition_states.get(("t", 0))   # noqa: E731
    await _until(lambda: state() is not None and state().leader_and_isr.leader == 1, "t-0 has no leader")
    zks[2].close()
    await _until(lambda: state().leader_and_isr.isr == (1,), "broker 2 stayed in the ISR")
    zks[2] = KafkaZkClient.connect(store, 6000)
    zks[2].register_broker(_info(2))
    await _until(lambda: 2 in controller.context.live_brokers, "broker 2 did not come back")
    zks[1].close()
    await _until(lambda: 1 not in controller.context.live_brokers and controller.events.empty(), "1 still live")
    await asyncio.sleep(0.05)
    metrics = controller.metrics()
    decided = (controller.context.epoch, state().leader_and_isr)
    await controller.shutdown()
    return metrics, decided


def test_an_unclean_election_marks_the_meter_and_logs_kafkas_state_change_line(caplog):
    caplog.set_level(logging.INFO, logger=STATE_CHANGE_LOGGER)
    caplog.set_level(logging.INFO, logger="kafkalab.controller")
    metrics, (epoch, lai) = asyncio.run(_lose_the_isr_then_the_leader(unclean=True))
    assert (lai.leader, lai.isr) == (2, (2,))
    assert metrics["UncleanLeaderElectionsPerSec"] == 1
    assert metrics["OfflinePartitionsCount"] == 0
    assert metrics["PreferredReplicaImbalanceCount"] == 1          # broker 2 leads; broker 1 is the preferred one
    assert (metrics["ActiveControllerCount"], metrics["GlobalTopicCount"], metrics["GlobalPartitionCount"],
            metrics["ActiveBrokerCount"]) == (1, 1, 1, 2)
    state_changes = [r for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    assert all(r.levelno == logging.INFO for r in state_changes)
    assert state_changes[0].getMessage() == (
        f"[Controller id=0 epoch={epoch}] Changed partition t-0 from NewPartition to OnlinePartition with state "
        "LeaderAndIsr(leader=1, leaderEpoch=0, isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1), "
        "BrokerState(brokerId=2, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=0)")
    assert state_changes[-1].getMessage() == (
        f"[Controller id=0 epoch={epoch}] Changed partition t-0 from OfflinePartition to OnlinePartition with state "
        f"{leader_and_isr_string(lai)}")
    assert "isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1))" in state_changes[-1].getMessage()
    assert not [r for r in caplog.records if "unclean" in r.getMessage().lower()], "no line of kafkalab's own"


def test_without_unclean_election_the_partition_is_counted_offline():
    metrics, (_, lai) = asyncio.run(_lose_the_isr_then_the_leader(unclean=False))
    assert (lai.leader, lai.isr) == (-1, (1,))
    assert metrics["UncleanLeaderElectionsPerSec"] == 0
    assert metrics["OfflinePartitionsCount"] == 1
    assert metrics["PreferredReplicaImbalanceCount"] == 1          # no leader is not the preferred leader
    # three broker changes (2 dies, 2 returns, 1 dies), each timed on the controller's clock (MockTime: 0 ms)
    assert metrics["LeaderElectionRateAndTimeMs"] == 3
    assert metrics["TopicChangeRateAndTimeMs"] == 1
    assert metrics["ControllerChangeRateAndTimeMs"] >= 1


def test_a_controller_that_is_not_active_reports_zeros_and_every_name_is_kafkas():
    c = KafkaController(3, zk=None, channel=None)
    assert c.metrics() == {"ActiveControllerCount": 0, **{g: 0 for g in GAUGES[1:]},
                           "UncleanLeaderElectionsPerSec": 0, **{n: 0 for n in RATE_AND_TIME_METRICS.values()}}
    assert RATE_AND_TIME_METRICS["BrokerChange"] == "LeaderElectionRateAndTimeMs"


def _ctx(states: dict, live=(0, 1, 2), deleting=()) -> ControllerContext:
    ctx = ControllerContext()
    for b in live:
        ctx.live_brokers[b] = _info(b)
    for tp, (replicas, leader) in states.items():
        ctx.assignments[tp] = tuple(replicas)
        if leader is not None:
            ctx.partition_states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 1, tuple(replicas)), 1)
    ctx.topics_being_deleted.update(deleting)
    return ctx


def test_gauges_follow_kafkas_definitions():
    ctx = _ctx({("a", 0): ([0, 1], 0),          # online, preferred
                ("a", 1): ([1, 0], 0),          # online, not the preferred leader
                ("a", 2): ([1, 0], 1),          # preferred, but its replica on broker 1 is in a failed dir: offline
                ("b", 0): ([2, 3], 3),          # leader 3 is not a live broker: offline (and imbalanced)
                ("b", 1): ([0, 1], -1),         # no leader: offline, imbalanced
                ("c", 0): ([3], None),          # no state yet (NewPartition): neither
                ("gone", 0): ([3], 3)},         # offline, but its topic is being deleted
               deleting=["gone"])
    ctx.replicas_on_offline_dirs[1] = {("a", 2)}
    assert controller_gauges(ctx, active=True) == {
        "OfflinePartitionsCount": 3, "PreferredReplicaImbalanceCount": 3, "GlobalTopicCount": 4,
        "GlobalPartitionCount": 6, "ActiveBrokerCount": 3}
    assert set(controller_gauges(ctx, active=False).values()) == {0}


def test_the_meters_survive_a_new_election():
    ctx = ControllerContext()
    ctx.stats.unclean_leader_election_rate.mark()
    ctx.clear()
    assert ctx.stats.unclean_leader_election_rate.count == 1


@pytest.mark.parametrize("recovery, expected", [(0, "RECOVERED"), (1, "RECOVERING")])
def test_leader_and_isr_prints_as_kafka_39(recovery, expected):
    from kafkalab.zk.paths import LeaderRecoveryState
    lai = LeaderAndIsr(2, 7, (2, 0), LeaderRecoveryState(recovery), 4)
    assert leader_and_isr_string(lai) == (
        "LeaderAndIsr(leader=2, leaderEpoch=7, isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1), "
        f"BrokerState(brokerId=0, brokerEpoch=-1)), leaderRecoveryState={expected}, partitionEpoch=4)")


def test_every_broker_reports_the_controller_metrics_and_one_is_active():
    from kafkalab.cluster import Cluster
    with Cluster(brokers=2) as cluster:
        controller_id = cluster.wait_for_controller()
        cluster.create_topic("m", 2, 2)
        metrics = {b: cluster.call(s.metrics) for b, s in cluster.brokers.items()}
    assert {b: m["ActiveControllerCount"] for b, m in metrics.items()} == {0: int(controller_id == 0),
                                                                           1: int(controller_id == 1)}
    active = metrics[controller_id]
    assert (active["GlobalTopicCount"], active["GlobalPartitionCount"], active["OfflinePartitionsCount"],
            active["ActiveBrokerCount"], active["UncleanLeaderElectionsPerSec"]) == (1, 2, 0, 2, 0)
    assert active["TopicChangeRateAndTimeMs"] >= 1
    standby = metrics[1 - controller_id]
    assert standby["GlobalTopicCount"] == standby["GlobalPartitionCount"] == 0


def test_a_copy_of_the_context_shares_the_meters():
    """A stale view of the cluster (``copy.deepcopy`` of a context, as the zombie-controller scenario keeps) copies
    the cluster's state and shares the broker's meters, which hold locks."""
    import copy

    from kafkalab.controller.context import ControllerContext
    ctx = ControllerContext()
    ctx.assignments[("t", 0)] = (0, 1)
    view = copy.deepcopy(ctx)
    assert view.stats is ctx.stats and view.assignments == ctx.assignments and view.assignments is not ctx.assignments
