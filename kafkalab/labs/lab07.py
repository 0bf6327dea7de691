"""Lab 07 (``labs/07_fetching_and_purgatory.ipynb``): fetching, the high watermark and the purgatory.

Theory of operation
-------------------
Requests that cannot be answered yet -- an ``acks=all`` produce waiting for the followers, a Fetch waiting for
``min_bytes`` -- wait in a broker's **purgatory**; their timeouts live in a **hierarchical timing wheel**. The
lab watches both on a live cluster (metrics, ``completed_by``) and drives a
:class:`~kafkalab.purgatory.SystemTimer` on a :class:`~kafkalab.common.time.MockTime` step by step. This module
holds what it needs:

* :func:`raw_fetch` -- one Fetch request, as a consumer (``replica_id=-1``) would send it, with its round trip
  time and what came back;
* :func:`wheel_html` -- the timer's wheels as a grid, one row per level, one cell per bucket (slot range and
  task count), the current slot marked;
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

from kafkalab.labs import CheckResult, check, check_equal, is_unanswered

__all__ = ["raw_fetch", "wheel_html", "bucket_for", "idle_fetches", "check_bucket", "check_idle_fetches",
           "check_fetch_case"]


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
            if isinstance(got, tuple) and len(got) == 2 and want is not None and got[0] == want[0]:
                note = "right level; the slot starts at a multiple of that level's tick"
            elif isinstance(got, tuple) and want is not None and got[0] < want[0]:
                note = f"level {got[0]} covers only {tick_ms * wheel_size ** got[0]} ms ahead"
            parts.append(Part(name, "fail", note))
    ok = right == len(delays)
    return check(title, ok, f"{right} of {len(delays)} right", parts=parts,
                 hint="" if ok else "level n has tick u·n^(level-1) and covers the next wheel_size ticks")


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


def check_fetch_case(answer: Any, fetch_offset: int, high_watermark: int, available_bytes: int,
                     min_bytes: int) -> CheckResult:
    """Exercise: does a parked consumer Fetch complete now? ``"G"`` (enough bytes), ``"F"`` (offset past the
    end: the log was truncated) or ``"wait"``."""
    if fetch_offset > high_watermark:
        expected = "F"
    elif available_bytes >= min_bytes:
        expected = "G"
    else:
        expected = "wait"

    def diagnose(a):
        if a == "G" and available_bytes < min_bytes:
            return "there is data, but fewer bytes than min_bytes"
        if a == "wait" and fetch_offset > high_watermark:
            return "a fetch offset beyond the end means the log was truncated under the consumer"
        return None
    return check_equal("Exercise 3 · does the fetch complete?", answer, expected, diagnose=diagnose,
                       hint="compare the offset with the HW, then the bytes with min_bytes")
