"""`make slides` presents offline: every deck built by scripts/build_slides.py, opened from file:// in chromium with
no host name resolvable, advances slide by slide, and the page asked for nothing but local files.

Chromium runs with ``--host-resolver-rules=MAP * ~NOTFOUND`` (every name fails to resolve, as on a machine
without a network), and its DevTools log lists every request a page made, failed ones included: any address that
is not ``file:``/``data:`` fails the test, and so does any console error (a missing local file).
"""
from __future__ import annotations

import importlib.util
import os
import re
import time

import pytest

from tests.browser.browser import Browser, require_browser
from tests.browser.lab_server import REPO

_spec = importlib.util.spec_from_file_location("build_slides", REPO / "scripts" / "build_slides.py")
build_slides = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_slides)

SCREENSHOTS = REPO / "build" / "browser"   # beside the other browser tests' screenshots
OFFLINE_FLAGS = ("--host-resolver-rules=MAP * ~NOTFOUND",)
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome:")   # chrome: the browser's own new-tab page
MARKDOWN_DECK = "01_the_wire"
NOTEBOOK_DECK = "01_the_wire"
#: the decks that show their lab's own diagrams (slides/img, exported by scripts/export_figures.py)
FIGURE_DECKS = ("00_tour", "01_the_wire", "02_api_versions", "03_correlation_ids", "04_metadata_routing",
                "05_producing", "06_the_log", "07_fetching_and_purgatory", "08_replication", "09_controller",
                "10_consumer_groups", "11_transactions", "12_security", "13_breaking_it", "14_real_clients",
                "15_spark_streaming")

#: every picture of a deck (each slide's, shown or not) and whether the browser could draw it
JS_PICTURES = """
return [...document.querySelectorAll('.reveal .slides img')].map(i => ({
    src: i.getAttribute('src'), complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}));
"""
JS_FIRST_PICTURE_SLIDE = "return Reveal.getSlides().findIndex(s => s.querySelector('img'));"
JS_READY = "return typeof Reveal !== 'undefined' && Reveal.isReady && Reveal.isReady();"
#: where the presentation is and what the audience sees of the current slide (speaker notes are hidden asides)
JS_STATE = """
const slide = Reveal.getCurrentSlide();
const visible = slide.cloneNode(true);
visible.querySelectorAll('aside.notes, section:not(.present)').forEach(e => e.remove());
const box = slide.getBoundingClientRect();
return {h: Reveal.getIndices().h, v: Reveal.getIndices().v, total: Reveal.getTotalSlides(),
        last: Reveal.isLastSlide(), text: visible.textContent.trim().slice(0, 300),
        shown: box.width > 0 && box.height > 0 && getComputedStyle(slide).display !== 'none',
        notes: [...slide.querySelectorAll(':scope > aside.notes')].map(a => a.textContent.trim().slice(0, 80)),
        pictures: slide.querySelectorAll('svg, .kl-frame, img').length,
        reachable: slide.scrollHeight <= slide.clientHeight + 1 ||
                   ['auto', 'scroll'].includes(getComputedStyle(slide).overflowY)};
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every deck, as `make slides` builds it (the Markdown decks and the notebooks' slides)."""
    require_browser()
    if not (build_slides.REVEAL / "package.json").is_file():
        message = "reveal.js is not installed: run `npm ci` in the repository root (make slides does)"
        if os.environ.get("KAFKALAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message} (KAFKALAB_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    out = tmp_path_factory.mktemp("slides")
    pages = build_slides.build(out, [])
    return {"out": out, "pages": pages}


@pytest.fixture(scope="module")
def offline_browser():
    require_browser()
    b = Browser(SCREENSHOTS, extra_flags=OFFLINE_FLAGS, network_log=True)
    try:
        yield b
    finally:
        survivors = b.close()
        assert not survivors, f"chromium/chromedriver processes left behind: {survivors}"


def _open(browser: Browser, page) -> dict:
    browser.requested_urls()                          # forget what earlier pages asked for
    browser.driver.get(page.as_uri())
    browser.wait(lambda: browser.js(JS_READY), 20, f"reveal.js to start in {page.name}")
    return browser.js(JS_STATE)


def _next(browser: Browser, before: dict) -> dict:
    """Press Space (reveal.js's "next": through a notebook's sub-slides too, as a presenter's clicker does) and wait
    for the next slide."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser.driver).send_keys(Keys.SPACE).perform()
    return browser.wait(lambda: (lambda s: s if (s["h"], s["v"]) != (before["h"], before["v"]) else None)(
        browser.js(JS_STATE)), 10, f"the slide after {before['h']}")


def _screenshot(browser: Browser, name: str) -> None:
    time.sleep(1)                                     # the slide transition's end, for the picture only
    browser.screenshot(name)


def _assert_stayed_local(browser: Browser, page) -> None:
    requests = browser.requested_urls()
    remote = [u for u in requests if not u.startswith(LOCAL_SCHEMES)]
    assert not remote, f"{page.name} asked the network for {remote}"
    assert any(u.endswith("/reveal.js/dist/reveal.js") for u in requests), f"{page.name} did not load reveal.js"
    errors = browser.console_errors()
    assert not errors, f"{page.name}: console errors {errors}"


def _slides_in(markdown: str) -> list[str]:
    return [s for s in re.split(r"(?m)^---$", markdown.replace("\r\n", "\n")) if s.strip()]


def test_every_deck_and_notebook_is_built(built):
    names = {p.name for p in built["pages"]}
    decks = sorted(p.stem for p in (REPO / "slides").glob("[0-9][0-9]_*.md"))
    labs = sorted(p.stem for p in (REPO / "labs").glob("[0-9][0-9]_*.ipynb"))
    assert {f"{d}.html" for d in decks} <= names
    assert {f"{n}.slides.html" for n in labs} <= names
    assert (built["out"] / "reveal.js" / "dist" / "reveal.js").is_file()


def test_markdown_deck_advances_slide_by_slide_offline(built, offline_browser):
    page = built["out"] / f"{MARKDOWN_DECK}.html"
    markdown = (REPO / "slides" / f"{MARKDOWN_DECK}.md").read_text(encoding="utf-8")
    state = _open(offline_browser, page)
    expected = _slides_in(markdown)
    assert state["total"] == len(expected), f"{state['total']} slides shown, the deck has {len(expected)}"
    _screenshot(offline_browser, "slides-offline-markdown-first")
    seen = [state]
    while not state["last"]:
        state = _next(offline_browser, state)
        assert state["h"] == seen[-1]["h"] + 1 and state["shown"] and state["text"], state
        assert state["text"] != seen[-1]["text"]
        seen.append(state)
    _screenshot(offline_browser, "slides-offline-markdown-last")
    assert len(seen) == len(expected)
    # the speaker's notes (after "Note:") are notes, not slide text
    with_notes = [s for s in seen if s["notes"]]
    assert with_notes, "no slide carries speaker notes"
    assert not [s for s in seen if "Note:" in s["text"]]
    _assert_stayed_local(offline_browser, page)


def test_notebook_slides_advance_and_show_stored_pictures_offline(built, offline_browser):
    page = built["out"] / f"{NOTEBOOK_DECK}.slides.html"
    state = _open(offline_browser, page)
    assert state["total"] > 5 and state["shown"] and state["text"], state
    pictures = None
    for _ in range(state["total"] - 1):
        state = _next(offline_browser, state)
        assert state["shown"], state
        assert state["reachable"], f"slide {state['h']}/{state['v']} runs off the screen and does not scroll"
        if state["pictures"] and pictures is None:
            pictures = state
            _screenshot(offline_browser, "slides-offline-notebook-picture")
        if state["last"]:
            break
    assert pictures is not None, "no slide of the notebook shows a stored picture"
    _assert_stayed_local(offline_browser, page)


def test_index_links_every_page(built, offline_browser):
    page = built["out"] / "index.html"
    offline_browser.requested_urls()
    offline_browser.driver.get(page.as_uri())
    links = offline_browser.js("return [...document.querySelectorAll('a')].map(a => a.getAttribute('href'));")
    assert sorted(links) == sorted(p.name for p in built["pages"][1:])
    assert not [u for u in offline_browser.requested_urls() if not u.startswith(LOCAL_SCHEMES)]


def test_decks_show_their_labs_pictures_offline(built, offline_browser):
    """Each picture of a deck (slides/img, the lab's own) loads from the built folder and has a size: naturalWidth
    is 0 for a file that is missing or that the browser cannot draw (an SVG without its namespace, say)."""
    for stem in FIGURE_DECKS:
        deck = REPO / "slides" / f"{stem}.md"
        expected = sorted(f"img/{p.name}" for p in build_slides.deck_pictures(deck.read_text(encoding="utf-8"), deck))
        assert len(expected) >= 2, f"{deck.name} shows {expected}"
        page = built["out"] / f"{stem}.html"
        _open(offline_browser, page)
        pictures = offline_browser.wait(lambda: (lambda ps: ps if ps and all(p["complete"] for p in ps) else None)(
            offline_browser.js(JS_PICTURES)), 10, f"the pictures of {page.name} to load")
        assert sorted(p["src"] for p in pictures) == expected
        assert not [p for p in pictures if p["width"] <= 0 or p["height"] <= 0], f"{page.name}: {pictures}"
        if stem == "09_controller":
            offline_browser.js(f"Reveal.slide({offline_browser.js(JS_FIRST_PICTURE_SLIDE)});")
            _screenshot(offline_browser, "slides-offline-deck-picture")
        _assert_stayed_local(offline_browser, page)
