"""Validating a Produce request's batch and giving it offsets -- by patching bytes, not by re-encoding.

Theory of operation
-------------------
The leader's append runs two passes over the bytes a producer sent.

**1. analyze_and_validate_records** looks only at batch headers (Kafka's
``UnifiedLog.analyzeAndValidateRecords``): a client's batch must arrive with ``base_offset`` 0
(INVALID_RECORD), be no larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE) and carry a valid CRC-32C
(CORRUPT_MESSAGE). A partial batch at the end is simply not counted (``valid_bytes``).

**2. validate_messages_and_assign_offsets** (Kafka's ``LogValidator``) applies the rules that need the
records (for an uncompressed batch kept as it is, by walking them with
:func:`~kafkalab.records.scan_records`, which checks every record but builds none; only if some record
may break a rule is the batch decoded, to name each bad record): exactly one batch per partition from a client, ``records_count`` consistent with
``last_offset_delta``, no control batch from a client, a sequence number whenever a producer id is set, a key
on every record of a compacted topic, timestamps within ``message.timestamp.before.max.ms`` /
``after.max.ms`` (INVALID_TIMESTAMP, with per-record ``record_errors``). Then it assigns offsets::

    bytes 0-7    base_offset            <- log end offset         (outside the CRC: no recomputation)
    bytes 12-15  partition_leader_epoch <- the leader's epoch      (outside the CRC)
    bytes 21-22, 35-42  attributes bit 3 + max_timestamp          <- only for message.timestamp.type=
                                                                     LogAppendTime: the CRC is recomputed

The patches go into the request's own bytes when the network layer allows it (a frame received into a
``FrameBuffer``: the socket server's), as Kafka patches the request's ``ByteBuffer``; anything else is copied
once first (:func:`writable_buffer`). The batch is never re-encoded on this path: the producer's CRC keeps
protecting the records end to end.
Re-encoding happens only where Kafka does it too: when ``compression.type`` names a codec other than the
producer's, or when a compressed batch's inner offset deltas are not 0..n-1 (some old clients).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java`` and
``UnifiedLog.analyzeAndValidateRecords`` (``core/src/main/scala/kafka/log/UnifiedLog.scala``).
"""
from __future__ import annotations

from typing import NamedTuple

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import (RECORD_BATCH_OVERHEAD, CompressionType, TimestampType, batch_checksum, build_batch,
                              decode_batch, scan_batches, scan_records, set_last_offset, set_max_timestamp,
                              set_partition_leader_epoch, stored_checksum)
from kafkalab.records.header import TIMESTAMP_TYPE_MASK
from kafkalab.storage.errors import (CorruptRecordError, InvalidRecordError, InvalidTimestampError,
                                     OffsetsOutOfOrderError, RecordError, RecordTooLargeError, raise_record_errors)
from kafkalab.storage.legacy_validator import analyze_legacy_records, convert_and_assign_offsets, is_legacy
from kafkalab.storage.log_append_info import AppendOrigin, LogAppendInfo

__all__ = ["analyze_and_validate_records", "validate_messages_and_assign_offsets", "ValidationResult",
           "target_compression", "writable_buffer"]

NO_TIMESTAMP = -1
_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class ValidationResult(NamedTuple):
    log_append_time: int
    validated_records: object            # the (patched) buffer, or new bytes if the batch was rebuilt
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    message_size_maybe_changed: bool
    next_offset: int
    record_validation_stats: object = None   # RecordValidationStats of an up-conversion (v0/v1 set -> v2)


def writable_buffer(records):
    """The request's own buffer when it can be patched in place, else one copy of it."""
    if isinstance(records, bytearray):
        return records
    if isinstance(records, memoryview) and not records.readonly:
        return records.cast("B") if records.format != "B" else records
    return bytearray(records)


def target_compression(config, source_codec: int) -> int:
    """``compression.type=producer`` keeps the producer's codec; any other value is the codec to store."""
    ctype = config.compression_type
    return source_codec if ctype == "producer" else _CODECS[ctype]


def _scan(buf):
    try:
        return scan_batches(buf)
    except DecodeError as e:
        if e.path.endswith("magic"):
            raise InvalidRecordError("Produce requests are only allowed to contain record batches with magic "
                                     "version 2") from None
        raise CorruptRecordError(f"Record batch is corrupt: {e}") from None


def analyze_and_validate_records(buf, *, topic_partition, config, origin: AppendOrigin, ignore_record_size: bool,
                                 require_offsets_monotonic: bool, log_start_offset: int) -> LogAppendInfo:
    """Header-level checks of every complete batch in ``buf``; returns what the append needs to know."""
    if is_legacy(buf):
        return analyze_legacy_records(buf, topic_partition=topic_partition, config=config,
                                      ignore_record_size=ignore_record_size,
                                      require_offsets_monotonic=require_offsets_monotonic,
                                      log_start_offset=log_start_offset)
    scan = _scan(buf)
    info = LogAppendInfo(log_start_offset=log_start_offset)
    last_offset = -1
    monotonic = True
    for i, span in enumerate(scan):
        h = span.header
        if origin is AppendOrigin.CLIENT and h.base_offset != 0:
            raise InvalidRecordError(f"The baseOffset of the record batch in the append to {topic_partition} should "
                                     f"be 0, but it is {h.base_offset}")
        if i == 0:
            info.first_offset = h.base_offset
            info.last_offset_of_first_batch = h.last_offset
        if last_offset >= h.last_offset:
            monotonic = False
        last_offset = h.last_offset
        info.last_leader_epoch = h.partition_leader_epoch
        size = span.end - span.start
        if not ignore_record_size and size > config.max_message_size:
            raise RecordTooLargeError(f"The record batch size in the append to {topic_partition} is {size} bytes "
                                      f"which exceeds the maximum configured value of {config.max_message_size}.")
        if batch_checksum(buf, span.start) != h.crc:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {stored_checksum(buf, span.start)}) in topic "
                                     f"partition {topic_partition}.")
        if h.max_timestamp > info.max_timestamp:
            info.max_timestamp = h.max_timestamp
            info.offset_of_max_timestamp = last_offset
        info.valid_bytes += size
        info.num_messages += h.records_count
        codec = h.attributes & 0x07
        if codec:
            info.source_compression = codec
    info.last_offset = last_offset
    if require_offsets_monotonic and not monotonic:
        raise OffsetsOutOfOrderError(f"Out of order offsets found in append to {topic_partition}: "
                                     f"{[s.header.last_offset for s in scan]}")
    return info


def _validate_batch(h, topic_partition, origin: AppendOrigin) -> None:
    if origin is not AppendOrigin.CLIENT:
        return
    count_from_offsets = h.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordError(f"Batch has an invalid offset range: [{h.base_offset}, {h.last_offset}] in topic "
                                 f"partition {topic_partition}")
    if h.records_count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {h.records_count} in topic partition "
                                 f"{topic_partition}")
    if count_from_offsets != h.records_count:
        raise InvalidRecordError(f"Inconsistent batch offset range [{h.base_offset}, {h.last_offset}] and count of "
                                 f"records {h.records_count} in topic partition {topic_partition}")
    if h.is_control_batch:
        raise InvalidRecordError(f"Clients are not allowed to write control records in topic partition "
                                 f"{topic_partition}")
    if h.has_producer_id and h.base_sequence < 0:
        raise InvalidRecordError(f"Invalid sequence number {h.base_sequence} in record batch with producerId "
                                 f"{h.producer_id} in topic partition {topic_partition}")


def _record_errors(batch, topic_partition, config, now: int) -> list:
    errors = []
    compacted = config.compact
    create_time = not config.log_append_time
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    for i, record in enumerate(batch.records):
        if compacted and record.key is None:
            errors.append((InvalidRecordError, RecordError(i, f"Compacted topic cannot accept message without key in "
                                                              f"topic partition {topic_partition}.")))
            continue
        if create_time and record.timestamp != NO_TIMESTAMP:
            diff = now - record.timestamp
            if diff > before or -diff > after:
                errors.append((InvalidTimestampError, RecordError(
                    i, f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. The "
                       f"timestamp should be within [{now - before}, {now + after}]")))
        elif batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
            errors.append((InvalidTimestampError, RecordError(
                i, f"Invalid timestamp type in message {record}. Producer should not set timestamp type to "
                   f"LogAppendTime.")))
    return errors


def _compression_level(config, codec: int):
    levels = {1: config.compression_gzip_level, 3: config.compression_lz4_level, 4: config.compression_zstd_level}
    level = levels.get(codec)
    return None if level in (None, -1) else level


def validate_messages_and_assign_offsets(buf, *, first_offset: int, topic_partition, config, now: int,
                                         leader_epoch: int, origin: AppendOrigin,
                                         source_compression: int) -> ValidationResult:
    """Validate the (single) batch in ``buf`` and give it offsets from ``first_offset`` on; a v0/v1 message set
    is converted to one v2 batch (:mod:`.legacy_validator`)."""
    if is_legacy(buf):
        target = target_compression(config, source_compression)
        batch, max_ts, stats = convert_and_assign_offsets(
            buf, first_offset=first_offset, topic_partition=topic_partition, config=config, now=now,
            leader_epoch=leader_epoch, source_compression=source_compression, target_compression=target,
            compression_level=_compression_level(config, target))
        count = scan_batches(batch).batches[0].header.records_count
        shallow = first_offset + count - 1 if max_ts != NO_TIMESTAMP else -1
        return ValidationResult(now, batch, max_ts, shallow, True, first_offset + count, stats)
    scan = _scan(buf)
    if len(scan) == 0:
        raise InvalidRecordError("Record batch has no batches at all")
    if len(scan) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    span = scan.batches[0]
    h = span.header
    _validate_batch(h, topic_partition, origin)
    log_append_time = config.log_append_time
    timestamp_type = TimestampType.LOG_APPEND_TIME if log_append_time else TimestampType.CREATE_TIME
    target = target_compression(config, source_compression)
    if source_compression == CompressionType.NONE and (target == CompressionType.NONE or h.is_control_batch):
        max_ts = _clean_uncompressed_max_timestamp(buf, span, h, config, now)
        if max_ts is not None:
            return _assign_in_place(buf, span.start, first_offset + h.records_count, leader_epoch, timestamp_type,
                                    max_ts, now, log_append_time)
    try:
        batch = decode_batch(buf, span.start, verify=False)
    except DecodeError as e:
        raise InvalidRecordError(f"Found invalid record structure in topic partition {topic_partition}: {e}") from None
    raise_record_errors(_record_errors(batch, topic_partition, config, now))
    records = batch.records
    next_offset = first_offset + len(records)
    max_ts = NO_TIMESTAMP
    for record in records:
        if record.timestamp > max_ts:
            max_ts = record.timestamp
    if log_append_time:
        max_ts = now

    in_place = source_compression == target
    if source_compression == CompressionType.NONE and h.is_control_batch:
        in_place = True
    if in_place and source_compression != CompressionType.NONE:
        in_place = all(r.offset_delta == i for i, r in enumerate(records))
    if in_place:
        return _assign_in_place(buf, span.start, next_offset, leader_epoch, timestamp_type, max_ts, now,
                                log_append_time)

    rebuilt = build_batch(list(records), compression=target, compression_level=_compression_level(config, target),
                          producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                          transactional=h.is_transactional, control=h.is_control_batch,
                          partition_leader_epoch=leader_epoch, base_offset=first_offset,
                          timestamp_type=timestamp_type, log_append_time=now if log_append_time else None)
    return ValidationResult(now, rebuilt, max_ts, next_offset - 1, True, next_offset)


def _assign_in_place(buf, pos: int, next_offset: int, leader_epoch: int, timestamp_type, max_ts: int, now: int,
                     log_append_time: bool) -> ValidationResult:
    """Patch offsets, leader epoch (and for LogAppendTime the max timestamp) into the batch at ``buf[pos]``."""
    set_last_offset(buf, pos, next_offset - 1)
    set_partition_leader_epoch(buf, pos, leader_epoch)
    set_max_timestamp(buf, pos, timestamp_type, max_ts)
    shallow = next_offset - 1 if max_ts != NO_TIMESTAMP or log_append_time else -1
    return ValidationResult(now, buf, max_ts, shallow, False, next_offset)


def _clean_uncompressed_max_timestamp(buf, span, h, config, now: int):
    """The fast path for an uncompressed batch kept as it is: walk its records without decoding them.

    Returns the batch's max timestamp when every record passes (structure, key on a compacted topic,
    timestamp range), or None when some record may not -- then the caller decodes the batch, which finds the
    exact records and builds the per-record errors Kafka returns. The summary is enough to decide: if the
    smallest and the largest timestamp are within bounds, all of them are.
    """
    try:
        summary = scan_records(buf, span.start + RECORD_BATCH_OVERHEAD, span.end, h.records_count)
    except DecodeError:
        return None
    if summary.null_keys and config.compact:
        return None
    if h.attributes & TIMESTAMP_TYPE_MASK:         # the producer claims LogAppendTime: refused per record
        return None
    if not summary.count:
        return now if config.log_append_time else NO_TIMESTAMP
    if not config.log_append_time:
        lo, hi = h.base_timestamp + summary.min_timestamp_delta, h.base_timestamp + summary.max_timestamp_delta
        if now - lo > config.message_timestamp_before_max_ms or hi - now > config.message_timestamp_after_max_ms:
            return None
        return max(hi, NO_TIMESTAMP)
    return now
