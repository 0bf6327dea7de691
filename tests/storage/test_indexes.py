"""Offset and time indexes: entries, sparse lookups, preallocation, truncation, sanity checks."""
import os
import struct

import pytest

from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError
from kafkalab.storage.offset_index import OffsetIndex, OffsetPosition
from kafkalab.storage.time_index import TimeIndex, TimestampOffset


def test_offset_index_append_lookup_and_file_layout(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(str(path), 100, 80)
    assert os.path.getsize(path) == 80 and idx.max_entries == 10 and idx.entries == 0   # preallocated
    for off, pos in [(105, 400), (110, 900), (120, 2000)]:
        idx.append(off, pos)
    assert idx.lookup(99) == OffsetPosition(100, 0)       # before every entry: (base, 0)
    assert idx.lookup(107) == OffsetPosition(105, 400)    # largest entry <= target
    assert idx.lookup(110) == OffsetPosition(110, 900)
    assert idx.lookup(10**9) == OffsetPosition(120, 2000)
    with open(path, "rb") as f:                            # 4-byte relative offset, 4-byte position
        assert f.read(8) == (5).to_bytes(4, "big") + (400).to_bytes(4, "big")
    idx.trim_to_valid_size()
    assert os.path.getsize(path) == 24
    idx.close()
    again = OffsetIndex(str(path), 100, 80)
    assert again.entry_list() == [(105, 400), (110, 900), (120, 2000)] and again.last_offset == 120
    again.close()


def test_offset_index_rejects_non_increasing_and_full(tmp_path):
    idx = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0, 16)
    idx.append(1, 10)
    with pytest.raises(KafkaStorageError, match="no larger than the last offset"):
        idx.append(1, 20)
    idx.append(2, 20)
    assert idx.is_full()
    with pytest.raises(KafkaStorageError, match="full index"):
        idx.append(3, 30)
    idx.close()


def test_offset_index_truncate_to(tmp_path):
    idx = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0, 800)
    for i in range(1, 11):
        idx.append(i * 10, i * 100)
    idx.truncate_to(50)                       # exact entry goes too
    assert idx.last_offset == 40
    idx.truncate_to(35)                       # between entries: keep the one below
    assert idx.last_offset == 30
    idx.truncate_to(0)
    assert idx.entries == 0
    idx.close()


def test_relative_offsets_must_fit_an_int(tmp_path):
    idx = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0, 800)
    assert idx.can_append_offset(2**31 - 1) and not idx.can_append_offset(2**31)
    with pytest.raises(KafkaStorageError):
        idx.append(2**31, 0)
    idx.close()


@pytest.mark.parametrize("content,reason", [
    (b"  ", "multiple of 8"),                                            # what testCorruptIndexRebuild writes
    ((-5 & 0xFFFFFFFF).to_bytes(4, "big") + bytes(4), "less than the base offset"),
    ((5).to_bytes(4, "big") + (10).to_bytes(4, "big") + bytes(8), "out of order"),  # trailing zeros of a crash
])
def test_offset_index_sanity_check(tmp_path, content, reason):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(content)
    idx = OffsetIndex(str(path), 0, 800)
    with pytest.raises(CorruptIndexError, match=reason):
        idx.sanity_check()
    idx.close()


def test_kafkas_lenient_sanity_check_accepts_a_preallocated_index(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes((5).to_bytes(4, "big") + (10).to_bytes(4, "big") + bytes(800))
    idx = OffsetIndex(str(path), 0, 808)
    idx.sanity_check(strict=False)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close()


def test_time_index_only_appends_larger_timestamps(tmp_path):
    ti = TimeIndex(str(tmp_path / "00000000000000000010.timeindex"), 10, 120)
    assert ti.max_entries == 10 and ti.last_entry() == TimestampOffset(-1, 10)
    ti.maybe_append(1000, 12)
    ti.maybe_append(1000, 14)                 # same timestamp: nothing added
    ti.maybe_append(2000, 15)
    assert ti.entry_list() == [(1000, 12), (2000, 15)]
    with pytest.raises(KafkaStorageError, match="no larger than the last timestamp"):
        ti.maybe_append(1500, 16)
    assert ti.lookup(999) == TimestampOffset(-1, 10)
    assert ti.lookup(1500) == TimestampOffset(1000, 12)
    assert ti.lookup(5000) == TimestampOffset(2000, 15)
    ti.truncate_to(15)
    assert ti.entry_list() == [(1000, 12)]
    ti.close()


def test_time_index_keeps_one_slot_for_the_roll(tmp_path):
    ti = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, 36)   # 3 slots
    ti.maybe_append(1, 1)
    ti.maybe_append(2, 2)
    assert ti.is_full()
    with pytest.raises(KafkaStorageError, match="full time index"):
        ti.maybe_append(3, 3)
    ti.maybe_append(3, 3, skip_full_check=True)
    assert ti.entries == 3
    ti.close()


def test_time_index_sanity_check(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(struct.pack(">qiqi", 50, 1, 10, 2))
    ti = TimeIndex(str(path), 0, 120)
    with pytest.raises(CorruptIndexError, match="less than the first timestamp"):
        ti.sanity_check()
    ti.close()
    path.write_bytes(b"x" * 13)
    ti = TimeIndex(str(path), 0, 120)
    with pytest.raises(CorruptIndexError, match="multiple of 12"):
        ti.sanity_check()
    ti.close()
