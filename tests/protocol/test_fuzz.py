"""Fuzzing: whatever bytes arrive, the codec decodes them or raises DecodeError -- and the generated fast
codec and the annotated reference decoder always agree (same object, or both a DecodeError of the same type).

Inputs are valid frames from every API (built from the JSON by ``wire.py``) mutated by Hypothesis: bit flips,
byte inserts and deletes, interesting bytes, and length-field edits (-1, -2, 0x7fff, 2^31-1, ...).
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab import protocol as kp
from kafkalab.protocol import DecodeError

from . import specs as S
from .frames import corpus

FUZZ = settings(max_examples=2500, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

INTERESTING_INTS = (-1, -2, 0, 1, 0x7F, 0x80, 0x7FFF, 0x8000, 0xFFFF, 2**31 - 1, -(2**31))

mutation = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.floats(0, 1, exclude_max=True), st.integers(1, 4)),
    st.tuples(st.just("set"), st.floats(0, 1, exclude_max=True), st.sampled_from((0, 1, 0x7F, 0x80, 0xFF))),
    st.tuples(st.just("int32"), st.floats(0, 1, exclude_max=True), st.sampled_from(INTERESTING_INTS)),
    st.tuples(st.just("int16"), st.floats(0, 1, exclude_max=True), st.sampled_from(INTERESTING_INTS)),
    st.tuples(st.just("varint"), st.floats(0, 1, exclude_max=True),
              st.sampled_from((b"\x00", b"\x80\x01", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08",
                               b"\xff\xff\xff\xff\xff\x01"))),
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True), st.just(0)),
)


def mutate(data: bytes, ops) -> bytes:
    buf = bytearray(data)
    for op, where, arg in ops:
        i = min(int(where * len(buf)), max(len(buf) - 1, 0))
        if op == "flip" and buf:
            buf[i] ^= 1 << arg
        elif op == "insert":
            buf.insert(i, arg)
        elif op == "delete":
            del buf[i:i + arg]
        elif op == "set" and buf:
            buf[i] = arg
        elif op == "int32":
            buf[i:i + 4] = struct.pack(">i", arg if -(2**31) <= arg < 2**31 else arg - 2**32)
        elif op == "int16":
            buf[i:i + 2] = struct.pack(">H", arg & 0xFFFF)
        elif op == "varint":
            buf[i:i + 1] = arg
        elif op == "truncate":
            del buf[i:]
    return bytes(buf)


def outcome(fn, data):
    try:
        return "ok", fn(data)
    except DecodeError as e:
        assert e.offset is None or 0 <= e.offset <= len(data) + 4, (e, len(data))
        assert e.path, e
        return "error", type(e)
    # any other exception propagates and fails the test: a codec bug


def check_agreement(kind: str, key: int, version: int, data: bytes) -> None:
    if kind == "request":
        fast = outcome(kp.decode_request, data)
        slow = outcome(lambda d: kp.annotate_request(d).message, data)
        loose = kp.annotate_request(data, strict=False)
    else:
        fast = outcome(lambda d: kp.decode_response(d, key, version), data)
        slow = outcome(lambda d: kp.annotate_response(d, key, version).message, data)
        loose = kp.annotate_response(data, key, version, strict=False)
    assert fast[0] == slow[0], (fast, slow, data.hex())
    assert fast[1] == slow[1], (fast, slow, data.hex())
    if fast[0] == "ok":
        assert loose.error is None and loose.message == fast[1]
        # what decoded can be encoded again, and that encoding is canonical (a fixed point). It need not equal
        # the input: a peer may send unknown tags out of order or a bool as 0x02; we write them canonically.
        if kind == "request":
            canon = kp.encode_request(fast[1])
            assert kp.encode_request(kp.decode_request(canon)) == canon
        else:
            canon = kp.encode_response(fast[1])
            assert kp.encode_response(kp.decode_response(canon, key, version)) == canon
    else:
        assert loose.message is None and type(loose.error) is fast[1]


CORPUS = corpus() if S.HAVE_SPECS else ()


@S.needs_specs
@FUZZ
@given(st.integers(0, max(len(CORPUS) - 1, 0)), st.lists(mutation, min_size=1, max_size=4))
def test_mutated_frames(index, ops):
    kind, key, version, frame = CORPUS[index]
    check_agreement(kind, key, version, mutate(frame, ops))


@S.needs_specs
@settings(FUZZ, max_examples=300)
@given(st.binary(max_size=64), st.sampled_from(sorted({(c[1], c[2]) for c in CORPUS})))
def test_random_bytes(data, key_version):
    key, version = key_version
    check_agreement("request", key, version, data)
    check_agreement("request", key, version, struct.pack(">hh", key, version) + data)
    check_agreement("response", key, version, data)


@S.needs_specs
@pytest.mark.parametrize("index", range(0, len(CORPUS), 7))
def test_every_single_bit_flip_of_a_header(index):
    """Exhaustive over the first 12 bytes: API key, version, correlation id, the client id length."""
    kind, key, version, frame = CORPUS[index]
    for i in range(min(len(frame), 12)):
        for bit in range(8):
            data = bytearray(frame)
            data[i] ^= 1 << bit
            check_agreement(kind, key, version, bytes(data))


# -------------------------------------------------------------------------------------------- FrameReader
def _read_all(chunks, max_size=kp.DEFAULT_MAX_FRAME_BYTES):
    reader = kp.FrameReader(max_size)
    frames = []
    try:
        for c in chunks:
            frames += reader.feed(c)
    except kp.InvalidReceiveError as e:
        return frames + list(e.frames), e.reason
    return frames, reader.buffered


@FUZZ
@given(st.lists(st.binary(max_size=40), max_size=8), st.data(),
       st.sampled_from([None, b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x01\x00", b"\x00\x00"]))
def test_frame_reader_chunking(frames, data, tail):
    stream = b"".join(kp.size_prefixed(f) for f in frames) + (tail or b"")
    whole = _read_all([stream], max_size=200)
    one_by_one = _read_all([stream[i:i + 1] for i in range(len(stream))], max_size=200)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    pieces = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
    chunked = _read_all(pieces, max_size=200)
    assert whole == one_by_one == chunked
    assert whole[0] == frames
    if tail in (b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"):
        assert whole[1].startswith("Invalid receive (size = -")
    elif tail == b"\x00\x00\x01\x00":
        assert whole[1] == "Invalid receive (size = 256 larger than 200)"
    else:
        assert whole[1] == len(tail or b"")
