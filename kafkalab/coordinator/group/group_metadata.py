"""One consumer group as its coordinator sees it: state, generation, members, leader, protocol, offsets.

Theory of operation
-------------------
* **Generation.** Every completed JoinGroup round starts a new generation (``generation_id`` + 1). Requests
  carry the generation they believe in; an older one gets ILLEGAL_GENERATION, so a member that missed a
  rebalance cannot commit offsets for partitions that now belong to someone else.
* **Leader.** The first member to join becomes the leader; if it fails to rejoin a rebalance, any member
  that did rejoin takes over. Only the leader's JoinGroup response lists the members and their metadata: the
  leader's *client* runs the assignor (range, round-robin, sticky...) and sends the result in SyncGroup. The
  broker never computes an assignment.
* **Protocol.** All members must share the protocol type; the protocol (the assignor) is elected among those
  every member supports (:meth:`select_protocol`).
* **Static members** (KIP-345) bring a ``group.instance.id``; a restart with the same instance id takes over
  the old member id without a rebalance, and an older process using the replaced id is *fenced*
  (FENCED_INSTANCE_ID).
* **Pending members** (KIP-394): a JoinGroup v4+ without a member id gets one back with MEMBER_ID_REQUIRED and
  is remembered as pending until it rejoins with it; a rebalance waits for pending members too.
* **Offsets.** Committed offsets per topic-partition, with the log offset of the record that stored them.
* **Pending offsets.** An OffsetCommit is *pending* from the moment its record is handed to the log until the
  append completes; a TxnOffsetCommit's offsets stay pending, per producer id, until the transaction ends: the
  COMMIT marker on ``__consumer_offsets`` makes them the committed offsets (only where their record is later
  in the log than the one already committed, so the newest write wins whatever order the markers come in), an
  ABORT marker drops them. OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for a partition
  that has a pending offset of either kind.

Mirrors: ``core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala``.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import Callable, NamedTuple, Optional

from kafkalab.coordinator.group.member_metadata import MemberMetadata
from kafkalab.coordinator.group.state import GroupState, VALID_PREVIOUS_STATES, check_transition
from kafkalab.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from kafkalab.protocol.consumer_protocol import decode_subscription

__all__ = ["GroupMetadata", "OffsetAndMetadata", "CommitRecord", "CONSUMER_PROTOCOL_TYPE"]


class OffsetAndMetadata(NamedTuple):
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1        # only from OffsetCommit v2-4 with a retention_time_ms (value version 1)


class CommitRecord(NamedTuple):
    """A committed offset and where in ``__consumer_offsets`` it was written (None until appended)."""
    appended_offset: Optional[int]
    value: OffsetAndMetadata

    def older_than(self, other: "CommitRecord") -> bool:
        """Was this record written before ``other``? (Kafka's ``olderThan``.) When either log offset is unknown
        (a log that does not report it) the one that arrives later wins."""
        if self.appended_offset is None or other.appended_offset is None:
            return True
        return self.appended_offset < other.appended_offset


class GroupMetadata:
    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY, now_ms: int = -1):
        self.group_id = group_id
        self.state = state
        self.current_state_timestamp = now_ms
        self.generation_id = 0
        self.protocol_type: Optional[str] = None
        self.protocol_name: Optional[str] = None
        self.leader_id: Optional[str] = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}          # group.instance.id -> member id
        self.pending_members: set[str] = set()            # got MEMBER_ID_REQUIRED, not joined yet
        self.pending_sync_members: set[str] = set()       # joined this generation, no SyncGroup yet
        self.supported_protocols: Counter = Counter()     # protocol name -> number of members supporting it
        self.num_members_awaiting_join = 0
        self.new_member_added = False
        self.offsets: dict[tuple[str, int], CommitRecord] = {}
        #: plain OffsetCommits whose append has not completed yet: {(topic, partition): OffsetAndMetadata}
        self.pending_offset_commits: dict[tuple[str, int], OffsetAndMetadata] = {}
        #: TxnOffsetCommits of open transactions: {producer id: {(topic, partition): CommitRecord}}
        self.pending_transactional_offset_commits: dict[int, dict[tuple[str, int], CommitRecord]] = {}

    # ------------------------------------------------------------------------------------------ state
    def is_(self, state: GroupState) -> bool:
        return self.state == state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, state)
        self.state = state
        self.current_state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # ------------------------------------------------------------------------------------------ members
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def generate_member_id(self, client_id: str, group_instance_id: Optional[str]) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    def add(self, member: MemberMetadata, callback: Optional[Callable] = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocols)
        member.awaiting_join_callback = callback
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocols)
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: MemberMetadata, protocols, rebalance_timeout_ms: int, session_timeout_ms: int,
                      callback: Optional[Callable]) -> None:
        self.supported_protocols.subtract(member.protocols)
        member.supported_protocols = list(protocols)
        self.supported_protocols.update(member.protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str,
                              fence: Callable[[MemberMetadata], None]) -> MemberMetadata:
        """A static member came back without its member id: it takes over the old member (same assignment);
        whatever the old process was waiting for is answered with FENCED_INSTANCE_ID by ``fence``."""
        member = self.members.pop(old_member_id)
        fence(member)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def current_static_member_id(self, group_instance_id: str) -> Optional[str]:
        return self.static_members.get(group_instance_id)

    def add_pending_member(self, member_id: str) -> None:
        self.pending_members.add(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    @property
    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    @property
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote any member that did; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    # ------------------------------------------------------------------------------------------ protocols
    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, count in self.supported_protocols.items() if count == n and n > 0}

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """May a member with this protocol type and these protocols join? An empty group accepts any
        non-empty offer; otherwise the type must match and one protocol must be supported by everybody."""
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(self.supported_protocols[p] == n for p in protocols)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol among those all members support; most votes wins
        (a tie goes to the protocol that got its first vote earliest, in member order)."""
        if not self.members:
            raise RuntimeError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda p: votes[p])   # Counter keeps first-seen order: ties go to the earliest

    def subscribed_topics(self) -> Optional[set[str]]:
        """Topics the members subscribe to (consumer protocol only; None if unknown or unreadable)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(decode_subscription(m.metadata(self.protocol_name)).topics)
        except (ValueError, KeyError):
            return None
        return topics

    # ------------------------------------------------------------------------------------------ generations
    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, Optional[str], bytes]]:
        """(member id, group instance id, metadata of the chosen protocol) per member: the leader's view."""
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    # ------------------------------------------------------------------------------------------ offsets
    def offset(self, topic: str, partition: int) -> Optional[OffsetAndMetadata]:
        rec = self.offsets.get((topic, partition))
        return rec.value if rec is not None else None

    def remove_offsets(self, tps) -> dict:
        """Forget these partitions' committed offsets (and any pending commit of them); returns what was removed."""
        tps = list(tps)
        for tp in tps:
            self.pending_offset_commits.pop(tp, None)
            for pending in self.pending_transactional_offset_commits.values():
                pending.pop(tp, None)
        return {tp: self.offsets.pop(tp).value for tp in tps if tp in self.offsets}

    @property
    def has_offsets(self) -> bool:
        """Committed or pending offsets: a group with any is not removed as empty."""
        return bool(self.offsets or self.pending_offset_commits or self.pending_transactional_offset_commits)

    def initialize_offsets(self, offsets: dict, pending_txn_offsets: dict) -> None:
        """After loading: the committed offsets and those of transactions still open in the log."""
        self.offsets = dict(offsets)
        self.pending_transactional_offset_commits = {pid: dict(tps) for pid, tps in pending_txn_offsets.items()}

    # -- plain commits in flight (Kafka: prepareOffsetCommit / onOffsetCommitAppend / failPendingOffsetWrite)
    def prepare_offset_commit(self, offsets: dict) -> None:
        self.pending_offset_commits.update(offsets)

    def on_offset_commit_append(self, tp: tuple[str, int], record: CommitRecord) -> None:
        """The record of a plain commit is in the log: it is the committed offset unless a later record already
        is (a transaction that committed meanwhile with a record written after this one)."""
        if tp in self.pending_offset_commits:
            current = self.offsets.get(tp)
            if current is None or current.older_than(record):
                self.offsets[tp] = record
        if self.pending_offset_commits.get(tp) == record.value:
            del self.pending_offset_commits[tp]

    def fail_pending_offset_write(self, tp: tuple[str, int], offset: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(tp) == offset:
            del self.pending_offset_commits[tp]

    # -- transactional commits (Kafka: prepareTxnOffsetCommit ... completePendingTxnOffsetCommit)
    def prepare_txn_offset_commit(self, producer_id: int, offsets: dict) -> None:
        """A TxnOffsetCommit is being appended: its offsets are pending for ``producer_id`` (log offset unknown)."""
        pending = self.pending_transactional_offset_commits.setdefault(producer_id, {})
        for tp, om in offsets.items():
            pending[tp] = CommitRecord(None, om)

    def on_txn_offset_commit_append(self, producer_id: int, tp: tuple[str, int], record: CommitRecord) -> None:
        """The transactional record is in the log at ``record.appended_offset``: remember where."""
        pending = self.pending_transactional_offset_commits.get(producer_id)
        if pending is not None and tp in pending and pending[tp].value == record.value:
            pending[tp] = record

    def fail_pending_txn_offset_commit(self, producer_id: int, tp: tuple[str, int]) -> None:
        """The append failed: the client gets the error and retries, maybe at another coordinator."""
        pending = self.pending_transactional_offset_commits.get(producer_id)
        if pending is not None:
            pending.pop(tp, None)
            if not pending:
                del self.pending_transactional_offset_commits[producer_id]

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> list[tuple[str, int]]:
        """The transaction's marker is written: on COMMIT its offsets become the committed ones where their
        record is the later one in the log; on ABORT they are dropped. Returns the partitions now committed."""
        pending = self.pending_transactional_offset_commits.pop(producer_id, None)
        applied: list[tuple[str, int]] = []
        if not is_commit or not pending:
            return applied
        for tp, record in pending.items():
            if record.appended_offset is None:
                continue      # its own append never completed: nothing of it is in the log to commit
            current = self.offsets.get(tp)
            if current is None or current.older_than(record):
                self.offsets[tp] = record
                applied.append(tp)
        return applied

    def has_pending_offset_commits_from_producer(self, producer_id: int) -> bool:
        return producer_id in self.pending_transactional_offset_commits

    def has_pending_offset_commits_for_partition(self, tp: tuple[str, int]) -> bool:
        return tp in self.pending_offset_commits or any(
            tp in pending for pending in self.pending_transactional_offset_commits.values())

    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        """Which offsets ``offsets.retention.minutes`` removes now. An empty group loses all its offsets once
        it has been empty for the retention period (KIP-211); a stable consumer group only those of topics it
        no longer subscribes to, counted from their commit; a group without a protocol (offsets only) counts
        from each commit. An offset committed with an explicit expire timestamp (old clients) expires then.
        A partition with a plain commit in flight keeps its offset."""
        return [tp for tp in self._expired_offsets(now_ms, retention_ms) if tp not in self.pending_offset_commits]

    def _expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        def expired(rec: CommitRecord, base: int) -> bool:
            if rec.value.expire_timestamp >= 0:
                return now_ms >= rec.value.expire_timestamp
            return now_ms - base >= retention_ms

        if self.protocol_type is not None and self.is_(GroupState.EMPTY):
            return [tp for tp, rec in self.offsets.items()
                    if expired(rec, self.current_state_timestamp if self.current_state_timestamp >= 0
                               else rec.value.commit_timestamp)]
        if self.protocol_type is None:
            return [tp for tp, rec in self.offsets.items() if expired(rec, rec.value.commit_timestamp)]
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.is_(GroupState.STABLE):
            subscribed = self.subscribed_topics()
            if subscribed is None:
                return []
            return [tp for tp, rec in self.offsets.items()
                    if tp[0] not in subscribed and expired(rec, rec.value.commit_timestamp)]
        return []

    def __repr__(self) -> str:
        return (f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, state={self.state}, "
                f"protocol_type={self.protocol_type!r}, protocol={self.protocol_name!r}, leader={self.leader_id!r}, "
                f"members={list(self.members)})")
