"""WriteTxnMarkers: the transaction coordinator tells partition leaders how a transaction ended.

Theory of operation
-------------------
A transactional producer's records sit in each partition undecided until its EndTxn. The transaction
coordinator then makes the decision durable in ``__transaction_state`` (PrepareCommit / PrepareAbort) and
sends WriteTxnMarkers to the leader of every partition of the transaction, over the inter-broker listener.
One request may carry markers of many transactions: each names the producer id and epoch, the result (true =
COMMIT, false = ABORT), the coordinator's epoch and the partitions.

For each marker the leader appends one control batch per partition (the *marker*; see
:mod:`kafkalab.records.control`) through :meth:`ReplicaManager.append_txn_markers
<kafkalab.server.replica_manager.ReplicaManager.append_txn_markers>`, with ``acks=all``: the answer for a
partition comes once the high watermark has passed its marker (or after ``request.timeout.ms``:
REQUEST_TIMED_OUT), because only then may read_committed consumers read past it. The append completes the
producer's open transaction on that partition: the last stable offset moves on, and an ABORT writes a
``.txnindex`` entry. The checks, in Kafka's order:

* the caller needs ALTER or CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED everywhere);
* a partition without a local log: UNKNOWN_TOPIC_OR_PARTITION; a follower's: NOT_LEADER_OR_FOLLOWER;
* a marker epoch older than the producer's: INVALID_PRODUCER_EPOCH; a coordinator epoch older than the last
  marker's: TRANSACTION_COORDINATOR_FENCED (a coordinator that lost its partition);
* NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR as for a Produce with acks=all.

The coordinator retries a partition on the retriable ones and stops on the fencing ones. A duplicate marker
(after a coordinator failover) is written again and changes nothing. When a marker reaches a partition of
``__consumer_offsets``, the group coordinator is told, so that the offsets committed in the transaction
(TxnOffsetCommit) become visible or are dropped.

Versions: 0-1 as Kafka 3.9, whose coordinators send v1 (from IBP 2.8 on); v0 is the same request, not
flexible (Kafka 4.0 removed it; v2 adds KIP-1228's transaction version).

Mirrors: ``KafkaApis.handleWriteTxnMarkersRequest``.
"""
from __future__ import annotations

import asyncio
import logging

from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation
from kafkalab.server.apis.base import Delayed, handles

__all__ = ["handle_write_txn_markers", "OFFSETS_TOPIC"]

log = logging.getLogger("kafkalab.server.KafkaApis")

OFFSETS_TOPIC = "__consumer_offsets"

Response = response_class(ApiKey.WRITE_TXN_MARKERS)
MarkerResult = Response.WritableTxnMarkerResult
TopicResult = Response.WritableTxnMarkerTopicResult
PartitionResult = Response.WritableTxnMarkerPartitionResult


def _error(request, code, message):
    return _build({m.producer_id: {(t.name, p): code for t in m.topics for p in t.partition_indexes}
                   for m in request.body.markers})


def _build(errors: dict):
    markers = []
    for producer_id, by_partition in errors.items():
        topics: dict = {}
        for (topic, partition), code in by_partition.items():
            topics.setdefault(topic, []).append(PartitionResult(partition_index=partition, error_code=code))
        markers.append(MarkerResult(producer_id=producer_id, topics=tuple(
            TopicResult(name=name, partitions=tuple(parts)) for name, parts in topics.items())))
    return Response(markers=tuple(markers))


@handles(ApiKey.WRITE_TXN_MARKERS, versions=(0, 1), error_response=_error)
def handle_write_txn_markers(broker, request):
    auth = broker.auth
    if not auth.authorize_cluster(request.context, AclOperation.ALTER, log_if_denied=False):
        auth.require_cluster(request.context, AclOperation.CLUSTER_ACTION)
    markers = request.body.markers
    errors: dict = {}
    if not markers:
        return _build(errors)
    loop = asyncio.get_running_loop()
    pending = []
    timeout_ms = int(broker.config["request.timeout.ms"])
    for marker in markers:
        partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        fut = loop.create_future()
        pending.append(fut)

        def on_complete(status: dict, marker=marker, fut=fut) -> None:
            if fut.done():
                return
            codes = {tp: st.error_code for tp, st in status.items()}
            _complete_offsets(broker, marker, codes)
            if codes:                   # a marker naming no partition is left out of the answer, as in Kafka
                errors.setdefault(marker.producer_id, {}).update(codes)
            fut.set_result(None)

        broker.replica_manager.append_txn_markers(
            marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.transaction_result,
            partitions, timeout_ms=timeout_ms, response_callback=on_complete)
    if all(f.done() for f in pending):
        return _build(errors)

    async def wait():
        await asyncio.gather(*pending)
        return _build(errors)
    return Delayed(wait())


def _complete_offsets(broker, marker, codes: dict) -> None:
    """Offsets committed in the transaction (TxnOffsetCommit) become visible (COMMIT) or go (ABORT) once the
    marker is in their ``__consumer_offsets`` partition; if that fails, those partitions answer
    UNKNOWN_SERVER_ERROR."""
    offsets_partitions = [tp for tp, code in codes.items() if tp[0] == OFFSETS_TOPIC and code == ErrorCode.NONE]
    if not offsets_partitions:
        return
    try:
        broker.group_coordinator.handle_txn_completion(marker.producer_id, offsets_partitions,
                                                       marker.transaction_result)
    except Exception:
        log.exception("Received an exception while trying to update the offsets cache on transaction marker append")
        for tp in offsets_partitions:
            codes[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
