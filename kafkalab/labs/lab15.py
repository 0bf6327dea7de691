"""Lab 15 (``labs/15_spark_streaming.ipynb``): a streaming pipeline on Spark that reads the lab cluster.

Theory of operation
-------------------
Spark Structured Streaming treats a Kafka topic as an unbounded table. Each **micro-batch** is a range of
offsets per partition, ``[start, end)``, chosen on the driver, read by executors, and recorded in the query's
**checkpoint** before the next one starts. Everything a learner checks in this lab follows from that:

* *admission control*: ``maxOffsetsPerTrigger`` caps a micro-batch; the cap is shared out over the partitions in
  proportion to their backlog (:func:`kafkalab.spark.offsets.rate_limit`), so :func:`plan_batches` can predict
  every batch of an ``availableNow`` run from the end offsets alone;
* *restart*: a query restarted on the same checkpoint starts where the last committed batch ended
  (:func:`checkpoint_offsets` reads ``offsets/<batch>`` the way Spark wrote it);
* *event time*: windows are computed from the ``event_time`` field inside each value, not from when a record
  arrived, so :func:`window_totals` can compute the right answer from the dataset in plain Python;
* *late events*: a windowed aggregation drops a row whose **window** has ended at or before the watermark (the
  watermark predicate of Spark's ``WatermarkSupport`` compares a window column's ``end``), not every row whose
  own time is behind it; :func:`dropped_by_watermark` applies that rule, and :func:`watermark_table` reads
  Spark's ``numRowsDroppedByWatermark`` from the query progress.

This module holds the lab's data helpers and the checks (pure Python: importing it does not start Spark).
Mirrors, on the Spark side, ``KafkaMicroBatchStream`` (batch planning) and ``KafkaSourceOffset`` (the offsets
JSON); on the data side ``data/clickstream/generate.py``.
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from kafkalab.labs import CheckResult, Part, check, is_unanswered
from kafkalab.spark.offsets import rate_limit
from kafkalab.viz import progress
from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width

__all__ = ["EVENT_SCHEMA", "TOPIC", "load_events", "window_start", "window_totals", "plan_batches",
           "checkpoint_offsets", "batch_offsets_table", "check_batch_plan", "check_window_revenue",
           "check_restart_offsets", "batch_slices_svg", "LATE_TOPIC", "click_value", "window_end",
           "dropped_by_watermark", "watermark_table", "check_late_events", "late_event_svg"]

TOPIC = "clicks"
#: The small topic of section 4's late-event demonstration (kept apart so ``clicks`` stays the dataset).
LATE_TOPIC = "late-clicks"
#: The day of the dataset's events, for the demonstration's hand-made clicks.
EVENT_DAY = "2026-03-14"
#: The value's JSON schema for ``from_json`` (Spark DDL); event_time parses as a timestamp.
EVENT_SCHEMA = ("event_id string, event_time timestamp, user_id string, session_id string, event_type string, "
                "page string, product_id string, category string, price double, quantity int, country string, "
                "device string")


def load_events(path, limit: Optional[int] = None) -> list[dict]:
    """The events of ``path`` as dicts, in file (= arrival) order; the first ``limit`` only when given.

    The dataset is ``data/clickstream/events.jsonl`` of the repository (two hours of a web shop's clicks, see
    ``data/README.md``), beside the notebooks rather than inside the package: the notebook passes its path."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
                if limit is not None and len(out) >= limit:
                    break
    return out


def _parse(ts: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def window_start(event_time: str, minutes: int) -> str:
    """The start of the tumbling ``minutes``-minute window holding ``event_time`` (ISO, UTC, ``HH:MM``)."""
    t = _parse(event_time)
    start = t.replace(minute=t.minute - t.minute % minutes, second=0, microsecond=0)
    return start.strftime("%H:%M")


def window_totals(events: Sequence[Mapping], minutes: int, event_type: str, value: str = "revenue") -> dict:
    """``{window start "HH:MM": total}`` over the events of ``event_type``: ``value`` is ``"revenue"``
    (price x quantity, rounded to cents) or ``"count"``."""
    totals: dict = {}
    for e in events:
        if e["event_type"] != event_type:
            continue
        w = window_start(e["event_time"], minutes)
        add = 1 if value == "count" else (e.get("price") or 0.0) * (e.get("quantity") or 1)
        totals[w] = totals.get(w, 0) + add
    return {w: (round(v, 2) if value != "count" else v) for w, v in sorted(totals.items())}


def click_value(event_id: str, clock_time: str, event_type: str = "page_view", day: str = EVENT_DAY) -> bytes:
    """A hand-made click as a record value (JSON, the dataset's fields that matter here) at ``clock_time``
    (``"HH:MM:SS"``) on ``day``: ``click_value("late-1", "19:05:00")``."""
    return json.dumps({"event_id": event_id, "event_time": f"{day}T{clock_time}.000Z", "user_id": "u-demo",
                       "event_type": event_type, "page": "/"}).encode()


def window_end(event_time: str, minutes: int) -> _dt.datetime:
    """The end (exclusive) of the tumbling ``minutes``-minute window holding ``event_time``."""
    t = _parse(event_time)
    start = t.replace(minute=t.minute - t.minute % minutes, second=0, microsecond=0)
    return start + _dt.timedelta(minutes=minutes)


def dropped_by_watermark(event_times: Sequence[str], watermark: str, minutes: int) -> list[str]:
    """The event times of ``event_times`` that a windowed aggregation drops when they arrive with ``watermark``
    in force: those whose window ends at or before the watermark (the window is closed), in the given order.
    A row behind the watermark whose window is still open is kept."""
    mark = _parse(watermark)
    return [t for t in event_times if window_end(t, minutes) <= mark]


def plan_batches(start: Mapping[str, int], end: Mapping[str, int], max_offsets: int) -> list[dict]:
    """The micro-batches of an ``availableNow`` run from ``start`` to ``end`` (``{partition: offset}``, partitions as
    str as in Spark's offsets JSON) with ``maxOffsetsPerTrigger=max_offsets``: a list of ``{partition: records}``."""
    topic = "t"
    position = {topic: dict(start)}
    target = {topic: dict(end)}
    batches = []
    while any(position[topic][p] < target[topic][p] for p in target[topic]):
        nxt = rate_limit(position, target, max_offsets)
        batches.append({p: nxt[topic][p] - position[topic][p] for p in sorted(target[topic], key=int)})
        position = nxt
    return batches


def checkpoint_offsets(checkpoint_dir, batch_id: Optional[int] = None) -> dict:
    """The source offsets Spark recorded in ``<checkpoint>/offsets/<batch_id>`` (the latest batch by default):
    the JSON of the offsets line, e.g. ``{"clicks": {"0": 3351, ...}}``."""
    folder = Path(checkpoint_dir) / "offsets"
    ids = sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())
    if not ids:
        raise FileNotFoundError(f"no offsets in {folder}")
    bid = ids[-1] if batch_id is None else batch_id
    lines = (folder / str(bid)).read_text().splitlines()
    # line 1: the log version ("v1"); line 2: the batch's metadata (watermark, conf); then one line per source
    return json.loads(lines[2])


def batch_offsets_table(progress: Sequence[Mapping], topic: str = TOPIC) -> list[dict]:
    """One row per micro-batch of ``query.recentProgress``: batch id, rows read, and per partition the end
    offset (Spark's ``sources[0].endOffset``)."""
    rows = []
    for p in progress:
        if not p.get("sources"):
            continue
        src = p["sources"][0]
        end = src.get("endOffset")
        end = json.loads(end) if isinstance(end, str) else end
        row = {"batch": p["batchId"], "rows": p["numInputRows"]}
        for part, off in sorted((end or {}).get(topic, {}).items(), key=lambda kv: int(kv[0])):
            row[f"end p{part}"] = off
        rows.append(row)
    return rows


def watermark_table(progress: Sequence[Mapping]) -> list[dict]:
    """One row per micro-batch of ``query.recentProgress``: batch id, rows read, the watermark the batch ran with
    (``eventTime.watermark``, as ``HH:MM:SS``; ``"none"`` before the first, which Spark reports as the epoch)
    and the rows its stateful operators dropped as late (``numRowsDroppedByWatermark``)."""
    def shown(watermark: str) -> str:
        return "none" if watermark.startswith("1970-01-01T00:00:00") else watermark[11:19]

    return [{"batch": p["batchId"], "rows read": p["numInputRows"],
             "watermark": shown(p.get("eventTime", {}).get("watermark", "")),
             "dropped by watermark": sum(o.get("numRowsDroppedByWatermark", 0) for o in p.get("stateOperators", []))}
            for p in progress]


def await_query(query, rows: int, *, timeout_s: float, description: str = "query", poll_s: float = 0.5) -> bool:
    """Wait for an ``availableNow`` query to end (at most ``timeout_s``), with a progress bar of the rows its
    micro-batches have read (``numInputRows`` of ``query.recentProgress``) out of the ``rows`` expected; then
    stop it. Returns whether it ended by itself."""
    deadline = time.monotonic() + timeout_s
    ended = False
    try:
        with progress(rows, description=description, unit="rows") as bar:
            while not ended and time.monotonic() < deadline:
                ended = bool(query.awaitTermination(poll_s))
                read = sum(p["numInputRows"] for p in query.recentProgress)
                bar.update(read - bar.count)
    finally:
        query.stop()
    return ended


# -- checks ----------------------------------------------------------------------------------------------------------
def check_batch_plan(answer: Any, start: Mapping[str, int], end: Mapping[str, int], max_offsets: int) -> CheckResult:
    """Exercise 1: the records each micro-batch reads, a list of ``{partition: records}``."""
    title = "Exercise 1 · plan the micro-batches"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    want = plan_batches(start, end, max_offsets)
    if not isinstance(answer, (list, tuple)) or not all(isinstance(b, Mapping) for b in answer):
        return check(title, False, "give a list with one {partition: records} dict per micro-batch")
    got = [{str(k): v for k, v in b.items()} for b in answer]
    if len(got) != len(want):
        hint = ("each batch takes at most maxOffsetsPerTrigger records in all; count how many it takes to drain "
                "the whole backlog" if len(got) < len(want) else "a batch stops at the end offsets: no empty batches")
        return check(title, False, f"{len(want)} micro-batches, not {len(got)}", hint=hint)
    for i, (g, w) in enumerate(zip(got, want)):
        if {k: v for k, v in g.items() if v} != {k: v for k, v in w.items() if v}:
            return check(title, False, f"batch {i} is not right: {g}",
                         hint="share the cap by backlog: limit x backlog_p / total backlog, rounded down "
                         "(rounded up when the share is below 1), and never past a partition's end offset")
    return check(title, True, f"{len(want)} micro-batches, {sum(sum(b.values()) for b in want)} records")


def check_window_revenue(answer: Any, events: Sequence[Mapping], minutes: int) -> CheckResult:
    """Exercise 2: ``{window start "HH:MM": revenue}`` of the purchases, per ``minutes``-minute event-time window."""
    title = "Exercise 2 · revenue per event-time window"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    want = window_totals(events, minutes, "purchase")
    if not isinstance(answer, Mapping):
        return check(title, False, 'give a dict {"HH:MM": revenue}')
    got = {str(k): round(float(v), 2) for k, v in answer.items()}
    parts = []
    for w, total in want.items():
        g = got.get(w)
        ok = g is not None and abs(g - total) < 0.011
        parts.append(Part(w, "pass" if ok else "fail", f"{total:.2f}" if ok else f"{g!r} (not right)"))
    extra = sorted(set(got) - set(want))
    if extra:
        parts.append(Part("extra windows", "fail", ", ".join(extra)))
    ok = all(p.status == "pass" for p in parts)
    hint = "" if ok else ("revenue is price x quantity of the purchase events, grouped by window(event_time, "
                          f"'{minutes} minutes') -- the event's own time, not the record's arrival")
    return CheckResult(title, "pass" if ok else "fail",
                       f"{len(want)} windows, {sum(want.values()):.2f} in all" if ok else "some windows are wrong",
                       hint, tuple(parts))


def check_restart_offsets(answer: Any, checkpoint_dir, topic: str = TOPIC) -> CheckResult:
    """Exercise 4: where the restarted query's first new micro-batch starts, ``{partition: offset}``."""
    title = "Exercise 4 · where does the restarted query start?"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    want = {int(p): o for p, o in checkpoint_offsets(checkpoint_dir)[topic].items()}
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict {partition: offset}")
    got = {int(k): v for k, v in answer.items()}
    if got == want:
        return check(title, True, f"{dict(sorted(want.items()))}: the end of the last batch in the checkpoint")
    if all(got.get(p, 0) == 0 for p in want):
        return check(title, False, f"{got} is not right",
                     hint="startingOffsets only applies to a new query: a restart continues from its checkpoint")
    return check(title, False, f"{got} is not right",
                 hint="read the last file in <checkpoint>/offsets: its third line holds the end offsets of the last "
                 "planned batch")


def check_late_events(answer: Any, arrivals: Mapping[str, str], watermark: str, minutes: int) -> CheckResult:
    """Exercise 3: which of ``arrivals`` (``{event_id: event_time}``) the windowed query drops, given the
    ``watermark`` in force and ``minutes``-minute windows: a set (or list) of event ids."""
    title = "Exercise 3 · late, or dropped?"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if isinstance(answer, (str, bytes)) or not isinstance(answer, (set, frozenset, list, tuple)):
        return check(title, False, "give a set of event ids, e.g. {\"x-1\"} (an empty set() when none is dropped)")
    closed = set(dropped_by_watermark(list(arrivals.values()), watermark, minutes))
    want = {i for i, t in arrivals.items() if t in closed}
    got = {str(i) for i in answer}
    if got == want:
        return check(title, True, f"dropped: {sorted(want)}; kept: {sorted(set(arrivals) - want)}")
    behind = {i for i, t in arrivals.items() if _parse(t) < _parse(watermark)}
    if got == behind:
        hint = ("behind the watermark is not enough: Spark drops a row only when its window has already ended "
                "(window end <= watermark); a window still open takes the row")
    else:
        hint = "for each event, find its window's end and compare it with the watermark: end <= watermark is dropped"
    return check(title, False, f"{sorted(got)} is not right", hint=hint)


# -- the picture ------------------------------------------------------------------------------------------------------
_COLOURS = ("#4c6ef5", "#12b886", "#fab005", "#e64980", "#7950f2", "#fd7e14", "#15aabf", "#82c91e")


def batch_slices_svg(batches: Sequence[Mapping], start: Optional[Mapping] = None, width: int = 640) -> str:
    """Each partition's log as a bar, cut into the micro-batches that read it (one colour per batch):
    ``batches`` is a list of ``{partition: records}`` (as :func:`plan_batches` returns), ``start`` the offsets
    where the first batch began (default 0). Deterministic SVG text."""
    parts = sorted({p for b in batches for p in b} | set(start or {}), key=int)
    begin = {p: int((start or {}).get(p, 0)) for p in parts}
    total = {p: begin[p] + sum(int(b.get(p, 0)) for b in batches) for p in parts}
    top = max(total.values(), default=1) or 1
    size, bar_h, gap = 12, 22, 10
    left = 8 + max([text_width(f"partition {p}", size) for p in parts] + [0]) + 10
    right = 4 + max([text_width(str(t), size) for t in total.values()] + [0]) + 8    # room for the end offsets
    legend = [f"batch {i}" for i in range(len(batches))]
    legend_w = [14 + text_width(name, size) + 16 for name in legend]
    legend_at, lx, ly = [], left, 0          # the legend wraps onto more lines when the batches are many
    for w in legend_w:
        if lx > left and lx + w > width:
            lx, ly = left, ly + 16
        legend_at.append((lx, ly))
        lx += w
    height = 30 + len(parts) * (bar_h + gap) + 20 + ly
    scale = (width - left - right) / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="{SVG_FONT_FAMILY}" font-size="{size}">']
    for row, p in enumerate(parts):
        y = 20 + row * (bar_h + gap)
        out.append(f'<text x="8" y="{y + 15}">partition {p}</text>')
        x = begin[p]
        if x:
            out.append(f'<rect x="{left}" y="{y}" width="{x * scale:.1f}" height="{bar_h}" fill="#dee2e6"/>')
        for i, b in enumerate(batches):
            n = int(b.get(p, 0))
            if not n:
                continue
            out.append(f'<rect x="{left + x * scale:.1f}" y="{y}" width="{n * scale:.1f}" height="{bar_h}" '
                       f'fill="{_COLOURS[i % len(_COLOURS)]}" stroke="white"><title>batch {i}: offsets {x}-'
                       f'{x + n - 1}</title></rect>')
            if n * scale >= text_width(str(n), size) + 6:       # the count inside its slice only where it fits
                out.append(f'<text x="{left + (x + n / 2) * scale:.1f}" y="{y + 15}" fill="white" '
                           f'text-anchor="middle">{n}</text>')
            x += n
        out.append(f'<text x="{left + x * scale + 4:.1f}" y="{y + 15}" fill="#495057">{x}</text>')
    legend_y = 30 + len(parts) * (bar_h + gap) + 12
    for i, (name, (lx, ly)) in enumerate(zip(legend, legend_at)):
        out.append(f'<rect x="{lx}" y="{legend_y + ly - 10}" width="10" height="10" '
                   f'fill="{_COLOURS[i % len(_COLOURS)]}"/><text x="{lx + 14}" y="{legend_y + ly}">{name}</text>')
    out.append("</svg>")
    return "".join(out)


def late_event_svg(first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]], watermark: str,
                   written: Sequence[tuple[int, str, int]], minutes: int = 10, day: str = EVENT_DAY,
                   width: int = 640) -> str:
    """Section 4's late event on an event-time axis: the ``minutes``-minute windows (closed ones with what the
    query wrote for them, ``written`` as ``(batch, "HH:MM", count)``), the watermark the second run started with
    (``watermark``, Spark's ISO text), and the clicks of each run as ``(event_id, "HH:MM:SS")`` -- those of the
    second run whose window had ended at the watermark (:func:`dropped_by_watermark`) in red. Deterministic SVG."""
    def at(clock: str) -> str:
        return f"{day}T{clock}.000Z"

    times = [at(c) for _, c in (*first, *second)]
    begin = _parse(at(window_start(min(times), minutes) + ":00"))
    end = max(window_end(t, minutes) for t in times)
    mark = _parse(watermark)
    dropped = set(dropped_by_watermark([at(c) for _, c in second], watermark, minutes))
    rows = (("first run", first, set()), ("second run", second, dropped))
    size = 12
    left = 8 + max(text_width(label, size, bold=True) for label, _, _ in rows) + 14
    span = (end - begin).total_seconds() or 1.0
    scale = (width - left - 24) / span

    def x(t: _dt.datetime) -> float:
        return left + (t - begin).total_seconds() * scale

    counts = {w: n for _, w, n in written}
    top, row_h = 40, 44
    bottom = top + len(rows) * row_h
    height = bottom + 66
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="{SVG_FONT_FAMILY}" font-size="{size}" fill="#212529">']
    w = begin
    while w < end:
        w_end = w + _dt.timedelta(minutes=minutes)
        closed = w_end <= mark
        name = w.strftime("%H:%M")
        state = f"written: {counts[name]}" if name in counts else ("closed" if closed else "open")
        out.append(f'<rect x="{x(w):.1f}" y="{top - 36}" width="{x(w_end) - x(w):.1f}" height="{bottom - top + 36}" '
                   f'fill="{"#f1f3f5" if closed else "#e7f5ff"}" stroke="#ffffff" stroke-width="2"/>')
        middle = (x(w) + x(w_end)) / 2
        out.append(f'<text x="{middle:.1f}" y="{top - 22}" text-anchor="middle" font-weight="bold">'
                   f'{name}-{w_end.strftime("%H:%M")}</text>')
        out.append(f'<text x="{middle:.1f}" y="{top - 8}" text-anchor="middle" '
                   f'fill="{"#495057" if closed else "#1971c2"}">{_esc(state)}</text>')
        out.append(f'<text x="{x(w):.1f}" y="{bottom + 14}" text-anchor="middle" fill="#495057">{name}</text>')
        w = w_end
    out.append(f'<text x="{x(end):.1f}" y="{bottom + 14}" text-anchor="end" fill="#495057">'
               f'{end.strftime("%H:%M")}</text>')
    for i, (label, clicks, red) in enumerate(rows):
        y = top + i * row_h
        out.append(f'<text x="8" y="{y + 30}" font-weight="bold">{label}</text>')
        for event_id, clock in clicks:
            t = at(clock)
            gone = t in red
            colour = "#e03131" if gone else "#2b8a3e"
            cx = x(_parse(t))
            out.append(f'<circle cx="{cx:.1f}" cy="{y + 26}" r="6" fill="{colour}"><title>{_esc(event_id)} at '
                       f'{clock}</title></circle>')
            tag = f"{event_id}: dropped" if gone else event_id
            out.append(f'<text x="{cx:.1f}" y="{y + 14}" text-anchor="middle" fill="{colour}">{_esc(tag)}</text>')
    mx = x(mark)
    label = f"watermark {mark.strftime('%H:%M')}"
    lx = min(max(mx, left + text_width(label, size) / 2), width - 4 - text_width(label, size) / 2)
    out.append(f'<line x1="{mx:.1f}" y1="{top - 4}" x2="{mx:.1f}" y2="{bottom + 20}" stroke="#e8590c" '
               f'stroke-width="2" stroke-dasharray="5 3"/>')
    out.append(f'<text x="{lx:.1f}" y="{bottom + 34}" text-anchor="middle" fill="#e8590c">{label}</text>')
    out.append(f'<text x="8" y="{bottom + 56}" fill="#495057">green: read and counted · red: dropped, its window '
               f'had ended at the watermark</text>')
    out.append("</svg>")
    return "".join(out)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
