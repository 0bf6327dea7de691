"""Lab 10's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". Fast: no client or broker, only the sans-IO group coordinator on a MockTime clock."""
from __future__ import annotations

import pytest

from kafkalab.coordinator.group.group_metadata_manager import java_string_hash
from kafkalab.coordinator.group.records import consumer_subscription
from kafkalab.labs import lab10


# -- helpers ---------------------------------------------------------------------------------------------------------------
def test_hash_steps_end_in_javas_hash_code():
    for group in ["billing", "payments-eu", "", "é-groupe", "a" * 40]:
        steps = lab10.hash_steps(group)
        assert (steps[-1]["h (int32)"] if steps else 0) == java_string_hash(group)
    assert java_string_hash("billing") == -109829509         # "billing".hashCode() in Java
    assert lab10.coordinator_partition("billing", 50) == 9


def test_subscription_fields_v0_and_v3():
    v0 = lab10.decode_subscription(consumer_subscription(["orders", "refunds"]))
    assert v0 == {"topics": ["orders", "refunds"], "version": 0, "user_data": "null"}
    librdkafka_v3 = bytes.fromhex("00030000000100066f72646572730000000000000000ffffffff0000")
    fields = lab10.subscription_fields(librdkafka_v3)
    assert [f["field"] for f in fields] == ["version", "topics (count)", "topics[0]", "user_data",
                                            "owned_partitions (count)", "generation_id", "rack_id"]
    assert "".join(f["bytes"].replace(" ", "") for f in fields) == librdkafka_v3.hex()
    assert lab10.decode_subscription(librdkafka_v3)["generation_id"] == -1


def test_range_assign_matches_kafkas_rule():
    got = lab10.range_assign({"c": ["t"], "a": ["t", "u"], "b": ["t", "u"]}, {"t": 7, "u": 2})
    assert got == {"c": {"t": [5, 6]}, "a": {"t": [0, 1, 2], "u": [0]}, "b": {"t": [3, 4], "u": [1]}}
    idle = lab10.range_assign({f"m{i}": ["t"] for i in range(4)}, {"t": 3})
    assert idle["m3"] == {} and sorted(p for a in idle.values() for p in a.get("t", [])) == [0, 1, 2]


def test_lab_group_walks_a_rebalance_deterministically():
    def run():
        lab = lab10.LabGroup()
        lab.join("alice")
        parked = lab.join("alice")
        lab.advance(1000)
        lab.join("bob")
        lab.join("bob")
        lab.advance(5000)
        assert not parked.parked and parked.result.generation_id == 1 and lab.state.value == "CompletingRebalance"
        subs = {m: lab10.decode_subscription(md)["topics"] for m, _, md in parked.result.members}
        follower = lab.sync("bob")
        assert follower.parked
        lab.sync("alice", lab10.range_assign(subs, {"orders": 6}))
        assert lab10.decode_assignment(follower.result.assignment) == {"orders": [3, 4, 5]}
        lab.advance(9000, heartbeats=["alice", "bob"])
        lab.commit("alice", {("orders", 0): 42})
        lab.advance(12_000, heartbeats=["alice"])
        assert not lab.group.has(lab.member_ids["bob"]) and lab.state.value == "PreparingRebalance"
        return lab
    a, b = run(), run()
    assert a.member_ids == b.member_ids == {"alice": "alice-00000000-0000-0000-0000-000000000001",
                                           "bob": "bob-00000000-0000-0000-0000-000000000002"}
    assert a.timeline().svg() == b.timeline().svg()
    assert a.events() == b.events() and any("bob session expired" in t for _, t in a.events())
    assert [s for _, s in a.states()] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable",
                                          "PreparingRebalance"]
    rows = a.offsets_records()
    assert [r["key (version)"] for r in rows] == ["group metadata (v2)", "offset commit (v1)"]
    assert "offset 42" in rows[1]["value"] and "alice → {'orders': [0, 1, 2]}" in rows[0]["value"]
    assert a.state_machine().source == b.state_machine().source
    assert "(now)" in a.state_machine().source


def test_mask_ids():
    assert lab10.mask_ids("member-0-c4403397-2ed3-4d9c-9c44-645efc994c50") == "member-0-<uuid>"


def test_session_expiries_and_delivery_outcome():
    beats = {"a": [3, 6, 9, 12, 15, 18], "b": [3, 6], "c": [3, 14, 17]}
    assert lab10.session_expiries(beats, 10_000, 20) == {"a": None, "b": 16.0, "c": 13.0}
    assert lab10.delivery_outcome(10, 3, 7, commit_first=False) == {"reprocessed": [6, 7], "lost": []}
    assert lab10.delivery_outcome(10, 3, 7, commit_first=True) == {"reprocessed": [], "lost": [8]}
    assert lab10.delivery_outcome(10, 1, 4, commit_first=False) == {"reprocessed": [4], "lost": []}
    assert lab10.delivery_outcome(10, 1, 4, commit_first=True) == {"reprocessed": [], "lost": []}


# -- checks ----------------------------------------------------------------------------------------------------------------
def test_check_coordinator_partition():
    group = "payments-eu"
    h = java_string_hash(group)
    right = abs(h) % 50
    assert lab10.check_coordinator_partition(right, group).passed
    assert lab10.check_coordinator_partition(..., group).status == "todo"
    assert "modulo" in lab10.check_coordinator_partition(abs(h), group).hint
    unsigned = (h & 0xFFFFFFFF) % 50
    if unsigned != right:
        assert "signed" in lab10.check_coordinator_partition(unsigned, group).hint
    assert "between 0 and 49" in lab10.check_coordinator_partition(77, group).hint
    assert lab10.check_coordinator_partition(abs(java_string_hash("x")) % 7, "x", 7).passed   # follows the data


def test_check_range_assignment():
    subs = {"w3": ["clicks"], "w1": ["clicks", "views"], "w2": ["clicks", "views"]}
    parts = {"clicks": 7, "views": 2}
    right = {"w1": {"clicks": [0, 1, 2], "views": [0]}, "w2": {"clicks": [3, 4], "views": [1]}, "w3": {"clicks": [5, 6]}}
    assert lab10.check_range_assignment(right, subs, parts).passed
    assert lab10.check_range_assignment(..., subs, parts).status == "todo"
    assert lab10.check_range_assignment({m: ... for m in subs}, subs, parts).status == "todo"   # student version
    reversed_order = {"w3": {"clicks": [0, 1, 2]}, "w2": {"clicks": [3, 4], "views": [0]},
                      "w1": {"clicks": [5, 6], "views": [1]}}
    wrong = lab10.check_range_assignment(reversed_order, subs, parts)
    assert not wrong.passed and "sorted by member id" in wrong.hint
    assert not lab10.check_range_assignment({**right, "w9": {}}, subs, parts).passed
    assert not lab10.check_range_assignment([1, 2], subs, parts).passed


def test_check_session_expiry():
    beats = {"ana": [3, 6, 9, 12, 15, 18, 21, 24, 27, 30], "ben": [3, 6, 9, 12, 15],
             "cai": [3, 6, 14, 17, 20, 23, 26, 29], "dee": [3, 16, 19, 22]}
    right = {"ana": None, "ben": 25, "cai": None, "dee": 13}
    assert lab10.check_session_expiry(right, beats, 10_000, 30).passed
    assert lab10.check_session_expiry(..., beats, 10_000, 30).status == "todo"
    last_listed = lab10.check_session_expiry({**right, "dee": 32}, beats, 10_000, 30)
    assert not last_listed.passed
    assert "it ran out" in [p for p in last_listed.parts if p.label == "dee"][0].note
    gap = lab10.check_session_expiry({**right, "cai": 16}, beats, 10_000, 30)
    assert "no gap" in [p for p in gap.parts if p.label == "cai"][0].note


def test_check_delivery():
    right = {"at-least-once": {"reprocessed": [6, 7], "lost": []}, "at-most-once": {"reprocessed": [], "lost": [8]}}
    assert lab10.check_delivery(right, 10, 3, 7).passed
    assert lab10.check_delivery(..., 10, 3, 7).status == "todo"
    assert lab10.check_delivery({"at-least-once": ..., "at-most-once": ...}, 10, 3, 7).status == "todo"
    swapped = lab10.check_delivery({"at-least-once": {"reprocessed": [], "lost": [8]},
                                    "at-most-once": {"reprocessed": [6, 7], "lost": []}}, 10, 3, 7)
    notes = {p.label: p.note for p in swapped.parts}
    assert not swapped.passed and "never loses" in notes["at-least-once: lost"]
    assert "never processes a record twice" in notes["at-most-once: reprocessed"]
    assert lab10.check_delivery(right, 10, 3, 8).passed is False                # follows the data


@pytest.mark.parametrize("answer", ["9", True, 9.0])
def test_check_coordinator_partition_wants_an_int(answer):
    assert not lab10.check_coordinator_partition(answer, "billing").passed


# -- sections 10-12: where a consumer starts, auto-commit -------------------------------------------------------------
@pytest.mark.parametrize("policy,committed,expected", [
    ("latest", None, 250), ("earliest", None, 100), ("none", None, lab10.NO_OFFSET),
    ("latest", 180, 180), ("none", 180, 180), ("earliest", 250, 250),           # a committed offset in the log wins
    ("earliest", 40, 100), ("latest", 40, 250), ("none", 40, lab10.OUT_OF_RANGE),  # out of range: the policy
    ("earliest", 300, 100), ("none", 300, lab10.OUT_OF_RANGE),
])
def test_start_offset_follows_javas_consumer(policy, committed, expected):
    assert lab10.start_offset(policy, 100, 250, committed) == expected


def test_start_offset_refuses_an_unknown_policy():
    with pytest.raises(ValueError, match="auto.offset.reset"):
        lab10.start_offset("smallest", 0, 10)


CASES = {"reports": ("latest", 180), "audit": ("earliest", None), "alerts": ("latest", None),
         "archive": ("earliest", 40), "billing": ("none", None)}
RIGHT = {"reports": 180, "audit": 100, "alerts": 250, "archive": 100, "billing": "NoOffsetForPartitionException"}


def test_check_start_offsets():
    assert lab10.check_start_offsets(RIGHT, 100, 250, CASES).passed
    assert lab10.check_start_offsets(..., 100, 250, CASES).status == "todo"
    wrong = lab10.check_start_offsets({**RIGHT, "reports": 250, "archive": 40, "alerts": 249, "billing": 100},
                                      100, 250, CASES)
    notes = {p.label: p.note for p in wrong.parts}
    assert not wrong.passed and "is not asked" in notes["reports"]
    assert "OFFSET_OUT_OF_RANGE" in notes["archive"] and "log end offset" in notes["alerts"]
    assert "throws" in notes["billing"]
    assert not lab10.check_start_offsets({**RIGHT, "audit": True}, 100, 250, {**CASES, "audit": ("earliest", 1)}
                                         ).passed
    assert not lab10.check_start_offsets(RIGHT, 100, 260, CASES).passed          # follows the data


def test_auto_commit_plan_commits_at_the_start_of_a_poll_what_earlier_polls_returned():
    every_second = [k * 1000 for k in range(20)]
    plan = lab10.auto_commit_plan(every_second, 5_000, 12)
    assert plan == {"commits": [(5_000, 5), (10_000, 10)], "committed": 10, "redelivered": [10, 11, 12]}
    assert lab10.auto_commit_plan(every_second, 5_000, 3) == {"commits": [], "committed": None,
                                                              "redelivered": [0, 1, 2, 3]}
    # the interval counts from the last commit, not on a fixed grid
    assert lab10.auto_commit_plan([0, 700, 1_400, 2_100, 2_800, 3_500, 4_200, 4_900, 5_600, 6_300], 2_000,
                                  8)["commits"] == [(2_100, 3), (4_200, 6)]


def test_check_auto_commit_duplicates():
    times = [0, 700, 1_400, 2_100, 2_800, 3_500, 4_200, 4_900, 5_600, 6_300]
    assert lab10.check_auto_commit_duplicates([6, 7, 8], times, 2_000, 8).passed
    assert lab10.check_auto_commit_duplicates(..., times, 2_000, 8).status == "todo"
    one_late = lab10.check_auto_commit_duplicates([7, 8], times, 2_000, 8)
    assert not one_late.passed and "does not cover the record that poll returns" in one_late.hint
    assert not lab10.check_auto_commit_duplicates("6-8", times, 2_000, 8).passed
    assert not lab10.check_auto_commit_duplicates([6, 7, 8], times, 3_000, 8).passed   # follows the data
