"""progress(): count, rate, stable stored text, no thread left behind -- in a plain Python process."""
import json
import threading
import time

import pytest

from kafkalab.viz import progress
from kafkalab.viz.live.progress import Progress
from kafkalab.viz.live.refresh import THREAD_NAME_PREFIX, Refresher

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def refresher_threads():
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME_PREFIX) and t.is_alive()]


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_shows_count_and_rate_while_the_step_runs():
    clock = FakeClock()
    bar = progress(100, description="fill clicks", unit="records", clock=clock, interval_s=0.05)
    try:
        clock.now += 2.0
        bar.update(30)
        assert bar.count == 30 and bar.rate == 15.0
        assert bar.text == "fill clicks: 30/100 records · 15 records/s · 2.0 s"
        assert wait_for(lambda: bar.bar.value == 30 and "30/100 records · 15 records/s" in bar.label.value)
    finally:
        bar.close()


def test_wrapping_an_iterable_counts_it_and_closes_at_the_end():
    clock = FakeClock()
    items = []
    bar = progress(iter(range(7)), description="replay", unit="events", clock=clock)
    assert bar.total is None and bar.bar.layout.visibility == "hidden"
    for item in bar:
        clock.now += 0.5
        items.append(item)
    assert items == list(range(7)) and bar.closed
    assert bar.text == "replay: 7 events · 2 events/s · 3.5 s · done"
    assert bar.label.value.endswith("done") and bar.bar.bar_style == "success"
    assert refresher_threads() == []


def test_reaching_the_total_paints_the_last_frame_and_stops_the_refresher():
    bar = progress(5, unit="records", interval_s=0.05)
    for _ in range(5):
        bar.step("any", "arguments")
    assert wait_for(lambda: not bar._refresher.running)
    assert bar.closed and bar.bar.value == 5 and "5/5 records" in bar.label.value


def test_stored_output_is_the_same_text_before_and_after_the_step():
    bar = progress(5_000, description="replay", unit="events")
    first = {k: v for k, v in bar._repr_mimebundle_().items() if k != WIDGET_VIEW}
    bar.update(1_234)
    bar.close()
    last = bar._repr_mimebundle_()
    assert WIDGET_VIEW in last
    assert {k: v for k, v in last.items() if k != WIDGET_VIEW} == first
    assert first["text/plain"] == "replay: 5,000 events"
    assert "1,234" not in json.dumps(first) and "events/s" not in json.dumps(first)
    assert "1,234/5,000 events" in bar.snapshot()._repr_html_()       # the snapshot shows the state


def test_context_manager_closes_and_leaves_no_thread_behind():
    with progress(10, description="fill", unit="records") as bar:
        bar.update(3)
        assert bar._refresher.running
    assert bar.closed and not bar._refresher.running
    assert refresher_threads() == []


def test_closing_the_widget_stops_the_refresher():
    bar = Progress(10, interval_s=0.05)
    bar.widget.close()
    assert wait_for(lambda: not bar._refresher.running)


def test_outside_a_kernel_nothing_is_displayed(capsys):
    progress(3).close()
    assert capsys.readouterr() == ("", "")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="total"):
        progress(-1)
    with pytest.raises(TypeError):
        progress(True)
    counted = Progress(3)
    with pytest.raises(TypeError, match="update"):
        next(iter(counted))
    counted.close()
    with pytest.raises(ValueError, match="interval_s"):
        Refresher(lambda: None, 0)


def test_a_failing_callback_is_kept_not_printed(capsys):
    calls = []

    def paint():
        calls.append(1)
        raise RuntimeError("boom")
    r = Refresher(paint, 0.1, stop_on_error=False).start()
    assert wait_for(lambda: len(calls) >= 2)      # keeps going after an error
    r.stop()
    assert not r.running and isinstance(r.error, RuntimeError) and r.errors >= 2
    assert capsys.readouterr() == ("", "")


def test_counts_a_replay_through_its_on_sent_callback(tmp_path):
    from kafkalab.cluster import Cluster
    from kafkalab.tools.replay import replay
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps({"user_id": f"u{i % 3}", "event_time": "2024-01-01T00:00:00Z"}) + "\n"
                            for i in range(25)))
    with Cluster(brokers=1) as cluster:
        cluster.create_topic("clicks", partitions=2, config={"retention.ms": -1})
        with progress(25, description="replay", unit="events") as bar:
            summary = replay(path, "clicks", cluster.bootstrap_servers, on_sent=bar.step)
    assert summary.count == bar.count == 25
    assert refresher_threads() == []
