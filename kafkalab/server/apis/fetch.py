"""Fetch: read record batches from partition leaders, waiting for data when there is not enough yet.

Theory of operation
-------------------
A consumer (or a follower replica) names topics, partitions and the offset to start from in each, and caps
the answer: ``partition_max_bytes`` per partition, ``max_bytes`` in total. The broker reads **whole stored
batches** -- exactly the bytes on disk, never decoded -- starting with the batch that holds the requested
offset (so the first batch may start before it; the client skips the records it did not ask for). A
consumer sees only offsets below the **high watermark** (records every in-sync replica has); with
``isolation_level=read_committed`` only below the last stable offset; a follower reads up to the log end.

If less than ``min_bytes`` is available, the broker does not answer at once: it waits up to ``max_wait_ms``
for producers to append more. Without this wait an idle consumer would send Fetch after Fetch in a busy
loop. The bytes of a large answer are written to the socket with ``sendfile``, straight from the page cache.

Fetch sessions (KIP-227, v7+) let a client send only what changed; this broker declines them by answering
``session_id = 0``, which every client accepts, and so always sees full requests.

Mirrors: ``KafkaApis.handleFetchRequest``, ``ReplicaManager.fetchMessages``, ``DelayedFetch``.
"""
from __future__ import annotations

import time as _time

from kafkalab.network.socket_server import SENDFILE_THRESHOLD, FileRegion, RecordsSlices
from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.server.apis.base import Delayed, handles
from kafkalab.server.partition import PartitionError

Response = response_class(ApiKey.FETCH)
TopicResponse = Response.FetchableTopicResponse
PartitionData = Response.PartitionData

ISOLATION = {0: "high_watermark", 1: "txn_committed"}


def _error(request, code, message):
    return Response(error_code=code, session_id=0)


def _replica_id(body, version: int) -> int:
    return body.replica_state.replica_id if version >= 15 else body.replica_id


@handles(ApiKey.FETCH, versions=(4, 16), error_response=_error)
def handle_fetch(broker, request):
    body, version = request.body, request.context.api_version
    if body.session_id != 0:
        return Response(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    cache = broker.metadata_cache
    follower = _replica_id(body, version) >= 0
    isolation = "log_end" if follower else ISOLATION.get(body.isolation_level, "high_watermark")
    reads, unknown = [], []
    for t in body.topics:
        name = t.topic if version < 13 else cache.topic_name(t.topic_id)
        for p in t.partitions:
            if name is None:
                unknown.append((t, p.partition))
            else:
                reads.append((name, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch))
    max_bytes = min(body.max_bytes, broker.config["fetch.max.bytes"])
    rm = broker.replica_manager

    def read():
        return rm.read_from_local_log(reads, isolation=isolation, fetch_only_from_leader=True, max_bytes=max_bytes)

    results = read()
    if _done(results, body.min_bytes) or body.max_wait_ms <= 0 or not reads:
        return _response(body, version, results, unknown, cache)

    async def wait_for_data():
        deadline = _time.monotonic() + body.max_wait_ms / 1000.0
        current = results
        while True:
            remaining = deadline - _time.monotonic()
            if remaining <= 0:
                break
            await rm.wait_for_appends([(r[0], r[1]) for r in reads], remaining)
            current = read()
            if _done(current, body.min_bytes):
                break
        return _response(body, version, current, unknown, cache)

    return Delayed(wait_for_data())


def _done(results, min_bytes: int) -> bool:
    """Answer now if enough bytes are there, or if any partition has an error to report (Kafka's DelayedFetch
    completes on errors too: a client must learn about them at once)."""
    total = 0
    for _, r in results:
        if isinstance(r, PartitionError):
            return True
        total += r.bytes
    return total >= min_bytes


def _records(info):
    """A storage read as the encoder should write it: big slices of segment files as file regions (sent with
    sendfile), small ones as bytes (one pread)."""
    if info is None or not info.slices:
        return b""
    parts = [FileRegion(s.path, s.position, s.size) if s.size >= SENDFILE_THRESHOLD else s.read()
             for s in info.slices]
    return parts[0] if len(parts) == 1 and isinstance(parts[0], bytes) else RecordsSlices(parts)


def _response(body, version: int, results, unknown, cache):
    by_topic: dict = {}
    aborted = () if body.isolation_level == 1 else None
    for (topic, partition), r in results:
        if isinstance(r, PartitionError):
            part = PartitionData(partition_index=partition, error_code=r.error_code, high_watermark=-1,
                                 last_stable_offset=-1, log_start_offset=-1, records=b"")
        else:
            part = PartitionData(partition_index=partition, error_code=ErrorCode.NONE,
                                 high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                                 log_start_offset=r.log_start_offset, aborted_transactions=aborted,
                                 records=_records(r.records))
        by_topic.setdefault(topic, []).append(part)
    responses = [TopicResponse(topic=topic, topic_id=cache.topic_id(topic), partitions=tuple(parts))
                 for topic, parts in by_topic.items()]
    for t, partition in unknown:
        responses.append(TopicResponse(topic_id=t.topic_id, partitions=(PartitionData(
            partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1,
            last_stable_offset=-1, log_start_offset=-1, records=b""),)))
    return Response(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=tuple(responses))
