"""A small reference encoder written straight from Kafka's JSON specs (no kafkalab imports).

It turns a *plain* value -- dicts keyed by snake_case field names, tuples for arrays -- into the bytes Kafka
would send, following the rules of Kafka's message README:

* fixed-width integers big-endian; ``bool`` one byte; ``uuid`` 16 bytes; ``float64`` IEEE 754;
* classic strings: int16 length (-1 = null); classic bytes/records: int32 length; classic arrays: int32 count;
* in flexible versions (unless a field overrides ``flexibleVersions``) strings, bytes, records and arrays are
  compact: unsigned varint of N+1, 0 = null;
* a nullable struct is preceded by an int8 (-1 = null, 1 = present);
* every struct of a flexible version ends with a tag buffer: count, then (tag, size, value) in tag order;
  a tagged field is written only when it differs from its default.

It also builds deterministic sample values (every field of a version set to a non-default value, or every
nullable field null) and the wire-type name each field should get in the annotated decoder.
"""
from __future__ import annotations

import struct
import uuid

from . import specs as S

_FMT = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "int64": ">q", "float64": ">d"}


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _elem_field(j: dict) -> dict:
    e = {"name": j["name"], "type": j["type"][2:], "versions": "0+"}
    if "flexibleVersions" in j:
        e["flexibleVersions"] = j["flexibleVersions"]
    return e


def is_default(j: dict, v, spec: dict, version: int) -> bool:
    d = S.parse_default(j)
    if d is S.STRUCT_DEFAULT:
        return v == default_value(spec, j, version)
    if isinstance(d, tuple):
        return v == ()
    return type(v) is type(d) and v == d


def encode_struct(spec: dict, fields: list, version: int, value: dict) -> bytes:
    out = bytearray()
    tagged = []
    for j in fields:
        if not S.vin(version, j["versions"]):
            continue
        v = value[S.snake(j["name"])]
        if S.is_tagged(spec, j, version):
            if not is_default(j, v, spec, version):
                tagged.append((j["tag"], encode_value(spec, j, version, v)))
            continue
        out += encode_value(spec, j, version, v)
    if S.flexible(spec, version):
        tagged += list(value.get("unknown_tagged_fields", ()))
        tagged.sort(key=lambda t: t[0])
        out += uvarint(len(tagged))
        for tag, data in tagged:
            out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def encode_value(spec: dict, j: dict, version: int, v, element: bool = False) -> bytes:
    t = j["type"]
    compact = S.compact(spec, j, version)
    nullable = not element and S.vin(version, j.get("nullableVersions"))
    if t.startswith("[]"):
        if v is None:
            assert nullable, j["name"]
            return b"\x00" if compact else b"\xff\xff\xff\xff"
        head = uvarint(len(v) + 1) if compact else struct.pack(">i", len(v))
        if S.is_struct_type(t):
            fields = S.struct_fields(spec, j)
            return head + b"".join(encode_struct(spec, fields, version, x) for x in v)
        e = _elem_field(j)
        return head + b"".join(encode_value(spec, e, version, x, element=True) for x in v)
    if t in _FMT:
        return struct.pack(_FMT[t], v)
    if t == "bool":
        return b"\x01" if v else b"\x00"
    if t == "uuid":
        return v.bytes
    if t in ("string", "bytes", "records"):
        if v is None:
            assert nullable, j["name"]
            if compact:
                return b"\x00"
            return b"\xff\xff" if t == "string" else b"\xff\xff\xff\xff"
        raw = v.encode("utf-8") if t == "string" else v
        if compact:
            return uvarint(len(raw) + 1) + raw
        return struct.pack(">h" if t == "string" else ">i", len(raw)) + raw
    # a struct
    fields = S.struct_fields(spec, j)
    if nullable:
        if v is None:
            return b"\xff"
        return b"\x01" + encode_struct(spec, fields, version, v)
    return encode_struct(spec, fields, version, v)


# ------------------------------------------------------------------------------------------------ samples
def default_value(spec: dict, j: dict, version: int):
    d = S.parse_default(j)
    if d is S.STRUCT_DEFAULT:
        return default_struct(spec, S.struct_fields(spec, j), version)
    return d


def default_struct(spec: dict, fields: list, version: int) -> dict:
    out = {S.snake(j["name"]): default_value(spec, j, version) for j in fields}
    out["unknown_tagged_fields"] = ()
    return out


class Sampler:
    """Deterministic non-default values; ``nulls=True`` sets every nullable field to null and arrays empty."""

    def __init__(self, spec: dict, version: int, *, nulls: bool = False, array_len: int = 2):
        self.spec = spec
        self.version = version
        self.nulls = nulls
        self.array_len = array_len
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n

    def struct(self, fields: list, depth: int = 0) -> dict:
        out = {}
        for j in fields:
            name = S.snake(j["name"])
            if S.vin(self.version, j["versions"]):
                out[name] = self.value(j, depth)
            else:
                out[name] = default_value(self.spec, j, self.version)
        out["unknown_tagged_fields"] = ()
        return out

    def value(self, j: dict, depth: int, element: bool = False):
        t = j["type"]
        nullable = not element and S.vin(self.version, j.get("nullableVersions"))
        if self.nulls and nullable:
            if not (S.is_tagged(self.spec, j, self.version) and S.parse_default(j) is None):
                return None
        if t.startswith("[]"):
            count = 0 if (self.nulls or depth > 3) else self.array_len
            if S.is_struct_type(t):
                fields = S.struct_fields(self.spec, j)
                return tuple(self.struct(fields, depth + 1) for _ in range(count))
            e = _elem_field(j)
            return tuple(self.value(e, depth, element=True) for _ in range(count))
        k = self.next()
        if t in S.INTS:
            lo, hi = S.INTS[t]
            v = lo + (k * 7919 + 3) % (hi - lo + 1)
            d = S.parse_default(j)
            return v if v != d else v + 1
        if t == "bool":
            d = S.parse_default(j)
            return not d if isinstance(d, bool) else True
        if t == "float64":
            return k + 0.25
        if t == "uuid":
            return uuid.UUID(int=(k * 0x9E3779B97F4A7C15) & ((1 << 128) - 1) | 1)
        if t == "string":
            return f"s{k}" + ("é✓" if k % 3 == 0 else "")
        if t in ("bytes", "records"):
            return bytes([k & 0xFF, 0, 0xFF]) * (1 + k % 3)
        fields = S.struct_fields(self.spec, j)
        return self.struct(fields, depth + 1)


def sample(spec: dict, version: int, *, nulls: bool = False) -> dict:
    return Sampler(spec, version, nulls=nulls).struct(spec.get("fields", []))


# ------------------------------------------------------------------------------------------ expectations
def wire_type_name(spec: dict, j: dict, version: int, element: bool = False) -> str:
    t = j["type"]
    compact = "COMPACT_" if S.compact(spec, j, version) else ""
    nullable = "NULLABLE_" if (not element and S.vin(version, j.get("nullableVersions"))) else ""
    if t.startswith("[]"):
        return compact + nullable + "ARRAY"
    if t in S.INTS or t == "float64":
        return t.upper()
    if t == "bool":
        return "BOOLEAN"
    if t == "uuid":
        return "UUID"
    if t in ("string", "bytes"):
        return compact + nullable + t.upper()
    if t == "records":
        return compact + "RECORDS"
    return nullable + "STRUCT"


def expected_paths(spec: dict, fields: list, version: int, value: dict, path: str) -> dict[str, str]:
    """{dotted path: wire type} for every field the annotated decoder should report for ``value``."""
    out: dict[str, str] = {}
    if S.flexible(spec, version):
        out[f"{path}._tagged_fields"] = "TAG_BUFFER"
    for j in fields:
        if not S.vin(version, j["versions"]):
            continue
        name = S.snake(j["name"])
        v = value[name]
        if S.is_tagged(spec, j, version) and is_default(j, v, spec, version):
            continue
        p = f"{path}.{name}"
        out[p] = wire_type_name(spec, j, version)
        t = j["type"]
        if v is None:
            continue
        if t.startswith("[]"):
            for i, x in enumerate(v):
                if S.is_struct_type(t):
                    out[f"{p}[{i}]"] = "STRUCT"
                    out.update(expected_paths(spec, S.struct_fields(spec, j), version, x, f"{p}[{i}]"))
                else:
                    out[f"{p}[{i}]"] = wire_type_name(spec, _elem_field(j), version, element=True)
        elif S.is_struct_type(t):
            out.update(expected_paths(spec, S.struct_fields(spec, j), version, v, p))
    return out


def plain(x):
    """A decoded kafkalab object as nested dicts/tuples (field name -> value)."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return {a: plain(v) for a, v in zip(x._fields, x)}
    if isinstance(x, tuple):
        return tuple(plain(v) for v in x)
    return x


def typed(x):
    """``x`` with types made explicit, so that comparisons tell True from 1 and 1 from 1.0."""
    if isinstance(x, dict):
        return {k: typed(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return ("seq", tuple(typed(v) for v in x))
    if isinstance(x, memoryview):  # ``records`` fields decode zero-copy, as read-only views of the frame
        assert x.readonly
        return ("bytes", bytes(x))
    return (type(x).__name__, x)
