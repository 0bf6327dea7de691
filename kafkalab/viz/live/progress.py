"""Progress on long steps: a bar with a count and a rate, live in JupyterLab, a stable line in stored outputs.

Theory of operation
-------------------
A replay of ten thousand events, a topic filled for an experiment or a Spark query can take several seconds;
without a sign of life a learner re-runs the cell. :func:`progress` wraps the step::

    for event in progress(events, description="replay", unit="events"):
        ...
    with progress(10_000, description="fill clicks", unit="records") as bar:
        replay(path, topic, bootstrap, limit=10_000, on_sent=bar.step)   # any per-item callback

* **Counting** (:meth:`Progress.update`, :meth:`Progress.step`) only adds to a counter under a lock, from any
  thread; it never touches a widget.
* **Painting** is the job of one :class:`~kafkalab.viz.live.refresh.Refresher` (five frames a second): the
  bar's value and a label ``count/total unit · rate unit/s · elapsed``. So the bar moves even while the step
  blocks the kernel, and a fast loop does not flood the browser with one message per item. When the count
  reaches the total, or the bar is closed (end of the ``for``/``with``), it paints the final frame and stops.
* **Stored outputs stay stable.** nbval compares ``text/plain`` and ``text/html`` and skips the widget view; the
  bar is displayed once with a fallback that names the step and its size only (``replay: 5,000 events``),
  never a count, rate or time, and it is never updated through ``update_display_data`` (which nbclient applies
  and nbval does not). Without a kernel (a script, the CLI, a test) nothing is displayed.
* :meth:`Progress.snapshot` renders the current state as static HTML, like every live widget here.

Mirrors the idea of Kafka's ``kafka-producer-perf-test.sh`` periodic "records sent, records/sec" lines, drawn
as the notebook bar ``tqdm.notebook`` popularised (tqdm is not a kafkalab dependency).
"""
from __future__ import annotations

import html
import threading
import time as _time
from typing import Any, Callable, Iterable, Optional, Union

import ipywidgets as widgets
from IPython.display import HTML

from kafkalab.viz.live.refresh import Refresher

_BAR = "display:inline-block;width:240px;height:10px;background-color:#e9ecef;margin-right:8px"
_FILL = "display:block;height:10px;background-color:#4682b4"


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:   # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class Progress:
    """A progress bar over a count (``total`` known or not); see :func:`progress`."""

    def __init__(self, total: Optional[int] = None, *, description: str = "", unit: str = "it",
                 iterable: Optional[Iterable] = None, interval_s: float = 0.2,
                 clock: Callable[[], float] = _time.monotonic):
        if total is not None and total < 0:
            raise ValueError(f"total must be >= 0 (or None), not {total!r}")
        self.total = total
        self.description = description
        self.unit = unit
        self._iterable = iterable
        self._clock = clock
        self._started = clock()
        self._ended: Optional[float] = None
        self._count = 0
        self._lock = threading.Lock()
        self.closed = False
        self.bar = widgets.IntProgress(value=0, min=0, max=max(total or 0, 1), description=description,
                                       layout=widgets.Layout(visibility="visible" if total else "hidden"))
        self.label = widgets.HTML()
        self.widget = widgets.HBox([self.bar, self.label])
        self._refresher = Refresher(self._paint, interval_s, stop_when=lambda: self.widget.comm is None,
                                    name="progress", stop_on_error=False)
        self._paint()
        self._refresher.start()

    # -- counting (any thread) ----------------------------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        with self._lock:
            self._count += n

    def step(self, *_ignored: Any) -> None:
        """Count one item; takes and ignores any arguments, so it fits any per-item callback (``on_sent``)."""
        self.update(1)

    @property
    def count(self) -> int:
        return self._count

    @property
    def elapsed_s(self) -> float:
        return (self._ended if self._ended is not None else self._clock()) - self._started

    @property
    def rate(self) -> float:
        """Items per second since the bar started (0 before any time has passed)."""
        elapsed = self.elapsed_s
        return self._count / elapsed if elapsed > 0 else 0.0

    @property
    def text(self) -> str:
        """The live line: ``fill: 1,200/5,000 records · 2,400 records/s · 0.5 s``."""
        count = f"{self._count:,}" + (f"/{self.total:,}" if self.total is not None else "")
        head = f"{self.description}: " if self.description else ""
        return f"{head}{count} {self.unit} · {self.rate:,.0f} {self.unit}/s · {self.elapsed_s:.1f} s" + \
            (" · done" if self.closed else "")

    # -- iterating, closing ---------------------------------------------------------------------------------
    def __iter__(self):
        if self._iterable is None:
            raise TypeError("this progress bar counts a total; call update() or step() instead of iterating")
        try:
            for item in self._iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop painting and show the final count, rate and time (the widget stays, showing them)."""
        with self._lock:       # the refresher closes a bar that reached its total: once, whoever comes first
            if self.closed:
                return
            self._ended = self._clock()
            self.closed = True
        self._refresher.stop()
        self._paint()

    # -- rendering ------------------------------------------------------------------------------------------
    def _paint(self) -> None:
        self.bar.value = min(self._count, self.bar.max) if self.total else 0
        if self.closed:
            self.bar.bar_style = "success"
        self.label.value = html.escape(self.text)
        if self.total is not None and self._count >= self.total and not self.closed:
            self.close()

    @property
    def static_text(self) -> str:
        """What stored outputs hold: the step and its size, nothing that varies from run to run."""
        head = self.description or "progress"
        return f"{head}: {self.total:,} {self.unit}" if self.total is not None else f"{head} ({self.unit})"

    def _static_html(self, fraction: float, text: str) -> str:
        return (f'<div class="kafkalab-progress"><span style="{_BAR}"><span style="{_FILL};'
                f'width:{fraction:.0%}"></span></span><span>{html.escape(text)}</span></div>')

    def snapshot(self) -> HTML:
        """The current state as static HTML (bar and live line), no widget."""
        fraction = min(self._count / self.total, 1.0) if self.total else (1.0 if self.closed else 0.0)
        return HTML(self._static_html(fraction, self.text))

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.static_text
        bundle["text/html"] = self._static_html(1.0, self.static_text)
        return bundle

    def __repr__(self) -> str:
        return f"<Progress {self.static_text}>"


def progress(iterable_or_total: Union[Iterable, int, None] = None, *, description: str = "", unit: str = "it",
             display: Optional[bool] = None, **kwargs: Any) -> Progress:
    """A progress bar for a long step: pass the iterable to wrap, or the total to count with ``update``/``step``.

    ``display`` (default: only inside a Jupyter kernel) shows the bar in the running cell.
    """
    if isinstance(iterable_or_total, bool):
        raise TypeError("progress() takes an iterable or a total count, not a bool")
    if iterable_or_total is None or isinstance(iterable_or_total, int):
        bar = Progress(iterable_or_total, description=description, unit=unit, **kwargs)
    else:
        try:
            total: Optional[int] = len(iterable_or_total)   # type: ignore[arg-type]
        except TypeError:
            total = None
        bar = Progress(total, description=description, unit=unit, iterable=iterable_or_total, **kwargs)
    if display if display is not None else _in_kernel():
        from IPython.display import display as show
        show(bar)
    return bar
