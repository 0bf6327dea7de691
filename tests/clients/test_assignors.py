"""Client-side partition assignment of the classic group protocol (kafkalab.clients.consumer.assignors).

Worked examples come from the Javadoc of Kafka's assignors; properties (coverage, balance, stickiness, the
cooperative rule) are checked with hypothesis; the protocol bytes are compared with kafka-python's own
encoder of ConsumerProtocolSubscription / ConsumerProtocolAssignment.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.clients.consumer.assignors import (ASSIGNORS, DEFAULT_PARTITION_ASSIGNMENT_STRATEGY, Assignment,
                                                 CooperativeStickyAssignor, RangeAssignor, RebalanceProtocol,
                                                 RoundRobinAssignor, StickyAssignor, Subscription,
                                                 TopicPartition, assignor_class, decode_assignment,
                                                 decode_subscription, encode_assignment, encode_subscription,
                                                 get_assignors)
from kafkalab.clients.consumer.assignors.abstract_sticky import balance_score
from kafkalab.clients.consumer.assignors.protocol import annotate_subscription
from kafkalab.clients.consumer.assignors.sticky import decode_user_data, encode_user_data
from kafkalab.protocol.errors import DecodeError, EncodeError

kp_metadata = pytest.importorskip("kafka.protocol.consumer.metadata")
KpSubscription = kp_metadata.ConsumerProtocolSubscription
KpAssignment = kp_metadata.ConsumerProtocolAssignment


def tps(text: str) -> list:
    """'t0p0 t1p2' -> [TopicPartition('t0', 0), TopicPartition('t1', 2)] (the Javadoc's spelling)."""
    out = []
    for word in text.split():
        topic, _, p = word.rpartition("p")
        out.append(TopicPartition(topic, int(p)))
    return out


def parts(result) -> dict:
    return {m: a.partitions for m, a in result.items()}


# -- worked examples from the Javadoc ----------------------------------------------------------------------

def test_range_javadoc_example():
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    result = RangeAssignor().assign(subs, {"t0": 3, "t1": 3})
    assert parts(result) == {"C0": tps("t0p0 t0p1 t1p0 t1p1"), "C1": tps("t0p2 t1p2")}


def test_range_static_members_sort_by_group_instance_id():
    # after a rolling bounce the member ids changed order (C3 > C2) but the instance ids did not
    subs = {"C3": Subscription(["t0", "t1"], group_instance_id="I0"),
            "C2": Subscription(["t0", "t1"], group_instance_id="I1")}
    result = RangeAssignor().assign(subs, {"t0": 3, "t1": 3})
    assert parts(result) == {"C3": tps("t0p0 t0p1 t1p0 t1p1"), "C2": tps("t0p2 t1p2")}
    # static members come before dynamic ones
    subs["A"] = Subscription(["t0", "t1"])
    result = RangeAssignor().assign(subs, {"t0": 3, "t1": 3})
    assert parts(result) == {"C3": tps("t0p0 t1p0"), "C2": tps("t0p1 t1p1"), "A": tps("t0p2 t1p2")}


def test_range_skips_topics_without_metadata_and_members_without_topics():
    subs = {"C0": Subscription(["t0", "gone"]), "C1": Subscription([])}
    assert parts(RangeAssignor().assign(subs, {"t0": 2})) == {"C0": tps("t0p0 t0p1"), "C1": []}


def test_roundrobin_javadoc_examples():
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    result = RoundRobinAssignor().assign(subs, {"t0": 3, "t1": 3})
    assert parts(result) == {"C0": tps("t0p0 t0p2 t1p1"), "C1": tps("t0p1 t1p0 t1p2")}

    subs = {"C0": Subscription(["t0"]), "C1": Subscription(["t0", "t1"]), "C2": Subscription(["t0", "t1", "t2"])}
    result = RoundRobinAssignor().assign(subs, {"t0": 1, "t1": 2, "t2": 3})
    assert parts(result) == {"C0": tps("t0p0"), "C1": tps("t1p0"), "C2": tps("t1p1 t2p0 t2p1 t2p2")}


def test_roundrobin_static_members():
    # C5 was C0, C3 was C1, C4 was C2: with instance ids I0..I2 nothing moves
    subs = {"C5": Subscription(["t0", "t1"], group_instance_id="I0"),
            "C3": Subscription(["t0", "t1"], group_instance_id="I1"),
            "C4": Subscription(["t0", "t1"], group_instance_id="I2")}
    result = RoundRobinAssignor().assign(subs, {"t0": 3, "t1": 3})
    assert parts(result) == {"C5": tps("t0p0 t1p0"), "C3": tps("t0p1 t1p1"), "C4": tps("t0p2 t1p2")}


def _sticky_subscription(topics, partitions, generation):
    return Subscription(topics, user_data=encode_user_data(partitions, generation))


def test_sticky_javadoc_example_1():
    topics = ["t0", "t1", "t2", "t3"]
    counts = dict.fromkeys(topics, 2)
    subs = {m: Subscription(topics) for m in ("C0", "C1", "C2")}
    first = parts(StickyAssignor().assign(subs, counts))
    assert first == {"C0": tps("t0p0 t1p1 t3p0"), "C1": tps("t0p1 t2p0 t3p1"), "C2": tps("t1p0 t2p1")}
    # C1 leaves: every partition of C0 and C2 stays, only C1's three are dealt out
    subs = {m: _sticky_subscription(topics, first[m], 1) for m in ("C0", "C2")}
    second = parts(StickyAssignor().assign(subs, counts))
    assert set(first["C0"]) <= set(second["C0"]) and set(first["C2"]) <= set(second["C2"])
    assert sorted(second["C0"] + second["C2"]) == sorted(first["C0"] + first["C1"] + first["C2"])
    assert len(second["C0"]) == len(second["C2"]) == 4
    # (Kafka's Javadoc predates the quota-based builder and shows another, equally sticky, split)
    assert second == {"C0": tps("t0p0 t3p0 t1p1 t0p1"), "C2": tps("t1p0 t2p1 t2p0 t3p1")}


def test_sticky_javadoc_example_2_unequal_subscriptions():
    topics = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    counts = {"t0": 1, "t1": 2, "t2": 3}
    first = parts(StickyAssignor().assign({m: Subscription(t) for m, t in topics.items()}, counts))
    assert first == {"C0": tps("t0p0"), "C1": tps("t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}
    subs = {m: _sticky_subscription(topics[m], first[m], 1) for m in ("C1", "C2")}
    second = parts(StickyAssignor().assign(subs, counts))
    assert second == {"C1": tps("t1p0 t1p1 t0p0"), "C2": tps("t2p0 t2p1 t2p2")}


def test_cooperative_two_phase_example():
    subs = {"C0": Subscription(["t"], owned_partitions=tps("tp0 tp1 tp2 tp3"), generation_id=1),
            "C1": Subscription(["t"])}
    first = parts(CooperativeStickyAssignor().assign(subs, {"t": 4}))
    assert first == {"C0": tps("tp0 tp1"), "C1": []}          # tp2, tp3 are revoked first
    subs = {"C0": Subscription(["t"], owned_partitions=first["C0"], generation_id=2),
            "C1": Subscription(["t"], owned_partitions=[], generation_id=2)}
    second = parts(CooperativeStickyAssignor().assign(subs, {"t": 4}))
    assert second == {"C0": tps("tp0 tp1"), "C1": tps("tp2 tp3")}


def test_zombie_claims_in_the_same_generation_are_reassigned():
    subs = {"C0": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=3),
            "C1": Subscription(["t"], owned_partitions=tps("tp1 tp2"), generation_id=3)}
    plan = parts(CooperativeStickyAssignor().assign(subs, {"t": 4}))
    # tp1 is claimed twice in one generation: nobody keeps it, so it is withheld this round
    assert TopicPartition("t", 1) not in plan["C0"] + plan["C1"]
    # with a newer generation the newer claim wins
    subs["C1"].generation_id = 4
    plan = parts(CooperativeStickyAssignor().assign(subs, {"t": 4}))
    assert TopicPartition("t", 1) in plan["C1"]


# -- registry ------------------------------------------------------------------------------------------------

def test_registry_names():
    assert set(ASSIGNORS) == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    assert assignor_class("org.apache.kafka.clients.consumer.RangeAssignor") is RangeAssignor
    assert assignor_class("org.apache.kafka.clients.consumer.RoundRobinAssignor") is RoundRobinAssignor
    assert assignor_class("org.apache.kafka.clients.consumer.StickyAssignor") is StickyAssignor
    assert assignor_class("org.apache.kafka.clients.consumer.CooperativeStickyAssignor") is CooperativeStickyAssignor
    assert assignor_class("cooperative-sticky") is CooperativeStickyAssignor
    assert assignor_class("RoundRobinAssignor") is RoundRobinAssignor
    assert [a.name for a in get_assignors()] == ["range", "cooperative-sticky"]
    assert DEFAULT_PARTITION_ASSIGNMENT_STRATEGY[0] == "org.apache.kafka.clients.consumer.RangeAssignor"
    assert [a.name for a in get_assignors("roundrobin, org.apache.kafka.clients.consumer.StickyAssignor")] == \
        ["roundrobin", "sticky"]
    with pytest.raises(ValueError, match="did you mean 'roundrobin'"):
        assignor_class("round-robin")
    with pytest.raises(ValueError, match="more than one"):
        get_assignors(["range", "org.apache.kafka.clients.consumer.RangeAssignor"])
    assert CooperativeStickyAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE,
                                                                  RebalanceProtocol.EAGER]
    assert RangeAssignor().supported_protocols() == [RebalanceProtocol.EAGER]


def test_member_user_data_lifecycle():
    sticky = StickyAssignor()
    assert sticky.subscription_user_data({"t"}) is None
    sticky.on_assignment(Assignment(tps("tp0 tp2")), 7)
    data = decode_user_data(sticky.subscription_user_data({"t"}))
    assert data.partitions == tps("tp0 tp2") and data.generation == 7
    assert decode_user_data(encode_user_data(tps("tp1"), None)).generation is None   # v0
    assert decode_user_data(b"\x01").partitions == []                              # garbage is ignored
    coop = CooperativeStickyAssignor()
    coop.on_assignment(Assignment(tps("tp0")), 9)
    assert coop.subscription_user_data({"t"}) == b"\x00\x00\x00\x09"
    # an old member (subscription v1) carries its generation in user_data
    old = Subscription(["t"], user_data=b"\x00\x00\x00\x09", owned_partitions=tps("tp0"))
    assert coop.member_data(old).generation == 9


def test_sticky_user_data_matches_kafka_python():
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    ours = encode_user_data(tps("t0p1 t0p2 t1p0"), 5)
    theirs = StickyAssignorUserData([("t0", [1, 2]), ("t1", [0])], 5).encode(header=False)
    assert ours == theirs


# -- protocol bytes ------------------------------------------------------------------------------------------

topic_names = st.text(alphabet="abcdefgh_.-0123456789", min_size=1, max_size=8)
owned_lists = st.lists(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=8, unique=True)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_names, max_size=5, unique=True),
    user_data=st.none() | st.binary(max_size=16),
    owned_partitions=owned_lists,
    generation_id=st.integers(-1, 2**31 - 1),
    rack_id=st.none() | st.text(alphabet="abc", min_size=1, max_size=4),
)


def _kp_subscription(sub: Subscription, version: int) -> bytes:
    by_topic: dict = {}
    for tp in sorted(sub.owned_partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return KpSubscription(
        version=version, topics=sorted(sub.topics), user_data=sub.user_data,
        owned_partitions=[KpSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in by_topic.items()],
        generation_id=sub.generation_id, rack_id=sub.rack_id).encode()


@settings(max_examples=150, deadline=None)
@given(subscriptions, st.integers(0, 3))
def test_subscription_bytes_match_kafka_python_and_round_trip(sub, version):
    data = encode_subscription(sub, version)
    assert data == _kp_subscription(sub, version)
    back = decode_subscription(data)
    assert sorted(back.topics) == sorted(sub.topics)
    assert back.user_data == sub.user_data
    assert back.owned_partitions == (sorted(sub.owned_partitions) if version >= 1 else [])
    assert back.generation_id == (sub.generation_id if version >= 2 else -1)
    assert back.rack_id == (sub.rack_id if version >= 3 else None)


assignments = st.builds(Assignment, partitions=owned_lists, user_data=st.none() | st.binary(max_size=16))


@settings(max_examples=150, deadline=None)
@given(assignments, st.integers(0, 3))
def test_assignment_bytes_match_kafka_python_and_round_trip(assignment, version):
    data = encode_assignment(assignment, version)
    by_topic: dict = {}
    for tp in assignment.partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    theirs = KpAssignment(version=version, user_data=assignment.user_data, assigned_partitions=[
        KpAssignment.TopicPartition(topic=t, partitions=ps) for t, ps in by_topic.items()]).encode()
    assert data == theirs
    back = decode_assignment(data)
    assert sorted(back.partitions) == sorted(assignment.partitions) and back.user_data == assignment.user_data
    assert encode_assignment(back, version) == data


def test_kafka_python_bytes_decode():
    data = KpSubscription(version=3, topics=["a", "b"], user_data=b"x", owned_partitions=[
        KpSubscription.TopicPartition(topic="a", partitions=[3, 1])], generation_id=12, rack_id="r").encode()
    sub = decode_subscription(data, group_instance_id="i-1")
    assert sub == Subscription(["a", "b"], b"x", tps("ap3 ap1"), 12, "r", "i-1")


def test_newer_versions_are_read_leniently():
    v3 = encode_subscription(Subscription(["t"], None, tps("tp0"), 4, "rack"), 3)
    v9 = b"\x00\x09" + v3[2:] + b"future fields"
    assert decode_subscription(v9) == decode_subscription(v3)
    a3 = encode_assignment(Assignment(tps("tp0 tp1"), b"u"))
    assert decode_assignment(b"\x00\x07" + a3[2:] + b"\x00\x01") == decode_assignment(a3)
    assert encode_subscription(Subscription(["t"]), 7)[:2] == b"\x00\x03"    # written as the highest we know


def test_wire_defaults_and_errors():
    v0 = encode_subscription(Subscription(["t"], owned_partitions=tps("tp0"), generation_id=3, rack_id="r"), 0)
    assert v0 == bytes.fromhex("0000" "00000001" "0001" "74" "ffffffff")
    assert decode_subscription(v0) == Subscription(["t"])
    # an empty rack id means "no rack", as in Java
    assert decode_subscription(encode_subscription(Subscription(["t"], rack_id=""), 3)).rack_id is None
    with pytest.raises(DecodeError):
        decode_subscription(b"\xff\xff" + v0[2:])          # negative version
    with pytest.raises(DecodeError):
        decode_subscription(v0[:-2])                        # truncated user_data length
    with pytest.raises(DecodeError):
        decode_assignment(b"\x00")                          # not even a version
    with pytest.raises(DecodeError):
        decode_assignment(b"\x00\x00\x7f\xff\xff\xff")      # absurd array length
    with pytest.raises(EncodeError):
        encode_subscription(Subscription(["t"]), -1)
    _, body, end, rows = annotate_subscription(v0)
    assert end == len(v0) and body.topics == ("t",) and rows


# -- properties ----------------------------------------------------------------------------------------------

@st.composite
def groups(draw, equal=False):
    n_topics = draw(st.integers(1, 4))
    counts = {f"t{i}": draw(st.integers(0, 8)) for i in range(n_topics)}
    n_members = draw(st.integers(1, 6))
    members = [f"m{i:02d}" for i in range(n_members)]
    if equal:
        topics = draw(st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True))
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: draw(st.lists(st.sampled_from(sorted(counts)), unique=True)) for m in members}
    return counts, subs


ALL = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]


def check_coverage(result, subs, counts, complete=True):
    seen = [tp for a in result.values() for tp in a.partitions]
    assert len(seen) == len(set(seen)), "a partition was assigned twice"
    for member, a in result.items():
        assert all(tp.topic in subs[member] and 0 <= tp.partition < counts[tp.topic] for tp in a.partitions)
    if complete:
        wanted = {TopicPartition(t, p) for m in subs for t in subs[m] for p in range(counts.get(t, 0))}
        assert set(seen) == wanted


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups())
def test_every_subscribed_partition_assigned_exactly_once(cls, group):
    counts, topics = group
    result = cls().assign({m: Subscription(t) for m, t in topics.items()}, counts)
    assert set(result) == set(topics)
    check_coverage(result, topics, counts)
    again = cls().assign({m: Subscription(t) for m, t in reversed(list(topics.items()))}, counts)
    assert parts(again) == parts(result), "the result depends on the order of the members"


@pytest.mark.parametrize("cls", [RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor],
                         ids=lambda c: c.name)
@settings(max_examples=60, deadline=None)
@given(group=groups(equal=True))
def test_balanced_with_equal_subscriptions(cls, group):
    counts, topics = group
    sizes = [len(a.partitions) for a in cls().assign({m: Subscription(t) for m, t in topics.items()},
                                                     counts).values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=60, deadline=None)
@given(group=groups())
def test_sticky_is_balanced_when_subscriptions_differ(group):
    """No member two or more behind another could take one of that member's partitions."""
    counts, topics = group
    result = parts(StickyAssignor().assign({m: Subscription(t) for m, t in topics.items()}, counts))
    for member, mine in result.items():
        for other, theirs in result.items():
            if len(mine) + 1 < len(theirs):
                assert not any(tp.topic in topics[member] for tp in theirs), (member, other, result)


@settings(max_examples=60, deadline=None)
@given(group=groups(equal=True), data=st.data())
def test_sticky_keeps_partitions_of_remaining_members(group, data):
    counts, topics = group
    first = parts(StickyAssignor().assign({m: Subscription(t) for m, t in topics.items()}, counts))
    leaving = data.draw(st.sampled_from(sorted(topics)))
    stay = {m: _sticky_subscription(topics[m], first[m], 1) for m in topics if m != leaving}
    if not stay:
        return
    second = parts(StickyAssignor().assign(stay, counts))
    check_coverage({m: Assignment(p) for m, p in second.items()}, {m: topics[m] for m in stay}, counts)
    for member in stay:
        assert set(first[member]) <= set(second[member]), "a remaining member lost a partition"


@settings(max_examples=60, deadline=None)
@given(group=groups(), data=st.data())
def test_sticky_general_case_keeps_partitions_when_a_member_leaves(group, data):
    counts, topics = group
    first = parts(StickyAssignor().assign({m: Subscription(t) for m, t in topics.items()}, counts))
    leaving = data.draw(st.sampled_from(sorted(topics)))
    stay = {m: _sticky_subscription(topics[m], first[m], 1) for m in topics if m != leaving}
    if not stay:
        return
    second = StickyAssignor().assign(stay, counts)
    check_coverage(second, {m: topics[m] for m in stay}, counts)
    kept = sum(len(set(first[m]) & set(second[m].partitions)) for m in stay)
    # never worse than starting from scratch, and balance never worse than a fresh plan
    fresh = StickyAssignor().assign({m: Subscription(topics[m]) for m in stay}, counts)
    assert kept >= sum(len(set(first[m]) & set(fresh[m].partitions)) for m in stay)
    assert balance_score(parts(second)) <= balance_score(parts(fresh)) + 2 * len(stay)


@st.composite
def membership_changes(draw):
    counts, topics = draw(groups(equal=draw(st.booleans())))
    pool = sorted(counts)
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        steps.append(draw(st.lists(st.sampled_from([f"m{i:02d}" for i in range(8)]), min_size=1, max_size=6,
                                   unique=True)))
    change_topics = draw(st.booleans())
    return counts, topics, steps, pool, change_topics


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=membership_changes(), data=st.data())
def test_cooperative_never_moves_a_partition_in_one_rebalance(scenario, data):
    counts, topics, steps, pool, change_topics = scenario
    owned: dict = {}          # member -> partitions it owns now
    generation = 0
    for members in steps:
        subs_topics = {m: topics.get(m) or topics[next(iter(topics))] for m in members}
        if change_topics:
            subs_topics = {m: data.draw(st.lists(st.sampled_from(pool), min_size=1, unique=True)) for m in members}
        for _round in range(4):   # the rebalance, then follow-ups until nobody lost anything
            subs = {m: Subscription(subs_topics[m], owned_partitions=owned.get(m, []),
                                    generation_id=generation if m in owned else -1) for m in members}
            plan = parts(CooperativeStickyAssignor().assign(subs, counts))
            generation += 1
            for member, new in plan.items():
                for tp in new:
                    if tp in owned.get(member, []):
                        continue
                    holders = [o for o in members if o != member and tp in owned.get(o, [])]
                    assert not holders, f"{tp} given to {member} while {holders} still own it"
            lost = any(set(owned.get(m, [])) - set(plan[m]) for m in members)
            owned = {m: plan[m] for m in members}
            if not lost:
                break
        equal = len({frozenset(t) for t in subs_topics.values()}) == 1
        assert not lost or not equal, "equal subscriptions did not settle within four rebalances"
        # once nobody loses anything, the plan is the whole sticky plan: everything is assigned
        check_coverage({m: Assignment(p) for m, p in owned.items()}, subs_topics, counts, complete=not lost)
