"""What a broker does with headers alone: scan, CRC check, assign offsets/epoch in place, LogAppendTime."""
from __future__ import annotations

import struct

import pytest

from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import (TimestampType, assign_offsets, batch_checksum, build_batch, crc32c, crc_is_valid,
                              decode_batch, ensure_crc_valid, read_batch_header, scan_batches, set_base_offset,
                              set_last_offset, set_max_timestamp, set_partition_leader_epoch, stored_checksum)
from kafkalab.records.header import HEADER_FIELD_OFFSETS

from .helpers import compressible_records


def kafka_python_batch(n=5) -> bytearray:
    b = KpBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1, producer_epoch=-1,
                  base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [])
    return bytearray(b.build())


def test_crc32c_test_vector():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283


def test_crc_covers_exactly_bytes_21_to_end():
    buf = bytes(kafka_python_batch())
    assert batch_checksum(buf) == crc32c(buf[21:]) == stored_checksum(buf) == struct.unpack(">I", buf[17:21])[0]
    ensure_crc_valid(buf)
    for i in range(len(buf)):
        flipped = bytearray(buf)
        flipped[i] ^= 0x40
        if 17 <= i < 21 or i >= 21:
            assert not crc_is_valid(flipped), i
        elif 8 <= i < 12 or i == 16:
            pass                                      # batch_length / magic: the batch is not the same batch
        else:
            assert crc_is_valid(flipped), i           # base_offset, partition_leader_epoch: outside the CRC


def test_patching_offset_and_epoch_keeps_the_crc_valid():
    buf = kafka_python_batch()
    crc = bytes(buf[17:21])
    set_base_offset(buf, 0, 2 ** 40)
    set_partition_leader_epoch(buf, 0, 77)
    assert bytes(buf[17:21]) == crc and crc_is_valid(buf)
    assert KpBatch(bytes(buf)).validate_crc()
    header = read_batch_header(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (2 ** 40, 77)
    assert header.last_offset == 2 ** 40 + 4 and header.next_offset == 2 ** 40 + 5
    assert [r.offset for r in decode_batch(buf).records] == [2 ** 40 + i for i in range(5)]
    set_last_offset(buf, 0, 1000)
    assert read_batch_header(buf).base_offset == 996 and crc_is_valid(buf)


def test_setting_log_append_time_without_recomputing_breaks_the_crc():
    buf = kafka_python_batch()
    struct.pack_into(">h", buf, 21, struct.unpack_from(">h", buf, 21)[0] | 0x08)   # the bit, by hand
    assert not crc_is_valid(buf)
    with pytest.raises(DecodeError) as info:
        ensure_crc_valid(buf)
    assert info.value.path == "crc" and info.value.offset == 17
    with pytest.raises(DecodeError):
        decode_batch(bytes(buf))
    assert not KpBatch(bytes(buf)).validate_crc()     # kafka-python agrees it is corrupt


def test_set_max_timestamp_recomputes_the_crc_only_when_something_changes():
    buf = kafka_python_batch()
    original = bytes(buf)
    header = read_batch_header(buf)
    assert not set_max_timestamp(buf, 0, TimestampType.CREATE_TIME, header.max_timestamp)
    assert bytes(buf) == original
    assert set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, 42)
    assert crc_is_valid(buf) and KpBatch(bytes(buf)).validate_crc()
    header = read_batch_header(buf)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME and header.max_timestamp == 42
    assert set_max_timestamp(buf, 0, TimestampType.CREATE_TIME, 1_700_000_000_004)
    assert bytes(buf) == original


def test_header_fields_match_kafka_python_and_the_layout_table():
    buf = bytes(build_batch(compressible_records(9), compression="zstd", producer_id=5, producer_epoch=1,
                            base_sequence=2 ** 31 - 3, transactional=True, partition_leader_epoch=8))
    ours, theirs = read_batch_header(buf), KpBatch(buf)
    assert ours == decode_batch(buf).header
    assert (ours.base_offset, ours.crc, ours.attributes, ours.last_offset_delta, ours.base_timestamp,
            ours.max_timestamp, ours.producer_id, ours.producer_epoch, ours.base_sequence, ours.records_count) == \
        (theirs.base_offset, theirs.crc, theirs.attributes, theirs.last_offset_delta, theirs.first_timestamp,
         theirs.max_timestamp, theirs.producer_id, theirs.producer_epoch, theirs.base_sequence,
         theirs.records_count)
    assert ours.size_in_bytes == ours.size == len(buf) and ours.magic == 2
    assert ours.compression_type == 4 and ours.is_transactional and not ours.is_control_batch
    assert ours.last_sequence == 5 == theirs.last_sequence        # wraps past 2**31 - 1 back to 0
    starts = [s for _, s, _, _ in HEADER_FIELD_OFFSETS] + [61]
    assert all(e == s for (_, _, e, _), s in zip(HEADER_FIELD_OFFSETS, starts[1:]))


def test_scan_batches_stops_cleanly_at_a_partial_batch():
    batches = [build_batch(compressible_records(n), compression=n % 5) for n in (1, 2, 3)]
    blob = b"".join(batches)
    scan = scan_batches(blob)
    assert scan.complete and len(scan) == 3 and scan.end == len(blob)
    assert [(s.start, s.end) for s in scan] == [(0, len(batches[0])), (len(batches[0]), len(batches[0]) +
                                                                      len(batches[1])),
                                                (len(blob) - len(batches[2]), len(blob))]
    assert [s.header.records_count for s in scan] == [1, 2, 3]
    cut = blob[:-10]
    scan = scan_batches(cut)
    assert not scan.complete and len(scan) == 2
    assert scan.partial_start == scan.end == len(blob) - len(batches[2])
    assert scan.partial_bytes == len(batches[2]) - 10
    assert len(scan_batches(blob, 0, len(batches[0]) + 5)) == 1
    assert scan_batches(blob[:5]).partial_bytes == 5


def test_assign_offsets_like_a_leader():
    blob = bytearray(b"".join(build_batch(compressible_records(n), compression=n % 5) for n in (3, 1, 4)))
    crcs = [s.header.crc for s in scan_batches(blob)]
    assert assign_offsets(blob, 100, 6) == 108
    scan = scan_batches(blob)
    assert [(s.header.base_offset, s.header.last_offset) for s in scan] == [(100, 102), (103, 103), (104, 107)]
    assert [s.header.crc for s in scan] == crcs and all(crc_is_valid(blob, s.start) for s in scan)
    assert {s.header.partition_leader_epoch for s in scan} == {6}
    with pytest.raises(DecodeError):
        assign_offsets(blob[:-1], 0, 0)


def test_header_reading_errors():
    with pytest.raises(DecodeError):
        read_batch_header(b"\x00" * 60)
    buf = bytearray(build_batch(compressible_records(1)))
    buf[16] = 0
    with pytest.raises(DecodeError, match="magic"):
        read_batch_header(buf)
    with pytest.raises(DecodeError):
        set_base_offset(bytearray(10), 0, 1)
    assert not crc_is_valid(b"short")
