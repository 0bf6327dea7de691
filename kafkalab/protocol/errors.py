"""Errors: Kafka's error-code table, ``ApiException`` (a code as an exception), and the codec's bad-input errors.

Theory of operation
-------------------
A Kafka response never carries an exception, only an ``int16`` error code, usually one per partition or per
resource, so that one request can partly succeed. The code is part of the protocol: the *number* is fixed
forever, while the name may change (code 6 was ``NOT_LEADER_FOR_PARTITION`` before Kafka 2.7 and is
``NOT_LEADER_OR_FOLLOWER`` since). "Retriable" tells a client whether trying again (usually after refreshing
its metadata) can succeed.

:data:`ERRORS` is the complete table (code, name, retriable, default message) and :class:`ErrorCode` an
``IntEnum`` over it, so ``ErrorCode(35).name == "UNSUPPORTED_VERSION"`` and
``ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable``.

An error that *is* one of these codes is an :class:`ApiException`: ``error_code`` (an :class:`ErrorCode`),
a message (the table's when none is given) and ``retriable`` (from the table). It is the one base of every
error-coded failure in kafkalab -- the log's ``StorageError`` family, the broker's ``PartitionError``, the
clients' :class:`KafkaProtocolError` --, so a broker handler turns any of them into its response with one
``except ApiException as e: ... e.error_code``. A class that always means the same code sets ``error_code``
as a class attribute (as Kafka has one exception class per code).

Separately, bytes that do not decode raise :class:`DecodeError` (a ``ValueError``) naming the field path and
byte offset where decoding stopped; values that cannot be encoded raise :class:`EncodeError`. They are bad
input, not error-coded answers, so neither is an ``ApiException``.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java`` and the exception classes in
``clients/src/main/java/org/apache/kafka/common/errors/`` (``ApiException`` is their base;
``RetriableException`` marks the retriable ones).
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Optional

__all__ = ["ErrorInfo", "ERRORS", "ErrorCode", "error_info", "java_exception_class", "ApiException", "fit_error_message", "DecodeError", "EncodeError",
           "UnsupportedVersionError", "KafkaProtocolError"]


class ErrorInfo(NamedTuple):
    code: int
    name: str
    retriable: bool
    message: str


#: (code, name, retriable, default message) for every error code Kafka defines (Kafka 4.3).
ERRORS: tuple[ErrorInfo, ...] = tuple(ErrorInfo(*row) for row in (
    (-1, 'UNKNOWN_SERVER_ERROR', False, 'The server experienced an unexpected error when processing the request.'),
    (0, 'NONE', False, ''),
    (1, 'OFFSET_OUT_OF_RANGE', False, 'The requested offset is not within the range of offsets maintained by the server.'),
    (2, 'CORRUPT_MESSAGE', True, 'This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.'),
    (3, 'UNKNOWN_TOPIC_OR_PARTITION', True, 'This server does not host this topic-partition.'),
    (4, 'INVALID_FETCH_SIZE', False, 'The requested fetch size is invalid.'),
    (5, 'LEADER_NOT_AVAILABLE', True, 'There is no leader for this topic-partition as we are in the middle of a leadership election.'),
    (6, 'NOT_LEADER_OR_FOLLOWER', True, 'For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.'),
    (7, 'REQUEST_TIMED_OUT', True, 'The request timed out.'),
    (8, 'BROKER_NOT_AVAILABLE', False, 'The broker is not available.'),
    (9, 'REPLICA_NOT_AVAILABLE', True, 'The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.'),
    (10, 'MESSAGE_TOO_LARGE', False, 'The request included a message larger than the max message size the server will accept.'),
    (11, 'STALE_CONTROLLER_EPOCH', False, 'The controller moved to another broker.'),
    (12, 'OFFSET_METADATA_TOO_LARGE', False, 'The metadata field of the offset request was too large.'),
    (13, 'NETWORK_EXCEPTION', True, 'The server disconnected before a response was received.'),
    (14, 'COORDINATOR_LOAD_IN_PROGRESS', True, "The coordinator is loading and hence can't process requests."),
    (15, 'COORDINATOR_NOT_AVAILABLE', True, 'The coordinator is not available.'),
    (16, 'NOT_COORDINATOR', True, 'This is not the correct coordinator.'),
    (17, 'INVALID_TOPIC_EXCEPTION', False, 'The request attempted to perform an operation on an invalid topic.'),
    (18, 'RECORD_LIST_TOO_LARGE', False, 'The request included message batch larger than the configured segment size on the server.'),
    (19, 'NOT_ENOUGH_REPLICAS', True, 'Messages are rejected since there are fewer in-sync replicas than required.'),
    (20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', True, 'Messages are written to the log, but to fewer in-sync replicas than required.'),
    (21, 'INVALID_REQUIRED_ACKS', False, 'Produce request specified an invalid value for required acks.'),
    (22, 'ILLEGAL_GENERATION', False, 'Specified group generation id is not valid.'),
    (23, 'INCONSISTENT_GROUP_PROTOCOL', False, "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list."),
    (24, 'INVALID_GROUP_ID', False, 'The configured groupId is invalid.'),
    (25, 'UNKNOWN_MEMBER_ID', False, 'The coordinator is not aware of this member.'),
    (26, 'INVALID_SESSION_TIMEOUT', False, 'The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).'),
    (27, 'REBALANCE_IN_PROGRESS', False, 'The group is rebalancing, so a rejoin is needed.'),
    (28, 'INVALID_COMMIT_OFFSET_SIZE', False, 'The committing offset data size is not valid.'),
    (29, 'TOPIC_AUTHORIZATION_FAILED', False, 'Topic authorization failed.'),
    (30, 'GROUP_AUTHORIZATION_FAILED', False, 'Group authorization failed.'),
    (31, 'CLUSTER_AUTHORIZATION_FAILED', False, 'Cluster authorization failed.'),
    (32, 'INVALID_TIMESTAMP', False, 'The timestamp of the message is out of acceptable range.'),
    (33, 'UNSUPPORTED_SASL_MECHANISM', False, 'The broker does not support the requested SASL mechanism.'),
    (34, 'ILLEGAL_SASL_STATE', False, 'Request is not valid given the current SASL state.'),
    (35, 'UNSUPPORTED_VERSION', False, 'The version of API is not supported.'),
    (36, 'TOPIC_ALREADY_EXISTS', False, 'Topic with this name already exists.'),
    (37, 'INVALID_PARTITIONS', False, 'Number of partitions is below 1.'),
    (38, 'INVALID_REPLICATION_FACTOR', False, 'Replication factor is below 1 or larger than the number of available brokers.'),
    (39, 'INVALID_REPLICA_ASSIGNMENT', False, 'Replica assignment is invalid.'),
    (40, 'INVALID_CONFIG', False, 'Configuration is invalid.'),
    (41, 'NOT_CONTROLLER', True, 'This is not the correct controller for this cluster.'),
    (42, 'INVALID_REQUEST', False, 'This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.'),
    (43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT', False, 'The message format version on the broker does not support the request.'),
    (44, 'POLICY_VIOLATION', False, 'Request parameters do not satisfy the configured policy.'),
    (45, 'OUT_OF_ORDER_SEQUENCE_NUMBER', False, 'The broker received an out of order sequence number.'),
    (46, 'DUPLICATE_SEQUENCE_NUMBER', False, 'The broker received a duplicate sequence number.'),
    (47, 'INVALID_PRODUCER_EPOCH', False, 'Producer attempted to produce with an old epoch.'),
    (48, 'INVALID_TXN_STATE', False, 'The producer attempted a transactional operation in an invalid state.'),
    (49, 'INVALID_PRODUCER_ID_MAPPING', False, 'The producer attempted to use a producer id which is not currently assigned to its transactional id.'),
    (50, 'INVALID_TRANSACTION_TIMEOUT', False, 'The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).'),
    (51, 'CONCURRENT_TRANSACTIONS', True, 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.'),
    (52, 'TRANSACTION_COORDINATOR_FENCED', False, 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.'),
    (53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', False, 'Transactional Id authorization failed.'),
    (54, 'SECURITY_DISABLED', False, 'Security features are disabled.'),
    (55, 'OPERATION_NOT_ATTEMPTED', False, 'The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.'),
    (56, 'KAFKA_STORAGE_ERROR', True, 'Disk error when trying to access log file on the disk.'),
    (57, 'LOG_DIR_NOT_FOUND', False, 'The user-specified log directory is not found in the broker config.'),
    (58, 'SASL_AUTHENTICATION_FAILED', False, 'SASL Authentication failed.'),
    (59, 'UNKNOWN_PRODUCER_ID', False, "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception."),
    (60, 'REASSIGNMENT_IN_PROGRESS', False, 'A partition reassignment is in progress.'),
    (61, 'DELEGATION_TOKEN_AUTH_DISABLED', False, 'Delegation Token feature is not enabled.'),
    (62, 'DELEGATION_TOKEN_NOT_FOUND', False, 'Delegation Token is not found on server.'),
    (63, 'DELEGATION_TOKEN_OWNER_MISMATCH', False, 'Specified Principal is not valid Owner/Renewer.'),
    (64, 'DELEGATION_TOKEN_REQUEST_NOT_ALLOWED', False, 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.'),
    (65, 'DELEGATION_TOKEN_AUTHORIZATION_FAILED', False, 'Delegation Token authorization failed.'),
    (66, 'DELEGATION_TOKEN_EXPIRED', False, 'Delegation Token is expired.'),
    (67, 'INVALID_PRINCIPAL_TYPE', False, 'Supplied principalType is not supported.'),
    (68, 'NON_EMPTY_GROUP', False, 'The group is not empty.'),
    (69, 'GROUP_ID_NOT_FOUND', False, 'The group id does not exist.'),
    (70, 'FETCH_SESSION_ID_NOT_FOUND', True, 'The fetch session ID was not found.'),
    (71, 'INVALID_FETCH_SESSION_EPOCH', True, 'The fetch session epoch is invalid.'),
    (72, 'LISTENER_NOT_FOUND', True, 'There is no listener on the leader broker that matches the listener on which metadata request was processed.'),
    (73, 'TOPIC_DELETION_DISABLED', False, 'Topic deletion is disabled.'),
    (74, 'FENCED_LEADER_EPOCH', True, 'The leader epoch in the request is older than the epoch on the broker.'),
    (75, 'UNKNOWN_LEADER_EPOCH', True, 'The leader epoch in the request is newer than the epoch on the broker.'),
    (76, 'UNSUPPORTED_COMPRESSION_TYPE', False, 'The requesting client does not support the compression type of given partition.'),
    (77, 'STALE_BROKER_EPOCH', False, 'Broker epoch has changed.'),
    (78, 'OFFSET_NOT_AVAILABLE', True, 'The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.'),
    (79, 'MEMBER_ID_REQUIRED', False, 'The group member needs to have a valid member id before actually entering a consumer group.'),
    (80, 'PREFERRED_LEADER_NOT_AVAILABLE', True, 'The preferred leader was not available.'),
    (81, 'GROUP_MAX_SIZE_REACHED', False, 'The consumer group has reached its max size.'),
    (82, 'FENCED_INSTANCE_ID', False, 'The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.'),
    (83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE', True, 'Eligible topic partition leaders are not available.'),
    (84, 'ELECTION_NOT_NEEDED', True, 'Leader election not needed for topic partition.'),
    (85, 'NO_REASSIGNMENT_IN_PROGRESS', False, 'No partition reassignment is in progress.'),
    (86, 'GROUP_SUBSCRIBED_TO_TOPIC', False, 'Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.'),
    (87, 'INVALID_RECORD', False, 'This record has failed the validation on broker and hence will be rejected.'),
    (88, 'UNSTABLE_OFFSET_COMMIT', True, 'There are unstable offsets that need to be cleared.'),
    (89, 'THROTTLING_QUOTA_EXCEEDED', True, 'The throttling quota has been exceeded.'),
    (90, 'PRODUCER_FENCED', False, 'There is a newer producer with the same transactionalId which fences the current one.'),
    (91, 'RESOURCE_NOT_FOUND', False, 'A request illegally referred to a resource that does not exist.'),
    (92, 'DUPLICATE_RESOURCE', False, 'A request illegally referred to the same resource twice.'),
    (93, 'UNACCEPTABLE_CREDENTIAL', False, 'Requested credential would not meet criteria for acceptability.'),
    (94, 'INCONSISTENT_VOTER_SET', False, 'Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.'),
    (95, 'INVALID_UPDATE_VERSION', False, 'The given update version was invalid.'),
    (96, 'FEATURE_UPDATE_FAILED', False, 'Unable to update finalized features due to an unexpected server error.'),
    (97, 'PRINCIPAL_DESERIALIZATION_FAILURE', False, 'Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.'),
    (98, 'SNAPSHOT_NOT_FOUND', False, 'Requested snapshot was not found.'),
    (99, 'POSITION_OUT_OF_RANGE', False, 'Requested position is not greater than or equal to zero, and less than the size of the snapshot.'),
    (100, 'UNKNOWN_TOPIC_ID', True, 'This server does not host this topic ID.'),
    (101, 'DUPLICATE_BROKER_REGISTRATION', False, 'This broker ID is already in use.'),
    (102, 'BROKER_ID_NOT_REGISTERED', False, 'The given broker ID was not registered.'),
    (103, 'INCONSISTENT_TOPIC_ID', True, "The log's topic ID did not match the topic ID in the request."),
    (104, 'INCONSISTENT_CLUSTER_ID', False, 'The clusterId in the request does not match that found on the server.'),
    (105, 'TRANSACTIONAL_ID_NOT_FOUND', False, 'The transactionalId could not be found.'),
    (106, 'FETCH_SESSION_TOPIC_ID_ERROR', True, 'The fetch session encountered inconsistent topic ID usage.'),
    (107, 'INELIGIBLE_REPLICA', False, 'The new ISR contains at least one ineligible replica.'),
    (108, 'NEW_LEADER_ELECTED', False, 'The AlterPartition request successfully updated the partition state but the leader has changed.'),
    (109, 'OFFSET_MOVED_TO_TIERED_STORAGE', False, 'The requested offset is moved to tiered storage.'),
    (110, 'FENCED_MEMBER_EPOCH', False, 'The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.'),
    (111, 'UNRELEASED_INSTANCE_ID', False, 'The instance ID is still used by another member in the consumer group. That member must leave first.'),
    (112, 'UNSUPPORTED_ASSIGNOR', False, 'The assignor or its version range is not supported by the consumer group.'),
    (113, 'STALE_MEMBER_EPOCH', False, 'The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.'),
    (114, 'MISMATCHED_ENDPOINT_TYPE', False, 'The request was sent to an endpoint of the wrong type.'),
    (115, 'UNSUPPORTED_ENDPOINT_TYPE', False, 'This endpoint type is not supported yet.'),
    (116, 'UNKNOWN_CONTROLLER_ID', False, 'This controller ID is not known.'),
    (117, 'UNKNOWN_SUBSCRIPTION_ID', False, 'Client sent a push telemetry request with an invalid or outdated subscription ID.'),
    (118, 'TELEMETRY_TOO_LARGE', False, 'Client sent a push telemetry request larger than the maximum size the broker will accept.'),
    (119, 'INVALID_REGISTRATION', False, 'The controller has considered the broker registration to be invalid.'),
    (120, 'TRANSACTION_ABORTABLE', False, 'The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.'),
    (121, 'INVALID_RECORD_STATE', False, 'The record state is invalid. The acknowledgement of delivery could not be completed.'),
    (122, 'SHARE_SESSION_NOT_FOUND', True, 'The share session was not found.'),
    (123, 'INVALID_SHARE_SESSION_EPOCH', True, 'The share session epoch is invalid.'),
    (124, 'FENCED_STATE_EPOCH', False, 'The share coordinator rejected the request because the share-group state epoch did not match.'),
    (125, 'INVALID_VOTER_KEY', False, "The voter key doesn't match the receiving replica's key."),
    (126, 'DUPLICATE_VOTER', False, 'The voter is already part of the set of voters.'),
    (127, 'VOTER_NOT_FOUND', False, 'The voter is not part of the set of voters.'),
    (128, 'INVALID_REGULAR_EXPRESSION', False, 'The regular expression is not valid.'),
    (129, 'REBOOTSTRAP_REQUIRED', False, 'Client metadata is stale. The client should rebootstrap to obtain new metadata.'),
    (130, 'STREAMS_INVALID_TOPOLOGY', False, 'The supplied topology is invalid.'),
    (131, 'STREAMS_INVALID_TOPOLOGY_EPOCH', False, 'The supplied topology epoch is invalid.'),
    (132, 'STREAMS_TOPOLOGY_FENCED', False, 'The supplied topology epoch is outdated.'),
    (133, 'SHARE_SESSION_LIMIT_REACHED', True, 'The limit of share sessions has been reached.'),
))

_BY_CODE = {e.code: e for e in ERRORS}

#: The Java exception class of each code whose class is not the code's name in CamelCase + ``Exception``
#: (``Errors.java``: ``NON_EMPTY_GROUP`` -> ``GroupNotEmptyException``). All live in
#: ``org.apache.kafka.common.errors`` except where a package is given.
_JAVA_EXCEPTIONS = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException", "CORRUPT_MESSAGE": "CorruptRecordException",
    "REQUEST_TIMED_OUT": "TimeoutException", "MESSAGE_TOO_LARGE": "RecordTooLargeException",
    "STALE_CONTROLLER_EPOCH": "ControllerMovedException", "OFFSET_METADATA_TOO_LARGE": "OffsetMetadataTooLarge",
    "NETWORK_EXCEPTION": "NetworkException", "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "RECORD_LIST_TOO_LARGE": "RecordBatchTooLargeException", "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
    "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException", "TOPIC_ALREADY_EXISTS": "TopicExistsException",
    "INVALID_CONFIG": "InvalidConfigurationException", "OUT_OF_ORDER_SEQUENCE_NUMBER": "OutOfOrderSequenceException",
    "DUPLICATE_SEQUENCE_NUMBER": "DuplicateSequenceException", "INVALID_PRODUCER_ID_MAPPING": "InvalidPidMappingException",
    "INVALID_TRANSACTION_TIMEOUT": "InvalidTxnTimeoutException",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException",
    "KAFKA_STORAGE_ERROR": "KafkaStorageException", "SASL_AUTHENTICATION_FAILED": "SaslAuthenticationException",
    "DELEGATION_TOKEN_AUTH_DISABLED": "DelegationTokenDisabledException",
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED": "UnsupportedByAuthenticationException",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": "DelegationTokenAuthorizationException",
    "NON_EMPTY_GROUP": "GroupNotEmptyException", "PRINCIPAL_DESERIALIZATION_FAILURE": "PrincipalDeserializationException",
    "SNAPSHOT_NOT_FOUND": "PositionOutOfRangeException", "FETCH_SESSION_TOPIC_ID_ERROR": "FetchSessionTopicIdException",
    "INVALID_REGULAR_EXPRESSION": "InvalidRegularExpression",
    "INVALID_RECORD": "org.apache.kafka.common.InvalidRecordException",
}


def java_exception_class(code: int) -> Optional[str]:
    """The fully qualified Java exception class Kafka's clients raise for ``code`` (what a Kafka tool prints),
    ``None`` for ``NONE``: ``java_exception_class(69)`` -> ``org.apache.kafka.common.errors.GroupIdNotFoundException``."""
    name = error_info(code).name
    if name == "NONE":
        return None
    simple = _JAVA_EXCEPTIONS.get(name) or "".join(w.capitalize() for w in name.split("_")) + "Exception"
    return simple if "." in simple else f"org.apache.kafka.common.errors.{simple}"


class ErrorCode(enum.IntEnum):
    """Kafka's error codes by name: ``ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3``."""

    _ignore_ = ["_e"]
    for _e in ERRORS:
        locals()[_e.name] = _e.code

    @property
    def retriable(self) -> bool:
        return _BY_CODE[self.value].retriable

    @property
    def message(self) -> str:
        return _BY_CODE[self.value].message

    @classmethod
    def _missing_(cls, value):
        return None


def error_info(code: int) -> ErrorInfo:
    """The table row for ``code``. A code this table does not know gets a placeholder row that names it
    (Kafka's Java client logs "Unexpected error code" and treats such a code as UNKNOWN_SERVER_ERROR)."""
    info = _BY_CODE.get(code)
    if info is None:
        return ErrorInfo(code, f"UNKNOWN_ERROR_CODE_{code}", False, f"Unexpected error code: {code}.")
    return info


class DecodeError(ValueError):
    """Bytes that are not a valid encoding. ``path`` names the field (``topics[0].partitions[2].index``),
    ``offset`` the byte position in the frame where decoding stopped, ``rows`` the fields decoded before it
    (for the annotated hex dump)."""

    def __init__(self, reason: str, *, path: str = "", offset: Optional[int] = None, rows=None):
        self.reason = reason
        self.path = path
        self.offset = offset
        self.rows = rows
        super().__init__(reason)

    def __str__(self) -> str:
        where = []
        if self.path:
            where.append(f"field {self.path}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def located(self, path: str, base: int = 0) -> "DecodeError":
        """This error with a path and an offset shifted by ``base`` (errors bubble up from nested readers)."""
        if not self.path:
            self.path = path
        if self.offset is not None:
            self.offset += base
        return self


class UnsupportedVersionError(DecodeError):
    """A request whose API key is known but whose version is not (Kafka's ``UnsupportedVersionException``).

    ``header`` holds the request header when it could be decoded, so a broker can still answer an
    ApiVersions request of a too-new version with the v0-format UNSUPPORTED_VERSION reply.
    """

    def __init__(self, reason: str, *, api_key: int, api_version: int, header=None, offset: int = 2):
        super().__init__(reason, path="header.request_api_version", offset=offset)
        self.api_key = api_key
        self.api_version = api_version
        self.header = header


class EncodeError(ValueError):
    """A value that cannot be written at the requested version (wrong type, out of range, unsupported field)."""


#: The most UTF-8 bytes a Kafka STRING carries (an int16 length, compact strings included): an error message goes
#: into a response's ``error_message`` and must fit, even one quoting a 32,767-character name from the request.
MAX_MESSAGE_BYTES = 0x7FFF


def fit_error_message(message: Optional[str]) -> Optional[str]:
    """``message`` cut to the bytes a Kafka STRING can carry (ending in ``...`` when cut): for every error message
    that quotes something from a request. None stays None (a null error message)."""
    if message is None:
        return None
    if len(message) * 4 <= MAX_MESSAGE_BYTES:
        return message
    data = message.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_MESSAGE_BYTES:
        return message
    return data[:MAX_MESSAGE_BYTES - 3].decode("utf-8", "ignore") + "..."


class ApiException(Exception):
    """A failure that is one of Kafka's error codes: ``error_code`` (an :class:`ErrorCode`; a plain ``int`` for
    a code the table does not know), ``message`` (the table's default unless given) and ``retriable``.

    ``ApiException(ErrorCode.INVALID_REQUEST, "why")`` raises any code; a subclass that always means one code
    sets ``error_code`` as a class attribute and may take just the message. ``str(e)`` is the message (what a
    broker puts in a response's ``error_message``)."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, error_code: Optional[int] = None, message: Optional[str] = None):
        if error_code is not None:
            self.error_code = _as_error_code(error_code)
        self.message = fit_error_message(message or error_info(self.error_code).message)
        super().__init__(self.message)

    @property
    def info(self) -> ErrorInfo:
        """The table row of ``error_code``: name, retriable, default message."""
        return error_info(self.error_code)

    @property
    def retriable(self) -> bool:
        """Can trying again (usually after a metadata refresh) succeed? Kafka's ``RetriableException``."""
        return self.info.retriable


def _as_error_code(code: int):
    try:
        return ErrorCode(code)
    except ValueError:  # a code this table does not know: keep the number
        return int(code)


class KafkaProtocolError(ApiException):
    """An error code returned by a broker, as the exception a client raises. ``str(e)`` names the code:
    ``[Error 35] UNSUPPORTED_VERSION: <message>``."""

    def __init__(self, error_code: int, message: Optional[str] = None):
        super().__init__(error_code, message)

    def __str__(self) -> str:
        return f"[Error {int(self.error_code)}] {self.info.name}: {self.message}"
