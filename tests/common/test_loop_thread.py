"""LoopThread: results and exceptions come back to the caller, re-entry is refused, shutdown is clean."""
import asyncio
import threading

import pytest

from kafkalab.common import LoopThread


@pytest.fixture
def io():
    thread = LoopThread("test-loop")
    yield thread
    thread.stop()


def test_run_and_call_return_results_and_raise_exceptions_in_the_caller(io):
    async def add(a, b):
        await asyncio.sleep(0)
        return a + b

    async def fail():
        raise KeyError("broken")

    assert io.run(add(1, 2), 5) == 3
    assert io.call(lambda: threading.current_thread().name) == "test-loop"
    with pytest.raises(KeyError, match="broken"):
        io.run(fail(), 5)
    assert io.submit(add(2, 3)).result(5) == 5


def test_a_timeout_cancels_the_coroutine(io):
    cancelled = threading.Event()

    async def forever():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
    with pytest.raises(TimeoutError):
        io.run(forever(), 0.05)
    assert cancelled.wait(5)


def test_blocking_on_the_loop_from_the_loop_itself_is_refused(io):
    async def reenter():
        async def inner():
            return 1
        return io.run(inner())
    with pytest.raises(RuntimeError, match="would wait for itself forever"):
        io.run(reenter(), 5)
    assert io.call(lambda: io.call(lambda: 7)) == 7          # call() on the loop simply calls


def test_unhandled_errors_are_kept_and_the_loop_goes_on(io):
    def broken():
        raise ValueError("nobody waits for me")
    io.call_soon(broken)
    assert io.call(lambda: 1) == 1
    assert any(isinstance(c.get("exception"), ValueError) for c in io.unhandled)


def test_works_while_the_caller_runs_an_event_loop_of_its_own():
    async def notebook_cell():            # a Jupyter kernel's loop is running on the calling thread
        thread = LoopThread("inside-a-kernel")
        try:
            async def on_background():
                return asyncio.get_running_loop()
            return thread.run(on_background(), 5) is not asyncio.get_running_loop()
        finally:
            thread.stop()
    assert asyncio.run(notebook_cell())


def test_stop_cancels_pending_tasks_closes_the_loop_and_is_idempotent():
    thread = LoopThread("test-stop")
    started, cleaned = threading.Event(), threading.Event()

    async def pending():
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.set()
    thread.submit(pending())
    assert started.wait(5)
    thread.stop()
    assert cleaned.is_set() and thread.loop.is_closed() and not thread.thread.is_alive() and not thread.alive
    thread.stop()
    coro = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="has stopped"):
        thread.run(coro)
