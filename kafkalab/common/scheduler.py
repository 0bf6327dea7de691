"""Schedulers: run background work (retention, flushes, checkpoints, ISR checks) now, later, or periodically.

Theory of operation
-------------------
A broker does a lot besides answering requests: every ``log.retention.check.interval.ms`` it deletes old
segments, every ``log.flush.offset.checkpoint.interval.ms`` it writes its recovery points, the leader checks
its followers' lag, the group coordinator expires sessions. Kafka gives all of that to a ``Scheduler``.

* :class:`ThreadScheduler` runs tasks on one background thread with real time (Kafka's ``KafkaScheduler``).
  A task may also be routed to an ``executor`` (for example ``loop.call_soon_threadsafe`` of the broker's
  event loop), so that it runs on the same thread as the request handlers and needs no locks.
* :class:`MockScheduler` runs tasks only when its :class:`~kafkalab.common.time.MockTime` is advanced, in
  due order, on the thread that advanced the clock (Kafka's ``MockScheduler``): tests and labs stay
  deterministic.

Mirrors: ``server-common/src/main/java/org/apache/kafka/server/util/{Scheduler,KafkaScheduler}.java`` and
``server-common/src/test/java/org/apache/kafka/server/util/MockScheduler.java``.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
from typing import Callable, Optional, Protocol

from kafkalab.common.time import SYSTEM, MockTime, Time

__all__ = ["Scheduler", "ScheduledTask", "ThreadScheduler", "MockScheduler"]

log = logging.getLogger(__name__)


class ScheduledTask:
    """A handle to a scheduled task; ``cancel()`` stops it from running again."""

    __slots__ = ("name", "fn", "due_ms", "period_ms", "cancelled", "seq")

    def __init__(self, name: str, fn: Callable[[], None], due_ms: int, period_ms: int, seq: int):
        self.name, self.fn, self.due_ms, self.period_ms, self.seq = name, fn, due_ms, period_ms, seq
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: "ScheduledTask") -> bool:
        return (self.due_ms, self.seq) < (other.due_ms, other.seq)

    def __repr__(self) -> str:
        return f"ScheduledTask({self.name!r}, due={self.due_ms}, period={self.period_ms})"


class Scheduler(Protocol):
    time: Time

    def schedule(self, name: str, fn: Callable[[], None], delay_ms: int = 0, period_ms: int = -1) -> ScheduledTask: ...

    def shutdown(self) -> None: ...


class _Queue:
    def __init__(self, time: Time):
        self.time = time
        self._heap: list[ScheduledTask] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def push(self, name, fn, delay_ms, period_ms) -> ScheduledTask:
        task = ScheduledTask(name, fn, self.time.milliseconds() + max(0, int(delay_ms)), int(period_ms),
                             next(self._seq))
        with self._lock:
            heapq.heappush(self._heap, task)
        return task

    def pop_due(self, now_ms: int) -> Optional[ScheduledTask]:
        with self._lock:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            if self._heap and self._heap[0].due_ms <= now_ms:
                return heapq.heappop(self._heap)
            return None

    def next_due(self) -> Optional[int]:
        with self._lock:
            live = [t.due_ms for t in self._heap if not t.cancelled]
            return min(live) if live else None

    def reschedule(self, task: ScheduledTask, now_ms: int) -> None:
        if task.period_ms >= 0 and not task.cancelled:
            task.due_ms = max(task.due_ms + task.period_ms, now_ms if task.period_ms == 0 else 0)
            task.seq = next(self._seq)
            with self._lock:
                heapq.heappush(self._heap, task)


def _run(task: ScheduledTask) -> None:
    try:
        task.fn()
    except Exception:  # a failing task must not kill the scheduler (Kafka logs and carries on)
        log.exception("scheduled task %s failed", task.name)


class ThreadScheduler:
    """Real-time scheduler: one daemon thread sleeps until the next task is due.

    ``executor(fn)`` decides where a due task runs; by default on the scheduler thread itself.
    """

    def __init__(self, time: Time = SYSTEM, executor: Optional[Callable[[Callable[[], None]], None]] = None,
                 name: str = "kafka-scheduler"):
        self.time = time
        self._queue = _Queue(time)
        self._executor = executor
        self._wake = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def schedule(self, name: str, fn: Callable[[], None], delay_ms: int = 0, period_ms: int = -1) -> ScheduledTask:
        task = self._queue.push(name, fn, delay_ms, period_ms)
        self._wake.set()
        return task

    def _loop(self) -> None:
        while not self._stopped:
            now = self.time.milliseconds()
            task = self._queue.pop_due(now)
            if task is None:
                due = self._queue.next_due()
                timeout = None if due is None else max(0.0, (due - now) / 1000.0)
                self._wake.wait(timeout if timeout is None else min(timeout, 1.0))
                self._wake.clear()
                continue
            if self._executor is not None:
                self._executor(lambda t=task: _run(t))
            else:
                _run(task)
            self._queue.reschedule(task, self.time.milliseconds())

    def shutdown(self) -> None:
        self._stopped = True
        self._wake.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)


class MockScheduler:
    """Runs tasks when its MockTime advances, in due order, on the thread that advanced the clock."""

    def __init__(self, time: MockTime):
        self.time = time
        self._queue = _Queue(time)
        self._running = False
        time.on_advance(self.tick)

    def schedule(self, name: str, fn: Callable[[], None], delay_ms: int = 0, period_ms: int = -1) -> ScheduledTask:
        task = self._queue.push(name, fn, delay_ms, period_ms)
        if delay_ms <= 0:
            self.tick()
        return task

    def tick(self) -> None:
        """Run every task that is due now (periodic tasks may run several times if time jumped far)."""
        if self._running:
            return
        self._running = True
        try:
            while True:
                now = self.time.milliseconds()
                task = self._queue.pop_due(now)
                if task is None:
                    return
                _run(task)
                self._queue.reschedule(task, now)
        finally:
            self._running = False

    def shutdown(self) -> None:
        pass
