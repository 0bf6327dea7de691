"""API keys: the number in every request header that selects the schema, and the schemas behind each key.

Theory of operation
-------------------
Every request starts with two int16s: the *API key* (which request this is: 0 = Produce, 1 = Fetch,
3 = Metadata, 18 = ApiVersions, ...) and the *API version* (which layout of that request). A broker looks
both up before it can read a single byte of the body. :class:`ApiKey` names the keys as Kafka's ``ApiKeys``
enum does, and :func:`messages_for` returns the request and response :class:`~kafkalab.protocol.schema.Message`
of a key, loading its schema module on first use.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java``.
"""
from __future__ import annotations

import enum
import importlib
import re

from kafkalab.protocol.messages import MODULES
from kafkalab.protocol.schema import Message

__all__ = ["ApiKey", "messages_for", "request_schema", "response_schema", "api_name", "ALL_API_KEYS"]


def _enum_name(module: str) -> str:
    return module.upper()


#: Kafka's API keys by name: ``ApiKey.PRODUCE == 0``, ``ApiKey.API_VERSIONS == 18``.
ApiKey = enum.IntEnum("ApiKey", {_enum_name(mod): key for key, mod in sorted(MODULES.items())})
ApiKey.__doc__ = "Kafka's API keys, named as in Kafka's ApiKeys enum."
ApiKey.__module__ = __name__

ALL_API_KEYS = tuple(sorted(MODULES))

_LOADED: dict[int, tuple[Message, Message]] = {}


def messages_for(api_key: int) -> tuple[Message, Message]:
    """``(request, response)`` schemas of ``api_key``; KeyError if Kafka defines no such key."""
    hit = _LOADED.get(api_key)
    if hit is None:
        mod = importlib.import_module(f"kafkalab.protocol.messages.{MODULES[api_key]}")
        hit = (mod.REQUEST, mod.RESPONSE)
        _LOADED[api_key] = hit
    return hit


def request_schema(api_key: int) -> Message:
    return messages_for(api_key)[0]


def response_schema(api_key: int) -> Message:
    return messages_for(api_key)[1]


def api_name(api_key: int) -> str:
    """``0 -> "Produce"``; the name Kafka's docs use (the request message name without "Request")."""
    try:
        return re.sub(r"Request$", "", request_schema(api_key).name)
    except KeyError:
        return f"Unknown({api_key})"
