"""The system timer: a timing wheel driven by a clock, which runs tasks when they fall due.

Theory of operation
-------------------
:class:`~kafkalab.purgatory.timing_wheel.TimingWheel` only sorts tasks into buckets; something has to watch
the clock. In Kafka that is ``SystemTimer``: ``add(task)`` computes the task's absolute expiration
(``now + delay_ms``) and places it in the wheel -- or, if it is already due, hands it to a one-thread executor
to run. A purgatory's "expiration reaper" thread calls ``advanceClock(200)`` in a loop: wait up to 200 ms for
the earliest bucket in the delay queue to expire, then, for each expired bucket, move the wheels' clocks to
the bucket's expiration and flush it, reinserting every entry. Entries from an overflow bucket drop into a
finer wheel; entries from a finest-wheel bucket are due and run.

kafkalab keeps that logic but separates it from waiting (a sans-IO core):

* :meth:`SystemTimer.poll` -- "it is now ``now_ms``": flush every bucket due by then and run the due tasks.
  It never sleeps. With a :class:`~kafkalab.common.time.MockTime`, ``time.on_advance(timer.poll)`` makes
  timeouts fire exactly when a test or a lab moves the clock.
* :meth:`SystemTimer.advance_clock` -- Kafka's shape: if nothing is due, wait up to ``timeout_ms`` (through
  the injected ``Time``: a real sleep, or an instant advance of a MockTime), then poll.
* :meth:`SystemTimer.run` -- the reaper as an asyncio coroutine for the broker's event loop: it sleeps until
  the next bucket expiration (at most ``max_idle_ms``) and is woken early when a new, earlier bucket appears.

Timer time is Kafka's ``hiResClockMs``: a monotonic clock in milliseconds (``Time.nanoseconds() //
1_000_000``), so a wall-clock jump never fires or delays timeouts.

For the labs, :meth:`SystemTimer.wheels` returns every wheel with its buckets in time order (slot range,
expiration, task count), and :meth:`SystemTimer.describe` prints them as the table in ``TimingWheel.java``'s
class comment.

Mirrors: ``server-common/src/main/java/org/apache/kafka/server/util/timer/SystemTimer.java`` and ``Timer.java``
(and the reaper loop of ``DelayedOperationPurgatory.ExpiredOperationReaper``).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Callable, NamedTuple, Optional

from kafkalab.common.time import SYSTEM, Time
from kafkalab.purgatory.timing_wheel import DelayQueue, TaskCounter, TimerTask, TimerTaskEntry, TimingWheel

__all__ = ["SystemTimer", "WheelView", "BucketView"]

log = logging.getLogger("kafkalab.purgatory.SystemTimer")


class BucketView(NamedTuple):
    """One bucket as a lab draws it. ``start_ms``..``end_ms`` is the slot it covers in the wheel's current
    turn (inclusive, as Kafka's table writes ``[c, c+2]``); ``expiration_ms`` is -1 when it is not queued."""

    level: int
    index: int
    start_ms: int
    end_ms: int
    expiration_ms: int
    task_count: int
    tasks: tuple


class WheelView(NamedTuple):
    level: int
    tick_ms: int
    wheel_size: int
    interval_ms: int
    current_time_ms: int
    buckets: tuple  # of BucketView, the current slot first


def _run_task(task: TimerTask) -> None:
    try:
        task.run()
    except Exception:  # an expiring task must not break the reaper (Kafka's executor logs and carries on)
        log.exception("timer task %r failed", task)


class SystemTimer:
    """A hierarchical timing wheel with a clock.

    ``executor(task)`` runs a due task; by default inline, on the thread that called ``add``/``poll``.
    ``tick_ms=1, wheel_size=20`` are Kafka's defaults.
    """

    def __init__(self, executor_name: str = "timer", *, time: Time = SYSTEM, tick_ms: int = 1,
                 wheel_size: int = 20, start_ms: Optional[int] = None,
                 executor: Optional[Callable[[TimerTask], None]] = None):
        self.executor_name = executor_name
        self.time = time
        self._executor = executor or _run_task
        self._queue = DelayQueue()
        self._task_counter = TaskCounter()
        self.timing_wheel = TimingWheel(tick_ms, wheel_size, self.now_ms() if start_ms is None else start_ms,
                                        self._task_counter, self._queue)
        # Kafka uses a read/write lock: adds share it, ticking takes it exclusively. One RLock is enough here.
        self._lock = threading.RLock()
        self._wakeup: Optional[Callable[[], None]] = None
        self._closed = False

    # ------------------------------------------------------------------------------------------ clock
    def now_ms(self) -> int:
        """The timer's clock: monotonic milliseconds (Kafka's ``Time.hiResClockMs``)."""
        return self.time.nanoseconds() // 1_000_000

    # ------------------------------------------------------------------------------------------ adding
    def add(self, task: TimerTask) -> None:
        """Start ``task``'s timeout: it runs ``task.delay_ms`` from now, unless cancelled first."""
        due: list[TimerTask] = []
        now = self.now_ms()
        with self._lock:
            head_before = self._queue.peek_expiration()
            self._add_entry(TimerTaskEntry(task, task.delay_ms + now), due)
            head_after = self._queue.peek_expiration()
        for t in due:
            self._executor(t)
        if head_after is not None and head_after <= now:
            # The wheels' clocks lag (they move only when a bucket is flushed), so a task due now may have
            # landed in a bucket that is already due. Kafka's reaper would take it at once; so do we.
            self._tick(now)
        elif head_after is not None and head_after != head_before and self._wakeup is not None:
            self._wakeup()  # an earlier bucket: the driver must not sleep past it

    def _add_entry(self, entry: TimerTaskEntry, due: list) -> None:
        if not self.timing_wheel.add(entry):
            # Already due, or cancelled: run it unless cancelled.
            if not entry.cancelled():
                due.append(entry.timer_task)

    # ------------------------------------------------------------------------------------------ ticking
    def _tick(self, now_ms: int) -> tuple[bool, list[TimerTask]]:
        due: list[TimerTask] = []
        flushed = False
        with self._lock:
            while True:
                bucket = self._queue.poll(now_ms)
                if bucket is None:
                    break
                flushed = True
                self.timing_wheel.advance_clock(bucket.expiration)
                bucket.flush(lambda entry: self._add_entry(entry, due))
        ran = []
        for task in due:
            # A task can be cancelled between the flush and now (its operation completed): skip it then.
            if not task.is_cancelled:
                ran.append(task)
                self._executor(task)
        return flushed, ran

    def poll(self, now_ms: Optional[int] = None) -> list[TimerTask]:
        """Flush every bucket due by ``now_ms`` (default: the timer's clock) and run the due tasks.

        Returns the tasks that were due (and have been handed to the executor). Never sleeps.
        """
        return self._tick(self.now_ms() if now_ms is None else now_ms)[1]

    def advance_clock(self, timeout_ms: int = 0) -> bool:
        """Kafka's ``advanceClock``: if no bucket is due, wait up to ``timeout_ms`` (via ``time.sleep``) for
        the earliest one, then flush what is due. True if some bucket was flushed."""
        now = self.now_ms()
        nxt = self._queue.peek_expiration()
        if timeout_ms > 0 and (nxt is None or nxt > now):
            self.time.sleep(timeout_ms if nxt is None else min(timeout_ms, nxt - now))
        return self._tick(self.now_ms())[0]

    def next_expiration_ms(self) -> Optional[int]:
        """Expiration of the earliest queued bucket, in timer time, or None if no bucket is queued."""
        return self._queue.peek_expiration()

    def size(self) -> int:
        """Number of task entries in the wheels (cancelled ones leave at once)."""
        return self._task_counter.value

    def __len__(self) -> int:
        return self.size()

    # ------------------------------------------------------------------------------------------ asyncio
    async def run(self, *, max_idle_ms: int = 200, on_tick: Optional[Callable[[], None]] = None) -> None:
        """Expire tasks on the running event loop until cancelled (or :meth:`shutdown`).

        Sleeps until the next bucket expiration, never longer than ``max_idle_ms`` (Kafka's reaper polls
        every 200 ms), and wakes early when :meth:`add` creates an earlier bucket (thread-safe).
        ``on_tick`` runs after every poll (a purgatory purges its watch lists there).
        """
        loop = asyncio.get_running_loop()
        event = asyncio.Event()

        def wakeup() -> None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # loop closed
                pass

        self._wakeup = wakeup
        try:
            while not self._closed:
                event.clear()
                self.poll()
                if on_tick is not None:
                    on_tick()
                nxt = self._queue.peek_expiration()
                delay = max_idle_ms if nxt is None else min(max(nxt - self.now_ms(), 0), max_idle_ms)
                if delay > 0 and not event.is_set():
                    try:
                        await asyncio.wait_for(event.wait(), delay / 1000.0)
                    except asyncio.TimeoutError:
                        pass
                else:
                    await asyncio.sleep(0)
        finally:
            if self._wakeup is wakeup:
                self._wakeup = None

    def shutdown(self) -> None:
        self._closed = True
        if self._wakeup is not None:
            self._wakeup()

    # ------------------------------------------------------------------------------------------ lab views
    def wheels(self) -> list[WheelView]:
        """Every wheel, finest first, with its buckets in time order starting at the current slot."""
        views = []
        with self._lock:
            for wheel in self.timing_wheel.wheels():
                buckets = []
                for k in range(wheel.wheel_size):
                    start = wheel.current_time_ms + k * wheel.tick_ms
                    index = wheel.bucket_index(start)
                    bucket = wheel.buckets[index]
                    tasks = tuple(bucket.tasks())
                    buckets.append(BucketView(wheel.level, index, start, start + wheel.tick_ms - 1,
                                              bucket.expiration, len(tasks), tasks))
                views.append(WheelView(wheel.level, wheel.tick_ms, wheel.wheel_size, wheel.interval,
                                       wheel.current_time_ms, tuple(buckets)))
        return views

    def describe(self, *, relative_to: Optional[int] = None, show_empty: bool = True) -> str:
        """The wheels as a text table, one line per level: ``[start,end]:tasks`` per bucket.

        Times are printed relative to ``relative_to`` (default: the finest wheel's current time), so they
        read like Kafka's ``c``, ``c+1``, ... ``show_empty=False`` hides empty buckets.
        """
        views = self.wheels()
        base = views[0].current_time_ms if relative_to is None else relative_to
        lines = [f"{self.executor_name}: {self.size()} task(s), now={self.now_ms() - base:+d} (relative to {base})",
                 "level  tick_ms  buckets"]
        for w in views:
            cells = []
            for b in w.buckets:
                if not show_empty and b.task_count == 0:
                    continue
                slot = (f"[{b.start_ms - base}]" if b.start_ms == b.end_ms
                        else f"[{b.start_ms - base},{b.end_ms - base}]")
                cells.append(f"{slot}:{b.task_count}")
            lines.append(f"{w.level + 1:<6} {w.tick_ms:<8} " + " ".join(cells))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"SystemTimer({self.executor_name!r}, size={self.size()}, "
                f"levels={len(self.timing_wheel.wheels())})")
