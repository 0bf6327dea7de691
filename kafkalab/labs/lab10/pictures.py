"""Lab 10's pictures of a group: its state machine and its rebalance timeline.

Theory of operation
-------------------
Both pictures are drawn from data, never by hand:

* :func:`state_machine` -- the group state machine drawn from :data:`~kafkalab.coordinator.group.state.TRANSITIONS`
  (Graphviz, through :func:`kafkalab.viz.state_diagram.state_machine_diagram`), the current state filled and the
  transitions a :class:`~kafkalab.labs.lab10.groups.LabGroup` has taken drawn bold;
* :class:`RebalanceTimeline` -- members on rows, time across, every JoinGroup / SyncGroup / Heartbeat /
  LeaveGroup / OffsetCommit the lab sent as a mark (a bar while the coordinator parked it), the coordinator's
  verdicts as red crosses, and the group's state as a band on top (SVG, deterministic: the clock is a MockTime).

Mirrors nothing in Kafka: it draws ``GroupMetadata``'s states (``GroupMetadata.scala``) and what a
``GroupCoordinator`` answered.
"""
from __future__ import annotations

import html
from typing import Iterable, Optional

from kafkalab.coordinator.group import GroupState
from kafkalab.coordinator.group.state import TRANSITIONS
from kafkalab.labs.lab10.groups import T0, LabGroup
from kafkalab.protocol import ErrorCode
from kafkalab.viz.state_diagram import state_machine_diagram
from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width

__all__ = ["state_machine", "RebalanceTimeline"]

E = ErrorCode
S = GroupState


_STATE_COLOURS = {"Empty": "#f1f3f5", "PreparingRebalance": "#ffe8cc", "CompletingRebalance": "#fff3bf",
                  "Stable": "#d3f9d8", "Dead": "#e9ecef"}


def state_machine(current: Optional[str] = None, taken: Iterable[tuple[str, str]] = (), transitions=TRANSITIONS):
    """The group state machine drawn from ``transitions`` ((from, to, why) triples): ``current`` filled,
    edges in ``taken`` drawn bold."""
    caption = "The group state machine, drawn from kafkalab.coordinator.group.state.TRANSITIONS"
    if taken:
        caption += "; blue edges: the transitions this group has taken so far"
    return state_machine_diagram("group_states", (state.value for state in S), transitions, _STATE_COLOURS,
                                 caption=caption + ".", current=current, taken=taken, dashed_to=("Dead",),
                                 label_width=24, dashed_label_width=30, nodesep="0.5", ranksep="0.5",   # ~1150 px
                                 body=('{rank=same; "CompletingRebalance"; "Dead"}',))


_MARKS = {"JoinGroup": "#1971c2", "SyncGroup": "#2b8a3e", "Heartbeat": "#868e96", "LeaveGroup": "#e03131",
          "OffsetCommit": "#7048e8"}


class RebalanceTimeline:
    """Members on rows, time across: the lab's requests as marks (a bar while a request is parked), the
    coordinator's verdicts (session expired, removed) as red crosses, and the group state as a band on top.
    Deterministic SVG: everything comes from a MockTime clock."""

    def __init__(self, lab: LabGroup, title: str = "", width: int = 900):
        self.title = title
        self.width = width
        self.end_ms = lab.time.milliseconds() - T0
        self.calls = list(lab.calls)
        self.states = lab.states()
        self.clients = list(dict.fromkeys([c.client for c in self.calls]))
        self.crosses = []
        for ms, gid, text in lab.coordinator.events:
            if gid == lab.group_id and ("session expired" in text or "removed" in text):
                member = text.split()[0]
                self.crosses.append((ms - T0, lab.client_of(member), "session expired" if "session" in text
                                     else "removed"))

    def _x(self, ms: float) -> float:
        left, right = 130, self.width - 20
        return left + (right - left) * ms / max(self.end_ms, 1)

    def svg(self) -> str:
        e = html.escape
        row_h, top = 34, 40
        legend = [("● JoinGroup (○ answered MEMBER_ID_REQUIRED)", _MARKS["JoinGroup"]),
                  ("■ SyncGroup", _MARKS["SyncGroup"]), ("▶ LeaveGroup", _MARKS["LeaveGroup"]),
                  ("◆ OffsetCommit", _MARKS["OffsetCommit"]),
                  ("| Heartbeat (orange: answered REBALANCE_IN_PROGRESS)", _MARKS["Heartbeat"]),
                  ("✕ removed by the coordinator", "#c92a2a"),
                  ("pale bar: the coordinator holds the request (no answer yet) until the bar ends", "#868e96")]
        legend_at, lx, line = [], 10, 0
        for text, _ in legend:
            w = text_width(text, 11)
            if lx > 10 and lx + w > self.width - 10:
                lx, line = 10, line + 1
            legend_at.append((lx, line))
            lx += w + 16
        height = top + row_h * (len(self.clients) + 1) + 64 + 16 * line
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{height}" '
               f'font-family="{SVG_FONT_FAMILY}" font-size="11">']
        if self.title:
            out.append(f'<text x="10" y="16" font-size="13" font-weight="bold" fill="#1f2328">{e(self.title)}</text>')
        # state band
        y = top
        out.append(f'<text x="10" y="{y + 15}" fill="#495057">group state</text>')
        bounds = self.states + [(self.end_ms, "")]
        for (start, state), (stop, _) in zip(bounds, bounds[1:]):
            x0, x1 = self._x(start), self._x(stop)
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="22" '
                       f'fill="{_STATE_COLOURS.get(state, "#fff")}" stroke="#adb5bd" stroke-width="0.5">'
                       f'<title>{e(state)}</title></rect>')
            short = {"PreparingRebalance": "Preparing", "CompletingRebalance": "Completing"}.get(state, state)
            if x1 - x0 >= text_width(short, 11) + 6:
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 15}" text-anchor="middle" '
                           f'fill="#343a40">{e(short)}</text>')
            elif x1 - x0 >= text_width(short[0], 11) + 6:
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 15}" text-anchor="middle" '
                           f'fill="#343a40">{e(short[0])}</text>')
        # member rows
        for i, client in enumerate(self.clients):
            y = top + row_h * (i + 1) + 6
            mid = y + 11
            out.append(f'<text x="10" y="{mid + 4}" fill="#1f2328" font-weight="bold">{e(client)}</text>')
            out.append(f'<line x1="{self._x(0):.1f}" y1="{mid}" x2="{self._x(self.end_ms):.1f}" y2="{mid}" '
                       f'stroke="#e9ecef" stroke-width="1"/>')
            for c in (c for c in self.calls if c.client == client):
                colour = _MARKS[c.api]
                x = self._x(c.sent_ms - T0)
                tip = f"{c.api} at {(c.sent_ms - T0) / 1000:g} s: " + (
                    "no answer yet (parked)" if c.parked else f"{c.outcome}" + (
                        f", answered at {(c.answered_ms - T0) / 1000:g} s" if c.answered_ms != c.sent_ms else ""))
                if c.parked or c.answered_ms > c.sent_ms:
                    x1 = self._x((c.answered_ms if not c.parked else T0 + self.end_ms) - T0)
                    out.append(f'<rect x="{x:.1f}" y="{mid - 3}" width="{max(x1 - x, 1):.1f}" height="6" '
                               f'fill="{colour}" fill-opacity="0.25"/>')
                if c.api == "Heartbeat":
                    stroke = "#f08c00" if c.outcome == "REBALANCE_IN_PROGRESS" else colour
                    out.append(f'<line x1="{x:.1f}" y1="{mid - 7}" x2="{x:.1f}" y2="{mid + 7}" stroke="{stroke}" '
                               f'stroke-width="2"><title>{e(tip)}</title></line>')
                elif c.api == "LeaveGroup":
                    out.append(f'<path d="M{x - 6:.1f},{mid - 6} L{x + 6:.1f},{mid} L{x - 6:.1f},{mid + 6} Z" '
                               f'fill="{colour}"><title>{e(tip)}</title></path>')
                elif c.api == "SyncGroup":
                    out.append(f'<rect x="{x - 5:.1f}" y="{mid - 5}" width="10" height="10" fill="{colour}">'
                               f'<title>{e(tip)}</title></rect>')
                elif c.api == "OffsetCommit":
                    out.append(f'<path d="M{x:.1f},{mid - 7} L{x + 6:.1f},{mid} L{x:.1f},{mid + 7} '
                               f'L{x - 6:.1f},{mid} Z" fill="{colour}"><title>{e(tip)}</title></path>')
                else:
                    hollow = c.outcome == "MEMBER_ID_REQUIRED"    # drawn above the line: a join follows at once
                    out.append(f'<circle cx="{x:.1f}" cy="{mid - 10 if hollow else mid}" r="{4 if hollow else 5.5}" '
                               f'fill="{"#fff" if hollow else colour}" stroke="{colour}" stroke-width="2">'
                               f'<title>{e(tip)}</title></circle>')
            for ms, who, what in self.crosses:
                if who == client:
                    x = self._x(ms)
                    out.append(f'<g stroke="#c92a2a" stroke-width="3"><title>{e(what)} at {ms / 1000:g} s</title>'
                               f'<line x1="{x - 7:.1f}" y1="{mid - 7}" x2="{x + 7:.1f}" y2="{mid + 7}"/>'
                               f'<line x1="{x - 7:.1f}" y1="{mid + 7}" x2="{x + 7:.1f}" y2="{mid - 7}"/></g>')
        # axis
        y = top + row_h * (len(self.clients) + 1) + 8
        out.append(f'<line x1="{self._x(0):.1f}" y1="{y}" x2="{self._x(self.end_ms):.1f}" y2="{y}" stroke="#495057"/>')
        step = next(s for s in (1000, 2000, 5000, 10_000, 20_000, 60_000, 10 ** 9) if self.end_ms / s <= 14)
        for ms in range(0, self.end_ms + 1, step):
            x = self._x(ms)
            out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#495057"/>'
                       f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle" fill="#495057">{ms / 1000:g} s</text>')
        # legend: flowed onto as many lines as the width needs, each entry measured in the picture's font
        y += 38
        for text, colour, (lx, line) in zip((t for t, _ in legend), (c for _, c in legend), legend_at):
            out.append(f'<text x="{lx}" y="{y + 16 * line}" fill="{colour}">{e(text)}</text>')
        out.append("</svg>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return f'<div style="max-width:100%;overflow-x:auto">{self.svg()}</div>'

    def __repr__(self) -> str:
        return (f"RebalanceTimeline({len(self.clients)} members, {len(self.calls)} requests, "
                f"{self.end_ms / 1000:g} s)")
