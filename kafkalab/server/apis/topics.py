"""Topics: CreateTopics, DeleteTopics, CreatePartitions -- changing the cluster's map of topics.

Theory of operation
-------------------
In the ZooKeeper era only the **controller** changes the topic map, and it does so by reacting to ZooKeeper.
A client therefore sends these three requests to the broker that Metadata names as controller; any other
broker answers NOT_CONTROLLER and the client asks Metadata again.

The controller's broker does not create anything itself. For each topic it:

1. checks the request (see below), then decides the replica assignment and writes it to
   ``/brokers/topics/<topic>`` (CreateTopics, CreatePartitions) or writes the deletion marker
   ``/admin/delete_topics/<topic>`` (DeleteTopics) -- :mod:`kafkalab.server.admin_manager`;
2. lets the controller logic do the real work: it elects leaders and sends LeaderAndIsr and UpdateMetadata
   (a new topic), or StopReplica with ``delete`` and an UpdateMetadata that drops the topic (a deletion);
3. if the client gave ``timeout_ms > 0``, **waits** -- without holding a request handler, the answer is
   :class:`~kafkalab.server.apis.base.Delayed` -- until its own metadata cache shows the result: every
   partition with a leader, or the topic gone. If that does not happen in time the topic's answer is
   REQUEST_TIMED_OUT, even though the change is under way and will complete. With ``timeout_ms <= 0`` the
   answer is REQUEST_TIMED_OUT at once for every topic that was accepted: "started, not confirmed"
   (librdkafka hides that code when it asked with no timeout).

What is checked, per topic, with Kafka's error codes:

* Both creating requests -- more than 10,000 new partitions in the whole request (counted over its topics:
  ``num_partitions``, ``num.partitions`` for -1, or the manual assignment's size; for CreatePartitions the
  partitions each ``count`` adds): POLICY_VIOLATION "Excessively large number of partitions per request." for
  every topic, nothing created (Kafka's ``MAX_PARTITIONS_PER_BATCH``).
* CreateTopics -- a name listed twice in one request: INVALID_REQUEST for each entry; the name rules
  (INVALID_TOPIC_EXCEPTION); already there or being deleted: TOPIC_ALREADY_EXISTS; ``num_partitions`` and
  ``replication_factor`` (``-1`` means the broker's ``num.partitions`` / ``default.replication.factor``):
  INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (more replicas than brokers); a manual assignment instead of
  the two counts: INVALID_REPLICA_ASSIGNMENT, or INVALID_REQUEST when both are given; configs:
  INVALID_CONFIG with Kafka's message (``Invalid value 10 for configuration segment.bytes: Value must be at
  least 14``). ``validate_only`` runs every check and writes nothing. From v5 the answer also carries the
  partition count, replication factor and every config of the topic with its source (so a client learns the
  defaults it got); from v7 the topic id.
* Versions 0-7 and 0-6 as Kafka 3.9 (4.0 removed CreateTopics v0-1 and DeleteTopics v0): CreateTopics v1 adds
  ``validate_only`` and the error message, v2 the throttle time; DeleteTopics v1 the throttle time.
* DeleteTopics -- unknown topic: UNKNOWN_TOPIC_OR_PARTITION; from v6 a topic may be named by id
  (UNKNOWN_TOPIC_ID if no topic has it; giving both name and id is an INVALID_REQUEST);
  ``delete.topic.enable=false``: TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3).
* CreatePartitions -- partitions can only be added: a count equal to or below the current one is
  INVALID_PARTITIONS; an optional replica list per *new* partition; ``validate_only``; a topic queued for
  deletion is an INVALID_TOPIC_EXCEPTION. Adding partitions changes which partition a key hashes to.

With an authorizer: CreateTopics needs CREATE on the cluster or on the topic, DeleteTopics DELETE on the topic,
CreatePartitions ALTER on the topic; a topic refused gets TOPIC_AUTHORIZATION_FAILED, the others go on.

Mirrors: ``KafkaApis.handleCreateTopicsRequest``, ``handleDeleteTopicsRequest``,
``handleCreatePartitionsRequest``; ``ZkAdminManager.createTopics``, ``deleteTopics``, ``createPartitions``;
``DelayedCreatePartitions.scala``, ``DelayedDeleteTopics.scala``.
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Optional

from kafkalab.controller.channel import topic_uuid
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.admin_manager import validate_total_number_of_partitions
from kafkalab.server.apis.base import Delayed, handles
from kafkalab.server.metadata_cache import NO_LEADER
from kafkalab.storage.log_config import LogConfig

__all__ = ["handle_create_topics", "handle_delete_topics", "handle_create_partitions"]

log = logging.getLogger("kafkalab.server.apis.topics")

CreateTopicsResponse = response_class(ApiKey.CREATE_TOPICS)
DeleteTopicsResponse = response_class(ApiKey.DELETE_TOPICS)
CreatePartitionsResponse = response_class(ApiKey.CREATE_PARTITIONS)
ZERO_UUID = uuid.UUID(int=0)
#: KRaft's metadata log; Kafka refuses to create a topic of that name in any mode.
CLUSTER_METADATA_TOPIC = "__cluster_metadata"


# ---------------------------------------------------------------------------------------------- helpers

def _is_active_controller(broker) -> bool:
    controller = broker.controller
    return controller is not None and controller.is_active


def _failure(e: Exception) -> tuple[int, Optional[str]]:
    """(error code, message) of an exception, as ``ApiError.fromThrowable``; no message when there is nothing
    beyond the error's default text."""
    if not isinstance(e, ApiException):
        log.exception("unexpected error in an admin request")
        return ErrorCode.UNKNOWN_SERVER_ERROR, None
    message = str(e)
    return e.error_code, (None if message == e.info.message else message)


def _all_have_leaders(broker, pending: dict[str, list[int]]):
    """The check a creating request waits on: true once this broker's metadata cache shows a leader for every
    partition in ``pending``. It forgets the partitions already seen with one, so a look every few milliseconds
    costs only what is still missing, not a thousand lookups each time (the answer re-checks them all)."""
    cache = broker.metadata_cache
    missing = [(topic, p) for topic, partitions in pending.items() for p in partitions]

    def done() -> bool:
        nonlocal missing
        while missing:
            state = cache.partition_state(*missing[-1])
            if state is None or state.leader == NO_LEADER:
                return False
            missing.pop()
        return True
    return done


def _missing_leaders(broker, topic: str, partitions) -> int:
    """Partitions of ``topic`` that this broker's metadata cache does not show with a leader yet."""
    cache = broker.metadata_cache
    missing = 0
    for p in partitions:
        state = cache.partition_state(topic, p)
        if state is None or state.leader == NO_LEADER:
            missing += 1
    return missing


# ---------------------------------------------------------------------------------------------- CreateTopics

def _create_topics_error(request, code, message):
    R = CreateTopicsResponse
    return R(throttle_time_ms=0, topics=tuple(R.CreatableTopicResult(name=t.name, error_code=code,
                                                                      error_message=message)
                                               for t in request.body.topics))


def _topic_configs(broker, overrides: dict) -> tuple:
    """Every config the new topic gets, with its source (``ZkAdminManager.maybePopulateMetadataAndConfigs``)."""
    R = CreateTopicsResponse
    config = LogConfig.from_broker(broker.config.originals, overrides)
    return tuple(R.CreatableTopicConfigs(name=c.name, value=None if c.is_sensitive else c.value,
                                         read_only=c.read_only, config_source=int(c.config_source),
                                         is_sensitive=c.is_sensitive)
                 for c in config.describe(include_synonyms=False))


@handles(ApiKey.CREATE_TOPICS, versions=(0, 7), error_response=_create_topics_error)
def handle_create_topics(broker, request):
    body, version = request.body, request.context.api_version
    R = CreateTopicsResponse
    if not _is_active_controller(broker):
        return R(throttle_time_ms=0, topics=tuple(R.CreatableTopicResult(name=t.name,
                                                                          error_code=ErrorCode.NOT_CONTROLLER)
                                                   for t in body.topics))
    entries = Counter(t.name for t in body.topics)    # a name given more than once is refused each time
    # The whole request fails (POLICY_VIOLATION for every topic) before anything is placed; names given more than
    # once are refused on their own and count for nothing (Kafka's ControllerApis drops them first).
    validate_total_number_of_partitions(broker.admin.partitions_to_create(t.num_partitions, len(t.assignments))
                                        for t in body.topics if entries[t.name] == 1)
    results: list[dict] = []
    pending: dict[str, list[int]] = {}          # created topic -> its partitions (to wait for)
    auth, context = broker.auth, request.context
    on_cluster = auth.authorize_cluster(context, AclOperation.CREATE, log_if_denied=False)

    def may_create(name: str) -> bool:          # CREATE on the cluster, or on the topic
        return on_cluster or auth.authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name)
    for t in body.topics:
        result = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(result)
        if t.name == CLUSTER_METADATA_TOPIC:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")
            continue
        if entries[t.name] > 1:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Found multiple entries for this topic.")
            continue
        if not may_create(t.name):
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message="Authorization failed.")
            continue
        configs = {c.name: c.value for c in t.configs}
        assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        try:
            placed, topic_id = broker.admin.create_topic(t.name, t.num_partitions, t.replication_factor,
                                                         assignment or None, configs, body.validate_only)
        except Exception as e:
            code, message = _failure(e)
            result.update(error_code=code, error_message=message)
            continue
        if version >= 5:  # "what you got": counts and every config, before the topic even exists
            result.update(num_partitions=len(placed), replication_factor=len(placed[0]),
                          configs=_topic_configs(broker, configs))
        if topic_id is not None:
            result["topic_id"] = topic_uuid(topic_id)
        if not body.validate_only:
            pending[t.name] = sorted(placed)

    def respond(waited: bool):
        for result in results:
            name = result["name"]
            if name in pending and (not waited or _missing_leaders(broker, name, pending[name])):
                result.update(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=None)
            if result["error_code"] != ErrorCode.NONE:  # a failed topic reports no counts and no configs
                result.update(num_partitions=-1, replication_factor=-1, configs=())
        return R(throttle_time_ms=0, topics=tuple(R.CreatableTopicResult(**r) for r in results))

    if body.timeout_ms <= 0 or not pending:
        return respond(waited=False)

    async def wait():
        await broker.admin.wait_for(_all_have_leaders(broker, pending), body.timeout_ms)
        return respond(waited=True)
    return Delayed(wait())


# ---------------------------------------------------------------------------------------------- DeleteTopics

def _requested(body, version: int) -> list[tuple[Optional[str], uuid.UUID]]:
    if version >= 6:
        return [(t.name, t.topic_id) for t in body.topics]
    return [(name, ZERO_UUID) for name in body.topic_names]


def _delete_topics_error(request, code, message):
    R = DeleteTopicsResponse
    version = request.context.api_version
    return R(throttle_time_ms=0, responses=tuple(
        R.DeletableTopicResult(name=name if name is not None or version >= 6 else "", topic_id=topic_id,
                               error_code=code)
        for name, topic_id in _requested(request.body, version)))


@handles(ApiKey.DELETE_TOPICS, versions=(0, 6), error_response=_delete_topics_error)
def handle_delete_topics(broker, request):
    body, version = request.body, request.context.api_version
    R = DeleteTopicsResponse
    wanted = _requested(body, version)

    def answer(rows):
        return R(throttle_time_ms=0, responses=tuple(
            R.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code) for name, topic_id, code in rows))

    if not _is_active_controller(broker):
        return answer([(name, tid, ErrorCode.NOT_CONTROLLER) for name, tid in wanted])
    if not broker.config["delete.topic.enable"]:
        code = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return answer([(name, tid, code) for name, tid in wanted])
    for name, tid in wanted:
        if name is not None and tid != ZERO_UUID:
            raise ApiException(ErrorCode.INVALID_REQUEST, "Topic name and topic ID can not both be specified.")
    cache = broker.metadata_cache
    rows: list[list] = []
    accepted: list[str] = []
    for name, tid in wanted:
        if tid != ZERO_UUID:
            name = cache.topic_name(tid)
        row = [name, tid, ErrorCode.NONE]
        rows.append(row)
        if name is None:
            row[2] = ErrorCode.UNKNOWN_TOPIC_ID
        elif not broker.auth.authorize(request.context, AclOperation.DELETE, ResourceType.TOPIC, name):
            row[2] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not cache.contains_topic(name):
            row[2] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif name not in accepted:
            try:
                broker.admin.delete_topic(name)
                accepted.append(name)
            except Exception as e:
                row[2] = _failure(e)[0]

    def respond(waited: bool):
        for row in rows:
            if row[2] == ErrorCode.NONE and (not waited or cache.contains_topic(row[0])):
                row[2] = ErrorCode.REQUEST_TIMED_OUT
        return answer(rows)

    if body.timeout_ms <= 0 or not accepted:
        return respond(waited=False)

    async def wait():
        await broker.admin.wait_for(lambda: not any(cache.contains_topic(n) for n in accepted), body.timeout_ms)
        return respond(waited=True)
    return Delayed(wait())


# ---------------------------------------------------------------------------------------------- CreatePartitions

def _create_partitions_error(request, code, message):
    R = CreatePartitionsResponse
    return R(throttle_time_ms=0, results=tuple(R.CreatePartitionsTopicResult(name=t.name, error_code=code,
                                                                             error_message=message)
                                               for t in request.body.topics))


@handles(ApiKey.CREATE_PARTITIONS, versions=(0, 3), error_response=_create_partitions_error)
def handle_create_partitions(broker, request):
    body = request.body
    R = CreatePartitionsResponse
    results: dict[str, list] = {}                # topic -> [error code, message], in request order
    if not _is_active_controller(broker):
        for t in body.topics:
            results[t.name] = [ErrorCode.NOT_CONTROLLER, None]
    entries = Counter(t.name for t in body.topics)    # a name given more than once is refused each time
    if not results:  # as CreateTopics: the partitions the whole request adds, before anything is placed
        validate_total_number_of_partitions(broker.admin.partitions_to_add(t.name, t.count)
                                            for t in body.topics if entries[t.name] == 1)
    pending: dict[str, list[int]] = {}
    for t in body.topics:
        if t.name in results:
            continue
        if entries[t.name] > 1:  # one answer per duplicated name
            results[t.name] = [ErrorCode.INVALID_REQUEST, "Duplicate topic in request."]
            continue
        if not broker.auth.authorize(request.context, AclOperation.ALTER, ResourceType.TOPIC, t.name):
            results[t.name] = [ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."]
            continue
        if broker.admin.is_topic_queued_for_deletion(t.name):
            results[t.name] = [ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."]
            continue
        assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        try:
            partitions = broker.admin.create_partitions(t.name, t.count, assignment, body.validate_only)
            results[t.name] = [ErrorCode.NONE, None]
            if not body.validate_only:
                pending[t.name] = partitions
        except Exception as e:
            results[t.name] = list(_failure(e))

    def respond(waited: bool):
        for name, partitions in pending.items():
            if not waited or _missing_leaders(broker, name, partitions):
                results[name] = [ErrorCode.REQUEST_TIMED_OUT, None]
        return R(throttle_time_ms=0, results=tuple(
            R.CreatePartitionsTopicResult(name=name, error_code=code, error_message=message)
            for name, (code, message) in results.items()))

    if body.timeout_ms <= 0 or not pending:
        return respond(waited=False)

    async def wait():
        await broker.admin.wait_for(_all_have_leaders(broker, pending), body.timeout_ms)
        return respond(waited=True)
    return Delayed(wait())
