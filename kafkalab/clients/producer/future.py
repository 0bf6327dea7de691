"""What ``send()`` returns: a small future of one record's :class:`RecordMetadata`.

Theory of operation
-------------------
A producer can hold hundreds of thousands of records that are not acknowledged yet, and each of them has a
future. ``concurrent.futures.Future`` is built for a few long tasks: every one carries a ``Condition`` (an
``RLock``, a deque, bound methods) and several lists. Filling a topic with a million records then spent
most of its time in Python's cyclic garbage collector. That collector walks every live container, and those
futures were about six containers per record.

:class:`FutureRecordMetadata` keeps the same calls an application makes: ``result(timeout)``,
``exception(timeout)``, ``done()`` and ``add_done_callback(fn)``. It is a single slotted object. A waiting
``threading.Event`` is created only when some thread actually waits before the answer has arrived. The I/O
thread completes it exactly once, then wakes any waiter and runs the callbacks.

It is not a ``concurrent.futures.Future``: ``concurrent.futures.wait`` and ``asyncio.wrap_future`` do not
accept it. ``cancel()`` returns False, as in Java: a record handed to the producer cannot be taken back.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/FutureRecordMetadata.java``.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import Any, Callable, Optional

__all__ = ["FutureRecordMetadata"]

log = logging.getLogger(__name__)

# One lock for all futures: it only guards the rare meetings of a waiter (or a callback being added) with the
# completion, a few instructions each, so sharing it costs nothing measurable and saves a lock per record.
_LOCK = threading.Lock()


class FutureRecordMetadata:
    """The future of one sent record (see the module docstring)."""

    __slots__ = ("_done", "_value", "_error", "_event", "_callbacks")

    def __init__(self):
        self._done = False
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._event: Optional[threading.Event] = None
        self._callbacks: Optional[list] = None

    # -- the application's side -------------------------------------------------------------------------------
    def done(self) -> bool:
        return self._done

    def running(self) -> bool:
        return not self._done

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        """Always False: the record is the producer's now (Java's ``FutureRecordMetadata`` cannot cancel)."""
        return False

    def result(self, timeout: Optional[float] = None):
        """The :class:`RecordMetadata`; raises the send's error, or ``TimeoutError`` after ``timeout`` seconds."""
        self._wait(timeout)
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        self._wait(timeout)
        return self._error

    def add_done_callback(self, fn: Callable[["FutureRecordMetadata"], Any]) -> None:
        """Call ``fn(future)`` once the record is acknowledged or failed (at once, if it already is)."""
        with _LOCK:
            if not self._done:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        self._run_callback(fn)

    def _wait(self, timeout: Optional[float]) -> None:
        if self._done:
            return
        with _LOCK:
            if self._done:
                return
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        if not event.wait(timeout):
            raise concurrent.futures.TimeoutError()

    # -- the I/O thread's side --------------------------------------------------------------------------------
    def set_result(self, value) -> None:
        self._complete(value, None)

    def set_exception(self, error: BaseException) -> None:
        self._complete(None, error)

    def _complete(self, value, error: Optional[BaseException]) -> None:
        with _LOCK:
            if self._done:
                raise concurrent.futures.InvalidStateError(f"{self!r} is already done")
            self._value, self._error, self._done = value, error, True
            event, callbacks, self._callbacks = self._event, self._callbacks, None
        if event is not None:
            event.set()
        if callbacks:
            for fn in callbacks:
                self._run_callback(fn)

    def _run_callback(self, fn) -> None:
        try:
            fn(self)
        except Exception:  # noqa: BLE001 -- as concurrent.futures does: a bad callback must not stop the others
            log.exception("exception calling callback for %r", self)

    def __repr__(self) -> str:
        if not self._done:
            return "<FutureRecordMetadata pending>"
        if self._error is not None:
            return f"<FutureRecordMetadata failed: {type(self._error).__name__}>"
        return f"<FutureRecordMetadata {self._value!r}>"
