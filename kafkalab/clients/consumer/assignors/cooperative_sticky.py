"""The cooperative-sticky assignor: the sticky plan, reached in two rebalances without stopping the world.

Theory of operation
-------------------
Under the EAGER protocol every member drops all its partitions before a rebalance, even the ones it will get
straight back. KIP-429's COOPERATIVE protocol lets members keep consuming while the group rebalances; the
price is one rule the leader must follow: **a partition may not be given to a new owner in the same rebalance
in which it is taken from the old one** -- otherwise two members could briefly consume it at once.

``cooperative-sticky`` computes exactly the sticky plan (:mod:`.abstract_sticky`), then removes from it every
partition that would change owner. The old owner sees the partition missing from its assignment, revokes it
(``onPartitionsRevoked``) and, because it lost something, immediately rejoins. In that second rebalance the
partition is owned by nobody, so the plan can give it to its new member::

    rebalance 1:  C0 owns t-0 t-1 t-2 t-3, C1 joins  ->  C0: t-0 t-1      C1: (nothing yet)
    rebalance 2:  t-2, t-3 are free                  ->  C0: t-0 t-1      C1: t-2 t-3

Members report what they own in the subscription's ``owned_partitions`` (v1+) and, from v2, the generation it
was owned in (``generation_id``); older members put the generation in ``user_data`` as a single INT32. The
partitions changing owner come from the equal-subscriptions builder, which tracks them; otherwise they are
found by comparing the plan with the members' claims (partitions both newly added to someone and revoked
from someone).

This assignor supports both protocols (COOPERATIVE preferred, EAGER so a group can migrate from ``sticky``).

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/CooperativeStickyAssignor.java``.
"""
from __future__ import annotations

from typing import Mapping, Optional

from kafkalab.clients.consumer.assignors.abstract import RebalanceProtocol
from kafkalab.clients.consumer.assignors.abstract_sticky import AbstractStickyAssignor, MemberData
from kafkalab.clients.consumer.assignors.protocol import DEFAULT_GENERATION, Assignment, Subscription
from kafkalab.protocol.errors import DecodeError
from kafkalab.protocol.primitives import read_fixed, write_fixed

__all__ = ["CooperativeStickyAssignor", "partitions_transferring_ownership"]


def partitions_transferring_ownership(subscriptions: Mapping[str, Subscription],
                                      assignment: Mapping[str, list]) -> dict:
    """partition -> new owner, for partitions the plan adds to one member and takes from another."""
    added: dict = {}
    revoked: set = set()
    for member, planned in assignment.items():
        owned = set(subscriptions[member].owned_partitions)
        planned_set = set(planned)
        added.update((tp, member) for tp in planned if tp not in owned)
        revoked.update(tp for tp in owned if tp not in planned_set)
    return {tp: member for tp, member in added.items() if tp in revoked}


class CooperativeStickyAssignor(AbstractStickyAssignor):
    name = "cooperative-sticky"
    java_class = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def supported_protocols(self) -> list:
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._generation = generation_id

    def subscription_user_data(self, topics) -> Optional[bytes]:
        return write_fixed("int32", self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        if subscription.generation_id is not None and subscription.generation_id >= 0:   # v2+ carries it
            return MemberData(list(subscription.owned_partitions), subscription.generation_id, subscription.rack_id)
        if subscription.user_data is None:
            generation = None
        else:
            try:
                generation = read_fixed("int32", subscription.user_data, 0)[0]
            except DecodeError:
                generation = DEFAULT_GENERATION
        return MemberData(list(subscription.owned_partitions), generation, subscription.rack_id)

    def assign_partitions(self, partitions_per_topic: Mapping[str, int],
                          subscriptions: Mapping[str, Subscription]) -> dict:
        plan, transferring = self.assign_with_transfers(partitions_per_topic, subscriptions)
        if transferring is None:
            transferring = partitions_transferring_ownership(subscriptions, plan)
        for tp, member in transferring.items():
            plan[member].remove(tp)       # first revoked; handed out in the follow-up rebalance
        return plan
