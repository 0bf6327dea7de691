"""Control records: the COMMIT/ABORT transaction markers a leader appends."""
from __future__ import annotations

import pytest

from kafka.record.default_records import DefaultRecordBatch as KpBatch

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.records import (ControlRecordType, EndTransactionMarker, build_end_txn_marker_batch,
                              control_record_key, crc_is_valid, decode_batch, end_txn_marker_value,
                              parse_control_record_key, parse_end_txn_marker)


def test_key_and_value_layout():
    assert control_record_key(ControlRecordType.ABORT) == b"\x00\x00\x00\x00"
    assert control_record_key(ControlRecordType.COMMIT) == b"\x00\x00\x00\x01"
    assert end_txn_marker_value(7) == b"\x00\x00\x00\x00\x00\x07"
    assert parse_end_txn_marker(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x01\x00") == \
        EndTransactionMarker(ControlRecordType.COMMIT, 256, 0)


@pytest.mark.parametrize("kind", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_marker_batch_build_and_parse(kind):
    buf = build_end_txn_marker_batch(kind, producer_id=99, producer_epoch=4, coordinator_epoch=12,
                                     timestamp=1_700_000_000_000, base_offset=500, partition_leader_epoch=3)
    assert crc_is_valid(buf)
    batch = decode_batch(buf)
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 4, -1)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.records_count) == (500, 3, 1)
    (record,) = batch.records
    assert record.offset == 500 and record.timestamp == 1_700_000_000_000
    assert parse_control_record_key(record.key) is kind
    assert parse_end_txn_marker(record.key, record.value) == EndTransactionMarker(kind, 12)
    # kafka-python recognizes it as a control record of the same type
    (theirs,) = list(KpBatch(buf))
    assert theirs.type == int(kind) and theirs.commit == (kind == ControlRecordType.COMMIT)


def test_unknown_and_newer_types():
    assert parse_control_record_key(b"\x00\x00\x00\x02") is ControlRecordType.LEADER_CHANGE
    assert parse_control_record_key(b"\x00\x00\x01\x00") is ControlRecordType.UNKNOWN
    assert parse_control_record_key(b"\x00\x01\x00\x01\xff") is ControlRecordType.COMMIT   # newer key version
    for bad in (None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"):
        with pytest.raises(DecodeError):
            parse_control_record_key(bad)
    with pytest.raises(DecodeError):
        parse_end_txn_marker(b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x00")
    with pytest.raises(DecodeError):
        parse_end_txn_marker(b"\x00\x00\x00\x01", b"\x00\x00\x00")
    with pytest.raises(EncodeError):
        control_record_key(ControlRecordType.UNKNOWN)
    with pytest.raises(EncodeError):
        build_end_txn_marker_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0,
                                   coordinator_epoch=0)
