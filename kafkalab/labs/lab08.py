"""Lab 08 (``labs/08_replication.ipynb``): replication, the ISR and acks.

Theory of operation
-------------------
The lab runs three brokers in the notebook and watches one partition with three replicas. Everything it shows
comes from the brokers themselves; this module only looks and draws:

* :class:`RequestTap` -- a tap on one broker's request channel: it keeps the decoded body of every request the
  broker's handlers take from the queue, so the lab can show the followers' Fetch requests with their
  ``replica_id`` (the broker's own request log keeps timings, not bodies);
* :func:`fetch_rows` -- those Fetch requests as table rows (who, ``replica_id``, ``max_wait_ms``,
  ``fetch_offset``...);
* :func:`replica_rows` / :func:`leader_view` -- each replica's log end offset and high watermark, and what the
  leader knows about each follower (its LEO, ``last_caught_up_time_ms``, in the ISR or not);
* :class:`ReplicaTimeline` -- snapshots of LEO and HW per replica, one column per step, drawn as bars (SVG):
  the dark part of a bar is below the high watermark (what consumers may read), the pale part is written
  but not yet committed;
* :func:`sample_invariants` -- what must hold in *every* sample taken while records flow (HW <= LEO on each
  replica, no follower's HW ahead of the leader's, the leader's HW never going back), whatever the timing;
* :func:`high_watermark` / :func:`acks_outcome` -- the rules as pure functions, and the checks ``check_*``,
  which compute the expected answer from the learner's data.

Mirrors nothing in Kafka itself; the rules come from ``Partition.scala`` (``maybeIncrementLeaderHW``,
``appendRecordsToLeader``, ``checkEnoughReplicasReachOffset``) and ``Replica.scala`` (``isCaughtUp``).
"""
from __future__ import annotations

import html
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.labs import CheckResult, Part, check, check_equal, is_unanswered
from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width, wrap_text

__all__ = ["TOPIC", "RequestTap", "fetch_rows", "replica_rows", "leader_view", "ReplicaTimeline",
           "sample_invariants", "leader_partition", "high_watermark", "acks_outcome", "check_high_watermark", "check_acks_outcomes",
           "check_isr_after"]

TOPIC = "payments"


# -- looking at the wire ------------------------------------------------------------------------------------------------
class RequestTap:
    """Keep the body of every request ``broker`` takes from its request channel (install on the cluster loop's
    broker object; the broker's own code is untouched, one attribute of its channel is wrapped)."""

    def __init__(self, broker):
        self.broker = broker
        self.requests: list[tuple[str, str, int, Any]] = []   # (client_id, api name, version, body)
        self._original = None

    def install(self) -> "RequestTap":
        channel = self.broker.channel
        original = channel.receive_request
        self._original = original

        async def receive_request():
            request = await original()
            c = request.context
            self.requests.append((c.client_id, _api_name(c.api_key), c.api_version, request.body))
            return request
        channel.receive_request = receive_request
        return self

    def remove(self) -> None:
        if self._original is not None:
            self.broker.channel.receive_request = self._original
            self._original = None

    def of(self, api_name: str) -> list:
        return [r for r in list(self.requests) if r[1] == api_name]


def _api_name(api_key: int) -> str:
    from kafkalab.protocol import api_name
    return api_name(api_key)


def fetch_rows(tap: RequestTap, topic: str, *, first_per_client: bool = True) -> list[dict]:
    """The Fetch requests the tap saw for ``topic``, one row each (or the first per client)."""
    rows, seen = [], set()
    for client_id, _, _version, body in tap.of("Fetch"):
        for t in body.topics:
            if getattr(t, "topic", None) != topic:
                continue
            for p in t.partitions:
                if first_per_client and client_id in seen:
                    continue
                seen.add(client_id)
                rows.append({"client_id": client_id, "replica_id": body.replica_id,
                             "max_wait_ms": body.max_wait_ms, "min_bytes": body.min_bytes,
                             "partition": p.partition, "fetch_offset": p.fetch_offset,
                             "current_leader_epoch": p.current_leader_epoch})
    return sorted(rows, key=lambda r: r["client_id"])


# -- looking at the replicas --------------------------------------------------------------------------------------------
def replica_rows(cluster, topic: str, partition: int = 0, names: Optional[Mapping[int, str]] = None) -> list[dict]:
    """Each live replica's LEO and HW, with its role (leader/follower) and ISR membership."""
    state = cluster.partition_state(topic, partition)
    names = names or {}
    rows = []
    for b in state["replicas"]:
        logs = state["logs"].get(b)
        rows.append({"replica": names.get(b, f"broker {b}"),
                     "role": "leader" if b == state["leader"] else "follower",
                     "in ISR": b in state["isr"],
                     "log_end_offset": logs["log_end_offset"] if logs else "(down)",
                     "high_watermark": logs["high_watermark"] if logs else "(down)"})
    return rows


def leader_view(cluster, topic: str, partition: int = 0, names: Optional[Mapping[int, str]] = None) -> list[dict]:
    """What the leader's ``Partition`` knows about every follower: the LEO of its last fetch, whether it is in
    the ISR, and whether it counts as caught up (its LEO equals the leader's, or it was caught up within
    ``replica.lag.time.max.ms``: Kafka's ``isCaughtUp``)."""
    names = names or {}

    def read():
        for b in cluster.brokers.values():
            p = b.replica_manager.get_partition(topic, partition) if b.is_running and b.replica_manager else None
            if p is not None and p.is_leader:
                now, leo, lag = b.time.milliseconds(), p.log.log_end_offset, p.replica_lag_time_max_ms
                return [{"follower": names.get(r.broker_id, f"broker {r.broker_id}"),
                         "log_end_offset (as the leader knows it)": r.log_end_offset, "in ISR": r.broker_id in p.isr,
                         "caught up": r.is_caught_up(leo, now, lag)}
                        for r in sorted(p.remote_replicas.values(), key=lambda r: r.broker_id)]
        return []
    return cluster.call(read)


def leader_partition(cluster, topic: str, partition: int = 0):
    """The leader's ``Partition`` object (read it on the cluster loop, e.g. inside ``wait_until``)."""
    for b in cluster.brokers.values():
        p = b.replica_manager.get_partition(topic, partition) if b.is_running and b.replica_manager else None
        if p is not None and p.is_leader:
            return p
    return None


class ReplicaTimeline:
    """Snapshots of (LEO, HW) per replica; ``svg()`` draws one group of bars per step."""

    COLOURS = ("#1c7ed6", "#2f9e44", "#e8590c", "#7048e8")

    def __init__(self, replicas: Sequence[str]):
        self.replicas = list(replicas)
        self.steps: list[tuple[str, dict]] = []   # (label, {replica: (leo, hw) or None})

    def add(self, label: str, rows: Iterable[Mapping]) -> None:
        snap = {r["replica"]: (None if r["log_end_offset"] == "(down)" else (r["log_end_offset"], r["high_watermark"]))
                for r in rows}
        self.steps.append((label, {name: snap.get(name) for name in self.replicas}))

    def rows(self) -> list[dict]:
        out = []
        for label, snap in self.steps:
            row = {"step": label}
            for name in self.replicas:
                v = snap[name]
                row[name] = "down" if v is None else f"LEO {v[0]} / HW {v[1]}"
            out.append(row)
        return out

    def svg(self) -> str:
        """One group of bars per step; each step's label is wrapped to its group's width (a group widens to
        its label's longest word), so neighbouring labels never run into each other."""
        size = 11
        top = max([v[0] for _, s in self.steps for v in s.values() if v] + [1])
        bar_w, gap, group_gap, chart_h, left, head = 16, 3, 26, 150, 34, 24
        bars_w = len(self.replicas) * (bar_w + gap) - gap
        lines = [wrap_text(label, bars_w + group_gap - 8, size) for label, _ in self.steps]
        col_w = max([bars_w + group_gap] + [text_width(part, size) + 10 for ls in lines for part in ls])
        y0 = head + chart_h
        label_h = 14 * max([len(ls) for ls in lines] + [1])
        legend_y = y0 + label_h + 16
        title = "log end offset (bar) and high watermark (dark part) per replica, step by step"
        note = "pale = written, not yet committed; ✕ = broker down"
        names_w = sum(14 + text_width(name, size) + 16 for name in self.replicas)
        width = int(max(left + len(self.steps) * col_w + 10, left + text_width(title, size, bold=True) + 10,
                        left + names_w, left + text_width(note, size) + 10) + 0.999)
        height = legend_y + 36
        scale = chart_h / top
        e = html.escape
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                 f'font-family="{SVG_FONT_FAMILY}" font-size="{size}">',
                 f'<text x="{left}" y="14" font-weight="bold">{e(title)}</text>']
        for v in range(0, top + 1, max(1, top // 5)):
            y = y0 - v * scale
            parts.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#eee"/>'
                         f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#666">{v}</text>')
        for i, (_, snap) in enumerate(self.steps):
            gx = left + 6 + i * col_w + (col_w - bars_w - group_gap) / 2
            for j, name in enumerate(self.replicas):
                x = gx + j * (bar_w + gap)
                colour = self.COLOURS[j % len(self.COLOURS)]
                v = snap[name]
                if v is None:
                    parts.append(f'<text x="{x + bar_w / 2}" y="{y0 - 4}" text-anchor="middle" fill="{colour}" '
                                 f'font-size="13">✕</text>')
                    continue
                leo, hw = v
                parts.append(f'<rect x="{x}" y="{y0 - leo * scale:.1f}" width="{bar_w}" height="{leo * scale:.1f}" '
                             f'fill="{colour}" fill-opacity="0.25" stroke="{colour}"><title>{e(name)}: LEO {leo}, '
                             f'HW {hw}</title></rect>')
                parts.append(f'<rect x="{x}" y="{y0 - hw * scale:.1f}" width="{bar_w}" height="{hw * scale:.1f}" '
                             f'fill="{colour}"/>')
            for k, part in enumerate(lines[i]):
                parts.append(f'<text x="{gx + bars_w / 2}" y="{y0 + 14 + 14 * k}" text-anchor="middle">'
                             f'{e(part)}</text>')
        lx = left
        for j, name in enumerate(self.replicas):
            parts.append(f'<rect x="{lx}" y="{legend_y - 9}" width="10" height="10" fill="{self.COLOURS[j]}"/>'
                         f'<text x="{lx + 14}" y="{legend_y}">{e(name)}</text>')
            lx += 14 + text_width(name, size) + 16
        parts.append(f'<text x="{left}" y="{legend_y + 18}" fill="#666">{e(note)}</text></svg>')
        return "".join(parts)

    def _repr_html_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"ReplicaTimeline({len(self.steps)} steps, replicas {self.replicas})"


def sample_invariants(samples: Sequence[Mapping[str, Mapping]], leader: str) -> dict[str, bool]:
    """Rules that hold in every sample, whatever the timing. ``samples``: ``[{replica: {"log_end_offset",
    "high_watermark"}}]`` in time order."""
    ok_hw_le_leo = all(v["high_watermark"] <= v["log_end_offset"] for s in samples for v in s.values())
    ok_follower = all(v["high_watermark"] <= s[leader]["high_watermark"] for s in samples
                      for name, v in s.items() if name != leader and leader in s)
    leader_hws = [s[leader]["high_watermark"] for s in samples if leader in s]
    return {"HW <= LEO on every replica, in every sample": ok_hw_le_leo,
            "no follower's HW ahead of the leader's": ok_follower,
            "the leader's HW never moved backwards": all(a <= b for a, b in zip(leader_hws, leader_hws[1:]))}


# -- the rules as functions ---------------------------------------------------------------------------------------------
def high_watermark(leader_leo: int, follower_leos: Mapping[Any, int], isr: Iterable, min_insync_replicas: int,
                   current_hw: int = 0) -> int:
    """The leader's HW: the smallest LEO among the ISR (the leader counted), never lower than before, and not
    moving at all while the ISR is smaller than ``min.insync.replicas`` (Kafka's strict min ISR)."""
    isr = list(isr)
    if len(isr) < min_insync_replicas:
        return current_hw
    leos = [leader_leo] + [follower_leos[b] for b in isr if b in follower_leos]
    return max(current_hw, min(leos))


def acks_outcome(acks: Any, isr_size: int, min_insync_replicas: int, replication_factor: int) -> str:
    """What a Produce gets back *before any waiting*: 'answered at once', 'waits in purgatory',
    'NOT_ENOUGH_REPLICAS' (19) or 'no response' (acks=0)."""
    if acks == 0:
        return "no response"
    if acks == 1:
        return "answered at once"
    if isr_size < min(min_insync_replicas, replication_factor):
        return "NOT_ENOUGH_REPLICAS"
    return "waits in purgatory"


# -- checks -------------------------------------------------------------------------------------------------------------
def check_high_watermark(answer: Any, leader_leo: int, follower_leos: Mapping[Any, int], isr: Iterable,
                         min_insync_replicas: int, current_hw: int) -> CheckResult:
    isr = list(isr)
    expected = high_watermark(leader_leo, follower_leos, isr, min_insync_replicas, current_hw)

    def diagnose(a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give an offset (an int)"
        if a == min([leader_leo, *follower_leos.values()]) and a != expected:
            return "only the in-sync replicas count: a follower outside the ISR does not hold the HW back"
        if a == leader_leo and a != expected:
            return "the leader's LEO is what it wrote, not what all in-sync replicas have"
        if len(isr) < min_insync_replicas and a != current_hw:
            return "look at the ISR size against min.insync.replicas"
        if a < current_hw:
            return "a leader's high watermark never moves backwards"
        return None
    return check_equal("Exercise 1 · the leader's high watermark", answer, expected, diagnose=diagnose,
                       hint="the smallest LEO over the ISR (leader included), if the ISR is big enough")


def check_acks_outcomes(answer: Any, cases: Sequence[Mapping]) -> CheckResult:
    """``answer``: a list of outcomes, one per case (``acks``, ``isr_size``, ``min_insync_replicas``,
    ``replication_factor``)."""
    title = "Exercise 2 · what each Produce gets"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple)) or len(answer) != len(cases):
        return check(title, False, f"give a list of {len(cases)} outcomes, one per case")
    parts, right = [], 0
    for i, (case, got) in enumerate(zip(cases, answer)):
        want = acks_outcome(case["acks"], case["isr_size"], case["min_insync_replicas"], case["replication_factor"])
        label = f"case {i + 1} (acks={case['acks']}, ISR {case['isr_size']}, min ISR {case['min_insync_replicas']})"
        if is_unanswered(got):
            parts.append(Part(label, "todo", "not answered yet"))
        elif got == want:
            right += 1
            parts.append(Part(label, "pass", want))
        else:
            note = f"{got!r} is not right"
            if case["acks"] == 1 and got == "NOT_ENOUGH_REPLICAS":
                note = "min.insync.replicas applies only to acks=all"
            elif case["acks"] in ("all", -1) and got == "NOT_ENOUGH_REPLICAS" and \
                    case["min_insync_replicas"] > case["replication_factor"]:
                note = "the effective minimum is min(min.insync.replicas, replication factor)"
            parts.append(Part(label, "fail", note))
    ok = right == len(cases)
    return check(title, ok, f"{right} of {len(cases)} right", parts=parts,
                 hint="" if ok else "acks=0: nothing comes back; acks=1: the leader alone; acks=all: ISR size "
                                    "against min(min.insync.replicas, RF) first, then wait")


def check_isr_after(answer: Any, last_caught_up_ms: Mapping[str, int], now_ms: int, lag_ms: int,
                    isr: Iterable[str]) -> CheckResult:
    """Exercise 3: which followers the leader keeps in the ISR at ``now_ms``."""
    isr = list(isr)
    expected = sorted(f for f in isr if now_ms - last_caught_up_ms[f] <= lag_ms)

    def diagnose(a):
        if not isinstance(a, (list, tuple, set)):
            return "give a list of follower names"
        if sorted(a) == sorted(f for f in isr if now_ms - last_caught_up_ms[f] < lag_ms):
            return "a follower exactly replica.lag.time.max.ms behind is still caught up (<=)"
        return None
    got = sorted(answer) if isinstance(answer, (list, tuple, set)) else answer
    return check_equal("Exercise 3 · who stays in the ISR", got, expected, diagnose=diagnose,
                       hint="out when now - last_caught_up_time_ms > replica.lag.time.max.ms",
                       describe=lambda a: repr(a))
