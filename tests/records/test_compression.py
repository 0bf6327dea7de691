"""The four codecs on the wire: formats Kafka's readers accept, and the traps (xerial vs raw snappy, linked LZ4)."""
from __future__ import annotations

import gzip
import struct

import cramjam
import pytest

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import (CompressionType, build_batch, compress, decode_batch, decompress,
                              snappy_compress_xerial)

from .helpers import as_tuples, compressible_records, fix_crc, random_records

DATA = b"".join(b"record %d with a fairly repetitive value; " % i for i in range(5000))   # ~200 KB


def test_gzip_is_a_real_gzip_stream():
    out = compress("gzip", DATA)
    assert out[:2] == b"\x1f\x8b" and gzip.decompress(out) == DATA
    assert decompress(1, out) == DATA
    assert decompress(1, gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:])) == DATA  # several members


def test_snappy_is_written_raw():
    out = compress(CompressionType.SNAPPY, DATA)
    assert not out.startswith(b"\x82SNAPPY\x00")
    assert bytes(cramjam.snappy.decompress_raw(out)) == DATA
    assert cramjam.snappy.decompress_raw_len(out) == len(DATA)        # raw snappy starts with the length
    batch = build_batch(compressible_records(50), compression="snappy")
    assert bytes(cramjam.snappy.decompress_raw(batch[61:])) == build_batch(compressible_records(50))[61:]


def _xerial_by_hand(data: bytes, block: int) -> bytes:
    """The framing Kafka's Java producer writes: magic, version 1, compat 1, then (int32 length, raw block)*."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[i:i + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return out


@pytest.mark.parametrize("block", [1000, 32 * 1024, 10 ** 6])
def test_xerial_snappy_is_read(block):
    assert decompress(2, _xerial_by_hand(DATA, block)) == DATA
    assert snappy_compress_xerial(DATA) == _xerial_by_hand(DATA, 32 * 1024)


def test_a_batch_with_xerial_snappy_records_decodes():
    recs = compressible_records(200)
    plain = bytearray(build_batch(recs))
    xerial = _xerial_by_hand(bytes(plain[61:]), 4096)
    buf = plain[:61] + xerial
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, 2)                               # attributes: snappy
    batch = decode_batch(bytes(fix_crc(buf)))
    assert batch.compression_type == 2 and as_tuples(batch.records) == as_tuples(recs)


def test_xerial_cut_short_is_a_decode_error():
    framed = _xerial_by_hand(DATA, 4096)
    for cut in (10, 17, 20, 100, len(framed) - 1):
        with pytest.raises(DecodeError):
            decompress(2, framed[:cut])


def test_lz4_frames_have_independent_blocks_even_when_big():
    out = compress("lz4", DATA)
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg >> 6 == 1 and flg & 0x20, "version 1, independent blocks"
    assert (bd >> 4) & 7 == 4, "64 KiB blocks, as Kafka's Java writer"
    assert decompress(3, out) == DATA


def test_lz4_linked_blocks_are_refused_like_kafka_does():
    """The trap: LZ4 libraries link blocks by default. Kafka's reader refuses such frames; so do we."""
    c = cramjam.lz4.Compressor()                                     # library defaults: linked blocks
    c.compress(DATA)
    linked = bytes(c.finish())
    assert not linked[4] & 0x20
    with pytest.raises(DecodeError, match="dependent"):
        decompress(3, linked)
    recs = random_records(300, 400)
    buf = bytearray(build_batch(recs))
    c = cramjam.lz4.Compressor()
    c.compress(bytes(buf[61:]))
    buf = buf[:61] + bytes(c.finish())
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, 3)
    with pytest.raises(DecodeError, match="dependent") as info:
        decode_batch(bytes(fix_crc(buf)))
    assert info.value.path == "records" and info.value.offset == 65


def test_lz4_ignores_bytes_after_the_end_mark():
    assert decompress(3, compress("lz4", DATA[:5000]) + b"trailing") == DATA[:5000]


def test_zstd_frames():
    out = compress("zstd", DATA)
    assert out[:4] == b"\x28\xb5\x2f\xfd"
    assert decompress(4, out) == DATA
    assert decompress(4, out + compress("zstd", b"second frame")) == DATA + b"second frame"
    with pytest.raises(DecodeError):
        decompress(4, out + b"junk after the frame")


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_every_codec_round_trips_big_and_empty_inputs(codec):
    for data in (b"", DATA, bytes(range(256)) * 1000):
        assert decompress(codec, compress(codec, data)) == data


def test_unknown_codec():
    with pytest.raises(DecodeError):
        decompress(6, b"x")
    with pytest.raises(ValueError):
        CompressionType.of("brotli")
