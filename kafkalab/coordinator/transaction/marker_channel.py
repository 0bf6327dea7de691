"""Writing the COMMIT/ABORT markers: queues per partition leader, and what each answer means.

Theory of operation
-------------------
Once PrepareCommit/PrepareAbort is durable, every partition of the transaction must get a *marker* (a control
batch) from its leader. The coordinator does not write them itself: it sends **WriteTxnMarkers** to each leader,
over the inter-broker listener. This module is the sans-IO half of that (the sending is
:mod:`.marker_sender`):

* :meth:`TransactionMarkerChannelManager.add_txn_markers_to_send` remembers the transaction as *pending* and
  queues one marker entry (producer id, epoch, result, coordinator epoch, partitions) per destination broker: the
  current leader of each partition. A partition without a leader (its topic was deleted) is dropped; a leader
  that is not alive waits in the *unknown broker* queue and is looked up again on the next drain.
* :meth:`drain` hands a broker's queued entries to the sender, which puts the entries of many transactions into
  one WriteTxnMarkers request; :meth:`on_response` / :meth:`on_disconnect` apply the answer per partition:

  ===========================================================  ================================================
  answer                                                       what happens
  ===========================================================  ================================================
  NONE                                                         the partition is done
  UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,          queued again (the leader is looked up again)
  NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
  KAFKA_STORAGE_ERROR, no answer (disconnected)
  INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED       stop: a newer producer or coordinator took over
  UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION          the partition is dropped (counted as done)
  anything else                                                logged as a bug, queued again
  ===========================================================  ================================================

* When no partition is left, CompleteCommit/CompleteAbort is appended (retried while the answer is
  COORDINATOR_NOT_AVAILABLE; given up on NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, because the new owner
  of the partition finishes it when it loads). Markers are not deduplicated: a duplicate is harmless on a leader.

Every step first checks that this broker still coordinates the transaction at the same coordinator epoch;
otherwise the transaction's markers are simply forgotten here.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionMarkerChannelManager.scala`` and
``TransactionMarkerRequestCompletionHandler.scala``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, request_class
from kafkalab.protocol.errors import error_info

from .state import TransactionState
from .state_manager import TransactionStateManager
from .transaction_metadata import TransactionMetadata, TxnTransitMetadata

__all__ = ["TransactionMarkerChannelManager", "TxnMarkerEntry", "TxnIdAndMarkerEntry", "PendingCompleteTxn",
           "WRITE_TXN_MARKERS_VERSION", "LeaderLookup", "NO_LEADER", "LEADER_NOT_ALIVE"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionMarkerChannelManager")

E = ErrorCode
S = TransactionState
WRITE_TXN_MARKERS_VERSION = 1           # MetadataVersion.writeTxnMarkersRequestVersion from IBP 2.8 on
WriteTxnMarkersRequest = request_class(ApiKey.WRITE_TXN_MARKERS)

#: answers of :data:`LeaderLookup` besides a broker id
NO_LEADER = -1
LEADER_NOT_ALIVE = -2
#: ``leader_for(topic, partition)`` -> the leader's broker id, NO_LEADER or LEADER_NOT_ALIVE.
LeaderLookup = Callable[[str, int], int]

_RETRY = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS,
                    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT, E.KAFKA_STORAGE_ERROR})
_STOP = frozenset({E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED})
_DROP = frozenset({E.UNSUPPORTED_FOR_MESSAGE_FORMAT, E.UNSUPPORTED_VERSION})


class TxnMarkerEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    partitions: tuple               # ((topic, partition), ...)


class TxnIdAndMarkerEntry(NamedTuple):
    transactional_id: str
    entry: TxnMarkerEntry


@dataclass
class PendingCompleteTxn:
    transactional_id: str
    coordinator_epoch: int
    txn_metadata: TransactionMetadata
    transit: TxnTransitMetadata


class TransactionMarkerChannelManager:
    """``leader_for(topic, partition)`` answers who leads a data partition; ``wakeup(broker_id)`` tells the sender
    that a broker's queue has work (the sender then calls :meth:`drain`)."""

    def __init__(self, state_manager: TransactionStateManager, leader_for: LeaderLookup,
                 wakeup: Callable[[int], None] = lambda broker_id: None):
        self.state_manager = state_manager
        self.leader_for = leader_for
        self.wakeup = wakeup
        #: broker id -> txn topic partition -> queued entries
        self.queues: dict[int, dict[int, list[TxnIdAndMarkerEntry]]] = {}
        self.unknown_broker_queue: dict[int, list[TxnIdAndMarkerEntry]] = {}
        self.transactions_with_pending_markers: dict[str, PendingCompleteTxn] = {}
        self.txn_log_append_retry_queue: list[PendingCompleteTxn] = []

    # ------------------------------------------------------------------------------------------ queueing
    def add_txn_markers_to_send(self, coordinator_epoch: int, committed: bool, txn_metadata: TransactionMetadata,
                                transit: TxnTransitMetadata) -> None:
        transactional_id = txn_metadata.transactional_id
        pending = PendingCompleteTxn(transactional_id, coordinator_epoch, txn_metadata, transit)
        self.transactions_with_pending_markers[transactional_id] = pending
        self.add_txn_markers_to_broker_queue(txn_metadata.producer_id, txn_metadata.producer_epoch, committed,
                                             pending, set(txn_metadata.topic_partitions))
        self.maybe_write_txn_completion(transactional_id)

    def add_txn_markers_to_broker_queue(self, producer_id: int, producer_epoch: int, committed: bool,
                                        pending: PendingCompleteTxn, partitions) -> None:
        txn_partition = self.state_manager.partition_for(pending.transactional_id)
        by_broker: dict[int, list] = {}
        for tp in sorted(partitions):
            leader = self.leader_for(*tp)
            if leader == NO_LEADER:
                # the topic is gone: nobody will ever write to it again, so nothing needs a marker
                log.info("Couldn't find leader endpoint for partition %s-%d while trying to send transaction "
                         "markers for %s, these partitions are likely deleted already and hence can be skipped",
                         tp[0], tp[1], pending.transactional_id)
                self._remove_partition(pending, tp)
                continue
            by_broker.setdefault(leader, []).append(tp)
        for broker_id, tps in by_broker.items():
            item = TxnIdAndMarkerEntry(pending.transactional_id, TxnMarkerEntry(
                producer_id, producer_epoch, pending.coordinator_epoch, committed, tuple(tps)))
            if broker_id == LEADER_NOT_ALIVE:
                self.unknown_broker_queue.setdefault(txn_partition, []).append(item)
            else:
                self.queues.setdefault(broker_id, {}).setdefault(txn_partition, []).append(item)
                self.wakeup(broker_id)
        if not by_broker:
            self.maybe_write_txn_completion(pending.transactional_id)

    def _remove_partition(self, pending: PendingCompleteTxn, tp) -> None:
        m = pending.txn_metadata
        if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            m.remove_partition(tp)

    def retry_unknown_brokers(self) -> None:
        """Look the leaders of parked entries up again (called before each drain)."""
        parked, self.unknown_broker_queue = self.unknown_broker_queue, {}
        for items in parked.values():
            for item in items:
                pending = self.transactions_with_pending_markers.get(item.transactional_id)
                if pending is not None:
                    e = item.entry
                    self.add_txn_markers_to_broker_queue(e.producer_id, e.producer_epoch, e.committed, pending,
                                                         e.partitions)

    def drain(self, broker_id: int) -> list[TxnIdAndMarkerEntry]:
        """Everything queued for ``broker_id`` (the sender's next request), oldest first."""
        self.retry_unknown_brokers()
        by_partition = self.queues.pop(broker_id, {})
        return [item for items in by_partition.values() for item in items]

    def brokers_with_work(self) -> list[int]:
        return [b for b, q in self.queues.items() if any(q.values())]

    @staticmethod
    def build_request(items: list[TxnIdAndMarkerEntry]):
        """One WriteTxnMarkers request (v1) for the entries of many transactions."""
        R = WriteTxnMarkersRequest
        markers = []
        for item in items:
            e = item.entry
            topics: dict[str, list[int]] = {}
            for topic, partition in e.partitions:
                topics.setdefault(topic, []).append(partition)
            markers.append(R.WritableTxnMarker(
                producer_id=e.producer_id, producer_epoch=e.producer_epoch, transaction_result=e.committed,
                topics=tuple(R.WritableTxnMarkerTopic(name=t, partition_indexes=tuple(ps)) for t, ps in topics.items()),
                coordinator_epoch=e.coordinator_epoch))
        return R(markers=tuple(markers))

    # ------------------------------------------------------------------------------------------ answers
    def _still_pending(self, item: TxnIdAndMarkerEntry) -> Optional[PendingCompleteTxn]:
        """The pending txn if this coordinator still owns it at the same epoch; else forget its markers."""
        pending = self.transactions_with_pending_markers.get(item.transactional_id)
        if pending is None:
            return None
        try:
            current = self.state_manager.get_transaction_state(item.transactional_id)
        except ApiException as e:
            log.info("I am no longer the coordinator for %s (%s); cancelling sending its markers",
                     item.transactional_id, e)
            self.remove_markers_for_txn(pending)
            return None
        if current is None or current.coordinator_epoch != item.entry.coordinator_epoch \
                or current.transaction_metadata is not pending.txn_metadata:
            log.info("The coordinator epoch of %s changed; cancelling sending its markers", item.transactional_id)
            self.remove_markers_for_txn(pending)
            return None
        return pending

    def on_disconnect(self, broker_id: int, items: list[TxnIdAndMarkerEntry]) -> None:
        """The request got no answer: every entry is queued again (leaders looked up again)."""
        for item in items:
            pending = self._still_pending(item)
            if pending is not None:
                e = item.entry
                self.add_txn_markers_to_broker_queue(e.producer_id, e.producer_epoch, e.committed, pending,
                                                     e.partitions)

    def on_response(self, broker_id: int, items: list[TxnIdAndMarkerEntry], response) -> bool:
        """Apply a WriteTxnMarkers response to the entries its request carried; True if some partition must be
        retried (the sender then backs off before its next request)."""
        retried = False
        errors_by_pid: dict[int, dict] = {}
        for result in response.markers or ():
            per_partition = errors_by_pid.setdefault(result.producer_id, {})
            for topic in result.topics or ():
                for p in topic.partitions or ():
                    per_partition[(topic.name, p.partition_index)] = int(p.error_code)
        for item in items:
            errors = errors_by_pid.get(item.entry.producer_id)
            if errors is None:
                log.error("WriteTxnMarkers response from broker %d has no result for producer id %d; queueing its "
                          "markers again", broker_id, item.entry.producer_id)
                self.on_disconnect(broker_id, [item])
                retried = True
                continue
            retried = self._apply(broker_id, item, errors) or retried
        return retried

    def _apply(self, broker_id: int, item: TxnIdAndMarkerEntry, errors: dict) -> bool:
        pending = self._still_pending(item)
        if pending is None:
            return False
        retry, abort_sending = [], False
        for tp in item.entry.partitions:
            code = errors.get(tp, E.UNKNOWN_SERVER_ERROR)
            if code == E.NONE or code in _DROP:
                if code != E.NONE:
                    log.info("Sending %s's transaction marker for partition %s-%d has permanently failed with %s; "
                             "it is dropped", item.transactional_id, tp[0], tp[1], error_info(code).name)
                self._remove_partition(pending, tp)
            elif code in _STOP:
                abort_sending = True
            elif code in _RETRY:
                log.info("Sending %s's transaction marker for %s-%d failed with %s; retrying", item.transactional_id,
                         tp[0], tp[1], error_info(code).name)
                retry.append(tp)
            else:
                log.error("Unexpected error %s while sending txn marker for %s to %s-%d (broker %d); retrying",
                          code, item.transactional_id, tp[0], tp[1], broker_id)
                retry.append(tp)
        if abort_sending:
            self.remove_markers_for_txn(pending)
        elif retry:
            e = item.entry
            self.add_txn_markers_to_broker_queue(e.producer_id, e.producer_epoch, e.committed, pending, retry)
            return True
        else:
            self.maybe_write_txn_completion(item.transactional_id)
        return False

    # ------------------------------------------------------------------------------------------ completion
    def maybe_write_txn_completion(self, transactional_id: str) -> None:
        pending = self.transactions_with_pending_markers.get(transactional_id)
        if pending is None or pending.txn_metadata.topic_partitions:
            return
        self._write_txn_completion(pending)

    def _write_txn_completion(self, pending: PendingCompleteTxn) -> None:
        transactional_id = pending.transactional_id
        if self.transactions_with_pending_markers.get(transactional_id) is pending:
            del self.transactions_with_pending_markers[transactional_id]

        def appended(error: int) -> None:
            if error == E.NONE:
                log.debug("Completed transaction for %s with coordinator epoch %d, final state after commit: %s",
                          transactional_id, pending.coordinator_epoch, pending.txn_metadata.state)
            elif error in (E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS):
                log.info("No longer the coordinator for %s (%s) while completing its transaction; the new "
                         "coordinator finishes it", transactional_id, error_info(error).name)
            elif error == E.COORDINATOR_NOT_AVAILABLE:
                log.warning("Failed updating transaction state for %s when appending to transaction log due to %s; "
                            "retrying", transactional_id, error_info(error).name)
                self.txn_log_append_retry_queue.append(pending)
            else:
                log.error("Unexpected error %s while appending the completion of %s", error, transactional_id)
        self.state_manager.append_transaction_to_log(transactional_id, pending.coordinator_epoch, pending.transit,
                                                     appended, retry_on_error=lambda e: e == E.COORDINATOR_NOT_AVAILABLE)

    def retry_log_appends(self) -> None:
        """Append again the Complete* records that failed with COORDINATOR_NOT_AVAILABLE."""
        retry, self.txn_log_append_retry_queue = self.txn_log_append_retry_queue, []
        for pending in retry:
            self._write_txn_completion(pending)

    def remove_markers_for_txn(self, pending: PendingCompleteTxn) -> None:
        if self.transactions_with_pending_markers.get(pending.transactional_id) is pending:
            del self.transactions_with_pending_markers[pending.transactional_id]
        for q in list(self.queues.values()) + [self.unknown_broker_queue]:
            for txn_partition, items in q.items():
                q[txn_partition] = [i for i in items if i.transactional_id != pending.transactional_id]

    def remove_markers_for_txn_topic_partition(self, txn_partition: int) -> None:
        """This broker no longer coordinates ``__transaction_state-<txn_partition>`` (or starts loading it)."""
        for q in list(self.queues.values()) + [self.unknown_broker_queue]:
            q.pop(txn_partition, None)
        for transactional_id in [t for t in self.transactions_with_pending_markers
                                 if self.state_manager.partition_for(t) == txn_partition]:
            del self.transactions_with_pending_markers[transactional_id]
        self.txn_log_append_retry_queue = [p for p in self.txn_log_append_retry_queue
                                           if self.state_manager.partition_for(p.transactional_id) != txn_partition]
