"""The annotated decoder: every field with its byte range, for hex dumps, field trees and error carets.

Theory of operation
-------------------
This is the reference decoder, written to be read. It walks a :class:`~kafkalab.protocol.schema.Message`
field by field with the primitive readers of :mod:`kafkalab.protocol.primitives` and records one
:class:`Row` per field: its dotted path (``body.topics[0].partitions[1].index``), the byte range it occupies,
the wire type Kafka's protocol guide uses (``INT32``, ``COMPACT_STRING``, ``TAG_BUFFER``, ...), and the
decoded value. A row for an array or struct spans all of its children, so the deepest row covering a byte
says what that byte is.

When decoding fails, :class:`~kafkalab.protocol.errors.DecodeError` carries the path of the field being read,
the offset of the failing byte, and the rows decoded so far, which is what the hex-dump view needs to draw a
caret under the failing byte.

It is slower than the generated codec (:mod:`kafkalab.protocol.codec`) and builds the same objects; the test
suite checks that both agree on every input, valid or not.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from kafkalab.protocol import primitives as P
from kafkalab.protocol.errors import DecodeError
from kafkalab.protocol.record_class import tags_on_wire
from kafkalab.protocol.schema import Field, Message

__all__ = ["Row", "annotate_message", "wire_type"]


class Row(NamedTuple):
    """One decoded field: where it is, what type it has on the wire, and what it means."""

    path: str
    start: int
    end: int
    wire_type: str
    value: Any
    depth: int


#: Signature of a hook that expands a ``records`` field into rows (see kafkalab.records.annotate_records).
RecordsHook = Callable[[Any, int, int, str, int], list]

_FIXED_NAMES = {"bool": "BOOLEAN", "uuid": "UUID"}


def wire_type(f: Field, version: int, compact: bool) -> str:
    """The protocol guide's name for how ``f`` is encoded at ``version``."""
    t = f.type
    nullable = f.nullable_in(version)
    if f.is_array:
        return ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + "ARRAY"
    if t in P.FIXED or t == "uuid":
        return _FIXED_NAMES.get(t, t.upper())
    if t in ("string", "bytes"):
        return ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + t.upper()
    if t == "records":
        return ("COMPACT_" if compact else "") + "RECORDS"
    return "NULLABLE_STRUCT" if nullable else "STRUCT"


class _Walker:
    def __init__(self, message: Message, version: int, buf, records_hook: Optional[RecordsHook]):
        self.message = message
        self.version = version
        self.flexible = message.is_flexible(version)
        self.buf = buf
        self.rows: list[Row] = []
        self.records_hook = records_hook

    def compact(self, f: Field) -> bool:
        return self.flexible and (f.flexible_range is None or self.version in f.flexible_range)

    def fail(self, e: DecodeError, path: str) -> DecodeError:
        if not e.path:
            e.path = path
        e.rows = self.rows
        return e

    def struct(self, type_name: str, fields, pos: int, path: str, depth: int):
        cls = self.message.class_for(type_name, fields)
        version = self.version
        regular = [f for f in fields if f.present_in(version) and not (self.flexible and f.is_tagged_in(version))]
        values: dict[str, Any] = {}
        for f in regular:
            values[f.attr], pos = self.value(f, pos, _join(path, f.attr), depth)
        unknown: tuple = ()
        if self.flexible:
            tagged = {f.tag: f for f in fields if f.present_in(version) and f.is_tagged_in(version)}
            unknown, pos = self.tagged(tagged, values, pos, path, depth)
        kwargs = {f.attr: values.get(f.attr, self.message.default_value(f)) for f in fields}
        return cls(**kwargs, unknown_tagged_fields=unknown), pos

    def tagged(self, tagged: dict, values: dict, pos: int, path: str, depth: int):
        buf = self.buf
        tpath = _join(path, "_tagged_fields")
        start = pos
        index = len(self.rows)
        try:
            count, pos = P.read_unsigned_varint(buf, pos)
        except DecodeError as e:
            self.fail(e, tpath)
            raise
        self.rows.append(Row(tpath, start, pos, "TAG_BUFFER", count, depth))
        unknown = []
        present = []   # known tags on the wire (written again on re-encoding, even with default values)
        for _ in range(count):
            try:
                tag, pos = P.read_unsigned_varint(buf, pos)
                size, pos = P.read_unsigned_varint(buf, pos)
            except DecodeError as e:
                self.fail(e, tpath)
                raise
            end = pos + size
            if end > len(buf):
                raise self.fail(DecodeError(f"tagged field {tag} of {size} bytes overruns the buffer", offset=pos),
                                tpath)
            f = tagged.get(tag)
            if f is None:
                raw = bytes(buf[pos:end])
                unknown.append((tag, raw))
                self.rows.append(Row(f"{tpath}[tag={tag}]", pos, end, "UNKNOWN_TAGGED_FIELD", raw, depth + 1))
            else:
                fpath = _join(path, f.attr)
                values[f.attr], after = self.value(f, pos, fpath, depth + 1)
                if after != end:
                    raise self.fail(DecodeError(f"tagged field {f.name} (tag {tag}) declares {size} bytes but "
                                                f"its value used {after - pos}", offset=pos), fpath)
                present.append(tag)
            pos = end
        self.rows[index] = Row(tpath, start, pos, "TAG_BUFFER", count, depth)
        return (tags_on_wire(unknown, present) if present else tuple(unknown)), pos

    def value(self, f: Field, pos: int, path: str, depth: int):
        buf = self.buf
        version = self.version
        compact = self.compact(f)
        nullable = f.nullable_in(version)
        wtype = wire_type(f, version, compact)
        start = pos
        try:
            if f.is_array:
                index = len(self.rows)
                self.rows.append(Row(path, start, start, wtype, None, depth))
                count, pos = P.read_array_length(buf, pos, compact=compact, nullable=nullable)
                if count is None:
                    value = None
                else:
                    items = []
                    elem = None
                    for i in range(count):
                        ipath = f"{path}[{i}]"
                        if f.is_struct:
                            istart = pos
                            irow = len(self.rows)
                            self.rows.append(Row(ipath, istart, istart, "STRUCT", None, depth + 1))
                            item, pos = self.struct(f.element_type, self.message.struct_fields(f), pos, ipath,
                                                    depth + 2)
                            self.rows[irow] = Row(ipath, istart, pos, "STRUCT", None, depth + 1)
                        else:
                            if elem is None:
                                elem = Field(f.name, f.element_type, "0+")
                                object.__setattr__(elem, "flexible", f.flexible)
                            item, pos = self.value(elem, pos, ipath, depth + 1)
                        items.append(item)
                    value = tuple(items)
                self.rows[index] = Row(path, start, pos, wtype, count, depth)
                return value, pos
            t = f.type
            if t in P.FIXED:
                value, pos = P.read_fixed(t, buf, pos)
            elif t == "uuid":
                value, pos = P.read_uuid(buf, pos)
            elif t == "string":
                value, pos = P.read_string(buf, pos, compact=compact, nullable=nullable)
            elif t in ("bytes", "records"):
                value, pos = P.read_bytes(buf, pos, compact=compact, nullable=nullable)
                if t == "records" and self.records_hook is not None and value:
                    index = len(self.rows)
                    self.rows.append(Row(path, start, pos, wtype, value, depth))
                    self._expand_records(pos - len(value), pos, path, depth + 1)
                    return value, pos
            else:  # a single struct, with a presence byte when nullable
                if nullable:
                    marker, pos = P.read_fixed("int8", buf, pos)
                    if marker < 0:
                        self.rows.append(Row(path, start, pos, wtype, None, depth))
                        return None, pos
                index = len(self.rows)
                self.rows.append(Row(path, start, start, wtype, None, depth))
                value, pos = self.struct(f.element_type, self.message.struct_fields(f), pos, path, depth + 1)
                self.rows[index] = Row(path, start, pos, wtype, None, depth)
                return value, pos
        except DecodeError as e:
            self.fail(e, path)
            raise
        self.rows.append(Row(path, start, pos, wtype, value, depth))
        return value, pos

    def _expand_records(self, start: int, end: int, path: str, depth: int):
        try:
            self.rows.extend(self.records_hook(self.buf, start, end, path, depth))
        except DecodeError as e:
            # The records blob decoded as bytes; a broken batch inside it is reported, not fatal: brokers
            # validate batches separately (CORRUPT_MESSAGE), the request itself is still well formed.
            self.rows.append(Row(_join(path, "error"), e.offset if e.offset is not None else start, end,
                                 "INVALID_RECORDS", str(e), depth))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def annotate_message(message: Message, version: int, buf, pos: int = 0, *, path: str = "",
                     records_hook: Optional[RecordsHook] = None, depth: int = 0):
    """Decode ``message`` at ``version`` from ``buf[pos:]`` recording rows.

    Returns ``(body, end, rows)``; raises DecodeError (with ``.rows``) on malformed input.
    """
    walker = _Walker(message, version, buf, records_hook)
    body, end = walker.struct(message.name, message.fields, pos, path, depth)
    return body, end, walker.rows
