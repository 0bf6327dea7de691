"""What each byte of a frame is: the model behind the hex-dump view (no HTML here).

Theory of operation
-------------------
The annotated decoder (:mod:`kafkalab.protocol.annotate`) hands us a flat list of rows in pre-order: a row for
every field with its byte range, and rows for arrays, structs, the header and the body that span their
children. To draw a frame we need two other shapes of the same facts:

* a **tree** (who contains whom), rebuilt from the depths and byte ranges, so arrays and structs can fold;
* a **partition of the bytes** into segments, each owned by the *deepest* row covering it. Most bytes belong
  to a leaf (an ``INT32``, a string). A few belong only to a group: the count in front of an array's
  elements, the count and tag/size varints of a ``TAG_BUFFER`` that carries tagged fields. Length prefixes
  (``COMPACT_STRING``'s ``N + 1`` varint, a classic ``STRING``'s ``INT16``) become their own segment, so the
  view can show where the length ends and the content starts -- exactly where learners slip.

When decoding failed, :class:`~kafkalab.protocol.errors.DecodeError` gives the failing field's path, the
offset of the byte where decoding stopped, and the rows decoded before it. Groups that were still open get
zero-length placeholder rows; we stretch them to cover what was read. The bytes between the end of the last
complete field and the failing offset are what the decoder read of the failing field (for instance a string's
length prefix that promised more bytes than remain); everything from the failing offset on is "not decoded".

Colours are stable by field: the header fields always get the same colours, every other field a colour
chosen from a fixed palette by a hash of its path with the array indices removed (so every
``topics[i].name`` looks alike), nudged when two neighbours would collide.

Mirrors nothing in Kafka itself; the nearest relatives are Wireshark's Kafka dissector and the decode tree the
CodeCrafters Kafka tester prints on failure.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime
import re
import zlib
from typing import Optional

from kafkalab.protocol import DecodeError, Row, api_name, error_info

__all__ = ["FrameModel", "Node", "Segment", "describe_row", "prefix_length", "byte_range", "FIXED_COLOURS",
           "PALETTE"]

#: Colours of the fields every frame has, so a learner meets the same colour for the same field everywhere.
FIXED_COLOURS = {
    "size": "#ced4da",
    "header.request_api_key": "#ffc078",
    "header.request_api_version": "#ffe066",
    "header.correlation_id": "#8ce99a",
    "header.client_id": "#74c0fc",
    "trailing_bytes": "#dee2e6",
}
TAG_BUFFER_COLOUR = "#e9ecef"

#: Light colours that keep dark text readable, for every other field.
PALETTE = ("#a5d8ff", "#b2f2bb", "#ffd8a8", "#d0bfff", "#ffc9c9", "#99e9f2", "#fff3bf", "#fcc2d7",
           "#c0eb75", "#eebefa", "#96f2d7", "#bac8ff", "#ffdeeb", "#d8f5a2")

_INDEX = re.compile(r"\[\d+\]")
_COMPACTABLE = ("STRING", "BYTES", "ARRAY", "RECORDS")


@dataclasses.dataclass
class Node:
    """One entry of the field tree: a row of the annotation (or the synthetic entry for a failing field)."""

    index: int                      # position in FrameModel.rows; the failing field gets its own index
    row: Row
    parent: int = -1
    children: list = dataclasses.field(default_factory=list)
    colour: str = "#e9ecef"
    value_text: str = ""
    note: str = ""
    in_progress: bool = False       # a group that was still open when decoding failed
    failing: bool = False           # the field decoding failed in
    band: int = -1                  # index of the nearest enclosing array element (-1: none)

    @property
    def name(self) -> str:
        """The last step of the path: ``name`` for ``body.topics[0].name``, ``[0]`` for ``body.topics[0]``."""
        path = self.row.path
        if path.endswith("]"):
            return path[path.rfind("["):]
        return path.rsplit(".", 1)[-1]

    @property
    def is_group(self) -> bool:
        return bool(self.children)

    @property
    def is_header(self) -> bool:
        p = self.row.path
        return p == "size" or p == "header" or p.startswith("header.")


@dataclasses.dataclass(frozen=True)
class Segment:
    """A run of bytes with one owner. kind: field | prefix | failing | undecoded | unknown."""

    start: int
    end: int
    owner: int                      # node index, -1 for none
    kind: str


def prefix_length(row: Row, data: bytes) -> int:
    """How many bytes at the start of ``row`` are its length/count prefix (0 for fields without one).

    The prefix is read the way the wire type says (``COMPACT_*``: unsigned varint N+1; classic ``STRING``:
    INT16; classic ``BYTES``/``ARRAY``/``RECORDS``: INT32) and kept only if it agrees with the decoded value,
    so rows from other decoders that reuse a type name without a prefix (a record batch's ``records``) get none.
    """
    size = row.end - row.start
    if size <= 0:
        return 0
    base = row.wire_type.replace("NULLABLE_", "")
    compact = base.startswith("COMPACT_")
    kind = base[8:] if compact else base
    if kind not in _COMPACTABLE:
        return 0
    if compact:
        n, raw = 0, 0
        while n < min(size, 5):
            raw |= (data[row.start + n] & 0x7F) << (7 * n)
            n += 1
            if data[row.start + n - 1] < 0x80:
                break
        length = raw - 1
    else:
        n = 2 if kind == "STRING" else 4
        if size < n:
            return 0
        length = int.from_bytes(data[row.start:row.start + n], "big", signed=True)
    v = row.value
    if v is None:
        return n if size == n and length < 0 else 0
    if kind == "ARRAY":
        return n if v == length else 0
    if isinstance(v, str):
        v = v.encode("utf-8")
    if isinstance(v, (bytes, bytearray)):
        return n if len(v) == length and n + length == size else 0
    return 0


def byte_range(a: int, b: int) -> str:
    """``[a, b)`` for people, inclusive: ``12–14``, ``7``, or ``@13`` for an empty range."""
    if b - a <= 0:
        return f"@{a:,}"
    return f"{a:,}" if b - a == 1 else f"{a:,}–{b - 1:,}"


def _hexbytes(b: bytes) -> str:
    return " ".join(f"0x{x:02x}" for x in b)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _quote(s: str, limit: int = 60) -> str:
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in body)
    if len(body) > limit:
        return f'"{body[:limit - 1]}…" ({len(s)} chars)'
    return f'"{body}"'


def _bytes_preview(b: bytes, limit: int = 16) -> str:
    shown = b[:limit].hex(" ")
    if len(b) > limit:
        return f"{shown} … ({len(b):,} bytes)"
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and text.isprintable():
        return f"{shown} ({_quote(text)})"
    return shown or "(empty)"


def _length_note(row: Row, data: bytes, p: int) -> str:
    """The learner-facing reading of a length/count prefix, spelling out Kafka's N+1 rule."""
    raw = bytes(data[row.start:row.start + p])
    base = row.wire_type.replace("NULLABLE_", "")
    what = "count" if base.endswith("ARRAY") else "length"
    if base.startswith("COMPACT_"):
        value = 0
        for i, b in enumerate(raw):
            value |= (b & 0x7F) << (7 * i)
        label = f"{what} byte {_hexbytes(raw)}" if p == 1 else f"{what} varint {_hexbytes(raw)}"
        if value == 0:
            return f"{label} = null (compact encoding: 0 means null, N+1 otherwise)"
        n = value - 1
        tail = f" → {n} element{'s' if n != 1 else ''}" if what == "count" else ""
        return f"{label} = {n} + 1{tail}"
    n = int.from_bytes(raw, "big", signed=True)
    label = f"{what} {'INT16' if p == 2 else 'INT32'} 0x{raw.hex()} = {n}"
    if n == -1:
        return f"{label} = null"
    return label + (f" element{'s' if n != 1 else ''}" if what == "count" else "")


_HEADER_NOTES = {
    ("request", "v0"): "request header v0: api_key, api_version, correlation_id (no client_id)",
    ("request", "v1"): "request header v1: + client_id (classic NULLABLE_STRING)",
    ("request", "v2"): "request header v2 (flexible API version): client_id stays a classic NULLABLE_STRING, "
                       "then a TAG_BUFFER",
    ("response", "v0"): "response header v0: correlation_id only",
    ("response", "v1"): "response header v1 (flexible API version): correlation_id, then a TAG_BUFFER",
}
#: added to the response header v0 note under an ApiVersions response only (any other API's v0 header just
#: means a version that is not flexible)
_API_VERSIONS_HEADER_NOTE = " (ApiVersions always answers with v0)"


def describe_row(row: Row, data: bytes, kind: str = "request", message: str = "") -> tuple[str, str]:
    """``(value_text, note)`` for one row: the decoded value, and what its bytes mean. ``message`` is the
    frame's body type (``ApiVersionsResponse`` ...), when known."""
    wt, v = row.wire_type, row.value
    p = prefix_length(row, data)
    framing = _describe_framing_row(row, data, kind, message)
    if framing is not None:
        return framing
    note = _length_note(row, data, p) if p else ""
    if wt in ("STRUCT", "NULLABLE_STRUCT"):
        if wt == "NULLABLE_STRUCT" and row.end - row.start == 1 and data[row.start] == 0xFF:
            return "null", "presence byte 0xff (-1) = null"
        return "", ("presence byte 0x01, then the fields" if wt == "NULLABLE_STRUCT" else "")
    if v is None:
        return "null", note
    if "STRING" in wt and isinstance(v, str):
        return _quote(v), note
    if "ARRAY" in wt:
        return f"{v} element{'s' if v != 1 else ''}", note
    if isinstance(v, (bytes, bytearray)):
        return _bytes_preview(bytes(v)), note
    if isinstance(v, bool):
        return ("true" if v else "false"), note
    if isinstance(v, int):
        return _describe_int(row, data, note)
    if isinstance(getattr(v, "data", None), (bytes, bytearray)) and hasattr(v, "rows"):
        return (f"{len(v.data):,} bytes after decompression, {len(v.rows):,} rows",
                f"one compressed block ({wt}); the inflated records are in this row's value")
    if wt == "UUID" and getattr(v, "int", None) == 0:
        return str(v), "all zeros: Kafka's ZERO_UUID (no topic id)"
    return _short(str(v)), note


def _describe_framing_row(row: Row, data: bytes, kind: str, message: str = "") -> Optional[tuple[str, str]]:
    """Rows that are framing rather than a field (tag buffers, the header, the body, the size, trailing or
    unknown tagged bytes): their ``(value_text, note)``, or None for a field."""
    wt, v, path = row.wire_type, row.value, row.path
    if wt == "TAG_BUFFER":
        raw = bytes(data[row.start:row.start + 1])
        if v == 0:
            return "0 tagged fields", f"count byte {_hexbytes(raw)} = no tagged fields"
        return f"{v} tagged field{'s' if v != 1 else ''}", "TAG_BUFFER: count, then (tag, size, value) per field"
    if wt == "HEADER" and path == "header":
        if v is None:
            return f"{kind} header", ""
        note = _HEADER_NOTES.get((kind, v), "")
        if (kind, v, message) == ("response", "v0", "ApiVersionsResponse"):
            note += _API_VERSIONS_HEADER_NOTE
        return f"{kind} header {v}", note
    if path == "body":
        return f"{wt} {v}" if v else wt, ""
    if path == "size":
        return f"{v:,}", f"{v:,} bytes follow the size field" if isinstance(v, int) else ""
    if path == "trailing_bytes":
        return f"{v:,} bytes", "bytes after the body: ignored, as Kafka does"
    if wt == "UNKNOWN_TAGGED_FIELD":
        return _bytes_preview(v), "a tagged field this version does not know: kept as raw bytes"
    return None


def _describe_int(row: Row, data: bytes, note: str) -> tuple[str, str]:
    """An integer field: varints spelled out, timestamps as dates, API keys and error codes by name."""
    wt, v = row.wire_type, row.value
    leaf = row.path.rsplit(".", 1)[-1]
    raw = bytes(data[row.start:row.end])
    if wt in ("VARINT", "VARLONG") and raw:
        return str(v), f"zig-zag {wt.lower()} {_hexbytes(raw)} = {v}"
    if wt == "UNSIGNED_VARINT" and raw:
        return str(v), f"unsigned varint {_hexbytes(raw)}: 7 bits a byte, high bit = more follow"
    if leaf.endswith("timestamp") and 10**11 < v < 10**14:
        when = datetime.datetime.fromtimestamp(v / 1000, datetime.timezone.utc)
        return str(v), f"ms since the epoch = {when.isoformat(timespec='milliseconds')}"
    if leaf in ("request_api_key", "api_key") and 0 <= v < 1000:
        try:
            return f"{v} ({api_name(v)})", note
        except (KeyError, ValueError):
            return str(v), note
    if leaf == "error_code":
        info = error_info(v)
        return f"{v} ({info.name})", note
    return str(v), note


def _is_prefix_path(prefix: str, path: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[") or prefix == ""


class FrameModel:
    """Tree, byte segments and failure facts of one annotated frame."""

    def __init__(self, annotation, kind: str = "request"):
        self.annotation = annotation
        self.kind = kind
        self.data: bytes = bytes(annotation.data)
        self.error: Optional[DecodeError] = annotation.error
        n = len(self.data)
        rows = [Row(r.path, max(0, min(r.start, n)), max(0, min(r.end, n)), r.wire_type, r.value, r.depth)
                for r in annotation.rows]
        err = self.error
        in_progress = [False] * len(rows)
        if err is not None:
            off = err.offset if err.offset is not None else max((r.end for r in rows), default=0)
            self.error_offset: Optional[int] = max(0, min(off, n))
            rows, in_progress = self._stretch_open_groups(rows, err.path or "", self.error_offset)
        else:
            self.error_offset = None
        self.rows = rows
        self.nodes = [Node(i, r, in_progress=in_progress[i]) for i, r in enumerate(rows)]
        self.roots: list[int] = []
        self._build_tree()
        self.fail_start = self._fail_start() if err is not None else None
        if err is not None:
            self._add_failing_node()
        self._describe()
        self._assign_colours()
        self.segments = self._segments()
        self._starts = [s.start for s in self.segments]

    # -- structure ------------------------------------------------------------------------------------
    @staticmethod
    def _stretch_open_groups(rows, path, off):
        """Groups still open at the failure get their real extent: what their children and the failing
        read covered."""
        rows = list(rows)
        flags = [False] * len(rows)
        for i, r in enumerate(rows):
            if not _is_prefix_path(r.path, path):
                continue
            deeper_end = r.end
            j = i + 1
            while j < len(rows) and rows[j].depth > r.depth:
                deeper_end = max(deeper_end, rows[j].end)
                j += 1
            has_children = j > i + 1
            # A row whose path strictly contains the failing path is a group still being read, even when the
            # failure came before its first child row was recorded.
            if has_children or r.start == r.end or r.path != path:
                flags[i] = True
                rows[i] = r._replace(end=max(deeper_end, off, r.start))
        return rows, flags

    def _build_tree(self):
        stack: list[int] = []
        for node in self.nodes:
            r = node.row
            while stack:
                top = self.nodes[stack[-1]].row
                if top.depth < r.depth and top.start <= r.start and r.end <= top.end:
                    break
                stack.pop()
            if stack:
                node.parent = stack[-1]
                self.nodes[stack[-1]].children.append(node.index)
            else:
                self.roots.append(node.index)
            stack.append(node.index)
        for node in self.nodes:   # nearest enclosing array element, for the alternating element bands
            i, band = node.index, -1
            while i >= 0:
                path = self.nodes[i].row.path
                parent = self.nodes[i].parent
                if (path.endswith("]") and "[tag=" not in path[path.rfind("["):]
                        and parent >= 0 and len(self.nodes[parent].children) > 1):
                    band = int(path[path.rfind("[") + 1:-1])
                    break
                i = self.nodes[i].parent
            node.band = band

    def _fail_start(self) -> int:
        """First byte of the failing field: after the last complete field (or an open array's count)."""
        off = self.error_offset
        fs = 0
        for node in self.nodes:
            r = node.row
            if not node.in_progress:
                if r.end <= off and r.end > r.start:
                    fs = max(fs, r.end)
            else:
                p = prefix_length(r, self.data)
                if p and r.start + p <= off:
                    fs = max(fs, r.start + p)
        return min(fs, off)

    def _add_failing_node(self):
        err, off = self.error, self.error_offset
        path = err.path or "(frame)"
        for node in self.nodes:
            if node.row.path == path and not node.in_progress:
                node.failing = True
                self.failing_index = node.index
                return
        parent = -1
        for node in self.nodes:
            if node.in_progress and _is_prefix_path(node.row.path, path):
                if parent < 0 or node.row.depth >= self.nodes[parent].row.depth:
                    parent = node.index
        depth = self.nodes[parent].row.depth + 1 if parent >= 0 else 0
        row = Row(path, self.fail_start, max(off, self.fail_start), "DECODE_ERROR", None, depth)
        node = Node(len(self.nodes), row, parent=parent, failing=True)
        self.nodes.append(node)
        self.rows.append(row)
        (self.nodes[parent].children if parent >= 0 else self.roots).append(node.index)
        self.failing_index = node.index

    def _describe(self):
        body = self.find("body")
        message = body.row.wire_type if body is not None else ""
        for node in self.nodes:
            if node.failing and node.row.wire_type == "DECODE_ERROR":
                node.value_text, node.note = "✗ decode error", self.error.reason
                continue
            node.value_text, node.note = describe_row(node.row, self.data, self.kind, message)
            if node.children and not isinstance(node.row.value, (int, str, bytes, type(None))):
                node.value_text = ""      # a decoded object (a record, a batch header): its children say it
            if node.in_progress:
                node.value_text = "✗ incomplete (decoding stopped inside)"
            if node.failing:
                node.note = f"✗ {self.error.reason}"

    def _assign_colours(self):
        previous = None
        for node in self.nodes:
            r = node.row
            if r.wire_type == "TAG_BUFFER":
                colour = TAG_BUFFER_COLOUR
            elif r.path in FIXED_COLOURS:
                colour = FIXED_COLOURS[r.path]
            elif node.failing and r.wire_type == "DECODE_ERROR":
                colour = "#ffc9c9"
            elif r.path in ("header", "body"):
                colour = "#f1f3f5"
            else:
                key = _INDEX.sub("[]", r.path).encode()
                k = zlib.crc32(key) % len(PALETTE)
                colour = PALETTE[k]
                if colour == previous:
                    colour = PALETTE[(k + 1) % len(PALETTE)]
            node.colour = colour
            if not node.children:
                previous = colour

    # -- bytes ----------------------------------------------------------------------------------------
    def _segments(self) -> list[Segment]:
        n = len(self.data)
        bounds = {0, n}
        prefix_end = {}
        for node in self.nodes:
            r = node.row
            if node.failing and r.wire_type == "DECODE_ERROR":
                continue
            bounds.update((r.start, r.end))
            p = prefix_length(r, self.data)
            if p and (self.error_offset is None or r.start + p <= self.error_offset or not node.in_progress):
                prefix_end[node.index] = r.start + p
                bounds.add(r.start + p)
        if self.error is not None:
            bounds.update((self.fail_start, self.error_offset))
        cuts = sorted(b for b in bounds if 0 <= b <= n)
        owner = [-1] * (len(cuts) - 1)
        order = sorted((nd for nd in self.nodes if nd.row.end > nd.row.start and nd.row.wire_type != "DECODE_ERROR"),
                       key=lambda nd: (nd.row.depth, nd.index))
        for node in order:
            a = bisect.bisect_left(cuts, node.row.start)
            b = bisect.bisect_left(cuts, node.row.end)
            for k in range(a, b):
                owner[k] = node.index
        segs: list[Segment] = []
        off, fs = self.error_offset, self.fail_start
        for k, o in enumerate(owner):
            a, b = cuts[k], cuts[k + 1]
            node = self.nodes[o] if o >= 0 else None
            if node is not None and not node.in_progress:
                kind = "prefix" if o in prefix_end and a < prefix_end[o] else "field"
            elif node is not None and off is not None and b <= fs and o in prefix_end and a < prefix_end[o]:
                kind = "prefix"
            elif off is not None and a >= off:
                kind, o = "undecoded", (o if node is not None else -1)
            elif off is not None and a >= fs:
                kind, o = "failing", self.failing_index
            else:
                kind = "field" if node is not None else "unknown"
            if segs and segs[-1].owner == o and segs[-1].kind == kind and segs[-1].end == a:
                segs[-1] = Segment(segs[-1].start, b, o, kind)
            else:
                segs.append(Segment(a, b, o, kind))
        return segs

    def segments_in(self, start: int, end: int) -> list[Segment]:
        """Segments clipped to ``[start, end)``."""
        i = max(0, bisect.bisect_right(self._starts, start) - 1)
        out = []
        while i < len(self.segments) and self.segments[i].start < end:
            s = self.segments[i]
            a, b = max(s.start, start), min(s.end, end)
            if a < b:
                out.append(Segment(a, b, s.owner, s.kind))
            i += 1
        return out

    def ancestors(self, index: int) -> list[int]:
        """``index`` and its enclosing nodes, innermost first."""
        out = []
        while index >= 0:
            out.append(index)
            index = self.nodes[index].parent
        return out

    # -- summary facts --------------------------------------------------------------------------------
    @property
    def ok(self) -> bool:
        return self.error is None

    def find(self, path: str) -> Optional[Node]:
        for node in self.nodes:
            if node.row.path == path:
                return node
        return None

    def header_nodes(self) -> list[Node]:
        """The size and header fields, in wire order (the callouts)."""
        return [nd for nd in self.nodes if nd.is_header and nd.row.path != "header" and not nd.children
                and nd.row.wire_type != "DECODE_ERROR"]

    def title(self) -> str:
        body = self.find("body")
        ver = self.find("header.request_api_version")
        if body is not None and body.row.value:
            return f"{body.row.wire_type} {body.row.value}"
        if body is not None:
            return f"{body.row.wire_type} v{ver.row.value}" if ver is not None else body.row.wire_type
        key = self.find("header.request_api_key")
        if key is not None:
            try:
                name = api_name(key.row.value) + "Request"
            except (KeyError, ValueError):
                name = f"api_key {key.row.value} request"
            return f"{name} v{ver.row.value}" if ver is not None else name
        return "Kafka request" if self.kind == "request" else "Kafka response"

    def error_summary(self) -> str:
        err = self.error
        if err is None:
            return ""
        where = f"byte {self.error_offset}"
        if self.error_offset < len(self.data):
            where += f" (0x{self.data[self.error_offset]:02x})"
        else:
            where += " (past the last byte)"
        return f"{err.reason} — field {err.path or '(frame)'}, {where}"
