"""Pictures of API versions: a client's range against a broker's, versions used against two brokers, every API.

Theory of operation
-------------------
Every Kafka API is versioned on its own. A broker advertises, per API, the lowest and highest version it
serves (ApiVersions); a client knows its own range; on each request it uses the highest version inside both
(KIP-35), and the API is unusable when the ranges do not touch. These pictures show that rule at work:

* :class:`RangeChart` -- API by API, a row of versions 0..n: which the client can send, which the broker
  serves, which both (green), and the one they settle on (dark green), or "no common version";
* :class:`CompatGrid` -- clients down, APIs across: the version each client used against one broker, then
  against another (orange where it stepped down);
* :class:`ApiFamilies` -- every API key Kafka defines, as tiles grouped by what it is for (:data:`FAMILIES`),
  the ones a broker serves outlined with their range.

They are plain HTML with inline styles (no scripts), and the same input gives the same string, so stored
notebook outputs compare equal. Mirrors ``NodeApiVersions.latestUsableVersion`` (the rule) and the request
list of Kafka's protocol guide (``docs/protocol.html``).
"""
from __future__ import annotations

import html
from typing import Iterable, Mapping, Optional

from kafkalab.clients.api_versions import latest_common_version, version_span
from kafkalab.protocol import ApiKey, api_name, request_schema
from kafkalab.viz.style import UI_FONT as _FONT

__all__ = ["RangeChart", "CompatGrid", "ApiFamilies", "FAMILIES"]


_MONO = "font:12px/1.3 ui-monospace,Menlo,Consolas,monospace"
_e = html.escape


def _swatch(colour: str, border: str = "rgba(0,0,0,.15)") -> str:
    return (f'<span style="display:inline-block;width:.95em;height:.95em;border-radius:2px;vertical-align:-2px;'
            f'background:{colour};border:1px solid {border}"></span>')


class RangeChart:
    """API by API: the versions a client can send, the versions a broker serves, and the one they settle on.

    ``client`` and ``broker`` map API key -> (min, max). Columns are versions 0..n; a cell is green where both
    ranges hold the version (dark green: the chosen one), blue for the broker only, orange for the client only,
    grey where Kafka defines the version but neither side uses it.
    """

    COLOURS = {"both": "#b2f2bb", "chosen": "#2b8a3e", "broker": "#d0ebff", "client": "#ffe8cc", "none": "#f1f3f5"}

    def __init__(self, client: Mapping[int, tuple[int, int]], broker: Mapping[int, tuple[int, int]], *,
                 client_name: str = "client", broker_name: str = "broker", keys: Optional[Iterable[int]] = None):
        self.client, self.broker = dict(client), dict(broker)
        self.client_name, self.broker_name = client_name, broker_name
        self.keys = sorted(int(k) for k in (keys if keys is not None else set(client) | set(broker)))
        self.width = 1 + max(max(request_schema(k).valid_versions.hi, self.client.get(k, (0, 0))[1],
                                 self.broker.get(k, (0, 0))[1]) for k in self.keys)

    def rows(self) -> list[dict]:
        out = []
        for k in self.keys:
            c, b = self.client.get(k), self.broker.get(k)
            out.append({"api_key": k, "api": api_name(k), "client": version_span(c) if c else "—",
                        "broker": version_span(b) if b else "—", "chosen": latest_common_version(c, b) if c else None})
        return out

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="{_MONO};color:#656d76;font-weight:400;padding:0 2px;text-align:center">{v}</th>'
                       for v in range(self.width))
        body = []
        for row in self.rows():
            k = row["api_key"]
            c, b, chosen = self.client.get(k), self.broker.get(k), row["chosen"]
            schema = request_schema(k).valid_versions
            tds = []
            for v in range(self.width):
                in_c = c is not None and c[0] <= v <= c[1]
                in_b = b is not None and b[0] <= v <= b[1]
                kind = ("chosen" if v == chosen else "both" if in_c and in_b else "broker" if in_b
                        else "client" if in_c else "none" if v <= schema.hi else None)
                if kind is None:
                    tds.append('<td style="width:19px"></td>')
                    continue
                style = (f"background:{self.COLOURS[kind]};width:19px;height:19px;text-align:center;border-radius:3px;"
                         f"{_MONO};" + ("color:#fff;font-weight:700;" if kind == "chosen" else "color:#495057;"))
                text = str(v) if kind in ("chosen", "both") else ""
                tds.append(f'<td title="{_e(row["api"])} v{v}: {kind}" style="{style}">{text}</td>')
            verdict = (f'<b style="color:#2b8a3e">v{chosen}</b>' if chosen is not None else
                       '<b style="color:#c92a2a">✗ no common version</b>')
            body.append(f'<tr><td style="padding:0 8px 0 0;white-space:nowrap">{_e(row["api"])} '
                        f'<span style="color:#868e96">({k})</span></td>{"".join(tds)}'
                        f'<td style="padding:0 0 0 10px;white-space:nowrap">{verdict}</td></tr>')
        legend = (f'{_swatch(self.COLOURS["client"])} only {_e(self.client_name)} &nbsp; {_swatch(self.COLOURS["broker"])} '
                  f'only {_e(self.broker_name)} &nbsp; {_swatch(self.COLOURS["both"])} both &nbsp; '
                  f'{_swatch(self.COLOURS["chosen"])} the version used (the highest of both) &nbsp; '
                  f'{_swatch(self.COLOURS["none"])} defined by Kafka, used by neither')
        return (f'<div style="{_FONT};overflow-x:auto"><div style="margin-bottom:4px"><b>{_e(self.client_name)}</b> '
                f'↔ <b>{_e(self.broker_name)}</b></div><table style="border-collapse:separate;border-spacing:2px">'
                f'<tr><th></th>{head}<th></th></tr>{"".join(body)}</table>'
                f'<div style="margin-top:6px;color:#656d76;font-size:12px">{legend}</div></div>')

    def __repr__(self) -> str:
        return "\n".join(f"{r['api']:<22} client {r['client']:<6} broker {r['broker']:<6} -> "
                         + (f"v{r['chosen']}" if r["chosen"] is not None else "no common version")
                         for r in self.rows())


class CompatGrid:
    """Clients down, APIs across; each cell shows the version used against broker A, then against broker B."""

    def __init__(self, used: Mapping[str, tuple[Mapping[str, int], Mapping[str, int]]], apis: Iterable[str],
                 names: tuple[str, str] = ("new broker", "old broker"), labels: Optional[Mapping[str, str]] = None):
        self.used, self.apis, self.names = dict(used), list(apis), names
        self.labels = dict(labels or {})

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="padding:3px 8px">{_e(a)}</th>' for a in self.apis)
        rows = []
        for client, (a, b) in self.used.items():
            tds = []
            for api in self.apis:
                x, y = a.get(api), b.get(api)
                if x is None and y is None:
                    tds.append('<td style="text-align:center;color:#adb5bd">—</td>')
                    continue
                down = x is not None and y is not None and y < x
                colour = "#fff4e6" if down else "#f1f3f5"
                arrow = ' <span style="color:#e8590c">↘</span> ' if down else ' <span style="color:#adb5bd">→</span> '
                fx = "—" if x is None else f"v{x}"
                fy = "—" if y is None else f"v{y}"
                tds.append(f'<td style="text-align:center;background:{colour};border-radius:4px;padding:3px 8px;'
                           f'{_MONO}">{fx}{arrow}<b>{fy}</b></td>')
            rows.append(f'<tr><td style="padding:3px 8px;white-space:nowrap">{_e(self.labels.get(client, client))}</td>'
                        f'{"".join(tds)}</tr>')
        note = (f'cell: version used with the <b>{_e(self.names[0])}</b> → with the <b>{_e(self.names[1])}</b>; '
                f'orange: the client stepped down')
        return (f'<div style="{_FONT};overflow-x:auto"><table style="border-collapse:separate;border-spacing:3px">'
                f'<tr><th></th>{head}</tr>{"".join(rows)}</table>'
                f'<div style="margin-top:4px;color:#656d76;font-size:12px">{note}</div></div>')

    def __repr__(self) -> str:
        lines = [f"{'':<40}" + "".join(f"{a:>18}" for a in self.apis)]
        for client, (a, b) in self.used.items():
            cells = "".join(f"{('—' if a.get(api) is None else f'v{a[api]}') + ' -> ' + ('—' if b.get(api) is None else f'v{b[api]}'):>18}"
                            for api in self.apis)
            lines.append(f"{self.labels.get(client, client):<40}{cells}")
        return "\n".join(lines)


#: Every API key, grouped by what it is for (one family per key).
FAMILIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "data": ("Produce and consume records", (0, 1, 2, 21, 23, 61)),
    "discovery": ("Versions, metadata, coordinators", (18, 3, 10, 60, 75)),
    "groups": ("Consumer groups (classic protocol)", (8, 9, 11, 12, 13, 14, 15, 16, 42, 47)),
    "new-groups": ("Consumer, share and streams groups (KIP-848, KIP-932, KIP-1071)",
                   (68, 69, 76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92)),
    "txn": ("Idempotence and transactions", (22, 24, 25, 26, 27, 28, 65, 66)),
    "security": ("Authentication, ACLs, tokens, SCRAM", (17, 36, 29, 30, 31, 38, 39, 40, 41, 50, 51)),
    "admin": ("Administration: topics, configs, partitions, quotas, log dirs, features",
              (19, 20, 37, 32, 33, 44, 74, 34, 35, 43, 45, 46, 48, 49, 57, 64)),
    "telemetry": ("Client telemetry (KIP-714)", (71, 72)),
    "zk": ("Controller to brokers, ZooKeeper era (removed in Kafka 4.0)", (4, 5, 6, 7)),
    "kraft": ("KRaft: the controller quorum and broker lifecycle", (52, 53, 54, 55, 56, 58, 59, 62, 63, 67, 70, 73,
                                                                      80, 81, 82)),
}
_FAMILY_COLOURS = {"data": "#ffd8a8", "discovery": "#a5d8ff", "groups": "#b2f2bb", "new-groups": "#d8f5a2",
                   "txn": "#d0bfff", "security": "#ffc9c9", "admin": "#fff3bf", "telemetry": "#e9ecef",
                   "zk": "#dee2e6", "kraft": "#99e9f2"}


class ApiFamilies:
    """Every API key Kafka defines, as tiles grouped by family. ``served`` (key -> (min, max)) marks the APIs a
    broker serves with a dark border and its range; ``used`` (API names) gets a dot."""

    def __init__(self, served: Mapping[int, tuple[int, int]] = (), used: Iterable[str] = ()):
        self.served = dict(served)
        self.used = set(used)
        known = {k for _, keys in FAMILIES.values() for k in keys}
        missing = sorted(int(k) for k in ApiKey if int(k) not in known)
        if missing:
            raise ValueError(f"API keys without a family: {missing}")

    def counts(self) -> dict[str, int]:
        return {title: len(keys) for title, keys in FAMILIES.values()}

    def _repr_html_(self) -> str:
        cards = []
        for family, (title, keys) in FAMILIES.items():
            tiles = []
            for k in keys:
                name = api_name(k)
                spec = request_schema(k).valid_versions
                served = self.served.get(k)
                border = "2px solid #1f2328" if served else "1px solid rgba(0,0,0,.12)"
                versions = f"v{spec.text}" if spec.lo <= spec.hi else "no versions left"
                extra = f'<div style="font-weight:700">serves v{version_span(served)}</div>' if served else ""
                dot = ('<span title="a client in this lab sent it" style="float:right;color:#e8590c">●</span>'
                       if name in self.used else "")
                tiles.append(f'<div title="{_e(name)} (key {k}), Kafka 4.3: {versions}" style="background:'
                             f'{_FAMILY_COLOURS[family]};border:{border};border-radius:5px;padding:3px 6px;'
                             f'min-width:124px;font-size:11.5px;line-height:1.3">{dot}<span style="{_MONO};'
                             f'color:#495057">{k}</span> <b>{_e(name)}</b>{extra}</div>')
            cards.append(f'<div style="margin:0 0 10px 0"><div style="font-weight:600;margin-bottom:3px">{_e(title)} '
                         f'<span style="color:#868e96;font-weight:400">· {len(keys)}</span></div>'
                         f'<div style="display:flex;flex-wrap:wrap;gap:4px">{"".join(tiles)}</div></div>')
        legend = ('<b style="border:2px solid #1f2328;border-radius:3px;padding:0 4px">bold border</b> served by the lab '
                  'broker (with its range) &nbsp; <span style="color:#e8590c">●</span> sent by a client in this lab')
        return (f'<div style="{_FONT}">{"".join(cards)}<div style="color:#656d76;font-size:12px">{legend}</div></div>')

    def __repr__(self) -> str:
        lines = []
        for title, keys in FAMILIES.values():
            names = [api_name(k) + ("*" if k in self.served else "") for k in keys]
            lines.append(f"{title} ({len(keys)}): {', '.join(names)}")
        return "\n".join(lines + ["(* served by the broker)"])

