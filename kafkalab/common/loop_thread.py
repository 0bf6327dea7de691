"""A background thread running an asyncio event loop: how blocking code (a notebook cell) drives async code.

Theory of operation
-------------------
kafkalab's brokers and clients are asyncio programs, but a learner calls them from ordinary blocking code --
and a Jupyter kernel already runs an event loop on its main thread, so ``asyncio.run`` (or
``loop.run_until_complete``) is off limits there. The way out is a **second loop on a thread of its own**:

* :class:`LoopThread` creates a fresh event loop and a daemon thread that makes it its current loop and runs
  it forever. The creating thread's loop (the kernel's, if any) is never touched, so the same code works in a
  script, under pytest and inside a running kernel.
* :meth:`~LoopThread.run` hands a coroutine to that loop (``asyncio.run_coroutine_threadsafe``) and blocks
  until its result, which it returns, or its exception, which it **raises in the caller**. On a timeout the
  coroutine is cancelled, so nothing keeps running after the caller gave up. :meth:`~LoopThread.call` does the
  same for a plain function (to touch state that only the loop may touch); :meth:`~LoopThread.call_soon`
  schedules one without waiting.
* Calling :meth:`~LoopThread.run` *from the loop's own thread* (e.g. from a callback the loop runs) would wait
  for itself forever, so it raises instead; :meth:`~LoopThread.call` there simply calls the function.
* An exception nobody waits for (a failed callback, a task whose error was never read) goes to the loop's
  exception handler: it is logged with the thread's name and kept in :attr:`~LoopThread.unhandled` (the most
  recent ones), so a lab can show it instead of losing it.
* :meth:`~LoopThread.stop` is a **clean shutdown**: the loop stops, every task still pending is cancelled and
  allowed to run its ``finally`` blocks, async generators and the default executor are shut down, the loop is
  closed and the thread joined. Stopping twice, or from the loop's own thread, is allowed.

Kafka runs its network I/O on dedicated threads too (the producer's ``kafka-producer-network-thread``, the
admin client's ``kafka-admin-client-thread``), each a ``KafkaThread``: this class plays that role for every
kafkalab client and for ``Cluster``. Mirrors ``clients/src/main/java/org/apache/kafka/common/utils/KafkaThread.java``
(a named daemon thread that reports uncaught exceptions).
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from typing import Any, Callable, Optional

__all__ = ["LoopThread"]

log = logging.getLogger(__name__)

UNHANDLED_KEPT = 100


class LoopThread:
    """A named daemon thread running its own event loop; started on construction, ended by :meth:`stop`."""

    def __init__(self, name: str):
        self.name = name
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._on_unhandled)
        #: exception-handler contexts (``message``, ``exception``, ...) of errors no caller waited for
        self.unhandled: collections.deque[dict] = collections.deque(maxlen=UNHANDLED_KEPT)
        self._ready = threading.Event()
        self._failure: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise RuntimeError(f"the event loop thread {name} failed to start") from self._failure

    # ------------------------------------------------------------------------------------------ the thread
    def _main(self) -> None:
        loop = self.loop
        try:
            asyncio.set_event_loop(loop)
            loop.call_soon(self._ready.set)
            loop.run_forever()
            self._finish_pending()
        except BaseException as e:          # surfaced to the constructor (or logged if already running)
            self._failure = e
            log.exception("event loop thread %s failed", self.name)
        finally:
            self._ready.set()
            try:
                loop.close()
            finally:
                asyncio.set_event_loop(None)

    def _finish_pending(self) -> None:
        loop = self.loop
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())

    def _on_unhandled(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        self.unhandled.append(context)
        exc = context.get("exception")
        log.error("unhandled error on event loop thread %s: %s", self.name, context.get("message", ""),
                  exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None)

    # ------------------------------------------------------------------------------------------ state
    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()

    def in_thread(self) -> bool:
        """Is the caller running on this loop's thread?"""
        return threading.current_thread() is self.thread

    # ------------------------------------------------------------------------------------------ work
    def submit(self, coro) -> concurrent.futures.Future:
        """Start ``coro`` on the loop and return a future for its result without waiting."""
        if not self.alive:
            coro.close()
            raise RuntimeError(f"the event loop thread {self.name} has stopped")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro, timeout: Optional[float] = None) -> Any:
        """Run ``coro`` on the loop and wait for its result (``timeout`` seconds, None = no limit); its
        exception is raised here. On timeout the coroutine is cancelled and ``TimeoutError`` raised."""
        if self.in_thread():
            coro.close()
            raise RuntimeError(f"a blocking call was made on the event loop thread {self.name} itself (e.g. from "
                               "a callback it runs); it would wait for itself forever")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call(self, fn: Callable, *args, timeout: Optional[float] = None) -> Any:
        """Run ``fn(*args)`` on the loop's thread and return its result (directly when already there)."""
        if self.in_thread():
            return fn(*args)

        async def on_loop():
            return fn(*args)
        return self.run(on_loop(), timeout)

    def call_soon(self, fn: Callable, *args) -> None:
        """Schedule ``fn(*args)`` on the loop without waiting (an exception goes to :attr:`unhandled`)."""
        self.loop.call_soon_threadsafe(fn, *args)

    # ------------------------------------------------------------------------------------------ shutdown
    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop, let pending tasks finish their cancellation, close the loop and join the thread."""
        if self.in_thread():
            self.loop.stop()          # the thread finishes the shutdown once the current callback returns
            return
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:      # closed meanwhile
                pass
        self.thread.join(timeout)
        if self.thread.is_alive():
            log.warning("event loop thread %s did not stop within %.1f s", self.name, timeout)

    def __repr__(self) -> str:
        return f"LoopThread({self.name!r}, alive={self.alive})"
