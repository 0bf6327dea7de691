"""Hypothesis strategies that build message objects from a kafkalab ``Message`` schema at one version."""
from __future__ import annotations

import uuid

from hypothesis import strategies as st

from kafkalab.protocol.schema import ZERO_UUID, Field, Message

_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_RANGES = {"uint16": 16, "uint32": 32}

TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8)
# short blobs, and now and then one whose length needs a two-byte varint (cheap to generate)
BINARY = st.binary(max_size=8) | st.builds(lambda n, b: bytes([b]) * n, st.integers(126, 130), st.integers(0, 255))
UUIDS = st.just(ZERO_UUID) | st.uuids() | st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))


def primitive(type_name: str) -> st.SearchStrategy:
    if type_name in _INT_RANGES:
        bits = _INT_RANGES[type_name]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return st.integers(lo, hi) | st.sampled_from((lo, hi, -1, 0))
    if type_name in _UINT_RANGES:
        hi = (1 << _UINT_RANGES[type_name]) - 1
        return st.integers(0, hi) | st.sampled_from((0, hi))
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "string":
        return TEXT
    if type_name in ("bytes", "records"):
        return BINARY
    if type_name == "uuid":
        return UUIDS
    raise AssertionError(type_name)


def _max_tag(fields) -> int:
    return max((f.tag for f in fields if f.tag is not None), default=-1)


def unknown_tags(fields) -> st.SearchStrategy:
    """Tagged fields this schema does not know, as the decoder returns them: sorted by tag, unique."""
    lo = _max_tag(fields) + 1
    pairs = st.lists(st.tuples(st.integers(lo, lo + 300) | st.integers(lo, 2**31 - 1), BINARY),
                     max_size=3, unique_by=lambda t: t[0])
    return pairs.map(lambda ps: tuple(sorted(ps)))


class Builder:
    def __init__(self, message: Message, version: int, *, unknown: bool = True):
        self.message = message
        self.version = version
        self.flexible = message.is_flexible(version)
        self.unknown = unknown

    def struct(self, type_name: str, fields, depth: int = 0) -> st.SearchStrategy:
        cls = self.message.class_for(type_name, fields)
        kwargs = {}
        for f in fields:
            if f.present_in(self.version):
                kwargs[f.attr] = self.value(f, depth)
        if self.flexible and self.unknown:
            kwargs["unknown_tagged_fields"] = unknown_tags(fields) if depth < 2 else st.just(())
        return st.fixed_dictionaries(kwargs).map(lambda kw: cls(**kw))

    def value(self, f: Field, depth: int, element: bool = False) -> st.SearchStrategy:
        nullable = not element and f.nullable_in(self.version)
        if f.is_array:
            if f.is_struct:
                elem = self.struct(f.element_type, self.message.struct_fields(f), depth + 1)
            else:
                elem = self.value(Field(f.name, f.element_type, "0+"), depth, element=True)
            size = max(0, 2 - depth // 2)
            s = st.lists(elem, max_size=size).map(tuple)
        elif f.is_struct:
            s = self.struct(f.element_type, self.message.struct_fields(f), depth + 1)
        else:
            s = primitive(f.type)
        return (st.none() | s) if nullable else s


def message_strategy(message: Message, version: int, *, unknown: bool = True) -> st.SearchStrategy:
    return Builder(message, version, unknown=unknown).struct(message.name, message.fields)
