"""Pace a loop to an approximate number of operations per second, as Kafka's ``ThroughputThrottler``.

Theory of operation
-------------------
Mirrors ``org.apache.kafka.server.util.ThroughputThrottler`` (server-common), which
``kafka-producer-perf-test.sh`` uses for ``--throughput``. The loop asks :meth:`should_throttle` after each
operation with how many it has done so far and the time it started the last one: the answer is yes when the
average rate since the start is above the target. :meth:`throttle` then adds one period (``1 / target``
seconds) to a *sleep deficit* and sleeps only once the deficit reaches 2 ms, so a high target does not pay for
thousands of tiny sleeps; after sleeping the deficit is cleared. A negative target never throttles; a target
of 0 blocks until :meth:`wakeup`. The clock and the sleep are injected (``now_ms``, ``sleep``) so tests drive it
without waiting.
"""
from __future__ import annotations

import threading
import time as _time
from typing import Callable

__all__ = ["ThroughputThrottler"]

NS_PER_MS = 1_000_000
NS_PER_SEC = 1000 * NS_PER_MS
MIN_SLEEP_NS = 2 * NS_PER_MS


class ThroughputThrottler:
    def __init__(self, target_throughput: float, start_ms: int,
                 sleep: Callable[[float], None] = _time.sleep) -> None:
        self.start_ms = start_ms
        self.target_throughput = target_throughput
        self.sleep_time_ns = int(NS_PER_SEC / target_throughput) if target_throughput > 0 else None
        self.sleep_deficit_ns = 0
        self._sleep = sleep
        self._wakeup = threading.Event()

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        """True when ``amount_so_far`` operations since ``start_ms`` are more than the target rate allows."""
        if self.target_throughput < 0:
            return False
        elapsed_sec = (send_start_ms - self.start_ms) / 1000.0
        return elapsed_sec > 0 and amount_so_far / elapsed_sec > self.target_throughput

    def throttle(self) -> None:
        """Sleep about one period on average: accumulate it, sleep once the deficit is at least 2 ms."""
        if self.target_throughput == 0:
            self._wakeup.wait()
            return
        self.sleep_deficit_ns += self.sleep_time_ns
        if self.sleep_deficit_ns >= MIN_SLEEP_NS:
            if not self._wakeup.is_set():
                self._sleep(self.sleep_deficit_ns / NS_PER_SEC)
            self._wakeup.clear()
            self.sleep_deficit_ns = 0

    def wakeup(self) -> None:
        """End a sleep (or the wait of a zero target) early."""
        self._wakeup.set()
