"""Lab 07's helpers and checks: the timing-wheel placement rule against the real wheel, the idle-fetch
arithmetic, the DelayedFetch cases, and the wheel grid."""
import pytest

from kafkalab.common.time import MockTime
from kafkalab.labs import lab07
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
    due = lab07.check_bucket({"a": (3, 400), "b": (1, 7), "c": (1, 0)}, delays, 1, 20)
    assert not due.passed and "already due" in due.parts[2].note
    assert "tick_ms·wheel_size^(L-1)" in due.hint


def test_check_idle_fetches():
    right = {0: 20_000, 500: 19}
    assert lab07.check_idle_fetches(right, 10_000, 0.5, (0, 500)).passed
    r = lab07.check_idle_fetches({0: 20_000, 500: 20}, 10_000, 0.5, (0, 500))
    assert not r.passed and "round trip" in r.parts[1].note
    assert lab07.check_idle_fetches({0: 10_000, 500: 19}, 10_000, 1.0, (0, 500)).passed   # follows the data


SEGMENTS = (0, 100, 200)


@pytest.mark.parametrize("fetch_offset,hw,available,case", [
    (120, 123, 180, "wait"),     # same segment, too few bytes
    (120, 123, 2000, "G"),       # same segment, min_bytes reached
    (130, 123, 0, "F"),          # past the end: a truncated leader
    (195, 205, 300, "F"),        # the end is on a newer segment: fell behind / the log rolled
    (205, 195, 0, "F"),          # past the end, across segments
    (123, 123, 0, "wait"),       # equal offsets go to the byte count (nothing to count)
    (200, 200, 0, "wait")])
def test_fetch_case_follows_delayed_fetch(fetch_offset, hw, available, case):
    assert lab07.fetch_case(fetch_offset, hw, available, 1024, SEGMENTS) == case


def test_check_fetch_case():
    situations = {"a": (120, 123, 180), "b": (120, 123, 2000), "c": (130, 123, 0), "d": (195, 205, 300)}
    right = {"a": "wait", "b": "G", "c": "F", "d": "F"}
    assert lab07.check_fetch_case(right, situations, SEGMENTS, 1024).passed
    assert lab07.check_fetch_case(..., situations, SEGMENTS, 1024).status == "todo"
    wrong = lab07.check_fetch_case({**right, "a": "G", "d": "G"}, situations, SEGMENTS, 1024)
    assert not wrong.passed
    assert "min_bytes" in wrong.parts[0].note and "segment" in wrong.parts[3].note
    # The old checker's mistake: an offset below the HW but on an older segment is case F, not a byte count.
    assert not lab07.check_fetch_case({**right, "d": "wait"}, situations, SEGMENTS, 1024).passed


def test_fetch_partitions_caps_and_the_oversized_first_batch():
    """KIP-74 on a live broker: neither cap stops the first batch of the first partition with data; after it the
    budget is spent. partition_max_bytes caps each partition on its own."""
    from kafkalab import Cluster
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": False}) as c:
        c.create_topic("wide", 2, 1)
        b0 = c.broker(0)
        for p, size in ((0, 100), (1, 3000)):
            for _ in range(2):
                assert c.run(lab07.raw_produce(b0, "wide", p, [b"x" * size] * 2, acks=1)) == "NONE"

        def fetch(order, max_bytes, partition_max_bytes):
            return {r["partition"]: r for r in c.run(lab07.fetch_partitions(
                b0, "wide", {p: 0 for p in order}, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes))}
        full = fetch((0, 1), 1 << 20, 1 << 20)
        assert [full[p]["batches"] for p in (0, 1)] == [2, 2] and full[1]["offsets"] == "0..3"
        capped = fetch((0, 1), 1 << 20, 400)
        assert (capped[0]["batches"], capped[1]["batches"]) == (1, 0)
        first_big = fetch((1, 0), 400, 400)
        assert first_big[1]["batches"] == 1 and first_big[1]["bytes"] > 400 and first_big[0]["bytes"] == 0
        # The rule the exercise teaches agrees with the broker.
        small, big = full[0]["bytes"] // 2, full[1]["bytes"] // 2
        assert lab07.batches_returned({0: [small] * 2, 1: [big] * 2}, 1 << 20, 400) == {0: 1, 1: 0}
        assert lab07.batches_returned({1: [big] * 2, 0: [small] * 2}, 400, 400) == {1: 1, 0: 0}
        assert c.run(lab07.raw_produce(b0, "wide", 0, [b"x"], acks=2)) == "INVALID_REQUIRED_ACKS"


def test_fetch_request_fields_show_the_caps_where_they_sit_in_the_frame():
    table = lab07.fetch_request_fields("wide", {2: 7, 0: 0}, max_bytes=600, partition_max_bytes=300)
    assert table.loc["body.max_bytes", "value"] == 600
    assert table.loc["body.topics[0].partitions[0].partition", "value"] == 2          # in the order asked
    assert table.loc["body.topics[0].partitions[0].fetch_offset", "value"] == 7
    assert table.loc["body.topics[0].partitions[1].partition_max_bytes", "value"] == 300
    start, end = (int(x) for x in table.loc["body.max_bytes", "bytes"].split("-"))
    assert end - start + 1 == 4                                                        # an int32


@pytest.mark.parametrize("partitions,max_bytes,partition_max,want", [
    ({3: [], 1: [1500, 200], 0: [300, 300], 2: [300]}, 2000, 500, {3: 0, 1: 1, 0: 1, 2: 0}),
    ({0: [300, 300], 1: [1500]}, 2000, 500, {0: 1, 1: 0}),        # KIP-74 only for the first with data
    ({0: [100] * 5, 1: [100] * 5}, 300, 1000, {0: 3, 1: 0}),      # max_bytes spent by the first partition
    ({0: [100] * 5, 1: [100] * 5}, 350, 1000, {0: 3, 1: 0}),      # Kafka's read of 350 bytes: 3 whole, 50 cut
    ({0: [100], 1: [100] * 5}, 350, 1000, {0: 1, 1: 2})])
def test_batches_returned_follows_read_from_log(partitions, max_bytes, partition_max, want):
    assert lab07.batches_returned(partitions, max_bytes, partition_max) == want


def test_check_high_watermarks():
    leos, isrs = {0: 12, 1: 9, 2: 11, 3: 4}, {"a": (0, 1, 2), "b": (0, 2)}
    assert lab07.high_watermark(leos, (0, 2)) == 11
    assert lab07.check_high_watermarks({"a": (9, 4), "b": [11, 6]}, leos, isrs, 5).passed
    wrong = lab07.check_high_watermarks({"a": (12, 7), "b": (11, 7)}, leos, isrs, 5)
    assert not wrong.passed and "slowest" in wrong.parts[0].note and "not including" in wrong.parts[1].note
    assert "ISR count" in lab07.check_high_watermarks({"a": (4, 0), "b": (11, 6)}, leos, isrs, 5).parts[0].note


def test_check_batches_returned():
    parts = {3: [], 1: [1500, 200], 0: [300, 300], 2: [300]}
    assert lab07.check_batches_returned({3: 0, 1: 1, 0: 1, 2: 0}, parts, 2000, 500).passed
    wrong = lab07.check_batches_returned({3: 0, 1: 0, 0: 1, 2: 1}, parts, 2000, 500)
    assert not wrong.passed and "KIP-74" in wrong.parts[1].note and "came off" in wrong.parts[3].note
    # too many batches for partition_max_bytes alone (300 + 300 > 500) is not a question of the budget
    capped = lab07.check_batches_returned({3: 0, 1: 1, 0: 2, 2: 0}, parts, 2000, 500)
    assert not capped.passed and "partition_max_bytes caps each partition" in capped.parts[2].note


def _replicas(leos, hw, isr=(0, 1, 2)):
    return {b: {"role": "leader" if b == 0 else "follower", "in ISR": b in isr, "log end offset": leo,
                "high watermark": hw if b == 0 else "-"} for b, leo in enumerate(leos)}


def test_log_ends_svg_shades_below_the_leaders_high_watermark_and_fits_its_text():
    import re

    from kafkalab.viz.textfit import check_svg
    svg = lab07.log_ends_svg([("cut", _replicas([5, 5, 2], 2)), ("healed", _replicas([5, 5, 5], 5, isr=(0, 1)))],
                             title="slow-0")
    assert check_svg(svg) == []
    assert svg.count('fill="#1c7ed6" stroke') == 2 * 3 + 5 * 3      # dark: offsets below the HW, per replica
    assert svg.count('fill="#d0ebff" stroke') == 3 + 3               # pale: written above the HW (brokers 0 and 1)
    assert re.findall(r">high watermark (\d+)<", svg) == ["2", "5"]
    assert ">broker 2 · follower (out of ISR)<" in svg and svg.count(">LEO 5<") == 5
    assert svg == lab07.log_ends_svg([("cut", _replicas([5, 5, 2], 2)), ("healed", _replicas([5, 5, 5], 5, (0, 1)))],
                                     title="slow-0")
