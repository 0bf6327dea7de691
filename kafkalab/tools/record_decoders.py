"""``dump-log --offsets-decoder`` and ``--transaction-log-decoder``: the coordinators' records as text.

Theory of operation
-------------------
``DumpLogSegments`` prints each record's key and value through a *message parser*; two of them know the
internal topics. Both take a record and give back ``(key text or None, payload text or None)``.

**Offsets** (``__consumer_offsets``). The key's leading int16 is the *record type* and, for the key, also its
version; the value has its own leading version. Type 0 and 1 are ``OffsetCommitKey`` / ``OffsetCommitValue``,
type 2 ``GroupMetadataKey`` / ``GroupMetadataValue`` (types 3-8, KIP-848's consumer-group records, exist in
Kafka 3.9 but kafkalab has no schemas for them: they are reported as errors). Both halves are decoded with the
schemas of :mod:`kafkalab.protocol.messages.coordinator_records` and printed by the generic JSON writer
(:mod:`kafkalab.protocol.json_converter`)::

    key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
    payload: {"version":"3","data":{"offset":5,"leaderEpoch":0,"metadata":"","commitTimestamp":1700000000000}}

A null value is ``payload: <DELETE>``. A group that uses the ``consumer`` protocol type gets each member's
``subscription`` and ``assignment`` bytes replaced by their decoded ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment`` JSON; bytes that do not decode stay base64. An unknown type prints
``key: Unknown record type T at offset O, skipping.``; any other failure ``key: Error at offset O, skipping.
<reason>`` with Kafka's reasons ("Could not read version from key's buffer.", "Could not read record with
version V from value's buffer due to: ..."); neither has a payload. Kafka's generated readers do not check the
version of a top-level message, so a version above (below) the schema's range reads and prints as the highest
(lowest) one, under its own number; kafkalab does the same.

**Transactions** (``__transaction_state``), printed as ``TransactionLog.formatRecordKeyAndValue`` does::

    key: transaction_metadata::transactionalId=tx payload: producerId:1000,producerEpoch:0,state=Ongoing,
    partitions=[t-0,t-1],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000

A key of another version prints ``key: unknown::version=V`` and no payload; a null value ``<DELETE>``.
``partitions`` is a Scala ``mutable.HashSet`` of ``TopicPartition`` in Kafka, so its order is the set's
iteration order: :func:`scala_hash_set_order` reproduces it from Java's ``hashCode``.

Errors. Where Kafka's tool stops with an exception (a record without a key; in the transaction log a short
key, a value of an unknown version -- "Unknown version V from the transaction log message value" -- or an
unknown state id), the parser raises :class:`RecordDecoderError` with Kafka's message; ``dump-log`` prints the
record's metadata, reports the error on stderr and goes on with the next record.

Mirrors: ``DumpLogSegments.OffsetsMessageParser`` and ``TransactionLogMessageParser``
(``core/src/main/scala/kafka/tools/DumpLogSegments.scala``, Kafka 3.9), ``CoordinatorRecordSerde``,
``TransactionLog.formatRecordKeyAndValue``.
"""
from __future__ import annotations

import struct
from typing import Iterable, Optional

from kafkalab.protocol import codec
from kafkalab.protocol.errors import DecodeError
from kafkalab.protocol.json_converter import Binary, to_json, write
from kafkalab.protocol.messages import coordinator_records as schemas
from kafkalab.protocol.messages.data import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kafkalab.protocol.schema import Message

__all__ = ["RecordDecoderError", "OffsetsMessageParser", "TransactionLogMessageParser", "scala_hash_set_order",
           "TRANSACTION_STATE_NAMES"]

_INT16 = struct.Struct(">h")
CONSUMER_PROTOCOL_TYPE = "consumer"

#: Kafka's ``TransactionState`` names by persisted id (the coordinator's table; ``tools`` may not import it).
TRANSACTION_STATE_NAMES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                           5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}
_EMPTY_STATE = 0

#: Record types of ``__consumer_offsets``: key schema and value schema (``CoordinatorRecordSerde``).
_OFFSETS_RECORD_TYPES = {0: (schemas.OFFSET_COMMIT_KEY, schemas.OFFSET_COMMIT_VALUE),
                         1: (schemas.OFFSET_COMMIT_KEY, schemas.OFFSET_COMMIT_VALUE),
                         2: (schemas.GROUP_METADATA_KEY, schemas.GROUP_METADATA_VALUE)}
#: Types Kafka 3.9 knows (KIP-848) and kafkalab has no schemas for.
_KIP_848_RECORD_TYPES = {3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata",
                         5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
                         7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment"}


class RecordDecoderError(ValueError):
    """A record Kafka's tool cannot print (it stops there with this message); dump-log reports it and goes on."""


class _RecordError(Exception):
    """A failure the offsets parser prints in the key: "Error at offset O, skipping. <message>"."""


class _UnknownRecordType(Exception):
    def __init__(self, record_type: int):
        super().__init__(record_type)
        self.record_type = record_type


def _clamped(message: Message, version: int) -> int:
    """The version Kafka's generated code effectively reads and writes: it does not range-check top-level
    messages, so a version outside the schema's range behaves as the nearest end of it."""
    return min(max(version, message.valid_versions.lo), message.valid_versions.hi)


def _decode(message: Message, version: int, data: bytes, pos: int):
    body, _ = codec.decode(message, _clamped(message, version), data, pos)
    return body


def _json(message: Message, body, version: int) -> dict:
    return write(message, body, _clamped(message, version))


# ---------------------------------------------------------------------------------------------- __consumer_offsets
class OffsetsMessageParser:
    """``--offsets-decoder``: a ``__consumer_offsets`` record as ``(key JSON, value JSON or <DELETE>)``."""

    def parse(self, record) -> tuple[Optional[str], Optional[str]]:
        if record.key is None:
            raise RecordDecoderError(f"Failed to decode message at offset {record.offset} using offset topic "
                                     "decoder (message had a missing key)")
        try:
            record_type, key_json, value = self._deserialize(bytes(record.key),
                                                             None if record.value is None else bytes(record.value))
        except _UnknownRecordType as e:
            return f"Unknown record type {e.record_type} at offset {record.offset}, skipping.", None
        except _RecordError as e:
            return f"Error at offset {record.offset}, skipping. {e}", None
        key_text = to_json({"type": str(record_type), "data": key_json})
        if value is None:
            return key_text, "<DELETE>"
        value_version, value_json = value
        return key_text, to_json({"version": str(value_version), "data": value_json})

    def _deserialize(self, key: bytes, value: Optional[bytes]):
        """``CoordinatorRecordSerde.deserialize``, then the JSON of each half."""
        record_type = _read_version(key, "key")
        if record_type in _KIP_848_RECORD_TYPES:
            raise _RecordError(f"kafkalab has no schema for record type {record_type} "
                               f"({_KIP_848_RECORD_TYPES[record_type]}Key, a KIP-848 consumer group record).")
        if record_type not in _OFFSETS_RECORD_TYPES:
            raise _UnknownRecordType(record_type)
        key_schema, value_schema = _OFFSETS_RECORD_TYPES[record_type]
        key_body = _read_message(key_schema, key, record_type, "key")
        key_json = _json(key_schema, key_body, record_type)
        if value is None:
            return record_type, key_json, None
        value_version = _read_version(value, "value")
        value_body = _read_message(value_schema, value, value_version, "value")
        value_json = _json(value_schema, value_body, value_version)
        if value_schema is schemas.GROUP_METADATA_VALUE:
            _decode_consumer_protocol(value_json)
        return record_type, key_json, (value_version, value_json)


def _read_version(data: bytes, name: str) -> int:
    if len(data) < 2:
        raise _RecordError(f"Could not read version from {name}'s buffer.")
    return _INT16.unpack_from(data, 0)[0]


def _read_message(message: Message, data: bytes, version: int, name: str):
    try:
        return _decode(message, version, data, 2)
    except DecodeError as e:
        raise _RecordError(f"Could not read record with version {version} from {name}'s buffer due to: {e}.") from None


def _decode_consumer_protocol(group_json: dict) -> None:
    """``prepareGroupMetadataValue``: a consumer group's member bytes replaced by their JSON, where they decode."""
    if group_json.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    for member in group_json.get("members") or ():
        for field, schema in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                              ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
            data = member.get(field)
            if not isinstance(data, Binary) or len(data) < 2:
                continue                           # Kafka: the read fails and the bytes stay as they are
            version = _INT16.unpack_from(data, 0)[0]
            try:
                member[field] = _json(schema, _decode(schema, version, data, 2), version)
            except (DecodeError, ValueError):
                pass


# ---------------------------------------------------------------------------------------------- __transaction_state
class TransactionLogMessageParser:
    """``--transaction-log-decoder``: ``TransactionLog.formatRecordKeyAndValue``."""

    def parse(self, record) -> tuple[Optional[str], Optional[str]]:
        if record.key is None:
            raise RecordDecoderError(f"The record at offset {record.offset} has no key (Kafka's tool fails with a "
                                     "NullPointerException)")
        key = bytes(record.key)
        if len(key) < 2:
            raise RecordDecoderError(f"The key at offset {record.offset} is too short for its version "
                                     "(Kafka's tool fails with a BufferUnderflowException)")
        key_version = _INT16.unpack_from(key, 0)[0]
        if key_version not in schemas.TRANSACTION_LOG_KEY.valid_versions:
            return f"unknown::version={key_version}", None
        transactional_id = self._decode(schemas.TRANSACTION_LOG_KEY, key_version, key).transactional_id
        key_text = f"transaction_metadata::transactionalId={transactional_id}"
        if record.value is None:
            return key_text, "<DELETE>"
        return key_text, self._value_text(bytes(record.value))

    @staticmethod
    def _decode(message: Message, version: int, data: bytes):
        try:
            body, _ = codec.decode(message, version, data, 2)
        except DecodeError as e:
            raise RecordDecoderError(f"Could not read {message.name} v{version}: {e}") from None
        return body

    def _value_text(self, data: bytes) -> str:
        if len(data) < 2:
            raise RecordDecoderError("The value is too short for its version (Kafka's tool fails with a "
                                     "BufferUnderflowException)")
        version = _INT16.unpack_from(data, 0)[0]
        if version not in schemas.TRANSACTION_LOG_VALUE.valid_versions:
            raise RecordDecoderError(f"Unknown version {version} from the transaction log message value")
        value = self._decode(schemas.TRANSACTION_LOG_VALUE, version, data)
        state = TRANSACTION_STATE_NAMES.get(value.transaction_status)
        if state is None:
            raise RecordDecoderError(f"Unknown transaction state id {value.transaction_status} from the "
                                     "transaction status message")
        groups = []
        if value.transaction_status != _EMPTY_STATE:
            groups = [[(p.topic, pid) for pid in p.partition_ids] for p in value.transaction_partitions or ()]
        partitions = ",".join(f"{topic}-{partition}" for topic, partition in scala_hash_set_order(groups))
        return (f"producerId:{value.producer_id},producerEpoch:{value.producer_epoch},state={state},"
                f"partitions=[{partitions}],txnLastUpdateTimestamp={value.transaction_last_update_timestamp_ms},"
                f"txnTimeoutMs={value.transaction_timeout_ms}")


# ---------------------------------------------------------------------------------------------- Scala's HashSet order
def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` over UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()``."""
    return _int32(31 * _int32(31 + partition) + java_string_hash(topic))


def _table_size_for(capacity: int) -> int:
    n = max(capacity - 1, 4)
    return min((1 << (n.bit_length() - 1)) * 2, 1 << 30)


def scala_hash_set_order(groups: Iterable[Iterable[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` after ``++=`` of each group.

    The set is a table of 16 buckets (doubled once it is three quarters full, or sized up front for a big
    ``++=``); a bucket holds its nodes sorted by the *improved* hash (``h ^ (h >>> 16)``), and iteration walks
    the buckets in order. So the order is: bucket index, then improved hash, then insertion."""
    length, threshold, size = 16, 12, 0
    seen: dict = {}
    for group in groups:
        elements = list(dict.fromkeys(group))
        target = _table_size_for(int((len(elements) + 1) / 0.75))
        if target > length:
            length, threshold = target, int(target * 0.75)
        for element in elements:
            if len(elements) <= 4 and size + 1 >= threshold:    # Set1..Set4 are added one by one (addOne)
                length, threshold = length * 2, int(length * 2 * 0.75)
            if element not in seen:
                h = topic_partition_hash(*element)
                seen[element] = (_int32(h ^ ((h & 0xFFFFFFFF) >> 16)), len(seen))
                size += 1
    mask = length - 1
    return sorted(seen, key=lambda e: (seen[e][0] & mask, seen[e][0], seen[e][1]))
