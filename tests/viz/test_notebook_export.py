"""The views survive a notebook: IPython's display machinery, a real kernel, and nbconvert's static HTML."""
from __future__ import annotations

import re

import nbformat
import pytest
from IPython.core.formatters import DisplayFormatter
from nbconvert import HTMLExporter

from kafkalab.viz import frame_layout_diagram, reset_ids, show_frame

from .helpers import embedded, metadata_request, metadata_request_no_topics


def _notebook_with(*objects) -> nbformat.NotebookNode:
    """A notebook whose cells display ``objects`` exactly as IPython would have stored them."""
    formatter = DisplayFormatter()
    nb = nbformat.v4.new_notebook()
    for i, obj in enumerate(objects):
        data, metadata = formatter.format(obj)
        cell = nbformat.v4.new_code_cell(source=f"view_{i}", execution_count=i + 1)
        cell.outputs = [nbformat.v4.new_output("execute_result", data=data, metadata=metadata,
                                               execution_count=i + 1)]
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def test_mime_bundle_has_html_and_plain_text():
    view = show_frame(metadata_request_no_topics())
    data, _ = DisplayFormatter().format(view)
    assert data["text/html"] == view.html()
    assert data["text/plain"] == repr(view)
    assert "^" not in data["text/plain"]


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_nbconvert_html_export_keeps_the_view_intact(template):
    reset_ids()
    ok = show_frame(metadata_request())
    broken = show_frame(metadata_request()[:-3])
    diagram = frame_layout_diagram(ok)
    nb = _notebook_with(ok, broken, diagram)
    body, _ = HTMLExporter(template_name=template).from_notebook_node(nb)
    for view in (ok, broken):
        # nbconvert re-serialises outputs (attribute order, hidden=""), so compare elements, not bytes
        assert embedded(view.html(), body), "styles, radios, labels and text all survive the export"
    assert f'.{ok.view_id}:has(' in body and f'id="{ok.view_id}-0"' in body
    assert '<span class="kl-caret">^</span>' in body
    assert "<svg" in body and "correlation_id" in body
    assert "<script" not in body[body.index('<div class="kl-frame'):]


def test_executed_notebook_stores_deterministic_outputs():
    """Run cells in a real kernel (as nbval does) and compare with what this process renders."""
    from nbclient import NotebookClient

    code = ("from kafkalab.viz import show_frame, reset_ids\n"
            "from tests.viz.helpers import metadata_request\n"
            "reset_ids()\n"
            "show_frame(metadata_request()[:-3])")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(code))
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(root)}}).execute()
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["execute_result"]
    reset_ids()
    expected = show_frame(metadata_request()[:-3])
    assert outputs[0].data["text/html"] == expected.html()
    assert outputs[0].data["text/plain"] == repr(expected)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert embedded(expected.html(), body)
    assert re.search(r"\bkl-caret\b", body)
