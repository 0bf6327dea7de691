"""Wire layout per API and version, derived from the JSON independently of kafkalab's schema objects.

For every message and every valid version a reference encoder (``wire.py``, written from Kafka's message
README) produces the bytes of a sample value; kafkalab must decode them to that value, re-encode them byte
for byte, and the annotated decoder must report the wire type the JSON implies for every field (compact
encodings and a tag buffer in flexible versions, classic ones otherwise). Header versions follow Kafka's
rule, and a few golden frames are assembled by hand.
"""
from __future__ import annotations

import struct
import uuid

import pytest

from kafkalab import protocol as kp
from kafkalab.protocol import api_keys, codec, headers
from kafkalab.protocol.annotate import annotate_message
from kafkalab.protocol.messages import data as data_module
from kafkalab.protocol.messages import headers as headers_module
from kafkalab.protocol.schema import Message

from . import specs as S
from . import wire as W


def _message_for(spec: dict) -> Message:
    if spec["type"] == "request":
        return api_keys.request_schema(spec["apiKey"])
    if spec["type"] == "response":
        return api_keys.response_schema(spec["apiKey"])
    module = headers_module if spec["type"] == "header" else data_module
    return next(m for m in vars(module).values() if isinstance(m, Message) and m.name == spec["name"])


def _cases():
    if not S.HAVE_SPECS:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=S.SKIP_REASON))]
    out = []
    for stem, spec in sorted(S.effective().items()):
        for v in S.valid_versions(spec):
            out.append(pytest.param(stem, v, id=f"{spec['name']}-v{v}"))
    return out


CASES = _cases()


@pytest.mark.parametrize("stem,version", CASES)
def test_layout_matches_json(stem, version):
    spec = S.effective()[stem]
    message = _message_for(spec)
    fields = spec.get("fields", [])
    for nulls in (False, True):
        value = W.sample(spec, version, nulls=nulls)
        ref = W.encode_struct(spec, fields, version, value)
        body, end = codec.decode(message, version, ref)
        assert end == len(ref)
        assert W.typed(W.plain(body)) == W.typed(value), f"decoded value differs (nulls={nulls})"
        assert codec.encode(message, version, body) == ref, f"re-encoding differs (nulls={nulls})"
        decoded, aend, rows = annotate_message(message, version, ref, path="body", depth=0)
        assert decoded == body and aend == len(ref)
        got = {r.path: r.wire_type for r in rows}
        want = W.expected_paths(spec, fields, version, value, "body")
        assert got == want
        # the key facts, stated plainly: compact lengths and tag buffers exactly in flexible versions
        flex = S.flexible(spec, version)
        lengths = [wt for p, wt in got.items() if wt.endswith(("STRING", "BYTES", "ARRAY", "RECORDS"))
                   and not p.startswith("body.client_id")]  # RequestHeader.ClientId overrides: never compact
        assert all(wt.startswith("COMPACT_") == flex for wt in lengths), lengths
        assert ("body._tagged_fields" in got) == flex
        # the top-level rows tile the body: every byte belongs to exactly one of them
        top = sorted((r for r in rows if r.depth == 0), key=lambda r: r.start)
        if top:
            assert [r.start for r in top] == [0] + [r.end for r in top[:-1]]
            assert top[-1].end == len(ref)
        else:
            assert ref == b""  # a non-flexible version without fields (ListGroups v0-2, ...)


def _api_cases():
    if not S.HAVE_SPECS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=S.SKIP_REASON))]
    return list(range(0, 93))


@pytest.mark.parametrize("api_key", _api_cases())
def test_header_version_rule_and_frames(api_key):
    req_spec, resp_spec = S.api_pairs()[api_key]
    for v in S.valid_versions(req_spec):
        hv = S.request_header_version(api_key, v)
        assert kp.request_header_version(api_key, v) == hv
        rv = S.response_header_version(api_key, v)
        assert kp.response_header_version(api_key, v) == rv
        assert hv == (0 if (api_key, v) == (7, 0) else 2 if S.flexible(req_spec, v) else 1)
        assert rv == (0 if api_key == 18 else 1 if S.flexible(resp_spec, v) else 0)

        # full request frame: header assembled by hand + the reference body
        client_id = "" if hv == 0 else "cli-é"
        value = W.sample(req_spec, v)
        body_bytes = W.encode_struct(req_spec, req_spec.get("fields", []), v, value)
        head = struct.pack(">hhi", api_key, v, 0x01020304)
        if hv >= 1:
            raw = client_id.encode()
            head += struct.pack(">h", len(raw)) + raw  # classic int16 length even in header v2
        if hv == 2:
            head += b"\x00"
        frame = head + body_bytes
        request = kp.decode_request(frame)
        assert request.header.request_api_key == api_key and request.header.request_api_version == v
        assert request.correlation_id == 0x01020304 and request.client_id == client_id
        assert W.typed(W.plain(request.body)) == W.typed(value)
        assert kp.encode_request(request) == frame
        made = kp.make_request(request.body, api_version=v, correlation_id=0x01020304, client_id=client_id)
        assert kp.encode_request(made) == frame

        # full response frame
        rvalue = W.sample(resp_spec, v)
        rbody = W.encode_struct(resp_spec, resp_spec.get("fields", []), v, rvalue)
        rframe = struct.pack(">i", 77) + (b"\x00" if rv == 1 else b"") + rbody
        response = kp.decode_response(rframe, api_key, v)
        assert response.correlation_id == 77
        assert W.typed(W.plain(response.body)) == W.typed(rvalue)
        assert kp.encode_response(response) == rframe
        assert kp.encode_response(kp.make_response(response.body, api_version=v, correlation_id=77)) == rframe


def test_header_rule_spot_checks():
    assert kp.request_header_version(18, 0) == 1
    assert kp.request_header_version(18, 3) == 2
    assert kp.response_header_version(18, 3) == 0  # KIP-511
    assert kp.response_header_version(18, 4) == 0
    assert kp.request_header_version(7, 0) == 0
    assert kp.request_header_version(7, 1) == 1
    assert kp.request_header_version(3, 8) == 1 and kp.request_header_version(3, 9) == 2
    assert kp.response_header_version(3, 8) == 0 and kp.response_header_version(3, 9) == 1
    assert kp.request_header_version(0, 9) == 2 and kp.response_header_version(0, 9) == 1
    assert kp.request_header_version(1, 11) == 1 and kp.request_header_version(1, 12) == 2


# -------------------------------------------------------------------------------------------- golden frames
def h(text: str) -> bytes:
    """Hex with spaces, ``|`` separators and ``"quoted ascii"`` for readability."""
    out = bytearray()
    for i, part in enumerate(text.split('"')):
        if i % 2:
            out += part.encode()
        else:
            out += bytes.fromhex(part.replace("|", " "))
    return bytes(out)


KAFKALAB = '00 08 "kafkalab"'  # classic NULLABLE_STRING client id: int16 length + bytes


def _roundtrip_request(frame: bytes, expected_header: dict, expected_body):
    req = kp.decode_request(frame)
    for k, v in expected_header.items():
        assert getattr(req.header, k) == v
    assert req.body == expected_body
    assert kp.encode_request(req) == frame
    # the annotated decoder agrees and covers the whole frame
    ann = kp.annotate_request(frame)
    assert ann.message == req and ann.rows[-1].end <= len(frame)
    return req


def _roundtrip_response(frame: bytes, api_key: int, version: int, correlation_id: int, expected_body):
    resp = kp.decode_response(frame, api_key, version)
    assert resp.correlation_id == correlation_id
    assert resp.body == expected_body
    assert kp.encode_response(resp) == frame
    assert kp.annotate_response(frame, api_key, version).message == resp
    return resp


def test_golden_api_versions_requests():
    Req = kp.request_class(18)
    v0 = h(f"00 12 | 00 00 | 00 00 00 01 | {KAFKALAB}")
    _roundtrip_request(v0, {"request_api_key": 18, "request_api_version": 0, "correlation_id": 1,
                            "client_id": "kafkalab"}, Req())
    for version in (3, 4):
        frame = h(f'00 12 | 00 0{version} | 00 00 00 02 | {KAFKALAB} | 00 '        # header v2: tag buffer
                  f'| 0c "kafkalab-py" | 06 "0.1.0" | 00')                        # compact strings + tags
        _roundtrip_request(frame, {"request_api_version": version, "correlation_id": 2},
                           Req(client_software_name="kafkalab-py", client_software_version="0.1.0"))
        ann = kp.annotate_request(frame)
        assert ann.find("header.client_id").wire_type == "NULLABLE_STRING"
        assert ann.find("header._tagged_fields").wire_type == "TAG_BUFFER"
        assert ann.find("body.client_software_name").wire_type == "COMPACT_STRING"
        assert (ann.find("body.client_software_name").start, ann.find("body.client_software_name").end) == \
            (19, 31)


def test_golden_api_versions_responses():
    Resp = kp.response_class(18)
    Key = Resp.ApiVersion
    keys = (Key(api_key=0, min_version=3, max_version=13), Key(api_key=18, min_version=0, max_version=4))
    v0 = h("00 00 00 01 | 00 00 | 00 00 00 02 | 00 00 00 03 00 0d | 00 12 00 00 00 04")
    _roundtrip_response(v0, 18, 0, 1, Resp(error_code=0, api_keys=keys))
    # v3: response header v0 (no tag buffer, KIP-511); compact array; tag buffer per entry; tagged epoch
    v3 = h("00 00 00 02 | 00 00 | 03 | 00 00 00 03 00 0d 00 | 00 12 00 00 00 04 00 | 00 00 00 0a "
           "| 01 | 01 08 00 00 00 00 00 00 00 05")
    _roundtrip_response(v3, 18, 3, 2, Resp(error_code=0, api_keys=keys, throttle_time_ms=10,
                                           finalized_features_epoch=5))
    v4 = h("00 00 00 03 | 00 23 | 01 | 00 00 00 00 | 00")
    _roundtrip_response(v4, 18, 4, 3, Resp(error_code=35))


def test_golden_unsupported_version_reply_is_v0_format():
    # protocol-compat.md §5.1: correlation id 7, error 35, [{18, 0, 2}], no throttle field.
    frame = h("00 00 00 10 | 00 00 00 07 | 00 23 | 00 00 00 01 | 00 12 00 00 00 02")
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    reader = kp.FrameReader()
    (body,) = reader.feed(frame)
    Resp = kp.response_class(18)
    expected = Resp(error_code=35, api_keys=(Resp.ApiVersion(api_key=18, min_version=0, max_version=2),))
    resp = _roundtrip_response(body, 18, 0, 7, expected)
    assert kp.size_prefixed(kp.encode_response(resp)) == frame


def test_golden_metadata_requests():
    Req = kp.request_class(3)
    Topic = Req.MetadataRequestTopic
    v0 = h(f'00 03 00 00 00 00 00 05 {KAFKALAB} | 00 00 00 01 | 00 03 "foo"')
    _roundtrip_request(v0, {"request_api_key": 3, "correlation_id": 5}, Req(topics=(Topic(name="foo"),)))
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    v12 = h(f'00 03 00 0c 00 00 00 06 {KAFKALAB} 00 '
            f'| 03 | 01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef 04 "foo" 00 '
            f'| 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 '            # topic by id, name null
            f'| 01 | 00 | 00')                                                     # auto-create, no auth ops
    _roundtrip_request(v12, {"request_api_version": 12}, Req(
        topics=(Topic(topic_id=tid, name="foo"), Topic(name=None)),
        allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    null_topics = h(f"00 03 00 0c 00 00 00 06 {KAFKALAB} 00 | 00 | 00 | 01 | 00")
    _roundtrip_request(null_topics, {}, Req(topics=None, allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=True))


RECORDS = bytes(range(61)) + b"\x00\x00\x00\x01abc"  # an opaque RecordBatch-shaped blob (68 bytes)


def test_golden_produce_requests():
    Req = kp.request_class(0)
    Topic, Part = Req.TopicProduceData, Req.PartitionProduceData
    body = Req(transactional_id=None, acks=-1, timeout_ms=30000,
               topic_data=(Topic(name="foo", partition_data=(Part(index=2, records=RECORDS),)),))
    v3 = h(f'00 00 00 03 00 00 00 09 {KAFKALAB} | ff ff | ff ff | 00 00 75 30 | 00 00 00 01 | 00 03 "foo" '
           f'| 00 00 00 01 | 00 00 00 02 | 00 00 00 44') + RECORDS
    _roundtrip_request(v3, {"request_api_key": 0, "request_api_version": 3, "correlation_id": 9}, body)
    v9 = h(f'00 00 00 09 00 00 00 09 {KAFKALAB} 00 | 00 | ff ff | 00 00 75 30 | 02 | 04 "foo" '
           f'| 02 | 00 00 00 02 | 45') + RECORDS + h("00 | 00 | 00")
    _roundtrip_request(v9, {"request_api_version": 9}, body)
    ann = kp.annotate_request(v9)
    assert ann.find("body.topic_data[0].partition_data[0].records").wire_type == "COMPACT_RECORDS"
    assert ann.find("body.transactional_id").wire_type == "COMPACT_NULLABLE_STRING"


def test_golden_fetch_requests():
    Req = kp.request_class(1)
    Topic, Part = Req.FetchTopic, Req.FetchPartition
    v4 = h(f'00 01 00 04 00 00 00 0b {KAFKALAB} | ff ff ff ff | 00 00 01 f4 | 00 00 00 01 | 00 10 00 00 | 00 '
           f'| 00 00 00 01 | 00 03 "foo" | 00 00 00 01 | 00 00 00 00 | 00 00 00 00 00 00 00 2a | 00 10 00 00')
    body4 = Req(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1048576, isolation_level=0,
                topics=(Topic(topic="foo", partitions=(Part(partition=0, fetch_offset=42,
                                                            partition_max_bytes=1048576),)),))
    _roundtrip_request(v4, {"request_api_version": 4, "correlation_id": 11}, body4)
    v12 = h(f'00 01 00 0c 00 00 00 0c {KAFKALAB} 00 '
            f'| ff ff ff ff | 00 00 01 f4 | 00 00 00 01 | 00 10 00 00 | 01 | 00 00 00 00 | ff ff ff ff '
            f'| 02 | 04 "foo" | 02 | 00 00 00 00 | ff ff ff ff | 00 00 00 00 00 00 00 2a | ff ff ff ff '
            f'| ff ff ff ff ff ff ff ff | 00 10 00 00 | 00 | 00 '                   # partition, topic tags
            f'| 01 | 01 '                                                          # no forgotten topics, rack ""
            f'| 01 | 00 08 08 "cluster"')                                          # tag 0: ClusterId
    body12 = Req(cluster_id="cluster", replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1048576,
                 isolation_level=1, session_id=0, session_epoch=-1,
                 topics=(Topic(topic="foo", partitions=(Part(partition=0, fetch_offset=42,
                                                             partition_max_bytes=1048576),)),))
    _roundtrip_request(v12, {"request_api_version": 12, "correlation_id": 12}, body12)
    ann = kp.annotate_request(v12)
    assert ann.find("body.cluster_id").wire_type == "COMPACT_NULLABLE_STRING"
    assert ann.find("body._tagged_fields").value == 1


def test_golden_fetch_response_v4():
    Resp = kp.response_class(1)
    Topic, Part, Aborted = Resp.FetchableTopicResponse, Resp.PartitionData, Resp.AbortedTransaction
    frame = h('00 00 00 0b | 00 00 00 00 | 00 00 00 01 | 00 03 "foo" | 00 00 00 01 '
              '| 00 00 00 00 | 00 00 | 00 00 00 00 00 00 00 64 | 00 00 00 00 00 00 00 63 '
              '| 00 00 00 01 | 00 00 00 00 00 00 00 07 | 00 00 00 00 00 00 00 50 '
              '| 00 00 00 44') + RECORDS
    body = Resp(throttle_time_ms=0, responses=(Topic(topic="foo", partitions=(Part(
        partition_index=0, error_code=0, high_watermark=100, last_stable_offset=99,
        aborted_transactions=(Aborted(producer_id=7, first_offset=80),), records=RECORDS),)),))
    _roundtrip_response(frame, 1, 4, 11, body)


def test_client_id_stays_classic_in_header_v2():
    # A 200-byte client id: classic int16 length 00 c8 (a compact length would be the varint c9 01).
    cid = "c" * 200
    req = kp.make_request(kp.request_class(18)(), api_version=3, correlation_id=1, client_id=cid)
    frame = kp.encode_request(req)
    assert frame[8:10] == b"\x00\xc8" and frame[10:210] == cid.encode()
    assert frame[210:] == b"\x00" + b"\x01\x01" + b"\x00"  # header tags, two empty compact strings, tags
    assert kp.decode_request(frame).client_id == cid
    null_client = kp.make_request(kp.request_class(18)(), api_version=3, correlation_id=1, client_id=None)
    assert kp.encode_request(null_client)[8:11] == b"\xff\xff\x00"
    assert kp.decode_request(kp.encode_request(null_client)).client_id is None


def test_header_table_source_schemas():
    # kafkalab keeps request header v0 for ControlledShutdown v0 (Kafka 4 dropped it from RequestHeader.json).
    assert 0 in headers.REQUEST_HEADER.valid_versions
    frame = h("00 07 00 00 00 00 00 2a | 00 00 00 01")  # ControlledShutdown v0: no client id at all
    req = kp.decode_request(frame)
    assert req.correlation_id == 42 and req.body.broker_id == 1
    assert kp.encode_request(req) == frame


@S.needs_specs
def test_annotation_leaves_do_not_overlap():
    from .frames import corpus
    for kind, key, version, frame in corpus():
        ann = kp.annotate_request(frame) if kind == "request" else kp.annotate_response(frame, key, version)
        leaves = sorted(ann.leaves(), key=lambda r: (r.start, r.end))
        for a, b in zip(leaves, leaves[1:]):
            assert a.end <= b.start, (kind, key, version, a, b)
        assert all(0 <= r.start <= r.end <= len(frame) for r in ann.rows)
        assert len(ann.table()) == len(ann.rows)
