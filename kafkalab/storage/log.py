"""UnifiedLog: one partition replica's log -- append, read, high watermark, truncation, retention.

Theory of operation
-------------------
Everything a broker does with a partition's data goes through here. The log is a sequence of segments (see
:mod:`.local_log`) plus four offsets that every Fetch response and every lab talks about::

    log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset
    first readable      read_committed        read_uncommitted    next offset to assign
                        consumers stop here   consumers stop here

**Append as leader** (a Produce request, carried out by :class:`~.appender.LogAppender`): header checks, then the validator stamps offsets and the leader
epoch into the batch *in place* (:mod:`.validator`), the leader epoch cache learns a new epoch, the active
segment rolls if needed, the idempotent-producer state turns a retried batch into a harmless duplicate
(:mod:`.producer_state`), and the bytes are appended verbatim. No fsync: with the default ``flush.messages``
the data sits in the page cache until a roll, a scheduled flush or a clean shutdown. **Append as follower**
keeps the leader's offsets and epochs and only checks that they continue the log.

**Read** returns whole stored batches from the one holding the start offset, bounded by the isolation
level's offset (LEO, high watermark, last stable offset) and ``max_bytes`` -- as file slices for
``sendfile``, never decoded. A read_committed read also lists the aborted transactions overlapping what it
returns, from the segments' ``.txnindex`` files (:mod:`.transaction_index`).

The **last stable offset** (LSO) is the first offset of the earliest transaction that is still open, or
whose COMMIT/ABORT marker the high watermark has not passed yet (the producer state tracks both); the high
watermark when there is none, or when it is lower.

The **high watermark** is set by the broker (``update_high_watermark``, clamped to [log start, LEO]); on a
single broker it simply follows the LEO. **Truncation** (``truncate_to``) is how a follower drops a suffix that
diverged from the leader, guided by :meth:`end_offset_for_epoch` (KIP-101/KIP-279). **Retention**
(``delete_old_segments``) deletes whole segments below the high watermark that are too old
(``retention.ms``), beyond ``retention.bytes``, or below the log start offset (DeleteRecords).

**Crash model.** :meth:`simulate_crash` stops the log the way a power cut would: files are closed without
flushing or trimming, and every byte that was never fsync'd is lost. Reopening it runs recovery.

Mirrors: ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Kafka 3.9; tiered storage left out).
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Optional

from kafkalab.common import SystemTime
from kafkalab.records import decode_batch
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.checkpoints import LeaderEpochCheckpointFile, PartitionMetadataFile, kafka_uuid_string
from kafkalab.storage.errors import (InconsistentTopicIdError, KafkaStorageError,
                                     OffsetOutOfRangeError)
from kafkalab.storage.fetch_data_info import FetchDataInfo, FetchIsolation
from kafkalab.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from kafkalab.storage.local_log import LocalLog
from kafkalab.storage.log_append_info import AppendOrigin, LogAppendInfo
from kafkalab.storage.log_loader import LogLoader, rebuild_producer_state
from kafkalab.storage.log_segments import LogSegments
from kafkalab.storage.producer_state import ProducerStateManager, flush_file
from kafkalab.storage.appender import LogAppender
from kafkalab.storage.retention import LogRetention
from kafkalab.storage.segment import TimestampAndOffset
from kafkalab.storage.server_log_configs import SERVER_LOG_CONFIGS

__all__ = ["UnifiedLog", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "EARLIEST_LOCAL_TIMESTAMP",
           "LATEST_TIERED_TIMESTAMP"]

log = logging.getLogger(__name__)

#: ListOffsets special timestamps (``ListOffsetsRequest``).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


class _storage_errors:
    """Kafka's ``maybeHandleIOException``: an I/O failure is reported to the log dir failure channel (the
    directory goes offline) and becomes KAFKA_STORAGE_ERROR for the client. ``message`` is Kafka's, with
    ``{tp}`` and ``{dir}`` filled in only when something failed. (A class rather than a generator-based
    context manager: every read and append of every partition passes through it.)"""

    __slots__ = ("message", "log")

    def __init__(self, message: str, log_):
        self.message, self.log = message, log_

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None or not issubclass(exc_type, OSError):
            return False
        log_ = self.log
        text = self.message.format(tp=log_.topic_partition, dir=log_.parent_dir)
        channel = log_.log_dir_failure_channel
        if channel is not None:
            channel.maybe_add_offline_log_dir(log_.parent_dir, text, exc)
        raise KafkaStorageError(f"{text}: {exc}") from exc


class UnifiedLog:
    """The log of one partition replica in ``<log dir>/<topic>-<partition>``.

    ``had_clean_shutdown=False`` runs recovery from ``recovery_point``; ``log_start_offset`` and
    ``recovery_point`` come from the log dir's checkpoint files (the LogManager reads them). An I/O error is
    reported to ``log_dir_failure_channel`` (the LogManager's) when there is one.
    """

    def __init__(self, directory, config, *, log_start_offset: int = 0, recovery_point: int = 0, scheduler=None,
                 time=None, had_clean_shutdown: bool = True, topic_id=None,
                 producer_id_expiration_ms: int = SERVER_LOG_CONFIGS.default("producer.id.expiration.ms"),
                 log_dir_failure_channel=None):
        self.time = time or SystemTime()
        self.log_dir_failure_channel = log_dir_failure_channel
        self.scheduler = scheduler
        self._lock = threading.RLock()
        directory = str(directory)
        self.topic_partition = names.parse_topic_partition_name(directory)
        os.makedirs(directory, exist_ok=True)
        checkpoint = LeaderEpochCheckpointFile(os.path.join(directory, names.LEADER_EPOCH_CHECKPOINT_FILENAME))
        self.leader_epoch_cache = LeaderEpochFileCache(self.topic_partition, checkpoint, scheduler)
        self.producer_state_manager = ProducerStateManager(self.topic_partition, directory,
                                                           producer_id_expiration_ms=producer_id_expiration_ms,
                                                           time=self.time)
        segments = LogSegments()
        loader = LogLoader(directory, self.topic_partition, config, scheduler, self.time,
                           had_clean_shutdown=had_clean_shutdown, segments=segments,
                           log_start_offset_checkpoint=log_start_offset, recovery_point_checkpoint=recovery_point,
                           leader_epoch_cache=self.leader_epoch_cache,
                           producer_state_manager=self.producer_state_manager)
        loaded = loader.load()
        self.recovery_report = loader.report
        self._local = LocalLog(directory, config, segments, loaded.recovery_point, loaded.next_offset_metadata,
                               scheduler, self.time, self.topic_partition)
        self._log_start_offset = loaded.log_start_offset
        self._high_watermark = loaded.log_start_offset
        #: deletes old segments (retention.ms, retention.bytes, log start offset); see :mod:`.retention`
        self.retention = LogRetention(self, self._local, self._lock)
        #: validates, assigns offsets, deduplicates producer batches and appends; see :mod:`.appender`
        self.appender = LogAppender(self, self._local, self._lock)
        self._topic_id = None
        self._init_topic_id(topic_id)

    # ------------------------------------------------------------------------------------- identity
    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        return self.topic_partition.partition

    @property
    def dir(self) -> str:
        return self._local.dir

    @property
    def name(self) -> str:
        return os.path.basename(self._local.dir)

    @property
    def parent_dir(self) -> str:
        return self._local.parent_dir

    @property
    def config(self):
        return self._local.config

    def update_config(self, config):
        """Use new topic configs (AlterConfigs); returns the old ones. Existing segments keep their files."""
        old = self._local.config
        self._local.update_config(config)
        return old

    @property
    def topic_id(self):
        return self._topic_id

    def _partition_metadata_file(self) -> PartitionMetadataFile:
        return PartitionMetadataFile(os.path.join(self.dir, names.PARTITION_METADATA_FILENAME))

    def _init_topic_id(self, topic_id) -> None:
        pm = self._partition_metadata_file()
        if pm.exists():
            stored = pm.read()
            if topic_id is not None and kafka_uuid_string(topic_id) != kafka_uuid_string(stored):
                raise InconsistentTopicIdError(f"Tried to assign topic ID {kafka_uuid_string(topic_id)} to log for "
                                               f"topic partition {self.topic_partition},but log already contained "
                                               f"topic ID {kafka_uuid_string(stored)}")
            self._topic_id = stored
        elif topic_id is not None:
            self.assign_topic_id(topic_id)

    def assign_topic_id(self, topic_id) -> None:
        """Record the topic id (KIP-516) in ``partition.metadata``; a different existing id is an error."""
        if self._topic_id is not None:
            if kafka_uuid_string(self._topic_id) != kafka_uuid_string(topic_id):
                raise InconsistentTopicIdError(f"Tried to assign topic ID {kafka_uuid_string(topic_id)} to log for "
                                               f"topic partition {self.topic_partition},but log already contained "
                                               f"topic ID {kafka_uuid_string(self._topic_id)}")
            return
        self._partition_metadata_file().write(topic_id)
        self._topic_id = topic_id

    # -------------------------------------------------------------------------------------- offsets
    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def log_end_offset_metadata(self):
        return self._local.next_offset_metadata

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to [log_start_offset, log_end_offset]; returns the value set."""
        with self._lock:
            self._set_high_watermark(min(max(offset, self._log_start_offset), self.log_end_offset))
            return self._high_watermark

    def _set_high_watermark(self, offset: int) -> None:
        self._high_watermark = offset
        self.producer_state_manager.on_high_watermark_updated(offset)

    def offset_metadata(self, offset: int):
        """``offset`` with the segment and byte position of the batch holding it (Kafka's
        ``convertToOffsetMetadataOrThrow``); offset-only when the offset is outside the log. A delayed fetch
        counts the bytes it waits for from such positions."""
        from kafkalab.storage.fetch_data_info import LogOffsetMetadata

        with self._lock:
            if offset == self.log_end_offset:
                return self.log_end_offset_metadata
            segment = self._local.segments.floor_segment(offset)
            if offset < self._log_start_offset or offset > self.log_end_offset or segment is None:
                return LogOffsetMetadata(offset)
            batch = segment.translate_offset(offset)
            return LogOffsetMetadata(offset) if batch is None else LogOffsetMetadata(offset, segment.base_offset,
                                                                                  batch.position)

    @property
    def high_watermark_metadata(self):
        """The high watermark with its segment position (cached while the high watermark stays put)."""
        cached = getattr(self, "_hw_metadata", None)
        if cached is None or cached.message_offset != self._high_watermark:
            cached = self._hw_metadata = self.offset_metadata(self._high_watermark)
        return cached

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
        """Apply retention (:class:`~.retention.LogRetention`); returns how many segments were deleted."""
        with _storage_errors("Error while deleting segments for {tp} in dir {dir}", self):
            return self.retention.delete_old_segments()

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the high watermark forward only (the leader's rule); True if it moved."""
        with self._lock:
            if offset > self._high_watermark:
                self.update_high_watermark(offset)
                return True
            return False

    @property
    def first_unstable_offset(self) -> Optional[int]:
        first = self.producer_state_manager.first_unstable_offset()
        return None if first is None else max(first, self._log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the earliest transaction still open or not yet replicated
        past its marker, if that is lower (Kafka's ``lastStableOffset``)."""
        first = self.first_unstable_offset
        return self._high_watermark if first is None else min(first, self._high_watermark)

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def size_in_bytes(self) -> int:
        return self._local.segments.size_in_bytes()

    size = size_in_bytes

    @property
    def segments(self) -> list:
        return self._local.segments.values()

    @property
    def active_segment(self):
        return self._local.segments.active_segment

    @property
    def number_of_segments(self) -> int:
        return len(self._local.segments)

    def log_segments(self, start: Optional[int] = None, end: Optional[int] = None) -> list:
        return self._local.segments.values(start, end)

    @property
    def latest_epoch(self) -> Optional[int]:
        return self.leader_epoch_cache.latest_epoch

    @property
    def last_flush_time(self) -> int:
        return self._local.last_flushed_time

    @property
    def unflushed_messages(self) -> int:
        return self._local.unflushed_messages

    @property
    def unflushed_bytes(self) -> int:
        return sum(s.unflushed_bytes for s in self._local.segments)

    def __repr__(self) -> str:
        return (f"UnifiedLog({self.topic_partition}, logStartOffset={self.log_start_offset}, "
                f"highWatermark={self.high_watermark}, logEndOffset={self.log_end_offset})")

    # ---------------------------------------------------------------------------------------- append
    def append_as_leader(self, records, *, leader_epoch: int, origin="client") -> LogAppendInfo:
        """Validate ``records`` (one producer batch), give them offsets from the log end offset and the
        leader epoch, and append them. Raises a :class:`~kafkalab.storage.errors.StorageError`."""
        with _storage_errors("Error while appending records to {tp} in dir {dir}", self):
            return self.appender.append(records, AppendOrigin.of(origin), assign_offsets=True, leader_epoch=leader_epoch,
                                ignore_record_size=False)

    def append_as_follower(self, records) -> LogAppendInfo:
        """Append batches fetched from the leader as they are (offsets and leader epochs included)."""
        with _storage_errors("Error while appending records to {tp} in dir {dir}", self):
            return self.appender.append(records, AppendOrigin.REPLICATION, assign_offsets=False, leader_epoch=-1,
                                ignore_record_size=True)

    # ------------------------------------------------------------------------------------------ read
    def read(self, start_offset: int, max_bytes: int, *, isolation="high_watermark",
             min_one_message: bool = True) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, never past the isolation bound (LEO,
        high watermark or last stable offset), at most ``max_bytes`` unless ``min_one_message`` lets the first
        batch exceed it. OFFSET_OUT_OF_RANGE below the log start offset or past the log end offset."""
        isolation = FetchIsolation.of(isolation)
        with self._lock, _storage_errors("Exception while reading from {tp} in dir {dir}", self):
            if start_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(f"Received request for offset {start_offset} for partition "
                                            f"{self.topic_partition}, but we only have log segments starting from "
                                            f"offset: {self._log_start_offset}.")
            if isolation is FetchIsolation.HIGH_WATERMARK:
                bound = self._high_watermark
            elif isolation is FetchIsolation.LOG_END:
                bound = self.log_end_offset
            else:
                bound = self.last_stable_offset
            return self._local.read(start_offset, max_bytes, min_one_message=min_one_message, bound_offset=bound,
                                    include_aborted_txns=isolation is FetchIsolation.TXN_COMMITTED)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list:
        """The aborted transactions (:class:`~.transaction_index.AbortedTxn`) overlapping
        ``[start_offset, upper_bound_offset)`` (Kafka's ``UnifiedLog.collectAbortedTransactions``)."""
        with self._lock:
            return self._local.collect_aborted_transactions(start_offset, upper_bound_offset)

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> Optional[TimestampAndOffset]:
        """ListOffsets: ``(timestamp, offset, leader_epoch)`` of the first record with a timestamp >= the target,
        or for the special values -2 EARLIEST, -1 LATEST (the LEO; the broker caps it at the HW/LSO for
        consumers), -3 MAX_TIMESTAMP, -4 EARLIEST_LOCAL (= EARLIEST without tiered storage), -5 LATEST_TIERED
        (offset -1 without tiered storage). None when no record qualifies."""
        cache = self.leader_epoch_cache
        with self._lock:
            if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                earliest = cache.earliest_entry
                known = earliest is not None and earliest.start_offset <= self._log_start_offset
                epoch = earliest.epoch if known else None
                return TimestampAndOffset(-1, self._log_start_offset, epoch)
            if target_timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(-1, self.log_end_offset, cache.latest_epoch)
            if target_timestamp == LATEST_TIERED_TIMESTAMP:
                return TimestampAndOffset(-1, -1, -1)
            if target_timestamp == MAX_TIMESTAMP:
                return self._max_timestamp_offset()
            for segment in self.segments:
                if segment.largest_timestamp() >= target_timestamp:
                    return segment.find_offset_by_timestamp(target_timestamp, self._log_start_offset)
            return None

    def _max_timestamp_offset(self) -> Optional[TimestampAndOffset]:
        best = max(self.segments, key=lambda s: s.max_timestamp_so_far)
        ts, _ = best.read_max_timestamp_and_offset_so_far()
        if ts < 0:
            return None
        position = best.offset_index.lookup(best.shallow_offset_of_max_timestamp_so_far).position
        for batch in best.log.batches(position):
            if batch.header.max_timestamp == ts:
                epoch = batch.header.partition_leader_epoch
                if batch.header.timestamp_type == 1:
                    return TimestampAndOffset(ts, batch.base_offset, epoch if epoch >= 0 else None)
                for record in decode_batch(best.log.read(batch.position, batch.size), verify=False).records:
                    if record.timestamp == ts:
                        return TimestampAndOffset(ts, record.offset, epoch if epoch >= 0 else None)
        return None

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple:
        """OffsetForLeaderEpoch: ``(epoch, end_offset)`` -- the largest epoch <= ``leader_epoch`` this replica
        knows and where it ended (the LEO for the latest epoch); ``(-1, -1)`` (UNDEFINED_EPOCH,
        UNDEFINED_EPOCH_OFFSET, what the response carries) when unknown. KIP-101, KIP-279."""
        with self._lock:
            epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) if offset == UNDEFINED_EPOCH_OFFSET else (epoch, offset)

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader records the start of its epoch at its LEO (Partition.makeLeader does this)."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset)

    # ---------------------------------------------------------------------------- roll, flush, truncate
    def roll(self, expected_next_offset: Optional[int] = None):
        """Start a new active segment; snapshot producer state at its base offset and flush the old segment
        in the background (Kafka does not make the appending thread wait for fsync)."""
        with self._lock, _storage_errors("Error while rolling log segment for {tp} in dir {dir}", self):
            new_segment = self._local.roll(expected_next_offset)
            self._hw_metadata = None
            psm = self.producer_state_manager
            psm.update_map_end_offset(new_segment.base_offset)
            snapshot = psm.take_snapshot(sync=False)
            if self.scheduler is not None:
                self.scheduler.schedule("flush-log", lambda: self._flush_after_roll(snapshot, new_segment.base_offset))
            return new_segment

    def _flush_after_roll(self, snapshot: Optional[str], offset: int) -> None:
        if self._local.closed:
            return
        if snapshot is not None and os.path.exists(snapshot):
            flush_file(snapshot)
        self._flush(offset, including_offset=False)

    def flush(self, offset: Optional[int] = None, *, force_flush_active_segment: bool = False) -> None:
        """fsync everything below ``offset`` (default: the LEO) and move the recovery point there."""
        if offset is None:
            self._flush(self.log_end_offset, including_offset=force_flush_active_segment)
        else:
            self._flush(offset, including_offset=False)

    def _flush(self, offset: int, *, including_offset: bool) -> None:
        flush_offset = offset + 1 if including_offset else offset
        with self._lock, _storage_errors("Error while flushing log for {tp} in dir {dir} with offset "
                                         f"{flush_offset} (exclusive)", self):
            if flush_offset > self._local.recovery_point:
                self._local.flush(flush_offset)
                self._local.mark_flushed(offset)

    def truncate_to(self, target_offset: int) -> bool:
        """Drop every batch holding an offset >= ``target_offset`` (a follower removing a diverged suffix).
        Returns True if anything was removed."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic_partition} to a negative offset "
                             f"({target_offset}).")
        with self._lock, _storage_errors(f"Error while truncating log to offset {target_offset} for {{tp}} in dir "
                                         "{dir}", self):
            if target_offset >= self.log_end_offset:
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return False
            self._local.check_open()
            if self._local.segments.first_segment_base_offset() > target_offset:
                self.truncate_fully_and_start_at(target_offset)
                return True
            deleted = self._local.truncate_to(target_offset)
            for segment in deleted:
                self.producer_state_manager.delete_snapshot(segment.base_offset)
            self.leader_epoch_cache.truncate_from_end(target_offset)
            self._log_start_offset = min(target_offset, self._log_start_offset)
            rebuild_producer_state(self.producer_state_manager, self._local.segments, self._log_start_offset,
                                   self.log_end_offset, self.time, reload_from_clean_shutdown=False)
            self._set_high_watermark(min(self._high_watermark, self.log_end_offset))
            self._hw_metadata = None
            return True

    def truncate_fully_and_start_at(self, new_offset: int, log_start_offset: Optional[int] = None) -> None:
        """Delete everything and continue at ``new_offset`` (a follower far behind the leader's log start)."""
        with self._lock:
            deleted = self._local.truncate_fully_and_start_at(new_offset)
            for segment in deleted:
                self.producer_state_manager.delete_snapshot(segment.base_offset)
            self.leader_epoch_cache.clear_and_flush()
            self.producer_state_manager.truncate_fully_and_start_at(new_offset)
            self._log_start_offset = new_offset if log_start_offset is None else log_start_offset
            rebuild_producer_state(self.producer_state_manager, self._local.segments, self._log_start_offset,
                                   new_offset, self.time, reload_from_clean_shutdown=False)
            self._set_high_watermark(self.log_end_offset)
            self._hw_metadata = None

    # ----------------------------------------------------------------------------------- life cycle
    def remove_expired_producers(self, now_ms: int) -> list:
        with self._lock:
            return self.producer_state_manager.remove_expired_producers(now_ms)

    def take_producer_snapshot(self) -> Optional[str]:
        with self._lock:
            return self.producer_state_manager.take_snapshot()

    def close(self) -> None:
        """Clean close: snapshot producer state at the LEO, trim the indexes, close the files."""
        with self._lock:
            if self._local.closed:
                return
            self.producer_state_manager.take_snapshot()
            self._local.close()

    def close_handlers(self) -> None:
        """Close the files as they are, without a snapshot or flush (Kafka's ``closeHandlers``): the log
        directory failed, and writing anything more there is pointless."""
        with self._lock:
            for segment in self.segments:
                segment.close_handlers()
            self._local.closed = True

    @property
    def closed(self) -> bool:
        return self._local.closed

    def rename_dir(self, name: str) -> None:
        with self._lock:
            if self._local.rename_dir(name):
                self.producer_state_manager.update_parent_dir(self.dir)
                self.leader_epoch_cache.checkpoint = LeaderEpochCheckpointFile(
                    os.path.join(self.dir, names.LEADER_EPOCH_CHECKPOINT_FILENAME))

    def delete(self, *, delay: bool = False) -> None:
        """Delete every file of this log and its directory: now, or (``delay=True``) the way Kafka deletes a
        partition -- rename the directory ``<topic>-<partition>.<uuid>-delete`` at once and remove it after
        ``file.delete.delay.ms`` on the scheduler. (:meth:`LogManager.delete_log` does the delayed form itself.)"""
        with self._lock:
            if delay:
                self.rename_dir(names.log_delete_dir_name(self.topic_partition))
                if self.scheduler is not None:
                    self.scheduler.schedule("kafka-delete-logs", self.delete, self.config.file_delete_delay_ms)
                    return
            if self._local.closed and not self._local.segments:
                return
            self.leader_epoch_cache.clear()
            for segment in self._local.delete_all_segments():
                self.producer_state_manager.delete_snapshot(segment.base_offset)
            self._local.delete_empty_dir()

    def simulate_crash(self, lose_unflushed: bool = True) -> dict:
        """Stop the log as a power cut would: no snapshot, no index trimming, files closed as they are; with
        ``lose_unflushed`` every byte never fsync'd is lost (and files never made durable vanish). Returns
        ``{segment base offset: bytes lost}``. Reopen the directory with ``had_clean_shutdown=False``."""
        with self._lock:
            lost = {}
            for segment in self.segments:
                if lose_unflushed:
                    lost[segment.base_offset] = segment.simulate_power_loss()
                else:
                    segment.close_handlers()
            self._local.closed = True
            return lost
