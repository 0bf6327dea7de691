"""A producer's v0/v1 message set appended by the leader: converted to one v2 batch (LogValidator's up-conversion)."""
from __future__ import annotations

import pytest

from kafkalab.records import TimestampType, decode_batches
from kafkalab.records.legacy import build_message_set
from kafkalab.storage.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError, StorageError

from .helpers import T0, all_batches, batch

ROWS = [(0, T0, b"k0", b"v0"), (1, T0 + 1, b"k1", b"v1"), (2, T0 + 2, None, b"v2")]


def rejected(log, records):
    leo = log.log_end_offset
    with pytest.raises(StorageError) as e:
        log.append_as_leader(records, leader_epoch=0)
    assert log.log_end_offset == leo
    return e.value


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4"])
def test_a_message_set_is_stored_as_one_v2_batch(make_log, magic, codec):
    log = make_log()
    log.append_as_leader(batch(["x", "y"]), leader_epoch=3)
    info = log.append_as_leader(build_message_set(ROWS, magic=magic, compression=codec), leader_epoch=3)
    assert (info.first_offset, info.last_offset) == (2, 4)
    stats = info.record_validation_stats
    assert stats.num_records_converted == 3 and stats.temporary_memory_bytes > 0
    b = all_batches(log)[-1]
    assert (b.base_offset, b.last_offset, b.partition_leader_epoch, b.compression_type) == \
        (2, 4, 3, {None: 0, "gzip": 1, "snappy": 2, "lz4": 3}[codec])
    expected_ts = [T0, T0 + 1, T0 + 2] if magic == 1 else [-1, -1, -1]      # v0 has no timestamp
    assert [(r.offset, r.timestamp, r.key, r.value) for r in b.records] == \
        [(2 + i, ts, k, v) for i, (ts, (_, _, k, v)) in enumerate(zip(expected_ts, ROWS))]
    assert b.max_timestamp == expected_ts[-1] and b.producer_id == -1


def test_v0_under_log_append_time_gets_the_brokers_clock(make_log, clock):
    log = make_log({"message.timestamp.type": "LogAppendTime"})
    info = log.append_as_leader(build_message_set(ROWS, magic=0), leader_epoch=0)
    [b] = all_batches(log)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == clock.milliseconds()
    assert info.log_append_time == clock.milliseconds()


def test_compression_type_of_the_topic_applies(make_log):
    log = make_log({"compression.type": "lz4"})
    log.append_as_leader(build_message_set(ROWS, magic=1, compression="gzip"), leader_epoch=0)
    assert all_batches(log)[0].compression_type == 3


def test_bad_crc_is_corrupt_message(make_log):
    data = bytearray(build_message_set(ROWS, magic=1))
    data[-1] ^= 0xFF
    err = rejected(make_log(), bytes(data))
    assert isinstance(err, CorruptRecordError) and err.error_code == 2
    assert str(err).startswith("Record is corrupt (stored crc = ") and str(err).endswith("in topic partition topic-0.")


def test_bad_inner_crc_of_a_wrapper_is_corrupt_message(make_log):
    import zlib
    from kafkalab.records.legacy import _message, _entry
    inner = bytearray(build_message_set(ROWS, magic=1))
    inner[-1] ^= 0xFF
    wrapper = _entry(2, _message(1, 1, T0, None, __import__("gzip").compress(bytes(inner))))
    assert zlib.crc32(wrapper[16:]) == int.from_bytes(wrapper[12:16], "big")       # the wrapper itself is fine
    assert rejected(make_log(), wrapper).error_code == 2


def test_two_wrappers_are_invalid(make_log):
    one = build_message_set(ROWS[:1], magic=1, compression="gzip")
    err = rejected(make_log(), one + one)
    assert err.error_code == 87 and str(err) == "Compressed outer record has more than one batch"


def test_mixed_magic_is_invalid(make_log):
    err = rejected(make_log(), build_message_set(ROWS[:1], magic=0) + build_message_set(ROWS[1:], magic=1))
    assert isinstance(err, InvalidRecordError)
    assert str(err) == "Batch magic 1 is not the same as the first batch's magic byte 0 in topic partition topic-0"
    err = rejected(make_log(), build_message_set(ROWS[:1], magic=1) + batch(["x"]))
    assert "Batch magic 2 is not the same as the first batch's magic byte 1" in str(err)


def test_record_rules_apply_to_converted_records(make_log, clock):
    err = rejected(make_log({"cleanup.policy": "compact"}), build_message_set(ROWS, magic=1))
    assert err.error_code == 87 and [e.batch_index for e in err.record_errors] == [0]   # the keyless third message
    old = [(0, clock.milliseconds() - 10 ** 10, b"k", b"v")]
    err = rejected(make_log({"message.timestamp.before.max.ms": 1000}, name="old-0"), build_message_set(old, magic=1))
    assert isinstance(err, InvalidTimestampError) and err.error_code == 32
    claims_lat = build_message_set(ROWS, magic=1, timestamp_type=1, log_append_time=T0)
    assert rejected(make_log({"message.timestamp.type": "LogAppendTime"}, name="lat-0"), claims_lat).error_code == 32


def test_size_of_each_message_is_checked_and_the_converted_batch_again(make_log):
    err = rejected(make_log({"max.message.bytes": 30}), build_message_set([(0, T0, b"k", b"v" * 40)], magic=0))
    assert err.error_code == 10


def test_the_stored_batch_reads_back_with_decode_batches(make_log):
    log = make_log()
    log.append_as_leader(build_message_set(ROWS, magic=1, compression="snappy"), leader_epoch=0)
    info = log.read(0, 1 << 20, isolation="log_end")
    assert [r.value for b in decode_batches(info.records) for r in b.records] == [b"v0", b"v1", b"v2"]
