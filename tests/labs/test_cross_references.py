"""Cross-references between the labs, the decks and the course's guides point at what exists.

What a reference *means* is for a reviewer; what can be checked mechanically is checked here:

* a lab named anywhere ("lab 07", "labs 07-09") exists;
* a section named anywhere ("lab 01, section 3", "lab 05 §7", "section 3 of lab 01", and a bare "section 4" or
  "§4", which means the lab of the file it is in: a lab's source, its deck, its kit module, its row of
  docs/INSTRUCTOR.md's table) is a ``## K · ...`` heading of that lab;
* an exercise named in a lab, its deck or its kit ("Exercise 3", "exercises 1-4") is a ``### Exercise K · ...``
  heading of that lab;
* "Next: lab NN" names the following lab, and a lab named with its title (``lab 02, *Talking across versions*``)
  has that title;
* concept ids are C1-C45, and the guides agree on each lab's concepts: labs/README.md and slides/README.md list
  the same ones, and the lab's "Where this lab sits" table and its deck's "Course concepts" name each of them;
* every deck slides/README.md names exists, and every deck is named there.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_SOURCES = {p.name[:2]: p for p in sorted((ROOT / "labs" / "src").glob("[0-9][0-9]_*.py"))}
DECKS = {p.name[:2]: p for p in sorted((ROOT / "slides").glob("[0-9][0-9]_*.md"))}
CONCEPTS = range(1, 46)

SECTION_HEADING = re.compile(r"^# ## (\d+) · ", re.M)
EXERCISE_HEADING = re.compile(r"^# ### Exercise (\d+) · ", re.M)
TITLE_HEADING = re.compile(r"^# # Lab (\d\d) · (.+)$", re.M)

#: a list or range of numbers, after a plural ("sections 2-5", "sections 2, 3, 5", "sections 5 and 6", "labs 07-09")
_LIST = r"\d{1,2}(?:\s*(?:-|–|,|and|or|to)\s*\d{1,2}\b)*"


def _ref(singular: str) -> str:
    """A reference by a keyword: one number after the singular, a list after the plural."""
    return rf"(?:\b{singular}s\s+{_LIST}|\b{singular}\s+\d{{1,2}}\b)"


_SECTION = r"(?:" + _ref("[Ss]ection") + r"|§\s?\d{1,2}(?:\s*[-–]\s*§?\d{1,2})?)"
LAB_REF = re.compile("(" + _ref("[Ll]ab") + ")")
EXPLICIT_SECTION = re.compile(r"\b[Ll]ab\s+(\d\d)(?:'s)?,?\s+(" + _SECTION + ")"
                              r"|(" + _SECTION + r")\s+of\s+lab\s+(\d\d)")
BARE_SECTION = re.compile(r"(?<!RFC \d\d\d\d )(" + _SECTION + ")")
EXERCISE_REF = re.compile("(" + _ref("[Ee]xercise") + r")(?!\s+of\s+lab)")
EXERCISE_OF_LAB = re.compile("(" + _ref("[Ee]xercise") + r")\s+of\s+lab\s+(\d\d)")
NEXT_LAB = re.compile(r"\bNext:?\**:?\s+\**lab\s+(\d\d)", re.I)
TITLED_LAB = re.compile(r"\blab (\d\d),? \*([^*]+)\*", re.I)
CONCEPT = re.compile(r"\bC(\d{1,2})\b(?!\.\d)")


def numbers(text: str) -> set[int]:
    """Every number a reference names, ranges expanded: "2-5" is 2, 3, 4, 5; "§1-§6" is 1 to 6."""
    text = re.sub(r"§|[Ss]ections?|[Ee]xercises?|[Ll]abs?", "", text)
    out: set[int] = set()
    for part in re.split(r"\s*(?:,|and|or)\s*", text):
        ends = [int(n) for n in re.findall(r"\d+", part)]
        if len(ends) == 2 and re.search(r"-|–|to", part):
            out.update(range(ends[0], ends[1] + 1))
        else:
            out.update(ends)
    return out


def sections(lab: str) -> set[int]:
    return {int(n) for n in SECTION_HEADING.findall(LAB_SOURCES[lab].read_text(encoding="utf-8"))}


def exercises(lab: str) -> set[int]:
    return {int(n) for n in EXERCISE_HEADING.findall(LAB_SOURCES[lab].read_text(encoding="utf-8"))}


def title(lab: str) -> str:
    return TITLE_HEADING.search(LAB_SOURCES[lab].read_text(encoding="utf-8")).group(2)


def _texts():
    """(file, its own lab or None, text, its first line's index) for every place that refers to labs."""
    for lab, path in LAB_SOURCES.items():
        yield path, lab, path.read_text(encoding="utf-8"), 0
    for lab, path in DECKS.items():
        yield path, lab, path.read_text(encoding="utf-8"), 0
    for path in sorted((ROOT / "kafkalab" / "labs").rglob("*.py")):
        m = re.search(r"lab(\d\d)", str(path.relative_to(ROOT / "kafkalab" / "labs")))
        yield path, m.group(1) if m else None, path.read_text(encoding="utf-8"), 0
    for path in (ROOT / "labs" / "README.md", ROOT / "slides" / "README.md"):
        yield path, None, path.read_text(encoding="utf-8"), 0
    # docs/INSTRUCTOR.md: a row of the timings table belongs to its lab ("| 04 Metadata and routing | ... §7 ...")
    for i, line in enumerate((ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8").splitlines()):
        m = re.match(r"\| (\d\d) ", line)
        yield ROOT / "docs" / "INSTRUCTOR.md", m.group(1) if m else None, line, i


def _where(path: Path, text: str, pos: int, first_line: int = 0) -> str:
    line = text.count("\n", 0, pos)
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{name}:{first_line + line + 1}: {text.splitlines()[line].strip()[:120] if text else ''}"


def _labs_named(own, text):
    for m in LAB_REF.finditer(text):
        for n in sorted(numbers(m.group(1))):
            if f"{n:02d}" not in LAB_SOURCES:
                yield m.start(), f"there is no lab {n:02d}"


def _explicit_section(m):
    return (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))


def _sections_named(own, text):
    explicit_spans = []
    for m in EXPLICIT_SECTION.finditer(text):
        lab, nums = _explicit_section(m)
        explicit_spans.append(m.span())
        for n in sorted(numbers(nums) - sections(lab)) if lab in LAB_SOURCES else ():
            yield m.start(), f"lab {lab} has no section {n}"
    if own not in LAB_SOURCES:
        return
    for m in BARE_SECTION.finditer(text):
        if not any(a <= m.start() < b for a, b in explicit_spans):
            for n in sorted(numbers(m.group(1)) - sections(own)):
                yield m.start(), f"lab {own} has no section {n}"


def _exercises_named(own, text):
    for m in EXERCISE_OF_LAB.finditer(text):
        for n in sorted(numbers(m.group(1)) - exercises(m.group(2))) if m.group(2) in LAB_SOURCES else ():
            yield m.start(), f"lab {m.group(2)} has no exercise {n}"
    for m in EXERCISE_REF.finditer(text) if own in LAB_SOURCES else ():
        for n in sorted(numbers(m.group(1)) - exercises(own)):
            yield m.start(), f"lab {own} has no exercise {n}"


def _next_and_titles(own, text):
    for m in NEXT_LAB.finditer(text) if own in LAB_SOURCES else ():
        if int(m.group(1)) != int(own) + 1:
            yield m.start(), f"the lab after {own} is {int(own) + 1:02d}"
    for m in TITLED_LAB.finditer(text):
        if m.group(1) in LAB_SOURCES and not _same_title(m.group(2), title(m.group(1))):
            yield m.start(), f"lab {m.group(1)} is {title(m.group(1))!r}"


def _concept_ids(own, text):
    for m in CONCEPT.finditer(text):
        if int(m.group(1)) not in CONCEPTS:
            yield m.start(), "the course's concepts are C1-C45"


CHECKS = (_labs_named, _sections_named, _exercises_named, _next_and_titles, _concept_ids)


def _problems():
    return [f"{_where(path, text, pos, first_line)} -- {problem}"
            for path, own, text, first_line in _texts() for check in CHECKS for pos, problem in check(own, text)]


def _same_title(named: str, actual: str) -> bool:
    """A lab's title as another place names it: a prefix of the heading's, articles and case aside."""
    def words(s):
        return [w for w in re.findall(r"[\w.=-]+", s.lower()) if w not in ("the", "a", "an")]
    named_words = words(named)
    return words(actual)[:len(named_words)] == named_words


def test_every_reference_to_a_lab_a_section_or_an_exercise_exists():
    assert _problems() == []


# -- the checker itself ---------------------------------------------------------------------------------------------------
def test_numbers_expands_lists_and_ranges():
    assert numbers("2-5") == {2, 3, 4, 5}
    assert numbers("§1-§6") == set(range(1, 7))
    assert numbers("2, 3, 5") == {2, 3, 5}
    assert numbers("5 and 6") == {5, 6}
    assert numbers("4 to 6") == {4, 5, 6}
    assert numbers("sections 2, 3, 5") == {2, 3, 5}


def test_a_singular_keyword_takes_one_number():
    assert BARE_SECTION.search("9 from section 3, 20 now").group(1) == "section 3"
    assert BARE_SECTION.search("the sections 2, 3, 5 here").group(1) == "sections 2, 3, 5"


@pytest.mark.parametrize("text, found", [
    ("as in lab 01, section 3", ("01", {3})),
    ("see lab 05 §7", ("05", {7})),
    ("section 4 of lab 01", ("01", {4})),
])
def test_explicit_section_references_are_recognised(text, found):
    lab, nums = _explicit_section(EXPLICIT_SECTION.search(text))
    assert (lab, numbers(nums)) == found


def test_a_wrong_section_reference_is_found(monkeypatch, tmp_path):
    src = tmp_path / "03_x.py"
    src.write_text("# # Lab 03 · X\n# ## 1 · One\n# ## 2 · Two\n# see section 2, and lab 03 §5; Exercise 1\n"
                   "# **Next:** lab 05, *Y*\n# C46\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "LAB_SOURCES", {"03": src})
    monkeypatch.setattr(sys.modules[__name__], "DECKS", {})
    found = " ".join(p.split(" -- ")[1] for p in _problems() if "03_x.py" in p)
    assert "lab 03 has no section 5" in found
    assert "has no section 2" not in found
    assert "lab 03 has no exercise 1" in found
    assert "the lab after 03 is 04" in found
    assert "there is no lab 05" in found
    assert "C1-C45" in found


# -- the guides ---------------------------------------------------------------------------------------------------------
def _readme_rows(path: Path) -> dict[str, set[int]]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `(\d\d)_[\w]+\.(?:ipynb|md)` \|(.*)\|?$", line)
        if m:
            rows[m.group(1)] = {int(c) for c in CONCEPT.findall(m.group(2))}
    return rows


def test_every_deck_slides_readme_names_exists_and_every_deck_is_named():
    named = set(re.findall(r"`(\d\d_\w+\.md)`", (ROOT / "slides" / "README.md").read_text(encoding="utf-8")))
    assert named == {p.name for p in DECKS.values()}


def test_every_notebook_labs_readme_names_exists():
    named = set(re.findall(r"`(\d\d_\w+)\.ipynb`", (ROOT / "labs" / "README.md").read_text(encoding="utf-8")))
    assert named == {p.stem for p in LAB_SOURCES.values()}
    assert all((ROOT / "labs" / f"{stem}.ipynb").exists() for stem in named)


@pytest.mark.parametrize("lab", sorted(LAB_SOURCES))
def test_the_section_column_of_where_this_lab_sits_names_the_labs_sections(lab):
    """The "Where this lab sits" table says in which sections each concept is shown."""
    source = LAB_SOURCES[lab].read_text(encoding="utf-8")
    table = re.search(r"^# \| course concept \|.*\| section \|\n(?:# \|.*\n)+", source, re.M)
    assert table, f"{LAB_SOURCES[lab].name} has no 'Where this lab sits' table with a section column"
    wrong = {}
    for row in table.group(0).splitlines()[2:]:
        cell = row.rstrip(" |").rsplit("|", 1)[-1].strip()
        if cell != "all" and numbers(cell) - sections(lab):
            wrong[row[:60]] = sorted(numbers(cell) - sections(lab))
    assert wrong == {}


def test_the_instructors_timings_are_the_decks():
    """docs/INSTRUCTOR.md's class time of a lab is the one its deck's notes give ("About 65 minutes with ...")."""
    differ = {}
    for line in (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (\d\d) [^|]+\| ([^|]*\d+ min[^|]*)\|", line)
        if m:
            deck = re.search(r"(?:About|Budget: about) (\d+) minutes", DECKS[m.group(1)].read_text(encoding="utf-8"))
            if not deck or int(deck.group(1)) not in {int(n) for n in re.findall(r"\d+", m.group(2))}:
                differ[m.group(1)] = (m.group(2).strip(), deck and deck.group(0))
    assert differ == {}


def test_the_two_readmes_give_each_lab_the_same_concepts():
    labs = _readme_rows(ROOT / "labs" / "README.md")
    decks = _readme_rows(ROOT / "slides" / "README.md")
    assert set(labs) == set(decks) == set(LAB_SOURCES)
    assert {lab: sorted(c) for lab, c in labs.items()} == {lab: sorted(c) for lab, c in decks.items()}


@pytest.mark.parametrize("lab", sorted(LAB_SOURCES))
def test_the_lab_and_its_deck_name_the_concepts_the_readme_gives_it(lab):
    concepts = _readme_rows(ROOT / "labs" / "README.md")[lab]
    source = LAB_SOURCES[lab].read_text(encoding="utf-8")
    table = re.search(r"^# \| course concept \|.*\n(?:# \|.*\n)+", source, re.M)
    assert table, f"{LAB_SOURCES[lab].name} has no 'Where this lab sits' table"
    in_table = {int(c) for c in re.findall(r"\*\*C(\d{1,2})\*\*", table.group(0))}
    deck = DECKS[lab].read_text(encoding="utf-8")
    line = re.search(r"^Course concepts:(.*?)(?:\n\n|\nNote:)", deck, re.S | re.M)
    assert line, f"{DECKS[lab].name} has no 'Course concepts' line"
    in_deck = {int(c) for c in CONCEPT.findall(line.group(1))}
    assert (sorted(concepts - in_table), sorted(concepts - in_deck)) == ([], [])


def test_lab_00s_course_map_gives_each_lab_the_concepts_labs_readme_gives_it():
    from kafkalab.labs.lab00 import COURSE_MAP
    readme = _readme_rows(ROOT / "labs" / "README.md")
    course_map = {row[0][:2]: {n for part in row[2].split(",") for n in numbers(part.replace("C", ""))}
                  for row in COURSE_MAP}
    assert {lab: course_map[lab] for lab in readme if lab in course_map} == \
        {lab: ids for lab, ids in readme.items() if lab in course_map}
