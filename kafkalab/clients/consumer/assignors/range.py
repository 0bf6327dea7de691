"""The range assignor: each topic cut into contiguous slices, one slice per subscribed member.

Theory of operation
-------------------
Range works topic by topic. For one topic it lines up the topic's partitions in numeric order and the members
subscribed to it in member order (static members by ``group.instance.id`` first, then ``member.id``), and
gives every member ``partitions // members`` consecutive partitions; the first ``partitions % members``
members get one more. With two members C0, C1 and topics t0, t1 of three partitions each::

    t0: p0 p1 | p2        t1: p0 p1 | p2
        C0      C1            C0      C1        ->  C0: t0-0 t0-1 t1-0 t1-1    C1: t0-2 t1-2

Because the cut is the same for every topic with the same partition count and subscribers, partition *i* of
all those topics lands on the same member ("co-partitioning"): handy for joins of keyed topics. The price is
imbalance: the first members collect the extra partition of *every* topic, so with many small topics C0
can end up with far more partitions than the last member. Range is Kafka's default (together with
cooperative-sticky) and follows the EAGER protocol.

A member's list holds its slices topic by topic, topics in name order. The rack-aware variant (KIP-881) needs
replica racks and does not apply here (see :mod:`.abstract`).

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/RangeAssignor.java``.
"""
from __future__ import annotations

from typing import Mapping

from kafkalab.clients.consumer.assignors.abstract import ConsumerPartitionAssignor, sorted_members
from kafkalab.clients.consumer.assignors.protocol import Subscription, TopicPartition

__all__ = ["RangeAssignor"]


class RangeAssignor(ConsumerPartitionAssignor):
    name = "range"
    java_class = "org.apache.kafka.clients.consumer.RangeAssignor"

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict:
        assignment: dict = {member: [] for member in subscriptions}
        for topic in sorted(partitions_per_topic):
            members = sorted_members(subscriptions, [m for m, s in subscriptions.items() if topic in s.topics])
            if not members:
                continue
            count = partitions_per_topic[topic]
            per_member, with_extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                length = per_member + (1 if i < with_extra else 0)
                assignment[member].extend(TopicPartition(topic, p) for p in range(start, start + length))
                start += length
        return assignment
