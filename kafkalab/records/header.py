"""The 61-byte batch header, and everything a broker does to a batch without touching its records.

Theory of operation
-------------------
A v2 batch starts with a fixed, big-endian header::

    offset  field                   type     in CRC
       0    base_offset             int64    no    offset of the first record (0 from producers)
       8    batch_length            int32    no    bytes after this field = total size - 12
      12    partition_leader_epoch  int32    no    epoch of the leader that appended it
      16    magic                   int8     no    2 for this format
      17    crc                     uint32   -     CRC-32C of bytes [21, end)
      21    attributes              int16    yes   codec, timestamp type, transactional, control ...
      23    last_offset_delta       int32    yes   offset delta of the last record
      27    base_timestamp          int64    yes   timestamp of the first record
      35    max_timestamp           int64    yes   largest timestamp in the batch
      43    producer_id             int64    yes   -1 when not idempotent
      51    producer_epoch          int16    yes
      53    base_sequence           int32    yes   sequence number of the first record (-1 = none)
      57    records_count           int32    yes
      61    records ...                      yes   compressed as one block when the codec is not none

The broker stores batches exactly as the producer sent them. Everything it needs is in this header:
``batch_length`` finds the next batch, ``last_offset_delta`` says how many offsets to reserve, the producer
fields drive idempotence, and the leader assigns offsets by rewriting bytes 0-7 and 12-15 in place. Those
bytes are outside the CRC, so no checksum has to be recomputed and no record has to be decoded or
re-encoded, which is what lets a Kafka broker append at disk speed. Only a LogAppendTime topic forces a
change inside the CRC range (:func:`set_max_timestamp`).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` (``setLastOffset``,
``setPartitionLeaderEpoch``, ``setMaxTimestamp``), ``ByteBufferLogInputStream.java`` (splitting a buffer into
batches) and ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java``.
"""
from __future__ import annotations

import struct
from collections import namedtuple
from typing import Iterator, NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError
from kafkalab.records.compression import CompressionType
from kafkalab.records.crc import ATTRIBUTES_OFFSET, CRC_OFFSET, crc32c
from kafkalab.records.record import TimestampType

__all__ = ["BatchHeader", "BatchSpan", "BatchScan", "read_batch_header", "scan_batches", "set_base_offset",
           "set_last_offset", "set_partition_leader_epoch", "set_max_timestamp", "assign_offsets",
           "HEADER_FIELDS", "HEADER_FIELD_OFFSETS", "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD", "MAGIC",
           "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NO_PARTITION_LEADER_EPOCH", "NO_TIMESTAMP",
           "COMPRESSION_CODEC_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_FLAG_MASK", "CONTROL_FLAG_MASK",
           "DELETE_HORIZON_FLAG_MASK"]

HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size            # 61
LOG_OVERHEAD = 12                              # base_offset + batch_length: what batch_length does not count
MAGIC = 2
_MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

HEADER_FIELDS = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                 "base_sequence", "records_count")
#: (field, start, end, wire type) for each header field, relative to the start of the batch.
HEADER_FIELD_OFFSETS = tuple(zip(
    HEADER_FIELDS,
    (0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57),
    (8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61),
    ("INT64", "INT32", "INT32", "INT8", "UINT32", "INT16", "INT32", "INT64", "INT64", "INT64", "INT16", "INT32",
     "INT32")))

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_U32 = struct.Struct(">I")
_MAX_INT = 0x7FFFFFFF


class BatchProperties:
    """Derived views shared by :class:`BatchHeader` and :class:`~kafkalab.records.RecordBatch`."""

    __slots__ = ()

    @property
    def compression_type(self):
        codec = self.attributes & COMPRESSION_CODEC_MASK
        return CompressionType(codec) if codec <= 4 else codec

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon_ms(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int:
        """When bit 6 is set, the log cleaner has stored its delete horizon in ``base_timestamp`` (KIP-534)."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else NO_TIMESTAMP

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    size = size_in_bytes

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from 2147483647 back to 0."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (_MAX_INT + 1)


class BatchHeader(namedtuple("_BatchHeader", HEADER_FIELDS), BatchProperties):
    """The 13 header fields of one batch, plus derived ``last_offset``, ``next_offset``, ``size_in_bytes``,
    ``compression_type``, ``timestamp_type``, ``is_transactional``, ``is_control_batch`` ..."""

    __slots__ = ()


def read_batch_header(buf, pos: int = 0) -> BatchHeader:
    """Read the header of the batch at ``buf[pos:]`` without looking at its records.

    Checks that the 61 header bytes are there, that ``magic`` is 2 and that ``batch_length`` is at least a
    header; it does *not* require the rest of the batch to be present (compare ``pos + header.size_in_bytes``
    with the buffer length) and does not check the CRC.
    """
    remaining = len(buf) - pos
    if remaining >= 17:                   # magic first: it says how to read the rest
        _check_magic_and_length(_I8.unpack_from(buf, pos + 16)[0], _I32.unpack_from(buf, pos + 8)[0], pos)
    if remaining < RECORD_BATCH_OVERHEAD:
        raise DecodeError(f"a record batch header needs {RECORD_BATCH_OVERHEAD} bytes but only "
                          f"{max(remaining, 0)} remain", path="base_offset", offset=pos)
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def _check_magic_and_length(magic: int, length: int, pos: int) -> None:
    if magic != MAGIC:
        raise DecodeError(f"unsupported magic {magic}: only v2 record batches (magic 2) are supported",
                          path="magic", offset=pos + 16)
    if length < _MIN_BATCH_LENGTH:
        raise DecodeError(f"batch_length {length} is smaller than a batch header ({_MIN_BATCH_LENGTH})",
                          path="batch_length", offset=pos + 8)


class BatchSpan(NamedTuple):
    """Where one complete batch sits in a buffer, with its header."""

    start: int
    end: int
    header: BatchHeader


class BatchScan(NamedTuple):
    """The complete batches found in a buffer, and what (if anything) trails them.

    ``end`` is the position after the last complete batch. ``partial_start`` is where an incomplete trailing
    batch starts (None if the buffer ends exactly after a batch) and ``partial_bytes`` how many of its bytes
    are present. Fetch responses may legitimately end with a partial batch; a Produce request may not.
    """

    batches: tuple
    end: int
    partial_start: Optional[int]
    partial_bytes: int

    def __iter__(self) -> Iterator[BatchSpan]:  # type: ignore[override]
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)

    @property
    def complete(self) -> bool:
        return self.partial_start is None


def scan_batches(buf, start: int = 0, end: Optional[int] = None) -> BatchScan:
    """Split ``buf[start:end]`` into batches by reading only their headers (Kafka's ``ByteBufferLogInputStream``).

    Stops cleanly at a trailing batch that is cut short and reports it in the result; raises DecodeError for
    a batch that is wrong rather than short (magic other than 2, ``batch_length`` smaller than a header).
    """
    end = len(buf) if end is None else end
    spans = []
    pos = start
    unpack = HEADER.unpack_from
    while pos < end:
        remaining = end - pos
        if remaining < 17:                    # not even base_offset, batch_length, epoch and magic
            return BatchScan(tuple(spans), pos, pos, remaining)
        length = _I32.unpack_from(buf, pos + 8)[0]
        try:
            _check_magic_and_length(_I8.unpack_from(buf, pos + 16)[0], length, pos)
        except DecodeError as e:
            e.path = f"batches[{len(spans)}].{e.path}"
            raise
        size = length + LOG_OVERHEAD
        if size > remaining:
            return BatchScan(tuple(spans), pos, pos, remaining)
        spans.append(BatchSpan(pos, pos + size, BatchHeader._make(unpack(buf, pos))))
        pos += size
    return BatchScan(tuple(spans), pos, None, 0)


# ------------------------------------------------------------------------------ in-place edits by the broker

def _need(buf, pos: int) -> None:
    if len(buf) - pos < RECORD_BATCH_OVERHEAD or pos < 0:
        raise DecodeError("no complete batch header at this position", offset=pos)


def set_base_offset(buf, pos: int, base_offset: int) -> None:
    """Write ``base_offset`` (bytes 0-7) in place. Outside the CRC: the checksum stays valid."""
    _need(buf, pos)
    _I64.pack_into(buf, pos, base_offset)


def set_last_offset(buf, pos: int, last_offset: int) -> None:
    """Kafka's ``setLastOffset``: make the batch end at ``last_offset`` by writing
    ``base_offset = last_offset - last_offset_delta``. Outside the CRC."""
    _need(buf, pos)
    _I64.pack_into(buf, pos, last_offset - _I32.unpack_from(buf, pos + 23)[0])


def set_partition_leader_epoch(buf, pos: int, epoch: int) -> None:
    """Write ``partition_leader_epoch`` (bytes 12-15) in place. Outside the CRC."""
    _need(buf, pos)
    _I32.pack_into(buf, pos + 12, epoch)


def set_max_timestamp(buf, pos: int, timestamp_type: int, max_timestamp: int) -> bool:
    """Kafka's ``setMaxTimestamp``: set the timestamp-type bit and ``max_timestamp``, recomputing the CRC.

    Both fields are inside the CRC range, so unlike the offset and epoch this edit costs a checksum pass over
    the whole batch. Nothing is written (and False returned) when both already have the requested values.
    """
    _need(buf, pos)
    attributes = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    current_type = 1 if attributes & TIMESTAMP_TYPE_MASK else 0
    if current_type == int(timestamp_type) and _I64.unpack_from(buf, pos + 35)[0] == max_timestamp:
        return False
    length = _I32.unpack_from(buf, pos + 8)[0]
    end = pos + LOG_OVERHEAD + length
    if length < _MIN_BATCH_LENGTH or end > len(buf):
        raise DecodeError(f"batch_length {length} does not fit the buffer", path="batch_length", offset=pos + 8)
    if int(timestamp_type) == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    else:
        attributes &= ~TIMESTAMP_TYPE_MASK
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _I64.pack_into(buf, pos + 35, max_timestamp)
    _U32.pack_into(buf, pos + CRC_OFFSET, crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:end]))
    return True


def assign_offsets(buf, first_offset: int, partition_leader_epoch: int, start: int = 0,
                   end: Optional[int] = None) -> int:
    """Give every batch in ``buf[start:end]`` consecutive offsets from ``first_offset`` and stamp the leader
    epoch, in place, as a leader does on append. Returns the next offset to assign.

    Uses each batch's ``last_offset_delta``; checking that it matches the records is the validator's job.
    Raises DecodeError if the buffer ends in a partial batch (nothing is written then).
    """
    scan = scan_batches(buf, start, end)
    if not scan.complete:
        raise DecodeError(f"partial batch of {scan.partial_bytes} bytes at the end", offset=scan.partial_start)
    offset = first_offset
    for span in scan:
        offset += span.header.last_offset_delta + 1
        set_last_offset(buf, span.start, offset - 1)
        set_partition_leader_epoch(buf, span.start, partition_leader_epoch)
    return offset
