"""Interop with two independent implementations: kafka-python 3.0 (pure Python) and aiokafka (Cython).

Both directions: batches they build decode exactly with ours, and batches we build read back with theirs with
the same keys, values, headers, timestamps and offsets.

kafka-python finds its codecs in optional packages (python-snappy, lz4, zstandard) that kafkalab does not
install; only gzip works out of the box. For snappy we lend it a raw-snappy implementation (cramjam's, which
is byte-for-byte what python-snappy produces), so that its *own* xerial framing code is exercised. aiokafka
uses cramjam for every codec, so it covers all four, including a > 64 KiB lz4 batch (the linked-blocks trap).
"""
from __future__ import annotations

import types

import cramjam
import pytest

import kafka.codec
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from kafkalab.records import (TimestampType, build_batch, crc_is_valid, decode_batch, decode_batches,
                              set_base_offset, set_max_timestamp, set_partition_leader_epoch)

from .helpers import as_tuples, compressible_records, random_records

KP_CODECS = (0, 1, 2)       # gzip natively, snappy through the stand-in below
AIO_CODECS = (0, 1, 2, 3, 4)


@pytest.fixture
def kp_snappy(monkeypatch):
    """Give kafka-python a raw snappy implementation (the role python-snappy plays when installed)."""
    shim = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(b)),
                                 decompress=lambda b: bytes(cramjam.snappy.decompress_raw(b)))
    monkeypatch.setattr(kafka.codec, "snappy", shim)


def _theirs(batch_cls, buf):
    batch = batch_cls(bytes(buf))
    assert batch.validate_crc()
    return batch, [(r.key, r.value, tuple(tuple(h) for h in r.headers), r.timestamp) for r in batch], \
        [r.offset for r in batch_cls(bytes(buf))]


def _build_with(builder_cls, recs, codec, producer=(-1, -1, -1), transactional=False):
    b = builder_cls(magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer[0],
                    producer_epoch=producer[1], base_sequence=producer[2], batch_size=1 << 30)
    for i, r in enumerate(recs):
        b.append(i, r.timestamp, r.key, r.value, list(r.headers))
    return bytes(b.build())


# ------------------------------------------------------------------------------------------ theirs -> ours

@pytest.mark.parametrize("codec", KP_CODECS)
def test_kafka_python_batches_decode_with_ours(codec, kp_snappy):
    recs = compressible_records(1000)               # > 32 KiB: several xerial snappy blocks
    buf = _build_with(KpBuilder, recs, codec, producer=(4242, 3, 17), transactional=True)
    ours = decode_batch(buf)
    assert ours.compression_type == codec
    theirs, values, offsets = _theirs(KpBatch, buf)
    assert as_tuples(ours.records) == values == as_tuples(recs)
    assert [r.offset for r in ours.records] == offsets
    assert [r.offset for r in ours.records] == list(range(1000))
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (4242, 3, 17)
    assert ours.is_transactional and ours.crc == theirs.crc
    assert (ours.base_timestamp, ours.max_timestamp) == (theirs.first_timestamp, theirs.max_timestamp)
    if codec == 2:
        assert buf[61:69] == b"\x82SNAPPY\x00"      # kafka-python writes the xerial framing, like Java
        first_block = int.from_bytes(buf[77:81], "big")
        assert 81 + first_block < len(buf), "expected several xerial blocks"


@pytest.mark.parametrize("codec", AIO_CODECS)
def test_aiokafka_batches_decode_with_ours(codec):
    recs = compressible_records(400)
    buf = _build_with(AioBuilder, recs, codec, producer=(7, 0, 100))
    ours = decode_batch(buf)
    assert ours.compression_type == codec
    _, values, offsets = _theirs(AioBatch, buf)
    assert as_tuples(ours.records) == values == as_tuples(recs)
    assert [r.offset for r in ours.records] == offsets


def test_aiokafka_big_lz4_batch_decodes_with_ours():
    recs = compressible_records(3000, value_size=200)
    buf = _build_with(AioBuilder, recs, 3)
    assert decode_batch(buf).compression_type == 3 and len(buf) > 20_000
    assert as_tuples(decode_batch(buf).records) == as_tuples(recs)


# ------------------------------------------------------------------------------------------ ours -> theirs

@pytest.mark.parametrize("codec", KP_CODECS)
def test_our_batches_read_back_with_kafka_python(codec, kp_snappy):
    recs = compressible_records(300)
    buf = build_batch(recs, compression=codec, producer_id=11, producer_epoch=2, base_sequence=5)
    theirs, values, offsets = _theirs(KpBatch, buf)
    assert values == as_tuples(recs) and offsets == list(range(300))
    assert theirs.compression_type == codec
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (11, 2, 5)


@pytest.mark.parametrize("codec", AIO_CODECS)
def test_our_batches_read_back_with_aiokafka(codec):
    recs = compressible_records(300)
    buf = build_batch(recs, compression=codec, producer_id=11, producer_epoch=2, base_sequence=5,
                      transactional=True)
    theirs, values, offsets = _theirs(AioBatch, buf)
    assert values == as_tuples(recs) and offsets == list(range(300))
    assert theirs.compression_type == codec and theirs.is_transactional


@pytest.mark.parametrize("codec", AIO_CODECS)
def test_big_batches_over_64_kib_read_back_with_aiokafka(codec):
    """More than one 64 KiB LZ4 block: linked blocks would show up here (and Kafka would refuse them)."""
    recs = random_records(700, 200)
    buf = build_batch(recs, compression=codec)
    assert len(buf) > 140_000
    if codec == 3:
        assert buf[61:65] == b"\x04\x22\x4d\x18" and buf[65] & 0x20, "LZ4 frame with independent blocks"
    _, values, offsets = _theirs(AioBatch, buf)
    assert values == as_tuples(recs) and offsets == list(range(700))


def test_offsets_assigned_by_a_broker_are_what_clients_read(kp_snappy):
    buf = bytearray(build_batch(compressible_records(10), compression="snappy"))
    set_base_offset(buf, 0, 1_000_000)
    set_partition_leader_epoch(buf, 0, 9)
    for batch_cls in (KpBatch, AioBatch):
        _, _, offsets = _theirs(batch_cls, buf)
        assert offsets == list(range(1_000_000, 1_000_010))
    assert [r.offset for r in decode_batch(buf).records] == list(range(1_000_000, 1_000_010))


def test_log_append_time_set_by_a_broker_is_what_clients_read():
    recs = compressible_records(20)
    buf = bytearray(_build_with(KpBuilder, recs, 1))
    assert set_max_timestamp(buf, 0, TimestampType.LOG_APPEND_TIME, 1_234_567)
    assert crc_is_valid(buf)
    for batch_cls in (KpBatch, AioBatch):
        batch, values, _ = _theirs(batch_cls, buf)
        assert batch.timestamp_type == 1 and {v[3] for v in values} == {1_234_567}
    assert {r.timestamp for r in decode_batch(buf).records} == {1_234_567}


def test_aiokafka_memory_records_reads_our_multi_batch_blob():
    from aiokafka.record.memory_records import MemoryRecords
    blob = b"".join(build_batch(compressible_records(n), compression=n % 5) for n in range(1, 6))
    mr = MemoryRecords(blob)
    counts = []
    while (batch := mr.next_batch()) is not None:
        counts.append(len(list(batch)))
    assert counts == [1, 2, 3, 4, 5] == [len(b.records) for b in decode_batches(blob)]
