"""What a read returns: whole batches, as bytes or as file slices ready for ``sendfile``.

Theory of operation
-------------------
A Fetch names a start offset and a byte budget. The log answers with the batches from the one holding the
start offset onwards -- whole batches, exactly as stored, because the broker never decodes or splits them
(a consumer that asked for offset 7 of a batch covering 5-9 gets 5-9 and skips 5 and 6 itself). The answer
is described, not copied: :class:`FetchDataInfo` lists :class:`~kafkalab.storage.file_records.FileSlice`
objects (path, fd, position, size) so the network layer can hand them to ``os.sendfile`` and the bytes go
from the page cache to the socket without passing through Python. ``.records`` reads them into memory for
those who want bytes (tests, labs, a TLS listener).

The upper bound depends on who reads (:class:`FetchIsolation`): a follower may read up to the log end offset,
a ``read_uncommitted`` consumer only below the high watermark, a ``read_committed`` one only below the last
stable offset. A batch is returned only if it lies entirely below that bound. The request decides which, in one
place (:meth:`FetchIsolation.of_request`): a request from a broker (``replica_id`` >= 0, or the broker's own
log-dir mover, -3) reads to the log end; a consumer's (-1, or -2 for debugging tools) follows the wire's int8
``isolation_level``: 0 ``READ_UNCOMMITTED`` (high watermark), 1 ``READ_COMMITTED`` (last stable offset).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/FetchDataInfo.java``,
``LogOffsetMetadata.java``, ``server-common/src/main/java/org/apache/kafka/server/storage/log/
FetchIsolation.java`` and ``clients/src/main/java/org/apache/kafka/common/IsolationLevel.java``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from kafkalab.records import scan_batches

__all__ = ["FetchIsolation", "IsolationLevel", "LogOffsetMetadata", "FetchDataInfo", "UNKNOWN_OFFSET"]

UNKNOWN_OFFSET = -1
#: ``replica_id`` of the broker's own future replica (moving a partition between log dirs): not a consumer.
_FUTURE_LOCAL_REPLICA_ID = -3


class IsolationLevel(enum.IntEnum):
    """The wire's int8 ``isolation_level`` (Fetch, ListOffsets): the consumer's ``isolation.level``."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class FetchIsolation(str, enum.Enum):
    """Upper bound of a read: LEO (followers), high watermark (read_uncommitted), LSO (read_committed)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"

    @classmethod
    def of(cls, value) -> "FetchIsolation":
        """``value`` as a FetchIsolation (a member, or its name: ``"log_end"``, ``"high_watermark"``...)."""
        return value if isinstance(value, cls) else cls(str(value).lower())

    @classmethod
    def of_request(cls, replica_id: int, isolation_level: int) -> "FetchIsolation":
        """The bound of a request from ``replica_id`` with the wire's ``isolation_level`` (Kafka's
        ``FetchIsolation.of(replicaId, isolationLevel)``): LOG_END for brokers, else by the isolation level.
        A level the wire does not define is read as READ_UNCOMMITTED, as before."""
        if replica_id >= 0 or replica_id == _FUTURE_LOCAL_REPLICA_ID:
            return cls.LOG_END
        if isolation_level == IsolationLevel.READ_COMMITTED:
            return cls.TXN_COMMITTED
        return cls.HIGH_WATERMARK


class LogOffsetMetadata(NamedTuple):
    """An offset, and (when known) the segment and byte position where its batch starts."""

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET


@dataclass
class FetchDataInfo:
    """The result of :meth:`UnifiedLog.read <kafkalab.storage.log.UnifiedLog.read>`.

    ``slices`` is a tuple of file slices (at most one today: like Kafka, a read never crosses a segment);
    ``first_entry_incomplete`` is set when the first batch did not fit ``max_bytes`` and ``min_one_message``
    was off (nothing is returned then); ``aborted_transactions`` is for ``txn_committed`` reads.
    """

    fetch_offset_metadata: LogOffsetMetadata
    slices: tuple = ()
    first_entry_incomplete: bool = False
    aborted_transactions: Optional[list] = None
    _records: Optional[bytes] = field(default=None, repr=False)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.slices)

    def __len__(self) -> int:
        return self.size_in_bytes

    @property
    def records(self) -> bytes:
        """The batches as bytes (read from the page cache on first access, then kept)."""
        if self._records is None:
            self._records = b"".join(s.read() for s in self.slices)
        return self._records

    def to_bytes(self) -> bytes:
        return self.records

    def batch_headers(self) -> list:
        """Headers of the returned batches, without decoding any record."""
        return [span.header for span in scan_batches(self.records)]

    @classmethod
    def empty(cls, offset_metadata: LogOffsetMetadata, *, aborted_transactions=None) -> "FetchDataInfo":
        return cls(offset_metadata, (), False, aborted_transactions, b"")
