"""The annotated decoder's half for message formats v0 and v1: every byte of a message set with its field path.

Theory of operation
-------------------
:func:`~kafkalab.records.annotate.annotate_records` hands each entry whose magic byte (at offset 16 in every
format) is 0 or 1 to :func:`annotate_legacy_message`, which returns rows in the same shape as for v2 batches, so hex
dumps and field tables show old and new formats side by side::

    records.messages[0]               LEGACY_MESSAGE   the LegacyRecord
    records.messages[0].offset        INT64            0
    records.messages[0].message_size  INT32            26
    records.messages[0].crc           UINT32           CRC-32 of magic..value
    records.messages[0].magic         INT8             1
    records.messages[0].attributes    INT8             codec (bits 0-2), LogAppendTime (bit 3, v1)
    records.messages[0].timestamp     INT64            v1 only
    records.messages[0].key_length    INT32            -1 (null)
    records.messages[0].key           RAW_BYTES        None
    records.messages[0].value_length  INT32            5
    records.messages[0].value         RAW_BYTES        b'hello'

A compressed wrapper's ``value`` row is named after its framing (``GZIP``, ``SNAPPY_XERIAL``, ``LZ4_FRAME``) and
holds a :class:`~kafkalab.records.annotate.DecompressedRecords` whose rows annotate the inner message set (inner
offsets as written: absolute in v0, relative in v1). A message cut short at the end is a ``PARTIAL_MESSAGE``
row; a CRC that does not match adds an ``INVALID_RECORDS`` row over the ``crc`` field.

Mirrors the layout of ``LegacyRecord`` (``clients/src/main/java/org/apache/kafka/common/record/``).
"""
from __future__ import annotations

import struct

from kafkalab.protocol.annotate import Row
from kafkalab.protocol.errors import DecodeError
from kafkalab.records.compression import CompressionType, compression_format
from kafkalab.records.legacy import (LOG_OVERHEAD, MAGIC_V1, RECORD_OVERHEAD_V0, LegacyRecord, _legacy_decompress,
                                     legacy_crc)

__all__ = ["annotate_legacy_message"]

_HEAD = struct.Struct(">qiIbb")


def annotate_legacy_message(buf, pos: int, end: int, mpath: str, depth: int, rows: list, strict: bool, cap: int,
                     inner: bool = False) -> int:
    """Rows for the v0/v1 message at ``buf[pos]``; returns the position after it."""
    remaining = end - pos
    if remaining < LOG_OVERHEAD + 6:
        _partial(buf, pos, end, mpath, depth, rows)
        return end
    offset, size, crc, magic, attributes = _HEAD.unpack_from(buf, pos)
    if size < RECORD_OVERHEAD_V0:
        raise DecodeError(f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                          path=f"{mpath}.message_size", offset=pos + 8)
    if size > remaining - LOG_OVERHEAD:
        _partial(buf, pos, end, mpath, depth, rows)
        return end
    mend = pos + LOG_OVERHEAD + size
    slot = len(rows)
    fields = [("offset", pos, pos + 8, "INT64", offset), ("message_size", pos + 8, pos + 12, "INT32", size),
              ("crc", pos + 12, pos + 16, "UINT32", crc), ("magic", pos + 16, pos + 17, "INT8", magic),
              ("attributes", pos + 17, pos + 18, "INT8", attributes)]
    p = pos + 18
    timestamp = -1
    if magic == MAGIC_V1:
        if mend - p < 16:
            raise DecodeError(f"v1 message of {size} bytes has no room for its timestamp", path=f"{mpath}.timestamp",
                              offset=p)
        timestamp = struct.unpack_from(">q", buf, p)[0]
        fields.append(("timestamp", p, p + 8, "INT64", timestamp))
        p += 8
    for name, s, e, wire, value in fields:
        rows.append(Row(f"{mpath}.{name}", s, e, wire, value, depth + 1))
    key, p = _bytes(buf, p, mend, f"{mpath}.key", depth + 1, rows)
    valid = legacy_crc(memoryview(buf)[pos + 16:mend]) == crc
    if not valid:
        err = DecodeError(f"message is corrupt: stored crc {crc:#010x}, computed crc "
                          f"{legacy_crc(memoryview(buf)[pos + 16:mend]):#010x}", path=f"{mpath}.crc", offset=pos + 12)
        if strict:
            raise err
        rows.append(Row(f"{mpath}.error", pos + 12, pos + 16, "INVALID_RECORDS", str(err), depth + 1))
    codec = attributes & 0x07
    if codec and not inner:
        value = _wrapper_value(buf, p, mend, mpath, depth + 1, rows, strict, cap, codec, magic)
    else:
        value, p = _bytes(buf, p, mend, f"{mpath}.value", depth + 1, rows)
    record = LegacyRecord(offset, magic, attributes, timestamp, key, value, crc, valid, pos, size + LOG_OVERHEAD)
    rows.insert(slot, Row(mpath, pos, mend, "LEGACY_MESSAGE", record, depth))
    return mend


def _bytes(buf, p: int, end: int, path: str, depth: int, rows: list):
    if end - p < 4:
        raise DecodeError("length cut short", path=f"{path}_length", offset=p)
    n = struct.unpack_from(">i", buf, p)[0]
    rows.append(Row(f"{path}_length", p, p + 4, "INT32", n, depth))
    p += 4
    if n < -1 or n > end - p:
        raise DecodeError(f"invalid length {n} ({end - p} bytes left in the message)", path=f"{path}_length",
                          offset=p - 4)
    if n == -1:
        rows.append(Row(path, p, p, "RAW_BYTES", None, depth))
        return None, p
    value = bytes(buf[p:p + n])
    rows.append(Row(path, p, p + n, "RAW_BYTES", value, depth))
    return value, p + n


def _wrapper_value(buf, p, mend, mpath, depth, rows, strict, cap, codec, magic):
    from kafkalab.records.annotate import DecompressedRecords

    if mend - p < 4:
        raise DecodeError("length cut short", path=f"{mpath}.value_length", offset=p)
    n = struct.unpack_from(">i", buf, p)[0]
    rows.append(Row(f"{mpath}.value_length", p, p + 4, "INT32", n, depth))
    p += 4
    if n < 0 or n > mend - p:
        raise DecodeError(f"invalid compressed value length {n}", path=f"{mpath}.value_length", offset=p - 4)
    payload = bytes(buf[p:p + n])
    if codec > CompressionType.LZ4:
        raise DecodeError(f"codec {codec} cannot wrap a v{magic} message set", path=f"{mpath}.attributes",
                          offset=p - 4)
    try:
        data = _legacy_decompress(codec, magic, payload, cap)
    except DecodeError as e:
        raise DecodeError(e.reason, path=f"{mpath}.value", offset=p + (e.offset or 0)) from None
    inner_rows: list = []
    q, i = 0, 0
    try:
        while q < len(data):
            q = annotate_legacy_message(data, q, len(data), f"{mpath}.value.messages[{i}]", depth + 1, inner_rows, strict,
                                 cap, inner=True)
            i += 1
    except DecodeError as e:
        if strict:
            raise
        inner_rows.append(Row(f"{mpath}.value.error", e.offset or 0, len(data), "INVALID_RECORDS", str(e), depth + 1))
    rows.append(Row(f"{mpath}.value", p, p + n, compression_format(codec, payload),
                    DecompressedRecords(CompressionType(codec), data, tuple(inner_rows)), depth))
    return payload


def _partial(buf, pos, end, mpath, depth, rows) -> None:
    rows.append(Row(mpath, pos, end, "PARTIAL_MESSAGE", None, depth))
    last = pos
    for name, s, e, fmt in (("offset", 0, 8, ">q"), ("message_size", 8, 12, ">i")):
        if pos + e > end:
            break
        rows.append(Row(f"{mpath}.{name}", pos + s, pos + e, "INT64" if name == "offset" else "INT32",
                        struct.unpack_from(fmt, buf, pos + s)[0], depth + 1))
        last = pos + e
    rows.append(Row(f"{mpath}.truncated", last, end, "RAW_BYTES", bytes(buf[last:end]), depth + 1))
