"""Build every deck for presenting offline: slides/NN_*.md and labs/NN_*.ipynb -> build/slides/ (`make slides`).

    .venv/bin/python scripts/build_slides.py                  # every deck into build/slides/
    .venv/bin/python scripts/build_slides.py --out DIR 01 13  # only decks whose name starts with 01 or 13

What it writes, all of it readable from ``file://`` with no network (open ``build/slides/index.html``):

* ``reveal.js/``: the reveal.js that ``npm ci`` installed from package-lock.json (``dist/``, ``plugin/``, its
  licence), copied so that the folder can be carried to a classroom machine as it is;
* ``NN_name.html`` for each Markdown deck ``slides/NN_name.md``: reveal.js's Markdown plugin reads the deck from
  the page itself (a ``<textarea data-template>``; an external ``data-markdown`` file would need a web server),
  with the separators slides/README.md describes (``---`` between slides, ``Note:`` opens the speaker's notes,
  shown by pressing S). A picture a deck shows must be a file under ``slides/`` (copied beside the HTML); a
  remote one stops the build;
* ``NN_name.slides.html`` for each notebook ``labs/NN_name.ipynb``: its participant version (no solution, no
  check's answer: the class sees the slides), stored outputs included, converted by nbconvert's reveal exporter
  with the template ``scripts/reveal_offline/`` (no CDN: no jQuery, RequireJS, Mermaid or MathJax, reveal.js from
  the relative ``--reveal-prefix`` ``reveal.js``);
* ``index.html``: one row per lab, linking both.

Every page written is scanned for a reference that a browser would fetch from another machine (a script, style
sheet, image, font or module import with an ``http(s)://`` or ``//`` address); one stops the build, naming it.
The browser test (tests/browser/test_slides_offline.py) opens the result with every host name unresolvable.
"""
from __future__ import annotations

import argparse
import html
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "slides"
LABS = ROOT / "labs"
REVEAL = ROOT / "node_modules" / "reveal.js"
TEMPLATE_BASE = Path(__file__).resolve().parent
TEMPLATE = "reveal_offline"
REVEAL_PREFIX = "reveal.js"
THEME = "white"   # its fonts ship with reveal.js; "simple" (nbconvert's default) imports Google Fonts
DECK_NAME = re.compile(r"^\d\d_\w+$")


class BuildError(Exception):
    pass


# -- what a page would fetch -------------------------------------------------------------------------------------------
_REMOTE = r"""(?:[a-z][a-z0-9+.-]*:)?//"""
_FETCHES = [
    re.compile(rf"""<(?:script|img|iframe|audio|video|source|embed|input|track)\b[^>]*?\bsrc(?:set)?\s*=\s*["']?\s*({_REMOTE}[^"'\s>]*)""",
               re.IGNORECASE),
    re.compile(rf"""<link\b[^>]*?\bhref\s*=\s*["']?\s*({_REMOTE}[^"'\s>]*)""", re.IGNORECASE),
    re.compile(rf"""<object\b[^>]*?\bdata\s*=\s*["']?\s*({_REMOTE}[^"'\s>]*)""", re.IGNORECASE),
    re.compile(rf"""url\(\s*["']?\s*({_REMOTE}[^"')\s]*)""", re.IGNORECASE),
    re.compile(rf"""@import\s+["']({_REMOTE}[^"']*)""", re.IGNORECASE),
    re.compile(rf"""\bimport\b[^;'"]*?\bfrom\s*["']({_REMOTE}[^"']*)""", re.IGNORECASE),
]
#: a picture in Markdown, ![alt](target "title"), and an HTML src attribute inside a deck
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
_HTML_SRC = re.compile(r"""\bsrc\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def remote_references(text: str) -> list[str]:
    """Addresses on another machine that a browser showing ``text`` (HTML or CSS) would fetch."""
    found = []
    for pattern in _FETCHES:
        found += [m.group(1) for m in pattern.finditer(text)]
    return sorted(set(found))


def _is_remote(target: str) -> bool:
    return re.match(_REMOTE, target, re.IGNORECASE) is not None and not target.lower().startswith("data:")


# -- reveal.js ---------------------------------------------------------------------------------------------------------
def copy_reveal(out: Path, reveal: Path = REVEAL) -> str:
    """reveal.js's ``dist/`` and ``plugin/`` (no source maps) and licence into ``out/reveal.js``; its version."""
    manifest = reveal / "package.json"
    if not manifest.is_file():
        raise BuildError(f"reveal.js is not installed in {reveal.parent}: run `npm ci` in {ROOT} once (it installs "
                         "the version package-lock.json pins), then build again")
    version = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    target = out / REVEAL_PREFIX
    if target.exists():
        shutil.rmtree(target)
    for part in ("dist", "plugin"):
        shutil.copytree(reveal / part, target / part, ignore=shutil.ignore_patterns("*.map"))
    shutil.copy2(reveal / "LICENSE", target / "LICENSE")
    return version


# -- Markdown decks ----------------------------------------------------------------------------------------------------
DECK_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{prefix}/dist/reset.css">
<link rel="stylesheet" href="{prefix}/dist/reveal.css">
<link rel="stylesheet" href="{prefix}/dist/theme/{theme}.css">
<link rel="stylesheet" href="{prefix}/plugin/highlight/monokai.css">
<style>
.reveal {{ font-size: 30px; }}
.reveal pre {{ width: 100%; font-size: 0.55em; }}
.reveal table {{ font-size: 0.7em; }}
.reveal ul, .reveal ol {{ display: block; }}
.reveal section img {{ max-width: 100%; max-height: 560px; margin: 0.3em auto; }}
.reveal section.two-pictures img {{ max-height: 290px; }}
</style>
</head>
<body>
<div class="reveal">
<div class="slides">
<section data-markdown data-separator="^---$" data-separator-notes="^Note:">
<textarea data-template>
{markdown}
</textarea>
</section>
</div>
</div>
<script src="{prefix}/dist/reveal.js"></script>
<script src="{prefix}/plugin/notes/notes.js"></script>
<script src="{prefix}/plugin/markdown/markdown.js"></script>
<script src="{prefix}/plugin/highlight/highlight.js"></script>
<script>
Reveal.initialize({{
  hash: true,
  slideNumber: "c/t",
  width: 1200,
  height: 800,
  plugins: [RevealMarkdown, RevealHighlight, RevealNotes]
}});
</script>
</body>
</html>
"""


def deck_title(markdown: str, fallback: str) -> str:
    line = next((s for s in markdown.splitlines() if s.startswith("# ")), "")
    return line[2:].strip() or fallback


def deck_pictures(markdown: str, deck: Path) -> list[Path]:
    """The local files a deck shows (relative to ``slides/``); a remote or missing one is a BuildError."""
    files = []
    for target in [m.group(1) for m in _MD_IMAGE.finditer(markdown)] + [m.group(1) for m in _HTML_SRC.finditer(markdown)]:
        if target.startswith("data:"):
            continue
        if _is_remote(target):
            raise BuildError(f"{deck.name}: shows {target}, which is fetched from a network: put the file under "
                             "slides/ and point at it relatively")
        path = (deck.parent / target.split("#", 1)[0].split("?", 1)[0]).resolve()
        if not path.is_relative_to(deck.parent.resolve()) or not path.is_file():
            raise BuildError(f"{deck.name}: shows {target}, which is not a file under slides/")
        files.append(path)
    return files


def deck_page(markdown: str, title: str) -> str:
    """A reveal.js page that carries ``markdown`` in itself (escaped: the textarea gives back the exact text)."""
    text = markdown.replace("\r\n", "\n").strip("\n")
    return DECK_PAGE.format(title=html.escape(title), prefix=REVEAL_PREFIX, theme=THEME,
                            markdown=html.escape(text, quote=False))


def build_deck(deck: Path, out: Path) -> Path:
    markdown = deck.read_text(encoding="utf-8")
    for picture in deck_pictures(markdown, deck):
        dest = out / picture.relative_to(deck.parent.resolve())
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(picture, dest)
    target = out / f"{deck.stem}.html"
    _write_page(target, deck_page(markdown, deck_title(markdown, deck.stem)))
    return target


# -- notebook slides ---------------------------------------------------------------------------------------------------
def _build_labs():
    spec = importlib.util.spec_from_file_location("build_labs", TEMPLATE_BASE / "build_labs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook_exporter():
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    config = Config()
    config.SlidesExporter.reveal_url_prefix = REVEAL_PREFIX
    config.SlidesExporter.reveal_theme = THEME
    return SlidesExporter(config=config, template_name=TEMPLATE, extra_template_basedirs=[str(TEMPLATE_BASE)])


def build_notebook(path: Path, out: Path, exporter, build_labs) -> Path:
    import nbformat

    participant = build_labs.student_version(nbformat.read(path, as_version=4), keep_outputs=True)
    body, _ = exporter.from_notebook_node(participant, resources={"metadata": {"name": path.stem}})
    target = out / f"{path.stem}.slides.html"
    _write_page(target, body)
    return target


# -- pages --------------------------------------------------------------------------------------------------------------
def _write_page(target: Path, text: str) -> None:
    remote = remote_references(text)
    if remote:
        raise BuildError(f"{target.name} would fetch from a network: {', '.join(remote[:5])}")
    target.write_text(text, encoding="utf-8")


def index_page(rows: list[tuple[str, str, str | None, str | None]], version: str) -> str:
    """``rows``: (deck stem, title, Markdown deck page or None, notebook slides page or None)."""
    def link(page, label):
        return f'<a href="{html.escape(page)}">{label}</a>' if page else "—"
    body = "\n".join(f"<tr><td>{html.escape(stem[:2])}</td><td>{html.escape(title)}</td>"
                     f"<td>{link(deck, 'deck')}</td><td>{link(nb, 'notebook slides')}</td></tr>"
                     for stem, title, deck, nb in rows)
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>kafkalab decks</title>
<style>body {{ font-family: sans-serif; margin: 2em; }} td, th {{ padding: 0.3em 1em; text-align: left; }}</style>
</head>
<body>
<h1>kafkalab decks</h1>
<p>Every page here works offline (reveal.js {html.escape(version)} is in <code>reveal.js/</code>).
Keys: → / Space next slide, ← previous, S speaker notes, F full screen, Esc overview.</p>
<table>
<tr><th>lab</th><th>title</th><th>instructor deck</th><th>the notebook as slides (participant version)</th></tr>
{body}
</table>
</body>
</html>
"""


# -- main -----------------------------------------------------------------------------------------------------------------
def _selected(paths: list[Path], selected: list[str]) -> list[Path]:
    return [p for p in paths if DECK_NAME.match(p.stem) and
            (not selected or any(p.stem.startswith(s) for s in selected))]


def build(out: Path, selected: list[str], *, notebooks: bool = True) -> list[Path]:
    """Build the selected decks into ``out``; returns the pages written (index first)."""
    decks = _selected(sorted(SLIDES.glob("[0-9][0-9]_*.md")), selected)
    labs = _selected(sorted(LABS.glob("[0-9][0-9]_*.ipynb")), selected) if notebooks else []
    if not decks and not labs:
        raise BuildError(f"no deck or notebook matches {selected or 'NN_*'}")
    out.mkdir(parents=True, exist_ok=True)
    version = copy_reveal(out)
    pages, rows = [], {}
    for deck in decks:
        page = build_deck(deck, out)
        rows.setdefault(deck.stem, [deck_title(deck.read_text(encoding="utf-8"), deck.stem), None, None])[1] = page.name
        pages.append(page)
    if labs:
        exporter, build_labs = notebook_exporter(), _build_labs()
        for lab in labs:
            page = build_notebook(lab, out, exporter, build_labs)
            rows.setdefault(lab.stem, [lab.stem, None, None])[2] = page.name
            pages.append(page)
    index = out / "index.html"
    _write_page(index, index_page([(stem, *rows[stem]) for stem in sorted(rows)], version))
    return [index, *pages]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("decks", nargs="*", help="only decks whose file name starts with one of these (e.g. 01)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides", help="default: build/slides")
    parser.add_argument("--no-notebooks", action="store_true", help="only the Markdown decks of slides/")
    args = parser.parse_args(argv)
    try:
        pages = build(args.out, args.decks, notebooks=not args.no_notebooks)
    except BuildError as e:
        print(f"build_slides: {e}", file=sys.stderr)
        return 1
    print(f"{len(pages) - 1} deck(s) in {args.out}: open {pages[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
