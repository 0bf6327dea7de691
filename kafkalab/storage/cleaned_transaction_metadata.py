"""What the log cleaner knows about transactions while it walks a log: which batches were aborted, which
markers may go, and which aborted transactions the cleaned ``.txnindex`` must still name.

Theory of operation
-------------------
Compaction keeps the latest record of each key, but a record of an *aborted* transaction never counted: a
``read_committed`` consumer drops it, and so does the group coordinator loading ``__consumer_offsets``. If such a
record entered the cleaner's offset map it would make the cleaner discard the older, committed record of the
same key -- and the committed value would be lost. So the cleaner tracks transactions as it reads the log, in
offset order, with one :class:`CleanedTransactionMetadata` per walk:

* It is fed the aborted transactions of the ``.txnindex`` files covering the range it is about to read
  (:meth:`~CleanedTransactionMetadata.add_aborted_transactions`), kept in a min-heap by first offset.
* Before each batch, every aborted transaction that has *started* by that batch's last offset becomes
  "ongoing" for its producer id. A transactional data batch of a producer with an ongoing aborted transaction
  is aborted data (:meth:`~CleanedTransactionMetadata.on_batch_read` returns True): it is never put in the
  offset map and the copy drops it. Any other transactional batch belongs to a committed transaction
  (everything the cleaner reads is below the last stable offset, so every transaction it sees is decided).
* A COMMIT or ABORT marker (:meth:`~CleanedTransactionMetadata.on_control_batch_read`) ends its producer's
  transaction. It may be discarded only once no batch of that transaction was seen in this walk: the data is
  gone, so consumers no longer need the marker to decide about it. Even then the copy keeps it until its
  *delete horizon* (now + ``delete.retention.ms``, stamped into the batch the first time it becomes
  discardable, KIP-534) has passed, so a consumer that was reading that part of the log still sees it. An
  ABORT marker that is kept because its transaction still has batches writes its ``.txnindex`` entry into
  the cleaned segment: the new index names exactly the aborted transactions whose batches this walk saw.
  A control batch with no record (already emptied by an earlier pass) may always go.

Mirrors: ``CleanedTransactionMetadata`` and ``AbortedTransactionMetadata`` in
``core/src/main/scala/kafka/log/LogCleaner.scala``.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Iterable, Optional

from kafkalab.records.control import ControlRecordType, parse_control_record_key

__all__ = ["CleanedTransactionMetadata", "AbortedTransactionMetadata"]


class AbortedTransactionMetadata:
    """An aborted transaction the walk has entered, and the last offset of its batches seen so far."""

    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn):
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: Optional[int] = None

    def __repr__(self) -> str:
        return f"(txn: {self.aborted_txn}, lastOffset: {self.last_observed_batch_offset})"


class CleanedTransactionMetadata:
    """The transaction state of one walk over a log, in offset order (see the module docstring).

    ``cleaned_index`` is the ``.txnindex`` of the segment being written, if any: kept ABORT markers add their
    entry there."""

    def __init__(self):
        self._ongoing_committed_txns: set = set()
        self._ongoing_aborted_txns: dict = {}          # producer id -> AbortedTransactionMetadata
        self._aborted_txns: list = []                  # heap of (first offset, tie-break, AbortedTxn)
        self._tie_break = itertools.count()
        self.cleaned_index = None

    def add_aborted_transactions(self, aborted_txns: Iterable) -> None:
        """Aborted transactions (``AbortedTxn``) of the range about to be read; repeats are harmless."""
        for txn in aborted_txns:
            heapq.heappush(self._aborted_txns, (txn.first_offset, next(self._tie_break), txn))

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted_txns and self._aborted_txns[0][0] <= offset:
            txn = heapq.heappop(self._aborted_txns)[2]
            self._ongoing_aborted_txns.setdefault(txn.producer_id, AbortedTransactionMetadata(txn))

    def on_control_batch_read(self, control_batch) -> bool:
        """A decoded control batch was read; True if it may be discarded (its transaction has no batch left
        in this walk, or it is already empty)."""
        self._consume_aborted_txns_up_to(control_batch.last_offset)
        if not control_batch.records:
            return True
        control_type = parse_control_record_key(control_batch.records[0].key)
        producer_id = control_batch.producer_id
        if control_type == ControlRecordType.ABORT:
            aborted = self._ongoing_aborted_txns.pop(producer_id, None)
            if aborted is not None and aborted.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(aborted.aborted_txn)
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed_txns:
                self._ongoing_committed_txns.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, batch) -> bool:
        """A data batch (only its header is needed) was read; True if it belongs to an aborted transaction."""
        self._consume_aborted_txns_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        aborted = self._ongoing_aborted_txns.get(batch.producer_id)
        if aborted is not None:
            aborted.last_observed_batch_offset = batch.last_offset
            return True
        self._ongoing_committed_txns.add(batch.producer_id)
        return False
