"""The four compression codecs of a RecordBatch, and a guard against decompression bombs.

Theory of operation
-------------------
A producer compresses a whole batch, not record by record: similar records compress far better together.
Only the records are compressed. The 61-byte batch header stays plain, *including* ``records_count``, so a
broker can read offsets, sequence numbers and the count, and patch ``base_offset``, without inflating
anything. Bits 0-2 of the batch ``attributes`` name the codec (Kafka's ``compression.type`` values)::

    0 none    1 gzip    2 snappy    3 lz4    4 zstd

Each codec has a wire format that Kafka fixed long ago, and each has a trap:

* **gzip** is a real gzip stream (magic ``1f 8b``), not raw zlib/deflate. Several members in a row are legal.
* **snappy** exists in three flavours. Kafka's Java client writes the *xerial* framing (magic
  ``82 53 4E 41 50 50 59 00``, int32 version, int32 compat, then blocks of int32 length + raw snappy);
  librdkafka writes one *raw* snappy block. Readers must accept both. Google's "framed" snappy format is a
  third, unrelated one that Kafka never uses. We write raw (like librdkafka) and read both.
* **lz4** is the LZ4 *frame* format (magic ``04 22 4D 18``) with *independent* blocks: Kafka's reader refuses
  frames whose blocks refer back to earlier ones. Many LZ4 libraries link blocks by default, and the
  difference only shows once the data is larger than one block (64 KiB), i.e. only with big batches.
* **zstd** is a standard zstd frame (magic ``28 B5 2F FD``); it needs Produce v7+ / Fetch v10+.

A few compressed bytes can inflate to gigabytes (a *decompression bomb*). Before inflating we bound the
output: the raw snappy format states its size up front, LZ4 and zstd frames are made of blocks with a known
maximum size (we walk the block headers and add them up), and gzip is inflated with a cap on the output.
Anything that would exceed ``max_decompressed_bytes`` raises
:class:`~kafkalab.protocol.errors.DecodeError` before the memory is spent. The LZ4/zstd bound is counted in
whole blocks, so it is conservative by at most one block (64 KiB-4 MiB for LZ4, 128 KiB for zstd).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/CompressionType.java`` and the codecs in
``clients/src/main/java/org/apache/kafka/common/compress/`` (``GzipCompression``, ``SnappyCompression``,
``Lz4Compression`` with ``Lz4BlockInputStream``/``Lz4BlockOutputStream``, ``ZstdCompression``).
"""
from __future__ import annotations

import enum
import gzip
import struct
import zlib
from typing import Union

import cramjam

from kafkalab.protocol.errors import DecodeError, EncodeError

__all__ = ["CompressionType", "compress", "decompress", "DEFAULT_MAX_DECOMPRESSED_BYTES", "XERIAL_MAGIC",
           "snappy_compress_xerial", "compression_format"]

#: Default cap on the size of one batch's decompressed records (64 MiB).
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

#: The first 8 bytes of a xerial-framed snappy stream (what Kafka's Java producer writes).
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")   # magic, version, compat
_INT32 = struct.Struct(">i")
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_U32LE = struct.Struct("<I")
_U64LE = struct.Struct("<Q")


class CompressionType(enum.IntEnum):
    """Codec ids in bits 0-2 of the batch attributes; ``.config_name`` is the ``compression.type`` value."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, value: Union[int, str, None]) -> "CompressionType":
        """Accept an id (``2``), a ``compression.type`` name (``"snappy"``), a member, or None (= none)."""
        if value is None:
            return cls.NONE
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise EncodeError(f"unknown compression.type {value!r} (none, gzip, snappy, lz4, zstd)") from None
        try:
            return cls(value)
        except ValueError:
            raise EncodeError(f"unknown compression codec id {value!r}") from None


# --------------------------------------------------------------------------------------------------- writing

def compress(codec: Union[int, str], data, *, level: int | None = None) -> bytes:
    """Compress a batch's records with ``codec`` the way Kafka's readers expect.

    gzip: a gzip stream (level 6 by default, mtime 0 so output is reproducible); snappy: one raw block
    (librdkafka's choice); lz4: an LZ4 frame with independent 64 KiB blocks; zstd: one zstd frame (level 3).
    """
    codec = CompressionType.of(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        return gzip.compress(data, compresslevel=6 if level is None else level, mtime=0)
    if codec is CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec is CompressionType.LZ4:
        # block_linked=False is the whole point: the default links blocks, which Kafka refuses to read.
        c = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))


def snappy_compress_xerial(data, block_size: int = 32 * 1024) -> bytes:
    """Snappy with the xerial framing, as Kafka's Java producer writes it (for comparisons in the labs)."""
    out = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    view = memoryview(data)
    for i in range(0, len(view), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[i:i + block_size]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


# --------------------------------------------------------------------------------------------------- reading

def decompress(codec: int, data, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """Inflate ``data`` written with ``codec``; raise DecodeError if it is corrupt or would exceed the cap.

    ``DecodeError.offset`` is relative to the start of ``data``.
    """
    cap = max_decompressed_bytes
    try:
        if codec == CompressionType.GZIP:
            return _gzip_decompress(data, cap)
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(data, cap)
        if codec == CompressionType.LZ4:
            return _lz4_decompress(data, cap)
        if codec == CompressionType.ZSTD:
            return _zstd_decompress(data, cap)
        if codec == CompressionType.NONE:
            return bytes(data)
    except (cramjam.DecompressionError, zlib.error, EOFError, OSError) as e:
        name = CompressionType(codec).config_name
        raise DecodeError(f"corrupt {name} data: {e}", offset=0) from None
    raise DecodeError(f"unknown compression codec id {codec} in the batch attributes", offset=0)


def _too_big(what: str, size: int, cap: int) -> DecodeError:
    return DecodeError(f"{what} would decompress to {size} bytes, more than max_decompressed_bytes={cap}",
                       offset=0)


def _gzip_decompress(data, cap: int) -> bytes:
    if bytes(data[:2]) != b"\x1f\x8b":
        raise DecodeError("gzip data does not start with the gzip magic 1f 8b", offset=0)
    parts = []
    total = 0
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)          # 16+: expect the gzip wrapper
        out = d.decompress(rest, cap - total + 1)             # never more than one byte past the cap
        total += len(out)
        if total > cap:
            raise _too_big("gzip data", total, cap)
        parts.append(out)
        if not d.eof:
            raise DecodeError("gzip stream ends before its last block", offset=len(data))
        rest = d.unused_data
        if rest[:2] != b"\x1f\x8b":                          # like Java's GZIPInputStream: another member
            break                                            # follows only if its magic does
    return b"".join(parts)


def _snappy_decompress(data, cap: int) -> bytes:
    if bytes(data[:8]) != XERIAL_MAGIC:
        size = cramjam.snappy.decompress_raw_len(data)        # the raw format states its size up front
        if size > cap:
            raise _too_big("snappy block", size, cap)
        return bytes(cramjam.snappy.decompress_raw(data))
    # xerial: 16-byte header (version and compat are not checked, like Kafka), then int32 length + raw block.
    n = len(data)
    if n < 16:
        raise DecodeError("xerial snappy header needs 16 bytes", offset=n)
    pos = 16
    blocks = []
    total = 0
    while pos < n:
        if n - pos < 4:
            raise DecodeError("xerial snappy block length cut short", offset=pos)
        length = _INT32.unpack_from(data, pos)[0]
        pos += 4
        if length < 0 or length > n - pos:
            raise DecodeError(f"xerial snappy block of {length} bytes but only {n - pos} remain", offset=pos - 4)
        block = data[pos:pos + length]
        total += cramjam.snappy.decompress_raw_len(block)
        if total > cap:
            raise _too_big("xerial snappy data", total, cap)
        blocks.append(bytes(cramjam.snappy.decompress_raw(block)))
        pos += length
    return b"".join(blocks)


_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def _lz4_decompress(data, cap: int) -> bytes:
    """Check the frame header like Kafka's reader, bound the output from the block headers, then inflate."""
    n = len(data)
    if n < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise DecodeError("lz4 data is not an LZ4 frame (magic 04 22 4D 18)", offset=0)
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise DecodeError(f"LZ4 frame version {flg >> 6} is not supported (only 1)", offset=4)
    if not flg & 0x20:
        raise DecodeError("LZ4 frame uses dependent (linked) blocks; Kafka only reads independent blocks",
                          offset=4)
    if flg & 0x03:
        raise DecodeError("LZ4 frame sets reserved FLG bits (0-1), which Kafka's reader refuses", offset=4)
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
    if block_max is None or bd & 0x8F:
        raise DecodeError(f"LZ4 frame has an invalid block size code in BD byte {bd:#04x}", offset=5)
    pos = 6
    if flg & 0x08:                                        # content size present: an exact promise
        if n < 16:
            raise DecodeError("LZ4 frame header cut short", offset=n)
        content_size = _U64LE.unpack_from(data, pos)[0]
        if content_size > cap:
            raise _too_big("LZ4 frame", content_size, cap)
        pos += 8
    pos += 1                                              # header checksum (checked by the inflater)
    block_checksum = 4 if flg & 0x10 else 0
    bound = 0
    while True:
        if n - pos < 4:
            raise DecodeError("LZ4 frame ends without its end mark", offset=pos)
        word = _U32LE.unpack_from(data, pos)[0]
        pos += 4
        if word == 0:                                     # end mark
            break
        size = word & 0x7FFFFFFF
        if size > block_max:
            raise DecodeError(f"LZ4 block of {size} bytes exceeds the frame's block size {block_max}",
                              offset=pos - 4)
        bound += size if word & 0x80000000 else block_max  # stored blocks are exact, others at most one block
        if bound > cap:
            raise _too_big("LZ4 frame", bound, cap)
        pos += size + block_checksum
    pos += 4 if flg & 0x04 else 0                         # content checksum
    if pos > n:
        raise DecodeError("LZ4 frame ends inside its checksum", offset=n)
    # Bytes after the end mark are ignored, as Kafka's reader stops at the end mark.
    return bytes(cramjam.lz4.decompress(data[:pos]))


def _zstd_decompress(data, cap: int) -> bytes:
    """Walk every frame's block headers to bound the output, then inflate."""
    n = len(data)
    if n < 4 or bytes(data[:4]) != _ZSTD_MAGIC:
        raise DecodeError("zstd data is not a zstd frame (magic 28 B5 2F FD)", offset=0)
    pos = 0
    bound = 0
    while pos < n:
        if n - pos < 8:
            raise DecodeError("zstd frame header cut short", offset=pos)
        magic = _U32LE.unpack_from(data, pos)[0]
        if magic & 0xFFFFFFF0 == 0x184D2A50:              # skippable frame: 4-byte size, then skipped
            pos += 8 + _U32LE.unpack_from(data, pos + 4)[0]
            continue
        if magic != 0xFD2FB528:
            raise DecodeError("bytes after a zstd frame are not another frame", offset=pos)
        fhd = data[pos + 4]
        pos += 5
        if fhd & 0x08:
            raise DecodeError("zstd frame header has its reserved bit set", offset=pos - 1)
        single_segment = fhd & 0x20
        fcs_size = (0, 2, 4, 8)[fhd >> 6] or (1 if single_segment else 0)
        window = 0
        if not single_segment:
            wd = data[pos]
            base = 1 << (10 + (wd >> 3))
            window = base + (base >> 3) * (wd & 7)
            pos += 1
        pos += (0, 1, 2, 4)[fhd & 3]                      # dictionary id
        if n - pos < fcs_size:
            raise DecodeError("zstd frame header cut short", offset=pos)
        content_size = None
        if fcs_size:
            content_size = int.from_bytes(data[pos:pos + fcs_size], "little") + (256 if fcs_size == 2 else 0)
            if content_size > cap:
                raise _too_big("zstd frame", content_size, cap)
            pos += fcs_size
        if single_segment:
            window = content_size
        block_max = min(window, 128 * 1024)
        frame_bound = 0
        while True:
            if n - pos < 3:
                raise DecodeError("zstd frame ends inside a block header", offset=pos)
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            pos += 3
            last, kind, size = header & 1, (header >> 1) & 3, header >> 3
            if kind == 3:
                raise DecodeError("zstd block of the reserved type 3", offset=pos - 3)
            frame_bound += block_max if kind == 2 else size    # raw and RLE blocks state their output size
            if bound + frame_bound > cap:
                raise _too_big("zstd data", bound + frame_bound, cap)
            pos += 1 if kind == 1 else size
            if last:
                break
        pos += 4 if fhd & 0x04 else 0                    # content checksum
        bound += frame_bound if content_size is None else min(frame_bound, content_size)
    if pos > n:
        raise DecodeError("zstd data ends inside a frame", offset=n)
    return bytes(cramjam.zstd.decompress(data))


def compression_format(codec: int, data) -> str:
    """A name for the on-the-wire framing (for annotated dumps): ``GZIP``, ``SNAPPY_RAW``, ``SNAPPY_XERIAL``..."""
    if codec == CompressionType.SNAPPY:
        return "SNAPPY_XERIAL" if bytes(data[:8]) == XERIAL_MAGIC else "SNAPPY_RAW"
    return {CompressionType.GZIP: "GZIP", CompressionType.LZ4: "LZ4_FRAME",
            CompressionType.ZSTD: "ZSTD_FRAME"}.get(codec, "UNKNOWN_CODEC")

