"""The partitioner against Java's values: murmur2 computed here independently, from the algorithm's spec."""
import collections
import random
import struct
import zlib

import pytest

from kafkalab.clients.producer.accumulator import RecordAccumulator, TopicPartition
from kafkalab.clients.producer.partitioner import (Partitioner, StickyPartitioner, crc32_partition, java_partition,
                                                   murmur2, to_positive)
from kafkalab.records import SimpleRecord


def int32(x: int) -> int:
    """Wrap to a Java int."""
    return struct.unpack("<i", struct.pack("<I", x & 0xFFFFFFFF))[0]


def reference_murmur2(data: bytes) -> int:
    """MurmurHash2 as Kafka's Utils.murmur2 specifies it, written with Java-int arithmetic (signed wraps and
    unsigned shifts ``>>>``), independently of the implementation under test."""
    m, r = int32(0x5BD1E995), 24
    h = int32(int32(0x9747B28C) ^ len(data))

    def ushr(x, n):                        # Java's >>> on an int
        return (x & 0xFFFFFFFF) >> n

    n4 = len(data) // 4
    for i in range(n4):
        k = struct.unpack_from("<i", data, i * 4)[0]
        k = int32(k * m)
        k = int32(k ^ ushr(k, r))
        k = int32(k * m)
        h = int32(h * m)
        h = int32(h ^ k)
    tail = len(data) % 4
    base = n4 * 4
    if tail == 3:
        h = int32(h ^ ((data[base + 2] & 0xFF) << 16))
    if tail >= 2:
        h = int32(h ^ ((data[base + 1] & 0xFF) << 8))
    if tail >= 1:
        h = int32(h ^ (data[base] & 0xFF))
        h = int32(h * m)
    h = int32(h ^ ushr(h, 13))
    h = int32(h * m)
    h = int32(h ^ ushr(h, 15))
    return h


#: key -> (murmur2 as a Java int, toPositive, partition of 3/6/12, zlib.crc32, crc partition of 3/6/12);
#: from ../shared/reference/protocol-compat.md §9 (checked against the Java client and librdkafka 2.16.0).
JAVA_TABLE = {
    b"key1": (28543940, 28543940, (2, 2, 8), 744252496, (1, 4, 4)),
    b"user-42": (1459644460, 1459644460, (1, 4, 4), 2097592435, (1, 1, 7)),
    b"a": (-1563381124, 584102524, (1, 4, 4), 3904355907, (0, 3, 3)),
    b"hello world": (1221641059, 1221641059, (1, 1, 7), 222957957, (0, 3, 9)),
    b"": (275646681, 275646681, (0, 3, 9), 0, None),
}


def test_reference_key_a():
    assert to_positive(murmur2(b"a")) == 584102524
    assert abs(murmur2(b"a")) == 1563381124 != 584102524      # why toPositive is not abs()


@pytest.mark.parametrize("key", list(JAVA_TABLE), ids=lambda k: repr(k))
def test_java_table(key):
    mm, pos, parts, crc, crc_parts = JAVA_TABLE[key]
    assert reference_murmur2(key) == mm
    assert murmur2(key) == mm
    assert to_positive(murmur2(key)) == pos
    assert tuple(java_partition(key, n) for n in (3, 6, 12)) == parts
    assert zlib.crc32(key) == crc
    if crc_parts is not None:
        assert tuple(crc32_partition(key, n) for n in (3, 6, 12)) == crc_parts


def test_murmur2_matches_reference_on_random_keys():
    rng = random.Random(7)
    for length in list(range(0, 20)) + [31, 64, 255, 1000]:
        for _ in range(5):
            key = bytes(rng.randrange(256) for _ in range(length))
            assert murmur2(key) == reference_murmur2(key), key


def test_keyed_records_ignore_availability():
    p = Partitioner("murmur2_random")
    # partition 1 has no leader: key "a" still maps to 1 of 3, as in Java
    assert p.partition("t", b"a", 3, available=[0, 2]) == 1


def test_consistent_random_uses_crc32_and_random_for_empty_and_null():
    p = Partitioner("consistent_random", rng=random.Random(1))
    assert p.partition("t", b"a", 6, [0, 1, 2, 3, 4, 5]) == 3        # crc32 %6, where Java says 4
    assert Partitioner("murmur2_random").partition("t", b"a", 6, list(range(6))) == 4
    assert p.partition("t", b"", 6, [2]) == 2                          # empty key: the (sticky) random choice
    assert Partitioner("murmur2_random").partition("t", b"", 12, list(range(12))) == 9   # Java hashes it


def test_ignore_keys_makes_keyed_records_sticky():
    p = Partitioner("murmur2_random", ignore_keys=True, rng=random.Random(3))
    got = {p.partition("t", f"k{i}".encode(), 6, list(range(6))) for i in range(20)}
    assert len(got) == 1


def _append(s: StickyPartitioner, acc: RecordAccumulator, size: int, n: int, avail: list) -> int:
    """One keyless record through the partitioner and the accumulator, as Java's RecordAccumulator.append."""
    p = s.partition("t", n, avail)
    if acc.all_batches_full(TopicPartition("t", p), size):
        p = s.update_partition_info("t", p, 0, True, n, avail)
    batch, created = acc.append(TopicPartition("t", p), SimpleRecord(None, b"x", (), 0), size, now_ms=0)
    s.update_partition_info("t", p, batch.size if created else size, acc.all_batches_full(TopicPartition("t", p)),
                            n, avail)
    return p


class _Fixed(random.Random):
    """A generator whose draws are given (getrandbits is what next_partition uses)."""

    def __init__(self, draws):
        super().__init__(0)
        self.draws = list(draws)

    def getrandbits(self, k):
        return self.draws.pop(0)


def test_sticky_switch_waits_for_a_full_batch():
    # the docstring's example: batch.size 1000, 100-byte records, 9 per batch (61 + 900 = 961)
    s, acc = StickyPartitioner(1000, rng=_Fixed([0, 1])), RecordAccumulator(batch_size=1000)
    got = [_append(s, acc, 100, 4, [0, 1, 2, 3]) for _ in range(20)]
    assert got == [0] * 18 + [1] * 2          # not [0] * 10: the count passed 1000 at record 10, its batch was open
    assert [b.record_count for b in acc.batches[TopicPartition("t", 0)]] == [9, 9]
    assert [b.record_count for b in acc.batches[TopicPartition("t", 1)]] == [2]


def test_sticky_switches_right_after_a_batch_fills_exactly():
    s, acc = StickyPartitioner(1061, rng=_Fixed([2, 3])), RecordAccumulator(batch_size=1061)
    got = [_append(s, acc, 100, 4, [0, 1, 2, 3]) for _ in range(11)]
    assert got == [2] * 10 + [3]


def test_sticky_switches_at_twice_batch_size_even_with_an_open_batch():
    s = StickyPartitioner(100, rng=_Fixed([0, 1]))
    assert s.partition("t", 2, [0, 1]) == 0
    assert s.update_partition_info("t", 0, 150, False, 2, [0, 1]) == 0     # >= batch.size, switch disabled: stay
    assert s.update_partition_info("t", 0, 49, False, 2, [0, 1]) == 0      # 199 < 200
    assert s.update_partition_info("t", 0, 1, False, 2, [0, 1]) == 1       # 200 = 2 x batch.size: switch anyway


def test_sticky_may_pick_the_old_partition_again():
    s = StickyPartitioner(10, rng=_Fixed([5, 5 + 3 * 7]))   # both draws index partition 2 of [0, 1, 2]
    assert s.partition("t", 3, [0, 1, 2]) == 2
    assert s.update_partition_info("t", 2, 10, True, 3, [0, 1, 2]) == 2


def test_sticky_is_deterministic_with_a_seed_and_spreads_evenly():
    def run(seed):
        s, acc = StickyPartitioner(1000, rng=random.Random(seed)), RecordAccumulator(batch_size=1000)
        return [_append(s, acc, 100, 4, [0, 1, 2, 3]) for _ in range(4000)]
    a = run(7)
    assert a == run(7) and a != run(8)
    switches = sum(x != y for x, y in zip(a, a[1:]))
    repeats = sum(a[i] == a[i - 1] for i in range(18, len(a), 18))   # a switch that drew the same partition
    assert switches > 100 and repeats > 10
    assert min(a.count(p) for p in range(4)) > 700


def test_sticky_only_picks_partitions_with_a_leader():
    s = StickyPartitioner(batch_size=10, rng=random.Random(9))
    seen = set()
    for _ in range(50):
        p = s.partition("t", 5, [1, 3])
        assert p in (1, 3)
        seen.add(p)
        s.update_partition_info("t", p, 10, True, 5, [1, 3])
    assert seen == {1, 3}
    assert StickyPartitioner(10, rng=_Fixed([7])).partition("t", 5, []) == 2    # none has a leader: all count


def test_load_stats_weight_the_pick_towards_short_queues():
    # BuiltInPartitioner's own example: queue sizes 0 3 1 -> table 4 5 8
    s = StickyPartitioner(10, rng=_Fixed([3, 4, 5, 7, 8 + 4]))
    s.update_partition_load_stats("t", [0, 3, 1], [0, 1, 2], 3)
    assert [s.next_partition("t", 3, [0, 1, 2]) for _ in range(5)] == [0, 1, 2, 2, 1]
    s.update_partition_load_stats("t", [2, 2, 2], [0, 1, 2], 3)            # all equal: uniform again
    s.rng = _Fixed([4])
    assert s.next_partition("t", 3, [0, 1, 2]) == 1
    s.update_partition_load_stats("t", [2, 2, 2], [0, 1, 2], 2)            # one left out: adaptive, over two
    s.rng = _Fixed([1])
    assert s.next_partition("t", 3, [0, 1, 2]) == 1


def test_accumulator_queue_sizes_reach_the_partitioner():
    seen = []
    acc = RecordAccumulator(batch_size=100, adaptive_partitioning=True, partition_availability_timeout_ms=1000,
                            load_stats_listener=lambda *a: seen.append(a))
    for p, count in ((0, 3), (1, 1)):
        for _ in range(count):
            acc.append(TopicPartition("t", p), SimpleRecord(None, b"x", (), 0), 60, now_ms=0)
    leaders = {0: 1, 1: 2, 2: 3}
    acc.ready(lambda tp: leaders[tp.partition], 0, lambda topic: 3)
    assert seen[-1] == ("t", None, None, 0)                # no queue for partition 2 yet: uniform
    acc.batches[TopicPartition("t", 2)] = collections.deque()
    acc.ready(lambda tp: leaders[tp.partition], 0, lambda topic: 3)
    assert seen[-1] == ("t", [3, 1, 0], [0, 1, 2], 3)
    acc.update_node_latency_stats(1, 0, True)
    acc.update_node_latency_stats(1, 1500, False)           # broker 1 had data but no room for 1500 ms
    acc.ready(lambda tp: leaders[tp.partition], 1500, lambda topic: 3)
    assert seen[-1][1:] == ([1, 0, 0], [1, 2, 0], 2)       # partition 0 left out (Java's arrays, as filled)


def test_without_adaptive_partitioning_no_queue_sizes_are_taken():
    seen = []
    acc = RecordAccumulator(batch_size=100, adaptive_partitioning=False, load_stats_listener=lambda *a: seen.append(a))
    acc.append(TopicPartition("t", 0), SimpleRecord(None, b"x", (), 0), 60, now_ms=0)
    acc.ready(lambda tp: 1, 0, lambda topic: 1)
    assert seen == []


def test_producer_config_adaptive_keys_are_implemented():
    from kafkalab.clients.config import IGNORED
    assert "partitioner.adaptive.partitioning.enable" not in IGNORED
    assert "partitioner.availability.timeout.ms" not in IGNORED
