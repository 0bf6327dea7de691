"""Metadata: brokers, topics, partitions, leaders -- the map a client routes its requests by.

Theory of operation
-------------------
A client starts from one or two ``bootstrap.servers`` and asks any broker for metadata: the live brokers
(with the host and port of *the listener the client came in on*), the controller, and for each topic its
partitions with leader, leader epoch, replicas and ISR. It caches the answer and sends each Produce and
Fetch to the leader of the partition. When the answer is stale -- a broker says NOT_LEADER_OR_FOLLOWER -- it
asks again.

The broker answers from its metadata cache (filled by the controller's UpdateMetadata requests), never from
ZooKeeper directly. Asking for a topic that does not exist creates it when ``auto.create.topics.enable`` is
true and the client allows it (v4+ ``allow_auto_topic_creation``); the answer for that topic is then
LEADER_NOT_AVAILABLE, because creation is asynchronous: the client retries and finds the new leader.

With an authorizer, a topic needs DESCRIBE: a named one the principal may not describe is answered
TOPIC_AUTHORIZATION_FAILED, and an all-topics request silently leaves it out (a client cannot even learn that
it exists). Auto-creation needs CREATE on the cluster or the topic. v8+ can ask for the *authorized
operations* of each topic (and, v8-10, of the cluster) as a bit field, bit ``n`` for the operation of code n.

Version notes: v0 asks for all topics with an empty array, v1+ with null; v10+ returns topic ids, and from v12
a topic may be asked for by id (v10 and v11 have the field but refuse a null name or a non-zero id with
INVALID_REQUEST); v13 adds a top-level error code. A topic named twice is answered once: Kafka reads the list
as a set (and a response repeating a 50-partition topic 30,000 times would not fit in memory).

Mirrors: ``KafkaApis.handleTopicMetadataRequest``, ``ZkMetadataCache.getTopicMetadata``.
"""
from __future__ import annotations

import uuid

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kafkalab.server.apis.base import handles
from kafkalab.server.metadata_cache import NO_LEADER

Response = response_class(ApiKey.METADATA)
Topic = Response.MetadataResponseTopic
Partition = Response.MetadataResponsePartition
Broker = Response.MetadataResponseBroker
ZERO_UUID = uuid.UUID(int=0)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def _error(request, code, message):
    topics = request.body.topics or ()
    # a null name (asked by id) is answered as "", as Kafka's MetadataRequest.getErrorResponse does
    return Response(topics=tuple(Topic(error_code=code, name="" if t.name is None else t.name,
                                       topic_id=getattr(t, "topic_id", ZERO_UUID)) for t in topics), error_code=code)


def _check_ids_unused(topics, version: int) -> None:
    """v10 and v11 carry topic ids but cannot use them (``KafkaApis.handleTopicMetadataRequest``)."""
    for t in topics:
        if t.name is None:
            raise ApiException(ErrorCode.INVALID_REQUEST, f"Topic name can not be null for version {version}")
        if t.topic_id != ZERO_UUID:
            raise ApiException(ErrorCode.INVALID_REQUEST,
                               f"Topic IDs are not supported in requests for version {version}")


@handles(ApiKey.METADATA, versions=(0, 13), error_response=_error)
def handle_metadata(broker, request):
    body, version = request.body, request.context.api_version
    cache = broker.metadata_cache
    listener = request.context.listener_name
    if body.topics is None or (version == 0 and not body.topics):
        wanted = [(name, None) for name in cache.topics()]
        all_topics = True
    else:
        if 10 <= version < 12:
            _check_ids_unused(body.topics, version)
        wanted = list(dict.fromkeys((t.name, t.topic_id if version >= 10 else None) for t in body.topics))
        all_topics = False
    allow_auto = body.allow_auto_topic_creation if version >= 4 else True
    auth, context = broker.auth, request.context
    if auth.enabled:
        wanted = [(name, topic_id) for name, topic_id in wanted if name is None or not all_topics
                  or auth.authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=False)]
    topics = []
    to_create = []
    for name, topic_id in wanted:
        by_id = name is None and topic_id is not None
        if by_id:  # v10+: asked by id
            name = cache.topic_name(topic_id)
            if name is None:
                topics.append(Topic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id))
                continue
        if not all_topics and not auth.authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            # asked by id: the name is not given away (Kafka clears it)
            topics.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None if by_id else name,
                                topic_id=topic_id if by_id else ZERO_UUID))
        elif cache.contains_topic(name):
            topics.append(_topic(broker, name, listener, version))
        elif not all_topics and allow_auto and broker.config["auto.create.topics.enable"]:
            if _may_create(auth, context, name):
                to_create.append(name)
            else:
                topics.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name))
        else:
            topics.append(Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name))
    if version >= 8 and body.include_topic_authorized_operations:
        topics = [t._replace(topic_authorized_operations=auth.authorized_operations(
            context, ResourceType.TOPIC, t.name)) if t.error_code == ErrorCode.NONE else t for t in topics]
    if to_create:
        for name, error in broker.admin.auto_create_topics(to_create).items():
            # A topic just created has no leader yet: the client asks again (Kafka answers the same way).
            code = error.error_code if error is not None else ErrorCode.LEADER_NOT_AVAILABLE
            topics.append(Topic(error_code=code, name=name, is_internal=name in INTERNAL_TOPICS))
    brokers = []
    for b in cache.alive_brokers():
        ep = b.endpoints.get(listener)
        if ep is not None:
            brokers.append(Broker(node_id=b.broker_id, host=ep[0], port=ep[1], rack=b.rack))
    controller = cache.controller_id if cache.is_alive(cache.controller_id) else NO_LEADER
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if 8 <= version <= 10 and body.include_cluster_authorized_operations:
        cluster_ops = auth.authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)
    return Response(throttle_time_ms=0, brokers=tuple(brokers), cluster_id=broker.cluster_id,
                    controller_id=controller, topics=tuple(topics), cluster_authorized_operations=cluster_ops)


def _may_create(auth, context, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic (Kafka's ``authorizedForCreate``)."""
    return auth.authorize_cluster(context, AclOperation.CREATE, log_if_denied=False) or \
        auth.authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name)


def _topic(broker, name: str, listener: str, version: int):
    cache = broker.metadata_cache
    partitions = []
    for state in cache.partitions(name):
        error = ErrorCode.NONE
        leader = state.leader
        if leader == NO_LEADER or not cache.is_alive(leader) or cache.broker_endpoint(leader, listener) is None:
            error, leader = ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER
        elif version <= 5 and state.offline_replicas:
            error = ErrorCode.REPLICA_NOT_AVAILABLE  # older clients learn about offline replicas this way
        partitions.append(Partition(
            error_code=error, partition_index=state.partition, leader_id=leader, leader_epoch=state.leader_epoch,
            replica_nodes=state.replicas, isr_nodes=state.isr, offline_replicas=state.offline_replicas))
    return Topic(error_code=ErrorCode.NONE, name=name, topic_id=cache.topic_id(name),
                 is_internal=name in INTERNAL_TOPICS, partitions=tuple(partitions))
