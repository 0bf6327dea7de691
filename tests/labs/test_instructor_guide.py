"""docs/INSTRUCTOR.md stays in step with the course: the README links it, its timing table has a row per lab, and
every `make` target and repository file it names exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "INSTRUCTOR.md"


def _text() -> str:
    return GUIDE.read_text(encoding="utf-8")


def test_readme_links_the_instructor_guide():
    assert "(docs/INSTRUCTOR.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_timing_table_has_one_row_per_lab_of_the_course():
    rows = re.findall(r"^\| (\d\d) ", _text(), re.M)
    assert rows == [f"{n:02d}" for n in range(16)]
    committed = {p.name[:2] for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb")}
    assert committed <= set(rows)


def test_every_make_target_it_names_exists():
    targets = set(re.findall(r"(?:`|^)make ([a-z-]+)", _text(), re.M))   # in the text and in command blocks
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert {"lab", "student", "slides", "lab-instructor"} <= targets
    missing = [t for t in targets if not re.search(rf"^{re.escape(t)}:", makefile, re.M)]
    assert not missing, f"docs/INSTRUCTOR.md names make targets the Makefile lacks: {missing}"


def test_every_repository_path_it_names_exists():
    paths = set(re.findall(r"`((?:labs|slides|scripts|tests|docs|kafkalab)/[\w./-]+)`", _text()))
    expected_later = {"slides/14_real_clients.md", "labs/14_real_clients.ipynb"}   # lab 14 is written elsewhere
    missing = [p for p in sorted(paths - expected_later) if "NN_" not in p and not (ROOT / p).exists()]
    assert not missing, f"docs/INSTRUCTOR.md names files that do not exist: {missing}"
