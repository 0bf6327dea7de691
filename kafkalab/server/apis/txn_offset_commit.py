"""TxnOffsetCommit on the wire: a transactional producer commits a consumer group's offsets in its transaction.

Theory of operation
-------------------
In a consume-process-produce loop the input offsets must be committed *with* the output records, all or
nothing. The producer first sends AddOffsetsToTxn to its transaction coordinator (which adds the group's
``__consumer_offsets`` partition to the transaction), then this request to the **group** coordinator: the
offsets are written to ``__consumer_offsets`` as a transactional batch with the producer id and epoch, and stay
*pending* -- invisible to OffsetFetch -- until the transaction's COMMIT marker reaches that partition (ABORT
drops them). The handler only checks and translates; the group coordinator
(:meth:`~kafkalab.coordinator.group.GroupCoordinator.handle_txn_commit_offsets`) does the rest, and the
answer is sent once the batch is replicated (``acks=all``), without holding a request-handler worker.

Checks, in Kafka's order: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
partition), READ on the group (GROUP_AUTHORIZATION_FAILED), then per topic READ (TOPIC_AUTHORIZATION_FAILED)
and existence (UNKNOWN_TOPIC_OR_PARTITION); the partitions that pass go to the coordinator, which answers
INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, and for v3
requests that name a member UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or ILLEGAL_GENERATION; append errors come
back translated (a stale producer epoch passes through as INVALID_PRODUCER_EPOCH). Before v2, clients could
not retry COORDINATOR_LOAD_IN_PROGRESS, so they get COORDINATOR_NOT_AVAILABLE instead.

Versions 0-3: what librdkafka, kafka-python, aiokafka (0), kafkajs (0-1) and Java 3.x without KIP-890 send.
v3 (KIP-447) adds the generation, member id and group instance id; v4 would allow TRANSACTION_ABORTABLE and
rely on the partition verification of KIP-890, which kafkalab does not do, so it is not advertised.

Mirrors: ``KafkaApis.handleTxnOffsetCommitRequest`` and ``GroupCoordinatorAdapter.commitTransactionalOffsets``.
"""
from __future__ import annotations

import asyncio

from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import Delayed, handles

__all__ = ["handle_txn_offset_commit"]

TxnOffsetCommitResponse = response_class(ApiKey.TXN_OFFSET_COMMIT)
R = TxnOffsetCommitResponse


def _response(request, errors: dict) -> TxnOffsetCommitResponse:
    """Every partition of the request with its error; COORDINATOR_LOAD_IN_PROGRESS -> COORDINATOR_NOT_AVAILABLE
    below v2 (those clients would give up on it: KAFKA-7296)."""
    old = request.context.api_version < 2

    def code(tp) -> int:
        c = int(errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR))
        return int(ErrorCode.COORDINATOR_NOT_AVAILABLE) if old and c == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else c
    return R(throttle_time_ms=0, topics=tuple(
        R.TxnOffsetCommitResponseTopic(name=t.name, partitions=tuple(
            R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                               error_code=code((t.name, p.partition_index)))
            for p in t.partitions)) for t in request.body.topics))


def _error_response(request, code, message):
    return _response(request, {(t.name, p.partition_index): code for t in request.body.topics for p in t.partitions})


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 3), error_response=_error_response)
def handle_txn_offset_commit(broker, request):
    body, version, context = request.body, request.context.api_version, request.context
    auth = broker.auth
    if not auth.authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        return _error_response(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    if not auth.authorize(context, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return _error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    denied = auth.denied(context, AclOperation.READ, ResourceType.TOPIC, [t.name for t in body.topics])
    cache = broker.metadata_cache
    now = broker.time.milliseconds()
    errors: dict = {}
    offsets: dict = {}
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name in denied:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif cache.partition_state(t.name, p.partition_index) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = OffsetAndMetadata(p.committed_offset,
                                                p.committed_leader_epoch if version >= 2 else -1,
                                                p.committed_metadata or "", now)
    if not offsets:
        return _response(request, errors)
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def committed(results: dict) -> None:
        if not fut.done():
            fut.set_result(results)
    broker.group_coordinator.handle_txn_commit_offsets(
        body.group_id, body.producer_id, body.producer_epoch, body.member_id if version >= 3 else "",
        body.group_instance_id if version >= 3 else None, body.generation_id if version >= 3 else -1,
        offsets, committed)

    def respond(results: dict) -> TxnOffsetCommitResponse:
        errors.update(results)
        return _response(request, errors)
    if fut.done():
        return respond(fut.result())

    async def later():
        return respond(await fut)
    return Delayed(later())
