"""What every partition assignor is, and the grunt work they share.

Theory of operation
-------------------
In the classic group protocol the broker does not decide who reads what. Every member lists the assignors it
supports in JoinGroup (by name: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``); the coordinator
picks one that *all* members support, elects a leader and sends the leader everyone's subscription. The
leader runs the assignor -- a pure function of

* the members' subscriptions, ``{member_id: Subscription}`` (topics, plus what each member owned before),
* the number of partitions of every subscribed topic, from the leader's metadata,

-- and sends the resulting ``{member_id: Assignment}`` back in SyncGroup. Because only the leader computes,
two members never need to agree on anything but the assignor's name.

:meth:`ConsumerPartitionAssignor.assign` first keeps only topics that someone subscribes to and that have
partitions (a topic missing from metadata is simply skipped, as Java does), then asks the concrete assignor
for ``{member_id: [TopicPartition]}`` and wraps the lists into :class:`Assignment` objects. Every member of
the group appears in the result, if only with an empty list.

Each assignor also declares which *rebalance protocols* it can follow (KIP-429): ``EAGER`` (every member drops
all its partitions before joining, so the leader may reshuffle freely) or ``COOPERATIVE`` (members keep their
partitions while rebalancing; the leader may only take partitions away, and hands them out in a later
rebalance). Members may also carry state in ``user_data``: :meth:`subscription_user_data` is what the member
puts in its next JoinGroup, :meth:`on_assignment` is told the result of SyncGroup.

Ordering members: assignors that walk members in order sort them like ``MemberInfo`` does -- static members
(with a ``group.instance.id``, KIP-345) first, by instance id, then dynamic members by ``member.id`` -- so a
rolling bounce of static members, which changes every ``member.id``, does not reshuffle partitions.

The assignors here receive partition *counts* only, so the rack-aware placement Kafka 3.5 added (KIP-881),
which needs each replica's rack, never applies; ``rack_id`` is carried through the protocol untouched.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/ConsumerPartitionAssignor.java`` and
``clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractPartitionAssignor.java``.
"""
from __future__ import annotations

import enum
from typing import ClassVar, Iterable, Mapping, Optional

from kafkalab.clients.consumer.assignors.protocol import Assignment, Subscription, TopicPartition

__all__ = ["RebalanceProtocol", "ConsumerPartitionAssignor", "member_sort_key", "sorted_members",
           "partitions_of"]


class RebalanceProtocol(enum.IntEnum):
    """``ConsumerPartitionAssignor.RebalanceProtocol`` (the ids are Kafka's)."""

    EAGER = 0
    COOPERATIVE = 1


def member_sort_key(member_id: str, subscription: Subscription) -> tuple:
    """Static members first (by ``group.instance.id``), then dynamic members by ``member.id``."""
    if subscription.group_instance_id is not None:
        return (0, subscription.group_instance_id)
    return (1, member_id)


def sorted_members(subscriptions: Mapping[str, Subscription], members: Optional[Iterable[str]] = None) -> list:
    """``members`` (default: all) in Kafka's member order (see :func:`member_sort_key`)."""
    members = subscriptions if members is None else members
    return sorted(members, key=lambda m: member_sort_key(m, subscriptions[m]))


def partitions_of(topic: str, count: int) -> list:
    return [TopicPartition(topic, p) for p in range(count)]


class ConsumerPartitionAssignor:
    """Base of all assignors: the names, the protocols, and :meth:`assign`."""

    #: The protocol name members advertise in JoinGroup (``name()`` in Java).
    name: ClassVar[str] = ""
    #: The class name ``partition.assignment.strategy`` uses for it in the Java client.
    java_class: ClassVar[str] = ""

    def supported_protocols(self) -> list:
        """Rebalance protocols this assignor can follow, preferred first (EAGER by default)."""
        return [RebalanceProtocol.EAGER]

    def version(self) -> int:
        return 0

    def subscription_user_data(self, topics) -> Optional[bytes]:
        """The ``user_data`` this member sends in its next JoinGroup (None: nothing to remember)."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called with this member's part of the SyncGroup result and the group generation it belongs to."""

    # -- the leader's side --------------------------------------------------------------------------------
    def assign(self, subscriptions: Mapping[str, Subscription],
               partitions_per_topic: Mapping[str, int]) -> dict:
        """``{member_id: Assignment}`` for every member of ``subscriptions``."""
        subscribed = set()
        for subscription in subscriptions.values():
            subscribed.update(subscription.topics)
        counts = {t: int(partitions_per_topic[t]) for t in subscribed if partitions_per_topic.get(t, 0) > 0}
        raw = self.assign_partitions(counts, subscriptions)
        return {member: Assignment(partitions=raw.get(member, [])) for member in subscriptions}

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict:
        """``{member_id: [TopicPartition]}``; ``partitions_per_topic`` holds subscribed, existing topics only."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
