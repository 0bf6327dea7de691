"""The controller's half of a controlled shutdown: move a stopping broker's leaderships before it goes.

Theory of operation
-------------------
A broker about to stop (``controlled.shutdown.enable``) sends ControlledShutdown (key 7) to the controller and
waits. The controller queues a *ControlledShutdown* event and, when its turn comes:

1. refuses what it cannot act on: NOT_CONTROLLER (it was deposed meanwhile), BROKER_NOT_AVAILABLE (not a live
   broker), STALE_BROKER_EPOCH (a request from an older incarnation of that broker);
2. marks the broker *shutting down*: from now on no election picks it;
3. for each replicated partition the broker **leads**, elects another ISR member
   (:func:`~.election.controlled_shutdown_leader`), writes the new state to ZooKeeper and sends LeaderAndIsr to
   the replicas -- and to the stopping broker too, so it stops acting as leader before it goes;
4. for each replicated partition it **follows**, sends StopReplica (without delete) and takes it out of the ISR;
5. answers with the partitions it *still* leads (no other ISR member could take them); the broker retries
   (``controlled.shutdown.max.retries``) or stops anyway.

A worked example: broker 1 leads ``t-0`` (replicas 1,2,3, ISR 1,2,3) and follows ``t-1`` (leader 2). The event
writes ``t-0`` with leader 2 and leader epoch +1, sends LeaderAndIsr for ``t-0`` to 1, 2 and 3, StopReplica for
``t-1`` to broker 1, shrinks ``t-1``'s ISR to 2,3, and answers ``NONE, []``: nothing is left for broker 1 to lead.

If the event is dropped unprocessed (this broker's ZooKeeper session expired), :func:`preempt_controlled_shutdown`
answers NOT_CONTROLLER, and the stopping broker asks the new controller. Each partition that got a new leader goes
to the state-change log ("Changed partition t-0 from OnlinePartition to OnlinePartition with state ...").

The controller lends this module its collaborator interface: ``context``, ``is_active``, ``name``,
``new_batch()``, ``write_states()``, ``remove_from_isr()`` and ``send()``.

Mirrors: ``KafkaController.processControlledShutdown`` / ``doControlledShutdown`` and
``ControlledShutdownLeaderElectionStrategy`` (ZooKeeper era).
"""
from __future__ import annotations

import asyncio
import logging

from kafkalab.controller.controller_stats import log_partition_online
from kafkalab.controller.election import controlled_shutdown_leader
from kafkalab.protocol import ErrorCode

__all__ = ["on_controlled_shutdown", "preempt_controlled_shutdown"]

log = logging.getLogger("kafkalab.controller.KafkaController")


async def on_controlled_shutdown(controller, broker_id: int, broker_epoch: int, future: asyncio.Future) -> None:
    """Run the shutdown and answer ``future`` with ``(error_code, partitions the broker still leads)``; a failure
    halfway answers NOT_CONTROLLER (the broker asks again) and is raised to the event thread."""
    try:
        result = await _do_controlled_shutdown(controller, broker_id, broker_epoch)
    except BaseException:
        if not future.done():
            future.set_result((ErrorCode.NOT_CONTROLLER, []))
        raise
    if not future.done():
        future.set_result(result)


def preempt_controlled_shutdown(broker_id: int, broker_epoch: int, future: asyncio.Future) -> None:
    """The event was dropped unprocessed: the waiting broker hears NOT_CONTROLLER."""
    if not future.done():
        future.set_result((ErrorCode.NOT_CONTROLLER, []))


async def _do_controlled_shutdown(controller, broker_id: int, broker_epoch: int) -> tuple[int, list]:
    ctx = controller.context
    if not controller.is_active:
        return ErrorCode.NOT_CONTROLLER, []
    if broker_id not in ctx.live_brokers:
        return ErrorCode.BROKER_NOT_AVAILABLE, []
    if 0 <= broker_epoch < ctx.broker_epochs.get(broker_id, -1):   # -1: an old client without the field
        return ErrorCode.STALE_BROKER_EPOCH, []
    log.info("%s: shutting down broker %s", controller.name, broker_id)
    ctx.shutting_down_brokers.add(broker_id)
    # Only replicated partitions can move; a partition of a topic being deleted is left alone.
    act_on = [tp for tp in ctx.partitions_on(broker_id) if len(ctx.replicas(tp)) > 1
              and tp in ctx.partition_states and tp[0] not in ctx.topics_being_deleted]
    led = [tp for tp in act_on if ctx.partition_states[tp].leader_and_isr.leader == broker_id]
    followed = [tp for tp in act_on if tp not in led]
    batch = controller.new_batch()
    updates = {}
    for tp in led:
        lai = ctx.partition_states[tp].leader_and_isr
        election = controlled_shutdown_leader(ctx.replicas(tp), lai.isr, ctx.live_or_shutting_down_broker_ids(),
                                              ctx.shutting_down_brokers)
        if election.leader >= 0:
            updates[tp] = lai.new_leader_and_isr(election.leader, election.isr)
    for tp, lai in controller.write_states(updates, batch).items():
        log_partition_online(controller.broker_id, ctx.epoch, tp, "OnlinePartition", lai)
    for tp in updates:  # the old leader hears it too: it stops acting as leader before it goes
        batch.add_leader_and_isr([broker_id], tp)
    for tp in followed:
        batch.add_stop_replica([broker_id], tp, delete=False)
    controller.remove_from_isr([broker_id], set(ctx.partitions_on(broker_id)) - set(followed), batch)
    batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids(), [])
    await controller.send(batch)
    remaining = [tp for tp in ctx.partitions_led_by(broker_id)
                 if len(ctx.replicas(tp)) > 1 and tp[0] not in ctx.topics_being_deleted]
    return ErrorCode.NONE, remaining
