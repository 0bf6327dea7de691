"""Log compaction: latest value per key, offsets kept, tombstones and delete.retention.ms, lag and ratio rules,
producer state preserved."""
import os

from kafkalab.records import decode_batches
from kafkalab.storage import LogCleaner

from .helpers import T0, all_batches, all_records, batch, kv


def compacted_log(make_log, extra=None, **kw):
    config = {"cleanup.policy": "compact", "segment.bytes": 250}
    config.update(extra or {})
    return make_log(config, **kw)


def write(log, pairs, **kw):
    for key, value in pairs:
        log.append_as_leader(batch([value], keys=[key], **kw), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


def cleaner_for(log, clock, scheduler=None):
    return LogCleaner(lambda: {log.topic_partition: log}, time=clock, scheduler=scheduler)


def test_keeps_the_latest_value_per_key_and_the_offsets(make_log, clock):
    log = compacted_log(make_log)
    write(log, [(f"k{i % 3}", f"v{i}") for i in range(15)])
    active_base = log.active_segment.base_offset
    result = cleaner_for(log, clock).clean_now(log)
    assert result.end_offset == active_base
    kept = kv(all_records(log))
    cleaned = [r for r in kept if r[0] < active_base]
    assert cleaned == [(o, k, v) for o, k, v in cleaned if o >= active_base - 3]   # only the last of each key
    assert {k for _, k, _ in cleaned} == {b"k0", b"k1", b"k2"} or active_base < 3
    assert [r for r in kept if r[0] >= active_base] == [(i, f"k{i % 3}".encode(), f"v{i}".encode())
                                                        for i in range(active_base, 15)]   # active untouched
    assert log.log_end_offset == 15
    assert open(os.path.join(os.path.dirname(log.dir), "cleaner-offset-checkpoint")).read() == \
        f"0\n1\ntopic 0 {active_base}\n"


def test_reading_an_offset_removed_by_compaction_returns_the_next_batch(make_log, clock):
    log = compacted_log(make_log)
    write(log, [("a", "1"), ("a", "2"), ("b", "3"), ("a", "4"), ("c", "5"), ("c", "6"), ("d", "7"), ("d", "8")])
    cleaner_for(log, clock).clean_now(log)
    first = decode_batches(log.read(0, 10**6).records)[0]
    assert first.base_offset >= 1
    assert all(b.last_offset + 1 <= n.base_offset for b, n in zip(all_batches(log), all_batches(log)[1:]))


def test_tombstones_survive_delete_retention_ms_then_go(make_log, clock):
    log = compacted_log(make_log, {"delete.retention.ms": 1000})
    write(log, [("k", "v1"), ("k", None), ("x", "1"), ("y", "2"), ("z", "3"), ("w", "4"), ("u", "5"), ("t", "6")])
    cleaner = cleaner_for(log, clock)
    cleaner.clean_now(log)
    tomb = [(b, r) for b in all_batches(log) for r in b.records if r.key == b"k"]
    assert [(r.offset, r.value) for _, r in tomb] == [(1, None)]        # v1 gone, tombstone kept
    stamped = tomb[0][0]
    assert stamped.has_delete_horizon_ms and stamped.delete_horizon_ms == T0 + 1000
    assert tomb[0][1].timestamp == T0                                    # record timestamps survive the rewrite
    clock.advance(999)
    cleaner.clean_now(log)
    assert [r.offset for r in all_records(log) if r.key == b"k"] == [1]
    clock.advance(1)
    result = cleaner.clean_now(log)
    assert result.stats.tombstones_removed == 1
    assert [r for r in all_records(log) if r.key == b"k"] == []


def test_a_tombstone_that_ends_the_cleaned_range_goes_too(make_log, clock):
    log = compacted_log(make_log, {"delete.retention.ms": 1000, "segment.bytes": 1 << 20})
    write(log, [("k", "v1"), ("k", None)])
    log.roll()
    cleaner = cleaner_for(log, clock)
    cleaner.clean_now(log)
    clock.advance(1000)
    cleaner.clean_now(log)
    assert all_batches(log) == []                        # no empty batch left behind at offset 1


def test_min_compaction_lag_keeps_young_segments_dirty(make_log, clock):
    log = compacted_log(make_log, {"min.compaction.lag.ms": 10_000})
    write(log, [("k", f"v{i}") for i in range(10)], ts=T0)
    result = cleaner_for(log, clock).clean_now(log)
    assert result.end_offset == 0 and len(all_records(log)) == 10       # everything too young
    clock.advance(10_001)
    cleaner_for(log, clock).clean_now(log)
    assert len(all_records(log)) < 10


def test_dirty_ratio_decides_whether_the_cleaner_thread_cleans(make_log, clock):
    log = compacted_log(make_log, {"min.cleanable.dirty.ratio": 0.5})
    write(log, [(f"k{i}", f"v{i}" * 20) for i in range(12)])          # distinct keys: cleaning removes nothing
    cleaner = cleaner_for(log, clock)
    first = cleaner.grab_filthiest_compacted_log()
    assert first.cleanable_ratio == 1.0                                # nothing clean yet, the active tail excluded
    cleaner.run_once()
    write(log, [("k0", "new")] * 3)
    candidate = cleaner._candidate(log, cleaner.all_cleaner_checkpoints(), clock.milliseconds())
    assert 0 < candidate.cleanable_ratio < 0.5
    assert cleaner.grab_filthiest_compacted_log() is None and not cleaner.run_once()
    log.update_config(log.config.with_overrides({"min.cleanable.dirty.ratio": 0.01}))
    assert cleaner.run_once()


def test_cleaner_runs_on_the_scheduler(make_log, clock, scheduler):
    log = compacted_log(make_log, {"min.cleanable.dirty.ratio": 0.01})
    write(log, [("k", f"v{i}") for i in range(10)])
    cleaner = cleaner_for(log, clock, scheduler)
    cleaner.startup()                                        # runs at once, then every log.cleaner.backoff.ms
    assert cleaner.last_results and len(all_records(log)) < 10
    write(log, [("k", f"w{i}") for i in range(10)])
    before = len(cleaner.last_results)
    clock.advance(15_000)
    assert len(cleaner.last_results) > before
    cleaner.shutdown()


def test_last_batch_of_an_active_producer_is_kept_even_when_empty(make_log, clock):
    log = compacted_log(make_log)
    pid = 77
    log.append_as_leader(batch(["old"], keys=["k"], pid=pid, epoch=0, seq=0), leader_epoch=0)
    for i in range(8):
        log.append_as_leader(batch([f"v{i}"], keys=["k"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    cleaner_for(log, clock).clean_now(log)
    first = all_batches(log)[0]
    assert (first.producer_id, first.base_sequence, first.records_count, first.last_offset) == (pid, 0, 0, 0)
    assert log.append_as_leader(batch(["old"], keys=["k"], pid=pid, epoch=0, seq=0), leader_epoch=0).duplicate
    log.close()
    again = compacted_log(make_log, had_clean_shutdown=False)
    assert again.producer_state_manager.last_entry(pid).last_seq == 0


def test_compressed_batches_are_rewritten_with_their_codec(make_log, clock):
    log = compacted_log(make_log, {"segment.bytes": 400})
    for i in range(6):
        log.append_as_leader(batch(["a", "b", "c"], keys=["x", f"y{i}", "z"], compression="gzip"), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    cleaner_for(log, clock).clean_now(log)
    batches = all_batches(log)
    assert all(b.compression_type == 1 for b in batches)
    rewritten = [b for b in batches if b.records_count == 1]
    assert rewritten and all(b.last_offset_delta == 2 for b in rewritten)   # last_offset_delta preserved


def test_small_segments_are_merged(make_log, clock):
    log = compacted_log(make_log)
    write(log, [(f"k{i % 2}", f"v{i}") for i in range(20)])
    before = log.number_of_segments
    cleaner = cleaner_for(log, clock)
    cleaner.clean_now(log)
    write(log, [(f"k{i % 2}", f"w{i}") for i in range(3)])
    cleaner.clean_now(log)
    assert log.number_of_segments < before
