"""Bad input: every malformed batch raises DecodeError -- never IndexError, MemoryError or anything else.

Lengths and counts are checked against the bytes that remain before anything is allocated, and compressed
payloads are bounded before they are inflated (decompression bombs).
"""
from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import (DEFAULT_MAX_DECOMPRESSED_BYTES, annotate_records, build_batch, decode_batch,
                              decode_batches, decompress, scan_batches)
from kafkalab.records.header import HEADER

from .helpers import CODECS, compressible_records, fix_crc

SMALL = {c: build_batch(compressible_records(4), compression=c, producer_id=1, producer_epoch=0,
                        base_sequence=0) for c in CODECS}


def header_only(records_count=0, attributes=0, payload=b"") -> bytearray:
    """A batch made by hand: the header with the given count/attributes, then ``payload`` as the records."""
    buf = bytearray(HEADER.pack(0, 49 + len(payload), 0, 2, 0, attributes, max(records_count - 1, 0), 0, 0, -1,
                                -1, -1, records_count)) + payload
    return fix_crc(buf)


def decode_fails(buf, match=None, **kw) -> DecodeError:
    with pytest.raises(DecodeError, match=match) as info:
        decode_batch(bytes(buf), **kw)
    return info.value


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_at_every_byte(codec):
    buf = SMALL[codec]
    assert decode_batches(b"") == []                  # no batches at all is fine
    for i in range(1, len(buf)):
        cut = buf[:i]
        with pytest.raises(DecodeError):
            decode_batch(cut)
        with pytest.raises(DecodeError):
            decode_batches(cut)
        with pytest.raises(DecodeError):
            decode_batch(cut, verify=False)
        assert decode_batches(cut, allow_partial=True) == []
        scan = scan_batches(cut)
        assert not scan.batches and scan.partial_bytes == i and scan.partial_start == 0


@pytest.mark.parametrize("length", [-1, -(2 ** 31), 0, 48, 2 ** 31 - 1, 10_000])
def test_batch_length_lying(length):
    buf = bytearray(SMALL[0])
    struct.pack_into(">i", buf, 8, length)
    err = decode_fails(buf)
    assert err.path == "batch_length" and err.offset == 8
    if length < 49:
        with pytest.raises(DecodeError):
            scan_batches(buf)
    else:                                             # too long: it looks like a partial batch at the end
        assert scan_batches(buf).partial_start == 0


def test_batch_length_too_short_for_its_records():
    buf = bytearray(SMALL[0])
    struct.pack_into(">i", buf, 8, len(buf) - 12 - 3)
    decode_fails(fix_crc(buf[:-3]))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("count", [2 ** 31 - 1, 5, -1, -(2 ** 31)])
def test_records_count_lying(codec, count):
    buf = bytearray(SMALL[codec])
    struct.pack_into(">i", buf, 57, count)
    err = decode_fails(fix_crc(buf))
    assert "records" in err.path


def test_records_count_huge_with_few_bytes_fails_before_reading():
    err = decode_fails(header_only(2 ** 31 - 1, payload=b"\x0e\x00\x00\x00\x01\x01\x00"))
    assert err.path == "records_count" and "2147483647" in str(err)


def test_record_length_varint_longer_than_five_bytes():
    err = decode_fails(header_only(1, payload=b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 10))
    assert "longer than 5 bytes" in str(err) and err.offset == 61


def test_varint_wider_than_32_bits():
    decode_fails(header_only(1, payload=b"\xff\xff\xff\xff\x7f" + b"\x00" * 10), match="32 bits")


def test_timestamp_varlong_longer_than_ten_bytes():
    decode_fails(header_only(1, payload=b"\x1c\x00" + b"\x80" * 10 + b"\x01" + b"\x00" * 4), match="10 bytes")


@pytest.mark.parametrize("field_at", [3, 4])                  # key_length, value_length
def test_negative_lengths_other_than_minus_one(field_at):
    record = bytearray(b"\x00\x00\x00\x01\x01\x00")             # attributes, ts, offset, key -1, value -1, 0 hdrs
    record[field_at] = 0x03                                     # zig-zag 3 = -2
    decode_fails(header_only(1, payload=bytes([len(record) << 1]) + record), match="invalid")


def test_null_header_key_and_bad_utf8_header_key():
    null_key = b"\x00\x00\x00\x01\x01\x02\x01\x01"                # one header whose key_length is -1
    err = decode_fails(header_only(1, payload=bytes([len(null_key) << 1]) + null_key))
    assert err.path == "records[0].headers[0].key_length" and err.offset == 61 + 7
    bad_utf8 = b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"
    err = decode_fails(header_only(1, payload=bytes([len(bad_utf8) << 1]) + bad_utf8), match="UTF-8")
    assert err.offset == 61 + 8


def test_key_longer_than_its_record():
    record = b"\x00\x00\x00\x20abc\x01\x00"                       # key_length 16 but 3 bytes follow
    decode_fails(header_only(1, payload=bytes([len(record) << 1]) + record), match="key_length 16")


def test_record_length_disagreeing_with_fields_and_leftover_bytes():
    record = b"\x00\x00\x00\x01\x01\x00"
    decode_fails(header_only(1, payload=bytes([(len(record) + 1) << 1]) + record + b"\x00"), match="record length")
    decode_fails(header_only(1, payload=bytes([len(record) << 1]) + record + b"\x00\x00"), match="left over")


def test_headers_count_larger_than_the_record():
    record = b"\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f"
    decode_fails(header_only(1, payload=bytes([len(record) << 1]) + record), match="headers_count")


def test_bad_magic_and_unknown_codec():
    buf = bytearray(SMALL[0])
    buf[16] = 1
    assert decode_fails(buf).path == "magic"
    with pytest.raises(DecodeError):
        scan_batches(buf)
    buf = bytearray(SMALL[0])
    buf[22] |= 0x05
    assert decode_fails(fix_crc(buf)).path == "attributes"


def test_crc_mismatch_names_the_field():
    buf = bytearray(SMALL[0])
    buf[-1] ^= 0x01
    err = decode_fails(buf)
    assert err.path == "crc" and err.offset == 17 and "computed" in str(err)
    assert decode_batch(bytes(buf), verify=False).records_count == 4


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupted_compressed_payload(codec):
    buf = bytearray(SMALL[codec])
    rejected = 0
    for i in range(61, len(buf)):
        broken = bytearray(buf)
        broken[i] ^= 0xFF
        # Each flip either still decodes (not every codec checksums its payload) or is a DecodeError;
        # any other exception fails the test.
        try:
            decode_batch(bytes(fix_crc(broken)))
        except DecodeError:
            rejected += 1
    assert rejected, "no corruption of the compressed payload was noticed"
    garbage = header_only(4, attributes=codec, payload=b"\x00\x01\x02not compressed at all" * 3)
    err = decode_fails(garbage)
    assert err.path == "records" and err.offset >= 61


BOMB = 80 * 1024 * 1024   # more than the 64 MiB default


def _bomb(codec: int, size: int) -> bytes:
    zeros = bytes(size)
    if codec == 1:
        return gzip.compress(zeros, compresslevel=1)
    if codec == 2:
        return bytes(cramjam.snappy.compress_raw(zeros))
    if codec == 3:
        c = cramjam.lz4.Compressor(block_linked=False)
        c.compress(zeros)
        return bytes(c.finish())
    return bytes(cramjam.zstd.compress(zeros))


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_with_the_default_cap(codec):
    payload = _bomb(codec, BOMB)
    assert len(payload) < 5_000_000                   # snappy tops out near 21:1, the others go much further
    err = decode_fails(header_only(1, attributes=codec, payload=payload))
    assert "max_decompressed_bytes" in str(err) and err.path == "records"
    assert DEFAULT_MAX_DECOMPRESSED_BYTES == 64 * 1024 * 1024


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_cap_is_a_parameter(codec):
    buf = build_batch(compressible_records(2000), compression=codec)
    with pytest.raises(DecodeError, match="max_decompressed_bytes"):
        decode_batch(buf, max_decompressed_bytes=20_000)
    assert len(decode_batch(buf, max_decompressed_bytes=1_000_000).records) == 2000


def test_forged_size_fields_are_not_trusted():
    # raw snappy declaring 4 GiB with a few bytes of body
    with pytest.raises(DecodeError, match="max_decompressed_bytes"):
        decompress(2, b"\xff\xff\xff\xff\x0f\x00\x00")
    # xerial block claiming 2 GiB
    with pytest.raises(DecodeError, match="xerial snappy block"):
        decompress(2, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", 2 ** 31 - 1) + b"xx")
    # lz4 frame with a content size of 2**60
    flg = 0x60 | 0x08
    with pytest.raises(DecodeError, match="max_decompressed_bytes"):
        decompress(3, b"\x04\x22\x4d\x18" + bytes([flg, 0x40]) + (2 ** 60).to_bytes(8, "little") + b"\x00" * 8)
    # zstd frame header with a content size of 2**60
    with pytest.raises(DecodeError, match="max_decompressed_bytes"):
        decompress(4, b"\x28\xb5\x2f\xfd" + bytes([0xC0]) + b"\x50" + (2 ** 60).to_bytes(8, "little") + b"\x00" * 3)
    # gzip that is not gzip
    with pytest.raises(DecodeError, match="gzip magic"):
        decompress(1, zlib.compress(b"raw zlib is not what Kafka writes"))


def _mutations():
    return st.tuples(st.sampled_from(CODECS), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)),
                                                      min_size=1, max_size=6),
                     st.integers(0, 10 ** 6), st.booleans())


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_fuzz_mutated_batches_only_raise_decode_error(mutation):
    codec, edits, cut, recrc = mutation
    buf = bytearray(SMALL[codec] + SMALL[(codec + 1) % 5])
    for where, value in edits:
        buf[where % len(buf)] = value
    buf = buf[:len(buf) - cut % 8] if cut % 3 == 0 else buf
    if recrc and len(buf) >= 61:
        fix_crc(buf)
    data = bytes(buf)
    for call in (lambda: decode_batch(data), lambda: decode_batch(data, verify=False),
                 lambda: scan_batches(data)):
        try:
            call()
        except DecodeError:
            pass
    annotate_records(data, 0, len(data), "records", 0)       # non-strict: never raises
    # the fast decoder and the reference (annotated) decoder agree: same records, or same field and byte
    fast = reference = None
    try:
        batches = decode_batches(data, allow_partial=True)
    except DecodeError as e:
        fast = (e.path, e.offset)
    try:
        rows = annotate_records(data, 0, len(data), "", 0, strict=True, message_sets=False)
    except DecodeError as e:
        reference = (e.path, e.offset)
    assert fast == reference
    if fast is None:
        decoded = []
        for row in rows:                                   # in order; compressed batches nest their rows
            inner = getattr(row.value, "rows", None)
            decoded += [r.value for r in (inner if inner is not None else [row]) if r.wire_type == "RECORD"]
        assert decoded == [r for b in batches for r in b.records]
