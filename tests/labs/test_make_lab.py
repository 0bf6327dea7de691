"""`make lab` opens the participant versions with the first lab (lab 00 when there is one); `make lab-instructor`
opens labs/. Checked with `make -n` (prints the commands, runs nothing)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _plan(target: str) -> list[str]:
    # not the flags of a `make test` this runs under: a nested make would print its directory around the plan
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = subprocess.run(["make", "--no-print-directory", "-n", target], cwd=ROOT, capture_output=True, text=True,
                         check=True, env=env).stdout
    return out.splitlines()


def _first_lab() -> str:
    names = sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb"))
    return "00_tour.ipynb" if "00_tour.ipynb" in names else names[0]


def test_make_lab_builds_trusts_and_opens_the_participant_versions():
    plan = _plan("lab")
    build = next(i for i, line in enumerate(plan) if "scripts/build_labs.py --participant participant" in line)
    trust = next(i for i, line in enumerate(plan) if "jupyter trust participant/" in line)
    lab = next(i for i, line in enumerate(plan) if "jupyter lab " in line)
    assert build < trust < lab
    assert " ".join(plan[lab].split()).endswith(f"jupyter lab --notebook-dir=participant participant/{_first_lab()}")


def test_make_lab_instructor_opens_labs():
    plan = _plan("lab-instructor")
    assert any("jupyter trust labs/" in line for line in plan)
    assert " ".join(plan[-1].split()).endswith(f"jupyter lab --notebook-dir=labs labs/{_first_lab()}")


def test_make_student_writes_and_trusts_the_participant_versions_that_make_lab_opens():
    plan = _plan("student")
    build = next(i for i, line in enumerate(plan) if "scripts/build_labs.py --participant participant" in line)
    trust = next(i for i, line in enumerate(plan) if "jupyter trust participant/" in line)
    assert build < trust
    assert not any("jupyter lab " in line for line in plan)


def test_make_slides_installs_the_locked_reveal_js_then_builds_every_deck():
    plan = _plan("slides")
    builds = [i for i, line in enumerate(plan) if "scripts/build_slides.py --out build/slides" in line]
    assert builds, plan
    if (ROOT / "node_modules" / ".kafkalab-npm-ci").exists():
        return                          # installed: the plan is the build alone
    npm = next(i for i, line in enumerate(plan) if line.strip().startswith("npm ci"))
    assert npm < builds[0]
