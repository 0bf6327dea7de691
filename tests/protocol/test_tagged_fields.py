"""Tagged fields that a peer wrote with default values: kept on decode, written again on re-encoding.

Kafka's encoder leaves default-valued tagged fields off the wire, but a peer may write them explicitly. A
decoded message must re-encode to exactly the bytes received; a message built in Python still leaves
defaults off.
"""
from __future__ import annotations

import pytest

from kafkalab import protocol as kp
from kafkalab.protocol import api_keys, codec
from kafkalab.protocol.annotate import annotate_message
from kafkalab.protocol.record_class import TaggedFieldsOnWire, present_tags

API_VERSIONS = api_keys.response_schema(kp.ApiKey.API_VERSIONS)
FETCH = api_keys.response_schema(kp.ApiKey.FETCH)

# ApiVersions v3 response: error_code, api_keys (one entry: Fetch 4-16, no tags), throttle_time_ms, then a
# TAG_BUFFER that spells out two default values: supported_features (tag 0, an empty compact array) and
# finalized_features_epoch (tag 1, -1).
API_VERSIONS_V3_EXPLICIT = (
    b"\x00\x00"                                   # error_code 0
    b"\x02" b"\x00\x01" b"\x00\x04" b"\x00\x10" b"\x00"   # api_keys: 1 entry, Fetch 4..16, no tags
    b"\x00\x00\x00\x00"                           # throttle_time_ms 0
    b"\x02"                                       # 2 tagged fields
    b"\x00\x01" b"\x01"                           # tag 0, 1 byte: supported_features = [] (compact: 0 + 1)
    b"\x01\x08" + b"\xff" * 8                     # tag 1, 8 bytes: finalized_features_epoch = -1
)

# Fetch v16 response: throttle_time_ms, error_code, session_id, no responses, then node_endpoints (tag 0) as
# an explicit empty array.
FETCH_V16_EXPLICIT = (
    b"\x00\x00\x00\x00" b"\x00\x00" b"\x00\x00\x00\x07"   # throttle_time_ms, error_code, session_id 7
    b"\x01"                                               # responses: empty compact array
    b"\x01" b"\x00\x01" b"\x01"                           # 1 tagged field: tag 0, 1 byte, node_endpoints = []
)


@pytest.mark.parametrize("message,version,data,tags", [
    (API_VERSIONS, 3, API_VERSIONS_V3_EXPLICIT, {0, 1}),
    (FETCH, 16, FETCH_V16_EXPLICIT, {0}),
], ids=["ApiVersions-v3", "Fetch-v16"])
def test_default_valued_tags_on_the_wire_survive_a_round_trip(message, version, data, tags):
    body, end = codec.decode(message, version, data)
    assert end == len(data)
    assert present_tags(body) == tags
    assert body.unknown_tagged_fields == () and not body.unknown_tagged_fields
    assert codec.encode(message, version, body) == data                     # byte for byte
    # the same values built in Python: equal to the decoded body, but defaults stay off the wire
    built = message.body_class(**body._asdict() | {"unknown_tagged_fields": ()})
    assert built == body and hash(built) == hash(body)
    assert present_tags(built) == frozenset()
    shorter = codec.encode(message, version, built)
    assert shorter != data and shorter.endswith(b"\x00")                     # an empty TAG_BUFFER
    assert codec.decode(message, version, shorter)[0] == body
    # the reference decoder builds the same object, and shows the tagged fields as present
    ann, aend, rows = annotate_message(message, version, data)
    assert ann == body and aend == end and present_tags(ann) == tags
    assert codec.encode(message, version, ann) == data
    paths = {r.path: r for r in rows}
    for f in message.fields:
        if f.tag in tags:
            assert f.attr in paths, f"{f.attr} not shown"
    assert "_tagged_fields" in paths and paths["_tagged_fields"].value == len(tags)


def test_api_versions_response_frame_round_trip():
    frame = b"\x00\x00\x00\x2a" + API_VERSIONS_V3_EXPLICIT       # header v0 (ApiVersions never uses v1)
    resp = kp.decode_response(frame, kp.ApiKey.API_VERSIONS, 3)
    assert resp.body.supported_features == () and resp.body.finalized_features_epoch == -1
    assert kp.encode_response(resp) == frame
    shown = kp.annotate_response(frame, kp.ApiKey.API_VERSIONS, 3)
    assert {"body.supported_features", "body.finalized_features_epoch"} <= {r.path for r in shown.rows}
    assert kp.encode_response(kp.make_response(resp.body._replace(unknown_tagged_fields=()), api_version=3,
                                               correlation_id=42)) == frame[:-14] + b"\x00"


def test_present_tags_ride_along_with_unknown_ones_and_with_changes():
    data = FETCH_V16_EXPLICIT[:-4] + b"\x02" b"\x00\x01" b"\x01" b"\x09\x02hi"   # plus an unknown tag 9
    body, _ = codec.decode(FETCH, 16, data)
    assert type(body.unknown_tagged_fields) is TaggedFieldsOnWire
    assert body.unknown_tagged_fields == ((9, b"hi"),) and present_tags(body) == {0}
    assert codec.encode(FETCH, 16, body) == data
    # a changed value is written as usual; the wire tags stay with the struct through _replace
    changed = body._replace(session_id=8)
    assert codec.encode(FETCH, 16, changed) == data[:6] + b"\x00\x00\x00\x08" + data[10:]


def test_messages_without_tags_on_the_wire_carry_a_plain_tuple():
    data = FETCH_V16_EXPLICIT[:-4] + b"\x00"
    body, _ = codec.decode(FETCH, 16, data)
    assert type(body.unknown_tagged_fields) is tuple and present_tags(body) == frozenset()
    assert codec.encode(FETCH, 16, body) == data
