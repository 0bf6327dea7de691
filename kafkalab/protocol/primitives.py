"""The primitive types of the Kafka protocol, one small function each.

Theory of operation
-------------------
Everything on Kafka's wire is built from a handful of primitive types. Fixed-width integers are big-endian
(network byte order). Variable-length integers come in two flavours that learners often confuse:

* **unsigned varint** -- 7 bits per byte, low bits first, high bit = "more bytes follow". Flexible protocol
  versions (KIP-482) use it for lengths, written as ``N + 1`` so that 0 can mean null: a compact string of
  3 bytes starts with ``0x04``.
* **varint / varlong** -- the same encoding applied to a *zig-zag* mapped signed number
  (``(n << 1) ^ (n >> 63)``), so that small negative numbers stay short: -1 is ``0x01``. Records inside a
  RecordBatch use these (Kafka's ``ByteUtils.writeVarint``).

Strings and byte arrays come in a *classic* form (an int16 or int32 length, -1 = null) and a *compact* form
(unsigned varint N+1, 0 = null). Arrays likewise (int32 count or unsigned varint N+1).

Every reader here has the signature ``read_x(buf, pos) -> (value, new_pos)`` and every writer
``write_x(value) -> bytes``; none of them trusts a length: a length is checked against the bytes that
remain *before* anything is allocated, and every failure raises :class:`~kafkalab.protocol.errors.DecodeError`.
These functions are the readable reference; :mod:`kafkalab.protocol.codec` generates faster straight-line
code with the same checks.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/protocol/types/Type.java``,
``clients/src/main/java/org/apache/kafka/common/utils/ByteUtils.java``.
"""
from __future__ import annotations

import struct
import uuid

from kafkalab.protocol.errors import DecodeError, EncodeError

__all__ = [
    "FIXED", "read_fixed", "write_fixed",
    "read_unsigned_varint", "write_unsigned_varint", "read_varint", "write_varint", "read_varlong",
    "write_varlong", "zigzag_encode", "zigzag_decode",
    "read_string", "write_string", "read_bytes", "write_bytes", "read_uuid", "write_uuid",
    "read_array_length", "write_array_length",
]

#: Fixed-width primitive types: (struct format, size in bytes).
FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"), "bool": struct.Struct(">?"),
}

_INT32 = FIXED["int32"]
_INT16 = FIXED["int16"]


def _need(buf, pos: int, n: int, what: str) -> None:
    if n > len(buf) - pos:
        raise DecodeError(f"needs {n} bytes for {what} but only {max(len(buf) - pos, 0)} remain", offset=pos)


def read_fixed(kind: str, buf, pos: int):
    """Read one fixed-width value (``int8`` ... ``int64``, ``uint16``, ``uint32``, ``float64``, ``bool``)."""
    s = FIXED[kind]
    _need(buf, pos, s.size, kind.upper())
    return s.unpack_from(buf, pos)[0], pos + s.size


def write_fixed(kind: str, value) -> bytes:
    try:
        return FIXED[kind].pack(value)
    except struct.error as e:
        raise EncodeError(f"{value!r} does not fit {kind}: {e}") from None


def read_unsigned_varint(buf, pos: int, max_bytes: int = 5):
    """Read an unsigned varint of at most ``max_bytes`` bytes (5 for int32, 10 for int64)."""
    value = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("ran out of bytes inside an UNSIGNED_VARINT", offset=start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if pos - start >= max_bytes:
            raise DecodeError(f"UNSIGNED_VARINT longer than {max_bytes} bytes", offset=start)


def write_unsigned_varint(value: int) -> bytes:
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag_encode(value: int, bits: int = 64) -> int:
    """Map signed to unsigned so small magnitudes stay small: 0->0, -1->1, 1->2, -2->3 ..."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def read_varint(buf, pos: int):
    """A zig-zag signed 32-bit varint (record fields: lengths, offset deltas, header counts)."""
    start = pos
    raw, pos = read_unsigned_varint(buf, pos, 5)
    if raw > 0xFFFFFFFF:
        raise DecodeError("VARINT does not fit in 32 bits", offset=start)
    return zigzag_decode(raw), pos


def read_varlong(buf, pos: int):
    """A zig-zag signed 64-bit varint (a record's timestamp delta)."""
    start = pos
    raw, pos = read_unsigned_varint(buf, pos, 10)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise DecodeError("VARLONG does not fit in 64 bits", offset=start)
    return zigzag_decode(raw), pos


def write_varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise EncodeError(f"{value} does not fit a 32-bit varint")
    return write_unsigned_varint(zigzag_encode(value, 32))


def write_varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise EncodeError(f"{value} does not fit a 64-bit varlong")
    return write_unsigned_varint(zigzag_encode(value, 64))


def _read_length(buf, pos: int, compact: bool, wide: bool):
    """A length prefix: classic int16/int32 or compact unsigned varint N+1. Returns (n or -1, pos)."""
    if compact:
        raw, pos = read_unsigned_varint(buf, pos)
        return raw - 1, pos
    if wide:
        _need(buf, pos, 4, "an INT32 length")
        return _INT32.unpack_from(buf, pos)[0], pos + 4
    _need(buf, pos, 2, "an INT16 length")
    return _INT16.unpack_from(buf, pos)[0], pos + 2


def read_string(buf, pos: int, *, compact: bool = False, nullable: bool = False):
    """A UTF-8 string: classic (int16 length) or compact (unsigned varint N+1); -1 / 0 is null."""
    start = pos
    n, pos = _read_length(buf, pos, compact, wide=False)
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        what = "null" if n == -1 else f"negative length {n}"
        raise DecodeError(f"non-nullable STRING has {what}", offset=start)
    if compact and n > 0x7FFF:
        raise DecodeError(f"STRING of {n} bytes is longer than the maximum 32767", offset=start)
    _need(buf, pos, n, "a STRING")
    try:
        return str(buf[pos:pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise DecodeError(f"STRING is not valid UTF-8 ({e.reason})", offset=pos + e.start) from None


def write_string(value, *, compact: bool = False, nullable: bool = False) -> bytes:
    if value is None:
        if not nullable:
            raise EncodeError("null given for a non-nullable string")
        return b"\x00" if compact else b"\xff\xff"
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
    if compact:
        return write_unsigned_varint(len(data) + 1) + data
    return _INT16.pack(len(data)) + data


def read_bytes(buf, pos: int, *, compact: bool = False, nullable: bool = False):
    """A byte array: classic (int32 length) or compact (unsigned varint N+1); -1 / 0 is null."""
    start = pos
    n, pos = _read_length(buf, pos, compact, wide=True)
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        what = "null" if n == -1 else f"negative length {n}"
        raise DecodeError(f"non-nullable BYTES has {what}", offset=start)
    _need(buf, pos, n, "BYTES")
    return bytes(buf[pos:pos + n]), pos + n


def write_bytes(value, *, compact: bool = False, nullable: bool = False) -> bytes:
    if value is None:
        if not nullable:
            raise EncodeError("null given for non-nullable bytes")
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    if compact:
        return write_unsigned_varint(len(value) + 1) + bytes(value)
    return _INT32.pack(len(value)) + bytes(value)


def read_uuid(buf, pos: int):
    _need(buf, pos, 16, "a UUID")
    return uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


def write_uuid(value: uuid.UUID) -> bytes:
    return value.bytes


def read_array_length(buf, pos: int, *, compact: bool = False, nullable: bool = False):
    """An array's element count, checked against the bytes that remain (CVE-2022-34917).

    Returns ``(count, pos)`` with ``count = None`` for a null array. Each element takes at least one byte,
    so a count larger than the remaining bytes is rejected before anything is allocated, with Kafka's
    own wording.
    """
    start = pos
    n, pos = _read_length(buf, pos, compact, wide=True)
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        what = "null" if n == -1 else f"negative length {n}"
        raise DecodeError(f"non-nullable ARRAY has {what}", offset=start)
    remaining = len(buf) - pos
    if n > remaining:
        raise DecodeError(f"Tried to allocate a collection of size {n}, but there are only {remaining} "
                          f"bytes remaining.", offset=start)
    return n, pos


def write_array_length(count, *, compact: bool = False) -> bytes:
    """An array's element count; ``None`` is the null array. A negative count has no encoding (``-1`` would
    read back as null), so it is an EncodeError."""
    if count is None:
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    if count < 0:
        raise EncodeError(f"an array cannot have {count} elements")
    return write_unsigned_varint(count + 1) if compact else _INT32.pack(count)
