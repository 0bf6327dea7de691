"""The local log: a directory of segments, the log end offset, the recovery point, rolling and truncating.

Theory of operation
-------------------
:class:`LocalLog` is the part of a partition's log that is only about files: it knows the segments, which
one is active, the *log end offset* (LEO, the offset the next batch will get) and the *recovery point* (every
offset below it has been fsync'd; recovery after a crash starts there). It rolls a new active segment,
truncates from the end (a follower dropping a diverged suffix), reads batches, and deletes segments.

Deleting is done in two steps, as Kafka does, so that a reader holding a segment open (a fetch being sent
with ``sendfile``) is never pulled from under: the segment leaves the in-memory map and its files are
renamed ``*.deleted`` at once, and the files are removed ``file.delete.delay.ms`` (60 s) later by a
scheduled task. A crash in between leaves ``.deleted`` files behind, which the loader removes.

Flushing follows the recovery point: ``flush(offset)`` fsyncs the segments holding offsets
``[recovery_point, offset)`` and then moves the recovery point to ``offset``.

Mirrors: ``core/src/main/scala/kafka/log/LocalLog.scala`` and the static helpers of
``storage/src/main/java/org/apache/kafka/storage/internals/log/LocalLog.java`` (``deleteSegmentFiles``,
``replaceSegments``).
"""
from __future__ import annotations

import logging
import os
import shutil
from typing import Optional

from kafkalab.storage import file_records
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.errors import KafkaStorageError, OffsetOutOfRangeError
from kafkalab.storage.fetch_data_info import FetchDataInfo, LogOffsetMetadata
from kafkalab.storage.log_segments import LogSegments
from kafkalab.storage.segment import LogSegment

__all__ = ["LocalLog", "delete_segment_files"]

log = logging.getLogger(__name__)


def delete_segment_files(segments, *, async_delete: bool, config, scheduler, log_prefix: str = "") -> None:
    """Rename each segment's files to ``*.deleted`` now; remove them now or after ``file.delete.delay.ms``."""
    segments = list(segments)
    for segment in segments:
        if not segment.has_suffix(names.DELETED_FILE_SUFFIX):
            segment.change_file_suffixes("", names.DELETED_FILE_SUFFIX)

    def delete_segments():
        log.info("%sDeleting segment files %s", log_prefix, ", ".join(repr(s) for s in segments))
        for segment in segments:
            segment.delete_if_exists()

    if async_delete and scheduler is not None:
        scheduler.schedule("delete-file", delete_segments, config.file_delete_delay_ms)
    else:
        delete_segments()


class LocalLog:
    def __init__(self, directory: str, config, segments: LogSegments, recovery_point: int,
                 next_offset_metadata: LogOffsetMetadata, scheduler, time, topic_partition):
        self.dir = str(directory)
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point
        self.next_offset_metadata = next_offset_metadata
        self.scheduler = scheduler
        self.time = time
        self.topic_partition = topic_partition
        self.last_flushed_time = time.milliseconds()
        self.closed = False
        self.log_prefix = f"[LocalLog partition={topic_partition}, dir={os.path.dirname(self.dir)}] "

    # ------------------------------------------------------------------------------------- offsets
    @property
    def name(self) -> str:
        return os.path.basename(self.dir)

    @property
    def parent_dir(self) -> str:
        return os.path.dirname(self.dir)

    @property
    def log_end_offset(self) -> int:
        return self.next_offset_metadata.message_offset

    def update_log_end_offset(self, end_offset: int) -> None:
        active = self.segments.active_segment
        self.next_offset_metadata = LogOffsetMetadata(end_offset, active.base_offset, active.size)
        if self.recovery_point > end_offset:
            self.recovery_point = end_offset

    def check_open(self) -> None:
        if self.closed:
            raise KafkaStorageError(f"The memory mapped buffer for log of {self.topic_partition} is already closed")

    def update_config(self, config) -> None:
        self.config = config

    # -------------------------------------------------------------------------------------- flushing
    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    def flush(self, offset: int) -> None:
        """fsync the segments covering ``[recovery_point, offset)`` (the recovery point is moved by
        :meth:`mark_flushed`)."""
        if self.recovery_point <= offset:
            to_flush = self.segments.values(self.recovery_point, offset)
            for segment in to_flush:
                segment.flush()
            if any(s.base_offset >= self.recovery_point for s in to_flush):
                file_records.fsync_dir(self.dir)

    def mark_flushed(self, offset: int) -> None:
        self.check_open()
        if offset > self.recovery_point:
            self.recovery_point = offset
            self.last_flushed_time = self.time.milliseconds()

    # --------------------------------------------------------------------------------------- append
    def append(self, last_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int, records) -> None:
        self.segments.active_segment.append(last_offset, largest_timestamp, shallow_offset_of_max_timestamp, records)
        self.update_log_end_offset(last_offset + 1)

    def _open_segment(self, base_offset: int) -> LogSegment:
        return LogSegment.open(self.dir, base_offset, self.config, self.time,
                               roll_jitter_ms=self.config.random_segment_jitter())

    def roll(self, expected_next_offset: Optional[int] = None) -> LogSegment:
        """Start a new active segment at ``max(expected_next_offset, LEO)``; the old one gets its final time-index
        entry and its index files are trimmed."""
        self.check_open()
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.segments.active_segment
        if self.segments.contains(new_offset):
            if active.base_offset == new_offset and active.size == 0:
                log.warning("%sTrying to roll a new log segment with start offset %d while it already exists and is "
                            "active with size 0", self.log_prefix, new_offset)
                new_segment = self.create_and_delete_segment(new_offset, active, async_delete=True)
                self.update_log_end_offset(self.log_end_offset)
                return new_segment
            raise KafkaStorageError(f"Trying to roll a new log segment for topic partition {self.topic_partition} "
                                    f"with start offset {new_offset} while it already exists.")
        if active is not None and new_offset < active.base_offset:
            raise KafkaStorageError(f"Trying to roll a new log segment for topic partition {self.topic_partition} "
                                    f"with start offset {new_offset} lower than start offset of the active segment "
                                    f"{active}")
        for path in (names.log_file(self.dir, new_offset), names.offset_index_file(self.dir, new_offset),
                     names.time_index_file(self.dir, new_offset), names.transaction_index_file(self.dir, new_offset)):
            if os.path.exists(path):
                log.warning("%sNewly rolled segment file %s already exists; deleting it first", self.log_prefix, path)
                os.remove(path)
        if active is not None:
            active.on_become_inactive_segment()
        new_segment = self.segments.add(self._open_segment(new_offset))
        self.update_log_end_offset(self.log_end_offset)
        log.info("%sRolled new log segment at offset %d", self.log_prefix, new_offset)
        return new_segment

    # ----------------------------------------------------------------------------------------- read
    def read(self, start_offset: int, max_length: int, *, min_one_message: bool, bound_offset: int,
             include_aborted_txns: bool = False) -> FetchDataInfo:
        end_offset = self.log_end_offset
        segment = self.segments.floor_segment(start_offset)
        if start_offset > end_offset or segment is None:
            raise OffsetOutOfRangeError(f"Received request for offset {start_offset} for partition "
                                        f"{self.topic_partition}, but we only have log segments upto {end_offset}.")
        aborted = [] if include_aborted_txns else None
        if start_offset >= bound_offset:
            return FetchDataInfo.empty(LogOffsetMetadata(start_offset), aborted_transactions=aborted)
        while segment is not None:
            info = segment.read(start_offset, max_length, bound_offset=bound_offset, min_one_message=min_one_message)
            if info is not None:
                if include_aborted_txns:
                    info.aborted_transactions = self._aborted_transactions(start_offset, segment, info)
                return info
            segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo.empty(self.next_offset_metadata, aborted_transactions=aborted)

    def _aborted_transactions(self, start_offset: int, segment: LogSegment, info: FetchDataInfo) -> list:
        """The aborted transactions a read_committed reader of ``info`` needs: those overlapping
        ``[start_offset, U)``, U being the first offset after the bytes read (Kafka's ``addAbortedTransactions``)."""
        position = info.fetch_offset_metadata.relative_position_in_segment
        upper = segment.fetch_upper_bound_offset(position, info.size_in_bytes)
        if upper is None:
            following = self.segments.higher_segment(segment.base_offset)
            upper = following.base_offset if following is not None else self.log_end_offset
        return self.collect_aborted_transactions(start_offset, upper, segment)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int,
                                     segment: Optional[LogSegment] = None) -> list:
        """Every ``.txnindex`` entry overlapping ``[start_offset, upper_bound_offset)``, from the segment holding
        ``start_offset`` on, until an entry's last stable offset shows no later one can overlap."""
        if segment is None:
            segment = self.segments.floor_segment(start_offset)
        found: list = []
        while segment is not None:
            result = segment.collect_aborted_txns(start_offset, upper_bound_offset)
            found.extend(result.aborted_transactions)
            if result.is_complete:
                break
            segment = self.segments.higher_segment(segment.base_offset)
        return found

    # ------------------------------------------------------------------------------------- deleting
    def remove_and_delete_segments(self, to_delete, *, async_delete: bool, reason: str = "") -> None:
        to_delete = list(to_delete)
        if not to_delete:
            return
        log.info("%s%s: deleting segments %s", self.log_prefix, reason or "Deletion",
                 ", ".join(repr(s) for s in to_delete))
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
        delete_segment_files(to_delete, async_delete=async_delete, config=self.config, scheduler=self.scheduler,
                             log_prefix=self.log_prefix)

    def create_and_delete_segment(self, new_offset: int, segment_to_delete: LogSegment, *,
                                  async_delete: bool) -> LogSegment:
        """Replace ``segment_to_delete`` by a new empty segment at ``new_offset``, never leaving the log
        without an active segment."""
        if new_offset == segment_to_delete.base_offset:
            segment_to_delete.change_file_suffixes("", names.DELETED_FILE_SUFFIX)
        new_segment = self._open_segment(new_offset)
        self.segments.add(new_segment)
        if new_offset != segment_to_delete.base_offset:
            self.segments.remove(segment_to_delete.base_offset)
        delete_segment_files([segment_to_delete], async_delete=async_delete, config=self.config,
                             scheduler=self.scheduler, log_prefix=self.log_prefix)
        return new_segment

    def delete_all_segments(self) -> list:
        deleted = self.segments.values()
        self.remove_and_delete_segments(deleted, async_delete=False, reason="Log deletion")
        self.closed = True
        return deleted

    def delete_empty_dir(self) -> None:
        if self.segments:
            raise KafkaStorageError(f"Can not delete directory when {len(self.segments)} segments are still present")
        shutil.rmtree(self.dir, ignore_errors=True)

    # ----------------------------------------------------------------------------------- truncating
    def truncate_to(self, target_offset: int) -> list:
        """Drop every batch holding an offset >= ``target_offset``; returns the segments deleted whole."""
        deletable = [s for s in self.segments if s.base_offset > target_offset]
        self.remove_and_delete_segments(deletable, async_delete=True, reason="Log truncation")
        active = self.segments.active_segment
        active.truncate_to(target_offset)
        # Kafka sets the LEO to target_offset; kafkalab to the end of the data that is left. They differ only
        # when target_offset falls inside a batch or a compaction gap, and then this is what a reload finds too
        self.update_log_end_offset(active.read_next_offset())
        return deletable

    def truncate_fully_and_start_at(self, new_offset: int) -> list:
        self.check_open()
        existing = self.segments.values()
        if existing:
            self.remove_and_delete_segments(existing[:-1], async_delete=True, reason="Log truncation")
            self.create_and_delete_segment(new_offset, existing[-1], async_delete=True)
        self.update_log_end_offset(new_offset)
        return existing

    def replace_segments(self, new_segments, old_segments, *, is_recovered_swap_file: bool = False) -> list:
        """Swap cleaned segments in, crash-safely: ``.cleaned`` -> ``.swap``, old ones -> ``.deleted``, then drop
        the ``.swap`` suffix. A crash at any step is finished by the loader. Returns old segments that no new
        segment replaced (their producer snapshots must go)."""
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        old_sorted = sorted((s for s in old_segments if self.segments.contains(s.base_offset)),
                            key=lambda s: s.base_offset)
        for segment in reversed(new_sorted):
            if not is_recovered_swap_file:
                segment.change_file_suffixes(names.CLEANED_FILE_SUFFIX, names.SWAP_FILE_SUFFIX)
            self.segments.add(segment)
        new_bases = {s.base_offset for s in new_sorted}
        deleted_not_replaced = []
        for segment in old_sorted:
            if segment.base_offset != new_sorted[0].base_offset:
                self.segments.remove(segment.base_offset)
            delete_segment_files([segment], async_delete=True, config=self.config, scheduler=self.scheduler,
                                 log_prefix=self.log_prefix)
            if segment.base_offset not in new_bases:
                deleted_not_replaced.append(segment)
        for segment in new_sorted:
            segment.change_file_suffixes(names.SWAP_FILE_SUFFIX, "")
        file_records.fsync_dir(self.dir)
        return deleted_not_replaced

    # ------------------------------------------------------------------------------------ life cycle
    def rename_dir(self, name: str) -> bool:
        new_dir = os.path.join(self.parent_dir, name)
        if new_dir == self.dir:
            return False
        os.rename(self.dir, new_dir)
        file_records.fsync_dir(self.parent_dir)
        self.dir = new_dir
        for segment in self.segments:
            segment.update_parent_dir(new_dir)
        return True

    def close(self) -> None:
        self.check_open()
        self.segments.close()
        self.closed = True

    def close_handlers(self) -> None:
        for segment in self.segments:
            segment.close_handlers()
        self.closed = True
