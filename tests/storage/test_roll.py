"""When the active segment rolls: segment.bytes, segment.ms, a full index, an offset that does not fit."""
import os
import struct

from .helpers import T0, batch


def test_roll_by_size(make_log):
    size = len(batch(["x" * 40]))
    log = make_log({"segment.bytes": size * 3})
    for _ in range(7):
        log.append_as_leader(batch(["x" * 40]), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert [s.size for s in log.segments] == [size * 3, size * 3, size]
    assert sorted(f for f in os.listdir(log.dir) if f.endswith(".log")) == [
        "00000000000000000000.log", "00000000000000000003.log", "00000000000000000006.log"]


def test_inactive_segments_have_trimmed_indexes_and_a_final_time_entry(make_log):
    log = make_log({"segment.bytes": 300, "index.interval.bytes": 1})
    for i in range(6):
        log.append_as_leader(batch(["x" * 40], ts=T0 + i), leader_epoch=0)
    old = log.segments[0]
    assert os.path.getsize(old.offset_index.path) == old.offset_index.entries * 8
    assert os.path.getsize(log.active_segment.offset_index.path) == 10485760     # preallocated
    assert old.time_index.last_entry().timestamp == old.max_timestamp_so_far


def test_roll_by_time_uses_the_first_batch_timestamp(make_log, clock):
    log = make_log({"segment.ms": 1000})
    log.append_as_leader(batch(["a"], ts=T0), leader_epoch=0)
    log.append_as_leader(batch(["b"], ts=T0 + 1000), leader_epoch=0)        # waited exactly segment.ms: no roll
    assert log.number_of_segments == 1
    log.append_as_leader(batch(["c"], ts=T0 + 1001), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_by_wall_clock_when_batches_have_no_timestamp(make_log, clock):
    log = make_log({"segment.ms": 1000})
    log.append_as_leader(batch(["a"], ts=-1), leader_epoch=0)
    clock.advance(1001)
    log.append_as_leader(batch(["b"], ts=-1), leader_epoch=0)
    assert log.number_of_segments == 2


def test_roll_when_the_offset_index_is_full(make_log):
    log = make_log({"segment.index.bytes": 24, "index.interval.bytes": 1})     # 3 offset entries, 2 time entries
    for _ in range(10):
        log.append_as_leader(batch(["a"]), leader_epoch=0)
    assert log.number_of_segments > 2
    assert all(s.offset_index.entries <= 3 for s in log.segments)


def test_roll_when_an_offset_would_overflow_the_index(make_log):
    log = make_log()
    log.append_as_follower(batch(["a"]))
    far = bytearray(batch(["b"]))
    struct.pack_into(">q", far, 0, 2**31 + 5)
    log.append_as_follower(bytes(far))
    assert [s.base_offset for s in log.segments] == [0, 2**31 + 5]


def test_explicit_roll_and_roll_of_an_empty_active_segment(make_log):
    log = make_log()
    log.append_as_leader(batch(["a"]), leader_epoch=0)
    log.roll()
    assert [s.base_offset for s in log.segments] == [0, 1]
    log.roll()                                                                  # empty active: replaced in place
    assert [s.base_offset for s in log.segments] == [0, 1]
    log.append_as_leader(batch(["b"]), leader_epoch=0)
    assert log.log_end_offset == 2


def test_roll_writes_a_producer_snapshot_and_flushes_the_old_segment(make_log):
    log = make_log({"segment.bytes": 150})
    log.append_as_leader(batch(["a" * 50], pid=9, epoch=0, seq=0), leader_epoch=0)
    log.append_as_leader(batch(["b" * 50], pid=9, epoch=0, seq=1), leader_epoch=0)
    assert os.path.exists(os.path.join(log.dir, "00000000000000000001.snapshot"))
    assert log.recovery_point == 1                       # the scheduled flush of the rolled segment ran
    assert log.segments[0].log.unflushed_bytes == 0 and log.active_segment.log.unflushed_bytes > 0
