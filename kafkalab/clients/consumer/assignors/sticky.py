"""The sticky assignor (eager): balanced like round robin, but partitions stay where they were.

Theory of operation
-------------------
``sticky`` runs the algorithm of :mod:`.abstract_sticky` under the EAGER protocol: before joining, every
member gives up all its partitions, so the JoinGroup ``owned_partitions`` field is empty. To be sticky
anyway, each member remembers its last assignment itself and sends it as the subscription's ``user_data``
(Kafka's ``StickyAssignor`` user data, a non-flexible struct with no version prefix)::

    previous_assignment [topic STRING, partitions [INT32]] | generation INT32      (v1; v0 had no generation)

The leader reads v1 and falls back to v0; bytes that fit neither are ignored (the member owned nothing, in
generation -1). Empty or missing user data means "nothing owned, generation unknown" -- a new member.

Example (Kafka's): members C0, C1, C2 subscribed to t0..t3 of two partitions each get
``C0: t0-0 t1-1 t3-0``, ``C1: t0-1 t2-0 t3-1``, ``C2: t1-0 t2-1``. When C1 leaves, round robin would move
most partitions; sticky keeps all five of C0's and C2's and only deals out C1's three.

Because everything is revoked up front, a rebalance stops the whole group until SyncGroup -- the
"stop-the-world" that ``cooperative-sticky`` (:mod:`.cooperative_sticky`) avoids.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/StickyAssignor.java``.
"""
from __future__ import annotations

from typing import Optional

from kafkalab.clients.consumer.assignors.abstract_sticky import AbstractStickyAssignor, MemberData
from kafkalab.clients.consumer.assignors.protocol import (DEFAULT_GENERATION, Assignment, Subscription,
                                                          TopicPartition, group_by_topic)
from kafkalab.protocol.errors import DecodeError
from kafkalab.protocol.primitives import (read_array_length, read_fixed, read_string, write_array_length,
                                          write_fixed, write_string)

__all__ = ["StickyAssignor", "encode_user_data", "decode_user_data"]


def encode_user_data(partitions, generation: Optional[int]) -> bytes:
    """Sticky user data v1 (v0 when ``generation`` is None): the member's partitions grouped by topic."""
    grouped = group_by_topic(TopicPartition(*tp) for tp in partitions)
    out = [write_array_length(len(grouped))]
    for topic, ps in grouped:
        out.append(write_string(topic))
        out.append(write_array_length(len(ps)))
        out.extend(write_fixed("int32", p) for p in ps)
    if generation is not None:
        out.append(write_fixed("int32", generation))
    return b"".join(out)


def _read(data, with_generation: bool) -> MemberData:
    count, pos = read_array_length(data, 0)
    partitions = []
    for _ in range(count or 0):
        topic, pos = read_string(data, pos)
        n, pos = read_array_length(data, pos)
        for _ in range(n or 0):
            p, pos = read_fixed("int32", data, pos)
            partitions.append(TopicPartition(topic, p))
    generation = None
    if with_generation:
        generation, pos = read_fixed("int32", data, pos)
    return MemberData(partitions, generation)


def decode_user_data(data) -> MemberData:
    """Read v1, else v0, else treat the member as owning nothing (generation -1), as Kafka does."""
    for with_generation in (True, False):
        try:
            return _read(data, with_generation)
        except DecodeError:
            continue
    return MemberData([], DEFAULT_GENERATION)


class StickyAssignor(AbstractStickyAssignor):
    name = "sticky"
    java_class = "org.apache.kafka.clients.consumer.StickyAssignor"

    def __init__(self) -> None:
        self._member_assignment: Optional[list] = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._member_assignment = list(assignment.partitions)
        self._generation = generation_id

    def subscription_user_data(self, topics) -> Optional[bytes]:
        if self._member_assignment is None:
            return None
        return encode_user_data(self._member_assignment, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        # eager: owned_partitions is empty by design, the memory is in user_data
        if not subscription.user_data:
            return MemberData([], None, subscription.rack_id)
        data = decode_user_data(subscription.user_data)
        return data._replace(rack_id=subscription.rack_id)
