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

A failed or timed-out request closes the connection; the caller reconnects (and backs off) as it sees fit.
``link_check(host, port)``, when given, is asked before connecting, before each request and when a response
arrives: False means the network link is down (fault injection in ``kafkalab.testing``), and the request fails
as a refused or dropped connection would.
``sent`` keeps the last requests (correlation id, API, version) for labs.

Mirrors: the ``NetworkClient`` set-ups in ``core/src/main/scala/kafka/controller/ControllerChannelManager.scala``
and ``core/src/main/scala/kafka/server/BrokerBlockingSender.scala``.
"""
from __future__ import annotations

import asyncio
import collections
import struct
from typing import Callable, Optional

from kafkalab.protocol import (DecodeError, api_name, decode_response, encode_request, make_request)

__all__ = ["InterBrokerConnection"]

_SIZE = struct.Struct(">i")
#: The stream reader's buffer limit. asyncio's default (64 KiB) pauses the socket whenever 128 KiB are
#: buffered, so a follower's 1 MB fetch response arrived in ~8 pause/resume rounds (two epoll syscalls and
#: an event-loop turn each); with 4 MiB a whole response is read straight through.
_READ_LIMIT = 4 * 1024 * 1024


class InterBrokerConnection:
    """A connection to ``host:port`` sending one request at a time. ``send`` returns the response body."""

    def __init__(self, host: str, port: int, *, client_id: str, request_timeout_ms: int = 30000,
                 connect_timeout_ms: int = 10000, max_response_bytes: int = 104857600 * 2,
                 link_check: Optional[Callable[[str, int], bool]] = None):
        self.link_check = link_check
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.max_response_bytes = max_response_bytes
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._next_correlation_id = 0
        self._lock: Optional[asyncio.Lock] = None
        self.sent: collections.deque = collections.deque(maxlen=1000)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "disconnected"
        return f"<InterBrokerConnection {self.client_id} -> {self.host}:{self.port} {state}>"

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self) -> None:
        if self.connected:
            return
        self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port,
                                                                                        limit=_READ_LIMIT),
                                                            self.connect_timeout_ms / 1000.0)

    async def send(self, api_key: int, api_version: int, body):
        """Send one request and wait for its response body. Raises ConnectionError / TimeoutError /
        DecodeError; the connection is closed after any failure."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            try:
                return await asyncio.wait_for(self._round_trip(api_key, api_version, body),
                                              self.request_timeout_ms / 1000.0)
            except BaseException:
                self.close()
                raise

    def _check_link(self, what: str) -> None:
        if self.link_check is not None and not self.link_check(self.host, self.port):
            raise (ConnectionRefusedError if what == "refused" else ConnectionResetError)(
                f"link to {self.host}:{self.port} is down: connection {what}")

    async def _round_trip(self, api_key: int, api_version: int, body):
        self._check_link("refused")
        await self.connect()
        # keep our own references: close() (a broker shutting down, a timeout) may clear the attributes
        # while this coroutine is suspended in a read
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise ConnectionError(f"connection to {self.host}:{self.port} closed")
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        request = make_request(body, api_version=api_version, correlation_id=correlation_id,
                               client_id=self.client_id, api_key=api_key)
        writer.write(encode_request(request, size_prefix=True))
        self.sent.append((correlation_id, api_name(api_key), api_version))
        await writer.drain()
        try:
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            if size < 0 or size > self.max_response_bytes:
                raise DecodeError(f"invalid response size {size}", path="size", offset=0)
            frame = await reader.readexactly(size)
        except asyncio.IncompleteReadError as e:
            raise ConnectionError(f"connection to {self.host}:{self.port} closed") from e
        self._check_link("dropped")
        response = decode_response(frame, api_key, api_version)
        if response.correlation_id != correlation_id:
            raise ConnectionError(f"correlation id {response.correlation_id} does not match request "
                                  f"{correlation_id}")
        return response.body

    def close(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:
                pass
        self._reader = self._writer = None
