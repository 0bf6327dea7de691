"""scan_records (the broker's walk over a batch's records) accepts exactly what decode_records accepts, and
summarizes it correctly."""
from __future__ import annotations

import random

import pytest

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import RECORD_BATCH_OVERHEAD, SimpleRecord, build_batch, decode_batch, scan_records
from kafkalab.records.header import read_batch_header
from kafkalab.records.record import decode_records


def _records(rng: random.Random, n: int) -> list:
    base = 1_700_000_000_000
    out = []
    for _i in range(n):
        key = None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 40))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice((0, 5, 200, 3000)))
        headers = tuple((f"h{j}é", None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 9)))
                        for j in range(rng.choice((0, 0, 1, 3))))
        out.append(SimpleRecord(key, value, headers, base + rng.randrange(-5_000, 5_000_000)))
    return out


def _outcome(fn):
    try:
        return fn()
    except DecodeError:
        return "error"


@pytest.mark.parametrize("seed", range(6))
def test_summary_matches_the_decoded_records(seed):
    rng = random.Random(seed)
    buf = build_batch(_records(rng, rng.randrange(1, 60)))
    h = read_batch_header(buf)
    records = decode_batch(buf).records
    for data in (buf, bytearray(buf), memoryview(bytearray(buf + b"trailing bytes"))):
        s = scan_records(data, RECORD_BATCH_OVERHEAD, len(buf), h.records_count)
        assert s.count == len(records)
        assert s.min_timestamp_delta == min(r.timestamp_delta for r in records)
        assert s.max_timestamp_delta == max(r.timestamp_delta for r in records)
        assert s.null_keys == sum(r.key is None for r in records)
        assert s.offsets_in_order


@pytest.mark.parametrize("seed", range(4))
def test_accepts_exactly_what_the_decoder_accepts(seed):
    rng = random.Random(100 + seed)
    good = build_batch(_records(rng, 12))
    h = read_batch_header(good)
    for _ in range(1500):
        data = bytearray(good)
        for _ in range(rng.choice((1, 1, 2, 3))):
            data[rng.randrange(RECORD_BATCH_OVERHEAD, len(data))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF,
                                                                                 rng.randrange(256)))
        count = h.records_count + rng.choice((0, 0, 0, -1, 1))
        end = len(data) - rng.choice((0, 0, 0, 1, 7))
        decoded = _outcome(lambda data=data, end=end, count=count: decode_records(
            bytes(data[:end]), RECORD_BATCH_OVERHEAD, end, count, 0, 0, 0, 0))
        # the scan reads in place: bytes beyond ``end`` must not change its verdict
        scanned = _outcome(lambda data=data, end=end, count=count: scan_records(data, RECORD_BATCH_OVERHEAD, end,
                                                                                count))
        assert (decoded == "error") == (scanned == "error"), (bytes(data).hex(), count, end)
