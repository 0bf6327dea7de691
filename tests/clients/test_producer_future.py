"""FutureRecordMetadata: the small future send() returns (one per record, no Condition per record)."""
import concurrent.futures
import gc
import threading
import time

import pytest

from kafkalab.clients.producer import FutureRecordMetadata, RecordMetadata

MD = RecordMetadata("t", 0, 41, 1000)


def test_a_result_set_before_anyone_waits():
    f = FutureRecordMetadata()
    assert not f.done() and f.running() and not f.cancelled()
    f.set_result(MD)
    assert f.done() and not f.running()
    assert f.result(0) == MD and f.exception(0) is None


def test_an_error_is_raised_by_result_and_returned_by_exception():
    f = FutureRecordMetadata()
    err = RuntimeError("NOT_ENOUGH_REPLICAS")
    f.set_exception(err)
    with pytest.raises(RuntimeError, match="NOT_ENOUGH_REPLICAS"):
        f.result()
    assert f.exception() is err


def test_result_times_out_while_pending():
    f = FutureRecordMetadata()
    t0 = time.monotonic()
    with pytest.raises(concurrent.futures.TimeoutError):
        f.result(timeout=0.05)
    assert time.monotonic() - t0 >= 0.04
    with pytest.raises(TimeoutError):           # the same class since Python 3.11
        f.exception(timeout=0)


def test_a_waiting_thread_is_woken_by_the_completion():
    f = FutureRecordMetadata()
    got = []
    waiter = threading.Thread(target=lambda: got.append(f.result(timeout=5)))
    waiter.start()
    time.sleep(0.05)                             # the waiter is parked on its event by now
    f.set_result(MD)
    waiter.join(5)
    assert got == [MD]


def test_many_waiters_and_completions_race_without_losing_a_wakeup():
    futures = [FutureRecordMetadata() for _ in range(2000)]
    results = []

    def wait_all():
        results.extend(f.result(timeout=10) for f in futures)

    waiters = [threading.Thread(target=wait_all) for _ in range(3)]
    for w in waiters:
        w.start()
    for i, f in enumerate(futures):
        f.set_result(i)
    for w in waiters:
        w.join(10)
    assert sorted(results) == sorted(list(range(2000)) * 3)


def test_callbacks_run_once_after_completion_or_at_once_when_already_done():
    f = FutureRecordMetadata()
    calls = []
    f.add_done_callback(lambda fut: calls.append(("early", fut.result())))
    f.add_done_callback(lambda fut: 1 / 0)       # a bad callback is logged, the others still run
    f.add_done_callback(lambda fut: calls.append(("early2", fut.result())))
    f.set_result(MD)
    f.add_done_callback(lambda fut: calls.append(("late", fut.result())))
    assert calls == [("early", MD), ("early2", MD), ("late", MD)]


def test_it_completes_exactly_once_and_cannot_be_cancelled():
    f = FutureRecordMetadata()
    assert f.cancel() is False
    f.set_result(MD)
    with pytest.raises(concurrent.futures.InvalidStateError):
        f.set_exception(RuntimeError("late"))
    assert f.result() == MD and "41" in repr(f)


def test_it_is_one_small_object_for_the_garbage_collector():
    before = len(gc.get_objects())
    futures = [FutureRecordMetadata() for _ in range(1000)]
    tracked = len(gc.get_objects()) - before
    assert tracked <= 1000 + 10                  # the future itself, nothing per future besides
    assert not hasattr(futures[0], "__dict__")
