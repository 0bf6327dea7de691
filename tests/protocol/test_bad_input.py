"""Bad input: one typed error (DecodeError, a ValueError) naming the field path and byte offset.

Cases from protocol-compat.md §6 and security.md §7 (CVE-2022-34917 and friends).
"""
from __future__ import annotations

import struct
import tracemalloc

import pytest

from kafkalab import protocol as kp
from kafkalab.protocol import DecodeError, UnsupportedVersionError

from . import specs as S
from .frames import corpus, request_frame, response_frame
from .test_versions import h

MAX_INT = 2**31 - 1


def _decoders(kind, key, version):
    if kind == "request":
        return (lambda d: kp.decode_request(d)), (lambda d: kp.annotate_request(d))
    return (lambda d: kp.decode_response(d, key, version)), (lambda d: kp.annotate_response(d, key, version))


def _assert_located(err: DecodeError, data: bytes) -> None:
    assert isinstance(err, ValueError)
    assert err.path and err.path.split(".")[0].split("[")[0] in ("header", "body", "size"), err.path
    assert err.offset is not None and 0 <= err.offset <= len(data), (err.offset, len(data))
    assert f"byte {err.offset}" in str(err) and err.path in str(err)


def _truncation_params():
    if not S.HAVE_SPECS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=S.SKIP_REASON))]
    return [pytest.param(c, id=f"{c[0]}-{c[1]}-v{c[2]}") for c in corpus() if c[1] in
            (0, 1, 3, 8, 11, 18, 19, 22, 36, 55, 62, 68, 78, 4, 7)]


@pytest.mark.parametrize("case", _truncation_params())
def test_truncation_at_every_byte(case):
    """No strict prefix of a valid frame decodes: Kafka's encoding is self-delimiting."""
    kind, key, version, frame = case
    fast, slow = _decoders(kind, key, version)
    fast(frame)
    slow(frame)
    for cut in range(len(frame)):
        data = frame[:cut]
        for decode in (fast, slow):
            with pytest.raises(DecodeError) as info:
                decode(data)
            _assert_located(info.value, data)
    # strict=False reports instead of raising, with the rows decoded so far
    ann = (kp.annotate_request(frame[:-1], strict=False) if kind == "request"
           else kp.annotate_response(frame[:-1], key, version, strict=False))
    assert ann.message is None and isinstance(ann.error, DecodeError) and ann.rows


@S.needs_specs
def test_trailing_bytes_are_ignored():
    frame = request_frame(3, 12)
    assert kp.decode_request(frame + b"\x00junk") == kp.decode_request(frame)
    ann = kp.annotate_request(frame + b"junk")
    assert ann.rows[-1].path == "trailing_bytes" and ann.rows[-1].value == 4


# ------------------------------------------------------------------------------ CVE-2022-34917 and friends
PRODUCE_V5_HEADER = h('00 00 00 05 00 00 00 01 00 08 "kafkalab"')
PRODUCE_V9_HEADER = h('00 00 00 09 00 00 00 01 00 08 "kafkalab" 00')


def _fails_fast(frame: bytes, message: str, decode=kp.decode_request) -> DecodeError:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as info:
            decode(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024, f"decoding allocated {peak} bytes"
    assert info.value.reason == message
    _assert_located(info.value, frame)
    return info.value


@pytest.mark.parametrize("count", [MAX_INT, (MAX_INT - 1) // 2])
def test_produce_v5_huge_topic_count(count):
    # transactional_id null, acks 1, timeout 30000, topics count = count, then 8 bytes
    body = h("ff ff | 00 01 | 00 00 75 30") + struct.pack(">i", count) + b"\x00" * 8
    frame = PRODUCE_V5_HEADER + body
    msg = f"Tried to allocate a collection of size {count}, but there are only 8 bytes remaining."
    err = _fails_fast(frame, msg)
    assert err.path == "body.topic_data" and err.offset == len(PRODUCE_V5_HEADER) + 8
    err = _fails_fast(frame, msg, decode=kp.annotate_request)
    assert err.path == "body.topic_data"


def test_compact_array_varint_two_to_the_31():
    # compact array: unsigned varint N+1 = 2^31  ->  N = 2147483647
    body = h("00 | 00 01 | 00 00 75 30 | 80 80 80 80 08") + b"\x00" * 8
    err = _fails_fast(PRODUCE_V9_HEADER + body,
                      "Tried to allocate a collection of size 2147483647, but there are only 8 bytes remaining.")
    assert err.path == "body.topic_data"


@S.needs_specs
def test_huge_count_of_int32_elements():
    # Fetch v7 forgotten_topics_data[0].partitions is []int32: a big count must not build a huge struct format.
    frame = request_frame(1, 7)
    req = kp.decode_request(frame)
    Req = kp.request_class(1)
    body = req.body._replace(forgotten_topics_data=(Req.ForgottenTopic(topic="t", partitions=(1, 2)),))
    good = kp.encode_request(kp.Request(req.header, body))
    i = good.rindex(b"\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02")
    bad = good[:i] + struct.pack(">i", MAX_INT) + good[i + 4:]
    _fails_fast(bad, f"Tried to allocate a collection of size {MAX_INT}, but there are only "
                     f"{len(bad) - i - 4} bytes remaining.")


def test_huge_response_collection():
    frame = h("00 00 00 01 | 00 00 | 7f ff ff ff | 00 00 00 00")
    _fails_fast(frame, "Tried to allocate a collection of size 2147483647, but there are only 4 bytes remaining.",
                decode=lambda d: kp.decode_response(d, 18, 1))


# ------------------------------------------------------------------------------------------ lengths, nulls
@pytest.mark.parametrize("frame,path", [
    (h("00 12 00 00 00 00 00 01 | ff fe"), "header.client_id"),                        # string length -2
    (h("00 12 00 00 00 00 00 01 | 80 00"), "header.client_id"),                        # -32768
    (h('00 03 00 00 00 00 00 01 00 01 "c" | ff ff ff fe'), "body.topics"),            # array length -2
    (h('00 03 00 00 00 00 00 01 00 01 "c" | ff ff ff ff'), "body.topics"),            # null, not nullable in v0
    (h('00 03 00 00 00 00 00 01 00 01 "c" | 00 00 00 01 | ff ff'), "body.topics[0].name"),  # null name in v0
    (h('00 03 00 00 00 00 00 01 00 01 "c" | 00 00 00 01 | ff fd'), "body.topics[0].name"),
    (h('00 12 00 03 00 00 00 01 00 01 "c" 00 | 00 | 01 | 00'), "body.client_software_name"),  # compact null
    (h('00 24 00 01 00 00 00 01 00 01 "c" | ff ff ff ff'), "body.auth_bytes"),         # bytes: null
    (h('00 24 00 01 00 00 00 01 00 01 "c" | ff ff ff f0'), "body.auth_bytes"),         # bytes: -16
    (h('00 24 00 01 00 00 00 01 00 01 "c" | 00 00 00 09 | 01 02'), "body.auth_bytes"),  # longer than the rest
])
def test_bad_lengths_and_nulls(frame, path):
    for decode in (kp.decode_request, kp.annotate_request):
        with pytest.raises(DecodeError) as info:
            decode(frame)
        assert info.value.path == path
        _assert_located(info.value, frame)


def test_nullable_fields_accept_exactly_minus_one():
    # Metadata v1: topics null (-1) is "all topics"
    req = kp.decode_request(h('00 03 00 01 00 00 00 01 00 01 "c" | ff ff ff ff'))
    assert req.body.topics is None
    with pytest.raises(DecodeError):
        kp.decode_request(h('00 03 00 01 00 00 00 01 00 01 "c" | ff ff ff fe'))


@pytest.mark.parametrize("varint", ["80 80 80 80 80 01", "ff ff ff ff ff 7f", "80 80 80 80 80 80 80 80 80 80 01"])
def test_varint_longer_than_five_bytes(varint):
    for where in ("array", "tags", "string"):
        if where == "array":
            frame = PRODUCE_V9_HEADER + h("00 | 00 01 | 00 00 75 30") + h(varint) + b"\x00" * 4
        elif where == "tags":
            frame = h('00 12 00 03 00 00 00 01 00 01 "c"') + h(varint)
        else:
            frame = h('00 12 00 03 00 00 00 01 00 01 "c" 00') + h(varint) + b"\x00" * 4
        for decode in (kp.decode_request, kp.annotate_request):
            with pytest.raises(DecodeError) as info:
                decode(frame)
            assert "longer than 5 bytes" in info.value.reason
            _assert_located(info.value, frame)


@pytest.mark.parametrize("raw", ["c3 28", "ff", "ed a0 80", "f8 88 80 80 80", "e2 82"])
def test_invalid_utf8(raw):
    n = len(bytes.fromhex(raw))
    in_header = h("00 12 00 00 00 00 00 01") + struct.pack(">h", n) + bytes.fromhex(raw)
    in_body = h('00 12 00 03 00 00 00 01 00 01 "c" 00') + bytes([n + 1]) + bytes.fromhex(raw) + h("01 00")
    for frame, path in ((in_header, "header.client_id"), (in_body, "body.client_software_name")):
        for decode in (kp.decode_request, kp.annotate_request):
            with pytest.raises(DecodeError) as info:
                decode(frame)
            assert info.value.path == path and "UTF-8" in info.value.reason
            _assert_located(info.value, frame)


# ------------------------------------------------------------------------------------------ tagged fields
API_VERSIONS_V3_PREFIX = h("00 00 00 01 | 00 00 | 01 | 00 00 00 00")  # header v0, no keys, throttle 0


@pytest.mark.parametrize("tags,path", [
    ("01 | 01 09 00 00 00 00 00 00 00 05 00", "body.finalized_features_epoch"),   # size 9, value uses 8
    ("01 | 01 07 00 00 00 00 00 00 00 05", "body.finalized_features_epoch"),      # size 7, value uses 8
    ("01 | 03 02 01 01", "body.zk_migration_ready"),                               # bool in 2 bytes
    ("01 | 63 05 01 02", "body._tagged_fields"),                                   # unknown tag overruns
    ("02 | 01 08 00 00 00 00 00 00 00 05", "body._tagged_fields"),                 # 2 tags, 1 present
    ("01 | 00 02 05 00", "body.supported_features"),                               # array of 4 in 2 bytes
])
def test_tagged_field_size_must_match(tags, path):
    frame = API_VERSIONS_V3_PREFIX + h(tags)
    for decode in (lambda d: kp.decode_response(d, 18, 3), lambda d: kp.annotate_response(d, 18, 3)):
        with pytest.raises(DecodeError) as info:
            decode(frame)
        assert info.value.path == path
        _assert_located(info.value, frame)


def test_well_formed_tags_decode():
    frame = API_VERSIONS_V3_PREFIX + h("02 | 01 08 00 00 00 00 00 00 00 05 | 63 02 ab cd")
    resp = kp.decode_response(frame, 18, 3)
    assert resp.body.finalized_features_epoch == 5
    assert resp.body.unknown_tagged_fields == ((0x63, b"\xab\xcd"),)
    assert kp.encode_response(resp) == frame


# ----------------------------------------------------------------------------------- API keys and versions
@pytest.mark.parametrize("key", [-1, 93, 999, 0x7FFF])
def test_unknown_api_key(key):
    frame = struct.pack(">hhih", key, 0, 1, -1)
    for decode in (kp.decode_request, kp.annotate_request):
        with pytest.raises(DecodeError) as info:
            decode(frame)
        assert not isinstance(info.value, UnsupportedVersionError)
        assert info.value.path == "header.request_api_key" and info.value.offset == 0
    with pytest.raises(DecodeError):
        kp.decode_response(b"\x00\x00\x00\x01", key, 0)


@pytest.mark.parametrize("version", [5, 6, 127, 0x7FFF])
def test_unsupported_api_versions_version_keeps_the_header(version):
    # A client newer than the broker: the header (v2, because ApiVersions >= 3 is flexible) still decodes, so
    # the broker can answer with the v0-format UNSUPPORTED_VERSION reply carrying the correlation id.
    frame = struct.pack(">hhi", 18, version, 7) + h('00 07 "rdkafka" 00') + h('0a "librdkafka" 05 "2.16" 00 ff')
    for decode in (kp.decode_request, kp.annotate_request):
        with pytest.raises(UnsupportedVersionError) as info:
            decode(frame)
        err = info.value
        assert (err.api_key, err.api_version) == (18, version)
        assert err.header.correlation_id == 7 and err.header.client_id == "rdkafka"
        assert err.path == "header.request_api_version" and err.offset == 2
    Resp = kp.response_class(18)
    reply = kp.make_response(Resp(error_code=kp.ErrorCode.UNSUPPORTED_VERSION,
                                  api_keys=(Resp.ApiVersion(api_key=18, min_version=0, max_version=2),)),
                             api_version=0, correlation_id=err.header.correlation_id)
    assert kp.size_prefixed(kp.encode_response(reply)) == \
        h("00 00 00 10 | 00 00 00 07 | 00 23 | 00 00 00 01 | 00 12 00 00 00 02")


@pytest.mark.parametrize("key,version", [(0, 14), (0, -1), (3, 14), (1, 19), (4, 8), (7, 4), (17, -1)])
def test_unsupported_versions(key, version):
    hv = 2 if version >= 0 and kp.request_schema(key).is_flexible(version) else 1
    frame = struct.pack(">hhi", key, version, 3) + b"\x00\x00" + (b"\x00" if hv == 2 else b"")
    with pytest.raises(UnsupportedVersionError) as info:
        kp.decode_request(frame + b"\x00" * 8)
    assert info.value.header.correlation_id == 3 and info.value.api_version == version


@S.needs_specs
def test_unsupported_response_version_is_a_decode_error():
    frame = response_frame(18, 4)
    for decode in (kp.decode_response, kp.annotate_response):
        with pytest.raises(UnsupportedVersionError) as info:
            decode(frame, 18, 5)
        assert info.value.header.correlation_id == 5


@S.needs_specs
def test_short_frames():
    for data in (b"", b"\x00", b"\x00\x12\x00"):
        with pytest.raises(DecodeError):
            kp.decode_request(data)
        with pytest.raises(DecodeError):
            kp.annotate_request(data)
    with pytest.raises(DecodeError) as info:
        kp.annotate_request(b"\x00\x00", size_prefix=True)
    assert info.value.path == "size"
    frame = request_frame(18, 3)
    with pytest.raises(DecodeError) as info:
        kp.annotate_request(struct.pack(">i", len(frame) + 1) + frame, size_prefix=True)
    assert info.value.path == "size"


# ------------------------------------------------------------------------------------------------ framing
def test_invalid_receive_sizes():
    for size in (-1, -(2**31)):
        with pytest.raises(kp.InvalidReceiveError) as info:
            kp.FrameReader().feed(struct.pack(">i", size))
        assert str(info.value.reason) == f"Invalid receive (size = {size})"
        assert info.value.size == size
    with pytest.raises(kp.InvalidReceiveError) as info:
        kp.FrameReader().feed(struct.pack(">i", kp.DEFAULT_MAX_FRAME_BYTES + 1))
    assert info.value.reason == "Invalid receive (size = 104857601 larger than 104857600)"
    assert kp.DEFAULT_MAX_FRAME_BYTES == 104857600
    # the largest allowed size is accepted (the reader then waits for the bytes)
    reader = kp.FrameReader(max_size=10)
    assert reader.feed(struct.pack(">i", 10) + b"x" * 9) == [] and reader.expected_size == 10
    assert reader.feed(b"y") == [b"x" * 9 + b"y"]
    with pytest.raises(kp.InvalidReceiveError) as info:
        kp.FrameReader(max_size=10).feed(struct.pack(">i", 11))
    assert info.value.reason == "Invalid receive (size = 11 larger than 10)"
    assert isinstance(info.value, DecodeError)


def test_frames_before_a_bad_size_are_not_lost():
    stream = kp.size_prefixed(b"one") + kp.size_prefixed(b"two") + b"\xff\xff\xff\xff"
    with pytest.raises(kp.InvalidReceiveError) as info:
        kp.FrameReader().feed(stream)
    assert info.value.frames == (b"one", b"two")
    reader, got = kp.FrameReader(), []
    with pytest.raises(kp.InvalidReceiveError) as info:
        for b in stream:
            got += reader.feed(bytes([b]))
    assert got == [b"one", b"two"] and info.value.frames == ()


def test_frame_reader_receiving_in_place_matches_feed():
    """get_buffer/buffer_updated (recv_into) cut a stream into the same frames as feed(), however it arrives."""
    import random

    rng = random.Random(7)
    frames = [rng.randbytes(rng.choice((0, 3, 100, 70_000, 200_000))) for _ in range(40)]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    for _ in range(20):
        reader, got, pos = kp.FrameReader(), [], 0
        while pos < len(stream):
            target = reader.get_buffer()
            n = min(len(target), rng.choice((1, 4, 1000, 65536, 300_000)), len(stream) - pos)
            target[:n] = stream[pos:pos + n]
            pos += n
            got.extend(bytes(f) for f in reader.buffer_updated(n))
        assert got == frames
        assert reader.buffered == 0
    fed, pos = kp.FrameReader(), 0
    out = []
    while pos < len(stream):
        n = rng.choice((1, 7, 5000, 100_000))
        out.extend(fed.feed(stream[pos:pos + n]))
        pos += n
    assert out == frames and all(type(f) is bytes for f in out)
