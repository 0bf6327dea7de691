"""Lab 07 (``labs/07_fetching_and_purgatory.ipynb``): fetching, the high watermark and the purgatory.

Theory of operation
-------------------
Requests that cannot be answered yet -- an ``acks=all`` produce waiting for the followers, a Fetch waiting for
``min_bytes`` -- wait in a broker's **purgatory**; their timeouts live in a **hierarchical timing wheel**. The
lab watches both on a live cluster (metrics, ``completed_by``) and drives a
:class:`~kafkalab.purgatory.SystemTimer` on a :class:`~kafkalab.common.time.MockTime` step by step. This module
holds what it needs:

* :func:`raw_fetch` -- one Fetch request, as a consumer (``replica_id=-1``) would send it, with its round trip
  time and what came back; :func:`fetch_partitions` -- one Fetch naming several partitions, with its two byte
  caps (``max_bytes``, ``partition_max_bytes``), and what each partition got back; :func:`fetch_request_fields`
  -- where those caps and partitions sit in the request's frame;
* :func:`raw_produce` -- one Produce request with any ``acks`` (a producer refuses ``acks=2`` before sending);
* :func:`log_ends_svg` -- each replica's log as a row of offsets, shaded below the leader's high watermark, one
  panel per moment (section 6's lagging follower);
* :func:`wheel_html` -- the timer's wheels as a grid, one row per level, one cell per bucket (slot range and
  task count), the current slot marked;
* :func:`fetch_case` -- which of Kafka's ``DelayedFetch`` cases (F, G) completes a parked fetch, or none;
* :func:`bucket_for` -- where a task with a given expiration lands (level, slot), as Kafka's ``TimingWheel.add``
  decides; :func:`idle_fetches` -- how many Fetch requests an idle consumer sends in a time window;
* the checks ``check_*``, which compute the expected answer from the learner's data.

Mirrors nothing; the rules are those of ``server-common/.../util/timer/TimingWheel.java`` and
``core/src/main/scala/kafka/server/DelayedFetch.scala``.
"""
from __future__ import annotations

import html
import time
from typing import Any, Optional

from kafkalab.labs import CheckResult, check, is_unanswered
from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width

__all__ = ["raw_fetch", "fetch_partitions", "fetch_request_fields", "raw_produce", "fetch_case", "high_watermark",
           "batches_returned", "check_high_watermarks", "check_batches_returned", "log_ends_svg", "wheel_html",
           "bucket_for", "idle_fetches", "check_bucket", "check_idle_fetches", "check_fetch_case"]


# -- a consumer's Fetch, by hand ----------------------------------------------------------------------------------------
def fetch_body(topic: str, offset: int, *, max_wait_ms: int, min_bytes: int = 1, replica_id: int = -1):
    from kafkalab.protocol import ApiKey, request_class
    Fetch = request_class(ApiKey.FETCH)
    return Fetch(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                 isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
                 topics=(Fetch.FetchTopic(topic=topic, partitions=(Fetch.FetchPartition(
                     partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                     partition_max_bytes=1 << 20),)),))


async def raw_fetch(broker, topic: str, offset: int, *, max_wait_ms: int, min_bytes: int = 1,
                    client_id: str = "lab07-consumer") -> dict:
    """Send one Fetch v11 to ``broker`` and return the partition's answer, the record count and the time it
    took (seconds). Run it on the cluster loop: ``cluster.run(raw_fetch(...))``."""
    from kafkalab.network.inter_broker_client import InterBrokerConnection
    from kafkalab.protocol import ApiKey
    from kafkalab.records import decode_batches
    ep = broker.bound_endpoints[0]
    conn = InterBrokerConnection(ep.host, ep.port, client_id=client_id)
    try:
        t0 = time.monotonic()
        response = await conn.send(ApiKey.FETCH, 11, fetch_body(topic, offset, max_wait_ms=max_wait_ms,
                                                                min_bytes=min_bytes))
        took = time.monotonic() - t0
    finally:
        conn.close()
    part = response.responses[0].partitions[0]
    records = [r for b in decode_batches(part.records or b"") for r in b.records]
    return {"error_code": part.error_code, "records": len(records), "high_watermark": part.high_watermark,
            "took_s": took}


def multi_fetch_body(topic: str, offsets: dict, *, max_bytes: int, partition_max_bytes: int, max_wait_ms: int = 0,
                     min_bytes: int = 1):
    """A consumer's Fetch v11 for ``{partition: fetch offset}`` of ``topic``, partitions in that order."""
    from kafkalab.protocol import ApiKey, request_class
    Fetch = request_class(ApiKey.FETCH)
    partitions = tuple(Fetch.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o, log_start_offset=-1,
                                            partition_max_bytes=partition_max_bytes) for p, o in offsets.items())
    return Fetch(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0,
                 session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
                 topics=(Fetch.FetchTopic(topic=topic, partitions=partitions),))


async def fetch_partitions(broker, topic: str, offsets: dict, *, max_bytes: int, partition_max_bytes: int,
                           client_id: str = "lab07-consumer") -> list[dict]:
    """Send one Fetch v11 for several partitions and return one row per partition of the answer: the bytes of
    its ``records`` field, whole batches and records in them, their offsets, and the high watermark."""
    from kafkalab.network.inter_broker_client import InterBrokerConnection
    from kafkalab.protocol import ApiKey
    from kafkalab.records import decode_batches
    ep = broker.bound_endpoints[0]
    conn = InterBrokerConnection(ep.host, ep.port, client_id=client_id)
    try:
        response = await conn.send(ApiKey.FETCH, 11, multi_fetch_body(
            topic, offsets, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes))
    finally:
        conn.close()
    rows = []
    for part in response.responses[0].partitions:
        data = bytes(part.records or b"")
        batches = list(decode_batches(data))
        offsets_read = [b.base_offset + r.offset_delta for b in batches for r in b.records]
        rows.append({"partition": part.partition_index, "error": _error_name(part.error_code),
                     "bytes": len(data), "batches": len(batches), "records": len(offsets_read),
                     "offsets": f"{offsets_read[0]}..{offsets_read[-1]}" if offsets_read else "-",
                     "high watermark": part.high_watermark})
    return rows


async def raw_produce(broker, topic: str, partition: int, values, *, acks: int, client_id: str = "lab07") -> str:
    """Send one Produce v8 with ``acks`` (any int16, checked by nobody but the broker) and return the
    partition's error name (``NONE`` when the records were appended)."""
    from kafkalab.network.inter_broker_client import InterBrokerConnection
    from kafkalab.protocol import ApiKey, request_class
    from kafkalab.records import build_batch
    Produce = request_class(ApiKey.PRODUCE)
    body = Produce(transactional_id=None, acks=acks, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=topic, partition_data=(Produce.PartitionProduceData(
            index=partition, records=build_batch([(None, v) for v in values])),)),))
    ep = broker.bound_endpoints[0]
    conn = InterBrokerConnection(ep.host, ep.port, client_id=client_id)
    try:
        response = await conn.send(ApiKey.PRODUCE, 8, body)
    finally:
        conn.close()
    return _error_name(response.responses[0].partition_responses[0].error_code)


def _error_name(code: int) -> str:
    from kafkalab.protocol import ErrorCode
    return ErrorCode(code).name


# -- the timing wheel ---------------------------------------------------------------------------------------------------
def wheel_html(timer, base: int, *, title: str = "") -> str:
    """The timer's wheels as an HTML grid; times relative to ``base``. Filled cells hold tasks."""
    e = html.escape
    rows = []
    for w in timer.wheels():
        cells = []
        for i, b in enumerate(w.buckets):
            slot = f"{b.start_ms - base}" if b.start_ms == b.end_ms else f"{b.start_ms - base}–{b.end_ms - base}"
            fill = "#ffd8a8" if b.task_count else "#f8f9fa"
            border = "2px solid #1c7ed6" if i == 0 else "1px solid #ced4da"
            count = f"<b>{b.task_count}</b>" if b.task_count else "·"
            cells.append(f'<td style="background:{fill};border:{border};padding:2px 6px;text-align:center;'
                         f'min-width:44px">{e(slot)}<br>{count}</td>')
        rows.append(f'<tr><th style="text-align:left;padding-right:8px;font-weight:normal">level {w.level + 1}'
                    f'<br><span style="color:#868e96">tick {w.tick_ms} ms</span></th>{"".join(cells)}</tr>')
    head = f'<div style="font-weight:bold;margin:4px 0">{e(title)}</div>' if title else ""
    return (f'<div style="font:12px/1.3 system-ui,sans-serif">{head}<table style="border-collapse:collapse">'
            f'{"".join(rows)}</table></div>')


def bucket_for(delay_ms: int, tick_ms: int, wheel_size: int, now_ms: int = 0) -> Optional[tuple[int, int]]:
    """(level, slot start relative to ``now_ms``) where a task due ``delay_ms`` from now lands, with the wheel's
    current time at ``now_ms`` (a multiple of every level's tick); ``None`` if it is already due (runs at once).
    Kafka's rule: due within the current tick -> expired; within this wheel's interval -> bucket
    ``expiration // tick``; else ask the next wheel, whose tick is this wheel's interval."""
    expiration = now_ms + delay_ms
    tick, level = tick_ms, 0
    current = now_ms - now_ms % tick
    while True:
        interval = tick * wheel_size
        if expiration < current + tick:
            return None if level == 0 else (level - 1, _slot_start(expiration, tick // wheel_size) - now_ms)
        if expiration < current + interval:
            return level, _slot_start(expiration, tick) - now_ms
        tick, level = interval, level + 1
        current = now_ms - now_ms % tick


def _slot_start(expiration: int, tick: int) -> int:
    return expiration - expiration % tick


def idle_fetches(window_ms: int, max_wait_ms: int, round_trip_ms: float) -> int:
    """Fetch requests an idle consumer sends in ``window_ms``: each one is answered after ``max_wait_ms`` (no
    data ever comes) plus the round trip, and the next one leaves at once."""
    return int(window_ms // (max_wait_ms + round_trip_ms))


# -- checks -------------------------------------------------------------------------------------------------------------
def check_bucket(answer: Any, delays: dict, tick_ms: int, wheel_size: int) -> CheckResult:
    """Exercise: ``{task: (level, slot start)}`` (level from 1, as the notebook prints it), or None if due."""
    title = "Exercise 1 · where each timeout goes"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, dict):
        return check(title, False, "give a dict {task: (level, slot start)}")
    from kafkalab.labs import Part
    parts, right = [], 0
    for name, d in delays.items():
        want = bucket_for(d, tick_ms, wheel_size)
        want = None if want is None else (want[0] + 1, want[1])
        got = answer.get(name, ...)
        got = tuple(got) if isinstance(got, list) else got
        if is_unanswered(got):
            parts.append(Part(name, "todo", "not answered yet"))
        elif got == want:
            right += 1
            parts.append(Part(name, "pass", "runs at once" if want is None else f"level {want[0]}, slot {want[1]}"))
        else:
            note = f"{got!r} is not right"
            if want is None:
                note = "compare the delay with one tick: is this task already due when it is added?"
            elif isinstance(got, tuple) and len(got) == 2 and got[0] == want[0]:
                note = "right level; the slot starts at a multiple of that level's tick"
            elif isinstance(got, tuple) and got and isinstance(got[0], int) and got[0] < want[0]:
                note = f"level {got[0]} covers only {tick_ms * wheel_size ** got[0]} ms ahead"
            parts.append(Part(name, "fail", note))
    ok = right == len(delays)
    return check(title, ok, f"{right} of {len(delays)} right", parts=parts,
                 hint="" if ok else "level L has tick tick_ms·wheel_size^(L-1) and covers the next wheel_size "
                                    "ticks; a task goes to the finest level that covers its delay")


def check_idle_fetches(answer: Any, window_ms: int, round_trip_ms: float, waits: tuple) -> CheckResult:
    """Exercise: ``{max_wait_ms: requests in the window}`` for each wait in ``waits``."""
    from kafkalab.labs import check_parts
    expected = {w: idle_fetches(window_ms, w, round_trip_ms) for w in waits}

    def diagnose(key, got):
        if key and isinstance(got, int) and got == int(window_ms // key):
            return "add the round trip: the next Fetch leaves only after the answer arrives"
        return None
    return check_parts("Exercise 2 · an idle consumer's fetches", answer, expected,
                       label=lambda w: f"fetch.max.wait.ms={w}", diagnose=diagnose,
                       hint="each request takes max_wait_ms + round trip; count how many fit in the window")


def fetch_case(fetch_offset: int, end_offset: int, available_bytes: int, min_bytes: int, segments) -> str:
    """What Kafka's ``DelayedFetch.tryComplete`` decides for a parked fetch on one partition: ``"F"`` when the
    fetch offset is past the end it may read to (a truncated leader) or, below it, on an older segment (the
    reader fell behind, or the log just rolled); ``"G"`` when the bytes between them reach ``min_bytes``; else
    ``"wait"``. ``segments``: the base offsets of the log's segments."""
    def segment_of(offset: int) -> int:
        return max(base for base in segments if base <= offset)
    if fetch_offset > end_offset:
        return "F"
    if fetch_offset < end_offset:
        if segment_of(fetch_offset) < segment_of(end_offset):
            return "F"
        if available_bytes >= min_bytes:
            return "G"
    return "wait"


def check_fetch_case(answer: Any, situations: dict, segments, min_bytes: int) -> CheckResult:
    """Exercise: ``{situation: "F" | "G" | "wait"}`` for ``situations = {name: (fetch offset, HW, bytes)}``."""
    from kafkalab.labs import check_parts
    expected = {name: fetch_case(f, hw, avail, min_bytes, segments) for name, (f, hw, avail) in situations.items()}

    def diagnose(name, got):
        f, hw, avail = situations[name]
        want = expected[name]
        if got == "G" and want == "wait" and f < hw:
            return "there is data, but fewer bytes than min_bytes"
        if got == "G" and want == "F":
            return "look at the offsets before the bytes: which segment holds each?"
        if got == "wait" and want == "F" and f > hw:
            return "a fetch offset beyond the end means the log was truncated under the reader"
        if got == "wait" and want == "F":
            return "the HW is on a newer segment than the fetch offset: case F completes at once"
        return None
    return check_parts("Exercise 3 · does the fetch complete?", answer, expected, label=lambda n: f"situation {n}",
                       diagnose=diagnose, hint="offsets first (past the end, or on different segments: F), "
                                               "then the bytes against min_bytes (G)")


def fetch_request_fields(topic: str, offsets: dict, *, max_bytes: int, partition_max_bytes: int):
    """The byte caps and partition fields of the Fetch v11 that :func:`fetch_partitions` sends, as they sit in
    its frame (a DataFrame: field path, byte range, value)."""
    import pandas as pd

    from kafkalab.protocol import ApiKey, Request, annotate_request, encode_request
    from kafkalab.protocol.headers import RequestHeader
    header = RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=11, correlation_id=1,
                           client_id="lab07-consumer")
    frame = encode_request(Request(header, multi_fetch_body(topic, offsets, max_bytes=max_bytes,
                                                            partition_max_bytes=partition_max_bytes)))
    wanted = ("max_bytes", "topic", "partition", "fetch_offset", "partition_max_bytes")
    rows = [{"field": r.path, "bytes": f"{r.start}-{r.end - 1}", "value": r.value}
            for r in annotate_request(frame).rows if r.path.rsplit(".", 1)[-1] in wanted]
    return pd.DataFrame(rows).set_index("field")


# -- section 6's picture ---------------------------------------------------------------------------------------------------
def log_ends_svg(steps, *, title: str = "") -> str:
    """``steps = [(label, {broker: {"role", "in ISR", "log end offset", "high watermark"}}), ...]`` (a
    ``log_ends()`` table as ``to_dict("index")``) as an SVG: per step one row of offsets per replica, dark below
    the leader's high watermark (what a consumer may read), pale above it (written, not committed), and the HW as
    a line across the replicas."""
    e = html.escape
    size, cell, row_h, gap = 12, 24, 26, 18
    names = {b: f"broker {b} · {r['role']}" + ("" if r["in ISR"] else " (out of ISR)")
             for _, rows in steps for b, r in rows.items()}
    left = 10 + max(text_width(n, size) for n in names.values()) + 12
    top_leo = max(int(r["log end offset"]) for _, rows in steps for r in rows.values())
    width = left + top_leo * cell + 12 + text_width(f"LEO {top_leo}", size) + 10
    legend = ("dark: below the high watermark, a consumer reads it · pale: written, not yet committed")
    width = max(width, 10 + text_width(legend, size) + 10, 10 + text_width(title, 14, bold=True) + 10)
    parts, y = [], 10
    if title:
        parts.append(f'<text x="10" y="{y + 14}" font-size="14" font-weight="bold">{e(title)}</text>')
        y += 24
    for label, rows in steps:
        hw = next(int(r["high watermark"]) for r in rows.values() if r["role"] == "leader")
        parts.append(f'<text x="10" y="{y + 14}" font-weight="bold">{e(label)}</text>')
        line_x, line_top = left + hw * cell, y + 22
        parts.append(f'<text x="{line_x + 4}" y="{y + 34}" fill="#c92a2a">high watermark {hw}</text>')
        y += 42
        for b, r in sorted(rows.items()):
            leo = int(r["log end offset"])
            parts.append(f'<text x="10" y="{y + 17}">{e(names[b])}</text>')
            for offset in range(leo):
                committed = offset < hw
                parts.append(f'<rect x="{left + offset * cell}" y="{y}" width="{cell - 2}" height="{row_h - 4}" '
                             f'fill="{"#1c7ed6" if committed else "#d0ebff"}" stroke="#1c7ed6"/>'
                             f'<text x="{left + offset * cell + (cell - 2) / 2}" y="{y + 16}" text-anchor="middle" '
                             f'fill="{"#fff" if committed else "#1c7ed6"}">{offset}</text>')
            parts.append(f'<text x="{left + leo * cell + 8}" y="{y + 17}" fill="#495057">LEO {leo}</text>')
            y += row_h
        parts.append(f'<line x1="{line_x - 1}" y1="{line_top}" x2="{line_x - 1}" y2="{y}" stroke="#c92a2a" '
                     f'stroke-width="2" stroke-dasharray="4 3"/>')
        y += gap
    parts.append(f'<text x="10" y="{y + 4}" fill="#666">{e(legend)}</text>')
    height = y + 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{int(width + 0.999)}" height="{height}" '
            f'font-family="{SVG_FONT_FAMILY}" font-size="{size}">' + "".join(parts) + "</svg>")


# -- the rules behind sections 5 and 6 ----------------------------------------------------------------------------------
def high_watermark(log_end_offsets: dict, isr) -> int:
    """The leader's high watermark: the smallest log end offset among the in-sync replicas (Kafka's
    ``Partition.maybeIncrementLeaderHW``, in the simple case: the ISR has at least ``min.insync.replicas``, no
    replica outside it caught up lately, and the HW was never higher)."""
    return min(log_end_offsets[b] for b in isr)


def batches_returned(partitions: dict, max_bytes: int, partition_max_bytes: int) -> dict:
    """Whole batches each partition of one Fetch gives back, ``partitions = {partition: [batch sizes from the
    fetch offset]}`` in request order, as Kafka's ``ReplicaManager.readFromLog`` reads: each partition gets at
    most ``min(partition_max_bytes, what is left of max_bytes)`` bytes, except that the first partition with
    data returns at least its first batch (KIP-74); the bytes read come off the budget. Kafka reads a byte range
    (its last batch may be cut, and such a partial batch counts only for the budget)."""
    left, min_one, out = max_bytes, True, {}
    for p, sizes in partitions.items():
        limit = min(partition_max_bytes, left)
        if min_one and sizes:
            limit = max(limit, sizes[0])
        read = min(sum(sizes), limit)
        whole, total = 0, 0
        for size in sizes:
            if total + size > read:
                break
            whole, total = whole + 1, total + size
        if whole == 0:
            read = 0            # an incomplete first batch: Kafka answers an empty partition
        out[p] = whole
        if read:
            min_one = False
        left = max(0, left - read)
    return out


def check_high_watermarks(answer: Any, log_end_offsets: dict, isrs: dict, read_from: int) -> CheckResult:
    """Exercise: ``{case: (high watermark, records a consumer reads from read_from)}`` for ``isrs = {case:
    in-sync replicas}``."""
    from kafkalab.labs import check_parts
    expected = {}
    for case, isr in isrs.items():
        hw = high_watermark(log_end_offsets, isr)
        expected[case] = (hw, max(0, hw - read_from))

    def diagnose(case, got):
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return "give a pair (high watermark, records read)"
        if got[0] == max(log_end_offsets[b] for b in isrs[case]):
            return "that is the leader's LEO; the HW waits for the slowest in-sync replica"
        if got[0] == min(log_end_offsets.values()):
            return "only the replicas in the ISR count"
        if got[0] == expected[case][0]:
            return "right HW; a consumer reads from its offset up to the HW, not including it"
        return None
    return check_parts("Exercise 4 · the high watermark", answer, expected,
                       label=lambda c: f"{c}: ISR {tuple(isrs[c])}", diagnose=diagnose,
                       hint="HW = the smallest LEO in the ISR; records = HW - fetch offset")


def check_batches_returned(answer: Any, partitions: dict, max_bytes: int, partition_max_bytes: int) -> CheckResult:
    """Exercise: ``{partition: whole batches returned}`` for one Fetch over ``partitions``."""
    from kafkalab.labs import check_parts
    expected = batches_returned(partitions, max_bytes, partition_max_bytes)
    first_with_data = next((p for p, sizes in partitions.items() if sizes), None)

    def diagnose(p, got):
        if p == first_with_data and got == 0:
            return "the first partition with data returns its first batch whatever the caps (KIP-74)"
        if p != first_with_data and isinstance(got, int) and got > expected[p]:
            if sum(partitions[p][:got]) > partition_max_bytes:
                return "partition_max_bytes caps each partition: that many batches do not fit in it"
            return "the bytes read before this partition came off max_bytes"
        return None
    return check_parts("Exercise 5 · what one Fetch returns", answer, expected, label=lambda p: f"partition {p}",
                       diagnose=diagnose, hint="go through the partitions in request order, with a byte budget")
