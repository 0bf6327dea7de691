"""DelayedFetch: a fetch waiting for ``fetch.min.bytes`` to arrive, at most ``fetch.max.wait.ms``.

Theory of operation
-------------------
A consumer (or a follower) asks for data with ``min_bytes`` and ``max_wait_ms`` (defaults 1 byte and 500 ms).
If the first read finds fewer bytes than ``min_bytes``, the broker does not answer an empty response at once
-- the client would ask again immediately and an idle consumer would flood the broker with fetches. It parks
a DelayedFetch in the fetch purgatory, watched on every fetched partition. Appends on the leader (and, for
consumers, high-watermark moves) call ``check_and_complete(partition)``; the timer answers after
``max_wait_ms`` with whatever is there. Either way the response is **read at completion**
(``read_from_log``): the operation remembers where each partition's read starts, not the data.

``try_complete`` looks at each partition's log offset snapshot and completes on the first of Kafka's cases:

* **A/B** this broker is no longer the leader (or, for a follower fetch, no longer a replica):
  NOT_LEADER_OR_FOLLOWER;
* **C** the partition is unknown here: UNKNOWN_TOPIC_OR_PARTITION;
* **D** its log directory is offline: KAFKA_STORAGE_ERROR;
* **E** the request's ``current_leader_epoch`` is fenced by a newer epoch: FENCED_LEADER_EPOCH;
* **F** the fetch offset is past the end the requester may read (the log was truncated: leader change), or
  lies on an older segment than that end (there is at least a full segment's worth to send);
* **G** the bytes between each fetch position and the readable end, summed over partitions (each capped by
  the partition's ``max_bytes``), reach ``min_bytes``;
* **H** the request names a ``last_fetched_epoch`` and the log's end offset for that epoch shows the
  requester's log diverged (a follower must truncate: KIP-595's ``diverging_epoch``).

"The readable end" is the fetch isolation's bound: the log end offset for followers (``log_end``), the high
watermark for ``read_uncommitted`` consumers, the last stable offset for ``read_committed`` ones. Bytes are
counted with offset metadata (segment base offset + byte position); when either side knows only the message
offset, no bytes are counted (as in Kafka) and the fetch waits for the next check or its timeout.

Interfaces (no import of the broker): ``get_partition_or_exception(tp)`` returns an object with
``fetch_offset_snapshot(current_leader_epoch, fetch_only_from_leader) -> LogOffsetSnapshot`` and
``last_offset_for_leader_epoch(current_leader_epoch, leader_epoch, fetch_only_from_leader) -> (epoch,
end_offset)``; failures raise a :class:`~kafkalab.protocol.ApiException` carrying ``error_code`` (as
``kafkalab.server``'s ``PartitionError``).
Kafka completes on the error codes of cases A-E and lets others escape; kafkalab completes on any
error-coded failure, so the error reaches the client in the response read at completion.

Mirrors: ``core/src/main/scala/kafka/server/DelayedFetch.scala`` (``FetchPartitionStatus``, ``DelayedFetch``,
``DelayedFetchMetrics``), ``server-common/.../storage/log/FetchParams.java`` and
``storage/.../log/LogOffsetSnapshot.java``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, NamedTuple, Optional, Protocol, Sequence

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory.delayed_operation import DelayedOperation

__all__ = ["DelayedFetch", "FetchParams", "FetchPartitionInfo", "FetchPartitionStatus", "LogOffsetSnapshot",
           "OffsetMetadata", "FetchPartition", "CONSUMER_REPLICA_ID", "FUTURE_LOCAL_REPLICA_ID"]

CONSUMER_REPLICA_ID = -1
FUTURE_LOCAL_REPLICA_ID = -3
UNKNOWN_OFFSET = -1
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_CASES = {ErrorCode.NOT_LEADER_OR_FOLLOWER: "A/B", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "C",
          ErrorCode.KAFKA_STORAGE_ERROR: "D", ErrorCode.FENCED_LEADER_EPOCH: "E"}


class OffsetMetadata(Protocol):
    """``kafkalab.storage.LogOffsetMetadata`` or anything shaped like it (-1 = unknown)."""

    message_offset: int
    segment_base_offset: int
    relative_position_in_segment: int


class LogOffsetSnapshot(NamedTuple):
    """A partition's offsets, read together: Kafka's ``LogOffsetSnapshot``."""

    log_start_offset: int
    log_end_offset: Any          # OffsetMetadata
    high_watermark: Any          # OffsetMetadata
    last_stable_offset: Any      # OffsetMetadata


class FetchPartition(Protocol):
    def fetch_offset_snapshot(self, current_leader_epoch: int, fetch_only_from_leader: bool) -> LogOffsetSnapshot: ...

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int,
                                     fetch_only_from_leader: bool = False) -> tuple[int, int]: ...


def _offset_only(m) -> bool:
    return m.segment_base_offset == UNKNOWN_OFFSET and m.relative_position_in_segment == -1


def _on_older_segment(a, b) -> bool:
    return not (_offset_only(a) or _offset_only(b)) and a.segment_base_offset < b.segment_base_offset


def _on_same_segment(a, b) -> bool:
    return not (_offset_only(a) or _offset_only(b)) and a.segment_base_offset == b.segment_base_offset


@dataclass(frozen=True)
class FetchParams:
    """The request-wide fetch settings (Kafka's ``FetchParams``). ``isolation``: ``log_end``,
    ``high_watermark`` or ``txn_committed`` (a string or ``kafkalab.storage.FetchIsolation``)."""

    replica_id: int = CONSUMER_REPLICA_ID
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52_428_800
    isolation: Any = "high_watermark"
    request_version: int = 12
    replica_epoch: int = -1
    client_metadata: Any = None  # rack-aware fetching (KIP-392): consumers may then read from followers

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def hard_max_bytes_limit(self) -> bool:
        """Fetch v0-2: the byte limits are hard, so a first batch larger than them is not sent (v3+ sends it)."""
        return self.request_version <= 2

    @property
    def is_from_consumer(self) -> bool:
        return self.replica_id < 0 and self.replica_id != FUTURE_LOCAL_REPLICA_ID

    @property
    def fetch_only_leader(self) -> bool:
        return self.is_from_follower or (self.is_from_consumer and self.client_metadata is None)

    @property
    def isolation_name(self) -> str:
        return str(getattr(self.isolation, "value", self.isolation)).lower()


@dataclass(frozen=True)
class FetchPartitionInfo:
    """One partition of the request (Kafka's ``FetchRequest.PartitionData``); -1 means absent."""

    fetch_offset: int
    max_bytes: int = 1_048_576
    log_start_offset: int = -1
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass(frozen=True)
class FetchPartitionStatus:
    """Where the first read of this partition started (offset metadata), and what was asked."""

    start_offset_metadata: Any  # OffsetMetadata
    fetch_info: FetchPartitionInfo


class DelayedFetch(DelayedOperation):
    """Waits for ``params.min_bytes`` over the fetched partitions (or cases A-F, H), at most
    ``params.max_wait_ms``. On completion calls ``response_callback(read_from_log(params, infos))`` where
    ``infos`` is ``[(topic_partition, FetchPartitionInfo)]`` in request order."""

    def __init__(self, params: FetchParams, fetch_partition_status: Sequence[tuple[Hashable, FetchPartitionStatus]],
                 get_partition_or_exception: Callable[[Hashable], FetchPartition],
                 read_from_log: Callable[[FetchParams, list], Any],
                 response_callback: Callable[[Any], None], *,
                 should_leader_throttle: Optional[Callable[[Any, int], bool]] = None):
        super().__init__(params.max_wait_ms)
        self.params = params
        self.fetch_partition_status = list(fetch_partition_status)
        self.get_partition_or_exception = get_partition_or_exception
        self.read_from_log = read_from_log
        self.response_callback = response_callback
        self.should_leader_throttle = should_leader_throttle
        #: For labs: why it completed ("A/B", "C", "D", "E", "F", "G", "H", "timeout"), and for which partition.
        self.completed_by: Optional[str] = None
        self.completed_partition: Optional[Hashable] = None
        self.accumulated_bytes = 0

    def _throttled(self, partition) -> bool:
        return (self.params.is_from_follower and self.should_leader_throttle is not None
                and self.should_leader_throttle(partition, self.params.replica_id))

    def _complete(self, case: str, tp: Optional[Hashable]) -> bool:
        """``force_complete``, noting which case (and partition) released the fetch."""
        if self.is_completed:
            return False
        self.completed_by, self.completed_partition = case, tp
        return self.force_complete()

    def _end_offset(self, snapshot: LogOffsetSnapshot):
        iso = self.params.isolation_name
        if iso == "log_end":
            return snapshot.log_end_offset
        if iso == "txn_committed":
            return snapshot.last_stable_offset
        return snapshot.high_watermark

    def try_complete(self) -> bool:
        accumulated = 0
        for tp, status in self.fetch_partition_status:
            fetch_offset = status.start_offset_metadata
            info = status.fetch_info
            if fetch_offset.message_offset == UNKNOWN_OFFSET:
                continue  # the first read failed for this partition: nothing to wait for
            try:
                partition = self.get_partition_or_exception(tp)
                snapshot = partition.fetch_offset_snapshot(info.current_leader_epoch, self.params.fetch_only_leader)
                end = self._end_offset(snapshot)
                # Equal offsets go straight to the byte count: right after a roll the end sits on the old
                # segment's last position, which would otherwise look like case F.
                if fetch_offset.message_offset > end.message_offset:
                    return self._complete("F", tp)  # fetching past the end: the log was truncated
                if fetch_offset.message_offset < end.message_offset:
                    if _on_older_segment(fetch_offset, end):
                        if not self._throttled(partition):
                            return self._complete("F", tp)  # behind by at least a segment
                    elif _on_same_segment(fetch_offset, end):
                        available = min(end.relative_position_in_segment - fetch_offset.relative_position_in_segment,
                                        info.max_bytes)
                        if not self._throttled(partition):
                            accumulated += available
                # Case H: did the requester's log diverge from ours while it waited?
                if info.last_fetched_epoch >= 0:
                    try:
                        epoch, end_offset = partition.last_offset_for_leader_epoch(
                            info.current_leader_epoch, info.last_fetched_epoch, False)
                    except ApiException:
                        return self._complete("H", tp)
                    if end_offset == UNDEFINED_EPOCH_OFFSET or epoch == UNDEFINED_EPOCH:
                        return self._complete("H", tp)
                    if epoch < info.last_fetched_epoch or end_offset < info.fetch_offset:
                        return self._complete("H", tp)
            except ApiException as e:  # only errors that carry a Kafka error code complete
                return self._complete(_CASES.get(e.error_code, f"error {int(e.error_code)}"), tp)
        self.accumulated_bytes = accumulated
        if accumulated >= self.params.min_bytes:
            return self._complete("G", None)
        return False

    def on_expiration(self) -> None:
        self.completed_by = "timeout"

    def expiration_tags(self) -> list[dict]:
        return [{"fetcherType": "follower" if self.params.is_from_follower else "consumer"}]

    def on_complete(self) -> None:
        infos = [(tp, status.fetch_info) for tp, status in self.fetch_partition_status]
        self.response_callback(self.read_from_log(self.params, infos))

    def __repr__(self) -> str:
        state = "expired" if self.expired else f"completed ({self.completed_by})" if self.is_completed else "waiting"
        return (f"<DelayedFetch {state} replica_id={self.params.replica_id} min_bytes={self.params.min_bytes} "
                f"max_wait_ms={self.params.max_wait_ms} partitions={len(self.fetch_partition_status)}>")
