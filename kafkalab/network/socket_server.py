"""The socket server: acceptors, connection processors, and Kafka's rules for bad input.

Theory of operation
-------------------
For every listener the broker binds one server socket (Kafka's *acceptor*, :mod:`.acceptor`), which counts
each new connection against ``max.connections``, ``max.connections.per.ip`` and ``max.connection.creation.rate``
(:mod:`.connection_quotas`) before serving it. Each accepted connection gets a *processor* (here: one coroutine
per connection, reading from its :class:`~kafkalab.network.kafka_channel.KafkaChannel`) that

1. reads bytes and cuts them into frames (an int32 size, then that many bytes). A size below 0 or above
   ``socket.request.max.bytes`` closes the connection at once: the broker never allocates from a size it has
   not checked (``InvalidReceiveException`` in Kafka). As in Kafka's ``NetworkReceive``, a large frame gets a
   buffer of its own once its size is known and the socket receives straight into it (an asyncio
   ``BufferedProtocol`` over :class:`~kafkalab.protocol.FrameReader`), so a 1 MB Produce request is copied
   once, by the kernel, and its ``records`` are a view into that buffer. That buffer grows as the bytes
   arrive, and its announced size is taken from the memory pool (``queued.max.request.bytes``): when the pool
   is empty the connection is muted until a request handler gives memory back.
2. parses the request header and body *on the network side*. Anything that does not parse -- an unknown API
   key, a version the broker does not support, a body that runs short -- closes the connection **without a
   response**: the broker cannot know how the client would read one. The one exception is ApiVersions: a
   client that asks with a version too new gets a reply in the oldest format (v0, error 35
   UNSUPPORTED_VERSION, listing the ApiVersions versions the broker does support), because that is how a
   client and a broker discover what they have in common (KIP-35, KIP-511).
3. puts the request into the request channel and **mutes** the connection: it reads no further request
   from this client until the response to this one has been written. So on one connection requests are
   processed one at a time and answered in the order they were sent, however many the client pipelines;
   the extra ones wait in the socket buffer (reading pauses while a complete request waits its turn).
4. writes the response (:mod:`kafkalab.network.response_send`). Record batches read from a log file go out with ``sendfile`` (zero-copy: the bytes
   go from the page cache to the socket without passing through Python) when they are large enough -- except
   on TLS connections, where the bytes must be encrypted on their way: there they are read and written
   through the TLS layer in chunks, as Kafka's ``SslTransportLayer.transferFrom`` copies them. What went which
   way is counted per listener (``sendfile-bytes-total``, ``copied-bytes-total``, ... in :meth:`metrics`).

Listeners whose security protocol is SSL or SASL_SSL get an ``ssl.SSLContext`` (one
:class:`~kafkalab.security.ssl_factory.SslFactory` per listener, from its ``ssl.*`` settings): asyncio runs the
TLS handshake before the connection reaches its processor, and a handshake that fails (a plaintext client,
garbage instead of a ClientHello, an untrusted client certificate) or does not finish within
``connections.max.idle.ms`` only drops that connection. On SSL listeners the client certificate's
distinguished name (after ``ssl.principal.mapping.rules``) becomes the connection's ``principal``; without one
the principal is ``User:ANONYMOUS``, as on PLAINTEXT.

Idle connections are closed after ``connections.max.idle.ms``.

With ``control.plane.listener.name`` (KIP-291) the control-plane listener has its own server socket like every
listener, and its requests go to a **request channel of their own** (Kafka's ``controlPlaneRequestChannelOpt``,
20 requests deep), served by its own request handler: the controller's LeaderAndIsr and UpdateMetadata never
queue behind clients' Produce and Fetch requests. Kafka also pins one network thread to it; here every
connection already has its own processor coroutine.

On a SASL_PLAINTEXT or SASL_SSL listener each connection first logs in: until it has, every frame goes to
the connection's :class:`~kafkalab.security.sasl_server.SaslServerAuthenticator` instead of step 3, frames
are capped by ``sasl.server.max.receive.size``, and only ApiVersions (answered as usual) and the SASL
exchange are possible. A failed login gets its error response after ``connection.failed.authentication.delay.ms``
and the connection closes. Once authenticated, the connection's ``principal`` (``User:alice``; ``User:ANONYMOUS``
on PLAINTEXT) goes into every request's context; with ``connections.max.reauth.ms`` the client re-authenticates
on the same connection (a SaslHandshake goes back to the authenticator), and a request that arrives after the
session ended closes the connection (KIP-368).

Mirrors: ``core/src/main/scala/kafka/network/SocketServer.scala`` (Acceptor, Processor,
``processCompletedReceives``, ``parseRequestHeader``, the ``MemoryPoolAvailable``/``MemoryPoolUsed`` gauges),
``clients/.../network/NetworkReceive.java`` and the memory-pressure muting of ``Selector``/``KafkaChannel``.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import socket
from typing import Callable, Mapping, Optional

from kafkalab.common.memory_pool import MemoryPool
from kafkalab.common.time import SYSTEM, Time
from kafkalab.network.acceptor import Acceptor, open_server_sockets
from kafkalab.network.connection_quotas import ConnectionQuotas
from kafkalab.network.endpoint import EndPoint
from kafkalab.network.kafka_channel import KafkaChannel
from kafkalab.network.request_channel import (CloseConnectionResponse, NetworkRequest, NoOpResponse,
                                              RequestChannel, RequestContext, SendResponse)
from kafkalab.network.response_send import FileRegion, ResponseSendStats, send_file_region, send_response
from kafkalab.protocol import (ApiKey, DecodeError, ErrorCode, InvalidReceiveError,
                               UnsupportedVersionError, api_name, decode_request, response_class)
from kafkalab.security.sasl_server import Outcome, SaslServerAuthenticator
from kafkalab.security.ssl_factory import SslFactory

__all__ = ["SocketServer"]

log = logging.getLogger("kafkalab.network.SocketServer")



def set_buffer_sizes(sock, send_buffer_bytes: int, receive_buffer_bytes: int) -> None:
    """SO_SNDBUF / SO_RCVBUF as Kafka sets them: ``-1`` leaves the operating system's default (on Linux that
    default grows with the connection: autotuning); any other value is asked for as it is (Linux doubles it for
    its own bookkeeping and stops autotuning that direction)."""
    for option, size in ((socket.SO_SNDBUF, send_buffer_bytes), (socket.SO_RCVBUF, receive_buffer_bytes)):
        if size != -1:
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, size)
            except (OSError, AttributeError):   # not a TCP socket (a test double): nothing to size
                pass


class SocketServer:
    """Binds every listener, runs a processor per connection, and hands requests to the request channel.

    ``enabled_apis`` maps API key -> (min, max) version that the broker accepts; anything else is refused as
    Kafka refuses it. ``advertised_apis`` (default: the same) is what ApiVersions lists, which may reach below
    the accepted range (Kafka 4.0's Produce from v0); the refusal of such a version says so.
    """

    def __init__(self, endpoints: list[EndPoint], channel: RequestChannel, enabled_apis: dict[int, tuple[int, int]],
                 *, max_request_bytes: int = 104857600, connections_max_idle_ms: int = 600_000,
                 send_buffer_bytes: int = -1, receive_buffer_bytes: int = -1,
                 time: Time = SYSTEM, on_close: Optional[Callable[[str], None]] = None, name: str = "broker",
                 memory_pool: MemoryPool = MemoryPool.NONE, connection_quotas: Optional[ConnectionQuotas] = None,
                 ssl_factories: Optional[Mapping[str, SslFactory]] = None,
                 authenticators: Optional[dict[str, Callable[[], SaslServerAuthenticator]]] = None,
                 failed_authentication_delay_ms: int = 100, control_plane_listener: Optional[str] = None,
                 control_plane_channel: Optional[RequestChannel] = None,
                 advertised_apis: Optional[dict[int, tuple[int, int]]] = None):
        self.endpoints = endpoints
        #: the control-plane listener's requests go to their own channel (KIP-291), the others to ``channel``
        self.control_plane_listener = control_plane_listener if control_plane_channel is not None else None
        self.control_plane_channel = control_plane_channel
        self.authenticators = dict(authenticators or {})   # listener name -> a new connection's authenticator
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        #: Kafka's selector/socket-server metrics of logins, by their names
        self.authentication_metrics: collections.Counter = collections.Counter()
        #: bytes and sends per path (sendfile / copied) per listener: kafkalab's own counters, Kafka has none
        self.send_stats = ResponseSendStats()
        missing = [ep.listener_name for ep in endpoints if ep.security_protocol.startswith("SASL_")
                   and ep.listener_name not in self.authenticators]
        if missing:  # never serve a SASL listener without authentication
            raise ValueError(f"SASL listeners {missing} have no authenticator")
        #: listener name -> its server-side SslFactory (SSL and SASL_SSL listeners)
        self.ssl_factories: Mapping[str, SslFactory] = dict(ssl_factories or {})
        missing = [ep.listener_name for ep in endpoints
                   if ep.security_protocol in ("SSL", "SASL_SSL") and ep.listener_name not in self.ssl_factories]
        if missing:     # never serve a TLS listener in the clear
            raise ValueError(f"no SSL context for listener(s) {', '.join(missing)}")
        #: ``queued.max.request.bytes`` (Kafka's SimpleMemoryPool; MemoryPool.NONE when -1)
        self.memory_pool = memory_pool
        #: max.connections, max.connections.per.ip(.overrides), max.connection.creation.rate
        self.connection_quotas = connection_quotas or ConnectionQuotas(
            max_connections=2147483647, max_connections_per_ip=2147483647, per_ip_overrides={},
            max_connection_creation_rate=2147483647, listener_limits={ep.listener_name: (2147483647, 2147483647)
                                                                      for ep in endpoints},
            inter_broker_listener=None, time=time)
        self._memory_muted: dict = {}      # connections waiting for the memory pool, oldest first
        self.send_buffer_bytes = send_buffer_bytes          # socket.send.buffer.bytes (-1: the OS default)
        self.receive_buffer_bytes = receive_buffer_bytes    # socket.receive.buffer.bytes (-1: the OS default)
        self.channel = channel
        self.enabled_apis = enabled_apis
        self.advertised_apis = enabled_apis if advertised_apis is None else advertised_apis
        self.max_request_bytes = max_request_bytes
        self.idle_timeout = connections_max_idle_ms / 1000.0 if connections_max_idle_ms > 0 else None
        self.time = time
        self.on_close = on_close
        self.name = name
        self.listeners: dict[str, Acceptor] = {}
        self._connections: dict[str, asyncio.StreamWriter] = {}
        self._tasks: set[asyncio.Task] = set()
        self._index = itertools.count()
        self._closing = False
        self.paused = False
        self._protocols: set = set()

    # ------------------------------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        for ep in self.endpoints:
            sockets = open_server_sockets(ep.host, ep.port)
            # Kafka's Acceptor sets the receive buffer on the listening socket, so that accepted sockets start
            # with it (the TCP window scale is agreed during the handshake), and the send buffer per connection.
            for sock in sockets:
                set_buffer_sizes(sock, -1, self.receive_buffer_bytes)
            acceptor = Acceptor(ep, sockets, self.connection_quotas, self._serve_accepted, name=self.name,
                                on_protected_accept=self._close_excess_connections)
            self.listeners[ep.listener_name] = acceptor
            acceptor.start()

    async def _serve_accepted(self, ep: EndPoint, sock: socket.socket) -> None:
        """An accepted, counted socket becomes a connection: its transport, its protocol, its processor."""
        ip = sock.getpeername()[0]
        factory = self.ssl_factories.get(ep.listener_name)
        tls = {} if factory is None else {"ssl": factory.context, "ssl_handshake_timeout": self.idle_timeout}
        await asyncio.get_running_loop().connect_accepted_socket(lambda: KafkaChannel(self, ep, ip), sock, **tls)

    def connection_closed(self, conn: KafkaChannel) -> None:
        """A connection's transport is gone: uncount it, give its memory back."""
        self.connection_quotas.dec(conn.ep.listener_name, conn.ip)
        self._memory_muted.pop(conn, None)
        conn.release_all()
        self._unmute_for_memory()

    def _close_excess_connections(self) -> None:
        """An inter-broker connection took the broker over ``max.connections``: close the least recently
        active connections on the other listeners (Kafka's ``closeExcessConnections``)."""
        quotas = self.connection_quotas
        excess = quotas.total_count - quotas.broker_max_connections
        candidates = sorted((c for c in self._protocols if not quotas.protected_listener(c.ep.listener_name)
                             and c.transport is not None and not c.transport.is_closing()),
                            key=lambda c: c.last_activity)
        for conn in candidates[:max(0, excess)]:
            log.info("%s: closing the least recently used connection on %s: max.connections=%d reached",
                     self.name, conn.ep.listener_name, quotas.broker_max_connections)
            conn.transport.close()

    # ------------------------------------------------------------------------------------------ memory pool
    def muted_for_memory(self, conn: KafkaChannel) -> None:
        self._memory_muted[conn] = True

    def release_memory(self, size_bytes: int) -> None:
        """A request's bytes go back to the pool; connections muted for memory try again (oldest first)."""
        if size_bytes <= 0 or self.memory_pool is MemoryPool.NONE:
            return
        self.memory_pool.release(size_bytes)
        self._unmute_for_memory()

    def _unmute_for_memory(self) -> None:
        if self._memory_muted and not self.memory_pool.is_out_of_memory():
            for conn in list(self._memory_muted):
                if self.memory_pool.is_out_of_memory():
                    break
                if conn.retry_memory():
                    self._memory_muted.pop(conn, None)

    def _release_once(self, size_bytes: int) -> Callable[[], None]:
        """Gives a frame's bytes back to the pool on its first call (the request handler's or, for a frame that
        never became a request, the processor's); later calls do nothing."""
        pending = [size_bytes]

        def release() -> None:
            if pending:
                self.release_memory(pending.pop())
        return release

    def metrics(self) -> dict:
        """Kafka's SocketServer gauges ``MemoryPoolAvailable`` and ``MemoryPoolUsed``, and ``connection-count``
        per listener; and kafkalab's own counters of how responses left the process (Kafka has no metric for
        this): ``sendfile-bytes-total``, ``sendfile-sends-total``, ``copied-bytes-total``, ``copied-sends-total``,
        ``copied-file-bytes-total``, for the broker and per ``listener`` (:class:`ResponseSendStats`)."""
        pool = self.memory_pool
        result = {"MemoryPoolAvailable": pool.available_memory(),
                  "MemoryPoolUsed": pool.size() - pool.available_memory()}
        for name, count in self.connection_quotas.listener_counts.items():
            result[f"connection-count,listener={name}"] = count
        result.update(self.send_stats.metrics())
        return result

    def spawn_processor(self, ep: EndPoint, conn: KafkaChannel) -> None:
        task = asyncio.ensure_future(self._process(ep, conn))
        self._tasks.add(task)
        self._protocols.add(conn)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _t, conn=conn: self._protocols.discard(conn))

    def pause(self) -> None:
        """Stop reading every socket (and new ones): what a stopped process looks like from outside -- the
        kernel still accepts connections and buffers bytes, nobody reads them (fault injection)."""
        self.paused = True
        for conn in list(self._protocols):
            if conn.transport is not None and not conn.transport.is_closing():
                conn.transport.pause_reading()

    def resume(self) -> None:
        self.paused = False
        for conn in list(self._protocols):
            conn.maybe_resume()

    def bound_port(self, listener_name: str) -> int:
        return self.listeners[listener_name].port

    def bound_endpoints(self) -> list[EndPoint]:
        """The listeners with the ports actually bound (port 0 in the config means "any free port")."""
        return [ep._replace(port=self.listeners[ep.listener_name].port) for ep in self.endpoints]

    async def stop_accepting(self) -> None:
        for listener in self.listeners.values():
            listener.close()
        for listener in self.listeners.values():
            await listener.wait_closed()

    async def stop(self) -> None:
        """Stop accepting, close every connection, wait for the processors to finish."""
        self._closing = True
        for listener in self.listeners.values():
            listener.close()
        for writer in list(self._connections.values()):
            writer.close()
        for conn in list(self._protocols):   # accepted, its processor not started yet: close it all the same
            if conn.transport is not None and not conn.transport.is_closing():
                conn.transport.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def abort_all(self) -> None:
        """Drop every socket at once, as a killed process would (no flush, no FIN handshake politeness)."""
        self._closing = True
        for listener in self.listeners.values():
            listener.close()
        for conn in {*self._connections.values(), *self._protocols}:
            transport = conn.transport
            if transport is not None:
                transport.abort()
        for task in list(self._tasks):
            task.cancel()

    @property
    def connection_ids(self) -> list[str]:
        return list(self._connections)

    # ------------------------------------------------------------------------------------------ processor
    async def _process(self, ep: EndPoint, writer: KafkaChannel) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            set_buffer_sizes(sock, self.send_buffer_bytes, -1)
        local = writer.get_extra_info("sockname") or ("?", 0)
        peer = writer.get_extra_info("peername") or ("?", 0)
        conn_id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{next(self._index)}"
        self._connections[conn_id] = writer
        self.channel.metrics.connections_created += 1
        software = (None, None)
        reason = "client closed the connection"
        try:
            while not self._closing:
                try:
                    frame = await writer.next_frame(self.idle_timeout)
                except asyncio.TimeoutError:
                    reason = "idle for longer than connections.max.idle.ms"
                    break
                except InvalidReceiveError as e:
                    reason = f"{e.reason}; closing connection {conn_id}"
                    if writer.authenticator is not None and not writer.authenticator.authenticated:
                        reason = f"Failing SASL authentication due to invalid receive size ({reason})"
                    log.warning("%s: %s", self.name, reason)
                    break
                if frame is None:
                    break
                release = self._release_once(len(frame))
                try:
                    auth = writer.authenticator
                    if auth is not None and (not auth.authenticated or auth.begins_reauthentication(frame)):
                        outcome, software = await self._authenticate(ep, conn_id, peer, frame, writer, software,
                                                                     release)
                    elif auth is not None and auth.session_expired(self.time.milliseconds()):
                        outcome = "the SASL session expired (connections.max.reauth.ms) without re-authentication"
                        self.authentication_metrics["expired-connections-killed-count"] += 1
                    else:
                        outcome, software = await self._handle_frame(ep, conn_id, peer, frame, writer, software,
                                                                     release)
                finally:
                    frame = None
                    release()
                if outcome is not None:
                    reason = outcome
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            reason = "connection reset"
        except asyncio.CancelledError:
            reason = "broker shutting down"
        except Exception:  # never let one connection take the broker down
            log.exception("%s: unexpected error on connection %s", self.name, conn_id)
            reason = "unexpected error"
        finally:
            self._connections.pop(conn_id, None)
            self.channel.metrics.connections_closed += 1
            try:
                writer.close()
            except Exception:
                pass
            if self.on_close is not None:
                self.on_close(conn_id)
            log.debug("%s: closed %s (%s)", self.name, conn_id, reason)

    async def _handle_frame(self, ep: EndPoint, conn_id: str, peer, frame, writer, software, release):
        """Decode one frame, run it through the request channel, write the answer. ``release`` gives the frame's
        bytes back to the memory pool (the request handler calls it once KafkaApis is done with the request).

        Returns ``(reason_to_close or None, software)``.
        """
        start_ns = self.time.nanoseconds()
        received_ms = self.time.milliseconds()
        try:
            request = decode_request(frame, self.enabled_apis)   # the header is checked before the body is read
        except UnsupportedVersionError as e:
            if e.api_key == ApiKey.API_VERSIONS and e.header is not None:
                await self._send_api_versions_fallback(writer, e.header.correlation_id)
                return None, software
            # The codec's message quotes the versions the schema knows; say what this broker advertises.
            reason = self._unsupported(e.api_key, e.api_version)
            log.warning("%s: closing %s: %s (client %s)", self.name, conn_id, reason, _client(e.header))
            return f"unsupported version: {reason}", software
        except DecodeError as e:
            log.warning("%s: closing %s: error parsing request: %s", self.name, conn_id, e)
            return f"error parsing request: {e}", software
        header = request.header
        if request.api_key == ApiKey.API_VERSIONS and request.api_version >= 3:
            software = (request.body.client_software_name, request.body.client_software_version)
        context = RequestContext(conn_id, peer[0], peer[1], ep.listener_name, ep.security_protocol, writer.principal,
                                 header, software[0], software[1])
        net = NetworkRequest(context, request.body, len(frame) + 4, start_ns, received_ms)
        net.on_release(release)
        channel = self.control_plane_channel if ep.listener_name == self.control_plane_listener else self.channel
        await channel.send_request(net)
        action = await net.response
        if isinstance(action, SendResponse):
            sent = await self._send(writer, header.request_api_key, header.request_api_version,
                                    header.correlation_id, action.body)
            channel.complete(net, sent, "response", self.time.nanoseconds())
            return None, software
        if isinstance(action, NoOpResponse):
            channel.complete(net, 0, "no-response", self.time.nanoseconds())
            return None, software
        if isinstance(action, CloseConnectionResponse):
            channel.complete(net, 0, "closed", self.time.nanoseconds())
            return action.reason or "closed by the handler", software
        raise TypeError(f"unknown response action {action!r}")

    async def _authenticate(self, ep: EndPoint, conn_id: str, peer, frame, writer: KafkaChannel, software, release):
        """One frame of a SASL login: do what the connection's authenticator decides."""
        again = writer.authenticator.principal is not None        # a re-authentication (KIP-368)
        decision = writer.authenticator.receive(frame, self.time.milliseconds())
        if decision.outcome in (Outcome.CLOSE, Outcome.FAIL, Outcome.AUTHENTICATED):
            result = "successful" if decision.outcome is Outcome.AUTHENTICATED else "failed"
            self.authentication_metrics[f"{result}-{'re' if again else ''}authentication-total"] += 1
        if decision.outcome is Outcome.FORWARD:      # ApiVersions: answered like any request
            return await self._handle_frame(ep, conn_id, peer, frame, writer, software, release)
        if decision.outcome is Outcome.CLOSE:
            log.info("%s: closing %s (%s): %s", self.name, conn_id, ep.listener_name, decision.reason)
            return f"authentication: {decision.reason}", software
        if decision.outcome is Outcome.FAIL:       # slow down password guessing, then answer and close
            log.info("%s: failed authentication with /%s (%s)", self.name, peer[0], decision.reason)
            await asyncio.sleep(self.failed_authentication_delay_ms / 1000.0)
        if decision.response is not None:
            r = decision.response
            await self._send(writer, r.api_key, r.api_version, r.correlation_id, r.body)
        elif decision.token is not None:           # SaslHandshake v0: a raw size-prefixed token
            writer.write(len(decision.token).to_bytes(4, "big") + decision.token)
            await writer.drain()
        if decision.outcome is Outcome.FAIL:
            return f"authentication failed: {decision.reason}", software
        if decision.outcome is Outcome.AUTHENTICATED:
            writer.principal = str(decision.principal)
            writer.frames.max_size = self.max_request_bytes
            log.debug("%s: %s authenticated as %s", self.name, conn_id, writer.principal)
        return None, software

    def _unsupported(self, key: int, version: int) -> str:
        """Why ``version`` of API ``key`` is refused, quoting the range this broker advertises in ApiVersions."""
        if key not in self.enabled_apis:
            return f"Received request for disabled api {api_name(key)} (key {key}) v{version}"
        lo, hi = self.advertised_apis.get(key, self.enabled_apis[key])
        accepted_lo, accepted_hi = self.enabled_apis[key]
        if lo <= version <= hi and not accepted_lo <= version <= accepted_hi:   # Kafka 4.0's Produce v0-2
            return (f"Received request api key {ApiKey(key).name} with version {version} which is not enabled "
                    f"(advertised: {lo}-{hi}, accepted: {accepted_lo}-{accepted_hi})")
        if lo <= version <= hi:  # accepted by the broker, but a version kafkalab's codec does not know
            return (f"{api_name(key)} v{version} is not supported (advertised: {lo}-{hi}, but v{version} no longer "
                    f"exists in Kafka's protocol)")
        return f"{api_name(key)} v{version} is not supported (advertised: {lo}-{hi})"

    async def _send_api_versions_fallback(self, writer, correlation_id: int) -> None:
        """The v0-format UNSUPPORTED_VERSION reply: header v0, error 35, [{18, min, max}], no throttle."""
        lo, hi = self.enabled_apis.get(ApiKey.API_VERSIONS, (0, 0))
        cls = response_class(ApiKey.API_VERSIONS)
        body = cls(error_code=ErrorCode.UNSUPPORTED_VERSION,
                   api_keys=(cls.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=lo, max_version=hi),))
        await self._send(writer, ApiKey.API_VERSIONS, 0, correlation_id, body)

    async def _send(self, writer: KafkaChannel, api_key: int, api_version: int, correlation_id: int,
                    body) -> int:
        """Encode and write one response (:func:`~kafkalab.network.response_send.send_response`); file regions go
        through :meth:`_sendfile`. Returns the bytes written."""
        return await send_response(writer, api_key, api_version, correlation_id, body, self._sendfile)

    async def _sendfile(self, writer: KafkaChannel, region: FileRegion) -> None:
        await send_file_region(writer, region)


def _client(header) -> str:
    return repr(header.client_id) if header is not None else "unknown"
