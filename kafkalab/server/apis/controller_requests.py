"""The broker's side of the controller's requests: LeaderAndIsr, UpdateMetadata, StopReplica.

Theory of operation
-------------------
These three requests come only from the controller. Each carries the controller's id and **epoch**; a
request from an older epoch than the last one seen comes from a deposed ("zombie") controller and is refused
with STALE_CONTROLLER_EPOCH.

* **LeaderAndIsr** -- "for these partitions, the leader is X with epoch E and the ISR is [...]": the replica
  manager creates the logs it does not have yet and becomes leader or follower of each.
* **UpdateMetadata** -- the new picture of the cluster for the metadata cache (live brokers, every partition's
  leader/ISR). A partition whose leader is -2 belongs to a topic being deleted. An ElectLeaders request
  waiting for one of its partitions' new leader is checked again.
* **StopReplica** -- stop serving these partitions, and delete their logs when the topic is deleted.

They arrive over the network like any request, from the controller's channel to this broker (the controller
sends to its own broker the same way), with ``clientId`` = the controller's broker id. LeaderAndIsr and
StopReplica answer once every partition is handled, but the replica manager lets the event loop serve other
connections between partitions (a thousand new logs are seconds of file work): their handlers are coroutines,
as Kafka's run on a request-handler thread while the network threads go on. Like Kafka, the broker guards
them with the **CLUSTER_ACTION** permission on the cluster, decided on the connection's *principal*, not on the
listener the request came in on: with an authorizer (``authorizer.class.name``) a principal that is neither a
super user nor granted CLUSTER_ACTION gets CLUSTER_AUTHORIZATION_FAILED, and the broker logs
"Error when handling request: clientId=<controller id>, correlationId=..., api=UPDATE_METADATA" -- which is how
a single broker with an unauthenticated (``User:ANONYMOUS``) inter-broker listener refuses its own controller,
and why its new topics never get a leader. Without an authorizer everything is allowed. A request
whose ``broker_epoch`` predates this broker's registration (it was meant for a previous incarnation) gets
STALE_BROKER_EPOCH. Like a ZooKeeper-era broker, this one advertises the three APIs in ApiVersions.

**ControlledShutdown** goes the other way: a broker about to stop cleanly asks the *controller* to move its
leaderships away first (also on the inter-broker listener). The controller answers once it has decided, with
the partitions the broker still leads; a broker that is not the controller answers NOT_CONTROLLER.

Mirrors: ``KafkaApis.handleLeaderAndIsrRequest``, ``handleUpdateMetadataRequest``, ``handleStopReplicaRequest``,
``handleControlledShutdownRequest``.
"""
from __future__ import annotations

from kafkalab.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation
from kafkalab.server.apis.base import Delayed, handles

__all__ = ["leader_and_isr", "update_metadata", "stop_replica", "handle_controlled_shutdown"]

LeaderAndIsrResponse = response_class(ApiKey.LEADER_AND_ISR)
UpdateMetadataResponse = response_class(ApiKey.UPDATE_METADATA)
StopReplicaResponse = response_class(ApiKey.STOP_REPLICA)
ControlledShutdownResponse = response_class(ApiKey.CONTROLLED_SHUTDOWN)


def _states(body, version: int) -> list:
    if version >= 2:
        return [(t.topic_name, ps) for t in body.topic_states for ps in t.partition_states]
    return [(ps.topic_name, ps) for ps in body.ungrouped_partition_states]


def _live_leaders(body, version: int) -> dict:
    return {lead.broker_id: (lead.host_name, lead.port) for lead in (body.live_leaders or ())}


async def leader_and_isr(broker, body, version: int):
    states = _states(body, version)
    topic_ids = {t.topic_name: t.topic_id for t in body.topic_states} if version >= 5 else {}
    if body.controller_epoch < broker.replica_manager.controller_epoch:
        results = {(t, ps.partition_index): ErrorCode.STALE_CONTROLLER_EPOCH for t, ps in states}
        top = ErrorCode.STALE_CONTROLLER_EPOCH
    else:
        results = await broker.replica_manager.become_leader_or_follower(
            body.controller_id, body.controller_epoch, states, topic_ids, _live_leaders(body, version))
        top = ErrorCode.NONE
        _transaction_state_leadership(broker, states, results)
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


def _transaction_state_leadership(broker, states, results) -> None:
    """The transaction coordinator loads the ``__transaction_state`` partitions this broker now leads (coordinator
    epoch = leader epoch) and unloads those it follows (Kafka's ``onLeadershipChange``)."""
    txn = [(ps, results.get((t, ps.partition_index))) for t, ps in states if t == TRANSACTION_STATE_TOPIC]
    if txn and hasattr(broker, "on_transaction_state_partitions"):
        broker.on_transaction_state_partitions(
            {ps.partition_index: ps.leader_epoch for ps, code in txn
             if code == ErrorCode.NONE and ps.leader == broker.broker_id},
            {ps.partition_index: ps.leader_epoch for ps, _ in txn if ps.leader != broker.broker_id})


def update_metadata(broker, body, version: int):
    # One controller epoch per broker (Kafka's ReplicaManager.controllerEpoch), raised by UpdateMetadata as well
    # as LeaderAndIsr: a broker hosting no replica hears from a new controller only through UpdateMetadata, and
    # must still refuse a zombie's LeaderAndIsr afterwards.
    if body.controller_epoch < broker.replica_manager.controller_epoch:
        return UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    try:
        deleted = broker.metadata_cache.update_metadata(body, version)
    except ValueError:
        return UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    broker.replica_manager.controller_epoch = body.controller_epoch
    for topic in deleted:
        broker.on_topic_deleted(topic)
    for topic, state in _update_metadata_states(body, version):   # elections waiting for these leaders
        broker.replica_manager.try_complete_election((topic, state.partition_index))
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


def _update_metadata_states(body, version: int) -> list:
    if version >= 5:
        return [(t.topic_name, ps) for t in body.topic_states for ps in t.partition_states]
    return [(ps.topic_name, ps) for ps in body.ungrouped_partition_states]


async def stop_replica(broker, body, version: int):
    if version >= 3:
        parts = [(t.topic_name, ps.partition_index, ps.delete_partition) for t in body.topic_states
                 for ps in t.partition_states]
    elif version >= 1:
        parts = [(t.name, p, body.delete_partitions) for t in body.topics for p in t.partition_indexes]
    else:
        parts = [(p.topic_name, p.partition_index, body.delete_partitions) for p in body.ungrouped_partitions]
    results = await broker.replica_manager.stop_replicas(body.controller_epoch, parts)
    stopped = [p for t, p, _ in parts if t == "__consumer_offsets" and results.get((t, p)) == ErrorCode.NONE]
    txn_stopped = {p: None for t, p, _ in parts if t == TRANSACTION_STATE_TOPIC and results.get((t, p)) == ErrorCode.NONE}
    if txn_stopped and hasattr(broker, "on_transaction_state_partitions"):
        broker.on_transaction_state_partitions({}, txn_stopped)
    if stopped and hasattr(broker, "on_offsets_partitions"):
        broker.on_offsets_partitions({}, stopped)
    R = StopReplicaResponse
    stale = any(code == ErrorCode.STALE_CONTROLLER_EPOCH for code in results.values())
    return R(error_code=ErrorCode.STALE_CONTROLLER_EPOCH if stale else ErrorCode.NONE,
             partition_errors=tuple(R.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
                                    for (t, p), code in results.items()))


# ---------------------------------------------------------------------------------------------- over the network
def _refusal(broker, request) -> int:
    """NONE, or why this controller request is refused (ClusterAuthorizationException without CLUSTER_ACTION)."""
    broker.auth.require_cluster(request.context, AclOperation.CLUSTER_ACTION)
    epoch = getattr(request.body, "broker_epoch", -1)
    if epoch is not None and 0 <= epoch < broker.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    return ErrorCode.NONE


def _leader_and_isr_error(request, code, message):
    return LeaderAndIsrResponse(error_code=code)


@handles(ApiKey.LEADER_AND_ISR, versions=(0, 7), error_response=_leader_and_isr_error)
def handle_leader_and_isr(broker, request):
    code = _refusal(broker, request)
    if code:
        return LeaderAndIsrResponse(error_code=code)
    return leader_and_isr(broker, request.body, request.context.api_version)


@handles(ApiKey.STOP_REPLICA, versions=(0, 4), error_response=lambda req, code, msg: StopReplicaResponse(
    error_code=code))
def handle_stop_replica(broker, request):
    code = _refusal(broker, request)
    if code:
        return StopReplicaResponse(error_code=code)
    return stop_replica(broker, request.body, request.context.api_version)


@handles(ApiKey.UPDATE_METADATA, versions=(0, 8), error_response=lambda req, code, msg: UpdateMetadataResponse(
    error_code=code))
def handle_update_metadata(broker, request):
    code = _refusal(broker, request)
    if code:
        return UpdateMetadataResponse(error_code=code)
    return update_metadata(broker, request.body, request.context.api_version)


@handles(ApiKey.CONTROLLED_SHUTDOWN, versions=(0, 3), error_response=lambda req, code, msg: ControlledShutdownResponse(
    error_code=code))
def handle_controlled_shutdown(broker, request):
    R = ControlledShutdownResponse
    broker.auth.require_cluster(request.context, AclOperation.CLUSTER_ACTION)
    controller = broker.controller
    if controller is None or not controller.is_active:
        return R(error_code=ErrorCode.NOT_CONTROLLER)
    body = request.body
    epoch = getattr(body, "broker_epoch", -1)
    future = controller.controlled_shutdown(body.broker_id, -1 if epoch is None else epoch)

    async def answer():
        code, remaining = await future
        return R(error_code=code, remaining_partitions=tuple(
            R.RemainingPartition(topic_name=t, partition_index=p) for t, p in remaining))
    return Delayed(answer())
