"""FindCoordinator and InitProducerId: where a group lives, and ids for idempotent producers.

Theory of operation
-------------------
**FindCoordinator.** Every consumer group is managed by one broker, its *coordinator*: the leader of one
partition of the internal topic ``__consumer_offsets``, where the group's committed offsets and membership
are stored (key_type 0). A transactional id (key_type 1) is managed the same way by the leader of its
partition of ``__transaction_state`` (``transaction.state.log.num.partitions``). Which partition is a pure function of the group id: ``abs(hashCode(group.id)) %
offsets.topic.num.partitions``, with Java's ``String.hashCode`` and Kafka's ``Utils.abs`` (which maps
Integer.MIN_VALUE to 0), so every broker computes the same answer. The topic is created the first time
somebody asks (with ``offsets.topic.num.partitions`` and ``offsets.topic.replication.factor``); until its
leaders are elected the answer is COORDINATOR_NOT_AVAILABLE and the client asks again. v4+ batches several
keys in one request (KIP-699).

**InitProducerId.** An idempotent producer (``enable.idempotence=true``, the default of modern clients) asks
for a producer id before its first Produce; the broker hands out ids from a block reserved in ZooKeeper (see
:mod:`kafkalab.server.producer_id_manager`) with epoch 0. A producer asking again (after a fatal error, KIP-360)
simply gets a fresh id. A transactional producer (with a ``transactional.id``) asks its transaction coordinator,
which keeps one producer id per transactional id and bumps its epoch on every InitProducerId, fencing the
previous instance (:mod:`kafkalab.coordinator.transaction`); v3+ may carry the producer's current id and epoch
(KIP-360: exactly one of them -1 is INVALID_REQUEST). PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH
below v4, which predates it.

**Authorization.** FindCoordinator needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or the transactional
id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). InitProducerId needs WRITE on the transactional id; an idempotent
producer needs IDEMPOTENT_WRITE on the cluster *or* WRITE on any topic (KIP-679), else
CLUSTER_AUTHORIZATION_FAILED.

Mirrors: ``KafkaApis.handleFindCoordinatorRequest``, ``GroupMetadataManager.partitionFor``,
``TransactionCoordinator.handleInitProducerId``.
"""
from __future__ import annotations


from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC, java_string_hash, partition_for  # noqa: F401
from kafkalab.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import Delayed, callback_future, handles, top_level_error
from kafkalab.server.apis.transactions import producer_fenced_for

FindCoordinatorResponse = response_class(ApiKey.FIND_COORDINATOR)
InitProducerIdResponse = response_class(ApiKey.INIT_PRODUCER_ID)


def _find_error(request, code, message):
    if request.context.api_version >= 4:
        return FindCoordinatorResponse(coordinators=tuple(
            FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code,
                                                error_message=message) for k in request.body.coordinator_keys))
    return FindCoordinatorResponse(error_code=code, error_message=message, node_id=-1, host="", port=-1)


def _coordinator(broker, request, key: str, key_type: int, listener: str):
    """(error_code, message, node_id, host, port) for one group (key_type 0) or transactional id (key_type 1)."""
    auth = broker.auth
    if key_type == 0 and not auth.authorize(request.context, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None, -1, "", -1
    if key_type == 1 and not auth.authorize(request.context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                            key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, -1, "", -1
    if key_type not in (0, 1):
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type} in FindCoordinator request", -1, "", -1
    if not key:
        return ErrorCode.INVALID_REQUEST, ("the group id is empty" if key_type == 0 else
                                           "the transactional id is empty"), -1, "", -1
    topic, what = (OFFSETS_TOPIC, "offsets") if key_type == 0 else (TRANSACTION_STATE_TOPIC, "transaction state")
    cache = broker.metadata_cache
    if not cache.contains_topic(topic):
        broker.admin.auto_create_topics([topic])
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the {what} topic is being created", -1, "", -1
    n = cache.partition_count(topic)
    leader = cache.leader_of(topic, partition_for(key, n))
    endpoint = cache.broker_endpoint(leader, listener) if leader >= 0 else None
    if endpoint is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not available", -1, "", -1
    return ErrorCode.NONE, None, leader, endpoint[0], endpoint[1]


@handles(ApiKey.FIND_COORDINATOR, versions=(0, 6), error_response=_find_error)
def handle_find_coordinator(broker, request):
    body, version = request.body, request.context.api_version
    listener = request.context.listener_name
    if version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            code, message, node, host, port = _coordinator(broker, request, key, body.key_type, listener)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port,
                                                                    error_code=code, error_message=message))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=tuple(coordinators))
    code, message, node, host, port = _coordinator(broker, request, body.key, body.key_type, listener)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=message, node_id=node,
                                   host=host, port=port)


@handles(ApiKey.INIT_PRODUCER_ID, versions=(0, 5), error_response=top_level_error(ApiKey.INIT_PRODUCER_ID))
def handle_init_producer_id(broker, request):
    body = request.body
    auth = broker.auth
    if auth.enabled:
        if body.transactional_id is not None:
            if not auth.authorize(request.context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                  body.transactional_id):
                raise ApiException(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not (auth.authorize_cluster(request.context, AclOperation.IDEMPOTENT_WRITE, log_if_denied=False)
                  or auth.authorize_by_resource_type(request.context, AclOperation.WRITE, ResourceType.TOPIC)):
            raise ApiException(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    pid, epoch = body.producer_id, body.producer_epoch
    if (pid == -1) != (epoch == -1):        # exactly one of them given
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1,
                                      producer_epoch=-1)
    expected = None if pid == -1 else (pid, epoch)
    version = request.context.api_version
    fut, callback = callback_future()

    def respond(result):
        return InitProducerIdResponse(throttle_time_ms=0, error_code=producer_fenced_for(result.error, version, 4),
                                      producer_id=result.producer_id, producer_epoch=result.producer_epoch)
    broker.transaction_coordinator.handle_init_producer_id(body.transactional_id, body.transaction_timeout_ms,
                                                           expected, callback)
    if fut.done():
        return respond(fut.result())

    async def later():
        return respond(await fut)
    return Delayed(later())
