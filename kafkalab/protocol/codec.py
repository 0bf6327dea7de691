"""The fast codec: straight-line Python generated from the schema, one reader and one writer per version.

Theory of operation
-------------------
Kafka's build generates Java code from the JSON message definitions; this module does the same at run time,
in Python. For a message at one version it writes the source of a function that reads (or writes) exactly
the fields that exist at that version, in order, and compiles it with ``exec``. Generated code runs much
faster than an interpreter walking the schema: consecutive fixed-width fields are read by a single
``struct.unpack_from``, arrays of int32 by one call, and objects are built without keyword parsing.

You can read what was generated::

    >>> from kafkalab.protocol import codec
    >>> from kafkalab.protocol.messages import api_versions
    >>> print(codec.source(api_versions.REQUEST, 3, "read"))      # doctest: +SKIP

Safety is the same as in :mod:`kafkalab.protocol.primitives`: every length and count is compared with the
bytes that remain before anything is allocated. When the generated reader fails, :func:`decode` re-runs the
readable reference decoder (:mod:`kafkalab.protocol.annotate`), which raises one
:class:`~kafkalab.protocol.errors.DecodeError` naming the field path and byte offset. The fast path never
has to be clever about error messages, and tests check that both decoders agree on every input.

Writers append ``bytes`` pieces to a list that is joined once, so a 1 MiB record batch in a Produce request
is copied exactly once while encoding.

Mirrors: ``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``.
"""
from __future__ import annotations

import struct
import uuid
from typing import Callable

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.protocol.framing import FrameBuffer
from kafkalab.protocol.record_class import TaggedFieldsOnWire, tags_on_wire
from kafkalab.protocol.schema import ZERO_UUID, Field, Message

__all__ = ["reader", "writer", "decode", "encode", "encode_into", "source"]

_FMT = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
        "float64": "d", "bool": "?", "uuid": "16s"}
_SIZE = {"b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8, "?": 1, "16s": 16}


class _Bad(Exception):
    """Raised by generated readers; :func:`decode` turns it into a precise DecodeError."""


def _uvarint(d, p):
    """Unsigned varint (at most 5 bytes) for the generated code's slow path."""
    value = 0
    shift = 0
    start = p
    while True:
        b = d[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p
        shift += 7
        if p - start >= 5:
            raise _Bad("varint too long")


_UV1 = [bytes((i,)) for i in range(128)]


def _uv(n):
    """Unsigned varint bytes of ``n``; a negative ``n`` is an EncodeError (it has no unsigned encoding)."""
    if n < 128:
        if n < 0:
            raise EncodeError(f"unsigned varint cannot hold {n}")
        return _UV1[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _records_view(d):
    """A view of the frame for zero-copy ``records`` fields, or None (then they are copied): read-only views
    and ``bytes`` always; a writable view only of a :class:`~kafkalab.protocol.framing.FrameBuffer`, a received
    frame whose handler owns it (and may patch its batches in place)."""
    if type(d) is bytes:
        return memoryview(d)
    if type(d) is memoryview and (d.readonly or type(d.obj) is FrameBuffer):
        return d
    return None


def _to_uuid(raw: bytes) -> uuid.UUID:
    if raw == b"\x00" * 16:
        return ZERO_UUID
    return uuid.UUID(bytes=raw)


def _bad(msg="malformed"):
    raise _Bad(msg)


_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}


def _arr(code: str, n: int) -> struct.Struct:
    """A cached Struct for ``n`` consecutive values of one fixed type (``_arr("i", 3)`` = ">3i")."""
    s = _ARRAY_STRUCTS.get((code, n))
    if s is None:
        s = struct.Struct(f">{n}{code}")
        if len(_ARRAY_STRUCTS) < 4096:
            _ARRAY_STRUCTS[(code, n)] = s
    return s


def _write_tags(tags: list, out: list) -> None:
    """The TAG_BUFFER: count, then (tag, size, bytes) per field in ascending tag order."""
    tags.sort(key=lambda t: t[0])
    w = out.append
    w(_uv(len(tags)))
    for tag, data in tags:
        w(_uv(tag))
        w(_uv(len(data)))
        w(data)


_BASE_NS = {
    "_uvarint": _uvarint, "_uv": _uv, "_uuid": _to_uuid, "_records_view": _records_view, "_Bad": _Bad, "_tnew": tuple.__new__,
    "_arr": _arr, "_write_tags": _write_tags, "_EncodeError": EncodeError, "_bad": _bad,
    "_WT": TaggedFieldsOnWire, "_wt": tags_on_wire, "_NOTAGS": frozenset(),
    "_h": struct.Struct(">h"), "_i": struct.Struct(">i"), "_b": struct.Struct(">b"),
}


class _Gen:
    """Builds the source of one reader or writer, with its constants in a namespace."""

    def __init__(self, message: Message, version: int, strict: bool = True):
        self.message = message
        self.version = version
        self.strict = strict
        self.flexible = message.is_flexible(version)
        self.ns = dict(_BASE_NS)
        self.funcs: list[list[str]] = []
        self.counter = 0
        self.memo: dict[tuple, str] = {}

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value, prefix="k") -> str:
        n = self.name(prefix)
        self.ns[n] = value
        return n

    def struct_const(self, fmt: str) -> str:
        key = ("S", fmt)
        if key not in self.memo:
            self.memo[key] = self.const(struct.Struct(">" + fmt), "S")
        return self.memo[key]

    def compact(self, f: Field) -> bool:
        if not self.flexible:
            return False
        fr = f.flexible_range
        return fr is None or self.version in fr

    def layout(self, fields):
        """The fields present at this version: regular ones in order, tagged ones sorted by tag."""
        regular = [f for f in fields if f.present_in(self.version) and not (self.flexible and f.is_tagged_in(self.version))]
        tagged = []
        if self.flexible:
            tagged = sorted((f for f in fields if f.present_in(self.version) and f.is_tagged_in(self.version)),
                            key=lambda f: f.tag)
        return regular, tagged

    # ------------------------------------------------------------------------------------------ reading
    def reader_for(self, type_name: str, fields) -> str:
        """A function ``read(d, p) -> (obj, p)`` for a struct; nested structs are inlined into it."""
        fname = self.name("r_")
        lines = [f"def {fname}(d, p):", "    L = len(d)"]
        if self.has_records(fields):
            # Record batches are returned as zero-copy views of the frame (they are the big part of a frame).
            lines.append("    rv = _records_view(d)")
        obj = self.name("o")
        self.read_struct(type_name, fields, obj, lines, "    ")
        lines.append(f"    return {obj}, p")
        self.funcs.append(lines)
        return fname

    def has_records(self, fields) -> bool:
        for f in fields:
            if not f.present_in(self.version):
                continue
            if f.type == "records" or (f.is_struct and self.has_records(self.message.struct_fields(f))):
                return True
        return False

    def read_struct(self, type_name: str, fields, obj: str, lines, ind: str):
        """Lines that read one struct at ``p`` into the variable ``obj``."""
        cls = self.message.class_for(type_name, fields)
        regular, tagged = self.layout(fields)
        values: dict[str, str] = {}
        i = 0
        while i < len(regular):
            f = regular[i]
            if not f.is_array and f.type in _FMT:
                run = [f]
                j = i + 1
                while j < len(regular) and not regular[j].is_array and regular[j].type in _FMT:
                    run.append(regular[j])
                    j += 1
                fmt = "".join(_FMT[x.type] for x in run)
                size = sum(_SIZE[_FMT[x.type]] for x in run)
                s = self.struct_const(fmt)
                names = [self.name("v") for _ in run]
                lines.append(f"{ind}{', '.join(names)}{',' if len(names) == 1 else ''} = {s}.unpack_from(d, p)")
                lines.append(f"{ind}p += {size}")
                for x, n in zip(run, names):
                    if x.type == "uuid":
                        lines.append(f"{ind}{n} = _uuid({n})")
                    values[x.attr] = n
                i = j
                continue
            var = self.name("v")
            self.read_value(f, var, lines, ind)
            values[f.attr] = var
            i += 1
        unknown = "()"
        if self.flexible:
            unknown = self.name("u")
            self.read_tagged(tagged, values, unknown, lines, ind)
        args = [values[f.attr] if f.attr in values else self.const(self.message.default_value(f), "dflt")
                for f in fields]
        args.append(unknown)
        lines.append(f"{ind}{obj} = _tnew({self.const(cls, 'C')}, ({', '.join(args)}))")

    def read_tagged(self, tagged, values, unknown, lines, ind: str):
        for f in tagged:
            var = self.name("v")
            values[f.attr] = var
            lines.append(f"{ind}{var} = {self.const(self.message.default_value(f), 'dflt')}")
        nt, ul, pl, tag, size, end = (self.name(x) for x in ("nt", "ul", "pl", "tag", "size", "end"))
        lines += [
            f"{ind}{unknown} = ()",
            f"{ind}b = d[p]",
            f"{ind}if b < 128: {nt} = b; p += 1",
            f"{ind}else: {nt}, p = _uvarint(d, p)",
            f"{ind}if {nt}:",
            f"{ind}    {ul} = []",
        ]
        if tagged:  # the known tags seen, so that the writer can write default-valued ones again
            lines.append(f"{ind}    {pl} = []")
        lines += [
            f"{ind}    for _ in range({nt}):",
            f"{ind}        {tag}, p = _uvarint(d, p)",
            f"{ind}        {size}, p = _uvarint(d, p)",
            f"{ind}        {end} = p + {size}",
            f"{ind}        if {end} > L: _bad('tagged field overruns the buffer')",
        ]
        inner = ind + "            "
        for k, f in enumerate(tagged):
            lines.append(f"{ind}        {'if' if k == 0 else 'elif'} {tag} == {f.tag}:")
            self.read_value(f, values[f.attr], lines, inner)
            lines.append(f"{inner}if p != {end}: _bad('tagged field size mismatch')")
            lines.append(f"{inner}{pl}.append({f.tag})")
        if tagged:
            lines.append(f"{ind}        else:")
            lines.append(f"{inner}{ul}.append(({tag}, bytes(d[p:{end}])))")
        else:
            lines.append(f"{ind}        {ul}.append(({tag}, bytes(d[p:{end}])))")
        lines.append(f"{ind}        p = {end}")
        if tagged:
            lines.append(f"{ind}    {unknown} = _wt({ul}, {pl}) if {pl} else tuple({ul})")
        else:
            lines.append(f"{ind}    {unknown} = tuple({ul})")

    def read_length(self, f: Field, var: str, lines, ind: str, wide: bool):
        """Leaves the signed length (-1 = null) in ``var``."""
        if self.compact(f):
            lines += [f"{ind}b = d[p]",
                      f"{ind}if b < 128: {var} = b - 1; p += 1",
                      f"{ind}else:",
                      f"{ind}    {var}, p = _uvarint(d, p)",
                      f"{ind}    {var} -= 1"]
        elif wide:
            lines += [f"{ind}{var}, = _i.unpack_from(d, p)", f"{ind}p += 4"]
        else:
            lines += [f"{ind}{var}, = _h.unpack_from(d, p)", f"{ind}p += 2"]

    def null_check(self, f: Field, n: str, var: str, lines, ind: str):
        """After reading length ``n``: handle null (-1) and reject other negatives."""
        lines.append(f"{ind}if {n} < 0:")
        if f.nullable_in(self.version):
            lines.append(f"{ind}    if {n} != -1: _bad('negative length')")
            lines.append(f"{ind}    {var} = None")
        else:
            lines.append(f"{ind}    _bad('null or negative length for a non-nullable field')")
        lines.append(f"{ind}else:")

    def read_value(self, f: Field, var: str, lines, ind: str):
        t = f.type
        if f.is_array:
            self.read_array(f, var, lines, ind)
        elif t in _FMT:
            s = self.struct_const(_FMT[t])
            lines.append(f"{ind}{var}, = {s}.unpack_from(d, p)")
            lines.append(f"{ind}p += {_SIZE[_FMT[t]]}")
            if t == "uuid":
                lines.append(f"{ind}{var} = _uuid({var})")
        elif t == "string":
            n, e = self.name("n"), self.name("e")
            self.read_length(f, n, lines, ind, wide=False)
            self.null_check(f, n, var, lines, ind)
            if self.compact(f):  # Kafka caps strings at 32767 bytes in either encoding
                lines.append(f"{ind}    if {n} > 32767: _bad('string longer than 32767 bytes')")
            lines += [f"{ind}    {e} = p + {n}",
                      f"{ind}    if {e} > L: _bad('string overruns the buffer')",
                      f"{ind}    {var} = str(d[p:{e}], 'utf-8')",
                      f"{ind}    p = {e}"]
        elif t in ("bytes", "records"):
            n, e = self.name("n"), self.name("e")
            self.read_length(f, n, lines, ind, wide=True)
            self.null_check(f, n, var, lines, ind)
            copy = f"rv[p:{e}] if rv is not None else bytes(d[p:{e}])" if t == "records" else f"bytes(d[p:{e}])"
            lines += [f"{ind}    {e} = p + {n}",
                      f"{ind}    if {e} > L: _bad('bytes overrun the buffer')",
                      f"{ind}    {var} = {copy}",
                      f"{ind}    p = {e}"]
        else:  # a single struct, preceded by a presence byte when nullable
            fields = self.message.struct_fields(f)
            if f.nullable_in(self.version):
                m = self.name("m")
                lines += [f"{ind}{m}, = _b.unpack_from(d, p)", f"{ind}p += 1",
                          f"{ind}if {m} < 0: {var} = None", f"{ind}else:"]
                self.read_struct(f.element_type, fields, var, lines, ind + "    ")
            else:
                self.read_struct(f.element_type, fields, var, lines, ind)

    def read_array(self, f: Field, var: str, lines, ind: str):
        n = self.name("n")
        self.read_length(f, n, lines, ind, wide=True)
        self.null_check(f, n, var, lines, ind)
        ind2 = ind + "    "
        lines.append(f"{ind2}if {n} > L - p: _bad('collection larger than the bytes remaining')")
        et = f.element_type
        if et in _FMT and et != "uuid":
            code = _FMT[et]
            lines += [f"{ind2}{var} = _arr('{code}', {n}).unpack_from(d, p)", f"{ind2}p += {n} * {_SIZE[code]}"]
            return
        acc, x = self.name("a"), self.name("x")
        lines += [f"{ind2}{acc} = []", f"{ind2}for _ in range({n}):"]
        if f.is_struct:
            self.read_struct(et, self.message.struct_fields(f), x, lines, ind2 + "    ")
        else:
            elem = Field("element", et, "0+")
            object.__setattr__(elem, "flexible", f.flexible)
            self.read_value(elem, x, lines, ind2 + "    ")
        lines += [f"{ind2}    {acc}.append({x})", f"{ind2}{var} = tuple({acc})"]

    # ------------------------------------------------------------------------------------------ writing
    def writer_for(self, type_name: str, fields) -> str:
        """A function ``write(obj, out)`` appending the encoding of a struct to the list ``out``."""
        fname = self.name("w_")
        lines = [f"def {fname}(o, out):", "    w = out.append"]
        self.write_struct(type_name, fields, "o", lines, "    ")
        self.funcs.append(lines)
        return fname

    def write_struct(self, type_name: str, fields, obj: str, lines, ind: str):
        regular, tagged = self.layout(fields)
        present = {id(f) for f in regular} | {id(f) for f in tagged}
        # Unpack the tuple once: locals are the fastest way to read every field.
        local = {f.attr: self.name("f") for f in fields}
        ut = self.name("ut")
        names = [local[f.attr] for f in fields] + [ut]
        lines.append(f"{ind}{', '.join(names)}{',' if len(names) == 1 else ''} = {obj}")
        for f in fields:
            if id(f) in present or f.ignorable or not self.strict:
                continue
            dflt = self.const(self.message.default_value(f), "dflt")
            lines.append(f"{ind}if {local[f.attr]} is not {dflt} and {local[f.attr]} != {dflt}:")
            lines.append(f"{ind}    raise _EncodeError('{self.message.name}: field {f.name} is not supported at "
                         f"version {self.version} but has a non-default value')")
        i = 0
        while i < len(regular):
            f = regular[i]
            if not f.is_array and f.type in _FMT:
                run = [f]
                j = i + 1
                while j < len(regular) and not regular[j].is_array and regular[j].type in _FMT:
                    run.append(regular[j])
                    j += 1
                s = self.struct_const("".join(_FMT[x.type] for x in run))
                args = ", ".join(f"{local[x.attr]}.bytes" if x.type == "uuid" else local[x.attr] for x in run)
                lines.append(f"{ind}w({s}.pack({args}))")
                i = j
                continue
            self.write_value(f, local[f.attr], lines, ind)
            i += 1
        if self.flexible:
            self.write_tagged(tagged, local, ut, lines, ind)

    def write_tagged(self, tagged, local, ut, lines, ind: str):
        if not tagged:
            lines.append(f"{ind}if not {ut}: w(b'\\x00')")
            lines.append(f"{ind}else: _write_tags(list({ut}), out)")
            return
        tf, pt = self.name("tf"), self.name("pt")
        lines.append(f"{ind}{tf} = list({ut})")
        # Tags a decoded struct had on the wire are written again, even with default values (byte-exact).
        lines.append(f"{ind}{pt} = {ut}.present if {ut}.__class__ is _WT else _NOTAGS")
        for f in tagged:
            dflt = self.const(self.message.default_value(f), "dflt")
            saved = self.name("out")
            # A tagged value goes into its own buffer first: its size precedes it on the wire. (The identity test
            # first: a struct left at its default is the default object, and its == is a Python-level call.)
            v = local[f.attr]
            lines.append(f"{ind}if ({v} is not {dflt} and {v} != {dflt}) or {f.tag} in {pt}:")
            lines.append(f"{ind}    {saved} = out; out = []; w = out.append")
            self.write_value(f, local[f.attr], lines, ind + "    ")
            lines.append(f"{ind}    {tf}.append(({f.tag}, b''.join(out)))")
            lines.append(f"{ind}    out = {saved}; w = out.append")
        lines.append(f"{ind}_write_tags({tf}, out)")

    def write_length(self, f: Field, expr: str, lines, ind: str, wide: bool):
        if self.compact(f):
            lines.append(f"{ind}w(_uv({expr} + 1))")
        elif wide:
            lines.append(f"{ind}w(_i.pack({expr}))")
        else:
            lines.append(f"{ind}w(_h.pack({expr}))")

    def write_null(self, f: Field, expr: str, lines, ind: str, wide: bool) -> str:
        """Writes the null marker if ``expr`` is None; returns the indentation for the non-null case."""
        null = "b'\\x00'" if self.compact(f) else ("b'\\xff\\xff\\xff\\xff'" if wide else "b'\\xff\\xff'")
        lines.append(f"{ind}if {expr} is None:")
        if f.nullable_in(self.version):
            lines.append(f"{ind}    w({null})")
        else:
            lines.append(f"{ind}    raise _EncodeError('{f.name} is not nullable at version {self.version}')")
        lines.append(f"{ind}else:")
        return ind + "    "

    def write_value(self, f: Field, v: str, lines, ind: str):
        t = f.type
        if f.is_array:
            ind2 = self.write_null(f, v, lines, ind, wide=True)
            self.write_length(f, f"len({v})", lines, ind2, wide=True)
            et = f.element_type
            if et in _FMT and et != "uuid":
                lines.append(f"{ind2}w(_arr('{_FMT[et]}', len({v})).pack(*{v}))")
                return
            x = self.name("x")
            lines.append(f"{ind2}for {x} in {v}:")
            if f.is_struct:
                self.write_struct(et, self.message.struct_fields(f), x, lines, ind2 + "    ")
            else:
                elem = Field("element", et, "0+")
                object.__setattr__(elem, "flexible", f.flexible)
                self.write_value(elem, x, lines, ind2 + "    ")
        elif t in _FMT:
            s = self.struct_const(_FMT[t])
            lines.append(f"{ind}w({s}.pack({v}{'.bytes' if t == 'uuid' else ''}))")
        elif t == "string":
            e = self.name("s")
            ind2 = self.write_null(f, v, lines, ind, wide=False)
            lines.append(f"{ind2}{e} = {v}.encode('utf-8')")
            lines.append(f"{ind2}if len({e}) > 32767: raise _EncodeError('string longer than 32767 bytes')")
            self.write_length(f, f"len({e})", lines, ind2, wide=False)
            lines.append(f"{ind2}w({e})")
        elif t in ("bytes", "records"):
            ind2 = self.write_null(f, v, lines, ind, wide=True)
            self.write_length(f, f"len({v})", lines, ind2, wide=True)
            lines.append(f"{ind2}w({v})")
        else:
            fields = self.message.struct_fields(f)
            if f.nullable_in(self.version):
                lines += [f"{ind}if {v} is None: w(b'\\xff')", f"{ind}else:", f"{ind}    w(b'\\x01')"]
                self.write_struct(f.element_type, fields, v, lines, ind + "    ")
            else:
                self.write_struct(f.element_type, fields, v, lines, ind)

    def compile(self, entry: str) -> Callable:
        src = self.render()
        code = compile(src, f"<kafkalab codec {self.message.name} v{self.version}>", "exec")
        exec(code, self.ns)
        return self.ns[entry]

    def render(self) -> str:
        return "\n\n".join("\n".join(f) for f in self.funcs) + "\n"


_READERS: dict[tuple[int, int], tuple[Callable, str]] = {}
_WRITERS: dict[tuple[int, int, bool], tuple[Callable, str]] = {}


def _check_version(message: Message, version: int) -> None:
    if version not in message.valid_versions:
        raise ValueError(f"{message.name} has no version {version} (valid: {message.valid_versions.text})")


def reader(message: Message, version: int) -> Callable:
    """The generated reader ``read(buf, pos) -> (body, new_pos)`` of ``message`` at ``version``."""
    key = (id(message), version)
    hit = _READERS.get(key)
    if hit is None:
        _check_version(message, version)
        gen = _Gen(message, version)
        entry = gen.reader_for(message.name, message.fields)
        hit = (gen.compile(entry), gen.render())
        _READERS[key] = hit
    return hit[0]


def writer(message: Message, version: int, *, strict: bool = True) -> Callable:
    """The generated writer ``write(body, out: list) -> None`` of ``message`` at ``version``.

    ``strict`` (Kafka's behaviour): a field that does not exist at ``version``, is not ignorable and holds a
    non-default value is an EncodeError -- information would be lost silently. ``strict=False`` simply leaves
    such fields out: a broker builds a response with every field it knows and sends what the version can
    carry.
    """
    key = (id(message), version, strict)
    hit = _WRITERS.get(key)
    if hit is None:
        _check_version(message, version)
        gen = _Gen(message, version, strict)
        entry = gen.writer_for(message.name, message.fields)
        hit = (gen.compile(entry), gen.render())
        _WRITERS[key] = hit
    return hit[0]


def source(message: Message, version: int, which: str = "read") -> str:
    """The Python source generated for ``message`` at ``version`` (``which`` = "read" or "write")."""
    (reader if which == "read" else writer)(message, version)
    if which == "read":
        return _READERS[(id(message), version)][1]
    return _WRITERS[(id(message), version, True)][1]


def decode(message: Message, version: int, buf, pos: int = 0, *, path: str = ""):
    """Decode ``message`` at ``version`` from ``buf[pos:]``; returns ``(body, end)``.

    Raises DecodeError, with the field path and byte offset, for any malformed input.
    """
    read = reader(message, version)
    try:
        return read(buf, pos)
    except (_Bad, IndexError, struct.error, UnicodeDecodeError, ValueError, OverflowError, MemoryError) as fast:
        from kafkalab.protocol.annotate import annotate_message

        annotate_message(message, version, buf, pos, path=path)  # raises a precise DecodeError
        raise DecodeError(f"malformed {message.name} v{version}: {fast}", path=path, offset=pos) from None


def encode_into(message: Message, version: int, body, out: list, *, strict: bool = True) -> None:
    """Append the encoding of ``body`` to ``out`` as pieces (bytes or views) to be joined once by the caller."""
    write = writer(message, version, strict=strict)
    try:
        write(body, out)
    except EncodeError:
        raise
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError, UnicodeEncodeError) as e:
        raise EncodeError(f"cannot encode {message.name} v{version}: {e}") from None


def encode(message: Message, version: int, body) -> bytes:
    """Encode ``body`` as ``message`` at ``version``."""
    out: list = []
    encode_into(message, version, body, out)
    return b"".join(out)
