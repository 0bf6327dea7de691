"""Partitioners: which partition a record goes to. Java's murmur2 and sticky batches, librdkafka's crc32.

Theory of operation
-------------------
A topic's partitions are its unit of order and of parallelism, so *which* partition a record lands in matters:
records with the same key must always land in the same partition (that is how per-key order is kept), and
records without a key should spread evenly without making tiny batches.

**Keyed records, the Java way** (``BuiltInPartitioner.partitionForKey``): hash the key bytes with MurmurHash2
(seed ``0x9747b28c``, 4-byte blocks read little-endian, Kafka's ``Utils.murmur2``), clear the sign bit with
``toPositive`` (``h & 0x7fffffff`` -- *not* ``abs()``, which differs for negative hashes), and take it modulo
the number of partitions. Key ``b"a"`` hashes to -1563381124, toPositive gives 584102524, so with 3 partitions it
goes to partition 1. Every partition counts, even one without a leader right now: the mapping must not change
while a broker is down.

**Keyless records** (``partitioner.ignore.keys=true`` too): *uniform sticky* partitioning (KIP-480, KIP-794).
Instead of round-robin per record, which makes one tiny batch per partition, the producer sticks to one
partition until about ``batch.size`` bytes went there, then picks another at random among the partitions
that have a leader. Batches fill up, and over time every partition gets the same amount of data.

**librdkafka's** default, ``consistent_random``: ``crc32(key) % partitions`` (CRC-32/ISO-HDLC, Python's
``zlib.crc32``), and empty or null keys go to a random partition. Same key, different client, different
partition: the reason a topic written by Java and by librdkafka producers is not co-partitioned. Its
``murmur2_random`` is Java-compatible (and the default here, named ``partitioner`` as in librdkafka).

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/BuiltInPartitioner.java`` and
``common/utils/Utils.java`` (``murmur2``, ``toPositive``); librdkafka ``src/rdkafka_msg.c``.
"""
from __future__ import annotations

import random
import zlib
from typing import Optional

__all__ = ["murmur2", "to_positive", "java_partition", "crc32_partition", "StickyPartitioner", "Partitioner"]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit MurmurHash2 of ``data``, as the signed Java int ``Utils.murmur2`` returns."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    blocks = length // 4
    for i in range(blocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = data[4 * blocks:]
    rest = len(tail)
    if rest == 3:
        h ^= tail[2] << 16
    if rest >= 2:
        h ^= tail[1] << 8
    if rest >= 1:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (``-1563381124 -> 584102524``)."""
    return n & 0x7FFFFFFF


def java_partition(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


def crc32_partition(key: bytes, num_partitions: int) -> int:
    return zlib.crc32(key) % num_partitions


class StickyPartitioner:
    """Uniform sticky partitioning of keyless records: stay on one partition for ~``batch.size`` bytes."""

    def __init__(self, batch_size: int, rng: Optional[random.Random] = None):
        self.batch_size = max(1, batch_size)
        self.rng = rng or random.Random()
        self._current: dict[str, int] = {}
        self._produced: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int, available: list[int]) -> int:
        p = self._current.get(topic)
        if p is None or p >= num_partitions:
            p = self._next(topic, num_partitions, available, None)
        return p

    def record_appended(self, topic: str, partition: int, size: int, num_partitions: int,
                        available: list[int]) -> None:
        """Count bytes sent to the sticky partition; switch after ``batch.size`` of them (KIP-794)."""
        if self._current.get(topic) != partition:
            return
        produced = self._produced.get(topic, 0) + size
        if produced >= self.batch_size:
            self._next(topic, num_partitions, available, partition)
        else:
            self._produced[topic] = produced

    def _next(self, topic: str, num_partitions: int, available: list[int], old: Optional[int]) -> int:
        choices = [p for p in available if p < num_partitions] or list(range(num_partitions))
        if len(choices) > 1 and old in choices:
            choices = [p for p in choices if p != old]
        p = self.rng.choice(choices)
        self._current[topic] = p
        self._produced[topic] = 0
        return p


class Partitioner:
    """The ``partitioner`` config: ``murmur2_random`` (Java), ``murmur2``, ``consistent_random``, ``consistent``,
    ``random``; with ``partitioner.ignore.keys`` every record is treated as keyless."""

    def __init__(self, name: str = "murmur2_random", *, batch_size: int = 16384, ignore_keys: bool = False,
                 rng: Optional[random.Random] = None):
        self.name = name
        self.ignore_keys = ignore_keys
        self.sticky = StickyPartitioner(batch_size, rng)

    def partition(self, topic: str, key: Optional[bytes], num_partitions: int, available: list[int]) -> int:
        name = self.name
        if key is not None and not self.ignore_keys:
            if name in ("murmur2_random", "murmur2"):
                return java_partition(key, num_partitions)
            if name == "consistent" or (name == "consistent_random" and len(key) > 0):
                return crc32_partition(key, num_partitions)
        if name == "murmur2" and not self.ignore_keys:           # librdkafka: null key hashed as empty
            return java_partition(b"", num_partitions)
        if name == "consistent" and not self.ignore_keys:
            return crc32_partition(b"", num_partitions)
        return self.sticky.partition(topic, num_partitions, available)

    def record_appended(self, topic: str, partition: int, size: int, num_partitions: int, available) -> None:
        self.sticky.record_appended(topic, partition, size, num_partitions, available)
