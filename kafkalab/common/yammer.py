"""Yammer meters and timers: how Kafka's server counts events, for the purgatory and the controller.

Theory of operation
-------------------
Kafka's broker reports itself through Yammer metrics, made by ``KafkaMetricsGroup`` and named as JMX MBeans
(``kafka.<package>:type=<class>,name=<name>``). Two kinds matter here:

* a **meter** keeps a count of events and their rates (Yammer's are exponentially weighted): the purgatory's
  ``ExpiresPerSec`` (requests that timed out -- for produce per partition and in total, for fetch by
  ``fetcherType`` = ``consumer`` or ``follower``), the controller's ``UncleanLeaderElectionsPerSec``;
* a **timer** is a meter of calls plus a histogram of how long each took (in ms): the controller's
  ``<State>RateAndTimeMs``, one per kind of controller event (``LeaderElectionRateAndTimeMs`` for broker
  changes).

:class:`Meter` keeps the count, the mean rate since it was created and the rate over the last minute, computed
from event times on an injectable clock so a lab with a MockTime gets exact numbers. :class:`Timer` adds the
durations' count, minimum, mean and maximum (Yammer keeps a sample of them for percentiles; kafkalab does not).
Gauges (``PurgatorySize``, ``ActiveControllerCount``) need no class: they are values read when asked.

Mirrors: ``com.yammer.metrics.core.Meter`` and ``Timer`` as used by
``server-common/.../metrics/KafkaMetricsGroup.java`` (``newMeter``, ``newTimer``).
"""
from __future__ import annotations

import collections
import math
import threading
from contextlib import contextmanager
from typing import Iterator

from kafkalab.common.time import SYSTEM, Time

__all__ = ["Meter", "Timer"]


class Meter:
    """A count of events with its mean rate and its rate over the last ``window_ms`` (one minute)."""

    def __init__(self, time: Time = SYSTEM, *, event_type: str = "requests", window_ms: int = 60_000):
        self.time = time
        self.event_type = event_type
        self.window_ms = window_ms
        self._start_ms = time.nanoseconds() // 1_000_000
        self._count = 0
        self._recent: collections.deque = collections.deque()  # (time_ms, n)
        self._lock = threading.Lock()

    def _now(self) -> int:
        return self.time.nanoseconds() // 1_000_000

    def mark(self, n: int = 1) -> None:
        now = self._now()
        with self._lock:
            self._count += n
            self._recent.append((now, n))
            self._trim(now)

    def _trim(self, now: int) -> None:
        while self._recent and self._recent[0][0] <= now - self.window_ms:
            self._recent.popleft()

    @property
    def count(self) -> int:
        return self._count

    @property
    def mean_rate(self) -> float:
        """Events per second since the meter was created."""
        elapsed = self._now() - self._start_ms
        return self._count * 1000.0 / elapsed if elapsed > 0 else 0.0

    @property
    def one_minute_rate(self) -> float:
        """Events per second over the last minute (or since creation, if younger)."""
        now = self._now()
        with self._lock:
            self._trim(now)
            events = sum(n for _, n in self._recent)
        span = min(self.window_ms, now - self._start_ms)
        return events * 1000.0 / span if span > 0 else 0.0

    def snapshot(self) -> dict:
        return {"count": self.count, "mean_rate": self.mean_rate, "one_minute_rate": self.one_minute_rate}

    def __repr__(self) -> str:
        return f"Meter(count={self._count}, one_minute_rate={self.one_minute_rate:.3f}/s)"


class Timer:
    """A meter of calls and the durations they took, in milliseconds (Yammer's ``Timer`` with Kafka's
    ``TimeUnit.MILLISECONDS`` durations and per-second rates), measured on ``time``."""

    def __init__(self, time: Time = SYSTEM):
        self.time = time
        self.meter = Meter(time, event_type="calls")
        self._sum_ms = 0.0
        self._min_ms = math.inf
        self._max_ms = -math.inf
        self._lock = threading.Lock()

    def update(self, duration_ms: float) -> None:
        """One call that took ``duration_ms``."""
        with self._lock:
            self._sum_ms += duration_ms
            self._min_ms = min(self._min_ms, duration_ms)
            self._max_ms = max(self._max_ms, duration_ms)
        self.meter.mark()

    @contextmanager
    def time_block(self) -> Iterator[None]:
        """Time the block (Yammer's ``Timer.time``): recorded when it ends, also when it raises."""
        start = self.time.nanoseconds()
        try:
            yield
        finally:
            self.update((self.time.nanoseconds() - start) / 1e6)

    @property
    def count(self) -> int:
        return self.meter.count

    @property
    def mean_ms(self) -> float:
        """The mean duration (0 before any call, as Yammer reports it)."""
        return self._sum_ms / self.count if self.count else 0.0

    @property
    def min_ms(self) -> float:
        return self._min_ms if self.count else 0.0

    @property
    def max_ms(self) -> float:
        return self._max_ms if self.count else 0.0

    def snapshot(self) -> dict:
        return {**self.meter.snapshot(), "min_ms": self.min_ms, "mean_ms": self.mean_ms, "max_ms": self.max_ms}

    def __repr__(self) -> str:
        return f"Timer(count={self.count}, mean={self.mean_ms:.3f} ms, max={self.max_ms:.3f} ms)"
