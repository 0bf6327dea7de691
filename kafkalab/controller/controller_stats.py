"""What the controller reports about itself: its meters and gauges, and its state-change log lines.

Theory of operation
-------------------
Kafka's ZooKeeper controller says little in its main log. What it did shows in two other places, and kafkalab
keeps both with Kafka's names:

**Metrics** (JMX, read by monitoring). Every broker has them; only the active controller's move.

* ``kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec`` -- a meter marked each time the
  offline-partition election picks a replica outside the ISR (the rule of :mod:`.election`, whether the topic's
  ``unclean.leader.election.enable`` or an operator's UNCLEAN ElectLeaders allowed it). Kafka logs no warning
  for it: this meter is how an operator learns that acknowledged records may have been lost.
* ``kafka.controller:type=ControllerStats,name=<State>RateAndTimeMs`` -- a timer per kind of event, recording
  how long the event thread took to process each one (:data:`RATE_AND_TIME_METRICS`). The broker-change
  event's is called ``LeaderElectionRateAndTimeMs`` (the name it had before Kafka grouped events by state).
  The time is the controller's ``Time``: with a ``MockTime`` it reads 0 ms.
* ``kafka.controller:type=KafkaController,name=...`` -- gauges: ``ActiveControllerCount`` (1 on the active
  controller, 0 elsewhere; summed over a cluster it must be 1), and, on the active controller only (0
  elsewhere), ``OfflinePartitionsCount`` (partitions whose leader is not an online replica: dead, or its log
  dir failed; topics being deleted are left out), ``PreferredReplicaImbalanceCount`` (partitions whose leader
  is not the first assigned replica), ``GlobalTopicCount``, ``GlobalPartitionCount`` (partitions with a
  leader-and-ISR state) and ``ActiveBrokerCount`` (registered brokers, shutting down included). Like Kafka,
  the controller computes them after each event it processes (:func:`controller_gauges`), not at every read.

**The state-change log** (logger ``kafkalab.state.change.logger``: Kafka's ``state.change.logger``, written to
``state-change.log``, under kafkalab's logger hierarchy like every other): each partition that a
controller election moves to OnlinePartition is logged at INFO, from the state it was in::

    [Controller id=1 epoch=2] Changed partition jepsen-0 from OfflinePartition to OnlinePartition with state
    LeaderAndIsr(leader=1, leaderEpoch=1, isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1)),
    leaderRecoveryState=RECOVERED, partitionEpoch=2)

An unclean election reads like any other there; only the meter tells it apart.

Mirrors: ``ControllerStats`` and the gauges of ``core/src/main/scala/kafka/controller/KafkaController.scala``
(``updateMetrics``), ``ControllerState.scala`` (``rateAndTimeMetricName``), ``ControllerContext.scala``
(``offlinePartitionCount``, ``preferredReplicaImbalanceCount``), ``StateChangeLogger.scala``, and
``PartitionStateMachine.scala`` (``doHandleStateChanges``, ``offlinePartitionLeaderElection``).
"""
from __future__ import annotations

import logging

from kafkalab.common.time import SYSTEM, Time
from kafkalab.common.yammer import Meter, Timer

__all__ = ["ControllerStats", "RATE_AND_TIME_METRICS", "UNCLEAN_LEADER_ELECTIONS", "GAUGES", "controller_gauges",
           "STATE_CHANGE_LOGGER", "log_partition_online", "leader_and_isr_string"]

UNCLEAN_LEADER_ELECTIONS = "UncleanLeaderElectionsPerSec"

#: Kafka's ``ControllerState`` of each kind of event kafkalab's controller processes -> its timer's name
RATE_AND_TIME_METRICS = {
    "ControllerChange": "ControllerChangeRateAndTimeMs",
    "BrokerChange": "LeaderElectionRateAndTimeMs",
    "TopicChange": "TopicChangeRateAndTimeMs",
    "TopicDeletion": "TopicDeletionRateAndTimeMs",
    "ManualLeaderBalance": "ManualLeaderBalanceRateAndTimeMs",
    "ControlledShutdown": "ControlledShutdownRateAndTimeMs",
    "IsrChange": "IsrChangeRateAndTimeMs",
    "LeaderAndIsrResponseReceived": "LeaderAndIsrResponseReceivedRateAndTimeMs",
    "LogDirChange": "LogDirChangeRateAndTimeMs",
}

#: the ``kafka.controller:type=KafkaController`` gauges kafkalab computes, in Kafka's order
GAUGES = ("ActiveControllerCount", "OfflinePartitionsCount", "PreferredReplicaImbalanceCount", "GlobalTopicCount",
          "GlobalPartitionCount", "ActiveBrokerCount")

STATE_CHANGE_LOGGER = "kafkalab.state.change.logger"
state_change_log = logging.getLogger(STATE_CHANGE_LOGGER)


class ControllerStats:
    """One broker's controller meters (Kafka's ``ControllerStats``); they outlive resignations and elections."""

    def __init__(self, time: Time = SYSTEM):
        self.time = time
        self.unclean_leader_election_rate = Meter(time, event_type="elections")
        #: ControllerState name -> its timer
        self.rate_and_time_metrics = {state: Timer(time) for state in RATE_AND_TIME_METRICS}

    def metrics(self) -> dict:
        """``{"UncleanLeaderElectionsPerSec": count, "LeaderElectionRateAndTimeMs": count, ...}`` (counts)."""
        out = {UNCLEAN_LEADER_ELECTIONS: self.unclean_leader_election_rate.count}
        for state, name in RATE_AND_TIME_METRICS.items():
            out[name] = self.rate_and_time_metrics[state].count
        return out

    def __deepcopy__(self, memo) -> "ControllerStats":
        """The meters belong to the broker, not to a view of the cluster: a copy of a context (a stale view kept
        to replay as a zombie controller) shares them."""
        return self


def controller_gauges(ctx, active: bool) -> dict:
    """The ``KafkaController`` gauges but ``ActiveControllerCount`` (read live), as ``updateMetrics`` sets them."""
    if not active:
        return {name: 0 for name in GAUGES[1:]}
    offline = imbalanced = 0
    for tp, state in ctx.partition_states.items():
        leader = state.leader_and_isr.leader
        if tp[0] in ctx.topics_being_deleted:
            continue
        replicas = ctx.replicas(tp)
        if not ctx.is_replica_online(leader, tp):
            offline += 1
        if replicas and leader != replicas[0]:
            imbalanced += 1
    return {"OfflinePartitionsCount": offline, "PreferredReplicaImbalanceCount": imbalanced,
            "GlobalTopicCount": len(ctx.topics), "GlobalPartitionCount": len(ctx.partition_states),
            "ActiveBrokerCount": len(ctx.live_brokers)}


def leader_and_isr_string(lai) -> str:
    """A ``LeaderAndIsr`` as Kafka 3.9's ``toString`` prints it (the ZooKeeper controller knows no broker epochs
    of ISR members: -1)."""
    isr = ", ".join(f"BrokerState(brokerId={b}, brokerEpoch=-1)" for b in lai.isr)
    return (f"LeaderAndIsr(leader={lai.leader}, leaderEpoch={lai.leader_epoch}, isrWithBrokerEpoch=List({isr}), "
            f"leaderRecoveryState={lai.leader_recovery_state.name}, partitionEpoch={lai.partition_epoch})")


def log_partition_online(broker_id: int, epoch: int, tp, from_state: str, lai) -> None:
    """The state-change line of a partition moved to OnlinePartition (INFO, ``kafkalab.state.change.logger``)."""
    if state_change_log.isEnabledFor(logging.INFO):
        state_change_log.info("[Controller id=%d epoch=%d] Changed partition %s-%d from %s to OnlinePartition with "
                              "state %s", broker_id, epoch, tp[0], tp[1], from_state, leader_and_isr_string(lai))
