"""Offsets: ListOffsets (time -> offset), OffsetForLeaderEpoch (where an epoch ended), DeleteRecords.

Theory of operation
-------------------
**ListOffsets** turns a timestamp into an offset. Consumers use it to start at the beginning
(``-2`` EARLIEST: the log start offset), at the end (``-1`` LATEST: the high watermark, or the last stable
offset for ``read_committed``), or at a point in time (the first offset whose record timestamp is at least
the one asked for, found through the time index). ``-3`` MAX_TIMESTAMP returns the record with the largest
timestamp (v7+).

**ListOffsets v0** (Kafka 3.9 still serves it; 4.0 does not) is the pre-timestamp API: "up to
``max_num_offsets`` offsets before time T", answered from segment boundaries and file modification times
(:mod:`kafkalab.storage.legacy_offsets`) in the ``old_style_offsets`` array, newest first. Only -1 and -2 of the
special timestamps exist there (others: UNSUPPORTED_VERSION for the partition), there is no duplicate check, and
partitions of topics the principal may not describe come last.

**OffsetForLeaderEpoch** answers "where did leader epoch E end?" -- the start offset of the next epoch, or
the log end offset for the current one (KIP-101, KIP-279). Followers use it after a leader change to find
where their log diverged from the leader's, and truncate there instead of to their high watermark; consumers
use it to detect that their position was truncated away (KIP-320). v0 answers only the end offset, v1 adds
the epoch found; both predate the current-epoch fencing (v2) and the replica id (v3).

**DeleteRecords** moves a partition's log start offset forward (``-1`` = the high watermark): records below
it can no longer be read, and whole segments below it are removed by the next retention check.

**Authorization**: ListOffsets needs DESCRIBE on the topic, DeleteRecords DELETE (TOPIC_AUTHORIZATION_FAILED per
partition); OffsetForLeaderEpoch CLUSTER_ACTION on the cluster (a follower's principal: every topic, denial not
logged) or else DESCRIBE per topic (a consumer, KIP-320), whatever replica id the request carries. It is answered
by the leader only (NOT_LEADER_OR_FOLLOWER elsewhere), debugging replica id -2 included, as Kafka 3.9 and 4.x
(``ReplicaManager.lastOffsetForLeaderEpoch`` passes ``fetchOnlyFromLeader = true``).

Mirrors: ``KafkaApis.handleListOffsetRequest``, ``handleOffsetForLeaderEpochRequest``,
``handleDeleteRecordsRequest``; ``Partition.fetchOffsetForTimestamp``, ``lastOffsetForLeaderEpoch``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import handles
from kafkalab.server.partition import PartitionError
from kafkalab.storage import FetchIsolation

ListOffsetsResponse = response_class(ApiKey.LIST_OFFSETS)
EpochResponse = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
DeleteRecordsResponse = response_class(ApiKey.DELETE_RECORDS)


def _list_offsets_error(request, code, message):
    R = ListOffsetsResponse
    return R(topics=tuple(R.ListOffsetsTopicResponse(name=t.name, partitions=tuple(
        R.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in request.body.topics))


@handles(ApiKey.LIST_OFFSETS, versions=(0, 9), error_response=_list_offsets_error)
def handle_list_offsets(broker, request):
    body = request.body
    R = ListOffsetsResponse
    if request.context.api_version == 0:
        return _list_offsets_v0(broker, request)
    # only a client's request (replica_id -1) has an isolation level; brokers and debugging tools (-2) get the
    # log end offset, as Kafka's handler passes no isolation level for them
    isolation = (FetchIsolation.of_request(body.replica_id, body.isolation_level) if body.replica_id == -1
                 else FetchIsolation.LOG_END)
    rm = broker.replica_manager
    seen = set()
    topics = []
    denied = broker.auth.denied(request.context, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                [t.name for t in body.topics])
    for t in body.topics:
        parts = []
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if t.name in denied:
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if key in seen:
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=ErrorCode.INVALID_REQUEST))
                continue
            seen.add(key)
            try:
                partition = rm.partition_or_error(t.name, p.partition_index)
                found = partition.fetch_offset_for_timestamp(
                    p.timestamp, isolation=isolation, current_leader_epoch=p.current_leader_epoch,
                    fetch_only_from_leader=body.replica_id != -2)
                if found is None:
                    parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                                error_code=ErrorCode.NONE, timestamp=-1, offset=-1))
                else:
                    ts, offset, epoch = found
                    parts.append(R.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=ErrorCode.NONE, timestamp=ts, offset=offset,
                        leader_epoch=epoch))
            except PartitionError as e:
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=e.error_code))
        topics.append(R.ListOffsetsTopicResponse(name=t.name, partitions=tuple(parts)))
    return R(throttle_time_ms=0, topics=tuple(topics))


def _list_offsets_v0(broker, request):
    """Kafka 3.9's ``handleListOffsetRequestV0``."""
    body = request.body
    R = ListOffsetsResponse
    denied = broker.auth.denied(request.context, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                [t.name for t in body.topics])
    topics = []
    for t in body.topics:
        if t.name in denied:
            continue
        parts = []
        for p in t.partitions:
            if p.timestamp < -2:   # only LATEST (-1) and EARLIEST (-2) existed in v0
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=ErrorCode.UNSUPPORTED_VERSION))
                continue
            try:
                partition = broker.replica_manager.partition_or_error(t.name, p.partition_index)
                offsets = partition.legacy_fetch_offsets_for_timestamp(
                    p.timestamp, p.max_num_offsets, is_from_consumer=body.replica_id == -1,
                    fetch_only_from_leader=body.replica_id != -2)
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=ErrorCode.NONE,
                                                            old_style_offsets=tuple(offsets)))
            except ApiException as e:
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=e.error_code))
            except Exception:     # as Kafka: this partition fails, the others are answered
                parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                            error_code=ErrorCode.UNKNOWN_SERVER_ERROR))
        topics.append(R.ListOffsetsTopicResponse(name=t.name, partitions=tuple(parts)))
    topics += [R.ListOffsetsTopicResponse(name=t.name, partitions=tuple(
        R.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                       error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions))
        for t in body.topics if t.name in denied]
    return R(throttle_time_ms=0, topics=tuple(topics))


def _epoch_error(request, code, message):
    R = EpochResponse
    return R(topics=tuple(R.OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(
        R.EpochEndOffset(partition=p.partition, error_code=code) for p in t.partitions))
        for t in request.body.topics))


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, versions=(0, 4), error_response=_epoch_error)
def handle_offset_for_leader_epoch(broker, request):
    body = request.body
    R = EpochResponse
    if broker.auth.authorize_cluster(request.context, AclOperation.CLUSTER_ACTION, log_if_denied=False):
        denied = set()
    else:
        denied = broker.auth.denied(request.context, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                    [t.topic for t in body.topics])
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            if t.topic in denied:
                parts.append(R.EpochEndOffset(partition=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                partition = broker.replica_manager.partition_or_error(t.topic, p.partition)
                epoch, end = partition.last_offset_for_leader_epoch(
                    p.current_leader_epoch, p.leader_epoch, fetch_only_from_leader=True)
                parts.append(R.EpochEndOffset(partition=p.partition, error_code=ErrorCode.NONE, leader_epoch=epoch,
                                              end_offset=end))
            except PartitionError as e:
                parts.append(R.EpochEndOffset(partition=p.partition, error_code=e.error_code))
        topics.append(R.OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(parts)))
    return R(throttle_time_ms=0, topics=tuple(topics))


def _delete_records_error(request, code, message):
    R = DeleteRecordsResponse
    return R(topics=tuple(R.DeleteRecordsTopicResult(name=t.name, partitions=tuple(
        R.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=code)
        for p in t.partitions)) for t in request.body.topics))


@handles(ApiKey.DELETE_RECORDS, versions=(0, 2), error_response=_delete_records_error)
def handle_delete_records(broker, request):
    R = DeleteRecordsResponse
    topics = []
    denied = broker.auth.denied(request.context, AclOperation.DELETE, ResourceType.TOPIC,
                                [t.name for t in request.body.topics])
    for t in request.body.topics:
        parts = []
        for p in t.partitions:
            if t.name in denied:
                parts.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                partition = broker.replica_manager.partition_or_error(t.name, p.partition_index)
                low = partition.delete_records_on_leader(p.offset)
                parts.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=low,
                                                            error_code=ErrorCode.NONE))
            except ApiException as e:  # a PartitionError, or a storage error with its Kafka error code
                parts.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                            error_code=e.error_code))
            except Exception:  # any other failure: UNKNOWN_SERVER_ERROR
                parts.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                            error_code=ErrorCode.UNKNOWN_SERVER_ERROR))
        topics.append(R.DeleteRecordsTopicResult(name=t.name, partitions=tuple(parts)))
    return R(throttle_time_ms=0, topics=tuple(topics))
