"""One record inside a v2 batch: deltas, zig-zag varints, and headers.

Theory of operation
-------------------
A record does not carry its own offset or timestamp. The batch header holds ``base_offset`` and
``base_timestamp`` once, and each record stores only how far it is from them::

    length            varint    bytes that follow, up to the end of the record
    attributes        int8      unused (0), kept for the future
    timestamp_delta   varlong   timestamp - base_timestamp
    offset_delta      varint    offset - base_offset (0, 1, 2, ... as written by producers)
    key_length        varint    -1 = null key
    key               bytes
    value_length      varint    -1 = null value (a tombstone on a compacted topic)
    value             bytes
    headers_count     varint
    headers           per header: key_length varint, key (UTF-8), value_length varint (-1 = null), value

Deltas are small numbers, and small numbers should take few bytes, so every integer here is a *varint*:
seven bits per byte, the high bit meaning "another byte follows". Signed numbers are first *zig-zag* mapped
(0, -1, 1, -2 ... become 0, 1, 2, 3 ...) so that -1 (a null length) also fits in one byte. A record with a
short key and value costs a handful of bytes of framing instead of the 20+ of fixed-width fields, which
is why the v2 format (KIP-98) is smaller than the old message sets despite carrying headers and
transaction metadata.

The absolute values come back when reading: ``offset = base_offset + offset_delta``, and the timestamp is
``base_timestamp + timestamp_delta``, except in a batch stamped with LogAppendTime, where every record's
timestamp is the batch's ``max_timestamp`` (the broker's clock at append time).

This module holds the hot loops. They are plain Python written for speed: the common one- and two-byte
varints are decoded inline (a table maps them to their values, and another holds the encodings of all
small numbers), everything is sliced straight out of a ``bytes`` object, and records are tuples built with
one ``tuple.__new__`` call. Every length is checked against the bytes that remain before it is used. When
the fast loop fails, :mod:`kafkalab.records.annotate` (the readable reference decoder) walks the same bytes
again to name the exact field and byte.

A broker needs less than a consumer. To validate an uncompressed batch it must walk every record (the
lengths must add up, every varint must be well formed, header keys must be UTF-8), but it keeps nothing of
them but a summary: the smallest and largest timestamp delta, how many keys are null, whether the offset
deltas run 0, 1, 2 ... :func:`scan_records` is that walk. It is the decode loop with the record-building
parts left out (same template, same checks), and it reads the buffer in place, so the request's buffer is never copied and no per-record object is made.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecord.java`` and
``clients/src/main/java/org/apache/kafka/common/utils/ByteUtils.java`` (varints).
"""
from __future__ import annotations

import enum
import gc
from typing import NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError, EncodeError

__all__ = ["Record", "SimpleRecord", "TimestampType", "decode_records", "encode_records", "MIN_RECORD_SIZE",
           "gc_paused", "RecordsSummary", "scan_records"]

#: The smallest possible record: seven one-byte fields (length, attributes, two deltas, two null lengths,
#: zero headers). A record count larger than ``remaining bytes / 7`` cannot be honest.
MIN_RECORD_SIZE = 7

class TimestampType(enum.IntEnum):
    """Bit 3 of the batch attributes: who set the timestamps (Kafka's ``TimestampType``)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0       # the producer's clock
    LOG_APPEND_TIME = 1   # the broker's clock when it appended the batch


class Record(NamedTuple):
    """A decoded record. ``offset`` and ``timestamp`` are absolute; the deltas are what was on the wire."""

    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple  # of (str, bytes | None)
    timestamp_type: int = TimestampType.CREATE_TIME
    attributes: int = 0
    offset_delta: int = 0
    timestamp_delta: int = 0


class SimpleRecord(NamedTuple):
    """A record to write: what a producer hands to the batch builder. ``timestamp`` None = now.

    Named after Kafka's ``SimpleRecord`` (which orders its arguments timestamp, key, value, headers)."""

    key: Optional[bytes] = None
    value: Optional[bytes] = None
    headers: tuple = ()
    timestamp: Optional[int] = None


# ------------------------------------------------------------------------------------------------ varints

def _read_varint(data, pos: int, limit: int, what: str):
    """The slow path for varints the decoder does not inline (and for malformed ones).

    Returns the *raw* (still zig-zag mapped) value; ``limit`` is 5 for a 32-bit varint, 10 for a varlong.
    """
    start = pos
    raw = 0
    shift = 0
    n = len(data)
    while True:
        if pos >= n:
            raise DecodeError(f"ran out of bytes inside the {what} varint", offset=start)
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if pos - start >= limit:
            raise DecodeError(f"{what} varint is longer than {limit} bytes", offset=start)
    if raw >> (32 if limit == 5 else 64):
        raise DecodeError(f"{what} varint does not fit in {32 if limit == 5 else 64} bits", offset=start)
    return raw, pos


def _uvarint(z: int) -> bytes:
    """Unsigned varint bytes of ``z`` (already zig-zag mapped)."""
    if z < 0x200000:
        if z < 0x80:
            return bytes((z,))
        if z < 0x4000:
            return bytes(((z & 0x7F) | 0x80, z >> 7))
        return bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


#: The encodings of every varint of one or two bytes (raw values below 2**14), ready to use: the encoder
#: looks lengths and deltas up here instead of computing them (about 0.7 MB, built once at import).
_SMALL = 0x4000
_VARINTS = tuple(_uvarint(z) for z in range(_SMALL))
#: ... and their zig-zag decoded values, so that the decoder turns a one- or two-byte varint into its value
#: with one lookup (about 0.6 MB).
_UNZIGZAG = tuple((z >> 1) ^ -(z & 1) for z in range(_SMALL))


def _varint(v: int) -> bytes:
    if not -0x80000000 <= v <= 0x7FFFFFFF:
        raise EncodeError(f"{v} does not fit a 32-bit varint")
    return _uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def _varlong(v: int) -> bytes:
    if not -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"{v} does not fit a 64-bit varlong")
    return _uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


class gc_paused:
    """Pause Python's cyclic garbage collector while ``n`` records are built or decoded (if ``n`` is large).

    Each record allocates a few small tuples. None of them can ever form a reference cycle, yet the cyclic
    collector wakes up every 700 new containers and walks them all again: about a sixth of the time of a
    10,000-record decode. Reference counting still frees everything as usual; the collector is switched
    back on afterwards (unless it was already off), even when decoding fails.
    """

    __slots__ = ("paused",)

    def __init__(self, n: int):
        self.paused = n > 256 and gc.isenabled()

    def __enter__(self):
        if self.paused:
            gc.disable()

    def __exit__(self, *exc):
        if self.paused:
            gc.enable()
        return False


# ------------------------------------------------------------------------------------------------ decoding

def _bad(reason: str, offset: int, index: int, field: str) -> DecodeError:
    return DecodeError(reason, path=f"records[{index}].{field}" if field else f"records[{index}]", offset=offset)


# The decode loop is written once, below, as a template: each ``VARINT(target, limit, "what")`` line expands
# into the same inlined varint reader (one byte: a table lookup; two bytes: one more; longer ones, up to
# ``limit`` bytes: the slow path ``_read_varint``), and ``VARINT3`` also inlines the three-byte case that the
# deltas of big batches need. Inlining matters: a function call per varint would cost more than the varint.
_VARINT = """\
b = data[pos]
if b < 0x80:
    {target} = unzig[b]
    pos += 1
else:
    c = data[pos + 1]
    if c < 0x80:
        {target} = unzig[(b & 0x7F) | (c << 7)]
        pos += 2
    else:
        b, pos = varint(data, pos, {limit}, {what})
        {target} = (b >> 1) ^ -(b & 1)"""

_VARINT3 = """\
b = data[pos]
if b < 0x80:
    {target} = unzig[b]
    pos += 1
else:
    c = data[pos + 1]
    if c < 0x80:
        {target} = unzig[(b & 0x7F) | (c << 7)]
        pos += 2
    else:
        d = data[pos + 2]
        if d < 0x80:
            b = (b & 0x7F) | (c & 0x7F) << 7 | d << 14
            pos += 3
        else:
            b, pos = varint(data, pos, {limit}, {what})
        {target} = (b >> 1) ^ -(b & 1)"""

_DECODE_LOOP = """\
def _decode_loop(data, pos, end, count, base_offset, base_timestamp, timestamp_type, log_append, max_timestamp,
                 records):
    append = records.append
    new = tuple.__new__
    cls = Record
    varint = _read_varint
    unzig = _UNZIGZAG
    for i in range(count):
        VARINT(length, 5, "length")
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise _bad(f"record length {length} but {end - pos} bytes remain", pos, i, "length")
        attributes = data[pos]
        if attributes > 127:
            attributes -= 256
        pos += 1
        VARINT3(ts_delta, 10, "timestamp_delta")
        VARINT3(offset_delta, 5, "offset_delta")
        VARINT(n, 5, "key_length")
        if n >= 0:
            if n > rec_end - pos:
                raise _bad(f"key_length {n} but the record has {rec_end - pos} bytes left", pos, i, "key")
            key = data[pos:pos + n]
            pos += n
        elif n == -1:
            key = None
        else:
            raise _bad(f"invalid key_length {n}", pos, i, "key_length")
        VARINT(n, 5, "value_length")
        if n >= 0:
            if n > rec_end - pos:
                raise _bad(f"value_length {n} but the record has {rec_end - pos} bytes left", pos, i, "value")
            value = data[pos:pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise _bad(f"invalid value_length {n}", pos, i, "value_length")
        if data[pos] == 0:
            headers = ()
            pos += 1
        else:
            VARINT(n, 5, "headers_count")
            if n < 0 or 2 * n > rec_end - pos:
                raise _bad(f"invalid headers_count {n} with {rec_end - pos} bytes left", pos, i, "headers_count")
            # Few headers: grow a tuple (cheapest); many: a list (tuple growth would be quadratic).
            headers = () if n <= 16 else []
            h = n
            while h:                              # (cheaper than a for loop over range(n))
                h -= 1
                VARINT(hk, 5, "header key_length")
                if hk < 0 or hk > rec_end - pos:
                    raise _bad(f"invalid header key_length {hk}", pos, i, "headers")
                hkey = data[pos:pos + hk].decode()  # UTF-8; no argument is the fast path
                pos += hk
                VARINT(hv, 5, "header value_length")
                if hv >= 0:
                    if hv > rec_end - pos:
                        raise _bad(f"header value_length {hv} but the record has {rec_end - pos} bytes left",
                                   pos, i, "headers")
                    headers += ((hkey, data[pos:pos + hv]),)
                    pos += hv
                elif hv == -1:
                    headers += ((hkey, None),)
                else:
                    raise _bad(f"invalid header value_length {hv}", pos, i, "headers")
            if n > 16:
                headers = tuple(headers)
        if pos != rec_end:
            raise _bad(f"record length says {length} bytes but its fields took {pos - rec_end + length}",
                       rec_end - length, i, "length")
        append(new(cls, (base_offset + offset_delta,
                         max_timestamp if log_append else base_timestamp + ts_delta,
                         key, value, headers, timestamp_type, attributes, offset_delta, ts_delta)))
    return pos
"""


# The broker's walk: the same structure checks as _DECODE_LOOP, nothing built (see the module docstring).
_SCAN_LOOP = """\
def _scan_loop(data, pos, end, count):
    varint = _read_varint
    unzig = _UNZIGZAG
    lo, hi = 1 << 64, -1 << 64                    # beyond any varlong
    null_keys = 0
    in_order = True
    for i in range(count):
        VARINT(length, 5, "length")
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise _bad(f"record length {length} but {end - pos} bytes remain", pos, i, "length")
        pos += 1                                  # attributes: unused by the broker
        VARINT3(ts_delta, 10, "timestamp_delta")
        if ts_delta < lo:
            lo = ts_delta
        if ts_delta > hi:
            hi = ts_delta
        VARINT3(offset_delta, 5, "offset_delta")
        if offset_delta != i:
            in_order = False
        VARINT(n, 5, "key_length")
        if n >= 0:
            if n > rec_end - pos:
                raise _bad(f"key_length {n} but the record has {rec_end - pos} bytes left", pos, i, "key")
            pos += n
        elif n == -1:
            null_keys += 1
        else:
            raise _bad(f"invalid key_length {n}", pos, i, "key_length")
        VARINT(n, 5, "value_length")
        if n >= 0:
            if n > rec_end - pos:
                raise _bad(f"value_length {n} but the record has {rec_end - pos} bytes left", pos, i, "value")
            pos += n
        elif n != -1:
            raise _bad(f"invalid value_length {n}", pos, i, "value_length")
        if data[pos] == 0:
            pos += 1
        else:
            VARINT(n, 5, "headers_count")
            if n < 0 or 2 * n > rec_end - pos:
                raise _bad(f"invalid headers_count {n} with {rec_end - pos} bytes left", pos, i, "headers_count")
            h = n
            while h:
                h -= 1
                VARINT(hk, 5, "header key_length")
                if hk < 0 or hk > rec_end - pos:
                    raise _bad(f"invalid header key_length {hk}", pos, i, "headers")
                str(data[pos:pos + hk], "utf-8")  # header keys must be UTF-8
                pos += hk
                VARINT(hv, 5, "header value_length")
                if hv >= 0:
                    if hv > rec_end - pos:
                        raise _bad(f"header value_length {hv} but the record has {rec_end - pos} bytes left",
                                   pos, i, "headers")
                    pos += hv
                elif hv != -1:
                    raise _bad(f"invalid header value_length {hv}", pos, i, "headers")
        if pos != rec_end:
            raise _bad(f"record length says {length} bytes but its fields took {pos - rec_end + length}",
                       rec_end - length, i, "length")
    if not count:
        lo = hi = 0
    return pos, lo, hi, null_keys, in_order
"""


def _expand(template: str) -> str:
    """Replace every ``VARINT(...)`` / ``VARINT3(...)`` line of ``template`` by its inlined code."""
    out = []
    for line in template.splitlines():
        stripped = line.lstrip()
        for macro, body in (("VARINT3(", _VARINT3), ("VARINT(", _VARINT)):
            if stripped.startswith(macro):
                target, limit, what = (a.strip() for a in stripped[len(macro):-1].split(",", 2))
                indent = line[:len(line) - len(stripped)]
                code = body.format(target=target, limit=limit, what=what)
                out.extend(indent + c for c in code.splitlines())
                break
        else:
            out.append(line)
    return "\n".join(out) + "\n"


_namespace: dict = {}
exec(compile(_expand(_DECODE_LOOP), "<kafkalab.records.record decode loop>", "exec"), globals(), _namespace)
_decode_loop = _namespace["_decode_loop"]
exec(compile(_expand(_SCAN_LOOP), "<kafkalab.records.record scan loop>", "exec"), globals(), _namespace)
_scan_loop = _namespace["_scan_loop"]


def decode_records(data: bytes, pos: int, end: int, count: int, base_offset: int, base_timestamp: int,
                   timestamp_type: int, max_timestamp: int) -> list:
    """Decode ``count`` records from ``data[pos:end]`` (``data`` must be ``bytes``).

    Raises DecodeError (offsets relative to ``data``) on anything malformed, including bytes left over.
    """
    if count < 0:
        raise DecodeError(f"negative records_count {count}", path="records_count", offset=pos)
    if count * MIN_RECORD_SIZE > end - pos:
        raise DecodeError(f"records_count {count} needs at least {count * MIN_RECORD_SIZE} bytes but only "
                          f"{end - pos} remain", path="records_count", offset=pos)
    log_append = timestamp_type == TimestampType.LOG_APPEND_TIME
    records: list = []
    with gc_paused(count):
        try:
            pos = _decode_loop(data, pos, end, count, base_offset, base_timestamp, TimestampType(timestamp_type),
                               log_append, max_timestamp, records)
        except DecodeError as e:
            if not e.path:
                e.path = f"records[{len(records)}]"
            raise
        except IndexError:
            raise _bad("the record runs past the end of the batch", end, len(records), "") from None
        except UnicodeDecodeError as e:
            raise _bad(f"header key is not valid UTF-8 ({e.reason})", e.start, len(records), "headers") from None
    if pos != end:
        raise DecodeError(f"{end - pos} bytes left over after the last of {count} records",
                          path=f"records[{count}]", offset=pos)
    return records


class RecordsSummary(NamedTuple):
    """What a broker keeps of a walk over a batch's records (:func:`scan_records`)."""

    count: int
    min_timestamp_delta: int     # 0 when there are no records
    max_timestamp_delta: int
    null_keys: int               # records without a key (refused by a compacted topic)
    offsets_in_order: bool       # offset deltas are 0, 1, 2 ... (what a producer writes)


def scan_records(data, pos: int, end: int, count: int) -> RecordsSummary:
    """Check that ``data[pos:end]`` holds exactly ``count`` well-formed records, without decoding them.

    ``data`` is any bytes-like object of single bytes (``bytes``, ``bytearray``, ``memoryview``), read in place. Raises DecodeError like
    :func:`decode_records`, though with less precise messages: a caller that must explain a failure decodes
    the batch again (the reference decoder names the field and byte).
    """
    if count < 0:
        raise DecodeError(f"negative records_count {count}", path="records_count", offset=pos)
    if count * MIN_RECORD_SIZE > end - pos:
        raise DecodeError(f"records_count {count} needs at least {count * MIN_RECORD_SIZE} bytes but only "
                          f"{end - pos} remain", path="records_count", offset=pos)
    try:
        pos, lo, hi, null_keys, in_order = _scan_loop(data, pos, end, count)
    except IndexError:
        raise DecodeError("a record runs past the end of the buffer", path="records", offset=end) from None
    except UnicodeDecodeError as e:
        raise DecodeError(f"header key is not valid UTF-8 ({e.reason})", path="records", offset=pos) from None
    if pos != end:
        raise DecodeError(f"{end - pos} bytes left over after the last of {count} records",
                          path=f"records[{count}]", offset=pos)
    return RecordsSummary(count, lo, hi, null_keys, in_order)


# ------------------------------------------------------------------------------------------------ encoding

def _check_bytes(v, what: str) -> bytes:
    if v is None or type(v) is bytes:
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise EncodeError(f"record {what} must be bytes or None, not {type(v).__name__}")


def encode_records(items, out: list) -> None:
    """Append the encoding of each record to ``out`` (to be joined once by the caller).

    ``items`` yields ``(attributes, timestamp_delta, offset_delta, key, value, headers)``. The record's
    length prefix is computed from the sizes of its parts, so nothing is joined per record.
    """
    table = _VARINTS
    small = _SMALL
    half = small >> 1
    extend = out.extend
    header_keys: dict = {}                    # header key -> its key_length varint + UTF-8 bytes
    try:
        for attributes, ts_delta, offset_delta, key, value, headers in items:
            z = (ts_delta << 1) ^ (ts_delta >> 63)
            if 0 <= z < small:
                tsb = table[z]
            elif 0 <= z < 0x200000:
                tsb = bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
            else:
                tsb = _varlong(ts_delta)
            if 0 <= offset_delta < half:
                ob = table[offset_delta << 1]
            elif 0 <= offset_delta < 0x100000:
                z = offset_delta << 1
                ob = bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
            else:
                ob = _varint(offset_delta)
            if key is None:
                kb = b"\x01"
                key = b""
                size = 3
            else:
                if type(key) is not bytes:
                    key = _check_bytes(key, "key")
                n = len(key)
                kb = table[n << 1] if n < half else _uvarint(n << 1)
                size = 2 + n + len(kb)                   # attributes + headers_count (one byte if none)
            if value is None:
                vb = b"\x01"
                value = b""
                size += 1
            else:
                if type(value) is not bytes:
                    value = _check_bytes(value, "value")
                n = len(value)
                vb = table[n << 1] if n < half else _uvarint(n << 1)
                size += n + len(vb)
            size += len(tsb) + len(ob)
            if headers:
                n = len(headers)
                hp = [table[n << 1] if n < half else _uvarint(n << 1)]
                size += len(hp[0]) - 1
                for hkey, hvalue in headers:
                    hk = header_keys.get(hkey)
                    if hk is None:
                        hk = header_keys[hkey] = _header_key(hkey)
                    if hvalue is None:
                        hp += (hk, b"\x01")
                        size += len(hk) + 1
                    else:
                        if type(hvalue) is not bytes:
                            hvalue = _check_bytes(hvalue, "header value")
                        m = len(hvalue)
                        hb = table[m << 1] if m < half else _uvarint(m << 1)
                        hp += (hk, hb, hvalue)
                        size += len(hk) + len(hb) + m
                extend((table[size << 1] if size < half else _uvarint(size << 1),
                        b"\x00" if not attributes else _int8(attributes), tsb, ob, kb, key, vb, value))
                extend(hp)
            else:
                extend((table[size << 1] if size < half else _uvarint(size << 1),
                        b"\x00" if not attributes else _int8(attributes), tsb, ob, kb, key, vb, value, b"\x00"))
    except TypeError as e:  # an int field that is not an int, a key that has no length ...
        raise EncodeError(f"cannot encode record: {e}") from None


def _header_key(hkey) -> bytes:
    """key_length varint + UTF-8 bytes of a header key (header keys are strings, never null)."""
    if type(hkey) is not str:
        raise EncodeError(f"header keys must be str, not {type(hkey).__name__}")
    data = hkey.encode()
    n = len(data)
    return (_VARINTS[n << 1] if n < _SMALL >> 1 else _uvarint(n << 1)) + data


def _int8(v: int) -> bytes:
    if not -128 <= v <= 127:
        raise EncodeError(f"record attributes {v} do not fit an int8")
    return bytes((v & 0xFF,))
