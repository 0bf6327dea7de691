"""Cluster.wait_until: a wait in vain says which condition, and what to do in a notebook, from the caller's
thread (no traceback through asyncio); a condition that raises keeps its own exception, with the same hint."""
from __future__ import annotations

import traceback

import pytest

from kafkalab import Cluster
from kafkalab.cluster import ConditionNotMet
from kafkalab.cluster.waiting import describe_condition


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def test_a_met_condition_returns_true(cluster):
    assert cluster.wait_until(lambda: cluster.controller_id >= 0) is True


def test_an_unmet_condition_names_itself_and_says_restart_and_run_from_the_top(cluster):
    with pytest.raises(ConditionNotMet) as caught:
        cluster.wait_until(lambda: cluster.broker(0).metadata_cache.partition_count("never-made") == 3, 0.05)
    text = str(caught.value)
    assert text.startswith("the condition was not met within 0.05 s")
    assert 'partition_count("never-made") == 3' in text
    assert "restart the kernel and run the cells from the top" in text
    assert isinstance(caught.value, TimeoutError)                      # `except TimeoutError` still catches it
    frames = "".join(traceback.format_tb(caught.value.__traceback__))
    assert "concurrent/futures" not in frames and "asyncio" not in frames


def test_the_callers_message_comes_first(cluster):
    with pytest.raises(TimeoutError, match=r"^topic t did not come online within 0\.01 s"):
        cluster.wait_until(lambda: False, 0.01, "topic t did not come online")


def test_a_condition_that_raises_keeps_its_error_with_the_hint(cluster):
    with pytest.raises(KeyError) as caught:
        cluster.wait_until(lambda: cluster.brokers[7].is_running, 1)
    assert any("run the cells from the top" in note for note in caught.value.__notes__)
    assert "concurrent/futures" not in "".join(traceback.format_tb(caught.value.__traceback__))


def named_condition():
    return False


def test_describe_condition():
    assert describe_condition(named_condition) == "named_condition()"
    assert describe_condition(eval("lambda: 1")) == ""                  # no source: nothing invented
