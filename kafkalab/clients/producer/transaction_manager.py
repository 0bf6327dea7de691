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
``UNKNOWN_PRODUCER_ID`` (the broker forgot the producer, e.g. after retention removed its batches) is handled
the same way, and the batch is retried. ``INVALID_PRODUCER_EPOCH`` / ``PRODUCER_FENCED`` are fatal: another instance took over.

Transactions (``transactional.id`` set) add, on top of the same identity and sequences, the state table of
:mod:`.transaction_state` and the queue of coordinator requests of :mod:`.transactional_requests`:
``init_transactions()`` gets the id from the *transaction coordinator* (found with FindCoordinator
key_type 1) and fences older instances; each partition is added to the transaction (AddPartitionsToTxn)
before its first batch of the transaction may leave (:meth:`TransactionManager.is_send_to_partition_allowed`);
batches carry the transactional bit; ``commit_transaction()`` / ``abort_transaction()`` send EndTxn once every
batch is answered (and none at all when nothing was added). A failed batch makes the transaction *abortable*;
a coordinator that says "fenced" makes the producer *fatal*. A transactional producer bumps its epoch through
InitProducerId with its current id and epoch (KIP-360), after the abort, and only when the coordinator speaks
InitProducerId v3+.

Sans-IO: the sender feeds outcomes in and asks what to do. Mirrors
``clients/src/main/java/org/apache/kafka/clients/producer/internals/{TransactionManager,
TxnPartitionMap,ProducerIdAndEpoch}.java``.
"""
from __future__ import annotations

import heapq
import itertools
from typing import NamedTuple, Optional

from kafkalab.clients.producer.transaction_state import (CoordinatorType, ProducerFencedError, State,
                                                         TransactionalRequestResult, TransactionError,
                                                         TransactionStateError)
from kafkalab.clients.producer.transactional_requests import (AddOffsetsToTxnHandler, AddPartitionsToTxnHandler,
                                                              EndTxnHandler, FindCoordinatorHandler,
                                                              InitProducerIdHandler, TxnRequestHandler)
from kafkalab.protocol import ErrorCode
from kafkalab.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = ["TransactionManager", "CoordinatorNode"]

SEQUENCE_MAX = 2**31
EPOCH_MAX = 2**15 - 1

#: Produce errors after which a transactional producer is unusable (Java's ``maybeTransitionToErrorState``).
_FATAL_BATCH_ERRORS = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                       ErrorCode.PRODUCER_FENCED, ErrorCode.UNSUPPORTED_VERSION)


class CoordinatorNode(NamedTuple):
    node_id: int
    host: str
    port: int


class _PendingTransition(NamedTuple):
    result: TransactionalRequestResult
    state: State
    operation: str


class TransactionManager:
    def __init__(self, transactional_id: Optional[str] = None, transaction_timeout_ms: int = 60_000,
                 retry_backoff_ms: float = 100) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.next_sequence: dict = {}          # tp -> next sequence to assign
        self.last_acked_sequence: dict = {}    # tp -> last sequence the broker confirmed
        self.in_flight: dict = {}              # tp -> list of batches carrying sequences, by sequence
        self.epoch_bump_required = False
        self.epoch_bumps = 0
        # -- transactions (Java's TransactionManager fields of the same names) --
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.state = State.UNINITIALIZED
        self.last_error: Optional[BaseException] = None
        self.coordinators: dict[CoordinatorType, Optional[CoordinatorNode]] = {
            CoordinatorType.TRANSACTION: None, CoordinatorType.GROUP: None}
        self.coordinator_supports_bumping_epoch = False
        self.new_partitions_in_transaction: set = set()       # sent to, not yet in an AddPartitionsToTxn
        self.pending_partitions_in_transaction: set = set()   # in an AddPartitionsToTxn not yet answered
        self.partitions_in_transaction: set = set()           # added: their batches may be sent
        self.transaction_started = False                      # something was added: EndTxn is needed
        self.sequences_reset = False                          # the sender re-stamps queued batches when set
        self._pending_requests: list = []                     # heap of (priority, arrival, handler)
        self._arrival = itertools.count()
        self._pending_transition: Optional[_PendingTransition] = None

    # -- identity ---------------------------------------------------------------------------------------------
    @property
    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def fatal_error(self) -> Optional[BaseException]:
        """The error that made the producer unusable (None while it is not)."""
        return self.last_error if self.state is State.FATAL_ERROR else None

    def needs_init(self) -> bool:
        """True when an idempotent producer's InitProducerIdRequest is due (no producer id yet, or the epoch ran
        out). A transactional producer asks through :meth:`initialize_transactions` instead."""
        return not self.is_transactional and self.fatal_error is None and not self.has_producer_id

    def init_request_fields(self) -> tuple[int, int]:
        """(producer_id, producer_epoch) for the InitProducerIdRequest of an idempotent producer: -1/-1."""
        return NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def bump_idempotent_epoch(self) -> bool:
        """Bump the epoch locally (Java's ``bumpIdempotentProducerEpoch``); sequences restart at 0. Returns False
        when the epoch ran out and a new producer id must be requested instead."""
        if self.producer_epoch >= EPOCH_MAX:
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
        self.sequences_reset = True

    def request_epoch_bump(self) -> None:
        self.epoch_bump_required = True

    def set_fatal_error(self, error: BaseException) -> None:
        """The idempotent producer's way to die (an InitProducerId that cannot succeed, a fenced epoch)."""
        self.transition_to_fatal_error(error)

    # -- sequences --------------------------------------------------------------------------------------------
    def sequence_for(self, tp) -> int:
        return self.next_sequence.get(tp, 0)

    def assign(self, batch) -> None:
        """Stamp ``batch`` with our id, epoch and the partition's next sequence (a retry keeps its own)."""
        tp = batch.tp
        if not batch.has_sequence or batch.producer_epoch != self.producer_epoch \
                or batch.producer_id != self.producer_id:
            seq = self.sequence_for(tp)
            batch.set_producer_state(self.producer_id, self.producer_epoch, seq, self.is_transactional)
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
        if error_code == ErrorCode.UNKNOWN_PRODUCER_ID and not self.is_transactional:
            self.request_epoch_bump()

    def handle_failed(self, batch, error_code: int, error: BaseException) -> None:
        """A batch failed for good. Idempotent: its sequence leaves a gap, so bump the epoch (or die if fenced).
        Transactional: the transaction must be aborted (with an epoch bump when possible), or, fenced, the
        producer is done (Java's ``handleFailedBatch`` / ``maybeTransitionToErrorState``)."""
        self._forget(batch)
        if self.is_transactional:
            if self.state is State.FATAL_ERROR:
                return
            if error_code in _FATAL_BATCH_ERRORS:
                self.transition_to_fatal_error(error)
                return
            if self.can_bump_epoch() and not self.is_completing():
                self.epoch_bump_required = True
            self.transition_to_abortable_error(error)
        elif error_code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            self.transition_to_fatal_error(error)
        elif batch.has_sequence and batch.producer_epoch == self.producer_epoch:
            self.request_epoch_bump()

    def has_in_flight(self) -> bool:
        return any(self.in_flight.values())

    # -- the state table --------------------------------------------------------------------------------------
    def _transition_to(self, target: State, error: Optional[BaseException] = None) -> None:
        if not self.state.can_transition(target):
            who = f"TransactionalId {self.transactional_id}: " if self.is_transactional else ""
            raise TransactionStateError(f"{who}Invalid transition attempted from state {self.state.name} to state "
                                        f"{target.name}")
        self.last_error = error if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR) else None
        self.state = target

    def transition_to_abortable_error(self, error: BaseException) -> None:
        if self.state is State.ABORTING_TRANSACTION:
            return                              # already aborting: nothing more to decide
        self._transition_to(State.ABORTABLE_ERROR, error)

    def transition_to_fatal_error(self, error: BaseException) -> None:
        self._transition_to(State.FATAL_ERROR, error)
        if self._pending_transition is not None:
            self._pending_transition.result.fail(error)

    def has_error(self) -> bool:
        return self.state in (State.ABORTABLE_ERROR, State.FATAL_ERROR)

    def has_abortable_error(self) -> bool:
        return self.state is State.ABORTABLE_ERROR

    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    def is_completing(self) -> bool:
        return self.state in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)

    def is_aborting(self) -> bool:
        return self.state is State.ABORTING_TRANSACTION

    def has_ongoing_transaction(self) -> bool:
        return self.state is State.IN_TRANSACTION or self.is_completing() or self.has_abortable_error()

    def can_bump_epoch(self) -> bool:
        """KIP-360: an idempotent producer always can; a transactional one if its coordinator has InitProducerId v3+."""
        return not self.is_transactional or self.coordinator_supports_bumping_epoch

    def _ensure_transactional(self) -> None:
        if not self.is_transactional:
            raise TransactionStateError("Transactional method invoked on a non-transactional producer.")

    def _producer_label(self) -> str:
        return f"ProducerIdAndEpoch(producerId={self.producer_id}, epoch={self.producer_epoch})"

    def maybe_fail_with_error(self) -> None:
        """Raise the producer's error state to a caller (Java's ``maybeFailWithError``)."""
        if not self.has_error():
            return
        if isinstance(self.last_error, ProducerFencedError):
            raise ProducerFencedError(f"Producer with transactionalId '{self.transactional_id}' and "
                                      f"{self._producer_label()} has been fenced by another producer with the same "
                                      "transactionalId")
        raise TransactionError("Cannot execute transactional method because we are in an error state") \
            from self.last_error

    def _throw_if_pending_state(self, operation: str) -> None:
        pending = self._pending_transition
        if pending is not None:
            if pending.result.acked:
                self._pending_transition = None
            else:
                raise TransactionStateError(f"Cannot attempt operation `{operation}` because the previous call to "
                                            f"`{pending.operation}` timed out and must be retried")

    def _cached_result(self, start, next_state: State, operation: str) -> TransactionalRequestResult:
        """Start ``operation`` -- or, if the same call timed out before, hand back its pending result."""
        self._ensure_transactional()
        pending = self._pending_transition
        if pending is not None:
            if pending.result.acked:
                self._pending_transition = None
            elif next_state is not pending.state:
                raise TransactionStateError(f"Cannot attempt operation `{operation}` because the previous call to "
                                            f"`{pending.operation}` timed out and must be retried")
            else:
                return pending.result
        result = start()
        self._pending_transition = _PendingTransition(result, next_state, operation)
        return result

    def pending_result(self) -> Optional[TransactionalRequestResult]:
        """The result of the last blocking call not yet seen by its caller (it timed out), if any."""
        pending = self._pending_transition
        return None if pending is None or pending.result.acked else pending.result

    # -- the application's calls ------------------------------------------------------------------------------
    def initialize_transactions(self, bump_from: Optional[tuple[int, int]] = None) -> TransactionalRequestResult:
        """``init_transactions()``; with ``bump_from=(producer_id, epoch)`` the KIP-360 epoch bump after an abort."""
        self.maybe_fail_with_error()

        def start():
            if bump_from is None:
                self._transition_to(State.INITIALIZING)
                self.producer_id, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            pid, epoch = bump_from if bump_from is not None else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            handler = InitProducerIdHandler(self, pid, epoch, is_epoch_bump=bump_from is not None)
            self.enqueue(handler)
            return handler.result
        return self._cached_result(start, State.INITIALIZING, "initTransactions")

    def begin_transaction(self) -> None:
        self._ensure_transactional()
        self._throw_if_pending_state("beginTransaction")
        self.maybe_fail_with_error()
        self._transition_to(State.IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        def start():
            self.maybe_fail_with_error()
            self._transition_to(State.COMMITTING_TRANSACTION)
            return self._begin_completing_transaction(committed=True)
        return self._cached_result(start, State.COMMITTING_TRANSACTION, "commitTransaction")

    def begin_abort(self) -> TransactionalRequestResult:
        def start():
            if self.state is not State.ABORTABLE_ERROR:
                self.maybe_fail_with_error()
            self._transition_to(State.ABORTING_TRANSACTION)
            self.new_partitions_in_transaction.clear()        # aborting: nothing more to add
            return self._begin_completing_transaction(committed=False)
        return self._cached_result(start, State.ABORTING_TRANSACTION, "abortTransaction")

    def _begin_completing_transaction(self, committed: bool) -> TransactionalRequestResult:
        if self.new_partitions_in_transaction:
            self.enqueue(self._add_partitions_handler())
        # INVALID_PRODUCER_ID_MAPPING: the coordinator forgot us and would refuse EndTxn; go straight to the bump
        if getattr(self.last_error, "error_code", None) != ErrorCode.INVALID_PRODUCER_ID_MAPPING:
            handler = EndTxnHandler(self, committed)
            self.enqueue(handler)
            if not self.epoch_bump_required:
                return handler.result
        return self.initialize_transactions(bump_from=(self.producer_id, self.producer_epoch))

    def send_offsets_to_transaction(self, offsets: dict, group_metadata) -> TransactionalRequestResult:
        self._ensure_transactional()
        self._throw_if_pending_state("sendOffsetsToTransaction")
        self.maybe_fail_with_error()
        if self.state is not State.IN_TRANSACTION:
            raise TransactionStateError("Cannot send offsets if a transaction is not in progress "
                                        f"(currentState= {self.state.name})")
        handler = AddOffsetsToTxnHandler(self, offsets, group_metadata)
        self.enqueue(handler)
        return handler.result

    def fail_if_not_ready_for_send(self) -> None:
        """Checked by ``send()`` before a record is accepted (Java's ``failIfNotReadyForSend``)."""
        if self.has_error():
            raise TransactionError("Cannot perform send because at least one previous transactional or idempotent "
                                   "request has failed with errors.") from self.last_error
        if self.is_transactional:
            if not self.has_producer_id:
                raise TransactionStateError("Cannot perform a 'send' before completing a call to initTransactions "
                                            "when transactions are enabled.")
            if self.state is not State.IN_TRANSACTION:
                raise TransactionStateError(f"Cannot call send in state {self.state.name}")

    def maybe_add_partition(self, tp) -> None:
        """A record was appended for ``tp``: make sure the partition joins the transaction before it is sent."""
        self.maybe_fail_with_error()
        self._throw_if_pending_state("send")
        if not self.is_transactional:
            return
        if not self.has_producer_id:
            raise TransactionStateError(f"Cannot add partition {tp.topic}-{tp.partition} to transaction before "
                                        "completing a call to initTransactions")
        if self.state is not State.IN_TRANSACTION:
            raise TransactionStateError(f"Cannot add partition {tp.topic}-{tp.partition} to transaction while in "
                                        f"state  {self.state.name}")
        if tp in self.partitions_in_transaction or tp in self.pending_partitions_in_transaction:
            return
        self.new_partitions_in_transaction.add(tp)

    def is_send_to_partition_allowed(self, tp) -> bool:
        if self.has_fatal_error():
            return False
        return not self.is_transactional or tp in self.partitions_in_transaction

    def has_partitions_to_add(self) -> bool:
        return bool(self.new_partitions_in_transaction or self.pending_partitions_in_transaction)

    # -- the request queue (the sender's side) ----------------------------------------------------------------
    def enqueue(self, handler: TxnRequestHandler) -> None:
        heapq.heappush(self._pending_requests, (int(handler.priority), next(self._arrival), handler))

    def retry(self, handler: TxnRequestHandler) -> None:
        handler.is_retry = True
        self.enqueue(handler)

    def has_pending_requests(self) -> bool:
        return bool(self._pending_requests)

    def pending_requests(self) -> list:
        """The queued handlers in the order they will go (for tests and labs)."""
        return [h for _, _, h in sorted(self._pending_requests)]

    def _add_partitions_handler(self) -> AddPartitionsToTxnHandler:
        self.pending_partitions_in_transaction |= self.new_partitions_in_transaction
        self.new_partitions_in_transaction.clear()
        return AddPartitionsToTxnHandler(self, self.pending_partitions_in_transaction)

    def next_request(self, has_incomplete_batches: bool) -> Optional[TxnRequestHandler]:
        """The next request to send, or None (Java's ``nextRequest``): EndTxn waits until every batch is
        answered; a transaction to which nothing was added ends without any EndTxn."""
        if self.new_partitions_in_transaction:
            self.enqueue(self._add_partitions_handler())
        if not self._pending_requests:
            return None
        handler = self._pending_requests[0][2]
        if handler.is_end_txn and has_incomplete_batches:
            return None
        heapq.heappop(self._pending_requests)
        if self.has_error() and not (self.has_abortable_error() and isinstance(handler, FindCoordinatorHandler)):
            handler.fail(self.last_error)
            return None
        if handler.is_end_txn and not self.transaction_started:
            handler.result.done()
            if self.state is not State.FATAL_ERROR:
                self.complete_transaction()
            handler = heapq.heappop(self._pending_requests)[2] if self._pending_requests else None
        return handler

    def coordinator(self, kind: CoordinatorType) -> Optional[CoordinatorNode]:
        return self.coordinators[kind]

    def lookup_coordinator(self, kind: CoordinatorType, key: str) -> None:
        self.coordinators[kind] = None
        if not any(isinstance(h, FindCoordinatorHandler) and h.key_type == kind and h.key == key
                   for _, _, h in self._pending_requests):
            self.enqueue(FindCoordinatorHandler(self, kind, key))

    def set_coordinator(self, kind: CoordinatorType, node_id: int, host: str, port: int) -> None:
        self.coordinators[kind] = CoordinatorNode(node_id, host, port)

    def coordinator_ready(self, init_producer_id_max_version: Optional[int]) -> None:
        """The transaction coordinator's ApiVersions are known: can it bump epochs (InitProducerId v3+)?"""
        self.coordinator_supports_bumping_epoch = (init_producer_id_max_version or 0) >= 3

    # -- answers that move the state --------------------------------------------------------------------------
    def producer_id_received(self, producer_id: int, producer_epoch: int, is_epoch_bump: bool) -> None:
        self.set_producer_id_and_epoch(producer_id, producer_epoch)
        self._transition_to(State.READY)

    def complete_transaction(self) -> None:
        """EndTxn succeeded (or was not needed): READY again, or INITIALIZING when the epoch must be bumped."""
        self._transition_to(State.INITIALIZING if self.epoch_bump_required else State.READY)
        self.last_error = None
        self.epoch_bump_required = False
        self.transaction_started = False
        self.new_partitions_in_transaction.clear()
        self.pending_partitions_in_transaction.clear()
        self.partitions_in_transaction.clear()

    def close(self) -> None:
        """The producer closes: every queued request and the pending call fail."""
        error = TransactionError("The producer closed forcefully")
        while self._pending_requests:
            heapq.heappop(self._pending_requests)[2].result.fail(error)
        if self._pending_transition is not None:
            self._pending_transition.result.fail(error)
