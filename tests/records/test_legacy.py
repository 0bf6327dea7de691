"""Message formats v0 and v1: the bytes, the wrappers, the checksums, and bad input."""
from __future__ import annotations

import struct
import zlib

import pytest

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.records import compress
from kafkalab.records.legacy import (LOG_OVERHEAD, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, _lz4_header_checksum,
                                     build_message_set, deep_records, iter_records, read_message_set)

ROWS = [(0, 1000, b"k0", b"v0"), (1, 1001, None, b"v1"), (2, 1002, b"k2", None)]


def test_v0_message_layout_byte_by_byte():
    data = build_message_set([(7, 1234, b"key", b"value")], magic=0)
    offset, size = struct.unpack_from(">qi", data)
    assert (offset, size, len(data)) == (7, RECORD_OVERHEAD_V0 + 3 + 5, LOG_OVERHEAD + size)
    crc, magic, attributes = struct.unpack_from(">IbB", data, 12)
    assert (magic, attributes) == (0, 0)
    assert crc == zlib.crc32(data[16:])                   # CRC-32 over magic..value (no timestamp in v0)
    assert data[18:22] == b"\x00\x00\x00\x03" and data[22:25] == b"key"
    assert data[25:29] == b"\x00\x00\x00\x05" and data[29:] == b"value"


def test_v1_message_has_a_timestamp_and_the_log_append_time_bit():
    data = build_message_set([(0, 1234, None, b"v")], magic=1)
    assert struct.unpack_from(">i", data, 8)[0] == RECORD_OVERHEAD_V1 + 1
    assert struct.unpack_from(">q", data, 18)[0] == 1234
    assert data[26:30] == b"\xff\xff\xff\xff"             # null key
    lat = build_message_set([(0, 1234, None, b"v")], magic=1, timestamp_type=1, log_append_time=99)
    assert lat[17] == 0x08 and struct.unpack_from(">q", lat, 18)[0] == 99


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_sets_are_the_bytes_kafka_python_writes(magic):
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for offset, ts, key, value in ROWS:
        builder.append(offset, timestamp=ts, key=key, value=value)
    assert build_message_set(ROWS, magic=magic) == bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3])
def test_compressed_wrappers_round_trip(magic, codec):
    rows = [(10 + i, 5000 + i, k, v) for i, (_, _, k, v) in enumerate(ROWS)]
    data = build_message_set(rows, magic=magic, compression=codec)
    [wrapper] = read_message_set(data)
    assert wrapper.offset == 12 and wrapper.compression_type == codec and wrapper.valid
    assert wrapper.timestamp == (5002 if magic == 1 else -1)      # v1: the largest inner timestamp
    inner = read_message_set(_inflate(wrapper, codec, magic))
    assert [r.offset for r in inner] == ([10, 11, 12] if magic == 0 else [0, 1, 2])   # absolute v0, relative v1
    got = [(r.offset, r.timestamp, r.key, r.value) for r in deep_records(wrapper)]
    assert got == [(o, ts if magic == 1 else -1, k, v) for o, ts, k, v in rows]


def _inflate(wrapper, codec, magic):
    from kafkalab.records.legacy import _legacy_decompress
    return _legacy_decompress(codec, magic, wrapper.value, 1 << 20)


def test_kafka_python_v1_gzip_wrapper_with_offset_zero_reads_from_zero():
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for offset, ts, key, value in ROWS:
        builder.append(offset, timestamp=ts, key=key, value=value)
    [wrapper] = read_message_set(bytes(builder.build()))
    assert wrapper.offset == 0                              # as some producers send it: base 0
    assert [(r.offset, r.key) for r in deep_records(wrapper)] == [(0, b"k0"), (1, None), (2, b"k2")]


def test_v1_wrapper_log_append_time_overrides_inner_timestamps():
    data = build_message_set(ROWS, magic=1, compression="gzip", timestamp_type=1, log_append_time=777)
    [wrapper] = read_message_set(data)
    assert {r.timestamp for r in deep_records(wrapper)} == {777}


def test_lz4_for_magic_0_carries_kafkas_broken_header_checksum():
    frame = compress("lz4", b"x" * 100)
    assert frame[6] == _lz4_header_checksum(frame, broken=False)          # our xxh32 agrees with liblz4
    data = build_message_set(ROWS, magic=0, compression="lz4")
    [wrapper] = read_message_set(data)
    assert wrapper.value[6] == _lz4_header_checksum(wrapper.value, broken=True) != frame[6]
    assert [r.key for r in deep_records(wrapper)] == [b"k0", None, b"k2"]
    v1 = read_message_set(build_message_set(ROWS, magic=1, compression="lz4"))[0]
    assert v1.value[6] == _lz4_header_checksum(v1.value, broken=False)


def test_a_flipped_byte_breaks_the_crc():
    data = bytearray(build_message_set(ROWS, magic=1))
    data[30] ^= 0xFF
    entries = read_message_set(bytes(data))
    assert [e.valid for e in entries] == [False, True, True]


def test_a_message_cut_short_at_the_end_is_left_out():
    data = build_message_set(ROWS, magic=0)
    assert len(read_message_set(data[:-1])) == 2
    assert len(read_message_set(data[:LOG_OVERHEAD - 1])) == 0


@pytest.mark.parametrize("case", ["size-below-overhead", "key-length-too-big", "magic-2", "v1-too-short"])
def test_malformed_messages_raise_decode_error(case):
    data = bytearray(build_message_set([(0, 1, b"k", b"v")], magic=1))
    if case == "size-below-overhead":
        struct.pack_into(">i", data, 8, 13)
    elif case == "key-length-too-big":
        struct.pack_into(">i", data, 26, 1 << 30)
    elif case == "magic-2":
        data[16] = 2
    else:
        data = bytearray(build_message_set([(0, 1, None, None)], magic=0))
        data[16] = 1                                        # a v0-sized message that claims v1
    with pytest.raises(DecodeError) as info:
        read_message_set(bytes(data))
    assert info.value.offset is not None


def test_wrapper_rules_of_the_deep_iterator():
    good = read_message_set(build_message_set(ROWS, magic=1, compression="gzip"))[0]
    with pytest.raises(DecodeError, match="null value"):
        deep_records(good._replace(value=None))
    with pytest.raises(DecodeError, match="Invalid wrapper compressionType"):
        deep_records(good._replace(attributes=4))
    with pytest.raises(DecodeError, match="is less than the last inner message offset"):
        deep_records(good._replace(offset=1))
    mixed = build_message_set([(0, 1, b"a", b"b")], magic=0)       # a v0 message inside a v1 wrapper
    wrapper = read_message_set(build_message_set([(0, 1, None, b"x")], magic=1, compression="gzip"))[0]
    with pytest.raises(DecodeError, match="does not match wrapper magic"):
        deep_records(wrapper._replace(value=compress("gzip", mixed)))
    double = wrapper._replace(value=compress("gzip", build_message_set(ROWS, magic=1, compression="gzip")))
    with pytest.raises(DecodeError, match="must not be compressed"):
        deep_records(double)


def test_zstd_and_bad_magic_cannot_be_written():
    with pytest.raises(EncodeError):
        build_message_set(ROWS, magic=1, compression="zstd")
    with pytest.raises(EncodeError):
        build_message_set(ROWS, magic=2)


def test_iter_records_flattens_a_set_of_wrappers_and_plain_messages():
    data = build_message_set(ROWS[:2], magic=1, compression="gzip") + build_message_set(ROWS[2:], magic=1)
    assert [r.offset for r in iter_records(data)] == [0, 1, 2]
