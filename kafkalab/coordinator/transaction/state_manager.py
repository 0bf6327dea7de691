"""The transaction coordinator's memory: the metadata cache per partition of ``__transaction_state``, and its log.

Theory of operation
-------------------
A transactional id lives in partition ``abs(hashCode(transactional.id)) % transaction.state.log.num.partitions``
of ``__transaction_state`` (Java's ``String.hashCode``, Kafka's ``Utils.abs``), and the leader of that partition
is its coordinator. The cache is kept *per partition*, each with its **coordinator epoch**: the leader epoch of
the partition when this broker became its leader. The epoch travels in every marker so that partition leaders
can refuse a zombie coordinator, and every append re-checks it: if the partition moved away and back while a
write was in flight, the write's answer is NOT_COORDINATOR.

* Becoming leader: the partition is *loading* (requests get COORDINATOR_LOAD_IN_PROGRESS) while the log is
  replayed (:func:`~.transaction_log.load_transactions`); then the cache is installed, and each transaction found
  in PrepareCommit/PrepareAbort gets its markers sent again (``send_txn_markers``). Ongoing ones are left to the
  timeout scanner.
* Resigning: the partition's cache is dropped. Ids of partitions not led here get NOT_COORDINATOR.
* :meth:`append_transaction_to_log` writes one transition with ``acks=-1`` and applies it to the cache only when
  it is durable and the coordinator epoch is unchanged; a failure clears the pending state (unless the caller
  retries) and is translated: UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND) and
  REQUEST_TIMED_OUT become COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR become
  NOT_COORDINATOR; MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE UNKNOWN_SERVER_ERROR.

The broker side is a :class:`TransactionLog`: ``append_async(partition, batch, callback, timeout_ms)`` and
``read(partition)``. :class:`MemoryTransactionLog` is one in memory, for tests and the lab; it can hold appends
so that a test completes them step by step.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionStateManager.scala``.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable, NamedTuple, Optional, Protocol

from kafkalab.coordinator.group.group_metadata_manager import partition_for
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.protocol.errors import error_info
from kafkalab.records import SimpleRecord, build_batch, decode_batches

from .state import EXPIRABLE_STATES, TransactionState
from .transaction_config import TransactionConfig
from .transaction_log import key_to_bytes, load_transactions, value_to_bytes
from .transaction_metadata import TransactionMetadata, TxnTransitMetadata

__all__ = ["TransactionStateManager", "TransactionLog", "MemoryTransactionLog", "CoordinatorEpochAndTxnMetadata",
           "TransactionalIdCoordinatorEpochAndMetadata", "APPEND_ERRORS"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionStateManager")

S = TransactionState
E = ErrorCode

#: How a failed append to __transaction_state becomes the coordinator's answer.
APPEND_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
    E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
}


class TransactionLog(Protocol):
    def append_async(self, partition: int, batch: bytes, callback: Callable[[int], None], timeout_ms: int) -> None: ...

    def read(self, partition: int) -> Iterable: ...


class MemoryTransactionLog:
    """``__transaction_state`` in memory. With ``hold=True`` appends wait in :attr:`held` until
    :meth:`complete` (a test drives the acks=-1 round trip by hand); ``fail_with`` makes appends fail."""

    def __init__(self, hold: bool = False):
        self.batches: dict[int, list[bytes]] = {}
        self.hold = hold
        self.held: list[tuple[int, bytes, Callable[[int], None]]] = []
        self.fail_with: Optional[int] = None

    def append_async(self, partition: int, batch: bytes, callback: Callable[[int], None], timeout_ms: int = 0):
        if self.hold:
            self.held.append((partition, batch, callback))
            return
        self._finish(partition, batch, callback, self.fail_with)

    def _finish(self, partition, batch, callback, error) -> None:
        if error is None or error == E.NONE:
            self.batches.setdefault(partition, []).append(batch)
            callback(E.NONE)
        else:
            callback(error)

    def complete(self, error: Optional[int] = None, count: int = 1) -> None:
        """Complete the oldest ``count`` held appends, successfully or with ``error``."""
        for _ in range(count):
            partition, batch, callback = self.held.pop(0)
            self._finish(partition, batch, callback, error)

    def read(self, partition: int):
        for b in self.batches.get(partition, []):
            yield from decode_batches(b)

    def records(self, partition: int) -> list:
        return [r for b in self.read(partition) for r in b.records]


class CoordinatorEpochAndTxnMetadata(NamedTuple):
    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


class TransactionalIdCoordinatorEpochAndMetadata(NamedTuple):
    """A transaction loaded in Prepare*: its markers must be (re)sent."""

    transactional_id: str
    coordinator_epoch: int
    committed: bool
    transaction_metadata: TransactionMetadata
    transit: TxnTransitMetadata


class _CacheEntry(NamedTuple):
    coordinator_epoch: int
    metadata_per_transactional_id: dict


class TransactionStateManager:
    def __init__(self, config: TransactionConfig, time, txn_log: TransactionLog, broker_id: int = 0):
        self.config = config
        self.time = time
        self.log = txn_log
        self.broker_id = broker_id
        self.num_partitions = config.transaction_state_log_num_partitions
        self.cache: dict[int, _CacheEntry] = {}
        self.loading_partitions: dict[int, int] = {}       # partition -> coordinator epoch being loaded

    # ------------------------------------------------------------------------------------------ ownership
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    def get_transaction_state(self, transactional_id: str) -> Optional[CoordinatorEpochAndTxnMetadata]:
        """The id's metadata with its partition's coordinator epoch, or None if unknown here. ApiException
        COORDINATOR_LOAD_IN_PROGRESS while its partition loads, NOT_COORDINATOR if this broker does not lead it."""
        return self._get_and_maybe_add(transactional_id, None)

    def get_transaction_state_or_none(self, transactional_id: str) -> Optional[CoordinatorEpochAndTxnMetadata]:
        """Like :meth:`get_transaction_state`, None instead of an error (callbacks and scanners)."""
        try:
            return self.get_transaction_state(transactional_id)
        except ApiException:
            return None

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata) -> CoordinatorEpochAndTxnMetadata:
        return self._get_and_maybe_add(metadata.transactional_id, metadata)

    def _get_and_maybe_add(self, transactional_id: str, created: Optional[TransactionMetadata]):
        partition = self.partition_for(transactional_id)
        if partition in self.loading_partitions:
            raise ApiException(E.COORDINATOR_LOAD_IN_PROGRESS)
        entry = self.cache.get(partition)
        if entry is None:
            raise ApiException(E.NOT_COORDINATOR)
        metadata = entry.metadata_per_transactional_id.get(transactional_id)
        if metadata is None and created is not None:
            metadata = entry.metadata_per_transactional_id.setdefault(transactional_id, created)
        return None if metadata is None else CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, metadata)

    def all_transactions(self) -> Iterable[tuple[int, TransactionMetadata]]:
        """(coordinator epoch, metadata) of every cached id."""
        for entry in self.cache.values():
            for metadata in entry.metadata_per_transactional_id.values():
                yield entry.coordinator_epoch, metadata

    # ------------------------------------------------------------------------------------------ appends
    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransitMetadata,
                                  callback: Callable[[int], None],
                                  retry_on_error: Callable[[int], bool] = lambda code: False) -> None:
        """Append ``transit`` with acks=-1; ``callback(error code)`` once durable (the cache then holds it)."""
        try:
            current = self.get_transaction_state(transactional_id)
        except ApiException as e:
            callback(e.error_code)
            return
        if current is None or current.coordinator_epoch != coordinator_epoch:
            callback(E.NOT_COORDINATOR)
            return
        record = SimpleRecord(key_to_bytes(transactional_id), value_to_bytes(transit), (), self.time.milliseconds())
        batch = build_batch([record])
        done: list = []

        def on_append(code: int) -> None:
            if done:
                return
            done.append(code)
            self._after_append(transactional_id, coordinator_epoch, transit, int(code), callback, retry_on_error)
        try:
            self.log.append_async(self.partition_for(transactional_id), batch, on_append, transit.txn_timeout_ms)
        except ApiException as e:
            on_append(e.error_code)

    def _after_append(self, transactional_id, coordinator_epoch, transit, code, callback, retry_on_error) -> None:
        error = int(APPEND_ERRORS.get(code, code)) if code != E.NONE else int(E.NONE)
        try:
            current = self.get_transaction_state(transactional_id)
        except ApiException as e:
            log.info("Accessing the cached transaction metadata for %s returns %s after appending to the "
                     "transaction log", transactional_id, e)
            callback(e.error_code if error == E.NONE else error)
            return
        if error == E.NONE:
            if current is None or current.coordinator_epoch != coordinator_epoch:
                log.info("The cached coordinator epoch for %s changed after appending its new state; answering "
                         "NOT_COORDINATOR", transactional_id)
                error = int(E.NOT_COORDINATOR)
            else:
                current.transaction_metadata.complete_transition_to(transit)
        elif current is not None and current.coordinator_epoch == coordinator_epoch:
            if retry_on_error(error):
                log.info("Appending the new state of %s failed with %s; it will be retried", transactional_id,
                         error_info(error).name)
            else:
                current.transaction_metadata.pending_state = None
        callback(error)

    # ------------------------------------------------------------------------------------------ load / unload
    def add_loading_partition(self, partition: int, coordinator_epoch: int) -> None:
        self.loading_partitions[partition] = coordinator_epoch

    def load_transactions_for_partition(self, partition: int, coordinator_epoch: int,
                                        send_txn_markers: Callable[[TransactionalIdCoordinatorEpochAndMetadata],
                                                                   None]) -> int:
        """Replay the partition and install its cache; returns how many ids were loaded (or -1 when the load
        was superseded: another election or a resignation happened meanwhile)."""
        self.loading_partitions[partition] = coordinator_epoch
        try:
            loaded = load_transactions(self.log.read(partition))
        except Exception:  # noqa: BLE001 - a log that cannot be read: keep serving, with what is known (Kafka)
            log.exception("Error loading transactions from transaction log __transaction_state-%d", partition)
            loaded = {}
        if self.loading_partitions.get(partition) != coordinator_epoch:
            return -1
        now = self.time.milliseconds()
        self.cache[partition] = _CacheEntry(coordinator_epoch, dict(loaded))
        resend = []
        for transactional_id, metadata in loaded.items():
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                transit = metadata.prepare_complete(now)
                resend.append(TransactionalIdCoordinatorEpochAndMetadata(
                    transactional_id, coordinator_epoch, metadata.state == S.PREPARE_COMMIT, metadata, transit))
        # cleared before the markers go out, so their Complete* append is not refused as loading
        del self.loading_partitions[partition]
        log.info("Finished loading %d transaction metadata from %s-%d with coordinator epoch %d", len(loaded),
                 "__transaction_state", partition, coordinator_epoch)
        for item in resend:
            send_txn_markers(item)
        return len(loaded)

    def remove_transactions_for_partition(self, partition: int, coordinator_epoch: Optional[int] = None) -> None:
        self.loading_partitions.pop(partition, None)
        entry = self.cache.get(partition)
        if entry is not None and (coordinator_epoch is None or entry.coordinator_epoch <= coordinator_epoch):
            del self.cache[partition]
            log.info("Unloaded transaction metadata of __transaction_state-%d (coordinator epoch %d)", partition,
                     entry.coordinator_epoch)

    # ------------------------------------------------------------------------------------------ scanners
    def timed_out_transactions(self) -> list[tuple[str, int, int]]:
        """(transactional id, producer id, epoch) of Ongoing transactions past their timeout, not pending."""
        now = self.time.milliseconds()
        out = []
        for partition, entry in self.cache.items():
            if partition in self.loading_partitions:
                continue
            for metadata in entry.metadata_per_transactional_id.values():
                if (metadata.state == S.ONGOING and metadata.pending_state is None
                        and metadata.txn_start_timestamp + metadata.txn_timeout_ms < now):
                    out.append((metadata.transactional_id, metadata.producer_id, metadata.producer_epoch))
        return out

    def remove_expired_transactional_ids(self) -> list[str]:
        """Write tombstones for ids idle past ``transactional.id.expiration.ms``; drop them from the cache once
        durable (and the coordinator epoch is unchanged). Returns the ids whose tombstones were written."""
        now = self.time.milliseconds()
        removed: list[str] = []
        for partition, entry in list(self.cache.items()):
            expired = [m for m in entry.metadata_per_transactional_id.values()
                       if m.state in EXPIRABLE_STATES and m.pending_state is None
                       and m.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms]
            if not expired:
                continue
            for m in expired:
                m.prepare_dead()
            batch = build_batch([SimpleRecord(key_to_bytes(m.transactional_id), None, (), now) for m in expired])

            def on_append(code: int, partition=partition, epoch=entry.coordinator_epoch, expired=expired) -> None:
                current = self.cache.get(partition)
                for m in expired:
                    if code == E.NONE and current is not None and current.coordinator_epoch == epoch \
                            and current.metadata_per_transactional_id.get(m.transactional_id) is m \
                            and m.pending_state == S.DEAD:
                        del current.metadata_per_transactional_id[m.transactional_id]
                        removed.append(m.transactional_id)
                    else:
                        m.pending_state = None
                if code != E.NONE:
                    log.warning("Failed to write tombstones for expired transactional ids of partition %d: %s",
                                partition, code)
            try:
                self.log.append_async(partition, batch, on_append, self.config.transaction_max_timeout_ms)
            except ApiException as e:
                on_append(e.error_code)
        return removed

    def list_transaction_states(self, producer_id_filters: Iterable[int], state_filters: Iterable[str],
                                duration_filter_ms: int = -1):
        """(error code, unknown state filters, [TransactionMetadata]) -- Dead never shown."""
        if self.loading_partitions:
            return E.COORDINATOR_LOAD_IN_PROGRESS, [], []
        pids = set(producer_id_filters)
        states, unknown = set(), []
        for name in state_filters:
            state = TransactionState.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                states.add(state)
        now = self.time.milliseconds()
        out = []
        for _, m in self.all_transactions():
            if m.state == S.DEAD:
                continue
            if pids and m.producer_id not in pids:
                continue
            if states and m.state not in states:
                continue
            if duration_filter_ms >= 0 and now - m.txn_start_timestamp <= duration_filter_ms:
                continue
            out.append(m)
        return E.NONE, unknown, out
