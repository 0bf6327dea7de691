"""scripts/build_labs.py without executing anything: parsing, placeholders, student versions, --check."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_labs", ROOT / "scripts" / "build_labs.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

SOURCE = '''# reviewers' note, not a cell

# %% [markdown]
# ## A slide
#
# text

# %%
x = 1

# %% tags=["solution"]
answer = {("a", 1): 0, ("b", 2): 1}
helper = 3

# %%
check(answer)

# %% [markdown] slideshow={"slide_type": "fragment"}
# ### more
'''


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "99_demo.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def test_parse_percent(source):
    cells = build.parse_percent(source)
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code", "code", "markdown"]
    assert cells[0]["source"] == "## A slide\n\ntext"
    assert cells[2]["metadata"] == {"tags": ["solution"]}
    assert cells[4]["metadata"] == {"slideshow": {"slide_type": "fragment"}}


def test_jupytext_layout_metadata_is_not_kept(tmp_path):
    path = tmp_path / "97_blank_lines.py"
    path.write_text('# %%\nx = 1\n\n\n\n# %% tags=["solution"]\ny = 2\n', encoding="utf-8")
    cells = build.parse_percent(path)
    assert [c["metadata"] for c in cells] == [{}, {"tags": ["solution"]}]
    assert [c["source"] for c in cells] == ["x = 1", "y = 2"]


def test_markdown_lines_must_be_comments(tmp_path):
    bad = tmp_path / "98_bad.py"
    bad.write_text("# %% [markdown]\n# ok\nnot a comment\n", encoding="utf-8")
    with pytest.raises(build.BuildError, match="must start with"):
        build.parse_percent(bad)


def test_notebook_metadata_ids_and_slides(source):
    nb = build.notebook_from_source(source)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert [c.metadata["slideshow"]["slide_type"] for c in nb.cells] == ["slide", "-", "skip", "-", "fragment"]
    assert nb.cells[2].metadata["jupyter"] == {"source_hidden": True}
    assert build.notebook_from_source(source).cells[1].id == nb.cells[1].id     # stable ids
    assert len({c.id for c in nb.cells}) == len(nb.cells)


def test_placeholder_keeps_what_the_check_uses():
    text = build.placeholder('answer = {("a", 1): 0}\nhelper = 3\n', {"check", "answer"})
    assert "answer = {\n    ('a', 1): ...,\n}" in text and "helper" not in text
    assert build.placeholder("corr, = f()\n", {"corr"}).endswith("corr = ...")
    with pytest.raises(build.BuildError):
        build.placeholder("print(1)\n")


def test_student_version_replaces_solutions_and_drops_outputs(source):
    nb = build.notebook_from_source(source)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    student = build.student_version(nb)
    cell = student.cells[2]
    assert "answer" in cell.metadata["tags"] and "solution" not in cell.metadata["tags"]
    assert "('a', 1): ..." in cell.source and "helper" not in cell.source
    assert all(c.get("outputs", []) == [] for c in student.cells if c.cell_type == "code")
    exec(compile(cell.source, "<placeholder>", "exec"), {})                   # it is valid Python


def test_committed_notebooks_match_their_sources():
    for src in build._sources([]):
        assert build.check(src, build.LABS / f"{src.stem}.ipynb") == []


def test_stored_outputs_keep_a_widgets_fallbacks_not_its_view():
    view = {"version_major": 2, "version_minor": 0, "model_id": "0123abcd"}
    widget = nbformat.v4.new_output("display_data", data={"text/plain": "replay: 5,000 events", build.WIDGET_VIEW: view,
                                                          "text/html": "<div>replay: 5,000 events</div>"})
    bare = nbformat.v4.new_output("display_data", data={build.WIDGET_VIEW: view})      # nothing else to show
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[widget, bare])])
    build.drop_widget_views(nb)
    assert dict(nb.cells[0].outputs[0].data) == {"text/plain": "replay: 5,000 events",
                                                "text/html": "<div>replay: 5,000 events</div>"}
    assert build.WIDGET_VIEW in nb.cells[0].outputs[1].data
