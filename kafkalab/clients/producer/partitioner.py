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

**Keyless records** (``partitioner.ignore.keys=true`` too): *uniform sticky* partitioning (KIP-480, KIP-794),
exactly as Kafka 3.9's ``BuiltInPartitioner`` with ``RecordAccumulator.append``. Instead of round-robin per
record, which makes one tiny batch per partition, the producer sticks to one partition and counts the bytes its
batches grew by (a new batch counts its 61-byte header too). It switches once that count reaches ``batch.size``
*and* the partition's last batch is full -- a batch that refused a record counts as full -- or, whatever the
batch, once it reaches twice ``batch.size``. So it never walks away from a half-filled batch. The next
partition is a random one among those with a leader (all of them if none has), and the old partition may well
be drawn again.

Worked example, ``batch.size=1000``, records of 100 bytes: a batch takes 9 of them (61 + 9 x 100 = 961 bytes;
the 10th would make 1061). After record 9 the count is 961 < 1000: stay. Record 10 does not fit, so the first
batch is full; the count is still below 1000, no switch, record 10 opens a second batch on the same partition
(count 961 + 161 = 1122 >= 1000, but that batch is not full: no switch). Records 11-18 fill it (count 1922).
Record 19 does not fit: the batch is full, the count is over ``batch.size``, so the producer switches and
record 19 opens a batch on the new partition. The partition got two full 9-record batches, no small one. With
``batch.size=1061`` the 10th record fills the first batch exactly (1061 >= 1061, full): the switch comes
right after it. (Switching as soon as the count passed ``batch.size``, as kafkalab used to, would have left a
1-record batch behind each time.)

With ``partitioner.adaptive.partitioning.enable`` (default true) the accumulator's ``ready`` also hands the
partitioner each partition's queue length (batches waiting), once the topic has a queue for every partition;
the random pick is then weighted towards short queues, i.e. towards brokers that keep up
(:meth:`StickyPartitioner.update_partition_load_stats`). With ``partitioner.availability.timeout.ms`` > 0 a
partition whose leader has had batches ready but could not take them for longer than that is left out of the
pick. The random draws come from ``random.Random`` (Java's ``ThreadLocalRandom`` cannot be matched), seeded when
given, so a lab can replay them.

**librdkafka's** default, ``consistent_random``: ``crc32(key) % partitions`` (CRC-32/ISO-HDLC, Python's
``zlib.crc32``), and empty or null keys go to a random partition. Same key, different client, different
partition: the reason a topic written by Java and by librdkafka producers is not co-partitioned. Its
``murmur2_random`` is Java-compatible (and the default here, named ``partitioner`` as in librdkafka).

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/BuiltInPartitioner.java`` (with
``RecordAccumulator.java``: ``append``, ``allBatchesFull``, ``partitionReady``, ``updateNodeLatencyStats``) and
``common/utils/Utils.java`` (``murmur2``, ``toPositive``); librdkafka ``src/rdkafka_msg.c``.
"""
from __future__ import annotations

import bisect
import itertools
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
    """Java's ``BuiltInPartitioner`` for keyless records: stay on one partition for ``batch.size`` bytes or more.

    The caller (the producer, or a lab driving an accumulator by hand) does what ``RecordAccumulator.append``
    does: :meth:`partition` to peek the sticky partition; :meth:`update_partition_info` with 0 bytes and
    ``enable_switch=True`` if that partition's last batch is full (a held-back switch completes there, and the
    record goes to the new partition); append; :meth:`update_partition_info` with the bytes the batch grew by and
    ``enable_switch`` = "the partition's last batch is now full". The accumulator's ``ready`` feeds
    :meth:`update_partition_load_stats` (adaptive partitioning).
    """

    def __init__(self, batch_size: int, rng: Optional[random.Random] = None):
        self.sticky_batch_size = max(1, batch_size)      # Java: batch.size 0 means batches of 1 byte
        self.rng = rng or random.Random()
        self._current: dict[str, list[int]] = {}          # topic -> [sticky partition, bytes produced to it]
        self._load_stats: dict[str, tuple[list[int], list[int]]] = {}   # topic -> (cumulative table, partition ids)

    def partition(self, topic: str, num_partitions: int, available: list[int]) -> int:
        """``peekCurrentPartitionInfo``: the sticky partition, chosen now if there is none yet."""
        info = self._current.get(topic)
        if info is None or info[0] >= num_partitions:
            info = self._current[topic] = [self.next_partition(topic, num_partitions, available), 0]
        return info[0]

    def update_partition_info(self, topic: str, partition: int, appended_bytes: int, enable_switch: bool,
                              num_partitions: int, available: list[int]) -> int:
        """``updatePartitionInfo``: count the bytes; switch once ``batch.size`` bytes went to the partition *and*
        switching is enabled (its last batch is full), or unconditionally at twice ``batch.size``. Returns the
        sticky partition after the update."""
        info = self._current.get(topic)
        if info is None or info[0] != partition:
            return self.partition(topic, num_partitions, available)
        info[1] += appended_bytes
        b = self.sticky_batch_size
        if info[1] >= b and enable_switch or info[1] >= b * 2:
            self._current[topic] = [self.next_partition(topic, num_partitions, available), 0]
        return self._current[topic][0]

    def next_partition(self, topic: str, num_partitions: int, available: list[int]) -> int:
        """``nextPartition``: one non-negative random int; without load stats it indexes the partitions that
        have a leader (all partitions if none has), the old one included; with them, the cumulative table."""
        rnd = self.rng.getrandbits(31)                   # Utils.toPositive(ThreadLocalRandom.nextInt())
        stats = self._load_stats.get(topic)
        if stats is None:
            choices = [p for p in available if p < num_partitions]
            return choices[rnd % len(choices)] if choices else rnd % num_partitions
        table, ids = stats
        return ids[bisect.bisect_right(table, rnd % table[-1])]   # first entry strictly greater

    def update_partition_load_stats(self, topic: str, queue_sizes: Optional[list[int]],
                                    partition_ids: Optional[list[int]], length: int = 0) -> None:
        """``updatePartitionLoadStats``: from the queue length of each partition with a leader (the first
        ``length`` entries are the ones not excluded), a cumulative frequency table favouring short queues.
        Sizes 0 3 1 invert against max+1 = 4 to 4 1 3 and sum to 4 5 8: random 0-3 picks the first partition,
        4 the second, 5-7 the third. None, fewer than 2 partitions, or all equal (none excluded): uniform."""
        if queue_sizes is None or partition_ids is None or length < 1 or len(queue_sizes) < 2:
            self._load_stats.pop(topic, None)
            return
        sizes = queue_sizes[:length]
        top = max(sizes) + 1
        if len(set(sizes)) == 1 and length == len(queue_sizes):
            self._load_stats.pop(topic, None)
            return
        self._load_stats[topic] = (list(itertools.accumulate(top - s for s in sizes)), list(partition_ids[:length]))


class Partitioner:
    """The ``partitioner`` config: ``murmur2_random`` (Java), ``murmur2``, ``consistent_random``, ``consistent``,
    ``random``; with ``partitioner.ignore.keys`` every record is treated as keyless."""

    def __init__(self, name: str = "murmur2_random", *, batch_size: int = 16384, ignore_keys: bool = False,
                 rng: Optional[random.Random] = None):
        self.name = name
        self.ignore_keys = ignore_keys
        self.sticky = StickyPartitioner(batch_size, rng)

    def is_sticky(self, key: Optional[bytes]) -> bool:
        """Whether a record with this key goes through the sticky partitioner (then the caller reports appends)."""
        name = self.name
        if self.ignore_keys:
            return True
        if name in ("murmur2_random", "murmur2", "consistent"):
            return key is None and name == "murmur2_random"
        if name == "consistent_random":
            return key is None or len(key) == 0
        return True                                          # random

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

    def update_partition_info(self, topic: str, partition: int, appended_bytes: int, enable_switch: bool,
                              num_partitions: int, available: list[int]) -> int:
        """See :meth:`StickyPartitioner.update_partition_info` (keyless records only)."""
        return self.sticky.update_partition_info(topic, partition, appended_bytes, enable_switch, num_partitions,
                                                 available)
