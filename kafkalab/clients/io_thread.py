"""The sync facade's engine: one background thread per client, running that client's asyncio loop.

Theory of operation
-------------------
kafkalab's clients are asyncio programs underneath (one coroutine per connection reading responses, one sender
loop), but notebooks call them synchronously -- and a Jupyter kernel already runs an event loop on its main
thread, so ``asyncio.run`` cannot be used there. Each client therefore owns an :class:`IOThread`: a daemon
thread with its own event loop, much like the Java producer's ``kafka-producer-network-thread``. Blocking
methods hand a coroutine to that loop with ``asyncio.run_coroutine_threadsafe`` and wait for its result; the
same code works in a script, under pytest and inside a kernel, and two clients never share a loop.

Calling a blocking method *from* the client's own loop (e.g. inside a delivery callback) would wait for
itself forever, so it raises instead. Mirrors ``clients/.../producer/internals/Sender.java``'s thread and
``common/utils/KafkaThread.java``.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional

__all__ = ["IOThread"]


class IOThread:
    def __init__(self, name: str):
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()

    def in_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def run(self, coro, timeout: Optional[float] = None) -> Any:
        """Run ``coro`` on the loop and wait for its result (``timeout`` seconds, None = no limit)."""
        if self.in_thread():
            coro.close()
            raise RuntimeError(f"a blocking client method was called on the client's own I/O thread {self.name} "
                               "(e.g. from a delivery callback); it would wait for itself forever")
        if not self.alive:
            coro.close()
            raise RuntimeError(f"the I/O thread {self.name} has stopped: the client is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call_soon(self, fn, *args) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 10.0) -> None:
        if self.in_thread():
            self.loop.stop()
            return
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
