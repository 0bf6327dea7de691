"""What the group coordinator writes to ``__consumer_offsets``, byte for byte, and how it reads it back.

Theory of operation
-------------------
A group coordinator keeps no state files of its own: everything it must remember goes into its partition of
``__consumer_offsets`` as ordinary records, and after a restart (or when it takes over the partition) it
rebuilds the state by reading the partition from the start. The topic is *compacted*, so only the latest
record per key survives; a record with a null value (a *tombstone*) deletes its key.

Every key and every value starts with an int16 **version**; the key's version says what kind of record it is:

==========  ======================================  =============================================================
key ver.    key fields                              value
==========  ======================================  =============================================================
0 or 1      group, topic, partition                 committed offset (``OffsetCommitValue``): v3 = offset,
            (``OffsetCommitKey``)                   leader_epoch, metadata, commit_timestamp; v1 adds
                                                    expire_timestamp (written only when an old client asked
                                                    for a retention time)
2           group (``GroupMetadataKey``)            the group (``GroupMetadataValue`` v3): protocol_type,
                                                    generation, protocol, leader, current_state_timestamp,
                                                    members [member_id, group_instance_id, client_id,
                                                    client_host, rebalance_timeout, session_timeout,
                                                    subscription, assignment]
==========  ======================================  =============================================================

Strings are int16-length UTF-8, bytes int32-length, arrays int32-counted (versions 4, the first *flexible*
ones, use compact lengths and tagged fields instead; Kafka 3.x writes the non-flexible versions and reads all).
These are Kafka's formats exactly, so ``kafka-console-consumer --formatter
kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter`` reads what kafkalab writes.

The group record is written when a generation's assignment is stored (the leader's SyncGroup) and when the
group becomes empty; the offset records on every OffsetCommit; tombstones when offsets expire
(``offsets.retention.minutes``), are deleted (OffsetDelete) or the group is deleted.

Loading (:func:`load_records`) replays the partition in order: the last value per key wins, a tombstone
removes it. Offsets committed inside a transaction (a transactional batch with the producer id) count only
once the COMMIT marker of that producer follows, and only where they are later in the log than the offset
already committed; an ABORT marker drops them; with no marker yet they are loaded as *pending*.

Mirrors: ``GroupMetadataManager.scala`` (``offsetCommitKey``/``Value``, ``groupMetadataKey``/``Value``,
``readMessageKey``, ``readOffsetMessageValue``, ``readGroupMessageValue``, ``doLoadGroupsAndOffsets``) and the
message definitions ``OffsetCommitKey.json``, ``OffsetCommitValue.json``, ``GroupMetadataKey.json``,
``GroupMetadataValue.json``.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Optional, Union

from kafkalab.coordinator.group.group_metadata import CommitRecord, OffsetAndMetadata
from kafkalab.protocol import DecodeError
from kafkalab.protocol.consumer_protocol import (Assignment, Subscription, decode_assignment, decode_subscription,
                                                 encode_assignment, encode_subscription)
from kafkalab.protocol.primitives import (read_array_length, read_bytes, read_fixed, read_string,
                                          read_unsigned_varint, write_array_length, write_bytes, write_fixed,
                                          write_string)
from kafkalab.records import ControlRecordType, parse_control_record_key

__all__ = ["OffsetKey", "GroupMetadataKey", "MemberRecord", "GroupMetadataValue", "offset_commit_key",
           "offset_commit_value", "group_metadata_key", "group_metadata_value", "read_message_key",
           "read_offset_value", "read_group_value", "load_records", "LoadedPartition",
           "parse_consumer_subscription_topics", "parse_consumer_assignment", "consumer_assignment",
           "consumer_subscription"]


class OffsetKey(NamedTuple):
    version: int
    group: str
    topic: str
    partition: int


class GroupMetadataKey(NamedTuple):
    version: int
    group: str


class UnknownKey(NamedTuple):
    version: int


class MemberRecord(NamedTuple):
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


class GroupMetadataValue(NamedTuple):
    protocol_type: str
    generation: int
    protocol: Optional[str]
    leader: Optional[str]
    current_state_timestamp: int
    members: tuple


# ---------------------------------------------------------------------------------------------- writing
def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return write_fixed("int16", 1) + write_string(group) + write_string(topic) + write_fixed("int32", partition)


def group_metadata_key(group: str) -> bytes:
    return write_fixed("int16", 2) + write_string(group)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """Version 1 when the commit carries an explicit expire timestamp, version 3 otherwise (as Kafka 2.1+)."""
    if om.expire_timestamp >= 0:
        return (write_fixed("int16", 1) + write_fixed("int64", om.offset) + write_string(om.metadata or "") +
                write_fixed("int64", om.commit_timestamp) + write_fixed("int64", om.expire_timestamp))
    return (write_fixed("int16", 3) + write_fixed("int64", om.offset) + write_fixed("int32", om.leader_epoch) +
            write_string(om.metadata or "") + write_fixed("int64", om.commit_timestamp))


def group_metadata_value(value: GroupMetadataValue, version: int = 3) -> bytes:
    """Version 3 (Kafka 2.3+ writes it); 4 is the flexible variant with the same fields."""
    if version not in (3, 4):
        raise ValueError("kafkalab writes GroupMetadataValue v3 or v4")
    c = version >= 4
    tags = b"\x00" if c else b""
    out = [write_fixed("int16", version), write_string(value.protocol_type, compact=c),
           write_fixed("int32", value.generation), write_string(value.protocol, compact=c, nullable=True),
           write_string(value.leader, compact=c, nullable=True), write_fixed("int64", value.current_state_timestamp),
           write_array_length(len(value.members), compact=c)]
    for m in value.members:
        out += [write_string(m.member_id, compact=c), write_string(m.group_instance_id, compact=c, nullable=True),
                write_string(m.client_id, compact=c), write_string(m.client_host, compact=c),
                write_fixed("int32", m.rebalance_timeout), write_fixed("int32", m.session_timeout),
                write_bytes(m.subscription, compact=c), write_bytes(m.assignment, compact=c), tags]
    out.append(tags)
    return b"".join(out)


# ---------------------------------------------------------------------------------------------- reading
def _skip_tags(buf, pos: int) -> int:
    count, pos = read_unsigned_varint(buf, pos)
    for _ in range(count):
        _, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        if size > len(buf) - pos:
            raise DecodeError(f"tagged field of {size} bytes but only {len(buf) - pos} remain", offset=pos)
        pos += size
    return pos


def read_message_key(key: bytes) -> Union[OffsetKey, GroupMetadataKey, UnknownKey]:
    version, pos = read_fixed("int16", key, 0)
    if version in (0, 1):
        group, pos = read_string(key, pos)
        topic, pos = read_string(key, pos)
        partition, pos = read_fixed("int32", key, pos)
        return OffsetKey(version, group, topic, partition)
    if version == 2:
        group, pos = read_string(key, pos)
        return GroupMetadataKey(version, group)
    return UnknownKey(version)


def read_offset_value(value: Optional[bytes]) -> Optional[OffsetAndMetadata]:
    if value is None:
        return None
    version, pos = read_fixed("int16", value, 0)
    if not 0 <= version <= 4:
        raise DecodeError(f"unknown offset message version {version}", offset=0)
    c = version >= 4
    offset, pos = read_fixed("int64", value, pos)
    epoch = -1
    if version >= 3:
        epoch, pos = read_fixed("int32", value, pos)
    metadata, pos = read_string(value, pos, compact=c)
    commit_ts, pos = read_fixed("int64", value, pos)
    expire_ts = -1
    if version == 1:
        expire_ts, pos = read_fixed("int64", value, pos)
    if c:
        _skip_tags(value, pos)
    return OffsetAndMetadata(offset, epoch, metadata, commit_ts, expire_ts)


def read_group_value(value: Optional[bytes]) -> Optional[GroupMetadataValue]:
    if value is None:
        return None
    version, pos = read_fixed("int16", value, 0)
    if not 0 <= version <= 4:
        raise DecodeError(f"unknown group metadata message version {version}", offset=0)
    c = version >= 4
    protocol_type, pos = read_string(value, pos, compact=c)
    generation, pos = read_fixed("int32", value, pos)
    protocol, pos = read_string(value, pos, compact=c, nullable=True)
    leader, pos = read_string(value, pos, compact=c, nullable=True)
    state_ts = -1
    if version >= 2:
        state_ts, pos = read_fixed("int64", value, pos)
    n, pos = read_array_length(value, pos, compact=c)
    members = []
    for _ in range(n):
        member_id, pos = read_string(value, pos, compact=c)
        instance_id = None
        if version >= 3:
            instance_id, pos = read_string(value, pos, compact=c, nullable=True)
        client_id, pos = read_string(value, pos, compact=c)
        client_host, pos = read_string(value, pos, compact=c)
        rebalance_timeout = -1
        if version >= 1:
            rebalance_timeout, pos = read_fixed("int32", value, pos)
        session_timeout, pos = read_fixed("int32", value, pos)
        if version == 0:
            rebalance_timeout = session_timeout
        subscription, pos = read_bytes(value, pos, compact=c)
        assignment, pos = read_bytes(value, pos, compact=c)
        if c:
            pos = _skip_tags(value, pos)
        members.append(MemberRecord(member_id, instance_id, client_id, client_host, rebalance_timeout,
                                    session_timeout, subscription, assignment))
    if c:
        _skip_tags(value, pos)
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))


# ---------------------------------------------------------------------------------------------- loading
class LoadedPartition(NamedTuple):
    groups: dict            # group id -> GroupMetadataValue (the latest)
    offsets: dict           # group id -> {(topic, partition): CommitRecord}
    removed_groups: set     # groups whose latest record is a tombstone
    pending_offsets: dict   # group id -> {producer id: {(topic, partition): CommitRecord}}: open transactions


def load_records(batches: Iterable) -> LoadedPartition:
    """Replay decoded record batches of one ``__consumer_offsets`` partition (oldest first).

    Offset records of a *transactional* batch are held per producer id until that producer's marker: a COMMIT
    makes each the committed offset where it is later in the log than the one loaded so far, an ABORT drops
    them, and without a marker yet they stay pending (the transaction is still open). A tombstone inside a
    transaction only removes that transaction's own pending offset. A record's place in the log is the
    offset of the first record of its batch, as in Kafka."""
    offsets: dict = {}
    pending: dict = {}                     # producer id -> {(group, topic, partition): CommitRecord}
    groups: dict = {}
    removed: set = set()
    for batch in batches:
        if batch.is_control_batch:
            _replay_marker(batch, offsets, pending)
            continue
        batch_offset = None
        for r in batch.records:
            if r.key is None:
                raise DecodeError("group metadata/offset entry key should not be null", offset=r.offset)
            if batch_offset is None:
                batch_offset = r.offset
            key = read_message_key(bytes(r.key))
            value = None if r.value is None else bytes(r.value)
            if isinstance(key, OffsetKey):
                k = (key.group, key.topic, key.partition)
                target = pending.setdefault(batch.producer_id, {}) if batch.is_transactional else offsets
                if value is None:
                    target.pop(k, None)
                else:
                    target[k] = CommitRecord(batch_offset, read_offset_value(value))
            elif isinstance(key, GroupMetadataKey):
                g = read_group_value(value)
                if g is None:
                    groups.pop(key.group, None)
                    removed.add(key.group)
                else:
                    groups[key.group] = g
                    removed.discard(key.group)
    by_group: dict = {}
    for (group, topic, partition), rec in offsets.items():
        by_group.setdefault(group, {})[(topic, partition)] = rec
    pending_by_group: dict = {}
    for producer_id, producer_offsets in pending.items():
        for (group, topic, partition), rec in producer_offsets.items():
            pending_by_group.setdefault(group, {}).setdefault(producer_id, {})[(topic, partition)] = rec
    return LoadedPartition(groups, by_group, removed, pending_by_group)


def _replay_marker(batch, offsets: dict, pending: dict) -> None:
    """A control batch: its producer's pending offsets are committed (COMMIT) or dropped (ABORT, or any other
    control record)."""
    if not batch.records:
        return
    producer_offsets = pending.pop(batch.producer_id, {})
    if parse_control_record_key(batch.records[0].key) != ControlRecordType.COMMIT:
        return
    for k, rec in producer_offsets.items():
        current = offsets.get(k)
        if current is None or current.older_than(rec):
            offsets[k] = rec


# ---------------------------------------------------------------------------------------------- consumer protocol
# The members' subscription and assignment bytes are stored in the group record as they came; the coordinator
# reads only the subscribed topics (OffsetDelete, offset expiry). The codec is kafkalab.protocol.consumer_protocol;
# these helpers speak in {topic: [partitions]} for tests and labs.
def consumer_subscription(topics, user_data: Optional[bytes] = None, version: int = 0) -> bytes:
    """``ConsumerProtocolSubscription`` at ``version`` (topics, user data; the later fields at their defaults)
    -- what a consumer sends as JoinGroup metadata."""
    return encode_subscription(Subscription(list(topics), user_data), version)


def parse_consumer_subscription_topics(metadata: bytes) -> set[str]:
    """The topics of a ``ConsumerProtocolSubscription`` (DecodeError if the bytes are not one)."""
    return set(decode_subscription(metadata).topics)


def consumer_assignment(partitions: dict, user_data: Optional[bytes] = None, version: int = 0) -> bytes:
    """``ConsumerProtocolAssignment`` at ``version``: {topic: [partitions]} -- what the leader sends in SyncGroup."""
    return encode_assignment(Assignment([(t, p) for t, parts in partitions.items() for p in parts], user_data),
                             version)


def parse_consumer_assignment(data: bytes) -> dict[str, list[int]]:
    """{topic: [partitions]} from a ``ConsumerProtocolAssignment`` (empty bytes = nothing assigned)."""
    out: dict = {}
    if data:
        for topic, partition in decode_assignment(data).partitions:
            out.setdefault(topic, []).append(partition)
    return out
