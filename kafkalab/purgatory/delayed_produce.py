"""DelayedProduce: an ``acks=all`` produce waiting for the in-sync replicas to reach its records.

Theory of operation
-------------------
With ``acks=-1`` (all) the leader appends the batch and must not answer until the batch is **committed**:
until the high watermark -- the offset every in-sync replica has reached -- passes the batch's last offset
(``required_offset`` = last offset + 1). The replica manager wraps the request in a DelayedProduce and calls
``try_complete_else_watch(op, [one key per partition])``; every follower fetch that advances a partition's
high watermark, and every leadership change, calls ``check_and_complete(that partition)``.

Each partition starts *pending* with ``REQUEST_TIMED_OUT`` (7) pre-filled -- what it answers if the timeout
wins -- unless its local append already failed (then it is not pending and keeps that error). The operation
completes when no partition is pending any more; a partition stops pending in one of Kafka's cases:

* **A** this broker no longer hosts the partition: the lookup's error (NOT_LEADER_OR_FOLLOWER if the cluster
  still has the partition, UNKNOWN_TOPIC_OR_PARTITION if not, KAFKA_STORAGE_ERROR if its log dir failed);
* **B** this broker is no longer the leader: NOT_LEADER_OR_FOLLOWER (6);
* **C** it is the leader, and ``check_enough_replicas_reach_offset``:
  **C.1** reports an error -- the high watermark reached the offset but the maximal ISR is now smaller than
  ``min.insync.replicas``: NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), "written to the log, but to fewer in-sync
  replicas than required" (the ISR shrank after the append was accepted); or
  **C.2** reports the high watermark reached the offset with enough replicas: NONE.

On timeout the partitions still pending keep REQUEST_TIMED_OUT, and each marks ``ExpiresPerSec`` with its
``topic``/``partition`` tags. (NOT_ENOUGH_REPLICAS, 19, is the *other* error: raised before the append, when
the ISR is already too small; it never reaches the purgatory.)

The operation never imports the broker: it gets a ``get_partition_or_error(topic_partition)`` callable that
returns an object with ``check_enough_replicas_reach_offset(required_offset) -> (has_enough, error_code)``,
or raises an :class:`~kafkalab.protocol.ApiException` carrying ``error_code`` (or returns an int error code,
Kafka's ``Left``).
:func:`check_enough_replicas_reach_offset` is Kafka's rule as a pure function for such a partition to call.

Mirrors: ``core/src/main/scala/kafka/server/DelayedProduce.scala`` (``ProducePartitionStatus``,
``DelayedProduce``, ``DelayedProduceMetrics``) and ``Partition.checkEnoughReplicasReachOffset``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Optional, Protocol, Union

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory.delayed_operation import DelayedOperation

__all__ = ["DelayedProduce", "ProducePartitionStatus", "ProducePartition", "check_enough_replicas_reach_offset"]


def check_enough_replicas_reach_offset(required_offset: int, *, is_leader: bool, high_watermark: int,
                                       maximal_isr_size: int, effective_min_isr: int) -> tuple[bool, ErrorCode]:
    """Kafka's ``Partition.checkEnoughReplicasReachOffset`` for acks=all.

    ``effective_min_isr`` is ``min(min.insync.replicas, replication factor)``. Returns ``(has_enough, error)``.
    """
    if not is_leader:
        return False, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if high_watermark >= required_offset:
        if effective_min_isr <= maximal_isr_size:
            return True, ErrorCode.NONE
        # Appended and parked in purgatory before the ISR shrank below the minimum.
        return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return False, ErrorCode.NONE


def _as_error_code(code: int) -> int:
    try:
        return ErrorCode(code)
    except ValueError:  # a code this table does not know: keep the number
        return int(code)


class ProducePartition(Protocol):
    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]: ...


@dataclass
class ProducePartitionStatus:
    """One partition of the request: the offset to wait for and the response fields (Kafka's
    ``ProducePartitionStatus`` + ``PartitionResponse``). ``error_code`` is what the response will carry."""

    required_offset: int
    error_code: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: Optional[str] = None
    acks_pending: bool = False
    #: For labs: which of Kafka's cases released this partition ("A", "B", "C.1", "C.2", "timeout").
    completed_by: Optional[str] = None


PartitionLookup = Callable[[Hashable], Union[ProducePartition, int]]


class DelayedProduce(DelayedOperation):
    """Waits until every partition of an acks=all produce is satisfied (cases A, B, C) or ``delay_ms`` passes.

    ``response_callback`` receives ``{topic_partition: ProducePartitionStatus}`` exactly once.
    """

    def __init__(self, delay_ms: int, produce_status: Mapping[Hashable, ProducePartitionStatus],
                 get_partition_or_error: PartitionLookup,
                 response_callback: Callable[[dict], None], *, required_acks: int = -1,
                 lock: Optional[threading.RLock] = None):
        super().__init__(delay_ms, lock)
        self.required_acks = required_acks
        self.produce_status = dict(produce_status)
        self.get_partition_or_error = get_partition_or_error
        self.response_callback = response_callback
        for status in self.produce_status.values():
            if status.error_code == ErrorCode.NONE:
                # Pre-set the timeout answer; cleared when the acks arrive.
                status.acks_pending = True
                status.error_code = ErrorCode.REQUEST_TIMED_OUT
            else:
                status.acks_pending = False

    def _check_partition(self, tp: Hashable, status: ProducePartitionStatus) -> tuple[bool, int, str]:
        try:
            partition = self.get_partition_or_error(tp)
        except ApiException as e:  # only errors that carry a Kafka error code are answers
            return False, int(e.error_code), "A"
        if isinstance(partition, int):
            return False, partition, "A"
        try:
            has_enough, error = partition.check_enough_replicas_reach_offset(status.required_offset)
        except ApiException as e:
            return False, int(e.error_code), "C.1"
        error = int(error)
        if error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return has_enough, error, "B"
        return has_enough, error, ("C.1" if error != ErrorCode.NONE else "C.2")

    def try_complete(self) -> bool:
        for tp, status in self.produce_status.items():
            if not status.acks_pending:
                continue
            has_enough, error, case = self._check_partition(tp, status)
            if error != ErrorCode.NONE or has_enough:
                status.acks_pending = False
                status.error_code = _as_error_code(error)
                status.completed_by = case
        if not any(s.acks_pending for s in self.produce_status.values()):
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for status in self.produce_status.values():
            if status.acks_pending:
                status.completed_by = "timeout"

    def expiration_tags(self) -> list[dict]:
        tags = []
        for tp, status in self.produce_status.items():
            if status.acks_pending:
                topic, partition = (tp[0], tp[1]) if isinstance(tp, tuple) else (str(tp), -1)
                tags.append({"topic": topic, "partition": partition})
        return tags

    def on_complete(self) -> None:
        self.response_callback(dict(self.produce_status))

    def __repr__(self) -> str:
        parts = ", ".join(f"{tp}: {'pending' if s.acks_pending else getattr(_as_error_code(s.error_code), 'name', s.error_code)}"
                          for tp, s in self.produce_status.items())
        state = "expired" if self.expired else "completed" if self.is_completed else "waiting"
        return f"<DelayedProduce {state} timeout_ms={self.delay_ms} {{{parts}}}>"
