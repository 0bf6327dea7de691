"""The per-client trace hook: every request a client sends and every response it gets, bytes and all.

Theory of operation
-------------------
A learner should be able to ask any kafkalab client "what exactly did you send?". Each client accepts
``trace=``: ``True`` (keep a :class:`ClientTrace`, readable as ``client.trace``) or any callable, which the
network client calls with one :class:`TraceEvent` per exchange once it is over -- answered, timed out, or
cut off by a disconnect. Fire-and-forget requests (Produce with ``acks=0``) produce an event with no response.

An event carries the frames exactly as they travelled (without the int32 size prefix), the decoded header and
body on both sides, and the timing (seconds since the client started, and the round trip in ms). The frames
are what :func:`kafkalab.viz.show_frame` draws::

    show_frame(ev.request_frame)
    show_frame(ev.response_frame, kind="response", api_key=ev.api_key, api_version=ev.api_version)

There is no global registry: two clients in one notebook trace separately. Tracing costs nothing when off;
when on, frames are kept in memory, so a ``ClientTrace`` keeps at most ``max_events`` (oldest dropped).
The hook runs on the client's I/O thread; an exception in it is recorded in ``ClientTrace.errors`` (for a
callable, printed once) and never breaks the client.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any, Callable, Optional

from kafkalab.protocol import api_name

__all__ = ["TraceEvent", "ClientTrace", "make_tracer"]


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One request/response exchange on one connection."""

    client_id: str
    node_id: int
    address: str
    correlation_id: int
    api_key: int
    api_version: int
    request: Any                       # kafkalab.protocol.Request (header + body)
    request_frame: bytes
    response: Any = None               # kafkalab.protocol.Response, or None
    response_frame: Optional[bytes] = None
    sent_at: float = 0.0               # seconds since the client started
    received_at: Optional[float] = None
    error: Optional[str] = None        # why there is no response, if there is none

    @property
    def api_name(self) -> str:
        return api_name(self.api_key)

    @property
    def elapsed_ms(self) -> Optional[float]:
        return None if self.received_at is None else round((self.received_at - self.sent_at) * 1000, 3)

    def summary(self) -> str:
        what = f"{self.api_name} v{self.api_version}"
        if self.response_frame is not None:
            outcome = f"{len(self.response_frame)} B back in {self.elapsed_ms} ms"
        else:
            outcome = self.error or "no response expected"
        return (f"node {self.node_id} ({self.address}) corr={self.correlation_id} {what}: "
                f"{len(self.request_frame)} B out, {outcome}")

    def row(self) -> dict:
        return {"node": self.node_id, "corr": self.correlation_id, "api": self.api_name,
                "version": self.api_version, "bytes_out": len(self.request_frame),
                "bytes_in": None if self.response_frame is None else len(self.response_frame),
                "sent_at": round(self.sent_at, 6), "elapsed_ms": self.elapsed_ms, "error": self.error}


class ClientTrace:
    """A bounded, thread-safe list of :class:`TraceEvent` (the default hook of ``trace=True``)."""

    def __init__(self, max_events: int = 10_000):
        self._events: collections.deque = collections.deque(maxlen=max_events)
        self._lock = threading.Lock()
        self.errors: list = []

    def __call__(self, event: TraceEvent) -> None:
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[TraceEvent]:
        with self._lock:
            return list(self._events)

    def __iter__(self):
        return iter(self.events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i):
        return self.events[i]

    def clear(self) -> None:
        with self._lock:
            self._events.clear()

    def of(self, api: Any) -> list[TraceEvent]:
        """Events of one API, by key (``0``) or name (``"Produce"``)."""
        return [e for e in self.events if e.api_key == api or e.api_name == api]

    def table(self) -> list[dict]:
        """One dict per event (``pandas.DataFrame(trace.table())``)."""
        return [e.row() for e in self.events]

    def __repr__(self) -> str:
        lines = [e.summary() for e in self.events[-20:]]
        more = len(self) - len(lines)
        head = f"ClientTrace({len(self)} events" + (f", last {len(lines)} shown" if more else "") + ")"
        return "\n  ".join([head] + lines)


def make_tracer(trace) -> tuple[Optional[Callable[[TraceEvent], None]], Optional[ClientTrace]]:
    """``trace=`` argument -> (hook to call, ClientTrace to expose)."""
    if trace is None or trace is False:
        return None, None
    if trace is True:
        recorder = ClientTrace()
        return recorder, recorder
    if isinstance(trace, ClientTrace):
        return trace, trace
    if callable(trace):
        return trace, None
    raise TypeError(f"trace must be True, False, a ClientTrace or a callable, not {type(trace).__name__}")
