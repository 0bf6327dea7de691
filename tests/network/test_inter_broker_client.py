"""The inter-broker client's response reader: each frame straight into a buffer of its announced size."""
import struct

from kafkalab.network.inter_broker_client import _ResponseProtocol


def _feed(proto, payload: bytes):
    data = struct.pack(">i", len(payload)) + payload
    while data:
        buf = proto.get_buffer(-1)
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        proto.buffer_updated(n)
        data = data[n:]
    return proto._frames.popleft()


def test_a_lying_size_closes_before_anything_is_allocated():
    class Transport:
        closed = False

        def close(self):
            self.closed = True
    proto = _ResponseProtocol(max_bytes=1024)
    proto.connection_made(Transport())
    buf = proto.get_buffer(-1)
    buf[:4] = struct.pack(">i", 1 << 30)
    proto.buffer_updated(4)
    assert proto.transport.closed and proto._frame is None and proto._error is not None


def test_frames_arrive_whole_whatever_the_chunking():
    proto = _ResponseProtocol(max_bytes=1 << 20)
    frames = [_feed(proto, b"x" * n) for n in (0, 3, 70_000)]
    assert [len(f) for f in frames] == [0, 3, 70_000] and bytes(frames[2][:2]) == b"xx"
