"""Appending to a log: validation, offsets, leader epochs, the producer-state check and the segment roll.

Theory of operation
-------------------
An append is the one path by which bytes enter a partition, and it runs in a fixed order under the log's lock:

1. **Shallow validation** of the batches as they arrived (:func:`~.validator.analyze_and_validate_records`):
   CRCs, sizes, magic; a follower's batches must also carry increasing offsets. Trailing garbage is cut off.
2. **Offsets** (leader only): :func:`~.validator.validate_messages_and_assign_offsets` stamps the base offset
   (the log end offset), the leader epoch and, for ``LogAppendTime``, the time into the batch *in place*. If
   that changed a batch's size (recompression), ``max.message.bytes`` is checked again. A follower keeps the
   leader's offsets but must not go backwards (UnexpectedAppendOffset).
3. **Leader epochs.** Every batch with an epoch teaches the leader epoch cache where that epoch starts.
4. **Roll** the active segment if the batch would not fit, the segment is old enough (``segment.ms``) or an
   index is full.
5. **Producer state.** A client batch whose producer id, epoch and sequence match one of the last five batches
   of that producer is a retry: the append is answered with the original offsets (``duplicate``) and nothing
   is written. Otherwise each producer's state is prepared, and transaction markers complete transactions.
6. **Write** the bytes verbatim, then commit the prepared producer state; each transaction a marker completed
   gets its ``.txnindex`` entry if it aborted (with the last stable offset it leaves behind) and waits for the
   high watermark as *unreplicated*; then the map end offset moves. A flush happens only when
   ``flush.messages`` says so.

**Who does what.** :class:`LogAppender` is owned by one :class:`~kafkalab.storage.log.UnifiedLog` and sees it
through :class:`AppendingLog` (its public offsets, config, clock, caches, ``roll`` and ``flush``), plus the two
things a log keeps to itself and hands over explicitly: its :class:`~kafkalab.storage.local_log.LocalLog`
(which writes the bytes) and its lock. ``UnifiedLog.append_as_leader`` / ``append_as_follower`` forward here.

Mirrors: ``UnifiedLog.append``, ``analyzeAndValidateProducerState`` and ``maybeRoll`` in
``core/src/main/scala/kafka/log/UnifiedLog.scala``.
"""
from __future__ import annotations

import logging
from typing import Optional, Protocol

from kafkalab.records import scan_batches
from kafkalab.storage.errors import (InvalidRecordError, RecordBatchTooLargeError, RecordTooLargeError,
                                     UnexpectedAppendOffsetError)
from kafkalab.storage.log_append_info import AppendOrigin, LogAppendInfo
from kafkalab.storage.segment import RollParams
from kafkalab.storage.validator import (analyze_and_validate_records, validate_messages_and_assign_offsets,
                                        writable_buffer)

__all__ = ["LogAppender", "AppendingLog"]

log = logging.getLogger("kafkalab.storage.log")


class AppendingLog(Protocol):
    """What an append reads and calls on its log (all public on ``UnifiedLog``)."""

    topic_partition: object
    config: object                 # LogConfig: sizes, ``segment_ms``, ``flush_interval``, timestamp type
    time: object                   # Time: ``milliseconds()``
    leader_epoch_cache: object
    producer_state_manager: object

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def active_segment(self): ...

    def roll(self, expected_next_offset: Optional[int] = None): ...

    def flush(self, offset: Optional[int] = None, *, force_flush_active_segment: bool = False) -> None: ...


class LogAppender:
    """Appends to one log. ``local_log`` is the log's :class:`LocalLog`; ``lock`` the log's lock."""

    def __init__(self, log_: AppendingLog, local_log, lock):
        self._log = log_
        self._local = local_log
        self._lock = lock

    def append(self, records, origin: AppendOrigin, *, assign_offsets: bool, leader_epoch: int,
               ignore_record_size: bool) -> LogAppendInfo:
        """Validate ``records`` and append them: with ``assign_offsets`` (as leader) offsets start at the log
        end offset and batches get ``leader_epoch``; without (as follower) they must continue the log."""
        lg = self._log
        buf = writable_buffer(records) if assign_offsets else records
        with self._lock:
            info = analyze_and_validate_records(buf, topic_partition=lg.topic_partition, config=lg.config,
                                                origin=origin, ignore_record_size=ignore_record_size,
                                                require_offsets_monotonic=not assign_offsets,
                                                log_start_offset=lg.log_start_offset)
            if assign_offsets and info.valid_bytes <= 0 and origin is AppendOrigin.CLIENT:
                raise InvalidRecordError("Produce requests must have at least one record batch per partition")
            if info.valid_bytes <= 0:
                return info
            if info.valid_bytes < len(buf):
                buf = memoryview(buf)[:info.valid_bytes]
            self._local.check_open()
            if assign_offsets:
                first = lg.log_end_offset
                result = validate_messages_and_assign_offsets(
                    buf, first_offset=first, topic_partition=lg.topic_partition, config=lg.config,
                    now=lg.time.milliseconds(), leader_epoch=leader_epoch, origin=origin,
                    source_compression=info.source_compression)
                buf = result.validated_records
                info.first_offset = first
                info.last_offset = result.next_offset - 1
                info.max_timestamp = result.max_timestamp
                info.offset_of_max_timestamp = result.shallow_offset_of_max_timestamp
                info.record_validation_stats = result.record_validation_stats
                info.last_offset_of_first_batch = info.last_offset
                if lg.config.log_append_time:
                    info.log_append_time = result.log_append_time
                if result.message_size_maybe_changed and not ignore_record_size:
                    for span in scan_batches(buf):
                        if span.end - span.start > lg.config.max_message_size:
                            raise RecordTooLargeError(
                                f"Message batch size is {span.end - span.start} bytes in append to partition "
                                f"{lg.topic_partition} which exceeds the maximum configured size of "
                                f"{lg.config.max_message_size}.")
            elif info.first_or_last_offset_of_first_batch < lg.log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {lg.topic_partition}. First offset "
                    f"{info.first_or_last_offset_of_first_batch} is less than the next offset {lg.log_end_offset}. "
                    f"Log start offset = {lg.log_start_offset}", info.first_offset, info.last_offset)
            scan = scan_batches(buf)
            for span in scan:
                if span.header.partition_leader_epoch >= 0:
                    lg.leader_epoch_cache.assign(span.header.partition_leader_epoch, span.header.base_offset)
            info.last_leader_epoch = scan.batches[-1].header.partition_leader_epoch
            info.target_compression = scan.batches[0].header.attributes & 0x07
            if len(buf) > lg.config.segment_size:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {len(buf)} bytes in append to partition {lg.topic_partition}, which "
                    f"exceeds the maximum configured segment size of {lg.config.segment_size}.")
            self._maybe_roll(len(buf), info)
            updated, completed, duplicate = self._analyze_and_validate_producer_state(buf, scan, origin)
            info.log_start_offset = lg.log_start_offset
            if duplicate is not None:
                info.first_offset = duplicate.first_offset
                info.last_offset = duplicate.last_offset
                info.log_append_time = duplicate.timestamp      # as Kafka does, whatever the timestamp type
                info.duplicate = True
                return info
            self._local.append(info.last_offset, info.max_timestamp, info.offset_of_max_timestamp, buf)
            psm = lg.producer_state_manager
            for append_info in updated.values():
                psm.update(append_info)
            segment = self._local.segments.active_segment       # the one that just took the marker(s)
            for txn in completed:
                segment.update_txn_index(txn, psm.last_stable_offset(txn))
                psm.complete_txn(txn)
            psm.update_map_end_offset(info.last_offset + 1)
            if self._local.unflushed_messages >= lg.config.flush_interval:
                lg.flush()
            return info

    def _analyze_and_validate_producer_state(self, buf, scan, origin: AppendOrigin):
        psm = self._log.producer_state_manager
        updated: dict = {}
        completed = []
        for span in scan:
            h = span.header
            if not h.has_producer_id:
                continue
            if origin is AppendOrigin.CLIENT:
                entry = psm.last_entry(h.producer_id)
                duplicate = entry.find_duplicate_batch(h) if entry is not None else None
                if duplicate is not None:
                    return updated, completed, duplicate
            append_info = updated.get(h.producer_id)
            if append_info is None:
                append_info = updated[h.producer_id] = psm.prepare_update(h.producer_id, origin)
            data = memoryview(buf)[span.start:span.end] if h.is_control_batch else None
            txn = append_info.append(h, data)
            if txn is not None:
                completed.append(txn)
        return updated, completed, None

    def _maybe_roll(self, messages_size: int, info: LogAppendInfo):
        lg = self._log
        segment = lg.active_segment
        params = RollParams(lg.config.segment_ms, lg.config.segment_size, info.max_timestamp, info.last_offset,
                            messages_size, lg.time.milliseconds())
        if segment.should_roll(params):
            log.debug("[%s] Rolling new log segment: %s", lg.topic_partition, segment.roll_reason(params))
            return lg.roll(info.first_offset if info.first_offset >= 0 else info.last_offset - 2147483647)
        return segment
