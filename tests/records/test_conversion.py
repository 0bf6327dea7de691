"""Down-conversion of v2 batches for Fetch v0-3 (RecordsUtil.downConvert, LazyDownConversionRecords)."""
from __future__ import annotations

import struct

import pytest

from kafkalab.records import SimpleRecord, build_batch, build_end_txn_marker_batch, ControlRecordType, scan_batches
from kafkalab.records.conversion import (LazyDownConversionRecords, UnsupportedCompressionTypeError, down_convert)
from kafkalab.records.legacy import deep_records, iter_records, read_message_set

T0 = 1_700_000_000_000


def v2(values, base_offset=0, compression=None, **kw):
    return build_batch([SimpleRecord(f"k{i}".encode(), v, (("h", b"x"),), T0 + i) for i, v in enumerate(values)],
                       base_offset=base_offset, compression=compression, **kw)


def converted(buf, magic, first_offset=0):
    data, stats = down_convert(buf, scan_batches(buf).batches, magic, first_offset)
    return data, stats


def test_uncompressed_batch_becomes_one_message_per_record_from_the_fetch_offset():
    buf = v2([b"a", b"b", b"c"], base_offset=10)
    data, stats = converted(buf, 1, first_offset=11)
    entries = read_message_set(data)
    assert [(e.magic, e.offset, e.timestamp, e.key, e.value) for e in entries] == [
        (1, 11, T0 + 1, b"k1", b"b"), (1, 12, T0 + 2, b"k2", b"c")]   # headers are gone: v1 has none
    assert stats.num_records_converted == 2 and stats.temporary_memory_bytes > len(buf)


def test_compressed_batch_becomes_one_wrapper_with_every_record():
    buf = v2([b"a", b"b", b"c"], base_offset=10, compression="gzip")
    data, _ = converted(buf, 0, first_offset=11)
    [wrapper] = read_message_set(data)
    assert (wrapper.magic, wrapper.offset, wrapper.compression_type) == (0, 12, 1)
    assert [(r.offset, r.timestamp) for r in deep_records(wrapper)] == [(10, -1), (11, -1), (12, -1)]


def test_control_batches_are_dropped_and_zstd_is_refused():
    marker = build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                        coordinator_epoch=0, timestamp=T0)
    data, stats = converted(marker + v2([b"a"], base_offset=1), 1)
    assert [r.offset for r in iter_records(data)] == [1] and stats.num_records_converted == 1
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        converted(v2([b"a"], compression="zstd"), 1)
    assert info.value.error_code == 76


def test_lazy_records_promise_the_larger_of_read_and_first_converted_batch():
    buf = v2([b"x"] * 3)                                     # v2 is smaller than three v1 messages
    lazy = LazyDownConversionRecords(("t", 0), buf, 1, 0)
    data, stats = lazy.to_bytes()
    assert lazy.size_in_bytes == len(data) > len(buf)
    assert stats.num_records_converted == 3 and [r.value for r in iter_records(data)] == [b"x"] * 3


def test_lazy_records_cut_what_overshoots_and_pad_what_falls_short():
    first, second = v2([b"x" * 50] * 3), v2([b"y" * 50] * 3, base_offset=3)
    lazy = LazyDownConversionRecords(("t", 0), first + second, 1, 0)
    data, _ = lazy.to_bytes()
    assert len(data) == len(first) + len(second)             # the promise: the bytes read
    assert [r.offset for r in iter_records(data)] == [0, 1, 2, 3, 4]   # the sixth message is cut short
    # a batch that shrinks: padding with an overflow message (offset -1, a length past the end)
    big = build_batch([SimpleRecord(None, b"a" * 10, tuple((f"h{i}", b"x" * 40) for i in range(10)), T0)])
    small = LazyDownConversionRecords(("t", 0), big, 1, 0)
    data, _ = small.to_bytes()
    assert len(data) == len(big)
    [message] = read_message_set(data)
    tail = data[message.size:]
    assert struct.unpack_from(">q", tail)[0] == -1 and struct.unpack_from(">i", tail, 8)[0] > len(tail) - 12


def test_lazy_records_of_nothing_convertible():
    marker = build_end_txn_marker_batch(ControlRecordType.ABORT, producer_id=1, producer_epoch=0,
                                        coordinator_epoch=0, timestamp=T0)
    lazy = LazyDownConversionRecords(("t", 0), marker, 0, 0)
    assert lazy.size_in_bytes == 12                          # an overflow message tells the consumer
    assert LazyDownConversionRecords(("t", 0), b"", 0, 0).size_in_bytes == 0
    with pytest.raises(UnsupportedCompressionTypeError):
        LazyDownConversionRecords(("t", 0), v2([b"a"], compression="zstd"), 0, 0)
