"""Retention: deleting whole segments by age, by size, and below the log start offset (DeleteRecords).

Theory of operation
-------------------
Kafka never deletes single records from a ``cleanup.policy=delete`` topic: it deletes whole segments, oldest
first, and only inactive data below the high watermark. Every ``log.retention.check.interval.ms`` (5 min) the
log manager asks each log to ``delete_old_segments``, which applies three rules in turn:

1. **log start offset** -- a segment whose successor starts at or below the log start offset holds nothing
   readable any more (DeleteRecords moved the log start offset past it), whatever the policy;
2. **retention.bytes** -- while the partition is larger than the limit, delete the oldest segments that fit
   in the excess;
3. **retention.ms** -- delete the oldest segments whose *newest* record (the segment's largest timestamp)
   is older than the limit. A single old record in a segment keeps the whole segment; one new record keeps
   it too, which is why ``segment.ms`` exists: it rolls quiet segments so they can expire.

A segment is only eligible if the high watermark is at or past its end (the log start offset must never pass
the high watermark), and deletion stops at the first segment that is not eligible. If every segment is
deletable, the log first rolls a new, empty active segment, so a log always keeps one. Deleted segments
move the log start offset forward and are removed from disk after ``file.delete.delay.ms``.

**Who does what.** :class:`LogRetention` is owned by one :class:`~kafkalab.storage.log.UnifiedLog` and sees
it only through :class:`RetainedLog` (its public offsets, config, clock, ``roll`` and
``maybe_increment_log_start_offset``), plus the two things a log keeps to itself and hands over explicitly:
its :class:`~kafkalab.storage.local_log.LocalLog` (which removes segment files) and its lock. Deciding *when*
to run retention is the log manager's job (``LogManager.cleanupLogs``); deciding *what* goes is here.

Mirrors: ``UnifiedLog.deleteOldSegments``, ``deletableSegments``, ``deleteSegments``,
``deleteRetentionMsBreachedSegments``, ``deleteRetentionSizeBreachedSegments`` and
``deleteLogStartOffsetBreachedSegments`` in ``core/src/main/scala/kafka/log/UnifiedLog.scala``.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Protocol

__all__ = ["LogRetention", "RetainedLog"]

log = logging.getLogger("kafkalab.storage.log")


class RetainedLog(Protocol):
    """What retention reads and calls on its log (all public on ``UnifiedLog``)."""

    topic_partition: object
    config: object                 # LogConfig: ``delete``, ``retention_ms``, ``retention_size``
    time: object                   # Time: ``milliseconds()``
    producer_state_manager: object

    @property
    def high_watermark(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def size_in_bytes(self) -> int: ...

    def roll(self, expected_next_offset: Optional[int] = None): ...

    def maybe_increment_log_start_offset(self, new_log_start_offset: int, reason: str = ...) -> bool: ...


Predicate = Callable[[object, Optional[object]], bool]      # (segment, next segment or None) -> delete it?


class LogRetention:
    """Deletes a log's old segments. ``local_log`` is the log's :class:`LocalLog`; ``lock`` the log's lock."""

    def __init__(self, log_: RetainedLog, local_log, lock):
        self._log = log_
        self._local = local_log
        self._lock = lock

    def delete_old_segments(self) -> int:
        """Apply retention; returns how many segments were deleted."""
        if self._log.config.delete:
            return (self.delete_log_start_offset_breached_segments() + self.delete_retention_size_breached_segments()
                    + self.delete_retention_ms_breached_segments())
        return self.delete_log_start_offset_breached_segments()

    def delete_retention_ms_breached_segments(self) -> int:
        retention_ms = self._log.config.retention_ms
        if retention_ms < 0:
            return 0
        now = self._log.time.milliseconds()
        return self._delete_old_segments(lambda seg, nxt: now - seg.largest_timestamp() > retention_ms,
                                         f"retention.ms={retention_ms} breach")

    def delete_retention_size_breached_segments(self) -> int:
        retention_size = self._log.config.retention_size
        size = self._log.size_in_bytes
        if retention_size < 0 or size < retention_size:
            return 0
        excess = [size - retention_size]

        def should_delete(segment, nxt) -> bool:
            if excess[0] - segment.size >= 0:
                excess[0] -= segment.size
                return True
            return False

        return self._delete_old_segments(should_delete, f"retention.bytes={retention_size} breach")

    def delete_log_start_offset_breached_segments(self) -> int:
        start = self._log.log_start_offset
        return self._delete_old_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= start,
                                         f"log start offset {start} breach")

    def deletable_segments(self, predicate: Predicate) -> list:
        """The oldest segments, in order, that ``predicate`` accepts and that lie wholly below the high
        watermark; stops at the first one that does not qualify. Never the active segment when empty."""
        segments = self._local.segments.values()
        high_watermark = self._log.high_watermark
        deletable = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            is_last_and_empty = nxt is None and segment.size == 0
            upper = nxt.base_offset if nxt is not None else self._log.log_end_offset
            if high_watermark >= upper and predicate(segment, nxt) and not is_last_and_empty:
                deletable.append(segment)
            else:
                break
        return deletable

    def _delete_old_segments(self, predicate: Predicate, reason: str) -> int:
        with self._lock:
            deletable = self.deletable_segments(predicate)
            return self._delete_segments(deletable, reason) if deletable else 0

    def _delete_segments(self, deletable: list, reason: str) -> int:
        to_delete = list(deletable)
        if len(self._local.segments) == len(deletable):
            new_segment = self._log.roll()
            if deletable[-1].base_offset == new_segment.base_offset:
                log.warning("[%s] Empty active segment at %d was deleted and recreated due to %s",
                            self._log.topic_partition, new_segment.base_offset, reason)
                to_delete = deletable[:-1]
        if to_delete:
            new_start = self._local.segments.higher_segment(to_delete[-1].base_offset).base_offset
            self._log.maybe_increment_log_start_offset(new_start, "SegmentDeletion")
            self._local.remove_and_delete_segments(to_delete, async_delete=True, reason=reason)
        for segment in deletable:
            self._log.producer_state_manager.delete_snapshot(segment.base_offset)
        return len(deletable)
