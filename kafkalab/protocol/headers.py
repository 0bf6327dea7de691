"""Request and response headers, and the rule that picks their version.

Theory of operation
-------------------
Every request is ``size (int32) | request header | body`` and every response ``size | response header | body``.
The headers have versions of their own, and which one is used is *not* written anywhere on the wire: both
sides derive it from the API key and version. This is the rule learners trip over most, so here it is as one
function each, and as a table (:func:`header_version_table`):

==========================  ==========================================================================
request header v0           api_key, api_version, correlation_id (only ControlledShutdown v0 used it)
request header v1           ... + client_id (classic NULLABLE_STRING)        when the API version is *not* flexible
request header v2           ... + client_id (still classic!) + TAG_BUFFER    when the API version is flexible
response header v0          correlation_id                                     when the API version is not flexible
response header v1          correlation_id + TAG_BUFFER                        when the API version is flexible
**ApiVersions responses**   **always header v0**, whatever the version (KIP-511): a client must be able to
                            read the reply before it knows which versions the broker speaks
==========================  ==========================================================================

Mirrors: ``generator/src/main/java/org/apache/kafka/message/ApiMessageTypeGenerator.java``
(``requestHeaderVersion`` / ``responseHeaderVersion``) and ``RequestHeader.json`` / ``ResponseHeader.json``.
"""
from __future__ import annotations

from typing import NamedTuple

from kafkalab.protocol.api_keys import ALL_API_KEYS, ApiKey, api_name, messages_for
from kafkalab.protocol.messages import headers as _schemas
from kafkalab.protocol.schema import Message

__all__ = ["request_header_version", "response_header_version", "header_version_table", "REQUEST_HEADER",
           "RESPONSE_HEADER", "RequestHeader", "ResponseHeader", "HeaderVersions"]

# Kafka 4 dropped request header v0 from RequestHeader.json (valid 1-2); the ZooKeeper-era ControlledShutdown
# v0 still uses it, so kafkalab's header schema keeps v0 (the fields say "0+" anyway).
REQUEST_HEADER = Message(_schemas.REQUEST_HEADER.name, kind="header", valid="0-2", flexible="2+",
                         fields=_schemas.REQUEST_HEADER.fields)
RESPONSE_HEADER = _schemas.RESPONSE_HEADER

RequestHeader = REQUEST_HEADER.body_class
ResponseHeader = RESPONSE_HEADER.body_class
# The short names used throughout kafkalab (and by the issue tracker's facade): header.api_key, .api_version.
RequestHeader.api_key = property(lambda self: self.request_api_key, doc="RequestApiKey")
RequestHeader.api_version = property(lambda self: self.request_api_version, doc="RequestApiVersion")


def request_header_version(api_key: int, api_version: int) -> int:
    """2 when the request version is flexible, else 1 (0 only for ControlledShutdown v0)."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if messages_for(api_key)[0].is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 when the response version is flexible, else 0 -- and always 0 for ApiVersions (KIP-511)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if messages_for(api_key)[1].is_flexible(api_version) else 0


class HeaderVersions(NamedTuple):
    api_key: int
    api_name: str
    api_versions: str
    flexible_from: str
    request_header: str
    response_header: str


def header_version_table(api_keys=ALL_API_KEYS) -> list[HeaderVersions]:
    """One row per API: which header versions its requests and responses use, version by version."""
    rows = []
    for key in api_keys:
        req, _ = messages_for(key)
        valid = req.valid_versions
        if valid.empty:
            continue
        spans_req: dict[int, list[int]] = {}
        spans_resp: dict[int, list[int]] = {}
        for v in valid:
            spans_req.setdefault(request_header_version(key, v), []).append(v)
            spans_resp.setdefault(response_header_version(key, v), []).append(v)
        rows.append(HeaderVersions(key, api_name(key), valid.text,
                                   req.flexible_versions.text if not req.flexible_versions.empty else "never",
                                   _describe(spans_req), _describe(spans_resp)))
    return rows


def _describe(spans: dict[int, list[int]]) -> str:
    parts = []
    for hv, versions in sorted(spans.items()):
        lo, hi = versions[0], versions[-1]
        parts.append(f"v{hv} (API v{lo}" + (f"-{hi})" if hi != lo else ")"))
    return ", ".join(parts)
