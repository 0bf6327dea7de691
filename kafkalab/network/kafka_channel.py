"""One client connection on the broker's side: bytes in, complete frames out, responses written back.

Theory of operation
-------------------
A :class:`KafkaChannel` is the asyncio protocol of one accepted socket. The socket receives straight into the
buffers of a :class:`~kafkalab.protocol.FrameReader` (an int32 size, then that many bytes; a large frame gets a
buffer of its own once its size is known, taken from the broker's memory pool). Complete frames wait in
``ready`` for the connection's processor coroutine (:class:`~kafkalab.network.socket_server.SocketServer`),
which also writes the responses through ``write``/``drain``/``close``, like an ``asyncio.StreamWriter``.

Muting: while a complete frame waits for the processor, reading is paused, so further requests stay in the
client's socket buffer and requests on one connection are handled one at a time, in order. Reading also
pauses while the memory pool has no room for the next request (``queued.max.request.bytes``); the host calls
:meth:`KafkaChannel.retry_memory` when memory is released.

The channel knows its host only through :class:`ChannelHost` -- the settings it reads and the four calls it
makes (start a processor, report memory pressure, give memory back, report the close) -- so it never reads the
socket server's private state.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/network/KafkaChannel.java`` (mute/unmute, the
principal, the authenticator of the connection) and the receive side of ``Selector.java``.
"""
from __future__ import annotations

import asyncio
import collections
import logging
from time import monotonic
from typing import Callable, Mapping, Optional, Protocol

from kafkalab.common.memory_pool import MemoryPool
from kafkalab.network.endpoint import EndPoint
from kafkalab.network.request_channel import ANONYMOUS
from kafkalab.network.response_send import ResponseSendStats, SendCounters
from kafkalab.protocol import FrameReader, InvalidReceiveError
from kafkalab.security.sasl_server import SaslServerAuthenticator

__all__ = ["KafkaChannel", "ChannelHost"]

log = logging.getLogger("kafkalab.network.SocketServer")


class ChannelHost(Protocol):
    """What a :class:`KafkaChannel` needs from the socket server that accepted it."""

    name: str
    max_request_bytes: int
    memory_pool: MemoryPool
    paused: bool
    authenticators: Mapping[str, Callable[[], SaslServerAuthenticator]]
    ssl_factories: Mapping
    send_stats: ResponseSendStats

    def spawn_processor(self, ep: EndPoint, conn: "KafkaChannel") -> None: ...

    def muted_for_memory(self, conn: "KafkaChannel") -> None: ...

    def release_memory(self, size_bytes: int) -> None: ...

    def connection_closed(self, conn: "KafkaChannel") -> None: ...


class KafkaChannel(asyncio.BufferedProtocol):
    """One client connection: the socket receives into the :class:`FrameReader`'s buffers; complete frames
    wait here for the processor coroutine, which also writes the responses (``write``/``drain``/``close``,
    like an ``asyncio.StreamWriter``).

    Muting: while a complete frame waits for the processor, reading is paused, so further requests stay in
    the client's socket buffer (Kafka's ``Selector.mute``). Reading also pauses while the memory pool has no
    room for the next request (``queued.max.request.bytes``): the server tries again when memory is released.
    Every frame handed to the processor holds its size in the pool until :meth:`ChannelHost.release_memory`."""

    def __init__(self, server: ChannelHost, ep: EndPoint, ip: str = "?"):
        self.server, self.ep, self.ip = server, ep, ip
        self.transport: Optional[asyncio.Transport] = None
        self.frames = FrameReader(server.max_request_bytes, writable=True,    # Produce batches are patched in place
                                  pool=None if server.memory_pool is MemoryPool.NONE else server.memory_pool)
        self.ready: collections.deque = collections.deque()
        self.error: Optional[InvalidReceiveError] = None   # a bad size prefix: close once ready is served
        self.eof = False
        self.lost: Optional[Exception] = None
        self._waiter: Optional[asyncio.Future] = None
        self._drain_waiter: Optional[asyncio.Future] = None
        self._paused_writing = False
        self.last_activity = monotonic()   # bytes received; the idle clock (connections.max.idle.ms) restarts
        self.principal: str = ANONYMOUS     # who the peer is: a client certificate's name, a SASL user
        self.tls = False                    # a TLS transport: never sendfile past it
        #: this listener's count of bytes written from memory (``write``) and sent with sendfile
        self.send_counters: SendCounters = server.send_stats.listener(ep.listener_name)
        factory = server.authenticators.get(ep.listener_name)
        self.authenticator: Optional[SaslServerAuthenticator] = factory() if factory is not None else None
        if self.authenticator is not None:   # frames before the login are capped by sasl.server.max.receive.size
            self.frames.max_size = self.authenticator.max_receive_size

    # ---------------------------------------------------------------------- protocol callbacks (the loop)
    def connection_made(self, transport) -> None:
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:          # the TLS handshake is done (asyncio completes it first)
            self.tls = True
            if not self._authenticate_certificate(ssl_object):
                transport.close()
                return
        if self.server.paused:
            transport.pause_reading()
        self.server.spawn_processor(self.ep, self)

    def _authenticate_certificate(self, ssl_object) -> bool:
        """On an SSL listener the principal is the client certificate's (mapped) name; on SASL_SSL it is
        decided by SASL later. False when no ``ssl.principal.mapping.rules`` rule applies (Kafka fails the
        authentication and closes the connection)."""
        factory = self.server.ssl_factories.get(self.ep.listener_name)
        if factory is None or self.ep.security_protocol != "SSL":
            return True
        try:
            self.principal = factory.principal(ssl_object)
        except ValueError as e:
            peer = self.transport.get_extra_info("peername") or ("?", 0)
            log.info("%s: failed authentication with %s (SSL principal: %s)", self.server.name, peer[0], e)
            return False
        return True

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_activity = monotonic()
        try:
            done = self.frames.buffer_updated(nbytes)
        except InvalidReceiveError as e:
            self.ready.extend(e.frames)
            self.error = e
            self.transport.pause_reading()
            self._wake()
            return
        self._received(done)

    def _received(self, done: list) -> None:
        if done:
            self.ready.extend(done)
            self._wake()
        if self.frames.memory_wanted:
            self.server.muted_for_memory(self)
        if done or self.frames.memory_wanted:
            self.transport.pause_reading()   # mute until the processor has taken every complete frame

    def retry_memory(self) -> bool:
        """Memory was released: try to allocate the next frame again; True once it no longer waits for memory."""
        if self.transport is None or self.transport.is_closing():
            return True
        self._received(self.frames.retry_allocation())
        if not self.frames.memory_wanted:
            self.maybe_resume()
            return True
        return False

    def maybe_resume(self) -> None:
        """Read again unless a complete frame waits, memory is short, the stream ended or the server is paused."""
        if (not self.ready and self.error is None and not self.eof and not self.server.paused
                and not self.frames.memory_wanted and self.transport is not None and not self.transport.is_closing()):
            self.transport.resume_reading()

    def release_all(self) -> None:
        """The connection is gone: the frames nobody will process and a half-received one give back their memory."""
        while self.ready:
            self.server.release_memory(len(self.ready.popleft()))
        self.frames.release_pending()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc) -> None:
        self.eof = True
        self.lost = exc
        self.server.connection_closed(self)
        self._wake()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_exception(ConnectionResetError("connection lost"))

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # ---------------------------------------------------------------------- used by the processor
    async def next_frame(self, timeout: Optional[float]):
        """The next complete frame; None at end of stream. Raises the InvalidReceiveError of a bad size
        (after the frames before it), asyncio.TimeoutError when idle for ``timeout`` seconds: nothing received
        for that long since this call (the response before it was just written) or since the last bytes, so a
        request that arrives slowly keeps its connection alive, as every read does in Kafka's Selector."""
        self.last_activity = max(self.last_activity, monotonic())
        while not self.ready:
            if self.error is not None:
                raise self.error
            if self.eof:
                if self.lost is not None and not isinstance(self.lost, asyncio.CancelledError):
                    raise ConnectionResetError(str(self.lost))
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                wait = None if timeout is None else max(0.0, self.last_activity + timeout - monotonic())
                await asyncio.wait_for(self._waiter, wait)
            except asyncio.TimeoutError:
                if monotonic() - self.last_activity >= timeout:
                    raise
            finally:
                self._waiter = None
        frame = self.ready.popleft()
        self.maybe_resume()
        return frame

    def get_extra_info(self, name: str, default=None):
        return self.transport.get_extra_info(name, default)

    def write(self, data) -> None:
        """Bytes from the process's memory to the transport (counted as copied: ``send_counters``)."""
        self.send_counters.copied(len(data))
        self.transport.write(data)

    async def drain(self) -> None:
        if self.transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost run; a write on a closed transport is dropped
            if self.lost is not None or self.eof:
                raise ConnectionResetError("connection lost")
        if self._paused_writing:
            self._drain_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._drain_waiter
            finally:
                self._drain_waiter = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
