"""Lab 01 in JupyterLab, started as ``make lab`` starts it, seen through a real browser.

One notebook, opened once: first what a learner sees before running anything (the stored pictures and hex
dumps render), then Run All (no cell errors, no broken widget, no console errors), then the hex dump's click
highlighting and its layout at a 1024-px window with the file browser open. Screenshots go to build/browser/.
"""
from __future__ import annotations

import pytest

from tests.browser.browser import CONSOLE_NOISE, JS_STORED_PICTURES, LAB01, stored_pictures_not_shown
from tests.browser.lab_server import makefile_has_target


@pytest.fixture(scope="module")
def lab01(browser, instructor_server):
    """Lab 01 freshly opened in the server ``make lab`` started: the stored pictures, then the Run All result."""
    browser.driver.set_window_size(1400, 1000)
    browser.open_lab(instructor_server.opening_url())
    browser.open_notebook(LAB01)
    fresh = browser.wait(lambda: browser.js(JS_STORED_PICTURES), 10, "stored outputs of lab 01")
    browser.screenshot("lab01-fresh")
    instructor_server.remember_processes()
    run = browser.run_all(timeout_s=60)
    browser.screenshot("lab01-ran")
    return {"fresh": fresh, "run": run}


def test_stored_pictures_render_before_any_cell_runs(lab01):
    pictures = lab01["fresh"]
    assert pictures, "lab 01 has no stored picture or hex dump to look at"
    not_shown = stored_pictures_not_shown(pictures)
    assert not not_shown, f"stored outputs shown as raw text or 'untrusted' before running: {not_shown}"


def test_run_all_has_no_cell_errors(lab01, browser):
    run = lab01["run"]
    assert run["total"] > 10
    assert run["errors"] == [], f"cells raised: {run['errors']}"
    assert run["ran"] == run["total"]
    assert browser.output_texts_containing("Error displaying widget") == []


def test_no_console_errors_from_the_outputs(lab01, browser):
    errors = browser.console_errors(ignore=CONSOLE_NOISE)
    browser.dump("lab01-console", browser.console)
    assert errors == [], "browser console errors:\n" + "\n".join(errors)


#: the first hex dump: a byte of a field, that field's line in the tree, and what the tree line shows now
JS_FIELD = """
const panel = window.jupyterapp.shell.currentWidget.node;   // lab 01's panel, not a notebook behind it
const frame = panel.querySelector('.jp-OutputArea-output .kl-frame');
const scope = [...frame.classList].find(c => c.startsWith('kl') && c !== 'kl-frame');
const bytes = [...frame.querySelectorAll('pre.kl-dump label.kl-b')];
const byte = bytes.find(b => [...b.classList].some(c => /^s\\d+$/.test(c)) && b.closest('details') === null);
const n = [...byte.classList].find(c => /^s\\d+$/.test(c)).slice(1);
const line = frame.querySelector('.kl-tree .c' + n);
const radio = document.getElementById(scope + '-' + n);
const look = e => { const s = getComputedStyle(e);
  return {pin: s.getPropertyValue('--kl-c').trim(), bg: s.backgroundColor, outline: s.outlineColor}; };
byte.scrollIntoView({block: 'center'});
return {path: window.jupyterapp.shell.currentWidget.context.path, field: n, byte: byte, line_text: line.innerText.slice(0, 80), line: look(line), byte_look: look(byte),
        pinned: !!(radio && radio.checked)};
"""


def test_clicking_a_byte_highlights_its_field(lab01, browser):
    from selenium.webdriver.common.action_chains import ActionChains

    browser.activate(LAB01)
    before = browser.js(JS_FIELD)
    assert before["path"] == LAB01 and not before["pinned"], before
    ActionChains(browser.driver).move_to_element(before["byte"]).click().perform()
    # move away, so what stays lit is the pinned highlight, not the hover
    notebook = browser.js("return window.jupyterapp.shell.currentWidget.content.node;")   # lab 01's, in front
    ActionChains(browser.driver).move_to_element(notebook).move_by_offset(0, 0).perform()
    after = browser.js(JS_FIELD)
    browser.screenshot("lab01-hexdump-pinned")
    assert after["field"] == before["field"]
    assert after["pinned"], "clicking a byte did not pin its field"
    assert after["line"]["pin"] == "#e8590c" and after["line"] != before["line"], (
        f"field {before['field']}'s tree line ({before['line_text']!r}) did not light up: "
        f"{before['line']} -> {after['line']}")


#: every hex dump and field tree in view of a 1024-px window: font sizes and whether anything is cut off
JS_LAYOUT = """
const nb = window.jupyterapp.shell.currentWidget.content.node.getBoundingClientRect();
const side = document.querySelector('#jp-left-stack');
const res = {window: window.innerWidth, notebook_right: nb.right, notebook_left: nb.left,
             sidebar: side ? side.getBoundingClientRect().width : 0, problems: [], checked: 0};
for (const frame of window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-OutputArea-output .kl-frame')) {
  const parts = [...frame.querySelectorAll('pre.kl-dump, .kl-tree')];
  for (const e of parts) {
    if (e.closest('details:not([open])')) continue;
    res.checked += 1;
    const r = e.getBoundingClientRect();
    const what = e.matches('pre') ? 'hex dump' : 'field tree';
    if (e.scrollWidth > e.clientWidth + 1) res.problems.push(what + ' scrolls sideways (' + e.scrollWidth + ' > ' + e.clientWidth + ')');
    if (r.right > nb.right + 1) res.problems.push(what + ' runs past the notebook (' + r.right + ' > ' + nb.right + ')');
    const small = [...e.querySelectorAll('*')].filter(x => x.offsetParent && x.innerText && x.innerText.trim()
                    && parseFloat(getComputedStyle(x).fontSize) < 11);
    if (parseFloat(getComputedStyle(e).fontSize) < 11) small.push(e);
    if (small.length) res.problems.push(what + ' has text below 11 px: ' + small[0].className);
  }
}
return res;
"""


@pytest.mark.xfail(not makefile_has_target("lab-instructor"), strict=True,
                   reason="issue 18 part 3 (CSS for a 1024-px window) and part 4 (no text below 11 px) fix this; "
                          "the hex dump's ASCII column is cut off and the tree's wire types are 10 px until then")
def test_hex_dumps_readable_at_1024px_with_the_file_browser_open(lab01, browser):
    try:
        browser.driver.set_window_size(1024, 768)
        browser.activate(LAB01)
        browser.command("filebrowser:activate")
        browser.wait(lambda: browser.js("const s = document.querySelector('#jp-left-stack');"
                                        "return !!(s && s.getBoundingClientRect().width > 100);"), 10,
                     "the file browser to open")
        layout = browser.js(JS_LAYOUT)
        browser.js("window.jupyterapp.shell.currentWidget.node.querySelector('.jp-OutputArea-output .kl-frame')"
                   ".scrollIntoView({block: 'start'})")
        browser.screenshot("lab01-hexdump-1024px")
    finally:
        browser.driver.set_window_size(1400, 1000)
    assert layout["window"] <= 1024 and layout["sidebar"] > 100
    assert layout["checked"] > 0
    problems = sorted(set(layout["problems"]))
    assert not problems, f"at 1024 px with the file browser open: {problems}"
