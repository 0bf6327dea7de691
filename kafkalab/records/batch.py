"""RecordBatch v2: decoding a whole batch, and building one the way a producer does.

Theory of operation
-------------------
Since Kafka 0.11 (KIP-98) everything a producer sends and a broker stores is a sequence of *record batches*
(magic 2). A batch is a 61-byte header (see :mod:`kafkalab.records.header`) followed by its records (see
:mod:`kafkalab.records.record`). Decoding one takes four steps:

1. read the header and check ``magic`` and ``batch_length`` against the bytes that are really there;
2. verify the CRC-32C over bytes ``[21, end)`` (:mod:`kafkalab.records.crc`), so a flipped bit is caught
   before anything else is trusted;
3. if bits 0-2 of ``attributes`` name a codec, inflate the bytes after the header as one block
   (:mod:`kafkalab.records.compression`); ``records_count`` is *not* compressed, it stays in the header where
   a broker can read it without inflating anything;
4. read ``records_count`` records, turning their deltas back into absolute offsets and timestamps, and
   insist that they use up the bytes exactly.

Building is the reverse, as a producer does it: offsets are deltas 0, 1, 2 ... from a ``base_offset`` of 0
(the leader assigns the real ones), timestamps are deltas from the first record's, the records are
compressed together, and the CRC is computed last, over everything from ``attributes`` on. The
idempotence fields (``producer_id``, ``producer_epoch``, ``base_sequence``) let the leader drop a retried
batch it has already appended; ``transactional`` marks records that stay invisible to ``read_committed``
consumers until a *control batch* (:mod:`kafkalab.records.control`) commits or aborts them.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` and
``MemoryRecordsBuilder.java`` (package ``...common.record.internal`` in Kafka 4.3).
"""
from __future__ import annotations

import struct
import time
from collections import namedtuple
from typing import Iterable, Optional

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.records.annotate import explain_records_error
from kafkalab.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress
from kafkalab.records.crc import ATTRIBUTES_OFFSET, CRC_OFFSET, crc32c
from kafkalab.records.header import (COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, HEADER, HEADER_FIELDS,
                                     LOG_OVERHEAD, MAGIC, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
                                     NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
                                     TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK, BatchHeader, BatchProperties,
                                     read_batch_header)
from kafkalab.records.record import (MIN_RECORD_SIZE, Record, SimpleRecord, TimestampType, decode_records,
                                     encode_records, gc_paused)

__all__ = ["RecordBatch", "decode_batch", "decode_batches", "build_batch", "encode_batch"]

_tuple_new = tuple.__new__
_LENGTH = struct.Struct(">i")
_MAGIC = struct.Struct(">b")


class RecordBatch(namedtuple("_RecordBatch", HEADER_FIELDS + ("records",)), BatchProperties):
    """A decoded batch: the 13 header fields as they were on the wire, and ``records`` (a tuple of
    :class:`~kafkalab.records.Record`). Derived properties as on :class:`~kafkalab.records.BatchHeader`."""

    __slots__ = ()

    @property
    def header(self) -> BatchHeader:
        return _tuple_new(BatchHeader, self[:13])

    def encode(self, *, compression=None) -> bytes:
        """Re-encode (see :func:`encode_batch`)."""
        return encode_batch(self, compression=compression)


def decode_batch(buf, pos: int = 0, *, verify: bool = True,
                 max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> RecordBatch:
    """Decode the one batch starting at ``buf[pos]`` (which must be complete).

    ``verify``: check the CRC first (a client should; a broker that already ran
    :func:`~kafkalab.records.ensure_crc_valid` may skip it). ``max_decompressed_bytes`` caps what a compressed
    batch may inflate to. Every problem raises :class:`~kafkalab.protocol.errors.DecodeError` with the field
    path and the byte offset in ``buf``.
    """
    header = read_batch_header(buf, pos)
    end = pos + LOG_OVERHEAD + header.batch_length
    if end > len(buf):
        raise DecodeError(f"batch_length {header.batch_length} needs {end - pos} bytes but only {len(buf) - pos} "
                          f"remain", path="batch_length", offset=pos + 8)
    if type(buf) is bytes:
        data, shift, start = buf, 0, pos
    else:
        data, shift, start = bytes(memoryview(buf)[pos:end]), pos, 0
    if verify:
        computed = crc32c(memoryview(data)[start + ATTRIBUTES_OFFSET:end - shift])
        if computed != header.crc:
            raise DecodeError(f"record batch is corrupt: stored crc {header.crc:#010x}, computed crc "
                              f"{computed:#010x}", path="crc", offset=pos + CRC_OFFSET)
    codec = header.attributes & COMPRESSION_CODEC_MASK
    count = header.records_count
    timestamp_type = 1 if header.attributes & TIMESTAMP_TYPE_MASK else 0
    records_start = start + RECORD_BATCH_OVERHEAD
    if codec == 0:
        try:
            records = decode_records(data, records_start, end - shift, count, header.base_offset,
                                     header.base_timestamp, timestamp_type, header.max_timestamp)
        except DecodeError as e:
            raise _explained(e, data, records_start, end - shift, header).located("", shift) from None
    else:
        if codec > 4:
            raise DecodeError(f"unknown compression codec id {codec} in attributes", path="attributes",
                              offset=pos + ATTRIBUTES_OFFSET)
        if count < 0 or count * MIN_RECORD_SIZE > max_decompressed_bytes:
            raise DecodeError(f"records_count {count} cannot fit max_decompressed_bytes={max_decompressed_bytes}",
                              path="records_count", offset=pos + 57)
        payload_at = pos + RECORD_BATCH_OVERHEAD
        try:
            inflated = decompress(codec, memoryview(data)[records_start:end - shift],
                                  max_decompressed_bytes=max_decompressed_bytes)
        except DecodeError as e:
            raise DecodeError(f"{e.reason} (at byte {e.offset} of the compressed records)", path="records",
                              offset=payload_at + (e.offset or 0)) from None
        try:
            records = decode_records(inflated, 0, len(inflated), count, header.base_offset,
                                     header.base_timestamp, timestamp_type, header.max_timestamp)
        except DecodeError as e:
            e = _explained(e, inflated, 0, len(inflated), header)
            raise DecodeError(f"{e.reason} (at byte {e.offset} of the decompressed records)", path=e.path,
                              offset=payload_at) from None
    return _tuple_new(RecordBatch, (*header, tuple(records)))


def _explained(fast: DecodeError, data, pos: int, end: int, header) -> DecodeError:
    """The fast loop only knows roughly where it failed; the reference decoder names the exact field and byte."""
    return explain_records_error(data, pos, end, header) or fast


def decode_batches(buf, start: int = 0, end: Optional[int] = None, *, verify: bool = True,
                   allow_partial: bool = False,
                   max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list:
    """Decode every batch in ``buf[start:end]`` (a Produce request's or Fetch response's ``records``).

    A partial batch at the end raises DecodeError unless ``allow_partial`` (fetch responses may end with
    one; the consumer simply fetches it again).
    """
    end = len(buf) if end is None else end
    out = []
    pos = start
    while pos < end:                      # batch by batch, so the first problem in byte order is reported
        path = f"batches[{len(out)}]"
        if end - pos >= 17:
            length, magic = _LENGTH.unpack_from(buf, pos + 8)[0], _MAGIC.unpack_from(buf, pos + 16)[0]
            if length + LOG_OVERHEAD <= end - pos or magic != MAGIC or length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                try:
                    out.append(decode_batch(buf if end == len(buf) else memoryview(buf)[:end], pos, verify=verify,
                                            max_decompressed_bytes=max_decompressed_bytes))
                except DecodeError as e:
                    e.path = f"{path}.{e.path}" if e.path else path
                    raise
                pos += LOG_OVERHEAD + length
                continue
        if allow_partial:
            break
        raise DecodeError(f"the last batch is cut short: {end - pos} bytes present", path=path, offset=pos)
    return out


# ------------------------------------------------------------------------------------------------ building

def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_batch(records: Iterable, *, compression=None, compression_level: Optional[int] = None,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE, transactional: bool = False, control: bool = False,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, base_offset: int = 0,
                timestamp_type: int = TimestampType.CREATE_TIME, log_append_time: Optional[int] = None) -> bytes:
    """Build one batch from ``records``, as a producer does, and return its bytes.

    ``records``: :class:`~kafkalab.records.SimpleRecord` values or plain tuples ``(key, value[, headers[,
    timestamp]])`` (``timestamp`` None = now, in ms), or decoded :class:`~kafkalab.records.Record` objects.
    Offset deltas are 0, 1, 2 ...; ``base_timestamp`` is the first record's timestamp. ``compression``: an id,
    a ``compression.type`` name or None. With ``timestamp_type=LOG_APPEND_TIME`` (what a broker writes when it
    rebuilds a batch) ``max_timestamp`` is ``log_append_time`` (default: now). An empty ``records`` gives an
    empty batch with ``last_offset_delta`` -1 and timestamps -1.
    """
    codec = CompressionType.of(compression)
    if transactional and producer_id == NO_PRODUCER_ID:
        raise EncodeError("a transactional batch needs a producer_id")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise EncodeError("a batch with a producer_id needs a producer_epoch")
        if base_sequence < 0 and not control:
            raise EncodeError("a batch with a producer_id needs a base_sequence >= 0")
    if type(records) is not list and type(records) is not tuple:
        records = list(records)
    with gc_paused(len(records)):
        return _build(records, codec, compression_level, producer_id, producer_epoch, base_sequence, transactional,
                      control, partition_leader_epoch, base_offset, timestamp_type, log_append_time)


def _build(records, codec, compression_level, producer_id, producer_epoch, base_sequence, transactional, control,
           partition_leader_epoch, base_offset, timestamp_type, log_append_time) -> bytes:
    items = None
    if records:
        try:  # fast path: 4-tuples / SimpleRecords that all carry a timestamp
            base_timestamp = records[0][3]
            items = [(0, ts - base_timestamp, i, k, v, h) for i, (k, v, h, ts) in enumerate(records)]
        except (TypeError, ValueError, IndexError):
            items = None
    if items is None:
        items = _normalize(records)
        base_timestamp = items[0][3] if items else NO_TIMESTAMP
        items = [(0, ts - base_timestamp, i, k, v, h) for i, (k, v, h, ts) in enumerate(items)]
    max_timestamp = base_timestamp + max(item[1] for item in items) if items else NO_TIMESTAMP
    if int(timestamp_type) == TimestampType.LOG_APPEND_TIME:
        max_timestamp = _now_ms() if log_append_time is None else log_append_time
    attributes = (codec | (TIMESTAMP_TYPE_MASK if int(timestamp_type) == TimestampType.LOG_APPEND_TIME else 0)
                  | (TRANSACTIONAL_FLAG_MASK if transactional else 0) | (CONTROL_FLAG_MASK if control else 0))
    return _assemble(items, codec, compression_level, base_offset, partition_leader_epoch, attributes,
                     len(items) - 1, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence)


def _normalize(records) -> list:
    """``(key, value, headers, timestamp)`` for each record given in any of the accepted shapes."""
    now = None
    rows = []
    for r in records:
        if type(r) is SimpleRecord or (type(r) is tuple and len(r) == 4):
            key, value, headers, ts = r
        elif isinstance(r, Record):
            key, value, headers, ts = r.key, r.value, r.headers, r.timestamp
        elif isinstance(r, (tuple, list)) and 2 <= len(r) <= 4:
            key, value, headers, ts = SimpleRecord(*r)
        else:
            raise EncodeError(f"cannot build a record from {r!r}: give SimpleRecord(key, value, headers, timestamp)")
        if ts is None:
            ts = now = _now_ms() if now is None else now
        elif type(ts) is not int:
            raise EncodeError(f"record timestamp must be an int (ms) or None, not {type(ts).__name__}")
        rows.append((key, value, headers, ts))
    return rows


def encode_batch(batch: RecordBatch, *, compression=None, compression_level: Optional[int] = None) -> bytes:
    """Encode a :class:`RecordBatch` exactly as described: its header fields (``batch_length``, ``crc`` and
    ``records_count`` are recomputed) and each record's ``attributes``, ``timestamp_delta``, ``offset_delta``,
    key, value and headers. ``compression`` overrides the codec in ``batch.attributes``.

    An uncompressed batch decoded from canonical bytes re-encodes to the very same bytes.
    """
    attributes = batch.attributes
    codec = CompressionType.of(attributes & COMPRESSION_CODEC_MASK if compression is None else compression)
    attributes = (attributes & ~COMPRESSION_CODEC_MASK) | codec
    with gc_paused(len(batch.records)):
        items = [(r.attributes, r.timestamp_delta, r.offset_delta, r.key, r.value, r.headers) for r in batch.records]
        return _assemble(items, codec, compression_level, batch.base_offset, batch.partition_leader_epoch,
                         attributes, batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp,
                         batch.producer_id, batch.producer_epoch, batch.base_sequence)


def _assemble(items, codec, level, base_offset, partition_leader_epoch, attributes, last_offset_delta,
              base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence) -> bytes:
    parts: list = []
    encode_records(items, parts)
    payload = b"".join(parts)
    if codec:
        payload = compress(codec, payload, level=level)
    try:
        head = bytearray(HEADER.pack(base_offset, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload),
                                     partition_leader_epoch, MAGIC, 0, attributes, last_offset_delta,
                                     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                                     len(items)))
    except Exception as e:  # struct.error: a header value out of range for its type
        raise EncodeError(f"batch header value out of range: {e}") from None
    crc = crc32c(payload, crc32c(memoryview(head)[ATTRIBUTES_OFFSET:]))
    head[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(head) + payload
