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
    # (jupytext serves markdown files as notebooks too: only .ipynb files are the labs)
    return sorted(item["path"] for item in server.api("contents")["content"] if item["path"].endswith(".ipynb"))


@pytest.fixture(scope="module")
def participant_lab(participant_server, browser):
    """``make lab`` opened in the browser; ``opened`` is the notebook it shows, if any (after a few seconds)."""
    browser.driver.set_window_size(1400, 1000)
    browser.open_lab(participant_server.opening_url())
    try:
        browser.wait(lambda: browser.js("const p = window.jupyterapp.shell.currentWidget;"
                                        "return !!(p && p.context && p.context.isReady);"), 10, "a notebook to open")
        opened = browser.current_path()
    except AssertionError:
        opened = None
    browser.screenshot("participant-start")
    participant_server.remember_processes()
    return {"server": participant_server, "opened": opened}


def test_participant_make_lab_opens_lab00(participant_lab):
    opened = participant_lab["opened"]
    assert opened is not None, "make lab opens no notebook"
    if (REPO / "labs" / LAB00).exists():
        assert opened.endswith(LAB00), f"make lab opened {opened!r}, not lab 00"


def test_participant_versions_show_no_solution(participant_lab, browser):
    if participant_lab["opened"]:
        cells = browser.js(JS_CELLS)
        assert not [c for c in cells if "solution" in c["tags"]], "the opened notebook has solution cells"
    server, leaks = participant_lab["server"], []
    for path in served_notebooks(server):
        served = server.api(f"contents/{path}")["content"]
        text = "\n".join(c["source"] for c in served["cells"])
        tagged = [c for c in served["cells"] if "solution" in c["metadata"].get("tags", [])]
        leaks += [f"{path}: solution cell" for _ in tagged]
        leaks += [f"{path}: {s.splitlines()[0][:60]!r}" for s in solutions(path.rsplit("/", 1)[-1]) if s in text]
    assert not leaks, f"participant versions show solutions: {leaks}"


def test_participant_stored_pictures_render_before_any_cell_runs(participant_lab, browser):
    lab01 = [p for p in served_notebooks(participant_lab["server"]) if p.endswith(LAB01)]
    assert lab01, f"make lab serves no {LAB01}"
    browser.open_notebook(lab01[0])
    pictures = browser.js(JS_STORED_PICTURES)
    browser.screenshot("participant-lab01-fresh")
    assert pictures, f"the participant {LAB01} has no stored picture"
    assert not stored_pictures_not_shown(pictures), f"shown as raw text or 'untrusted': {stored_pictures_not_shown(pictures)}"
