"""Log compaction: keep only the latest record for each key, without breaking offsets or producer state.

Theory of operation
-------------------
A topic with ``cleanup.policy=compact`` is a table's changelog: only the newest value of each key matters.
The log cleaner periodically rewrites such logs. It splits a log into a *clean* head (already compacted up to
the ``cleaner-offset-checkpoint``), a *dirty* middle (written since) and an uncleanable tail (the active
segment, anything at or above the last stable offset, and segments younger than ``min.compaction.lag.ms``).

A pass works in two steps:

1. **Offset map.** Read the dirty section and remember, for every key, the offset of its latest record.
   Records of aborted transactions are skipped: they never count as a key's latest value.
2. **Copy.** Rewrite every segment from the start of the log up to the end of the dirty section, keeping a
   record only if no later record has the same key. The survivors keep their original offsets -- gaps in a
   compacted log are normal -- and a group of small segments is written into one new segment, through
   ``<base>.log.cleaned`` -> ``.swap`` -> swapped in, with the old files renamed ``.deleted``. A crash at any
   point is repaired by the loader.

A record with a null value is a *tombstone*: "this key is deleted". A pass that keeps a tombstone stamps its
batch with a *delete horizon* (now + ``delete.retention.ms``, stored in ``base_timestamp`` with attribute bit
6, KIP-534); a later pass after that horizon drops it, so consumers had ``delete.retention.ms`` to see it.

**Transactions.** Only the part below the last stable offset is ever cleaned, so every transaction the
cleaner meets is decided. Both steps walk the log with a
:class:`~kafkalab.storage.cleaned_transaction_metadata.CleanedTransactionMetadata` fed from the
``.txnindex`` files: the batches of aborted transactions are left out of the map and dropped by the copy. A
COMMIT or ABORT marker stays while any batch of its transaction is still in the log; after that it is treated
like a tombstone -- stamped with a delete horizon, removed by the first pass past it. The cleaned segment's
``.txnindex`` is written anew by the copy: it holds the entries of the aborted transactions whose batches the
pass still read, and the ABORT marker of each is kept.

Batches are copied verbatim when nothing in them changes, and re-encoded (same codec, same offset deltas,
same ``last_offset_delta``) when records are removed. Producer state survives: the last batch of every
active producer is kept, even if all its records are gone (as an empty batch), so its last sequence number
is still in the log; a producer with no data left keeps its last marker, which carries its epoch.

Differences from Kafka: the offset map is a Python dict of whole keys capped at
``log.cleaner.dedupe.buffer.size`` x ``log.cleaner.io.buffer.load.factor`` / 24 entries (Kafka stores 16-byte
MD5 digests + 8-byte offsets in that buffer; as there, mapping stops at the first record that finds the map
full); the cleaner holds the log's lock while it cleans, so appends to that partition wait (Kafka cleans
concurrently and locks only for the swap); only RecordBatch v2 exists here, so Kafka's
``retainLegacyDeletesAndTxnMarkers`` (segment age as the horizon of pre-v2 tombstones) has nothing to apply to.

Mirrors: ``core/src/main/scala/kafka/log/LogCleaner.scala`` (``Cleaner``), ``LogCleanerManager.scala`` and
``clients/src/main/java/org/apache/kafka/common/record/MemoryRecords.java`` (``filterTo``, ``RecordFilter``).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple, Optional

from kafkalab.records import decode_batch, encode_batch
from kafkalab.records.header import COMPRESSION_CODEC_MASK, DELETE_HORIZON_FLAG_MASK, NO_TIMESTAMP
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from kafkalab.storage.cleaned_transaction_metadata import CleanedTransactionMetadata
from kafkalab.storage.log_file_utils import TopicPartition
from kafkalab.storage.segment import LogSegment

__all__ = ["Cleaner", "LogCleaner", "OffsetMap", "CleanerStats", "LogToClean", "CleanResult", "cleanable_offsets"]

log = logging.getLogger(__name__)

LONG_MAX = 9223372036854775807


class OffsetMap:
    """key -> offset of its latest record in the dirty section (Kafka's ``SkimpyOffsetMap``)."""

    def __init__(self, max_entries: int = 1 << 22):
        self.max_entries = max_entries
        self._map: dict = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    @property
    def size(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1


@dataclass
class CleanerStats:
    messages_read: int = 0
    bytes_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    map_messages_read: int = 0
    invalid_messages: int = 0
    tombstones_removed: int = 0
    batches_rewritten: int = 0
    batches_copied: int = 0
    empty_batches_kept: int = 0
    batches_discarded: int = 0       # whole batches dropped unread: aborted data, expired transaction markers


class LogToClean(NamedTuple):
    log: object
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


class CleanResult(NamedTuple):
    topic_partition: TopicPartition
    first_dirty_offset: int
    end_offset: int
    stats: CleanerStats


def cleanable_offsets(log, last_clean_offset: Optional[int], now: int) -> tuple:
    """``(first_dirty_offset, first_uncleanable_offset, force_update_checkpoint)`` for ``log``."""
    lso = log.log_start_offset
    checkpoint = lso if last_clean_offset is None else last_clean_offset
    force = False
    if checkpoint < lso or checkpoint > log.log_end_offset:
        checkpoint, force = lso, True
    candidates = [log.last_stable_offset, log.active_segment.base_offset]
    lag = max(log.config.compaction_lag_ms, 0)
    if lag > 0:
        for segment in log._local.segments.non_active_segments_from(checkpoint):
            if segment.largest_timestamp() > now - lag:
                candidates.append(segment.base_offset)
                break
    return checkpoint, max(checkpoint, min(candidates)), force


def _log_to_clean(log, first_dirty: int, uncleanable: int, now: int) -> LogToClean:
    segments = log._local.segments
    clean_bytes = sum(s.size for s in segments.values(-1, first_dirty)) if first_dirty > -1 else 0
    non_active = segments.non_active_segments_from(uncleanable)
    first_uncleanable = non_active[0].base_offset if non_active else segments.active_segment.base_offset
    cleanable_bytes = sum(s.size for s in segments.values(min(first_dirty, first_uncleanable), first_uncleanable))
    max_lag = max(log.config.max_compaction_lag_ms, 0)
    stamps = [s.first_batch_timestamp() for s in segments.non_active_segments_from(first_dirty)]
    stamps = [t for t in stamps if 0 < t < LONG_MAX]
    need_now = bool(stamps) and min(stamps) < now - max_lag
    return LogToClean(log, first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, need_now)


class Cleaner:
    """Cleans one log at a time (Kafka's ``Cleaner``)."""

    def __init__(self, time, *, max_map_entries: int = 1 << 22):
        self.time = time
        self.max_map_entries = max_map_entries

    def clean(self, to_clean: LogToClean) -> tuple:
        """Compact ``to_clean.log``; returns ``(end_offset, stats)`` where ``end_offset`` is the next first
        dirty offset."""
        return self.do_clean(to_clean, self.time.milliseconds())

    def do_clean(self, to_clean: LogToClean, current_time: int) -> tuple:
        """:meth:`clean` as if the time were ``current_time`` (delete horizons are judged against it)."""
        log_ = to_clean.log
        stats = CleanerStats()
        offset_map = OffsetMap(self.max_map_entries)
        upper_bound = to_clean.first_uncleanable_offset
        self._build_offset_map(log_, to_clean.first_dirty_offset, upper_bound, offset_map, stats)
        active = log_.active_segment
        end_offset = min(max(offset_map.latest_offset + 1, to_clean.first_dirty_offset), active.base_offset)
        if end_offset <= 0:
            return to_clean.first_dirty_offset, stats
        offset_map.update_latest_offset(end_offset - 1)   # everything below end_offset is judged by key
        segments = [s for s in log_.log_segments(0, end_offset)
                    if s is not active and self._next_base_offset(log_, s) <= upper_bound]
        transactions = CleanedTransactionMetadata()       # carried from group to group: markers follow their data
        for group in self.group_segments_by_size(segments, log_.config.segment_size, log_.config.max_index_size):
            self._clean_segments(log_, group, offset_map, current_time, stats, transactions)
        return end_offset, stats

    @staticmethod
    def _next_base_offset(log_, segment: LogSegment) -> int:
        following = log_._local.segments.higher_segment(segment.base_offset)
        return following.base_offset if following is not None else log_.log_end_offset

    # -------------------------------------------------------------------------------------- offset map
    def _build_offset_map(self, log_, start: int, end: int, offset_map: OffsetMap, stats: CleanerStats) -> None:
        if start >= end:
            return
        dirty = log_.log_segments(start, end)
        transactions = CleanedTransactionMetadata()
        transactions.add_aborted_transactions(log_.collect_aborted_transactions(start, end))
        for i, segment in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._map_segment(segment, start, end, offset_map, transactions, stats):
                log.debug("Offset map is full; segment %d is partially mapped", segment.base_offset)
                return
            offset_map.update_latest_offset(next_start - 1)

    def _map_segment(self, segment: LogSegment, start: int, end: int, offset_map: OffsetMap,
                     transactions: CleanedTransactionMetadata, stats: CleanerStats) -> bool:
        """Put the keys of ``segment`` from ``start`` on into the map, skipping aborted transactions; True if
        the map filled up."""
        position = segment.offset_index.lookup(start).position
        for batch in segment.log.batches(position):
            h = batch.header
            if batch.last_offset >= end:
                break
            if h.is_control_batch:
                transactions.on_control_batch_read(decode_batch(segment.log.read(batch.position, batch.size),
                                                                verify=False))
                stats.map_messages_read += 1
            elif transactions.on_batch_read(h):
                stats.map_messages_read += h.records_count     # aborted: never in the map
            else:
                for record in decode_batch(segment.log.read(batch.position, batch.size), verify=False).records:
                    if record.key is not None and record.offset >= start:
                        if offset_map.size >= self.max_map_entries:
                            return True
                        offset_map.put(record.key, record.offset)
                    stats.map_messages_read += 1
            if batch.last_offset >= start:
                offset_map.update_latest_offset(batch.last_offset)
        return False

    # ------------------------------------------------------------------------------------------- copy
    @staticmethod
    def group_segments_by_size(segments: list, max_size: int, max_index_size: int) -> list:
        """Consecutive segments merged while the result fits ``segment.bytes`` and ``segment.index.bytes``."""
        groups, segs = [], list(segments)
        while segs:
            group = [segs.pop(0)]
            log_size = group[0].size
            index_size = group[0].offset_index.size_in_bytes()
            time_size = group[0].time_index.size_in_bytes()
            while (segs and log_size + segs[0].size <= max_size
                   and index_size + segs[0].offset_index.size_in_bytes() <= max_index_size
                   and time_size + segs[0].time_index.size_in_bytes() <= max_index_size
                   and (segs[0].size == 0 or segs[0].read_next_offset() - 1 - group[0].base_offset <= 2147483647)):
                nxt = segs.pop(0)
                group.append(nxt)
                log_size += nxt.size
                index_size += nxt.offset_index.size_in_bytes()
                time_size += nxt.time_index.size_in_bytes()
            groups.append(group)
        return groups

    def _clean_segments(self, log_, group: list, offset_map: OffsetMap, now: int, stats: CleanerStats,
                        transactions: CleanedTransactionMetadata) -> None:
        base = group[0].base_offset
        for path in (names.log_file(log_.dir, base, names.CLEANED_FILE_SUFFIX),
                     names.offset_index_file(log_.dir, base, names.CLEANED_FILE_SUFFIX),
                     names.time_index_file(log_.dir, base, names.CLEANED_FILE_SUFFIX),
                     names.transaction_index_file(log_.dir, base, names.CLEANED_FILE_SUFFIX)):
            if os.path.exists(path):
                os.remove(path)
        cleaned = LogSegment.open(log_.dir, base, log_.config, self.time, file_suffix=names.CLEANED_FILE_SUFFIX)
        transactions.cleaned_index = cleaned.txn_index
        last_records = {pid: (e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
                        for pid, e in log_.producer_state_manager.active_producers().items()}
        try:
            for i, segment in enumerate(group):
                # every aborted transaction overlapping the whole segment: the cleaned index is rebuilt from them
                upper = group[i + 1].base_offset if i + 1 < len(group) else segment.read_next_offset()
                transactions.add_aborted_transactions(log_.collect_aborted_transactions(segment.base_offset, upper))
                self._clean_into(segment, cleaned, offset_map, now, log_.config.delete_retention_ms, last_records,
                                 transactions, stats)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            cleaned.set_last_modified(group[-1].last_modified())
        except Exception:          # an aborted clean leaves nothing behind; a crash leaves .cleaned for the loader
            cleaned.delete_if_exists()
            raise
        finally:
            transactions.cleaned_index = None
        log.info("Swapping in cleaned segment %r for segment(s) %r in log %s", cleaned, group, log_.topic_partition)
        for old in log_._local.replace_segments([cleaned], group):
            log_.producer_state_manager.delete_snapshot(old.base_offset)

    def _clean_into(self, source: LogSegment, dest: LogSegment, offset_map: OffsetMap, now: int,
                    delete_retention_ms: int, last_records: dict, transactions: CleanedTransactionMetadata,
                    stats: CleanerStats) -> None:
        """Copy what survives of ``source`` into ``dest`` (Kafka's ``cleanInto`` with ``MemoryRecords.filterTo``)."""
        for batch in source.log.batches():
            h = batch.header
            data = source.log.read(batch.position, batch.size)
            stats.bytes_read += batch.size
            decoded = decode_batch(data, verify=False) if h.is_control_batch else None
            if h.is_control_batch:
                can_discard = transactions.on_control_batch_read(decoded)
                # a marker outlives its transaction's data by delete.retention.ms (its delete horizon)
                discard_records = can_discard and h.has_delete_horizon_ms and h.delete_horizon_ms <= now
            else:
                can_discard = discard_records = transactions.on_batch_read(h)
            retain_empty = h.has_producer_id and _is_last_record_of_producer(h, last_records)
            if discard_records and not retain_empty:
                stats.batches_discarded += 1
                continue
            if decoded is None:
                decoded = decode_batch(data, verify=False)
            stats.messages_read += len(decoded.records)
            if discard_records:
                retained = []
            elif h.is_control_batch:
                retained = list(decoded.records)
            else:
                retained = [r for r in decoded.records if self._should_retain(offset_map, h, r, now, stats)]
            marker_for_empty_txn = can_discard and h.is_control_batch
            need_horizon = ((marker_for_empty_txn or any(r.value is None for r in retained))
                            and not h.has_delete_horizon_ms)
            if retained and len(retained) == len(decoded.records) and not need_horizon:
                out = data
                stats.batches_copied += 1
            elif retained:
                horizon = now + delete_retention_ms if need_horizon else h.delete_horizon_ms
                out = _rebuild(decoded, retained, horizon)
                stats.batches_rewritten += 1
            elif retain_empty:
                out = _empty_batch(decoded)
                stats.empty_batches_kept += 1
            else:
                continue
            stats.messages_written += len(retained)
            max_ts = int.from_bytes(out[35:43], "big", signed=True)
            dest.append(h.last_offset, max_ts, h.last_offset, out)
            stats.bytes_written += len(out)

    @staticmethod
    def _should_retain(offset_map: OffsetMap, header, record, now: int, stats: CleanerStats) -> bool:
        if record.offset > offset_map.latest_offset:
            return True
        if record.key is None:
            stats.invalid_messages += 1
            return False
        latest = record.offset >= offset_map.get(record.key)
        if not latest:
            return False
        if record.value is not None:
            return True
        keep = not header.has_delete_horizon_ms or now < header.delete_horizon_ms
        if not keep:
            stats.tombstones_removed += 1
        return keep


def _is_last_record_of_producer(header, last_records: dict) -> bool:
    """Whether the batch holds what the producer state needs of an active producer: the batch with its last
    data offset (and so its last sequence), or -- if it has no data in the log -- its last marker (the epoch
    that fences zombies)."""
    last = last_records.get(header.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset is not None:
        return header.last_offset == last_data_offset
    return header.is_control_batch and header.producer_epoch == epoch


def _rebuild(decoded, retained: list, horizon: int) -> bytes:
    """Re-encode ``decoded`` with only ``retained`` records: same base offset, offset deltas, last_offset_delta
    (so the last sequence survives), codec and producer fields; base_timestamp becomes the delete horizon when
    one is set."""
    attributes = decoded.attributes
    base_ts = decoded.base_timestamp
    if horizon is not None and horizon >= 0:
        attributes |= DELETE_HORIZON_FLAG_MASK
        base_ts = horizon
    shift = decoded.base_timestamp - base_ts
    records = tuple(r._replace(timestamp_delta=r.timestamp_delta + shift) for r in retained)
    max_ts = decoded.max_timestamp if decoded.timestamp_type == 1 else max(r.timestamp for r in retained)
    return encode_batch(decoded._replace(attributes=attributes, base_timestamp=base_ts, max_timestamp=max_ts,
                                         records=records))


def _empty_batch(decoded) -> bytes:
    """A header-only batch keeping the offsets, the producer fields, the transactional and control bits and the
    max timestamp; no codec, no delete horizon, base timestamp -1 (Kafka's ``writeEmptyHeader``)."""
    attributes = decoded.attributes & ~(COMPRESSION_CODEC_MASK | DELETE_HORIZON_FLAG_MASK)
    return encode_batch(decoded._replace(attributes=attributes, base_timestamp=NO_TIMESTAMP, records=()))


class LogCleaner:
    """Runs the cleaner over the compacted logs the log manager holds, and keeps ``cleaner-offset-checkpoint``.

    ``logs`` is a callable returning ``{TopicPartition: UnifiedLog}``; ``log_dirs`` are the log dirs it starts
    with, each given an empty ``cleaner-offset-checkpoint`` if it has none (Kafka's ``LogCleanerManager`` makes
    its checkpoint files when it is built; the first entries come with the first cleaning). :meth:`run_once` is one iteration of
    Kafka's cleaner thread (clean the filthiest eligible log, then apply retention to compacted logs);
    :meth:`clean_now` cleans one log immediately, ignoring ``min.cleanable.dirty.ratio`` (labs and tests).
    """

    def __init__(self, logs: Callable[[], dict], *, time, scheduler=None, backoff_ms: int = 15000,
                 dedupe_buffer_size: int = 134217728, io_buffer_load_factor: float = 0.9,
                 log_dirs: Iterable[str] = ()):
        self.logs = logs
        for log_dir in log_dirs:
            self._checkpoint(log_dir).create_if_missing()
        self.time = time
        self.scheduler = scheduler
        self.backoff_ms = backoff_ms
        self.cleaner = Cleaner(time, max_map_entries=max(1, int(dedupe_buffer_size * io_buffer_load_factor) // 24))
        self.in_progress: set = set()
        self._task = None
        self.last_results: list = []

    def startup(self) -> None:
        if self.scheduler is not None:
            self._task = self.scheduler.schedule("kafka-log-cleaner-thread-0", self.run_once, 0, self.backoff_ms)

    def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # ------------------------------------------------------------------------------------- checkpoints
    @staticmethod
    def _checkpoint(log_dir: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(str(log_dir), CLEANER_OFFSET_CHECKPOINT_FILE))

    def all_cleaner_checkpoints(self) -> dict:
        out = {}
        for log_dir in {log_.parent_dir for log_ in self.logs().values()}:
            out.update(self._checkpoint(log_dir).read())
        return out

    def update_checkpoints(self, log_dir: str, *, update: Optional[tuple] = None,
                           remove: Optional[TopicPartition] = None) -> None:
        checkpoint = self._checkpoint(log_dir)
        current = checkpoint.read()
        live = {tp for tp, lg in self.logs().items() if lg.parent_dir == str(log_dir)}
        current = {tp: off for tp, off in current.items() if tp in live and tp != remove}
        if update is not None:
            current[TopicPartition(*update[0])] = update[1]
        checkpoint.write(current)

    def maybe_truncate_checkpoint(self, log_dir: str, tp: TopicPartition, offset: int) -> None:
        current = self._checkpoint(log_dir).read().get(tp)
        if current is not None and current > offset:
            self.update_checkpoints(log_dir, update=(tp, offset))

    # ------------------------------------------------------------------------------------------ cleaning
    def _candidate(self, log_, checkpoints: dict, now: int) -> LogToClean:
        first_dirty, uncleanable, force = cleanable_offsets(log_, checkpoints.get(log_.topic_partition), now)
        if force:
            self.update_checkpoints(log_.parent_dir, update=(log_.topic_partition, first_dirty))
        return _log_to_clean(log_, first_dirty, uncleanable, now)

    def grab_filthiest_compacted_log(self) -> Optional[LogToClean]:
        now = self.time.milliseconds()
        checkpoints = self.all_cleaner_checkpoints()
        candidates = [self._candidate(lg, checkpoints, now) for tp, lg in self.logs().items()
                      if lg.config.compact and tp not in self.in_progress and not lg.closed]
        candidates = [c for c in candidates if c.total_bytes > 0 and
                      ((c.need_compaction_now and c.cleanable_bytes > 0)
                       or c.cleanable_ratio > c.log.config.min_cleanable_ratio)]
        return max(candidates, key=lambda c: c.cleanable_ratio) if candidates else None

    def _clean(self, to_clean: LogToClean) -> CleanResult:
        log_ = to_clean.log
        tp = log_.topic_partition
        self.in_progress.add(tp)
        try:
            with log_._lock:
                end_offset, stats = self.cleaner.clean(to_clean)
            self.update_checkpoints(log_.parent_dir, update=(tp, end_offset))
        finally:
            self.in_progress.discard(tp)
        result = CleanResult(tp, to_clean.first_dirty_offset, end_offset, stats)
        log.info("Cleaned log %s from offset %d to %d: %d messages read, %d kept, %d tombstones removed", tp,
                 to_clean.first_dirty_offset, end_offset, stats.messages_read, stats.messages_written,
                 stats.tombstones_removed)
        self.last_results.append(result)
        return result

    def run_once(self) -> bool:
        """One iteration of the cleaner thread; True if a log was cleaned."""
        to_clean = self.grab_filthiest_compacted_log()
        if to_clean is not None:
            self._clean(to_clean)
        for tp, log_ in self.logs().items():
            if log_.config.compact and tp not in self.in_progress and not log_.closed:
                log_.delete_old_segments()
        return to_clean is not None

    def clean_now(self, log_) -> CleanResult:
        """Compact ``log_`` now, whatever its dirty ratio (the uncleanable tail is still respected)."""
        now = self.time.milliseconds()
        checkpoints = self._checkpoint(log_.parent_dir).read()
        return self._clean(self._candidate(log_, checkpoints, now))
