"""Lab 06 (``labs/06_the_log.ipynb``), the files: segments, indexes, retention, compaction.

Theory of operation
-------------------
A partition replica is a directory ``<log.dirs>/<topic>-<partition>`` of *segments*. Each segment is a
``.log`` file holding record batches exactly as the producer sent them (the broker only rewrites the base
offset and the partition leader epoch, which sit before the CRC range), a sparse ``.index`` (relative offset
-> byte position, one entry every ``index.interval.bytes``) and a ``.timeindex`` (timestamp -> offset). This
module reads those files **straight from disk**, the way ``kafka-dump-log.sh`` or a curious learner with
``xxd`` would, and turns them into tables and pictures:

* :func:`file_tree` -- every file under a log dir, relative path and size, with a note on what it is for;
* :func:`read_masked` -- a small text file (``meta.properties``, ``partition.metadata``, checkpoints) with
  the values that are random per run (cluster id, topic id, the date line) replaced by a description;
* :func:`segments`, :func:`batches_of`, :func:`index_entries`, :func:`time_index_entries` -- what a
  partition directory holds, parsed from the bytes;
* :func:`lookup_walk` -- how the broker finds an offset: pick the segment, binary-search its index, scan batch
  headers from there;
* :func:`dump_log` -- ``kafkalab dump-log`` run from Python, with file names relative to the partition dir;
* :class:`ByteDiff` (the bytes a client sent next to the bytes on disk, differences marked) and
  :class:`SegmentMap` (segments as bars of batches, index entries as arrows into the ``.log``), both
  deterministic SVG/HTML;
* the requests the lab sends on a bare connection and the message formats v0/v1/v2 are in :mod:`.wire`;
* the checks ``check_*``, which compute the right answer from the data the learner was given.

Mirrors what ``core/src/main/scala/kafka/tools/DumpLogSegments.scala`` and
``storage/.../internals/log/{LogSegment,OffsetIndex}.java`` read.
"""
from __future__ import annotations

import bisect
import contextlib
import html
import io
import os
import re
import struct
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence

from kafkalab.labs import CheckResult, Part, check, check_equal, is_unanswered
from kafkalab.records import crc_is_valid, read_batch_header
from kafkalab.viz.style import UI_FONT as _FONT
from kafkalab.viz.textfit import SVG_FONT_FAMILY, stack_rows, text_width

__all__ = ["TOPIC", "T0", "FILE_ROLES", "file_tree", "read_masked", "Segment", "IndexEntry", "BatchInfo",
           "segments", "batches_of", "index_entries", "time_index_entries", "segment_file_for", "lookup_walk",
           "dump_log", "ByteDiff", "SegmentMap", "HEADER_FIELDS", "deletable_by_time",
           "compacted", "check_segment_file", "check_index_position", "check_retention", "check_compaction",
           "recovered_log_end_offset", "check_recovery"]

TOPIC = "readings"
#: The timestamp of the first record the lab produces (2023-11-14 22:13:20 UTC); every later one is fixed too.
T0 = 1_700_000_000_000

#: What each file of a log dir is for (matched on the file name).
FILE_ROLES = [
    (r"\.log$", "segment: record batches, as the producer sent them"),
    (r"\.index$", "offset index: relative offset -> byte position in the .log (sparse)"),
    (r"\.timeindex$", "time index: timestamp -> offset (sparse)"),
    (r"\.snapshot$", "producer state at this offset (idempotent producers)"),
    (r"\.txnindex$", "aborted transactions in this segment"),
    (r"^leader-epoch-checkpoint$", "leader epoch -> its first offset (truncation after a leader change)"),
    (r"^partition\.metadata$", "the topic id this directory belongs to"),
    (r"^meta\.properties$", "which cluster and broker this log dir belongs to"),
    (r"^recovery-point-offset-checkpoint$", "per partition: offset up to which data is known flushed"),
    (r"^replication-offset-checkpoint$", "per partition: the high watermark"),
    (r"^log-start-offset-checkpoint$", "per partition: the log start offset, when above the first segment"),
    (r"^cleaner-offset-checkpoint$", "per compacted partition: where the cleaner stopped"),
    (r"^\.kafka_cleanshutdown$", "written on a clean shutdown: no recovery needed at the next start"),
    (r"^\.lock$", "held while a broker uses this directory"),
    (r"\.deleted$", "a segment waiting for file.delete.delay.ms before removal"),
    (r"\.cleaned$|\.swap$", "a compaction result being swapped in"),
]


def _role(name: str) -> str:
    return next((role for pattern, role in FILE_ROLES if re.search(pattern, name)), "")


def file_tree(base, *, skip: Sequence[str] = ("zookeeper",)) -> list[dict]:
    """Every file under ``base`` as ``{"file": relative path, "bytes": size, "what": role}``, sorted."""
    base = Path(base)
    rows = []
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(files):
            path = Path(root) / name
            rows.append({"file": path.relative_to(base).as_posix(), "bytes": path.stat().st_size,
                         "what": _role(name)})
    return sorted(rows, key=lambda r: r["file"])


_MASKS = [
    (re.compile(r"^#\w{3} \w{3} .*$", re.M), "#<the date and time the file was written>"),
    (re.compile(r"(cluster\.id=)\S+"), r"\1<22 characters, random per cluster>"),
    (re.compile(r"(topic_id: )\S+"), r"\1<22 characters, random per topic>"),
]


def read_masked(path) -> str:
    """A small text file, with what is random per run replaced by a description of it."""
    text = Path(path).read_text(encoding="utf-8")
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


# -- reading a partition directory -------------------------------------------------------------------------------------
class BatchInfo(NamedTuple):
    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int
    crc_valid: bool


class IndexEntry(NamedTuple):
    offset: int
    position: int


class Segment(NamedTuple):
    base_offset: int
    log_bytes: int
    batches: tuple
    index: tuple
    time_index: tuple

    @property
    def name(self) -> str:
        return f"{self.base_offset:020d}.log"

    @property
    def next_offset(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset


def batches_of(log_file) -> list[BatchInfo]:
    """The batches of a ``.log`` file, read header by header (as the broker does: no record is decoded)."""
    data = Path(log_file).read_bytes()
    out, pos = [], 0
    while pos + 61 <= len(data):
        h = read_batch_header(data, pos)
        size = h.batch_length + 12
        if pos + size > len(data):
            break
        out.append(BatchInfo(pos, size, h.base_offset, h.base_offset + h.last_offset_delta, h.max_timestamp,
                             h.partition_leader_epoch, crc_is_valid(data, pos)))
        pos += size
    return out


def index_entries(index_file) -> list[IndexEntry]:
    """The entries of an ``.index`` file: 8 bytes each, a 4-byte offset relative to the segment's base offset
    and a 4-byte position. An active segment's index is preallocated: its unused tail is zeros."""
    path = Path(index_file)
    base = int(path.stem)
    data = path.read_bytes()
    out = []
    for n in range(len(data) // 8):
        rel, position = struct.unpack_from(">ii", data, 8 * n)
        if n > 0 and rel == 0 and position == 0:
            break
        if n == 0 and rel == 0 and position == 0 and not any(data[8:16]):
            break
        out.append(IndexEntry(base + rel, position))
    return out


def time_index_entries(time_index_file) -> list[tuple[int, int]]:
    """``(timestamp, offset)`` entries of a ``.timeindex`` file (12 bytes each: int64 timestamp, int32 relative
    offset)."""
    path = Path(time_index_file)
    base = int(path.stem)
    data = path.read_bytes()
    out = []
    for n in range(len(data) // 12):
        ts, rel = struct.unpack_from(">qi", data, 12 * n)
        if ts == 0 and rel == 0:
            break
        out.append((ts, base + rel))
    return out


def segments(partition_dir) -> list[Segment]:
    """Every segment of a partition directory, parsed from its files."""
    d = Path(partition_dir)
    out = []
    for log_file in sorted(d.glob("*.log")):
        base = int(log_file.stem)
        idx, tidx = d / f"{log_file.stem}.index", d / f"{log_file.stem}.timeindex"
        out.append(Segment(base, log_file.stat().st_size, tuple(batches_of(log_file)),
                           tuple(index_entries(idx)) if idx.exists() else (),
                           tuple(time_index_entries(tidx)) if tidx.exists() else ()))
    return out


def segment_file_for(base_offsets: Iterable[int], offset: int) -> str:
    """The ``.log`` file holding ``offset``: the segment with the largest base offset <= it."""
    bases = sorted(base_offsets)
    i = bisect.bisect_right(bases, offset) - 1
    if i < 0:
        raise ValueError(f"offset {offset} is below the first segment ({bases[0]})")
    return f"{bases[i]:020d}.log"


def lookup_walk(partition_dir, offset: int) -> list[dict]:
    """The steps the broker takes to find ``offset``: segment, index entry, then batch headers until the batch
    that holds it. Each step is ``{"step", "what", "position"}``."""
    segs = segments(partition_dir)
    name = segment_file_for([s.base_offset for s in segs], offset)
    seg = next(s for s in segs if s.name == name)
    steps = [{"step": "1 · segment", "what": f"{name} (largest base offset <= {offset})", "position": ""}]
    keys = [e.offset for e in seg.index]
    i = bisect.bisect_right(keys, offset) - 1
    entry = seg.index[i] if i >= 0 else IndexEntry(seg.base_offset, 0)
    how = (f"entry {i} of {len(seg.index)}: offset {entry.offset} -> position {entry.position}" if i >= 0
           else f"no entry <= {offset}: start of the file")
    steps.append({"step": "2 · index", "what": how, "position": entry.position})
    for b in seg.batches:
        if b.position < entry.position:
            continue
        hit = b.base_offset <= offset <= b.last_offset
        steps.append({"step": "3 · scan", "what": f"batch {b.base_offset}-{b.last_offset}"
                      + (" holds it: serve from here" if hit else ": too early, skip batch_length bytes"),
                      "position": b.position})
        if hit:
            break
    return steps


def dump_log(partition_dir, files: Sequence[str], *flags: str) -> str:
    """``kafkalab dump-log --files F1,F2 [flags]`` run in ``partition_dir`` (so names print relative), as text."""
    from kafkalab.tools import dump_log as tool

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(partition_dir):
        tool.main(["--files", ",".join(files), *flags], out=out, err=err)
    return out.getvalue() + err.getvalue()


# -- pictures -----------------------------------------------------------------------------------------------------------
_MONO = "ui-monospace,Menlo,Consolas,monospace"
_e = html.escape

#: The 61-byte batch header: (first byte, last byte inclusive, field, colour).
HEADER_FIELDS = [(0, 7, "base_offset", "#ffd8a8"), (8, 11, "batch_length", "#e9ecef"),
                 (12, 15, "partition_leader_epoch", "#ffc9c9"), (16, 16, "magic", "#e9ecef"),
                 (17, 20, "crc", "#d3f9d8"), (21, 22, "attributes", "#d0ebff"),
                 (23, 26, "last_offset_delta", "#d0ebff"), (27, 34, "base_timestamp", "#d0ebff"),
                 (35, 42, "max_timestamp", "#d0ebff"), (43, 50, "producer_id", "#d0ebff"),
                 (51, 52, "producer_epoch", "#d0ebff"), (53, 56, "base_sequence", "#d0ebff"),
                 (57, 60, "records_count", "#d0ebff")]


def _field_at(i: int) -> tuple[str, str]:
    for lo, hi, name, colour in HEADER_FIELDS:
        if lo <= i <= hi:
            return name, colour
    return "records", "#f8f9fa"


class ByteDiff:
    """Two byte strings of equal length side by side, 16 bytes a line, header fields coloured, every byte that
    differs outlined in red. ``differences()`` lists the differing ranges with their field names."""

    def __init__(self, sent: bytes, stored: bytes, labels: tuple[str, str] = ("sent by the client", "in the .log")):
        if len(sent) != len(stored):
            raise ValueError(f"different lengths: {len(sent)} and {len(stored)}")
        self.a, self.b, self.labels = bytes(sent), bytes(stored), labels

    def differences(self) -> list[tuple[int, int, str]]:
        """``(first byte, last byte, field)`` for each header field in which any byte differs, then each run of
        differing record bytes."""
        out: list[tuple[int, int, str]] = []
        for lo, hi, name, _ in HEADER_FIELDS:
            if self.a[lo:hi + 1] != self.b[lo:hi + 1]:
                out.append((lo, hi, name))
        for i in range(61, len(self.a)):
            if self.a[i] != self.b[i]:
                if out and out[-1][1] == i - 1 and out[-1][2] == "records":
                    out[-1] = (out[-1][0], i, "records")
                else:
                    out.append((i, i, "records"))
        return out

    def _rows(self, data: bytes, other: bytes) -> str:
        lines = []
        for start in range(0, len(data), 16):
            cells = []
            for i in range(start, min(start + 16, len(data))):
                name, colour = _field_at(i)
                diff = data[i] != other[i]
                style = (f"background:{colour};padding:0 2px;border-radius:2px;"
                         + ("outline:2px solid #e03131;font-weight:700;" if diff else ""))
                cells.append(f'<span title="byte {i}: {name}" style="{style}">{data[i]:02x}</span>')
            lines.append(f'<div><span style="color:#868e96">{start:04x}</span>  {" ".join(cells)}</div>')
        return "".join(lines)

    def _repr_html_(self) -> str:
        legend = " ".join(f'<span style="background:{c};padding:0 4px;border-radius:2px">{_e(n)}</span>'
                          for lo, hi, n, c in HEADER_FIELDS if n in ("base_offset", "partition_leader_epoch", "crc"))
        cols = "".join(f'<div><b>{_e(label)}</b> ({len(data)} bytes)<div style="font:12px/1.5 {_MONO};'
                       f'white-space:pre">{self._rows(data, other)}</div></div>'
                       for label, data, other in ((self.labels[0], self.a, self.b), (self.labels[1], self.b, self.a)))
        diffs = "; ".join(f"bytes {lo}-{hi} ({n})" for lo, hi, n in self.differences()) or "none"
        return (f'<div style="{_FONT}"><div style="display:flex;gap:28px;flex-wrap:wrap">{cols}</div>'
                f'<div style="margin-top:6px">differing bytes (outlined red): {_e(diffs)}</div>'
                f'<div style="margin-top:2px;color:#656d76;font-size:12px">{legend} · other header fields blue, '
                f'records grey; hover a byte for its field</div></div>')

    def __repr__(self) -> str:
        return "\n".join(f"bytes {lo}-{hi}: {n}: {self.a[lo:hi + 1].hex()} -> {self.b[lo:hi + 1].hex()}"
                         for lo, hi, n in self.differences()) or "identical"


class SegmentMap:
    """A partition's segments as horizontal bars of batches (width = bytes), base offsets on the left, and the
    offset index of each segment drawn as arrows from ``offset`` labels to the byte position they point at.
    ``highlight``: an offset whose lookup is drawn (the index entry used and the batch that holds it)."""

    def __init__(self, segs: Sequence[Segment], *, highlight: Optional[int] = None, segment_bytes: Optional[int] = None,
                 title: str = ""):
        self.segs = list(segs)
        self.highlight, self.title = highlight, title
        self.scale_bytes = segment_bytes or max([s.log_bytes for s in self.segs] + [1])

    def svg(self) -> str:
        """Text at 11 px or more; index labels that would touch their neighbour go down a row."""
        size, width, bar_h, row_h = 11, 620, 26, 13
        left = max([190] + [8 + max(text_width(s.name, 12, mono=True), text_width(f"{s.log_bytes} bytes · active",
                                                                                   size)) + 12 for s in self.segs])
        px = width / self.scale_bytes
        rows = []
        y = 30
        right = left + width + 20
        target = None
        if self.highlight is not None and self.segs:
            target = segment_file_for([s.base_offset for s in self.segs], self.highlight)
        for seg in self.segs:
            active = seg is self.segs[-1]
            rows.append(f'<text x="8" y="{y + 17}" font-family="{_MONO}" font-size="12">{seg.name}</text>')
            rows.append(f'<text x="8" y="{y + 32}" font-size="{size}" fill="#868e96">{seg.log_bytes} bytes'
                        f'{" · active" if active else ""}</text>')
            rows.append(f'<rect x="{left}" y="{y}" width="{width}" height="{bar_h}" fill="#f8f9fa" '
                        f'stroke="#ced4da" stroke-dasharray="3,3"/>')
            hit = None
            used = None
            if target == seg.name:
                keys = [e.offset for e in seg.index]
                i = bisect.bisect_right(keys, self.highlight) - 1
                used = seg.index[i] if i >= 0 else IndexEntry(seg.base_offset, 0)
                hit = next((b for b in seg.batches if b.base_offset <= self.highlight <= b.last_offset), None)
            for b in seg.batches:
                x, w = left + b.position * px, max(1.0, b.size * px)
                fill = "#2b8a3e" if hit == b else "#a5d8ff" if (b.base_offset // 1) % 2 == 0 else "#74c0fc"
                if used is not None and hit is not None and used.position <= b.position < hit.position:
                    fill = "#ffe066"
                rows.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{fill}" '
                            f'stroke="#fff"><title>offsets {b.base_offset}-{b.last_offset}, position {b.position}, '
                            f'{b.size} bytes</title></rect>')
                if w >= text_width(str(b.base_offset), size, mono=True) + 4:
                    rows.append(f'<text x="{x + w / 2:.1f}" y="{y + 17}" font-size="{size}" text-anchor="middle" '
                                f'font-family="{_MONO}" fill="{"#fff" if hit == b else "#1f2328"}">{b.base_offset}</text>')
            labels = [f"{e.offset}→{e.position}" for e in seg.index]
            xs = [left + e.position * px for e in seg.index]
            label_rows = stack_rows([(x - text_width(t, size, mono=True) / 2, x + text_width(t, size, mono=True) / 2)
                                     for x, t in zip(xs, labels)], gap=4)
            for e, x, label, row in zip(seg.index, xs, labels, label_rows):
                bold = used is not None and e == used
                colour = "#e8590c" if bold else "#495057"
                rows.append(f'<line x1="{x:.1f}" y1="{y + bar_h + 20 + row_h * row}" x2="{x:.1f}" y2="{y + bar_h + 2}" '
                            f'stroke="{colour}" stroke-width="{2 if bold else 1}" marker-end="url(#arr)"/>')
                rows.append(f'<text x="{x:.1f}" y="{y + bar_h + 32 + row_h * row}" font-size="{size}" '
                            f'text-anchor="middle" font-family="{_MONO}" fill="{colour}">{label}</text>')
                right = max(right, x + text_width(label, size, mono=True) / 2 + 8)
            y += bar_h + 40 + row_h * (max(label_rows, default=0) + 1)
        height = y + 8
        title = (f'<text x="8" y="16" font-size="13" font-weight="700">{_e(self.title)}</text>' if self.title else "")
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{int(right + 0.999)}" height="{height}" '
                f'font-family="{SVG_FONT_FAMILY}"><defs><marker id="arr" markerWidth="6" markerHeight="6" refX="3" '
                f'refY="5" orient="auto"><path d="M0,0 L6,0 L3,6 z" fill="#495057"/></marker></defs>'
                f'{title}{"".join(rows)}</svg>')

    def _repr_html_(self) -> str:
        legend = ('blue: a batch (label: its base offset; width: its bytes) · under each bar: offset index entries, '
                  '<code>offset→position</code>')
        if self.highlight is not None:
            legend += (f' · looking up offset {self.highlight}: <b style="color:#e8590c">the index entry used</b>, '
                       f'<span style="background:#ffe066">batches skipped</span>, '
                       f'<span style="background:#2b8a3e;color:#fff">the batch that holds it</span>')
        return (f'<div style="{_FONT}">{self.svg()}<div style="color:#656d76;font-size:12px">{legend}</div></div>')

    def __repr__(self) -> str:
        return "\n".join(f"{s.name}: {len(s.batches)} batches, {s.log_bytes} bytes, index "
                         + ", ".join(f"{e.offset}->{e.position}" for e in s.index) for s in self.segs)


# -- retention and compaction, as rules -----------------------------------------------------------------------------------
def deletable_by_time(segs: Sequence[tuple[int, int]], now_ms: int, retention_ms: int) -> list[int]:
    """Base offsets retention.ms deletes from ``[(base_offset, largest_timestamp), ...]`` (oldest first, the
    last one active, the high watermark at the log end): a prefix of segments whose newest record is more than
    ``retention_ms`` old. The active segment is no exception: when it goes too, Kafka's
    ``UnifiedLog.deleteSegments`` first rolls a new, empty one at the log end offset."""
    out = []
    for base, largest in segs:
        if now_ms - largest > retention_ms:
            out.append(base)
        else:
            break
    return out


def compacted(records: Sequence[tuple[str, Optional[str]]]) -> dict[int, tuple[str, Optional[str]]]:
    """``{offset: (key, value)}`` that compaction keeps from ``records`` (offset = position in the list): the
    latest record per key; a tombstone (value None) is kept as the latest record of its key (until
    delete.retention.ms has passed, which this rule does not model)."""
    latest = {key: offset for offset, (key, _) in enumerate(records)}
    return {offset: records[offset] for offset in sorted(latest.values())}


# -- checks -------------------------------------------------------------------------------------------------------------------
def check_segment_file(answer: Any, base_offsets: Sequence[int], offset: int) -> CheckResult:
    """Exercise: the name of the ``.log`` file that holds ``offset``."""
    expected = segment_file_for(base_offsets, offset)
    bases = sorted(base_offsets)

    def diagnose(a):
        if not isinstance(a, str):
            return "give the file name as a string, e.g. '00000000000000000000.log'"
        m = re.fullmatch(r"(\d+)\.log", a)
        if not m:
            return "a segment file is the base offset as 20 digits, zero-padded, then .log"
        if len(m.group(1)) != 20:
            return "pad the base offset with zeros to 20 digits"
        n = int(m.group(1))
        if n not in bases:
            return "there is no segment with that base offset in this directory"
        if n > offset:
            return "a segment's name is its *first* offset: this one starts after the offset you are looking for"
        return "an earlier segment: pick the *largest* base offset that is still <= the offset"
    return check_equal(f"Exercise 1 · which file holds offset {offset}", answer, expected, diagnose=diagnose,
                       hint="the segment with the largest base offset <= the offset")


def check_index_position(answer: Any, entries: Sequence[tuple[int, int]], offset: int,
                         base_offset: int = 0) -> CheckResult:
    """Exercise: the byte position where the broker starts scanning for ``offset``, given index ``entries``
    ``[(offset, position), ...]`` of a segment starting at ``base_offset``."""
    keys = [o for o, _ in entries]
    i = bisect.bisect_right(keys, offset) - 1
    expected = entries[i][1] if i >= 0 else 0

    def diagnose(a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give a byte position (an int)"
        positions = [p for _, p in entries]
        if a in keys and a not in positions:
            return "that is an offset from the index; the answer is the position next to it"
        if i + 1 < len(entries) and a == entries[i + 1][1]:
            return "that entry's offset is *above* the one you look for: the broker would start too late"
        if a in positions:
            return "take the entry with the largest offset that is still <= the target"
        return None
    return check_equal(f"Exercise 2 · where the scan for offset {offset} starts", answer, expected,
                       diagnose=diagnose, hint="binary search: the last entry whose offset is <= the target")


def check_retention(answer: Any, segs: Sequence[tuple[int, int]], now_ms: int, retention_ms: int) -> CheckResult:
    """Exercise: ``{"deleted": [base offsets], "log_start_offset": int}`` after a retention.ms check."""
    title = "Exercise 3 · retention by time"
    deleted = deletable_by_time(segs, now_ms, retention_ms)
    remaining = [b for b, _ in segs if b not in deleted]
    # every segment expired: the log start offset is the log end offset (where the new, empty segment starts),
    # which the data does not give: any offset past the last segment's base offset is accepted
    expected = {"deleted": deleted, "log_start_offset": remaining[0] if remaining else None}
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict with the keys 'deleted' and 'log_start_offset'")
    parts, right = [], 0
    got = answer.get("deleted", ...)
    if is_unanswered(got):
        parts.append(Part("deleted", "todo", "not answered yet"))
    elif isinstance(got, (list, tuple)) and list(got) == deleted:
        right += 1
        parts.append(Part("deleted", "pass", repr(list(got))))
    else:
        why = f"{got!r} is not right"
        if isinstance(got, (list, tuple)) and len(got) > len(deleted):
            why = "a segment goes only when its *newest* record is older than retention.ms"
        elif isinstance(got, (list, tuple)) and len(got) < len(deleted):
            why = "more segments are old enough: compare now - largest timestamp with retention.ms"
        parts.append(Part("deleted", "fail", why))
    lso = answer.get("log_start_offset", ...)
    if is_unanswered(lso):
        parts.append(Part("log_start_offset", "todo", "not answered yet"))
    elif isinstance(lso, int) and not isinstance(lso, bool) and (
            lso == expected["log_start_offset"] if remaining else lso > segs[-1][0]):
        right += 1
        parts.append(Part("log_start_offset", "pass", repr(lso) if remaining else
                          f"{lso!r}: the log end offset, where the new, empty segment starts"))
    else:
        parts.append(Part("log_start_offset", "fail", "give an int" if not isinstance(lso, int) else
                          "the base offset of the first segment that remains" if remaining else
                          "every segment went: the log starts again at its log end offset"))
    if all(p.status == "todo" for p in parts):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    ok = right == 2
    return check(title, ok, f"{right} of 2 correct", parts=parts,
                 hint="" if ok else "oldest first: delete while now - largest_timestamp > retention.ms")


def check_compaction(answer: Any, records: Sequence[tuple[str, Optional[str]]]) -> CheckResult:
    """Exercise: the offsets compaction keeps from ``records`` (offset = position in the list), as a sorted
    list or a set."""
    title = "Exercise 4 · what compaction keeps"
    expected = sorted(compacted(records))
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple, set, frozenset)) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in answer):
        return check(title, False, "give the offsets that remain, as a list of ints")
    got = sorted(set(answer))
    if got == expected:
        return check(title, True, f"right: {len(got)} records remain")
    tombstones = {o for o, (_, v) in enumerate(records) if v is None}
    first_per_key = sorted({k: o for o, (k, _) in reversed(list(enumerate(records)))}.values())
    if set(got) == set(expected) - tombstones:
        hint = ("a tombstone stays in the log after compaction (for delete.retention.ms), so that consumers "
                "learn the key was deleted")
    elif got == first_per_key:
        hint = "compaction keeps the *latest* record of each key, not the first"
    elif len(got) > len(expected):
        hint = "only one record per key survives"
    else:
        hint = "every key keeps exactly one record: its latest (a tombstone counts)"
    return check(title, False, f"{len(set(got) & set(expected))} of {len(expected)} right, "
                               f"{len(set(got) - set(expected))} wrong", hint=hint)


def recovered_log_end_offset(log_file) -> int:
    """The log end offset after recovery scans ``log_file`` (the only segment): the base offset of the first
    batch that is incomplete or fails its CRC, or the offset after the last batch when all are valid."""
    batches = batches_of(log_file)
    bad = next((b for b in batches if not b.crc_valid), None)
    if bad is not None:
        return bad.base_offset
    return batches[-1].last_offset + 1 if batches else int(Path(log_file).stem)


def check_recovery(answer: Any, log_file) -> CheckResult:
    """Exercise: the log end offset once recovery has scanned the corrupted ``log_file``."""
    batches = batches_of(log_file)
    expected = recovered_log_end_offset(log_file)
    served = batches[-1].last_offset + 1 if batches else expected
    bad = next((b for b in batches if b.base_offset == expected), None)

    def diagnose(a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give an offset (an int)"
        if a == served:
            return ("without .kafka_cleanshutdown the broker does scan this segment: it holds the recovery point, "
                    "so recovery re-reads it batch by batch and checks each CRC")
        if bad is not None and a > expected:
            return "recovery does not skip a bad batch: it cuts the log there, and every later batch goes too"
        if a == expected - 1:
            return "the log end offset is the *next* offset to write: one past the last record kept"
        return None
    return check_equal("Exercise 5 · what recovery keeps", answer, expected, diagnose=diagnose,
                       hint="the base offset of the first batch whose CRC fails")
