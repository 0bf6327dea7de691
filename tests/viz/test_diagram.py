"""Diagrams: DOT to SVG through graphviz-pure, deterministic, with a clear error when nothing can render."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import graphviz
import pytest

from kafkalab.protocol import annotate_request, size_prefixed
from kafkalab.viz import Diagram, GraphvizNotFoundError, find_renderer, frame_layout_diagram, render_svg, show_frame
from kafkalab.viz import diagram as diagram_module

from .helpers import metadata_request_no_topics


def test_graphviz_pure_is_the_renderer():
    command = find_renderer()
    assert Path(command[0]).name.startswith("graphviz-pure")


def test_render_svg_is_normalised_and_deterministic():
    dot = 'digraph G { rankdir=LR; a [label="<a>"]; a -> b; }'
    svg = render_svg(dot)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!--" not in svg and "DOCTYPE" not in svg
    assert "&lt;a&gt;" in svg
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(re.fullmatch(r"d[0-9a-f]{8}-.+", i) for i in ids), ids
    diagram_module._render_cached.cache_clear()
    assert render_svg(dot) == svg, "a second run of the renderer gives the same bytes"
    other = render_svg('digraph H { x -> y; }')
    assert set(re.findall(r'\bid="([^"]+)"', other)).isdisjoint(ids), "two diagrams never share ids"


def test_diagram_from_digraph_and_from_dot():
    g = graphviz.Digraph("g")
    g.edge("size", "header")
    d = Diagram(g, caption="a <caption>")
    assert d._repr_svg_().startswith("<svg")
    html = d._repr_html_()
    assert "<svg" in html and "a &lt;caption&gt;" in html
    assert Diagram(g.source).svg() == d.svg()
    assert "Diagram(dot" in repr(d)


def test_invalid_dot_raises_a_value_error():
    with pytest.raises(ValueError, match="failed"):
        render_svg("digraph { a -> ")


def test_frame_layout_diagram():
    frame = size_prefixed(metadata_request_no_topics())
    view = show_frame(frame, size_prefix=True)
    svg = frame_layout_diagram(view).svg()
    for word in ("size", "request_api_key", "correlation_id", "client_id", "_tagged_fields", "body",
                 "MetadataRequest"):
        assert word in svg, word
    assert svg == frame_layout_diagram(annotate_request(frame, size_prefix=True)).svg()
    broken = frame_layout_diagram(show_frame(metadata_request_no_topics()[:-3])).svg()
    assert "decode error at byte 13" in broken


def test_missing_renderer_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizNotFoundError, match="graphviz-pure"):
        find_renderer()


def test_falls_back_to_system_dot(monkeypatch, tmp_path):
    dot = tmp_path / "dot"
    dot.write_text("#!/bin/sh\nexit 1\n")
    dot.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_renderer() == [str(dot)]
    assert os.access(dot, os.X_OK)
