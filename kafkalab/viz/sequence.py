"""A sequence diagram as deterministic SVG: who sent what to whom, in order, and which message was lost.

Theory of operation
-------------------
Kafka's ordering guarantees are statements about time on several machines at once: a client's requests on one
connection are answered in order (correlation ids match them up), two connections are not ordered with each
other, a request whose connection dies is never answered. A sequence diagram draws exactly that: one vertical
*lifeline* per party (a client, a connection, a broker), time running downwards, one row per message. A request is
a solid arrow, a response a dashed one, a message that never arrives ends in a ✗ half-way; a bar on a lifeline
(:meth:`SequenceDiagram.span`) marks "busy with this" over several rows, and a note spans the whole width.

The SVG depends only on what was added: text is set in :data:`~kafkalab.viz.textfit.SVG_FONT_FAMILY` and
measured with that font's advance widths (:func:`~kafkalab.viz.textfit.text_width`, a table, the same on every
machine), the columns widen until every label fits, and nothing reads a clock, so nbval compares the stored
picture byte for byte. :data:`API_COLOURS` gives the common request types one colour each, so arrows of the same API look alike
across labs (02: a client's versions; 03: pipelining and correlation ids).
"""
from __future__ import annotations

import html
from typing import Iterable, Optional

from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width

__all__ = ["API_COLOURS", "SequenceDiagram"]

_e = html.escape

#: Colours of the request arrows, one per API (the others are grey).
API_COLOURS = {"ApiVersions": "#7048e8", "Metadata": "#1971c2", "Produce": "#e8590c", "Fetch": "#2f9e44",
               "InitProducerId": "#0c8599", "ListOffsets": "#ae3ec9", "FindCoordinator": "#c2255c"}


class SequenceDiagram:
    """A sequence diagram as deterministic SVG: lifelines across, time downwards, one row per message.

    ``lifelines``: ``[(key, title, subtitle), ...]``. Add rows in time order with :meth:`message` (an arrow,
    solid for a request and dashed for a response; ``lost=True`` ends it in a ✗ half-way), :meth:`note` (text
    across the whole width) and :meth:`span` (a bar on a lifeline from one row to another: "busy with this").

    ``label_at``: ``"middle"`` (the default) centres each label over its arrow and widens the columns until it
    fits between the arrow's two lifelines; ``"start"`` sets it from the arrow's start, running the way the
    arrow points (past its end, over other lifelines, with a white halo), so that the columns only need to
    hold the lifelines' boxes and the labels only need to stay inside the picture: a diagram of many
    lifelines and long labels stays narrow enough to read at a notebook's width.
    """

    ROW = 30

    def __init__(self, lifelines: Iterable[tuple[str, str, str]], *, title: Optional[str] = None, column: int = 210,
                 label_at: str = "middle"):
        if label_at not in ("middle", "start"):
            raise ValueError(f"label_at must be 'middle' or 'start', not {label_at!r}")
        self.label_at = label_at
        self.lifelines = list(lifelines)
        self.index = {key: i for i, (key, _, _) in enumerate(self.lifelines)}
        self.title = title
        self.column = column
        self.rows: list[tuple] = []
        self.spans: list[tuple] = []

    def message(self, src: str, dst: str, label: str, *, colour: str = "#495057", dashed: bool = False,
                lost: bool = False, note: str = "") -> int:
        self.rows.append(("msg", src, dst, label, colour, dashed, lost, note))
        return len(self.rows) - 1

    def note(self, text: str) -> int:
        self.rows.append(("note", text))
        return len(self.rows) - 1

    def span(self, lifeline: str, first_row: int, last_row: int, colour: str = "#e9ecef") -> None:
        self.spans.append((lifeline, first_row, last_row, colour))

    def _x(self, key: str) -> float:
        return 30 + self.column / 2 + self.index[key] * self.column

    @staticmethod
    def _text_width(text: str, size: float = 12.0, bold: bool = False) -> float:
        """The rendered width in the diagram's font (deterministic: a table of the font's advance widths)."""
        return text_width(text, size, bold=bold)

    def _fit_column(self) -> None:
        """Widen the columns until every title fits in its box and every label between its two lifelines (with
        ``label_at="start"``: between its start and the picture's far edge)."""
        need = self.column
        for _, title, subtitle in self.lifelines:
            need = max(need, self._text_width(title, 12, True) + 40, self._text_width(subtitle, 11) + 40)
        n = len(self.lifelines)
        if self.title:
            need = max(need, (self._text_width(self.title, 14, True) + 20 - 60) / n)
        for row in self.rows:
            if row[0] == "note":                      # across the whole width
                need = max(need, (self._text_width(row[1], 11.5) + 20 - 60) / n)
                continue
            src, dst = self.index[row[1]], self.index[row[2]]
            label = self._text_width(row[3], 12, not row[5])
            if self.label_at == "start":              # from the source lifeline + 14 to 4 px inside the edge
                room = n - src - 0.5 if dst >= src else src + 0.5
                need = max(need, (label + 18 - 30) / room)
            else:
                need = max(need, (label + 36) / max(1, abs(dst - src)))
            if row[7]:                                # a side note right of the arrow's far end
                right = max(self.index[row[1]], self.index[row[2]])
                # 30 + column / 2 + right * column + 6 + 12 + width <= 60 + n * column
                need = max(need, (self._text_width(row[7], 11) + 18 - 30) / (n - right - 0.5))
                if self.label_at == "start" and dst >= src:   # ... and right of a label that runs past it
                    need = max(need, (label + 14 + 12 + self._text_width(row[7], 11) - 30) / (n - src - 0.5))
        self.column = int(need + 0.999)

    def svg(self) -> str:
        self._fit_column()
        top = 34 if self.title else 8
        head = 46
        width = 60 + self.column * len(self.lifelines)
        y0 = top + head + 18
        height = y0 + self.ROW * len(self.rows) + 16
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="{SVG_FONT_FAMILY}" '
               f'font-size="12">',
               '<defs><marker id="kl-seq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>',
               f'<rect width="{width}" height="{height}" fill="#fff"/>']
        if self.title:
            out.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="600" '
                       f'fill="#1f2328">{_e(self.title)}</text>')
        for key, title, subtitle in self.lifelines:
            x = self._x(key)
            w = self.column - 24
            out.append(f'<line x1="{x}" y1="{top + head}" x2="{x}" y2="{height - 8}" stroke="#adb5bd" '
                       f'stroke-dasharray="4 4"/>')
            out.append(f'<rect x="{x - w / 2}" y="{top}" width="{w}" height="{head}" rx="6" fill="#f8f9fa" '
                       f'stroke="#868e96"/>')
            out.append(f'<text x="{x}" y="{top + 19}" text-anchor="middle" font-weight="600" fill="#1f2328">'
                       f'{_e(title)}</text>')
            if subtitle:
                out.append(f'<text x="{x}" y="{top + 36}" text-anchor="middle" font-size="11" fill="#656d76">'
                           f'{_e(subtitle)}</text>')
        for lifeline, a, b, colour in self.spans:
            x = self._x(lifeline)
            ya, yb = y0 + a * self.ROW - 4, y0 + b * self.ROW + 4
            out.append(f'<rect x="{x - 5}" y="{ya}" width="10" height="{yb - ya}" fill="{colour}" stroke="#868e96" '
                       f'stroke-width="0.8"/>')
        for i, row in enumerate(self.rows):
            y = y0 + i * self.ROW
            if row[0] == "note":
                out.append(f'<text x="{width / 2}" y="{y + 4}" text-anchor="middle" font-size="11.5" '
                           f'font-style="italic" fill="#656d76">{_e(row[1])}</text>')
                continue
            _, src, dst, label, colour, dashed, lost, note = row
            x1, x2 = self._x(src), self._x(dst)
            sign = 1 if x2 > x1 else -1
            x1 += 6 * sign
            end = (x1 + x2) / 2 if lost else x2 - 6 * sign
            dash = ' stroke-dasharray="6 4"' if dashed else ""
            marker = "" if lost else ' marker-end="url(#kl-seq-arrow)"'
            out.append(f'<line x1="{x1}" y1="{y}" x2="{end}" y2="{y}" stroke="{colour}" stroke-width="1.6"{dash}'
                       f'{marker}/>')
            if lost:
                out.append(f'<text x="{end}" y="{y + 5}" text-anchor="middle" font-size="15" font-weight="700" '
                           f'fill="#c92a2a">✗</text>')
            weight = 600 if not dashed else 400
            far = max(x1, x2)
            if self.label_at == "start":
                at = x1 + 8 * sign
                far = max(far, at + self._text_width(label, 12, not dashed) if sign > 0 else far)
                out.append(f'<text x="{at}" y="{y - 5}" text-anchor="{"start" if sign > 0 else "end"}" '
                           f'fill="{colour}" font-weight="{weight}" stroke="#fff" stroke-width="3" '
                           f'paint-order="stroke">{_e(label)}</text>')
            else:
                out.append(f'<text x="{(x1 + x2) / 2}" y="{y - 5}" text-anchor="middle" fill="{colour}" '
                           f'font-weight="{weight}">{_e(label)}</text>')
            if note:
                anchor_x = far + 12
                out.append(f'<text x="{anchor_x}" y="{y + 4}" font-size="11" fill="#656d76">{_e(note)}</text>')
        out.append("</svg>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return f'<div style="overflow-x:auto;max-width:100%">{self.svg()}</div>'

    def __repr__(self) -> str:
        lines = []
        for row in self.rows:
            if row[0] == "note":
                lines.append(f"   ... {row[1]}")
            else:
                arrow = "--x" if row[6] else ("-->" if row[5] else "->")
                lines.append(f"{row[1]} {arrow} {row[2]}: {row[3]}")
        return "\n".join(lines)

