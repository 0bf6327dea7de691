"""Schemas as data: fields, structs and messages, exactly as Kafka's JSON message definitions describe them.

Theory of operation
-------------------
Kafka does not hand-write its wire format. Every request, response and header is described once, in a JSON
file (``clients/src/main/resources/common/message/*.json``), and Kafka's ``MessageDataGenerator`` turns those
descriptions into Java classes. kafkalab does the same in two steps that a learner can follow:

1. ``scripts/generate_schemas.py`` copies the *facts* of each JSON file (field names, types, the versions a
   field exists in, when it may be null, its tag) into a small Python module under
   ``kafkalab/protocol/messages/``. Those modules are committed and readable: open ``messages/produce.py`` to
   see the Produce request at every version.
2. This module turns that data into runtime objects: a :class:`Message` knows its versions, and
   :meth:`Message.body_class` builds one immutable Python class per struct, whose attribute names are Kafka's
   field names in snake_case (``ThrottleTimeMs`` becomes ``throttle_time_ms``).

The codec (:mod:`kafkalab.protocol.codec`) and the annotated decoder (:mod:`kafkalab.protocol.annotate`)
both read the same :class:`Field` objects, so the two can never disagree about the layout.

Version ranges use Kafka's notation: ``"3+"`` (3 and later), ``"0-12"`` (inclusive), ``"none"``.

Mirrors: ``generator/src/main/java/org/apache/kafka/message/{FieldSpec,StructSpec,MessageSpec,Versions}.java``.
"""
from __future__ import annotations

import dataclasses
import re
import uuid
from functools import cached_property
from typing import Any, Optional

from kafkalab.protocol.record_class import make_record_class

__all__ = ["Versions", "Field", "Struct", "Message", "snake_case", "ZERO_UUID", "PRIMITIVES"]

MAX_VERSION = 0x7FFF
ZERO_UUID = uuid.UUID(int=0)

#: Primitive types of Kafka's message definitions and their Python types.
PRIMITIVES: dict[str, type] = {
    "bool": bool, "int8": int, "int16": int, "uint16": int, "int32": int, "uint32": int, "int64": int,
    "float64": float, "string": str, "uuid": uuid.UUID, "bytes": bytes, "records": bytes,
}


class Versions:
    """An inclusive range of versions in Kafka's notation: ``"3+"``, ``"0-12"``, ``"5"`` or ``"none"``."""

    __slots__ = ("lo", "hi", "text")

    def __init__(self, text: str):
        self.text = text
        text = text.strip()
        if text == "none":
            self.lo, self.hi = 0, -1
        elif text.endswith("+"):
            self.lo, self.hi = int(text[:-1]), MAX_VERSION
        elif "-" in text:
            lo, hi = text.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(text)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.hi < self.lo

    def __iter__(self):
        return iter(range(self.lo, self.hi + 1))

    def __repr__(self) -> str:
        return f"Versions({self.text!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Versions) and (self.lo, self.hi) == (other.lo, other.hi)

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))


_SPECIAL_WORDS = {"KRaft": "Kraft"}


def snake_case(name: str) -> str:
    """Kafka's CamelCase field name as a Python attribute: ``LeaderEpoch`` -> ``leader_epoch``."""
    for word, repl in _SPECIAL_WORDS.items():
        name = name.replace(word, repl)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return name.lower()


_IMPLICIT = object()  # "no default in the JSON": Kafka's implicit default for the type applies


@dataclasses.dataclass(frozen=True, eq=False)
class Field:
    """One field of a struct, with the facts of Kafka's ``FieldSpec``.

    ``type`` is Kafka's type string: a primitive (``int32``, ``string``, ``records``...), an array
    (``[]int32``, ``[]TopicData``) or the name of a struct.
    """

    name: str
    type: str
    versions: str
    nullable: str = "none"
    tag: Optional[int] = None
    tagged: str = "none"
    flexible: Optional[str] = None
    default: Any = _IMPLICIT
    ignorable: bool = False
    map_key: bool = False
    entity: Optional[str] = None
    fields: tuple = ()

    # -- derived facts ------------------------------------------------------------------------------
    @cached_property
    def attr(self) -> str:
        return snake_case(self.name)

    @cached_property
    def version_range(self) -> Versions:
        return Versions(self.versions)

    @cached_property
    def nullable_range(self) -> Versions:
        return Versions(self.nullable)

    @cached_property
    def tagged_range(self) -> Versions:
        return Versions(self.tagged)

    @cached_property
    def flexible_range(self) -> Optional[Versions]:
        return None if self.flexible is None else Versions(self.flexible)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The type of one element (for arrays) or the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """True when the field (or each array element) is a struct rather than a primitive."""
        return self.element_type not in PRIMITIVES

    def present_in(self, version: int) -> bool:
        return version in self.version_range

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_range

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_range

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r}, {self.versions!r})"


@dataclasses.dataclass(frozen=True, eq=False)
class Struct:
    """A named struct shared by several fields (Kafka's ``commonStructs``)."""

    name: str
    versions: str
    fields: tuple = ()


class Message:
    """A request, response, header or data schema: Kafka's ``MessageSpec``.

    >>> from kafkalab.protocol.messages import produce
    >>> produce.REQUEST.valid_versions
    Versions('3-13')
    """

    def __init__(self, name: str, *, kind: str, valid: str, flexible: str = "none",
                 fields: tuple = (), common_structs: tuple = (), api_key: Optional[int] = None,
                 latest_unstable: bool = False, listeners: tuple = ()):
        self.name = name
        self.kind = kind
        self.api_key = api_key
        self.valid_versions = Versions(valid)
        self.flexible_versions = Versions(flexible)
        self.fields = tuple(fields)
        self.common_structs = {s.name: s for s in common_structs}
        self.latest_unstable = latest_unstable
        self.listeners = tuple(listeners)
        self._classes: dict[str, type] = {}
        self._struct_defaults: dict[str, object] = {}
        self._attached = False

    def __repr__(self) -> str:
        return f"<Message {self.name} v{self.valid_versions.text} flexible {self.flexible_versions.text}>"

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def struct_fields(self, field: Field) -> tuple:
        """The fields of a struct-typed field: inline, or from ``commonStructs``."""
        if field.fields:
            return field.fields
        try:
            return self.common_structs[field.element_type].fields
        except KeyError:
            raise KeyError(f"{self.name}: struct type {field.element_type!r} of {field.name} is not defined") from None

    # -- Python classes -------------------------------------------------------------------------------
    @property
    def body_class(self) -> type:
        """The immutable class of this message's body, e.g. ``ProduceRequest``.

        Every struct class of the message is also reachable from it by Kafka's struct name:
        ``MetadataResponse.MetadataResponsePartition``.
        """
        # The codec may already have built the top class through class_for(); attach the struct classes once
        # either way, or which attributes exist would depend on what ran first.
        top = self.class_for(self.name, self.fields)
        if not self._attached:
            self._attached = True
            for name, cls in list(self._classes.items()):
                if cls is not top and not hasattr(top, name):
                    setattr(top, name, cls)
        return top

    def class_for(self, type_name: str, fields: tuple) -> type:
        cls = self._classes.get(type_name)
        if cls is None:
            cls = self._make_class(type_name, fields)
            self._classes[type_name] = cls
        return cls

    def struct_class(self, field: Field) -> type:
        return self.class_for(field.element_type, self.struct_fields(field))

    def _make_class(self, type_name: str, fields: tuple) -> type:
        attrs, annotations, defaults = [], {}, []
        nested = {}
        for f in fields:
            annotation, default = self._annotation_and_default(f)
            if f.is_struct:
                nested[f.element_type] = self.struct_class(f)
            attrs.append(f.attr)
            annotations[f.attr] = annotation
            defaults.append(default)
        cls = make_record_class(type_name, attrs, defaults, annotations,
                                doc=f"{type_name}: a struct of Kafka's {self.name} (immutable).")
        for name, sub in nested.items():
            setattr(cls, name, sub)
        cls.SCHEMA = self
        cls.API_KEY = self.api_key
        return cls

    def _annotation_and_default(self, f: Field):
        elem = self.struct_class(f) if f.is_struct else PRIMITIVES[f.element_type]
        ann = tuple[elem, ...] if f.is_array else elem
        nullable = not f.nullable_range.empty
        if nullable:
            ann = Optional[ann]
        return ann, self.default_value(f)

    def default_value(self, f: Field):
        """The value a field takes when absent: the JSON ``default`` or Kafka's implicit default."""
        if f.default is not _IMPLICIT:
            return f.default
        if f.is_array:
            return ()
        if f.is_struct:
            # Kafka: a non-nullable struct defaults to an instance with every field at its default. One shared
            # instance per struct type (they are immutable): the body classes and the codec then hold the same
            # object, and the encoder's "left at its default?" test is an identity check.
            default = self._struct_defaults.get(f.element_type)
            if default is None:
                default = self._struct_defaults[f.element_type] = self.struct_class(f)()
            return default
        t = f.type
        if t == "bool":
            return False
        if t == "float64":
            return 0.0
        if t == "string":
            return ""
        if t == "uuid":
            return ZERO_UUID
        if t == "bytes":
            return b""
        if t == "records":
            return None
        return 0
