"""One connection from a broker to another broker: how the controller and the replica fetchers talk.

Theory of operation
-------------------
Brokers speak the same protocol to each other as clients speak to them. The controller's channel to each
broker and each replica fetcher (follower -> leader) own one TCP connection to the other broker's
**inter-broker listener** and use it like a minimal client:

* frames are ``size | request header | body``, encoded with :mod:`kafkalab.protocol`;
* the request header carries the sender's ``client_id`` (the controller uses its broker id, ``"0"``; a
  fetcher ``"broker-1-fetcher-0"``) and a **correlation id** that this connection numbers from 0 on its own;
* one request is in flight at a time (Kafka's controller and fetcher clients allow one), so responses come
  back in order and the correlation id only double-checks it;
* no ApiVersions handshake: brokers of one cluster agree on versions through the inter-broker protocol
  version (Kafka creates these clients with ``discoverBrokerVersions = false``).

On a SASL inter-broker listener the connection logs in right after connecting (``sasl_login``: the mechanism
of ``sasl.mechanism.inter.broker.protocol`` with the listener's JAAS ``username``/``password``), with
SaslHandshake v1 and SaslAuthenticate (:func:`kafkalab.security.sasl_client.authenticate`); a failed login
fails the request like a refused connection. Every new connection logs in again, so a session that the
broker ends (``connections.max.reauth.ms``) costs one reconnection.

A failed or timed-out request closes the connection; the caller reconnects (and backs off) as it sees fit.
``link_check(host, port)``, when given, is asked before connecting, before each request and when a response
arrives: False means the network link is down (fault injection in ``kafkalab.cluster``), and the request fails
as a refused or dropped connection would.
``sent`` keeps the last requests (correlation id, API, version) for labs.
When the inter-broker listener speaks TLS (SSL, SASL_SSL) the connection is made with ``ssl_context``: the
broker's client-side context from that listener's ``ssl.*`` settings (its key store is the certificate it
presents when the listener asks for one).

Mirrors: the ``NetworkClient`` set-ups in ``core/src/main/scala/kafka/controller/ControllerChannelManager.scala``
and ``core/src/main/scala/kafka/server/BrokerBlockingSender.scala``.
"""
from __future__ import annotations

import asyncio
import collections
import ssl
import struct
from typing import Callable, Optional

from kafkalab.security.sasl_client import authenticate
from kafkalab.protocol import (LARGE_FRAME_BYTES, DecodeError, ReceiveBuffer, api_name, decode_response, encode_request,
                               make_request)

__all__ = ["InterBrokerConnection"]

_SIZE = struct.Struct(">i")


class _ResponseProtocol(asyncio.BufferedProtocol):
    """Receives ``size | frame`` responses straight into a buffer of the announced size (Kafka's
    ``NetworkReceive``): four bytes of size first, then one buffer of exactly that size filled by the socket itself,
    with no intermediate stream buffer to grow, copy and trim. A size below 0 or above ``max_bytes`` closes
    the connection before anything is allocated. Large responses (a follower's Fetch) go into a
    :class:`~kafkalab.protocol.ReceiveBuffer`, reused once the previous response is no longer referenced."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.transport: Optional[asyncio.Transport] = None
        self._size = bytearray(4)
        self._size_filled = 0
        self._frame: Optional[memoryview] = None
        self._filled = 0
        self._large = ReceiveBuffer()
        self._frames: collections.deque = collections.deque()
        self._waiter: Optional[asyncio.Future] = None
        self._error: Optional[BaseException] = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int):
        if self._frame is None:
            return memoryview(self._size)[self._size_filled:]
        return self._frame[self._filled:]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is None:
            self._size_filled += nbytes
            if self._size_filled < 4:
                return
            (size,) = _SIZE.unpack(self._size)
            self._size_filled = 0
            if size < 0 or size > self.max_bytes:
                self._fail(DecodeError(f"invalid response size {size}", path="size", offset=0))
                self.transport.close()
                return
            self._frame = self._large.take(size) if size >= LARGE_FRAME_BYTES else memoryview(bytearray(size))
            self._filled = 0
        else:
            self._filled += nbytes
        if self._filled == len(self._frame):
            frame, self._frame = self._frame, None
            self._frames.append(frame)
            self._wake()

    def connection_lost(self, exc) -> None:
        self._fail(ConnectionError(f"connection closed{': ' + str(exc) if exc else ''}"))

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_frame(self) -> memoryview:
        while not self._frames:
            if self._error is not None:
                raise self._error
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._frames.popleft()


def _retrieve_outcome(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()


class InterBrokerConnection:
    """A connection to ``host:port`` sending one request at a time. ``send`` returns the response body."""

    def __init__(self, host: str, port: int, *, client_id: str, request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000, max_response_bytes: int = 104857600 * 2,
                 link_check: Optional[Callable[[str, int], bool]] = None,
                 ssl_context: Optional[ssl.SSLContext] = None, sasl_login=None):
        self.link_check = link_check
        self.ssl_context = ssl_context
        self.sasl_login = sasl_login   # (mechanism, username, password) or None
        self.session_expires: Optional[float] = None   # loop time when the broker ends our SASL session
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.max_response_bytes = max_response_bytes
        self._protocol: Optional[_ResponseProtocol] = None
        self._transport: Optional[asyncio.Transport] = None
        self._next_correlation_id = 0
        self._lock: Optional[asyncio.Lock] = None
        self.sent: collections.deque = collections.deque(maxlen=1000)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "disconnected"
        return f"<InterBrokerConnection {self.client_id} -> {self.host}:{self.port} {state}>"

    @property
    def connected(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    async def connect(self) -> None:
        if self.connected:
            return
        loop = asyncio.get_running_loop()
        self._transport, self._protocol = await asyncio.wait_for(
            loop.create_connection(lambda: _ResponseProtocol(self.max_response_bytes), self.host, self.port,
                                   ssl=self.ssl_context, server_hostname=self.host if self.ssl_context else None),
            self.connect_timeout_ms / 1000.0)
        if self.sasl_login is not None:
            mechanism, username, password = self.sasl_login
            try:
                auth = await authenticate(self._exchange, mechanism, username, password)
            except BaseException:
                self.close()
                raise
            lifetime = auth.reauthentication_delay_ms()
            self.session_expires = None if lifetime is None else loop.time() + lifetime / 1000.0

    async def _exchange(self, api_key: int, api_version: int, body):
        protocol, transport = self._protocol, self._transport
        if protocol is None or transport is None:
            raise ConnectionError(f"connection to {self.host}:{self.port} closed")
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        request = make_request(body, api_version=api_version, correlation_id=correlation_id,
                               client_id=self.client_id, api_key=api_key)
        transport.write(encode_request(request, size_prefix=True))
        self.sent.append((correlation_id, api_name(api_key), api_version))
        try:
            frame = await protocol.next_frame()
        except ConnectionError as e:
            raise ConnectionError(f"connection to {self.host}:{self.port} closed") from e
        response = decode_response(frame.toreadonly(), api_key, api_version)
        if response.correlation_id != correlation_id:
            raise ConnectionError(f"correlation id {response.correlation_id} does not match request "
                                  f"{correlation_id}")
        return response.body

    async def send(self, api_key: int, api_version: int, body):
        """Send one request and wait for its response body. Raises ConnectionError / TimeoutError /
        DecodeError; the connection is closed after any failure."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            round_trip = asyncio.ensure_future(self._round_trip(api_key, api_version, body))
            # A send cancelled while connecting may see the round trip end with the connection's error rather than
            # the cancellation (asyncio.wait_for lets it win): nobody awaits it then, so read its outcome here, or
            # the loop reports "Task exception was never retrieved".
            round_trip.add_done_callback(_retrieve_outcome)
            try:
                return await asyncio.wait_for(round_trip, self.request_timeout_ms / 1000.0)
            except BaseException:
                self.close()
                raise

    def _check_link(self, what: str) -> None:
        if self.link_check is not None and not self.link_check(self.host, self.port):
            raise (ConnectionRefusedError if what == "refused" else ConnectionResetError)(
                f"link to {self.host}:{self.port} is down: connection {what}")

    async def _round_trip(self, api_key: int, api_version: int, body):
        self._check_link("refused")
        if self.session_expires is not None and asyncio.get_running_loop().time() >= self.session_expires:
            self.close()   # the broker would close it at our next request (KIP-368): log in on a new one
        await self.connect()
        body = await self._exchange(api_key, api_version, body)
        self._check_link("dropped")
        return body

    def close(self) -> None:
        if self._transport is not None:
            try:
                self._transport.close()
            except Exception:
                pass
        self._transport = self._protocol = None
        self.session_expires = None
