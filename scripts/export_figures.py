"""The decks' pictures are the labs' own: key diagrams exported from the built notebooks' stored outputs.

    .venv/bin/python scripts/export_figures.py            # labs/NN_*.ipynb -> slides/img/NN_<name>.svg|png
    .venv/bin/python scripts/export_figures.py --check    # the exported files are those the notebooks hold

Theory of operation: a code cell whose output is a key diagram carries the tag ``figure:<name>`` (set in
``labs/src/NN_*.py`` on its marker, ``# %% tags=["figure:<name>"]``; ``scripts/build_labs.py --no-execute``
carries a new tag into the committed notebook without executing it, so its outputs stay as they are). The export
takes that cell's stored output, never a redrawing:

* ``image/svg+xml`` -> ``slides/img/NN_<name>.svg``;
* ``text/html`` holding exactly one ``<svg>`` element (kafkalab's diagrams in a scrolling ``<div>``) -> that
  element, as ``slides/img/NN_<name>.svg``;
* ``image/png`` -> ``slides/img/NN_<name>.png``.

``NN`` is the lab's number. The files are committed (the decks show them on GitHub too, and ``make slides``
copies them beside the pages); ``--check`` (and tests/labs/test_deck_figures.py) fails when a file differs from
its notebook's output, is missing, or is left over from a figure no notebook marks any more. A deck shows one
with ``![what it shows](img/NN_<name>.svg)``.
"""
from __future__ import annotations

import argparse
import base64
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
FIGURES = ROOT / "slides" / "img"
TAG = "figure:"
FIGURE_NAME = re.compile(r"^[a-z0-9_]+$")
EXPORTED = re.compile(r"^\d\d_[a-z0-9_]+\.(svg|png)$")
_SVG_ELEMENT = re.compile(r"<svg\b.*?</svg>", re.S)
_SVG_START = re.compile(r"<svg\b[^>]*>")


class ExportError(Exception):
    pass


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def picture(outputs: list, where: str) -> tuple[str, bytes]:
    """(suffix, content) of the diagram among one cell's stored ``outputs``."""
    for out in outputs:
        data = out.get("data", {})
        if "image/svg+xml" in data:
            return "svg", _svg_file(_text(data["image/svg+xml"]))
    for out in outputs:
        html = _text(out.get("data", {}).get("text/html", ""))
        found = _SVG_ELEMENT.findall(html)
        if len(found) == 1:
            return "svg", _svg_file(found[0])
        if len(found) > 1:
            raise ExportError(f"{where}: its HTML output holds {len(found)} <svg> elements: mark one picture per cell")
    for out in outputs:
        data = out.get("data", {})
        if "image/png" in data:
            return "png", base64.b64decode(_text(data["image/png"]))
    raise ExportError(f"{where}: tagged as a figure, but no stored output is a picture (SVG, HTML with one <svg>, "
                      "PNG): build the notebook, or tag the cell that draws")


def _svg_file(svg: str) -> bytes:
    svg = svg.strip()
    start = _SVG_START.search(svg)
    if start is not None and "xmlns=" not in start.group(0):   # a standalone file needs it to render in an <img>
        svg = svg[:start.start()] + '<svg xmlns="http://www.w3.org/2000/svg"' + svg[start.start() + 4:]
    return (svg + "\n").encode("utf-8")


def figure_names(cell) -> list[str]:
    return [t[len(TAG):] for t in cell.get("metadata", {}).get("tags", []) if t.startswith(TAG)]


def figures(notebook: Path) -> dict[str, bytes]:
    """``{file name: content}`` of every figure ``notebook`` marks."""
    nb = nbformat.read(notebook, as_version=4)
    lab = notebook.name[:2]
    found: dict[str, bytes] = {}
    for i, cell in enumerate(nb.cells):
        for name in figure_names(cell):
            where = f"{notebook.name} cell {i} ({TAG}{name})"
            if not FIGURE_NAME.match(name):
                raise ExportError(f"{where}: a figure's name is lower case letters, digits and _")
            if cell.cell_type != "code":
                raise ExportError(f"{where}: only a code cell's output can be a figure")
            suffix, content = picture(cell.get("outputs", []), where)
            file = f"{lab}_{name}.{suffix}"
            if file in found:
                raise ExportError(f"{where}: {file} is marked twice")
            found[file] = content
    return found


def all_figures(labs: Path = LABS) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for notebook in sorted(labs.glob("[0-9][0-9]_*.ipynb")):
        found.update(figures(notebook))
    return found


def problems(expected: dict[str, bytes], folder: Path = FIGURES) -> list[str]:
    """What differs between the figures the notebooks hold and the files in ``folder``."""
    found = []
    for file, content in sorted(expected.items()):
        path = folder / file
        if not path.is_file():
            found.append(f"slides/img/{file} is missing")
        elif path.read_bytes() != content:
            found.append(f"slides/img/{file} differs from its notebook's stored output")
    if folder.is_dir():
        found += [f"slides/img/{p.name} is no notebook's figure any more" for p in sorted(folder.iterdir())
                  if EXPORTED.match(p.name) and p.name not in expected]
    return found


def export(expected: dict[str, bytes], folder: Path = FIGURES) -> list[str]:
    """Write the figures into ``folder``, remove exported files no notebook marks; the changes."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for file, content in sorted(expected.items()):
        path = folder / file
        if not path.is_file() or path.read_bytes() != content:
            path.write_bytes(content)
            changed.append(f"wrote slides/img/{file}")
    for path in sorted(folder.iterdir()):
        if EXPORTED.match(path.name) and path.name not in expected:
            path.unlink()
            changed.append(f"removed slides/img/{path.name}")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only verify that slides/img matches the notebooks")
    args = parser.parse_args(argv)
    try:
        expected = all_figures()
    except ExportError as e:
        print(f"export_figures: {e}", file=sys.stderr)
        return 1
    if args.check:
        found = problems(expected)
        for p in found:
            print("✗", p)
        if found:
            print("run scripts/export_figures.py", file=sys.stderr)
            return 1
        print(f"✓ {len(expected)} figure(s) in slides/img match their notebooks")
        return 0
    for line in export(expected):
        print(line)
    print(f"{len(expected)} figure(s) in slides/img")
    return 0


if __name__ == "__main__":
    sys.exit(main())
