"""Lab 08's helpers and checks: the rules as pure functions, the pictures, and checks that follow the data."""
import pytest

from kafkalab.labs import lab08


# -- the rules ----------------------------------------------------------------------------------------------------------
def test_high_watermark_is_the_smallest_isr_leo_and_stops_under_min_isr():
    f = lab08.high_watermark
    assert f(120, {"b1": 117, "b2": 64}, ["b0", "b1"], 2, 100) == 117      # b2 is outside the ISR
    assert f(120, {"b1": 117, "b2": 64}, ["b0", "b1", "b2"], 2, 60) == 64
    assert f(120, {"b1": 117, "b2": 64}, ["b0"], 2, 100) == 100           # strict min ISR: no move
    assert f(120, {}, ["b0"], 1, 100) == 120                               # alone, but allowed
    assert f(120, {"b1": 90}, ["b0", "b1"], 2, 100) == 100                 # never backwards


@pytest.mark.parametrize("acks,isr,min_isr,rf,want", [
    (0, 3, 2, 3, "no response"), (1, 1, 2, 3, "answered at once"), ("all", 3, 2, 3, "waits in purgatory"),
    ("all", 1, 2, 3, "NOT_ENOUGH_REPLICAS"), (-1, 1, 2, 3, "NOT_ENOUGH_REPLICAS"),
    ("all", 1, 2, 1, "waits in purgatory")])
def test_acks_outcome(acks, isr, min_isr, rf, want):
    assert lab08.acks_outcome(acks, isr, min_isr, rf) == want


def test_sample_invariants():
    good = [{"L": {"log_end_offset": 5, "high_watermark": 3}, "F": {"log_end_offset": 5, "high_watermark": 3}},
            {"L": {"log_end_offset": 6, "high_watermark": 5}, "F": {"log_end_offset": 5, "high_watermark": 4}}]
    assert all(lab08.sample_invariants(good, "L").values())
    bad = good + [{"L": {"log_end_offset": 6, "high_watermark": 4}, "F": {"log_end_offset": 6, "high_watermark": 5}}]
    verdict = lab08.sample_invariants(bad, "L")
    assert not verdict["the leader's HW never moved backwards"]
    assert not verdict["no follower's HW ahead of the leader's"]
    assert verdict["HW <= LEO on every replica, in every sample"]


def test_timeline_is_deterministic_and_marks_down_replicas():
    def build():
        t = lab08.ReplicaTimeline(["broker 0", "broker 1"])
        t.add("a", [{"replica": "broker 0", "log_end_offset": 4, "high_watermark": 4},
                    {"replica": "broker 1", "log_end_offset": 4, "high_watermark": 4}])
        t.add("b", [{"replica": "broker 0", "log_end_offset": 7, "high_watermark": 4},
                    {"replica": "broker 1", "log_end_offset": "(down)", "high_watermark": "(down)"}])
        return t
    a, b = build(), build()
    assert a.svg() == b.svg() and "✕" in a.svg() and "LEO 7, HW 4" in a.svg()
    assert a.rows()[1] == {"step": "b", "broker 0": "LEO 7 / HW 4", "broker 1": "down"}
    assert "0x" not in repr(a)


# -- checks -------------------------------------------------------------------------------------------------------------
def test_check_high_watermark():
    leos = {"broker 1": 117, "broker 2": 64}
    assert lab08.check_high_watermark(117, 120, leos, ["broker 0", "broker 1"], 2, 100).passed
    assert lab08.check_high_watermark(..., 120, leos, ["broker 0", "broker 1"], 2, 100).status == "todo"
    wrong = lab08.check_high_watermark(64, 120, leos, ["broker 0", "broker 1"], 2, 100)
    assert not wrong.passed and "outside the ISR" in wrong.hint
    assert "not what all in-sync replicas have" in lab08.check_high_watermark(
        120, 120, leos, ["broker 0", "broker 1"], 2, 100).hint
    assert lab08.check_high_watermark(100, 120, leos, ["broker 0"], 2, 100).passed      # follows the data
    assert not lab08.check_high_watermark("117", 120, leos, ["broker 0", "broker 1"], 2, 100).passed


def test_check_acks_outcomes():
    cases = [{"acks": "all", "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 3},
             {"acks": 1, "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 3},
             {"acks": "all", "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 1}]
    assert lab08.check_acks_outcomes(["NOT_ENOUGH_REPLICAS", "answered at once", "waits in purgatory"], cases).passed
    assert lab08.check_acks_outcomes(..., cases).status == "todo"
    r = lab08.check_acks_outcomes(["NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS"], cases)
    notes = [p.note for p in r.parts]
    assert not r.passed and "only to acks=all" in notes[1] and "min(min.insync.replicas" in notes[2]
    assert not lab08.check_acks_outcomes(["x"], cases).passed


def test_check_isr_after():
    last = {"b1": 990_000, "b2": 970_000, "b3": 965_000}
    assert lab08.check_isr_after(["b2", "b1"], last, 1_000_000, 30_000, ["b1", "b2", "b3"]).passed
    edge = lab08.check_isr_after(["b1"], last, 1_000_000, 30_000, ["b1", "b2", "b3"])
    assert not edge.passed and "<=" in edge.hint
    assert lab08.check_isr_after(..., last, 1_000_000, 30_000, ["b1"]).status == "todo"
    assert lab08.check_isr_after(["b1"], last, 1_000_000, 10_000, ["b1", "b2", "b3"]).passed   # follows the data
