"""Fitting one request body to the version a broker will get: fields that version lacks go back to defaults.

Theory of operation
-------------------
Kafka's messages grow by versions: LeaveGroup v0-2 name one ``member_id``, v3+ a list of ``members`` (with a
``reason`` from v5); JoinGroup carries ``group_instance_id`` from v5 and ``reason`` from v8. The version is only
known once ApiVersions has been negotiated with the broker at hand, and kafkalab's encoder refuses -- rightly --
to silently drop a field the chosen version cannot carry. A client that builds one body for every broker
therefore fits it first: :func:`fit` resets each field absent from ``version`` (at every nesting level) to its
default, so a value that cannot travel is dropped on purpose, where the code says so. Java's generated
``*RequestData`` classes do the same when their ``write`` meets an ignorable field.

Mirrors the ``ignorable`` handling in Kafka's generated message classes (``clients/src/main/resources/common/
message/*.json`` -> ``*Data.java``).
"""
from __future__ import annotations

from kafkalab.protocol import request_schema

__all__ = ["fit"]


def _fit_struct(value, fields, message, version):
    if value is None:
        return None
    changes = {}
    for field in fields:
        attr = field.attr
        if not hasattr(value, attr):
            continue
        current = getattr(value, attr)
        if not field.present_in(version):
            default = getattr(type(value)(), attr)
            if current != default:
                changes[attr] = default
        elif field.is_struct and current is not None:
            sub = message.struct_fields(field)
            if field.is_array:
                fitted = tuple(_fit_struct(v, sub, message, version) for v in current)
                if fitted != tuple(current):
                    changes[attr] = fitted
            else:
                fitted = _fit_struct(current, sub, message, version)
                if fitted != current:
                    changes[attr] = fitted
    return value._replace(**changes) if changes else value


def fit(body, version: int):
    """``body`` with every field that ``version`` of its request does not have reset to the default."""
    message = request_schema(body.API_KEY)
    return _fit_struct(body, message.fields, message, version)
