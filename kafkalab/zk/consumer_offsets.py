"""The offsets of OffsetCommit v0: one znode per partition under ``/consumers``, as ZooKeeper-era Kafka kept them.

Theory of operation
-------------------
Before Kafka 0.8.2 consumer groups kept their committed offsets in ZooKeeper, not in ``__consumer_offsets``.
A Kafka 3.x broker in ZooKeeper mode still honours that for the oldest request versions: an OffsetCommit **v0**
writes each offset to ``/consumers/<group>/offsets/<topic>/<partition>`` (the offset as decimal text, parents
created as needed), and an OffsetFetch **v0** reads it back from there. Nothing else sees these offsets: the
group coordinator, OffsetFetch v1+ and ``kafka-consumer-groups.sh`` know only ``__consumer_offsets``, so a
group that commits with v0 and fetches with v1 finds nothing (the two stores never meet). Kafka 4.0 removed
both versions together with ZooKeeper (KIP-896).

Mirrors: ``KafkaZkClient.setOrCreateConsumerOffset`` / ``getConsumerOffset`` and ``ZkData.ConsumerOffset``.
"""
from __future__ import annotations

from typing import Optional

from .paths import CONSUMERS_PATH

__all__ = ["consumer_offset_path", "set_or_create_consumer_offset", "get_consumer_offset"]

_ANY_VERSION = -1


def consumer_offset_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS_PATH}/{group}/offsets/{topic}/{partition}"


def set_or_create_consumer_offset(zk, group: str, topic: str, partition: int, offset: int) -> None:
    """Write ``offset`` to the partition's znode, creating it (and its parents) the first time."""
    path, data = consumer_offset_path(group, topic, partition), str(offset).encode("utf-8")
    updated, _ = zk.conditional_update_path(path, data, _ANY_VERSION)
    if not updated:
        zk.create_recursive(path, data, throw_if_path_exists=False)
        zk.conditional_update_path(path, data, _ANY_VERSION)   # created meanwhile by another commit: ours wins


def get_consumer_offset(zk, group: str, topic: str, partition: int) -> Optional[int]:
    """The committed offset, or None when the group never committed one for the partition with v0."""
    data, _ = zk.get_data_and_version(consumer_offset_path(group, topic, partition))
    if data is None:
        return None
    try:
        return int(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{consumer_offset_path(group, topic, partition)} does not hold an offset: {data[:40]!r}") \
            from None
