"""Every lab's stored outputs in JupyterLab, as a person sees them before running a cell.

Parametrized over ``labs/[0-9][0-9]_*.ipynb`` (a new lab is covered the day it lands): each lab is opened in
the instructors' server (``make lab-instructor``: ``labs/``, trusted) in a laptop-sized window (1280x800) with
the file browser open, its cells are *not* run (nbval runs them), and the rendered DOM is read:

- every stored picture shows: an ``<img>`` has loaded (``naturalWidth > 0``), an inline ``<svg>`` has a box,
  and nothing is shown as raw markup or an "untrusted" placeholder (``JS_STORED_PICTURES``);
- nothing is clipped: no element of an output reaches past its output area (or the visible notebook) unless a
  horizontal scroll inside the output reaches it, and none is cut by an ``overflow: hidden`` box (``JS_CLIPPED``);
- no stored output is an error, and no stored stderr holds a Python warning or a traceback;
- rendering logs no console error (beyond ``CONSOLE_NOISE``);
- a live widget is stored as its fallback (``scripts/build_labs.py`` drops the view: its model lives only in
  the kernel that ran it), so no output says "Loading widget..." or "Error displaying widget", and a live
  widget's fallback (``.kl-widget-fallback``, kafkalab/viz/live/static.py) tells the reader to run the cell.

One screenshot per lab, ``every-lab-NN.png``, and what was measured, ``every-lab-NN.json``, go to build/browser/.
The checks are plain functions of what the JavaScript returns; ``test_the_checks_catch_broken_outputs_...`` (last)
adds broken outputs to an open lab and proves each check fails on them, and that today's renderers pass.
"""
from __future__ import annotations

import re

import pytest

from tests.browser.browser import CONSOLE_NOISE, JS_STORED_PICTURES, stored_pictures_not_shown
from tests.browser.lab_server import REPO

LABS = sorted(p.name for p in (REPO / "labs").glob("[0-9][0-9]_*.ipynb"))
WINDOW = (1280, 800)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: what a stored stderr must not hold: a Python warning ("DeprecationWarning: ...", "warnings.warn(") or a
#: traceback. (Lab 15's JVM note "WARNING: Using incubator modules" is not a Python warning.)
PYTHON_TROUBLE = re.compile(r"\b[A-Z]\w*Warning: |warnings\.warn\(|Traceback \(most recent call last\)")
#: what JupyterLab shows where a widget view has no model: a stored view whose live state was not saved
WIDGET_PLACEHOLDERS = ("Loading widget", "Error displaying widget", "model not found")

#: the current notebook's stored outputs as the model holds them and as the page shows them
JS_STORED_OUTPUTS = """
const WV = arguments[0];
const panel = window.jupyterapp.shell.currentWidget;
const res = {outputs: 0, rendered: 0, errors: [], stderr: [], widget_views: [], pictures: [], fallbacks: [],
             placeholder_texts: []};
panel.content.widgets.forEach((cell, i) => {
  if (cell.model.type !== 'code') return;
  const outs = cell.model.outputs.toJSON();
  const areas = cell.node.querySelectorAll('.jp-OutputArea-output');
  res.outputs += outs.length;
  res.rendered += areas.length;
  outs.forEach(o => {
    if (o.output_type === 'error') res.errors.push({cell: i, ename: o.ename, evalue: String(o.evalue).slice(0, 200)});
    if (o.output_type === 'stream' && o.name === 'stderr') {
      res.stderr.push({cell: i, text: [].concat(o.text).join('').slice(0, 2000)});
    }
    const d = o.data || {};
    if (WV in d) res.widget_views.push({cell: i, fallbacks: Object.keys(d).filter(k => k !== WV)});
  });
  areas.forEach(area => {
    for (const img of area.querySelectorAll('img')) {
      if (img.closest('details:not([open])')) continue;
      res.pictures.push({cell: i, what: 'img ' + (img.getAttribute('src') || '').slice(0, 30),
                         loaded: img.complete, width: img.naturalWidth, box: img.getBoundingClientRect().width});
    }
    for (const svg of area.querySelectorAll('svg')) {
      if (svg.parentElement.closest('svg') || svg.closest('details:not([open])') || !svg.checkVisibility()) continue;
      const r = svg.getBoundingClientRect();
      res.pictures.push({cell: i, what: 'svg', loaded: true, width: Math.round(r.width), box: Math.round(r.height)});
    }
    for (const f of area.querySelectorAll('.kl-widget-fallback')) res.fallbacks.push({cell: i, text: f.innerText});
    const text = area.innerText;
    for (const t of arguments[1]) if (text.includes(t)) res.placeholder_texts.push({cell: i, text: text.slice(0, 200)});
  });
});
return res;
"""

#: elements of the stored outputs a person cannot see all of: cut by an ``overflow: hidden``/``clip`` box, or
#: reaching past their output area or the visible notebook with no horizontal scroll inside the output to reach
#: them. Hidden elements (closed <details>, display: none, zero size) are not looked at. ``scrolls`` lists the
#: output areas that scroll sideways (JupyterLab's output areas are ``overflow-x: auto``): reachable, so no failure,
#: but kept in the JSON beside the screenshot.
JS_CLIPPED = """
const panel = window.jupyterapp.shell.currentWidget;
const view = panel.content.node.getBoundingClientRect();
const res = {view_right: Math.round(view.right), checked: 0, clipped: [], scrolls: []};
const style = new Map();
const overflowX = e => { if (!style.has(e)) style.set(e, getComputedStyle(e).overflowX); return style.get(e); };
const name = e => e.tagName.toLowerCase() + (e.getAttribute('class') ? '.' + String(e.getAttribute('class')).trim().split(/\\s+/).join('.') : '');
panel.content.widgets.forEach((cell, i) => {
  if (cell.model.type !== 'code') return;
  for (const area of cell.node.querySelectorAll('.jp-OutputArea-output')) {
    if (area.scrollWidth > area.clientWidth + 1) {
      res.scrolls.push({cell: i, width: area.scrollWidth, shown: area.clientWidth});
    }
    const box = area.getBoundingClientRect();
    const limit = Math.min(box.left + area.clientLeft + area.clientWidth, view.right);
    const seen = new Set();
    for (const e of area.querySelectorAll('*')) {
      if (e.parentElement.closest('svg') || e.closest('details:not([open])')) continue;
      const r = e.getBoundingClientRect();
      if (r.width < 1 || r.height < 1 || !e.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
      res.checked += 1;
      let problem = null;
      for (let a = e.parentElement; a; a = a.parentElement) {
        const o = overflowX(a);
        if (o === 'auto' || o === 'scroll') break;          // a scroll bar reaches it
        if (o === 'hidden' || o === 'clip') {
          const ab = a.getBoundingClientRect();
          const right = ab.left + a.clientLeft + a.clientWidth;
          if (r.right > right + 1) problem = 'cut off by ' + name(a) + ' (overflow-x: ' + o + ') at ' + Math.round(right);
          break;
        }
        if (a === area) {
          if (r.right > limit + 1) problem = 'past the output area / visible notebook at ' + Math.round(limit);
          break;
        }
      }
      if (problem && !seen.has(problem)) {
        seen.add(problem);
        res.clipped.push({cell: i, element: name(e), right: Math.round(r.right), problem: problem,
                          text: (e.textContent || '').trim().slice(0, 60)});
      }
    }
  }
});
return res;
"""

#: scroll to what the screenshot should show: the outputs of cell ``arguments[0]`` (a clipped one), else the first
#: stored picture, else the first output
JS_SHOW_FIRST = """
const panel = window.jupyterapp.shell.currentWidget;
const cell = panel.content.widgets[arguments[0]];
const target = (cell && cell.node.querySelector('.jp-OutputArea-output'))
  || panel.node.querySelector('.jp-OutputArea-output :is(svg, img, .kl-frame)')
  || panel.node.querySelector('.jp-OutputArea-output');
if (target) target.scrollIntoView({block: 'start'});
return !!target;
"""

JS_ALL_RENDERED = """
const panel = window.jupyterapp.shell.currentWidget;
const cells = panel.content.widgets.filter(c => c.model.type === 'code');
const models = cells.reduce((n, c) => n + c.model.outputs.length, 0);
const areas = cells.reduce((n, c) => n + c.node.querySelectorAll('.jp-OutputArea-output').length, 0);
const imgs = [...panel.node.querySelectorAll('.jp-OutputArea-output img')];
return models === areas && imgs.every(i => i.complete);
"""


# -- the checks, as functions of what the page returned (tested on broken pages below) ---------------------------
def pictures_not_showing(outputs: dict, pictures: list[dict]) -> list[dict]:
    """Pictures a person does not see: raw markup or 'untrusted' text, an image that did not load, a blank SVG."""
    return ([{**p, "why": "raw text or untrusted"} for p in stored_pictures_not_shown(pictures)]
            + [{**p, "why": "no picture"} for p in outputs["pictures"]
               if not p["loaded"] or p["width"] <= 0 or p["box"] <= 0])


def stored_troubles(outputs: dict) -> list[str]:
    """Stored errors, and Python warnings or tracebacks in stored stderr."""
    return ([f"cell {e['cell']}: stored error {e['ename']}: {e['evalue']}" for e in outputs["errors"]]
            + [f"cell {s['cell']}: stderr {PYTHON_TROUBLE.search(s['text']).group(0)!r} in {s['text'][:300]!r}"
               for s in outputs["stderr"] if PYTHON_TROUBLE.search(s["text"])])


def widget_troubles(outputs: dict) -> list[str]:
    """A widget view stored without a fallback, a widget placeholder on the page, a fallback that does not say
    how to bring the widget to life."""
    return ([f"cell {w['cell']}: widget view stored with no text/html or text/plain fallback"
             for w in outputs["widget_views"] if not {"text/html", "text/plain"} & set(w["fallbacks"])]
            + [f"cell {p['cell']}: shows {p['text']!r}" for p in outputs["placeholder_texts"]]
            + [f"cell {f['cell']}: widget fallback does not say 'run the cell': {f['text']!r}"
               for f in outputs["fallbacks"] if "run the cell" not in f["text"].lower()])


# -- the labs in the browser ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def laptop(browser, instructor_server):
    """JupyterLab of ``make lab-instructor`` in a 1280x800 window with the file browser open, in a workspace of its
    own (JupyterLab keeps a workspace's layout, side bar width included, for the next page that opens it). At the
    end the console entries this module caused on purpose (a missing picture) are read and dropped, so the next
    module's console checks see only their own."""
    browser.driver.set_window_size(*WINDOW)
    browser.open_lab(instructor_server.url("lab/workspaces/every-lab"))
    browser.command("filebrowser:activate")
    browser.wait(lambda: browser.js("const s = document.querySelector('#jp-left-stack');"
                                    "return !!(s && s.getBoundingClientRect().width > 100);"), 10,
                 "the file browser to open")
    try:
        yield instructor_server
    finally:
        browser.driver.set_window_size(1400, 1000)
        browser.read_console()
        browser.console.clear()


def read_page(browser, name: str, seen: int) -> dict:
    """What the open notebook ``name`` shows (its outputs rendered): pictures, outputs, layout, and the console
    errors logged after the first ``seen`` console entries."""
    browser.wait(lambda: browser.js(JS_ALL_RENDERED), 20, f"the stored outputs of {name}")
    page = {"name": name,
            "pictures": browser.js(JS_STORED_PICTURES),
            "outputs": browser.js(JS_STORED_OUTPUTS, WIDGET_VIEW, list(WIDGET_PLACEHOLDERS)),
            "layout": browser.js(JS_CLIPPED),
            "side_bar": browser.js("const s = document.querySelector('#jp-left-stack');"
                                   "return s ? Math.round(s.getBoundingClientRect().width) : 0;")}
    page["console"] = [e["message"] for e in browser.read_console()[seen:]
                       if e["level"] == "SEVERE" and not any(n in e["message"] for n in CONSOLE_NOISE)]
    return page


@pytest.fixture(scope="module")
def pages(browser, laptop):
    """``pages(name)``: lab ``name`` opened once, fresh (no cell run), read, photographed and closed."""
    cache: dict[str, dict] = {}

    def page(name: str) -> dict:
        if name not in cache:
            seen = len(browser.read_console())
            browser.open_notebook(name)
            laptop.remember_processes()
            try:
                found = read_page(browser, name, seen)
                clipped = found["layout"]["clipped"]
                browser.js(JS_SHOW_FIRST, clipped[0]["cell"] if clipped else -1)
                browser.screenshot(f"every-lab-{name[:2]}")
                browser.dump(f"every-lab-{name[:2]}", found)
            finally:
                browser.shut_down_and_close(name)
            cache[name] = found
        return cache[name]

    return page


@pytest.mark.parametrize("name", LABS)
def test_stored_pictures_show(pages, name):
    page = pages(name)
    assert page["side_bar"] > 100, "the file browser is not open"
    assert page["outputs"]["outputs"] > 0 and page["outputs"]["rendered"] == page["outputs"]["outputs"], page["outputs"]
    missing = pictures_not_showing(page["outputs"], page["pictures"])
    assert not missing, f"{name}: stored pictures a person does not see: {missing}"


@pytest.mark.parametrize("name", LABS)
def test_nothing_clipped_in_a_laptop_window(pages, name):
    clipped = pages(name)["layout"]["clipped"]
    where = f"{name} at {WINDOW[0]}x{WINDOW[1]} with the file browser open"
    assert not clipped, f"{where}: cut off or out of reach: {clipped}"


@pytest.mark.parametrize("name", LABS)
def test_no_stored_error_or_python_warning(pages, name):
    troubles = stored_troubles(pages(name)["outputs"])
    assert not troubles, f"{name}: {troubles}"


@pytest.mark.parametrize("name", LABS)
def test_no_console_error_from_the_outputs(pages, name):
    assert pages(name)["console"] == [], f"{name}: browser console errors while its outputs rendered"


@pytest.mark.parametrize("name", LABS)
def test_live_widgets_stored_as_a_note_to_run_the_cell(pages, name):
    troubles = widget_troubles(pages(name)["outputs"])
    assert not troubles, f"{name}: {troubles}"


# -- the checks fail where they should: broken outputs added to an open lab through JupyterLab's own model ------
#: outputs a person could not use: each must be caught by one check
BROKEN_OUTPUTS = [
    {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "cut", "text/html":
        '<div style="overflow:hidden;width:200px"><p style="width:600px;margin:0">a table 600 px wide in a box of 200'
        '</p></div>'}},
    {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "wide", "text/html":
        '<div style="width:4000px;height:8px;background:#e03131"></div>'}},
    {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "broken image", "text/html":
        '<img src="/kafkalab-no-such-picture.png" width="40" height="20" alt="">'}},
    {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "blank", "text/html":
        '<svg width="0" height="0"></svg>'}},
    {"output_type": "error", "ename": "ValueError", "evalue": "deliberately broken", "traceback": []},
    {"output_type": "stream", "name": "stderr",
     "text": "/x/y.py:3: DeprecationWarning: old\n  warnings.warn('old', DeprecationWarning)\n"},
    {"output_type": "display_data", "metadata": {}, "data": {WIDGET_VIEW: {
        "model_id": "0123456789abcdef", "version_major": 2, "version_minor": 0}}},
    {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "Dash()", "text/html":
        '<div class="kl-widget-fallback">ClusterDashboard: a live view</div>'}},
]

JS_REPLACE_OUTPUTS = """
const cells = window.jupyterapp.shell.currentWidget.content.widgets.filter(c => c.model.type === 'code');
const cell = cells[arguments[0]];
cell.model.outputs.clear();
for (const o of arguments[1]) cell.model.outputs.add(o);
return window.jupyterapp.shell.currentWidget.content.widgets.indexOf(cell);
"""


def current_outputs() -> list[dict]:
    """Outputs of today's renderers, as a lab stores them: lab 02's two frames side by side in a wrapping flex
    row, frames with long wire types (COMPACT_NULLABLE_STRING), a live widget's stored note."""
    from kafkalab.labs import lab01
    from kafkalab.viz import show_frame
    from kafkalab.viz.live.static import stored_fallback

    metadata = show_frame(lab01.recorded("confluent-kafka-produce-1-Metadata-v12.bin"))
    produce = show_frame(lab01.recorded("confluent-kafka-produce-3-Produce-v9.bin"))
    pair = ('<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">'
            + metadata._repr_html_() + produce._repr_html_() + "</div>")
    return [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": repr(v), "text/html": html}}
            for v, html in ((metadata, pair), (metadata, metadata._repr_html_()),
                            ("fallback", stored_fallback("ClusterDashboard", "a live view")))]


def test_the_checks_catch_broken_outputs_and_pass_todays_renderers(browser, laptop):
    """Lab 00 opened, its first code cell's outputs replaced by BROKEN_OUTPUTS and its second's by today's
    renderers (through JupyterLab's own output model, trusted like the lab): every broken output is caught by its
    check and today's pictures pass them all. Closed unsaved."""
    name = LABS[0]
    seen = len(browser.read_console())
    browser.open_notebook(name)
    laptop.remember_processes()
    try:
        broken_cell = browser.js(JS_REPLACE_OUTPUTS, 0, BROKEN_OUTPUTS)
        good_cell = browser.js(JS_REPLACE_OUTPUTS, 1, current_outputs())
        page = read_page(browser, name, seen)
        browser.js(JS_SHOW_FIRST, good_cell)
        browser.screenshot("every-lab-checks-todays-renderers")
        browser.js(JS_SHOW_FIRST, broken_cell)
        browser.screenshot("every-lab-checks-broken")
        browser.dump("every-lab-checks", page)
        frames = browser.js("const cell = window.jupyterapp.shell.currentWidget.content.widgets[arguments[0]];"
                            "return [...cell.node.querySelectorAll('.kl-frame')]"
                            ".map(f => Math.round(f.getBoundingClientRect().width));", good_cell)
    finally:
        browser.shut_down_and_close(name)
    outputs, cells = page["outputs"], (broken_cell, good_cell)
    here = {k: [p for p in v if p["cell"] in cells] for k, v in outputs.items() if isinstance(v, list)}
    here = {**outputs, **here}

    def found_in(cell, problems):
        return [p for p in problems if (p["cell"] if isinstance(p, dict) else int(p.split()[1].rstrip(":"))) == cell]

    missing = pictures_not_showing(here, [p for p in page["pictures"] if p["cell"] in cells])
    assert {p["what"].split()[0] for p in found_in(broken_cell, missing)} == {"img", "svg"}, missing
    clipped = [c for c in page["layout"]["clipped"] if c["cell"] in cells]
    assert [c["element"] for c in found_in(broken_cell, clipped)] == ["p"], clipped    # the 4000-px bar scrolls
    assert [w["width"] > 3000 for w in page["layout"]["scrolls"] if w["cell"] == broken_cell] == [True]
    troubles = stored_troubles(here)
    assert len(found_in(broken_cell, troubles)) == 2 and "DeprecationWarning" in troubles[-1], troubles
    widgets = widget_troubles(here)
    assert any("no text/html" in w for w in widgets) and any("does not say" in w for w in widgets), widgets
    assert any(t in w for w in widgets for t in WIDGET_PLACEHOLDERS), f"the dead view's placeholder: {widgets}"
    assert any("/kafkalab-no-such-picture.png" in e for e in page["console"]), page["console"]

    assert not found_in(good_cell, missing + clipped + troubles + widgets), "today's renderers fail a check"
    assert len(frames) == 3 and min(frames) > 500, f"frame widths {frames}: squeezed"
