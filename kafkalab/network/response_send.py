"""Writing a response: encoded pieces in memory, record data from log files with sendfile or through TLS.

Theory of operation
-------------------
A response is encoded into a list of *pieces* (:func:`kafkalab.protocol.codec.encode_into`): bytes for the
size, header and fields, and for the ``records`` of a Fetch whatever the log read returned -- bytes for a small
slice, a :class:`FileRegion` (file, position, size) for a large one, a :class:`RecordsSlices` when a read
crossed segment files. The size prefix is the sum of the pieces' lengths, known before a byte of record data is
read (a FileRegion has a ``len()``), as in Kafka's ``MultiRecordsSend``.

Then the pieces go out in order:

* all of them in memory (every response but a Fetch with big slices): joined, one write;
* a FileRegion of at least :data:`SENDFILE_THRESHOLD` bytes: the bytes before it are written, and once the
  transport's buffer is empty the region goes **from the page cache to the socket** with ``os.sendfile``
  (zero-copy, Kafka's ``FileRecords.writeTo`` -> ``FileChannel.transferTo``): straight to the socket for as much
  as it takes, then through the event loop's ``sendfile``, which waits until the socket can take more;
* a smaller FileRegion is read (one ``pread``) and joins the bytes around it: a syscall per small slice would
  cost more than the copy;
* on a **TLS** connection nothing may be written to the socket under the TLS layer: record data is read in
  :data:`TLS_COPY_CHUNK` chunks and written through the transport, which encrypts it (Kafka's
  ``SslTransportLayer.transferFrom`` copies too).

Counting the paths: every connection's writes are counted per listener (:class:`SendCounters`, gathered per
broker by :class:`ResponseSendStats`, shown in ``broker.metrics()``): bytes and sends that went out with
``sendfile`` (the process never held them), bytes and writes copied from the process's memory into the socket
(or the TLS layer), and of the latter, the bytes of file regions that were read into the process instead of
sent with ``sendfile`` (on TLS, every region). **Kafka has no such metric**: its
``BytesOutPerSec`` counts a topic's record bytes whichever way they went; these counters are kafkalab's own, to
make zero-copy visible.

Worked example: a Fetch of three partitions answers 200 bytes of fields, a 1 MiB slice of
``00000000000000000000.log`` at position 4096, 300 bytes of fields, a 2 KiB slice of another log, 40 bytes. The
pieces are [size, 200 B, FileRegion(1 MiB), 300 B, FileRegion(2 KiB), 40 B]: the first 200 bytes (plus the size)
are written; 1 MiB goes with ``os.sendfile`` (the socket takes, say, 200 KiB at once; the loop's sendfile sends the
rest as room appears); the 2 KiB slice is read and sent with the 340 bytes around it in one write.

Mirrors ``clients/src/main/java/org/apache/kafka/common/network/Send.java`` and its ``MultiRecordsSend`` /
``DefaultRecordsSend``, ``FileRecords.writeTo`` and ``SslTransportLayer.transferFrom``.
"""
from __future__ import annotations

import asyncio
import os
import struct

from kafkalab.protocol import RESPONSE_HEADER, codec, response_header_version, response_schema

__all__ = ["FileRegion", "RecordsSlices", "ResponseSendStats", "SENDFILE_THRESHOLD", "SendCounters",
           "TLS_COPY_CHUNK", "send_response", "write_pieces", "send_file_region"]

#: Record data at least this large is written with sendfile; smaller pieces are copied (cheaper syscalls).
SENDFILE_THRESHOLD = 64 * 1024
#: Bytes of a log file read per write on a TLS connection (the TLS layer cuts them into 16 KiB records).
TLS_COPY_CHUNK = 256 * 1024
_SIZE = struct.Struct(">i")


class FileRegion:
    """Bytes of a file to be sent as they are (a log segment slice): zero-copy with ``sendfile``.

    ``len()`` works, so a FileRegion can stand in for a ``records`` field when a response is encoded.
    """

    __slots__ = ("path", "position", "size")

    def __init__(self, path, position: int, size: int):
        self.path, self.position, self.size = path, position, size

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.position)
            return f.read(self.size)

    def __repr__(self) -> str:
        return f"FileRegion({os.path.basename(str(self.path))}, position={self.position}, size={self.size})"


class SendCounters:
    """How one listener's responses left the process, per path (kafkalab's own counters: Kafka has none).

    * ``sendfile_bytes`` / ``sendfile_sends``: log file bytes sent with ``sendfile`` -- page cache to socket, never
      in the process -- and how many file regions went that way (one region may take several system calls);
    * ``copied_bytes`` / ``copied_sends``: bytes written from the process's memory to the transport (every size
      prefix, header and field; small log slices, which the Fetch handler reads as bytes; on TLS all record data,
      which the TLS layer encrypts) and how many writes;
    * ``file_bytes_copied``: of ``copied_bytes``, the bytes of file regions (large log slices) that the socket
      server read into the process instead of sending them with ``sendfile``: on TLS, all of them.
    """

    __slots__ = ("sendfile_bytes", "sendfile_sends", "copied_bytes", "copied_sends", "file_bytes_copied")

    def __init__(self):
        self.sendfile_bytes = self.sendfile_sends = self.copied_bytes = self.copied_sends = 0
        self.file_bytes_copied = 0

    def copied(self, size: int) -> None:
        self.copied_bytes += size
        self.copied_sends += 1

    def sent_with_sendfile(self, size: int) -> None:
        self.sendfile_bytes += size
        self.sendfile_sends += 1

    def read_from_file(self, size: int) -> None:
        self.file_bytes_copied += size

    def as_metrics(self, tags: str = "") -> dict:
        return {f"sendfile-bytes-total{tags}": self.sendfile_bytes, f"sendfile-sends-total{tags}": self.sendfile_sends,
                f"copied-bytes-total{tags}": self.copied_bytes, f"copied-sends-total{tags}": self.copied_sends,
                f"copied-file-bytes-total{tags}": self.file_bytes_copied}


class ResponseSendStats:
    """One broker's :class:`SendCounters`, one per listener. :meth:`metrics` gives the broker's totals
    (``sendfile-bytes-total``, ``sendfile-sends-total``, ``copied-bytes-total``, ``copied-sends-total``,
    ``copied-file-bytes-total``) and the same per listener (``sendfile-bytes-total,listener=PLAINTEXT``)."""

    def __init__(self):
        self.by_listener: dict[str, SendCounters] = {}

    def listener(self, name: str) -> SendCounters:
        return self.by_listener.setdefault(name, SendCounters())

    def metrics(self) -> dict:
        total = SendCounters()
        out: dict = {}
        for name, counters in sorted(self.by_listener.items()):
            out.update(counters.as_metrics(f",listener={name}"))
            for field in SendCounters.__slots__:
                setattr(total, field, getattr(total, field) + getattr(counters, field))
        return {**total.as_metrics(), **out}


class RecordsSlices:
    """Several FileRegions (or bytes) that together form one ``records`` field (a read across segments)."""

    __slots__ = ("parts", "size")

    def __init__(self, parts):
        self.parts = list(parts)
        self.size = sum(len(p) for p in self.parts)

    def __len__(self) -> int:
        return self.size


async def send_response(writer, api_key: int, api_version: int, correlation_id: int, body,
                        sendfile=None) -> int:
    """Encode one response and write it to ``writer`` (the connection: ``write``, ``drain``, ``tls``,
    ``transport``, ``get_extra_info``). ``sendfile(writer, region)`` sends a large file region (default
    :func:`send_file_region`). Returns the bytes written, size prefix included."""
    out: list = [b""]
    hv = response_header_version(api_key, api_version)
    codec.encode_into(RESPONSE_HEADER, hv, RESPONSE_HEADER.body_class(correlation_id=correlation_id), out)
    # Handlers fill every field they know; the version decides what goes on the wire (strict=False).
    codec.encode_into(response_schema(api_key), api_version, body, out, strict=False)
    total = 0
    for piece in out:
        total += len(piece)
    out[0] = _SIZE.pack(total)
    try:
        data = b"".join(out)        # every piece in memory (the usual case): one write
    except TypeError:               # file regions among them: sendfile for those
        await write_pieces(writer, out, sendfile or send_file_region)
    else:
        writer.write(data)
        await writer.drain()
    return total + 4


async def write_pieces(writer, pieces: list, sendfile) -> None:
    """Write ``pieces`` in order: bytes joined, large file regions through ``sendfile``, small ones read."""
    buffered: list = []
    for piece in pieces:
        if isinstance(piece, (bytes, bytearray, memoryview)):
            buffered.append(piece)
            continue
        parts = piece.parts if isinstance(piece, RecordsSlices) else [piece]
        for part in parts:
            if isinstance(part, FileRegion) and part.size >= SENDFILE_THRESHOLD:
                if buffered:
                    writer.write(b"".join(buffered))
                    buffered = []
                await writer.drain()
                await sendfile(writer, part)
            elif isinstance(part, FileRegion):
                buffered.append(part.read())
                writer.send_counters.read_from_file(part.size)
            else:
                buffered.append(part)
    if buffered:
        writer.write(b"".join(buffered) if len(buffered) > 1 else buffered[0])
    await writer.drain()


async def send_file_region(writer, region: FileRegion) -> None:
    """Send ``region`` from the page cache to the socket. While the transport has nothing buffered (so nothing
    written earlier can be overtaken) ``os.sendfile`` goes straight to the socket for as much as it takes;
    whatever it did not take goes through the event loop's ``sendfile``, which waits until the socket can take
    more. A response of a thousand partitions is a thousand of these: the direct call saves the loop's per-call
    set-up (pausing reads, waiters) when the socket keeps up. On TLS: :func:`_copy_through_tls`.

    The region counts in ``writer.send_counters`` as sent with sendfile: on a socket transport the loop's
    ``sendfile`` calls ``os.sendfile`` too (its copying fallback is for transports that cannot, such as TLS,
    which never get here)."""
    fd = os.open(region.path, os.O_RDONLY)
    try:
        position, remaining = region.position, region.size
        if writer.tls:
            await _copy_through_tls(writer, fd, position, remaining)
            return
        transport, sock = writer.transport, writer.get_extra_info("socket")
        if sock is not None and not transport.is_closing() and transport.get_write_buffer_size() == 0:
            sent = _sendfile_while_it_takes(sock.fileno(), fd, position, remaining)
            position, remaining = position + sent, remaining - sent
        if remaining:
            with os.fdopen(fd, "rb", closefd=False) as f:
                await asyncio.get_running_loop().sendfile(transport, f, position, remaining, fallback=True)
        writer.send_counters.sent_with_sendfile(region.size)
    finally:
        os.close(fd)


async def _copy_through_tls(writer, fd: int, position: int, count: int) -> None:
    """Read ``count`` bytes of the file at ``position`` and write them through the (TLS) transport, waiting for
    room after each chunk. A file that ends early (truncated under us) closes the connection: the response's
    size is already on the wire, so a short one would leave the client out of step."""
    while count:
        chunk = os.pread(fd, min(count, TLS_COPY_CHUNK), position)
        if not chunk:
            raise ConnectionAbortedError(f"log file ended {count} bytes early while sending a fetch response")
        writer.send_counters.read_from_file(len(chunk))
        writer.write(chunk)
        position, count = position + len(chunk), count - len(chunk)
        await writer.drain()


def _sendfile_while_it_takes(out_fd: int, in_fd: int, position: int, count: int) -> int:
    """``os.sendfile`` on a non-blocking socket until done or the socket is full; returns the bytes sent."""
    sent = 0
    while sent < count:
        try:
            n = os.sendfile(out_fd, in_fd, position + sent, count - sent)
        except (BlockingIOError, InterruptedError):
            break
        if n == 0:          # the file ends early (truncated under us): let the loop's sendfile report it
            break
        sent += n
    return sent
