"""What the transaction coordinator writes to ``__transaction_state``, byte for byte, and how it reads it back.

Theory of operation
-------------------
The coordinator keeps no files of its own: every state change of a transactional id is a record in its
partition of ``__transaction_state`` (a compacted topic), and a broker that becomes leader of that partition
rebuilds the state by reading it from the start (:func:`load_transactions`). The last record per key wins; a
record with a null value (a *tombstone*) means the id expired and is forgotten.

* **Key** (``TransactionLogKey`` v0): int16 version 0, then ``TransactionalId`` as a classic string (int16
  length, UTF-8). A key of another version is skipped with a warning, as Kafka does.
* **Value** (``TransactionLogValue``): int16 version, then ``ProducerId`` int64, ``ProducerEpoch`` int16,
  ``TransactionTimeoutMs`` int32, ``TransactionStatus`` int8 (the state's id), ``TransactionPartitions`` (a
  nullable array of {``Topic`` string, ``PartitionIds`` [int32]}: null in Empty, empty in Complete*, grouped by
  topic otherwise), ``TransactionLastUpdateTimestampMs`` int64, ``TransactionStartTimestampMs`` int64 (-1 in
  Empty). Kafka 3.x writes **v0** (classic encoding) as long as the ``transaction.version`` feature is 0, which
  it always is with ZooKeeper; v1 is the flexible form of 4.x, with the tagged ``PreviousProducerId`` (0),
  ``NextProducerId`` (1) and ``ClientTransactionVersion`` (2). kafkalab writes v0 and reads both, with the
schemas generated from Kafka's ``TransactionLogKey.json`` / ``TransactionLogValue.json``
(:mod:`kafkalab.protocol.messages.coordinator_records`) and the protocol codec, the one codec of these records
(``kafkalab dump-log --transaction-log-decoder`` reads them with it too).

The previous producer id and epoch are *not* in v0: after a load they are -1 again, so a KIP-360 retry that
spans a coordinator move fails, as in Kafka.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionLog.scala`` (``keyToBytes``,
``valueToBytes``, ``readTxnRecordKey``, ``readTxnRecordValue``) and ``TransactionStateManager``'s load loop;
message definitions ``TransactionLogKey.json`` and ``TransactionLogValue.json``.
"""
from __future__ import annotations

import logging
from typing import Iterable, NamedTuple, Optional

from kafkalab.protocol import DecodeError, codec
from kafkalab.protocol.messages.coordinator_records import TRANSACTION_LOG_KEY as _KEY
from kafkalab.protocol.messages.coordinator_records import TRANSACTION_LOG_VALUE as _VALUE
from kafkalab.protocol.primitives import read_fixed, write_fixed

from .state import TransactionState
from .transaction_metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, TxnTransitMetadata

__all__ = ["TransactionLogValue", "key_to_bytes", "value_to_bytes", "read_txn_record_key", "read_txn_record_value",
           "load_transactions", "TRANSACTION_STATE_TOPIC", "KEY_VERSION", "VALUE_VERSION"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionLog")

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0           # what 3.x writes (transaction.version = 0)
_PARTITIONS = _VALUE.body_class.PartitionsSchema
S = TransactionState


class TransactionLogValue(NamedTuple):
    """A decoded value; ``transaction_partitions`` is None or ((topic, (partition, ...)), ...)."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: Optional[tuple]
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


# ---------------------------------------------------------------------------------------------- writing
def key_to_bytes(transactional_id: str) -> bytes:
    return write_fixed("int16", KEY_VERSION) + codec.encode(_KEY, KEY_VERSION, _KEY.body_class(transactional_id=transactional_id))


def _grouped(partitions) -> tuple:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple((t, tuple(ps)) for t, ps in by_topic.items())


def value_to_bytes(transit: TxnTransitMetadata) -> bytes:
    """The v0 value of a transition; Empty must carry no partitions, Complete* none either (Kafka's checks)."""
    state = transit.txn_state
    if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        raise ValueError(f"Transaction state {state} is never written to the log")
    if state == S.EMPTY:
        if transit.topic_partitions:
            raise ValueError(f"Transaction is not expected to have any partitions since its state is {state}: "
                             f"{sorted(transit.topic_partitions)}")
        partitions = None
    elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        partitions = ()
    else:
        partitions = _grouped(transit.topic_partitions)
    return encode_value(TransactionLogValue(transit.producer_id, transit.producer_epoch, transit.txn_timeout_ms,
                                            state.id, partitions, transit.txn_last_update_timestamp,
                                            transit.txn_start_timestamp))


def encode_value(value: TransactionLogValue, version: int = VALUE_VERSION) -> bytes:
    if version not in _VALUE.valid_versions:
        raise ValueError(f"TransactionLogValue has versions 0-1, not {version}")
    partitions = None
    if value.transaction_partitions is not None:
        partitions = tuple(_PARTITIONS(topic=topic, partition_ids=tuple(ids))
                           for topic, ids in value.transaction_partitions)
    body = _VALUE.body_class(
        producer_id=value.producer_id, previous_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id, producer_epoch=value.producer_epoch,
        transaction_timeout_ms=value.transaction_timeout_ms, transaction_status=value.transaction_status,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=value.transaction_last_update_timestamp_ms,
        transaction_start_timestamp_ms=value.transaction_start_timestamp_ms,
        client_transaction_version=value.client_transaction_version)
    return write_fixed("int16", version) + codec.encode(_VALUE, version, body)


# ---------------------------------------------------------------------------------------------- reading
def read_txn_record_key(key: bytes) -> Optional[str]:
    """The transactional id, or None for a key of an unknown version (skipped, as Kafka does)."""
    if key is None:
        raise DecodeError("a __transaction_state record without a key", offset=0)
    version, pos = read_fixed("int16", key, 0)
    if version != KEY_VERSION:
        log.warning("Unknown version %d from the transaction log message key; skipping it", version)
        return None
    body, _ = codec.decode(_KEY, version, key, pos)
    return body.transactional_id


def read_txn_record_value(value: Optional[bytes]) -> Optional[TransactionLogValue]:
    """None for a tombstone; DecodeError for a value of an unknown version or truncated bytes."""
    if value is None:
        return None
    version, pos = read_fixed("int16", value, 0)
    if version not in _VALUE.valid_versions:
        raise DecodeError(f"Unknown version {version} from the transaction log message value", offset=0)
    body, _ = codec.decode(_VALUE, version, value, pos)
    partitions = None
    if body.transaction_partitions is not None:
        partitions = tuple((p.topic, tuple(p.partition_ids)) for p in body.transaction_partitions)
    return TransactionLogValue(body.producer_id, body.producer_epoch, body.transaction_timeout_ms,
                               body.transaction_status, partitions, body.transaction_last_update_timestamp_ms,
                               body.transaction_start_timestamp_ms, body.previous_producer_id,
                               body.next_producer_id, body.client_transaction_version)


def metadata_from_value(transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
    """The cached metadata a loaded value stands for (last producer id and epoch are not persisted: -1)."""
    try:
        state = TransactionState.from_id(value.transaction_status)
    except ValueError as e:
        raise DecodeError(str(e), offset=0) from None
    partitions = {(t, p) for t, ids in (value.transaction_partitions or ()) for p in ids}
    return TransactionMetadata(transactional_id, value.producer_id, NO_PRODUCER_ID, value.producer_epoch,
                               NO_PRODUCER_EPOCH, value.transaction_timeout_ms, state, partitions,
                               value.transaction_start_timestamp_ms, value.transaction_last_update_timestamp_ms)


def load_transactions(batches: Iterable) -> dict[str, TransactionMetadata]:
    """Replay decoded batches of one partition: the last value per transactional id wins, a tombstone removes
    it. Control batches are skipped. A record that cannot be decoded is logged and skipped."""
    loaded: dict[str, TransactionMetadata] = {}
    for batch in batches:
        if batch.is_control_batch:
            continue
        for record in batch.records:
            try:
                transactional_id = read_txn_record_key(record.key)
                if transactional_id is None:
                    continue
                value = read_txn_record_value(record.value)
                if value is None:
                    loaded.pop(transactional_id, None)
                else:
                    loaded[transactional_id] = metadata_from_value(transactional_id, value)
            except DecodeError as e:
                log.error("Skipping an unreadable record of %s: %s", TRANSACTION_STATE_TOPIC, e)
    return loaded
