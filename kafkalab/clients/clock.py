"""A client's clock: the injected ``Time`` every timeout is decided by, and waits on the event loop that obey it.

Theory of operation
-------------------
A client is full of deadlines: ``request.timeout.ms`` for an answer, ``delivery.timeout.ms`` for a record,
``linger.ms`` for a batch, ``max.poll.interval.ms`` between two ``poll()`` calls, ``metadata.max.age.ms``,
the reconnect backoff, ``poll(timeout)`` itself. Kafka's Java client never asks the operating system what time
it is for these: it asks a ``Time`` object, so that its tests can pass a ``MockTime`` and *move* the clock. The
broker, the purgatory and the group coordinator of kafkalab already do that; the clients do too, through this
class:

* every decision ("has it expired?") compares :meth:`ClientClock.milliseconds` -- the injected ``Time`` --
  with a deadline;
* every wait on the client's event loop (:meth:`sleep`, :meth:`done`, :meth:`wait_for`, :meth:`event`) is a
  loop: wait for the thing *or* for the time that is left, then look at the clock again. With the real clock
  that is one ordinary asyncio wait. With a ``MockTime`` the time left only shrinks when somebody calls
  ``advance()``, and each advance wakes the waits (the clock's ``on_advance`` listener) so they re-decide at
  once: a lab freezes a client's clock, advances it past ``request.timeout.ms``, and watches the request fail.

With a ``MockTime`` nothing client-side expires by itself: ``poll(timeout=5)`` waits until records arrive or
the clock has been advanced by five seconds (``MockTime(auto_tick_ms=...)`` makes every reading move it a
little, for code that should make progress on its own).

Mirrors ``clients/src/main/java/org/apache/kafka/common/utils/Time.java`` and ``Timer.java`` as the Java
clients use them (``KafkaConsumer(config, ..., time)``, ``KafkaProducer(config, ..., time)``,
``NetworkClient(..., time, ...)``).
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from kafkalab.common.time import SYSTEM, Time

__all__ = ["ClientClock"]


class ClientClock:
    """The injected :class:`~kafkalab.common.time.Time` of one client and waits that end when it says so.

    The waits must run on one event loop (the client's); :meth:`advance` listeners may fire on any thread.
    """

    def __init__(self, time: Optional[Time] = None):
        self.time: Time = time if time is not None else SYSTEM
        self._mock = hasattr(self.time, "on_advance")
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._ticks: set[asyncio.Future] = set()
        self._closed = False

    # ------------------------------------------------------------------------------------------ reading
    def milliseconds(self) -> int:
        return self.time.milliseconds()

    @property
    def is_mock(self) -> bool:
        """True when time moves only when told to (a ``MockTime``)."""
        return self._mock

    def real_timeout(self, seconds: Optional[float]) -> Optional[float]:
        """A safety limit in real seconds for a blocking call, or None (no limit) when the clock is a mock:
        a frozen clock must not be overruled by the wall clock."""
        return None if self._mock else seconds

    # ------------------------------------------------------------------------------------------ waiting
    async def sleep(self, ms: float) -> None:
        """Wait until the clock has moved ``ms`` forward."""
        deadline = self.milliseconds() + ms
        while True:
            remaining = deadline - self.milliseconds()
            if remaining <= 0:
                await asyncio.sleep(0)          # a wait always lets the loop run others, as asyncio's do
                return
            tick = self._tick()
            if tick is None:
                await asyncio.sleep(remaining / 1000)
            else:
                try:
                    await asyncio.wait([tick], timeout=remaining / 1000)
                finally:
                    tick.cancel()

    async def done(self, fut: "asyncio.Future", timeout_ms: float) -> bool:
        """Wait until ``fut`` is done (True) or the clock has moved ``timeout_ms`` forward (False). ``fut`` is
        never cancelled here: the caller decides what a timeout means."""
        deadline = self.milliseconds() + timeout_ms
        while not fut.done():
            remaining = deadline - self.milliseconds()
            if remaining <= 0:
                await asyncio.sleep(0)          # a wait always lets the loop run others, as asyncio's do
                return fut.done()
            tick = self._tick()
            try:
                await asyncio.wait([fut] if tick is None else [fut, tick], timeout=remaining / 1000,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                if tick is not None:
                    tick.cancel()       # (a no-op when it fired) -- and it leaves the set
        return True

    async def wait_for(self, aw, timeout_ms: float) -> Any:
        """``asyncio.wait_for`` on this clock: the result of ``aw``, or ``asyncio.TimeoutError`` (and ``aw``
        cancelled) once the clock has moved ``timeout_ms`` forward."""
        fut = asyncio.ensure_future(aw)
        try:
            if not await self.done(fut, timeout_ms):
                raise asyncio.TimeoutError()
            return fut.result()
        finally:
            if not fut.done():
                fut.cancel()

    async def event(self, event: asyncio.Event, timeout_ms: float) -> bool:
        """Wait until ``event`` is set (True) or the clock has moved ``timeout_ms`` forward (False)."""
        if event.is_set():
            await asyncio.sleep(0)
            return True
        waiter = asyncio.ensure_future(event.wait())
        try:
            return await self.done(waiter, timeout_ms)
        finally:
            if not waiter.done():
                waiter.cancel()

    # ------------------------------------------------------------------------------------------ mock wake-ups
    def _tick(self) -> Optional[asyncio.Future]:
        """A future resolved at the next advance of a mock clock (None for the real clock)."""
        if not self._mock:
            return None
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self.time.on_advance(self._advanced)
        tick = self._loop.create_future()
        self._ticks.add(tick)
        tick.add_done_callback(self._ticks.discard)
        return tick

    def _advanced(self) -> None:
        """``MockTime`` listener (any thread): wake every wait on the client's loop to look at the clock."""
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._wake)
        except RuntimeError:           # the loop closed meanwhile
            pass

    def _wake(self) -> None:
        for tick in list(self._ticks):
            if not tick.done():
                tick.set_result(None)

    def close(self) -> None:
        """Stop listening to a mock clock's advances."""
        self._closed = True
        if self._loop is not None:
            remove = getattr(self.time, "remove_listener", None)
            if remove is not None:
                remove(self._advanced)
