"""Round trips: build -> decode gives back every record, for every codec and every combination of flags."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.records import (CompressionType, Record, SimpleRecord, TimestampType, build_batch, crc_is_valid,
                              decode_batch, decode_batches, encode_batch, read_batch_header)

from .helpers import CODECS, as_tuples, compressible_records, records

SETTINGS = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(recs=records, codec=st.sampled_from(CODECS), transactional=st.booleans(), control=st.booleans(),
       producer_id=st.integers(0, 2 ** 63 - 1), producer_epoch=st.integers(0, 32767),
       base_sequence=st.integers(0, 2 ** 31 - 1), epoch=st.integers(-1, 2 ** 31 - 1))
def test_build_then_decode_gives_the_records_back(recs, codec, transactional, control, producer_id,
                                                  producer_epoch, base_sequence, epoch):
    buf = build_batch(recs, compression=codec, transactional=transactional, control=control,
                      producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                      partition_leader_epoch=epoch)
    assert crc_is_valid(buf)
    batch = decode_batch(buf)
    assert as_tuples(batch.records) == as_tuples(recs)
    assert [r.offset for r in batch.records] == list(range(len(recs)))
    assert [r.offset_delta for r in batch.records] == list(range(len(recs)))
    assert batch.compression_type == codec
    assert batch.is_transactional is transactional and batch.is_control_batch is control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (producer_id, producer_epoch,
                                                                              base_sequence)
    assert batch.partition_leader_epoch == epoch and batch.base_offset == 0 and batch.magic == 2
    assert batch.records_count == len(recs) and batch.last_offset_delta == len(recs) - 1
    assert batch.size_in_bytes == len(buf) == batch.batch_length + 12
    if recs:
        assert batch.base_timestamp == recs[0].timestamp
        assert batch.max_timestamp == max(r.timestamp for r in recs)
        assert all(r.timestamp_type == TimestampType.CREATE_TIME for r in batch.records)
    assert read_batch_header(buf) == batch.header
    # re-encoding what was decoded: same bytes without compression, same records with any codec
    if codec == 0:
        assert encode_batch(batch) == buf
    again = decode_batch(encode_batch(batch, compression=(codec + 1) % 5))
    assert again.records == batch.records


@SETTINGS
@given(recs=records.filter(bool), codec=st.sampled_from(CODECS), append_time=st.integers(0, 2 ** 50))
def test_log_append_time_batches_stamp_every_record_with_max_timestamp(recs, codec, append_time):
    buf = build_batch(recs, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                      log_append_time=append_time)
    batch = decode_batch(buf)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME and batch.max_timestamp == append_time
    assert all(r.timestamp == append_time and r.timestamp_type == 1 for r in batch.records)
    assert [r.timestamp_delta for r in batch.records] == [r.timestamp - recs[0].timestamp for r in recs]


@pytest.mark.parametrize("codec", CODECS)
def test_many_records(codec):
    recs = compressible_records(5000)
    batch = decode_batch(build_batch(recs, compression=codec))
    assert as_tuples(batch.records) == as_tuples(recs)


def test_accepted_record_shapes_and_defaults():
    decoded = decode_batch(build_batch([SimpleRecord(b"k", b"v", (), 5)])).records[0]
    buf = build_batch([(b"a", b"b"), (b"c", None, [("h", b"x")]), [None, b"d", (), 7], decoded])
    recs = decode_batch(buf).records
    assert [(r.key, r.value, r.headers) for r in recs] == [(b"a", b"b", ()), (b"c", None, (("h", b"x"),)),
                                                           (None, b"d", ()), (b"k", b"v", ())]
    assert recs[2].timestamp == 7 and recs[3].timestamp == 5
    assert recs[0].timestamp > 1_600_000_000_000          # None = now, in ms
    assert isinstance(recs[0], Record) and recs[0]._fields[:5] == ("offset", "timestamp", "key", "value",
                                                                  "headers")
    with pytest.raises(AttributeError):
        recs[0].key = b"immutable"


def test_bytes_like_keys_and_values_are_accepted():
    recs = decode_batch(build_batch([SimpleRecord(bytearray(b"k"), memoryview(b"v"), (("h", bytearray(b"x")),),
                                                  1)])).records
    assert (recs[0].key, recs[0].value, recs[0].headers) == (b"k", b"v", (("h", b"x"),))


def test_empty_batch():
    batch = decode_batch(build_batch([]))
    assert batch.records == () and batch.records_count == 0 and batch.last_offset_delta == -1
    assert batch.base_timestamp == batch.max_timestamp == -1


def test_compression_names_and_ids():
    for name, codec in (("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)):
        assert CompressionType.of(name) == codec and CompressionType(codec).config_name == name
        assert decode_batch(build_batch(compressible_records(3), compression=name)).compression_type == codec


def test_several_batches_in_one_buffer_and_inputs_other_than_bytes():
    blob = b"".join(build_batch(compressible_records(n), compression=n % 5) for n in range(1, 6))
    for buf in (blob, bytearray(blob), memoryview(blob)):
        batches = decode_batches(buf)
        assert [len(b.records) for b in batches] == [1, 2, 3, 4, 5]
        assert as_tuples(batches[2].records) == as_tuples(compressible_records(3))
    first = len(build_batch(compressible_records(1), compression=1))
    assert len(decode_batches(blob, first)) == 4
    assert decode_batch(bytearray(blob), first).records_count == 2
