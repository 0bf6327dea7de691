"""Up-conversion: a producer's v0/v1 message set validated, converted to one v2 batch and given offsets.

Theory of operation
-------------------
Producers older than Kafka 0.11 (Produce v0-2) send message sets of magic 0 or 1
(:mod:`kafkalab.records.legacy`). A Kafka 3 broker stores nothing but RecordBatch v2, so the leader's append
converts what such a producer sent before it writes it -- the *up-conversion* of ``LogValidator``, always
needed since the message format follows ``inter.broker.protocol.version`` >= 3.0:

1. **Shallow checks** (:func:`analyze_legacy_records`, Kafka's ``analyzeAndValidateRecords`` for old
   entries): every top-level message must hold its CRC-32 (CORRUPT_MESSAGE), be no larger than
   ``max.message.bytes`` (MESSAGE_TOO_LARGE) and have the first one's magic; the offsets the producer put in are
   not checked (old clients wrote anything there).
2. **Deep checks and the rebuild** (:func:`convert_and_assign_offsets`): a compressed set must be a single
   wrapper ("Compressed outer record has more than one batch"); the inner messages of a wrapper are inflated and
   their own CRCs checked; then every record passes the rules of v2 records -- a key on a compacted topic, a
   ``CreateTime`` timestamp within ``message.timestamp.before.max.ms`` / ``after.max.ms``, no producer-claimed
   LogAppendTime -- with per-record errors. The records go into one new v2 batch at the log end offset, with the
   leader's epoch and the topic's ``compression.type`` (``producer`` keeps the set's codec).

**Timestamps.** A magic 0 message has none: its record keeps -1 (``NO_TIMESTAMP``) in the v2 batch under
``CreateTime`` (the batch's max timestamp stays -1), and gets the broker's clock under ``LogAppendTime``. A v1
record keeps its own timestamp (a v1 wrapper with LogAppendTime is refused like any producer-set
LogAppendTime).

Each conversion is counted (:class:`~kafkalab.records.conversion.RecordValidationStats`): the Produce handler
turns it into ``ProduceMessageConversionsPerSec`` and the request's ``MessageConversionsTimeMs``.

Mirrors: ``LogValidator.convertAndAssignOffsetsNonCompressed``, ``validateMessagesAndAssignOffsetsCompressed``
and ``buildRecordsAndAssignOffsets`` (storage/src/main/java/org/apache/kafka/storage/internals/log/), and the
legacy branch of ``UnifiedLog.analyzeAndValidateRecords``.
"""
from __future__ import annotations

import time as _time

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import CompressionType, TimestampType, build_batch, scan_batches
from kafkalab.records.conversion import RecordValidationStats
from kafkalab.records.legacy import (MAGIC_OFFSET, NO_TIMESTAMP, deep_records, magic_of, read_message_set)
from kafkalab.storage.errors import (CorruptRecordError, InvalidRecordError, InvalidTimestampError,
                                     OffsetsOutOfOrderError, RecordError, RecordTooLargeError, raise_record_errors)
from kafkalab.storage.log_append_info import LogAppendInfo

__all__ = ["is_legacy", "analyze_legacy_records", "convert_and_assign_offsets"]


def is_legacy(buf) -> bool:
    """Does ``buf`` start with a magic 0 or 1 message?"""
    magic = magic_of(buf)
    return magic is not None and magic < 2


def _entries(buf, topic_partition):
    """The shallow messages, or the error Kafka gives for bytes that are not a clean v0/v1 set."""
    try:
        return read_message_set(buf)
    except DecodeError as e:
        if e.path == "magic" and e.offset is not None and e.offset < len(buf):   # e.g. a v2 batch after them
            raise InvalidRecordError(f"Batch magic {buf[e.offset]} is not the same as the first batch's magic byte "
                                     f"{buf[MAGIC_OFFSET]} in topic partition {topic_partition}") from None
        raise CorruptRecordError(f"{e.reason} in topic partition {topic_partition}") from None


def analyze_legacy_records(buf, *, topic_partition, config, ignore_record_size: bool,
                           require_offsets_monotonic: bool, log_start_offset: int) -> LogAppendInfo:
    """Header-level checks of a v0/v1 message set (each top-level message is one "batch" to Kafka)."""
    info = LogAppendInfo(log_start_offset=log_start_offset)
    last_offset = -1
    monotonic = True
    for i, entry in enumerate(_entries(buf, topic_partition)):
        if i == 0:
            info.last_offset_of_first_batch = entry.offset
        if last_offset >= entry.offset:
            monotonic = False
        last_offset = entry.offset
        if not ignore_record_size and entry.size > config.max_message_size:
            raise RecordTooLargeError(f"The record batch size in the append to {topic_partition} is {entry.size} "
                                      f"bytes which exceeds the maximum configured value of "
                                      f"{config.max_message_size}.")
        if not entry.valid:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {entry.crc}) in topic partition "
                                     f"{topic_partition}.")
        if entry.timestamp > info.max_timestamp:
            info.max_timestamp = entry.timestamp
            info.offset_of_max_timestamp = last_offset
        info.valid_bytes += entry.size
        info.num_messages += 1
        if entry.compression_type:
            info.source_compression = entry.compression_type
    info.last_offset = last_offset
    if require_offsets_monotonic and not monotonic:
        raise OffsetsOutOfOrderError(f"Out of order offsets found in append to {topic_partition}")
    return info


def _record_errors(entry, records, topic_partition, config, now: int) -> list:
    errors = []
    create_time = not config.log_append_time
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    for i, record in enumerate(records):
        if entry.is_compressed and not record.valid:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {record.crc}) in topic partition "
                                     f"{topic_partition}")
        if config.compact and record.key is None:
            errors.append((InvalidRecordError, RecordError(i, f"Compacted topic cannot accept message without key in "
                                                              f"topic partition {topic_partition}.")))
        elif create_time and record.timestamp != NO_TIMESTAMP:
            if now - record.timestamp > before or record.timestamp - now > after:
                errors.append((InvalidTimestampError, RecordError(
                    i, f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. The "
                       f"timestamp should be within [{now - before}, {now + after}]")))
        elif entry.timestamp_type == TimestampType.LOG_APPEND_TIME:
            errors.append((InvalidTimestampError, RecordError(
                i, "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime.")))
    return errors


def convert_and_assign_offsets(buf, *, first_offset: int, topic_partition, config, now: int, leader_epoch: int,
                               source_compression: int, target_compression: int, compression_level=None):
    """The v2 batch holding every record of the v0/v1 set ``buf`` from ``first_offset`` on, and what the
    conversion cost: ``(batch bytes, max_timestamp, RecordValidationStats)``."""
    start_ns = _time.perf_counter_ns()
    entries = _entries(buf, topic_partition)
    if not entries:
        raise InvalidRecordError("Record batch has no batches at all")
    if source_compression != CompressionType.NONE and len(entries) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    first_magic = entries[0].magic
    records = []
    inflated = 0
    for entry in entries:
        if entry.magic != first_magic:
            raise InvalidRecordError(f"Batch magic {entry.magic} is not the same as the first batch's magic byte "
                                     f"{first_magic} in topic partition {topic_partition}")
        try:
            inner = deep_records(entry)
        except DecodeError as e:
            raise InvalidRecordError(f"{e.reason} in topic partition {topic_partition}") from None
        raise_record_errors(_record_errors(entry, inner, topic_partition, config, now))
        records.extend(inner)
        if entry.is_compressed:
            inflated += sum(r.size for r in inner)
    log_append_time = config.log_append_time
    batch = build_batch([(r.key, r.value, (), r.timestamp) for r in records], compression=target_compression,
                        compression_level=compression_level, partition_leader_epoch=leader_epoch,
                        base_offset=first_offset,
                        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append_time else TimestampType.CREATE_TIME,
                        log_append_time=now if log_append_time else None)
    max_timestamp = scan_batches(batch).batches[0].header.max_timestamp
    stats = RecordValidationStats(inflated + len(batch), len(records), _time.perf_counter_ns() - start_ns)
    return batch, max_timestamp, stats
