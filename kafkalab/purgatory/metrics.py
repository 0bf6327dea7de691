"""Meters: counting events and their rate, for the purgatory's ``ExpiresPerSec``.

Theory of operation
-------------------
Kafka reports its purgatories through Yammer metrics: two gauges per purgatory (``PurgatorySize``, the
entries in its watch lists, and ``NumDelayedOperations``, the operations waiting in its timer) and a
**meter** ``ExpiresPerSec`` counting requests that timed out -- for produce per partition and in total
(``DelayedProduceMetrics``), for fetch by ``fetcherType`` = ``consumer`` or ``follower``
(``DelayedFetchMetrics``). A meter keeps a count and rates; Yammer's are exponentially weighted.

:class:`Meter` keeps the count, the mean rate since it was created and the rate over the last minute,
computed from event times on an injectable clock so a lab with a MockTime gets exact numbers.

Mirrors: ``com.yammer.metrics.core.Meter`` as used by ``server-common/.../metrics/KafkaMetricsGroup.java``.
"""
from __future__ import annotations

import collections
import threading

from kafkalab.common.time import SYSTEM, Time

__all__ = ["Meter"]


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
