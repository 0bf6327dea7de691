"""The rebalance rounds of a classic group: the parked JoinGroups and SyncGroups and the timers that end them.

Theory of operation
-------------------
A rebalance is two rounds in which the coordinator holds answers back until it can give everybody theirs.

**Preparing the rebalance.** Something changed -- a member joined, left, timed out or changed its subscription
-- so the group goes to PreparingRebalance. Members still waiting for a SyncGroup answer of the previous
generation get REBALANCE_IN_PROGRESS (and rejoin). A *delayed join* is armed: the rebalance timeout for a live
group, or for an Empty one ``group.initial.rebalance.delay.ms`` -- re-armed (up to the rebalance timeout) as
long as new members keep arriving, so that consumers started together form one generation (Kafka's
``InitialDelayedJoin``).

**Completing the join.** As soon as every known member has rejoined (never during the initial delay), or when
the delayed join fires: members that did not rejoin are removed (static members are kept), a leader is
elected among those that did, the generation is bumped and every parked JoinGroup is answered at once -- the
leader's answer carrying the members' metadata. If no member is left the group becomes Empty (and that is
stored); if the members exist but none rejoined, the delayed join is armed again.

**The sync round.** Each member then sends SyncGroup; a *delayed sync* gives them the rebalance timeout. The
leader's assignment, once stored in ``__consumer_offsets``, is propagated to every waiting member and the
group is Stable. Members that never sent SyncGroup by the deadline are removed and a new rebalance starts.

**Who does what.** :class:`RebalanceRounds` is owned by the :class:`~.coordinator.GroupCoordinator`
(``coordinator.rebalance``), which decides *what* a request means for the group (validation, new or current
member, static member replacement) and calls in here to run the rounds. It keeps the delayed joins and syncs
per group and reaches the rest only through what it is built with: the coordinator's settings, clock and
scheduler, the :class:`~.group_metadata_manager.GroupMetadataManager` (``store_group``), and callables to
restart or cancel a member's session timer and note an event on the lab's timeline.

Mirrors: ``GroupCoordinator.scala`` (``prepareRebalance``, ``onCompleteJoin``, ``onExpireJoin``,
``propagateAssignment``, ``removePendingSyncMember``), ``DelayedJoin.scala`` (``InitialDelayedJoin``) and
``DelayedSync.scala``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, NamedTuple, Optional

from kafkalab.coordinator.group.group_metadata import GroupMetadata
from kafkalab.coordinator.group.member_metadata import MemberMetadata
from kafkalab.coordinator.group.state import GroupState
from kafkalab.protocol import ErrorCode

__all__ = ["RebalanceRounds", "JoinGroupResult", "SyncGroupResult", "join_result"]

log = logging.getLogger("kafkalab.coordinator.group.GroupCoordinator")

E = ErrorCode
S = GroupState


class JoinGroupResult(NamedTuple):
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader_id: str = ""
    members: tuple = ()              # (member_id, group_instance_id, metadata): only for the leader
    skip_assignment: bool = False


class SyncGroupResult(NamedTuple):
    error: int
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignment: bytes = b""


class _Join(NamedTuple):
    task: Any
    initial: bool
    delay_ms: int
    remaining_ms: int


def join_result(group: GroupMetadata, member_id: str, with_members: bool = True) -> JoinGroupResult:
    """The JoinGroup answer of a member of ``group``'s current generation (the leader also gets the members)."""
    members = tuple(group.current_member_metadata()) if with_members and group.is_leader(member_id) else ()
    return JoinGroupResult(E.NONE, member_id, group.generation_id, group.protocol_type, group.protocol_name,
                           group.leader_id or "", members)


class RebalanceRounds:
    """The delayed joins and syncs of one coordinator's groups.

    ``config`` the coordinator's :class:`~.coordinator.GroupConfig`; ``time`` its clock; ``scheduler``
    ``schedule(name, fn, delay_ms)`` -> task with ``cancel()``; ``manager`` its ``GroupMetadataManager``;
    ``restart_session(group, member)`` restarts a member's session timer; ``cancel_session(group_id,
    member_id)`` stops it; ``record_event(group_id, what)`` notes an event on the timeline.
    """

    def __init__(self, config, time, scheduler, manager, *,
                 restart_session: Callable[[GroupMetadata, MemberMetadata], None],
                 cancel_session: Callable[[str, str], None], record_event: Callable[[str, str], None]):
        self._config = config
        self._time = time
        self._scheduler = scheduler
        self._manager = manager
        self._restart_session = restart_session
        self._cancel_session = cancel_session
        self._record_event = record_event
        self._joins: dict[str, _Join] = {}
        self._syncs: dict[str, Any] = {}

    def _now(self) -> int:
        return self._time.milliseconds()

    @property
    def joins(self) -> dict:
        """The armed delayed joins by group id (``initial``: still in ``group.initial.rebalance.delay.ms``)."""
        return dict(self._joins)

    def shutdown(self) -> None:
        """Cancel every delayed join and sync."""
        for task in [*(j.task for j in self._joins.values()), *self._syncs.values()]:
            if task is not None:
                task.cancel()
        self._joins.clear()
        self._syncs.clear()

    def maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self.reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
        self.cancel_sync(group.group_id)
        group.pending_sync_members.clear()
        if group.is_(S.EMPTY):
            delay = self._config.group_initial_rebalance_delay_ms
            self._schedule_join(group, delay, initial=True,
                                remaining_ms=max(group.rebalance_timeout_ms - delay, 0))
        else:
            self._schedule_join(group, group.rebalance_timeout_ms)
        group.transition_to(S.PREPARING_REBALANCE, self._now())
        self._record_event(group.group_id, f"PreparingRebalance (generation {group.generation_id}): {reason}")
        self.check_join(group)

    def _schedule_join(self, group: GroupMetadata, delay_ms: int, initial: bool = False, remaining_ms: int = 0):
        self.cancel_join(group.group_id)
        holder: list = []
        task = self._scheduler.schedule(f"delayed-join-{group.group_id}",
                                       lambda: self._on_join_expired(group, holder[0]), delay_ms)
        join = _Join(task, initial, delay_ms, remaining_ms)
        holder.append(join)
        self._joins[group.group_id] = join

    def cancel_join(self, group_id: str) -> None:
        join = self._joins.pop(group_id, None)
        if join is not None:
            join.task.cancel()

    def check_join(self, group: GroupMetadata) -> None:
        """Complete the parked JoinGroups early when everybody rejoined (never during the initial delay)."""
        join = self._joins.get(group.group_id)
        if join is not None and not join.initial and group.has_all_members_joined:
            self.cancel_join(group.group_id)
            self._on_complete_join(group)

    def _on_join_expired(self, group: GroupMetadata, join: _Join) -> None:
        if self._joins.get(group.group_id) is not join:
            return
        del self._joins[group.group_id]
        if join.initial and group.new_member_added and join.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self._config.group_initial_rebalance_delay_ms, join.remaining_ms)
            self._schedule_join(group, delay, initial=True, remaining_ms=max(join.remaining_ms - join.delay_ms, 0))
            return
        self._on_complete_join(group)

    def _on_complete_join(self, group: GroupMetadata) -> None:
        for member in group.not_yet_rejoined_members:
            if not member.is_static_member:
                group.remove(member.member_id)
                self._cancel_session(group.group_id, member.member_id)
                self._record_event(group.group_id, f"{member.member_id} removed: did not rejoin in time")
        if group.is_(S.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule_join(group, group.rebalance_timeout_ms)   # nobody rejoined: wait for the sessions
            return
        group.init_next_generation(self._now())
        if group.is_(S.EMPTY):
            self._record_event(group.group_id, f"Empty (generation {group.generation_id})")
            def logged(code: int) -> None:
                if code != E.NONE:
                    log.warning("failed to write empty metadata for group %s: %s", group.group_id, E(code).name)
            self._manager.store_group(group, {}, logged)
            return
        self._record_event(group.group_id, f"CompletingRebalance: generation {group.generation_id}, protocol "
                                    f"{group.protocol_name}, leader {group.leader_id}, {group.size} member(s)")
        for member in list(group.members.values()):
            self.invoke_join(group, member, join_result(group, member.member_id))
            self._restart_session(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self._syncs[group.group_id] = self._scheduler.schedule(
            f"delayed-sync-{group.group_id}", lambda: self._on_sync_expired(group, generation),
            group.rebalance_timeout_ms)

    def invoke_join(self, group: GroupMetadata, member: MemberMetadata, result: JoinGroupResult) -> None:
        callback = member.awaiting_join_callback
        if callback is None:
            return
        member.awaiting_join_callback = None
        group.num_members_awaiting_join -= 1
        try:
            callback(result)
        except Exception:
            log.exception("join callback of %s failed", member.member_id)

    @staticmethod
    def invoke_sync(member: MemberMetadata, result: SyncGroupResult) -> bool:
        callback = member.awaiting_sync_callback
        if callback is None:
            return False
        member.awaiting_sync_callback = None
        try:
            callback(result)
        except Exception:
            log.exception("sync callback of %s failed", member.member_id)
        return True

    def cancel_sync(self, group_id: str) -> None:
        task = self._syncs.pop(group_id, None)
        if task is not None:
            task.cancel()

    def _on_sync_expired(self, group: GroupMetadata, generation: int) -> None:
        self._syncs.pop(group.group_id, None)
        if generation != group.generation_id or group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
            return
        missing = set(group.pending_sync_members)
        if missing:
            for member_id in missing:
                group.remove(member_id)
                self._cancel_session(group.group_id, member_id)
            self._prepare_rebalance(group, f"members {sorted(missing)} did not send SyncGroup in time")

    def reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        ok = error == E.NONE
        for member in group.members.values():
            if self.invoke_sync(member, SyncGroupResult(error, group.protocol_type if ok else None,
                                                         group.protocol_name if ok else None, member.assignment)):
                self._restart_session(group, member)

    def remove_pending_sync(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.cancel_sync(group.group_id)
