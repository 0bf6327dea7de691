"""The group state machine: five states, and for each the states it may be entered from.

Theory of operation
-------------------
A consumer group moves through five states. The whole machine is one table, :data:`VALID_PREVIOUS_STATES`:
for every state, the states a group may come *from*. Kafka writes it the same way (each ``GroupState`` object
lists its ``validPreviousStates``) and checks every transition against it; so does :meth:`check_transition`.

* **Empty** -- no members (yet, or any more). Committed offsets may still exist: a group that only commits
  offsets (``assign()`` plus ``commit()``) lives here. From PreparingRebalance when the last member left.
* **PreparingRebalance** -- a member joined, left, died or changed its subscription: every member must send
  JoinGroup again. The coordinator holds the JoinGroup requests (it does not answer yet) until all known
  members rejoined or the rebalance timeout passed. From Empty, Stable or CompletingRebalance.
* **CompletingRebalance** -- the JoinGroup responses went out with a new *generation*; the leader computes the
  assignment and sends it in its SyncGroup. The others' SyncGroups wait for it. Only from PreparingRebalance.
* **Stable** -- the leader's assignment was stored and handed out; members heartbeat and commit offsets.
  Only from CompletingRebalance.
* **Dead** -- the group is gone (deleted, offsets expired, or this broker stopped coordinating it).
  From any state.

``PreparingRebalance`` being reachable only from Empty, Stable and CompletingRebalance is why Kafka's
``canRebalance`` is simply "PreparingRebalance may be entered from the current state".

Mirrors: ``core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala`` (``GroupState`` and its objects).
"""
from __future__ import annotations

import enum

__all__ = ["GroupState", "VALID_PREVIOUS_STATES", "TRANSITIONS", "IllegalStateTransition", "can_transition",
           "check_transition"]


class GroupState(str, enum.Enum):
    """The names are Kafka's own: DescribeGroups and ListGroups report exactly these strings."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState

#: state -> the states it may be entered from (Kafka's ``validPreviousStates``).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}

#: Why each edge is taken, for diagrams and the lab: (from, to, what happened).
TRANSITIONS: tuple = (
    (S.EMPTY, S.PREPARING_REBALANCE, "first member sends JoinGroup"),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, "all members rejoined (or rebalance timeout): JoinGroup answered, "
                                                    "generation + 1"),
    (S.PREPARING_REBALANCE, S.EMPTY, "no member rejoined: the generation ends empty"),
    (S.COMPLETING_REBALANCE, S.STABLE, "leader's SyncGroup stored: assignment handed out"),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE, "member joins, leaves or times out before the sync"),
    (S.STABLE, S.PREPARING_REBALANCE, "member joins, leaves, session expires, or leader rejoins"),
    (S.EMPTY, S.DEAD, "DeleteGroups, or offsets expired (offsets.retention.minutes)"),
    (S.STABLE, S.DEAD, "coordinator moved (partition of __consumer_offsets lost)"),
    (S.PREPARING_REBALANCE, S.DEAD, "coordinator moved"),
    (S.COMPLETING_REBALANCE, S.DEAD, "coordinator moved"),
    (S.DEAD, S.DEAD, "already gone"),
)


class IllegalStateTransition(RuntimeError):
    pass


def can_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if not can_transition(current, target):
        allowed = ",".join(sorted(s.value for s in VALID_PREVIOUS_STATES[target]))
        raise IllegalStateTransition(f"Group {group_id} should be in the {allowed} states before moving to {target} "
                                     f"state. Instead it is in {current} state")
