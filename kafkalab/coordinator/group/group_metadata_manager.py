"""The group coordinator's memory: the group cache, and its mirror in ``__consumer_offsets``.

Theory of operation
-------------------
Which broker coordinates a group is decided by the group id alone: the group lives in partition
``abs(hashCode(group.id)) % offsets.topic.num.partitions`` of ``__consumer_offsets`` (Java's
``String.hashCode``; Kafka's ``Utils.abs`` maps Integer.MIN_VALUE to 0), and the *leader* of that partition is
the coordinator. When a broker becomes leader of such a partition it **loads** it: reads it from the log start
to the log end and rebuilds every group and committed offset it holds (:func:`~.records.load_records`). Until
that is done, requests for its groups get COORDINATOR_LOAD_IN_PROGRESS; requests for groups of partitions it
does not lead get NOT_COORDINATOR, and the client asks FindCoordinator again. When it loses the partition it
**unloads** those groups (they become Dead here; their members will find the new coordinator).

Every change worth surviving a restart is **appended** to the group's partition as a record batch (through the
broker's replica manager, like a producer's batch with ``acks=all``): the group record on each completed
assignment and when the group becomes empty, an offset record per committed partition, tombstones to forget.
The cache changes only after the append succeeded. Append errors are translated the way Kafka does: a broker
that lost leadership answers NOT_COORDINATOR, an unavailable partition COORDINATOR_NOT_AVAILABLE.

Every ``offsets.retention.check.interval.ms`` the manager expires offsets (see
:meth:`~.group_metadata.GroupMetadata.expired_offsets`) and removes empty groups left without offsets.

The broker side is an :class:`OffsetsLog`: ``append_async(partition, batch_bytes, callback)`` calls
``callback(error code, base offset)`` when the append is complete (the broker's: ``acks=all`` through the
produce purgatory, once the in-sync replicas have the records: Kafka's ``appendForGroup`` callback), and
``read(partition)`` yields the decoded batches from the log start (loading). A log with only
``append(partition, batch_bytes) -> error code`` also works (the base offset is then unknown).
:class:`MemoryOffsetsLog` is one in memory, for tests and the lab.

**Offsets inside a transaction.** A TxnOffsetCommit is appended as a *transactional* batch carrying the
producer id and epoch (so the partition leader fences a zombie producer as it would on any partition, and the
partition's last stable offset waits for the transaction). Its offsets stay *pending* in the group
(:meth:`~.group_metadata.GroupMetadata.prepare_txn_offset_commit`) and the manager remembers which groups each
producer has pending offsets in. When the transaction's COMMIT or ABORT marker has been written to a partition
of ``__consumer_offsets``, :meth:`GroupMetadataManager.handle_txn_completion` materializes or drops the pending
offsets of that producer in the groups of that partition. Loading replays the same rule from the log:
transactional offset records wait for their producer's marker; those with no marker yet stay pending.

Mirrors: ``core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala``.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable, Optional, Protocol

from kafkalab.coordinator.group.group_metadata import CommitRecord, GroupMetadata
from kafkalab.coordinator.group.member_metadata import MemberMetadata
from kafkalab.coordinator.group.records import (GroupMetadataValue, MemberRecord, group_metadata_key,
                                                group_metadata_value, load_records, offset_commit_key,
                                                offset_commit_value)
from kafkalab.coordinator.group.state import GroupState
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.records import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, SimpleRecord, build_batch, decode_batches,
                              set_base_offset)

__all__ = ["GroupMetadataManager", "OffsetsLog", "MemoryOffsetsLog", "java_string_hash", "partition_for",
           "OFFSETS_TOPIC"]

log = logging.getLogger("kafkalab.coordinator.group.GroupMetadataManager")

OFFSETS_TOPIC = "__consumer_offsets"


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a signed int32."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, num_partitions: int) -> int:
    """``Utils.abs(key.hashCode()) % numPartitions`` (Utils.abs(Integer.MIN_VALUE) is 0, not negative)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


class OffsetsLog(Protocol):
    def append_async(self, partition: int, batch: bytes, callback: Callable[[int, int], None]) -> None: ...

    def read(self, partition: int) -> Iterable: ...


class MemoryOffsetsLog:
    """``__consumer_offsets`` in memory: the batches of each partition as appended (offsets assigned on append;
    producer id, epoch and the transactional and control bits kept, so markers can be appended too)."""

    def __init__(self):
        self.batches: dict[int, list[bytes]] = {}
        self.next_offset: dict[int, int] = {}
        self.fail_with: Optional[int] = None      # make appends fail (tests of error paths)

    def append(self, partition: int, batch: bytes) -> int:
        return self._append(partition, batch)[0]

    def append_async(self, partition: int, batch: bytes, callback: Callable[[int, int], None]) -> None:
        callback(*self._append(partition, batch))

    def _append(self, partition: int, batch: bytes) -> tuple[int, int]:
        if self.fail_with is not None:
            return self.fail_with, -1
        base = self.next_offset.get(partition, 0)
        decoded = decode_batches(batch)[0]
        data = bytearray(batch[:decoded.size_in_bytes])
        set_base_offset(data, 0, base)
        self.batches.setdefault(partition, []).append(bytes(data))
        self.next_offset[partition] = base + decoded.last_offset_delta + 1
        return int(ErrorCode.NONE), base

    def read(self, partition: int):
        for b in self.batches.get(partition, []):
            yield from decode_batches(b)

    def records(self, partition: int) -> list:
        return [r for b in self.read(partition) for r in b.records]


#: How a failed append of a *group* record becomes the JoinGroup/SyncGroup error (GroupMetadataManager.storeGroup).
GROUP_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}

#: How a failed append of *offset* records becomes the OffsetCommit error (maybeConvertOffsetCommitError):
#: a timeout is passed through as it is.
OFFSET_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


class GroupMetadataManager:
    def __init__(self, config, time, offsets_log: OffsetsLog, num_partitions: int):
        self.config = config
        self.time = time
        self.log = offsets_log
        self.num_partitions = num_partitions
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        #: producer id -> ids of the groups where it has pending transactional offsets (openGroupsForProducer)
        self.open_groups_for_producer: dict[int, set[str]] = {}

    # ------------------------------------------------------------------------------------------ ownership
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading_partitions

    @property
    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    # ------------------------------------------------------------------------------------------ the cache
    def get_group(self, group_id: str) -> Optional[GroupMetadata]:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    def get_or_maybe_create_group(self, group_id: str, create: bool) -> Optional[GroupMetadata]:
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.add_group(GroupMetadata(group_id, GroupState.EMPTY, self.time.milliseconds()))
        return group

    def group_not_exists(self, group_id: str) -> bool:
        """True when this broker coordinates the group and has no trace of it (GROUP_ID_NOT_FOUND)."""
        if not self.is_group_local(group_id):
            return False
        group = self.groups.get(group_id)
        return group is None or (group.is_(GroupState.DEAD))

    # ------------------------------------------------------------------------------------------ appends
    def _append(self, group_id: str, records: list[tuple[bytes, Optional[bytes]]],
                callback: Optional[Callable[[int, int], None]] = None, errors: dict = GROUP_APPEND_ERRORS, *,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH) -> Optional[int]:
        """Append ``records`` to the group's partition; ``callback(error code, base offset)`` once the append is
        complete -- at once for a log that answers synchronously, or (the broker's log, acks=all) when the in-sync
        replicas have it or the append timed out. With a ``producer_id`` the batch is transactional (a
        TxnOffsetCommit: base sequence 0, as Kafka writes it). Returns the code if already known."""
        now = self.time.milliseconds()
        transactional = producer_id != NO_PRODUCER_ID
        batch = build_batch([SimpleRecord(k, v, (), now) for k, v in records], producer_id=producer_id,
                            producer_epoch=producer_epoch, base_sequence=0 if transactional else -1,
                            transactional=transactional)
        result: list[int] = []

        def done(code: int, base_offset: int = -1) -> None:
            if result:
                return
            result.append(int(errors.get(int(code), int(code))))
            if callback is not None:
                callback(result[0], base_offset)
        try:
            append_async = getattr(self.log, "append_async", None)
            if append_async is not None:
                append_async(self.partition_for(group_id), batch, done)
            else:
                done(self.log.append(self.partition_for(group_id), batch))
        except ApiException as e:  # the broker's append raised: answer like a failed append
            done(e.error_code)
        except Exception:  # noqa: BLE001 - no Kafka error code: UNKNOWN_SERVER_ERROR
            log.exception("append to the partition of group %s failed", group_id)
            done(ErrorCode.UNKNOWN_SERVER_ERROR)
        return result[0] if result else None

    def store_group(self, group: GroupMetadata, assignment: dict[str, bytes],
                    callback: Optional[Callable[[int], None]] = None) -> Optional[int]:
        """Append the group record (members with their assignment). ``callback(error code)`` when complete;
        returns the code if the append completed at once."""
        value = self.group_value(group, assignment)
        return self._append(group.group_id, [(group_metadata_key(group.group_id), group_metadata_value(value))],
                            None if callback is None else lambda code, _offset: callback(code))

    @staticmethod
    def group_value(group: GroupMetadata, assignment: dict[str, bytes]) -> GroupMetadataValue:
        members = tuple(MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.rebalance_timeout_ms, m.session_timeout_ms,
                                     m.metadata(group.protocol_name) if group.protocol_name else b"",
                                     assignment.get(m.member_id, b"")) for m in group.members.values())
        return GroupMetadataValue(group.protocol_type or "", group.generation_id, group.protocol_name,
                                  group.leader_id, group.current_state_timestamp, members)

    def store_offsets(self, group: GroupMetadata, offsets: dict,
                      callback: Optional[Callable[[dict], None]] = None, *, producer_id: int = NO_PRODUCER_ID,
                      producer_epoch: int = NO_PRODUCER_EPOCH) -> Optional[dict]:
        """Append one offset record per partition; ``offsets`` = {(topic, partition): OffsetAndMetadata}.
        ``callback({(topic, partition): error code})`` once the append is complete (the cache changes only
        then); returns that dict if it completed at once. Metadata over ``offset.metadata.max.bytes`` is
        refused. With a ``producer_id`` (TxnOffsetCommit) the batch is transactional and the offsets stay
        pending until the transaction's marker (:meth:`handle_txn_completion`)."""
        limit = self.config.offset_metadata_max_bytes
        ok = {tp: om for tp, om in offsets.items() if om.metadata is None or len(om.metadata.encode()) <= limit}
        results = {tp: int(ErrorCode.OFFSET_METADATA_TOO_LARGE) for tp in offsets if tp not in ok}
        is_txn = producer_id != NO_PRODUCER_ID
        out: list[dict] = []

        def complete(code: int, base_offset: int) -> None:
            if not group.is_(GroupState.DEAD):
                appended = None if base_offset < 0 else base_offset
                for tp, om in ok.items():
                    if code != ErrorCode.NONE:
                        if is_txn:
                            group.fail_pending_txn_offset_commit(producer_id, tp)
                        else:
                            group.fail_pending_offset_write(tp, om)
                    elif is_txn:
                        group.on_txn_offset_commit_append(producer_id, tp, CommitRecord(appended, om))
                    else:
                        group.on_offset_commit_append(tp, CommitRecord(appended, om))
                if is_txn and not group.has_pending_offset_commits_from_producer(producer_id):
                    self.remove_producer_group(producer_id, group.group_id)
            results.update({tp: code for tp in ok})
            out.append(results)
            if callback is not None:
                callback(results)
        if ok:
            if is_txn:
                self.add_producer_group(producer_id, group.group_id)
                group.prepare_txn_offset_commit(producer_id, ok)
            else:
                group.prepare_offset_commit(ok)
            self._append(group.group_id, [(offset_commit_key(group.group_id, t, p), offset_commit_value(om))
                                          for (t, p), om in ok.items()], complete, OFFSET_APPEND_ERRORS,
                         producer_id=producer_id, producer_epoch=producer_epoch)
        else:
            out.append(results)
            if callback is not None:
                callback(results)
        return out[0] if out else None

    def get_offsets(self, group_id: str, partitions: Optional[list], require_stable: bool = False) -> dict:
        """{(topic, partition): OffsetAndMetadata, or None when nothing is committed, or
        ``ErrorCode.UNSTABLE_OFFSET_COMMIT`` when ``require_stable`` and a commit of it is pending}; all committed
        offsets when ``partitions`` is None (Kafka's ``getOffsets``)."""
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return {tp: None for tp in (partitions or [])}
        if partitions is None:
            partitions = list(group.offsets)
        return {tp: ErrorCode.UNSTABLE_OFFSET_COMMIT
                if require_stable and group.has_pending_offset_commits_for_partition(tp) else group.offset(*tp)
                for tp in partitions}

    # ------------------------------------------------------------------------------------------ transactions
    def add_producer_group(self, producer_id: int, group_id: str) -> None:
        self.open_groups_for_producer.setdefault(producer_id, set()).add(group_id)

    def remove_producer_group(self, producer_id: int, group_id: str) -> None:
        groups = self.open_groups_for_producer.get(producer_id)
        if groups is not None:
            groups.discard(group_id)
            if not groups:
                del self.open_groups_for_producer[producer_id]

    def handle_txn_completion(self, producer_id: int, completed_partitions: set[int],
                              is_commit: bool) -> dict[str, list]:
        """The COMMIT (``is_commit``) or ABORT marker of ``producer_id`` is written to these partitions of
        ``__consumer_offsets``: its pending offsets in their groups become committed, or are dropped (Kafka's
        ``handleTxnCompletion``). Returns {group id: partitions whose committed offset changed}."""
        out: dict[str, list] = {}
        for group_id in [g for g in self.open_groups_for_producer.get(producer_id, ())
                         if self.partition_for(g) in completed_partitions]:
            self.remove_producer_group(producer_id, group_id)
            group = self.groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                log.info("group %s moved away after the marker of producer %d was written; its new coordinator "
                         "loads the outcome from the log", group_id, producer_id)
                continue
            out[group_id] = group.complete_pending_txn_offset_commit(producer_id, is_commit)
        return out

    def cleanup_group_metadata(self, groups: Iterable[GroupMetadata],
                               selector: Callable[[GroupMetadata], dict]) -> int:
        """Remove what ``selector(group)`` returns ({tp: offset}) and write tombstones for it; a group left
        empty without offsets becomes Dead and its own record is tombstoned too. Returns offsets removed."""
        removed_total = 0
        for group in list(groups):
            removed = selector(group)
            tombstones = [(offset_commit_key(group.group_id, t, p), None) for t, p in removed]
            if group.is_(GroupState.EMPTY) and not group.has_offsets:
                group.transition_to(GroupState.DEAD, self.time.milliseconds())
            if group.is_(GroupState.DEAD):
                self.groups.pop(group.group_id, None)
                tombstones.append((group_metadata_key(group.group_id), None))
            if tombstones and self.is_group_local(group.group_id):
                def logged(code: int, _offset: int, n: int = len(tombstones), group_id: str = group.group_id) -> None:
                    if code != ErrorCode.NONE:
                        log.warning("failed to write %d tombstones for group %s: %s", n, group_id,
                                    ErrorCode(code).name)
                self._append(group.group_id, tombstones, logged)
            removed_total += len(removed)
        return removed_total

    def expire_offsets(self) -> int:
        """The ``offsets.retention.minutes`` sweep."""
        now = self.time.milliseconds()
        retention_ms = self.config.offsets_retention_minutes * 60_000
        return self.cleanup_group_metadata(
            list(self.groups.values()), lambda g: g.remove_offsets(g.expired_offsets(now, retention_ms)))

    # ------------------------------------------------------------------------------------------ load / unload
    def load_partition(self, partition: int) -> list[GroupMetadata]:
        """Rebuild every group of ``partition`` from the log. Loaded groups are Stable (members) or Empty."""
        loaded = load_records(self.log.read(partition))
        now = self.time.milliseconds()
        out = []
        for group_id in set(loaded.groups) | set(loaded.offsets) | set(loaded.pending_offsets):
            value = loaded.groups.get(group_id)
            group = GroupMetadata(group_id, GroupState.STABLE if value and value.members else GroupState.EMPTY,
                                  now)
            if value is not None:
                group.protocol_type = value.protocol_type or None
                group.generation_id = value.generation
                group.protocol_name = value.protocol
                group.leader_id = value.leader
                group.current_state_timestamp = value.current_state_timestamp if value.current_state_timestamp >= 0 \
                    else now
                for m in value.members:
                    member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                            m.rebalance_timeout, m.session_timeout, group.protocol_type or "",
                                            [(value.protocol or "", m.subscription)])
                    member.assignment = m.assignment
                    group.add(member)
            pending = loaded.pending_offsets.get(group_id, {})
            group.initialize_offsets(loaded.offsets.get(group_id, {}), pending)
            for producer_id in pending:
                self.add_producer_group(producer_id, group_id)
            self.groups[group_id] = group
            out.append(group)
        return out

    def remove_groups_for_partition(self, partition: int) -> list[GroupMetadata]:
        gone = [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]
        for g in gone:
            del self.groups[g.group_id]
            for producer_id in list(self.open_groups_for_producer):
                self.remove_producer_group(producer_id, g.group_id)
        self.owned_partitions.discard(partition)
        self.loading_partitions.discard(partition)
        return gone
