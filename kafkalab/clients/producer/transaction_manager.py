"""The idempotent producer's state: producer id, epoch, and one sequence counter per partition.

Theory of operation
-------------------
Retries can duplicate: a ProduceRequest reaches the broker and is written, the answer is lost, the producer
sends the batch again. The idempotent producer (``enable.idempotence=true``, the default) makes the retry
harmless. At start it asks any broker for an identity with ``InitProducerIdRequest`` and gets a
``producer_id`` and ``producer_epoch``. Every batch then carries ``(producer_id, producer_epoch,
base_sequence)``, where sequences count records per partition from 0. The broker remembers the last five
batches of each producer per partition and

* appends a batch whose ``base_sequence`` is exactly the last sequence + 1,
* answers a batch it already has (same sequences) with success and the *original* offset
  (or ``DUPLICATE_SEQUENCE_NUMBER``) without writing it again -- the retried duplicate is a no-op,
* rejects a gap with ``OUT_OF_ORDER_SEQUENCE_NUMBER``.

Because a batch and its retry carry the same sequence, and retries are sent again in sequence order
(see :mod:`.accumulator`), ordering survives retries with up to 5 requests in flight -- five because that is
how many batches the broker remembers per producer.

An ``OUT_OF_ORDER_SEQUENCE_NUMBER`` is *retriable* when an earlier batch of the same partition is itself
still being retried (its failure opened the gap); otherwise the sequence is unresolved. When a batch with a sequence fails for good (expired, rejected), the sequences after it
can never line up again, so the producer **bumps its epoch** (KIP-360): once nothing is in flight, an idempotent
(non-transactional) producer simply increments its epoch *locally* -- the broker accepts a higher epoch of a
known producer id when its first batch starts at sequence 0 -- and restarts every partition's sequence at 0.
Only when the epoch would overflow (32767) does it ask for a brand-new producer id with InitProducerId.
(Transactional producers bump through InitProducerId with their current id and epoch; not implemented yet.)
``UNKNOWN_PRODUCER_ID`` (the broker forgot the producer, e.g. after retention removed its batches) is handled
the same way, and the batch is retried. ``INVALID_PRODUCER_EPOCH`` / ``PRODUCER_FENCED`` are fatal: another instance took over.

Sans-IO: the sender feeds outcomes in and asks what to do. Mirrors
``clients/src/main/java/org/apache/kafka/clients/producer/internals/{TransactionManager,
TxnPartitionMap,ProducerIdAndEpoch}.java`` (the idempotence part; transactions are not implemented).
"""
from __future__ import annotations

from typing import Optional

from kafkalab.protocol import ErrorCode
from kafkalab.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = ["TransactionManager"]

SEQUENCE_MAX = 2**31


class TransactionManager:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.next_sequence: dict = {}          # tp -> next sequence to assign
        self.last_acked_sequence: dict = {}    # tp -> last sequence the broker confirmed
        self.in_flight: dict = {}              # tp -> list of batches carrying sequences, by sequence
        self.epoch_bump_required = False
        self.fatal_error: Optional[BaseException] = None
        self.epoch_bumps = 0

    # -- identity ---------------------------------------------------------------------------------------------
    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def needs_init(self) -> bool:
        """True when an InitProducerIdRequest is due (no producer id yet, or the epoch ran out)."""
        return self.fatal_error is None and not self.has_producer_id

    def init_request_fields(self) -> tuple[int, int]:
        """(producer_id, producer_epoch) for the InitProducerIdRequest of an idempotent producer: -1/-1."""
        return NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def bump_idempotent_epoch(self) -> bool:
        """Bump the epoch locally (Java's ``bumpIdempotentProducerEpoch``); sequences restart at 0. Returns False
        when the epoch ran out and a new producer id must be requested instead."""
        if self.producer_epoch >= 2**15 - 1:
            self.set_producer_id_and_epoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return False
        self.set_producer_id_and_epoch(self.producer_id, self.producer_epoch + 1)
        return True

    def set_producer_id_and_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """A new identity (first one, bumped epoch or new id): every partition's sequence restarts at 0."""
        if self.has_producer_id and producer_id == self.producer_id and producer_epoch != self.producer_epoch:
            self.epoch_bumps += 1
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.next_sequence.clear()
        self.last_acked_sequence.clear()
        self.in_flight.clear()
        self.epoch_bump_required = False

    def request_epoch_bump(self) -> None:
        self.epoch_bump_required = True

    # -- sequences --------------------------------------------------------------------------------------------
    def sequence_for(self, tp) -> int:
        return self.next_sequence.get(tp, 0)

    def assign(self, batch) -> None:
        """Stamp ``batch`` with our id, epoch and the partition's next sequence (a retry keeps its own)."""
        tp = batch.tp
        if not batch.has_sequence or batch.producer_epoch != self.producer_epoch \
                or batch.producer_id != self.producer_id:
            seq = self.sequence_for(tp)
            batch.set_producer_state(self.producer_id, self.producer_epoch, seq)
            self.next_sequence[tp] = (seq + batch.record_count) % SEQUENCE_MAX
        lst = self.in_flight.setdefault(tp, [])
        if batch not in lst:
            lst.append(batch)
            lst.sort(key=lambda b: b.base_sequence)

    def _forget(self, batch) -> None:
        lst = self.in_flight.get(batch.tp)
        if lst and batch in lst:
            lst.remove(batch)

    def handle_completed(self, batch) -> None:
        if batch.producer_epoch == self.producer_epoch and batch.producer_id == self.producer_id:
            prev = self.last_acked_sequence.get(batch.tp, -1)
            self.last_acked_sequence[batch.tp] = max(prev, batch.last_sequence)
        self._forget(batch)

    def is_retriable_out_of_order(self, batch) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER caused by an earlier batch of this partition that is being retried."""
        if batch.producer_epoch != self.producer_epoch:
            return True                         # sent under an old epoch: it gets a new sequence anyway
        expected = (self.last_acked_sequence.get(batch.tp, -1) + 1) % SEQUENCE_MAX
        return batch.base_sequence != expected

    def handle_retry(self, batch, error_code: int) -> None:
        """``batch`` goes back to the queue. UNKNOWN_PRODUCER_ID: bump first (the batch gets a new sequence)."""
        self._forget(batch)
        if error_code == ErrorCode.UNKNOWN_PRODUCER_ID:
            self.request_epoch_bump()

    def handle_failed(self, batch, error_code: int, error: BaseException) -> None:
        """A batch failed for good. Its sequence leaves a gap: bump the epoch, or die if we were fenced."""
        self._forget(batch)
        if error_code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            self.fatal_error = error
        elif batch.has_sequence and batch.producer_epoch == self.producer_epoch:
            self.request_epoch_bump()

    def has_in_flight(self) -> bool:
        return any(self.in_flight.values())
