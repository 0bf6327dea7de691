"""Golden frames: requests captured from real clients (tests/golden/) decode, re-encode and annotate exactly.

The frames were recorded by kafkalab.trace.capture from kcat (librdkafka 2.0.2), confluent-kafka (librdkafka
2.16), kafka-python 3.0.12 and aiokafka 0.14 (see manifest.json; regenerate with
scripts/record_frames.py golden). These tests need no client: they read the stored bytes.
"""
from __future__ import annotations

import importlib
import re

import pytest

from kafkalab.protocol import (ApiKey, annotate_request, decode_request, encode_request, request_header_version,
                               size_prefixed)

from ._support import (CODECS, GOLDEN, batches_by_aiokafka, check_frame, manifest, matches_expected,
                       normalize_batch, own_bytes, produce_blobs)

MANIFEST = manifest()
ENTRIES = MANIFEST["frames"]
PRODUCE = [e for e in ENTRIES if e["api_key"] == ApiKey.PRODUCE]


def frame_of(entry) -> bytes:
    return (GOLDEN / entry["file"]).read_bytes()


def by_file(entries):
    return pytest.mark.parametrize("entry", entries, ids=[e["file"] for e in entries])


def test_manifest_and_files_agree():
    files = {p.name for p in GOLDEN.glob("*.bin")}
    assert files == {e["file"] for e in ENTRIES}
    assert all((GOLDEN / e["file"]).stat().st_size == e["size"] for e in ENTRIES)
    assert sum(p.stat().st_size for p in GOLDEN.iterdir()) < 300_000


def test_every_client_and_codec_is_represented():
    have = {e["file"].removesuffix(".bin") for e in ENTRIES}
    for name in ("kcat-ApiVersions-v3", "kcat-Metadata-v4", "kcat-Produce-v7",
                 "confluent-kafka-ApiVersions-v3", "confluent-kafka-Metadata-v12", "confluent-kafka-InitProducerId-v4",
                 "confluent-kafka-Produce-v9", "kafka-python-ApiVersions-v4", "kafka-python-ApiVersions-v3",
                 "kafka-python-Metadata-v12", "kafka-python-InitProducerId-v4", "kafka-python-Produce-v9",
                 "aiokafka-ApiVersions-v0", "aiokafka-Metadata-v5", "aiokafka-Produce-v7"):
        assert name in have
    assert {f"confluent-kafka-Produce-v9-{c}" for c in ("gzip", "snappy", "lz4", "zstd")} <= have


@by_file(ENTRIES)
def test_decodes_to_expected_fields(entry):
    req = decode_request(frame_of(entry))
    exp = entry["expected"]
    assert (req.api_key, req.api_version) == (entry["api_key"], entry["api_version"])
    assert req.api_name == entry["api"]
    assert request_header_version(req.api_key, req.api_version) == entry["header_version"]
    assert req.correlation_id == exp["correlation_id"]
    assert req.client_id == exp["client_id"]
    body = req.body
    for field in ("client_software_name", "client_software_version", "transactional_id", "acks"):
        if field in exp:
            assert getattr(body, field) == exp[field], field
    if req.api_key == ApiKey.API_VERSIONS and req.api_version < 3:
        assert "client_software_name" not in exp
    if req.api_key == ApiKey.METADATA:
        assert (None if body.topics is None else [t.name for t in body.topics]) == exp["topics"]
    if req.api_key == ApiKey.PRODUCE:
        assert {t.name: [p.index for p in t.partition_data] for t in body.topic_data} == exp["topics"]
        assert all(p.records for t in body.topic_data for p in t.partition_data)


@by_file(ENTRIES)
def test_reencodes_byte_identical(entry):
    frame = frame_of(entry)
    assert encode_request(decode_request(frame)) == frame


@by_file(ENTRIES)
def test_annotation_explains_every_byte(entry):
    frame = frame_of(entry)
    req = decode_request(frame)
    check_frame(frame, req, annotate_request(frame))
    ann = annotate_request(size_prefixed(frame), size_prefix=True)
    assert (ann.rows[0].path, ann.rows[0].start, ann.rows[0].end, ann.rows[0].value) == ("size", 0, 4, len(frame))
    assert ann.message == req
    assert ann.find("header.correlation_id").value == entry["expected"]["correlation_id"]
    # the annotated decoder reads exactly the bytes the codec wrote, nothing is left over
    assert not [r for r in ann.rows if r.path == "trailing_bytes"]


@by_file(PRODUCE)
def test_batches_hold_the_records_the_client_sent(entry):
    """Checked with aiokafka's own RecordBatch reader (CRC-32C and all four codecs) as an independent oracle."""
    pytest.importorskip("aiokafka")
    (blob,) = produce_blobs(decode_request(frame_of(entry)))
    batches = batches_by_aiokafka(blob)
    assert len(batches) == 1
    assert matches_expected(batches[0], entry["expected"]["records"]), batches[0]


def _kafkalab_records(*names):
    """The first of ``names`` that kafkalab.records offers (its package, or the module that defines it)."""
    records = pytest.importorskip("kafkalab.records", reason="kafkalab.records is not built yet")
    for name in names:
        for where in ("", ".batch", ".annotate"):
            try:
                module = importlib.import_module("kafkalab.records" + where) if where else records
            except ImportError:
                continue
            fn = getattr(module, name, None)
            if callable(fn):
                return fn
    pytest.skip(f"kafkalab.records has none of {names} yet")


def _codec_of(batch) -> int:
    for attr in ("compression", "compression_type", "codec"):
        value = getattr(batch, attr, None)
        if value is not None:
            if isinstance(value, str):
                return {v: k for k, v in CODECS.items()}[value.lower()]
            return int(getattr(value, "value", value))
    return int(batch.attributes) & 0x7


@by_file(PRODUCE)
def test_kafkalab_records_agree(entry):
    """kafkalab's own RecordBatch decoder finds the same records as the oracle above."""
    decode = _kafkalab_records("decode_batches", "read_batches")
    (blob,) = produce_blobs(decode_request(frame_of(entry)))
    batches = [normalize_batch(_codec_of(b), b.producer_id, b.producer_epoch, list(b.records))
               for b in decode(blob)]
    assert len(batches) == 1
    assert matches_expected(batches[0], entry["expected"]["records"]), batches[0]


@by_file(PRODUCE)
def test_annotation_with_record_batches_explains_every_byte(entry):
    """With kafkalab.records' hook the batch inside is annotated too, and every byte is still explained once."""
    hook = _kafkalab_records("annotate_records")
    frame = frame_of(entry)
    ann = annotate_request(frame, records_hook=hook)
    assert ann.message == decode_request(frame)
    own_bytes(ann)
    batch_rows = [r for r in ann.rows if r.wire_type == "RECORD_BATCH"]
    assert len(batch_rows) == 1
    codec = entry["expected"]["records"]["codec"]
    if codec == "none":          # uncompressed: every record field of the batch has its own row
        keys = [r.value for r in ann.rows if re.search(r"\.records\[\d+\]\.key$", r.path)]
        assert [bytes(k).decode() for k in keys] == [r["key"] for r in entry["expected"]["records"]["records"]]


def test_coverage_check_rejects_a_hole():
    """The coverage check itself: a row dropped from an annotation is noticed."""
    entry = next(e for e in ENTRIES if e["file"] == "kafka-python-Metadata-v12.bin")
    ann = annotate_request(frame_of(entry))
    own_bytes(ann)
    leaf = next(r for r in ann.rows if r.path.endswith("correlation_id"))
    holed = type(ann)(ann.data, [r for r in ann.rows if r is not leaf], ann.message)
    with pytest.raises(AssertionError):
        own_bytes(holed)
