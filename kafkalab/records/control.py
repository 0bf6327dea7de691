"""Control records: the transaction markers a broker writes into the log itself.

Theory of operation
-------------------
A transactional producer's records reach the log before anyone knows whether the transaction will commit.
When it ends, the transaction coordinator asks each partition leader (WriteTxnMarkers) to append a
*marker*: a batch of one record whose batch ``attributes`` have both the *control* bit (5) and the
*transactional* bit (4) set, carrying the same ``producer_id``/``producer_epoch`` as the data it closes.
A ``read_committed`` consumer buffers a producer's transactional records until it meets the marker, then
delivers them (COMMIT) or drops them (ABORT); control records themselves are never handed to applications.

Both key and value of a control record are tiny fixed structures, each prefixed by its own int16 version::

    key   = version int16 (0) | type int16           0 ABORT, 1 COMMIT (2-6 are KRaft's own markers)
    value = version int16 (0) | coordinator_epoch int32                  (for ABORT and COMMIT)

The coordinator epoch lets a broker ignore markers from a coordinator that has since been replaced.
Markers use no sequence number (``base_sequence`` -1): they are not written by the producer.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/ControlRecordType.java``,
``EndTransactionMarker.java``, and the ``ControlRecordTypeSchema.json`` / ``EndTxnMarker.json`` message specs.
"""
from __future__ import annotations

import enum
import struct
from typing import NamedTuple, Optional

from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.records.batch import build_batch
from kafkalab.records.header import NO_PARTITION_LEADER_EPOCH, NO_SEQUENCE
from kafkalab.records.record import SimpleRecord

__all__ = ["ControlRecordType", "EndTransactionMarker", "control_record_key", "parse_control_record_key",
           "end_txn_marker_value", "parse_end_txn_marker", "build_end_txn_marker_batch"]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CURRENT_CONTROL_RECORD_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0


class ControlRecordType(enum.IntEnum):
    """The ``type`` in a control record's key."""

    UNKNOWN = -1        # a type this reader does not know: skip it, as Kafka's clients do
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2   # KRaft metadata log
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def _missing_(cls, value):
        return cls.UNKNOWN


class EndTransactionMarker(NamedTuple):
    """A decoded COMMIT or ABORT marker."""

    control_type: ControlRecordType
    coordinator_epoch: int
    version: int = CURRENT_END_TXN_MARKER_VERSION


def control_record_key(control_type: int) -> bytes:
    """The 4-byte key of a control record of ``control_type``."""
    if int(control_type) < 0:
        raise EncodeError("cannot write a control record of type UNKNOWN")
    return _KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, int(control_type))


def parse_control_record_key(key: Optional[bytes]) -> ControlRecordType:
    """The type of a control record from its key; unknown types come back as UNKNOWN.

    A key of a newer version is read as version 0 (newer versions may only add fields at the end).
    """
    if key is None or len(key) < _KEY.size:
        raise DecodeError(f"a control record key needs {_KEY.size} bytes, got {0 if key is None else len(key)}",
                          path="key", offset=0)
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"invalid control record key version {version}", path="key.version", offset=0)
    return ControlRecordType(type_id)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """The 6-byte value of a COMMIT/ABORT marker."""
    return _VALUE.pack(CURRENT_END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_end_txn_marker(key: Optional[bytes], value: Optional[bytes]) -> EndTransactionMarker:
    """Decode a COMMIT/ABORT control record from its key and value (e.g. ``record.key, record.value``)."""
    control_type = parse_control_record_key(key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise DecodeError(f"control record of type {control_type.name} is not a transaction marker",
                          path="key.type", offset=2)
    if value is None or len(value) < _VALUE.size:
        raise DecodeError(f"an end transaction marker value needs {_VALUE.size} bytes, got "
                          f"{0 if value is None else len(value)}", path="value", offset=0)
    version, coordinator_epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise DecodeError(f"invalid end transaction marker version {version}", path="value.version", offset=0)
    return EndTransactionMarker(control_type, coordinator_epoch, version)


def build_end_txn_marker_batch(control_type: int, *, producer_id: int, producer_epoch: int,
                               coordinator_epoch: int, timestamp: Optional[int] = None, base_offset: int = 0,
                               partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """A complete marker batch, as a leader appends it: control + transactional bits, one record, no
    sequence number."""
    control_type = ControlRecordType(int(control_type))
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise EncodeError("a transaction marker is either ABORT or COMMIT")
    record = SimpleRecord(control_record_key(control_type), end_txn_marker_value(coordinator_epoch), (), timestamp)
    return build_batch([record], producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=NO_SEQUENCE, transactional=True, control=True, base_offset=base_offset,
                       partition_leader_epoch=partition_leader_epoch)
