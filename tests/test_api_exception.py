"""One error type with a Kafka error code: every error-coded failure of every layer is an ApiException."""
from __future__ import annotations

import pytest

from kafkalab import storage
from kafkalab.clients import CommitFailedError, OffsetOutOfRangeError
from kafkalab.clients.admin import AdminError
from kafkalab.clients.errors import KafkaTimeoutError, NetworkException, RequestTimedOut
from kafkalab.protocol import ApiException, ErrorCode, KafkaProtocolError
from kafkalab.server.partition import PartitionError

E = ErrorCode


@pytest.mark.parametrize("cls,code", [
    (storage.errors.CorruptRecordError, E.CORRUPT_MESSAGE),
    (storage.errors.RecordTooLargeError, E.MESSAGE_TOO_LARGE),
    (storage.errors.RecordBatchTooLargeError, E.RECORD_LIST_TOO_LARGE),
    (storage.errors.InvalidRecordError, E.INVALID_RECORD),
    (storage.errors.InvalidTimestampError, E.INVALID_TIMESTAMP),
    (storage.errors.OffsetOutOfRangeError, E.OFFSET_OUT_OF_RANGE),
    (storage.errors.OutOfOrderSequenceError, E.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (storage.errors.InvalidProducerEpochError, E.INVALID_PRODUCER_EPOCH),
    (storage.errors.InvalidTxnStateError, E.INVALID_TXN_STATE),
    (storage.errors.KafkaStorageError, E.KAFKA_STORAGE_ERROR),
    (storage.errors.InvalidConfigurationError, E.INVALID_CONFIG),
    (storage.errors.InconsistentTopicIdError, E.INCONSISTENT_TOPIC_ID),
    (storage.errors.InconsistentClusterIdError, E.INCONSISTENT_CLUSTER_ID),
    (storage.errors.InconsistentBrokerIdError, E.KAFKA_STORAGE_ERROR),
    (storage.errors.OffsetsOutOfOrderError, E.UNKNOWN_SERVER_ERROR),
    (storage.errors.CorruptIndexError, E.KAFKA_STORAGE_ERROR),
    (storage.errors.CorruptSnapshotError, E.KAFKA_STORAGE_ERROR),
])
def test_storage_errors_are_api_exceptions_with_their_code(cls, code):
    assert issubclass(cls, storage.StorageError) and issubclass(cls, ApiException)
    e = cls()
    assert e.error_code is code and e.retriable is code.retriable
    assert str(e) == e.message == code.message           # the table's message by default
    e = cls("Record is corrupt", record_errors=[storage.errors.RecordError(0, "bad")])
    assert str(e) == "Record is corrupt" and e.error_code is code and e.record_errors == ((0, "bad"),)


def test_unexpected_append_offset_keeps_its_offsets():
    e = storage.errors.UnexpectedAppendOffsetError("below the end", 3, 5)
    assert isinstance(e, ApiException) and e.error_code is E.UNKNOWN_SERVER_ERROR
    assert (e.first_offset, e.last_offset, str(e)) == (3, 5, "below the end")


def test_partition_error_is_an_api_exception():
    e = PartitionError(E.FENCED_LEADER_EPOCH)
    assert isinstance(e, ApiException) and e.error_code is E.FENCED_LEADER_EPOCH and e.retriable
    assert str(e) == E.FENCED_LEADER_EPOCH.message
    assert str(PartitionError(E.NOT_ENOUGH_REPLICAS, "ISR too small")) == "ISR too small"


@pytest.mark.parametrize("make,code,retriable", [
    (lambda: NetworkException("connection lost"), E.NETWORK_EXCEPTION, True),
    (lambda: RequestTimedOut("no answer"), E.REQUEST_TIMED_OUT, True),
    (lambda: KafkaTimeoutError("delivery.timeout.ms"), E.REQUEST_TIMED_OUT, False),  # final on the client
    (lambda: CommitFailedError(E.REBALANCE_IN_PROGRESS), E.REBALANCE_IN_PROGRESS, False),
    (lambda: OffsetOutOfRangeError({("t", 0): 7}), E.OFFSET_OUT_OF_RANGE, False),
    (lambda: AdminError("create_topics", {"t": KafkaProtocolError(E.TOPIC_ALREADY_EXISTS)}, {}),
     E.TOPIC_ALREADY_EXISTS, False),
])
def test_client_errors_are_kafka_protocol_errors(make, code, retriable):
    e = make()
    assert isinstance(e, KafkaProtocolError) and isinstance(e, ApiException)
    assert e.error_code is code and e.retriable is retriable
    assert str(e).startswith(f"[Error {int(code)}] {code.name}: ")


def test_a_failed_version_negotiation_is_unsupported_version():
    """Java's UnsupportedVersionException is an ApiException (code 35); the client's negotiation raises it."""
    from kafkalab.clients.api_versions import NodeApiVersions, UnsupportedVersionError
    with pytest.raises(ApiException) as e:
        NodeApiVersions({0: (0, 2)}).latest_usable_version(0)
    assert isinstance(e.value, UnsupportedVersionError)
    assert e.value.error_code is E.UNSUPPORTED_VERSION and not e.value.retriable
    assert "no common version" in str(e.value)
