"""Loading a partition's log from disk, and recovering it after an unclean shutdown.

Theory of operation
-------------------
When a broker starts, every partition directory is turned back into a log, in this order:

1. **Finish or undo interrupted work.** ``*.deleted`` files are removed (their deletion had been scheduled);
   ``*.cleaned`` files are removed (an unfinished compaction); ``*.swap`` files are a finished compaction that
   was being swapped in: the segments they replace are deleted and the ``.swap`` suffix dropped.
2. **Open every segment.** An index file without its ``.log`` is deleted; a segment whose offset or time
   index is missing or fails its sanity check has both rebuilt from the ``.log``.
3. **Recover, unless the shutdown was clean.** Without the ``.kafka_cleanshutdown`` marker, every segment
   from the one holding the recovery point onwards may end in bytes that never made it to disk whole. Each
   is scanned batch by batch (size, CRC, offsets) with :meth:`LogSegment.recover
   <kafkalab.storage.segment.LogSegment.recover>`; at the first bad batch the segment is cut there -- the
   *torn tail* -- and every later segment is deleted, since its data follows a hole. Indexes, the leader
   epoch cache and producer state are rebuilt from what is left.
4. **Reconcile the metadata.** The leader epoch cache is truncated to the recovered log end offset (and to
   the log start offset at the front); producer state is reloaded from the latest snapshot at or below the
   log end offset and replayed from there.

Everything this did is returned as a :class:`RecoveryReport` and logged, so a lab can show exactly which
bytes a crash cost.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogLoader.java`` and
``UnifiedLog.rebuildProducerState``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from kafkalab.storage import log_file_utils as names
from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError
from kafkalab.storage.fetch_data_info import LogOffsetMetadata
from kafkalab.storage.local_log import delete_segment_files
from kafkalab.storage.producer_state import ProducerStateManager
from kafkalab.storage.segment import LogSegment

__all__ = ["LogLoader", "LoadedLogOffsets", "RecoveryReport", "SegmentTruncation", "rebuild_producer_state"]

log = logging.getLogger(__name__)


class SegmentTruncation(NamedTuple):
    base_offset: int
    file: str
    valid_bytes: int
    truncated_bytes: int
    reason: str


@dataclass
class RecoveryReport:
    """What loading a log did to the files on disk."""

    topic_partition: object
    dir: str
    had_clean_shutdown: bool
    recovery_point_checkpoint: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    recovery_point: int = 0
    removed_files: list = field(default_factory=list)
    swap_files_recovered: list = field(default_factory=list)
    rebuilt_indexes: list = field(default_factory=list)        # (base_offset, reason)
    recovered_segments: list = field(default_factory=list)     # base offsets scanned batch by batch
    truncations: list = field(default_factory=list)            # SegmentTruncation
    deleted_segments: list = field(default_factory=list)       # base offsets deleted after a truncation

    @property
    def truncated_bytes(self) -> int:
        return sum(t.truncated_bytes for t in self.truncations)

    @property
    def truncated(self) -> bool:
        return bool(self.truncations or self.deleted_segments)

    def summary(self) -> str:
        parts = [f"{self.topic_partition}: "
                 f"{'clean shutdown, no recovery' if self.had_clean_shutdown else 'unclean shutdown'}"]
        if self.recovered_segments:
            parts.append(f"recovered segments {self.recovered_segments} from recovery point "
                         f"{self.recovery_point_checkpoint}")
        for t in self.truncations:
            parts.append(f"truncated {t.truncated_bytes} bytes at position {t.valid_bytes} of "
                         f"{os.path.basename(t.file)} ({t.reason})")
        if self.deleted_segments:
            parts.append(f"deleted later segments {self.deleted_segments}")
        if self.rebuilt_indexes:
            parts.append(f"rebuilt indexes of segments {[b for b, _ in self.rebuilt_indexes]}")
        if self.swap_files_recovered:
            parts.append(f"completed swap of {len(self.swap_files_recovered)} file(s)")
        parts.append(f"log end offset {self.log_end_offset}")
        return "; ".join(parts)


class LoadedLogOffsets(NamedTuple):
    log_start_offset: int
    recovery_point: int
    next_offset_metadata: LogOffsetMetadata


class LogLoader:
    def __init__(self, directory: str, topic_partition, config, scheduler, time, *, had_clean_shutdown: bool,
                 segments, log_start_offset_checkpoint: int, recovery_point_checkpoint: int, leader_epoch_cache,
                 producer_state_manager: ProducerStateManager):
        self.dir = str(directory)
        self.topic_partition = topic_partition
        self.config = config
        self.scheduler = scheduler
        self.time = time
        self.had_clean_shutdown = had_clean_shutdown
        self.segments = segments
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state_manager = producer_state_manager
        self.report = RecoveryReport(topic_partition, self.dir, had_clean_shutdown, recovery_point_checkpoint)
        self.prefix = f"[LogLoader partition={topic_partition}, dir={os.path.dirname(self.dir)}] "

    def _files(self) -> list:
        return sorted(f for f in os.listdir(self.dir) if os.path.isfile(os.path.join(self.dir, f)))

    def load(self) -> LoadedLogOffsets:
        swap_files = self._remove_temp_files_and_collect_swap_files()
        min_swap, max_swap = None, None
        for swap in swap_files:
            if not swap.endswith(names.LOG_FILE_SUFFIX + names.SWAP_FILE_SUFFIX):
                continue
            base = names.offset_from_file_name(swap)
            segment = LogSegment.open(self.dir, base, self.config, self.time, file_suffix=names.SWAP_FILE_SUFFIX)
            log.info("%sFound log file %s from interrupted swap operation, which is recoverable from .swap files by "
                     "renaming.", self.prefix, swap)
            min_swap = base if min_swap is None else min(min_swap, base)
            nxt = segment.read_next_offset()
            max_swap = nxt if max_swap is None else max(max_swap, nxt)
            segment.close_handlers()
        if min_swap is not None:
            for name in self._files():
                if name.endswith(names.SWAP_FILE_SUFFIX):
                    continue
                try:
                    offset = names.offset_from_file_name(name)
                except ValueError:
                    continue
                if min_swap <= offset < max_swap:
                    log.info("%sDeleting segment files %s that is compacted but has not been deleted yet.",
                             self.prefix, name)
                    os.remove(os.path.join(self.dir, name))
                    self.report.removed_files.append(name)
        for name in self._files():
            if name.endswith(names.SWAP_FILE_SUFFIX):
                log.info("%sRecovering file %s by renaming from .swap files.", self.prefix, name)
                os.replace(os.path.join(self.dir, name), os.path.join(self.dir, name[:-len(names.SWAP_FILE_SUFFIX)]))
                self.report.swap_files_recovered.append(name)

        self._load_segment_files()
        new_recovery_point, next_offset = self._recover_log()
        for segment in self.segments:     # rebuilt indexes below the recovery point would never be flushed again
            if segment.base_offset in self.report.recovered_segments and segment.base_offset < new_recovery_point:
                segment.flush()
        active = self.segments.active_segment
        active.resize_indexes(self.config.max_index_size)

        self.leader_epoch_cache.truncate_from_end(next_offset)
        new_log_start_offset = max(self.log_start_offset_checkpoint, self.segments.first_segment.base_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset_checkpoint)
        psm = self.producer_state_manager
        psm.remove_stray_snapshots(self.segments.base_offsets())
        rebuild_producer_state(psm, self.segments, new_log_start_offset, next_offset, self.time,
                               reload_from_clean_shutdown=self.had_clean_shutdown)
        self.report.log_start_offset = new_log_start_offset
        self.report.log_end_offset = next_offset
        self.report.recovery_point = new_recovery_point
        if self.report.truncated:
            log.warning("%sRecovery after unclean shutdown: %s", self.prefix, self.report.summary())
        else:
            log.info("%s%s", self.prefix, self.report.summary())
        return LoadedLogOffsets(new_log_start_offset, new_recovery_point,
                                LogOffsetMetadata(next_offset, active.base_offset, active.size))

    # ------------------------------------------------------------------------------------------ step 1
    def _remove_temp_files_and_collect_swap_files(self) -> list:
        swap_files, cleaned_files = [], []
        min_cleaned = None
        for name in self._files():
            path = os.path.join(self.dir, name)
            if name.endswith(names.DELETED_FILE_SUFFIX):
                log.debug("%sDeleting stray temporary file %s", self.prefix, path)
                os.remove(path)
                self.report.removed_files.append(name)
            elif name.endswith(names.CLEANED_FILE_SUFFIX):
                offset = names.offset_from_file_name(name)
                min_cleaned = offset if min_cleaned is None else min(min_cleaned, offset)
                cleaned_files.append(name)
            elif name.endswith(names.SWAP_FILE_SUFFIX):
                swap_files.append(name)
        valid = []
        for name in swap_files:   # a .swap at or past an unfinished .cleaned belongs to an incomplete operation
            if min_cleaned is not None and names.offset_from_file_name(name) >= min_cleaned:
                os.remove(os.path.join(self.dir, name))
                self.report.removed_files.append(name)
            else:
                valid.append(name)
        for name in cleaned_files:
            os.remove(os.path.join(self.dir, name))
            self.report.removed_files.append(name)
        return valid

    # ------------------------------------------------------------------------------------------ step 2
    def _load_segment_files(self) -> None:
        bases = sorted(names.offset_from_file_name(n) for n in self._files() if names.is_log_file(n))
        floor = max((b for b in bases if b <= self.recovery_point_checkpoint), default=bases[0] if bases else 0)
        for name in self._files():
            path = os.path.join(self.dir, name)
            if names.is_index_file(name):
                try:
                    offset = names.offset_from_file_name(name)
                except ValueError:
                    continue
                if not os.path.exists(names.log_file(self.dir, offset)):
                    log.warning("%sFound an orphaned index file %s, with no corresponding log file.", self.prefix, path)
                    os.remove(path)
                    self.report.removed_files.append(name)
            elif names.is_log_file(name):
                base = names.offset_from_file_name(name)
                missing = [p for p in (names.offset_index_file(self.dir, base), names.time_index_file(self.dir, base))
                           if not os.path.exists(p)]
                segment = LogSegment.open(self.dir, base, self.config, self.time)
                reason = None
                if missing:
                    reason = f"missing {', '.join(os.path.basename(p) for p in missing)}"
                elif not self.had_clean_shutdown and base >= floor:
                    pass            # recovery rebuilds this segment's indexes anyway (step 3): no need to check
                else:
                    try:
                        segment.sanity_check()
                    except CorruptIndexError as e:
                        reason = str(e)
                if reason is not None:
                    log.warning("%sRecovering segment %d and rebuilding its index files: %s", self.prefix, base, reason)
                    self.report.rebuilt_indexes.append((base, reason))
                    self._record(segment, self._recover_segment(segment))
                    segment.flush()     # below the recovery point nothing else would ever flush the new indexes
                self.segments.add(segment)

    def _recover_segment(self, segment: LogSegment):
        psm = ProducerStateManager(self.topic_partition, self.dir,
                                   producer_id_expiration_ms=self.producer_state_manager.producer_id_expiration_ms,
                                   time=self.time)
        rebuild_producer_state(psm, self.segments, self.log_start_offset_checkpoint, segment.base_offset, self.time,
                               reload_from_clean_shutdown=False)
        result = segment.recover(psm, self.leader_epoch_cache)
        psm.take_snapshot()
        return result

    def _record(self, segment: LogSegment, result) -> None:
        if result.truncated_bytes > 0:
            self.report.truncations.append(SegmentTruncation(segment.base_offset, segment.log.path,
                                                             result.valid_bytes, result.truncated_bytes, result.reason))

    # ------------------------------------------------------------------------------------------ step 3
    def _recover_log(self) -> tuple:
        if not self.had_clean_shutdown:
            unflushed = self.segments.values(self.recovery_point_checkpoint, None)
            for i, segment in enumerate(unflushed):
                log.info("%sRecovering unflushed segment %d. %d/%d recovered for %s.", self.prefix,
                         segment.base_offset, i, len(unflushed), self.topic_partition)
                self.report.recovered_segments.append(segment.base_offset)
                try:
                    result = self._recover_segment(segment)
                    self._record(segment, result)
                    truncated = result.truncated_bytes
                except (KafkaStorageError, OSError) as e:
                    log.warning("%sFound invalid offset during recovery (%s). Deleting the corrupt segment and "
                                "creating an empty one with starting offset %d", self.prefix, e, segment.base_offset)
                    before = segment.size
                    segment.truncate_to(segment.base_offset)
                    truncated = before
                    self.report.truncations.append(SegmentTruncation(segment.base_offset, segment.log.path, 0, before,
                                                                     str(e)))
                if truncated > 0:
                    log.warning("%sCorruption found in segment %d, truncating to offset %d", self.prefix,
                                segment.base_offset, segment.read_next_offset())
                    remaining = unflushed[i + 1:]
                    self._remove_and_delete_segments(remaining)
                    self.report.deleted_segments.extend(s.base_offset for s in remaining)
                    break
        log_end_offset = self._delete_segments_if_log_start_greater_than_log_end()
        if not self.segments:
            self.segments.add(LogSegment.open(self.dir, self.log_start_offset_checkpoint, self.config, self.time))
        if self.had_clean_shutdown and log_end_offset is not None:
            return log_end_offset, log_end_offset
        if log_end_offset is None:
            log_end_offset = self.segments.active_segment.read_next_offset()
        return min(self.recovery_point_checkpoint, log_end_offset), log_end_offset

    def _remove_and_delete_segments(self, to_delete) -> None:
        to_delete = list(to_delete)
        if not to_delete:
            return
        log.info("%sDeleting segments as part of log recovery: %s", self.prefix, ", ".join(map(repr, to_delete)))
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
            self.producer_state_manager.delete_snapshot(segment.base_offset)
        delete_segment_files(to_delete, async_delete=True, config=self.config, scheduler=self.scheduler,
                             log_prefix=self.prefix)

    def _delete_segments_if_log_start_greater_than_log_end(self) -> Optional[int]:
        if not self.segments:
            return None
        log_end_offset = self.segments.active_segment.read_next_offset()
        if log_end_offset >= self.log_start_offset_checkpoint:
            return log_end_offset
        log.warning("%sDeleting all segments because logEndOffset (%d) is smaller than logStartOffset %d. This could "
                    "happen if segment files were deleted from the file system.", self.prefix, log_end_offset,
                    self.log_start_offset_checkpoint)
        self.report.deleted_segments.extend(self.segments.base_offsets())
        self._remove_and_delete_segments(self.segments.values())
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state_manager.truncate_fully_and_start_at(self.log_start_offset_checkpoint)
        return None


# ------------------------------------------------------------------------------------ producer state rebuild

def _replay_segment(psm: ProducerStateManager, segment: LogSegment, start_offset: int, end_offset: int) -> None:
    """Replay batches of ``segment`` holding offsets in ``[start_offset, end_offset)`` into ``psm``; only the
    headers are read, except for control batches whose marker must be decoded."""
    position = segment.offset_index.lookup(start_offset).position
    for batch in segment.log.batches(position):
        if batch.last_offset < start_offset:
            continue
        if batch.last_offset >= end_offset:
            break
        data = segment.log.read(batch.position, batch.size) if batch.header.is_control_batch else None
        psm.load_batch(batch.header, data)


def rebuild_producer_state(psm: ProducerStateManager, segments, log_start_offset: int, last_offset: int, time, *,
                           reload_from_clean_shutdown: bool) -> None:
    """Bring ``psm`` to the state at ``last_offset``: load the latest snapshot at or below it and replay the
    batches after it, taking snapshots at the last two segment boundaries on the way.

    As in Kafka, a clean shutdown that left no snapshot at all is taken as a log written without idempotent
    producers (an upgrade), and nothing is scanned: empty snapshots are written instead."""
    to_snapshot = []
    if segments:
        last_base = segments.active_segment.base_offset
        lower = segments.lower_segment(last_base)
        if lower is not None:
            to_snapshot.append(lower.base_offset)
        to_snapshot.append(last_base)
    to_snapshot.append(last_offset)
    if psm.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        for offset in to_snapshot:
            psm.update_map_end_offset(offset)
            psm.take_snapshot()
        return
    empty_before = psm.is_empty() and psm.map_end_offset >= last_offset
    psm.truncate_and_reload(log_start_offset, last_offset, time.milliseconds())
    if last_offset > psm.map_end_offset and not empty_before:
        for segment in segments.values(psm.map_end_offset, last_offset):
            start = max(segment.base_offset, psm.map_end_offset, log_start_offset)
            psm.update_map_end_offset(start)
            if segment.base_offset in to_snapshot:
                psm.take_snapshot()
            _replay_segment(psm, segment, start, last_offset)
    psm.update_map_end_offset(last_offset)
    psm.take_snapshot()
