"""DescribeProducers: what a partition replica remembers about each producer writing to it (KIP-664).

Theory of operation
-------------------
Every replica keeps, per producer id, the state its idempotence and transaction checks need (see
:mod:`kafkalab.storage.producer_state`): the epoch, the last sequence number and timestamp, the epoch of the
transaction coordinator that wrote its last marker, and -- while the producer has a transaction open on this
partition -- the offset where that transaction began (``current_txn_start_offset``, -1 otherwise).

That last field is how a *hanging transaction* is found: a transaction that began long ago, that the
transaction coordinator no longer knows about, holds the last stable offset back and stalls every
read_committed consumer. ``kafka-transactions.sh describe-producers`` (and ``find-hanging``) ask this API,
and the fix is a marker written directly to the partition (WriteTxnMarkers, ``abort``).

Checks per topic, in Kafka's order: a legal topic name (INVALID_TOPIC_EXCEPTION), READ on the topic
(TOPIC_AUTHORIZATION_FAILED), a topic the cluster knows (UNKNOWN_TOPIC_OR_PARTITION); per partition, a replica
on this broker (NOT_LEADER_OR_FOLLOWER otherwise). Leaders and followers both answer: each has its own copy.

Mirrors: ``KafkaApis.handleDescribeProducersRequest``, ``ReplicaManager.activeProducerState``,
``Partition.activeProducerState``, ``UnifiedLog.activeProducers``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.admin_manager import validate_topic_name
from kafkalab.server.apis.base import handles

__all__ = ["handle_describe_producers"]

Response = response_class(ApiKey.DESCRIBE_PRODUCERS)
TopicResponse = Response.TopicResponse
PartitionResponse = Response.PartitionResponse
ProducerState = Response.ProducerState


def _error(request, code, message):
    return Response(topics=tuple(TopicResponse(name=t.name, partitions=tuple(
        PartitionResponse(partition_index=p, error_code=code, error_message=message) for p in t.partition_indexes))
        for t in request.body.topics))


@handles(ApiKey.DESCRIBE_PRODUCERS, versions=(0, 0), error_response=_error)
def handle_describe_producers(broker, request):
    topics = []
    for t in request.body.topics:
        error = _topic_error(broker, request, t.name)
        if error is not None:
            parts = [PartitionResponse(partition_index=p, error_code=error.error_code, error_message=error.message)
                     for p in t.partition_indexes]
        else:
            parts = [_active_producer_state(broker, t.name, p) for p in t.partition_indexes]
        topics.append(TopicResponse(name=t.name, partitions=tuple(parts)))
    return Response(throttle_time_ms=0, topics=tuple(topics))


def _topic_error(broker, request, name: str):
    try:
        validate_topic_name(name)
    except ApiException as e:
        return e
    if not broker.auth.authorize(request.context, AclOperation.READ, ResourceType.TOPIC, name):
        return ApiException(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not broker.metadata_cache.contains_topic(name):
        return ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return None


def _active_producer_state(broker, topic: str, index: int):
    try:
        partition = broker.replica_manager.partition_or_error(topic, index)
    except ApiException as e:
        return PartitionResponse(partition_index=index, error_code=e.error_code)
    with partition.lock:
        log = partition.log
        if log is None:
            return PartitionResponse(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        producers = log.producer_state_manager.active_producers()
        states = tuple(ProducerState(
            producer_id=pid, producer_epoch=e.producer_epoch, last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
            for pid, e in producers.items())
    return PartitionResponse(partition_index=index, error_code=ErrorCode.NONE, active_producers=states)
