"""The controller's half of a failed log directory: find the replicas that went offline, move their leadership.

Theory of operation
-------------------
A broker whose log dir fails stops serving the partitions in it (see ``kafkalab.server.replica_manager``) and
writes ``/log_dir_event_notification/log_dir_event_<seq>`` (``{"version":1,"broker":<id>,"event":1}``). The
controller does not learn *which* partitions from the notification. It asks:

1. **LogDirEventNotification** (a watch on the children of ``/log_dir_event_notification``): read the broker ids,
   delete the notifications, and send each of those brokers a LeaderAndIsr for every replica it holds;
2. **LeaderAndIsrResponseReceived**: a broker answers KAFKA_STORAGE_ERROR for each replica in a failed dir (any
   LeaderAndIsr response counts, also the one a new controller sends at failover). Those replicas become
   *offline* in the controller's context (``replicas_on_offline_dirs``): a partition they led gets a new leader
   from the rest of its ISR, and they leave the ISR of the others, exactly as the replicas of a dead broker do;
   UpdateMetadata lists them in ``offline_replicas``.

A replica stays offline until its broker registers again (a restart after the disk was replaced).

Mirrors: ``KafkaController.processLogDirEventNotification``, ``onBrokerLogDirFailure``,
``processLeaderAndIsrResponseReceived`` and ``onReplicasBecomeOffline`` (ZooKeeper era).
"""
from __future__ import annotations

import logging

from kafkalab.controller.channel import topic_uuid
from kafkalab.protocol import ErrorCode

__all__ = ["storage_errors_in", "on_log_dir_event_notification", "on_leader_and_isr_response_received",
           "watch_log_dir_events"]

log = logging.getLogger("kafkalab.controller.KafkaController")


def storage_errors_in(response, context) -> list[tuple[str, int]]:
    """The partitions a LeaderAndIsr response (v5+: by topic id; older: by name) answers KAFKA_STORAGE_ERROR."""
    names = {topic_uuid(topic_id): name for name, topic_id in context.topic_ids.items()}
    out = []
    for topic in getattr(response, "topics", ()) or ():
        name = names.get(topic.topic_id)
        out += [(name, e.partition_index) for e in topic.partition_errors
                if name is not None and e.error_code == ErrorCode.KAFKA_STORAGE_ERROR]
    for e in getattr(response, "partition_errors", ()) or ():
        if e.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
            out.append((e.topic_name, e.partition_index))
    return sorted(out)


def watch_log_dir_events(zk, context, watch) -> None:
    """At failover: ``watch`` the notifications and drop the pending ones (the LeaderAndIsr every broker gets
    now reveals the offline replicas anyway)."""
    zk.make_sure_persistent_path_exists("/log_dir_event_notification")
    zk.delete_log_dir_event_notifications(zk.get_all_log_dir_event_notifications(watch=watch), context.epoch_zk_version)


async def on_log_dir_event_notification(controller, watch) -> None:
    """The notified brokers get a LeaderAndIsr for every replica they hold (``onBrokerLogDirFailure``);
    ``watch`` is set again on the notifications."""
    ctx = controller.context
    seqs = controller.zk.get_all_log_dir_event_notifications(watch=watch)
    if not seqs:
        return
    brokers = sorted(set(controller.zk.get_broker_ids_from_log_dir_event_notifications(seqs)))
    controller.zk.delete_log_dir_event_notifications(seqs, ctx.epoch_zk_version)
    batch = controller.new_batch()
    for broker_id in brokers:
        if not ctx.is_live(broker_id):
            continue
        log.info("%s: handling log dir failure of broker %s", controller.name, broker_id)
        for tp in ctx.partitions_on(broker_id):
            if tp[0] not in ctx.topics_being_deleted:
                batch.add_leader_and_isr([broker_id], tp)
    await controller.send(batch)


async def on_leader_and_isr_response_received(controller, broker_id: int, partitions: list) -> None:
    """``partitions`` of ``broker_id`` answered KAFKA_STORAGE_ERROR: they go offline (``onReplicasBecomeOffline``)."""
    ctx = controller.context
    if not ctx.is_live(broker_id):
        return
    offline = ctx.replicas_on_offline_dirs.setdefault(broker_id, set())
    new = sorted(tp for tp in partitions if tp in ctx.assignments and tp not in offline)
    if not new:
        return
    offline.update(new)
    log.info("%s: replicas of broker %s in a failed log dir went offline: %s", controller.name, broker_id,
             ",".join(f"{t}-{p}" for t, p in new))
    batch = controller.new_batch()
    led = [tp for tp in new if tp in ctx.partition_states
           and ctx.partition_states[tp].leader_and_isr.leader == broker_id]
    controller.elect_offline_partitions(led, batch)
    shrink = {}
    for tp in new:
        state = ctx.partition_states.get(tp)
        if state is None or tp in led:
            continue
        lai = state.leader_and_isr
        if broker_id in lai.isr and len(lai.isr) > 1:
            shrink[tp] = lai.new_leader_and_isr(lai.leader, [r for r in lai.isr if r != broker_id])
    controller.write_states(shrink, batch)
    batch.add_update_metadata(ctx.live_broker_ids(), new)
    await controller.send(batch)
