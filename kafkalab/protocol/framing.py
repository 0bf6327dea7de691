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

A server that wants to avoid copying can also let the socket write *into* the reader, the way Kafka's
``NetworkReceive`` does: ask :meth:`FrameReader.get_buffer` where the next bytes should go, receive into it
(``recv_into``; asyncio's ``BufferedProtocol``), then report how many arrived with
:meth:`FrameReader.buffer_updated`. Small frames are collected in a scratch buffer; once the size of a large
frame is known, the reader gives that frame a buffer of its own and hands out the rest of it, so the bytes of a
1 MB Produce request are copied once, by the kernel. Such frames come back as ``memoryview`` objects over that
buffer (read-only unless the reader is ``writable``; decoders slice ``records`` out of them without copying).

A fresh buffer for every large frame would cost more than its allocation: the memory comes zero-filled, and
on a virtual machine every page touched for the first time can also cost the host a page fault (measured here:
4-16 us per 4 KiB page, up to 4 ms for a 1 MB Produce request). :class:`ReceiveBuffer` keeps the last large
buffer of a connection and receives the next large frame into it again, but only once no view of the previous
frame is alive any more (so nobody can see its bytes change). Python itself keeps that count: a ``bytearray``
refuses to change its size while any buffer export of it -- a ``memoryview``, or a slice of one -- exists
(``BufferError``), so trying to shrink it by one byte is an exact, documented "is anyone looking?" test
(a view's :meth:`memoryview.release` lifts it at once). The JVM gets the same effect from its heap.

A size prefix is only a promise: four bytes can announce 100 MB and then nothing follow. So a large frame's
buffer is not allocated at its announced size: it starts as long as what has arrived (at least
:data:`GROW_MIN_BYTES`) and doubles as bytes arrive, so the memory a connection holds follows what it sent.
What the announced sizes may add up to is the job of a memory pool (Kafka's ``MemoryPool``,
``queued.max.request.bytes``): given one, the reader takes each frame's size from it once the size is read, and
stops (:attr:`FrameReader.memory_wanted`) when the pool has nothing left, until memory is released.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/network/NetworkReceive.java``.
"""
from __future__ import annotations

import struct
from typing import Optional

from kafkalab.protocol.errors import DecodeError

__all__ = ["FrameReader", "ReceiveBuffer", "FrameBuffer", "InvalidReceiveError", "size_prefixed", "DEFAULT_MAX_FRAME_BYTES"]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES = 104857600

_SIZE = struct.Struct(">i")
#: A frame at least this large gets a buffer of its own as soon as its size is known (no re-copying).
LARGE_FRAME_BYTES = 64 * 1024
#: Where small frames (and the size prefixes) are received when receiving in place.
SCRATCH_BYTES = 64 * 1024
#: The largest buffer a :class:`ReceiveBuffer` keeps for reuse (a rare 100 MB frame is not kept per connection).
SPARE_MAX_BYTES = 16 * 1024 * 1024
#: A large frame's buffer starts this long (or as long as what has arrived) and doubles as its bytes arrive.
GROW_MIN_BYTES = 64 * 1024


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


class FrameBuffer(bytearray):
    """The buffer a large frame was received into, owned by whoever handles that frame.

    The decoder hands out ``records`` fields as zero-copy views of any read-only frame; of a *writable* frame
    only when its buffer is a ``FrameBuffer``, whose handler may then patch the record batches in place (a
    broker assigning offsets and leader epochs, as Kafka does in the request's own ``ByteBuffer``). A writable
    view of any other buffer still gets copies: its owner might change the bytes under the decoded request."""

    __slots__ = ()


def _unexported(buf: bytearray) -> bool:
    """True if no buffer export (``memoryview``) of ``buf`` is alive.

    A bytearray with a live export raises BufferError on any resize; one without gives up its last byte and
    takes it back without reallocating (shrinking by one byte keeps the allocation). The byte's value is lost,
    which does not matter: the buffer is about to be received into.
    """
    try:
        buf.pop()
    except BufferError:
        return False
    except IndexError:   # empty: nothing to protect
        return True
    buf.append(0)
    return True


class ReceiveBuffer:
    """Hands out a writable buffer of exactly ``size`` bytes for the next large frame, reusing earlier ones.

    A buffer is reused only when no view of it is alive: every ``memoryview`` of an earlier frame (its decoded
    ``records`` included, and slices of them) is a buffer export of it, so while any part of that frame is still
    in use -- a request parked in a purgatory, a trace that kept the frame -- another buffer is taken. (Hold a
    view, not the bare ``view.obj``: a bytearray without exports counts as free.) The two most recent buffers are kept (a connection receives its next request while the previous one
    waits for its acknowledgements); buffers above :data:`SPARE_MAX_BYTES` are not kept.

    >>> rb = ReceiveBuffer()
    >>> first = rb.take(100_000)              # a view of a new buffer
    >>> second = rb.take(80_000)              # the first frame is still in use: another new buffer
    >>> address = id(first.obj); del first
    >>> id(rb.take(90_000).obj) == address    # no view of the first is left: received into again
    True
    >>> id(rb.take(200_000).obj) == address   # too small for this one
    False
    """

    __slots__ = ("spares",)
    KEEP = 2

    def __init__(self):
        self.spares: list = []

    def take(self, size: int) -> memoryview:
        spares = self.spares
        for buf in spares:
            if len(buf) >= size and _unexported(buf):
                return memoryview(buf)[:size]
        buf = FrameBuffer(size)
        if size <= SPARE_MAX_BYTES:
            spares.insert(0, buf)
            del spares[self.KEEP:]
        return memoryview(buf)


    def claim(self, size: int, first: int) -> FrameBuffer:
        """A buffer to receive a frame of ``size`` bytes into, of which ``first`` have arrived: a free kept buffer
        (preferring one large enough for the whole frame), else a new one only as long as needed so far (at
        least :data:`GROW_MIN_BYTES`) -- :meth:`grow` lengthens it as the rest arrives. Hand it to :meth:`keep`
        once the frame is complete."""
        free = [buf for buf in self.spares if _unexported(buf)]
        for buf in free:
            if len(buf) >= size:
                return buf
        if free:
            return self.grow(free[0], size, 0, first)
        return FrameBuffer(min(size, max(first, GROW_MIN_BYTES)))

    @staticmethod
    def grow(buf: FrameBuffer, size: int, filled: int, wanted: int) -> FrameBuffer:
        """``buf`` lengthened to hold at least ``wanted`` bytes (at most ``size``): twice what has arrived, so
        the bytes touched stay within twice the bytes received and each byte is copied a bounded number of times.
        Realloc moves it at most; a buffer something still looks at is replaced by a copy of its ``filled``
        bytes."""
        target = min(size, max(wanted, 2 * filled, GROW_MIN_BYTES))
        if target <= len(buf):
            return buf
        try:
            buf += bytes(target - len(buf))   # bytes(n) comes from calloc: the pages are written once, here
            return buf
        except BufferError:
            fresh = FrameBuffer(target)
            fresh[:filled] = memoryview(buf)[:filled]
            return fresh

    def keep(self, buf: FrameBuffer) -> None:
        """``buf`` holds a complete frame now: keep it (newest first) for a later frame, unless it is huge."""
        spares = self.spares
        for i, spare in enumerate(spares):
            if spare is buf:
                del spares[i]
                break
        if len(buf) <= SPARE_MAX_BYTES:
            spares.insert(0, buf)
            del spares[self.KEEP:]


class FrameReader:
    """Turns arriving bytes into complete frames (without their size prefixes).

    With a ``pool`` (a :class:`~kafkalab.common.memory_pool.MemoryPool`) every frame's size is taken from it as
    soon as the size prefix is read; when the pool says no, the reader stops (:attr:`memory_wanted`) until
    :meth:`retry_allocation` succeeds. Whoever takes a frame gives its ``len()`` back to the pool when done.

    >>> r = FrameReader()
    >>> r.feed(b"\\x00\\x00\\x00\\x03ab")
    []
    >>> r.feed(b"c\\x00\\x00")
    [b'abc']
    >>> r.buffered
    2
    """

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_BYTES, *, writable: bool = False, pool=None):
        self.max_size = max_size
        self.writable = writable  # large frames as writable views (for a handler that patches them in place)
        self.pool = pool          # None: nothing is counted (Kafka's MemoryPool.NONE)
        self._buf = bytearray()
        self._need = -1  # size of the frame being assembled, -1 while the size is still unknown
        self._allocated = False   # the pool granted ``_need`` bytes for the frame being assembled
        self._frame: Optional[FrameBuffer] = None  # a large frame's own buffer, grown as its bytes arrive
        self._filled = 0
        self._scratch: Optional[memoryview] = None
        self._large = ReceiveBuffer()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf) + self._filled

    @property
    def expected_size(self) -> int:
        """The size of the frame being assembled, or -1 if its size prefix has not fully arrived."""
        return self._need

    @property
    def memory_wanted(self) -> bool:
        """The size of the next frame is known but the pool had no memory for it: stop reading until
        :meth:`retry_allocation` succeeds (Kafka mutes the channel)."""
        return self._need > 0 and not self._allocated

    def retry_allocation(self) -> list:
        """Ask the pool again; on success carry on with the bytes already received and return the frames they
        complete (still ``memory_wanted`` and ``[]`` if the pool said no again)."""
        if not self.memory_wanted:
            return []
        return self._feed(b"", True)

    def release_pending(self) -> None:
        """Give the pool back the memory of a frame that will never be completed (the connection closed)."""
        if self._need > 0 and self._allocated and self.pool is not None:
            self.pool.release(self._need)
        self._allocated = False
        self._frame = None

    def feed(self, data) -> list[bytes]:
        """Add received bytes; return every frame now complete. Raises InvalidReceiveError on a bad size.

        Frames that were complete before the bad size are not lost: the error carries them in ``.frames``, so
        feeding a stream whole or in pieces yields the same frames before the error.
        """
        return self._feed(data, False)

    # -------------------------------------------------------------------------- receiving in place
    def get_buffer(self) -> memoryview:
        """Where the next received bytes should be written (then call :meth:`buffer_updated`)."""
        if self._frame is not None:
            if self._filled == len(self._frame):
                self._frame = self._large.grow(self._frame, self._need, self._filled, self._filled + 1)
            return memoryview(self._frame)[self._filled:self._need]
        if self._scratch is None:
            self._scratch = memoryview(bytearray(SCRATCH_BYTES))
        return self._scratch

    def buffer_updated(self, nbytes: int) -> list:
        """``nbytes`` were written into the last :meth:`get_buffer`; return every frame now complete.

        Large frames come back as memoryviews over their own :class:`FrameBuffer` (read-only unless the reader
        was made ``writable``), small ones as ``bytes``.
        """
        if self._frame is not None:
            self._filled += nbytes
            return [self._finish(True)] if self._filled == self._need else []
        return self._feed(self._scratch[:nbytes], True)

    def _finish(self, as_view: bool):
        frame = memoryview(self._frame)[:self._need]
        self._large.keep(self._frame)
        self._frame, self._filled, self._need, self._allocated = None, 0, -1, False
        if not as_view:
            return bytes(frame)
        return frame if self.writable else frame.toreadonly()

    def _allocate(self) -> bool:
        if self._need > 0 and self.pool is not None and not self.pool.try_allocate(self._need):
            return False
        self._allocated = True
        return True

    def _start_large(self, data) -> None:
        """The frame's size is known and its first bytes are ``data``: give it a buffer of its own, only as large
        as what has arrived so far (it grows as the rest arrives; the size prefix is a promise, not bytes)."""
        self._frame = self._large.claim(self._need, len(data))
        self._filled = len(data)
        self._frame[:self._filled] = data

    def _feed(self, data, as_view: bool) -> list:
        frames = []
        if self._frame is not None:               # the rest of a large frame first, straight into its buffer
            data = memoryview(data).cast("B")
            take = min(len(data), self._need - self._filled)
            if self._filled + take > len(self._frame):
                self._frame = self._large.grow(self._frame, self._need, self._filled, self._filled + take)
            self._frame[self._filled:self._filled + take] = data[:take]
            self._filled += take
            if self._filled < self._need:
                return frames
            frames.append(self._finish(as_view))
            data = data[take:]
        self._buf += data
        buf = self._buf
        pos = 0
        with memoryview(buf) as view:
            while True:
                if self._need < 0:
                    if len(buf) - pos < 4:
                        break
                    size = _SIZE.unpack_from(buf, pos)[0]
                    if size < 0 or size > self.max_size:
                        view.release()
                        del buf[:pos]
                        raise InvalidReceiveError(size, self.max_size, frames)
                    self._need, self._allocated = size, False
                    pos += 4
                if not self._allocated and not self._allocate():
                    break                          # no memory: the rest waits here until retry_allocation
                if len(buf) - pos < self._need:
                    if self._need >= LARGE_FRAME_BYTES:   # give it its own buffer; the rest will go there
                        self._start_large(view[pos:])
                        pos = len(buf)
                    break
                frames.append(bytes(view[pos:pos + self._need]))
                pos += self._need
                self._need, self._allocated = -1, False
        if pos:
            del buf[:pos]
        return frames
