"""One transactional id's state, and the two-step way it changes: prepare, append, complete.

Theory of operation
-------------------
A :class:`TransactionMetadata` holds what the coordinator knows of one ``transactional.id``: its producer id and
epoch, the previous ones (for KIP-360 retries), the transaction timeout, the :class:`~.state.TransactionState`,
the partitions in the current transaction, and two timestamps (start of the transaction, last update).

No field changes in one step. A request first **prepares** a transition (``prepare_*``): it computes the next
state as an immutable :class:`TxnTransitMetadata` and records the target as :attr:`pending_state`. Preparing
while another transition is pending is a bug (the coordinator answers CONCURRENT_TRANSACTIONS before that).
The transit record is then appended to ``__transaction_state``; only when the in-sync replicas have it does
:meth:`complete_transition_to` copy it into the metadata, after checking it is a legal successor (same or
bumped epoch, partitions only growing while Ongoing, ...). A failed append just clears the pending state: the
cached metadata never shows a change that is not durable.

**Epochs.** Each InitProducerId bumps the epoch. An epoch at or above 32766 (``Short.MAX_VALUE - 1``) is
*exhausted*: the next InitProducerId gets a new producer id with epoch 0. 32767 is reached only when the
coordinator fences a producer, never handed out to a client.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala``
(``TransactionMetadata``, ``TxnTransitMetadata``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Optional

from kafkalab.protocol import ErrorCode

from .state import TransactionState, check_transition

__all__ = ["TransactionMetadata", "TxnTransitMetadata", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "SHORT_MAX",
           "is_epoch_exhausted", "IllegalTransactionState"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionMetadata")

S = TransactionState
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


class IllegalTransactionState(RuntimeError):
    """A transition that breaks the metadata's invariants (Kafka's IllegalStateException): a bug."""


def is_epoch_exhausted(epoch: int) -> bool:
    """True from ``Short.MAX_VALUE - 1`` on: one epoch must stay free for fencing."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transition leads to, appended to the log before it is applied."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TransactionState = S.EMPTY
    topic_partitions: set = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: Optional[TransactionState] = None
    #: the PrepareAbort append of a fence failed: the next fence does not bump the epoch again
    has_failed_epoch_fence: bool = False

    # ------------------------------------------------------------------------------------------ queries
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def _has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def add_partitions(self, partitions: Iterable) -> None:
        self.topic_partitions.update(partitions)

    def remove_partition(self, topic_partition) -> None:
        """A marker for ``topic_partition`` was written (only while a Prepare* state waits for markers)."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransactionState(f"Transaction metadata's current state is {self.state}, and its pending "
                                          f"state is {self.pending_state} while trying to remove partitions whose "
                                          f"txn markers have been sent, this is not expected")
        self.topic_partitions.discard(topic_partition)

    def transit(self) -> TxnTransitMetadata:
        """The current state as a transit record, with no pending state set (Kafka's ``prepareNoTransit``)."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp)

    # ------------------------------------------------------------------------------------------ prepare
    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """PrepareEpochFence with epoch + 1 (not again after a failed fence)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransactionState("Cannot fence producer with epoch equal to Short.MaxValue since this "
                                          "would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                                           self.txn_timeout_ms, frozenset(self.topic_partitions),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: Optional[int],
                                         update_timestamp: int):
        """Empty with the next epoch: ``(TxnTransitMetadata, None)`` or ``(None, ErrorCode.PRODUCER_FENCED)``.

        No expected epoch (a fresh InitProducerId): epoch + 1, no last epoch. Expected == current (or no
        epoch yet): the producer recovers itself (KIP-360), epoch + 1 and last = current. Expected == last
        epoch: a retry of a bump that succeeded, the current epoch again. Anything else: fenced."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionState(f"Cannot allocate any more producer epochs for producerId "
                                          f"{self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            log.info("Expected producer epoch %s does not match current producer epoch %s or previous producer "
                     "epoch %s", expected_producer_epoch, self.producer_epoch, self.last_producer_epoch)
            return None, ErrorCode.PRODUCER_FENCED
        return self._prepare_transition_to(S.EMPTY, self.producer_id, epoch, last_epoch, new_txn_timeout_ms,
                                           frozenset(), -1, update_timestamp), None

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, update_timestamp: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """Empty with a new producer id and epoch 0 (the epoch of the old one is exhausted)."""
        if self._has_pending_transaction():
            raise IllegalTransactionState("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare_transition_to(S.EMPTY, new_producer_id, 0,
                                           self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                                           new_txn_timeout_ms, frozenset(), -1, update_timestamp)

    def prepare_add_partitions(self, added: Iterable, update_timestamp: int) -> TxnTransitMetadata:
        start = update_timestamp if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) \
            else self.txn_start_timestamp
        return self._prepare_transition_to(S.ONGOING, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions) | frozenset(added), start,
                                           update_timestamp)

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp: int) -> TxnTransitMetadata:
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions), self.txn_start_timestamp,
                                           update_timestamp)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        new_state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False     # the Prepare* record is durable: the fence took
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, update_timestamp)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare_transition_to(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                                           self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                                           self.txn_last_update_timestamp)

    def _prepare_transition_to(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int,
                               timeout_ms: int, partitions: frozenset, start: int,
                               last_update: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransactionState(f"Preparing transaction state transition to {state} while it already a "
                                          f"pending state {self.pending_state}")
        if producer_id < 0:
            raise IllegalTransactionState(f"Illegal new producer id {producer_id}")
        if timeout_ms <= 0:
            raise IllegalTransactionState(f"Illegal new transaction timeout value {timeout_ms}")
        check_transition(self.transactional_id, self.state, state)
        self.pending_state = state
        return TxnTransitMetadata(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state, partitions,
                                  start, last_update)

    # ------------------------------------------------------------------------------------------ complete
    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply ``transit`` once its record is durable; IllegalTransactionState if it is not a legal successor."""
        to_state = self.pending_state
        if to_state is None or to_state != transit.txn_state:
            self._fail(transit)
        same_pid_epoch = transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id
        if to_state == S.EMPTY:
            bump = (transit.producer_epoch == self.producer_epoch + 1
                    or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))
            ok = ((transit.producer_epoch == self.producer_epoch or bump) and not transit.topic_partitions
                  and transit.txn_start_timestamp == -1)
        elif to_state == S.ONGOING:
            ok = (same_pid_epoch and set(self.topic_partitions) <= transit.topic_partitions
                  and self.txn_timeout_ms == transit.txn_timeout_ms)
        elif to_state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            ok = (same_pid_epoch and set(self.topic_partitions) == set(transit.topic_partitions)
                  and self.txn_timeout_ms == transit.txn_timeout_ms
                  and self.txn_start_timestamp == transit.txn_start_timestamp)
        elif to_state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            ok = (same_pid_epoch and self.txn_timeout_ms == transit.txn_timeout_ms
                  and transit.txn_start_timestamp != -1)
        else:  # PrepareEpochFence and Dead are never completed
            ok = False
        if not ok:
            self._fail(transit)
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def _fail(self, transit: TxnTransitMetadata):
        raise IllegalTransactionState(f"TransactionalId {self.transactional_id} failed transition to state "
                                      f"{transit} due to unexpected metadata (state {self.state}, pending "
                                      f"{self.pending_state}, producer id {self.producer_id}, epoch "
                                      f"{self.producer_epoch})")
