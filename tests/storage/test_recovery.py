"""Loading and recovery: ports of Kafka's LogLoaderTest cases, torn tails, leftovers of interrupted work,
and the page-cache crash model."""
import logging
import os
import random

import pytest

from kafkalab.storage import local_log

from .helpers import T0, all_records, batch, kv, segment_files


def test_corrupt_log(make_log, clock):
    """LogLoaderTest.testCorruptLog: garbage appended to the active .log and .index of a cleanly closed log;
    reopened without a clean shutdown, the log end offset and every record are unchanged. 10 iterations."""
    rng = random.Random(1048)
    config = {"segment.bytes": 1000, "index.interval.bytes": 1, "max.message.bytes": 64 * 1024}
    for iteration in range(10):
        name = f"corrupt{iteration}-0"
        log = make_log(config, name=name)
        n = 50 + rng.randrange(50)
        for _ in range(n):
            log.append_as_leader(batch(["test"], keys=[None], ts=clock.milliseconds()), leader_epoch=0)
        before = [(r.key, r.value, r.timestamp) for r in all_records(log)]
        active = log.active_segment
        log.close()
        with open(active.offset_index.path, "ab") as f:
            f.write(rng.randbytes(rng.randrange(1024) + 1))
        with open(active.log.path, "ab") as f:
            f.write(rng.randbytes(rng.randrange(1024) + 1))
        log = make_log(config, name=name, log_start_offset=0, recovery_point=50, had_clean_shutdown=False)
        assert log.log_end_offset == n
        assert [(r.key, r.value, r.timestamp) for r in all_records(log)] == before
        assert log.recovery_report.truncations and log.recovery_report.truncations[0].base_offset == active.base_offset
        log.close()


def test_corrupt_index_rebuild(make_log, clock):
    """LogLoaderTest.testCorruptIndexRebuild: every index file overwritten with two spaces."""
    config = {"segment.bytes": 200, "index.interval.bytes": 1}
    log = make_log(config)
    for i in range(200):
        log.append_as_leader(batch([os.urandom(10)], ts=clock.milliseconds() + i * 10), leader_epoch=0)
    index_files = segment_files(log, ".index") + segment_files(log, ".timeindex")
    log.close()
    for path in index_files:
        with open(path, "wb") as f:
            f.write(b"  ")
    log = make_log(config, had_clean_shutdown=False)
    assert log.log_end_offset == 200
    log.update_high_watermark(200)
    for i in range(200):
        assert log.read(i, 100).batch_headers()[0].last_offset == i
        expected = log.segments[0].base_offset if i == 0 else i
        assert log.fetch_offset_by_timestamp(clock.milliseconds() + i * 10).offset == expected


def test_missing_indexes_are_rebuilt_even_after_a_clean_shutdown(make_log):
    """LogLoaderTest.testIndexRebuild, plus the report saying so."""
    config = {"segment.bytes": 200, "index.interval.bytes": 1}
    log = make_log(config)
    for i in range(40):
        log.append_as_leader(batch([b"0123456789"], ts=T0 + i * 10), leader_epoch=0)
    expected = [tuple(e) for e in log.segments[0].offset_index.entry_list()]
    files = segment_files(log, ".index") + segment_files(log, ".timeindex")
    log.close()
    for path in files:
        os.remove(path)
    log = make_log(config)
    assert [tuple(e) for e in log.segments[0].offset_index.entry_list()] == expected
    assert log.segments[0].time_index.entries > 0
    assert len(log.recovery_report.rebuilt_indexes) == log.number_of_segments
    assert "missing" in log.recovery_report.rebuilt_indexes[0][1]


def test_torn_write_in_the_middle_of_a_batch(make_log, caplog):
    log = make_log()
    for i in range(10):
        log.append_as_leader(batch([f"value-{i}", "x"]), leader_epoch=i // 5)
    path = log.active_segment.log.path
    size = os.path.getsize(path)
    log.simulate_crash(lose_unflushed=False)
    with open(path, "r+b") as f:
        f.truncate(size - 7)                              # the last batch lost its last 7 bytes
    with caplog.at_level(logging.WARNING, logger="kafkalab.storage.log_loader"):
        log = make_log(had_clean_shutdown=False)
    assert log.log_end_offset == 18
    (t,) = log.recovery_report.truncations
    assert (t.base_offset, t.truncated_bytes, t.valid_bytes) == (0, size - 7 - t.valid_bytes, t.valid_bytes)
    assert "incomplete batch" in t.reason
    assert any("Recovery after unclean shutdown" in r.getMessage() and "truncated" in r.getMessage()
               for r in caplog.records)
    assert log.append_as_leader(batch(["after"]), leader_epoch=1).first_offset == 18


def test_corruption_in_an_older_segment_deletes_every_later_segment(make_log):
    config = {"segment.bytes": 300}
    log = make_log(config)
    for i in range(20):
        log.append_as_leader(batch([f"value-{i:02d}" * 3]), leader_epoch=i // 10)
    bases = [s.base_offset for s in log.segments]
    victim = log.segments[2]
    with open(victim.log.path, "r+b") as f:              # flip a byte inside the 2nd batch of segment 2
        first = victim.log.batch_at(0)
        f.seek(first.size + 70)
        byte = f.read(1)
        f.seek(first.size + 70)
        f.write(bytes([byte[0] ^ 0xFF]))
    log.simulate_crash(lose_unflushed=False)
    log = make_log(config, had_clean_shutdown=False)
    report = log.recovery_report
    assert log.log_end_offset == victim.base_offset + 1
    assert report.truncations[0].base_offset == victim.base_offset and "crc" in report.truncations[0].reason
    assert report.deleted_segments == bases[3:]
    assert [s.base_offset for s in log.segments] == bases[:3]
    assert log.leader_epoch_cache.epoch_entries() == [(0, 0)]


def test_recovery_starts_at_the_recovery_point(make_log):
    config = {"segment.bytes": 300}
    log = make_log(config)
    for i in range(20):
        log.append_as_leader(batch([f"value-{i:02d}" * 3]), leader_epoch=0)
    log.flush()
    recovery_point = log.recovery_point
    log.close()
    log = make_log(config, recovery_point=recovery_point - 1, had_clean_shutdown=False)
    assert log.recovery_report.recovered_segments == [log.segments[-1].base_offset]
    assert log.recovery_point == recovery_point - 1       # only a flush moves it forward again
    log.flush()
    assert log.recovery_point == 20


def test_leftover_deleted_and_cleaned_files_are_removed(make_log):
    log = make_log()
    log.append_as_leader(batch(["a"]), leader_epoch=0)
    log.close()
    for name in ("00000000000000000000.log.cleaned", "00000000000000000000.index.cleaned",
                 "00000000000000000007.log.deleted", "00000000000000000007.index.deleted",
                 "00000000000000000042.index"):
        open(os.path.join(log.dir, name), "wb").write(b"junk")
    log = make_log(had_clean_shutdown=False)
    assert sorted(log.recovery_report.removed_files) == sorted([
        "00000000000000000000.log.cleaned", "00000000000000000000.index.cleaned", "00000000000000000007.log.deleted",
        "00000000000000000007.index.deleted", "00000000000000000042.index"])
    assert kv(all_records(log)) == [(0, b"k0", b"a")]


def test_crash_during_segment_swap_is_completed_on_load(make_log, monkeypatch):
    from kafkalab.storage.cleaner import Cleaner, LogToClean
    config = {"cleanup.policy": "compact", "segment.bytes": 200}
    log = make_log(config)
    for i in range(12):
        log.append_as_leader(batch([f"v{i}"], keys=[f"key{i % 2}"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    real = local_log.delete_segment_files

    def crash_after_swap_rename(*a, **kw):
        raise KeyboardInterrupt("power cut")              # after .cleaned -> .swap, before old -> .deleted

    monkeypatch.setattr(local_log, "delete_segment_files", crash_after_swap_rename)
    with pytest.raises(KeyboardInterrupt):
        Cleaner(log.time).clean(LogToClean(log, 0, log.active_segment.base_offset, 0, 1))
    monkeypatch.setattr(local_log, "delete_segment_files", real)
    assert segment_files(log, ".log.swap")
    log.simulate_crash(lose_unflushed=False)
    log = make_log(config, had_clean_shutdown=False)
    assert log.recovery_report.swap_files_recovered
    assert not [f for f in os.listdir(log.dir) if f.endswith((".swap", ".cleaned"))]
    kept = kv(all_records(log))
    assert kept[-3:] == [(9, b"key1", b"v9"), (10, b"key0", b"v10"), (11, b"key1", b"v11")]
    assert len(kept) < 12 and log.log_end_offset == 12


def test_simulated_power_loss_drops_unflushed_acknowledged_data(make_log):
    log = make_log()
    for i in range(6):
        log.append_as_leader(batch([f"a{i}"]), leader_epoch=0)
    log.flush()                                           # offsets 0-5 are on disk
    for i in range(4):
        assert log.append_as_leader(batch([f"b{i}"]), leader_epoch=0).last_offset == 6 + i   # acknowledged
    assert log.unflushed_messages == 4
    lost = log.simulate_crash()
    assert sum(lost.values()) > 0
    log = make_log(recovery_point=6, had_clean_shutdown=False)
    assert log.log_end_offset == 6
    assert [r.value for r in all_records(log)] == [f"a{i}".encode() for i in range(6)]


def test_crash_without_losing_the_page_cache_keeps_everything(make_log):
    log = make_log()
    for i in range(5):
        log.append_as_leader(batch([f"a{i}"]), leader_epoch=0)
    log.simulate_crash(lose_unflushed=False)
    assert make_log(had_clean_shutdown=False).log_end_offset == 5


def test_flush_messages_one_loses_nothing(make_log):
    log = make_log({"flush.messages": 1})
    for i in range(5):
        log.append_as_leader(batch([f"a{i}"]), leader_epoch=0)
    assert sum(log.simulate_crash().values()) == 0
    assert make_log({"flush.messages": 1}, had_clean_shutdown=False).log_end_offset == 5


def test_a_segment_never_flushed_vanishes_in_a_crash(make_log):
    log = make_log({"segment.bytes": 200})
    for i in range(8):
        log.append_as_leader(batch([f"value-{i}" * 4]), leader_epoch=0)
    active_file = log.active_segment.log.path
    log.simulate_crash()
    assert not os.path.exists(active_file)
    log = make_log({"segment.bytes": 200}, had_clean_shutdown=False)
    assert log.log_end_offset == log.segments[-1].read_next_offset() < 8


def test_log_end_before_log_start_deletes_everything(make_log):
    log = make_log()
    log.append_as_leader(batch(["a"]), leader_epoch=0)
    log.close()
    log = make_log(log_start_offset=10, had_clean_shutdown=False)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)
    assert [s.base_offset for s in log.segments] == [10]
