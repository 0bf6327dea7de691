"""OffsetCommit v0 and OffsetFetch v0: committed offsets kept in ZooKeeper, as a Kafka 3.9 broker keeps them.

Theory of operation
-------------------
The oldest versions of the offset APIs predate ``__consumer_offsets``. A ZooKeeper-mode Kafka 3.9 broker still
answers them the old way (:mod:`kafkalab.zk.consumer_offsets`): an OffsetCommit **v0** writes each offset to
``/consumers/<group>/offsets/<topic>/<partition>`` -- no group coordinator, no generation or member check,
no metadata kept -- and an OffsetFetch **v0** reads the offsets back from there. The group coordinator's offsets
(v1 and later) and these never meet.

The checks before the write are the ones every OffsetCommit gets (READ on the group, then per topic READ,
existence and partition existence), then per partition metadata longer than ``offset.metadata.max.bytes`` is
OFFSET_METADATA_TOO_LARGE. OffsetFetch v0 needs DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED on every
partition: v0 has no top-level error code) and DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED); a partition
that does not exist, or was never committed with v0, answers UNKNOWN_TOPIC_OR_PARTITION with offset -1, and a
found one its offset with empty metadata.

Mirrors: ``KafkaApis.commitOffsetsToZookeeper`` and ``handleOffsetFetchRequestFromZookeeper`` (Kafka 3.9).
"""
from __future__ import annotations

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.zk.consumer_offsets import get_consumer_offset, set_or_create_consumer_offset

__all__ = ["commit_offsets_to_zookeeper", "fetch_offsets_from_zookeeper"]

OffsetCommitResponse = response_class(ApiKey.OFFSET_COMMIT)
OffsetFetchResponse = response_class(ApiKey.OFFSET_FETCH)


def commit_offsets_to_zookeeper(broker, group_id: str, partitions: list) -> dict:
    """``partitions``: ``(topic, request partition)`` that passed the checks -> {(topic, partition): error}."""
    limit = broker.config["offset.metadata.max.bytes"]
    results = {}
    for topic, p in partitions:
        tp = (topic, p.partition_index)
        if p.committed_metadata is not None and len(p.committed_metadata) > limit:
            results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        try:
            set_or_create_consumer_offset(broker.zk, group_id, topic, p.partition_index, p.committed_offset)
            results[tp] = ErrorCode.NONE
        except ApiException as e:
            results[tp] = e.error_code
        except Exception:
            results[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
    return results


def fetch_offsets_from_zookeeper(broker, request):
    """The whole OffsetFetch v0 answer."""
    body, auth, context = request.body, broker.auth, request.context
    R = OffsetFetchResponse

    def partition(index: int, error: int, offset: int = -1):
        return R.OffsetFetchResponsePartition(partition_index=index, committed_offset=offset,
                                              committed_leader_epoch=-1, metadata="", error_code=error)
    if not auth.authorize(context, AclOperation.DESCRIBE, ResourceType.GROUP, body.group_id):
        return R(throttle_time_ms=0, topics=tuple(R.OffsetFetchResponseTopic(name=t.name, partitions=tuple(
            partition(p, ErrorCode.GROUP_AUTHORIZATION_FAILED) for p in t.partition_indexes)) for t in body.topics))
    denied = auth.denied(context, AclOperation.DESCRIBE, ResourceType.TOPIC, [t.name for t in body.topics])
    cache = broker.metadata_cache
    topics = []
    for t in body.topics:
        parts = []
        for index in t.partition_indexes:
            if t.name in denied:
                parts.append(partition(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if cache.partition_state(t.name, index) is None:
                parts.append(partition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            try:
                offset = get_consumer_offset(broker.zk, body.group_id, t.name, index)
            except Exception:
                parts.append(partition(index, ErrorCode.UNKNOWN_SERVER_ERROR))
                continue
            parts.append(partition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) if offset is None
                         else partition(index, ErrorCode.NONE, offset))
        topics.append(R.OffsetFetchResponseTopic(name=t.name, partitions=tuple(parts)))
    return R(throttle_time_ms=0, topics=tuple(topics))
