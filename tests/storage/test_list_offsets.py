"""ListOffsets lookups: by timestamp through the time index, and Kafka's special timestamps."""
from kafkalab.storage import (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP,
                              LATEST_TIMESTAMP, MAX_TIMESTAMP)

from .helpers import T0, batch


def build(make_log):
    log = make_log({"segment.bytes": 250, "index.interval.bytes": 1})
    # batches of 2 records, timestamps T0+0,10 | 20,30 | ... with one out-of-order spike
    for i in range(10):
        stamps = [T0 + i * 20, T0 + i * 20 + 10]
        if i == 4:
            stamps = [T0 + 500, T0 + 90]                 # max timestamp of the log, in the middle of a batch
        log.append_as_leader(batch(["a", "b"], timestamps=stamps), leader_epoch=i // 5)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_lookup_by_timestamp(make_log):
    log = build(make_log)
    assert log.number_of_segments > 2
    assert log.fetch_offset_by_timestamp(T0) == (T0, 0, 0)
    assert log.fetch_offset_by_timestamp(T0 + 25) == (T0 + 30, 3, 0)      # first record with ts >= target
    assert log.fetch_offset_by_timestamp(T0 - 1000) == (T0, 0, 0)
    assert log.fetch_offset_by_timestamp(T0 + 100) == (T0 + 500, 8, 0)    # the spike comes first in offset order
    assert log.fetch_offset_by_timestamp(T0 + 190) == (T0 + 500, 8, 0)    # Kafka searches the first segment
    assert log.fetch_offset_by_timestamp(T0 + 195) == (T0 + 500, 8, 0)    # whose largest timestamp is >= target
    assert log.fetch_offset_by_timestamp(T0 + 501) is None


def test_special_timestamps(make_log):
    log = build(make_log)
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 0, 0)
    assert log.fetch_offset_by_timestamp(EARLIEST_LOCAL_TIMESTAMP) == (-1, 0, 0)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (-1, 20, 1)
    assert log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP) == (-1, -1, -1)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (T0 + 500, 8, 0)
    log.maybe_increment_log_start_offset(11)
    log.delete_old_segments()
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 11, 1)
    assert log.fetch_offset_by_timestamp(T0) == (T0 + 110, 11, 1)          # never below the log start offset


def test_empty_log(make_log):
    log = make_log()
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (-1, 0, None)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) is None
    assert log.fetch_offset_by_timestamp(T0) is None


def test_lookups_survive_an_index_rebuild(make_log, tmp_path):
    log = build(make_log)
    expected = [log.fetch_offset_by_timestamp(T0 + t) for t in range(0, 200, 7)]
    log.close()
    for f in tmp_path.joinpath("topic-0").glob("*.timeindex"):
        f.unlink()
    again = make_log({"segment.bytes": 250, "index.interval.bytes": 1}, had_clean_shutdown=False)
    assert [again.fetch_offset_by_timestamp(T0 + t) for t in range(0, 200, 7)] == expected
