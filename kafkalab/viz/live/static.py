"""The static-rendering protocol of the live widgets: ``widget.snapshot()`` returns a :class:`Snapshot`.

Theory of operation
-------------------
A live widget's view exists only while a kernel runs it; a stored notebook, ``nbconvert --to html``, GitHub and
an untrusted notebook show its fallback instead. So every live widget has ``snapshot()``: a frozen picture of
its current state as an object with ``_repr_html_`` (what notebooks display) and a short, stable ``repr`` (the
``text/plain`` nbval also compares). Labs display a snapshot wherever the stored output must stay the same
from run to run.

Mirrors no Kafka class.
"""
from __future__ import annotations

__all__ = ["Snapshot"]


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
