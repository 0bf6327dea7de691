"""The static-rendering protocol of the live widgets: ``widget.snapshot()`` returns a :class:`Snapshot`.

Theory of operation
-------------------
A live widget's view exists only while a kernel runs it; a stored notebook, ``nbconvert --to html``, GitHub and
an untrusted notebook show its fallback instead. So every live widget has ``snapshot()``: a frozen picture of
its current state as an object with ``_repr_html_`` (what notebooks display) and a short, stable ``repr`` (the
``text/plain`` nbval also compares). Labs display a snapshot wherever the stored output must stay the same
from run to run.

A notebook is stored without its widgets' state, so a reopened notebook shows a live widget's ``text/html``
fallback until its cell runs again: :func:`stored_fallback` writes it, one note that names the widget, says
what it shows and tells the reader to run the cell (``kl-widget-fallback``, which the browser test looks for).

Mirrors no Kafka class.
"""
from __future__ import annotations

import html

__all__ = ["Snapshot", "stored_fallback"]


class Snapshot:
    """A frozen HTML picture of a live widget (``_repr_html_``), with a one-line text summary as its repr."""

    def __init__(self, html: str, summary: str):
        self.html = html
        self.summary = summary

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.summary

    def __eq__(self, other) -> bool:
        return isinstance(other, Snapshot) and (self.html, self.summary) == (other.html, other.summary)

    def __hash__(self) -> int:
        return hash((self.html, self.summary))


def stored_fallback(name: str, what_html: str, css_class: str = "") -> str:
    """The ``text/html`` a live widget ``name`` leaves in a stored notebook: what it shows (``what_html``, HTML
    already) and "run the cell", the one way to bring it back. ``css_class`` adds the widget's own class."""
    classes = " ".join(c for c in (css_class, "kl-widget-fallback") if c)
    return (f'<div class="{classes}" style="color:#555"><b>{html.escape(name)}</b>: {what_html}. '
            'Run the cell to see it live: a stored notebook keeps no live widget.</div>')
