"""Lab 15's helpers and checks, without Spark: batch planning, event-time windows, checkpoint offsets."""
import json
from pathlib import Path

from kafkalab.labs import lab15
from kafkalab.viz.textfit import check_svg

EVENTS = Path(__file__).resolve().parents[2] / "data" / "clickstream" / "events.jsonl"


def test_plan_batches_shares_the_cap_by_backlog_and_drains_the_backlog():
    plan = lab15.plan_batches({"0": 100, "1": 0, "2": 2000}, {"0": 1300, "1": 400, "2": 2002}, 1000)
    assert plan[0] == {"0": 749, "1": 249, "2": 1}          # 1000 x backlog share; a tiny share rounds up
    assert [sum(b.values()) for b in plan] == [999, 603]
    assert {p: sum(b[p] for b in plan) for p in "012"} == {"0": 1200, "1": 400, "2": 2}


def test_check_batch_plan_follows_the_data():
    start, end = {"0": 0, "1": 0}, {"0": 10, "1": 30}
    good = lab15.plan_batches(start, end, 8)
    assert lab15.check_batch_plan(good, start, end, 8).passed
    assert lab15.check_batch_plan(...,  start, end, 8).status == "todo"
    assert not lab15.check_batch_plan(good[:-1], start, end, 8).passed
    assert not lab15.check_batch_plan([{"0": 4, "1": 4}] * 5, start, end, 8).passed


def test_window_totals_and_the_revenue_check():
    events = [{"event_type": "purchase", "event_time": "2026-03-14T19:09:59.999Z", "price": 10.0, "quantity": 2},
              {"event_type": "purchase", "event_time": "2026-03-14T19:10:00.000Z", "price": 5.5, "quantity": None},
              {"event_type": "page_view", "event_time": "2026-03-14T19:01:00.000Z", "price": None, "quantity": None}]
    assert lab15.window_totals(events, 10, "purchase") == {"19:00": 20.0, "19:10": 5.5}
    assert lab15.window_totals(events, 10, "page_view", value="count") == {"19:00": 1}
    assert lab15.check_window_revenue({"19:00": 20, "19:10": 5.5}, events, 10).passed
    wrong = lab15.check_window_revenue({"19:00": 25.5}, events, 10)   # by arrival, or one big window
    assert not wrong.passed and "event_time" in wrong.hint


def test_checkpoint_offsets_and_the_restart_check(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    for batch, ends in ((0, {"0": 5, "1": 7}), (1, {"0": 9, "1": 12})):
        (offsets / str(batch)).write_text("v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" +
                                          json.dumps({"clicks": ends}) + "\n")
    (offsets / ".1.crc").write_text("")
    assert lab15.checkpoint_offsets(tmp_path) == {"clicks": {"0": 9, "1": 12}}
    assert lab15.checkpoint_offsets(tmp_path, 0) == {"clicks": {"0": 5, "1": 7}}
    assert lab15.check_restart_offsets({0: 9, 1: 12}, tmp_path).passed
    earliest = lab15.check_restart_offsets({0: 0, 1: 0}, tmp_path)
    assert not earliest.passed and "checkpoint" in earliest.hint


def test_batch_slices_svg_is_deterministic_and_labels_every_partition():
    plan = lab15.plan_batches({"0": 0, "1": 0}, {"0": 100, "1": 50}, 60)
    svg = lab15.batch_slices_svg(plan)
    assert svg == lab15.batch_slices_svg(plan) and svg.startswith("<svg")
    assert "partition 0" in svg and "partition 1" in svg and "batch 2" in svg


def test_late_event_svg_marks_only_the_click_in_a_closed_window_as_dropped():
    first = [("a", "19:00:30"), ("d", "19:12:00"), ("e", "19:25:00")]
    second = [("late-1", "19:05:00"), ("g", "19:22:00"), ("f", "19:24:00")]
    svg = lab15.late_event_svg(first, second, "2026-03-14T19:23:00.000Z", [(1, "19:00", 1), (1, "19:10", 1)])
    assert svg == lab15.late_event_svg(first, second, "2026-03-14T19:23:00.000Z", [(1, "19:00", 1), (1, "19:10", 1)])
    assert ">late-1: dropped<" in svg and svg.count(": dropped<") == 1      # 19:22 is behind 19:23, its window open
    assert svg.count('fill="#e03131"><title>') == 1 and svg.count('fill="#2b8a3e"><title>') == 5
    assert ">19:00-19:10<" in svg and svg.count(">written: 1<") == 2 and ">open<" in svg
    assert ">watermark 19:23<" in svg
    assert check_svg(svg) == []


def test_the_dataset_loads_in_arrival_order():
    first = lab15.load_events(EVENTS, limit=3)
    assert len(first) == 3 and all(e["event_id"] for e in first)
    assert lab15.window_start("2026-03-14T19:07:00.000Z", 10) == "19:00"


class FakeQuery:
    """What await_query uses of a pyspark StreamingQuery: awaitTermination(s), recentProgress, stop()."""

    def __init__(self, batches, ends=True):
        self._batches, self._ends = list(batches), ends
        self.recentProgress = []
        self.stopped = False

    def awaitTermination(self, timeout):
        if self._batches:
            self.recentProgress.append({"batchId": len(self.recentProgress), "numInputRows": self._batches.pop(0)})
        return self._ends and not self._batches

    def stop(self):
        self.stopped = True


def test_await_query_counts_the_rows_read_and_stops_the_query(monkeypatch):
    bars = []

    def progress(*args, **kwargs):
        bars.append(real(*args, **kwargs))
        return bars[-1]
    real = lab15.progress
    monkeypatch.setattr(lab15, "progress", progress)
    q = FakeQuery([400, 350, 250])
    assert lab15.await_query(q, 1000, timeout_s=30, description="windows", poll_s=0.01) is True
    assert q.stopped and len(q.recentProgress) == 3
    assert bars[0].count == 1000 and bars[0].closed and bars[0].static_text == "windows: 1,000 rows"


def test_await_query_gives_up_at_its_timeout_and_still_stops_the_query():
    q = FakeQuery([10], ends=False)
    assert lab15.await_query(q, 1000, timeout_s=0.2, poll_s=0.01) is False
    assert q.stopped


def test_dropped_by_watermark_compares_the_window_end_not_the_event_time():
    # watermark 19:23, 10-minute windows: 19:10-19:20 has closed, 19:20-19:30 is open
    times = ["2026-03-14T19:22:00.000Z", "2026-03-14T19:19:59.000Z", "2026-03-14T19:20:00.000Z",
             "2026-03-14T19:05:00.000Z"]
    assert lab15.dropped_by_watermark(times, "2026-03-14T19:23:00.000Z", 10) == [times[1], times[3]]
    # a window ending exactly at the watermark is closed
    assert lab15.dropped_by_watermark(["2026-03-14T19:15:00.000Z"], "2026-03-14T19:20:00.000Z", 10) == [
        "2026-03-14T19:15:00.000Z"]


def test_check_late_events_wants_the_closed_windows_only():
    arrivals = {"x-1": "2026-03-14T19:22:00.000Z", "x-2": "2026-03-14T19:19:59.000Z",
                "x-3": "2026-03-14T19:23:30.000Z"}
    mark = "2026-03-14T19:23:00.000Z"
    assert lab15.check_late_events({"x-2"}, arrivals, mark, 10).passed
    assert lab15.check_late_events(..., arrivals, mark, 10).status == "todo"
    behind = lab15.check_late_events({"x-1", "x-2"}, arrivals, mark, 10)
    assert not behind.passed and "window" in behind.hint
    assert not lab15.check_late_events(set(), arrivals, mark, 10).passed
    assert not lab15.check_late_events("x-2", arrivals, mark, 10).passed


def test_click_value_and_the_watermark_table():
    value = json.loads(lab15.click_value("late-1", "19:05:00"))
    assert value["event_time"] == "2026-03-14T19:05:00.000Z" and value["event_type"] == "page_view"
    progress = [{"batchId": 2, "numInputRows": 2, "eventTime": {"watermark": "2026-03-14T19:23:00.000Z"},
                 "stateOperators": [{"numRowsDroppedByWatermark": 1}]}]
    assert lab15.watermark_table(progress) == [{"batch": 2, "rows read": 2, "watermark": "19:23:00",
                                                "dropped by watermark": 1}]
    first = [{"batchId": 0, "numInputRows": 5, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}}]
    assert lab15.watermark_table(first)[0]["watermark"] == "none"     # no watermark yet, not "00:00:00"
