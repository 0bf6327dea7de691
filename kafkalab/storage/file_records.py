"""A segment's ``.log`` file: batches appended verbatim, read back by header, and the page cache in between.

Theory of operation
-------------------
A segment's data file holds record batches exactly as the leader stamped them, back to back. Nothing frames
them except their own headers: bytes 8-11 (``batch_length``) say where the next batch starts, so a reader
walks the file by reading 61-byte headers and skipping the records (Kafka's ``FileLogInputStream``). That is
all a broker needs to find an offset, cut a fetch response or check a batch during recovery; it never has to
decode a record.

**Page cache versus disk.** ``write()`` puts bytes in the operating system's page cache; only ``fsync`` makes
them survive a power loss. Kafka does not fsync per write (``flush.messages`` defaults to Long.MAX_VALUE): an
acknowledged batch may exist only in memory, and durability comes from the other replicas. To make that
visible, :class:`FileRecords` counts its bytes twice: ``size`` (written) and ``flushed_size`` (fsync'd), and a
file created since the last flush is not ``durable`` (its directory entry could vanish too).
:meth:`FileRecords.simulate_power_loss` applies what a crash would do: cut the file back to ``flushed_size``,
or remove it entirely if it was never made durable.

Reads hand out :class:`FileSlice` objects -- (path, fd, position, size) -- so the network layer can send the
bytes with ``os.sendfile`` without copying them through Python (Kafka's ``FileRecords.writeTo`` uses
``FileChannel.transferTo`` the same way).

Set :data:`FSYNC` to False (tests do) to skip the real ``fsync`` system call; the model still moves
``flushed_size`` exactly as if it had happened.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/FileRecords.java`` and
``FileLogInputStream.java``.
"""
from __future__ import annotations

import os
import struct
from typing import Iterator, NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import LOG_OVERHEAD, MAGIC, RECORD_BATCH_OVERHEAD, BatchHeader, read_batch_header
from kafkalab.storage.errors import CorruptRecordError, KafkaStorageError

__all__ = ["FileRecords", "FileSlice", "FileBatch", "FSYNC", "fsync_dir", "HEADER_SIZE_UP_TO_MAGIC"]

#: Module switch: call ``os.fsync`` when flushing (the page-cache bookkeeping happens either way).
FSYNC = True
#: base_offset + batch_length + partition_leader_epoch + magic: what a reader needs before trusting a batch.
HEADER_SIZE_UP_TO_MAGIC = 17
#: Smallest size a batch may claim (Kafka's LegacyRecord.RECORD_OVERHEAD_V0), checked before anything else.
MIN_RECORD_OVERHEAD = 14
_LEN = struct.Struct(">i")


def fsync_dir(path: str) -> None:
    """Make a directory's entries (new, renamed, deleted files) durable (Kafka's ``Utils.flushDir``)."""
    if not FSYNC:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileSlice(NamedTuple):
    """``size`` bytes at ``position`` of an open file: hand it to ``os.sendfile(socket_fd, fd, position, size)``."""

    path: str
    fd: int
    position: int
    size: int

    def read(self) -> bytes:
        return _pread_fully(self.fd, self.size, self.position)

    def send_to(self, out_fd: int) -> int:
        """Copy the slice to ``out_fd`` (a socket) with ``os.sendfile``; returns bytes sent."""
        sent = 0
        while sent < self.size:
            n = os.sendfile(out_fd, self.fd, self.position + sent, self.size - sent)
            if n == 0:
                break
            sent += n
        return sent


class FileBatch(NamedTuple):
    """One batch found in a file: where it starts, how long it is, and its header."""

    position: int
    size: int
    header: BatchHeader

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        return self.header.last_offset + 1


def _pread_fully(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class FileRecords:
    """The data file of one segment. Keeps one read/write descriptor open for its lifetime."""

    def __init__(self, path: str, *, create: bool = True, read_only: bool = False):
        self.path = str(path)
        existed = os.path.exists(self.path)
        if not existed and (not create or read_only):
            raise FileNotFoundError(self.path)
        try:
            self._fd = os.open(self.path, os.O_RDONLY if read_only else os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise KafkaStorageError(f"Could not open {self.path}: {e}") from e
        self._size = os.fstat(self._fd).st_size
        self._flushed = self._size          # what was on disk when we opened it survived the last crash
        self.durable = existed              # a brand-new file's directory entry is not durable yet
        self._closed = False

    # ----------------------------------------------------------------------------------------- sizes
    @property
    def fd(self) -> int:
        return self._fd

    def size_in_bytes(self) -> int:
        return self._size

    size = property(size_in_bytes)

    @property
    def flushed_size(self) -> int:
        return self._flushed

    @property
    def unflushed_bytes(self) -> int:
        return self._size - self._flushed

    # --------------------------------------------------------------------------------------- writing
    def append(self, data) -> int:
        """Write ``data`` at the end of the file (into the page cache). Returns the bytes written."""
        self._check_open()
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(self._fd, view[written:], self._size + written)
        self._size += written
        return written

    def flush(self) -> None:
        """fsync: everything written so far survives a power loss from now on."""
        self._check_open()
        if FSYNC and (self._flushed != self._size or not self.durable):
            os.fsync(self._fd)
        if not self.durable:
            fsync_dir(os.path.dirname(self.path))
            self.durable = True
        self._flushed = self._size

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; returns how many were removed."""
        self._check_open()
        if size < 0 or size > self._size:
            raise KafkaStorageError(f"Attempt to truncate log segment {self.path} to {size} bytes failed, "
                                    f"size of this log segment is {self._size} bytes.")
        removed = self._size - size
        if removed:
            os.ftruncate(self._fd, size)
            self._size = size
            self._flushed = min(self._flushed, size)
        return removed

    def trim(self) -> None:
        """Drop preallocated space past the data (a no-op unless ``preallocate`` grew the file)."""
        if os.fstat(self._fd).st_size != self._size:
            os.ftruncate(self._fd, self._size)

    # --------------------------------------------------------------------------------------- reading
    def read(self, position: int, size: int) -> bytes:
        self._check_open()
        size = max(0, min(size, self._size - position))
        return _pread_fully(self._fd, size, position) if size else b""

    def slice(self, position: int, size: int) -> FileSlice:
        size = max(0, min(size, self._size - position))
        return FileSlice(self.path, self._fd, position, size)

    def batch_at(self, position: int, end: Optional[int] = None) -> Optional[FileBatch]:
        """The batch starting at ``position``, from its header alone; None when the bytes up to ``end`` (default:
        the file size) do not hold a complete batch. Raises CorruptRecordError for a header that cannot be
        right (Kafka's ``FileLogInputStream.nextBatch``)."""
        end = self._size if end is None else min(end, self._size)
        remaining = end - position
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return None
        head = os.pread(self._fd, RECORD_BATCH_OVERHEAD, position)
        length = _LEN.unpack_from(head, 8)[0]
        if length < MIN_RECORD_OVERHEAD:
            raise CorruptRecordError(f"Found record size {length} smaller than minimum record overhead "
                                     f"({MIN_RECORD_OVERHEAD}) in file {self.path}.")
        size = length + LOG_OVERHEAD
        if size > remaining:
            return None
        if head[16] != MAGIC:
            raise CorruptRecordError(f"Record batch at position {position} in {self.path} has magic {head[16]}; "
                                     f"only magic {MAGIC} is supported")
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"Record batch is corrupt (the size {size} is smaller than the minimum "
                                     f"allowed overhead {RECORD_BATCH_OVERHEAD})")
        try:
            return FileBatch(position, size, read_batch_header(head, 0))
        except DecodeError as e:  # pragma: no cover - the checks above cover what read_batch_header checks
            raise CorruptRecordError(str(e)) from None

    def batches(self, start: int = 0, end: Optional[int] = None) -> Iterator[FileBatch]:
        """Walk the batches from ``start`` by their headers; stops quietly at an incomplete trailing batch."""
        position = start
        while True:
            batch = self.batch_at(position, end)
            if batch is None:
                return
            yield batch
            position += batch.size

    def search_for_offset_with_size(self, target_offset: int, starting_position: int) -> Optional[FileBatch]:
        """The first batch at or after ``starting_position`` whose last offset is >= ``target_offset``
        (Kafka's ``searchForOffsetWithSize``), or None."""
        for batch in self.batches(starting_position):
            if batch.last_offset >= target_offset:
                return batch
        return None

    def largest_timestamp_after(self, position: int) -> tuple:
        """(max_timestamp, last offset of that batch) over the batches from ``position`` on; (-1, -1) if none."""
        best = (-1, -1)
        for batch in self.batches(position):
            if batch.header.max_timestamp > best[0]:
                best = (batch.header.max_timestamp, batch.last_offset)
        return best

    # ------------------------------------------------------------------------------------ file life cycle
    def last_modified(self) -> int:
        return int(os.stat(self.path).st_mtime * 1000)

    def set_last_modified(self, ms: int) -> None:
        os.utime(self.path, (ms / 1000.0, ms / 1000.0))

    def rename_to(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = str(path)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    @property
    def closed(self) -> bool:
        return self._closed

    def __del__(self):  # a log that is simply dropped (tests, labs) must not leak its descriptor
        if not getattr(self, "_closed", True):
            self._closed = True
            os.close(self._fd)

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def simulate_power_loss(self) -> int:
        """What a crash does to this file: bytes never fsync'd are lost, and a file never made durable
        disappears. Closes the file. Returns the bytes lost."""
        lost = self._size - self._flushed
        durable = self.durable
        self.close()
        if not durable:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
            return self._size
        if lost:
            os.truncate(self.path, self._flushed)
        return lost

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"The file {self.path} is already closed")

    def __repr__(self) -> str:
        return f"FileRecords({os.path.basename(self.path)}, size={self._size}, flushed={self._flushed})"
