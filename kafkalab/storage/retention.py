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

Mirrors: ``UnifiedLog.deleteOldSegments``, ``deletableSegments``, ``deleteSegments`` and
``maybeIncrementLogStartOffset`` in ``core/src/main/scala/kafka/log/UnifiedLog.scala``.
"""
from __future__ import annotations

import logging

from kafkalab.storage.errors import OffsetOutOfRangeError

__all__ = ["RetentionMixin"]

log = logging.getLogger("kafkalab.storage.log")


class RetentionMixin:
    """Retention half of :class:`~kafkalab.storage.log.UnifiedLog` (kept apart to keep each file readable)."""

    def maybe_increment_log_start_offset(self, new_log_start_offset: int, reason: str = "ClientRecordDeletion") -> bool:
        """Move the log start offset forward (DeleteRecords, or segments deleted by retention). Segments
        entirely below it go at the next retention check. OFFSET_OUT_OF_RANGE if above the high watermark."""
        with self._lock:
            if new_log_start_offset > self._high_watermark:
                raise OffsetOutOfRangeError(f"Cannot increment the log start offset to {new_log_start_offset} of "
                                            f"partition {self.topic_partition} since it is larger than the high "
                                            f"watermark {self._high_watermark}")
            self._local.check_open()
            if new_log_start_offset <= self._log_start_offset:
                return False
            self._log_start_offset = new_log_start_offset
            log.info("[%s] Incremented log start offset to %d due to %s", self.topic_partition, new_log_start_offset,
                     reason)
            self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
            self.producer_state_manager.on_log_start_offset_incremented(new_log_start_offset)
            return True

    def delete_old_segments(self) -> int:
        """Apply retention; returns how many segments were deleted."""
        if self.config.delete:
            return (self._delete_log_start_offset_breached_segments() + self._delete_retention_size_breached_segments()
                    + self._delete_retention_ms_breached_segments())
        return self._delete_log_start_offset_breached_segments()

    def _deletable_segments(self, predicate) -> list:
        segments = self.segments
        deletable = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            is_last_and_empty = nxt is None and segment.size == 0
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if self._high_watermark >= upper and predicate(segment, nxt) and not is_last_and_empty:
                deletable.append(segment)
            else:
                break
        return deletable

    def _delete_old_segments(self, predicate, reason: str) -> int:
        with self._lock:
            deletable = self._deletable_segments(predicate)
            return self._delete_segments(deletable, reason) if deletable else 0

    def _delete_segments(self, deletable: list, reason: str) -> int:
        to_delete = list(deletable)
        if self.number_of_segments == len(deletable):
            new_segment = self.roll()
            if deletable[-1].base_offset == new_segment.base_offset:
                log.warning("[%s] Empty active segment at %d was deleted and recreated due to %s",
                            self.topic_partition, new_segment.base_offset, reason)
                to_delete = deletable[:-1]
        if to_delete:
            new_start = self._local.segments.higher_segment(to_delete[-1].base_offset).base_offset
            self.maybe_increment_log_start_offset(new_start, "SegmentDeletion")
            self._local.remove_and_delete_segments(to_delete, async_delete=True, reason=reason)
        for segment in deletable:
            self.producer_state_manager.delete_snapshot(segment.base_offset)
        return len(deletable)

    def _delete_retention_ms_breached_segments(self) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        now = self.time.milliseconds()
        return self._delete_old_segments(lambda seg, nxt: now - seg.largest_timestamp() > retention_ms,
                                         f"retention.ms={retention_ms} breach")

    def _delete_retention_size_breached_segments(self) -> int:
        retention_size = self.config.retention_size
        size = self.size_in_bytes
        if retention_size < 0 or size < retention_size:
            return 0
        excess = [size - retention_size]

        def should_delete(segment, nxt) -> bool:
            if excess[0] - segment.size >= 0:
                excess[0] -= segment.size
                return True
            return False

        return self._delete_old_segments(should_delete, f"retention.bytes={retention_size} breach")

    def _delete_log_start_offset_breached_segments(self) -> int:
        return self._delete_old_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= self._log_start_offset,
                                         f"log start offset {self._log_start_offset} breach")
