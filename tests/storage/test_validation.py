"""What a leader rejects, with Kafka's error codes and messages."""
import struct

import pytest

from kafkalab.protocol.errors import ErrorCode
from kafkalab.records import SimpleRecord, TimestampType, build_batch
from kafkalab.storage.errors import (CorruptRecordError, InvalidRecordError, InvalidTimestampError,
                                     RecordBatchTooLargeError, RecordTooLargeError, StorageError)

from .helpers import T0, batch, fix_crc


def rejected(log, records, **kw) -> StorageError:
    leo = log.log_end_offset
    with pytest.raises(StorageError) as e:
        log.append_as_leader(records, leader_epoch=0, **kw)
    assert log.log_end_offset == leo                     # nothing was appended
    return e.value


def test_client_batch_must_start_at_offset_zero(make_log):
    b = bytearray(batch(["a"]))
    struct.pack_into(">q", b, 0, 5)
    err = rejected(make_log(), bytes(b))
    assert isinstance(err, InvalidRecordError) and err.error_code == ErrorCode.INVALID_RECORD == 87
    assert str(err) == "The baseOffset of the record batch in the append to topic-0 should be 0, but it is 5"


def test_one_batch_per_partition(make_log):
    err = rejected(make_log(), batch(["a"]) + batch(["b"]))
    assert err.error_code == 87 and str(err) == "Compressed outer record has more than one batch"


def test_corrupt_crc(make_log):
    b = bytearray(batch(["a"]))
    b[-1] ^= 0xFF
    err = rejected(make_log(), bytes(b))
    assert isinstance(err, CorruptRecordError) and err.error_code == ErrorCode.CORRUPT_MESSAGE == 2
    assert str(err).startswith("Record is corrupt (stored crc = ")
    assert str(err).endswith(") in topic partition topic-0.")


def test_batch_larger_than_max_message_bytes(make_log):
    err = rejected(make_log({"max.message.bytes": 100}), batch(["x" * 200]))
    assert isinstance(err, RecordTooLargeError) and err.error_code == ErrorCode.MESSAGE_TOO_LARGE == 10
    assert "which exceeds the maximum configured value of 100." in str(err)


def test_batch_larger_than_segment(make_log):
    err = rejected(make_log({"segment.bytes": 100}), batch(["x" * 200]))
    assert isinstance(err, RecordBatchTooLargeError) and err.error_code == ErrorCode.RECORD_LIST_TOO_LARGE == 18
    assert "exceeds the maximum configured segment size of 100." in str(err)


def test_count_must_match_offsets(make_log):
    b = bytearray(batch(["a", "b"]))
    struct.pack_into(">i", b, 57, 3)                     # records_count 3, last_offset_delta 1
    err = rejected(make_log(), bytes(fix_crc(b)))
    assert err.error_code == 87
    assert str(err) == "Inconsistent batch offset range [0, 1] and count of records 3 in topic partition topic-0"


def test_control_batch_from_a_client(make_log):
    from kafkalab.records import build_end_txn_marker_batch
    marker = build_end_txn_marker_batch(1, producer_id=5, producer_epoch=0, coordinator_epoch=0, timestamp=T0)
    err = rejected(make_log(), marker)
    assert str(err) == "Clients are not allowed to write control records in topic partition topic-0"


def test_producer_id_without_sequence(make_log):
    b = bytearray(batch(["a"]))
    struct.pack_into(">qh", b, 43, 77, 0)                 # producer id 77, epoch 0, base_sequence stays -1
    err = rejected(make_log(), bytes(fix_crc(b)))
    assert err.error_code == 87
    assert str(err) == "Invalid sequence number -1 in record batch with producerId 77 in topic partition topic-0"


def test_a_v2_batch_with_magic_1_is_read_as_a_corrupt_v1_message(make_log):
    # "Only magic 2" is the Produce request's rule from v3 on (the handler's); the log converts real v0/v1 sets
    b = bytearray(batch(["a"]))
    b[16] = 1
    err = rejected(make_log(), bytes(b))
    assert err.error_code == 2 and str(err).startswith("Record is corrupt (stored crc = ")


def test_empty_produce(make_log):
    err = rejected(make_log(), b"")
    assert err.error_code == 87


def test_partial_trailing_batch_is_ignored(make_log):
    log = make_log()
    full = batch(["a"])
    info = log.append_as_leader(full + batch(["b"])[:30], leader_epoch=0)
    assert info.valid_bytes == len(full) and log.log_end_offset == 1


def test_timestamps_out_of_range(make_log, clock):
    log = make_log({"message.timestamp.before.max.ms": 1000, "message.timestamp.after.max.ms": 500})
    err = rejected(log, batch(["ok", "old", "new"], timestamps=[T0, T0 - 1001, T0 + 501]))
    assert isinstance(err, InvalidTimestampError) and err.error_code == ErrorCode.INVALID_TIMESTAMP == 32
    assert str(err) == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in err.record_errors] == [1, 2]
    assert err.record_errors[0].message == (f"Timestamp {T0 - 1001} of message with offset 1 is out of range. The "
                                            f"timestamp should be within [{T0 - 1000}, {T0 + 500}]")
    log.append_as_leader(batch(["edge"], timestamps=[T0 - 1000]), leader_epoch=0)


def test_producer_must_not_claim_log_append_time(make_log):
    b = build_batch([SimpleRecord(b"k", b"v", (), T0)], timestamp_type=TimestampType.LOG_APPEND_TIME,
                    log_append_time=T0)
    err = rejected(make_log({"message.timestamp.type": "LogAppendTime"}), b)
    assert err.error_code == 32
    assert "Producer should not set timestamp type to LogAppendTime" in err.record_errors[0].message


def test_compacted_topic_needs_keys(make_log):
    err = rejected(make_log({"cleanup.policy": "compact"}), batch(["a", "b"], keys=[b"k", None]))
    assert isinstance(err, InvalidRecordError)
    assert err.record_errors[0] == (1, "Compacted topic cannot accept message without key in topic partition topic-0.")
    assert str(err).startswith("One or more records have been rejected due to 1 record errors in total, and only "
                               "showing the first three errors at most: [RecordError(batchIndex=1, message=")


def test_garbled_records_behind_a_valid_crc(make_log):
    b = bytearray(batch(["abc"]))
    b[61] = 0x7F                                         # record length varint now wrong
    err = rejected(make_log(), bytes(fix_crc(b)))
    assert err.error_code == 87
