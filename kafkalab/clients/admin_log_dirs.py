"""The admin client's log-directory description: ``Admin.describe_log_dirs`` (DescribeLogDirs).

Theory of operation
-------------------
Each broker knows only its own disks, so the question goes to every broker asked about, one DescribeLogDirs
each (``topics`` null: every partition). A broker answers per log directory: an error code (a directory that
failed is listed with KAFKA_STORAGE_ERROR), and per replica its size in bytes, its offset lag (log end minus
high watermark) and whether it is a *future* replica being moved there by AlterReplicaLogDirs.

Mirrors ``KafkaAdminClient.describeLogDirs`` and ``clients/.../admin/{LogDirDescription,ReplicaInfo}.java``.
"""
from __future__ import annotations

import dataclasses

from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.protocol import ApiKey, request_class

__all__ = ["LogDirDescription", "ReplicaInfo", "describe_log_dirs"]


@dataclasses.dataclass(frozen=True)
class ReplicaInfo:
    size: int
    offset_lag: int
    is_future: bool


@dataclasses.dataclass(frozen=True)
class LogDirDescription:
    error: object                    # None, or the KafkaProtocolError of the directory's error code
    replica_infos: dict              # {TopicPartition: ReplicaInfo}, in the broker's order
    total_bytes: int = -1
    usable_bytes: int = -1


async def describe_log_dirs(client, broker_ids) -> dict:
    """``{broker id: {log dir: LogDirDescription}}``; a broker-level error raises KafkaProtocolError."""
    cls = request_class(ApiKey.DESCRIBE_LOG_DIRS)
    out = {}
    await client.update_metadata()                      # to know the brokers' addresses
    for broker in broker_ids:
        resp = await client.send(broker, cls(topics=None))
        body = resp.body
        if getattr(body, "error_code", 0):
            raise KafkaProtocolError(body.error_code, f"DescribeLogDirs on broker {broker}")
        dirs = {}
        for r in body.results:
            replicas = {TopicPartition(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                                               p.is_future_key)
                        for t in r.topics for p in t.partitions}
            dirs[r.log_dir] = LogDirDescription(KafkaProtocolError(r.error_code, None) if r.error_code else None,
                                                replicas, getattr(r, "total_bytes", -1), getattr(r, "usable_bytes", -1))
        out[broker] = dirs
    return out
