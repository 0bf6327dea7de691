"""Any message as JSON, the way Kafka's generated ``*JsonConverter.write`` and Jackson print it.

Theory of operation
-------------------
Besides the Java class of each message, Kafka's build generates a ``<Message>JsonConverter`` whose ``write``
turns an object into a Jackson tree; tools print that tree with ``toString()`` (``kafka-dump-log.sh
--offsets-decoder``, the request log). kafkalab needs no generated code for it: :func:`write` walks the same
:class:`~kafkalab.protocol.schema.Field` objects the codec reads, so every message kafkalab has as data can
be shown as JSON, and the output is Kafka's:

* the object's keys are the fields present at the version, in the order of the JSON definition, named by
  ``camelCaseName()`` (the spec name with its first letter in lower case: ``TransactionalId`` ->
  ``transactionalId``);
* a *tagged* field is written only when it differs from its default; a field absent at the version, and
  unknown tagged fields, are not written;
* int8/16/32/64 and uint16/32 are JSON numbers, bool ``true``/``false``, float64 as Java's
  ``Double.toString``; strings are escaped as Jackson does (``\\"``, ``\\\\``, ``\\b \\t \\n \\f \\r``, other
  control characters as ``\\u00XX`` with upper-case hex; everything else as it is); a uuid is Kafka's
  ``Uuid.toString()`` (URL-safe base64 without padding); ``bytes`` are base64 with padding (Jackson's
  ``BinaryNode``); ``records`` are written as their size (``<name>SizeInBytes``), as the request log does;
  null is ``null``.
* no spaces (Jackson's compact ``toString()``).

:func:`write` returns a tree of plain Python values (``dict`` in field order, ``list``, ``str``, ``int``,
``bool``, ``None``, :class:`Binary` for bytes) so that a caller can replace a node before printing, as
``DumpLogSegments`` does with the consumer protocol bytes of a group record; :func:`to_json` prints it.

Mirrors: ``generator/src/main/java/org/apache/kafka/message/JsonConverterGenerator.java`` (``generateWrite``)
and Jackson's ``JsonNode.toString()`` (``WriterBasedJsonGenerator``, ``CharTypes``).
"""
from __future__ import annotations

import base64
import math
import uuid
from decimal import Decimal
from typing import Any

from kafkalab.protocol.schema import Field, Message

__all__ = ["Binary", "camel_case_name", "write", "to_json", "java_double"]


class Binary(bytes):
    """A ``bytes`` field's value in the tree (Jackson's ``BinaryNode``): printed as base64."""


def camel_case_name(field: Field) -> str:
    """Kafka's ``FieldSpec.camelCaseName()``: the spec name with its first letter lower-cased."""
    return field.name[:1].lower() + field.name[1:]


def _primitive(type_name: str, value: Any) -> Any:
    if value is None:
        return None
    if type_name == "bytes":
        return Binary(bytes(value))
    if type_name == "uuid":
        return uuid_to_string(value)
    if type_name == "float64":
        return float(value)
    return value


def uuid_to_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: the 16 bytes in URL-safe base64, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def _value(message: Message, field: Field, value: Any, version: int) -> Any:
    if value is None:
        return None
    if field.type == "records":
        return value
    if field.is_array:
        if field.is_struct:
            fields = message.struct_fields(field)
            return [_struct(message, fields, element, version) for element in value]
        return [_primitive(field.element_type, element) for element in value]
    if field.is_struct:
        return _struct(message, message.struct_fields(field), value, version)
    return _primitive(field.type, value)


def _struct(message: Message, fields: tuple, obj: Any, version: int) -> dict:
    node: dict = {}
    for field in fields:
        if not field.present_in(version):
            continue
        value = getattr(obj, field.attr)
        if field.is_tagged_in(version) and value == message.default_value(field):
            continue
        name = camel_case_name(field)
        if field.type == "records":
            node[name + "SizeInBytes"] = 0 if value is None else len(value)
            continue
        node[name] = _value(message, field, value, version)
    return node


def write(message: Message, body: Any, version: int) -> dict:
    """The JSON tree of ``body`` (a decoded ``message``) at ``version``: ``<Message>JsonConverter.write``."""
    if version not in message.valid_versions:
        raise ValueError(f"Can't write version {version} of {message.name}")
    return _struct(message, message.fields, body, version)


# ---------------------------------------------------------------------------------------------- printing
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        escaped = _SHORT_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``0.001``, ``1.0E7``, ``1.0E-4``, ``NaN``, ``Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)                   # plain and shortest in this range, as Java's
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits))
    power = len(text) - 1 + exponent
    fraction = text[1:].rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{fraction}E{power}"


def to_json(node: Any) -> str:
    """The tree as Jackson's compact ``toString()`` prints it."""
    if node is None:
        return "null"
    if node is True:
        return "true"
    if node is False:
        return "false"
    if isinstance(node, Binary):
        return '"' + base64.b64encode(node).decode("ascii") + '"'
    if isinstance(node, str):
        return _string(node)
    if isinstance(node, float):
        text = java_double(node)
        return text if text[-1].isdigit() else f'"{text}"'    # Jackson quotes NaN and Infinity
    if isinstance(node, int):
        return str(node)
    if isinstance(node, dict):
        return "{" + ",".join(f"{_string(k)}:{to_json(v)}" for k, v in node.items()) + "}"
    if isinstance(node, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in node) + "]"
    raise TypeError(f"cannot print {type(node).__name__} as JSON")
