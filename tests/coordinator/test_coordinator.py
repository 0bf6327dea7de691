"""The group coordinator driven step by step: MockTime + MockScheduler, an in-memory __consumer_offsets."""
import pytest

from kafkalab.common.scheduler import MockScheduler
from kafkalab.common.time import MockTime
from kafkalab.coordinator.group import GroupConfig, GroupCoordinator, GroupState
from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.coordinator.group.group_metadata_manager import MemoryOffsetsLog, partition_for
from kafkalab.coordinator.group.records import (consumer_assignment, consumer_subscription, read_group_value,
                                                read_message_key)
from kafkalab.protocol import ErrorCode as E

S = GroupState
G = "group-a"
SESSION, REBALANCE, DELAY = 10_000, 30_000, 3_000
PROTOS = [("range", consumer_subscription(["t"])), ("roundrobin", consumer_subscription(["t"]))]


class Env:
    def __init__(self, log=None, **cfg):
        self.time = MockTime()
        self.scheduler = MockScheduler(self.time)
        self.log = log or MemoryOffsetsLog()
        self.config = GroupConfig(offsets_topic_num_partitions=4, **cfg)
        self.gc = GroupCoordinator(self.config, self.time, self.scheduler, self.log)
        self.gc.startup()
        for p in range(4):
            self.gc.on_election(p)

    def settle(self):
        """Advance through group.initial.rebalance.delay.ms (extended while members kept arriving)."""
        for _ in range(20):
            if G not in self.gc.rebalance.joins or not self.gc.rebalance.joins[G].initial:
                return
            self.time.advance(DELAY)

    @property
    def group(self):
        return self.gc.manager.get_group(G)

    def join(self, member_id="", instance=None, protocols=PROTOS, version=5, client="c", session=SESSION):
        box = []
        self.gc.handle_join_group(G, member_id, instance, version >= 4, client, "/127.0.0.1", REBALANCE, session,
                                  "consumer", protocols, box.append)
        return box

    def join_new(self, **kw):
        """A v4+ dynamic member: MEMBER_ID_REQUIRED, then the real (parked) join."""
        [first] = self.join(**kw)
        assert first.error == E.MEMBER_ID_REQUIRED and first.member_id
        return first.member_id, self.join(member_id=first.member_id, **kw)

    def sync(self, member_id, generation, assignment=None, instance=None):
        box = []
        self.gc.handle_sync_group(G, generation, member_id, None, None, instance, assignment or {}, box.append)
        return box

    def stable_group(self, n=2):
        """n members joined and synced; returns (member ids, generation). The first member leads."""
        ids, boxes = [], []
        for i in range(n):
            mid, box = self.join_new(client=f"c{i}")
            ids.append(mid)
            boxes.append(box)
        self.settle()
        results = [b[0] for b in boxes]
        leader = results[0].leader_id
        gen = results[0].generation_id
        syncs = [self.sync(m, gen, {m2: consumer_assignment({"t": [j]}) for j, m2 in enumerate(ids)} if m == leader
                           else None) for m in ids]
        assert all(s and s[0].error == E.NONE for s in syncs)
        assert self.group.state == S.STABLE
        return ids, gen


@pytest.fixture
def env():
    return Env()


def test_member_id_required_then_initial_delay_then_one_generation(env):
    a, box_a = env.join_new(client="ca")
    assert a.startswith("ca-")
    assert env.group.state == S.PREPARING_REBALANCE and box_a == []          # parked
    env.time.advance(DELAY - 1)
    b, box_b = env.join_new(client="cb")                                      # arrives during the delay
    env.time.advance(1)
    assert box_a == [] and box_b == []                                        # delay extended: new member came
    env.settle()
    [ra], [rb] = box_a, box_b
    assert env.group.state == S.COMPLETING_REBALANCE
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader_id == rb.leader_id == a                                  # first to join leads
    assert ra.protocol_name == "range" and ra.protocol_type == "consumer"
    assert [m[0] for m in ra.members] == [a, b] and rb.members == ()          # only the leader sees members


def test_v3_join_gets_its_member_id_in_the_parked_answer(env):
    box = env.join(version=3)
    assert box == []
    env.settle()
    assert box[0].error == E.NONE and box[0].member_id and box[0].generation_id == 1


def test_sync_waits_for_the_leader_then_everybody_gets_their_assignment(env):
    a, box_a = env.join_new()
    b, box_b = env.join_new()
    env.settle()
    follower = env.sync(b, 1)
    assert follower == []                                                     # waits for the leader
    leader = env.sync(a, 1, {a: b"A", b: b"B"})
    assert leader[0].assignment == b"A" and follower[0].assignment == b"B"
    assert env.group.state == S.STABLE
    # the group record went to the group's partition of __consumer_offsets
    [rec] = env.log.records(partition_for(G, 4))
    value = read_group_value(bytes(rec.value))
    assert value.generation == 1 and value.leader == a and [m.assignment for m in value.members] == [b"A", b"B"]


def test_protocol_selection_votes_among_common_protocols(env):
    a, box_a = env.join_new(protocols=[("roundrobin", b""), ("range", b"")])
    b, _ = env.join_new(protocols=[("range", b""), ("sticky", b"")])
    c, _ = env.join_new(protocols=[("range", b"")])
    env.settle()
    assert box_a[0].protocol_name == "range"      # roundrobin is not supported by everybody
    [bad] = env.join(protocols=[("sticky", b"")])
    assert bad.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_heartbeat_errors(env):
    (a, b), gen = env.stable_group()
    hb = env.gc.handle_heartbeat
    assert hb(G, a, None, gen) == E.NONE
    assert hb(G, a, None, gen - 1) == E.ILLEGAL_GENERATION
    assert hb(G, "nobody", None, gen) == E.UNKNOWN_MEMBER_ID
    assert hb("other-group", a, None, gen) == E.UNKNOWN_MEMBER_ID
    assert hb("", a, None, gen) == E.INVALID_GROUP_ID


def test_session_expiry_triggers_a_rebalance_and_the_survivor_gets_everything(env):
    (a, b), gen = env.stable_group()
    env.time.advance(SESSION // 2)
    assert env.gc.handle_heartbeat(G, a, None, gen) == E.NONE                # a keeps heartbeating, b is silent
    env.time.advance(SESSION // 2 - 1)
    assert env.group.state == S.STABLE
    env.time.advance(1)                                                       # b's session is over
    assert env.group.state == S.PREPARING_REBALANCE and not env.group.has(b)
    assert env.gc.handle_heartbeat(G, a, None, gen) == E.REBALANCE_IN_PROGRESS
    box = env.join(member_id=a)                                               # a rejoins: all members are back
    assert box[0].generation_id == gen + 1 and box[0].leader_id == a and [m[0] for m in box[0].members] == [a]
    assert env.sync(a, gen + 1, {a: b"all"})[0].assignment == b"all"
    assert any("session expired" in e for _, _, e in env.gc.events)


def test_rebalance_timeout_drops_members_that_do_not_rejoin(env):
    (a, b), gen = env.stable_group()
    box = env.join(member_id=a, protocols=[("range", b"changed")])            # a changes its subscription
    assert env.group.state == S.PREPARING_REBALANCE and box == []
    env.gc.handle_heartbeat(G, b, None, gen)                                  # b only heartbeats, never rejoins
    env.time.advance(REBALANCE)
    assert box[0].error == E.NONE and box[0].generation_id == gen + 1
    assert list(env.group.members) == [a]


def test_leave_group_batched(env):
    (a, b), gen = env.stable_group()
    top, errors = env.gc.handle_leave_group(G, [(b, None), ("ghost", None)])
    assert (top, errors) == (E.NONE, [E.NONE, E.UNKNOWN_MEMBER_ID])
    assert env.group.state == S.PREPARING_REBALANCE
    top, errors = env.gc.handle_leave_group(G, [(a, None)])
    assert errors == [E.NONE]
    assert env.group.state == S.EMPTY and env.group.generation_id == gen + 1   # no one left: Empty generation


def test_sync_and_commit_errors_during_rebalance(env):
    (a, b), gen = env.stable_group()
    env.join(member_id=a)                                                     # leader rejoin: rebalance
    assert env.sync(b, gen)[0].error == E.REBALANCE_IN_PROGRESS
    assert env.sync(b, gen + 5)[0].error == E.ILLEGAL_GENERATION
    assert env.sync("nobody", gen)[0].error == E.UNKNOWN_MEMBER_ID
    om = {("t", 0): OffsetAndMetadata(10)}
    # commits are still accepted while PreparingRebalance (the heartbeat tells the member to rejoin)
    assert env.gc.handle_commit_offsets(G, b, None, gen, om) == {("t", 0): E.NONE}
    env.join(member_id=b)                                                     # everybody rejoined: completing
    assert env.group.state == S.COMPLETING_REBALANCE
    assert env.gc.handle_commit_offsets(G, b, None, gen + 1, om) == {("t", 0): E.REBALANCE_IN_PROGRESS}
    assert env.gc.handle_commit_offsets(G, b, None, gen, om) == {("t", 0): E.ILLEGAL_GENERATION}


def test_members_that_never_sync_are_removed(env):
    a, box_a = env.join_new()
    b, _ = env.join_new()
    env.settle()
    env.sync(a, 1, {a: b"A", b: b"B"})           # b never syncs, but the leader's sync completes the group
    assert env.group.state == S.STABLE
    env2 = Env()
    a, _ = env2.join_new()
    b, _ = env2.join_new()
    env2.settle()
    env2.sync(b, 1)                              # the leader never syncs
    env2.gc.handle_heartbeat(G, b, None, 1)
    env2.time.advance(REBALANCE)
    assert not env2.group.has(a) and env2.group.state == S.PREPARING_REBALANCE


def test_static_member_restart_keeps_assignment_and_fences_the_old_id(env):
    box = env.join(instance="i-1", version=5)
    env.settle()
    old = box[0].member_id
    assert old.startswith("i-1-")
    env.sync(old, 1, {old: b"mine"})
    box2 = env.join(instance="i-1", version=5)                                # restarted process, no member id
    new = box2[0].member_id
    assert box2[0].error == E.NONE and new != old and box2[0].generation_id == 1
    assert env.group.state == S.STABLE                                        # no rebalance
    assert env.sync(new, 1, instance="i-1")[0].assignment == b"mine"
    assert env.gc.handle_heartbeat(G, old, "i-1", 1) == E.FENCED_INSTANCE_ID


def test_session_timeout_bounds(env):
    assert env.join(session=1000)[0].error == E.INVALID_SESSION_TIMEOUT


def test_offsets_commit_fetch_and_simple_groups(env):
    om = {("t", 0): OffsetAndMetadata(5, 3, "m"), ("t", 1): OffsetAndMetadata(7)}
    # generation -1 without a member: allowed, creates an Empty group without a protocol
    assert env.gc.handle_commit_offsets("simple", "", None, -1, om) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    err, got = env.gc.handle_fetch_offsets("simple", [("t", 0), ("t", 9)])
    assert err == E.NONE and got[("t", 0)].offset == 5 and got[("t", 0)].leader_epoch == 3 and got[("t", 9)] is None
    assert {tp: o.offset for tp, o in env.gc.handle_fetch_offsets("simple")[1].items()} == {("t", 0): 5, ("t", 1): 7}
    assert env.gc.handle_commit_offsets("nope", "m", None, 3, om)[("t", 0)] == E.ILLEGAL_GENERATION
    big = {("t", 0): OffsetAndMetadata(1, -1, "x" * 5000)}
    assert env.gc.handle_commit_offsets("simple", "", None, -1, big) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}


def test_group_state_is_rebuilt_from_the_log(env):
    (a, b), gen = env.stable_group()
    env.gc.handle_commit_offsets(G, a, None, gen, {("t", 0): OffsetAndMetadata(11)})
    env.gc.handle_commit_offsets(G, b, None, gen, {("t", 1): OffsetAndMetadata(22)})
    again = Env(log=env.log)                                                  # a new broker, same log
    g = again.group
    assert g.state == S.STABLE and g.generation_id == gen and list(g.members) == [a, b] and g.leader_id == a
    assert {tp: r.value.offset for tp, r in g.offsets.items()} == {("t", 0): 11, ("t", 1): 22}
    assert again.gc.handle_heartbeat(G, b, None, gen) == E.NONE               # members carry on
    assert again.sync(b, gen)[0].assignment == consumer_assignment({"t": [1]})


def test_loading_and_not_coordinator():
    env = Env()
    env.gc.on_resignation(partition_for(G, 4))
    assert env.join()[0].error == E.NOT_COORDINATOR
    env.gc.manager.loading_partitions.add(partition_for(G, 4))
    assert env.join()[0].error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert env.gc.handle_heartbeat(G, "m", None, 1) == E.NONE                 # answered blindly while loading
    env.gc.shutdown()
    assert env.gc.handle_fetch_offsets(G)[0] == E.COORDINATOR_NOT_AVAILABLE


def test_resignation_answers_parked_joins_with_not_coordinator(env):
    box = env.join(version=3)
    env.gc.on_resignation(partition_for(G, 4))
    assert box[0].error == E.NOT_COORDINATOR


def test_offset_retention_for_empty_groups():
    env = Env(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    (a, b), gen = env.stable_group()
    env.gc.handle_commit_offsets(G, a, None, gen, {("t", 0): OffsetAndMetadata(11)})
    env.time.advance(120_000)                                                 # stable + subscribed: kept
    env.gc.handle_heartbeat(G, a, None, gen)
    env.gc.handle_heartbeat(G, b, None, gen)
    assert env.group is not None and env.group.offset("t", 0).offset == 11
    env.gc.handle_leave_group(G, [(a, None), (b, None)])
    assert env.group.state == S.EMPTY
    env.time.advance(60_000)
    assert env.gc.manager.get_group(G) is None                                # expired, then Dead and removed
    keys = [(read_message_key(bytes(r.key)), r.value) for r in env.log.records(partition_for(G, 4))]
    assert keys[-1][1] is None and keys[-2][1] is None                        # offset and group tombstones


def test_list_describe_delete(env):
    (a, b), gen = env.stable_group()
    assert env.gc.handle_list_groups() == (E.NONE, [(G, "consumer", "Stable")])
    assert env.gc.handle_list_groups({"empty"}) == (E.NONE, [])
    err, summary = env.gc.handle_describe_group(G)
    assert summary.state == "Stable" and summary.protocol == "range"
    assert [m.member_id for m in summary.members] == [a, b]
    assert summary.members[1].assignment == consumer_assignment({"t": [1]})
    assert env.gc.handle_describe_group("unknown")[1].state == "Dead"
    assert env.gc.handle_delete_groups([G, "unknown"]) == {G: E.NON_EMPTY_GROUP, "unknown": E.GROUP_ID_NOT_FOUND}
    env.gc.handle_commit_offsets(G, a, None, gen, {("t", 0): OffsetAndMetadata(1), ("u", 0): OffsetAndMetadata(2)})
    assert env.gc.handle_delete_offsets(G, [("t", 0), ("u", 0)]) == (
        E.NONE, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE})
    env.gc.handle_leave_group(G, [(a, None), (b, None)])
    assert env.gc.handle_delete_groups([G]) == {G: E.NONE}
    assert env.gc.manager.get_group(G) is None
