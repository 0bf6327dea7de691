"""One connection to one broker: correlation ids, requests in flight in order, ApiVersions, login, timeouts.

Theory of operation
-------------------
A :class:`BrokerConnection` is what the :class:`~.network_client.NetworkClient` keeps per broker (there is no
pool: a broker answers the requests of one connection strictly in order). Opening it connects (with TLS when
the client has an SSL context), starts one reader task, sends ApiVersions (again at the broker's version after
UNSUPPORTED_VERSION) and, on SASL listeners, logs in; only then is it *ready*. Each request gets the next
``int32`` correlation id and joins the in-flight queue (at most ``max.in.flight.requests.per.connection``);
each response must answer the oldest request still in flight, or the connection is failed. A request not
answered within its timeout closes the connection, failing it with REQUEST_TIMED_OUT and every other in-flight
request with NETWORK_EXCEPTION. With a SASL session lifetime (KIP-368) the connection logs in again, alone on
the wire, once 85-95 % of it has passed. Every frame written or read, and the connection's opening and
closing, is reported to the client's metrics (:mod:`.selector_metrics`); every finished exchange to its trace.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/InFlightRequests.java`` and the per-connection parts
of ``NetworkClient.java`` and ``common/network/KafkaChannel.java``.
"""
from __future__ import annotations

import asyncio
import collections
import importlib.metadata
import ssl
import struct
from typing import TYPE_CHECKING, Optional

from kafkalab.clients.api_versions import NodeApiVersions, client_range
from kafkalab.clients.errors import NetworkException, RequestTimedOut, SslAuthenticationException
from kafkalab.clients.tracing import TraceEvent
from kafkalab.protocol import (ApiKey, DecodeError, ErrorCode, KafkaProtocolError, decode_response,
                               encode_request, make_request, request_class)
from kafkalab.security.sasl_client import SaslClientAuthenticator

if TYPE_CHECKING:
    from kafkalab.clients.network_client import NetworkClient

__all__ = ["BrokerConnection", "KAFKALAB_VERSION", "MAX_RESPONSE_BYTES"]

try:
    KAFKALAB_VERSION = importlib.metadata.version("kafkalab")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    KAFKALAB_VERSION = "0"

_SIZE = struct.Struct(">i")
_CORR_ERR = struct.Struct(">ih")
MAX_RESPONSE_BYTES = 100 * 1024 * 1024



class _InFlight:
    __slots__ = ("correlation_id", "api_key", "api_version", "future", "sent_at", "request", "frame")

    def __init__(self, correlation_id, api_key, api_version, future, sent_at, request, frame):
        self.correlation_id, self.api_key, self.api_version = correlation_id, api_key, api_version
        self.future, self.sent_at, self.request, self.frame = future, sent_at, request, frame


class BrokerConnection:
    """One TCP connection to one broker: correlation ids, in-flight requests in order, a reader task."""

    def __init__(self, client: "NetworkClient", node_id: int, host: str, port: int):
        self.client = client
        self.node_id, self.host, self.port = node_id, host, port
        self.max_in_flight = client.max_in_flight
        self.in_flight: collections.deque[_InFlight] = collections.deque()
        self._slots = asyncio.Semaphore(self.max_in_flight)
        self._next_corr = 0
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._read_task: Optional[asyncio.Task] = None
        self.api_versions: Optional[NodeApiVersions] = None
        self.closed = False
        self.close_reason: Optional[str] = None
        self.reauthenticate_at_ms: Optional[float] = None   # KIP-368: when to log in again on this connection
        self._reauthenticating = False
        self.authentications = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ready(self) -> bool:
        return self.api_versions is not None and not self.closed

    def has_room(self) -> bool:
        return self.ready and len(self.in_flight) < self.max_in_flight and not self._slots.locked()

    def __repr__(self) -> str:
        return f"BrokerConnection(node {self.node_id} {self.address}, in flight {len(self.in_flight)})"

    # -- opening ----------------------------------------------------------------------------------------------
    async def open(self, setup_timeout_ms: float) -> None:
        try:
            tls = self.client.ssl_context
            self._reader, self._writer = await self.client.waits.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=tls, server_hostname=self.host if tls else None),
                setup_timeout_ms)
        except ssl.SSLError as e:       # the handshake failed: an untrusted certificate, a wrong host name...
            self.closed = True
            raise SslAuthenticationException(f"SSL handshake failed with node {self.node_id} at {self.address}: "
                                             f"{e.reason or e}") from e
        except (OSError, asyncio.TimeoutError) as e:
            self.closed = True
            raise NetworkException(f"cannot connect to node {self.node_id} at {self.address}: "
                                   f"{e or 'timeout'}") from e
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        self.client.selector_metrics.record_connection_created(self.node_id)
        versions = await self._negotiate()
        if self.client.login is not None:
            await self._authenticate()
        self.api_versions = versions   # ready: ordinary requests may go

    async def _authenticate(self) -> None:
        """SaslHandshake v1 + SaslAuthenticate until the mechanism completes (raises the broker's error)."""
        login = self.client.login
        auth = SaslClientAuthenticator(login.mechanism, login.username, login.password)
        _key, version, body = auth.handshake_request()
        auth.on_handshake_response((await self._exchange(body, version)).body)
        while (request := auth.next_request()) is not None:
            _key, version, body = request
            auth.on_authenticate_response((await self._exchange(body, version)).body)
        self.authentications += 1
        delay = auth.reauthentication_delay_ms()
        self.reauthenticate_at_ms = None if delay is None else self.client.now_ms() + delay

    async def _maybe_reauthenticate(self) -> None:
        """KIP-368: once the moment has come, wait for the requests in flight and log in again alone."""
        if self.reauthenticate_at_ms is None or self._reauthenticating or \
                self.client.now_ms() < self.reauthenticate_at_ms:
            return
        self._reauthenticating = True
        taken = 0
        try:
            for _ in range(self.max_in_flight):
                await self._slots.acquire()
                taken += 1
            await self._authenticate()
        except Exception as e:
            self.close(f"re-authentication failed: {e}")
            raise
        finally:
            for _ in range(taken):
                self._slots.release()
            self._reauthenticating = False

    async def _exchange(self, body, api_version: int):
        """One request of the login, outside the in-flight slots (nothing else is on the wire meanwhile)."""
        return await self.send(body, api_version, _login=True)

    async def _negotiate(self) -> NodeApiVersions:
        """ApiVersions at our highest version; on UNSUPPORTED_VERSION, again at the broker's (or v0)."""
        version = client_range(ApiKey.API_VERSIONS)[1]
        body = request_class(ApiKey.API_VERSIONS)(client_software_name="kafkalab",
                                                  client_software_version=KAFKALAB_VERSION)
        for _ in range(3):
            resp = await self.send(body, version)
            if resp.body.error_code == ErrorCode.UNSUPPORTED_VERSION:
                offered = {k.api_key: k.max_version for k in resp.body.api_keys}
                version = min(offered.get(ApiKey.API_VERSIONS, 0), version - 1 if version else 0)
                continue
            if resp.body.error_code:
                raise KafkaProtocolError(resp.body.error_code, f"ApiVersions to node {self.node_id} failed")
            return NodeApiVersions.from_response(resp.body, f"broker {self.node_id} at {self.address}")
        raise NetworkException(f"node {self.node_id} kept answering ApiVersions with UNSUPPORTED_VERSION")

    def version_for(self, api_key: int, low: Optional[int] = None, high: Optional[int] = None) -> int:
        return self.api_versions.latest_usable_version(api_key, low, high)

    # -- sending ----------------------------------------------------------------------------------------------
    async def send(self, body, api_version: Optional[int] = None, *, expect_response: bool = True,
                   timeout_ms: Optional[float] = None, _login: bool = False):
        """Send one request and wait for its response (None when ``expect_response`` is False)."""
        if self.closed:
            raise NetworkException(f"connection to node {self.node_id} is closed ({self.close_reason})")
        api_key = body.API_KEY
        if not _login:
            await self._maybe_reauthenticate()
        if api_version is None:
            api_version = self.version_for(api_key)
        if not _login:
            await self._slots.acquire()
        released = _login
        try:
            if self.closed:
                raise NetworkException(f"connection to node {self.node_id} is closed ({self.close_reason})")
            corr = self._next_corr
            self._next_corr = (self._next_corr + 1) & 0x7FFFFFFF
            request = make_request(body, api_version=api_version, correlation_id=corr,
                                   client_id=self.client.client_id)
            frame = encode_request(request)
            sent_at = self.client.clock()
            self._writer.write(_SIZE.pack(len(frame)) + frame)
            self.client.selector_metrics.record_request_sent(self.node_id, len(frame) + 4)
            if not expect_response:
                self._slots.release()
                released = True
                self.client.trace(TraceEvent(self.client.client_id, self.node_id, self.address, corr, api_key,
                                             api_version, request, frame, sent_at=sent_at))
                if self._writer.transport.get_write_buffer_size() > 1 << 20:
                    await self._writer.drain()
                return None
            fut = asyncio.get_running_loop().create_future()
            self.in_flight.append(_InFlight(corr, api_key, api_version, fut, sent_at, request, frame))
            if self._writer.transport.get_write_buffer_size() > 1 << 20:
                await self._writer.drain()
            timeout = self.client.request_timeout_ms if timeout_ms is None else timeout_ms
            if not await self.client.waits.done(fut, timeout):      # decided by the client's Time
                self.close(f"request {request.api_name} corr={corr} timed out after {timeout:.0f} ms",
                           timed_out=corr)
            return await fut          # the answer, or the RequestTimedOut / NetworkException set by close()
        finally:
            if not released:
                self._slots.release()

    # -- receiving --------------------------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        reader = self._reader
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                if size < 4 or size > MAX_RESPONSE_BYTES:
                    raise DecodeError(f"response size {size} out of range", path="size", offset=0)
                frame = await reader.readexactly(size)
                self.client.selector_metrics.record_response_received(self.node_id, size + 4)
                self._complete(frame)
        except asyncio.CancelledError:
            raise
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            self.close(f"connection lost: {type(e).__name__}")
        except Exception as e:  # noqa: BLE001 -- any bad frame fails the connection, never the loop
            self.close(f"{type(e).__name__}: {e}")

    def _complete(self, frame: bytes) -> None:
        if not self.in_flight:
            raise DecodeError("a response arrived but no request is in flight", path="header.correlation_id",
                              offset=0)
        entry = self.in_flight[0]
        corr = _CORR_ERR.unpack_from(frame, 0)[0]
        if corr != entry.correlation_id:
            raise DecodeError(f"correlation id {corr} does not match the oldest request in flight "
                              f"({entry.correlation_id})", path="header.correlation_id", offset=0)
        self.in_flight.popleft()
        version = entry.api_version
        if entry.api_key == ApiKey.API_VERSIONS and version > 0 and len(frame) >= 6 and \
                _CORR_ERR.unpack_from(frame, 0)[1] == ErrorCode.UNSUPPORTED_VERSION:
            version = 0                     # KIP-511: the broker answered in the v0 body format
        response = decode_response(frame, entry.api_key, version)
        self.client.trace(TraceEvent(self.client.client_id, self.node_id, self.address, corr, entry.api_key,
                                     entry.api_version, entry.request, entry.frame, response, frame,
                                     entry.sent_at, self.client.clock()))
        if not entry.future.done():
            entry.future.set_result(response)

    def close(self, reason: str = "closed", *, timed_out: Optional[int] = None) -> None:
        """Close the socket and fail everything in flight (REQUEST_TIMED_OUT / NETWORK_EXCEPTION)."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
        if self._writer is not None:
            self._writer.close()
            if self._read_task is not None:         # it was connected: Java counts only those
                self.client.selector_metrics.record_connection_closed(self.node_id)
        while self.in_flight:
            entry = self.in_flight.popleft()
            if entry.correlation_id == timed_out:
                err: Exception = RequestTimedOut(f"node {self.node_id}: {reason}")
            else:
                err = NetworkException(f"node {self.node_id} disconnected before answering "
                                       f"{entry.request.api_name} corr={entry.correlation_id}: {reason}")
            self.client.trace(TraceEvent(self.client.client_id, self.node_id, self.address, entry.correlation_id,
                                         entry.api_key, entry.api_version, entry.request, entry.frame,
                                         sent_at=entry.sent_at, received_at=None, error=str(err)))
            if not entry.future.done():
                entry.future.set_exception(err)
        self.client._connection_closed(self)
