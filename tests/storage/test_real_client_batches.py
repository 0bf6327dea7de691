"""Batches captured from real clients (tests/golden: kcat, confluent-kafka with every codec, kafka-python,
aiokafka) go into a log touched only at the offset and epoch, come back byte-identical from ``attributes`` on,
decode to what each client was asked to send, and an idempotent client's retry is recognised as a duplicate."""
import json
from pathlib import Path

import pytest

from kafkalab.protocol import decode_request
from kafkalab.records import crc_is_valid, decode_batches, read_batch_header

from .helpers import batch

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PRODUCE = [f for f in json.loads((GOLDEN / "manifest.json").read_text())["frames"] if f["api"] == "Produce"]


def records_of(entry) -> bytes:
    request = decode_request((GOLDEN / entry["file"]).read_bytes())
    (blob,) = [p.records for t in request.body.topic_data for p in t.partition_data if p.records]
    return bytes(blob)


def _text(b):
    return None if b is None else b.decode()


@pytest.mark.parametrize("entry", PRODUCE, ids=lambda e: e["file"])
def test_real_client_batch_round_trip(make_log, entry):
    sent = records_of(entry)
    log = make_log(name="kafkalab-0")
    log.append_as_leader(batch(["already there"]), leader_epoch=2)
    info = log.append_as_leader(sent, leader_epoch=5)
    stored = log.read(info.first_offset, 10**7, isolation="log_end").records
    assert stored[21:] == sent[21:] and stored[8:12] == sent[8:12]     # CRC-covered range and length untouched
    h = read_batch_header(stored)
    assert (h.base_offset, h.partition_leader_epoch) == (1, 5) and crc_is_valid(stored)
    expected = entry["expected"]["records"]
    (got,) = decode_batches(stored)
    assert (got.producer_id, got.producer_epoch) == (expected["producer_id"], expected["producer_epoch"])
    assert [(_text(r.key), _text(r.value)) for r in got.records] == [(r["key"], r["value"])
                                                                      for r in expected["records"]]
    if h.has_producer_id:
        retry = log.append_as_leader(sent, leader_epoch=5)
        assert retry.duplicate and retry.first_offset == info.first_offset
        assert log.log_end_offset == info.last_offset + 1
