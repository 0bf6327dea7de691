"""Produce: append record batches to partition leaders, and answer per partition.

Theory of operation
-------------------
One Produce request can carry batches for many partitions of many topics (producers batch by broker). For
each partition the leader checks, in Kafka's order:

0. a request holding *transactional* batches (attribute bit 4) needs a ``transactional_id`` and, with an
   authorizer, WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request); its transactional
   batches must all come from one producer id and epoch (INVALID_PRODUCER_ID_MAPPING for the whole request);
   with an authorizer, the principal needs WRITE on the topic (TOPIC_AUTHORIZATION_FAILED, before the topic's
   existence is even looked at);
1. ``acks`` must be 0, 1 or -1 (all) -- otherwise INVALID_REQUIRED_ACKS for every partition;
2. the topic must exist (UNKNOWN_TOPIC_OR_PARTITION; with ``auto.create.topics.enable`` the topic is
   created for the client's next try) and this broker must lead the partition (NOT_LEADER_OR_FOLLOWER);
3. for ``acks=all``, the ISR must hold at least ``min.insync.replicas`` replicas (NOT_ENOUGH_REPLICAS);
4. the batch itself (:func:`validate_records`, Kafka's ``ProduceRequest.validateRecords``): from v3 on exactly one
   batch, of magic 2 (INVALID_RECORD), zstd only from v7 on (UNSUPPORTED_COMPRESSION_TYPE); v0-2 are not
   checked, and their magic 0/1 message sets are converted to one v2 batch by the log
   (:mod:`kafkalab.storage.legacy_validator`; counted in ``ProduceMessageConversionsPerSec`` and the request's
   ``MessageConversionsTimeMs``). Then, done by
   the log (:mod:`kafkalab.storage`): exactly one v2 batch, valid CRC (CORRUPT_MESSAGE), not larger than
   ``max.message.bytes`` (MESSAGE_TOO_LARGE), base offset 0, no control batch (INVALID_RECORD: only the
   leader writes transaction markers), idempotent sequence in order (OUT_OF_ORDER_SEQUENCE_NUMBER), an epoch
   not older than the producer's last (INVALID_PRODUCER_EPOCH: a fenced producer, whatever the version), no
   plain batch from a producer whose transaction is open here (INVALID_TXN_STATE).

Then the leader appends the batch *as received*, only patching its base offset and leader epoch, and answers
with the base offset it assigned. ``acks=0`` gets no answer at all -- and if something went wrong, the
connection is closed, because that is the only signal such a producer can notice. ``acks=all`` answers once
every in-sync replica has the records (immediately when the leader is the only replica; with followers the
request waits in the produce purgatory, :class:`~kafkalab.purgatory.DelayedProduce`: NOT_ENOUGH_REPLICAS_AFTER_APPEND
if the ISR shrank below ``min.insync.replicas`` meanwhile, REQUEST_TIMED_OUT after ``timeout_ms``).

A retried batch of an idempotent producer that was already written (same producer id, epoch and sequence)
is not written again: the answer carries the offsets of the first write.

A transactional batch opens the producer's transaction on the partition; nothing asks the transaction
coordinator whether the partition was added to it first (KIP-890's verification is not implemented, as with
Kafka's ``transaction.partition.verification.enable=false``).

Mirrors: ``KafkaApis.handleProduceRequest``, ``ReplicaManager.appendRecords`` / ``handleProduceAppend``.
"""
from __future__ import annotations

import asyncio

from kafkalab.network.request_channel import CloseConnectionResponse
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.purgatory import ProducePartitionStatus
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import Delayed, handles
from kafkalab.server.broker_topic_stats import PRODUCE_MESSAGE_CONVERSIONS
from kafkalab.server.partition import PartitionError

#: RecordBatch v2: the header is 61 bytes; attributes at 21-22 (bit 4 = transactional), producer id at 43,
#: producer epoch at 51 (``DefaultRecordBatch``)
_BATCH_HEADER_SIZE = 61
_MAGIC_AT = 16
_TRANSACTIONAL_FLAG = 0x10

Response = response_class(ApiKey.PRODUCE)
TopicResponse = Response.TopicProduceResponse
PartitionResponse = Response.PartitionProduceResponse
BatchIndexAndErrorMessage = Response.BatchIndexAndErrorMessage


def _error(request, code, message):
    if request.body.acks == 0:
        return None  # nothing can be said to an acks=0 producer: close the connection
    return Response(responses=tuple(
        TopicResponse(name=t.name, topic_id=t.topic_id, partition_responses=tuple(
            PartitionResponse(index=p.index, error_code=code, base_offset=-1, error_message=message)
            for p in t.partition_data)) for t in request.body.topic_data))


@handles(ApiKey.PRODUCE, versions=(0, 11), error_response=_error)
def handle_produce(broker, request):
    body, version = request.body, request.context.api_version
    acks = body.acks
    cache = broker.metadata_cache
    entries = {}
    errors = {}
    names = {}
    to_create = []
    _check_transactional(broker, request, body)
    writable = _authorize(broker, request, body, version)
    for t in body.topic_data:
        name = t.name if version < 13 else cache.topic_name(t.topic_id)
        for p in t.partition_data:
            tp = (name, p.index)
            names[tp] = (t.name, t.topic_id)
            if writable is not None and name is not None and name not in writable:
                errors[tp] = PartitionError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            error = _check_partition(broker, body, version, name, p.records)
            if error is None:
                entries[tp] = p.records
            else:
                errors[tp] = error
                if error.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and \
                        broker.config["auto.create.topics.enable"] and name not in to_create:
                    to_create.append(name)
    if to_create and broker.auth.enabled:      # creating needs CREATE on the cluster or the topic
        to_create = [t for t in to_create if broker.auth.authorize_cluster(request.context, AclOperation.CREATE,
                                                                           log_if_denied=False)
                     or broker.auth.authorize(request.context, AclOperation.CREATE, ResourceType.TOPIC, t)]
    if to_create:
        broker.admin.auto_create_topics(to_create)
    if not entries or acks != -1:
        results = broker.replica_manager.append_records(entries, required_acks=acks) if entries else {}
        _record_conversion_stats(broker, request, results)
        results.update(errors)
        if acks == 0:
            failed = [tp for tp, r in results.items() if isinstance(r, ApiException)]
            if failed:
                return CloseConnectionResponse(f"acks=0 produce failed for {len(failed)} partition(s): "
                                               f"{results[failed[0]].error_code.name}")
            return None
        return _build(results, names)
    # acks=all: the answer waits in the produce purgatory until the in-sync replicas have the records.
    fut = asyncio.get_running_loop().create_future()

    def on_complete(status: dict) -> None:
        if not fut.done():
            fut.set_result(status)

    local = broker.replica_manager.append_records(entries, required_acks=acks, timeout_ms=body.timeout_ms,
                                                  response_callback=on_complete)
    _record_conversion_stats(broker, request, local)

    def respond(status: dict):
        results = dict(errors)
        for tp, st in status.items():
            r = local.get(tp)
            results[tp] = r if isinstance(r, ApiException) else st
        return _build(results, names)

    if fut.done():
        return respond(fut.result())

    async def wait():
        return respond(await fut)
    return Delayed(wait())


def _record_conversion_stats(broker, request, results: dict) -> None:
    """A v0/v1 message set the log converted to v2: count its records in ``ProduceMessageConversionsPerSec`` and
    put the time and memory on the request (``MessageConversionsTimeMs``, ``TemporaryMemoryBytes``), as
    ``KafkaApis.updateRecordConversionStats`` does."""
    for (topic, _), result in results.items():
        stats = None if isinstance(result, ApiException) else getattr(result, "record_validation_stats", None)
        if stats is None:
            continue
        if stats.num_records_converted > 0:
            broker.broker_topic_stats.mark(PRODUCE_MESSAGE_CONVERSIONS, topic, stats.num_records_converted)
            request.message_conversions_time_ns = stats.conversion_time_nanos
        request.temporary_memory_bytes = stats.temporary_memory_bytes


def _check_transactional(broker, request, body) -> None:
    """Transactional batches need a transactional id the principal may WRITE, and one producer (id, epoch)
    for all of them; each failure answers the whole request."""
    producers = {pair for t in body.topic_data for p in t.partition_data
                 for pair in _transactional_producers(p.records)}
    if not producers:
        return
    if body.transactional_id is None or (broker.auth.enabled and not broker.auth.authorize(
            request.context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id)):
        raise ApiException(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if len(producers) > 1:
        raise ApiException(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                           "Transactional records contained more than one producer ID")


def _transactional_producers(records) -> set:
    """``{(producer_id, producer_epoch)}`` of the whole v2 batches flagged transactional, read from their headers
    without trusting a length beyond the bytes there (a malformed or cut batch is left to the log's checks)."""
    found = set()
    if not records:
        return found
    data = memoryview(records)
    pos, end = 0, len(data)
    while pos + _BATCH_HEADER_SIZE <= end:
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < _BATCH_HEADER_SIZE - 12 or pos + 12 + length > end or data[pos + 16] != 2:
            break                                       # as Kafka's batch iterator: only whole v2 batches
        if data[pos + 22] & _TRANSACTIONAL_FLAG:
            found.add((int.from_bytes(data[pos + 43:pos + 51], "big", signed=True),
                       int.from_bytes(data[pos + 51:pos + 53], "big", signed=True)))
        pos += 12 + length
    return found


def _authorize(broker, request, body, version: int):
    """None without an authorizer; else the topics this principal may WRITE to. Kafka 3.x asks nothing more
    of an idempotent producer here (KIP-679: InitProducerId is where that is checked)."""
    auth = broker.auth
    if not auth.enabled:
        return None
    cache = broker.metadata_cache
    names = [t.name if version < 13 else cache.topic_name(t.topic_id) for t in body.topic_data
             for _ in t.partition_data]
    return auth.filter_authorized(request.context, AclOperation.WRITE, ResourceType.TOPIC,
                                  [n for n in names if n is not None])


def _check_partition(broker, body, version: int, name, records):
    """What stops one partition's batch before it reaches the log (Kafka's order), or None."""
    if body.acks not in (0, 1, -1):
        return PartitionError(ErrorCode.INVALID_REQUIRED_ACKS)
    if name is None:
        return PartitionError(ErrorCode.UNKNOWN_TOPIC_ID)
    if not broker.metadata_cache.contains_topic(name):
        return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if records is None:
        return PartitionError(ErrorCode.INVALID_RECORD, "the records field is null")
    return validate_records(version, records)


def validate_records(version: int, records):
    """Kafka's ``ProduceRequest.validateRecords``: from v3 on, exactly one batch of magic 2 (zstd only from v7).
    v0-2 are not checked here, as Kafka does not (old clients sent any magic there); the log converts a magic
    0/1 message set to a v2 batch (:mod:`kafkalab.storage.legacy_validator`). None, or the PartitionError."""
    if version < 3:
        return None
    if len(records) < _MAGIC_AT + 1:
        return PartitionError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} must have at "
                                                        f"least one record batch per partition")
    if records[_MAGIC_AT] != 2:
        return PartitionError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed "
                                                        f"to contain record batches with magic version 2")
    if version < 7 and _is_zstd(records):
        return PartitionError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                              f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if _more_than_one_batch(records):
        return PartitionError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed "
                                                        f"to contain exactly one record batch per partition")
    return None


def _more_than_one_batch(records) -> bool:
    """Is there a second whole batch after the first one (Kafka's batch iterator skips a cut one)?"""
    first_end = 12 + int.from_bytes(records[8:12], "big", signed=True)
    if first_end < 12 or first_end + 12 > len(records):
        return False
    second_end = first_end + 12 + int.from_bytes(records[first_end + 8:first_end + 12], "big", signed=True)
    return first_end + 12 <= second_end <= len(records)


def _build(results: dict, names: dict):
    by_topic: dict = {}
    for tp, result in results.items():
        by_topic.setdefault(names[tp], []).append(_partition_response(tp[1], result))
    return Response(throttle_time_ms=0, responses=tuple(
        TopicResponse(name=name, topic_id=topic_id, partition_responses=tuple(parts))
        for (name, topic_id), parts in by_topic.items()))


def _is_zstd(records) -> bool:
    """Does the (first) v2 batch say codec 4, zstd? Produce v7 introduced zstd (KIP-110); Kafka refuses it in
    older versions (``ProduceRequest.validateRecords``). Malformed batches are left to the log's checks."""
    return len(records) >= 23 and records[16] == 2 and (records[22] & 0x07) == 4


def _partition_response(index: int, result):
    if isinstance(result, ApiException):
        record_errors = ()
        batch_index = getattr(result, "batch_index", None)
        if batch_index is not None:
            record_errors = (BatchIndexAndErrorMessage(batch_index=batch_index,
                                                       batch_index_error_message=str(result)),)
        return PartitionResponse(index=index, error_code=result.error_code, base_offset=-1,
                                 error_message=str(result), record_errors=record_errors)
    if isinstance(result, ProducePartitionStatus):
        if result.error_code != ErrorCode.NONE:
            return PartitionResponse(index=index, error_code=result.error_code, base_offset=-1,
                                     error_message=result.error_message)
        return PartitionResponse(index=index, error_code=ErrorCode.NONE, base_offset=result.base_offset,
                                 log_append_time_ms=result.log_append_time_ms, log_start_offset=result.log_start_offset)
    return PartitionResponse(index=index, error_code=ErrorCode.NONE, base_offset=result.first_offset,
                             log_append_time_ms=result.log_append_time, log_start_offset=result.log_start_offset)
