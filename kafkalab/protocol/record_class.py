"""Immutable message classes: what a decoded request or response body is made of.

Theory of operation
-------------------
Every struct of every message (``MetadataResponse``, ``MetadataResponseTopic``, ...) becomes a small class
built here. Instances are immutable, typed (``__annotations__``) and keyword-constructed with Kafka's
defaults::

    >>> from kafkalab.protocol import response_class
    >>> Broker = response_class(3).MetadataResponseBroker
    >>> b = Broker(node_id=1, host="localhost", port=9092)
    >>> b
    MetadataResponseBroker(node_id=1, host='localhost', port=9092, rack=None)
    >>> b._replace(port=9093).port
    9093

Under the hood each class is a ``tuple`` subclass with named, read-only attributes (like
:func:`collections.namedtuple`), because a tuple is the cheapest immutable object Python can build: the
generated decoder (:mod:`kafkalab.protocol.codec`) creates each struct with a single ``tuple.__new__`` call.
Two objects are equal only if they have the same class and the same values. Unknown tagged fields that a
newer peer sent are kept in ``unknown_tagged_fields`` as ``(tag, bytes)`` pairs, so re-encoding a message
reproduces it byte for byte.

Tagged fields on the wire
-------------------------
A tagged field that holds its default value is normally left off the wire (Kafka's encoder does that, and so
does kafkalab's for messages built in Python). Some peers write such fields anyway -- an ApiVersions v3
response with an explicit, empty ``supported_features``, a Fetch v16 response with an empty
``node_endpoints``. So that a decoded message re-encodes to exactly the bytes received, a struct that had
known tagged fields on the wire remembers which: its ``unknown_tagged_fields`` is then a
:class:`TaggedFieldsOnWire`, still a tuple of the unknown ``(tag, bytes)`` pairs (so it compares equal to a
plain tuple, and the struct to one built in Python), with ``present``, the tags of the known fields that
were on the wire. The writer always writes those. A struct without tags on the wire costs nothing extra:
its ``unknown_tagged_fields`` is the plain empty tuple.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any, Sequence

try:  # CPython's fast attribute getter for namedtuples
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - other interpreters
    def _tuplegetter(index, doc):
        return property(itemgetter(index), doc=doc)

__all__ = ["make_record_class", "UNKNOWN_TAGGED_FIELDS", "TaggedFieldsOnWire", "tags_on_wire",
           "present_tags"]

#: The attribute holding tagged fields this schema does not know (last element of every struct).
UNKNOWN_TAGGED_FIELDS = "unknown_tagged_fields"

_tuple_new = tuple.__new__


class TaggedFieldsOnWire(tuple):
    """The unknown tagged fields of a decoded struct (``(tag, bytes)`` pairs, as a tuple), plus ``present``:
    the tags of the known tagged fields that were on the wire, default-valued or not. Equality and hashing
    are the tuple's, so ``present`` never makes two messages differ; it only tells the writer which
    default-valued tagged fields to write anyway. It also prints as the tuple, so a decoded message looks
    the same whichever peer wrote it."""

    present: frozenset


def tags_on_wire(unknown, present) -> TaggedFieldsOnWire:
    """``unknown_tagged_fields`` for a struct that had the known tags ``present`` on the wire."""
    t = TaggedFieldsOnWire(unknown)
    t.present = frozenset(present)
    return t


def present_tags(obj) -> frozenset:
    """The tags of known tagged fields that ``obj`` (a decoded struct) had on the wire; empty if built here."""
    ut = obj[-1]
    return ut.present if type(ut) is TaggedFieldsOnWire else frozenset()


def _show(value) -> str:
    """repr() for field values; record batches decoded zero-copy (memoryview) show their size, not an address."""
    if type(value) is memoryview:
        return f"<{value.nbytes} bytes>"
    return repr(value)


def make_record_class(name: str, attrs: Sequence[str], defaults: Sequence[Any], annotations: dict,
                      doc: str = "") -> type:
    """Build an immutable keyword-constructed tuple class with ``attrs`` (+ ``unknown_tagged_fields``)."""
    attrs = list(attrs) + [UNKNOWN_TAGGED_FIELDS]
    defaults = list(defaults) + [()]
    ns: dict[str, Any] = {"_tuple_new": _tuple_new}
    params = ", ".join(f"{a}=_d{i}" for i, a in enumerate(attrs))
    for i, d in enumerate(defaults):
        ns[f"_d{i}"] = d
    values = ", ".join(attrs) + ("," if len(attrs) == 1 else "")
    src = f"def __new__(_cls, *, {params}):\n    return _tuple_new(_cls, ({values}))\n"
    exec(src, ns)
    __new__ = ns["__new__"]
    __new__.__doc__ = f"Create a {name}; every field is keyword-only and has Kafka's default."

    def __repr__(self):
        parts = [f"{a}={_show(v)}" for a, v in zip(self._fields, self) if a != UNKNOWN_TAGGED_FIELDS or v]
        return f"{type(self).__name__}({', '.join(parts)})"

    def __eq__(self, other):
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not __eq__(self, other)

    def __hash__(self):
        return hash((type(self).__name__, tuple.__hash__(self)))

    def _replace(self, **changes):
        """A copy with some fields changed (like ``dataclasses.replace``)."""
        values = dict(zip(self._fields, self))
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        values.update(changes)
        return _tuple_new(type(self), tuple(values[a] for a in self._fields))

    def _asdict(self) -> dict:
        """Fields as a dict (nested structs stay objects)."""
        return {a: v for a, v in zip(self._fields, self)}

    body = {
        "__slots__": (),
        "__doc__": doc or name,
        "__new__": __new__,
        "__repr__": __repr__,
        "__eq__": __eq__,
        "__ne__": __ne__,
        "__hash__": __hash__,
        "_replace": _replace,
        "_asdict": _asdict,
        "_fields": tuple(attrs),
        "_field_defaults": dict(zip(attrs, defaults)),
        "__annotations__": dict(annotations, **{UNKNOWN_TAGGED_FIELDS: tuple}),
        "__match_args__": tuple(attrs[:-1]),
        "__module__": "kafkalab.protocol.messages",
    }
    for i, a in enumerate(attrs):
        body[a] = _tuplegetter(i, f"Kafka field {a}")
    cls = type(name, (tuple,), body)
    cls.__qualname__ = name
    return cls


def fields_of(obj) -> tuple:
    """The field names of a message object (without ``unknown_tagged_fields``)."""
    return obj._fields[:-1]
