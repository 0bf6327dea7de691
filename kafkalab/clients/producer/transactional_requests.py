"""The transactional producer's requests to its coordinators: one handler per request, building it and reading its answer.

Theory of operation
-------------------
A transaction on the wire, as the producer sends it::

    FindCoordinator(key=transactional.id, key_type=1)   -> the transaction coordinator
    InitProducerId(transactional.id, transaction.timeout.ms)   -> producer id + a bumped epoch (fences zombies)
    AddPartitionsToTxn(partitions)      before the first Produce to each partition of this transaction
    Produce(transactional batches)      to the partition leaders, as the idempotent producer does
    AddOffsetsToTxn(group.id)           then TxnOffsetCommit(offsets) to the *group* coordinator
    EndTxn(committed=true|false)        once every batch is answered; skipped when nothing was added

Each request is a :class:`TxnRequestHandler` queued in the :class:`~.transaction_manager.TransactionManager`
by priority (FindCoordinator first, then InitProducerId, AddPartitions/AddOffsets, EndTxn, and an InitProducerId
that bumps the epoch after an EndTxn last). The sender takes one at a time, sends it to the coordinator the
handler names (``coordinator_type``), and gives the answer back to :meth:`TxnRequestHandler.handle_response`:
that is the whole protocol logic, without any I/O, so tests drive it by handing in response bodies.

The answers are told apart as Java does: ``NOT_COORDINATOR`` / ``COORDINATOR_NOT_AVAILABLE`` look the
coordinator up again and retry; other retriable codes (``COORDINATOR_LOAD_IN_PROGRESS``,
``CONCURRENT_TRANSACTIONS`` -- the previous transaction is still writing its markers --) retry, the first
AddPartitionsToTxn of a transaction after only 20 ms; ``PRODUCER_FENCED`` (or ``INVALID_PRODUCER_EPOCH`` from an
older coordinator) is fatal; ``UNKNOWN_PRODUCER_ID`` / ``INVALID_PRODUCER_ID_MAPPING`` are abortable with an epoch
bump when the coordinator speaks InitProducerId v3+ (KIP-360), fatal otherwise.

Mirrors the ``TxnRequestHandler`` inner classes of
``clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java``.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Optional

from kafkalab.clients.producer.accumulator import TopicPartition
from kafkalab.clients.producer.transaction_state import (CoordinatorType, ProducerFencedError,
                                                         TransactionalRequestResult, TransactionError)
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, error_info, request_class

if TYPE_CHECKING:  # pragma: no cover
    from kafkalab.clients.producer.transaction_manager import TransactionManager

__all__ = ["Priority", "TxnRequestHandler", "FindCoordinatorHandler", "InitProducerIdHandler",
           "AddPartitionsToTxnHandler", "AddOffsetsToTxnHandler", "TxnOffsetCommitHandler", "EndTxnHandler",
           "ADD_PARTITIONS_RETRY_BACKOFF_MS"]

#: The short backoff of the first AddPartitionsToTxn of a transaction answered CONCURRENT_TRANSACTIONS: the previous
#: transaction is only finishing its markers (Java's ``ADD_PARTITIONS_RETRY_BACKOFF_MS``).
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20

E = ErrorCode
_COORDINATOR_MOVED = (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE)
_FENCED = (E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED)
_UNKNOWN_PRODUCER = (E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING)


class Priority(enum.IntEnum):
    """Which queued request goes first (Java's ``TransactionManager.Priority``)."""

    FIND_COORDINATOR = 0
    INIT_PRODUCER_ID = 1
    ADD_PARTITIONS_OR_OFFSETS = 2
    END_TXN = 3
    EPOCH_BUMP = 4


def _retriable(code: int) -> bool:
    return error_info(code).retriable


def _error(code: int, message: Optional[str] = None) -> KafkaProtocolError:
    return KafkaProtocolError(code, message)


class TxnRequestHandler:
    """One transactional request: what to send, where, and what its answer does to the transaction."""

    api_key: int
    priority = Priority.ADD_PARTITIONS_OR_OFFSETS
    coordinator_type: Optional[CoordinatorType] = CoordinatorType.TRANSACTION
    is_end_txn = False
    #: the versions this client sends, narrowing the codec's range (None: the codec's / CLIENT_RANGES')
    version_range: tuple[Optional[int], Optional[int]] = (None, None)

    def __init__(self, tm: "TransactionManager", result: TransactionalRequestResult):
        self.tm = tm
        self.result = result
        self.is_retry = False

    @property
    def coordinator_key(self) -> Optional[str]:
        return self.tm.transactional_id

    def retry_backoff_ms(self) -> float:
        return self.tm.retry_backoff_ms

    def build(self, version: int):
        raise NotImplementedError

    def handle_response(self, body) -> None:
        raise NotImplementedError

    # -- outcomes ---------------------------------------------------------------------------------------------
    def fatal_error(self, error: BaseException) -> None:
        self.result.fail(error)
        self.tm.transition_to_fatal_error(error)

    def abortable_error(self, error: BaseException) -> None:
        self.result.fail(error)
        self.tm.transition_to_abortable_error(error)

    def abortable_error_if_possible(self, error: BaseException) -> None:
        if self.tm.can_bump_epoch():
            self.tm.epoch_bump_required = True
            self.abortable_error(error)
        else:
            self.fatal_error(error)

    def fail(self, error: BaseException) -> None:
        self.result.fail(error)

    def reenqueue(self) -> None:
        self.is_retry = True
        self.tm.enqueue(self)

    def coordinator_moved(self) -> None:
        self.tm.lookup_coordinator(CoordinatorType.TRANSACTION, self.tm.transactional_id)
        self.reenqueue()

    def disconnected(self) -> None:
        """The connection broke before the answer came: find the coordinator again (if any) and retry."""
        if self.coordinator_type is not None:
            self.tm.lookup_coordinator(self.coordinator_type, self.coordinator_key)
        self.reenqueue()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.result.operation}{', retry' if self.is_retry else ''})"


class FindCoordinatorHandler(TxnRequestHandler):
    api_key = ApiKey.FIND_COORDINATOR
    priority = Priority.FIND_COORDINATOR
    coordinator_type = None
    version_range = (1, None)               # key_type needs v1

    def __init__(self, tm, key_type: CoordinatorType, key: str):
        super().__init__(tm, TransactionalRequestResult("FindCoordinator"))
        self.key_type, self.key = key_type, key

    @property
    def coordinator_key(self) -> Optional[str]:
        return None

    def build(self, version: int):
        cls = request_class(ApiKey.FIND_COORDINATOR)
        if version >= 4:
            return cls(key_type=int(self.key_type), coordinator_keys=(self.key,))
        return cls(key=self.key, key_type=int(self.key_type))

    def handle_response(self, body) -> None:
        if getattr(body, "coordinators", None):
            if len(body.coordinators) != 1:
                self.fatal_error(TransactionError("Group coordinator lookup failed: Invalid response containing "
                                                  "more than a single coordinator"))
                return
            c = body.coordinators[0]
            code, node_id, host, port, message = c.error_code, c.node_id, c.host, c.port, c.error_message
        else:
            code, node_id, host, port = body.error_code, body.node_id, body.host, body.port
            message = getattr(body, "error_message", None)
        if code == E.NONE:
            self.tm.set_coordinator(self.key_type, node_id, host, port)
            self.result.done()
        elif _retriable(code):
            self.reenqueue()
        elif code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.fatal_error(_error(code))
        elif code == E.GROUP_AUTHORIZATION_FAILED:
            self.abortable_error(_error(code, f"Not authorized to access group: {self.key}"))
        elif code == E.TRANSACTION_ABORTABLE:
            self.abortable_error(_error(code))
        else:
            self.fatal_error(TransactionError(
                f"Could not find a coordinator with type {self.key_type.name} with key {self.key} due to "
                f"unexpected error: {message or error_info(code).name}"))


class InitProducerIdHandler(TxnRequestHandler):
    api_key = ApiKey.INIT_PRODUCER_ID

    def __init__(self, tm, producer_id: int, producer_epoch: int, is_epoch_bump: bool):
        super().__init__(tm, TransactionalRequestResult("InitProducerId"))
        self.producer_id, self.producer_epoch, self.is_epoch_bump = producer_id, producer_epoch, is_epoch_bump
        self.priority = Priority.EPOCH_BUMP if is_epoch_bump else Priority.INIT_PRODUCER_ID
        if is_epoch_bump:
            self.version_range = (3, None)      # InitProducerId carries the current producer id and epoch from v3

    def build(self, version: int):
        return request_class(ApiKey.INIT_PRODUCER_ID)(
            transactional_id=self.tm.transactional_id, transaction_timeout_ms=self.tm.transaction_timeout_ms,
            producer_id=self.producer_id, producer_epoch=self.producer_epoch)

    def handle_response(self, body) -> None:
        code = body.error_code
        if code == E.NONE:
            self.tm.producer_id_received(body.producer_id, body.producer_epoch, self.is_epoch_bump)
            self.result.done()
        elif code in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif _retriable(code):
            self.reenqueue()
        elif code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED):
            self.abortable_error(_error(code))
        elif code in _FENCED:
            self.fatal_error(ProducerFencedError())
        elif code == E.TRANSACTION_ABORTABLE:
            self.abortable_error(_error(code))
        else:
            self.fatal_error(_error(code, f"Unexpected error in InitProducerIdResponse; {error_info(code).message}"))


class AddPartitionsToTxnHandler(TxnRequestHandler):
    api_key = ApiKey.ADD_PARTITIONS_TO_TXN

    def __init__(self, tm, partitions):
        super().__init__(tm, TransactionalRequestResult("AddPartitionsToTxn"))
        self.partitions = sorted(partitions)
        self._backoff_ms = tm.retry_backoff_ms

    def retry_backoff_ms(self) -> float:
        return min(self.tm.retry_backoff_ms, self._backoff_ms)

    def build(self, version: int):
        cls = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
        by_topic: dict[str, list[int]] = {}
        for tp in self.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = tuple(cls.AddPartitionsToTxnTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
        pid, epoch = self.tm.producer_id, self.tm.producer_epoch
        return cls(v3_and_below_transactional_id=self.tm.transactional_id, v3_and_below_producer_id=pid,
                   v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics)

    def handle_response(self, body) -> None:
        errors = {}
        for topic in body.results_by_topic_v3_and_below or ():
            for p in topic.results_by_partition:
                errors[TopicPartition(topic.name, p.partition_index)] = p.partition_error_code
        self._backoff_ms = self.tm.retry_backoff_ms
        unauthorized, partition_errors = set(), False
        for tp, code in errors.items():
            if code == E.NONE:
                continue
            if code in _COORDINATOR_MOVED:
                self.coordinator_moved()
                return
            if code == E.CONCURRENT_TRANSACTIONS:
                if not self.tm.partitions_in_transaction:       # the previous transaction is still completing
                    self._backoff_ms = ADD_PARTITIONS_RETRY_BACKOFF_MS
                self.reenqueue()
                return
            if _retriable(code):
                self.reenqueue()
                return
            if code in _FENCED:
                self.fatal_error(ProducerFencedError())
                return
            if code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE):
                self.fatal_error(_error(code))
                return
            if code == E.TOPIC_AUTHORIZATION_FAILED:
                unauthorized.add(tp.topic)
            elif code == E.OPERATION_NOT_ATTEMPTED:
                partition_errors = True
            elif code in _UNKNOWN_PRODUCER:
                self.abortable_error_if_possible(_error(code))
                return
            elif code == E.TRANSACTION_ABORTABLE:
                self.abortable_error(_error(code))
                return
            else:
                partition_errors = True
        added = set(errors)
        self.tm.pending_partitions_in_transaction -= added     # failed or not, these are no longer "being added"
        if unauthorized:
            self.abortable_error(_error(E.TOPIC_AUTHORIZATION_FAILED,
                                        f"Not authorized to access topics: {sorted(unauthorized)}"))
        elif partition_errors:
            shown = {f"{tp.topic}-{tp.partition}": error_info(c).name for tp, c in errors.items()}
            self.abortable_error(TransactionError(f"Could not add partitions to transaction due to errors: {shown}"))
        else:
            self.tm.partitions_in_transaction |= added
            self.tm.transaction_started = True
            self.result.done()


class AddOffsetsToTxnHandler(TxnRequestHandler):
    api_key = ApiKey.ADD_OFFSETS_TO_TXN

    def __init__(self, tm, offsets: dict, group_metadata):
        super().__init__(tm, TransactionalRequestResult("AddOffsetsToTxn"))
        self.offsets, self.group_metadata = offsets, group_metadata

    def build(self, version: int):
        return request_class(ApiKey.ADD_OFFSETS_TO_TXN)(
            transactional_id=self.tm.transactional_id, producer_id=self.tm.producer_id,
            producer_epoch=self.tm.producer_epoch, group_id=self.group_metadata.group_id)

    def handle_response(self, body) -> None:
        code = body.error_code
        if code == E.NONE:
            # the caller's result completes only when the TxnOffsetCommit is answered
            self.tm.enqueue(TxnOffsetCommitHandler(self.tm, self.result, self.offsets, self.group_metadata))
            self.tm.transaction_started = True
        elif code in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif _retriable(code):
            self.reenqueue()
        elif code in _UNKNOWN_PRODUCER:
            self.abortable_error_if_possible(_error(code))
        elif code in _FENCED:
            self.fatal_error(ProducerFencedError())
        elif code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE):
            self.fatal_error(_error(code))
        elif code == E.GROUP_AUTHORIZATION_FAILED:
            self.abortable_error(_error(code, f"Not authorized to access group: {self.group_metadata.group_id}"))
        elif code == E.TRANSACTION_ABORTABLE:
            self.abortable_error(_error(code))
        else:
            self.fatal_error(_error(code, f"Unexpected error in AddOffsetsToTxnResponse: {error_info(code).message}"))


class TxnOffsetCommitHandler(TxnRequestHandler):
    api_key = ApiKey.TXN_OFFSET_COMMIT
    coordinator_type = CoordinatorType.GROUP

    def __init__(self, tm, result: TransactionalRequestResult, offsets: dict, group_metadata):
        super().__init__(tm, result)
        self.group_metadata = group_metadata
        self.pending = dict(offsets)         # tp -> OffsetAndMetadata-like (offset, metadata, leader_epoch)

    @property
    def coordinator_key(self) -> Optional[str]:
        return self.group_metadata.group_id

    def build(self, version: int):
        cls = request_class(ApiKey.TXN_OFFSET_COMMIT)
        by_topic: dict[str, list] = {}
        for tp, om in sorted(self.pending.items()):
            leader_epoch = om.leader_epoch if om.leader_epoch is not None else -1
            by_topic.setdefault(tp.topic, []).append(cls.TxnOffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset, committed_leader_epoch=leader_epoch,
                committed_metadata=om.metadata))
        gm = self.group_metadata
        return cls(transactional_id=self.tm.transactional_id, group_id=gm.group_id, producer_id=self.tm.producer_id,
                   producer_epoch=self.tm.producer_epoch, generation_id=gm.generation_id, member_id=gm.member_id,
                   group_instance_id=gm.group_instance_id,
                   topics=tuple(cls.TxnOffsetCommitRequestTopic(name=t, partitions=tuple(ps))
                                for t, ps in by_topic.items()))

    def handle_response(self, body) -> None:
        group = self.group_metadata.group_id
        coordinator_reloaded = False
        for topic in body.topics:
            for p in topic.partitions:
                tp, code = TopicPartition(topic.name, p.partition_index), p.error_code
                if code == E.NONE:
                    self.pending.pop(tp, None)
                elif code in (*_COORDINATOR_MOVED, E.REQUEST_TIMED_OUT):
                    if not coordinator_reloaded:
                        coordinator_reloaded = True
                        self.tm.lookup_coordinator(CoordinatorType.GROUP, group)
                elif _retriable(code):
                    continue
                elif code == E.GROUP_AUTHORIZATION_FAILED:
                    self.abortable_error(_error(code, f"Not authorized to access group: {group}"))
                    break
                elif code in (E.FENCED_INSTANCE_ID, E.TRANSACTION_ABORTABLE):
                    self.abortable_error(_error(code))
                    break
                elif code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
                    self.abortable_error(_error(code, "Transaction offset Commit failed due to consumer group "
                                                      f"metadata mismatch: {error_info(code).message}"))
                    break
                elif code in _FENCED:
                    self.fatal_error(ProducerFencedError())
                    break
                elif code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.UNSUPPORTED_FOR_MESSAGE_FORMAT):
                    self.fatal_error(_error(code))
                    break
                else:
                    self.fatal_error(_error(code, "Unexpected error in TxnOffsetCommitResponse: "
                                                  f"{error_info(code).message}"))
                    break
            else:
                continue
            break
        if self.result.completed:
            self.pending.clear()
        elif not self.pending:
            self.result.done()
        else:
            self.reenqueue()                   # the offsets that failed with a retriable error go again


class EndTxnHandler(TxnRequestHandler):
    api_key = ApiKey.END_TXN
    priority = Priority.END_TXN
    is_end_txn = True

    def __init__(self, tm, committed: bool):
        super().__init__(tm, TransactionalRequestResult(f"EndTxn({str(committed).lower()})"))
        self.committed = committed

    def build(self, version: int):
        return request_class(ApiKey.END_TXN)(transactional_id=self.tm.transactional_id,
                                             producer_id=self.tm.producer_id,
                                             producer_epoch=self.tm.producer_epoch, committed=self.committed)

    def handle_response(self, body) -> None:
        code = body.error_code
        if code == E.NONE:
            self.tm.complete_transaction()
            self.result.done()
        elif code in _COORDINATOR_MOVED:
            self.coordinator_moved()
        elif _retriable(code):
            self.reenqueue()
        elif code in _FENCED:
            self.fatal_error(ProducerFencedError())
        elif code in (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE):
            self.fatal_error(_error(code))
        elif code in _UNKNOWN_PRODUCER:
            self.abortable_error_if_possible(_error(code))
        elif code == E.TRANSACTION_ABORTABLE:
            self.abortable_error(_error(code))
        else:
            self.fatal_error(_error(code, f"Unhandled error in EndTxnResponse: {error_info(code).message}"))
