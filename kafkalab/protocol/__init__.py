"""kafkalab.protocol -- the Kafka wire codec, and the small stable facade the rest of kafkalab uses.

Theory of operation
-------------------
A Kafka request on the wire is::

    size (INT32) | request header | body            size = number of bytes after the size field

The header starts with ``api_key`` and ``api_version`` (two INT16), which select the body's schema, then the
``correlation_id`` the response will echo, then the ``client_id``. A response is
``size | correlation_id [| TAG_BUFFER] | body``; it does *not* repeat the API key or version, so the client
must remember what it asked (by correlation id) to decode the answer.

The facade::

    decode_request(frame)  -> Request(header, body)       frame = the bytes after the size prefix
    encode_request(request) -> frame                      byte-identical to what decode_request read
    decode_response(frame, api_key, api_version) -> Response(header, body, api_key, api_version)
    encode_response(response) -> frame
    annotate_request(frame) / annotate_response(frame, api_key, api_version) -> Annotation (one row per field)

Bodies are immutable objects whose attributes are Kafka's field names in snake_case
(``MetadataResponse.brokers[0].node_id``); build new ones with keyword arguments
(``request_class(3)(topics=None)``) and copy them with changes using ``body._replace(...)``.

Rooms: :mod:`.primitives` (types), :mod:`.schema` + :mod:`.messages` (schemas as data), :mod:`.codec`
(generated fast readers/writers), :mod:`.annotate` (the readable reference decoder), :mod:`.headers`
(the header-version rule), :mod:`.framing` (size prefixes), :mod:`.errors` (error codes).
This package knows nothing of sockets.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Any, Iterator, Mapping, Optional

from kafkalab.protocol import codec
from kafkalab.protocol.annotate import Row, annotate_message
from kafkalab.protocol.api_keys import ALL_API_KEYS, ApiKey, api_name, messages_for, request_schema, response_schema
from kafkalab.protocol.errors import (ERRORS, ApiException, DecodeError, EncodeError, ErrorCode, KafkaProtocolError,
                                      UnsupportedVersionError, error_info, fit_error_message, java_exception_class)
from kafkalab.protocol.framing import (DEFAULT_MAX_FRAME_BYTES, LARGE_FRAME_BYTES, FrameBuffer, FrameReader,
                                      InvalidReceiveError, ReceiveBuffer, size_prefixed)
from kafkalab.protocol.headers import (REQUEST_HEADER, RESPONSE_HEADER, RequestHeader, ResponseHeader,
                                       header_version_table, request_header_version, response_header_version)

__all__ = [
    "Request", "Response", "Annotation", "Row",
    "decode_request", "encode_request", "decode_response", "encode_response", "make_request", "make_response",
    "annotate_request", "annotate_response", "request_class", "response_class",
    "ApiKey", "api_name", "ALL_API_KEYS", "request_schema", "response_schema", "messages_for",
    "RequestHeader", "ResponseHeader", "REQUEST_HEADER", "RESPONSE_HEADER", "request_header_version",
    "response_header_version",
    "header_version_table", "ErrorCode", "ERRORS", "error_info", "java_exception_class", "ApiException", "fit_error_message", "DecodeError",
    "EncodeError",
    "UnsupportedVersionError", "InvalidReceiveError", "KafkaProtocolError", "FrameReader", "ReceiveBuffer",
    "FrameBuffer", "LARGE_FRAME_BYTES", "size_prefixed",
    "DEFAULT_MAX_FRAME_BYTES",
]

_KEY_VERSION = struct.Struct(">hh")
_SIZE = struct.Struct(">i")


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: its header and its body."""

    header: Any
    body: Any

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def client_id(self) -> Optional[str]:
        return self.header.client_id

    @property
    def api_name(self) -> str:
        return api_name(self.api_key)


@dataclasses.dataclass(frozen=True, slots=True)
class Response:
    """A decoded response. It carries the API key and version that the bytes themselves do not."""

    header: Any
    body: Any
    api_key: int
    api_version: int

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def api_name(self) -> str:
        return api_name(self.api_key)


def request_class(api_key: int) -> type:
    """The body class of ``api_key``'s request, e.g. ``request_class(3)`` is ``MetadataRequest``."""
    return request_schema(api_key).body_class


def response_class(api_key: int) -> type:
    return response_schema(api_key).body_class


def _peek_key_version(frame, base: int = 0) -> tuple[int, int]:
    if len(frame) - base < 4:
        raise DecodeError(f"a request header needs at least 4 bytes, got {len(frame) - base}",
                          path="header.request_api_key", offset=len(frame))
    return _KEY_VERSION.unpack_from(frame, base)


def _schema_or_error(api_key: int, base: int = 0):
    try:
        return messages_for(api_key)
    except KeyError:
        raise DecodeError(f"unknown api key {api_key}", path="header.request_api_key", offset=base) from None


def decode_request(frame, enabled: Optional[Mapping[int, tuple[int, int]]] = None) -> Request:
    """Decode a request frame (without its size prefix).

    Raises DecodeError for malformed bytes or an unknown API key, and UnsupportedVersionError (with the
    decoded ``header``) for a version the schema does not define. Trailing bytes are ignored, as Kafka does.
    ``enabled`` (API key -> (lowest, highest)) narrows what is accepted, checked on the header **before** the
    body is read, as Kafka's ``SocketServer.parseRequestHeader`` does: a key not in it is a DecodeError, a version
    outside its range an UnsupportedVersionError.
    """
    api_key, api_version = _peek_key_version(frame)
    req_schema, _ = _schema_or_error(api_key)
    hv = request_header_version(api_key, api_version)
    header, pos = codec.decode(REQUEST_HEADER, hv, frame, 0, path="header")
    if enabled is not None and api_key not in enabled:
        raise DecodeError(f"Received request for disabled api {api_name(api_key)} (key {api_key})",
                          path="header.request_api_key", offset=0)
    supported = api_version in req_schema.valid_versions
    if supported and enabled is not None:
        supported = enabled[api_key][0] <= api_version <= enabled[api_key][1]
    if not supported:
        raise UnsupportedVersionError(
            f"{api_name(api_key)} v{api_version} is not supported (valid: {req_schema.valid_versions.text})",
            api_key=api_key, api_version=api_version, header=header)
    body, _ = codec.decode(req_schema, api_version, frame, pos, path="body")
    return Request(header, body)


def encode_request(request: Request, *, size_prefix: bool = False) -> bytes:
    """The frame for ``request`` (with its int32 size prefix when ``size_prefix``, ready for a socket).

    The body's pieces are joined once, so a record batch inside a Produce request is copied exactly once.
    """
    api_key, api_version = request.api_key, request.api_version
    hv = request_header_version(api_key, api_version)
    out: list = [b""] if size_prefix else []
    codec.encode_into(REQUEST_HEADER, hv, request.header, out)
    codec.encode_into(request_schema(api_key), api_version, request.body, out)
    return _join(out, size_prefix)


def _join(out: list, size_prefix: bool) -> bytes:
    if size_prefix:
        out[0] = _SIZE.pack(sum(map(len, out)))
    return b"".join(out)


def make_request(body, *, api_version: int, correlation_id: int = 0, client_id: Optional[str] = "kafkalab",
                 api_key: Optional[int] = None) -> Request:
    """Wrap a request body in a header (the API key comes from the body's class)."""
    key = body.API_KEY if api_key is None else api_key
    header = RequestHeader(request_api_key=key, request_api_version=api_version, correlation_id=correlation_id,
                           client_id=client_id)
    return Request(header, body)


def decode_response(frame, api_key: int, api_version: int) -> Response:
    """Decode a response frame (without size prefix) of the request ``api_key`` v``api_version``."""
    _, resp_schema = _schema_or_error(api_key)
    hv = response_header_version(api_key, api_version)
    header, pos = codec.decode(RESPONSE_HEADER, hv, frame, 0, path="header")
    _check_response_version(resp_schema, api_key, api_version, header, pos)
    body, _ = codec.decode(resp_schema, api_version, frame, pos, path="body")
    return Response(header, body, api_key, api_version)


def _check_response_version(resp_schema, api_key: int, api_version: int, header, pos: int) -> None:
    """A response of a version its schema does not define is bad input too (a DecodeError, not ValueError)."""
    if api_version not in resp_schema.valid_versions:
        err = UnsupportedVersionError(
            f"{api_name(api_key)} v{api_version} is not supported (valid: {resp_schema.valid_versions.text})",
            api_key=api_key, api_version=api_version, header=header, offset=pos)
        err.path = "body"
        raise err


def encode_response(response: Response, *, size_prefix: bool = False) -> bytes:
    """The frame for ``response`` (with its size prefix when ``size_prefix``); pieces are joined once."""
    hv = response_header_version(response.api_key, response.api_version)
    out: list = [b""] if size_prefix else []
    codec.encode_into(RESPONSE_HEADER, hv, response.header, out)
    codec.encode_into(response_schema(response.api_key), response.api_version, response.body, out)
    return _join(out, size_prefix)


def make_response(body, *, api_version: int, correlation_id: int, api_key: Optional[int] = None) -> Response:
    key = body.API_KEY if api_key is None else api_key
    return Response(ResponseHeader(correlation_id=correlation_id), body, key, api_version)


@dataclasses.dataclass(frozen=True)
class Annotation:
    """The result of an annotated decode: one :class:`Row` per field, plus the decoded message."""

    data: bytes
    rows: list
    message: Any = None
    error: Optional[DecodeError] = None

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def find(self, path: str) -> Row:
        """The row with exactly this dotted path (KeyError if none)."""
        for row in self.rows:
            if row.path == path:
                return row
        raise KeyError(path)

    def leaves(self) -> list[Row]:
        """Rows that contain no other row: each byte of the frame belongs to at most one leaf."""
        out = []
        for i, row in enumerate(self.rows):
            nxt = self.rows[i + 1] if i + 1 < len(self.rows) else None
            if nxt is None or not (nxt.depth > row.depth and row.start <= nxt.start < row.end):
                out.append(row)
        return out

    def table(self) -> list[dict]:
        """Rows as dicts (``pandas.DataFrame(annotation.table())`` for a table view)."""
        return [{"path": r.path, "start": r.start, "end": r.end, "wire_type": r.wire_type,
                 "value": r.value, "hex": bytes(self.data[r.start:r.end]).hex(" ")} for r in self.rows]


def _size_row(data, size_prefix: bool):
    if not size_prefix:
        return 0, []
    if len(data) < 4:
        raise DecodeError("the size prefix needs 4 bytes", path="size", offset=len(data), rows=[])
    size = struct.unpack_from(">i", data, 0)[0]
    rows = [Row("size", 0, 4, "INT32", size, 0)]
    if size != len(data) - 4:
        raise DecodeError(f"size prefix says {size} bytes but {len(data) - 4} follow", path="size", offset=0,
                          rows=rows)
    return 4, rows


def annotate_request(data, *, size_prefix: bool = False, records_hook=None, strict: bool = True) -> Annotation:
    """Decode a request recording every field's path, byte range, wire type and value.

    ``size_prefix=True`` when ``data`` starts with the int32 size. ``records_hook`` expands record batches
    (pass :func:`kafkalab.records.annotate_records`). With ``strict=False`` a decode failure is returned in
    ``Annotation.error`` (with the rows decoded so far) instead of raised.
    """
    data = bytes(data)
    rows: list = []
    try:
        base, rows = _size_row(data, size_prefix)
        api_key, api_version = _peek_key_version(data, base)
        req_schema, _ = _schema_or_error(api_key, base)
        hv = request_header_version(api_key, api_version)
        header, pos, hrows = _annotate(REQUEST_HEADER, hv, data, base, "header", None, rows)
        rows.extend(hrows)
        if api_version not in req_schema.valid_versions:
            raise UnsupportedVersionError(
                f"{api_name(api_key)} v{api_version} is not supported (valid: {req_schema.valid_versions.text})",
                api_key=api_key, api_version=api_version, header=header, offset=base + 2)
        body, end, brows = _annotate(req_schema, api_version, data, pos, "body", records_hook, rows)
        rows.extend(brows)
        if end < len(data):
            rows.append(Row("trailing_bytes", end, len(data), "IGNORED", len(data) - end, 0))
        return Annotation(data, rows, Request(header, body))
    except DecodeError as e:
        if e.rows is None:
            e.rows = rows
        if strict:
            raise
        return Annotation(data, e.rows, None, e)


def annotate_response(data, api_key: int, api_version: int, *, size_prefix: bool = False, records_hook=None,
                      strict: bool = True) -> Annotation:
    """Like :func:`annotate_request`, for a response to ``api_key`` v``api_version``."""
    data = bytes(data)
    rows: list = []
    try:
        base, rows = _size_row(data, size_prefix)
        _, resp_schema = _schema_or_error(api_key)
        hv = response_header_version(api_key, api_version)
        header, pos, hrows = _annotate(RESPONSE_HEADER, hv, data, base, "header", None, rows)
        rows.extend(hrows)
        _check_response_version(resp_schema, api_key, api_version, header, pos)
        body, end, brows = _annotate(resp_schema, api_version, data, pos, "body", records_hook, rows)
        rows.extend(brows)
        if end < len(data):
            rows.append(Row("trailing_bytes", end, len(data), "IGNORED", len(data) - end, 0))
        return Annotation(data, rows, Response(header, body, api_key, api_version))
    except DecodeError as e:
        if e.rows is None:
            e.rows = rows
        if strict:
            raise
        return Annotation(data, e.rows, None, e)


def _annotate(schema, version, data, pos, path, hook, before):
    """Rows for a header or body: one row spanning it (depth 0), its fields beneath (depth 1+)."""
    kind = "HEADER" if schema.kind == "header" else schema.name
    try:
        value, end, rows = annotate_message(schema, version, data, pos, path=path, records_hook=hook, depth=1)
    except DecodeError as e:
        stop = e.offset if e.offset is not None else pos
        e.rows = list(before) + [Row(path, pos, stop, kind, None, 0)] + list(e.rows or [])
        raise
    return value, end, [Row(path, pos, end, kind, f"v{version}", 0)] + rows
