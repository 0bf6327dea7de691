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


def _participant_demo():
    cells = [nbformat.v4.new_code_cell("picture()"), nbformat.v4.new_code_cell("answer = 42",
                                                                              metadata={"tags": ["solution"]}),
             nbformat.v4.new_code_cell("lab99.check_it(answer)"), nbformat.v4.new_markdown_cell("Now watch:"),
             nbformat.v4.new_code_cell("demo()"), nbformat.v4.new_markdown_cell("(Because 42.)",
                                                                                metadata={"tags": ["solution"]}),
             nbformat.v4.new_markdown_cell("## Next"), nbformat.v4.new_code_cell("later()")]
    for i, c in enumerate(cells):
        c.id = f"c{i}"
        if c.cell_type == "code":
            c.outputs, c.execution_count = [nbformat.v4.new_output("stream", name="stdout", text=f"out {i}\n")], i
    return nbformat.v4.new_notebook(cells=cells)


def test_participant_version_keeps_outputs_but_none_that_shows_the_answer():
    student = build.student_version(_participant_demo(), keep_outputs=True)
    outputs = {c.id: [o.text for o in c.outputs] for c in student.cells if c.cell_type == "code"}
    assert outputs == {"c0": ["out 0\n"], "answer-c1": [], "c2": [], "c4": [], "c7": ["out 7\n"]}
    assert [c.source for c in student.cells if c.cell_type == "markdown"] == ["Now watch:", "## Next"]


def test_write_participant_keeps_what_the_learner_changed(tmp_path, monkeypatch):
    labs = tmp_path / "labs"
    labs.mkdir()
    nbformat.write(_participant_demo(), labs / "99_demo.ipynb")
    target = tmp_path / "participant"
    assert build.write_participant(target, [labs / "99_demo.ipynb"])[0].startswith("wrote")
    written = target / "99_demo.ipynb"
    assert "answer = ..." in written.read_text(encoding="utf-8")
    assert "`99_demo.ipynb`" in (target / "START_HERE.md").read_text(encoding="utf-8")
    assert build.write_participant(target, [labs / "99_demo.ipynb"]) == []              # unchanged: nothing to do
    nb = _participant_demo()
    nb.cells[0].source = "picture(2)"                                                    # a new version of the lab
    nbformat.write(nb, labs / "99_demo.ipynb")
    assert build.write_participant(target, [labs / "99_demo.ipynb"])[0].startswith("wrote")
    assert "picture(2)" in written.read_text(encoding="utf-8")
    written.write_text(written.read_text(encoding="utf-8").replace("answer = ...", "answer = 41"), encoding="utf-8")
    nb.cells[0].source = "picture(3)"
    nbformat.write(nb, labs / "99_demo.ipynb")
    assert build.write_participant(target, [labs / "99_demo.ipynb"])[0].startswith("kept 99_demo.ipynb")
    assert "answer = 41" in written.read_text(encoding="utf-8")                         # the learner's work stays


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


def test_stored_outputs_keep_a_widgets_fallback_but_not_its_view():
    """A live widget's view names a model of the kernel that ran it: the build stores its text/html instead."""
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"state": {}}})
    fallback = '<div class="kl-dashboard">ClusterDashboard: a live view of 3 broker(s)</div>'
    nb.cells = [nbformat.v4.new_code_cell("dashboard", outputs=[nbformat.v4.new_output(
        "execute_result", data={build.WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "ab12"},
                                "text/html": fallback, "text/plain": "ClusterDashboard()"}, execution_count=1)])]
    build.store_outputs(nb, "00_tour")
    assert dict(nb.cells[0].outputs[0].data) == {"text/html": fallback, "text/plain": "ClusterDashboard()"}
    assert "widgets" not in nb.metadata
    nb.cells[0].outputs.append(nbformat.v4.new_output("stream", name="stderr", text="oops"))
    with pytest.raises(build.BuildError, match="wrote to stderr"):
        build.store_outputs(nb, "00_tour")
