"""The annotated decoder: rows that explain every byte of a batch, with the same values as the fast decoder."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.protocol import Annotation, annotate_request, encode_request, make_request, request_class
from kafkalab.protocol.errors import DecodeError
from kafkalab.records import (DecompressedRecords, SimpleRecord, annotate_records, build_batch,
                              decode_batch, decode_batches)
from kafkalab.records.header import HEADER_FIELDS

from .helpers import CODECS, compressible_records, fix_crc, records

SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def leaves(data, rows):
    return Annotation(data, rows).leaves()


def assert_tiles(data, rows, start=0, end=None):
    """Leaf rows are contiguous and cover [start, end) exactly; children lie inside their parents."""
    end = len(data) if end is None else end
    got = [(r.start, r.end) for r in leaves(data, rows)]
    assert got[0][0] == start and got[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(got, got[1:])), got
    stack = []
    for r in rows:
        while stack and stack[-1].depth >= r.depth:
            stack.pop()
        if stack:
            assert stack[-1].start <= r.start <= r.end <= stack[-1].end, (stack[-1].path, r.path)
        stack.append(r)


def by_path(rows):
    return {r.path: r for r in rows}


def check_values(rows, batches, prefix):
    paths = by_path(rows)
    for i, batch in enumerate(batches):
        b = f"{prefix}batches[{i}]"
        assert paths[b].value == batch.header and paths[b].wire_type == "RECORD_BATCH"
        for name in HEADER_FIELDS:
            assert paths[f"{b}.{name}"].value == getattr(batch, name)
        for j, rec in enumerate(batch.records):
            r = f"{b}.records[{j}]"
            assert paths[r].value == rec and paths[r].wire_type == "RECORD"
            for name, wire in (("length", "VARINT"), ("attributes", "INT8"), ("timestamp_delta", "VARLONG"),
                               ("offset_delta", "VARINT"), ("key_length", "VARINT"), ("value_length", "VARINT"),
                               ("headers_count", "VARINT")):
                assert paths[f"{r}.{name}"].wire_type == wire
            assert paths[f"{r}.key"].value == rec.key and paths[f"{r}.value"].value == rec.value
            assert paths[f"{r}.key_length"].value == (-1 if rec.key is None else len(rec.key))
            assert paths[f"{r}.timestamp_delta"].value == rec.timestamp_delta
            assert paths[f"{r}.offset_delta"].value == rec.offset_delta
            assert paths[f"{r}.headers_count"].value == len(rec.headers)
            for k, (hk, hv) in enumerate(rec.headers):
                assert paths[f"{r}.headers[{k}]"].value == (hk, hv)
                assert paths[f"{r}.headers[{k}].key"].value == hk
                assert paths[f"{r}.headers[{k}].key"].wire_type == "RAW_STRING"
                assert paths[f"{r}.headers[{k}].value"].value == hv


@SETTINGS
@given(recs=records, nbatches=st.integers(1, 3), prefix=st.sampled_from(["", "records"]))
def test_uncompressed_rows_cover_every_byte_and_match_decode(recs, nbatches, prefix):
    blob = b"".join(build_batch(recs[i::nbatches]) for i in range(nbatches))
    rows = annotate_records(blob, 0, len(blob), prefix, 0)
    assert_tiles(blob, rows)
    check_values(rows, decode_batches(blob), f"{prefix}." if prefix else "")
    assert all(r.wire_type != "INVALID_RECORDS" for r in rows)


@SETTINGS
@given(recs=records.filter(bool), codec=st.sampled_from(CODECS[1:]))
def test_compressed_batches_nest_their_decompressed_rows(recs, codec):
    blob = build_batch(recs, compression=codec)
    rows = annotate_records(blob, 0, len(blob), "r", 2)
    assert_tiles(blob, rows)                                   # outer rows: ranges of the buffer only
    payload = by_path(rows)["r.batches[0].records"]
    assert (payload.start, payload.end) == (61, len(blob))
    assert payload.wire_type in {1: ("GZIP",), 2: ("SNAPPY_RAW",), 3: ("LZ4_FRAME",), 4: ("ZSTD_FRAME",)}[codec]
    inner = payload.value
    assert isinstance(inner, DecompressedRecords) and inner.compression_type == codec
    assert inner.data == build_batch(recs)[61:]                # the same bytes as the uncompressed batch
    assert_tiles(inner.data, list(inner.rows))
    check_values(list(rows) + list(inner.rows), [decode_batch(blob)], "r.")
    assert min(r.depth for r in inner.rows) == payload.depth + 1


def test_row_offsets_are_absolute_in_the_buffer():
    batch = build_batch([SimpleRecord(b"key", b"value", (("h", None),), 10)])
    frame = b"PREFIX" + batch + b"SUFFIX"
    rows = annotate_records(frame, 6, 6 + len(batch), "x", 1)
    assert_tiles(frame, rows, 6, 6 + len(batch))
    key = by_path(rows)["x.batches[0].records[0].key"]
    assert frame[key.start:key.end] == b"key" and key.depth == 4
    assert by_path(rows)["x.batches[0].records[0].headers[0].value"].start == 6 + len(batch)  # zero width
    assert by_path(rows)["x.batches[0]"].depth == 1


def test_partial_trailing_batch():
    batch = build_batch(compressible_records(3))
    for cut in (5, 30, 61, len(batch) - 1):
        blob = batch + batch[:cut]
        rows = annotate_records(blob)
        assert_tiles(blob, rows)
        partial = by_path(rows)["batches[1]"]
        assert partial.wire_type == "PARTIAL_RECORD_BATCH" and partial.end == len(blob)
        assert by_path(rows)["batches[1].truncated"].end == len(blob)


def test_errors_become_a_row_or_raise_when_strict():
    buf = bytearray(build_batch(compressible_records(3)))
    buf[-1] ^= 1                                               # CRC mismatch only: walk on, flag it
    rows = annotate_records(bytes(buf))
    errors = [r for r in rows if r.wire_type == "INVALID_RECORDS"]
    assert len(errors) == 1 and (errors[0].start, errors[0].end) == (17, 21) and "crc" in errors[0].value
    assert len([r for r in rows if r.wire_type == "RECORD"]) == 3
    with pytest.raises(DecodeError):
        annotate_records(bytes(buf), strict=True)
    buf = bytearray(build_batch(compressible_records(3)))
    at = by_path(annotate_records(bytes(buf)))["batches[0].records[1].key_length"].start
    buf[at] = 0x03                                             # a key_length of -2 in the second record
    fix_crc(buf)
    rows = annotate_records(bytes(buf), 0, len(buf), "records", 0)
    assert rows[-1].wire_type == "INVALID_RECORDS" and rows[-1].path == "records.error"
    assert None not in rows
    with pytest.raises(DecodeError) as info:
        annotate_records(bytes(buf), strict=True)
    assert info.value.rows and info.value.path == "batches[0].records[1].key_length"
    assert info.value.offset == at
    with pytest.raises(DecodeError) as fast:
        decode_batch(bytes(buf))
    assert fast.value.path == "records[1].key_length" and fast.value.offset == at


def test_as_the_records_hook_of_a_produce_request():
    P = request_class(0)
    blob = build_batch(compressible_records(4)) + build_batch(compressible_records(2), compression="lz4")
    body = P(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=(
        P.TopicProduceData(name="t", partition_data=(P.PartitionProduceData(index=0, records=blob),)),))
    frame = encode_request(make_request(body, api_version=9))
    ann = annotate_request(frame, records_hook=annotate_records)
    assert ann.error is None
    rows = [r for r in ann.rows if ".batches[" in r.path]
    base = frame.index(blob)
    first = by_path(rows)["body.topic_data[0].partition_data[0].records.batches[0]"]
    assert (first.start, first.end) == (base, base + len(build_batch(compressible_records(4))))
    assert [r.value.key for r in rows if r.wire_type == "RECORD"] == [r.key for r in compressible_records(4)]
    assert by_path(rows)["body.topic_data[0].partition_data[0].records.batches[1].records"].wire_type == "LZ4_FRAME"
    assert_tiles(frame, rows, base, base + len(blob))
