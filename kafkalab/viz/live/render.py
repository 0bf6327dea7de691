"""HTML for a :class:`~kafkalab.viz.live.state.ClusterState`: one deterministic string per frame.

Theory of operation
-------------------
A live widget shows ``render_dashboard(state)`` in one ``ipywidgets.HTML``; a static snapshot shows the same
string. The rendering is a pure function of the state (no clocks, no ids, no randomness), so a fixed state
gives the same bytes -- nbval compares them -- and a frame that did not change is not sent again. No scripts,
inline styles only (JupyterLab sanitises stored HTML of untrusted notebooks: styles survive, scripts do not).

Sections (``SECTIONS``): ``brokers`` (status and controller), ``partitions`` (leader, replicas, ISR, and per
replica a bar to its log end offset with the high watermark marked), ``requests`` (rates per API),
``purgatory`` (sizes per broker) and ``groups`` (state, members, lag). Request rates and purgatory sizes change
from moment to moment even on an idle cluster (followers' fetches, metadata refreshes): static snapshots meant
to stay stable leave them out (``STABLE_SECTIONS``).

Mirrors no Kafka class.
"""
from __future__ import annotations

import html
from typing import Iterable

from kafkalab.viz.live.state import ClusterState

__all__ = ["SECTIONS", "STABLE_SECTIONS", "render_dashboard", "STATUS_COLOURS"]

SECTIONS = ("brokers", "partitions", "requests", "purgatory", "groups")
STABLE_SECTIONS = ("brokers", "partitions", "groups")
STATUS_COLOURS = {"up": "#2e7d32", "down": "#c62828", "paused": "#ef6c00", "isolated": "#6a1b9a"}

_FONT = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;line-height:1.45"
_TABLE = "border-collapse:collapse;margin:2px 0 8px 0"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left"
_BAR_PX = 220
_BAR_COMMITTED, _BAR_WRITTEN, _BAR_EMPTY = "#1565c0", "#90caf9", "#eeeeee"


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f'<th style="{_CELL}">{_e(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>" for row in rows)
    return f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _heading(text: str) -> str:
    return f'<div style="font-weight:bold;margin-top:6px">{_e(text)}</div>'


def _brokers(state: ClusterState) -> str:
    chips = []
    for b in state.brokers:
        colour = STATUS_COLOURS.get(b.status, "#555")
        label = f"broker {b.broker_id}: {b.status}" + (" · controller" if b.is_controller else "") + \
            (f" · cut from {', '.join(map(str, b.cut_links))}" if b.cut_links and b.status != "isolated" else "")
        title = f"cut links to {', '.join(map(str, b.cut_links))}" if b.cut_links else label
        chips.append(f'<span class="kl-broker" data-broker="{b.broker_id}" data-status="{_e(b.status)}" '
                     f'title="{_e(title)}" style="display:inline-block;margin:2px 6px 2px 0;padding:2px 8px;'
                     f'border-radius:10px;color:white;background-color:{colour}">{_e(label)}</span>')
    controller = "none (election under way)" if state.controller < 0 else f"broker {state.controller}"
    return _heading(f"Brokers — controller: {controller}") + "<div>" + "".join(chips) + "</div>"


def _bar(leo: int, hw: int, scale: int) -> str:
    """A bar to the log end offset: dark up to the high watermark (committed), light from there to the LEO.
    Only ``display``, ``width``, ``height`` and ``background-color``: JupyterLab's sanitiser keeps them in the
    stored output of an untrusted notebook (``position`` and the ``background`` shorthand it drops)."""
    if leo < 0:
        return '<span style="color:#999">no log</span>'
    committed = 0 if scale <= 0 else round(_BAR_PX * min(max(hw, 0), leo) / scale)
    written = 0 if scale <= 0 else round(_BAR_PX * leo / scale) - committed
    return (f'<span style="display:inline-block;width:{_BAR_PX}px;height:10px;background-color:{_BAR_EMPTY};'
            f'vertical-align:middle"><span style="display:inline-block;width:{committed}px;height:10px;'
            f'background-color:{_BAR_COMMITTED}"></span><span style="display:inline-block;width:{written}px;'
            f'height:10px;background-color:{_BAR_WRITTEN}"></span></span> '
            f'<span class="kl-leo">LEO {leo}</span> · HW {hw}')


def _partitions(state: ClusterState) -> str:
    if not state.partitions:
        return _heading("Partitions") + "<div>no topics yet</div>"
    scale = max([r.log_end_offset for p in state.partitions for r in p.logs] + [1])
    rows = []
    down = {b.broker_id for b in state.brokers if b.status == "down"}
    for p in state.partitions:
        leader = "none" if p.leader < 0 else str(p.leader)
        for i, r in enumerate(p.logs):
            role = "leader" if r.broker_id == p.leader else ("in sync" if r.broker_id in p.isr else "out of sync")
            role += ", down" if r.broker_id in down else ""
            first = i == 0
            rows.append([_e(f"{p.topic}-{p.partition}") if first else "",
                         _e(f"{leader} (epoch {p.leader_epoch})") if first else "",
                         _e(list(p.replicas)) if first else "", _e(list(p.isr)) if first else "",
                         _e(f"broker {r.broker_id} ({role})"), _bar(r.log_end_offset, r.high_watermark, scale)])
    legend = (f'<div style="font-size:12px;color:#555">bars: <span style="display:inline-block;width:10px;'
              f'height:10px;background-color:{_BAR_COMMITTED}"></span> up to the high watermark (committed) '
              f'<span style="display:inline-block;width:10px;height:10px;background-color:{_BAR_WRITTEN}"></span>'
              ' written, not yet committed</div>')
    return _heading("Partitions") + legend + _table(
        ["partition", "leader", "replicas", "ISR", "replica", "log end offset / high watermark"], rows)


def _requests(state: ClusterState) -> str:
    rows = [[_e(r.api_name), _e(r.requests), _e(f"{r.requests_per_sec:.1f}"), _e(f"{r.request_bytes_per_sec:,.0f}"),
             _e(f"{r.response_bytes_per_sec:,.0f}")] for r in state.requests]
    return _heading("Requests (all brokers)") + _table(
        ["API", "requests", "requests/s", "request bytes/s", "response bytes/s"], rows)


def _purgatory(state: ClusterState) -> str:
    rows = [[_e(p.broker_id), _e(p.operation), _e(p.purgatory_size), _e(p.num_delayed_operations)]
            for p in state.purgatories]
    return _heading("Purgatories") + _table(["broker", "delayedOperation", "PurgatorySize", "NumDelayedOperations"],
                                            rows)


def _groups(state: ClusterState) -> str:
    if not state.groups:
        return _heading("Consumer groups") + "<div>no groups yet</div>"
    rows = []
    for g in state.groups:
        lag = ", ".join(f"{t}-{p}: {lag}" for t, p, _, _, lag in g.lag) or "nothing committed"
        rows.append([_e(g.group_id), _e(g.coordinator), _e(g.state), _e(g.generation), _e(len(g.members)),
                     _e(lag)])
    return _heading("Consumer groups") + _table(
        ["group", "coordinator", "state", "generation", "members", "lag (high watermark − committed)"], rows)


_RENDERERS = {"brokers": _brokers, "partitions": _partitions, "requests": _requests, "purgatory": _purgatory,
              "groups": _groups}


def render_dashboard(state: ClusterState, sections: Iterable[str] = SECTIONS, *, footer: str = "") -> str:
    """The dashboard's HTML for ``state``: the named ``sections`` in :data:`SECTIONS` order, then ``footer``."""
    wanted = set(sections)
    unknown = wanted - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown dashboard sections {sorted(unknown)}; choose from {list(SECTIONS)}")
    parts = [_RENDERERS[name](state) for name in SECTIONS if name in wanted]
    if footer:
        parts.append(f'<div style="color:#777;font-size:11px">{_e(footer)}</div>')
    return f'<div class="kl-dashboard" style="{_FONT}">' + "".join(parts) + "</div>"
