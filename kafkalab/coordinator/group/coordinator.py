"""The group coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offsets, and the timers behind them.

Theory of operation
-------------------
A **rebalance** is two rounds of requests, both held by the coordinator until it can answer everybody:

1. **JoinGroup.** A member that joins, or notices (in a Heartbeat answer: REBALANCE_IN_PROGRESS) that a
   rebalance started, sends JoinGroup with its protocols. The group is PreparingRebalance; the coordinator
   *parks* each JoinGroup until every known member has rejoined, or the rebalance timeout (the largest
   ``rebalance.timeout.ms`` of the members) has passed; members that did not rejoin by then are dropped. A
   group that was Empty waits ``group.initial.rebalance.delay.ms`` first (again and again, up to the rebalance
   timeout, while new members keep arriving), so that a fleet of consumers starting together forms one
   generation instead of a rebalance per consumer. Then the generation is bumped and all parked JoinGroups
   are answered at once: everybody learns the generation, the chosen protocol and the leader; the leader also
   gets every member's metadata (subscription).
2. **SyncGroup.** The leader's client computes the assignment and sends it in its SyncGroup; the others send
   an empty SyncGroup, parked until the leader's arrives. The coordinator stores the group (members +
   assignment) in ``__consumer_offsets``, answers each member with its own assignment, and the group is
   Stable. Members that do not sync within the rebalance timeout are removed and a new rebalance starts.

A JoinGroup v4+ without a member id is answered at once with MEMBER_ID_REQUIRED and a fresh id (KIP-394), so
that a client whose first JoinGroup times out does not leave a ghost member behind; v0-3 get their id in
the (parked) answer itself.

**Liveness.** Each member must heartbeat within ``session.timeout.ms``; a timer per member removes it when it
does not, which triggers a rebalance. A new member's first join has a fixed 5-minute limit instead.

**Time without sleeping.** Every timer is a task on an injected scheduler, every "now" an injected clock. With
:class:`~kafkalab.common.time.MockTime` and :class:`~kafkalab.common.scheduler.MockScheduler`, a test or a
notebook advances time by hand and watches sessions expire.

**Waiting answers.** ``handle_join_group`` and ``handle_sync_group`` take a callback and return nothing: the
callback runs now (an error, MEMBER_ID_REQUIRED, a stable group) or later, when the round completes. The
broker turns the callback into a future and answers the request when it resolves.

**Who does what.** The coordinator validates each request and decides what it means for the group; running the
two rounds (the parked answers, the delayed join and sync, completing a generation) is the job of
:class:`~.rebalance.RebalanceRounds` (``coordinator.rebalance``), and offsets and the admin views that of
:class:`~.offsets_and_admin.GroupOffsetsAndAdmin` (``coordinator.offsets``). Both are built with explicit
callables; the session timers stay here.

Transactions reach the group coordinator twice: TxnOffsetCommit (offsets pending inside a transaction,
``handle_txn_commit_offsets``) and the marker that ends the transaction (``handle_txn_completion``).

Mirrors: ``core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala``, ``DelayedJoin.scala``
(``InitialDelayedJoin``), ``DelayedHeartbeat.scala``, ``DelayedSync.scala``.
"""
from __future__ import annotations

import collections
import logging
from typing import Any, Callable, Mapping, NamedTuple, Optional

from kafkalab.coordinator.group.coordinator_config import GROUP_COORDINATOR_CONFIGS
from kafkalab.coordinator.group.group_metadata import GroupMetadata
from kafkalab.coordinator.group.group_metadata_manager import GroupMetadataManager
from kafkalab.coordinator.group.member_metadata import MemberMetadata
from kafkalab.coordinator.group.offsets_and_admin import GroupOffsetsAndAdmin
from kafkalab.coordinator.group.rebalance import JoinGroupResult, RebalanceRounds, SyncGroupResult, join_result
from kafkalab.coordinator.group.state import GroupState
from kafkalab.protocol import ErrorCode

__all__ = ["GroupCoordinator", "GroupConfig", "JoinGroupResult", "SyncGroupResult", "NEW_MEMBER_JOIN_TIMEOUT_MS"]

log = logging.getLogger("kafkalab.coordinator.group.GroupCoordinator")

E = ErrorCode
S = GroupState
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
EVENTS_KEPT = 10_000
JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH, DESCRIBE, DELETE = ("join", "sync", "heartbeat", "leave", "commit",
                                                                 "fetch", "describe", "delete")


_D = GROUP_COORDINATOR_CONFIGS.default


class GroupConfig(NamedTuple):
    """The coordinator's settings as attributes; defaults from :data:`GROUP_COORDINATOR_CONFIGS`."""

    group_min_session_timeout_ms: int = _D("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = _D("group.max.session.timeout.ms")
    group_initial_rebalance_delay_ms: int = _D("group.initial.rebalance.delay.ms")
    group_max_size: int = _D("group.max.size")
    offsets_retention_minutes: int = _D("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = _D("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = _D("offset.metadata.max.bytes")
    offsets_topic_num_partitions: int = _D("offsets.topic.num.partitions")

    @classmethod
    def from_broker(cls, config: Mapping[str, Any]) -> "GroupConfig":
        """From broker config keys (``group.min.session.timeout.ms`` ...); missing keys keep Kafka's default."""
        values = {}
        for field in cls._fields:
            name = field.replace("_", ".")
            try:
                v = config[name]
            except KeyError:
                continue
            if v is not None:
                values[field] = int(v)
        return cls(**values)


class GroupCoordinator:
    """``scheduler.schedule(name, fn, delay_ms)`` -> task with ``cancel()``; ``time.milliseconds()``."""

    def __init__(self, config: GroupConfig, time, scheduler, offsets_log, *, broker_id: int = 0):
        self.config = config
        self.time = time
        self.scheduler = scheduler
        self.broker_id = broker_id
        self.manager = GroupMetadataManager(config, time, offsets_log, config.offsets_topic_num_partitions)
        self.is_active = False
        self._heartbeats: dict[tuple[str, str], Any] = {}
        self._expiry_task = None
        #: (time ms, group id, event) -- what happened, for the lab's rebalance timeline; only the most recent
        #: EVENTS_KEPT, so a long-running broker does not grow without bound
        self.events: collections.deque[tuple[int, str, str]] = collections.deque(maxlen=EVENTS_KEPT)
        #: OffsetCommit/OffsetFetch and the admin views (:mod:`.offsets_and_admin`); the handle_* below forward
        self.offsets = GroupOffsetsAndAdmin(
            self.manager, time, is_active=lambda: self.is_active, validate_group_status=self._validate_group_status,
            validate_current_member=self._validate_current_member,
            restart_session=lambda group, member: self._schedule_heartbeat(group, member, member.session_timeout_ms),
            record_event=self._event)
        #: the JoinGroup and SyncGroup rounds and their delayed joins and syncs (:mod:`.rebalance`)
        self.rebalance = RebalanceRounds(
            config, time, scheduler, self.manager,
            restart_session=lambda group, member: self._schedule_heartbeat(group, member, member.session_timeout_ms),
            cancel_session=self._cancel_heartbeat, record_event=self._event)

    # ------------------------------------------------------------------------------------------ lifecycle
    def startup(self, enable_metadata_expiration: bool = True) -> None:
        self.is_active = True
        if enable_metadata_expiration:
            self._expiry_task = self.scheduler.schedule(
                "delete-expired-group-metadata", self.manager.expire_offsets,
                self.config.offsets_retention_check_interval_ms, self.config.offsets_retention_check_interval_ms)

    def shutdown(self) -> None:
        self.is_active = False
        self.rebalance.shutdown()
        for task in [*self._heartbeats.values(), self._expiry_task]:
            if task is not None:
                task.cancel()
        self._heartbeats.clear()

    def _event(self, group_id: str, what: str) -> None:
        self.events.append((self.time.milliseconds(), group_id, what))
        log.info("group %s: %s", group_id, what)

    def _now(self) -> int:
        return self.time.milliseconds()

    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    # ------------------------------------------------------------------ offsets and admin (forwarded)
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                              generation_id: int, offsets: dict,
                              callback: Optional[Callable[[dict], None]] = None) -> Optional[dict]:
        return self.offsets.handle_commit_offsets(group_id, member_id, group_instance_id, generation_id, offsets,
                                                  callback)

    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                  group_instance_id: Optional[str], generation_id: int, offsets: dict,
                                  callback: Optional[Callable[[dict], None]] = None) -> Optional[dict]:
        return self.offsets.handle_txn_commit_offsets(group_id, producer_id, producer_epoch, member_id,
                                                      group_instance_id, generation_id, offsets, callback)

    def handle_fetch_offsets(self, group_id: str, partitions: Optional[list] = None,
                             require_stable: bool = False) -> tuple[int, dict]:
        return self.offsets.handle_fetch_offsets(group_id, partitions, require_stable)

    def handle_txn_completion(self, producer_id: int, offsets_partitions, committed: bool) -> None:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` has been written to these partitions of
        ``__consumer_offsets`` (partition numbers, or ``(topic, partition)`` pairs): the transaction's pending
        offsets in their groups become the committed offsets, or are dropped. Called by the WriteTxnMarkers
        handler; Kafka hands this to a scheduler thread (``scheduleHandleTxnCompletion``), kafkalab's coordinator
        runs on the broker's event loop and does it at once."""
        partitions = {p if isinstance(p, int) else int(p[1]) for p in offsets_partitions}
        for group_id, applied in self.manager.handle_txn_completion(producer_id, partitions, committed).items():
            self._event(group_id, f"transaction of producer {producer_id} "
                                  f"{'committed' if committed else 'aborted'}: "
                                  f"{len(applied)} pending offset(s) now committed")

    def handle_list_groups(self, states: Optional[set] = None) -> tuple[int, list]:
        return self.offsets.handle_list_groups(states)

    def handle_describe_group(self, group_id: str) -> tuple:
        return self.offsets.handle_describe_group(group_id)

    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        return self.offsets.handle_delete_groups(group_ids)

    def handle_delete_offsets(self, group_id: str, partitions: list) -> tuple[int, dict]:
        return self.offsets.handle_delete_offsets(group_id, partitions)

    # ------------------------------------------------------------------------------------------ election
    def on_election(self, partition: int, coordinator_epoch: int = -1) -> None:
        """This broker now leads ``__consumer_offsets-<partition>``: load its groups (in a scheduler task;
        until it ran, requests for them get COORDINATOR_LOAD_IN_PROGRESS)."""
        m = self.manager
        if partition in m.owned_partitions or partition in m.loading_partitions:
            return
        m.loading_partitions.add(partition)
        self.scheduler.schedule(f"load-group-metadata-{partition}", lambda: self._load(partition), 0)

    def _load(self, partition: int) -> None:
        m = self.manager
        if partition not in m.loading_partitions:
            return
        try:
            groups = m.load_partition(partition)
        except Exception:
            log.exception("error loading offsets from %s-%d", "__consumer_offsets", partition)
            groups = []
        m.loading_partitions.discard(partition)
        m.owned_partitions.add(partition)
        for group in groups:
            self._event(group.group_id, f"loaded: {group.state}, generation {group.generation_id}, "
                                        f"{group.size} member(s), {len(group.offsets)} offset(s)")
            for member in group.members.values():
                self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def on_resignation(self, partition: int) -> None:
        """Another broker leads the partition now: its groups are Dead here; parked requests get NOT_COORDINATOR."""
        for group in self.manager.remove_groups_for_partition(partition):
            previous = group.state
            group.transition_to(S.DEAD, self._now())
            for member in list(group.members.values()):
                if previous == S.PREPARING_REBALANCE:
                    self.rebalance.invoke_join(group, member, JoinGroupResult(E.NOT_COORDINATOR, member.member_id))
                self.rebalance.invoke_sync(member, SyncGroupResult(E.NOT_COORDINATOR))
                self._cancel_heartbeat(group.group_id, member.member_id)
            self.rebalance.cancel_join(group.group_id)
            self.rebalance.cancel_sync(group.group_id)

    # ------------------------------------------------------------------------------------------ validation
    def _validate_group_status(self, group_id: Optional[str], api: str) -> Optional[int]:
        if group_id is None or (group_id == "" and api not in (COMMIT, FETCH, DESCRIBE, DELETE)):
            return E.INVALID_GROUP_ID
        if not self.is_active:
            return E.COORDINATOR_NOT_AVAILABLE
        if self.manager.is_group_loading(group_id):
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return E.NOT_COORDINATOR
        return None

    @staticmethod
    def _validate_current_member(group: GroupMetadata, member_id: str, instance_id: Optional[str]) -> Optional[int]:
        if instance_id is not None:
            current = group.current_static_member_id(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return E.FENCED_INSTANCE_ID
            return None
        return None if group.has(member_id) else E.UNKNOWN_MEMBER_ID

    # ------------------------------------------------------------------------------------------ JoinGroup
    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                          require_known_member_id: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
                          session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                          callback: Callable[[JoinGroupResult], None], reason: Optional[str] = None) -> None:
        error = self._validate_group_status(group_id, JOIN)
        if error is not None:
            return callback(JoinGroupResult(error, member_id))
        if not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return callback(JoinGroupResult(E.INVALID_SESSION_TIMEOUT, member_id))
        if rebalance_timeout_ms < 0:      # JoinGroup v0 has no rebalance timeout: the session timeout serves
            rebalance_timeout_ms = session_timeout_ms
        unknown = member_id == ""
        group = self.manager.get_or_maybe_create_group(group_id, unknown)
        if group is None:
            return callback(JoinGroupResult(E.UNKNOWN_MEMBER_ID, member_id))
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            callback(JoinGroupResult(E.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._new_member_join(group, group_instance_id, require_known_member_id, client_id, client_host,
                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback)
        else:
            self._current_member_join(group, member_id, group_instance_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback)
        if group.is_(S.PREPARING_REBALANCE):
            self.rebalance.check_join(group)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        limit = self.config.group_max_size
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.is_(S.PREPARING_REBALANCE):
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or \
                group.num_members_awaiting_join < limit
        return group.has(member_id) or group.size < limit

    def _new_member_join(self, group, instance_id, require_known, client_id, client_host, rebalance_timeout_ms,
                         session_timeout_ms, protocol_type, protocols, callback) -> None:
        if group.is_(S.DEAD):
            return callback(JoinGroupResult(E.COORDINATOR_NOT_AVAILABLE, ""))
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            return callback(JoinGroupResult(E.INCONSISTENT_GROUP_PROTOCOL, ""))
        new_id = group.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                return self._update_static_member(group, old_id, new_id, instance_id, protocols,
                                                  rebalance_timeout_ms, session_timeout_ms, callback)
        elif require_known:
            group.add_pending_member(new_id)
            self._schedule_pending_expiration(group, new_id, session_timeout_ms)
            self._event(group.group_id, f"{new_id} asked to rejoin with its new member id (MEMBER_ID_REQUIRED)")
            return callback(JoinGroupResult(E.MEMBER_ID_REQUIRED, new_id))
        self._add_member_and_rebalance(group, new_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                       session_timeout_ms, protocol_type, protocols, callback)

    def _current_member_join(self, group, member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                             session_timeout_ms, protocol_type, protocols, callback) -> None:
        if group.is_(S.DEAD):
            return callback(JoinGroupResult(E.COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            return callback(JoinGroupResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if group.is_pending_member(member_id):
            return self._add_member_and_rebalance(group, member_id, None, client_id, client_host,
                                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                                  callback)
        error = self._validate_current_member(group, member_id, instance_id)
        if error is not None:
            return callback(JoinGroupResult(error, member_id))
        member = group.get(member_id) if group.has(member_id) else None
        if group.is_(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              callback, "member rejoins during PreparingRebalance")
        elif group.is_(S.COMPLETING_REBALANCE):
            if member.matches(protocols):   # a retry of a join whose answer was lost: answer it again
                callback(join_result(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback, "member changed its metadata")
        elif group.is_(S.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback,
                                                  "leader rejoins" if group.is_leader(member_id)
                                                  else "member changed its metadata")
            else:
                callback(join_result(group, member_id, with_members=False))
        else:
            callback(JoinGroupResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(self, group, member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                  session_timeout_ms, protocol_type, protocols, callback) -> None:
        member = MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._event(group.group_id, f"{member_id} joins")
        self.rebalance.maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(self, group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                     callback, reason: str) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self.rebalance.maybe_prepare_rebalance(group, f"{member.member_id}: {reason}")

    def _update_static_member(self, group, old_id, new_id, instance_id, protocols, rebalance_timeout_ms,
                              session_timeout_ms, callback) -> None:
        def fence(old: MemberMetadata) -> None:
            self.rebalance.invoke_join(group, old, JoinGroupResult(E.FENCED_INSTANCE_ID, old_id))
            self.rebalance.invoke_sync(old, SyncGroupResult(E.FENCED_INSTANCE_ID))
        self._cancel_heartbeat(group.group_id, old_id)
        member = group.replace_static_member(instance_id, old_id, new_id, fence)
        self._event(group.group_id, f"static member {instance_id} replaces {old_id} with {new_id}")
        if group.is_(S.STABLE) and member.matches(protocols):
            group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, None)
            self.manager.store_group(group, {m.member_id: m.assignment for m in group.members.values()})
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            callback(join_result(group, new_id, with_members=False))
        elif group.state in (S.STABLE, S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE):
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              callback, f"static member {instance_id} rejoins")
        else:
            callback(JoinGroupResult(E.UNKNOWN_MEMBER_ID, new_id))

    # ------------------------------------------------------------------------------------------ SyncGroup
    def handle_sync_group(self, group_id: str, generation_id: int, member_id: str, protocol_type: Optional[str],
                          protocol_name: Optional[str], group_instance_id: Optional[str], assignment: dict,
                          callback: Callable[[SyncGroupResult], None]) -> None:
        error = self._validate_group_status(group_id, SYNC)
        if error == E.COORDINATOR_LOAD_IN_PROGRESS:
            return callback(SyncGroupResult(E.REBALANCE_IN_PROGRESS))   # the member must rejoin anyway
        if error is not None:
            return callback(SyncGroupResult(error))
        group = self.manager.get_group(group_id)
        if group is None:
            return callback(SyncGroupResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(S.DEAD):
            return callback(SyncGroupResult(E.COORDINATOR_NOT_AVAILABLE))
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is None and generation_id != group.generation_id:
            error = E.ILLEGAL_GENERATION
        if error is None and ((protocol_type is not None and protocol_type != group.protocol_type) or
                              (protocol_name is not None and protocol_name != group.protocol_name)):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            return callback(SyncGroupResult(error))
        if group.is_(S.EMPTY):
            return callback(SyncGroupResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(S.PREPARING_REBALANCE):
            return callback(SyncGroupResult(E.REBALANCE_IN_PROGRESS))
        member = group.get(member_id)
        self.rebalance.remove_pending_sync(group, member_id)
        if group.is_(S.STABLE):
            callback(SyncGroupResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return
        member.awaiting_sync_callback = callback      # CompletingRebalance: wait for the leader's assignment
        if group.is_leader(member_id):
            full = {m: bytes(assignment.get(m, b"")) for m in group.members}
            self._event(group.group_id, f"leader {member_id} sends the assignment of generation "
                                        f"{group.generation_id}")

            def stored(code: int) -> None:   # the group may have moved on while the append waited
                if group.is_(S.COMPLETING_REBALANCE) and generation_id == group.generation_id:
                    if code != E.NONE:
                        self.rebalance.reset_and_propagate_assignment_error(group, code)
                        self.rebalance.maybe_prepare_rebalance(group, f"error {E(code).name} storing the assignment")
                    else:
                        for m in group.members.values():
                            m.assignment = full[m.member_id]
                        self.rebalance.propagate_assignment(group, E.NONE)
                        group.transition_to(S.STABLE, self._now())
                        self._event(group.group_id, f"Stable (generation {group.generation_id})")
            self.manager.store_group(group, full, stored)

    # ------------------------------------------------------------------------------------------ Heartbeat
    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                         generation_id: int) -> int:
        error = self._validate_group_status(group_id, HEARTBEAT)
        if error is not None:
            return E.NONE if error == E.COORDINATOR_LOAD_IN_PROGRESS else error
        group = self.manager.get_group(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        member = group.get(member_id)
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        return E.REBALANCE_IN_PROGRESS if group.is_(S.PREPARING_REBALANCE) else E.NONE

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        """A heartbeat arrived (or its equivalent): the session restarts now."""
        key = (group.group_id, member.member_id)
        old = self._heartbeats.pop(key, None)
        if old is not None:
            old.cancel()
        member.heartbeat_satisfied = False
        member.heartbeat_deadline_ms = self._now() + timeout_ms
        self._heartbeats[key] = self.scheduler.schedule(
            f"heartbeat-{member.member_id}", lambda: self._on_heartbeat_expired(group, member.member_id, key),
            timeout_ms)

    def _cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        task = self._heartbeats.pop((group_id, member_id), None)
        if task is not None:
            task.cancel()

    def _schedule_pending_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        def expire():
            if group.is_pending_member(member_id) and not group.is_(S.DEAD):
                self._event(group.group_id, f"pending member {member_id} expired")
                self._remove_pending_member(group, member_id)
        self.scheduler.schedule(f"pending-member-{member_id}", expire, timeout_ms)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(S.PREPARING_REBALANCE):
            self.rebalance.check_join(group)

    def _on_heartbeat_expired(self, group: GroupMetadata, member_id: str, key) -> None:
        self._heartbeats.pop(key, None)
        if group.is_(S.DEAD) or not group.has(member_id):
            return
        member = group.get(member_id)
        if not member.has_satisfied_heartbeat():
            self._event(group.group_id, f"{member_id} session expired")
            self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.rebalance.invoke_join(group, member, JoinGroupResult(E.UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        self._cancel_heartbeat(group.group_id, member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self.rebalance.maybe_prepare_rebalance(group, f"{member.member_id} left")
        elif group.is_(S.PREPARING_REBALANCE):
            self.rebalance.check_join(group)

    # ------------------------------------------------------------------------------------------ LeaveGroup
    def handle_leave_group(self, group_id: str, members: list[tuple[str, Optional[str]]]) -> tuple[int, list]:
        """``members`` = [(member_id, group_instance_id)] -> (top-level error, [error per member])."""
        error = self._validate_group_status(group_id, LEAVE)
        if error is not None:
            return error, []
        group = self.manager.get_group(group_id)
        if group is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, instance_id in members:
            if member_id == "":
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    errors.append(E.UNKNOWN_MEMBER_ID)
                    continue
                member_id = current
            elif group.is_pending_member(member_id):
                self._remove_pending_member(group, member_id)
                errors.append(E.NONE)
                continue
            else:
                err = self._validate_current_member(group, member_id, instance_id)
                if err is not None:
                    errors.append(err)
                    continue
            self._event(group_id, f"{member_id} leaves (LeaveGroup)")
            self._remove_member_and_update_group(group, group.get(member_id))
            errors.append(E.NONE)
        return E.NONE, errors
