"""The transaction APIs on the wire: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
ListTransactions (InitProducerId lives with FindCoordinator in :mod:`.coordinators`).

Theory of operation
-------------------
These handlers only translate: request bodies become calls on the sans-IO
:class:`~kafkalab.coordinator.transaction.TransactionCoordinator` (``broker.transaction_coordinator``), whose
callbacks become responses once ``__transaction_state`` has the record (``acks=-1``): the handler returns
:class:`~.base.Delayed` and the worker moves on. :class:`BrokerTransactionLog` is how the coordinator reaches
its topic: appends go through the replica manager as a coordinator's (origin "coordinator", acks=-1, answered
through the produce purgatory); loading reads a partition from its start to its end.

**Checks before the coordinator** (KafkaApis): WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
AddPartitionsToTxn: WRITE on each topic (TOPIC_AUTHORIZATION_FAILED; internal topics *always* fail here --
``__consumer_offsets`` joins a transaction only through AddOffsetsToTxn), each partition must exist
(UNKNOWN_TOPIC_OR_PARTITION), and when any fails the others get OPERATION_NOT_ATTEMPTED and nothing is added.
AddOffsetsToTxn needs READ on the group (GROUP_AUTHORIZATION_FAILED) and adds the group's partition of
``__consumer_offsets``. DescribeTransactions and ListTransactions show only ids (and topics) the principal may
DESCRIBE.

**PRODUCER_FENCED** (90, KIP-588) is answered as INVALID_PRODUCER_EPOCH (47) to the versions that predate it:
AddPartitionsToTxn, AddOffsetsToTxn and EndTxn below v2 (InitProducerId below v4, in :mod:`.coordinators`).

**Versions.** AddPartitionsToTxn 0-3 (v4+ is the brokers' KIP-890 verification, not served), AddOffsetsToTxn 0-4,
EndTxn 0-4 (v4 only allows TRANSACTION_ABORTABLE, which this coordinator never answers), DescribeTransactions 0,
ListTransactions 0-1: what a Kafka 3.9 broker in ZooKeeper mode serves, minus the verification path. Every
minimum is 0: aiokafka and librdkafka send v0.

Mirrors: ``KafkaApis.handleAddPartitionToTxnRequest``, ``handleAddOffsetsToTxnRequest``, ``handleEndTxnRequest``,
``handleDescribeTransactionsRequest``, ``handleListTransactionsRequest``;
``TransactionStateManager.appendTransactionToLog`` (the replica manager call).
"""
from __future__ import annotations


from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC
from kafkalab.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.records import decode_batches
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.admin_manager import INTERNAL_TOPICS
from kafkalab.server.apis.base import Delayed, callback_future, handles, top_level_error
from kafkalab.storage import FetchIsolation

__all__ = ["BrokerTransactionLog", "producer_fenced_for"]

AddPartitionsToTxnResponse = response_class(ApiKey.ADD_PARTITIONS_TO_TXN)
AddOffsetsToTxnResponse = response_class(ApiKey.ADD_OFFSETS_TO_TXN)
EndTxnResponse = response_class(ApiKey.END_TXN)
DescribeTransactionsResponse = response_class(ApiKey.DESCRIBE_TRANSACTIONS)
ListTransactionsResponse = response_class(ApiKey.LIST_TRANSACTIONS)


class BrokerTransactionLog:
    """The coordinator's view of ``__transaction_state`` on this broker."""

    def __init__(self, broker):
        self.broker = broker

    def append_async(self, partition: int, batch: bytes, callback, timeout_ms: int) -> None:
        tp = (TRANSACTION_STATE_TOPIC, partition)

        def on_complete(status: dict) -> None:
            callback(int(status[tp].error_code))
        self.broker.replica_manager.append_records({tp: batch}, required_acks=-1, origin="coordinator",
                                                   timeout_ms=timeout_ms, response_callback=on_complete)

    def read(self, partition: int):
        p = self.broker.replica_manager.get_partition(TRANSACTION_STATE_TOPIC, partition)
        if p is None or p.log is None:
            return
        log = p.log
        chunk = int(self.broker.config["transaction.state.log.load.buffer.size"])
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, chunk, isolation=FetchIsolation.LOG_END, min_one_message=True)
            raw = data.records if data is not None else b""
            batches = decode_batches(bytes(raw), allow_partial=True) if raw else []
            if not batches:
                return
            for b in batches:
                if b.next_offset > offset:
                    yield b
            offset = max(offset, batches[-1].next_offset)


def producer_fenced_for(code: int, version: int, first_version: int) -> int:
    """PRODUCER_FENCED exists from ``first_version`` on; older versions get INVALID_PRODUCER_EPOCH."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_version:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


def _require_transactional_id(broker, request, transactional_id) -> None:
    if not broker.auth.authorize(request.context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                 transactional_id or ""):
        raise ApiException(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def _answer(fut, respond):
    if fut.done():
        return respond(fut.result())

    async def later():
        return respond(await fut)
    return Delayed(later())


# ---------------------------------------------------------------------------------------------- AddPartitionsToTxn
def _partitions_error(request, code: int, message=None):
    """Every partition of the request answered with ``code``."""
    R = AddPartitionsToTxnResponse
    return R(throttle_time_ms=0, results_by_topic_v3_and_below=tuple(
        R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=tuple(
            R.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code) for p in t.partitions))
        for t in request.body.v3_and_below_topics or ()))


def _partitions_response(errors: dict):
    R = AddPartitionsToTxnResponse
    by_topic: dict = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(R.AddPartitionsToTxnPartitionResult(partition_index=partition,
                                                                                  partition_error_code=code))
    return R(throttle_time_ms=0, results_by_topic_v3_and_below=tuple(
        R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=tuple(ps)) for t, ps in by_topic.items()))


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=(0, 3), error_response=_partitions_error)
def handle_add_partitions_to_txn(broker, request):
    body, version = request.body, request.context.api_version
    transactional_id = body.v3_and_below_transactional_id
    partitions = [(t.name, p) for t in body.v3_and_below_topics or () for p in t.partitions]
    if not broker.auth.authorize(request.context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                 transactional_id or ""):
        return _partitions_error(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    topics = {t for t, _ in partitions if t not in INTERNAL_TOPICS}
    authorized = topics - broker.auth.denied(request.context, AclOperation.WRITE, ResourceType.TOPIC, topics)
    errors, ok = {}, []
    for tp in partitions:
        if tp[0] not in authorized:
            errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif broker.metadata_cache.partition_state(*tp) is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            ok.append(tp)
    if errors:
        errors.update({tp: ErrorCode.OPERATION_NOT_ATTEMPTED for tp in ok})
        return _partitions_response(errors)
    fut, callback = callback_future()
    broker.transaction_coordinator.handle_add_partitions_to_transaction(
        transactional_id, body.v3_and_below_producer_id, body.v3_and_below_producer_epoch, set(partitions), callback)
    return _answer(fut, lambda code: _partitions_response(
        {tp: producer_fenced_for(code, version, 2) for tp in partitions}))


# ---------------------------------------------------------------------------------------------- AddOffsetsToTxn
@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=(0, 4), error_response=top_level_error(ApiKey.ADD_OFFSETS_TO_TXN))
def handle_add_offsets_to_txn(broker, request):
    body, version = request.body, request.context.api_version
    _require_transactional_id(broker, request, body.transactional_id)
    if not broker.auth.authorize(request.context, AclOperation.READ, ResourceType.GROUP, body.group_id):
        raise ApiException(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    offsets_partition = (OFFSETS_TOPIC, broker.group_coordinator.partition_for(body.group_id))
    fut, callback = callback_future()
    broker.transaction_coordinator.handle_add_partitions_to_transaction(
        body.transactional_id, body.producer_id, body.producer_epoch, {offsets_partition}, callback)
    return _answer(fut, lambda code: AddOffsetsToTxnResponse(throttle_time_ms=0,
                                                             error_code=producer_fenced_for(code, version, 2)))


# ---------------------------------------------------------------------------------------------- EndTxn
@handles(ApiKey.END_TXN, versions=(0, 4), error_response=top_level_error(ApiKey.END_TXN))
def handle_end_txn(broker, request):
    body, version = request.body, request.context.api_version
    _require_transactional_id(broker, request, body.transactional_id)
    fut, callback = callback_future()
    broker.transaction_coordinator.handle_end_transaction(body.transactional_id, body.producer_id,
                                                          body.producer_epoch, bool(body.committed), callback)
    return _answer(fut, lambda code: EndTxnResponse(throttle_time_ms=0, error_code=producer_fenced_for(code, version, 2),
                                                    producer_id=-1, producer_epoch=-1))


# ---------------------------------------------------------------------------------------------- Describe / List
def _describe_failure(transactional_id: str, code: int):
    """An entry that only carries an error (the other fields at their zero values, as Kafka leaves them)."""
    return DescribeTransactionsResponse.TransactionState(
        error_code=code, transactional_id=transactional_id, transaction_state="", transaction_timeout_ms=0,
        transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=())


def _describe_error(request, code, message=None):
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=tuple(
        _describe_failure(t, code) for t in request.body.transactional_ids or ()))


@handles(ApiKey.DESCRIBE_TRANSACTIONS, versions=(0, 0), error_response=_describe_error)
def handle_describe_transactions(broker, request):
    R = DescribeTransactionsResponse
    auth, context = broker.auth, request.context
    states = []
    for transactional_id in request.body.transactional_ids or ():
        if not auth.authorize(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            states.append(_describe_failure(transactional_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        d = broker.transaction_coordinator.handle_describe_transactions(transactional_id)
        if d.error != ErrorCode.NONE:
            states.append(_describe_failure(transactional_id, d.error))
            continue
        by_topic: dict = {}
        for topic, partition in d.topic_partitions:
            by_topic.setdefault(topic, []).append(partition)
        visible = set(by_topic) - auth.denied(context, AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic)
        states.append(R.TransactionState(
            error_code=ErrorCode.NONE, transactional_id=transactional_id, transaction_state=d.state,
            transaction_timeout_ms=d.transaction_timeout_ms, transaction_start_time_ms=d.transaction_start_time_ms,
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=tuple(R.TopicData(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items() if t in visible)))
    return R(throttle_time_ms=0, transaction_states=tuple(states))


@handles(ApiKey.LIST_TRANSACTIONS, versions=(0, 1), error_response=top_level_error(ApiKey.LIST_TRANSACTIONS))
def handle_list_transactions(broker, request):
    body, version = request.body, request.context.api_version
    duration = body.duration_filter if version >= 1 else -1
    code, unknown, found = broker.transaction_coordinator.handle_list_transactions(
        body.producer_id_filters or (), body.state_filters or (), duration)
    R = ListTransactionsResponse
    auth, context = broker.auth, request.context
    states = tuple(R.TransactionState(transactional_id=m.transactional_id, producer_id=m.producer_id,
                                      transaction_state=m.state.value) for m in found
                   if auth.authorize(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id,
                                     log_if_denied=False))
    return R(throttle_time_ms=0, error_code=code, unknown_state_filters=tuple(unknown), transaction_states=states)
