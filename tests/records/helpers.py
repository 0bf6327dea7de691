"""Shared strategies and helpers for the records tests."""
from __future__ import annotations

import os
import struct

from hypothesis import strategies as st

from kafkalab.records import SimpleRecord, crc32c

CODECS = (0, 1, 2, 3, 4)
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

maybe_bytes = st.one_of(st.none(), st.just(b""), st.binary(max_size=40), st.binary(min_size=120, max_size=300))
header_key = st.text(max_size=12)                      # any unicode, including the empty string
header_value = st.one_of(st.none(), st.binary(max_size=24))
headers = st.lists(st.tuples(header_key, header_value), max_size=4).map(tuple)
# absolute timestamps spread so that deltas are negative, zero, small and huge (but fit a varlong)
timestamp = st.one_of(st.integers(-5, 5), st.integers(1_600_000_000_000, 1_800_000_000_000),
                      st.integers(-(2 ** 61), 2 ** 61))
record = st.builds(SimpleRecord, maybe_bytes, maybe_bytes, headers, timestamp)
records = st.lists(record, max_size=25)


def compressible_records(n: int, value_size: int = 60, headers=True) -> list:
    """Records that compress well (so clients that fall back to 'none' when it does not pay keep the codec)."""
    out = []
    for i in range(n):
        hdrs = (("trace", b"t-%d" % i), ("empty", None)) if headers else ()
        out.append(SimpleRecord(b"key-%d" % (i % 7) if i % 5 else None,
                                (b"value-%06d-" % i + b"abcdefgh" * (value_size // 8)) if i % 11 else None,
                                hdrs, 1_700_000_000_000 + i * 3 - (i % 4)))
    return out


def random_records(n: int, value_size: int) -> list:
    return [SimpleRecord(os.urandom(8), os.urandom(value_size), (), 1_700_000_000_000 + i) for i in range(n)]


def fix_crc(buf: bytearray, pos: int = 0) -> bytearray:
    """Recompute the CRC of the batch at ``pos`` after a test changed it (so decoding gets past the CRC)."""
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    end = min(len(buf), pos + 12 + max(length, 0))
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:end])))
    return buf


def as_tuples(recs) -> list:
    """(key, value, headers, timestamp) of decoded Records or SimpleRecords, for comparisons."""
    return [(r.key, r.value, tuple(tuple(h) for h in r.headers), r.timestamp) for r in recs]
