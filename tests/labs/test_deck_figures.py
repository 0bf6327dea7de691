"""The decks show the labs' own key diagrams: scripts/export_figures.py takes the stored output of every cell tagged
``figure:<name>`` into slides/img/NN_<name>.svg|png; the committed files must be those outputs, and each deck
(all sixteen) shows at least two of its lab's pictures. (They render offline: tests/browser/test_slides_offline.py.)
"""
from __future__ import annotations

import base64
import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


export_figures = _script("export_figures")
build_labs = _script("build_labs")
build_slides = _script("build_slides")

#: the decks that show their lab's diagrams: every lab's
DECKS_WITH_FIGURES = tuple(f"{n:02d}" for n in range(16))
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")


# -- the committed files --------------------------------------------------------------------------------------------------
def test_exported_figures_are_the_notebooks_stored_outputs():
    expected = export_figures.all_figures()
    assert expected, "no notebook marks a figure"
    assert export_figures.problems(expected) == [], "run scripts/export_figures.py"


def _deck(lab: str) -> Path:
    return next((ROOT / "slides").glob(f"{lab}_*.md"))


@pytest.mark.parametrize("lab", DECKS_WITH_FIGURES)
def test_deck_shows_at_least_two_of_its_labs_pictures(lab):
    deck = _deck(lab)
    own = {name for name in export_figures.all_figures() if name.startswith(f"{lab}_")}
    shown = {p.name for p in build_slides.deck_pictures(deck.read_text(encoding="utf-8"), deck)}
    assert len(shown & own) >= 2, f"{deck.name} shows {sorted(shown & own)} of its lab's figures {sorted(own)}"


def test_every_exported_figure_file_comes_from_a_tagged_cell():
    on_disk = {p.name for p in (ROOT / "slides" / "img").iterdir() if export_figures.EXPORTED.match(p.name)}
    assert on_disk == set(export_figures.all_figures())


# -- the export ------------------------------------------------------------------------------------------------------------
def _notebook(tmp_path: Path, outputs: list, tags=("figure:wire",), name="07_lab.ipynb") -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("draw()", metadata={"tags": list(tags)})
    cell.outputs = outputs
    nb.cells.append(cell)
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def _display(data: dict):
    return nbformat.v4.new_output("display_data", data=data)


def test_an_svg_output_is_exported_as_it_is(tmp_path):
    path = _notebook(tmp_path, [_display({"image/svg+xml": SVG, "text/plain": "<figure>"})])
    assert export_figures.figures(path) == {"07_wire.svg": (SVG + "\n").encode()}


def test_the_svg_inside_an_html_output_is_exported_with_its_namespace(tmp_path):
    html = '<div style="overflow-x:auto"><svg width="10" height="10"><rect width="10" height="10"/></svg></div>'
    path = _notebook(tmp_path, [_display({"text/html": html})])
    content = export_figures.figures(path)["07_wire.svg"].decode()
    assert content.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="10"')
    assert content.rstrip().endswith("</svg>") and "<div" not in content


def test_an_svg_document_with_a_prolog_keeps_its_one_namespace(tmp_path):
    document = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<!DOCTYPE svg>\n' + SVG
    path = _notebook(tmp_path, [_display({"image/svg+xml": document})])
    content = export_figures.figures(path)["07_wire.svg"].decode()
    assert content == document + "\n" and content.count("xmlns=") == 1


def test_a_png_output_is_exported_as_its_bytes(tmp_path):
    path = _notebook(tmp_path, [_display({"image/png": base64.b64encode(PNG).decode()})])
    assert export_figures.figures(path) == {"07_wire.png": PNG}


def test_untagged_cells_are_not_exported(tmp_path):
    path = _notebook(tmp_path, [_display({"image/svg+xml": SVG})], tags=("allow-stderr",))
    assert export_figures.figures(path) == {}


@pytest.mark.parametrize("outputs, message", [
    ([], "no stored output is a picture"),
    ([nbformat.v4.new_output("stream", name="stdout", text="hello")], "no stored output is a picture"),
    ([_display({"text/html": SVG + SVG})], "2 <svg> elements"),
])
def test_a_figure_cell_without_one_picture_is_an_error(tmp_path, outputs, message):
    path = _notebook(tmp_path, outputs)
    with pytest.raises(export_figures.ExportError, match=message):
        export_figures.figures(path)


def test_a_figure_name_is_lower_case(tmp_path):
    path = _notebook(tmp_path, [_display({"image/svg+xml": SVG})], tags=("figure:../Wire",))
    with pytest.raises(export_figures.ExportError, match="lower case"):
        export_figures.figures(path)


def test_stale_missing_and_changed_files_are_named(tmp_path):
    folder = tmp_path / "img"
    folder.mkdir()
    (folder / "07_old.svg").write_text(SVG)
    (folder / "07_changed.svg").write_text("<svg/>")
    (folder / "README.txt").write_text("not an export")
    expected = {"07_changed.svg": SVG.encode(), "07_new.svg": SVG.encode()}
    found = export_figures.problems(expected, folder)
    assert found == ["slides/img/07_changed.svg differs from its notebook's stored output",
                     "slides/img/07_new.svg is missing", "slides/img/07_old.svg is no notebook's figure any more"]
    export_figures.export(expected, folder)
    assert export_figures.problems(expected, folder) == []
    assert sorted(p.name for p in folder.iterdir()) == ["07_changed.svg", "07_new.svg", "README.txt"]


# -- a tag reaches the committed notebook without executing it --------------------------------------------------------------
def _executed(source: str, metadata: dict) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source, metadata=metadata, execution_count=3)
    cell.id = "abc"
    cell.outputs = [_display({"image/svg+xml": SVG})]
    nb.cells.append(cell)
    return nb


def test_no_execute_copies_the_tag_and_keeps_the_outputs():
    have = _executed("draw()", {"slideshow": {"slide_type": "-"}})
    want = _executed("draw()", {"slideshow": {"slide_type": "-"}, "tags": ["figure:wire"]})
    want.cells[0].outputs, want.cells[0].execution_count = [], None
    outputs = nbformat.from_dict(have.cells[0].outputs)
    assert build_labs.carry_over(have, want, "07_lab.ipynb") == 1
    assert have.cells[0].metadata == {"slideshow": {"slide_type": "-"}, "tags": ["figure:wire"]}
    assert have.cells[0].outputs == outputs and have.cells[0].execution_count == 3
    assert build_labs.carry_over(have, want, "07_lab.ipynb") == 0


def test_no_execute_refuses_a_changed_source():
    have = _executed("draw()", {})
    with pytest.raises(build_labs.BuildError, match="more than metadata"):
        build_labs.carry_over(have, _executed("draw(2)", {"tags": ["figure:wire"]}), "07_lab.ipynb")


def test_no_execute_takes_new_markdown_cells_and_keeps_the_code_outputs():
    have = _executed("draw()", {})
    want = _executed("draw()", {})
    want.cells[0].outputs, want.cells[0].execution_count = [], None
    note = nbformat.v4.new_markdown_cell("*Instructors:* ...", metadata={"tags": ["solution"]})
    note.id = "n1"
    want.cells.insert(0, note)
    assert build_labs.carry_over(have, want, "07_lab.ipynb") == 1
    assert [c.cell_type for c in have.cells] == ["markdown", "code"]
    assert have.cells[0].metadata == {"tags": ["solution"]}
    assert have.cells[1].outputs and have.cells[1].execution_count == 3
    with pytest.raises(build_labs.BuildError, match="1 code cells, the source has 0"):
        build_labs.carry_over(have, nbformat.v4.new_notebook(cells=[note]), "07_lab.ipynb")
