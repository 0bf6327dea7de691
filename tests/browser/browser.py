"""Debian's headless chromium, driven by Selenium through chromedriver, looking at JupyterLab.

The JupyterLab side is read through ``window.jupyterapp`` (the application object, exposed to the page the
way Galata, JupyterLab's own browser-test kit, reads it) and the rendered DOM: cell models say whether a cell
ran and what it output; the DOM says what a person sees. Browser console entries are kept in ``console`` as
they are read (chromedriver hands each out once).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.browser.processes import descendants, stop_tree

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--disable-background-timer-throttling",
                  "--disable-renderer-backgrounding", "--window-size=1400,1000")


def require_browser():
    """Skip when chromium, chromedriver or selenium is missing -- fail instead when KAFKALAB_REQUIRE_BROWSER=1."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -c constraints.txt -e '.[test]')")
    if not missing:
        return
    message = f"browser test needs {', '.join(missing)}: apt-get install -y chromium chromium-driver"
    if os.environ.get("KAFKALAB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{message} (KAFKALAB_REQUIRE_BROWSER=1)")
    pytest.skip(message)


# -- JavaScript run in the page ---------------------------------------------------------------------------------------
#: the current notebook's code cells: how many, how many ran, which still run, and the errors they output
JS_RUN_STATE = """
const p = window.jupyterapp.shell.currentWidget;
const cells = p.content.widgets.filter(c => c.model.type === 'code');
const errors = [];
cells.forEach((c, i) => {
  for (const o of c.model.outputs.toJSON()) {
    if (o.output_type === 'error') errors.push({cell: i, ename: o.ename, evalue: String(o.evalue).slice(0, 300)});
  }
});
return {total: cells.length,
        ran: cells.filter(c => c.model.executionCount !== null && c.model.executionState === 'idle').length,
        running: cells.filter(c => c.model.executionState === 'running').length,
        errors: errors};
"""

JS_KERNEL_IDLE = """
const p = window.jupyterapp.shell.currentWidget;
const k = p && p.sessionContext && p.sessionContext.session && p.sessionContext.session.kernel;
return !!(k && k.status === 'idle' && p.context.isReady);
"""

#: make the ``arguments[0]``-th code cell of the current notebook the active one
JS_SELECT_CODE_CELL = """
const nb = window.jupyterapp.shell.currentWidget.content;
const code = nb.widgets.map((c, i) => [c, i]).filter(([c]) => c.model.type === 'code');
nb.deselectAll();
nb.activeCellIndex = code[arguments[0]][1];
return nb.activeCellIndex;
"""

#: lab 01, the lab with the stored hex dumps and pictures the browser test looks at
LAB01 = "01_the_wire.ipynb"
#: console entries JupyterLab itself logs at SEVERE that say nothing about the labs' outputs
#: (chromium's refusal of JupyterLab's "leave the page with unsaved changes?" prompt when a test opens the next
#: page while a notebook that ran is still open; the debugger sidebar asking a kernel that a test just shut down)
CONSOLE_NOISE = ("favicon.ico", "/api/workspaces", "lab/api/translations",
                 "Blocked attempt to show a 'beforeunload' confirmation panel", "Could not restore the debugger state")

#: per stored output area that holds a picture: whether a picture shows, or the untrusted placeholder/raw text
JS_STORED_PICTURES = """
const out = [];
const p = window.jupyterapp.shell.currentWidget;
p.content.widgets.forEach((cell, i) => {
  if (cell.model.type !== 'code') return;
  cell.model.outputs.toJSON().forEach((o, j) => {
    const d = o.data || {};
    const svg = 'image/svg+xml' in d || String(d['text/html'] || '').includes('<svg');
    const frame = String(d['text/html'] || '').includes('kl-frame');
    if (!svg && !frame) return;
    const area = cell.node.querySelectorAll('.jp-OutputArea-output')[j];
    const text = area ? area.innerText : '';
    out.push({cell: i, svg: svg, frame: frame,
              svg_shown: !!(area && area.querySelector('svg, img[src^="data:image/svg"]')),
              frame_styled: !!(area && area.querySelector('.kl-frame') &&
                               getComputedStyle(area.querySelector('.kl-frame')).borderTopStyle === 'solid'),
              placeholder: text.includes('untrusted') || text.startsWith('<')});
  });
});
return out;
"""


def stored_pictures_not_shown(pictures: list[dict]) -> list[dict]:
    """The entries of JS_STORED_PICTURES that a person sees as raw text or an 'untrusted' placeholder."""
    return [p for p in pictures if (p["svg"] and not p["svg_shown"]) or (p["frame"] and not p["frame_styled"])
            or p["placeholder"]]


class Browser:
    """One chromium window on one JupyterLab server."""

    def __init__(self, screenshots: Path, extra_flags: tuple[str, ...] = (), network_log: bool = False):
        """``extra_flags`` go to chromium after the usual ones; ``network_log`` keeps chromium's performance log
        (DevTools ``Network.*`` events: every request a page makes, failed ones too), read by ``requested_urls``."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.screenshots = screenshots
        self.profile = Path(tempfile.mkdtemp(prefix="kafkalab-chromium-"))
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in (*CHROMIUM_FLAGS, *extra_flags, f"--user-data-dir={self.profile}"):
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if network_log else {})})
        self.service = Service(CHROMEDRIVER, popen_kw={"start_new_session": True})
        self.driver = None
        self.console: list[dict] = []
        try:
            self.driver = webdriver.Chrome(service=self.service, options=opts)
        except BaseException:
            self.close()
            raise
        self.driver.set_script_timeout(30)

    # -- life cycle ---------------------------------------------------------------------------------------------------
    def close(self) -> list[str]:
        """Quit chromium and chromedriver; return the processes that survived (should be none)."""
        process = getattr(self.service, "process", None)
        known = descendants(process.pid) if process else []
        if self.driver is not None:
            try:
                self.driver.quit()
            except Exception:  # noqa: BLE001 - the tree is stopped below either way
                pass
        survivors = stop_tree(process.pid, known=known) if process else []
        shutil.rmtree(self.profile, ignore_errors=True)
        return survivors

    # -- pages and waiting --------------------------------------------------------------------------------------------
    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def wait(self, condition, timeout_s: float, what: str, poll_s: float = 0.2):
        deadline = time.monotonic() + timeout_s
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                self.screenshot(f"timeout-{what.replace(' ', '-')[:40]}")
                raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            time.sleep(poll_s)

    def open_lab(self, url: str) -> None:
        """Load JupyterLab at ``url`` and wait until the application has started.

        A ``/lab/tree/<path>`` address (``make lab`` opens lab 00 so) opens that document after the application
        is restored: wait for it too, or it opens later on top of the notebook a test opens next, hiding it.
        """
        self.driver.get(url)
        self.wait(lambda: self.js("return typeof window.jupyterapp === 'object'"), 30, "window.jupyterapp")
        self.driver.execute_async_script("const done = arguments[arguments.length - 1];"
                                         "window.jupyterapp.started.then(() => window.jupyterapp.restored)"
                                         ".then(() => done(1));")
        tree = re.search(r"/lab/tree/([^?#]+)", url)
        if tree:
            path = urllib.parse.unquote(tree.group(1))
            self.wait(lambda: self.current_path() == path, 30, f"{path} to open")

    def command(self, name: str, args: dict | None = None) -> None:
        """Run a JupyterLab command without waiting for it (a run-all would outlast the script timeout)."""
        self.js("window.jupyterapp.commands.execute(arguments[0], arguments[1]); return 1;", name, args or {})

    def open_notebook(self, path: str, timeout_s: float = 30) -> None:
        """Open ``path`` (relative to the server's root) and wait until its kernel is idle."""
        self.command("docmanager:open", {"path": path, "factory": "Notebook"})
        self.wait(lambda: self.js("const p = window.jupyterapp.shell.currentWidget;"
                                  "return !!(p && p.context && p.context.path === arguments[0]);", path),
                  timeout_s, f"{path} to open")
        self.wait(lambda: self.js(JS_KERNEL_IDLE), timeout_s, f"the kernel of {path}")

    def activate(self, path: str) -> None:
        """Bring the open document ``path`` to the front (the tab a person clicks)."""
        self.js("const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && "
                "w.context.path === arguments[0]); window.jupyterapp.shell.activateById(w.id); return 1;", path)
        self.wait(lambda: self.current_path() == path, 10, f"{path} in front")

    def close_without_saving(self, path: str) -> None:
        """Close the open document ``path`` and drop its changes (the labs' files stay as stored)."""
        self.js("const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && "
                "w.context.path === arguments[0]); if (w) { w.context.model.dirty = false; w.close(); } return 1;",
                path)
        self.wait(lambda: not self.js("return [...window.jupyterapp.shell.widgets('main')].some(w => w.context && "
                                      "w.context.path === arguments[0]);", path), 10, f"{path} to close")

    def shut_down_and_close(self, path: str) -> None:
        """Shut the kernel of the open document ``path`` down, then close it unsaved (a test opening many
        notebooks leaves no kernel behind for each)."""
        self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && "
            "w.context.path === arguments[0]);"
            "if (!w || !w.sessionContext) { done(0); return; }"
            "w.sessionContext.shutdown().then(() => done(1), () => done(2));", path)
        self.close_without_saving(path)

    def current_path(self) -> str | None:
        return self.js("const p = window.jupyterapp.shell.currentWidget; return p && p.context ? p.context.path : null;")

    def run_all(self, timeout_s: float, *, before_last: int = 0) -> dict:
        """Run the cells of the current notebook; return the final run state (see JS_RUN_STATE).

        ``before_last=n`` leaves the last ``n`` code cells out (run them later with ``run_last``), as an
        instructor does who keeps a lab's cluster running to work its live controls before the closing cell
        stops it; ``total`` then counts the cells run. The stored outputs and execution counts are cleared
        first, so "every cell has a count" means "ran now".
        """
        self.driver.execute_async_script("const done = arguments[arguments.length - 1];"
                                         "window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')"
                                         ".then(() => done(1));")
        cleared = self.js(JS_RUN_STATE)
        assert cleared["ran"] == 0 and not cleared["errors"], f"clearing the outputs left {cleared}"
        if before_last:
            self.js(JS_SELECT_CODE_CELL, cleared["total"] - before_last)
            self.command("notebook:run-all-above")
        else:
            self.command("notebook:run-all-cells")
        return self._wait_for_run(cleared["total"] - before_last, timeout_s)

    def run_last(self, cells: int, timeout_s: float) -> dict:
        """Run the last ``cells`` code cells (those ``run_all(before_last=cells)`` left out)."""
        total = self.js(JS_RUN_STATE)["total"]
        self.js(JS_SELECT_CODE_CELL, total - cells)     # clicks in an output make its cell the active one
        self.command("notebook:run-all-below")
        return self._wait_for_run(total, timeout_s)

    def _wait_for_run(self, cells: int, timeout_s: float) -> dict:
        def finished():
            state = self.js(JS_RUN_STATE)
            done = (state["ran"] >= cells and not state["running"]) or (state["errors"] and not state["running"])
            return {**state, "total": cells} if done else None

        return self.wait(finished, timeout_s, "the cells to run", poll_s=0.5)

    # -- what a person sees -------------------------------------------------------------------------------------------
    def output_texts_containing(self, needle: str) -> list[str]:
        return self.js("return [...document.querySelectorAll('.jp-OutputArea-output')]"
                       ".map(e => e.innerText).filter(t => t.includes(arguments[0])).map(t => t.slice(0, 200));",
                       needle)

    def screenshot(self, name: str) -> Path:
        self.screenshots.mkdir(parents=True, exist_ok=True)
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def read_console(self) -> list[dict]:
        self.console += self.driver.get_log("browser")
        return self.console

    def console_errors(self, ignore: tuple[str, ...] = ()) -> list[str]:
        return [e["message"] for e in self.read_console()
                if e["level"] == "SEVERE" and not any(pattern in e["message"] for pattern in ignore)]

    def requested_urls(self) -> list[str]:
        """Every URL a page asked for since the last call (needs ``network_log``): DevTools' requestWillBeSent."""
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        return urls

    def dump(self, name: str, value) -> None:
        """Save ``value`` as JSON beside the screenshots (an artifact, like them)."""
        self.screenshots.mkdir(parents=True, exist_ok=True)
        (self.screenshots / f"{name}.json").write_text(json.dumps(value, indent=1))
