"""scripts/build_slides.py without a browser: what counts as a network fetch, the decks' pictures, the page that
carries a deck, reveal.js missing, and slides/README.md naming every deck. (The built decks presented offline in
chromium: tests/browser/test_slides_offline.py.)"""
from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
build_slides = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_slides)


@pytest.mark.parametrize("page, address", [
    ('<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"></script>',
     "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"),
    ('<link rel="stylesheet" href="//unpkg.com/reveal.js@4.0.2/dist/reveal.css">', "//unpkg.com/reveal.js@4.0.2/dist/reveal.css"),
    ("<img alt='x' src='http://example.com/a.png'>", "http://example.com/a.png"),
    ("@import url(https://fonts.googleapis.com/css?family=Lato);", "https://fonts.googleapis.com/css?family=Lato"),
    ("import mermaid from 'https://cdn.example/mermaid.esm.min.mjs';", "https://cdn.example/mermaid.esm.min.mjs"),
])
def test_a_fetch_from_another_machine_is_found(page, address):
    assert build_slides.remote_references(page) == [address]


def test_links_and_local_files_are_not_fetches():
    page = ('<a href="https://kafka.apache.org/documentation/">docs</a><script src="reveal.js/dist/reveal.js"></script>'
            '<link href="reveal.js/dist/reveal.css" rel="stylesheet"><img src="data:image/png;base64,AAAA">'
            '<style>.x { background: url(fonts/a.woff); }</style>')
    assert build_slides.remote_references(page) == []


def test_a_page_that_would_fetch_is_not_written(tmp_path):
    target = tmp_path / "deck.html"
    with pytest.raises(build_slides.BuildError, match="cdn.example"):
        build_slides._write_page(target, '<script src="https://cdn.example/x.js"></script>')
    assert not target.exists()


def test_deck_page_carries_the_markdown_exactly():
    markdown = "# T\n\n<!-- .slide: data-x -->\n`a < b && c`\n\n---\n\n</textarea> &amp;\n\nNote:\nsay it\n"
    page = build_slides.deck_page(markdown, "T")
    carried = re.search(r"<textarea data-template>\n(.*)\n</textarea>", page, re.S).group(1)
    assert html.unescape(carried) == markdown.strip("\n")
    assert page.count("</textarea>") == 1
    assert 'data-separator="^---$"' in page and 'data-separator-notes="^Note:"' in page
    assert build_slides.remote_references(page) == []


def test_deck_pictures_must_be_files_under_slides(tmp_path):
    slides = tmp_path / "slides"
    (slides / "img").mkdir(parents=True)
    (slides / "img" / "isr.svg").write_text("<svg/>")
    deck = slides / "08_replication.md"
    assert build_slides.deck_pictures("![ISR](img/isr.svg)", deck) == [(slides / "img" / "isr.svg").resolve()]
    with pytest.raises(build_slides.BuildError, match="network"):
        build_slides.deck_pictures('<img src="https://example.com/isr.svg">', deck)
    with pytest.raises(build_slides.BuildError, match="not a file under slides"):
        build_slides.deck_pictures("![ISR](../labs/isr.svg)", deck)
    with pytest.raises(build_slides.BuildError, match="not a file under slides"):
        build_slides.deck_pictures("![ISR](img/missing.svg)", deck)


def test_a_deck_picture_is_copied_beside_the_page(tmp_path, monkeypatch):
    slides = tmp_path / "slides"
    (slides / "img").mkdir(parents=True)
    (slides / "img" / "isr.svg").write_text("<svg/>")
    deck = slides / "08_replication.md"
    deck.write_text("# Lab 08\n\n![ISR](img/isr.svg)\n")
    out = tmp_path / "out"
    page = build_slides.build_deck(deck, out)
    assert page == out / "08_replication.html"
    assert (out / "img" / "isr.svg").read_text() == "<svg/>"
    assert "<title>Lab 08</title>" in page.read_text()


def test_without_reveal_js_the_build_says_to_run_npm_ci(tmp_path):
    with pytest.raises(build_slides.BuildError, match="npm ci"):
        build_slides.copy_reveal(tmp_path / "out", reveal=tmp_path / "node_modules" / "reveal.js")


def test_reveal_js_is_pinned_in_package_json_and_the_lock():
    import json

    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    pinned = package["dependencies"]["reveal.js"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"reveal.js {pinned!r} is not an exact version"
    assert lock["packages"]["node_modules/reveal.js"]["version"] == pinned
    assert lock["packages"]["node_modules/reveal.js"]["integrity"].startswith("sha512-")


# -- slides/README.md ---------------------------------------------------------------------------------------------------
def _listed_decks() -> list[str]:
    return re.findall(r"^\| `(\d\d_\w+\.md)` \|", (ROOT / "slides" / "README.md").read_text(encoding="utf-8"), re.M)


def test_slides_readme_lists_sixteen_decks_one_per_lab():
    listed = _listed_decks()
    assert [name[:2] for name in listed] == [f"{n:02d}" for n in range(16)], listed


def test_every_deck_is_listed_in_the_slides_readme():
    decks = sorted(p.name for p in (ROOT / "slides").glob("[0-9][0-9]_*.md"))
    assert set(decks) <= set(_listed_decks())


def test_notebook_slides_are_the_participant_version(tmp_path):
    """The class sees the notebook slides: answer cells (placeholders), never a solution cell."""
    lab = ROOT / "labs" / "01_the_wire.ipynb"
    page = build_slides.build_notebook(lab, tmp_path, build_slides.notebook_exporter(), build_slides._build_labs())
    text = page.read_text(encoding="utf-8")
    assert "celltag_answer" in text and "Your answer" in text
    assert "celltag_solution" not in text
    assert 'src="reveal.js/dist/reveal.js"' in text and build_slides.remote_references(text) == []
