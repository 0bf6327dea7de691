"""Idempotent producer state: the last batches of every producer id, sequence checks, and snapshot files.

Theory of operation
-------------------
An idempotent producer (``enable.idempotence=true``, the default since Kafka 3.0) numbers its batches per
partition: ``producer_id`` and ``producer_epoch`` (from InitProducerId) plus a ``base_sequence`` that grows
by the number of records. When a Produce request times out the producer sends the same batch again; the
leader must then neither write it twice nor lose it. So, per producer id, the log keeps the metadata of the
last 5 batches it appended (5 = the largest ``max.in.flight.requests.per.connection`` idempotence allows)
and checks every new batch from a client:

* same epoch, same first and last sequence as a retained batch -> a **duplicate**: nothing is appended and
  the original offsets are returned;
* same epoch: the first sequence must be the last one + 1 (wrapping from 2147483647 to 0), else
  **OUT_OF_ORDER_SEQUENCE_NUMBER** (a gap: an earlier batch was lost);
* a newer epoch must start at sequence 0 (a bumped producer starts over);
* an older epoch is a zombie: **INVALID_PRODUCER_EPOCH**;
* an unknown producer id is accepted at any sequence (its state may have expired, KIP-360).

Followers replay the same state from the batches they copy, without checks.

**Transactions.** A producer's first transactional batch opens a transaction *on this partition*: its offset
is the entry's ``current_txn_first_offset`` and a key of ``ongoing_txns``. A non-transactional batch from that
producer while it is open is INVALID_TXN_STATE. A COMMIT or ABORT marker (a control batch written by
WriteTxnMarkers) with an epoch below the producer's is INVALID_PRODUCER_EPOCH, with a coordinator epoch below
the last one seen TRANSACTION_COORDINATOR_FENCED (a zombie coordinator); otherwise it completes the open
transaction (a :class:`CompletedTxn`, which the log turns into a ``.txnindex`` entry when it aborted) or, with
nothing open, is written with no further effect. A completed transaction stays *unreplicated* until the high
watermark passes its marker. The **first unstable offset** is the earliest first offset among open and
unreplicated transactions; the log's last stable offset (LSO) is that, or the high watermark if lower: one
open transaction holds back ``read_committed`` readers for everything after its first record.

**Snapshots.** Rebuilding this state means reading every batch header of the log, so the state is written to
``<offset, 20 digits>.snapshot`` when a segment rolls and when the log closes; on restart the loader reads the
latest snapshot at or below the log end offset and replays only the batches after it. The file format is
Kafka's (``ProducerSnapshot`` schema version 1)::

    int16  version = 1
    uint32 crc          CRC-32C of everything after this field
    int32  entry count
    per producer: int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset,
                  int32 offset_delta, int64 timestamp, int32 coordinator_epoch, int64 current_txn_first_offset

A snapshot keeps only the *last* batch of each producer (as Kafka's does), so right after a restart only a
retry of the very last batch is recognised as a duplicate.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/{ProducerStateManager,
ProducerStateEntry,ProducerAppendInfo,BatchMetadata,CompletedTxn}.java`` and
``storage/src/main/resources/message/ProducerSnapshot.json``.
"""
from __future__ import annotations

import collections
import logging
import os
import struct
from typing import NamedTuple, Optional

from kafkalab.records import crc32c, decode_batch, parse_end_txn_marker, scan_batches
from kafkalab.records.control import ControlRecordType
from kafkalab.storage import file_records
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.errors import (CorruptSnapshotError, InvalidProducerEpochError, InvalidTxnStateError,
                                     OutOfOrderSequenceError, TransactionCoordinatorFencedError)
from kafkalab.storage.log_append_info import AppendOrigin
from kafkalab.storage.server_log_configs import SERVER_LOG_CONFIGS

__all__ = ["ProducerStateManager", "ProducerStateEntry", "ProducerAppendInfo", "BatchMetadata", "CompletedTxn",
           "read_snapshot", "write_snapshot", "NUM_BATCHES_TO_RETAIN", "SNAPSHOT_VERSION"]

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
INT_MAX = 2147483647
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
_HEAD = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")


def increment_sequence(sequence: int, increment: int) -> int:
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class BatchMetadata(NamedTuple):
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateEntry:
    """What the log remembers about one producer id."""

    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp", "current_txn_first_offset",
                 "batch_metadata")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: Optional[int] = None, batches=()):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata = collections.deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)

    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def copy_without_batches(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
                                  self.current_txn_first_offset)

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int):
        self.maybe_update_producer_epoch(producer_epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, other: "ProducerStateEntry") -> None:
        self.maybe_update_producer_epoch(other.producer_epoch)
        self.batch_metadata.extend(other.batch_metadata)
        self.coordinator_epoch = other.coordinator_epoch
        self.current_txn_first_offset = other.current_txn_first_offset
        self.last_timestamp = other.last_timestamp

    def find_duplicate_batch(self, header) -> Optional[BatchMetadata]:
        """The retained batch with exactly this batch's epoch and sequence range, if any."""
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for meta in self.batch_metadata:
            if meta.first_seq == first and meta.last_seq == last:
                return meta
        return None

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
                f"currentTxnFirstOffset={self.current_txn_first_offset}, coordinatorEpoch={self.coordinator_epoch}, "
                f"lastTimestamp={self.last_timestamp}, batchMetadata={list(self.batch_metadata)})")


class ProducerAppendInfo:
    """The effect of one append on one producer id, validated against its current entry before anything is
    written; :meth:`ProducerStateManager.update` applies it after the append succeeded."""

    def __init__(self, topic_partition, producer_id: int, current_entry: ProducerStateEntry, origin: AppendOrigin):
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        self.updated_entry = current_entry.copy_without_batches()
        self.started_transactions: list = []

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        if producer_epoch < self.updated_entry.producer_epoch:
            message = (f"Epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is "
                       f"{producer_epoch}, which is smaller than the last seen epoch "
                       f"{self.updated_entry.producer_epoch}")
            if self.origin is AppendOrigin.REPLICATION:
                log.warning(message)
            else:
                raise InvalidProducerEpochError(message)

    def _check_sequence(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated_entry, self.current_entry
        if producer_epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {producer_epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)")
            return
        if not updated.is_empty():
            current_last_seq = updated.last_seq
        elif producer_epoch == current.producer_epoch:
            current_last_seq = current.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        if not (current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(current_last_seq, first_seq)):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.topic_partition}: {first_seq} (incoming seq. number), {current_last_seq} (current end "
                f"sequence number)")

    def _check_coordinator_epoch(self, marker, offset: int) -> None:
        current = self.updated_entry.coordinator_epoch
        if current > marker.coordinator_epoch:
            if self.origin is AppendOrigin.REPLICATION:
                log.info("Detected invalid coordinator epoch for producerId %d at offset %d in partition %s: %d is "
                         "older than previously known coordinator epoch %d", self.producer_id, offset,
                         self.topic_partition, marker.coordinator_epoch, current)
            else:
                raise TransactionCoordinatorFencedError(
                    f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in partition "
                    f"{self.topic_partition}: {marker.coordinator_epoch} (zombie), {current} (current)")

    def append(self, header, data=None) -> Optional[CompletedTxn]:
        """Account for one batch (its header; ``data`` is needed only for a control batch's marker)."""
        if header.is_control_batch:
            if header.records_count == 0 or data is None:
                return None
            record = decode_batch(data, verify=False).records[0]
            marker = parse_end_txn_marker(record.key, record.value)
            return self.append_end_txn_marker(marker, header.producer_epoch, header.base_offset, record.timestamp)
        self.append_data_batch(header.producer_epoch, header.base_sequence, header.last_sequence,
                               header.max_timestamp, header.base_offset, header.last_offset, header.is_transactional)
        return None

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int, first_offset: int,
                          last_offset: int, is_transactional: bool) -> None:
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        self.updated_entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        txn_first = self.updated_entry.current_txn_first_offset
        if txn_first is not None and not is_transactional:
            raise InvalidTxnStateError(f"Expected transactional write from producer {self.producer_id} at offset "
                                       f"{first_offset} in partition {self.topic_partition}")
        if txn_first is None and is_transactional:
            self.updated_entry.current_txn_first_offset = first_offset
            self.started_transactions.append(first_offset)

    def append_end_txn_marker(self, marker, producer_epoch: int, offset: int, timestamp: int) -> Optional[CompletedTxn]:
        self._check_producer_epoch(producer_epoch, offset)
        self._check_coordinator_epoch(marker, offset)
        txn_first = self.updated_entry.current_txn_first_offset
        completed = None
        if txn_first is not None:
            aborted = marker.control_type == ControlRecordType.ABORT
            completed = CompletedTxn(self.producer_id, txn_first, offset, aborted)
        self.updated_entry.maybe_update_producer_epoch(producer_epoch)
        self.updated_entry.coordinator_epoch = marker.coordinator_epoch
        self.updated_entry.current_txn_first_offset = None
        self.updated_entry.last_timestamp = timestamp
        return completed


# ------------------------------------------------------------------------------------------ snapshot files

def write_snapshot(path: str, entries) -> None:
    """Write Kafka's ProducerSnapshot v1 (see the module docstring)."""
    body = [struct.pack(">i", len(entries))]
    for e in entries:
        body.append(_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                                e.last_timestamp, e.coordinator_epoch,
                                -1 if e.current_txn_first_offset is None else e.current_txn_first_offset))
    payload = b"".join(body)
    data = struct.pack(">hI", SNAPSHOT_VERSION, crc32c(payload)) + payload
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_snapshot(path: str) -> list:
    """The producer entries of a snapshot file; CorruptSnapshotError if it does not parse or its CRC is wrong."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        version, crc, count = _HEAD.unpack_from(data, 0)
    except struct.error as e:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {e}") from None
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries do not fit {len(data)} bytes")
    computed = crc32c(memoryview(data)[6:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    entries = []
    for i in range(count):
        fields = _ENTRY.unpack_from(data, _HEAD.size + i * _ENTRY.size)
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn = fields
        batches = [BatchMetadata(last_seq, last_offset, delta, ts)] if last_offset >= 0 else []
        entries.append(ProducerStateEntry(pid, epoch, coord, ts, txn if txn >= 0 else None, batches))
    return entries


# ------------------------------------------------------------------------------------------- the manager

class ProducerStateManager:
    """Producer state of one partition, plus its snapshot files in the partition directory."""

    def __init__(self, topic_partition, log_dir: str, *,
                 producer_id_expiration_ms: int = SERVER_LOG_CONFIGS.default("producer.id.expiration.ms"), time=None):
        self.topic_partition = topic_partition
        self.log_dir = str(log_dir)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.time = time
        self.producers: dict = {}
        self.ongoing_txns: dict = {}          # first offset -> producer id
        self.unreplicated_txns: dict = {}     # first offset -> CompletedTxn whose marker is not below the HW yet
        self.last_map_offset = 0              # the state reflects every batch below this offset
        self.last_snap_offset = 0
        self.snapshots = self._list_snapshots()

    # ---------------------------------------------------------------------------------------- queries
    def _list_snapshots(self) -> list:
        found = []
        if os.path.isdir(self.log_dir):
            for name in os.listdir(self.log_dir):
                if name.endswith(names.PRODUCER_SNAPSHOT_FILE_SUFFIX):
                    try:
                        found.append(names.offset_from_file_name(name))
                    except ValueError:
                        continue
        return sorted(found)

    @property
    def map_end_offset(self) -> int:
        return self.last_map_offset

    def is_empty(self) -> bool:
        return not self.producers

    def last_entry(self, producer_id: int) -> Optional[ProducerStateEntry]:
        return self.producers.get(producer_id)

    def active_producers(self) -> dict:
        return dict(self.producers)

    def latest_snapshot_offset(self) -> Optional[int]:
        return self.snapshots[-1] if self.snapshots else None

    def oldest_snapshot_offset(self) -> Optional[int]:
        return self.snapshots[0] if self.snapshots else None

    def first_undecided_offset(self) -> Optional[int]:
        """The first offset of the earliest transaction still open here (no marker yet)."""
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def first_unstable_offset(self) -> Optional[int]:
        """The earliest first offset of an open transaction or of a completed one whose marker is not yet below
        the high watermark."""
        firsts = [min(d) for d in (self.ongoing_txns, self.unreplicated_txns) if d]
        return min(firsts) if firsts else None

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """What the LSO becomes once ``completed`` is done: the first offset of the earliest transaction of
        another producer still open, else the offset after its marker (Kafka's ``lastStableOffset``)."""
        for first_offset in sorted(self.ongoing_txns):
            if self.ongoing_txns[first_offset] != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def ongoing_transactions(self) -> dict:
        """``{first offset: producer id}`` of the transactions open on this partition."""
        return dict(self.ongoing_txns)

    # -------------------------------------------------------------------------------------- updating
    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.topic_partition, producer_id, current, origin)

    def update(self, append_info: ProducerAppendInfo) -> None:
        entry = self.producers.get(append_info.producer_id)
        if entry is not None:
            entry.update(append_info.updated_entry)
        else:
            self.producers[append_info.producer_id] = append_info.updated_entry
        for first_offset in append_info.started_transactions:
            self.ongoing_txns[first_offset] = append_info.producer_id

    def complete_txn(self, completed: CompletedTxn) -> None:
        """The marker of ``completed`` was written: it stays unstable until the high watermark passes it."""
        if self.ongoing_txns.pop(completed.first_offset, None) is None:   # Kafka throws: a bug, never input
            log.error("Attempted to complete transaction %s on partition %s which was not started", completed,
                      self.topic_partition)
            return
        self.unreplicated_txns[completed.first_offset] = completed

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        self._remove_unreplicated_transactions(high_watermark)

    def _remove_unreplicated_transactions(self, offset: int) -> None:
        for first_offset in sorted(self.unreplicated_txns):
            if self.unreplicated_txns[first_offset].last_offset >= offset:
                break
            del self.unreplicated_txns[first_offset]

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def replay_batch(self, header, data=None) -> Optional[CompletedTxn]:
        """Apply a stored batch without validation (segment recovery); returns the transaction its marker
        completes, which the caller indexes and then passes to :meth:`complete_txn`."""
        completed = None
        if header.has_producer_id:
            info = self.prepare_update(header.producer_id, AppendOrigin.REPLICATION)
            completed = info.append(header, data)
            self.update(info)
        self.update_map_end_offset(header.last_offset + 1)
        return completed

    def load_batch(self, header, data=None) -> None:
        """Replay a stored batch and complete its transaction (rebuilding state from already indexed segments)."""
        completed = self.replay_batch(header, data)
        if completed is not None:
            self.complete_txn(completed)

    def load_producers_from_records(self, data) -> None:
        for span in scan_batches(data):
            control = span.header.is_control_batch
            self.load_batch(span.header, memoryview(data)[span.start:span.end] if control else None)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_transactions(log_start_offset)
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start_offset

    def remove_expired_producers(self, now_ms: int) -> list:
        """Forget producers idle for ``producer.id.expiration.ms`` (and not inside a transaction)."""
        expired = [pid for pid, e in self.producers.items() if self._expired(e, now_ms)]
        for pid in expired:
            del self.producers[pid]
        return expired

    def _expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        idle = now_ms - entry.last_timestamp
        return entry.current_txn_first_offset is None and idle >= self.producer_id_expiration_ms

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for snap in list(self.snapshots):
            self._delete_snapshot(snap)
        self.last_snap_offset = offset
        self.last_map_offset = offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end] and, if the state is not already at the log end, reload
        from the latest remaining snapshot (the caller replays the batches after it)."""
        for snap in list(self.snapshots):
            if snap > log_end_offset or snap <= log_start_offset:
                self._delete_snapshot(snap)
        if log_end_offset != self.last_map_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self.snapshots:
            offset = self.snapshots[-1]
            path = names.producer_snapshot_file(self.log_dir, offset)
            try:
                loaded = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as e:
                log.warning("Failed to load producer snapshot from '%s': %s", path, e)
                self._delete_snapshot(offset)
                continue
            for entry in loaded:
                if self._expired(entry, now_ms):
                    continue
                self.producers[entry.producer_id] = entry
                if entry.current_txn_first_offset is not None:
                    self.ongoing_txns[entry.current_txn_first_offset] = entry.producer_id
            self.last_snap_offset = self.last_map_offset = offset
            return
        self.last_snap_offset = self.last_map_offset = log_start_offset

    # --------------------------------------------------------------------------------------- snapshots
    def take_snapshot(self, sync: bool = True) -> Optional[str]:
        """Write ``<map end offset>.snapshot`` unless one was already written at that offset."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = names.producer_snapshot_file(self.log_dir, self.last_map_offset)
        write_snapshot(path, list(self.producers.values()))
        if sync:
            flush_file(path)
        if self.last_map_offset not in self.snapshots:
            self.snapshots.append(self.last_map_offset)
            self.snapshots.sort()
        self.last_snap_offset = self.last_map_offset
        return path

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.remove(names.producer_snapshot_file(self.log_dir, offset))
        except FileNotFoundError:
            pass
        if offset in self.snapshots:
            self.snapshots.remove(offset)

    def delete_snapshot(self, offset: int) -> None:
        """Delete the snapshot taken at ``offset`` (its segment is being deleted)."""
        self._delete_snapshot(offset)

    def remove_stray_snapshots(self, segment_base_offsets) -> None:
        """Keep snapshots at segment base offsets, plus the newest other one if it is past the last segment's
        base (it may be the snapshot taken at the log end on close)."""
        bases = set(segment_base_offsets)
        self.snapshots = self._list_snapshots()
        strays = [s for s in self.snapshots if s not in bases]
        keep = strays[-1] if strays and bases and strays[-1] > max(bases) else None
        for stray in strays:
            if stray != keep:
                self._delete_snapshot(stray)

    def update_parent_dir(self, log_dir: str) -> None:
        self.log_dir = str(log_dir)

    def __repr__(self) -> str:
        return (f"ProducerStateManager({self.topic_partition}, producers={len(self.producers)}, "
                f"mapEnd={self.last_map_offset})")


def flush_file(path: str) -> None:
    if not file_records.FSYNC:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
