"""The hierarchical timing wheel: thousands of timeouts, each added and cancelled in O(1).

Theory of operation
-------------------
Almost every request that waits in a purgatory finishes *before* its timeout (the followers catch up, the
bytes arrive), so the timer must make "start a timeout" and "cancel it" cheap; "fire it" is the rare case.
A priority queue costs O(log n) for both. Kafka uses a **timing wheel** instead (Varghese & Lauck's idea,
as in Netty's ``HashedWheelTimer``).

A wheel is a ring of ``wheel_size`` **buckets**, each one ``tick_ms`` wide, so the wheel spans
``interval = tick_ms * wheel_size``. Its ``current_time_ms`` is a multiple of ``tick_ms``: the bucket for
``current_time_ms`` is "now" and is never filled (a task due now has already expired and runs at once).
A task due at time ``t`` in ``[current + tick, current + interval)`` goes into bucket
``(t // tick_ms) % wheel_size``; the bucket's **expiration** is the start of its time slot,
``(t // tick_ms) * tick_ms``. When time reaches that expiration, every task in the bucket is due.

A task due beyond the wheel's span goes to an **overflow wheel**, created only when first needed, whose tick is
the lower wheel's whole interval (with 1 ms x 20 buckets: 20 ms, then 400 ms, then 8 s, ...). When a bucket
of an overflow wheel expires its tasks are not run: they are **reinserted** from the top. By then time has
moved, so each lands in a finer wheel (or, if now due, runs). A task therefore cascades down at most once per
level. The finest wheel fires a task when time reaches the start of its slot: with Kafka's ``tick_ms=1``
that is exactly its deadline (late only by however long the clock goes unpolled); with a coarser tick a task
may fire up to one tick *early* (the slot start rounds its deadline down).

Buckets that hold tasks sit in a **delay queue** ordered by expiration (:class:`DelayQueue`); the timer
(:mod:`kafkalab.purgatory.timer`) takes due buckets from its head, moves the wheels' clocks to the bucket's
expiration and flushes it. Only buckets are in that queue, never individual tasks: a few hundred entries
however many requests wait.

Cancelling is O(1): each :class:`TimerTaskEntry` knows the :class:`TimerTaskList` (bucket) holding it and
unlinks itself. A :class:`TimerTask` is held by at most one entry; adding it again replaces the old entry.

Mirrors: ``server-common/src/main/java/org/apache/kafka/server/util/timer/TimingWheel.java``,
``TimerTaskList.java``, ``TimerTaskEntry.java`` and ``TimerTask.java`` (the bucket queue is Java's
``java.util.concurrent.DelayQueue`` there).
"""
from __future__ import annotations

import heapq
import itertools
import threading
from typing import Callable, Iterator, Optional

__all__ = ["TimerTask", "FunctionTask", "TimerTaskEntry", "TimerTaskList", "TimingWheel", "DelayQueue", "TaskCounter"]


class TimerTask:
    """Something to run after ``delay_ms``: subclass and override :meth:`run`.

    ``cancel()`` removes the task from whatever bucket holds it. As in Kafka, a task that was never added (or
    was cancelled, or has fired) reports ``is_cancelled``: it is held by no entry.
    """

    def __init__(self, delay_ms: int):
        self.delay_ms = int(delay_ms)
        self._timer_task_entry: Optional[TimerTaskEntry] = None
        self._entry_lock = threading.Lock()

    def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cancel(self) -> None:
        with self._entry_lock:
            if self._timer_task_entry is not None:
                self._timer_task_entry.remove()
            self._timer_task_entry = None

    @property
    def is_cancelled(self) -> bool:
        return self._timer_task_entry is None

    def _set_timer_task_entry(self, entry: "TimerTaskEntry") -> None:
        with self._entry_lock:
            # A task lives in one bucket at a time: a new entry evicts the old one.
            if self._timer_task_entry is not None and self._timer_task_entry is not entry:
                self._timer_task_entry.remove()
            self._timer_task_entry = entry


class FunctionTask(TimerTask):
    """A TimerTask that calls a function (handy in tests and labs)."""

    def __init__(self, delay_ms: int, fn: Callable[[], None], name: str = ""):
        super().__init__(delay_ms)
        self.fn, self.name = fn, name

    def run(self) -> None:
        self.fn()

    def __repr__(self) -> str:
        return f"TimerTask({self.name or self.fn!r}, delay_ms={self.delay_ms})"


class TimerTaskEntry:
    """A task's place in one bucket, with the absolute time it is due."""

    __slots__ = ("timer_task", "expiration_ms", "list", "__weakref__")

    def __init__(self, timer_task: TimerTask, expiration_ms: int):
        self.timer_task = timer_task
        self.expiration_ms = int(expiration_ms)
        self.list: Optional[TimerTaskList] = None
        if timer_task is not None:
            timer_task._set_timer_task_entry(self)

    def cancelled(self) -> bool:
        return self.timer_task._timer_task_entry is not self

    def remove(self) -> None:
        # The entry may be moving between buckets on another thread; retry until it is in none.
        current = self.list
        while current is not None:
            current.remove(self)
            current = self.list

    def __repr__(self) -> str:
        return f"TimerTaskEntry({self.timer_task!r}, expiration_ms={self.expiration_ms})"


class TaskCounter:
    """The number of entries in all buckets of all wheels of one timer (``SystemTimer.size``)."""

    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def add(self, delta: int) -> None:
        with self._lock:
            self._value += delta

    @property
    def value(self) -> int:
        return self._value


class TimerTaskList:
    """One bucket: the entries due in one time slot, and that slot's expiration (-1 when not scheduled).

    Entries are kept in insertion order in a dict (Kafka uses a doubly linked list), so add and remove are
    O(1) and an entry can unlink itself.
    """

    def __init__(self, task_counter: TaskCounter):
        self._task_counter = task_counter
        self._entries: dict[TimerTaskEntry, None] = {}
        self._expiration = -1
        self._lock = threading.RLock()

    # -- expiration
    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the slot's expiration; True if it changed (the bucket must then be queued again)."""
        with self._lock:
            changed = self._expiration != expiration_ms
            self._expiration = expiration_ms
            return changed

    @property
    def expiration(self) -> int:
        return self._expiration

    # -- entries
    def add(self, entry: TimerTaskEntry) -> None:
        while True:
            entry.remove()  # out of any other bucket first (outside our lock, as Kafka does)
            with self._lock:
                if entry.list is None:
                    self._entries[entry] = None
                    entry.list = self
                    self._task_counter.add(1)
                    return

    def remove(self, entry: TimerTaskEntry) -> None:
        with self._lock:
            if entry.list is self:
                del self._entries[entry]
                entry.list = None
                self._task_counter.add(-1)

    def flush(self, fn: Callable[[TimerTaskEntry], None]) -> None:
        """Empty the bucket, unschedule it, and hand every entry to ``fn`` (reinsert or run)."""
        with self._lock:
            entries = list(self._entries)
            for entry in entries:
                self.remove(entry)
            self._expiration = -1
        for entry in entries:
            fn(entry)

    def tasks(self) -> list[TimerTask]:
        """The live (not cancelled) tasks in this bucket."""
        with self._lock:
            return [e.timer_task for e in self._entries if not e.cancelled()]

    def entries(self) -> list[TimerTaskEntry]:
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[TimerTask]:
        return iter(self.tasks())

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration={self._expiration}, tasks={len(self._entries)})"


class DelayQueue:
    """The buckets waiting to expire, earliest expiration first (Java's ``DelayQueue`` of TimerTaskLists).

    ``poll(now_ms)`` returns a bucket only once its expiration has passed; it never blocks (the timer decides
    how to wait).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def offer(self, bucket: TimerTaskList) -> bool:
        """Queue ``bucket`` at its current expiration; True if it is now the earliest one."""
        with self._lock:
            heapq.heappush(self._heap, (bucket.expiration, next(self._seq), bucket))
            return self._heap[0][2] is bucket

    def _drop_stale(self) -> None:
        while self._heap and self._heap[0][2].expiration != self._heap[0][0]:
            heapq.heappop(self._heap)

    def peek_expiration(self) -> Optional[int]:
        with self._lock:
            self._drop_stale()
            return self._heap[0][0] if self._heap else None

    def poll(self, now_ms: int) -> Optional[TimerTaskList]:
        with self._lock:
            self._drop_stale()
            if self._heap and self._heap[0][0] <= now_ms:
                return heapq.heappop(self._heap)[2]
            return None

    def __len__(self) -> int:
        return len(self._heap)


class TimingWheel:
    """One level of the hierarchy; ``overflow_wheel`` is the next, coarser one (None until needed)."""

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int, task_counter: TaskCounter,
                 queue: DelayQueue, level: int = 0):
        if tick_ms <= 0 or wheel_size <= 0:
            raise ValueError(f"tick_ms and wheel_size must be positive, got {tick_ms} and {wheel_size}")
        self.tick_ms = int(tick_ms)
        self.wheel_size = int(wheel_size)
        self.interval = self.tick_ms * self.wheel_size
        self.level = level
        self._task_counter = task_counter
        self._queue = queue
        self.buckets = [TimerTaskList(task_counter) for _ in range(self.wheel_size)]
        self.current_time_ms = int(start_ms) - int(start_ms) % self.tick_ms  # rounded down to a whole tick
        self.overflow_wheel: Optional[TimingWheel] = None
        self._overflow_lock = threading.Lock()

    def _add_overflow_wheel(self) -> None:
        with self._overflow_lock:
            if self.overflow_wheel is None:
                # The next level ticks once per full turn of this one, and starts at this wheel's time.
                self.overflow_wheel = TimingWheel(self.interval, self.wheel_size, self.current_time_ms,
                                                  self._task_counter, self._queue, self.level + 1)

    def bucket_index(self, time_ms: int) -> int:
        return (time_ms // self.tick_ms) % self.wheel_size

    def add(self, entry: TimerTaskEntry) -> bool:
        """Place ``entry`` in this wheel or a coarser one. False if it is cancelled or already due (the
        caller then runs it, unless cancelled)."""
        expiration = entry.expiration_ms
        if entry.cancelled():
            return False
        if expiration < self.current_time_ms + self.tick_ms:
            return False  # falls in the current bucket: already expired
        if expiration < self.current_time_ms + self.interval:
            virtual_id = expiration // self.tick_ms
            bucket = self.buckets[virtual_id % self.wheel_size]
            bucket.add(entry)
            # A bucket is queued once per turn of the wheel: only when its slot (expiration) changes.
            if bucket.set_expiration(virtual_id * self.tick_ms):
                self._queue.offer(bucket)
            return True
        if self.overflow_wheel is None:
            self._add_overflow_wheel()
        return self.overflow_wheel.add(entry)

    def advance_clock(self, time_ms: int) -> None:
        """Move this wheel (and the coarser ones) to ``time_ms``, rounded down to a tick. Never backwards."""
        if time_ms >= self.current_time_ms + self.tick_ms:
            self.current_time_ms = time_ms - time_ms % self.tick_ms
            if self.overflow_wheel is not None:
                self.overflow_wheel.advance_clock(self.current_time_ms)

    def wheels(self) -> list["TimingWheel"]:
        """This wheel and every overflow wheel above it, finest first."""
        out, wheel = [], self
        while wheel is not None:
            out.append(wheel)
            wheel = wheel.overflow_wheel
        return out

    def __repr__(self) -> str:
        return (f"TimingWheel(level={self.level}, tick_ms={self.tick_ms}, wheel_size={self.wheel_size}, "
                f"current_time_ms={self.current_time_ms})")
