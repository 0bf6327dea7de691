"""A raw socket to a running broker, for the bad-input tests: send any bytes, read frames, notice a close.

Nothing here is a Kafka client: frames are built with ``kafkalab.protocol`` (``make_request``, ``encode_request``)
or by hand with ``struct``, and every read has a timeout, so a broker that neither answers nor closes fails the
test instead of hanging it.
"""
from __future__ import annotations

import socket
import struct
import time
from typing import Optional

from kafkalab.protocol import decode_response, encode_request, make_request

_SIZE = struct.Struct(">i")


def uvarint(n: int) -> bytes:
    """Kafka's unsigned varint (compact lengths are N+1)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def frame_of(payload: bytes) -> bytes:
    """``payload`` with its int32 size prefix."""
    return _SIZE.pack(len(payload)) + payload


def header_v1(api_key: int, version: int, correlation_id: int, client_id: Optional[bytes] = b"bad-input") -> bytes:
    head = struct.pack(">hhi", api_key, version, correlation_id)
    return head + (struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id)


def header_v2(api_key: int, version: int, correlation_id: int, client_id: Optional[bytes] = b"bad-input") -> bytes:
    return header_v1(api_key, version, correlation_id, client_id) + b"\x00"   # empty tagged-field section


def request_frame(body, version: int, correlation_id: int, client_id: str = "bad-input") -> bytes:
    return encode_request(make_request(body, api_version=version, correlation_id=correlation_id,
                                       client_id=client_id), size_prefix=True)


class Conn:
    """One TCP connection to the broker."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self._buf = b""

    def __enter__(self) -> "Conn":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, n: int) -> bool:
        """Read until ``n`` bytes are buffered; False if the broker closed first."""
        while len(self._buf) < n:
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                return False
            if not chunk:
                return False
            self._buf += chunk
        return True

    def recv_frame(self) -> Optional[bytes]:
        """The next response frame (without its size), or None if the broker closed the connection instead."""
        if not self._fill(4):
            assert not self._buf, f"connection closed after a partial size prefix {self._buf!r}"
            return None
        size = _SIZE.unpack_from(self._buf)[0]
        assert 0 <= size < 1 << 26, f"bad response size {size}"
        if not self._fill(4 + size):
            raise AssertionError(f"connection closed inside a response ({len(self._buf) - 4} of {size} bytes)")
        frame, self._buf = self._buf[4:4 + size], self._buf[4 + size:]
        return frame

    def call(self, body, version: int, correlation_id: int = 1):
        """Send one request, return the decoded response (header checked)."""
        self.send(request_frame(body, version, correlation_id))
        frame = self.recv_frame()
        assert frame is not None, f"the broker closed the connection instead of answering {type(body).__name__}"
        response = decode_response(frame, body.API_KEY, version)
        assert response.correlation_id == correlation_id
        return response.body

    def assert_closed_without_response(self) -> None:
        """The broker closes the connection and sends nothing at all (Kafka's answer to what it cannot parse)."""
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            except socket.timeout:
                break
            if not chunk:
                assert not self._buf, f"the broker answered before closing: {self._buf[:64].hex(' ')}"
                return
            self._buf += chunk
        raise AssertionError(f"the connection is still open after {self.timeout}s"
                             + (f"; received {self._buf[:64].hex(' ')}" if self._buf else ""))

    def assert_open(self, wait: float = 0.2) -> None:
        """Nothing arrives and the connection is not closed within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(1)
        except socket.timeout:
            return
        finally:
            self.sock.settimeout(self.timeout)
        raise AssertionError("the connection was closed" if not chunk else f"unexpected bytes {chunk!r}")
