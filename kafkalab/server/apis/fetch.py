"""Fetch: read record batches from partition leaders, waiting for data when there is not enough yet.

Theory of operation
-------------------
A consumer (or a follower replica) names topics, partitions and the offset to start from in each, and caps
the answer: ``partition_max_bytes`` per partition, ``max_bytes`` in total. The broker reads **whole stored
batches** -- exactly the bytes on disk, never decoded -- starting with the batch that holds the requested
offset (so the first batch may start before it; the client skips the records it did not ask for). A
consumer sees only offsets below the **high watermark** (records every in-sync replica has); with
``isolation_level=read_committed`` only below the last stable offset, and the answer lists the aborted
transactions (``{producer_id, first_offset}``) overlapping the batches sent, which the consumer drops (up to
each one's ABORT marker); a follower reads up to the log end.

If less than ``min_bytes`` is available, the broker does not answer at once: the request waits in the fetch
purgatory (:class:`~kafkalab.purgatory.DelayedFetch`) up to ``max_wait_ms`` for producers to append more. Without this wait an idle consumer would send Fetch after Fetch in a busy
loop. The bytes of a large answer are written to the socket with ``sendfile``, straight from the page cache.

Fetch sessions (KIP-227, v7+) let a client send only what changed: ``broker.fetch_manager``
(:mod:`kafkalab.server.fetch_session`) turns the request's ``session_id``/``session_epoch`` into a context that
says which partitions to read (an incremental request reads every partition of its session) and which
answers to send (an incremental response only those with news). A session error (unknown id, wrong epoch)
is the whole answer: top-level error code, no partitions.

Old consumers (Fetch v0-3) cannot read RecordBatch v2: their records are down-converted to magic 0 (v0-1) or 1
(v2-3) by :mod:`.fetch_conversion`; v0-2 also treat the byte limits as hard (a first batch larger than
``partition_max_bytes`` is not sent). A topic with ``compression.type=zstd`` needs Fetch v10.

Mirrors: ``KafkaApis.handleFetchRequest``, ``ReplicaManager.fetchMessages``, ``DelayedFetch``.
"""
from __future__ import annotations

import asyncio

from kafkalab.network.response_send import SENDFILE_THRESHOLD, FileRegion, RecordsSlices
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.purgatory import FetchParams, FetchPartitionInfo
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import Delayed, handles
from kafkalab.server.apis.fetch_conversion import FetchConversion
from kafkalab.server.fetch_session import (FINAL_EPOCH, INITIAL_EPOCH, SessionErrorContext,
                                           SessionlessFetchContext)
from kafkalab.storage import FetchIsolation

Response = response_class(ApiKey.FETCH)
TopicResponse = Response.FetchableTopicResponse
PartitionData = Response.PartitionData
AbortedTransaction = Response.AbortedTransaction


def _error(request, code, message):
    return Response(error_code=code, session_id=0)


def _replica_id(body, version: int) -> int:
    return body.replica_state.replica_id if version >= 15 else body.replica_id


def _fetch_data(body, version: int, cache):
    """``({tp: FetchPartitionInfo}, unknown [(topic_id, partition)], forgotten [tp or (topic_id, partition)],
    {topic: topic_id})``."""
    fetch_data, unknown, topic_ids = {}, [], {}
    for t in body.topics:
        name = t.topic if version < 13 else cache.topic_name(t.topic_id)
        if name is not None and version >= 13:
            topic_ids[name] = t.topic_id
        for p in t.partitions:
            if name is None:
                unknown.append((t.topic_id, p.partition))
            else:
                fetch_data[(name, p.partition)] = FetchPartitionInfo(
                    fetch_offset=p.fetch_offset, max_bytes=p.partition_max_bytes, log_start_offset=p.log_start_offset,
                    current_leader_epoch=p.current_leader_epoch,
                    last_fetched_epoch=p.last_fetched_epoch if version >= 12 else -1)
    forgotten = []
    for f in (body.forgotten_topics_data or ()) if version >= 7 else ():
        name = f.topic if version < 13 else cache.topic_name(f.topic_id)
        # A deleted topic has no name any more: the session finds its partitions by their topic id.
        forgotten.extend((f.topic_id if name is None else name, p) for p in f.partitions)
    return fetch_data, unknown, forgotten, topic_ids


def _context(broker, body, version: int, replica_id: int, fetch_data: dict, forgotten: list, topic_ids: dict):
    session_id, epoch = (body.session_id, body.session_epoch) if version >= 7 else (0, FINAL_EPOCH)
    manager = getattr(broker, "fetch_manager", None)
    if manager is None:  # a broker without a session cache: sessionless only
        if session_id != 0 and epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        return SessionlessFetchContext(fetch_data)
    return manager.new_context(version, session_id, epoch, replica_id >= 0, fetch_data, forgotten, topic_ids)


def _drop_stale_topic_ids(context, infos: list, cache) -> tuple[list, list]:
    """A v13+ session remembers each partition's topic id: a topic deleted and created again under the same
    name is another topic, and the session's partitions of the old one are answered UNKNOWN_TOPIC_ID."""
    cached = context.cached_topic_ids()
    if not cached:
        return infos, []
    keep, stale = [], []
    for tp, info in infos:
        old = cached.get(tp)
        if old is not None and old != cache.topic_id(tp[0]):
            stale.append((old, tp[1]))
        else:
            keep.append((tp, info))
    return keep, stale


@handles(ApiKey.FETCH, versions=(0, 17), error_response=_error)
def handle_fetch(broker, request):
    body, version = request.body, request.context.api_version
    cache = broker.metadata_cache
    replica_id = _replica_id(body, version)
    isolation = FetchIsolation.of_request(replica_id, body.isolation_level)
    fetch_data, unknown, forgotten, topic_ids = _fetch_data(body, version, cache)
    context = _context(broker, body, version, replica_id, fetch_data, forgotten, topic_ids)
    if context.error_code != ErrorCode.NONE:
        return Response(error_code=context.error_code, session_id=0)
    infos = context.partitions()
    if version >= 13:
        infos, stale = _drop_stale_topic_ids(context, infos, cache)
        unknown = unknown + stale
    denied: list = []
    out = FetchConversion(broker, request, version, replica_id >= 0, fetch_data)
    if broker.auth.enabled:
        infos, denied = _authorize(broker.auth, request.context, replica_id, infos)
        if denied and not infos:    # nothing left to read: answer now (Kafka: no partition is interesting)
            return _response(context, denied, unknown, cache, isolation, out)
    params = FetchParams(replica_id=replica_id, max_wait_ms=body.max_wait_ms, min_bytes=body.min_bytes,
                         max_bytes=min(body.max_bytes, broker.config["fetch.max.bytes"]), isolation=isolation,
                         request_version=version)
    fut = asyncio.get_running_loop().create_future()

    def on_complete(results) -> None:
        if not fut.done():
            fut.set_result(results)

    broker.replica_manager.fetch_messages(params, infos, on_complete)
    if fut.done():
        return _response(context, denied + list(fut.result()), unknown, cache, isolation, out)

    async def wait_in_purgatory():
        return _response(context, denied + list(await fut), unknown, cache, isolation, out)

    return Delayed(wait_in_purgatory())


def _authorize(auth, context, replica_id: int, infos: list) -> tuple[list, list]:
    """(partitions to read, [(tp, TOPIC_AUTHORIZATION_FAILED)]): a follower needs CLUSTER_ACTION on the cluster
    (and is refused per partition with 29, not 31, as Kafka does), a consumer READ on each topic."""
    if replica_id >= 0:
        allowed = auth.authorize_cluster(context, AclOperation.CLUSTER_ACTION)
        return (infos, []) if allowed else ([], [(tp, ApiException(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                                                  for tp, _ in infos])
    topics = auth.filter_authorized(context, AclOperation.READ, ResourceType.TOPIC, [tp[0] for tp, _ in infos])
    keep = [(tp, info) for tp, info in infos if tp[0] in topics]
    denied = [(tp, ApiException(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for tp, _ in infos if tp[0] not in topics]
    return keep, denied


def _records(info):
    """A storage read as the encoder should write it: big slices of segment files as file regions (sent with
    sendfile), small ones as bytes (one pread)."""
    if info is None or not info.slices:
        return b""
    parts = [FileRegion(s.path, s.position, s.size) if s.size >= SENDFILE_THRESHOLD else s.read()
             for s in info.slices]
    return parts[0] if len(parts) == 1 and isinstance(parts[0], bytes) else RecordsSlices(parts)


def _aborted_transactions(isolation: FetchIsolation, read) -> tuple | None:
    """read_committed: the aborted transactions the consumer must filter out (possibly none); otherwise null,
    as Kafka sends it."""
    if isolation is not FetchIsolation.TXN_COMMITTED:
        return None
    found = read.aborted_transactions if read is not None else None
    return tuple(AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset) for t in found or ())


def _response(context, results, unknown, cache, isolation: FetchIsolation, out: FetchConversion):
    parts = []
    for tp, r in results:
        if isinstance(r, ApiException):
            part = PartitionData(partition_index=tp[1], error_code=out.error_code(r.error_code), high_watermark=-1,
                                 last_stable_offset=-1, log_start_offset=-1, records=b"")
        else:
            part = PartitionData(partition_index=tp[1], error_code=ErrorCode.NONE,
                                 high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                                 log_start_offset=r.log_start_offset,
                                 aborted_transactions=_aborted_transactions(isolation, r.records),
                                 records=_records(r.records))
        parts.append((tp, out.convert(tp, part, None if isinstance(r, ApiException) else r.records)))
    out.finish()
    session_id, parts = context.update_and_generate(parts)
    if context.error_code != ErrorCode.NONE:   # the session moved on while this fetch waited
        return Response(error_code=context.error_code, session_id=0)
    by_topic: dict = {}
    for (topic, _), part in parts:
        by_topic.setdefault(topic, []).append(part)
    responses = [TopicResponse(topic=topic, topic_id=cache.topic_id(topic), partitions=tuple(ps))
                 for topic, ps in by_topic.items()]
    for topic_id, partition in unknown:
        responses.append(TopicResponse(topic_id=topic_id, partitions=(PartitionData(
            partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1,
            last_stable_offset=-1, log_start_offset=-1, records=b""),)))
    return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=session_id,
                    responses=tuple(responses))
