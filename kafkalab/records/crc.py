"""CRC-32C of a RecordBatch: what it covers, and why it skips the first 21 bytes.

Theory of operation
-------------------
Every v2 batch carries a CRC-32C (the Castagnoli polynomial, which modern CPUs compute in hardware) stored
as an unsigned 32-bit number at bytes 17-20. It covers bytes ``[21, end)``: from ``attributes`` to the last
byte of the last record. The fields *before* it are left out on purpose::

    0  base_offset             int64   \\
    8  batch_length            int32    |  not covered: the broker rewrites base_offset and
    12 partition_leader_epoch  int32    |  partition_leader_epoch on every append
    16 magic                   int8    /
    17 crc                     uint32
    21 attributes ... records          <- covered

A producer does not know at which offset its batch will land, and which leader epoch will append it. The
leader writes both into the batch just before appending it to the log; because neither is covered, it does
not have to recompute the CRC (or even look at the records), and the checksum the producer computed still
protects the data end to end, from the producer's memory to the consumer's. (``magic`` sits before the CRC
because a reader must know the format before it knows where the CRC is.)

When the broker changes something that *is* covered (the LogAppendTime bit and ``max_timestamp`` on a topic
with ``message.timestamp.type=LogAppendTime``), it must recompute the CRC: see
:func:`kafkalab.records.header.set_max_timestamp`.

A broker answers a batch whose CRC does not match with CORRUPT_MESSAGE (error code 2).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` (``checksum``,
``computeChecksum``, ``isValid``, ``ensureValid``) and ``clients/src/main/java/org/apache/kafka/common/utils/
Crc32C.java``.
"""
from __future__ import annotations

import struct

from crc32c import crc32c as _crc32c

from kafkalab.protocol.errors import DecodeError

__all__ = ["crc32c", "CRC_OFFSET", "ATTRIBUTES_OFFSET", "batch_checksum", "stored_checksum", "crc_is_valid",
           "ensure_crc_valid"]

#: Where the stored CRC sits in a batch, and where the checksummed range starts.
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_MIN_BATCH_LENGTH = 61 - 12


def crc32c(data, value: int = 0) -> int:
    """CRC-32C of ``data`` (any bytes-like object); pass a previous result as ``value`` to continue it.

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    return _crc32c(data, value)


def _batch_end(buf, pos: int) -> int:
    if len(buf) - pos < 61:
        raise DecodeError(f"a record batch header needs 61 bytes but only {max(len(buf) - pos, 0)} remain",
                          path="batch_length", offset=pos)
    length = _LENGTH.unpack_from(buf, pos + 8)[0]
    if length < _MIN_BATCH_LENGTH:
        raise DecodeError(f"batch_length {length} is smaller than the header ({_MIN_BATCH_LENGTH})",
                          path="batch_length", offset=pos + 8)
    end = pos + 12 + length
    if end > len(buf):
        raise DecodeError(f"batch_length {length} runs {end - len(buf)} bytes past the end of the data",
                          path="batch_length", offset=pos + 8)
    return end


def batch_checksum(buf, pos: int = 0) -> int:
    """Compute the CRC-32C of the batch at ``buf[pos:]`` over ``[pos + 21, end of batch)`` (Kafka's
    ``computeChecksum``). Raises DecodeError if the batch is not all there."""
    end = _batch_end(buf, pos)
    return _crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:end])


def stored_checksum(buf, pos: int = 0) -> int:
    """The CRC the batch at ``buf[pos:]`` claims (bytes 17-20, unsigned)."""
    if len(buf) - pos < ATTRIBUTES_OFFSET:
        raise DecodeError("batch too short to hold a CRC", path="crc", offset=pos)
    return _CRC.unpack_from(buf, pos + CRC_OFFSET)[0]


def crc_is_valid(buf, pos: int = 0) -> bool:
    """True if the batch at ``buf[pos:]`` is complete and its stored CRC matches (Kafka's ``isValid``)."""
    try:
        return batch_checksum(buf, pos) == stored_checksum(buf, pos)
    except DecodeError:
        return False


def ensure_crc_valid(buf, pos: int = 0) -> None:
    """Raise DecodeError (path ``crc``, offset of the CRC field) unless the CRC matches (Kafka's
    ``ensureValid``; a broker turns this into CORRUPT_MESSAGE)."""
    computed = batch_checksum(buf, pos)
    stored = stored_checksum(buf, pos)
    if computed != stored:
        raise DecodeError(f"record batch is corrupt: stored crc {stored:#010x}, computed crc {computed:#010x}",
                          path="crc", offset=pos + CRC_OFFSET)
