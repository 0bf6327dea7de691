"""Lab 11's view of a partition's log: committed, aborted and open records, markers, LSO and high watermark.

Theory of operation
-------------------
A transactional partition's log holds data batches of several producers, each transaction closed by a control
batch (a COMMIT or ABORT marker) that the coordinator's WriteTxnMarkers made the leader append. Reading it as a
learner does:

* :func:`log_entries` -- one ``(offset, producer id or None, kind)`` per offset of a partition directory's
  ``.log`` files (kind ``data``, ``COMMIT`` or ``ABORT``);
* :func:`classify` -- each offset's status (plain, committed, aborted, open, marker) and the **last stable
  offset**: the first offset of a transaction with no marker below the high watermark, else the high watermark;
* :func:`read_committed_view` -- what a ``read_committed`` consumer is given: below the LSO, no aborted data
  and no markers;
* :class:`LogStrip` -- the log as one cell per offset with the LSO, high watermark and log end offset marked
  (SVG);
* :func:`dump_log` -- ``kafkalab dump-log`` as text, the broker-chosen times (and CRCs) of control batches
  masked (:func:`mask_control_batches`).

A worked example: offsets 0-1 are producer 7's data, 2 its COMMIT, 3 producer 8's data with no marker yet, and
the high watermark is 4. Then 0-1 are committed, 2 is a marker, 3 is open, and the LSO is 3: a read_committed
consumer gets offsets 0 and 1 and waits at 3.

Mirrors: ``UnifiedLog.scala`` (``lastStableOffset``), ``TransactionIndex.java`` and ``kafka-dump-log.sh``'s
control-batch lines.
"""
from __future__ import annotations

import contextlib
import html
import io
import re
from typing import Mapping, Optional, Sequence

from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width

__all__ = ["log_entries", "classify", "LogStrip", "dump_log", "mask_control_batches", "read_committed_view"]


def log_entries(partition_dir) -> list[tuple]:
    """One ``(offset, producer id or None, kind)`` per offset of a partition directory's ``.log`` files, kind
    ``data`` or the marker's ``COMMIT`` / ``ABORT`` (the form :func:`classify` and the exercise use)."""
    from pathlib import Path

    from kafkalab.records import decode_batches, parse_end_txn_marker

    out = []
    for f in sorted(Path(partition_dir).glob("*.log")):
        for b in decode_batches(f.read_bytes(), allow_partial=True):
            pid = b.producer_id if b.is_transactional else None
            for r in b.records:
                if b.is_control_batch:
                    kind = parse_end_txn_marker(r.key, r.value).control_type.name
                else:
                    kind = "data"
                out.append((b.base_offset + r.offset_delta, pid, kind))
    return out


def classify(entries: Sequence[tuple], high_watermark: int) -> tuple[list[str], int]:
    """Each entry's status (``plain``, ``committed``, ``aborted``, ``open``, ``COMMIT``, ``ABORT``) and the last
    stable offset: the first offset of a transaction whose marker is not below the high watermark, or the HW.

    ``entries`` are ``(offset, producer id or None, kind)`` or, with offsets implied by position,
    ``(producer id or None, kind)``."""
    entries = [e if len(e) == 3 else (i, *e) for i, e in enumerate(entries)]
    status, open_first, members = {}, {}, {}
    first_unstable = None
    for offset, pid, kind in entries:
        if kind == "data" and pid is None:
            status[offset] = "plain"
        elif kind == "data":
            open_first.setdefault(pid, offset)
            members.setdefault(pid, []).append(offset)
        else:
            for o in members.pop(pid, []):
                status[o] = "committed" if kind == "COMMIT" else "aborted"
            first = open_first.pop(pid, None)
            if first is not None and offset >= high_watermark:
                first_unstable = first if first_unstable is None else min(first_unstable, first)
            status[offset] = kind
    for pid, offsets in members.items():
        for o in offsets:
            status[o] = "open"
        first_unstable = open_first[pid] if first_unstable is None else min(first_unstable, open_first[pid])
    lso = high_watermark if first_unstable is None else min(first_unstable, high_watermark)
    return [status[o] for o, _, _ in entries], lso


def read_committed_view(entries: Sequence[tuple], high_watermark: int) -> list[int]:
    """The offsets a read_committed consumer gets from the start: data below the LSO, aborted ones skipped."""
    entries = [e if len(e) == 3 else (i, *e) for i, e in enumerate(entries)]
    status, lso = classify(entries, high_watermark)
    return [o for (o, _, kind), s in zip(entries, status) if o < lso and s in ("plain", "committed")]


_CELL = {"plain": ("#d0ebff", "#1971c2", "plain"), "committed": ("#d3f9d8", "#2f9e44", "transactional, committed"),
         "aborted": ("#f1f3f5", "#adb5bd", "transactional, aborted"),
         "open": ("#ffe8cc", "#e8590c", "transactional, still open"),
         "COMMIT": ("#2f9e44", "#2b8a3e", "COMMIT marker"), "ABORT": ("#c92a2a", "#a61e1e", "ABORT marker")}


class LogStrip:
    """A partition's log as a strip of cells, one per offset, coloured by what a reader should do with it, and
    arrows for the last stable offset, the high watermark and the log end offset (deterministic SVG)."""

    W, H = 34, 34

    def __init__(self, entries: Sequence[tuple], high_watermark: int, *, last_stable_offset: Optional[int] = None,
                 log_end_offset: Optional[int] = None, labels: Optional[Mapping[int, str]] = None, title: str = ""):
        self.entries = [e if len(e) == 3 else (i, *e) for i, e in enumerate(entries)]
        self.status, lso = classify(self.entries, high_watermark)
        self.hw = high_watermark
        self.lso = lso if last_stable_offset is None else last_stable_offset
        self.leo = log_end_offset if log_end_offset is not None else (self.entries[-1][0] + 1 if self.entries else 0)
        self.labels = dict(labels or {})
        self.title = title

    def svg(self) -> str:
        e = html.escape
        W, H, x0, y0 = self.W, self.H, 20, 34 if self.title else 10
        n = max(self.leo, len(self.entries)) + 1
        width = max(x0 + n * W + 40, 620)
        parts = []
        if self.title:
            parts.append(f'<text x="{x0}" y="18" font-size="13" font-weight="bold">{e(self.title)}</text>')
        for (offset, pid, kind), status in zip(self.entries, self.status):
            fill, stroke, _ = _CELL[status]
            x = x0 + offset * W
            parts.append(f'<rect x="{x}" y="{y0}" width="{W - 2}" height="{H}" rx="3" fill="{fill}" '
                         f'stroke="{stroke}"/>')
            text = {"COMMIT": "C", "ABORT": "A"}.get(kind) or self.labels.get(offset, "" if pid is None else f"p{pid}")
            colour = "#ffffff" if kind in ("COMMIT", "ABORT") else "#212529"
            deco = ' text-decoration="line-through"' if status == "aborted" else ""
            parts.append(f'<text x="{x + (W - 2) / 2}" y="{y0 + H / 2 + 4}" font-size="11" text-anchor="middle" '
                         f'fill="{colour}"{deco}>{e(text)}</text>')
            parts.append(f'<text x="{x + (W - 2) / 2}" y="{y0 + H + 13}" font-size="11" text-anchor="middle" '
                         f'fill="#868e96">{offset}</text>')
        marks = [("LSO", self.lso, "#e8590c"), ("HW", self.hw, "#1971c2"), ("LEO", self.leo, "#495057")]
        levels: dict[int, int] = {}
        for name, offset, colour in marks:
            level = levels.get(offset, 0)
            levels[offset] = level + 1
            x = x0 + offset * W - 1
            top, bottom = y0 - 4, y0 + H + 26 + level * 16
            parts.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="{colour}" stroke-width="2"/>')
            parts.append(f'<text x="{x + 4}" y="{bottom + 2}" font-size="11" font-weight="bold" fill="{colour}">'
                         f'{name} = {offset}</text>')
        legend_y = y0 + H + 26 + 3 * 16 + 12
        lx = x0
        for status in ("plain", "committed", "open", "aborted", "COMMIT", "ABORT"):
            fill, stroke, label = _CELL[status]
            parts.append(f'<rect x="{lx}" y="{legend_y - 10}" width="12" height="12" fill="{fill}" stroke="{stroke}"/>')
            parts.append(f'<text x="{lx + 16}" y="{legend_y}" font-size="11" fill="#495057">{e(label)}</text>')
            lx += 16 + text_width(label, 11) + 14
        height = legend_y + 10
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, lx)}" height="{height}" '
                f'font-family="{SVG_FONT_FAMILY}">{"".join(parts)}</svg>')

    def _repr_html_(self) -> str:
        return f'<div style="overflow-x:auto">{self.svg()}</div>'

    def __repr__(self) -> str:
        cells = " ".join(f"{o}:{s}" for (o, _, _), s in zip(self.entries, self.status))
        return f"LogStrip(LSO={self.lso}, HW={self.hw}, LEO={self.leo}: {cells})"


_TIME = re.compile(r"CreateTime: \d+")
_CRC = re.compile(r"crc: \d+")


def mask_control_batches(text: str) -> str:
    """A control batch is stamped with the broker's clock when it wrote the marker: on its lines the CreateTime
    (and the batch CRC, which covers it) print as ``<broker time>`` / ``<crc>``."""
    lines = []
    for line in text.split("\n"):
        if "isControl: true" in line:
            line = _CRC.sub("crc: <crc>", _TIME.sub("CreateTime: <broker time>", line))
        elif "endTxnMarker" in line:
            line = _TIME.sub("CreateTime: <broker time>", line)
        lines.append(line)
    return "\n".join(lines)


def dump_log(partition_dir, files: Sequence[str], *flags: str) -> str:
    """``kafkalab dump-log --files F1,F2 [flags]`` run in ``partition_dir``, as text, control batches masked
    (:func:`mask_control_batches`)."""
    from kafkalab.tools import dump_log as tool

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(partition_dir):
        tool.main(["--files", ",".join(files), *flags], out=out, err=err)
    return mask_control_batches(out.getvalue() + err.getvalue())
