"""Cut-through framing for the tap's broker-to-client direction: pass each response on as its bytes arrive.

Theory of operation
-------------------
A store-and-forward proxy waits for a whole response before it passes any of it on, so a 1 MiB Fetch response
reaches the client only after its last byte has reached the proxy: every fetch round trip pays the response's
transfer time twice, and a consumer with one fetch in flight per broker slows down by as much.
:class:`CutThroughFramer` cuts the broker's stream into size-prefixed frames *and* lets the bytes of each frame
go on as they arrive, keeping the pieces to hand the whole frame over for recording once its last byte is in.
The exception are the responses the tap must rewrite (Metadata, FindCoordinator, DescribeCluster): those are
held until complete and the caller sends their rewritten bytes in their place. The framer decides per frame as
soon as it has the size prefix and the body's first four bytes -- a response's correlation id -- by asking
``hold(correlation_id)`` (``None`` for a frame shorter than four bytes, which nothing holds).

Sans-IO: :meth:`~CutThroughFramer.feed` takes received bytes and returns the stream in order as steps,
:class:`Forward` (bytes to pass on now) and :class:`Frame` (a complete frame's body, ``held`` when none of it was
passed on). A size prefix that is negative or larger than ``max_size`` raises
:class:`~kafkalab.protocol.InvalidReceiveError` whose ``frames`` are the steps before it, and nothing of that frame
has been forwarded. :attr:`~CutThroughFramer.buffered` and :attr:`~CutThroughFramer.expected_size` describe an
incomplete frame as :class:`~kafkalab.protocol.FrameReader` does (Kafka's ``NetworkReceive``, the
store-and-forward reader, whose size rules this keeps).
"""
from __future__ import annotations

import struct
from typing import Callable, NamedTuple, Optional, Union

from kafkalab.protocol import DEFAULT_MAX_FRAME_BYTES, InvalidReceiveError

__all__ = ["CutThroughFramer", "Forward", "Frame"]

_INT32 = struct.Struct(">i")


class Forward(NamedTuple):
    """Bytes to pass on now, in stream order (a slice of what was fed, not a copy)."""

    data: Union[bytes, memoryview]


class Frame(NamedTuple):
    """A complete frame's body (without its size prefix); ``held`` if none of it was forwarded."""

    frame: bytes
    held: bool


class CutThroughFramer:
    """Frames a byte stream while forwarding it; ``hold(correlation_id)`` says which frames to keep back."""

    def __init__(self, hold: Callable[[Optional[int]], bool], max_size: int = DEFAULT_MAX_FRAME_BYTES):
        self._hold = hold
        self.max_size = max_size
        self._prefix = bytearray()   # the size prefix while it is incomplete
        self._need = -1              # body bytes of the current frame, -1 while its size is unknown
        self._got = 0                # body bytes of the current frame received
        self._parts: list = []       # those bytes, as received
        self._decided = False        # hold() was asked about the current frame
        self._held = False

    @property
    def buffered(self) -> int:
        """Bytes of the incomplete frame received so far (of its size prefix while that is incomplete)."""
        return self._got if self._need >= 0 else len(self._prefix)

    @property
    def expected_size(self) -> int:
        """The size of the frame being received, -1 while its size prefix is incomplete."""
        return self._need

    def feed(self, data) -> list:
        """Received bytes in; the steps they complete, in stream order, out."""
        steps: list = []
        view = memoryview(data).cast("B")
        pos, end = 0, len(view)
        while pos < end:
            if self._need < 0:
                take = min(4 - len(self._prefix), end - pos)
                self._prefix += view[pos:pos + take]
                pos += take
                if len(self._prefix) < 4:
                    break
                size = _INT32.unpack(self._prefix)[0]
                if size < 0 or size > self.max_size:
                    raise InvalidReceiveError(size, self.max_size, steps)
                self._need, self._got, self._parts, self._decided = size, 0, [], False
            if not self._decided:
                first = min(4, self._need)
                take = min(first - self._got, end - pos)
                if take:
                    self._parts.append(bytes(view[pos:pos + take]))
                    self._got += take
                    pos += take
                if self._got < first:
                    break
                head = b"".join(self._parts)
                self._held = bool(self._hold(_INT32.unpack(head)[0] if first == 4 else None))
                self._decided = True
                if not self._held:
                    steps.append(Forward(bytes(self._prefix) + head))
            take = min(self._need - self._got, end - pos)
            if take:
                piece = view[pos:pos + take]
                self._parts.append(piece)
                self._got += take
                pos += take
                if not self._held:
                    steps.append(Forward(piece))
            if self._got == self._need:
                frame = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                steps.append(Frame(bytes(frame), self._held))
                self._prefix.clear()
                self._need, self._got, self._parts, self._decided = -1, 0, [], False
        return steps
