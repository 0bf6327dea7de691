"""Retention: whole segments, below the high watermark, by time, by size, and below the log start offset."""
import os

import pytest

from kafkalab.storage.errors import OffsetOutOfRangeError

from .helpers import T0, batch


def fill(log, n, ts_step=0, size=40):
    for i in range(n):
        log.append_as_leader(batch(["x" * size], ts=T0 + i * ts_step), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


def test_retention_ms_uses_each_segments_largest_timestamp(make_log, clock):
    seg = len(batch(["x" * 40])) * 2
    log = make_log({"segment.bytes": seg, "retention.ms": 10_000})
    fill(log, 7, ts_step=1000)                     # segments [0,1] [2,3] [4,5] [6]
    clock.advance(13_001)                          # [0,1] newest record is 12001 ms old, [2,3] 10001, [4,5] 8001
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 4


def test_retention_stops_at_the_high_watermark(make_log, clock):
    log = make_log({"segment.bytes": len(batch(["x" * 40])), "retention.ms": 1})
    fill(log, 5)
    log.update_high_watermark(2)
    clock.advance(10)
    log.delete_old_segments()
    assert log.log_start_offset == 2 and [s.base_offset for s in log.segments][0] == 2


def test_all_expired_rolls_a_new_active_segment(make_log, clock):
    log = make_log({"retention.ms": 1})
    fill(log, 3)
    clock.advance(10)
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments] == [3] and log.active_segment.size == 0
    assert log.log_start_offset == 3 == log.log_end_offset
    assert log.delete_old_segments() == 0          # an empty active segment is never deleted


def test_retention_bytes(make_log):
    size = len(batch(["x" * 40]))
    log = make_log({"segment.bytes": size * 2, "retention.bytes": size * 3})
    fill(log, 7)                                   # 4 segments: 2,2,2,1 batches = 7 batches
    assert log.delete_old_segments() == 2          # 7 - 2 - 2 = 3 batches left
    assert log.size_in_bytes == size * 3 and log.log_start_offset == 4


def test_deleted_segments_are_renamed_then_removed_after_file_delete_delay(make_log, clock):
    log = make_log({"segment.bytes": len(batch(["x" * 40])), "retention.ms": 1, "file.delete.delay.ms": 5000})
    fill(log, 3)
    clock.advance(10)
    log.delete_old_segments()
    names = os.listdir(log.dir)
    assert "00000000000000000000.log.deleted" in names and "00000000000000000000.log" not in names
    clock.advance(5000)
    assert "00000000000000000000.log.deleted" not in os.listdir(log.dir)


def test_delete_records_moves_log_start_offset(make_log):
    log = make_log({"segment.bytes": len(batch(["x" * 40])) * 2})
    fill(log, 6)
    log.update_high_watermark(5)
    with pytest.raises(OffsetOutOfRangeError, match="since it is larger than the high watermark 5"):
        log.maybe_increment_log_start_offset(6)
    assert log.maybe_increment_log_start_offset(3)
    assert not log.maybe_increment_log_start_offset(2)                  # never backwards
    assert log.log_start_offset == 3 and log.number_of_segments == 3   # nothing deleted yet
    assert log.delete_old_segments() == 1                              # [0,1] is entirely below 3
    assert [s.base_offset for s in log.segments] == [2, 4]
    assert log.read(3, 10**6).fetch_offset_metadata.message_offset == 3


def test_compact_policy_only_deletes_below_log_start_offset(make_log, clock):
    log = make_log({"cleanup.policy": "compact", "retention.ms": 1, "segment.bytes": len(batch(["x" * 40]))})
    fill(log, 4)
    clock.advance(100)
    assert log.delete_old_segments() == 0
    log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments() == 2


def test_retention_deletes_producer_snapshots_of_deleted_segments(make_log, clock):
    log = make_log({"segment.bytes": len(batch(["x" * 40])), "retention.ms": 1})
    fill(log, 4)
    assert os.path.exists(os.path.join(log.dir, "00000000000000000001.snapshot"))
    clock.advance(10)
    log.delete_old_segments()
    assert not os.path.exists(os.path.join(log.dir, "00000000000000000001.snapshot"))


def test_delete_now_and_delayed(make_log, clock):
    log = make_log(name="a-0")
    fill(log, 2)
    path = log.dir
    log.delete()
    assert not os.path.exists(path)
    log = make_log({"file.delete.delay.ms": 1000}, name="b-0")
    fill(log, 2)
    parent = os.path.dirname(log.dir)
    log.delete(delay=True)
    renamed = [d for d in os.listdir(parent) if d.startswith("b-0.") and d.endswith("-delete")]
    assert renamed and log.read(0, 10**6).records                      # still readable meanwhile
    clock.advance(1000)
    assert not os.path.exists(os.path.join(parent, renamed[0]))
