"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, EndTxn, the timeout abort and the expiry.

Theory of operation
-------------------
Every request follows the same three steps, on a sans-IO core driven by callbacks, an injected clock and an
injected scheduler (like the group coordinator):

1. **Check** the request against the cached :class:`~.transaction_metadata.TransactionMetadata` (not
   coordinator -> NOT_COORDINATOR, loading -> COORDINATOR_LOAD_IN_PROGRESS, unknown id ->
   INVALID_PRODUCER_ID_MAPPING, other producer id -> INVALID_PRODUCER_ID_MAPPING, other epoch ->
   PRODUCER_FENCED, a transition already pending -> CONCURRENT_TRANSACTIONS, ...) and **prepare** a transition.
2. **Append** it to ``__transaction_state`` with ``acks=-1`` (:class:`~.state_manager.TransactionStateManager`).
3. **Answer** once it is durable; the cache changes only then.

**InitProducerId** creates the id (a new producer id, epoch -1 -> 0) or bumps its epoch. An id whose transaction
is still Ongoing belongs to a producer that is now a zombie: the coordinator *fences* it (epoch + 1, pending
PrepareEpochFence), aborts its transaction with that epoch, and answers CONCURRENT_TRANSACTIONS; the new
producer's retry bumps once more. An exhausted epoch (32766) rotates to a new producer id. A request carrying its
producer id and epoch (v3+, KIP-360) lets a producer bump its own epoch after an error, and a retry of a bump that
succeeded gets the same epoch back.

**EndTxn** writes PrepareCommit/PrepareAbort and answers NONE as soon as that is durable; the markers are then
written by the :class:`~.marker_channel.TransactionMarkerChannelManager`, which appends CompleteCommit /
CompleteAbort when every partition leader has its marker. Until then the id answers CONCURRENT_TRANSACTIONS.

**Scanners.** Every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` Ongoing transactions older
than their ``transaction.timeout.ms`` are fenced and aborted (the epoch bump stops the zombie); every
``transaction.remove.expired.transaction.cleanup.interval.ms`` ids idle past ``transactional.id.expiration.ms``
are tombstoned.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala`` (3.9).
"""
from __future__ import annotations

import logging
from typing import Callable, NamedTuple, Optional

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.protocol.errors import error_info

from .state import TransactionState
from .state_manager import TransactionalIdCoordinatorEpochAndMetadata, TransactionLog, TransactionStateManager
from .transaction_config import TransactionConfig
from .transaction_metadata import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, TxnTransitMetadata,
                                   is_epoch_exhausted)

__all__ = ["TransactionCoordinator", "InitProducerIdResult", "TransactionDescription"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionCoordinator")

S = TransactionState
E = ErrorCode


class InitProducerIdResult(NamedTuple):
    producer_id: int
    producer_epoch: int
    error: int


class TransactionDescription(NamedTuple):
    """One DescribeTransactions entry (``error`` NONE or why not)."""

    transactional_id: str
    error: int
    state: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    topic_partitions: tuple = ()


def _init_error(error: int) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, int(error))


class TransactionCoordinator:
    """``producer_id_generator()`` returns a fresh producer id; ``markers`` is the marker channel manager
    (``add_txn_markers_to_send``, ``remove_markers_for_txn_topic_partition``)."""

    def __init__(self, config: TransactionConfig, time, scheduler, txn_log: TransactionLog,
                 producer_id_generator: Callable[[], int], markers=None, broker_id: int = 0):
        self.config = config
        self.time = time
        self.scheduler = scheduler
        self.broker_id = broker_id
        self.state_manager = TransactionStateManager(config, time, txn_log, broker_id)
        self.generate_producer_id = producer_id_generator
        self.markers = markers
        self.is_active = False
        self._tasks: list = []

    # ------------------------------------------------------------------------------------------ lifecycle
    def startup(self, enable_transactional_id_expiration: bool = True) -> None:
        c = self.config
        self._tasks.append(self.scheduler.schedule(
            "transaction-abort", self.abort_timed_out_transactions, c.abort_timed_out_transactions_interval_ms,
            c.abort_timed_out_transactions_interval_ms))
        if enable_transactional_id_expiration:
            self._tasks.append(self.scheduler.schedule(
                "transactionalId-expiration", self.state_manager.remove_expired_transactional_ids,
                c.remove_expired_transactional_ids_interval_ms, c.remove_expired_transactional_ids_interval_ms))
        self.is_active = True

    def add_periodic_task(self, name: str, fn: Callable[[], None], period_ms: int) -> None:
        """Run ``fn`` every ``period_ms`` on the coordinator's scheduler until :meth:`shutdown`."""
        self._tasks.append(self.scheduler.schedule(name, fn, period_ms, period_ms))

    def shutdown(self) -> None:
        self.is_active = False
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def partition_for(self, transactional_id: str) -> int:
        return self.state_manager.partition_for(transactional_id)

    def on_election(self, partition: int, coordinator_epoch: int) -> None:
        """This broker became leader of ``__transaction_state-<partition>`` at ``coordinator_epoch``."""
        log.info("Elected as the txn coordinator for partition %d at epoch %d", partition, coordinator_epoch)
        if self.markers is not None:
            self.markers.remove_markers_for_txn_topic_partition(partition)
        self.state_manager.add_loading_partition(partition, coordinator_epoch)
        self.scheduler.schedule(f"load-txns-for-partition-__transaction_state-{partition}", lambda: (
            self.state_manager.load_transactions_for_partition(partition, coordinator_epoch, self._resend_markers)), 0)

    def on_resignation(self, partition: int, coordinator_epoch: Optional[int] = None) -> None:
        log.info("Resigned as the txn coordinator for partition %d at epoch %s", partition, coordinator_epoch)
        self.state_manager.remove_transactions_for_partition(partition, coordinator_epoch)
        if self.markers is not None:
            self.markers.remove_markers_for_txn_topic_partition(partition)

    def _resend_markers(self, item: TransactionalIdCoordinatorEpochAndMetadata) -> None:
        if self.markers is not None:
            self.markers.add_txn_markers_to_send(item.coordinator_epoch, item.committed, item.transaction_metadata,
                                                 item.transit)

    # ------------------------------------------------------------------------------------------ InitProducerId
    def handle_init_producer_id(self, transactional_id: Optional[str], transaction_timeout_ms: int,
                                expected: Optional[tuple[int, int]],
                                callback: Callable[[InitProducerIdResult], None]) -> None:
        """``expected`` = (producer id, epoch) of a KIP-360 request (v3+), or None."""
        if transactional_id is None:
            callback(InitProducerIdResult(self.generate_producer_id(), 0, E.NONE))
            return
        if not transactional_id:
            callback(_init_error(E.INVALID_REQUEST))
            return
        if not self.state_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            callback(_init_error(E.INVALID_TRANSACTION_TIMEOUT))
            return
        try:
            current = self.state_manager.get_transaction_state(transactional_id)
            if current is None:
                created = TransactionMetadata(transactional_id, self.generate_producer_id(),
                                              txn_timeout_ms=transaction_timeout_ms, state=S.EMPTY,
                                              txn_last_update_timestamp=self.time.milliseconds())
                current = self.state_manager.put_transaction_state_if_not_exists(created)
            transit = self._prepare_init_producer_id_transit(transactional_id, transaction_timeout_ms,
                                                             current.transaction_metadata, expected)
        except ApiException as e:
            callback(_init_error(e.error_code))
            return
        coordinator_epoch = current.coordinator_epoch
        if transit.txn_state == S.PREPARE_EPOCH_FENCE:
            def after_abort(error: int) -> None:
                callback(_init_error(error if error != E.NONE else E.CONCURRENT_TRANSACTIONS))
            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False, after_abort,
                                  is_from_client=False)
            return

        def appended(error: int) -> None:
            if error == E.NONE:
                log.info("Initialized transactionalId %s with producerId %d and producer epoch %d on partition "
                         "__transaction_state-%d", transactional_id, transit.producer_id, transit.producer_epoch,
                         self.partition_for(transactional_id))
                callback(InitProducerIdResult(transit.producer_id, transit.producer_epoch, E.NONE))
            else:
                callback(_init_error(error))
        self.state_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, appended)

    def _prepare_init_producer_id_transit(self, transactional_id: str, timeout_ms: int, m: TransactionMetadata,
                                          expected: Optional[tuple[int, int]]) -> TxnTransitMetadata:
        if m.pending_transition_in_progress:
            raise ApiException(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not (m.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == m.producer_id or (
                expected[0] == m.last_producer_id and is_epoch_exhausted(expected[1]))):
            raise ApiException(E.PRODUCER_FENCED)
        if m.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise ApiException(E.CONCURRENT_TRANSACTIONS)
        now = self.time.milliseconds()
        if m.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if m.is_producer_epoch_exhausted and (expected is None or expected[1] == m.producer_epoch):
                return m.prepare_producer_id_rotation(self.generate_producer_id(), timeout_ms, now,
                                                      expected is not None)
            transit, error = m.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                                now)
            if error is not None:
                raise ApiException(error)
            return transit
        if m.state == S.ONGOING:
            # The epoch this fence takes is never handed out: the abort answers CONCURRENT_TRANSACTIONS and the
            # client's retry bumps again.
            return m.prepare_fence_producer_epoch()
        raise ApiException(E.UNKNOWN_SERVER_ERROR, f"Found transactionalId {transactional_id} with state {m.state}. "
                                                   f"This is illegal as we should never have transitioned to it.")

    # ------------------------------------------------------------------------------------------ AddPartitionsToTxn
    def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                             partitions, callback: Callable[[int], None]) -> None:
        """Add ``partitions`` ({(topic, partition)}) to the transaction; ``callback(error code)``."""
        if not transactional_id:
            callback(E.INVALID_REQUEST)
            return
        partitions = frozenset(partitions)
        try:
            current = self.state_manager.get_transaction_state(transactional_id)
            if current is None:
                raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
            m = current.transaction_metadata
            if m.producer_id != producer_id:
                raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
            if m.producer_epoch != producer_epoch:
                raise ApiException(E.PRODUCER_FENCED)
            if m.pending_transition_in_progress or m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                raise ApiException(E.CONCURRENT_TRANSACTIONS)
            if m.state == S.ONGOING and partitions <= m.topic_partitions:
                callback(E.NONE)        # already in the transaction: nothing to write
                return
            transit = m.prepare_add_partitions(partitions, self.time.milliseconds())
        except ApiException as e:
            callback(e.error_code)
            return
        self.state_manager.append_transaction_to_log(transactional_id, current.coordinator_epoch, transit, callback)

    # ------------------------------------------------------------------------------------------ EndTxn
    def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                               callback: Callable[[int], None]) -> None:
        self._end_transaction(transactional_id, producer_id, producer_epoch, committed, callback, is_from_client=True)

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                         callback: Callable[[int], None], is_from_client: bool) -> None:
        if not transactional_id:
            callback(E.INVALID_REQUEST)
            return
        is_epoch_fence = False
        current = None
        try:
            current = self.state_manager.get_transaction_state(transactional_id)
            if current is None:
                raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
            m = current.transaction_metadata
            is_epoch_fence = m.pending_state == S.PREPARE_EPOCH_FENCE
            transit = self._prepare_end(m, producer_id, producer_epoch, committed, is_from_client)
        except ApiException as e:
            if is_epoch_fence and not is_from_client and current is not None:
                current.transaction_metadata.pending_state = None   # the fence never reached the log
            callback(e.error_code)
            return
        if transit is None:         # an idempotent retry of a completed EndTxn
            callback(E.NONE)
            return
        coordinator_epoch = current.coordinator_epoch

        def appended(error: int) -> None:
            if error != E.NONE:
                log.info("Aborting sending of transaction markers and returning %s error to client for %s's "
                         "EndTransaction request of %s, since appending %s to transaction log with coordinator "
                         "epoch %d failed", error_info(error).name, transactional_id, "COMMIT" if committed else "ABORT",
                         transit.txn_state, coordinator_epoch)
                if is_epoch_fence:
                    now = self.state_manager.get_transaction_state_or_none(transactional_id)
                    if now is not None and now.coordinator_epoch == coordinator_epoch:
                        now.transaction_metadata.has_failed_epoch_fence = True
                callback(error)
                return
            self._after_prepare_appended(transactional_id, coordinator_epoch, producer_id, producer_epoch,
                                         committed, callback)
        self.state_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, appended)

    @staticmethod
    def _invalid_state(m: TransactionMetadata, committed: bool) -> ApiException:
        return ApiException(E.INVALID_TXN_STATE, f"TransactionalId {m.transactional_id}'s state is {m.state}: "
                                                 f"it cannot be {'committed' if committed else 'aborted'}")

    def _prepare_end(self, m: TransactionMetadata, producer_id: int, producer_epoch: int, committed: bool,
                     is_from_client: bool) -> Optional[TxnTransitMetadata]:
        if m.producer_id != producer_id:
            raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
        # Strict equality for clients; an internal abort (timeout, fence) carries a bumped epoch.
        if (is_from_client and producer_epoch != m.producer_epoch) or producer_epoch < m.producer_epoch:
            raise ApiException(E.PRODUCER_FENCED)
        if m.pending_transition_in_progress and m.pending_state != S.PREPARE_EPOCH_FENCE:
            raise ApiException(E.CONCURRENT_TRANSACTIONS)
        state = m.state
        if state == S.ONGOING:
            next_state = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
            if m.pending_state == S.PREPARE_EPOCH_FENCE:
                if next_state != S.PREPARE_ABORT:
                    raise ApiException(E.CONCURRENT_TRANSACTIONS)
                # the fence takes effect now: the abort is written with the bumped epoch
                m.pending_state = None
                m.producer_epoch = producer_epoch
                m.last_producer_epoch = NO_PRODUCER_EPOCH
            return m.prepare_abort_or_commit(next_state, self.time.milliseconds())
        if state == S.COMPLETE_COMMIT:
            if committed:
                return None
            raise self._invalid_state(m, committed)
        if state == S.COMPLETE_ABORT:
            if not committed:
                return None
            raise self._invalid_state(m, committed)
        if state == S.PREPARE_COMMIT:
            raise ApiException(E.CONCURRENT_TRANSACTIONS) if committed else self._invalid_state(m, committed)
        if state == S.PREPARE_ABORT:
            raise self._invalid_state(m, committed) if committed else ApiException(E.CONCURRENT_TRANSACTIONS)
        raise self._invalid_state(m, committed)     # Empty (and, never reached, Dead)

    def _after_prepare_appended(self, transactional_id: str, coordinator_epoch: int, producer_id: int,
                                producer_epoch: int, committed: bool, callback: Callable[[int], None]) -> None:
        """Prepare* is durable: re-check, prepare Complete*, answer NONE, hand the markers over."""
        try:
            current = self.state_manager.get_transaction_state(transactional_id)
            if current is None:
                raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
            if current.coordinator_epoch != coordinator_epoch:
                raise ApiException(E.NOT_COORDINATOR)
            m = current.transaction_metadata
            if m.producer_id != producer_id:
                raise ApiException(E.INVALID_PRODUCER_ID_MAPPING)
            if m.producer_epoch != producer_epoch:
                raise ApiException(E.PRODUCER_FENCED)
            if m.pending_transition_in_progress:
                raise ApiException(E.CONCURRENT_TRANSACTIONS)
            expected = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
            if m.state != expected:
                raise self._invalid_state(m, committed)
            transit = m.prepare_complete(self.time.milliseconds())
        except ApiException as e:
            log.info("Aborting sending of transaction markers after appended the prepare record for %s: %s",
                     transactional_id, e)
            callback(e.error_code)
            return
        callback(E.NONE)
        if self.markers is not None:
            self.markers.add_txn_markers_to_send(coordinator_epoch, committed, m, transit)

    # ------------------------------------------------------------------------------------------ scanners
    def abort_timed_out_transactions(self) -> list[str]:
        """Fence and abort every Ongoing transaction past its timeout; returns the ids it started aborting."""
        started = []
        for transactional_id, producer_id, _ in self.state_manager.timed_out_transactions():
            current = self.state_manager.get_transaction_state_or_none(transactional_id)
            if current is None:
                continue
            m = current.transaction_metadata
            if m.producer_id != producer_id or m.pending_transition_in_progress:
                continue
            transit = m.prepare_fence_producer_epoch()
            log.info("Aborting the timed-out transaction of %s (producer id %d) with the bumped epoch %d",
                     transactional_id, producer_id, transit.producer_epoch)

            def done(error: int, transactional_id=transactional_id) -> None:
                if error != E.NONE:
                    log.info("Failed to abort the timed-out transaction of %s: %s", transactional_id, error_info(error).name)
            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False, done,
                                  is_from_client=False)
            started.append(transactional_id)
        return started

    # ------------------------------------------------------------------------------------------ admin views
    def handle_describe_transactions(self, transactional_id: Optional[str]) -> TransactionDescription:
        if not self.is_active:
            return TransactionDescription(transactional_id or "", E.COORDINATOR_NOT_AVAILABLE)
        if not transactional_id:
            return TransactionDescription(transactional_id or "", E.INVALID_REQUEST)
        try:
            current = self.state_manager.get_transaction_state(transactional_id)
        except ApiException as e:
            return TransactionDescription(transactional_id, e.error_code)
        if current is None or current.transaction_metadata.state == S.DEAD:
            return TransactionDescription(transactional_id, E.TRANSACTIONAL_ID_NOT_FOUND)
        m = current.transaction_metadata
        return TransactionDescription(transactional_id, E.NONE, m.state.value, m.producer_id, m.producer_epoch,
                                      m.txn_timeout_ms, m.txn_start_timestamp, tuple(sorted(m.topic_partitions)))

    def handle_list_transactions(self, producer_id_filters, state_filters, duration_filter_ms: int = -1):
        """(error code, unknown state filters, [TransactionMetadata])."""
        if not self.is_active:
            return E.COORDINATOR_NOT_AVAILABLE, [], []
        return self.state_manager.list_transaction_states(producer_id_filters, state_filters, duration_filter_ms)
