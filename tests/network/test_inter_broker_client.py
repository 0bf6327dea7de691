"""The inter-broker client: its response reader (each frame straight into a buffer of its announced size), and a
cancelled send that leaves nothing unhandled on the loop."""
import asyncio
import gc
import struct

from kafkalab.network.inter_broker_client import InterBrokerConnection, _ResponseProtocol


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


def test_a_cancelled_send_whose_round_trip_fails_anyway_reports_nothing_unhandled():
    """asyncio.wait_for (3.11) may let the inner round trip end with the connection's error rather than the
    cancellation (a connect that fails as the sender is cancelled, at a broker's shutdown): that error must not
    surface as "Task exception was never retrieved" on the broker's loop."""
    class FailsWhenCancelled(InterBrokerConnection):
        async def _round_trip(self, api_key, api_version, body):
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                raise ConnectionRefusedError("connect call failed") from None

    unhandled = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unhandled.append(context))
        connection = FailsWhenCancelled("127.0.0.1", 9, client_id="0")
        send = asyncio.ensure_future(connection.send(27, 1, None))
        await asyncio.sleep(0)
        send.cancel()
        try:
            await send
        except (asyncio.CancelledError, ConnectionRefusedError):
            pass
        del send, connection
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0)
    asyncio.run(main())
    assert [c.get("message") for c in unhandled] == []
