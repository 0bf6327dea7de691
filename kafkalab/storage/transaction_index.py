"""The transaction index: where a segment says which transactions were aborted.

Theory of operation
-------------------
A ``read_committed`` consumer must drop the records of aborted transactions, but the broker never looks inside
the batches it sends. So each Fetch answer carries a list of ``{producer_id, first_offset}`` -- "from this
offset on, this producer's batches belong to an aborted transaction, up to its ABORT marker" -- and the
consumer does the filtering. That list comes from this index.

Every segment may have a ``<base offset, 20 digits>.txnindex`` file, created on its first entry. An entry is
written when an ABORT marker completes a transaction that had data in this partition (commits and empty
transactions write nothing), into the segment that receives the *marker* -- possibly later than the one
holding the transaction's first record. Entries are fixed 34 bytes, big-endian::

    int16 version (0) | int64 producer_id | int64 first_offset | int64 last_offset | int64 last_stable_offset

``last_offset`` is the offset of the ABORT marker (it must strictly increase from entry to entry);
``last_stable_offset`` is what the LSO became when the transaction completed: the first offset of the earliest
transaction of *another* producer still open then, else ``last_offset + 1``.

A fetch from offset F whose answer ends before offset U needs every aborted transaction with
``last_offset >= F`` and ``first_offset < U`` (including those that began before F).
:meth:`TransactionIndex.collect_aborted_txns` scans one segment; the log goes on to later segments until an
entry's ``last_stable_offset >= U`` proves that no later entry can start below U (``is_complete``).

The index is rebuilt with the segment when recovery replays its batches (:meth:`reset` first), cut by
:meth:`truncate_to` with the log, and refuses at load time an entry that ends before the segment begins
(:meth:`sanity_check`).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/TransactionIndex.java``,
``AbortedTxn.java`` and ``TxnIndexSearchResult.java``.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple, Optional

from kafkalab.storage import file_records
from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError

__all__ = ["AbortedTxn", "TransactionIndex", "TxnIndexSearchResult", "ABORTED_TXN_SIZE"]

_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size          # 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    """One entry of a ``.txnindex`` file."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, data, offset: int = 0) -> "AbortedTxn":
        version, pid, first, last, lso = _ENTRY.unpack_from(data, offset)
        return cls(pid, first, last, lso, version)

    def __str__(self) -> str:
        return (f"AbortedTxn(version={self.version}, producerId={self.producer_id}, firstOffset={self.first_offset}, "
                f"lastOffset={self.last_offset}, lastStableOffset={self.last_stable_offset})")


class TxnIndexSearchResult(NamedTuple):
    aborted_transactions: list
    is_complete: bool


class TransactionIndex:
    """The ``.txnindex`` of the segment starting at ``start_offset``. The file exists only once an entry was
    appended; its entries are read once and kept in memory (a segment aborts few transactions)."""

    def __init__(self, start_offset: int, path: str):
        self.start_offset = start_offset
        self.path = str(path)
        self._entries: Optional[list] = None
        self._flushed_bytes = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        self.durable = os.path.exists(self.path)
        self._closed = False

    # ------------------------------------------------------------------------------------------ reading
    def _load(self) -> list:
        if self._entries is None:
            entries = []
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            # a torn trailing entry (a crash in the middle of a write) is not an entry
            for pos in range(0, len(data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE):
                txn = AbortedTxn.from_bytes(data, pos)
                if txn.version > CURRENT_VERSION:
                    raise CorruptIndexError(f"Unexpected aborted transaction version {txn.version} in transaction "
                                            f"index {self.path}, current version is {CURRENT_VERSION}")
                entries.append(txn)
            self._entries = entries
        return self._entries

    def all_aborted_txns(self) -> list:
        return list(self._load())

    @property
    def entries(self) -> int:
        return len(self._load())

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``, and whether the search
        can stop here (an entry's last stable offset reached the upper bound)."""
        found = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def sanity_check(self) -> None:
        """CorruptIndexError if an entry ends before this segment begins (or has an unknown version)."""
        for txn in self._load():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(f"Last offset of aborted transaction {txn} in index {self.path} is less than "
                                        f"start offset {self.start_offset}")

    # ------------------------------------------------------------------------------------------ writing
    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its last offset must be greater than the last one's (ValueError otherwise)."""
        entries = self._load()
        if self._closed:
            raise KafkaStorageError(f"The transaction index {self.path} is already closed")
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset {entries[-1].last_offset} "
                             f"of index {self.path}")
        with open(self.path, "ab") as f:
            f.write(txn.to_bytes())
        entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose transaction ends at or after ``offset``."""
        entries = self._load()
        keep = next((i for i, t in enumerate(entries) if t.last_offset >= offset), len(entries))
        if keep < len(entries):
            self._truncate_entries(keep)

    def reset(self) -> None:
        """Remove every entry and the file (recovery is about to rebuild it)."""
        self.delete_if_exists()
        self._entries = []
        self._closed = False
        self._flushed_bytes = 0
        self.durable = False

    def _truncate_entries(self, keep: int) -> None:
        size = keep * ABORTED_TXN_SIZE
        if os.path.exists(self.path):
            os.truncate(self.path, size)
        del self._entries[keep:]
        self._flushed_bytes = min(self._flushed_bytes, size)

    def flush(self) -> None:
        if self._closed or not os.path.exists(self.path):
            return
        if file_records.FSYNC:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._flushed_bytes = os.path.getsize(self.path)
        self.durable = True

    # -------------------------------------------------------------------------------------- file life cycle
    def rename_to(self, path: str) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = str(path)

    def close(self) -> None:
        self._closed = True

    def delete_if_exists(self) -> bool:
        self._closed = True
        self._entries = None
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def simulate_power_loss(self) -> None:
        """What a crash leaves: a never-flushed file disappears, unflushed entries are lost."""
        if not os.path.exists(self.path):
            return
        if not self.durable:
            os.remove(self.path)
        elif os.path.getsize(self.path) > self._flushed_bytes:
            os.truncate(self.path, self._flushed_bytes)
        self._entries = None
        self._closed = True

    def __repr__(self) -> str:
        return f"TransactionIndex({os.path.basename(self.path)}, entries={len(self._entries or ())})"
