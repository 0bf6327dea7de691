"""Elections an operator asks for: ElectLeaders (PREFERRED or UNCLEAN), run by the ZooKeeper-era controller.

Theory of operation
-------------------
The controller elects leaders on its own when it must (a leader died, a broker shuts down). An operator can also
ask, with an ElectLeaders request (``kafkalab leader-election``, ``Admin.elect_leaders``). The broker that gets
the request hands it to its controller as a *ReplicaLeaderElection* event; only the active controller acts, the
others answer NOT_CONTROLLER for every partition. The active one sorts the partitions first:

* not in the cluster: UNKNOWN_TOPIC_OR_PARTITION "The partition does not exist.";
* of a topic being deleted: INVALID_TOPIC_EXCEPTION "The topic is being deleted";
* already fine: ELECTION_NOT_NEEDED -- for PREFERRED, the leader *is* the first assigned replica; for UNCLEAN,
  the partition *has* a live leader (an unclean election never replaces a working leader);
* the rest are elected, with the rules of :mod:`.election`, on the partition state read fresh from ZooKeeper:
  PREFERRED puts the first assigned replica in charge if it is alive and in the ISR (the ISR stays as it is);
  UNCLEAN takes the first live ISR member in assignment order, else -- unclean, whatever the topic's
  ``unclean.leader.election.enable`` says, because an operator asked -- the first live replica, whose ISR is
  then itself alone (marking the meter ``UncleanLeaderElectionsPerSec``, :mod:`.controller_stats`). Each new
  state is written with a bumped leader epoch, conditionally on the znode version
  read (a leader that changed its ISR meanwhile makes the controller read and elect again), then LeaderAndIsr
  goes to the replicas and UpdateMetadata to every broker; each partition elected goes to the state-change log
  ("Changed partition t-0 from OfflinePartition to OnlinePartition with state LeaderAndIsr(...)"). A partition without a candidate gets
  PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE "Failed to elect leader for partition t-0
  under strategy ..." (the strategy named as Kafka's ``toString`` names it).

The answer -- ``{(topic, partition): new leader id, or the ApiException saying why not}`` -- goes back as soon
as the states are written and the requests queued; the broker then waits (``DelayedElectLeader``) until its own
metadata shows each new leader. Kafka's automatic preferred elections (``auto.leader.rebalance.enable``) and the
``/admin/preferred_replica_election`` znode are not built: kafkalab refuses that setting.

Mirrors: ``KafkaController.electLeaders``, ``processReplicaLeaderElection`` and ``onReplicaElection`` (trigger
``AdminClientTriggered``), ``ZkPartitionStateMachine.doElectLeaderForPartitions`` and ``Election.scala``
(``leaderForPreferredReplica``, ``leaderForOffline``).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Iterable, Union

from kafkalab.controller.controller_stats import log_partition_online
from kafkalab.controller.election import Election, offline_partition_leader, preferred_replica_leader
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.protocol.election_type import ElectionType
from kafkalab.zk.paths import LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["ElectionOutcome", "STRATEGIES", "elect_for_admin", "on_replica_leader_election",
           "preempt_replica_leader_election", "not_controller"]

log = logging.getLogger("kafkalab.controller.KafkaController")

#: a partition's outcome: its new leader's id, or why it has none
ElectionOutcome = Union[int, ApiException]

#: each election type's strategy, as Kafka's ``PartitionLeaderElectionStrategy`` prints itself
STRATEGIES = {ElectionType.PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
              ElectionType.UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}

#: the error of a partition no candidate could lead (Kafka maps its StateChangeFailedException to these)
_NO_CANDIDATE = {ElectionType.PREFERRED: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                 ElectionType.UNCLEAN: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def _name(tp) -> str:
    return f"{tp[0]}-{tp[1]}"


def not_controller(partitions: Iterable) -> dict:
    """Every partition answered NOT_CONTROLLER (this broker's controller is not the active one)."""
    return {tuple(tp): ApiException(ErrorCode.NOT_CONTROLLER) for tp in partitions}


def preempt_replica_leader_election(partitions, election_type, future: asyncio.Future) -> None:
    """The event was dropped unprocessed (the session expired): the request hears NOT_CONTROLLER."""
    if not future.done():
        future.set_result(not_controller(partitions))


async def on_replica_leader_election(controller, partitions, election_type, future: asyncio.Future) -> None:
    """The event handler: elect, then answer ``future``; NOT_CONTROLLER everywhere if the controller failed."""
    try:
        results = await elect_for_admin(controller, partitions, ElectionType(election_type))
    except BaseException:
        preempt_replica_leader_election(partitions, election_type, future)
        raise
    if not future.done():
        future.set_result(results)


def _needs_election(ctx, tp, election_type: ElectionType) -> bool:
    state = ctx.partition_states.get(tp)
    leader = state.leader_and_isr.leader if state is not None else -1
    if election_type == ElectionType.PREFERRED:
        return leader != ctx.replicas(tp)[0]
    return leader == -1 or not ctx.is_live(leader)


async def elect_for_admin(controller, partitions, election_type: ElectionType) -> dict[tuple, ElectionOutcome]:
    """Kafka's ``processReplicaLeaderElection`` for an admin request: the outcome of every partition asked about."""
    ctx = controller.context
    wanted = sorted({tuple(tp) for tp in partitions})
    if not controller.is_active:
        return not_controller(wanted)
    log.info("%s: Starting replica leader election (%s) for partitions %s triggered by AdminClientTriggered",
             controller.name, election_type.name, ",".join(map(_name, wanted)))
    results: dict[tuple, ElectionOutcome] = {}
    electable = []
    for tp in wanted:
        if not ctx.replicas(tp):
            log.info("%s: Skipping replica leader election (%s) for partition %s by AdminClientTriggered since it "
                     "doesn't exist.", controller.name, election_type.name, _name(tp))
            results[tp] = ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        elif tp[0] in ctx.topics_being_deleted:
            results[tp] = ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        elif _needs_election(ctx, tp, election_type):
            electable.append(tp)
        else:
            results[tp] = ApiException(ErrorCode.ELECTION_NOT_NEEDED)
    if electable:
        batch = controller.new_batch()
        remaining = electable
        while remaining:   # a partition whose state changed under us is read and elected again
            finished, remaining = _elect_once(controller, remaining, election_type, batch)
            results.update(finished)
        await controller.send(batch)
    return results


def _choose(ctx, tp, lai, election_type: ElectionType) -> Election:
    replicas = ctx.replicas(tp)
    online = [b for b in replicas if ctx.is_replica_online(b, tp)]
    if election_type == ElectionType.PREFERRED:
        return preferred_replica_leader(replicas, lai.isr, online)
    return offline_partition_leader(replicas, lai.isr, online, unclean_allowed=True)


def _state_label(ctx, tp) -> str:
    state = ctx.partition_states.get(tp)
    if state is None:
        return "NewPartition"
    return "OnlinePartition" if ctx.is_replica_online(state.leader_and_isr.leader, tp) else "OfflinePartition"


def _elect_once(controller, partitions: list, election_type: ElectionType, batch) -> tuple[dict, list]:
    """One round (``doElectLeaderForPartitions``): ``(finished outcomes, partitions to read and try again)``."""
    ctx = controller.context
    outcomes: dict[tuple, ElectionOutcome] = {}
    chosen, from_states = {}, {}
    states = controller.zk.get_topic_partition_states(TopicPartition(*tp) for tp in partitions)
    for tp in partitions:
        state = states.get(TopicPartition(*tp))
        if state is None:
            outcomes[tp] = ApiException(_NO_CANDIDATE[election_type], f"LeaderAndIsr information doesn't exist for "
                                      f"partition {_name(tp)} in {_state_label(ctx, tp)} state")
            continue
        if state.controller_epoch > ctx.epoch:
            outcomes[tp] = ApiException(_NO_CANDIDATE[election_type], (
                f"Aborted leader election for partition {_name(tp)} since the LeaderAndIsr path was already written "
                f"by another controller. This probably means that the current controller {controller.broker_id} went "
                f"through a soft failure and another controller was elected with epoch {state.controller_epoch}."))
            continue
        lai = state.leader_and_isr
        election = _choose(ctx, tp, lai, election_type)
        if election.leader < 0:
            outcomes[tp] = ApiException(_NO_CANDIDATE[election_type], f"Failed to elect leader for partition "
                                      f"{_name(tp)} under strategy {STRATEGIES[election_type]}")
            continue
        if election.unclean:
            ctx.stats.unclean_leader_election_rate.mark()
        chosen[TopicPartition(*tp)] = lai.new_leader_and_isr(election.leader, election.isr)
        from_states[tp] = _state_label(ctx, tp)
    if not chosen:
        return outcomes, []
    written = controller.zk.update_leader_and_isr(chosen, ctx.epoch, ctx.epoch_zk_version)
    for tp, lai in written.finished_partitions.items():
        key = (tp.topic, tp.partition)
        if isinstance(lai, Exception):   # ApiError.fromThrowable of a ZooKeeper error
            outcomes[key] = ApiException(ErrorCode.UNKNOWN_SERVER_ERROR)
            continue
        ctx.partition_states[key] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
        batch.add_leader_and_isr([b for b in ctx.replicas(key) if ctx.is_live(b)], key)
        log_partition_online(controller.broker_id, ctx.epoch, key, from_states[key], lai)
        outcomes[key] = lai.leader
    return outcomes, [(tp.topic, tp.partition) for tp in written.partitions_to_retry]
