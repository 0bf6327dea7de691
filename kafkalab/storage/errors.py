"""Errors the log raises, each carrying the Kafka error code a broker puts in its response.

Theory of operation
-------------------
A broker answers a failed append or read with an ``int16`` error code per partition (see
:mod:`kafkalab.protocol.errors`), and, for Produce v8+, an ``error_message`` and per-record ``record_errors``.
The log layer therefore raises one family of exceptions, :class:`StorageError`, and every member knows its
``error_code`` (an :class:`~kafkalab.protocol.errors.ErrorCode`). ``StorageError`` is an
:class:`~kafkalab.protocol.errors.ApiException`, so the broker's handler needs exactly one
``except ApiException as e`` to build its response: ``e.error_code``, ``str(e)`` (Kafka's message) and, for a
``StorageError``, ``e.record_errors``.

The subclasses are named after the Java exceptions Kafka throws at the same places, so a learner can grep
Kafka's sources for them::

    CorruptRecordError          CORRUPT_MESSAGE (2)          bad CRC, impossible batch length
    RecordTooLargeError         MESSAGE_TOO_LARGE (10)       batch > max.message.bytes
    RecordBatchTooLargeError    RECORD_LIST_TOO_LARGE (18)   batch > segment.bytes
    InvalidRecordError          INVALID_RECORD (87)          base offset != 0, count mismatch, control batch
                                                             from a client, keyless record on a compacted topic
    InvalidTimestampError       INVALID_TIMESTAMP (32)       outside message.timestamp.before/after.max.ms
    OffsetOutOfRangeError       OFFSET_OUT_OF_RANGE (1)      read below the log start or past the end
    OutOfOrderSequenceError     OUT_OF_ORDER_SEQUENCE_NUMBER (45)
    InvalidProducerEpochError   INVALID_PRODUCER_EPOCH (47)
    InvalidTxnStateError        INVALID_TXN_STATE (48)
    TransactionCoordinatorFencedError  TRANSACTION_COORDINATOR_FENCED (52)  a marker from a zombie coordinator
    KafkaStorageError           KAFKA_STORAGE_ERROR (56)     I/O failure, closed log
    InvalidConfigurationError   INVALID_CONFIG (40)          a topic or broker config value
    InconsistentTopicIdError    INCONSISTENT_TOPIC_ID (103)
    InconsistentClusterIdError  INCONSISTENT_CLUSTER_ID (104)

A retried batch that the idempotent producer state recognises is *not* an error: the append returns the
original offsets with ``LogAppendInfo.duplicate`` set (Kafka answers such a retry with NONE).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/errors/`` (``CorruptRecordException``,
``RecordTooLargeException``, ``RecordBatchTooLargeException``, ``InvalidRecordException``, ...) and
``storage/src/main/java/org/apache/kafka/storage/internals/log/RecordValidationException.java``.
"""
from __future__ import annotations

from typing import Sequence

from kafkalab.protocol.errors import ApiException, ErrorCode

__all__ = ["raise_record_errors", "StorageError", "CorruptRecordError", "RecordTooLargeError", "RecordBatchTooLargeError",
           "InvalidRecordError", "InvalidTimestampError", "OffsetOutOfRangeError", "OutOfOrderSequenceError",
           "InvalidProducerEpochError", "InvalidTxnStateError", "TransactionCoordinatorFencedError", "KafkaStorageError", "InvalidConfigurationError",
           "InconsistentTopicIdError", "InconsistentClusterIdError", "InconsistentBrokerIdError",
           "UnexpectedAppendOffsetError", "OffsetsOutOfOrderError", "CorruptIndexError", "CorruptSnapshotError",
           "RecordError"]


class RecordError(tuple):
    """One rejected record: ``(batch_index, message)``, as ProduceResponse v8+ ``record_errors`` lists them."""

    __slots__ = ()

    def __new__(cls, batch_index: int, message: str):
        return tuple.__new__(cls, (batch_index, message))

    @property
    def batch_index(self) -> int:
        return self[0]

    @property
    def message(self) -> str:
        return self[1]

    def __repr__(self) -> str:  # the shape Kafka prints in its aggregated message
        return f"RecordError(batchIndex={self[0]}, message='{self[1]}')"


class StorageError(ApiException):
    """Base of every error the log layer raises on purpose. ``error_code`` (a class attribute of each subclass;
    UNKNOWN_SERVER_ERROR here) is what the broker answers; the constructor takes just the message."""

    def __init__(self, message: str = "", *, record_errors: Sequence[RecordError] = ()):
        super().__init__(None, message or None)
        self.record_errors = tuple(record_errors)


class CorruptRecordError(StorageError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class RecordTooLargeError(StorageError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(StorageError):
    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class InvalidRecordError(StorageError):
    error_code = ErrorCode.INVALID_RECORD


class InvalidTimestampError(StorageError):
    error_code = ErrorCode.INVALID_TIMESTAMP


class OffsetOutOfRangeError(StorageError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class OutOfOrderSequenceError(StorageError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(StorageError):
    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(StorageError):
    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class KafkaStorageError(StorageError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class InvalidConfigurationError(StorageError):
    """A config value that fails its type or validator (Kafka's ``ConfigException`` /
    ``InvalidConfigurationException``); the message uses Kafka's wording ``Invalid value X for configuration
    Y: ...``."""

    error_code = ErrorCode.INVALID_CONFIG


class InconsistentTopicIdError(StorageError):
    error_code = ErrorCode.INCONSISTENT_TOPIC_ID


class InconsistentClusterIdError(StorageError):
    error_code = ErrorCode.INCONSISTENT_CLUSTER_ID


class InconsistentBrokerIdError(StorageError):
    """``meta.properties`` names another broker id (Kafka's ``InconsistentBrokerIdException``, fatal at startup)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose first offset is below the log end offset (Kafka's
    ``UnexpectedAppendOffsetException``; the fetcher truncates and retries)."""

    def __init__(self, message: str, first_offset: int, last_offset: int):
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class OffsetsOutOfOrderError(StorageError):
    """A follower append whose batches do not have increasing offsets (Kafka's ``OffsetsOutOfOrderException``)."""


class CorruptIndexError(StorageError):
    """An index file that fails its sanity check; never reaches a client: the loader rebuilds the index."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptSnapshotError(StorageError):
    """A producer-state snapshot that does not parse or whose CRC does not match; the loader deletes it."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


def raise_record_errors(errors: list) -> None:
    """``[(error class, RecordError), ...]`` found in one batch: raise them as one error, as Kafka's
    ``LogValidator.processRecordErrors`` does (a timestamp error wins; else an invalid record error naming at most
    the first three)."""
    if not errors:
        return
    record_errors = [e for _, e in errors]
    if any(kind is InvalidTimestampError for kind, _ in errors):
        raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp",
                                    record_errors=record_errors)
    raise InvalidRecordError(f"One or more records have been rejected due to {len(record_errors)} record errors in "
                             f"total, and only showing the first three errors at most: {record_errors[:3]}",
                             record_errors=record_errors)
