"""What the consumer reads: the subscription, the assigned partitions, and where it stands in each.

Theory of operation
-------------------
A consumer gets its partitions one of two ways, never both at once:

* **manual assignment** -- ``assign([tp, ...])``: the application names the partitions; no group, no rebalances;
* **subscription** -- ``subscribe([topics])`` or ``subscribe(pattern)``: the consumer joins the group named by
  ``group.id`` and the group's leader hands it some partitions of those topics (see :mod:`.consumer_coordinator`).
  A pattern is matched against every topic in the metadata, and re-matched when the metadata changes.

For every assigned partition the consumer keeps a small state:

* ``position`` -- the offset of the *next record to hand to the application*. Fetch requests ask for records
  from here; ``poll()`` moves it past what it returns; ``commit()`` stores it in the group. ``None`` means
  "not known yet": the committed offset is asked for first (OffsetFetch), and when the group has none the
  partition is *reset* according to ``auto.offset.reset`` (earliest / latest, via ListOffsets; ``none``
  raises :class:`NoOffsetForPartitionError`). A fetch that answers ``OFFSET_OUT_OF_RANGE`` resets too.
* ``paused`` -- ``pause()`` keeps the partition assigned (and its position) but stops fetching it;
* ``high_watermark``, ``last_stable_offset``, ``log_start_offset`` -- from the last fetch response, for lag.

A partition is *fetchable* when it is assigned, not paused, and has a position. The state is plain data,
touched only on the consumer's I/O loop.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/SubscriptionState.java``.
"""
from __future__ import annotations

import enum
import re
from typing import Iterable, NamedTuple, Optional

from kafkalab.clients.consumer.assignors.protocol import TopicPartition

__all__ = ["SubscriptionState", "SubscriptionType", "TopicPartitionState", "OffsetAndMetadata",
           "IllegalStateError", "NoOffsetForPartitionError"]


class IllegalStateError(RuntimeError):
    """An operation the consumer's current state does not allow (Java's ``IllegalStateException``)."""


class NoOffsetForPartitionError(RuntimeError):
    """``auto.offset.reset=none`` and no committed offset (Java's ``NoOffsetForPartitionException``)."""

    def __init__(self, partitions):
        self.partitions = sorted(partitions)
        super().__init__(f"Undefined offset with no reset policy for partitions: {self.partitions}")


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""
    leader_epoch: Optional[int] = None


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "topics"          # subscribe([names])
    AUTO_PATTERN = "pattern"        # subscribe(re.compile(...))
    USER_ASSIGNED = "assigned"      # assign([...])


class TopicPartitionState:
    __slots__ = ("position", "leader_epoch", "reset_strategy", "paused", "high_watermark", "last_stable_offset",
                 "log_start_offset")

    def __init__(self):
        self.position: Optional[int] = None
        self.leader_epoch: Optional[int] = None     # epoch of the last record returned (committed with it)
        self.reset_strategy: Optional[str] = None    # "earliest" / "latest" while a reset is pending
        self.paused = False
        self.high_watermark: Optional[int] = None
        self.last_stable_offset: Optional[int] = None
        self.log_start_offset: Optional[int] = None

    def __repr__(self) -> str:
        return (f"TopicPartitionState(position={self.position}, paused={self.paused}, "
                f"reset={self.reset_strategy}, hw={self.high_watermark})")


_EXCLUSIVE = "Subscription to topics, partitions and pattern are mutually exclusive"


class SubscriptionState:
    def __init__(self, default_reset_strategy: str = "latest"):
        self.default_reset_strategy = default_reset_strategy
        self.type = SubscriptionType.NONE
        self.subscription: set[str] = set()          # topics this member subscribes to
        self.group_subscription: set[str] = set()    # the leader also watches everyone else's topics
        self.pattern: Optional[re.Pattern] = None
        self.listener = None
        self.assignment: dict[TopicPartition, TopicPartitionState] = {}
        self.assignment_id = 0                       # bumped at every change, so stale fetches are dropped

    # -- subscribing -----------------------------------------------------------------------------------------
    def _set_type(self, kind: SubscriptionType) -> None:
        if self.type is SubscriptionType.NONE:
            self.type = kind
        elif self.type is not kind:
            raise IllegalStateError(_EXCLUSIVE)

    def subscribe(self, topics: Iterable[str], listener=None) -> bool:
        """Subscribe to topic names; True when the subscription changed (a rejoin is needed)."""
        topics = set(topics)
        if any(not isinstance(t, str) or not t.strip() for t in topics):
            raise ValueError("Topic collection to subscribe to cannot contain null or empty topic")
        self._set_type(SubscriptionType.AUTO_TOPICS)
        self.listener = listener
        return self.change_subscription(topics)

    def subscribe_pattern(self, pattern, listener=None) -> None:
        self._set_type(SubscriptionType.AUTO_PATTERN)
        self.listener = listener
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern

    def matches(self, topic: str) -> bool:
        return self.pattern is not None and self.pattern.fullmatch(topic) is not None

    def change_subscription(self, topics: set) -> bool:
        if topics == self.subscription:
            return False
        self.subscription = set(topics)
        self.group_subscription |= self.subscription
        return True

    def has_auto_assigned_partitions(self) -> bool:
        return self.type in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def is_user_assigned(self) -> bool:
        return self.type is SubscriptionType.USER_ASSIGNED

    def unsubscribe(self) -> None:
        self.subscription.clear()
        self.group_subscription.clear()
        self.pattern = None
        self.listener = None
        self._set_assignment([])
        self.type = SubscriptionType.NONE

    # -- assignment ------------------------------------------------------------------------------------------
    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> bool:
        """``assign()``: replace the assignment; keeps the state of partitions that stay."""
        self._set_type(SubscriptionType.USER_ASSIGNED)
        partitions = [TopicPartition(*tp) for tp in partitions]
        if set(partitions) == set(self.assignment):
            return False
        self.subscription = {tp.topic for tp in partitions}
        self._set_assignment(partitions)
        return True

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition]) -> None:
        """The group's decision arrived (SyncGroup): keep states of partitions kept, add fresh ones."""
        if not self.has_auto_assigned_partitions():
            raise IllegalStateError("assign_from_subscribed needs a subscription")
        partitions = [TopicPartition(*tp) for tp in partitions]
        for tp in partitions:
            if tp.topic not in self.subscription and not self.matches(tp.topic):
                raise IllegalStateError(f"Assigned partition {tp} for non-subscribed topic")
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: list) -> None:
        self.assignment = {tp: self.assignment.get(tp) or TopicPartitionState() for tp in partitions}
        self.assignment_id += 1

    def assigned_partitions(self) -> set:
        return set(self.assignment)

    def is_assigned(self, tp) -> bool:
        return TopicPartition(*tp) in self.assignment

    def _state(self, tp) -> TopicPartitionState:
        state = self.assignment.get(TopicPartition(*tp))
        if state is None:
            raise IllegalStateError(f"No current assignment for partition {TopicPartition(*tp)}")
        return state

    # -- positions -------------------------------------------------------------------------------------------
    def seek(self, tp, offset: int, leader_epoch: Optional[int] = None) -> None:
        state = self._state(tp)
        state.position, state.leader_epoch, state.reset_strategy = offset, leader_epoch, None

    def position(self, tp) -> Optional[int]:
        return self._state(tp).position

    def has_valid_position(self, tp) -> bool:
        state = self.assignment.get(TopicPartition(*tp))
        return state is not None and state.position is not None and state.reset_strategy is None

    def request_offset_reset(self, tp, strategy: Optional[str] = None) -> None:
        state = self._state(tp)
        state.reset_strategy = strategy or self.default_reset_strategy
        state.position = None

    def is_offset_reset_needed(self, tp) -> bool:
        state = self.assignment.get(TopicPartition(*tp))
        return state is not None and state.reset_strategy is not None

    def partitions_needing_reset(self) -> list:
        return [tp for tp, s in self.assignment.items() if s.reset_strategy is not None]

    def initializing_partitions(self) -> list:
        """Partitions with no position and no pending reset: ask the group for the committed offset."""
        return [tp for tp, s in self.assignment.items() if s.position is None and s.reset_strategy is None]

    def reset_initializing(self, partitions) -> None:
        """No committed offset: reset with ``auto.offset.reset`` (``none`` raises)."""
        partitions = [tp for tp in partitions if tp in self.assignment]
        if partitions and self.default_reset_strategy == "none":
            raise NoOffsetForPartitionError(partitions)
        for tp in partitions:
            self.request_offset_reset(tp)

    def all_consumed(self) -> dict:
        """What ``commit()`` without arguments commits: every position we have."""
        return {tp: OffsetAndMetadata(s.position, "", s.leader_epoch)
                for tp, s in self.assignment.items() if s.position is not None}

    # -- pausing and fetching --------------------------------------------------------------------------------
    def pause(self, tp) -> None:
        self._state(tp).paused = True

    def resume(self, tp) -> None:
        self._state(tp).paused = False

    def is_paused(self, tp) -> bool:
        state = self.assignment.get(TopicPartition(*tp))
        return state is not None and state.paused

    def paused_partitions(self) -> set:
        return {tp for tp, s in self.assignment.items() if s.paused}

    def is_fetchable(self, tp) -> bool:
        state = self.assignment.get(TopicPartition(*tp))
        return state is not None and not state.paused and state.position is not None and \
            state.reset_strategy is None

    def fetchable_partitions(self) -> list:
        return [tp for tp in self.assignment if self.is_fetchable(tp)]

    def update_fetch_info(self, tp, *, high_watermark=None, last_stable_offset=None, log_start_offset=None) -> None:
        state = self.assignment.get(TopicPartition(*tp))
        if state is None:
            return
        if high_watermark is not None and high_watermark >= 0:
            state.high_watermark = high_watermark
        if last_stable_offset is not None and last_stable_offset >= 0:
            state.last_stable_offset = last_stable_offset
        if log_start_offset is not None and log_start_offset >= 0:
            state.log_start_offset = log_start_offset

    def __repr__(self) -> str:
        return f"SubscriptionState({self.type.value}, {sorted(self.assignment)})"
