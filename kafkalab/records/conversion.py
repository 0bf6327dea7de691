"""Down-conversion: v2 batches rewritten as v0/v1 message sets for fetchers too old to read magic 2.

Theory of operation
-------------------
A Kafka 3 broker stores only RecordBatch v2. A consumer that fetches with Fetch v0 or v1 can read only magic 0,
with v2 or v3 only magic 0 or 1, so the broker rewrites what it read before sending it
(``RecordsUtil.downConvert``): each v2 batch is decoded and its records written again with
:func:`~kafkalab.records.legacy.build_message_set` -- key, value, offset and timestamp survive; headers,
producer ids, sequence numbers and the transactional flag cannot, and control batches (transaction markers) are
dropped altogether. An uncompressed batch becomes one message per record, and records before the fetch
offset are left out (old librdkafka relies on it); a compressed batch becomes one wrapper with the same codec.
zstd has no v0/v1 form: such a batch is refused with UNSUPPORTED_COMPRESSION_TYPE (76).

Conversion costs the broker what the v2 design saves: the data leaves the page cache, is inflated, rebuilt
and deflated again, and cannot go out with ``sendfile``. Kafka therefore converts *lazily* (KIP-283,
``LazyDownConversionRecords``): the response promises a size up front -- the larger of the bytes read and the
first converted batch, so at least one whole converted batch always fits -- and the batches are converted
chunk by chunk (128 KiB of input at a time) while the response is written. What overshoots the promised size
is cut (the consumer ignores a partial message at the end); what falls short is padded with an *overflow
message*: offset -1 and a length larger than what is left, which the consumer also ignores.
:class:`LazyDownConversionRecords` keeps those rules; :meth:`~LazyDownConversionRecords.to_bytes` produces the
bytes of exactly the promised size. Each conversion is counted in :class:`RecordValidationStats`
(``FetchMessageConversionsPerSec``, ``MessageConversionsTimeMs``, ``TemporaryMemoryBytes``).

Mirrors: ``RecordsUtil.downConvert``, ``LazyDownConversionRecords``, ``LazyDownConversionRecordsSend`` and
``RecordValidationStats`` in ``clients/src/main/java/org/apache/kafka/common/record/``.
"""
from __future__ import annotations

import struct
import time as _time
from typing import Callable, NamedTuple, Optional

from kafkalab.protocol.errors import ApiException, ErrorCode
from kafkalab.records.batch import decode_batch
from kafkalab.records.compression import CompressionType
from kafkalab.records.header import RECORD_BATCH_OVERHEAD, scan_batches
from kafkalab.records.legacy import LOG_OVERHEAD, MAGIC_V1, build_message_set
from kafkalab.records.record import TimestampType

__all__ = ["RecordValidationStats", "down_convert", "LazyDownConversionRecords", "MAX_READ_SIZE",
           "UnsupportedCompressionTypeError"]

#: input bytes converted per chunk while a response is written (``LazyDownConversionRecordsSend``)
MAX_READ_SIZE = 128 * 1024
_OVERFLOW_HEAD = struct.Struct(">qi")


class UnsupportedCompressionTypeError(ApiException):
    """UNSUPPORTED_COMPRESSION_TYPE (76): zstd data for a fetcher or producer too old for it."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, message)


class RecordValidationStats(NamedTuple):
    """What a conversion cost (Kafka's ``RecordValidationStats``): bytes held in memory for it, records
    converted, and the time it took."""

    temporary_memory_bytes: int = 0
    num_records_converted: int = 0
    conversion_time_nanos: int = 0

    def add(self, other: "RecordValidationStats") -> "RecordValidationStats":
        return RecordValidationStats(self.temporary_memory_bytes + other.temporary_memory_bytes,
                                     self.num_records_converted + other.num_records_converted,
                                     self.conversion_time_nanos + other.conversion_time_nanos)


def down_convert(buf, spans, to_magic: int, first_offset: int,
                 nanoseconds: Callable[[], int] = _time.perf_counter_ns) -> tuple[bytes, RecordValidationStats]:
    """The v2 batches at ``spans`` (:class:`~kafkalab.records.BatchSpan` of ``buf``) as a magic ``to_magic``
    message set, and what it cost. Raises :class:`UnsupportedCompressionTypeError` for a zstd batch."""
    start = nanoseconds()
    out = []
    temporary = 0
    converted = 0
    for span in spans:
        h = span.header
        codec = h.attributes & 0x07
        if h.is_control_batch:
            continue
        if codec == CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError("Down-conversion of zstandard-compressed batches is not supported")
        batch = decode_batch(buf, span.start, verify=False)
        records = [r for r in batch.records if codec != CompressionType.NONE or r.offset >= first_offset]
        if not records:
            continue
        log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        data = build_message_set([(r.offset, r.timestamp, r.key, r.value) for r in records], magic=to_magic,
                                 compression=codec,
                                 timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
                                 log_append_time=h.max_timestamp if log_append else None)
        temporary += (span.end - span.start) + sum(_uncompressed_size(to_magic, r) for r in records)
        converted += len(records)
        out.append(data)
    return b"".join(out), RecordValidationStats(temporary, converted, nanoseconds() - start)


def _uncompressed_size(magic: int, r) -> int:
    overhead = LOG_OVERHEAD + (22 if magic == MAGIC_V1 else 14)
    return overhead + len(r.key or b"") + len(r.value or b"")


class LazyDownConversionRecords:
    """The records of one partition of a Fetch response, to be sent as magic ``to_magic``.

    ``size_in_bytes`` is fixed when it is built (converting the first batch, which may raise
    :class:`UnsupportedCompressionTypeError`: the partition is then answered with that error);
    :meth:`to_bytes` converts the rest chunk by chunk and returns exactly that many bytes, with the stats."""

    def __init__(self, topic_partition, records: bytes, to_magic: int, first_offset: int,
                 nanoseconds: Callable[[], int] = _time.perf_counter_ns):
        self.topic_partition = topic_partition
        self.records = bytes(records)
        self.to_magic = to_magic
        self.first_offset = first_offset
        self._nanoseconds = nanoseconds
        self._spans = list(scan_batches(self.records))
        self._next = 0
        self._first: Optional[tuple[bytes, RecordValidationStats]] = self._next_chunk(0)
        if self._first is not None:
            self.size_in_bytes = max(len(self.records), len(self._first[0]))
        else:   # nothing convertible: an overflow message if there were batches, so the consumer can complain
            self.size_in_bytes = LOG_OVERHEAD if self._spans else 0

    def _next_chunk(self, max_read_size: int) -> Optional[tuple[bytes, RecordValidationStats]]:
        """The next non-empty converted chunk: at least one batch, more while they fit ``max_read_size``."""
        while self._next < len(self._spans):
            group = [self._spans[self._next]]
            size = group[0].end - group[0].start
            self._next += 1
            while self._next < len(self._spans):
                span = self._spans[self._next]
                if size + (span.end - span.start) > max_read_size:
                    break
                group.append(span)
                size += span.end - span.start
                self._next += 1
            data, stats = down_convert(self.records, group, self.to_magic, self.first_offset, self._nanoseconds)
            if data:
                return data, stats
        return None

    def to_bytes(self) -> tuple[bytes, RecordValidationStats]:
        """Exactly ``size_in_bytes`` bytes of converted records (cut, or padded by an overflow message)."""
        out = []
        written = 0
        stats = RecordValidationStats()
        pending, self._first = self._first, None
        while written < self.size_in_bytes:
            remaining = self.size_in_bytes - written
            chunk = None
            if pending is not None:
                chunk, pending = pending, None
            else:
                try:
                    chunk = self._next_chunk(MAX_READ_SIZE)
                except UnsupportedCompressionTypeError:
                    chunk = None     # already committed to a size: the consumer meets the error on its next fetch
            if chunk is None:
                out.append(_overflow(remaining))
                break
            stats = stats.add(chunk[1])
            piece = chunk[0][:remaining]
            out.append(piece)
            written += len(piece)
        return b"".join(out), stats


def _overflow(remaining: int) -> bytes:
    """An overflow message for the last ``remaining`` bytes: offset -1 and a length past the end."""
    head = _OVERFLOW_HEAD.pack(-1, max(remaining + 1, RECORD_BATCH_OVERHEAD))
    body = head + bytes(max(0, min(remaining + 1, MAX_READ_SIZE) - len(head)))
    return body[:remaining]
