"""The broker's side of the controller's requests: LeaderAndIsr, UpdateMetadata, StopReplica.

Theory of operation
-------------------
These three requests come only from the controller. Each carries the controller's id and **epoch**; a
request from an older epoch than the last one seen comes from a deposed ("zombie") controller and is refused
with STALE_CONTROLLER_EPOCH.

* **LeaderAndIsr** -- "for these partitions, the leader is X with epoch E and the ISR is [...]": the replica
  manager creates the logs it does not have yet and becomes leader or follower of each.
* **UpdateMetadata** -- the new picture of the cluster for the metadata cache (live brokers, every partition's
  leader/ISR). A partition whose leader is -2 belongs to a topic being deleted.
* **StopReplica** -- stop serving these partitions, and delete their logs when the topic is deleted.

Mirrors: ``KafkaApis.handleLeaderAndIsrRequest``, ``handleUpdateMetadataRequest``, ``handleStopReplicaRequest``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode, response_class

__all__ = ["leader_and_isr", "update_metadata", "stop_replica"]

LeaderAndIsrResponse = response_class(ApiKey.LEADER_AND_ISR)
UpdateMetadataResponse = response_class(ApiKey.UPDATE_METADATA)
StopReplicaResponse = response_class(ApiKey.STOP_REPLICA)


def _states(body, version: int) -> list:
    if version >= 2:
        return [(t.topic_name, ps) for t in body.topic_states for ps in t.partition_states]
    return [(ps.topic_name, ps) for ps in body.ungrouped_partition_states]


def leader_and_isr(broker, body, version: int):
    states = _states(body, version)
    topic_ids = {t.topic_name: t.topic_id for t in body.topic_states} if version >= 5 else {}
    if body.controller_epoch < broker.replica_manager.controller_epoch:
        results = {(t, ps.partition_index): ErrorCode.STALE_CONTROLLER_EPOCH for t, ps in states}
        top = ErrorCode.STALE_CONTROLLER_EPOCH
    else:
        results = broker.replica_manager.become_leader_or_follower(body.controller_id, body.controller_epoch,
                                                                   states, topic_ids)
        top = ErrorCode.NONE
        offsets = [(ps, results.get((t, ps.partition_index))) for t, ps in states if t == "__consumer_offsets"]
        if offsets and hasattr(broker, "on_offsets_partitions"):
            broker.on_offsets_partitions(
                {ps.partition_index: ps.leader_epoch for ps, code in offsets
                 if code == ErrorCode.NONE and ps.leader == broker.broker_id},
                [ps.partition_index for ps, code in offsets if ps.leader != broker.broker_id])
    R = LeaderAndIsrResponse
    if version >= 5:
        by_topic: dict = {}
        for (topic, p), code in results.items():
            by_topic.setdefault(topic, []).append(R.LeaderAndIsrPartitionError(partition_index=p, error_code=code))
        return R(error_code=top, topics=tuple(R.LeaderAndIsrTopicError(topic_id=topic_ids.get(t), partition_errors=tuple(e))
                                              for t, e in by_topic.items()))
    return R(error_code=top, partition_errors=tuple(
        R.LeaderAndIsrPartitionError(topic_name=t, partition_index=p, error_code=code)
        for (t, p), code in results.items()))


def update_metadata(broker, body, version: int):
    try:
        deleted = broker.metadata_cache.update_metadata(body, version)
    except ValueError:
        return UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    for topic in deleted:
        broker.on_topic_deleted(topic)
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


def stop_replica(broker, body, version: int):
    if version >= 3:
        parts = [(t.topic_name, ps.partition_index, ps.delete_partition) for t in body.topic_states
                 for ps in t.partition_states]
    elif version >= 1:
        parts = [(t.name, p, body.delete_partitions) for t in body.topics for p in t.partition_indexes]
    else:
        parts = [(p.topic_name, p.partition_index, body.delete_partitions) for p in body.ungrouped_partitions]
    results = broker.replica_manager.stop_replicas(body.controller_epoch, parts)
    stopped = [p for t, p, _ in parts if t == "__consumer_offsets" and results.get((t, p)) == ErrorCode.NONE]
    if stopped and hasattr(broker, "on_offsets_partitions"):
        broker.on_offsets_partitions({}, stopped)
    R = StopReplicaResponse
    stale = any(code == ErrorCode.STALE_CONTROLLER_EPOCH for code in results.values())
    return R(error_code=ErrorCode.STALE_CONTROLLER_EPOCH if stale else ErrorCode.NONE,
             partition_errors=tuple(R.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
                                    for (t, p), code in results.items()))
