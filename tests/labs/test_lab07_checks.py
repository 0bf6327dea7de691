"""Lab 07's helpers and checks: the timing-wheel placement rule against the real wheel, the idle-fetch
arithmetic, the DelayedFetch cases, and the wheel grid."""
import pytest

from kafkalab.common.time import MockTime
from kafkalab.exercises import lab07
from kafkalab.purgatory import FunctionTask, SystemTimer


@pytest.mark.parametrize("tick,size,delays", [(1, 3, [0, 1, 2, 4, 10, 26, 27]), (1, 20, [1, 19, 20, 399, 400, 8001]),
                                              (10, 4, [5, 10, 39, 40, 160, 700])])
def test_bucket_for_matches_the_real_wheel(tick, size, delays):
    for d in delays:
        timer = SystemTimer("t", time=MockTime(), tick_ms=tick, wheel_size=size, start_ms=0)
        ran = []
        timer.add(FunctionTask(d, lambda ran=ran: ran.append(1)))
        where = lab07.bucket_for(d, tick, size)
        if where is None:
            assert ran == [] or timer.size() == 0
            continue
        level, start = where
        found = [(b.level, b.start_ms) for w in timer.wheels() for b in w.buckets if b.task_count]
        assert found == [(level, start)], (d, found, where)


def test_wheel_html_is_deterministic_and_marks_tasks():
    def build():
        clock = MockTime()
        timer = SystemTimer("t", time=clock, tick_ms=1, wheel_size=3)
        for d in (1, 4):
            timer.add(FunctionTask(d, lambda: None))
        return lab07.wheel_html(timer, timer.now_ms(), title="x")
    a, b = build(), build()
    assert a == b and "level 2" in a and "3–5" in a and "<b>1</b>" in a


def test_idle_fetches():
    assert lab07.idle_fetches(1000, 500, 0) == 2
    assert lab07.idle_fetches(10_000, 0, 0.5) == 20_000
    assert lab07.idle_fetches(10_000, 100, 0.5) == 99


def test_check_bucket():
    delays = {"a": 500, "b": 7, "c": 0}
    right = {"a": (3, 400), "b": (1, 7), "c": None}
    assert lab07.check_bucket(right, delays, 1, 20).passed
    assert lab07.check_bucket(..., delays, 1, 20).status == "todo"
    r = lab07.check_bucket({"a": (3, 500), "b": (1, 7), "c": None}, delays, 1, 20)
    assert not r.passed and "multiple" in r.parts[0].note
    assert lab07.check_bucket({"a": [3, 400], "b": [1, 7], "c": None}, delays, 1, 20).passed   # lists are fine
    assert lab07.check_bucket({"a": (2, 400), "b": (1, 7), "c": None}, delays, 1, 10).passed is False


def test_check_idle_fetches():
    right = {0: 20_000, 500: 19}
    assert lab07.check_idle_fetches(right, 10_000, 0.5, (0, 500)).passed
    r = lab07.check_idle_fetches({0: 20_000, 500: 20}, 10_000, 0.5, (0, 500))
    assert not r.passed and "round trip" in r.parts[1].note
    assert lab07.check_idle_fetches({0: 10_000, 500: 19}, 10_000, 1.0, (0, 500)).passed   # follows the data


def test_check_fetch_case():
    assert lab07.check_fetch_case("wait", 120, 123, 180, 1024).passed
    assert lab07.check_fetch_case("G", 120, 123, 2000, 1024).passed
    assert lab07.check_fetch_case("F", 130, 123, 0, 1).passed
    wrong = lab07.check_fetch_case("G", 120, 123, 180, 1024)
    assert not wrong.passed and "min_bytes" in wrong.hint
    assert lab07.check_fetch_case(..., 120, 123, 180, 1024).status == "todo"
