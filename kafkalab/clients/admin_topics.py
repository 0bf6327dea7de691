"""DescribeTopicPartitions for the admin client: each partition's eligible leader replicas (KIP-966).

Theory of operation
-------------------
Since Kafka 3.8 the admin client describes topics by name with DescribeTopicPartitions (API 75) when the broker
advertises it, and falls back to Metadata when it does not. Only DescribeTopicPartitions carries a partition's
``EligibleLeaderReplicas`` and ``LastKnownElr``; Metadata has neither, which Kafka's ``TopicPartitionInfo`` shows
as null (kafka-topics.sh prints ``Elr: N/A``). The response is paged: at most ``ResponsePartitionLimit``
partitions per response, and a ``NextCursor`` (topic, partition) to ask again from.

:func:`describe_elr` returns ``{topic: {partition: (elr, last_known_elr)}}``, or None when the broker does not
support the request (the caller then has only Metadata's view). Per-topic errors become
:class:`~kafkalab.clients.errors.KafkaProtocolError` values in the dict.

Mirrors ``KafkaAdminClient.generateDescribeTopicsCallWithDescribeTopicPartitionsApi`` and
``DescribeTopicPartitionsResponse.partitionToTopicPartitionInfo``.
"""
from __future__ import annotations

from typing import Optional

from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.protocol import ApiKey, request_class

__all__ = ["describe_elr", "DEFAULT_PARTITION_LIMIT"]

#: ``DescribeTopicsOptions.partitionSizeLimitPerResponse``'s default (and the request field's)
DEFAULT_PARTITION_LIMIT = 2000


async def describe_elr(client, names, partition_limit: int = DEFAULT_PARTITION_LIMIT) -> Optional[dict]:
    node = client.least_loaded_node()
    conn = await client.connection(node)
    if not conn.api_versions.supports(ApiKey.DESCRIBE_TOPIC_PARTITIONS):
        return None
    cls = request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
    out: dict = {}
    cursor = None
    while True:
        body = cls(topics=tuple(cls.TopicRequest(name=n) for n in sorted(names)),
                   response_partition_limit=partition_limit, cursor=cursor)
        resp = (await conn.send(body)).body
        for t in resp.topics:
            if t.error_code:
                out[t.name] = KafkaProtocolError(t.error_code, None)
                continue
            partitions = out.setdefault(t.name, {})
            for p in t.partitions:
                partitions[p.partition_index] = (tuple(p.eligible_leader_replicas or ()),
                                                 tuple(p.last_known_elr or ()))
        nxt = resp.next_cursor
        if nxt is None:
            return out
        following = cls.Cursor(topic_name=nxt.topic_name, partition_index=nxt.partition_index)
        if following == cursor:           # a broker that does not move on: what was answered is all there is
            return out
        cursor = following
