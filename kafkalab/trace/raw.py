"""A bare TCP connection to a broker: write frames, read frames, notice when the broker closes it.

Theory of operation
-------------------
Everything kafkalab's clients add on top of a socket (ApiVersions first, correlation ids, one connection per
broker, retries) hides what the protocol itself does. A :class:`RawConnection` adds nothing: ``send()`` writes
size-prefixed frames exactly as given (several at once, so requests can be in flight together), ``receive()``
returns the next response frame (without its 4-byte size), or None when the broker closed the connection, which
is how a Kafka broker answers a request it refuses to read (too large, unknown API, bad header). Labs use it to
pipeline requests by hand, to send a frame built byte by byte, and to watch the broker hang up.

It is the sending twin of :class:`~kafkalab.trace.ScriptedListener` (which receives from real clients); the
framing is :func:`kafkalab.protocol.size_prefixed`. Mirrors what Kafka's ``NetworkClient`` does underneath
its bookkeeping: ``KafkaChannel`` writing ``NetworkSend``s and reading ``NetworkReceive``s.
"""
from __future__ import annotations

import select
import socket
import struct
from typing import Optional

from kafkalab.protocol import size_prefixed

__all__ = ["RawConnection"]


class RawConnection:
    """A TCP connection to a broker with nothing on top: write frames, read frames, notice when it closes.

    ``send(*frames)`` writes size-prefixed frames in one go (so several requests can be in flight);
    ``receive(timeout)`` returns the next response frame (without its size), or None if the broker closed the
    connection (``closed`` is then True). A reset by the peer counts as a close.
    """

    def __init__(self, address, timeout: float = 5.0):
        if isinstance(address, str):
            host, port = address.split(",")[0].rsplit(":", 1)
            address = (host, int(port))
        self.sock = socket.create_connection(address, timeout=timeout)
        self.closed = False

    def send(self, *frames: bytes, prefixed: bool = False) -> None:
        data = b"".join(f if prefixed else size_prefixed(f) for f in frames)
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.closed = True

    def _exactly(self, n: int) -> Optional[bytes]:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            data += chunk
        return data

    def receive(self, timeout: float = 5.0) -> Optional[bytes]:
        self.sock.settimeout(timeout)
        head = self._exactly(4)
        return None if head is None else self._exactly(struct.unpack(">i", head)[0])

    def readable(self, timeout: float) -> bool:
        """Did anything (bytes or a close) arrive within ``timeout`` seconds?"""
        return bool(select.select([self.sock], [], [], timeout)[0])

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

