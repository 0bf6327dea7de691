"""The participant versions `make lab` opens give no answer away: built from the committed notebooks (outputs kept,
as `make lab` writes them), they must hold no explanation after a check and no checker's expected answer, and
neither may the instructor decks (which the class sees)."""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_labs", ROOT / "scripts" / "build_labs.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

NOTEBOOKS = build.committed_notebooks()
_HEADING = build._HEADING


def _cell_text(cell) -> str:
    parts = [cell.source]
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        for value in out.get("data", {}).values():
            parts.append(value if isinstance(value, str) else str(value))
    return "\n".join(parts)


def _is_check(cell) -> bool:
    return build._is_check(cell)


# -- 1. no explanation of an answer after its check ---------------------------------------------------------------------
def explanations_after_checks(nb) -> list[str]:
    """Markdown right after a check cell that explains the answer: a note in parentheses, or text that shares its
    cell with the next heading (where the explanations of labs 06, 08, 10, 11 and 13 used to sit). A sentence
    leading into a demonstration ("Now let the broker do it:") is not one."""
    found = []
    for i, cell in enumerate(nb.cells[:-1]):
        nxt = nb.cells[i + 1]
        if not _is_check(cell) or nxt.cell_type != "markdown" or _HEADING.match(nxt.source.lstrip()):
            continue
        if nxt.source.lstrip().startswith("(") or any(_HEADING.match(line) for line in nxt.source.split("\n")):
            found.append(nxt.source.split("\n", 1)[0][:80])
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_explanation_follows_a_check_in_the_participant_version(path):
    participant = build.student_version(nbformat.read(path, as_version=4), keep_outputs=True)
    assert explanations_after_checks(participant) == []


def test_explanation_after_a_check_is_found_and_a_solution_tagged_one_is_removed():
    check = nbformat.v4.new_code_cell("lab99.check_thing(answer, DATA)")
    note = nbformat.v4.new_markdown_cell("(Because the third one is late.)\n\n### Exercise 2")
    nb = nbformat.v4.new_notebook(cells=[check, note])
    assert explanations_after_checks(nb) == ["(Because the third one is late.)"]
    note.metadata["tags"] = ["solution"]
    heading = nbformat.v4.new_markdown_cell("### Exercise 2")
    nb.cells.append(heading)
    assert explanations_after_checks(build.student_version(nb)) == []


# -- 2. no expected answer anywhere a learner looks -------------------------------------------------------------------------
def _imports(nb) -> str:
    lines = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        lines += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(lines))


def _leaves(value):
    if isinstance(value, dict):                 # the keys are the question's (the placeholder keeps them)
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, (int, float, str, bytes)) and not isinstance(value, bool):
        yield value


def distinctive_forms(value) -> set[str]:
    """How an answer would be written in prose or shown in a table: numbers of two or more digits (or negative),
    strings and bytes of four or more characters."""
    forms = set()
    for leaf in _leaves(value):
        if isinstance(leaf, float) and leaf.is_integer():
            leaf = int(leaf)
        if isinstance(leaf, (int, float)) and (abs(leaf) >= 10 or leaf < 0):
            forms.add(str(leaf))
        elif isinstance(leaf, bytes) and len(leaf) >= 4:
            forms.add(leaf.decode("latin-1"))
        elif isinstance(leaf, str) and len(leaf) >= 4:
            forms.add(leaf)
    return forms


def _occurs(form: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(form)}(?![\w.])", text) is not None


def exercises(nb):
    """``(question cells, solution cell, check cell, cells after the check up to the next heading)``."""
    start = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and _EXERCISE.match(cell.source.lstrip()):
            start = i
        if start is not None and cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            j = next((k for k in range(i + 1, len(nb.cells)) if nb.cells[k].cell_type == "code"), len(nb.cells))
            end = next((k for k in range(j + 1, len(nb.cells)) if nb.cells[k].cell_type == "markdown"
                        and _HEADING.match(nb.cells[k].source.lstrip())), len(nb.cells))
            yield nb.cells[start:i], cell, nb.cells[j] if j < len(nb.cells) else None, nb.cells[j + 1:end]


_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_EXERCISE = re.compile(r"^#{1,6} .*Exercise", re.MULTILINE)
_NEEDS_A_RUNNING_LAB = re.compile(r"\b(cluster|Cluster|broker|spark|producer|consumer)\b")


def expected_answer(nb, question, solution):
    """The answer the solution computes from the question's data alone (``None`` when it needs the lab's cluster
    or anything else set up earlier in the notebook)."""
    code = [c.source for c in question if c.cell_type == "code"] + [solution.source]
    if any(_NEEDS_A_RUNNING_LAB.search(source) for source in code):
        return None
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(_imports(nb), namespace)                       # noqa: S102 -- the lab's own code
            for source in code:
                exec(source, namespace)                         # noqa: S102
        except Exception:  # noqa: BLE001 -- data made earlier in the notebook: covered by test 1 only
            return None
    names = [n for node in ast.parse(solution.source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for n in build._assigned(node)]
    return [namespace[n] for n in names if n in namespace]


def _slides_of(path: Path) -> Path:
    return ROOT / "slides" / f"{path.stem}.md"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_expected_answer_appears_in_the_participant_version_or_the_slides(path):
    instructor = nbformat.read(path, as_version=4)
    participant = build.student_version(instructor, keep_outputs=True)
    slides = _slides_of(path).read_text(encoding="utf-8") if _slides_of(path).exists() else ""
    by_id = {c.id: c for c in participant.cells}
    leaks = []
    for question, solution, check, after in exercises(instructor):
        answer = expected_answer(instructor, question, solution)
        if answer is None:
            continue
        asked = "\n".join(_cell_text(c) for c in question)            # the question's own words and data
        # what a participant sees of this exercise besides the question: the answer cell, the check, what follows
        shown = "\n".join(_cell_text(by_id[cid]) for cid in ["answer-" + solution.id, check.id, *(c.id for c in after)]
                          if cid in by_id)
        for form in distinctive_forms(answer) - {f for f in distinctive_forms(answer) if _occurs(f, asked)}:
            if _occurs(form, shown):
                leaks.append(f"{path.name}: answer {form!r} of the exercise checked by {check.source!r} is shown")
            if len(form) >= 3 and _NUMBER.fullmatch(form) and _occurs(form, slides):     # words there are vocabulary
                leaks.append(f"slides/{path.stem}.md: answer {form!r} of {check.source!r} is shown")
    assert leaks == []


def test_an_answer_in_the_slides_is_found(tmp_path):
    question = [nbformat.v4.new_markdown_cell("### Exercise 3 · A varint"), nbformat.v4.new_code_cell(
        "VARINT = bytes([0x83, 0x01])")]
    solution = nbformat.v4.new_code_cell("unsigned = (VARINT[0] & 0x7F) | (VARINT[1] << 7)\n"
                                         "value = (unsigned >> 1) ^ -(unsigned & 1)", metadata={"tags": ["solution"]})
    nb = nbformat.v4.new_notebook(cells=[*question, solution, nbformat.v4.new_code_cell("lab01.check_zigzag(value)")])
    [(q, s, _, _)] = list(exercises(nb))
    answer = expected_answer(nb, q, s)
    assert answer == [131, -66]
    assert _occurs("-66", "- **zig-zag varint**: `-66` = `83 01`")
    assert "-66" in distinctive_forms(answer) and "131" in distinctive_forms(answer)


# -- 3. no note for instructors ---------------------------------------------------------------------------------------------
_FOR_INSTRUCTORS = re.compile(r"\*Instructors:\*")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_participant_version_carries_no_note_for_instructors(path):
    """Every lab has exercises and so a note for instructors: a markdown cell of its own tagged ``solution``, which
    the participant build leaves out (it was once part of the exercises' introduction, false in the participants'
    copies)."""
    instructor = nbformat.read(path, as_version=4)
    assert any(_FOR_INSTRUCTORS.search(c.source) for c in instructor.cells if c.cell_type == "markdown")
    participant = build.student_version(instructor, keep_outputs=True)
    assert [c.source[:60] for c in participant.cells if _FOR_INSTRUCTORS.search(c.source)] == []
