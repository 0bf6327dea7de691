"""Clocks: the real one, and one a test or a notebook can move by hand.

Theory of operation
-------------------
Much of Kafka is decided by the clock: when a follower falls out of the ISR (``replica.lag.time.max.ms``),
when a consumer's session expires, when a delayed request in purgatory times out, when a segment is old
enough to roll or to delete. Kafka never reads the wall clock directly in that code; it asks a ``Time``
object, and its tests pass a ``MockTime`` that only moves when told to. kafkalab does the same, so a test or
a lab can say "advance 30 seconds" and watch the ISR shrink, deterministically, without sleeping.

* ``milliseconds()`` -- wall-clock time in ms since the epoch (timestamps, retention by time).
* ``nanoseconds()`` -- a monotonic clock for measuring durations.
* ``sleep(ms)`` -- real sleep, or (for MockTime) an instant advance.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/utils/Time.java``, ``SystemTime.java`` and
``clients/src/test/java/org/apache/kafka/common/utils/MockTime.java``.
"""
from __future__ import annotations

import threading
import time as _time
from typing import Callable, Protocol

__all__ = ["Time", "SystemTime", "MockTime", "SYSTEM"]


class Time(Protocol):
    def milliseconds(self) -> int: ...

    def nanoseconds(self) -> int: ...

    def sleep(self, ms: float) -> None: ...


class SystemTime:
    """The real clock."""

    def milliseconds(self) -> int:
        return _time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return _time.monotonic_ns()

    def sleep(self, ms: float) -> None:
        _time.sleep(ms / 1000.0)

    def __repr__(self) -> str:
        return "SystemTime()"


SYSTEM = SystemTime()


class MockTime:
    """A clock that moves only when told to (``advance``/``sleep``), optionally a little on every read.

    ``auto_tick_ms`` advances the clock on every ``milliseconds()`` call, as Kafka's ``MockTime(autoTickMs)``
    does, for code that loops until time has passed. Listeners registered with ``on_advance`` run after each
    advance (a mock scheduler uses this to run the tasks that have become due).
    """

    def __init__(self, start_ms: int = 1_700_000_000_000, auto_tick_ms: int = 0):
        self._ms = start_ms
        self._ns = 0
        self.auto_tick_ms = auto_tick_ms
        self._lock = threading.RLock()
        self._listeners: list[Callable[[], None]] = []

    def milliseconds(self) -> int:
        with self._lock:
            now = self._ms
            if self.auto_tick_ms:
                self._advance(self.auto_tick_ms)
            return now

    def nanoseconds(self) -> int:
        with self._lock:
            return self._ns

    def sleep(self, ms: float) -> None:
        self.advance(ms)

    def advance(self, ms: float) -> None:
        """Move the clock forward and run whatever became due."""
        if ms < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._advance(ms)
        for listener in list(self._listeners):
            listener()

    def _advance(self, ms: float) -> None:
        self._ms += int(ms)
        self._ns += int(ms * 1_000_000)

    def on_advance(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener`` (a closed client's clock, say); unknown listeners are ignored."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def __repr__(self) -> str:
        return f"MockTime(ms={self._ms})"
