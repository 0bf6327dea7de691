"""Size-delimited frames: how a byte stream becomes requests and responses.

Theory of operation
-------------------
TCP delivers a stream of bytes, not messages. Kafka cuts the stream into frames: each request and each response
is preceded by an int32 giving the number of bytes that follow. A reader therefore needs two facts before it
can hand over a message: the 4-byte size, then that many bytes.

:class:`FrameReader` is that reader, without any sockets ("sans-IO", like h11): feed it whatever bytes arrived,
and it returns the complete frames, keeping any partial frame for the next call. It never trusts the size
blindly: a negative size, or one above ``max_size`` (the broker's ``socket.request.max.bytes``, 100 MiB by
default), raises :class:`InvalidReceiveError` before a single byte is buffered for it -- Kafka then closes the
connection without answering (``NetworkReceive.readFrom``).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/network/NetworkReceive.java``.
"""
from __future__ import annotations

import struct

from kafkalab.protocol.errors import DecodeError

__all__ = ["FrameReader", "InvalidReceiveError", "size_prefixed", "DEFAULT_MAX_FRAME_BYTES"]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES = 104857600

_SIZE = struct.Struct(">i")


class InvalidReceiveError(DecodeError):
    """A size prefix that is negative or larger than allowed (Kafka's ``InvalidReceiveException``)."""

    def __init__(self, size: int, max_size: int, frames: tuple = ()):
        if size < 0:
            reason = f"Invalid receive (size = {size})"
        else:
            reason = f"Invalid receive (size = {size} larger than {max_size})"
        super().__init__(reason, path="size", offset=0)
        self.size = size
        self.max_size = max_size
        #: frames completed by the same ``feed()`` call before the bad size (Kafka reads them first)
        self.frames = tuple(frames)


def size_prefixed(frame: bytes) -> bytes:
    """``frame`` with its int32 size prefix, ready for the socket."""
    return _SIZE.pack(len(frame)) + frame


class FrameReader:
    """Turns arriving bytes into complete frames (without their size prefixes).

    >>> r = FrameReader()
    >>> r.feed(b"\\x00\\x00\\x00\\x03ab")
    []
    >>> r.feed(b"c\\x00\\x00")
    [b'abc']
    >>> r.buffered
    2
    """

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_BYTES):
        self.max_size = max_size
        self._buf = bytearray()
        self._need = -1  # size of the frame being assembled, -1 while the size is still unknown

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf)

    @property
    def expected_size(self) -> int:
        """The size of the frame being assembled, or -1 if its size prefix has not fully arrived."""
        return self._need

    def feed(self, data) -> list[bytes]:
        """Add received bytes; return every frame now complete. Raises InvalidReceiveError on a bad size.

        Frames that were complete before the bad size are not lost: the error carries them in ``.frames``, so
        feeding a stream whole or in pieces yields the same frames before the error.
        """
        self._buf += data
        frames = []
        buf = self._buf
        pos = 0
        while True:
            if self._need < 0:
                if len(buf) - pos < 4:
                    break
                size = _SIZE.unpack_from(buf, pos)[0]
                if size < 0 or size > self.max_size:
                    del buf[:pos]
                    raise InvalidReceiveError(size, self.max_size, frames)
                self._need = size
                pos += 4
            if len(buf) - pos < self._need:
                break
            frames.append(bytes(buf[pos:pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames
