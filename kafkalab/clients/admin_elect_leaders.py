"""The admin client's leader elections: ``Admin.elect_leaders`` (ElectLeaders, API 43).

Theory of operation
-------------------
One request to the controller (the broker Metadata names as such) with the election type and the partitions, or
null for every partition in the cluster. The broker answers per partition once its own metadata shows the new
leaders (or ``timeout_ms`` passed), so the outcome is a dict, as Java's ``ElectLeadersResult.partitions()``:
``{TopicPartition: None}`` for an elected partition, ``{TopicPartition: KafkaProtocolError}`` for one that was
not -- ELECTION_NOT_NEEDED when its leader was already the right one, PREFERRED_LEADER_NOT_AVAILABLE or
ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica could lead, NOT_CONTROLLER from a broker that is not the
controller (Java's call does not retry then either). A top-level error (v1+: CLUSTER_AUTHORIZATION_FAILED, ...)
raises instead. A broker that only speaks v0 can run PREFERRED elections only: UNCLEAN then fails here with
Kafka's UnsupportedVersionException message, before anything is sent.

Mirrors ``KafkaAdminClient.electLeaders``, ``ElectLeadersRequest.Builder`` and
``ElectLeadersResponse.electLeadersResult``.
"""
from __future__ import annotations

from typing import Iterable, Optional

from kafkalab.clients.api_versions import UnsupportedVersionError
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.protocol.election_type import ElectionType

__all__ = ["elect_leaders"]


def _topic_partitions(cls, partitions: Optional[Iterable]) -> Optional[tuple]:
    if partitions is None:
        return None
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(int(partition))
    return tuple(cls.TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())


async def elect_leaders(client, controller: int, election_type: int, partitions: Optional[Iterable],
                        timeout_ms: int) -> dict:
    """``{TopicPartition: None or KafkaProtocolError}`` of one ElectLeaders request to ``controller``."""
    election_type = ElectionType.of(int(election_type))
    cls = request_class(ApiKey.ELECT_LEADERS)
    conn = await client.connection(controller)
    version = conn.version_for(ApiKey.ELECT_LEADERS)
    if version == 0 and election_type != ElectionType.PREFERRED:
        raise UnsupportedVersionError("API Version 0 only supports PREFERRED election type")
    body = cls(election_type=int(election_type), topic_partitions=_topic_partitions(cls, partitions),
               timeout_ms=int(timeout_ms))
    response = (await conn.send(body, version)).body
    if version >= 1 and response.error_code != ErrorCode.NONE:
        raise KafkaProtocolError(response.error_code, None)
    return {TopicPartition(r.topic, p.partition_id): (KafkaProtocolError(p.error_code, p.error_message)
                                                     if p.error_code != ErrorCode.NONE else None)
            for r in response.replica_election_results for p in r.partition_result}
