"""The controller's topic events: a topic created, partitions added, a topic deleted.

Theory of operation
-------------------
Nobody tells the ZooKeeper-era controller about a new topic directly. ``CreateTopics`` (on any broker) or an admin
tool writes ``/brokers/topics/<topic>`` with the replica assignment; the controller holds a child watch on
``/brokers/topics`` and a data watch on each topic's znode, and works out what changed by comparing ZooKeeper with
its own context:

1. **TopicChange** (children of ``/brokers/topics``): topics in ZooKeeper and not in the context are new -- load
   their assignment (which sets the data watch of step 2) and take every partition NewPartition -> OnlinePartition
   (leader = first live replica, ISR = the live replicas, leader epoch 0); topics in the context and no longer
   in ZooKeeper are forgotten.
2. **PartitionModifications** (``/brokers/topics/<topic>`` changed): ``CreatePartitions`` added partitions to the
   assignment; only those are initialised.
3. **TopicDeletion** (children of ``/admin/delete_topics``): each topic the controller knows is deleted as Kafka's
   ``TopicDeletionManager`` does when every replica is online: StopReplica with ``delete=true`` to every live
   replica, UpdateMetadata so brokers forget it, then its znodes (``/brokers/topics/<t>``, ``/config/topics/<t>``,
   ``/admin/delete_topics/<t>``) go, each write fenced by the controller epoch. Requests naming topics the
   controller does not know are simply removed. kafkalab has no retry for replicas that are offline during the
   deletion (Kafka marks them ineligible and waits).

Worked example: ``CreateTopics("orders", 2 partitions, RF 2)`` on a 3-broker cluster writes
``/brokers/topics/orders`` with the assignment ``{0: [1, 2], 1: [2, 0]}``; the watch fires TopicChange; the
controller creates ``/brokers/topics/orders/partitions/0/state`` = leader 1, ISR [1, 2], epoch 0 (and 1: leader 2),
then sends LeaderAndIsr to brokers 1, 2 and 0 and UpdateMetadata to all three.

The functions take the :class:`~kafkalab.controller.controller.KafkaController` and use only its public interface
(``context``, ``zk``, ``watch``, ``load_topic``, ``initialize_partitions``, ``new_batch``, ``send``).

Mirrors: ``KafkaController.processTopicChange``, ``processPartitionModifications``, ``processTopicDeletion`` and
``core/src/main/scala/kafka/controller/TopicDeletionManager.scala`` (ZooKeeper era).
"""
from __future__ import annotations

import asyncio

__all__ = ["on_topic_change", "on_partition_modifications", "on_topic_deletion", "delete_topics"]


async def on_topic_change(controller) -> None:
    ctx = controller.context
    topics = set(controller.zk.get_children("/brokers/topics", watch=controller.watch("topic_change")))
    known = set(ctx.topics)
    added = sorted(topics - known)
    for topic in sorted(known - topics):
        ctx.remove_topic(topic)
    if not added:
        return
    new_partitions = []
    for topic in added:
        controller.load_topic(topic)
        new_partitions.extend(ctx.partitions_of(topic))
    batch = controller.new_batch()
    await controller.initialize_partitions(new_partitions, batch)
    await controller.send(batch)


async def on_partition_modifications(controller, topic: str) -> None:
    ctx = controller.context
    before = set(ctx.partitions_of(topic))
    controller.load_topic(topic)
    added = [tp for tp in ctx.partitions_of(topic) if tp not in before]
    if added:
        batch = controller.new_batch()
        await controller.initialize_partitions(added, batch)
        await controller.send(batch)


async def on_topic_deletion(controller) -> None:
    ctx = controller.context
    topics = controller.zk.get_topic_deletions(watch=controller.watch("topic_deletion"))
    known = [t for t in topics if t in ctx.topic_ids or ctx.partitions_of(t)]
    unknown = [t for t in topics if t not in known]
    if unknown:
        controller.zk.delete_topic_deletions(unknown, ctx.epoch_zk_version)
    if known:
        await delete_topics(controller, known)


async def delete_topics(controller, topics: list[str]) -> None:
    """All replicas stop and delete the partition, then the topic's znodes are removed and brokers learn it is
    gone (``TopicDeletionManager`` without the retries for offline replicas)."""
    ctx, zk = controller.context, controller.zk
    ctx.topics_being_deleted.update(topics)
    batch = controller.new_batch()
    for topic in topics:
        for tp in ctx.partitions_of(topic):
            batch.add_stop_replica([b for b in ctx.replicas(tp) if b in ctx.live_brokers], tp, delete=True)
    batch.add_update_metadata(ctx.live_broker_ids(), [tp for t in topics for tp in ctx.partitions_of(t)])
    await controller.send(batch)
    for i, topic in enumerate(topics):
        if i:
            await asyncio.sleep(0)   # each topic's znodes go in batches; other connections get a turn between
        zk.delete_topic_znode(topic, ctx.epoch_zk_version)
        zk.delete_topic_configs([topic], ctx.epoch_zk_version)
        zk.delete_topic_deletions([topic], ctx.epoch_zk_version)
        ctx.remove_topic(topic)
