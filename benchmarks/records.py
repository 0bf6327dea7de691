"""Speed of kafkalab.records against kafka-python's pure-Python DefaultRecordBatch (not a test; run by hand).

    .venv/bin/python benchmarks/records.py [records] [value_size]

Both sides do the same work: encode = append every record and build the batch (the bytes must be
identical); decode = check the CRC (KafkaConsumer's default ``check_crcs=True``), then read offset,
timestamp, key, value and headers of every record. The two run alternately and the best of 25 runs is kept,
so that load from other processes hits both alike. ``benchmarks/codec.py --rows d`` measures the decode the
same way with medians.
"""
import os
import sys
import time

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalab.records import SimpleRecord, build_batch, decode_batch

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 100
TS = 1_700_000_000_000
rng = os.urandom
RECORDS = [(b"key-%d" % i, rng(SIZE), [("trace-id", b"%08d" % i)], TS + i) for i in range(N)]
OURS = [SimpleRecord(k, v, tuple(h), ts) for k, v, h, ts in RECORDS]


def kp_encode():
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (k, v, h, ts) in enumerate(RECORDS):
        b.append(i, ts, k, v, h)
    return bytes(b.build())


def kp_decode(buf):
    n = 0
    batch = DefaultRecordBatch(buf)
    if not batch.validate_crc():
        raise ValueError("CRC mismatch")
    for r in batch:
        _ = r.offset, r.timestamp, r.key, r.value, r.headers
        n += 1
    return n


def our_encode():
    return build_batch(OURS, partition_leader_epoch=0)  # kafka-python writes 0, Java -1


def our_decode(buf):
    n = 0
    for r in decode_batch(buf).records:
        _ = r.offset, r.timestamp, r.key, r.value, r.headers
        n += 1
    return n


def best_of_pair(a, b, args, repeat=25):
    """Minimum time of each, running them alternately so that background load hits both alike."""
    ta, tb = [], []
    for _ in range(repeat):
        for fn, times in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
    return min(ta), min(tb)


def main():
    buf = kp_encode()
    assert our_encode() == buf, "both encoders must produce the same bytes"
    assert kp_decode(buf) == our_decode(buf) == N
    rows = []
    for name, kp, ours, args in (("encode", kp_encode, our_encode, ()), ("decode", kp_decode, our_decode, (buf,))):
        a, b = best_of_pair(kp, ours, args)
        rows.append((name, a, b))
        print(f"{name}: kafka-python {a * 1e3:7.2f} ms ({N / a:10,.0f} rec/s)   kafkalab {b * 1e3:7.2f} ms "
              f"({N / b:10,.0f} rec/s)   speed-up x{a / b:.2f}")
    return rows


if __name__ == "__main__":
    print(f"{N} records, {SIZE}-byte values, one header each, batch of {len(kp_encode())} bytes")
    main()
