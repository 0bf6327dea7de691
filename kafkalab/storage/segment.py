"""A log segment: one ``.log`` file of batches plus its two sparse indexes.

Theory of operation
-------------------
A partition's log is cut into segments so that old data can be deleted a file at a time and so that no
index grows without bound. A segment is named by its *base offset* (the first offset it may hold) and
consists of::

    00000000000000000000.log        batches, verbatim          (FileRecords)
    00000000000000000000.index      offset -> position         (OffsetIndex, sparse)
    00000000000000000000.timeindex  timestamp -> offset        (TimeIndex, sparse)
    00000000000000000000.txnindex   aborted transactions       (TransactionIndex, only once one aborts here)

Only the last segment, the *active* one, takes appends. ``append`` writes the batches, remembers the largest
timestamp seen, and once more than ``index.interval.bytes`` were appended since the last index entry it
indexes the batch just written (its last offset -> its start position). ``should_roll`` says when the log must
start a new segment: it would grow past ``segment.bytes``, its first batch is older than ``segment.ms``
(minus jitter), an index is full, or an offset no longer fits an int32 relative to the base offset.

``read`` turns an offset into a byte range without decoding anything: the offset index gives a position at or
before the batch, and batch headers are walked from there. ``recover`` is what the loader runs after an
unclean shutdown: it rebuilds both indexes from the batches, stops at the first batch that is incomplete or
fails its CRC, and truncates the file there -- the torn tail of a crash. It also replays the producer state,
so the transaction index is rebuilt with the other two.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java`` (and
``RollParams.java``).
"""
from __future__ import annotations

import os
from typing import NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import crc_is_valid, decode_batch, stored_checksum, batch_checksum
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.errors import CorruptIndexError, CorruptRecordError, KafkaStorageError, StorageError
from kafkalab.storage.fetch_data_info import FetchDataInfo, LogOffsetMetadata
from kafkalab.storage.file_records import FileRecords
from kafkalab.storage.offset_index import OffsetIndex
from kafkalab.storage.time_index import TimeIndex, TimestampOffset
from kafkalab.storage.transaction_index import AbortedTxn, TransactionIndex

__all__ = ["LogSegment", "RollParams", "TimestampAndOffset", "SegmentRecovery"]

_UNKNOWN = TimestampOffset(-1, -1)


class RollParams(NamedTuple):
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class TimestampAndOffset(NamedTuple):
    """A ListOffsets answer: the timestamp found, its offset, and the leader epoch of its batch (None if unknown)."""

    timestamp: int
    offset: int
    leader_epoch: Optional[int]


class SegmentRecovery(NamedTuple):
    """What :meth:`LogSegment.recover` found: bytes cut off the end, and why."""

    valid_bytes: int
    truncated_bytes: int
    reason: Optional[str]


class LogSegment:
    def __init__(self, log: FileRecords, offset_index: OffsetIndex, time_index: TimeIndex, base_offset: int,
                 index_interval_bytes: int, roll_jitter_ms: int, time, txn_index: Optional[TransactionIndex] = None):
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        if txn_index is None:
            txn_index = TransactionIndex(base_offset, names.transaction_index_file(os.path.dirname(log.path),
                                                                                   base_offset))
        self.txn_index = txn_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.time = time
        self.created = time.milliseconds()
        self._rolling_based_timestamp: Optional[int] = None
        self._max_timestamp_and_offset = _UNKNOWN
        self.bytes_since_last_index_entry = 0

    @classmethod
    def open(cls, directory, base_offset: int, config, time, *, file_suffix: str = "",
             roll_jitter_ms: int = 0) -> "LogSegment":
        """Open (creating missing files) the segment with this base offset in ``directory``."""
        max_index = config.max_index_size
        return cls(FileRecords(names.log_file(directory, base_offset, file_suffix)),
                   OffsetIndex(names.offset_index_file(directory, base_offset, file_suffix), base_offset, max_index),
                   TimeIndex(names.time_index_file(directory, base_offset, file_suffix), base_offset, max_index),
                   base_offset, config.index_interval, roll_jitter_ms, time,
                   TransactionIndex(base_offset, names.transaction_index_file(directory, base_offset, file_suffix)))

    # ------------------------------------------------------------------------------------------- state
    @property
    def size(self) -> int:
        return self.log.size

    def __len__(self) -> int:
        return self.log.size

    @property
    def files(self) -> tuple:
        return (self.log.path, self.offset_index.path, self.time_index.path)

    def read_max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is _UNKNOWN:
            self._max_timestamp_and_offset = self.time_index.last_entry()
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().timestamp

    @property
    def shallow_offset_of_max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().offset

    def largest_record_timestamp(self) -> Optional[int]:
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else None

    def largest_timestamp(self) -> int:
        """The newest record timestamp in the segment; the file's mtime if no batch carries a timestamp.
        Time-based retention compares this with ``retention.ms``."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified()

    def last_modified(self) -> int:
        return self.log.last_modified()

    def set_last_modified(self, ms: int) -> None:
        for path in self.files:
            try:
                os.utime(path, (ms / 1000.0, ms / 1000.0))
            except FileNotFoundError:
                pass

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return self.offset_index.can_append_offset(offset)

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise KafkaStorageError(f"Detected offset overflow at offset {offset} in segment {self}")

    # ------------------------------------------------------------------------------------------- roll
    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            first = self.log.batch_at(0)
            if first is not None:
                self._rolling_based_timestamp = first.header.max_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """How long this segment has waited to be rolled: by its first batch's timestamp when there is one,
        by the wall clock since it was created otherwise."""
        self._load_first_batch_timestamp()
        ts = -1 if self._rolling_based_timestamp is None else self._rolling_based_timestamp
        return message_timestamp - ts if ts >= 0 else now - self.created

    def first_batch_timestamp(self) -> int:
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        return ts if ts is not None and ts >= 0 else 9223372036854775807

    def _reached_roll_ms(self, p: RollParams) -> bool:
        return self.time_waited_for_roll(p.now, p.max_timestamp_in_messages) > p.max_segment_ms - self.roll_jitter_ms

    def should_roll(self, p: RollParams) -> bool:
        reached_roll_ms = self._reached_roll_ms(p)
        size = self.size
        return (size > p.max_segment_bytes - p.messages_size or (size > 0 and reached_roll_ms)
                or self.offset_index.is_full() or self.time_index.is_full()
                or not self.can_convert_to_relative_offset(p.max_offset_in_messages))

    def roll_reason(self, p: RollParams) -> str:
        """Which rule of :meth:`should_roll` fired, in words (for logs and labs)."""
        if self.size > p.max_segment_bytes - p.messages_size:
            return f"segment.bytes: {self.size} + {p.messages_size} > {p.max_segment_bytes}"
        if self.size > 0 and self._reached_roll_ms(p):
            return f"segment.ms: waited {self.time_waited_for_roll(p.now, p.max_timestamp_in_messages)} ms"
        if self.offset_index.is_full():
            return "offset index full"
        if self.time_index.is_full():
            return "time index full"
        return "offset overflow"

    # ----------------------------------------------------------------------------------------- append
    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records) -> None:
        """Append ``records`` (already validated, offsets assigned) and index them if it is time to."""
        if len(records) == 0:
            return
        physical_position = self.log.size
        if physical_position == 0:
            self._rolling_based_timestamp = largest_timestamp
        self._ensure_offset_in_range(largest_offset)
        self.log.append(records)
        if largest_timestamp > self.max_timestamp_so_far:
            self._max_timestamp_and_offset = TimestampOffset(largest_timestamp, shallow_offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, physical_position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += len(records)

    def update_txn_index(self, completed_txn, last_stable_offset: int) -> None:
        """An aborted transaction whose ABORT marker this segment received gets an index entry (a commit none)."""
        if completed_txn.is_aborted:
            self.txn_index.append(AbortedTxn(completed_txn.producer_id, completed_txn.first_offset,
                                             completed_txn.last_offset, last_stable_offset))

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int):
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> Optional[int]:
        """The base offset of the first batch after ``fetch_size`` bytes read from ``start_position``, or None
        when the read reached the end of this segment."""
        for batch in self.log.batches(start_position + fetch_size):
            return batch.base_offset
        return None

    # ------------------------------------------------------------------------------------------- read
    def translate_offset(self, offset: int, starting_position: int = 0):
        """The batch holding the smallest offset >= ``offset`` (a :class:`FileBatch`), or None."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(offset, max(mapping.position, starting_position))

    def read(self, start_offset: int, max_size: int, *, bound_offset: Optional[int] = None,
             min_one_message: bool = False) -> Optional[FetchDataInfo]:
        """Whole batches from the one holding ``start_offset``: at most ``max_size`` bytes (or the first batch
        if ``min_one_message``), only batches whose last offset is below ``bound_offset``. None when no batch
        in this segment reaches ``start_offset``."""
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log.path}")
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, first.position)
        budget = max(max_size, first.size) if min_one_message else max_size
        if bound_offset is not None and first.last_offset >= bound_offset:
            return FetchDataInfo.empty(metadata)
        total = 0
        for batch in self.log.batches(first.position):
            if bound_offset is not None and batch.last_offset >= bound_offset:
                break
            if total + batch.size > budget:
                break
            total += batch.size
        if total == 0:
            return FetchDataInfo(metadata, (), first_entry_incomplete=budget < first.size, _records=b"")
        return FetchDataInfo(metadata, (self.log.slice(first.position, total),))

    def read_next_offset(self) -> int:
        """The offset after the last batch of this segment (its base offset when empty)."""
        next_offset = self.base_offset
        for batch in self.log.batches(self.offset_index.last_entry().position):
            next_offset = batch.next_offset
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> Optional[TimestampAndOffset]:
        """The first record with timestamp >= ``timestamp`` and offset >= ``starting_offset`` (records of the
        candidate batches are decoded: ListOffsets is the one read that looks inside batches)."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for batch in self.log.batches(position):
            if batch.header.max_timestamp < timestamp:
                continue
            decoded = decode_batch(self.log.read(batch.position, batch.size), verify=False)
            for record in decoded.records:
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    epoch = batch.header.partition_leader_epoch
                    return TimestampAndOffset(record.timestamp, record.offset, epoch if epoch >= 0 else None)
        return None

    # --------------------------------------------------------------------------------------- recovery
    def sanity_check(self) -> None:
        """Raise CorruptIndexError if either index cannot belong to this ``.log`` (checked at load time)."""
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()
        if self.offset_index.entries and self.offset_index.last_entry().position >= max(self.log.size, 1):
            raise CorruptIndexError(f"Corrupt index found, index file {self.offset_index.path} points at position "
                                    f"{self.offset_index.last_entry().position} past the end of {self.log.path} "
                                    f"({self.log.size} bytes)")

    def recover(self, producer_state_manager=None, leader_epoch_cache=None) -> SegmentRecovery:
        """Rebuild the indexes from the batches and cut off everything from the first invalid batch on."""
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        self._max_timestamp_and_offset = _UNKNOWN
        reason = None
        try:
            for batch in self.log.batches():
                data = self.log.read(batch.position, batch.size)
                if not crc_is_valid(data):
                    raise CorruptRecordError(f"Record is corrupt (stored crc = {stored_checksum(data)}, computed crc = "
                                             f"{batch_checksum(data)})")
                self._ensure_offset_in_range(batch.last_offset)
                header = batch.header
                if header.base_offset < self.base_offset:
                    raise CorruptRecordError(f"batch base offset {header.base_offset} is below the segment's base "
                                             f"offset {self.base_offset}")
                if header.max_timestamp > self.max_timestamp_so_far:
                    self._max_timestamp_and_offset = TimestampOffset(header.max_timestamp, batch.last_offset)
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.last_offset, valid_bytes)
                    self.time_index.maybe_append(self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far)
                    last_index_entry = valid_bytes
                valid_bytes += batch.size
                epoch = header.partition_leader_epoch
                if leader_epoch_cache is not None and epoch >= 0:
                    latest = leader_epoch_cache.latest_epoch
                    if latest is None or epoch > latest:
                        leader_epoch_cache.assign(epoch, header.base_offset)
                if producer_state_manager is not None:
                    completed = producer_state_manager.replay_batch(header, data)
                    if completed is not None:
                        self.update_txn_index(completed, producer_state_manager.last_stable_offset(completed))
                        producer_state_manager.complete_txn(completed)
            if valid_bytes < self.log.size:
                reason = (f"incomplete batch at position {valid_bytes}: {self.log.size - valid_bytes} bytes "
                          f"left, fewer than the batch claims")
        except (StorageError, DecodeError) as e:
            reason = f"invalid batch at position {valid_bytes}: {e}"
        truncated = self.log.size - valid_bytes
        self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, True)
        self.time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry
        return SegmentRecovery(valid_bytes, truncated, reason if truncated else None)

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (the whole batch, if ``offset`` falls inside it).
        Returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self.time.milliseconds()
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_timestamp_and_offset = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry()
        position = self.offset_index.lookup(last.offset).position
        ts, offset = self.log.largest_timestamp_after(position)
        return TimestampOffset(ts, offset) if ts > last.timestamp else last

    # ---------------------------------------------------------------------------------- file life cycle
    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    @property
    def unflushed_bytes(self) -> int:
        return self.log.unflushed_bytes

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive_segment(self) -> None:
        """On roll: record the largest timestamp one last time and trim preallocated index space."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def close(self) -> None:
        if self._max_timestamp_and_offset is not _UNKNOWN and self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, True)
        for index in (self.offset_index, self.time_index):
            if not index._closed:
                index.trim_to_valid_size()
                index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Close the files without trimming or writing anything (a process that dies)."""
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def simulate_power_loss(self) -> int:
        """Lose what was never fsync'd (see FileRecords.simulate_power_loss); returns bytes lost from ``.log``."""
        lost = self.log.simulate_power_loss()
        self.offset_index.simulate_power_loss()
        self.time_index.simulate_power_loss()
        self.txn_index.simulate_power_loss()
        return lost

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        for f in (self.log, self.offset_index, self.time_index, self.txn_index):
            path = f.path
            if old_suffix and path.endswith(old_suffix):
                path = path[:-len(old_suffix)]
            f.rename_to(path + new_suffix)

    def update_parent_dir(self, directory: str) -> None:
        """The partition directory was renamed: the open files moved with it."""
        for f in (self.log, self.offset_index, self.time_index, self.txn_index):
            f.path = os.path.join(str(directory), os.path.basename(f.path))

    def has_suffix(self, suffix: str) -> bool:
        return all(path.endswith(suffix) for path in self.files)

    def delete_if_exists(self) -> None:
        self.log.delete_if_exists()
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()

    def describe(self) -> dict:
        """What a lab shows about a segment."""
        return {"base_offset": self.base_offset, "size": self.size, "next_offset": self.read_next_offset(),
                "files": [os.path.basename(p) for p in self.files],
                "largest_timestamp": self.max_timestamp_so_far,
                "offset_index": [tuple(e) for e in self.offset_index.entry_list()],
                "time_index": [tuple(e) for e in self.time_index.entry_list()],
                "txn_index": [tuple(e) for e in self.txn_index.all_aborted_txns()],
                "flushed_bytes": self.log.flushed_size}

    def __repr__(self) -> str:
        return (f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
                f"largestRecordTimestamp={self._max_timestamp_and_offset.timestamp})")
