"""The group coordinator's other half: committed offsets and the admin views of groups.

Theory of operation
-------------------
**OffsetCommit.** A consumer's position is just an offset it *commits* to its group: one record per partition
in ``__consumer_offsets``. Who may commit:

* a member of the current generation (member id + generation id must match; an older generation gets
  ILLEGAL_GENERATION: its partitions may belong to someone else by now; CompletingRebalance gets
  REBALANCE_IN_PROGRESS);
* anybody, with generation -1 and no member id, while the group has no members: a consumer that uses
  ``assign()`` instead of ``subscribe()``, or an admin tool resetting offsets. Such a commit creates the group
  (Empty, without a protocol) if needed.

**When the commit happens decides the delivery guarantee.** Commit *after* processing: a crash between the two
re-delivers the records processed since the last commit (at-least-once). Commit *before* processing: a crash
loses them (at-most-once). The broker cannot tell; it stores what it is told.

**TxnOffsetCommit** is the commit a transactional producer makes for a consumer group
(``send_offsets_to_transaction``): the offsets are written with the producer id and epoch and stay pending
until the transaction ends (see :mod:`.group_metadata_manager`). It creates the group if needed; the member,
instance and generation are checked only when the request carries them (v3+, KIP-447), so older clients may
commit to a group that has members.

**OffsetFetch** returns the committed offsets (-1 for a partition without one), whatever the group's state:
it works for groups that only store offsets. v8+ asks for several groups in one request. With
``require_stable`` (v7+) a partition whose commit is still pending answers UNSTABLE_OFFSET_COMMIT, and the
consumer asks again later instead of starting from an offset a transaction may still change.

**ListGroups / DescribeGroups / DeleteGroups / OffsetDelete** are the views and knobs of
``kafka-consumer-groups.sh``. Only an Empty group can be deleted (NON_EMPTY_GROUP otherwise); a live consumer
group keeps the offsets of topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).

**Who does what.** :class:`GroupOffsetsAndAdmin` is owned by the
:class:`~.coordinator.GroupCoordinator`, which forwards these six requests to it. It reads and writes groups
and offsets through the :class:`~.group_metadata_manager.GroupMetadataManager` (as Kafka's coordinator calls
``storeOffsets`` / ``getOffsets`` / ``cleanupGroupMetadata``), and reaches the membership side only through
the callables it is built with: is the coordinator active, is this group id served here
(``validate_group_status``), is this member current (``validate_current_member``), restart a member's session
(a commit counts as a heartbeat) and note an event on the lab's timeline.

Mirrors: ``GroupCoordinator.scala`` (``handleCommitOffsets``, ``handleTxnCommitOffsets``, ``handleFetchOffsets``,
``handleListGroups``, ``handleDescribeGroup``, ``handleDeleteGroups``, ``handleDeleteOffsets``).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from kafkalab.coordinator.group.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata
from kafkalab.coordinator.group.member_metadata import MemberMetadata
from kafkalab.coordinator.group.state import GroupState
from kafkalab.protocol import ErrorCode

__all__ = ["GroupOffsetsAndAdmin", "MemberSummary", "GroupSummary"]

E = ErrorCode
S = GroupState


class MemberSummary(NamedTuple):
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class GroupSummary(NamedTuple):
    state: str
    protocol_type: str
    protocol: str
    members: tuple


DEAD_GROUP = GroupSummary(S.DEAD.value, "", "", ())


class GroupOffsetsAndAdmin:
    """Committed offsets and the admin views of the groups of one coordinator.

    ``manager`` the coordinator's :class:`~.group_metadata_manager.GroupMetadataManager`; ``time`` its clock;
    ``is_active()`` whether the coordinator runs; ``validate_group_status(group_id, api)`` -> error code or
    None; ``validate_current_member(group, member_id, group_instance_id)`` -> error code or None;
    ``restart_session(group, member)`` after a commit by a member; ``record_event(group_id, what)``.
    """

    def __init__(self, manager, time, *, is_active: Callable[[], bool],
                 validate_group_status: Callable[[Optional[str], str], Optional[int]],
                 validate_current_member: Callable[[GroupMetadata, str, Optional[str]], Optional[int]],
                 restart_session: Callable[[GroupMetadata, MemberMetadata], None],
                 record_event: Callable[[str, str], None]):
        self.manager = manager
        self.time = time
        self._is_active = is_active
        self._validate_group_status = validate_group_status
        self._validate_current_member = validate_current_member
        self._restart_session = restart_session
        self._event = record_event

    def _now(self) -> int:
        return self.time.milliseconds()

    # ------------------------------------------------------------------------------------------ OffsetCommit
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: Optional[str],
                              generation_id: int, offsets: dict,
                              callback: Optional[Callable[[dict], None]] = None) -> Optional[dict]:
        """``offsets`` = {(topic, partition): OffsetAndMetadata} -> {(topic, partition): error code}, given to
        ``callback`` once the commit is complete (the append replicated, or failed) and returned if that was
        at once (None while the append waits for the in-sync replicas)."""
        out: list[dict] = []

        def done(results: dict) -> None:
            out.append(results)
            if callback is not None:
                callback(results)
        early = self._commit_offsets(group_id, member_id, group_instance_id, generation_id, offsets, done)
        if early is not None:
            done(early)
        return out[0] if out else None

    def _commit_offsets(self, group_id, member_id, group_instance_id, generation_id, offsets, done):
        error = self._validate_group_status(group_id, "commit")
        if error is not None:
            return {tp: error for tp in offsets}
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return {tp: E.ILLEGAL_GENERATION for tp in offsets}
            group = self.manager.add_group(GroupMetadata(group_id, S.EMPTY, self._now()))
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error is None and group.is_(S.COMPLETING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            return {tp: error for tp in offsets}
        if group.state in (S.STABLE, S.PREPARING_REBALANCE):
            self._restart_session(group, group.get(member_id))
        now = self._now()
        offsets = {tp: om._replace(commit_timestamp=now) if om.commit_timestamp < 0 else om
                   for tp, om in offsets.items()}
        self.manager.store_offsets(group, offsets, done)
        return None

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: Optional[str]) -> Optional[int]:
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(S.EMPTY):
            return None           # not using group management: allowed while nobody is a member
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            return E.ILLEGAL_GENERATION if generation_id != group.generation_id else None
        return E.UNKNOWN_MEMBER_ID if not group.is_(S.EMPTY) else None

    # ------------------------------------------------------------------------------------------ TxnOffsetCommit
    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                  group_instance_id: Optional[str], generation_id: int, offsets: dict,
                                  callback: Optional[Callable[[dict], None]] = None) -> Optional[dict]:
        """Like :meth:`handle_commit_offsets`, for offsets inside the transaction of ``producer_id``: appended
        as a transactional batch, pending until the transaction's marker. Without a generation, member or
        instance (v0-2) any group accepts them."""
        out: list[dict] = []

        def done(results: dict) -> None:
            out.append(results)
            if callback is not None:
                callback(results)
        early = self._txn_commit_offsets(group_id, producer_id, producer_epoch, member_id, group_instance_id,
                                         generation_id, offsets, done)
        if early is not None:
            done(early)
        return out[0] if out else None

    def _txn_commit_offsets(self, group_id, producer_id, producer_epoch, member_id, group_instance_id,
                            generation_id, offsets, done):
        error = self._validate_group_status(group_id, "txn-commit")
        if error is not None:
            return {tp: error for tp in offsets}
        group = self.manager.get_group(group_id)
        if group is None:
            group = self.manager.add_group(GroupMetadata(group_id, S.EMPTY, self._now()))
        if group.is_(S.DEAD):
            error = E.COORDINATOR_NOT_AVAILABLE
        elif generation_id < 0 and group.is_(S.EMPTY):
            pass                  # not using group management: allowed while nobody is a member
        elif generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is None and generation_id != group.generation_id:
                error = E.ILLEGAL_GENERATION
        if error is not None:
            return {tp: error for tp in offsets}
        now = self._now()
        offsets = {tp: om._replace(commit_timestamp=now) if om.commit_timestamp < 0 else om
                   for tp, om in offsets.items()}
        self._event(group_id, f"TxnOffsetCommit of producer {producer_id} (epoch {producer_epoch}): "
                              f"{len(offsets)} offset(s) pending until the transaction ends")
        self.manager.store_offsets(group, offsets, done, producer_id=producer_id, producer_epoch=producer_epoch)
        return None

    # ------------------------------------------------------------------------------------------ OffsetFetch
    def handle_fetch_offsets(self, group_id: str, partitions: Optional[list] = None,
                             require_stable: bool = False) -> tuple[int, dict]:
        """-> (error, {(topic, partition): OffsetAndMetadata, None (nothing committed), or
        ``ErrorCode.UNSTABLE_OFFSET_COMMIT`` (``require_stable`` and a commit of it is pending)});
        ``partitions`` None = all committed."""
        error = self._validate_group_status(group_id, "fetch")
        if error is not None:
            return error, {}
        return E.NONE, self.manager.get_offsets(group_id, partitions, require_stable)

    # ------------------------------------------------------------------------------------------ ListGroups
    def handle_list_groups(self, states: Optional[set] = None) -> tuple[int, list]:
        """-> (error, [(group_id, protocol_type, state)]); ``states`` filters case-insensitively."""
        if not self._is_active():
            return E.COORDINATOR_NOT_AVAILABLE, []
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self.manager.is_loading else E.NONE
        wanted = {s.lower() for s in states} if states else None
        return error, [(g.group_id, g.protocol_type or "", g.state.value) for g in self.manager.groups.values()
                       if wanted is None or g.state.value.lower() in wanted]

    # ------------------------------------------------------------------------------------------ DescribeGroups
    def handle_describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._validate_group_status(group_id, "describe")
        if error is not None:
            return error, GroupSummary("", "", "", ())
        group = self.manager.get_group(group_id)
        if group is None:
            return E.NONE, DEAD_GROUP
        stable = group.is_(S.STABLE)
        members = tuple(MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                      m.metadata(group.protocol_name) if stable else b"",
                                      m.assignment if stable else b"") for m in group.members.values())
        return E.NONE, GroupSummary(group.state.value, group.protocol_type or "",
                                    (group.protocol_name or "") if stable else "", members)

    # ------------------------------------------------------------------------------------------ DeleteGroups
    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        errors: dict[str, int] = {}
        eligible = []
        for group_id in group_ids:
            error = self._validate_group_status(group_id, "delete")
            if error is not None:
                errors[group_id] = error
                continue
            group = self.manager.get_group(group_id)
            if group is None or group.is_(S.DEAD):
                errors[group_id] = E.GROUP_ID_NOT_FOUND if self.manager.group_not_exists(group_id) \
                    else E.NOT_COORDINATOR
            elif group.is_(S.EMPTY):
                group.transition_to(S.DEAD, self._now())
                eligible.append(group)
            else:
                errors[group_id] = E.NON_EMPTY_GROUP
        if eligible:
            self.manager.cleanup_group_metadata(eligible, lambda g: g.remove_offsets(list(g.offsets)))
            for g in eligible:
                errors[g.group_id] = E.NONE
                self._event(g.group_id, "deleted (DeleteGroups)")
        return errors

    # ------------------------------------------------------------------------------------------ OffsetDelete
    def handle_delete_offsets(self, group_id: str, partitions: list) -> tuple[int, dict]:
        """-> (group error, {(topic, partition): error}); partition errors are empty when the group failed."""
        error = self._validate_group_status(group_id, "delete")
        if error is not None:
            return error, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_(S.DEAD):
            return (E.GROUP_ID_NOT_FOUND if self.manager.group_not_exists(group_id) else E.NOT_COORDINATOR), {}
        results: dict = {}
        if group.is_(S.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = group.subscribed_topics() or set()
            eligible = [tp for tp in partitions if tp[0] not in subscribed]
            results.update({tp: E.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if tp[0] in subscribed})
        else:
            return E.NON_EMPTY_GROUP, {}
        if eligible:
            self.manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            results.update({tp: E.NONE for tp in eligible})
        return E.NONE, results

