"""Diagrams: Graphviz DOT rendered to SVG without the Graphviz system binaries.

Theory of operation
-------------------
The ``graphviz`` Python package only *writes* DOT; turning DOT into a picture normally needs Graphviz's
``dot`` program from the operating system, which a pip-only setup does not have. The ``graphviz-pure``
package ships a self-contained port of Graphviz as one executable, ``graphviz-pure``, installed next to the
Python interpreter. :func:`render_svg` pipes DOT into it (``graphviz-pure -Tsvg -Kdot``) and falls back to a
system ``dot`` only when ``graphviz-pure`` is missing.

The SVG is normalised so that a notebook cell gives the same output on every run and machine: the XML
prolog, DOCTYPE and comments (which name the Graphviz version) are dropped, and the element ids Graphviz
numbers per document (``graph0``, ``node1``, ``edge1``...) are prefixed with a hash of the DOT source, so
several diagrams on one page never share ids.

:class:`Diagram` wraps a DOT string or a ``graphviz.Digraph``/``Graph`` with ``_repr_svg_`` and
``_repr_html_`` for notebooks; :func:`frame_layout_diagram` is the first diagram of the lab: a frame drawn
left to right as ``size -> header fields -> body``.
"""
from __future__ import annotations

import functools
import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from kafkalab.viz.textfit import GRAPHVIZ_FONT, SVG_FONT_FAMILY

__all__ = ["Diagram", "render_svg", "find_renderer", "GraphvizNotFoundError", "frame_layout_diagram"]


class GraphvizNotFoundError(RuntimeError):
    """Neither ``graphviz-pure`` nor Graphviz's ``dot`` could be found."""


def find_renderer() -> list:
    """The command that renders DOT: ``graphviz-pure`` (next to ``sys.executable`` or on PATH), else ``dot``."""
    exe = "graphviz-pure.exe" if os.name == "nt" else "graphviz-pure"
    here = Path(sys.executable).parent / exe
    if here.is_file() and os.access(here, os.X_OK):
        return [str(here)]
    found = shutil.which("graphviz-pure")
    if found:
        return [found]
    dot = shutil.which("dot")
    if dot:
        return [dot]
    raise GraphvizNotFoundError(
        "cannot render DOT: no 'graphviz-pure' executable next to the Python interpreter or on PATH, and no "
        "Graphviz 'dot'. Install graphviz-pure into this environment (python -m pip install graphviz-pure) "
        "or Graphviz from your operating system (e.g. apt-get install graphviz).")


_PROLOG = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*", re.S)
_IDS = re.compile(r'\b(id|href|xlink:href)="(#?)([^"]+)"')
_URL_REF = re.compile(r"url\(#([^)]+)\)")


def _normalise(svg: str, prefix: str) -> str:
    svg = _PROLOG.sub("", svg)
    svg = svg.replace(f'font-family="{GRAPHVIZ_FONT}"', f'font-family="{SVG_FONT_FAMILY}"')   # fallbacks
    svg = _IDS.sub(lambda m: f'{m.group(1)}="{m.group(2)}{prefix}{m.group(3)}"'
                   if m.group(1) == "id" or m.group(2) else m.group(0), svg)
    svg = _URL_REF.sub(lambda m: f"url(#{prefix}{m.group(1)})", svg)
    return svg.strip() + "\n"


@functools.lru_cache(maxsize=128)
def _render_cached(source: str, engine: str, command: tuple) -> str:
    try:
        proc = subprocess.run([*command, "-Tsvg", f"-K{engine}"], input=source.encode("utf-8"),
                              capture_output=True, timeout=120, check=False)
    except OSError as e:  # pragma: no cover - the file vanished between lookup and use
        raise GraphvizNotFoundError(f"cannot run {command[0]}: {e}") from e
    if proc.returncode != 0 or not proc.stdout:
        raise ValueError(f"{Path(command[0]).name} failed (exit {proc.returncode}): "
                         f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    digest = hashlib.sha256(f"{engine}\n{source}".encode()).hexdigest()[:8]
    return _normalise(proc.stdout.decode("utf-8"), f"d{digest}-")


def render_svg(dot, engine: str = "dot") -> str:
    """SVG markup for ``dot`` (a DOT string or an object with a ``.source``, such as ``graphviz.Digraph``)."""
    source = dot if isinstance(dot, str) else dot.source
    return _render_cached(source, engine, tuple(find_renderer()))


class Diagram:
    """A Graphviz diagram for notebooks: ``Diagram(graphviz.Digraph(...))`` or ``Diagram("digraph {a->b}")``."""

    def __init__(self, dot, *, engine: str = "dot", caption: Optional[str] = None):
        self.source = dot if isinstance(dot, str) else dot.source
        self.engine = engine
        self.caption = caption

    def svg(self) -> str:
        return render_svg(self.source, self.engine)

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_html_(self) -> str:
        cap = (f'<figcaption style="color:#656d76;font-size:12px;margin-top:4px">{html.escape(self.caption)}'
               f'</figcaption>' if self.caption else "")
        return f'<figure class="kl-diagram" style="margin:0;max-width:100%;overflow-x:auto">{self.svg()}{cap}</figure>'

    def __repr__(self) -> str:
        return f"Diagram({self.engine}, {len(self.source)} chars of DOT)"

    def save(self, path) -> None:
        Path(path).write_text(self.svg(), encoding="utf-8")


def _cell(text: str, colour: str, port: Optional[str] = None, bold: bool = False) -> str:
    port_attr = f' PORT="{port}"' if port else ""
    body = html.escape(text).replace("\n", "<BR/>")
    if bold:
        body = f"<B>{body}</B>"
    return f'<TD BGCOLOR="{colour}"{port_attr}>{body}</TD>'


def frame_layout_diagram(annotation, *, title: Optional[str] = None) -> Diagram:
    """``size -> header fields -> body`` of one frame, left to right, with byte ranges and values.

    ``annotation`` is an :class:`~kafkalab.protocol.Annotation` or a :class:`~kafkalab.viz.FrameView`.
    """
    import graphviz

    from kafkalab.viz.fields import FrameModel, byte_range as _range
    from kafkalab.viz.hexdump import FrameView

    if isinstance(annotation, FrameView):
        model, title = annotation.model, title or annotation.title
    else:
        model = FrameModel(annotation)
    g = graphviz.Digraph("frame", graph_attr={"rankdir": "LR", "bgcolor": "transparent", "nodesep": "0.3",
                                              "ranksep": "0.35", "fontname": GRAPHVIZ_FONT, "fontsize": "12"},
                         node_attr={"shape": "plain", "fontname": GRAPHVIZ_FONT, "fontsize": "10"},
                         edge_attr={"color": "#868e96", "arrowsize": "0.7"})
    if title or model.title():
        g.attr(label=title or model.title(), labelloc="t")

    def label(nd) -> str:
        r = nd.row
        name = nd.row.path.replace("header.", "")
        return f"{name}\n{r.wire_type}\nbytes {_range(r.start, r.end)}\n{nd.value_text}"

    order = []
    size = model.find("size")
    if size is not None:
        g.node("size", "<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"5\"><TR>"
               + _cell(label(size), size.colour) + "</TR></TABLE>>")
        order.append("size")
    header = model.find("header")
    if header is not None:
        cells = "".join(_cell(label(model.nodes[k]), model.nodes[k].colour) for k in header.children)
        head = _cell(f"header\n{header.value_text}", "#f1f3f5", bold=True)
        g.node("header", f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="5"><TR>{head}{cells}'
                         f"</TR></TABLE>>")
        order.append("header")
    body = model.find("body")
    if body is not None:
        r = body.row
        fields = len(body.children)
        text = f"body\n{r.wire_type}\nbytes {_range(r.start, r.end)} ({r.end - r.start:,} B)\n{fields} top-level fields"
        g.node("body", '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="5"><TR>'
               + _cell(text, "#f8f9fa", bold=False) + "</TR></TABLE>>")
        order.append("body")
    if model.error is not None:
        err = f"decode error at byte {model.error_offset}\n{model.error.path}\n{model.error.reason}"
        g.node("error", '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="5"><TR>'
               + _cell(err, "#ffe3e3") + "</TR></TABLE>>")
        order.append("error")
    for a, b in zip(order, order[1:]):
        g.edge(a, b)
    return Diagram(g, caption="A frame on the wire: each box is a field, left to right in byte order.")
