"""The partitioner against Java's values: murmur2 computed here independently, from the algorithm's spec."""
import random
import struct
import zlib

import pytest

from kafkalab.clients.producer.partitioner import (Partitioner, StickyPartitioner, crc32_partition, java_partition,
                                                   murmur2, to_positive)


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


def test_uniform_sticky_switches_after_batch_size_bytes():
    s = StickyPartitioner(batch_size=100, rng=random.Random(5))
    avail = [0, 1, 2, 3]
    first = s.partition("t", 4, avail)
    for _ in range(4):                       # 4 x 20 B = 80 B < batch.size: stay
        assert s.partition("t", 4, avail) == first
        s.record_appended("t", first, 20, 4, avail)
    s.record_appended("t", first, 20, 4, avail)  # 100 B: switch, to another available partition
    second = s.partition("t", 4, avail)
    assert second != first and second in avail
    counts = {p: 0 for p in avail}
    for _ in range(4000):                    # over time every partition gets its share
        p = s.partition("t", 4, avail)
        counts[p] += 1
        s.record_appended("t", p, 25, 4, avail)
    assert min(counts.values()) > 600


def test_sticky_only_picks_partitions_with_a_leader():
    s = StickyPartitioner(batch_size=10, rng=random.Random(9))
    for _ in range(50):
        p = s.partition("t", 5, [1, 3])
        assert p in (1, 3)
        s.record_appended("t", p, 10, 5, [1, 3])
