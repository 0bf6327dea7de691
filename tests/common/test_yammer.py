"""Yammer's meter and timer as kafkalab keeps them (``kafkalab.common.yammer``), on a MockTime."""
from __future__ import annotations

import pytest

from kafkalab.common import MockTime
from kafkalab.common.yammer import Meter, Timer


def test_a_meter_counts_and_rates_over_the_last_minute():
    time = MockTime()
    meter = Meter(time)
    meter.mark()
    meter.mark(2)
    time.sleep(30_000)
    assert (meter.count, meter.one_minute_rate) == (3, pytest.approx(0.1))
    time.sleep(60_000)
    assert (meter.count, meter.one_minute_rate) == (3, 0.0)


def test_a_timer_keeps_calls_and_their_durations_in_ms():
    time = MockTime()
    timer = Timer(time)
    assert (timer.count, timer.min_ms, timer.mean_ms, timer.max_ms) == (0, 0.0, 0.0, 0.0)
    with timer.time_block():
        time.sleep(5)
    with pytest.raises(RuntimeError), timer.time_block():     # a call that fails is timed too
        time.sleep(15)
        raise RuntimeError("boom")
    timer.update(1)
    assert (timer.count, timer.min_ms, timer.mean_ms, timer.max_ms) == (3, 1.0, 7.0, 15.0)
    assert timer.snapshot()["count"] == 3
