"""The round-robin assignor: all partitions dealt out like cards.

Theory of operation
-------------------
Round robin lays out every partition of every subscribed topic -- topics in name order, partitions in numeric
order -- and deals them one by one to the members in a circle (static members by ``group.instance.id`` first,
then ``member.id``). A member that is not subscribed to a partition's topic is skipped, and the circle moves
on from the member that took the card. With two members and topics t0, t1 of three partitions each::

    t0-0 t0-1 t0-2 t1-0 t1-1 t1-2
     C0   C1   C0   C1   C0   C1        ->  C0: t0-0 t0-2 t1-1    C1: t0-1 t1-0 t1-2

When all members subscribe to the same topics the counts differ by at most one. When subscriptions differ it
can be lopsided: C0 subscribed to t0 (1 partition), C1 to t0, t1 (2), C2 to t0, t1, t2 (3) gives
``C0: t0-0``, ``C1: t1-0``, ``C2: t1-1 t2-0 t2-1 t2-2``. It remembers nothing between rebalances, so a
membership change can move almost every partition; it follows the EAGER protocol.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/RoundRobinAssignor.java``.
"""
from __future__ import annotations

from typing import Mapping

from kafkalab.clients.consumer.assignors.abstract import ConsumerPartitionAssignor, sorted_members
from kafkalab.clients.consumer.assignors.protocol import Subscription, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(ConsumerPartitionAssignor):
    name = "roundrobin"
    java_class = "org.apache.kafka.clients.consumer.RoundRobinAssignor"

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict:
        assignment: dict = {member: [] for member in subscriptions}
        circle = sorted_members(subscriptions)
        topics_of = {m: set(subscriptions[m].topics) for m in circle}
        turn = 0  # index in the circle of the member whose turn it is
        for topic in sorted(partitions_per_topic):
            for p in range(partitions_per_topic[topic]):
                # partitions_per_topic only holds subscribed topics, so someone takes this card
                while topic not in topics_of[circle[turn]]:
                    turn = (turn + 1) % len(circle)
                assignment[circle[turn]].append(TopicPartition(topic, p))
                turn = (turn + 1) % len(circle)
        return assignment
