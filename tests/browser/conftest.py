"""Fixtures of the browser test: one chromium, and JupyterLab servers started by ``make lab``.

Every fixture stops what it started in its teardown, process tree and all, and fails if anything survived.
"""
from __future__ import annotations

import pytest

from tests.browser.browser import Browser, require_browser
from tests.browser.lab_server import REPO, LabServer, makefile_has_target

SCREENSHOTS = REPO / "build" / "browser"


@pytest.fixture(scope="package")
def browser():
    require_browser()
    b = Browser(SCREENSHOTS)
    try:
        yield b
    finally:
        survivors = b.close()
        assert not survivors, f"chromium/chromedriver processes left behind: {survivors}"


def _server(tmp_path_factory, target: str):
    with LabServer(tmp_path_factory.mktemp(f"jupyter-{target}"), target) as server:
        yield server


@pytest.fixture(scope="package")
def instructor_server(browser, tmp_path_factory):
    """The full versions: ``make lab-instructor`` where the Makefile has it, else ``make lab``."""
    yield from _server(tmp_path_factory, "lab-instructor" if makefile_has_target("lab-instructor") else "lab")


@pytest.fixture(scope="package")
def participant_server(tmp_path_factory):
    """``make lab`` when it serves the participant versions (the Makefile then also has ``lab-instructor``)."""
    if not makefile_has_target("lab-instructor"):
        pytest.skip("no participant versions yet: the Makefile has no lab-instructor target (issue 18, part 3)")
    yield from _server(tmp_path_factory, "lab")
