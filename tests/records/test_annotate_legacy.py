"""The annotated decoder reads v0/v1 message sets: every byte has a field, wrappers nest their inner set."""
from __future__ import annotations

import pytest

from kafkalab.protocol import ApiKey, annotate_request, encode_request, make_request, request_class
from kafkalab.protocol.errors import DecodeError
from kafkalab.records import annotate_records
from kafkalab.records.legacy import build_message_set

ROWS = [(0, 1000, b"key", b"hello"), (1, 1001, None, b"")]


def leaves(rows):
    parents = {r.path.rsplit(".", 1)[0] for r in rows}
    return [r for r in rows if r.path not in parents]


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_set_leaf_rows_tile_every_byte(magic):
    data = build_message_set(ROWS, magic=magic)
    rows = annotate_records(data)
    assert [r.path for r in rows if r.wire_type == "LEGACY_MESSAGE"] == ["messages[0]", "messages[1]"]
    pos = 0
    for r in sorted(leaves(rows), key=lambda r: (r.start, r.end)):
        assert r.start == pos, r
        pos = r.end
    assert pos == len(data)
    names = [r.path.split(".", 1)[1] for r in rows if r.path.startswith("messages[0].")]
    expected = ["offset", "message_size", "crc", "magic", "attributes"] + (["timestamp"] if magic else []) + \
        ["key_length", "key", "value_length", "value"]
    assert names == expected
    assert {r.path: r.value for r in rows}["messages[1].key"] is None


def test_a_wrapper_nests_its_inner_messages_with_their_own_offsets():
    data = build_message_set([(5, 1000, b"a", b"b"), (6, 1001, b"c", b"d")], magic=1, compression="gzip")
    rows = annotate_records(data)
    [value] = [r for r in rows if r.path == "messages[0].value"]
    assert value.wire_type == "GZIP" and value.start < value.end == len(data)
    inner = {r.path: r.value for r in value.value.rows}
    assert inner["messages[0].value.messages[1].offset"] == 1            # relative in v1
    assert inner["messages[0].value.messages[1].key"] == b"c"
    assert "2 records" in repr(value.value)


def test_bad_crc_and_a_cut_message_are_shown():
    data = bytearray(build_message_set(ROWS, magic=0))
    data[data.index(b"hello")] ^= 1
    rows = annotate_records(bytes(data))
    assert [r.path for r in rows if r.wire_type == "INVALID_RECORDS"] == ["messages[0].error"]
    with pytest.raises(DecodeError):
        annotate_records(bytes(data), strict=True)
    cut = annotate_records(bytes(data[:-3]))
    assert {r.path: r.wire_type for r in cut}["messages[1]"] == "PARTIAL_MESSAGE" and cut[-1].path == "messages[1].truncated"


def test_a_produce_v2_request_is_annotated_down_to_its_messages():
    Produce = request_class(ApiKey.PRODUCE)
    body = Produce(transactional_id=None, acks=1, timeout_ms=100, topic_data=(Produce.TopicProduceData(
        name="t", partition_data=(Produce.PartitionProduceData(index=0, records=build_message_set(ROWS, magic=1)),)),))
    frame = encode_request(make_request(body, api_version=2, correlation_id=3))
    annotation = annotate_request(frame, records_hook=annotate_records)
    paths = [r.path for r in annotation.rows]
    assert any(p.endswith("records.messages[1].value") for p in paths)
