"""Message formats v0 and v1 (magic 0 and 1): the message sets Kafka wrote before RecordBatch v2.

Theory of operation
-------------------
Before Kafka 0.11 there were no batches. A *message set* is a plain sequence of messages, each one
self-contained, with its own offset, size and CRC::

    offset      int64    the message's offset (absolute; see "wrappers" below)
    size        int32    bytes after this field
    crc         int32    CRC-32 (zlib's, *not* CRC-32C) of everything after it
    magic       int8     0 or 1
    attributes  int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 LogAppendTime (v1)
    timestamp   int64    v1 only (0.10.0, KIP-32): the producer's or the broker's clock
    key         int32 length + bytes (-1 = null)
    value       int32 length + bytes (-1 = null)

A v0 message costs 26 bytes of overhead before its key and value, a v1 message 34 -- against a few bytes
per record inside a v2 batch (varint deltas), which is one reason v2 exists. There are no headers, no
producer id, no sequence numbers: idempotence and transactions need v2.

**Compression needs a wrapper.** A compressed message set is *one* message (the wrapper) whose value is the
compressed bytes of an inner message set. In v0 the inner messages carry absolute offsets, so a broker must
decompress and rewrite every one of them to assign offsets. v1 (KIP-31) made the inner offsets relative
(0, 1, 2 ...) and the wrapper's offset the absolute offset of the *last* inner message, so the broker patches
only the wrapper. In v1 the wrapper's timestamp is the largest inner one (or the broker's, for LogAppendTime,
which then overrides every inner timestamp when read).

Two codec quirks from that era: Kafka writes snappy with the xerial framing, and the LZ4 frames of magic 0
carry a *wrong* header checksum (computed over the frame magic too, KAFKA-3160) which readers of v0 must accept
and writers of v0 must reproduce. zstd never existed for v0/v1.

Reading (:func:`read_message_set`, :func:`deep_records`) raises :class:`~kafkalab.protocol.errors.DecodeError`
with the byte offset on malformed input, and never trusts a length it has not checked against the bytes left.
Building (:func:`build_message_set`) writes what Kafka's ``MemoryRecordsBuilder`` writes for magic 0/1.

Mirrors: ``LegacyRecord``, ``AbstractLegacyRecordBatch`` (its ``DeepRecordsIterator``) and the magic 0/1 paths
of ``MemoryRecordsBuilder`` in ``clients/src/main/java/org/apache/kafka/common/record/``, and
``Lz4BlockOutputStream``'s ``useBrokenFlagDescriptorChecksum``.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator, NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.records.compression import (DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress,
                                          snappy_compress_xerial)
from kafkalab.records.record import TimestampType

__all__ = ["LegacyRecord", "read_message_set", "deep_records", "iter_records", "build_message_set", "legacy_crc", "magic_of",
           "MAGIC_V0", "MAGIC_V1", "LOG_OVERHEAD", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1", "NO_TIMESTAMP",
           "message_overhead"]

MAGIC_V0 = 0
MAGIC_V1 = 1
LOG_OVERHEAD = 12                 # offset (8) + size (4)
RECORD_OVERHEAD_V0 = 14           # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22           # ... and the timestamp
NO_TIMESTAMP = -1
MAGIC_OFFSET = 16                 # from the start of an entry: the same place as a v2 batch's magic
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_OFFSET_SIZE = struct.Struct(">qi")
_CRC_MAGIC_ATTR = struct.Struct(">IbB")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


class LegacyRecord(NamedTuple):
    """One v0/v1 message: a shallow entry of a message set or an inner message of a wrapper.

    ``position`` and ``size`` locate the entry (offset field first) in the bytes it was read from; ``crc`` is
    the stored checksum, ``valid`` whether it matches the bytes."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    crc: int
    valid: bool
    position: int = 0
    size: int = 0

    @property
    def compression_type(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def is_compressed(self) -> bool:
        return self.compression_type != CompressionType.NONE

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def size_in_bytes(self) -> int:
        """The entry's bytes, offset and size fields included."""
        return self.size


def message_overhead(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


def legacy_crc(data) -> int:
    """CRC-32 (IEEE, zlib's) as a v0/v1 message stores it: over magic, attributes, [timestamp], key, value."""
    return zlib.crc32(data) & 0xFFFFFFFF


def magic_of(buf, pos: int = 0) -> Optional[int]:
    """The magic byte of the entry at ``pos`` (at byte 16 in every format), or None if the bytes end first."""
    return buf[pos + MAGIC_OFFSET] if len(buf) > pos + MAGIC_OFFSET else None


# --------------------------------------------------------------------------------------------------- reading

def _read_bytes(data, pos: int, end: int, what: str, base: int):
    if end - pos < 4:
        raise DecodeError(f"{what} length cut short", path=what, offset=base + pos)
    n = _INT32.unpack_from(data, pos)[0]
    pos += 4
    if n < 0:
        return None, pos
    if n > end - pos:
        raise DecodeError(f"{what} of {n} bytes but only {end - pos} remain in the message", path=what,
                          offset=base + pos - 4)
    return bytes(data[pos:pos + n]), pos + n


def _read_message(data, pos: int, end: int, offset: int, base: int) -> LegacyRecord:
    """The message whose crc field starts at ``pos`` and which ends at ``end`` (after its size field)."""
    if end - pos < RECORD_OVERHEAD_V0:
        raise DecodeError(f"Record size {end - pos} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                          path="size", offset=base + pos - 4)
    crc, magic, attributes = _CRC_MAGIC_ATTR.unpack_from(data, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise DecodeError(f"Invalid magic {magic} in a v0/v1 message set", path="magic", offset=base + pos + 4)
    p = pos + 6
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if end - pos < RECORD_OVERHEAD_V1:
            raise DecodeError(f"Record size {end - pos} is less than the v1 record overhead ({RECORD_OVERHEAD_V1})",
                              path="size", offset=base + pos - 4)
        timestamp = _INT64.unpack_from(data, p)[0]
        p += 8
    key, p = _read_bytes(data, p, end, "key", base)
    value, p = _read_bytes(data, p, end, "value", base)
    valid = legacy_crc(memoryview(data)[pos + 4:end]) == crc
    return LegacyRecord(offset, magic, attributes, timestamp, key, value, crc, valid, pos - LOG_OVERHEAD,
                        end - pos + LOG_OVERHEAD)


def read_message_set(buf, start: int = 0, end: Optional[int] = None) -> list[LegacyRecord]:
    """The shallow entries of a v0/v1 message set in ``buf[start:end]``. A message cut short at the end is left
    out (as Kafka's iterator stops there); a size below the v0 overhead or a malformed message raises
    DecodeError. Checksums are reported (``valid``), not enforced: the caller decides."""
    end = len(buf) if end is None else end
    data = memoryview(buf)
    out = []
    pos = start
    while end - pos >= LOG_OVERHEAD:
        offset, size = _OFFSET_SIZE.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise DecodeError(f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                              path="size", offset=pos + 8)
        if size > end - pos - LOG_OVERHEAD:
            break
        out.append(_read_message(data, pos + LOG_OVERHEAD, pos + LOG_OVERHEAD + size, offset, 0))
        pos += LOG_OVERHEAD + size
    return out


def _legacy_decompress(codec: int, magic: int, payload: bytes, cap: int) -> bytes:
    if codec == CompressionType.LZ4 and magic == MAGIC_V0 and payload[:4] == _LZ4_MAGIC and len(payload) > 6:
        fixed = bytearray(payload)           # the v0 frame's header checksum is computed over the magic too
        fixed[6] = _lz4_header_checksum(fixed, broken=False)
        payload = bytes(fixed)
    return decompress(codec, payload, max_decompressed_bytes=cap)


def deep_records(entry: LegacyRecord, *, ensure_matching_magic: bool = True,
                 max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[LegacyRecord]:
    """The records of one shallow entry: itself when uncompressed; else the inner messages of the wrapper, with
    absolute offsets (v1: the wrapper's offset minus the last inner offset, plus each inner offset) and, for a
    v1 wrapper with LogAppendTime, the wrapper's timestamp. Kafka's ``DeepRecordsIterator`` errors."""
    if not entry.is_compressed:
        return [entry]
    codec, magic = entry.compression_type, entry.magic
    if codec == CompressionType.ZSTD or codec > CompressionType.ZSTD:
        raise DecodeError(f"Invalid wrapper compressionType found in legacy deep record iterator {magic}",
                          path="attributes")
    if entry.value is None:
        raise DecodeError(f"Found invalid compressed record set with null value (magic = {magic})", path="value")
    inner_bytes = _legacy_decompress(codec, magic, entry.value, max_decompressed_bytes)
    inner = read_message_set(inner_bytes)
    if not inner:
        raise DecodeError("Found invalid compressed record set with no inner records", path="value")
    for r in inner:
        if ensure_matching_magic and r.magic != magic:
            raise DecodeError(f"Compressed message magic {r.magic} does not match wrapper magic {magic}", path="magic")
        if r.is_compressed:
            raise DecodeError("Inner messages must not be compressed", path="attributes")
    if magic == MAGIC_V0:
        return inner
    last_inner = inner[-1].offset
    if entry.offset == 0:            # some librdkafka versions send 0 as the wrapper offset
        base = 0
    elif entry.offset < last_inner:
        raise DecodeError(f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                          f"'{entry.offset}' is less than the last inner message offset '{last_inner}' and it is "
                          f"not zero.", path="offset")
    else:
        base = entry.offset - last_inner
    log_append = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
    return [r._replace(offset=base + r.offset, timestamp=entry.timestamp if log_append else r.timestamp)
            for r in inner]


def iter_records(buf, start: int = 0, end: Optional[int] = None) -> Iterator[LegacyRecord]:
    """Every record of a v0/v1 message set, inner ones of wrappers included, with absolute offsets."""
    for entry in read_message_set(buf, start, end):
        yield from deep_records(entry)


# --------------------------------------------------------------------------------------------------- writing

def _message(magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    """crc + body of one message (without offset and size)."""
    if key is not None and not isinstance(key, (bytes, bytearray, memoryview)):
        raise EncodeError(f"a message key must be bytes or None, not {type(key).__name__}")
    if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
        raise EncodeError(f"a message value must be bytes or None, not {type(value).__name__}")
    parts = [bytes((magic, attributes))]
    if magic == MAGIC_V1:
        parts.append(_INT64.pack(timestamp))
    for field in (key, value):
        if field is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_INT32.pack(len(field)))
            parts.append(bytes(field))
    body = b"".join(parts)
    return legacy_crc(body).to_bytes(4, "big") + body


def _entry(offset: int, message: bytes) -> bytes:
    return _OFFSET_SIZE.pack(offset, len(message)) + message


def _legacy_compress(codec: int, magic: int, data: bytes) -> bytes:
    if codec == CompressionType.SNAPPY:
        return snappy_compress_xerial(data)              # Java's SnappyOutputStream: xerial framing
    out = compress(codec, data)
    if codec == CompressionType.LZ4 and magic == MAGIC_V0:
        fixed = bytearray(out)
        fixed[6] = _lz4_header_checksum(fixed, broken=True)
        out = bytes(fixed)
    return out


def build_message_set(records: Iterable, *, magic: int, compression=None, timestamp_type=TimestampType.CREATE_TIME,
                      log_append_time: Optional[int] = None) -> bytes:
    """A v0/v1 message set of ``records`` = ``(offset, timestamp, key, value)`` (absolute offsets; timestamps
    are ignored for v0), as ``MemoryRecordsBuilder`` writes it. Uncompressed: one message per record. Compressed:
    one wrapper at the last record's offset holding the inner set (inner offsets absolute in v0, relative to the
    first record in v1); the wrapper's timestamp is the largest inner one, or ``log_append_time``."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise EncodeError(f"Invalid magic {magic} for a legacy message set")
    codec = CompressionType.of(compression)
    if codec == CompressionType.ZSTD:
        raise EncodeError(f"ZStandard compression is not supported for magic {magic}")
    log_append = int(timestamp_type) == TimestampType.LOG_APPEND_TIME and magic == MAGIC_V1
    if log_append and log_append_time is None:
        raise EncodeError("LogAppendTime needs the log_append_time")
    attributes = _TIMESTAMP_TYPE_MASK if log_append else 0
    rows = [(int(o), log_append_time if log_append else (NO_TIMESTAMP if ts is None else int(ts)), k, v)
            for o, ts, k, v in records]
    if codec == CompressionType.NONE:
        return b"".join(_entry(o, _message(magic, attributes, ts, k, v)) for o, ts, k, v in rows)
    if not rows:
        return b""
    base = rows[0][0]
    inner = b"".join(_entry(o if magic == MAGIC_V0 else o - base, _message(magic, attributes, ts, k, v))
                     for o, ts, k, v in rows)
    wrapper_ts = log_append_time if log_append else max(ts for _, ts, _, _ in rows)
    wrapper = _message(magic, attributes | codec, wrapper_ts, None, _legacy_compress(codec, magic, inner))
    return _entry(rows[-1][0], wrapper)


# ------------------------------------------------------------------------------------ LZ4 header checksum

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """xxHash32 of fewer than 16 bytes (all an LZ4 frame descriptor ever is)."""
    if len(data) >= 16:
        raise ValueError("only short inputs")
    h = (seed + _P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (_rotl((h + int.from_bytes(data[i:i + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < len(data):
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _lz4_header_checksum(frame, *, broken: bool) -> int:
    """The HC byte of an LZ4 frame without content size (descriptor = FLG, BD at bytes 4-5): the second byte of
    xxh32 over the descriptor -- or, ``broken``, over the frame magic and the descriptor (Kafka's magic 0)."""
    return (_xxh32_short(bytes(frame[0 if broken else 4:6])) >> 8) & 0xFF
