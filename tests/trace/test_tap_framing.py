"""Cut-through framing: the framer on its own (sans-IO), and the tap passing a response on before it is complete,
in front of a scripted broker that sends its responses piece by piece."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from kafkalab.protocol import (InvalidReceiveError, decode_response, encode_request, encode_response, make_request,
                               make_response, request_class, response_class, size_prefixed)
from kafkalab.trace import RawConnection
from kafkalab.trace.tap import Tap
from kafkalab.trace.tap_framing import CutThroughFramer, Forward, Frame


def _frame(correlation_id: int, body: bytes) -> bytes:
    return struct.pack(">i", correlation_id) + body


def _run(framer: CutThroughFramer, stream: bytes, chunk: int) -> tuple[bytes, list]:
    """Feed ``stream`` in pieces of ``chunk`` bytes: what was forwarded, and the frames in order."""
    forwarded, frames = bytearray(), []
    for i in range(0, len(stream), chunk):
        for step in framer.feed(stream[i:i + chunk]):
            if type(step) is Forward:
                forwarded += step.data
            else:
                frames.append(step)
    return bytes(forwarded), frames


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64, 10_000])
def test_frames_are_forwarded_as_they_arrive_and_handed_over_whole(chunk):
    bodies = [_frame(1, b"a" * 300), _frame(2, b""), b"xy", b"", _frame(3, b"b" * 5)]
    stream = b"".join(size_prefixed(b) for b in bodies)
    forwarded, frames = _run(CutThroughFramer(lambda cid: False), stream, chunk)
    assert forwarded == stream
    assert frames == [Frame(b, False) for b in bodies]


@pytest.mark.parametrize("chunk", [1, 4, 9, 10_000])
def test_held_frames_are_not_forwarded_and_keep_their_place(chunk):
    asked = []

    def hold(cid):
        asked.append(cid)
        return cid == 2
    bodies = [_frame(1, b"first"), _frame(2, b"held back"), _frame(3, b"third"), b"ab"]
    framer = CutThroughFramer(hold)
    stream = b"".join(size_prefixed(b) for b in bodies)
    steps = []
    for i in range(0, len(stream), chunk):
        steps += framer.feed(stream[i:i + chunk])
    assert asked == [1, 2, 3, None]        # once per frame; None for a frame too short to carry a correlation id
    # the stream with the held frame's place marked: what the tap sends, with the rewritten frame there
    rebuilt = b"".join(bytes(s.data) if type(s) is Forward else b"<held>" for s in steps
                       if type(s) is Forward or s.held)
    assert rebuilt == size_prefixed(bodies[0]) + b"<held>" + size_prefixed(bodies[2]) + size_prefixed(bodies[3])
    assert [s for s in steps if type(s) is Frame] == [Frame(bodies[0], False), Frame(bodies[1], True),
                                                      Frame(bodies[2], False), Frame(bodies[3], False)]


def test_an_incomplete_frame_is_described_like_the_frame_reader():
    framer = CutThroughFramer(lambda cid: False)
    assert (framer.buffered, framer.expected_size) == (0, -1)
    framer.feed(b"\x00\x00")
    assert (framer.buffered, framer.expected_size) == (2, -1)
    steps = framer.feed(b"\x00\x64" + _frame(7, b"part"))
    assert (framer.buffered, framer.expected_size) == (8, 100)
    assert b"".join(bytes(s.data) for s in steps) == b"\x00\x00\x00\x64" + _frame(7, b"part")


@pytest.mark.parametrize("size", [-1, 1001])
def test_a_bad_size_raises_with_the_steps_before_it_and_forwards_none_of_it(size):
    framer = CutThroughFramer(lambda cid: False, max_size=1000)
    good = size_prefixed(_frame(1, b"ok"))
    with pytest.raises(InvalidReceiveError) as e:
        framer.feed(good + struct.pack(">i", size) + b"rest")
    assert b"".join(bytes(s.data) for s in e.value.frames if type(s) is Forward) == good
    assert [s for s in e.value.frames if type(s) is Frame] == [Frame(_frame(1, b"ok"), False)]


# -- the tap in front of a scripted broker ------------------------------------------------------------------------
class ScriptedBroker:
    """Accepts one connection, reads ``requests`` frames, then runs ``script(sock)``."""

    def __init__(self, requests: int, script):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.server.getsockname()[1]
        self.requests, self.script = requests, script
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        sock, _ = self.server.accept()
        with sock:
            got = b""
            while got.count(b"tap-test") < self.requests:   # every request carries the client id
                got += sock.recv(65536)
            self.script(sock)
            time.sleep(0.5)
        self.server.close()


def _api_versions_request(cid: int) -> bytes:
    return encode_request(make_request(request_class(18)(client_software_name="t", client_software_version="1"),
                                       api_version=3, correlation_id=cid, client_id="tap-test"))


def _api_versions_response(cid: int, keys: int = 0) -> bytes:
    cls = response_class(18)
    body = cls(api_keys=tuple(cls.ApiVersion(api_key=k, min_version=0, max_version=1) for k in range(keys)))
    return encode_response(make_response(body, api_version=0, correlation_id=cid))


def test_the_tap_passes_a_response_on_before_its_last_byte_arrives():
    response = size_prefixed(_api_versions_response(1, keys=2000))
    released = threading.Event()

    def script(sock):
        sock.sendall(response[:-10])
        released.wait(10)                    # the rest only once the client has seen the beginning
        sock.sendall(response[-10:])
    broker = ScriptedBroker(1, script)
    with Tap(broker.address) as tap, socket.create_connection(_tap_address(tap)) as client:
        client.sendall(size_prefixed(_api_versions_request(1)))
        client.settimeout(5)
        first = client.recv(65536)           # a store-and-forward tap sends nothing before the response is whole
        released.set()
        got = first
        while len(got) < len(response):
            got += client.recv(65536)
    assert first and response.startswith(first)
    assert got == response
    assert _wait(lambda: len(tap.responses()) == 1)
    [recorded] = tap.responses()
    assert recorded.frame == response[4:] and recorded.api_name == "ApiVersions" and recorded.latency >= 0


def test_a_held_metadata_response_keeps_its_place_between_passed_through_ones():
    cls = response_class(3)
    metadata = cls(brokers=(cls.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=1, rack=None),), topics=())
    stream = b"".join([size_prefixed(_api_versions_response(1)),
                       size_prefixed(encode_response(make_response(metadata, api_version=9, correlation_id=2))),
                       size_prefixed(_api_versions_response(3))])
    broker = ScriptedBroker(3, lambda sock: sock.sendall(stream))     # all three in one piece
    metadata_request = encode_request(make_request(request_class(3)(topics=None, allow_auto_topic_creation=False),
                                                   api_version=9, correlation_id=2, client_id="tap-test"))
    with Tap(broker.address) as tap, RawConnection(_tap_address(tap)) as conn:
        conn.send(_api_versions_request(1), metadata_request, _api_versions_request(3))
        got = [conn.receive(), conn.receive(), conn.receive()]
    assert got[0] == _api_versions_response(1) and got[2] == _api_versions_response(3)
    rewritten = decode_response(got[1], 3, 9).body.brokers[0]
    assert (rewritten.host, rewritten.port) == tap.broker_ports[("127.0.0.1", 1)]
    assert _wait(lambda: len(tap.responses()) == 3)
    assert [f.correlation_id for f in tap.responses()] == [1, 2, 3]


def test_a_bad_size_from_the_broker_forwards_what_came_before_and_hangs_up():
    good = size_prefixed(_api_versions_response(1))
    broker = ScriptedBroker(1, lambda sock: sock.sendall(good + struct.pack(">i", -7) + b"junk"))
    with Tap(broker.address) as tap, RawConnection(_tap_address(tap)) as conn:
        conn.send(_api_versions_request(1))
        assert conn.receive() == good[4:]
        assert conn.receive(timeout=5) is None
    assert _wait(lambda: any(e.kind == "invalid-size" for e in tap.events))
    [bad] = [e for e in tap.events if e.kind == "invalid-size"]
    assert "size = -7" in bad.detail


def _tap_address(tap: Tap) -> tuple:
    host, port = tap.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def _wait(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
