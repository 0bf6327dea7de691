"""Lab 13's helpers and checks: the rules as pure functions, the timeline picture, and checks that follow the data."""
import pytest

from kafkalab.labs import lab13
from kafkalab.cluster import History


# -- the rules ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("outcome,want", [(0, "ok"), (17, "ok"), ("NOT_ENOUGH_REPLICAS", "fail"),
                                          ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", "info"), ("REQUEST_TIMED_OUT", "info"),
                                          ("_MSG_TIMED_OUT", "info"), (True, "info")])
def test_classify(outcome, want):
    assert lab13.classify(outcome) == want


def test_setting_outcome():
    f = lab13.setting_outcome
    jepsen = f(1, 1, True, 2)
    assert jepsen == {"acknowledged writes lost": True, "writes refused while cut off": False,
                      "after the leader dies": "a follower leads, writes go on"}
    assert f("all", 1, True, 2)["acknowledged writes lost"]                 # all = the ISR = the leader alone
    safe = f("all", 2, True, 2)
    assert not safe["acknowledged writes lost"] and safe["writes refused while cut off"]
    assert safe["after the leader dies"] == "a follower leads, writes refused"     # RF 2: one survivor < 2
    assert f("all", 2, True, 3)["after the leader dies"] == "a follower leads, writes go on"
    assert f("all", 2, True, 1)["acknowledged writes lost"]                 # effective minimum min(2, 1) = 1
    assert f(1, 1, False, 2) == {"acknowledged writes lost": False, "writes refused while cut off": False,
                                 "after the leader dies": "offline until the old leader returns"}
    assert f(1, 3, True, 3)["acknowledged writes lost"]                     # min ISR does not apply to acks=1


def test_lost_after_unclean_election():
    log = [b"a", b"b", b"c", b"d"]
    assert lab13.lost_after_unclean_election(log, [b"a", b"b", b"d"], 2) == [b"d"]
    assert lab13.lost_after_unclean_election(log, [b"a", b"c"], 2, [b"c"]) == []   # rewritten by chance
    assert lab13.lost_after_unclean_election(log, log, 4) == []


def test_timeline_is_deterministic_and_marks_lost_writes():
    def build():
        h, t = History(), lab13.RunTimeline("run")
        t.leader(0, 0)
        t.send(h.send(b"a").ok(0, 0), "before")
        t.fault("cut 0 | 1")
        t.send(h.send(b"b").ok(0, 1), "during")
        t.send(h.send(b"c").fail("NOT_ENOUGH_REPLICAS"), "during")
        t.send(h.send(b"d").info("REQUEST_TIMED_OUT"), "during")
        t.fault("kill 0")
        t.leader(1, 1)
        t.leader(1, 1)                                   # no change: not recorded twice
        t.mark_lost([b"b"])
        return t
    a, b = build(), build()
    assert a.svg() == b.svg()
    svg = a.svg()
    assert svg.count("✕") == 2 and "broker 1 (epoch 1)" in svg and "cut 0 | 1" in svg
    assert "REQUEST_TIMED_OUT" not in svg and "NOT_ENOUGH_REPLICAS" in svg     # an info's error is not shown
    assert sum(e[0] == "leader" for e in a.events) == 2
    assert a.rows() == [{"phase": "before", "sends": 1, "ok": 1, "fail": 0, "info": 0, "lost": 0},
                        {"phase": "during", "sends": 3, "ok": 1, "fail": 1, "info": 1, "lost": 1}]
    assert "0x" not in repr(a)


def test_replica_rows():
    state = {"leader": 1, "isr": [1], "replicas": [0, 1], "logs": {1: {"log_end_offset": 10, "high_watermark": 10}}}
    assert lab13.replica_rows(state) == [
        {"broker": 0, "role": "follower", "in ISR": False, "log_end_offset": "(down)", "high_watermark": "(down)"},
        {"broker": 1, "role": "leader", "in ISR": True, "log_end_offset": 10, "high_watermark": 10}]


# -- checks -------------------------------------------------------------------------------------------------------------
LOG = [b"x-0", b"x-1", b"x-2", b"x-3", b"x-4", b"x-5", b"x-6"]
ACKED = [b"x-0", b"x-1", b"x-2", b"x-3", b"x-4", b"x-6"]


def test_check_lost_values():
    assert lab13.check_lost_values([b"x-6", b"x-4"], LOG, ACKED, 4, [b"y-0"]).passed
    assert lab13.check_lost_values(..., LOG, ACKED, 4).status == "todo"
    r = lab13.check_lost_values([b"x-4", b"x-5", b"x-6"], LOG, ACKED, 4)
    assert not r.passed and "only acknowledged" in r.hint
    assert "whatever its offset" in lab13.check_lost_values([b"x-4"], LOG, ACKED, 4).hint
    assert "below the follower" in lab13.check_lost_values([b"x-3", b"x-4", b"x-6"], LOG, ACKED, 4).hint
    assert lab13.check_lost_values([b"x-6"], LOG, ACKED, 5).passed                    # follows the data
    assert not lab13.check_lost_values("x-4", LOG, ACKED, 4).passed


def test_check_setting_outcomes():
    cases = [{"acks": "all", "min_insync_replicas": 1, "unclean": True, "replication_factor": 3},
             {"acks": 1, "min_insync_replicas": 1, "unclean": False, "replication_factor": 3}]
    right = [lab13.setting_outcome("all", 1, True, 3), lab13.setting_outcome(1, 1, False, 3)]
    assert lab13.check_setting_outcomes(right, cases).passed
    assert lab13.check_setting_outcomes(..., cases).status == "todo"
    wrong = [dict(right[0], **{"acknowledged writes lost": False}),
             dict(right[1], **{"after the leader dies": "a follower leads, writes go on"})]
    r = lab13.check_setting_outcomes(wrong, cases)
    notes = [p.note for p in r.parts]
    assert not r.passed and "leader alone" in notes[0] and "only an ISR member" in notes[1]
    assert not lab13.check_setting_outcomes([right[0]], cases).passed


def test_check_classification():
    outcomes = [3, "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"]
    assert lab13.check_classification(["ok", "fail", "info"], outcomes).passed
    assert lab13.check_classification(..., outcomes).status == "todo"
    r = lab13.check_classification(["ok", "info", "fail"], outcomes)
    notes = [p.note for p in r.parts]
    assert not r.passed and "before anything is written" in notes[1] and "proves nothing" in notes[2]
    assert not lab13.check_classification(["ok"], outcomes).passed


def test_controller_metrics_reads_kafkas_controller_metrics_of_each_running_broker():
    run = lab13.JepsenRun(acks=1, min_insync_replicas=1, unclean=True)
    try:
        metrics = run.controller_metrics()
    finally:
        run.stop()
    assert sorted(metrics) == [0, 1]
    assert all(tuple(m) == lab13.CONTROLLER_METRICS for m in metrics.values())
    assert sum(m["ActiveControllerCount"] for m in metrics.values()) == 1
    assert all(m["UncleanLeaderElectionsPerSec"] == m["OfflinePartitionsCount"] == 0 for m in metrics.values())
