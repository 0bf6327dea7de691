"""Lab 10, the group protocol (``labs/10_consumer_groups.ipynb`` sections 1-9): consumer groups and committed offsets.

Theory of operation
-------------------
A consumer group is a conversation between its members and one broker, the group's **coordinator**. The lab
watches that conversation twice: step by step, by driving kafkalab's sans-IO
:class:`~kafkalab.coordinator.group.GroupCoordinator` with a clock that moves only when told to, and for real,
with confluent-kafka consumers against an in-process broker. This module holds what both need:

* :func:`hash_steps` -- Java's ``String.hashCode`` of a group id, one character per row, then ``abs`` and
  ``% offsets.topic.num.partitions``: the partition of ``__consumer_offsets`` whose leader coordinates the group;
* :func:`decode_subscription`, :func:`subscription_fields`, :func:`decode_assignment` -- the consumer protocol's
  bytes (``ConsumerProtocolSubscription`` v0-v3, ``ConsumerProtocolAssignment``), which the broker relays
  without reading, shown field by field with kafkalab's codec (:mod:`kafkalab.protocol.consumer_protocol`);
* :func:`range_assign` -- the range assignor, as the group leader's *client* runs it: kafkalab's client
  :class:`~kafkalab.clients.consumer.assignors.RangeAssignor`, in plain dicts;
* :class:`LabGroup` -- a group coordinator on a :class:`~kafkalab.common.time.MockTime`, with member ids that
  repeat from run to run, and a log of every request the lab sends on behalf of its members;
* the pictures of a :class:`LabGroup` (its state machine and its rebalance timeline) are in :mod:`.pictures`;
* :func:`offsets_records` -- ``__consumer_offsets`` decoded record by record; :func:`mask_ids` hides the random
  part of real member ids;
* the checks ``check_*``, which compute the right answer from the data the learner was given.

The client side it shows is ``kafkalab/protocol/consumer_protocol.py`` (Kafka's
``clients/.../consumer/internals/ConsumerProtocol.java``) and ``kafkalab/clients/consumer/assignors/range.py``
(``clients/.../consumer/RangeAssignor.java``); the broker side is ``kafkalab/coordinator/group/``.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
import uuid
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.clients.consumer.assignors import RangeAssignor
from kafkalab.common.scheduler import MockScheduler
from kafkalab.common.time import MockTime
from kafkalab.coordinator.group import GroupConfig, GroupCoordinator, GroupState
from kafkalab.coordinator.group.group_metadata import GroupMetadata, OffsetAndMetadata
from kafkalab.coordinator.group.group_metadata_manager import MemoryOffsetsLog, java_string_hash, partition_for
from kafkalab.coordinator.group.records import (GroupMetadataKey, OffsetKey, read_group_value, read_message_key,
                                                read_offset_value)
from kafkalab.labs import CheckResult, Part, check, check_equal, is_unanswered
from kafkalab.protocol import ErrorCode
from kafkalab.protocol.consumer_protocol import (Assignment, Subscription, annotate_subscription, encode_assignment,
                                                 encode_subscription, group_by_topic)
from kafkalab.protocol.consumer_protocol import decode_assignment as _decode_assignment

__all__ = ["TOPIC", "GROUP", "T0", "LIBRDKAFKA_SOFTWARE", "hash_steps", "coordinator_partition",
           "decode_subscription", "subscription_fields", "decode_assignment", "range_assign", "Call", "LabGroup",
           "offsets_records", "mask_ids", "session_expiries",
           "delivery_outcome", "check_coordinator_partition", "check_range_assignment", "check_session_expiry",
           "check_delivery"]

TOPIC = "orders"
GROUP = "billing"
#: MockTime's start (2023-11-14 22:13:20 UTC): every time the step-by-step part shows is relative to it.
T0 = 1_700_000_000_000
LIBRDKAFKA_SOFTWARE = {"client.software.name": "kafkalab-lab", "client.software.version": "1.0"}

E = ErrorCode
S = GroupState
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def mask_ids(text: str) -> str:
    """Replace every UUID (the random part of a member id) with ``<uuid>``."""
    return _UUID.sub("<uuid>", str(text))


def _err(code: int) -> str:
    return E(code).name


# -- which broker coordinates a group ---------------------------------------------------------------------------------
def hash_steps(group_id: str) -> list[dict]:
    """Java's ``String.hashCode`` one UTF-16 code unit at a time: ``h = 31 * h + c`` as a signed 32-bit int."""
    rows, h = [], 0
    units = group_id.encode("utf-16-be")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        wide = 31 * h + c
        h = ((wide + (1 << 31)) % (1 << 32)) - (1 << 31)
        rows.append({"char": chr(c), "code unit": c, "31·h + c": wide, "h (int32)": h})
    return rows


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """``Utils.abs(group_id.hashCode()) % offsets.topic.num.partitions``."""
    return partition_for(group_id, num_partitions)


# -- the consumer protocol's bytes --------------------------------------------------------------------------------------
def subscription_fields(data: bytes) -> list[dict]:
    """``ConsumerProtocolSubscription`` field by field: ``{"bytes": hex, "field": name, "value": ...}``.
    v0: version, topics, user_data; v1 adds owned_partitions; v2 generation_id; v3 rack_id. The rows come from
    the codec's annotated view; an array shows its count, an owned topic its partitions on one row."""
    data = bytes(data)
    annotated = annotate_subscription(data)[3]
    rows, covered = [], 0
    for r in annotated:
        if r.start < covered:                       # inside an owned topic already shown whole
            continue
        name, value, end = r.path, r.value, r.end
        if r.wire_type == "STRUCT":                 # owned_partitions[i]: topic and partitions on one row
            inner = [c for c in annotated if r.start <= c.start < r.end and c.depth > r.depth]
            topic = next(c.value for c in inner if c.path.endswith(".topic"))
            value = f"{topic} {[c.value for c in inner if c.wire_type == 'INT32']}"
        elif r.wire_type.endswith("ARRAY"):         # the count only; the elements get rows of their own
            name, end = f"{r.path} (count)", r.start + 4
        elif r.wire_type.endswith("BYTES"):
            value = "null" if value is None else f"{len(value)} bytes"
        elif r.wire_type.endswith("STRING") and r.path == "rack_id":
            value = "null" if value is None else repr(value)
        elif r.path == "trailing_bytes":
            name, value = "fields of a newer version (ignored)", f"{value} bytes"
        rows.append({"bytes": data[r.start:end].hex(" "), "field": name, "value": value})
        covered = end
    return rows


def decode_subscription(data: bytes) -> dict:
    """The fields of a subscription as a dict: version, topics, user_data, owned_partitions, generation_id,
    rack_id (the last three only when the version has them)."""
    out: dict = {"topics": []}
    for row in subscription_fields(data):
        field, value = row["field"], row["value"]
        if field.startswith("topics["):
            out["topics"].append(value)
        elif field.startswith("owned_partitions["):
            out.setdefault("owned_partitions", []).append(value)
        elif "(count)" not in field:
            out[field] = value
        elif field.startswith("owned_partitions"):
            out.setdefault("owned_partitions", [])
    return out


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """``{topic: [partitions]}`` from a ``ConsumerProtocolAssignment`` (empty bytes: nothing assigned)."""
    return dict(group_by_topic(_decode_assignment(bytes(data)).partitions)) if data else {}


# -- the assignor (runs in the leader's client) ------------------------------------------------------------------------
def range_assign(subscriptions: Mapping[str, Iterable[str]], partitions: Mapping[str, int]) -> dict:
    """Kafka's range assignor (kafkalab's client :class:`RangeAssignor`): per topic, the members subscribed to it
    sorted by member id; each gets ``n // members`` consecutive partitions and the first ``n % members`` of them
    one more. Returns ``{member: {topic: [partitions]}}`` (every member present, possibly with nothing)."""
    plan = RangeAssignor().assign({m: Subscription(list(ts)) for m, ts in subscriptions.items()}, partitions)
    return {m: dict(group_by_topic(a.partitions)) for m, a in plan.items()}


# -- the coordinator, step by step ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Call:
    """One request the lab sent for a member, and what came back (``answered_ms`` None while it is parked)."""

    client: str
    api: str
    sent_ms: int
    answered_ms: Optional[int] = None
    result: Any = None
    outcome: str = ""

    @property
    def parked(self) -> bool:
        return self.answered_ms is None


class LabGroup:
    """One group on a sans-IO :class:`GroupCoordinator` driven by :class:`MockTime` + :class:`MockScheduler`.

    Members are named by their client id (``alice``, ``bob``...); their member ids are
    ``<client id>-<uuid>`` as on a real broker, but the uuids count up (``...-000000000001``) so that every run
    prints the same. Every request sent through :meth:`join`, :meth:`sync`, :meth:`heartbeat`, :meth:`leave`
    and :meth:`commit` is kept in :attr:`calls` (for the timeline)."""

    def __init__(self, group_id: str = GROUP, *, topics: Sequence[str] = (TOPIC,), session_timeout_ms: int = 10_000,
                 rebalance_timeout_ms: int = 30_000, initial_rebalance_delay_ms: int = 3_000,
                 num_partitions: int = 50):
        self.group_id = group_id
        self.topics = list(topics)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.time = MockTime(start_ms=T0)
        self.scheduler = MockScheduler(self.time)
        self.log = MemoryOffsetsLog()
        self.config = GroupConfig(group_initial_rebalance_delay_ms=initial_rebalance_delay_ms,
                                  offsets_topic_num_partitions=num_partitions)
        self.coordinator = GroupCoordinator(self.config, self.time, self.scheduler, self.log)
        self.coordinator.startup()
        self.partition = self.coordinator.partition_for(group_id)
        self.coordinator.on_election(self.partition)
        counter = itertools.count(1)
        group = GroupMetadata(group_id, S.EMPTY, self.time.milliseconds())
        group.generate_member_id = lambda client_id, instance_id: f"{instance_id or client_id}-{uuid.UUID(int=next(counter))}"
        self.coordinator.manager.add_group(group)
        self.member_ids: dict[str, str] = {}
        self.generations: dict[str, int] = {}
        self.calls: list[Call] = []

    # -- views
    @property
    def group(self) -> GroupMetadata:
        return self.coordinator.manager.get_group(self.group_id)

    @property
    def state(self) -> GroupState:
        return self.group.state

    @property
    def now(self) -> float:
        """Seconds since the lab's clock started."""
        return (self.time.milliseconds() - T0) / 1000

    def client_of(self, member_id: str) -> str:
        return next((c for c, m in self.member_ids.items() if m == member_id), member_id)

    def members(self) -> list[dict]:
        """One row per member: client, member id, leader, session deadline, assignment."""
        g = self.group
        return [{"client": m.client_id, "member_id": m.member_id, "leader": g.leader_id == m.member_id,
                 "session expires at (s)": (m.heartbeat_deadline_ms - T0) / 1000,
                 "assignment": decode_assignment(m.assignment)} for m in g.members.values()]

    # -- requests
    def _call(self, client: str, api: str) -> Call:
        call = Call(client, api, self.time.milliseconds())
        self.calls.append(call)
        return call

    def _answer(self, call: Call, result: Any, outcome: str) -> None:
        call.answered_ms = self.time.milliseconds()
        call.result = result
        call.outcome = outcome

    def join(self, client: str, *, topics: Optional[Sequence[str]] = None, version: int = 5) -> Call:
        """A JoinGroup from ``client`` (with its member id once it has one), offering range and roundrobin."""
        subscription = encode_subscription(Subscription(list(topics or self.topics)), version=0)
        call = self._call(client, "JoinGroup")

        def done(r):
            if r.member_id:
                self.member_ids[client] = r.member_id
            if r.error == E.NONE:
                self.generations[client] = r.generation_id
            self._answer(call, r, _err(r.error) if r.error else f"generation {r.generation_id}")
        self.coordinator.handle_join_group(
            self.group_id, self.member_ids.get(client, ""), None, version >= 4, client, "/10.0.0.1",
            self.rebalance_timeout_ms, self.session_timeout_ms, "consumer",
            [("range", subscription), ("roundrobin", subscription)], done)
        return call

    def sync(self, client: str, assignment: Optional[Mapping[str, Mapping[str, list]]] = None) -> Call:
        """A SyncGroup; the leader passes ``{client or member id: {topic: [partitions]}}``."""
        call = self._call(client, "SyncGroup")
        encoded = {self.member_ids.get(c, c): encode_assignment(Assignment([(t, p) for t, ps in a.items() for p in ps]),
                                                                version=0)
                   for c, a in (assignment or {}).items()}

        def done(r):
            self._answer(call, r, _err(r.error) if r.error else f"{decode_assignment(r.assignment)}")
        self.coordinator.handle_sync_group(self.group_id, self.generations.get(client, -1), self.member_ids[client],
                                           "consumer", None, None, encoded, done)
        return call

    def heartbeat(self, client: str) -> str:
        call = self._call(client, "Heartbeat")
        code = self.coordinator.handle_heartbeat(self.group_id, self.member_ids[client], None,
                                                 self.generations.get(client, -1))
        self._answer(call, code, _err(code))
        return _err(code)

    def leave(self, client: str) -> str:
        call = self._call(client, "LeaveGroup")
        top, errors = self.coordinator.handle_leave_group(self.group_id, [(self.member_ids[client], None)])
        outcome = _err(top) if top else _err(errors[0])
        self._answer(call, (top, errors), outcome)
        return outcome

    def commit(self, client: Optional[str], offsets: Mapping[tuple, int]) -> dict:
        """OffsetCommit of ``{(topic, partition): offset}`` (``client`` None: no member, generation -1, as
        ``assign()`` + ``commit()`` does)."""
        call = self._call(client or "(no member)", "OffsetCommit")
        om = {tp: OffsetAndMetadata(o, -1, "", self.time.milliseconds()) for tp, o in offsets.items()}
        if client is None:
            result = self.coordinator.handle_commit_offsets(self.group_id, "", None, -1, om)
        else:
            result = self.coordinator.handle_commit_offsets(self.group_id, self.member_ids[client], None,
                                                            self.generations.get(client, -1), om)
        named = {tp: _err(c) for tp, c in result.items()}
        self._answer(call, named, ", ".join(sorted(set(named.values()))))
        return named

    def advance(self, ms: int, *, heartbeats: Sequence[str] = (), interval_ms: int = 3_000, step_ms: int = 100) -> None:
        """Let ``ms`` pass in steps of ``step_ms`` (timers fire on time); the ``heartbeats`` clients send a
        Heartbeat every ``interval_ms`` (``heartbeat.interval.ms``), counted from now."""
        waited = 0
        while waited < ms:
            step = min(step_ms, ms - waited)
            self.time.advance(step)
            waited += step
            for client in heartbeats:
                if waited % interval_ms == 0 and client in self.member_ids and \
                        self.group.has(self.member_ids[client]):
                    self.heartbeat(client)

    def events(self) -> list[tuple[float, str]]:
        """The coordinator's events for this group: (seconds, text with member ids shortened to client ids)."""
        out = []
        for ms, gid, text in self.coordinator.events:
            if gid != self.group_id:
                continue
            for client, member_id in self.member_ids.items():
                text = text.replace(member_id, client)
            out.append(((ms - T0) / 1000, text))
        return out

    def states(self) -> list[tuple[int, str]]:
        """(ms since T0, state) each time the state changed, read from the coordinator's events."""
        out = [(0, S.EMPTY.value)]
        for ms, gid, text in self.coordinator.events:
            if gid != self.group_id:
                continue
            word = re.match(r"(\w+)", text).group(1)
            if word in {s.value for s in S} and word != out[-1][1]:
                out.append((ms - T0, word))
        return out

    def taken_transitions(self) -> set[tuple[str, str]]:
        s = [state for _, state in self.states()]
        return set(zip(s, s[1:]))

    def state_machine(self):
        from kafkalab.labs.lab10.pictures import state_machine
        return state_machine(self.state, taken=self.taken_transitions())

    def timeline(self, title: str = ""):
        """This group's :class:`~kafkalab.labs.lab10.pictures.RebalanceTimeline`."""
        from kafkalab.labs.lab10.pictures import RebalanceTimeline
        return RebalanceTimeline(self, title=title)

    def offsets_records(self) -> list[dict]:
        return offsets_records(self.log.read(self.partition), rename=self.client_of, times=True)


# -- __consumer_offsets, record by record ------------------------------------------------------------------------------
def offsets_records(batches: Iterable, *, group: Optional[str] = None, rename=None, times: bool = False) -> list[dict]:
    """Every record of a ``__consumer_offsets`` partition decoded: its offset, the key (kind and fields) and
    the value. ``group`` keeps only that group's records; ``rename`` maps member ids for display (default:
    :func:`mask_ids`); ``times`` shows commit timestamps as seconds since :data:`T0` (only for MockTime runs)."""
    rename = rename or mask_ids
    rows = []
    for batch in batches:
        if batch.is_control_batch:
            continue
        for r in batch.records:
            key = read_message_key(bytes(r.key))
            value = None if r.value is None else bytes(r.value)
            if isinstance(key, OffsetKey):
                if group is not None and key.group != group:
                    continue
                kind, k = "offset commit", f"{key.group} / {key.topic} / {key.partition}"
                if value is None:
                    v = "∅ tombstone: forget this offset"
                else:
                    om = read_offset_value(value)
                    v = f"offset {om.offset}, leader_epoch {om.leader_epoch}, metadata {om.metadata!r}"
                    if times:
                        v += f", commit_timestamp T0 + {(om.commit_timestamp - T0) / 1000:g} s"
                    v = f"(v{int.from_bytes(value[:2], 'big')}) " + v
            elif isinstance(key, GroupMetadataKey):
                if group is not None and key.group != group:
                    continue
                kind, k = "group metadata", key.group
                if value is None:
                    v = "∅ tombstone: forget this group"
                else:
                    g = read_group_value(value)
                    members = "; ".join(f"{rename(m.member_id)} → {decode_assignment(m.assignment)}" for m in g.members)
                    v = (f"(v{int.from_bytes(value[:2], 'big')}) generation {g.generation}, protocol "
                         f"{g.protocol_type}/{g.protocol}, leader {rename(g.leader) if g.leader else None}, "
                         f"{len(g.members)} member(s)" + (f": {members}" if members else ""))
            else:
                kind, k, v = f"unknown key version {key.version}", "", ""
            rows.append({"offset": r.offset, "key (version)": f"{kind} (v{key.version})", "key": k, "value": v})
    return rows


# -- answers the checks compute ----------------------------------------------------------------------------------------
def session_expiries(heartbeats: Mapping[str, Sequence[float]], session_timeout_ms: int,
                     until_s: float) -> dict:
    """When the coordinator removes each member (seconds after the group became Stable, or None if it is still
    a member at ``until_s``), found by replaying the heartbeats on a real :class:`LabGroup`. Members behave like
    real clients: a heartbeat answered REBALANCE_IN_PROGRESS makes them rejoin, and the leader syncs."""
    lab = LabGroup(session_timeout_ms=session_timeout_ms)
    clients = list(heartbeats)
    for c in clients:
        lab.join(c)                                   # MEMBER_ID_REQUIRED
    for c in clients:
        lab.join(c)                                   # the real join, parked until the initial delay is over
    while lab.state != S.COMPLETING_REBALANCE:
        lab.time.advance(100)
    removed: dict = {c: None for c in clients}

    def alive(c):
        return c in lab.member_ids and lab.group.has(lab.member_ids[c])

    def react():
        if lab.state == S.COMPLETING_REBALANCE:
            leader = lab.client_of(lab.group.leader_id)
            lab.sync(leader, {c: {} for c in clients if alive(c)})
            for c in clients:
                if alive(c) and c != leader:
                    lab.sync(c)
        for c in clients:
            if removed[c] is None and not alive(c):
                removed[c] = (lab.time.milliseconds() - base) / 1000
    base = lab.time.milliseconds()
    react()
    plan = sorted((int(round(t * 1000)), c) for c, times in heartbeats.items() for t in times)
    now = 0
    for at, c in plan + [(int(until_s * 1000), None)]:
        while now < at:
            lab.time.advance(100)
            now += 100
            react()
        if c is not None and alive(c):
            if lab.heartbeat(c) == "REBALANCE_IN_PROGRESS" and not lab.group.get(lab.member_ids[c]).is_awaiting_join:
                lab.join(c)
            react()
    return removed


def delivery_outcome(n: int, commit_every: int, crash_after: int, commit_first: bool) -> dict:
    """Records ``0..n-1`` of one partition, processed in order, committing every ``commit_every`` records:
    after processing them (``commit_first`` False) or before processing them (True: the commit covers the
    whole next chunk). The process dies right after processing ``crash_after``; a new one resumes from the
    last committed offset. Returns ``{"reprocessed": [...], "lost": [...]}``."""
    committed, processed = 0, []
    for start in range(0, n, commit_every):
        chunk = list(range(start, min(start + commit_every, n)))
        if commit_first:
            committed = chunk[-1] + 1
        crashed = False
        for r in chunk:
            processed.append(r)
            if r == crash_after:
                crashed = True
                break
        if crashed:
            break
        if not commit_first:
            committed = chunk[-1] + 1
    resumed = list(range(committed, n))
    return {"reprocessed": sorted(set(processed) & set(resumed)),
            "lost": sorted(set(range(n)) - set(processed) - set(resumed))}


# -- checks -------------------------------------------------------------------------------------------------------------
def check_coordinator_partition(answer: Any, group_id: str, num_partitions: int = 50) -> CheckResult:
    """Exercise: the partition of ``__consumer_offsets`` for ``group_id``."""
    h = java_string_hash(group_id)
    expected = coordinator_partition(group_id, num_partitions)

    def diagnose(a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give a partition number (an int)"
        if a == h or a == abs(h):
            return "that is the hash itself: take it modulo offsets.topic.num.partitions"
        if a == (h & 0xFFFFFFFF) % num_partitions:
            return "you treated the hash as unsigned: Java's int is signed, so take abs() of it first"
        if a == h % num_partitions and h < 0:
            return "Python's % of a negative number is positive but not what Kafka gets: take abs() first"
        if a == hash(group_id) % num_partitions:
            return "Python's hash() of a str is not Java's String.hashCode (and changes per process)"
        if not 0 <= a < num_partitions:
            return f"a partition of a topic with {num_partitions} partitions is between 0 and {num_partitions - 1}"
        return None
    return check_equal(f"Exercise 1 · the coordinator partition of {group_id!r}", answer, expected,
                       diagnose=diagnose, hint="h = 31*h + code unit for each character, as a signed 32-bit int; "
                                               "then abs(h) % partitions")


def check_range_assignment(answer: Any, subscriptions: Mapping[str, Iterable[str]],
                           partitions: Mapping[str, int]) -> CheckResult:
    """Exercise: the range assignor's result ``{member: {topic: [partitions]}}`` (members with nothing may be
    left out or map to ``{}``)."""
    title = "Exercise 2 · the range assignment"
    expected = range_assign(subscriptions, partitions)
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict {member id: {topic: [partitions]}}")
    parts, right = [], 0
    for member, want in expected.items():
        got = answer.get(member, {})
        if is_unanswered(got):
            parts.append(Part(member, "todo", "not answered yet"))
            continue
        norm = {t: sorted(p) for t, p in dict(got).items() if p} if isinstance(got, Mapping) else None
        if norm == want:
            right += 1
            parts.append(Part(member, "pass", repr(want) if want else "nothing (idle)"))
        else:
            parts.append(Part(member, "fail", f"{got!r} is not right"))
    extra = [m for m in answer if m not in expected]
    if extra:
        parts.append(Part(", ".join(map(str, extra)), "fail", "not a member of the group"))
    ok = right == len(expected) and not extra
    if all(p.status == "todo" for p in parts):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if ok:
        return check(title, True, f"all {len(expected)} members right", parts=parts)
    counts = sorted((len(p) for a in answer.values() if isinstance(a, Mapping) for p in a.values()), reverse=True)
    want_counts = sorted((len(p) for a in expected.values() for p in a.values()), reverse=True)
    if counts == want_counts:
        hint = ("the sizes are right, the order is not: members are sorted by member id, and the first ones "
                "get the extra partitions")
    else:
        hint = "per topic: partitions // members each, and the first partitions % members members get one more"
    return check(title, False, f"{right} of {len(expected)} members right", hint=hint, parts=parts)


def check_session_expiry(answer: Any, heartbeats: Mapping[str, Sequence[float]], session_timeout_ms: int,
                         until_s: float) -> CheckResult:
    """Exercise: ``{member: second it is removed, or None}``; the expected values come from a coordinator."""
    title = "Exercise 3 · who is removed, and when"
    expected = session_expiries(heartbeats, session_timeout_ms, until_s)
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict {member: time in seconds, or None}")
    parts, right = [], 0
    for member, want in expected.items():
        got = answer.get(member, ...)
        if is_unanswered(got):
            parts.append(Part(member, "todo", "not answered yet"))
        elif (got is None and want is None) or (got is not None and want is not None and
                                                 isinstance(got, (int, float)) and abs(got - want) < 0.15):
            right += 1
            parts.append(Part(member, "pass", "stays" if want is None else f"removed at {want:g} s"))
        else:
            why = f"{got!r} is not right"
            times = list(heartbeats[member])
            if want is not None and got is not None and isinstance(got, (int, float)) and times and \
                    abs(got - (times[-1] + session_timeout_ms / 1000)) < 0.15:
                why = "the session is counted from the last heartbeat *before* it ran out, not the last one listed"
            elif want is None and got is not None:
                why = "no gap between heartbeats reaches session.timeout.ms"
            elif want is not None and got is None:
                why = "look for a gap of session.timeout.ms without a heartbeat"
            parts.append(Part(member, "fail", why))
    ok = right == len(expected)
    return check(title, ok, f"{right} of {len(expected)} right", parts=parts,
                 hint="" if ok else "every heartbeat restarts the session clock; the member is removed "
                                    "session.timeout.ms after the last heartbeat that came in time")


def check_delivery(answer: Any, n: int, commit_every: int, crash_after: int) -> CheckResult:
    """Exercise: ``{"at-least-once": {"reprocessed": [...], "lost": [...]}, "at-most-once": {...}}``."""
    title = "Exercise 4 · what a crash costs"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, 'give a dict with the keys "at-least-once" and "at-most-once"')
    parts, right, total = [], 0, 0
    for name, commit_first in (("at-least-once", False), ("at-most-once", True)):
        want = delivery_outcome(n, commit_every, crash_after, commit_first)
        got = answer.get(name, {})
        for key in ("reprocessed", "lost"):
            total += 1
            value = got.get(key, ...) if isinstance(got, Mapping) else ...
            label = f"{name}: {key}"
            if is_unanswered(value):
                parts.append(Part(label, "todo", "not answered yet"))
            elif isinstance(value, (list, tuple, set)) and sorted(value) == want[key]:
                right += 1
                parts.append(Part(label, "pass", repr(want[key])))
            else:
                why = f"{value!r} is not right"
                if key == "lost" and name == "at-least-once" and value:
                    why = "committing after processing never loses a record"
                elif key == "reprocessed" and name == "at-most-once" and value:
                    why = "committing before processing never processes a record twice"
                parts.append(Part(label, "fail", why))
    ok = right == total
    if all(p.status == "todo" for p in parts):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    return check(title, ok, f"{right} of {total} right", parts=parts,
                 hint="" if ok else "find the last committed offset before the crash: the new consumer starts "
                                    "there")
