"""Lab 01 (``labs/01_the_wire.ipynb``): its fixed capture settings, recorded fallbacks, one picture, and checks.

Theory of operation
-------------------
The lab captures what real clients send to a socket the notebook opens (:mod:`kafkalab.trace`). Its stored
outputs are compared byte for byte by nbval, so everything a client would otherwise choose for itself is
fixed here:

* :data:`CLIENT_ID` -- every client gets the same ``client.id``;
* :data:`LIBRDKAFKA_SOFTWARE` -- librdkafka names itself in ApiVersions v3+ (KIP-511 ``ClientSoftwareName``
  and ``ClientSoftwareVersion``); left alone, kcat and confluent-kafka would put their own version numbers on
  the wire, which differ from laptop to laptop;
* :data:`RECORDS` -- keys, values, headers and *timestamps* of the records produced (a producer stamps the
  current time otherwise, and the CRC changes with it);
* :class:`HoldFirstReply` -- librdkafka's background threads race with ``produce()``: depending on which wins,
  the client sends one Metadata request more or less before its Produce, and the Produce's correlation id
  shifts. Holding the very first reply back for a second lets the client queue its records before it learns
  about the cluster, after which it takes the same path. (A Metadata request that is still in flight when
  ``produce()`` names the topic gets repeated; on a loaded machine that can still happen, always on the
  bootstrap connection, so the lab prints the conversation with repeats folded.)

When a client is not installed (kcat is often missing on laptops), :func:`first_request` and
:func:`produce_conversation` fall back to frames recorded with exactly these settings, shipped with the package in ``kafkalab/labs/frames/``
(package data, read through :mod:`importlib.resources`, so a wheel install has them too)
(regenerate them with ``scripts/record_frames.py lab01``). The lab prints nothing that tells the
two apart, so its output is the same either way; :data:`SOURCES` says which one was used.

The checks (``check_*``) compute the right answer from the data the learner was given, with kafkalab's own
decoder and header rule, and return a :class:`~kafkalab.labs.CheckResult`.
"""
from __future__ import annotations

import hashlib
import html
import importlib.resources
import json
import struct
import time
import warnings
from typing import Any, Iterable, NamedTuple, Optional

from kafkalab.labs import CheckResult, check_equal, check_parts
from kafkalab.protocol import (RESPONSE_HEADER, Annotation, ApiKey, DecodeError, annotate_request, api_name,
                               decode_request, request_header_version, request_schema, response_header_version,
                               response_schema)
from kafkalab.protocol import primitives as P
from kafkalab.protocol.annotate import Row, annotate_message
from kafkalab.trace import ClientNotAvailable, ScriptedReplies, capture, first_request_only

__all__ = ["CLIENT_ID", "LIBRDKAFKA_SOFTWARE", "TOPIC", "RECORDS", "FRAMES", "SOURCES", "Frame", "client_config",
           "recorded", "first_request", "HoldFirstReply", "produce_conversation", "annotate_response_as",
           "header_version_grid", "check_correlation_id", "check_compact_length", "check_zigzag",
           "check_response_header_versions", "check_client_id_range"]

CLIENT_ID = "kafkalab-lab01"
#: librdkafka's KIP-511 self-description, fixed so that kcat and confluent-kafka put the same bytes on the wire.
LIBRDKAFKA_SOFTWARE = {"client.software.name": "kafkalab-lab", "client.software.version": "1.0"}
TOPIC = "sensor-readings"
#: What the lab produces: a key, a value, one header and a fixed timestamp (ms since the epoch) per record.
RECORDS = [
    {"key": "sensor-1", "value": "21.5", "headers": [["unit", "celsius"]], "timestamp": 1700000000000},
    {"key": "sensor-2", "value": "19.0", "headers": [["unit", "celsius"]], "timestamp": 1700000000250},
]
#: The recorded frames (package data): ``manifest.json`` and one ``.bin`` per request frame, without its size.
FRAMES = importlib.resources.files("kafkalab.labs") / "frames"
#: Which source each capture of this process used: ``{"kcat": "live", ...}`` or ``"recorded"``.
SOURCES: dict[str, str] = {}

_LIBRDKAFKA = ("kcat", "confluent-kafka")


class Frame(NamedTuple):
    """One request of a conversation: which connection, which API and version, and its bytes (no size)."""

    connection: int
    api_name: str
    api_version: int
    frame: bytes


def client_config(client: str) -> dict:
    """Extra settings for ``client``: librdkafka's software name/version, nothing for the others."""
    return dict(LIBRDKAFKA_SOFTWARE) if client in _LIBRDKAFKA else {}


# -- recorded frames ----------------------------------------------------------------------------------------------
def _manifest() -> dict:
    return json.loads((FRAMES / "manifest.json").read_text(encoding="utf-8"))


def recorded(name: str) -> bytes:
    """The bytes of ``kafkalab/labs/frames/<name>`` (a frame without its size prefix), checked against the manifest."""
    entry = next((f for f in _manifest()["frames"] if f["file"] == name), None)
    if entry is None:
        raise KeyError(f"no recorded frame {name!r} in {FRAMES / 'manifest.json'}")
    data = (FRAMES / name).read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ValueError(f"{FRAMES / name} does not match its sha256 in manifest.json")
    return data


def _recorded_conversation(conversation: str) -> list[Frame]:
    entries = [f for f in _manifest()["frames"] if f.get("conversation") == conversation]
    entries.sort(key=lambda f: f["index"])
    return [Frame(f["connection"], f["api"], f["api_version"], recorded(f["file"])) for f in entries]


def _first_file(client: str) -> str:
    entry = next(f for f in _manifest()["frames"] if f["client"] == client and f.get("conversation") == "first")
    return entry["file"]


# -- live captures with a fallback ------------------------------------------------------------------------------
def _capture(client: str, action: str, **kwargs):
    try:
        return capture(client, action, client_id=CLIENT_ID, config=client_config(client), topic=TOPIC, **kwargs)
    except ClientNotAvailable:
        return None


def first_request(client: str) -> bytes:
    """The first request frame ``client`` sends (live, or recorded if the client is not installed)."""
    result = _capture(client, "metadata", reply=first_request_only, timeout=6.0)
    if result is not None and result:
        SOURCES[client] = "live"
        return result[0].frame
    if result is not None:
        warnings.warn(f"{client} sent nothing within the capture timeout; using the recorded frame instead",
                      stacklevel=2)
    SOURCES[client] = "recorded"
    return recorded(_first_file(client))


class HoldFirstReply(ScriptedReplies):
    """:class:`~kafkalab.trace.ScriptedReplies`, except that the very first answer waits a moment.

    Use a fresh one per capture. Why the wait makes a librdkafka capture reproducible: see the module doc.
    """

    hold_seconds = 1.0

    def __call__(self, captured):
        if captured.index == 0:
            time.sleep(self.hold_seconds)
        return super().__call__(captured)


def produce_conversation() -> list[Frame]:
    """Every request confluent-kafka sends to produce :data:`RECORDS` to partition 0 of :data:`TOPIC`."""
    result = _capture("confluent-kafka", "produce", records=RECORDS, reply=HoldFirstReply(), timeout=8.0)
    if result is not None and any(r.api_name == "Produce" for r in result):
        SOURCES["confluent-kafka produce"] = "live"
        return [Frame(r.connection, r.api_name, r.api_version, r.frame) for r in result]
    if result is not None:
        warnings.warn("confluent-kafka sent no Produce request; using the recorded conversation instead",
                      stacklevel=2)
    SOURCES["confluent-kafka produce"] = "recorded"
    return _recorded_conversation("produce")


# -- decoding a response with a chosen header version -------------------------------------------------------------
def annotate_response_as(frame: bytes, api_key: int, api_version: int, header_version: int) -> Annotation:
    """Annotate a response frame as a client would that assumed response header ``header_version``.

    :func:`kafkalab.protocol.annotate_response` always applies Kafka's rule; this shows what a client with the
    *wrong* rule reads. A decode failure is returned in ``Annotation.error``, like ``strict=False``.
    """
    frame = bytes(frame)
    schema = response_schema(api_key)
    rows: list = []
    pos = 0
    try:
        _, pos, header_rows = annotate_message(RESPONSE_HEADER, header_version, frame, 0, path="header", depth=1)
        rows += [Row("header", 0, pos, "HEADER", f"v{header_version}", 0), *header_rows]
        body, end, body_rows = annotate_message(schema, api_version, frame, pos, path="body", depth=1)
        rows += [Row("body", pos, end, schema.name, f"v{api_version}", 0), *body_rows]
        if end < len(frame):
            rows.append(Row("trailing_bytes", end, len(frame), "IGNORED", len(frame) - end, 0))
        return Annotation(frame, rows, body)
    except DecodeError as e:
        stop = e.offset if e.offset is not None else pos
        part = "body" if any(r.path == "header" for r in rows) else "header"
        kind = schema.name if part == "body" else "HEADER"
        rows = rows + [Row(part, pos if part == "body" else 0, stop, kind, None, 0)] + list(e.rows or [])
        return Annotation(frame, rows, None, e)


# -- a picture: which header version, API by API and version by version -------------------------------------------
_GRID_COLOURS = {"classic": "#dbe4ff", "flexible": "#d3f9d8", "exception": "#ffe8cc"}


class HeaderVersionGrid:
    """APIs down, versions across; each cell ``request header · response header``, coloured by flexibility."""

    def __init__(self, api_keys: Iterable[int]):
        self.api_keys = [int(k) for k in api_keys]
        self.width = 1 + max(request_schema(k).valid_versions.hi for k in self.api_keys)

    def cells(self, api_key: int) -> list[Optional[tuple[int, int, str]]]:
        """Per version: ``(request header, response header, kind)`` or None where the version does not exist."""
        req = request_schema(api_key)
        out = []
        for v in range(self.width):
            if v not in req.valid_versions:
                out.append(None)
                continue
            rq, rs = request_header_version(api_key, v), response_header_version(api_key, v)
            kind = "classic" if not req.is_flexible(v) else ("exception" if rs == 0 else "flexible")
            out.append((rq, rs, kind))
        return out

    def __repr__(self) -> str:
        name_w = max(len(api_name(k)) for k in self.api_keys) + 2
        lines = [" " * name_w + " ".join(f"v{v:<3}" for v in range(self.width))]
        for k in self.api_keys:
            row = [" .  " if c is None else f"{c[0]}·{c[1]}" + ("!" if c[2] == "exception" else " ")
                   for c in self.cells(k)]
            lines.append(f"{api_name(k):<{name_w}}" + " ".join(row))
        lines.append("cell = request header version · response header version;  . = no such version;  "
                     "! = flexible, but the response header stays v0")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        th = "padding:2px 4px;color:#656d76;font-weight:600;font-size:11px;text-align:center"
        head = f'<th style="{th};text-align:left">API \\ version</th>' + "".join(
            f'<th style="{th}">{v}</th>' for v in range(self.width))
        body = []
        for k in self.api_keys:
            tds = [f'<td style="padding:2px 8px 2px 0;white-space:nowrap;font-weight:600">{e(api_name(k))} '
                   f'<span style="color:#8c959f;font-weight:400">({k})</span></td>']
            for v, c in enumerate(self.cells(k)):
                if c is None:
                    tds.append('<td style="text-align:center;color:#ced4da" title="no such version">·</td>')
                    continue
                rq, rs, kind = c
                tip = f"{api_name(k)} v{v}: request header v{rq}, response header v{rs}"
                if kind == "exception":
                    tip += " (ApiVersions: always v0, KIP-511)"
                border = "outline:2px solid #e8590c;outline-offset:-2px;" if kind == "exception" else ""
                tds.append(f'<td title="{e(tip)}" style="text-align:center;padding:2px 3px;border-radius:3px;'
                           f'background:{_GRID_COLOURS[kind]};{border}font:11.5px/1.3 ui-monospace,Menlo,Consolas,'
                           f'monospace">{rq}·{rs}</td>')
            body.append("<tr>" + "".join(tds) + "</tr>")

        def sw(kind):
            return (f'<span style="display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:-1px;'
                    f'background:{_GRID_COLOURS[kind]};border:1px solid rgba(0,0,0,.15)"></span>')
        legend = (f'<div style="margin-top:6px;color:#656d76;font-size:12px">cell = <b>request header · response '
                  f'header</b> version &nbsp; {sw("classic")} not flexible: 1·0 &nbsp; {sw("flexible")} flexible: '
                  f'2·1 &nbsp; {sw("exception")} ApiVersions, flexible yet answered with response header v0 '
                  f'&nbsp; · no such version (never defined, or removed in Kafka 4.0)</div>')
        return (f'<div style="font:13px/1.4 system-ui,-apple-system,&quot;Segoe UI&quot;,Roboto,sans-serif;'
                f'color:#1f2328;overflow-x:auto"><table style="border-collapse:separate;border-spacing:2px">'
                f'<tr>{head}</tr>{"".join(body)}</table>{legend}</div>')


def header_version_grid(api_keys: Iterable[int]) -> HeaderVersionGrid:
    return HeaderVersionGrid(api_keys)


# -- checks ---------------------------------------------------------------------------------------------------------
def check_correlation_id(answer: Any, wire: bytes) -> CheckResult:
    """Exercise: the correlation id of the request ``wire`` (size prefix included), read by hand."""
    expected = decode_request(wire[4:]).correlation_id

    def diagnose(a):
        if not isinstance(a, int):
            return "give a Python int, e.g. struct.unpack('>i', some_bytes)[0] or int.from_bytes(..., 'big')"
        if a == int.from_bytes(wire[8:12], "little", signed=True):
            return "that is those bytes read little-endian; Kafka's integers are big-endian (network byte order)"
        if a == struct.unpack_from(">i", wire, 0)[0]:
            return "that is the size prefix; the correlation id comes after the size, api_key and api_version"
        if a == struct.unpack_from(">i", wire, 4)[0]:
            return "you read api_key and api_version as one int32; skip 2 + 2 more bytes"
        return None
    return check_equal("Exercise 1 · correlation id by hand", answer, expected, diagnose=diagnose,
                       hint="size (4 bytes), api_key (2), api_version (2), then correlation_id: 4 bytes, "
                            "big-endian, signed")


def check_compact_length(answer: Any, text: str) -> CheckResult:
    """Exercise: the value of the length byte in front of ``text`` as a COMPACT_STRING."""
    encoded = P.write_string(text, compact=True)
    expected, _ = P.read_unsigned_varint(encoded, 0)
    n = len(text.encode("utf-8"))

    def diagnose(a):
        if isinstance(a, (bytes, bytearray)) and len(a) == 1:
            return "give the byte's value as an int (e.g. 0x0c or 12), not a bytes object"
        if a == n:
            return "that is the length N itself; a compact length stores N + 1 so that 0 can mean null"
        if a == n - 1:
            return "a compact length is N + 1, not N - 1: 0 is reserved for null"
        return None
    return check_equal(f"Exercise 2 · compact length byte of {text!r}", answer, expected, diagnose=diagnose,
                       hint="count the UTF-8 bytes of the string, then apply the compact rule (0 = null)")


def check_zigzag(answer: Any, data: bytes) -> CheckResult:
    """Exercise: the signed value of the zig-zag varint ``data`` (as in a record's fields)."""
    expected, _ = P.read_varint(data, 0)
    unsigned, _ = P.read_unsigned_varint(data, 0)

    def diagnose(a):
        if not isinstance(a, int):
            return "give a Python int"
        if a == unsigned:
            return "that is the unsigned varint; now undo the zig-zag mapping: (n >> 1) ^ -(n & 1)"
        if a == data[0] or a == data[0] & 0x7F:
            return "a varint can span several bytes: a set high bit (0x80) means another byte follows"
        if a == -expected:
            return "right size, wrong sign: in zig-zag, odd numbers are the negative ones"
        return None
    return check_equal("Exercise 3 · zig-zag varint", answer, expected, diagnose=diagnose,
                       hint="7 bits per byte, lowest group first; then map back 0→0, 1→-1, 2→1, 3→-2, ...")


_KEYS_BY_NAME = {api_name(k): int(k) for k in ApiKey}


def check_response_header_versions(answers: Any, questions: Iterable[tuple[str, int]]) -> CheckResult:
    """Exercise: the response header version of each ``(api name, version)`` in ``questions``."""
    expected = {(name, v): response_header_version(_KEYS_BY_NAME[name], v) for name, v in questions}

    def diagnose(key, got):
        name, v = key
        if got not in (0, 1):
            return "response headers exist in versions 0 and 1 only"
        if name == "ApiVersions":
            return "ApiVersions is the one exception to the flexible-version rule"
        flexible = request_schema(_KEYS_BY_NAME[name]).flexible_versions.text
        return f"is {name} v{v} flexible? ({name}'s flexible versions: {flexible})"
    return check_parts("Exercise 4 · response header versions", answers, expected,
                       label=lambda k: f"{k[0]} v{k[1]}", diagnose=diagnose,
                       hint="v1 (with a TAG_BUFFER) for flexible versions, v0 otherwise, with one exception")


def check_client_id_range(answer: Any, wire: bytes) -> CheckResult:
    """Exercise: ``(start, end)`` of the client_id field (length prefix included, end exclusive) in ``wire``."""
    row = annotate_request(wire, size_prefix=True).find("header.client_id")
    expected = (row.start, row.end)

    def diagnose(a):
        if not (isinstance(a, (tuple, list)) and len(a) == 2 and all(isinstance(x, int) for x in a)):
            return "give two ints: (start, end)"
        start, end = a
        if (start, end) == (row.start + 2, row.end):
            return "the field starts with its INT16 length prefix: include those 2 bytes"
        if (start, end) == (row.start, row.end - 1) or (start, end) == (row.start + 2, row.end - 1):
            return "use an exclusive end, like a Python slice: wire[start:end] is exactly the field"
        if (start, end) == (row.start - 4, row.end - 4) or (start, end) == (row.start - 2, row.end - 4):
            return "count from the first byte of the wire bytes, size prefix included"
        return None
    return check_equal("Exercise 5 · client_id's byte range", answer, expected, diagnose=diagnose,
                       describe=lambda a: repr(tuple(a)) if isinstance(a, list) else repr(a),
                       hint="wire[start:end] should be the 2-byte length followed by the client id's text")
