"""ElectLeaders (API 43): an operator asks for leaders to be chosen again, PREFERRED or UNCLEAN.

Theory of operation
-------------------
Any broker takes the request (the clients send it to the controller they see in Metadata); it hands the
partitions to its own controller module, and only the active controller elects (the others answer
NOT_CONTROLLER per partition) -- :mod:`kafkalab.controller.replica_election` has the rules and the errors. The
answer is not sent when the controller has decided but when this broker's metadata shows each new leader
(the ElectLeader purgatory, :class:`~kafkalab.purgatory.DelayedElectLeader`), or after ``timeout_ms``
(REQUEST_TIMED_OUT for the partitions still waiting: the election happened, its news had not arrived).

* ``topic_partitions`` null means every partition in the cluster; the answer then lists only the partitions
  that were elected or failed, never the ELECTION_NOT_NEEDED ones. A partition named twice is elected once.
* v0 has no ``election_type`` (PREFERRED) and no top-level ``error_code``; v1 adds both, v2 is flexible.
* The request needs ALTER on the cluster: without it the top-level error is CLUSTER_AUTHORIZATION_FAILED and
  every named partition carries it too (none when the request named none).
* An ``election_type`` other than 0 or 1 is refused as Kafka's ``ElectionType.valueOf`` refuses it: an
  IllegalArgumentException, which the request pipeline turns into UNKNOWN_SERVER_ERROR (no message) at the top
  and for every named partition.

Mirrors ``KafkaApis.handleElectLeaders``, ``ReplicaManager.electLeaders`` and ``ElectLeadersRequest.getErrorResponse``.
"""
from __future__ import annotations

import logging
from typing import Optional

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.protocol.election_type import ElectionType
from kafkalab.security.acl import AclOperation
from kafkalab.server.apis.base import Delayed, callback_future, handles

__all__ = ["handle_elect_leaders"]

log = logging.getLogger("kafkalab.server.KafkaApis")

ElectLeadersResponse = response_class(ApiKey.ELECT_LEADERS)


def _requested(body) -> Optional[list[tuple[str, int]]]:
    """The partitions named (each once), or None for "every partition"."""
    if body.topic_partitions is None:
        return None
    return sorted({(t.topic, p) for t in body.topic_partitions for p in t.partitions})


def _response(version: int, error_code: int, outcomes: dict):
    """``outcomes``: ``{(topic, partition): None (elected) or ApiException}``; grouped by topic, as Kafka does.
    A partition's message is null unless it says more than its error's default text."""
    R = ElectLeadersResponse
    by_topic: dict[str, list] = {}
    for (topic, partition), error in sorted(outcomes.items()):
        code, message = ErrorCode.NONE, None
        if error is not None:
            code = error.error_code
            message = None if error.message == error.info.message else error.message
        by_topic.setdefault(topic, []).append(R.PartitionResult(partition_id=partition, error_code=code,
                                                                error_message=message))
    fields = {"error_code": error_code} if version >= 1 else {}
    return R(throttle_time_ms=0, replica_election_results=tuple(
        R.ReplicaElectionResult(topic=t, partition_result=tuple(ps)) for t, ps in by_topic.items()), **fields)


def _refused(request, code: int, message: Optional[str] = None):
    """Every named partition, and the top level, with ``code`` (``ElectLeadersRequest.getErrorResponse``)."""
    error = ApiException(code, message)
    return _response(request.context.api_version, code,
                     {tp: error for tp in _requested(request.body) or ()})


def _elect_leaders_error(request, code: int, message: Optional[str]):
    return _refused(request, code, message)


def _all_partitions(broker) -> list[tuple[str, int]]:
    cache = broker.metadata_cache
    return [(topic, p.partition) for topic in cache.topics() for p in cache.partitions(topic)]


@handles(ApiKey.ELECT_LEADERS, versions=(0, 2), error_response=_elect_leaders_error)
def handle_elect_leaders(broker, request):
    body, version = request.body, request.context.api_version
    requested = _requested(body)
    if not broker.auth.authorize_cluster(request.context, AclOperation.ALTER):
        return _refused(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        election_type = ElectionType.PREFERRED if version == 0 else ElectionType.of(body.election_type)
    except ValueError as e:   # Kafka: IllegalArgumentException, answered as UNKNOWN_SERVER_ERROR without a message
        log.info("[KafkaApi-%s] ElectLeaders refused: %s", broker.broker_id, e)
        return _refused(request, ErrorCode.UNKNOWN_SERVER_ERROR)
    partitions = requested if requested is not None else _all_partitions(broker)
    answered, callback = callback_future()
    controller = broker.controller
    if controller is None:
        callback({tp: ApiException(ErrorCode.NOT_CONTROLLER) for tp in partitions})
    else:
        broker.replica_manager.elect_leaders(controller, partitions, election_type, callback, body.timeout_ms)

    async def answer():
        outcomes = await answered
        if requested is None:   # "all partitions": only those that were elected or failed
            outcomes = {tp: e for tp, e in outcomes.items()
                        if e is None or e.error_code != ErrorCode.ELECTION_NOT_NEEDED}
        return _response(version, ErrorCode.NONE, outcomes)
    return Delayed(answer())
