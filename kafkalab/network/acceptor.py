"""The acceptor: one listening socket per listener, and the connection quotas applied before a connection is served.

Theory of operation
-------------------
Kafka's ``Acceptor`` thread takes each new connection from the listening socket and counts it in
:class:`~kafkalab.network.connection_quotas.ConnectionQuotas` *before* handing it to a processor. Counting may
block the acceptor: the connection creation rate makes it wait, a full listener or broker makes it wait for a
slot. Meanwhile it accepts nothing more -- new connections queue in the kernel's backlog, their clients see a
connected socket that nobody reads. A connection from an address already at ``max.connections.per.ip`` is
closed at once, logged "Rejected connection from <ip>, address already has the configured maximum of <n>
connections.".

Here the acceptor is a coroutine per listening socket: ``sock_accept``, then ``await`` the slot, then the
socket becomes an asyncio transport with the socket server's protocol (``connect_accepted_socket``), in a task
of its own so that nothing slow (a TLS handshake) holds up the next accept.

Mirrors: ``core/src/main/scala/kafka/network/SocketServer.scala`` (``Acceptor``, ``openServerSocket``,
``accept``).
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Awaitable, Callable, Optional

from kafkalab.network.connection_quotas import ConnectionQuotas, TooManyConnectionsException
from kafkalab.network.endpoint import EndPoint

__all__ = ["Acceptor", "open_server_sockets"]

log = logging.getLogger("kafkalab.network.Acceptor")


def open_server_sockets(host: str, port: int, backlog: int = 100) -> list[socket.socket]:
    """Listening sockets for ``host:port`` (every address ``host`` resolves to; all interfaces for ``""``), as
    asyncio's ``create_server`` binds them; port 0 picks one free port, shared by all of them."""
    infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for family, kind, proto, _name, address in infos:
            if (family, address[:2]) in seen:
                continue
            seen.add((family, address[:2]))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1]) + tuple(address[2:])
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _accept_one(loop: asyncio.AbstractEventLoop, listening: socket.socket) -> asyncio.Future:
    """A future of the next ``(socket, address)`` accepted on ``listening`` (or the OSError accept raised).
    Unlike ``loop.sock_accept`` it is a plain future, so a task cancelled while it holds a result can still
    close that socket; the reader is removed as soon as the future is done or cancelled."""
    fut = loop.create_future()
    fd = listening.fileno()

    def ready() -> None:
        if fut.done():
            return
        try:
            conn, address = listening.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            fut.set_exception(e)
            return
        conn.setblocking(False)
        fut.set_result((conn, address))

    loop.add_reader(fd, ready)
    fut.add_done_callback(lambda _f: loop.remove_reader(fd) if listening.fileno() >= 0 else None)
    return fut


class Acceptor:
    """Accepts connections for one listener, counts them in ``quotas`` and hands each to ``serve`` (which makes
    it a transport and returns its protocol, or raises)."""

    def __init__(self, endpoint: EndPoint, sockets: list[socket.socket], quotas: ConnectionQuotas,
                 serve: Callable[[EndPoint, socket.socket], Awaitable[None]], *, name: str = "broker",
                 on_protected_accept: Optional[Callable[[], None]] = None):
        self.endpoint = endpoint
        self.sockets = sockets
        self.quotas = quotas
        self.serve = serve
        self.name = name
        self.on_protected_accept = on_protected_accept
        self.port = sockets[0].getsockname()[1]
        self._tasks: list[asyncio.Task] = []
        self._serving: set[asyncio.Task] = set()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(sock), name=f"{self.name}-acceptor-{self.endpoint.listener_name}")
                       for sock in self.sockets]

    async def _run(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        listener = self.endpoint.listener_name
        while True:
            accepted = _accept_one(loop, listening)
            try:
                sock, peer = await accepted
            except asyncio.CancelledError:
                # Cancelled (the broker stops) just after the kernel handed over a connection: close it, or the
                # client would wait on a socket nobody reads (asyncio's sock_accept loses it in this race).
                if accepted.done() and not accepted.cancelled() and accepted.exception() is None:
                    accepted.result()[0].close()
                raise
            except (ConnectionAbortedError, BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                log.error("%s: error while accepting connection on %s: %s", self.name, listener, e)
                await asyncio.sleep(0.1)   # e.g. EMFILE: out of file descriptors; do not spin
                continue
            ip = peer[0]
            try:
                await self.quotas.wait_for_connection_slot(listener)
            except asyncio.CancelledError:
                sock.close()
                raise
            try:
                self.quotas.inc_counts(listener, ip)
            except TooManyConnectionsException as e:
                log.info("%s: Rejected connection from %s, address already has the configured maximum of %d "
                         "connections.", self.name, e.ip, e.count)
                self.quotas.dec(listener, ip)
                sock.close()
                continue
            if self.on_protected_accept is not None and self.quotas.protected_listener(listener):
                self.on_protected_accept()
            task = loop.create_task(self._serve(sock, ip))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)

    async def _serve(self, sock: socket.socket, ip: str) -> None:
        try:
            await self.serve(self.endpoint, sock)
        except Exception as e:   # the connection never became one (a failed handshake): uncount it
            log.debug("%s: connection from %s on %s not served: %s", self.name, ip, self.endpoint.listener_name, e)
            self.quotas.dec(self.endpoint.listener_name, ip)
            sock.close()
        except asyncio.CancelledError:   # the broker stops halfway: the client must see the close, not wait
            self.quotas.dec(self.endpoint.listener_name, ip)
            sock.close()
            raise

    def close(self) -> None:
        for task in [*self._tasks, *self._serving]:   # a connection still being set up is closed too
            task.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for sock in self.sockets:
            # A cancelled sock_accept unregisters its reader only in a callback run later; closing the socket
            # first lets the selector report the dead descriptor to a future that is already cancelled
            # (InvalidStateError logged from the event loop). Unregister it now, then close.
            if loop is not None and sock.fileno() >= 0:
                loop.remove_reader(sock.fileno())
            sock.close()

    async def wait_closed(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
