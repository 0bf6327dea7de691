"""What ``make lab`` shows a participant (issue 18, part 3): the participant versions, lab 00 open, no solution.

These run once the Makefile has ``lab-instructor`` (the participant build is merged); before that they skip.
"""
from __future__ import annotations

import json

import pytest

from tests.browser.lab_server import REPO
from tests.browser.browser import JS_STORED_PICTURES, LAB01, stored_pictures_not_shown

LAB00 = "00_tour.ipynb"

#: the current notebook's cells as a participant's JupyterLab holds them: tags and source
JS_CELLS = """
return window.jupyterapp.shell.currentWidget.content.widgets.map(c => ({
  tags: c.model.getMetadata('tags') || [], source: c.model.sharedModel.getSource()}));
"""


def solutions(name: str) -> list[str]:
    """The source of every solution cell of the instructor's version of notebook ``name``."""
    path = REPO / "labs" / name
    if not path.exists():
        return []
    nb = json.loads(path.read_text())
    return ["".join(c["source"]).strip() for c in nb["cells"]
            if "solution" in c.get("metadata", {}).get("tags", []) and "".join(c["source"]).strip()]


def served_notebooks(server) -> list[str]:
    return sorted(item["path"] for item in server.api("contents")["content"] if item["type"] == "notebook")


@pytest.fixture(scope="module")
def participant_lab(participant_server, browser):
    browser.driver.set_window_size(1400, 1000)
    browser.open_lab(participant_server.opening_url())
    browser.wait(lambda: browser.current_path(), 20, "make lab to open a notebook")
    browser.wait(lambda: browser.js("const p = window.jupyterapp.shell.currentWidget;"
                                    "return !!(p && p.context && p.context.isReady);"), 20, "the notebook to load")
    browser.screenshot("participant-start")
    participant_server.remember_processes()
    return participant_server


def test_participant_make_lab_opens_lab00(participant_lab, browser):
    opened = browser.current_path()
    if (REPO / "labs" / LAB00).exists():
        assert opened.endswith(LAB00), f"make lab opened {opened!r}, not lab 00"
    assert opened.endswith(".ipynb")


def test_participant_versions_show_no_solution(participant_lab, browser):
    cells = browser.js(JS_CELLS)
    assert not [c for c in cells if "solution" in c["tags"]], "the opened notebook has solution cells"
    leaks = []
    for path in served_notebooks(participant_lab):
        served = participant_lab.api(f"contents/{path}")["content"]
        text = "\n".join(c["source"] for c in served["cells"])
        tagged = [c for c in served["cells"] if "solution" in c["metadata"].get("tags", [])]
        leaks += [f"{path}: solution cell" for _ in tagged]
        leaks += [f"{path}: {s.splitlines()[0][:60]!r}" for s in solutions(path.rsplit("/", 1)[-1]) if s in text]
    assert not leaks, f"participant versions show solutions: {leaks}"


def test_participant_stored_pictures_render_before_any_cell_runs(participant_lab, browser):
    lab01 = [p for p in served_notebooks(participant_lab) if p.endswith(LAB01)]
    assert lab01, f"make lab serves no {LAB01}"
    browser.open_notebook(lab01[0])
    pictures = browser.wait(lambda: browser.js(JS_STORED_PICTURES), 10, "stored pictures of the participant lab 01")
    browser.screenshot("participant-lab01-fresh")
    assert pictures, f"the participant {LAB01} has no stored picture"
    assert not stored_pictures_not_shown(pictures), f"shown as raw text or 'untrusted': {stored_pictures_not_shown(pictures)}"
