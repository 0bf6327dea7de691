"""Text that fits: the width of a label in the font the SVG pictures use, wrapping, and a checker.

Theory of operation
-------------------
An SVG ``<text>`` never wraps and never grows its box: a picture sized by guessing (``7 px per character``)
clips its legend or runs its axis labels into each other as soon as a label is longer than the guess. So every
SVG picture in kafkalab names one font, :data:`SVG_FONT_FAMILY` (DejaVu Sans first: it is what Debian's
Chromium draws for ``system-ui`` and ``sans-serif``, and among the widest of the common sans faces, so a picture
that fits in it fits in the narrower fallbacks too), and measures its text with that font's own advance widths:
:func:`text_width` adds them up from a table read out of ``DejaVuSans.ttf`` and ``DejaVuSans-Bold.ttf``
(``scripts/generate_font_metrics.py`` prints it; no font library is needed at run time, and the result is the
same on every machine, so stored notebook outputs stay byte-for-byte stable). Kerning is ignored: it only ever
makes a line narrower.

:func:`wrap_text` breaks a label into lines no wider than a width and :func:`stack_rows` moves a label down a
row when it would touch its neighbour. :func:`check_svg` reads a finished SVG back (following ``transform``
scales and translations, Graphviz's ``pt`` sizes and inherited font attributes) and lists what a reader would
trip over: text smaller than :data:`MIN_TEXT_PX`, text that leaves the picture, text that runs past the filled
box it sits in (boxes at least 12 px wide: narrower ones are swatches and bars) and two pieces of text that
overlap. ``tests/viz/test_textfit.py`` runs it on every picture the notebooks store.

No Kafka class corresponds to this module: Kafka draws no pictures.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional

__all__ = ["SVG_FONT_FAMILY", "GRAPHVIZ_FONT", "MIN_TEXT_PX", "text_width", "wrap_text", "stack_rows", "check_svg",
           "svgs_in", "text_boxes", "TextBox"]

#: The ``font-family`` of every SVG picture (an attribute value: no quotes needed).
SVG_FONT_FAMILY = "DejaVu Sans,Verdana,Geneva,sans-serif"
#: The ``fontname`` of Graphviz diagrams: Graphviz knows this face's widths and sizes its boxes with them;
#: :func:`kafkalab.viz.render_svg` widens the ``font-family`` it writes to :data:`SVG_FONT_FAMILY`.
GRAPHVIZ_FONT = "DejaVu Sans"
#: Nothing a learner must read is smaller than this (px).
MIN_TEXT_PX = 11.0
#: Monospace faces (DejaVu Sans Mono, Menlo, Consolas) advance 0.602 em per character.
MONO_ADVANCE = 0.602
_MONO_NAMES = ("mono", "menlo", "consolas", "courier", "monaco")

# Advance widths in 1/1000 em, printed by scripts/generate_font_metrics.py from DejaVu Sans 2.37.
_REGULAR_CHARS = (
    ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNO'
    'PQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~→←✕✗✓·–—…▾▸×≤≥'
)
_REGULAR_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636,
    636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656,
    557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613,
    635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818,
    592, 592, 525, 636, 337, 636, 838, 838, 838, 838, 838, 838, 318, 500, 1000, 1000, 502, 502, 838, 838, 838
)
_BOLD_WIDTHS = (
    348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696,
    696, 696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775,
    637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675,
    716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924,
    645, 652, 582, 712, 365, 712, 838, 838, 838, 838, 838, 838, 380, 500, 1000, 1000, 502, 502, 838, 838, 838
)
_REGULAR = dict(zip(_REGULAR_CHARS, _REGULAR_WIDTHS))
_BOLD = dict(zip(_REGULAR_CHARS, _BOLD_WIDTHS))
#: A character the table does not know (CJK, emoji, ...) counts as one em: wide, never too narrow.
_UNKNOWN = 1000


def text_width(text: str, size: float, *, bold: bool = False, mono: bool = False) -> int:
    """The advance width of ``text`` set at ``size`` px in :data:`SVG_FONT_FAMILY` (or a monospace face), in
    whole px rounded up: positions computed from it stay short integers in the SVG text."""
    if mono:
        return math.ceil(len(text) * size * MONO_ADVANCE)
    table = _BOLD if bold else _REGULAR
    return math.ceil(sum(table.get(ch, _UNKNOWN) for ch in text) * size / 1000.0 - 1e-9)


def wrap_text(text: str, max_width: float, size: float, *, bold: bool = False) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``max_width`` px (a single word wider than that gets a
    line of its own: it is never cut)."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_width(lines[-1] + " " + word, size, bold=bold) <= max_width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def stack_rows(spans, gap: float = 6.0) -> list[int]:
    """For labels that occupy ``spans`` ``[(x0, x1), ...]`` (left to right), the row each goes in so that no two
    labels of a row come closer than ``gap`` px: the first row where it fits (row 0 is the first)."""
    ends: list[float] = []
    rows = []
    for x0, x1 in spans:
        row = next((i for i, end in enumerate(ends) if x0 >= end + gap), len(ends))
        if row == len(ends):
            ends.append(x1)
        else:
            ends[row] = x1
        rows.append(row)
    return rows


@dataclass(frozen=True)
class TextBox:
    """Where one ``<text>`` (or a ``<tspan>`` line of it) is drawn: its text, font size and bounding box."""
    text: str
    size: float
    x0: float
    y0: float
    x1: float
    y1: float
    anchor_x: float = 0.0      # the x the text is anchored at (its start, middle or end)

    def overlaps(self, other: "TextBox", slack: float = 0.5) -> bool:
        return (self.x0 + slack < other.x1 and other.x0 + slack < self.x1
                and self.y0 + slack < other.y1 and other.y0 + slack < self.y1)


_SVG_RE = re.compile(r"<svg\b.*?</svg>", re.S)
_ENTITIES = {"&nbsp;": "&#160;", "&middot;": "&#183;", "&rarr;": "&#8594;", "&ndash;": "&#8211;"}


def svgs_in(html_text: str) -> list[str]:
    """Every ``<svg>...</svg>`` in a piece of HTML (pictures do not nest SVGs)."""
    return _SVG_RE.findall(html_text)


def _num(value: Optional[str], default: float = 0.0) -> float:
    if value is None:
        return default
    m = re.match(r"\s*(-?[\d.]+)", value)
    return float(m.group(1)) if m else default


def _tag(el: ET.Element) -> str:
    return el.tag.rsplit("}", 1)[-1]


def _transform(el: ET.Element) -> tuple[float, float, float]:
    """``(scale, dx, dy)`` of an element's ``transform`` (Graphviz writes ``scale(s s) rotate(0) translate(x y)``:
    the translation is in the scaled units)."""
    spec = el.get("transform", "")
    m = re.search(r"scale\(\s*(-?[\d.]+)", spec)
    t = re.search(r"translate\(\s*(-?[\d.]+)[\s,]+(-?[\d.]+)\s*\)", spec)
    return (float(m.group(1)) if m else 1.0, float(t.group(1)) if t else 0.0, float(t.group(2)) if t else 0.0)


def _style(el: ET.Element, inherited: dict) -> dict:
    out = dict(inherited)
    for key in ("font-size", "font-weight", "font-family", "text-anchor"):
        if el.get(key) is not None:
            out[key] = el.get(key)
    for part in el.get("style", "").split(";"):
        if ":" in part:
            key, value = (s.strip() for s in part.split(":", 1))
            if key in ("font-size", "font-weight", "font-family", "text-anchor"):
                out[key] = value
    return out


def _box(text: str, x: float, y: float, style: dict, k: float = 1.0) -> TextBox:
    size = k * _num(style.get("font-size"), 16.0)
    bold = style.get("font-weight", "normal") in ("bold", "bolder", "600", "650", "700", "800", "900")
    mono = any(n in style.get("font-family", "").lower() for n in _MONO_NAMES)
    width = text_width(text, size, bold=bold, mono=mono) - 0.5    # undo text_width's rounding up
    anchor = style.get("text-anchor", "start")
    x0 = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
    # DejaVu Sans: caps and digits reach 0.73 em above the baseline, descenders 0.24 em below it
    return TextBox(text, size, x0, y - 0.73 * size, x0 + width, y + 0.24 * size, x)


def _collect(el: ET.Element, style: dict, dx: float, dy: float, texts: list, rects: list, k: float = 1.0) -> None:
    """Text boxes and rectangles in the root's user units: a point (x, y) of ``el`` is at ``(dx + k x, dy + k y)``."""
    style = _style(el, style)
    s, tx, ty = _transform(el)
    dx, dy, k = dx + k * s * tx, dy + k * s * ty, k * s
    tag = _tag(el)
    if tag in ("title", "desc", "defs", "marker", "clipPath"):
        return
    if tag == "rect" and el.get("fill", "").lower() not in ("none", "transparent", "") \
            and _num(el.get("fill-opacity"), 1.0) > 0 and el.get("data-textbox") != "no":
        x, y = dx + k * _num(el.get("x")), dy + k * _num(el.get("y"))
        rects.append((x, y, x + k * _num(el.get("width")), y + k * _num(el.get("height"))))
    if tag == "text":
        x, y = dx + k * _num(el.get("x")), dy + k * _num(el.get("y"))
        lead = (el.text or "").strip()
        if lead:
            texts.append(_box(lead, x, y, style, k))
        for span in el:
            if _tag(span) != "tspan":
                continue
            sstyle = _style(span, style)
            if span.get("x") is not None:
                x = dx + k * _num(span.get("x"))
            y = (dy + k * _num(span.get("y"))) if span.get("y") is not None else y + k * _num(span.get("dy"))
            words = "".join(span.itertext()).strip()
            if words:
                texts.append(_box(words, x, y, sstyle, k))
        return
    for child in el:
        _collect(child, style, dx, dy, texts, rects, k)


def text_boxes(svg: str) -> tuple[list[TextBox], list[tuple], float, float]:
    """The text boxes and filled rectangles of an SVG, and its width and height."""
    for name, ref in _ENTITIES.items():
        svg = svg.replace(name, ref)
    root = ET.fromstring(svg)
    width, height = _px(root.get("width")), _px(root.get("height"))
    view = root.get("viewBox")
    k = 1.0
    if view:
        vw, vh = (float(v) for v in view.replace(",", " ").split()[2:4])
        k = width / vw if width and vw else 1.0
        width, height = width or vw * k, height or vh * k
    texts: list[TextBox] = []
    rects: list[tuple] = []
    _collect(root, {}, 0.0, 0.0, texts, rects, k)       # everything in px as the browser draws it
    return texts, rects, width, height


def _px(length: Optional[str]) -> float:
    """A length attribute in CSS px (Graphviz writes ``pt``: 4/3 px)."""
    if not length:
        return 0.0
    return _num(length) * (4 / 3 if length.strip().endswith("pt") else 1.0)


def check_svg(svg: str, *, min_px: float = MIN_TEXT_PX) -> list[str]:
    """What is wrong with the text of ``svg``, one sentence each (empty: every label fits)."""
    texts, rects, width, height = text_boxes(svg)
    problems = []
    for t in texts:
        if t.size < min_px:
            problems.append(f"{t.text!r} is {t.size:g} px, below {min_px:g} px")
        if t.x0 < -0.5 or t.x1 > width + 0.5 or t.y0 < -0.5 or t.y1 > height + 0.5:
            problems.append(f"{t.text!r} leaves the picture ({t.x0:.0f}..{t.x1:.0f} × {t.y0:.0f}..{t.y1:.0f} "
                            f"in {width:g} × {height:g})")
        baseline = t.y1 - 0.24 * t.size
        for x0, y0, x1, y1 in rects:
            inside = x0 <= t.anchor_x <= x1 and y0 <= baseline <= y1
            if inside and 12 <= x1 - x0 < width - 1 and (t.x0 < x0 - 0.5 or t.x1 > x1 + 0.5):
                problems.append(f"{t.text!r} runs out of its box ({t.x0:.0f}..{t.x1:.0f} in {x0:.0f}..{x1:.0f})")
                break
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            if a.overlaps(b):
                problems.append(f"{a.text!r} overlaps {b.text!r}")
    return problems
