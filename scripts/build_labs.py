"""Build the lab notebooks from their reviewable sources: labs/src/NN_*.py -> labs/NN_*.ipynb.

    .venv/bin/python scripts/build_labs.py                  # build + execute every lab, store the outputs
    .venv/bin/python scripts/build_labs.py 01               # only labs whose name starts with 01
    .venv/bin/python scripts/build_labs.py --check          # committed .ipynb sources == labs/src (no execution)
    .venv/bin/python scripts/build_labs.py --student DIR    # student versions (solutions replaced, no outputs)
    .venv/bin/python scripts/build_labs.py --participant    # what `make lab` opens: participant/ (see below)
    .venv/bin/python scripts/build_labs.py --no-execute 09  # prose and tags from the source, code outputs kept

Source format: Jupytext's "percent" format, read by Jupytext (``jupytext.reads(text, fmt="py:percent")``). A
line ``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell whose lines are written as comments
(``# text``; a bare ``#`` is an empty line; the build insists on that). After the marker, ``key=<json>`` pairs
set cell metadata, e.g. ``# %% tags=["solution"]`` or ``# %% [markdown] slideshow={"slide_type": "fragment"}``.
Lines before the first marker are a comment for reviewers and are not part of the notebook. Jupytext's own
layout metadata (``lines_to_next_cell`` ...) and notebook metadata are dropped: the build writes its own.

What the build adds, so that nothing has to be hand-edited in the .ipynb:
* ``slideshow.slide_type`` for ``jupyter nbconvert --to slides``: markdown cells starting with ``#``/``##`` open a
  slide, ``###`` a sub-slide, solution cells are skipped, everything else continues the current slide;
* solution cells (tag ``solution``) are collapsed in JupyterLab (``jupyter.source_hidden``);
* stable cell ids (a hash of the cell's type and source), kernelspec python3, and no timing metadata.

Execution uses nbclient with the ``python3`` kernel of the interpreter running this script (run it with the
repo's ``.venv/bin/python``), in ``labs/`` as working directory. The build fails if any cell raises or writes
to stderr (tag a cell ``allow-stderr`` if that is intended): nbval compares stderr too. A live widget's output
is stored without its view (``application/vnd.jupyter.widget-view+json``: the model exists only in the kernel
that ran it), so a reopened notebook shows the widget's own fixed ``text/html`` until the cell runs again.

Student versions: each solution cell keeps its tags except ``solution`` (it gets ``answer``) and its code is
replaced by one ``name = ...`` line per variable the solution assigns (for a dict literal, its keys are kept:
``{("Produce", 8): ..., ...}``), the placeholder that ``kafkalab.labs`` checks report as "not answered yet".
Markdown cells tagged ``solution`` (the explanation of an answer, after its check) are left out.

Changing only prose or cell metadata (markdown cells added, removed or edited; a tag such as ``figure:<name>``,
which marks a key diagram for the decks: see scripts/export_figures.py): ``--no-execute`` takes every markdown cell
and all cell metadata from the source and keeps each code cell's stored outputs as they are (no execution, so
nbval still passes); it refuses when the code cells differ from the source's in number, order, source or id
(rebuild those: a code change needs its outputs recomputed).

Participant versions (``--participant``, run by ``make lab``): the student versions of the committed notebooks
in ``labs/``, *with* their stored outputs (pictures show before anything runs) except those of answer and check
cells, written to ``participant/`` beside ``labs/`` (so ``../data`` still resolves) with a ``START_HERE.md``.
A notebook the learner has changed since it was written is never overwritten (``.built.json`` remembers what
was written); delete it to get the new version. They are not committed: ``--check`` checks the sources.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
SOURCES = LABS / "src"

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
LANGUAGE_INFO = {"name": "python", "codemirror_mode": {"name": "ipython", "version": 3},
                 "file_extension": ".py", "mimetype": "text/x-python", "pygments_lexer": "ipython3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_MARKER = re.compile(r"^# %%(?P<rest>.*)$")
_KIND = re.compile(r"^\s*\[(?P<kind>markdown|md|raw)\]")


class BuildError(Exception):
    pass


# -- parsing the percent format (Jupytext) ---------------------------------------------------------------------------
#: Cell metadata Jupytext adds to remember how the text was laid out (blank lines, marker style): not the notebook's.
_LAYOUT_METADATA = {"skipline", "noskipline", "cell_marker", "lines_to_next_cell", "lines_to_end_of_cell_marker"}


def _check_layout(text: str, path: Path) -> None:
    """What Jupytext accepts but the house does not: a markdown line that is not a comment."""
    kind = None
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _MARKER.match(line)
        if m:
            k = _KIND.match(m.group("rest"))
            kind = "text" if k else "code"
        elif kind == "text" and line.strip() and not (line == "#" or line.startswith("# ")):
            raise BuildError(f"{path}:{lineno}: a markdown line must start with '# ' (got {line[:40]!r})")


def parse_percent(path: Path) -> list[dict]:
    """``[{"cell_type", "source", "metadata"}, ...]`` from a percent-format file, read by Jupytext."""
    import jupytext

    text = path.read_text(encoding="utf-8")
    _check_layout(text, path)
    try:
        nb = jupytext.reads(text, fmt="py:percent")
    except Exception as e:  # noqa: BLE001 -- Jupytext's errors vary by kind; name the file
        raise BuildError(f"{path}: Jupytext cannot read it: {e}") from None
    cells = list(nb.cells)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if cells and not _MARKER.match(first):
        cells = cells[1:]                  # the reviewers' header before the first cell
    out = []
    for i, c in enumerate(cells):
        source = "\n".join(_trim(c.source.split("\n")))    # Jupytext keeps blank lines beyond the usual two
        if not source:
            raise BuildError(f"{path}: cell {i} is empty")
        meta = {k: v for k, v in c.metadata.items() if k not in _LAYOUT_METADATA}
        out.append({"cell_type": c.cell_type, "source": source, "metadata": meta})
    return out


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _slide_type(cell: dict) -> str:
    if "solution" in cell["metadata"].get("tags", []):
        return "skip"
    if cell["cell_type"] == "markdown":
        first = cell["source"].lstrip().split("\n", 1)[0]
        if first.startswith("# ") or first.startswith("## "):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def _cell_id(cell_type: str, source: str, seen: set) -> str:
    base = hashlib.sha1(f"{cell_type}\n{source}".encode()).hexdigest()[:8]
    cid, n = base, 1
    while cid in seen:
        cid, n = f"{base}-{n}", n + 1
    seen.add(cid)
    return cid


def notebook_from_source(path: Path) -> nbformat.NotebookNode:
    """The notebook (no outputs) that ``path`` describes."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    seen: set = set()
    for cell in parse_percent(path):
        meta = dict(cell["metadata"])
        meta.setdefault("slideshow", {"slide_type": _slide_type(cell)})
        tags = meta.get("tags", [])
        if "solution" in tags:
            meta.setdefault("jupyter", {"source_hidden": True})
        make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
                "raw": nbformat.v4.new_raw_cell}[cell["cell_type"]]
        nb_cell = make(cell["source"], metadata=meta)
        nb_cell.id = _cell_id(cell["cell_type"], cell["source"], seen)
        nb.cells.append(nb_cell)
    nbformat.validate(nb)
    return nb


# -- execution -------------------------------------------------------------------------------------------------------
def execute(nb: nbformat.NotebookNode, name: str, timeout: int) -> float:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, allow_errors=False,
                            resources={"metadata": {"path": str(LABS)}})
    started = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        raise BuildError(f"{name}: a cell raised an error:\n{e}") from None
    elapsed = time.monotonic() - started
    store_outputs(nb, name)
    return elapsed


def store_outputs(nb: nbformat.NotebookNode, name: str) -> None:
    """Make an executed notebook ready to commit: the build's own metadata, no timing, no widget views; fail on
    an error output or on stderr in a cell not tagged ``allow-stderr``."""
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    drop_widget_views(nb)
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        for out in cell.outputs:
            if out.output_type == "error":
                raise BuildError(f"{name}: cell {i} stored an error output")
            if out.output_type == "stream" and out.name == "stderr" and "allow-stderr" not in tags:
                raise BuildError(f"{name}: cell {i} wrote to stderr (nbval would compare it):\n{out.text}\n"
                                 f"--- cell source ---\n{cell.source}")


def drop_widget_views(nb: nbformat.NotebookNode) -> None:
    """Stored outputs keep a live widget's fallbacks (``text/plain``, ``text/html``), not its view: the notebook
    is written without widget state, so a stored view could only show "Loading widget..." or "Error displaying
    widget: model not found" in a freshly opened (trusted) notebook, where the fallback shows the widget's own
    stable text/html until the cell runs again. nbval never compares views (their model ids are random)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None and WIDGET_VIEW in data and len(data) > 1:
                del data[WIDGET_VIEW]


# -- student versions -------------------------------------------------------------------------------------------------
def _assigned(node) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for t in targets:
        names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return names


def placeholder(source: str, used_next: set | None = None) -> str:
    """``name = ...`` for each variable the solution assigns at top level that the next cell (the check) uses
    (every assigned variable if that finds none). A dict literal keeps its keys: ``{("Produce", 8): ..., }``."""
    assigns = [(name, node) for node in ast.parse(source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
               for name in _assigned(node)]
    wanted = [(n, node) for n, node in assigns if used_next and n in used_next] or assigns
    if not wanted:
        raise BuildError(f"a solution cell assigns no variable, so it has no placeholder:\n{source}")
    lines = ["# Your answer: replace each ... below, then run the check cell."]
    for name, node in dict(wanted).items():
        value = node.value
        if isinstance(value, ast.Dict) and value.keys and all(k is not None for k in value.keys):
            keys = "".join(f"    {ast.unparse(k)}: ...,\n" for k in value.keys)
            lines.append(f"{name} = {{\n{keys}}}")
        else:
            lines.append(f"{name} = ...")
    return "\n".join(lines)


def _names_used(source: str) -> set:
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _is_solution(cell) -> bool:
    return "solution" in cell.metadata.get("tags", [])


def _is_check(cell) -> bool:
    return cell.cell_type == "code" and _CHECK_CALL.search(cell.source) is not None


_CHECK_CALL = re.compile(r"\blab\d\d\.check_\w+\(")
_HEADING = re.compile(r"^#{1,6} ")


def student_version(nb: nbformat.NotebookNode, *, keep_outputs: bool = False) -> nbformat.NotebookNode:
    """Solutions replaced by placeholders, explanations of answers (markdown tagged ``solution``) removed. With
    ``keep_outputs``, stored outputs stay (so pictures show before anything runs) except those that would show
    the answer or a ✓ the learner has not earned: of answer cells, check cells and the cells after a check up to
    the next heading (a demonstration that confirms the answer)."""
    out = nbformat.from_dict(json.loads(json.dumps(nb)))
    out.cells = [c for c in out.cells if not (c.cell_type != "code" and _is_solution(c))]
    after_check = False
    for i, cell in enumerate(out.cells):
        if cell.cell_type == "markdown" and _HEADING.match(cell.source.lstrip()):
            after_check = False
        after_check = after_check or _is_check(cell)
        if cell.cell_type == "code" and (not keep_outputs or after_check or _is_solution(cell)):
            cell.outputs, cell.execution_count = [], None
        tags = cell.metadata.get("tags", [])
        if "solution" in tags:
            nxt = next((c for c in out.cells[i + 1:] if c.cell_type == "code"), None)
            cell.source = placeholder(cell.source, _names_used(nxt.source) if nxt is not None else None)
            cell.metadata["tags"] = [t for t in tags if t != "solution"] + ["answer"]
            cell.metadata.pop("jupyter", None)
            cell.metadata["slideshow"] = {"slide_type": "-"}
            cell.id = "answer-" + cell.id
    nbformat.validate(out)
    return out


# -- participant versions -------------------------------------------------------------------------------------------
PARTICIPANT = ROOT / "participant"
_BUILT = ".built.json"


def _title(nb) -> str:
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    line = first.lstrip().split("\n", 1)[0]
    return line.lstrip("#").strip() or "(untitled)"


def start_page(titles: dict[str, str]) -> str:
    rows = "\n".join(f"| [`{name}`]({name}) | {title} |" for name, title in titles.items())
    first = next(iter(titles), None)
    begin = (f"Begin with **`{first}`**" if first else "Begin with the first lab") + \
        " (double-click it in the file browser on the left), then go on in order."
    return f"""# Start here

{begin}

- Run a notebook **from the top**, one cell after the other (Shift+Enter), or all at once with
  *Run → Run All Cells*. A lab that needs Kafka starts its own small cluster inside the notebook: nothing else
  to install, nothing to start by hand.
- If a cell fails because you skipped or re-ran an earlier one: *Kernel → Restart Kernel and Run All Cells*
  (or restart, then run from the top again).
- Exercises: write your answer in the cell that says `# Your answer`, then run the check cell below it; it
  shows ✓, or ✗ with a hint.
- The pictures you see before running anything were made when the lab was built; running a cell redraws its own.
- Your changes are yours: `make lab` never overwrites a notebook you changed. Delete one to get a fresh copy.

| notebook | lab |
|---|---|
{rows}
"""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_participant(target: Path, notebooks: list[Path]) -> list[str]:
    """Write the participant versions of ``notebooks`` (committed, executed) into ``target``; returns messages."""
    target.mkdir(parents=True, exist_ok=True)
    built_file = target / _BUILT
    try:
        built = json.loads(built_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        built = {}
    messages, titles = [], {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        titles[path.name] = _title(nb)
        data = (nbformat.writes(student_version(nb, keep_outputs=True)) + "\n").encode("utf-8")
        dest = target / path.name
        if dest.exists():
            current = _digest(dest.read_bytes())
            if current == _digest(data):
                built[path.name] = current
                continue
            if built.get(path.name) != current:
                messages.append(f"kept {dest.name}: you changed it (delete it to get the new version)")
                continue
        dest.write_bytes(data)
        built[path.name] = _digest(data)
        messages.append(f"wrote {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
    (target / "START_HERE.md").write_text(start_page(titles), encoding="utf-8")
    built_file.write_text(json.dumps(built, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return messages


def committed_notebooks() -> list[Path]:
    return sorted(LABS.glob("[0-9][0-9]_*.ipynb"))


# -- check --------------------------------------------------------------------------------------------------------------
def _shape(nb) -> list:
    return [(c.cell_type, c.source, json.dumps(c.metadata, sort_keys=True), c.get("id")) for c in nb.cells]


def check(src: Path, ipynb: Path) -> list[str]:
    problems = []
    if not ipynb.exists():
        return [f"{ipynb.relative_to(ROOT)} is missing: run scripts/build_labs.py"]
    want = notebook_from_source(src)
    have = nbformat.read(ipynb, as_version=4)
    if have.metadata != want.metadata:
        problems.append(f"{ipynb.name}: notebook metadata differs from what the build writes")
    a, b = _shape(have), _shape(want)
    if len(a) != len(b):
        problems.append(f"{ipynb.name}: {len(a)} cells, the source has {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        for what, u, v in zip(("type", "source", "metadata", "id"), x, y):
            if u != v:
                first = next((j for j, (p, q) in enumerate(zip(str(u), str(v))) if p != q), min(len(str(u)),
                                                                                               len(str(v))))
                problems.append(f"{ipynb.name}: cell {i} {what} differs from {src.name} "
                                f"(near {str(v)[max(0, first - 20):first + 30]!r})")
                break
    for i, c in enumerate(have.cells):
        if c.cell_type == "code" and c.execution_count is None:
            problems.append(f"{ipynb.name}: cell {i} has not been executed (outputs missing)")
            break
    return problems


# -- metadata only -------------------------------------------------------------------------------------------------------
def carry_over(have: nbformat.NotebookNode, want: nbformat.NotebookNode, name: str) -> int:
    """Make ``have`` (committed, executed) ``want`` (from the source) without executing anything: ``want``'s cells,
    each code cell with the outputs and execution count of ``have``'s, in place; how many cells changed (the larger
    of the cells new or different in ``want`` and those gone from ``have``), 0 if nothing did. Code cells that differ in number, order, source or id are a BuildError (they need executing)."""
    have_code = [c for c in have.cells if c.cell_type == "code"]
    want_code = [c for c in want.cells if c.cell_type == "code"]
    if len(have_code) != len(want_code):
        raise BuildError(f"{name}: {len(have_code)} code cells, the source has {len(want_code)}: rebuild it")
    for i, (h, w) in enumerate(zip(have_code, want_code)):
        if (h.source, h.get("id")) != (w.source, w.get("id")):
            raise BuildError(f"{name}: code cell {i} differs from its source in more than metadata: rebuild it")
        w.outputs, w.execution_count = h.outputs, h.execution_count
    before = {(c.get("id"), c.cell_type, c.source, json.dumps(c.metadata, sort_keys=True)) for c in have.cells}
    after = {(c.get("id"), c.cell_type, c.source, json.dumps(c.metadata, sort_keys=True)) for c in want.cells}
    have.cells = want.cells
    return max(len(after - before), len(before - after))


# -- main -----------------------------------------------------------------------------------------------------------------
def _sources(selected: list[str]) -> list[Path]:
    found = sorted(SOURCES.glob("[0-9][0-9]_*.py"))
    if selected:
        found = [p for p in found if any(p.stem.startswith(s) for s in selected)]
    if not found:
        raise BuildError(f"no lab sources match {selected or 'labs/src/NN_*.py'}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labs", nargs="*", help="only labs whose file name starts with one of these (e.g. 01)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify committed notebooks match their sources")
    mode.add_argument("--no-execute", action="store_true",
                      help="take markdown cells and cell metadata from the sources into the committed notebooks, "
                           "keeping the code cells' stored outputs (refused when code changed)")
    mode.add_argument("--student", type=Path, metavar="DIR", help="write student versions into DIR")
    mode.add_argument("--participant", nargs="?", type=Path, const=PARTICIPANT, metavar="DIR",
                      help="write the participant versions (with outputs) of the committed notebooks into DIR "
                           "(default: participant/)")
    parser.add_argument("--timeout", type=int, default=300, help="per-cell timeout in seconds (default 300)")
    args = parser.parse_args(argv)
    try:
        if args.participant:
            if args.participant.resolve() == LABS.resolve():
                raise BuildError("write participant versions somewhere else than labs/")
            notebooks = [p for p in committed_notebooks() if not args.labs or
                         any(p.stem.startswith(s) for s in args.labs)]
            for message in write_participant(args.participant, notebooks):
                print(message)
            print(f"{len(notebooks)} participant notebook(s) in {args.participant}")
            return 0
        sources = _sources(args.labs)
        if args.check:
            problems = [p for src in sources for p in check(src, LABS / f"{src.stem}.ipynb")]
            for p in problems:
                print("✗", p)
            if not problems:
                print(f"✓ {len(sources)} notebook(s) match their sources")
            return 1 if problems else 0
        if args.no_execute:
            for src in sources:
                target = LABS / f"{src.stem}.ipynb"
                nb = nbformat.read(target, as_version=4)
                changed = carry_over(nb, notebook_from_source(src), target.name)
                if changed:
                    nbformat.write(nb, target)
                print(f"{target.relative_to(ROOT)}: {changed} cell(s) added, removed or changed, code outputs kept")
            return 0
        if args.student:
            if args.student.resolve() == LABS.resolve():
                raise BuildError("write student versions somewhere else than labs/ (nbval would collect them)")
            args.student.mkdir(parents=True, exist_ok=True)
            for src in sources:
                target = args.student / f"{src.stem}.ipynb"
                nbformat.write(student_version(notebook_from_source(src)), target)
                print(f"wrote {target}")
            return 0
        for src in sources:
            nb = notebook_from_source(src)
            elapsed = execute(nb, src.stem, args.timeout)
            target = LABS / f"{src.stem}.ipynb"
            nbformat.write(nb, target)
            print(f"built {target.relative_to(ROOT)}: {len(nb.cells)} cells, executed in {elapsed:.1f} s")
        return 0
    except BuildError as e:
        print(f"build_labs: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
