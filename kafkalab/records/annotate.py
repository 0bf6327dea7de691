"""The annotated record decoder: every byte of a ``records`` blob with its field path, for hex dumps.

Theory of operation
-------------------
:func:`annotate_records` walks the batches in ``buf[start:end]`` field by field with the reference readers of
:mod:`kafkalab.protocol.primitives` and returns one :class:`~kafkalab.protocol.annotate.Row` per batch, per
header field, per record and per record field, with byte ranges absolute in ``buf``::

    records.batches[0]                        RECORD_BATCH   the BatchHeader
    records.batches[0].base_offset            INT64          0
    ...
    records.batches[0].records_count          INT32          3
    records.batches[0].records                ARRAY          3 (record count)
    records.batches[0].records[0]             RECORD         the decoded Record
    records.batches[0].records[0].length      VARINT         24
    records.batches[0].records[0].key_length  VARINT         5
    records.batches[0].records[0].key         RAW_BYTES      b'key-0'
    records.batches[0].records[0].headers[0]  HEADER         ('trace', b'1')
    ...

Container rows (batch, records, record, header) span their children, so the deepest row covering a byte
says what that byte is. ``RAW_BYTES``/``RAW_STRING`` rows hold just the data; their length is the
``*_length`` VARINT row before them, and a null or empty key/value gets a zero-width row. For an
uncompressed batch the leaf rows tile every byte exactly.

Compressed batches: the bytes after the header are one compressed block, so ``records`` becomes a single
row whose wire type names the framing (``GZIP``, ``SNAPPY_RAW``, ``SNAPPY_XERIAL``, ``LZ4_FRAME``,
``ZSTD_FRAME``). Its value is a :class:`DecompressedRecords`: the inflated bytes and *their own* rows, with
the same paths as in an uncompressed batch but offsets into ``DecompressedRecords.data``. Keeping them
nested rather than in the returned list means every row the function returns is a range of ``buf``, which
is what a hex-dump renderer relies on; a renderer draws the nested rows as a second dump of the inflated
bytes.

Errors: with ``strict=False`` (the default, and what a hex dump wants) a malformed batch ends the walk with
an ``INVALID_RECORDS`` row at the failing byte and the rows decoded so far are kept; a CRC mismatch adds an
``INVALID_RECORDS`` row over the ``crc`` field and the walk continues. ``strict=True`` raises
:class:`~kafkalab.protocol.errors.DecodeError` instead (``.rows`` holds the rows so far). A batch cut short
at the end of the buffer (normal at the end of a Fetch response) becomes a ``PARTIAL_RECORD_BATCH`` row
with the header fields that fit and a ``truncated`` row for the rest.

Message sets of magic 0 and 1 (Produce v0-2, Fetch v0-3) are annotated by
:mod:`kafkalab.records.annotate_legacy`, as ``messages[i]`` rows.

Mirrors the wire layout of ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java``
and ``DefaultRecord.java``; the row format is :mod:`kafkalab.protocol.annotate`'s.
"""
from __future__ import annotations

import struct
from typing import NamedTuple, Optional

from kafkalab.protocol import primitives as P
from kafkalab.protocol.annotate import Row
from kafkalab.protocol.errors import DecodeError
from kafkalab.records.compression import (DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compression_format,
                                          decompress)
from kafkalab.records.crc import ATTRIBUTES_OFFSET, crc32c
from kafkalab.records.header import (HEADER, HEADER_FIELD_OFFSETS, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
                                     BatchHeader, _check_magic_and_length)
from kafkalab.records.annotate_legacy import annotate_legacy_message
from kafkalab.records.legacy import MAGIC_OFFSET
from kafkalab.records.record import MIN_RECORD_SIZE, Record, TimestampType

__all__ = ["annotate_records", "DecompressedRecords", "explain_records_error"]

_I8 = struct.Struct(">b")


class DecompressedRecords(NamedTuple):
    """The value of a compressed batch's ``records`` row: the inflated bytes and rows over them."""

    compression_type: CompressionType
    data: bytes
    rows: tuple

    def __repr__(self) -> str:  # short: field tables show it next to the compressed bytes
        records = sum(1 for r in self.rows if r.wire_type in ("RECORD", "LEGACY_MESSAGE"))
        return (f"DecompressedRecords({self.compression_type.config_name}, {len(self.data)} bytes, "
                f"{records} records, {len(self.rows)} rows)")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def annotate_records(buf, start: int = 0, end: Optional[int] = None, path: str = "", depth: int = 0, *,
                     strict: bool = False, verify_crc: bool = True, message_sets: bool = True,
                     max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list:
    """Rows for every batch in ``buf[start:end]`` (and, with ``message_sets``, every v0/v1 message; without, a
    magic other than 2 is an error, as for :func:`~kafkalab.records.decode_batches`); usable as the ``records_hook`` of
    :func:`kafkalab.protocol.annotate.annotate_message` / ``annotate_request``."""
    end = len(buf) if end is None else end
    rows: list = []
    pos = start
    index = 0
    messages = 0
    while pos < end:
        bpath = _join(path, f"batches[{index}]")
        try:
            if message_sets and end - pos > MAGIC_OFFSET and buf[pos + MAGIC_OFFSET] in (0, 1):   # v0/v1 entry
                bpath = _join(path, f"messages[{messages}]")
                pos = annotate_legacy_message(buf, pos, end, bpath, depth, rows, strict, max_decompressed_bytes)
                messages += 1
                continue
            pos = _batch(buf, pos, end, bpath, depth, rows, strict, verify_crc, max_decompressed_bytes)
        except DecodeError as e:
            if not e.path:
                e.path = bpath
            if strict:
                e.rows = rows
                raise
            at = e.offset if e.offset is not None else pos
            rows.append(Row(_join(path, "error"), at, max(at, end), "INVALID_RECORDS", str(e), depth))
            return rows
        index += 1
    return rows


def _batch(buf, pos, end, bpath, depth, rows, strict, verify_crc, cap) -> int:
    remaining = end - pos
    length = None
    if remaining >= 17:
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        try:
            _check_magic_and_length(_I8.unpack_from(buf, pos + 16)[0], length, pos)
        except DecodeError as e:
            e.path = f"{bpath}.{e.path}"
            raise
    if remaining < RECORD_BATCH_OVERHEAD or length + LOG_OVERHEAD > remaining:
        _partial(buf, pos, end, bpath, depth, rows)
        return end
    bend = pos + LOG_OVERHEAD + length
    header = BatchHeader._make(HEADER.unpack_from(buf, pos))
    rows.append(Row(bpath, pos, bend, "RECORD_BATCH", header, depth))
    for (name, s, e, wire), value in zip(HEADER_FIELD_OFFSETS, header):
        rows.append(Row(f"{bpath}.{name}", pos + s, pos + e, wire, value, depth + 1))
    if verify_crc:
        computed = crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:bend])
        if computed != header.crc:
            err = DecodeError(f"record batch is corrupt: stored crc {header.crc:#010x}, computed crc "
                              f"{computed:#010x}", path=f"{bpath}.crc", offset=pos + 17)
            if strict:
                raise err
            rows.append(Row(f"{bpath}.error", pos + 17, pos + 21, "INVALID_RECORDS", str(err), depth + 1))
    codec = header.compression_type
    rstart = pos + RECORD_BATCH_OVERHEAD
    rpath = f"{bpath}.records"
    if codec == 0:
        rows.append(Row(rpath, rstart, bend, "ARRAY", header.records_count, depth + 1))
        _records(buf, rstart, bend, header, rpath, depth + 2, rows)
        return bend
    if not isinstance(codec, CompressionType):
        raise DecodeError(f"unknown compression codec id {codec} in attributes", path=f"{bpath}.attributes",
                          offset=pos + ATTRIBUTES_OFFSET)
    payload = memoryview(buf)[rstart:bend]
    wire = compression_format(codec, payload)
    if header.records_count < 0 or header.records_count * MIN_RECORD_SIZE > cap:
        raise DecodeError(f"records_count {header.records_count} cannot fit max_decompressed_bytes={cap}",
                          path=f"{bpath}.records_count", offset=pos + 57)
    try:
        data = decompress(codec, payload, max_decompressed_bytes=cap)
    except DecodeError as e:
        raise DecodeError(e.reason, path=rpath, offset=rstart + (e.offset or 0)) from None
    inner: list = []
    try:
        _records(data, 0, len(data), header, rpath, depth + 2, inner)
    except DecodeError as e:
        if strict:
            raise DecodeError(f"{e.reason} (at byte {e.offset} of the decompressed records)", path=e.path,
                              offset=rstart) from None
        inner.append(Row(f"{rpath}.error", e.offset if e.offset is not None else 0, len(data), "INVALID_RECORDS",
                         str(e), depth + 2))
    rows.append(Row(rpath, rstart, bend, wire, DecompressedRecords(codec, data, tuple(inner)), depth + 1))
    return bend


def _partial(buf, pos, end, bpath, depth, rows) -> None:
    rows.append(Row(bpath, pos, end, "PARTIAL_RECORD_BATCH", None, depth))
    last = pos
    for name, s, e, wire in HEADER_FIELD_OFFSETS:
        if pos + e > end:
            break
        fmt = {"INT64": ">q", "INT32": ">i", "INT16": ">h", "INT8": ">b", "UINT32": ">I"}[wire]
        rows.append(Row(f"{bpath}.{name}", pos + s, pos + e, wire, struct.unpack_from(fmt, buf, pos + s)[0],
                        depth + 1))
        last = pos + e
    rows.append(Row(f"{bpath}.truncated", last, end, "RAW_BYTES", bytes(buf[last:end]), depth + 1))


def _record(f: "_Fields", end: int, header: BatchHeader, log_append: bool) -> Record:
    rstart = f.pos
    length = f.varint("length")
    if length < 0 or f.pos + length > end:
        raise DecodeError(f"record length {length} but {end - f.pos} bytes remain", path=f"{f.path}.length",
                          offset=rstart)
    rec_end = f.pos + length
    attributes = f.fixed("attributes", "int8", "INT8")
    ts_delta = f.varint("timestamp_delta", long=True)
    offset_delta = f.varint("offset_delta")
    key = f.data("key", rec_end)
    value = f.data("value", rec_end)
    hcount = f.varint("headers_count")
    if hcount < 0 or 2 * hcount > rec_end - f.pos:
        raise DecodeError(f"invalid headers_count {hcount}", path=f"{f.path}.headers_count", offset=f.last_start)
    headers = []
    for h in range(hcount):
        hp = f"{f.path}.headers[{h}]"
        hstart = f.pos
        slot = len(f.rows)
        hf = _Fields(f.data_, hstart, hp, f.depth + 1, f.rows)
        try:
            hkey = hf.data("key", rec_end, text=True)
            hvalue = hf.data("value", rec_end)
        except DecodeError:
            f.rows.insert(slot, Row(hp, hstart, max(hf.pos, hstart), "HEADER", None, f.depth))
            f.pos = hf.pos
            raise
        f.pos = hf.pos
        headers.append((hkey, hvalue))
        f.rows.insert(slot, Row(hp, hstart, f.pos, "HEADER", (hkey, hvalue), f.depth))
    if f.pos != rec_end:
        raise DecodeError(f"record length says {length} bytes but its fields took {f.pos - rec_end + length}",
                          path=f"{f.path}.length", offset=rstart)
    return Record(header.base_offset + offset_delta,
                  header.max_timestamp if log_append else header.base_timestamp + ts_delta,
                  key, value, tuple(headers), header.timestamp_type, attributes, offset_delta, ts_delta)


def explain_records_error(data, pos: int, end: int, header: BatchHeader) -> Optional[DecodeError]:
    """Walk ``data[pos:end]`` with this reference decoder and return the DecodeError it meets (None if it
    meets none). The fast decoder calls this when it fails, so that both report the same path and offset."""
    try:
        _records(data, pos, end, header, "records", 0, [])
    except DecodeError as e:
        return e
    return None


def _records(data, pos, end, header: BatchHeader, rpath, depth, rows) -> None:
    """Rows for ``header.records_count`` records in ``data[pos:end]``; offsets are positions in ``data``."""
    count = header.records_count
    if count < 0 or count * MIN_RECORD_SIZE > end - pos:
        raise DecodeError(f"records_count {count} does not fit in {end - pos} bytes",
                          path=f"{rpath}_count", offset=pos)
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    for i in range(count):
        p = f"{rpath}[{i}]"
        if pos >= end:
            raise DecodeError(f"the batch ends after {i} of {count} records", path=p, offset=pos)
        slot = len(rows)
        f = _Fields(data, pos, p, depth + 1, rows)
        try:
            record = _record(f, end, header, log_append)
        except DecodeError:
            rows.insert(slot, Row(p, pos, max(f.pos, pos), "RECORD", None, depth))
            raise
        rows.insert(slot, Row(p, pos, f.pos, "RECORD", record, depth))
        pos = f.pos
    if pos != end:
        raise DecodeError(f"{end - pos} bytes left over after the last of {count} records",
                          path=f"{rpath}[{count}]", offset=pos)


class _Fields:
    """Reads consecutive fields of one struct, appending a row for each."""

    def __init__(self, data, pos: int, path: str, depth: int, rows: list):
        self.data_ = data
        self.pos = pos
        self.path = path
        self.depth = depth
        self.rows = rows
        self.last_start = pos

    def _add(self, name, start, wire, value):
        self.rows.append(Row(f"{self.path}.{name}", start, self.pos, wire, value, self.depth))

    def varint(self, name: str, long: bool = False) -> int:
        start = self.last_start = self.pos
        try:
            value, self.pos = (P.read_varlong if long else P.read_varint)(self.data_, start)
        except DecodeError as e:
            e.path = e.path or f"{self.path}.{name}"
            raise
        self._add(name, start, "VARLONG" if long else "VARINT", value)
        return value

    def fixed(self, name: str, kind: str, wire: str) -> int:
        start = self.pos
        try:
            value, self.pos = P.read_fixed(kind, self.data_, start)
        except DecodeError as e:
            e.path = e.path or f"{self.path}.{name}"
            raise
        self._add(name, start, wire, value)
        return value

    def data(self, name: str, limit: int, text: bool = False):
        """A ``<name>_length`` varint then that many bytes (-1 = null; a header key may not be null)."""
        n = self.varint(f"{name}_length")
        start = self.pos
        if n < -1 or (n == -1 and text) or n > limit - start:
            raise DecodeError(f"invalid {name}_length {n} ({limit - start} bytes left in the record)",
                              path=f"{self.path}.{name}_length", offset=self.last_start)
        if n == -1:
            self._add(name, start, "RAW_BYTES", None)
            return None
        raw = bytes(self.data_[start:start + n])
        value = raw
        if text:
            try:
                value = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DecodeError(f"header key is not valid UTF-8 ({e.reason})", path=f"{self.path}.{name}",
                                  offset=start + e.start) from None
        self.pos = start + n
        self._add(name, start, "RAW_STRING" if text else "RAW_BYTES", value)
        return value
