"""One member of a classic group: who it is, what it supports, what it was assigned, what it waits for.

Theory of operation
-------------------
A member is known by its **member id**, which the coordinator makes up (``<client.id>-<uuid>``, or
``<group.instance.id>-<uuid>`` for a static member) and hands back in the first JoinGroup response. It
carries what its JoinGroup said: the **protocol type** (``consumer`` for consumers, ``connect`` for Kafka
Connect workers) and a list of **protocols** it supports, in order of preference, each with opaque metadata
(for consumers: the assignor's name, e.g. ``range``, and a subscription: topics + owned partitions). The
coordinator never reads these bytes; it only relays them to the leader, whose client computes the assignment.

Two timeouts come with every join: ``session.timeout.ms`` (no heartbeat for that long = dead) and
``rebalance.timeout.ms`` (how long a rebalance waits for this member to rejoin; consumers send their
``max.poll.interval.ms``).

While a JoinGroup or SyncGroup is held by the coordinator the member is *awaiting join* / *awaiting sync*:
the pending response is a callback stored here. Such a member counts as alive (it cannot heartbeat while its
request is parked), except a brand-new member, which must finish its first join in time.

Voting: when a generation starts, each member votes for the first protocol of its own preference list that
every member supports; the protocol with most votes wins (:meth:`GroupMetadata.select_protocol`).

Mirrors: ``core/src/main/scala/kafka/coordinator/group/MemberMetadata.scala``.
"""
from __future__ import annotations

from typing import Callable, Optional

__all__ = ["MemberMetadata"]


class MemberMetadata:
    def __init__(self, member_id: str, group_instance_id: Optional[str], client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 supported_protocols: list[tuple[str, bytes]]):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = list(supported_protocols)
        self.assignment = b""
        self.awaiting_join_callback: Optional[Callable] = None
        self.awaiting_sync_callback: Optional[Callable] = None
        self.is_new = False
        self.heartbeat_satisfied = False
        self.heartbeat_deadline_ms = -1      # when the session expires unless a heartbeat comes (for the lab)

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    @property
    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def has_satisfied_heartbeat(self) -> bool:
        """Alive at the deadline? New members must have completed their join; members whose JoinGroup or
        SyncGroup is parked count as alive; everybody else needs a heartbeat since the last deadline."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata (a rejoin that changes nothing)."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.supported_protocols]

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of the candidate protocols")

    def __repr__(self) -> str:
        return (f"MemberMetadata(member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r}, "
                f"client_id={self.client_id!r}, client_host={self.client_host!r}, "
                f"session_timeout_ms={self.session_timeout_ms}, rebalance_timeout_ms={self.rebalance_timeout_ms}, "
                f"protocols={[n for n, _ in self.supported_protocols]})")
