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
The layouts are not written out here: the schemas are generated from Kafka's JSON definitions
(:mod:`kafkalab.protocol.messages.coordinator_records`) and read and written by the protocol codec, the one
codec of these records (``kafkalab dump-log --offsets-decoder`` prints them with it).
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
from kafkalab.protocol import DecodeError, codec
from kafkalab.protocol.consumer_protocol import (Assignment, Subscription, decode_assignment, decode_subscription,
                                                 encode_assignment, encode_subscription)
from kafkalab.protocol.messages import coordinator_records as schemas
from kafkalab.protocol.primitives import read_fixed, write_fixed
from kafkalab.records import ControlRecordType, parse_control_record_key

__all__ = ["OffsetKey", "GroupMetadataKey", "MemberRecord", "GroupMetadataValue", "offset_commit_key",
           "offset_commit_value", "group_metadata_key", "group_metadata_value", "read_message_key",
           "read_offset_value", "read_group_value", "load_records", "LoadedPartition",
           "parse_consumer_subscription_topics", "parse_consumer_assignment", "consumer_assignment",
           "consumer_subscription"]


_MEMBER = schemas.GROUP_METADATA_VALUE.body_class.MemberMetadata


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
def _encode(schema, version: int, **fields) -> bytes:
    return write_fixed("int16", version) + codec.encode(schema, version, schema.body_class(**fields))


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode(schemas.OFFSET_COMMIT_KEY, 1, group=group, topic=topic, partition=partition)


def group_metadata_key(group: str) -> bytes:
    return _encode(schemas.GROUP_METADATA_KEY, 2, group=group)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """Version 1 when the commit carries an explicit expire timestamp, version 3 otherwise (as Kafka 2.1+)."""
    version = 1 if om.expire_timestamp >= 0 else 3
    return _encode(schemas.OFFSET_COMMIT_VALUE, version, offset=om.offset, leader_epoch=om.leader_epoch,
                   metadata=om.metadata or "", commit_timestamp=om.commit_timestamp,
                   expire_timestamp=om.expire_timestamp)


def group_metadata_value(value: GroupMetadataValue, version: int = 3) -> bytes:
    """Version 3 (Kafka 2.3+ writes it); 4 is the flexible variant with the same fields."""
    if version not in (3, 4):
        raise ValueError("kafkalab writes GroupMetadataValue v3 or v4")
    members = tuple(_MEMBER(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout,
                            session_timeout=m.session_timeout, subscription=m.subscription,
                            assignment=m.assignment) for m in value.members)
    return _encode(schemas.GROUP_METADATA_VALUE, version, protocol_type=value.protocol_type,
                   generation=value.generation, protocol=value.protocol, leader=value.leader,
                   current_state_timestamp=value.current_state_timestamp, members=members)


# ---------------------------------------------------------------------------------------------- reading
def read_message_key(key: bytes) -> Union[OffsetKey, GroupMetadataKey, UnknownKey]:
    version, pos = read_fixed("int16", key, 0)
    if version in (0, 1):
        body, _ = codec.decode(schemas.OFFSET_COMMIT_KEY, version, key, pos)
        return OffsetKey(version, body.group, body.topic, body.partition)
    if version == 2:
        body, _ = codec.decode(schemas.GROUP_METADATA_KEY, version, key, pos)
        return GroupMetadataKey(version, body.group)
    return UnknownKey(version)


def read_offset_value(value: Optional[bytes]) -> Optional[OffsetAndMetadata]:
    if value is None:
        return None
    version, pos = read_fixed("int16", value, 0)
    if version not in schemas.OFFSET_COMMIT_VALUE.valid_versions:
        raise DecodeError(f"unknown offset message version {version}", offset=0)
    body, _ = codec.decode(schemas.OFFSET_COMMIT_VALUE, version, value, pos)
    return OffsetAndMetadata(body.offset, body.leader_epoch, body.metadata, body.commit_timestamp,
                             body.expire_timestamp)


def read_group_value(value: Optional[bytes]) -> Optional[GroupMetadataValue]:
    if value is None:
        return None
    version, pos = read_fixed("int16", value, 0)
    if version not in schemas.GROUP_METADATA_VALUE.valid_versions:
        raise DecodeError(f"unknown group metadata message version {version}", offset=0)
    body, _ = codec.decode(schemas.GROUP_METADATA_VALUE, version, value, pos)
    members = tuple(MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 # v0 has no rebalance timeout: Kafka takes the session timeout
                                 m.session_timeout if version == 0 else m.rebalance_timeout,
                                 m.session_timeout, m.subscription, m.assignment) for m in body.members)
    return GroupMetadataValue(body.protocol_type, body.generation, body.protocol, body.leader,
                              body.current_state_timestamp, members)


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
