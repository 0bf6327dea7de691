"""Hypothesis round trips for every message at every version: decode(encode(x)) == x.

Also: encoding is deterministic, the annotated (reference) decoder returns the same object and end offset as
the generated codec, and the facade round-trips whole frames with their headers.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab import protocol as kp
from kafkalab.protocol import api_keys, codec, headers
from kafkalab.protocol.annotate import annotate_message
from kafkalab.protocol.messages import data as data_module
from kafkalab.protocol.schema import Message

from .strategies import TEXT, message_strategy

SETTINGS = settings(max_examples=10, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _all_messages():
    out = []
    for key in api_keys.ALL_API_KEYS:
        req, resp = api_keys.messages_for(key)
        out += [req, resp]
    out += [headers.REQUEST_HEADER, headers.RESPONSE_HEADER]
    out += [m for _, m in sorted(vars(data_module).items()) if isinstance(m, Message)]
    return out


MESSAGES = {m.name: m for m in _all_messages()}
CASES = [pytest.param(name, v, id=f"{name}-v{v}") for name, m in MESSAGES.items() for v in m.valid_versions]


def test_every_api_and_version_is_covered():
    assert len(MESSAGES) == 93 * 2 + 2 + 10
    for key in range(93):
        req, resp = api_keys.messages_for(key)
        assert not req.valid_versions.empty and not resp.valid_versions.empty
    assert len(CASES) > 600


def check_roundtrip(message: Message, version: int, obj) -> bytes:
    data = codec.encode(message, version, obj)
    assert codec.encode(message, version, obj) == data, "encoding is not deterministic"
    back, end = codec.decode(message, version, data)
    assert end == len(data)
    assert back == obj
    assert codec.encode(message, version, back) == data
    ann, aend, _ = annotate_message(message, version, data)
    assert ann == back and aend == end
    # trailing bytes are left alone, and decoding from an offset works
    back2, end2 = codec.decode(message, version, b"\xAB\xCD" + data + b"\xEE", 2)
    assert back2 == obj and end2 == len(data) + 2
    return data


@pytest.mark.parametrize("name,version", CASES)
def test_roundtrip(name, version):
    message = MESSAGES[name]

    @SETTINGS
    @given(message_strategy(message, version))
    def run(obj):
        check_roundtrip(message, version, obj)

    run()


def _key_versions():
    return [pytest.param(key, id=api_keys.api_name(key)) for key in api_keys.ALL_API_KEYS]


@pytest.mark.parametrize("api_key", _key_versions())
def test_facade_roundtrip_with_headers(api_key):
    req_schema, resp_schema = api_keys.messages_for(api_key)
    versions = list(req_schema.valid_versions)

    def request_at(v):
        hv = kp.request_header_version(api_key, v)
        client_ids = st.just("") if hv == 0 else st.none() | TEXT
        return st.builds(lambda body, corr, cid: kp.Request(kp.RequestHeader(
            request_api_key=api_key, request_api_version=v, correlation_id=corr, client_id=cid), body),
            message_strategy(req_schema, v), st.integers(-(2**31), 2**31 - 1), client_ids)

    def response_at(v):
        return st.builds(lambda body, corr: kp.make_response(body, api_version=v, correlation_id=corr,
                                                             api_key=api_key),
                         message_strategy(resp_schema, v), st.integers(-(2**31), 2**31 - 1))

    requests = st.one_of([request_at(v) for v in versions])
    responses = st.one_of([response_at(v) for v in versions])

    @settings(SETTINGS, max_examples=20)
    @given(requests, responses)
    def run(request, response):
        frame = kp.encode_request(request)
        assert kp.decode_request(frame) == request
        assert kp.annotate_request(frame).message == request
        assert kp.annotate_request(kp.size_prefixed(frame), size_prefix=True).message == request
        rframe = kp.encode_response(response)
        back = kp.decode_response(rframe, api_key, response.api_version)
        assert back == response
        assert kp.annotate_response(rframe, api_key, response.api_version).message == response
        (only,) = kp.FrameReader().feed(kp.size_prefixed(rframe))
        assert only == rframe

    run()


def test_unknown_tagged_fields_survive_and_sort():
    Req = kp.request_class(18)
    body = Req(client_software_name="a", client_software_version="b",
               unknown_tagged_fields=((5, b"x"), (300, b""), (7, b"\x00" * 130)))
    data = codec.encode(api_keys.request_schema(18), 3, body)
    # tags are written in ascending order, with varint tag and size
    assert data.endswith(b"\x03" + b"\x05\x01x" + b"\x07\x82\x01" + b"\x00" * 130 + b"\xac\x02\x00")
    back, _ = codec.decode(api_keys.request_schema(18), 3, data)
    assert back.unknown_tagged_fields == ((5, b"x"), (7, b"\x00" * 130), (300, b""))


def test_absent_field_with_a_value_cannot_be_encoded():
    Req = kp.request_class(3)
    with pytest.raises(kp.EncodeError):
        codec.encode(api_keys.request_schema(3), 3, Req(topics=(), include_topic_authorized_operations=True))
    with pytest.raises(kp.EncodeError):
        codec.encode(api_keys.request_schema(3), 0, Req(topics=None))  # nullable only from v1
    # ignorable fields are silently dropped, as Kafka does (TopicId is ignorable, from v10)
    import uuid
    body = Req(topics=(Req.MetadataRequestTopic(topic_id=uuid.uuid4(), name="t"),))
    assert codec.encode(api_keys.request_schema(3), 3, body) == b"\x00\x00\x00\x01\x00\x01t"


@pytest.mark.parametrize("tag", [-1, -127, -200, -(2**40)])
def test_negative_unsigned_varint_is_an_encode_error(tag):
    # A tag is written as an UNSIGNED_VARINT, which has no encoding for a negative number: the generated
    # writer used to emit a wrong byte (-1 -> 0x7f) or leak an IndexError.
    Req = kp.request_class(18)
    body = Req(client_software_name="a", client_software_version="b", unknown_tagged_fields=((tag, b"x"),))
    with pytest.raises(kp.EncodeError, match="unsigned varint"):
        codec.encode(api_keys.request_schema(18), 3, body)
    with pytest.raises(kp.EncodeError):
        codec._uv(tag)


def test_primitive_writers_reject_negative_counts_and_varints():
    from kafkalab.protocol import primitives as P

    for compact in (False, True):
        with pytest.raises(kp.EncodeError):  # -1 would read back as a null array
            P.write_array_length(-1, compact=compact)
        with pytest.raises(kp.EncodeError):
            P.write_array_length(-5, compact=compact)
    assert P.write_array_length(0, compact=True) == b"\x01" and P.write_array_length(None) == b"\xff" * 4
    with pytest.raises(kp.EncodeError):
        P.write_unsigned_varint(-1)
