"""The live widgets' one refresh mechanism: a daemon thread that calls back until stopped and leaves nothing."""
from __future__ import annotations

import threading

import pytest

from kafkalab.viz.live.refresh import MIN_INTERVAL_S, Refresher, active_refreshers


def _wait(condition, timeout=5.0):
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        done.wait(0.01)
    return condition()


def test_calls_back_repeatedly_until_stopped_and_leaves_no_thread():
    ticked = threading.Event()
    calls = []

    def tick():
        calls.append(threading.current_thread().name)
        if len(calls) >= 3:
            ticked.set()
    r = Refresher(tick, 0.1, name="test-refresher").start()
    assert r.running and r in active_refreshers()
    assert ticked.wait(5)
    assert set(calls) == {r.name} and r.name.endswith("-test-refresher")   # its own thread, never the caller's
    r.stop()
    assert not r.running and r not in active_refreshers()
    assert r.name not in {t.name for t in threading.enumerate()}
    n = len(calls)
    threading.Event().wait(0.3)
    assert len(calls) == n                         # nothing after stop


def test_stops_by_itself_when_stop_when_turns_true():
    gone = threading.Event()
    r = Refresher(lambda: None, 0.1, stop_when=gone.is_set).start()
    assert r.running
    gone.set()
    assert _wait(lambda: not r.running)
    assert r not in active_refreshers()


def test_a_failing_stop_condition_stops_it():
    def broken():
        raise RuntimeError("the cluster object is gone")
    r = Refresher(lambda: None, 0.1, stop_when=broken).start()
    assert _wait(lambda: not r.running)


def test_an_error_is_handed_over_not_printed_and_ends_the_thread(capsys):
    seen = []

    def boom():
        raise ValueError("no state")
    r = Refresher(boom, 0.1, on_error=seen.append).start()
    assert _wait(lambda: not r.running)
    assert [type(e) for e in seen] == [ValueError] and isinstance(r.error, ValueError)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_stop_is_immediate_even_with_a_long_interval():
    r = Refresher(lambda: None, 60).start()
    stopped = threading.Event()
    threading.Thread(target=lambda: (r.stop(), stopped.set()), daemon=True).start()
    assert stopped.wait(2)                         # not after the 60 s wait
    assert not r.running


def test_stop_from_inside_the_callback_and_twice():
    holder = []
    r = Refresher(lambda: holder[0].stop(), 0.1)
    holder.append(r)
    r.start()
    assert _wait(lambda: not r.running)
    r.stop()
    r.stop()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "fast"])
def test_bad_interval_is_refused(bad):
    with pytest.raises(ValueError):
        Refresher(lambda: None, bad)


def test_interval_is_capped_at_ten_hertz_and_callback_must_be_callable():
    assert Refresher(lambda: None, 0.001).interval_s == MIN_INTERVAL_S
    with pytest.raises(TypeError):
        Refresher("not a function", 1)
