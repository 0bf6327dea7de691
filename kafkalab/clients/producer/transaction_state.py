"""The transactional producer's states, the table of allowed transitions, and the errors a transaction raises.

Theory of operation
-------------------
A transactional producer (``transactional.id`` set) walks through eight states, and every public call
(``init_transactions()``, ``begin_transaction()``, ``send()``, ``send_offsets_to_transaction()``,
``commit_transaction()``, ``abort_transaction()``) and every coordinator answer is a step in this table::

    UNINITIALIZED --init_transactions()--> INITIALIZING --InitProducerId ok--> READY
    READY --begin_transaction()--> IN_TRANSACTION --commit_transaction()--> COMMITTING_TRANSACTION --EndTxn ok--> READY
                                   IN_TRANSACTION --abort_transaction()---> ABORTING_TRANSACTION ---EndTxn ok--> READY
    IN_TRANSACTION / COMMITTING_TRANSACTION / INITIALIZING --abortable error--> ABORTABLE_ERROR --abort--> ABORTING
    ABORTING_TRANSACTION --EndTxn ok, epoch bump needed (KIP-360)--> INITIALIZING --InitProducerId(pid, epoch)--> READY
    any state --fatal error (fenced, unauthorized, bad transaction state)--> FATAL_ERROR (the producer is unusable)

:data:`VALID_PREVIOUS_STATES` is the table itself (target -> the states it may be entered from), read by
:meth:`State.can_transition` and by the lab that draws it. Two kinds of failure are told apart, as Java does:

* **abortable** (ABORTABLE_ERROR): the transaction cannot commit, but the producer can go on after
  ``abort_transaction()`` -- a record that failed, a topic or group not authorized, a consumer group whose
  generation moved on (``CommitFailedException``);
* **fatal** (FATAL_ERROR): another producer with the same ``transactional.id`` took over
  (:class:`ProducerFencedError`), the id is not authorized, the coordinator says the transaction state is
  invalid. Only ``close()`` is left.

Every blocking call returns a :class:`TransactionalRequestResult` from the I/O side; a call that timed out keeps
its result pending, and only the *same* call may be made again to wait for it (Java's "must be retried").

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/{TransactionManager.State,
TransactionalRequestResult}.java`` and the exceptions ``ProducerFencedException``, ``TransactionAbortedException``,
``KafkaException`` and ``IllegalStateException`` as ``TransactionManager`` raises them.
"""
from __future__ import annotations

import enum
from typing import Callable, Optional

from kafkalab.protocol import ErrorCode, KafkaProtocolError

__all__ = ["State", "VALID_PREVIOUS_STATES", "CoordinatorType", "TransactionalRequestResult", "TransactionError",
           "TransactionStateError", "TransactionAbortedError", "ProducerFencedError"]


class State(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"

    def can_transition(self, target: "State") -> bool:
        """May a producer in this state move to ``target``? (FATAL_ERROR is reachable from anywhere.)"""
        allowed = VALID_PREVIOUS_STATES[target]
        return allowed is None or self in allowed


_S = State
#: target state -> the states it may be entered from (None: from any state). Java's ``State.isTransitionValid``.
VALID_PREVIOUS_STATES: dict[State, Optional[frozenset]] = {
    _S.UNINITIALIZED: frozenset({_S.READY, _S.ABORTABLE_ERROR}),
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED, _S.ABORTING_TRANSACTION}),
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR,
                                   _S.INITIALIZING}),
    _S.FATAL_ERROR: None,
}


class CoordinatorType(enum.IntEnum):
    """FindCoordinator's ``key_type``: 0 a consumer group, 1 a transactional id."""

    GROUP = 0
    TRANSACTION = 1


# -- errors -----------------------------------------------------------------------------------------------------------
class TransactionError(RuntimeError):
    """A transactional call failed for a reason that is no single Kafka error code (Java's ``KafkaException``);
    ``__cause__`` carries the error that put the producer into its error state."""


class TransactionStateError(TransactionError):
    """The call is not allowed in the producer's current state (Java's ``IllegalStateException``): a send
    before ``init_transactions()``, ``commit_transaction()`` without ``begin_transaction()``, ..."""


class TransactionAbortedError(TransactionError):
    """The record's batch was dropped because its transaction is being aborted (``TransactionAbortedException``)."""

    def __init__(self, message: str = "Failing batch since transaction was aborted"):
        super().__init__(message)


class ProducerFencedError(KafkaProtocolError):
    """Another producer with the same ``transactional.id`` started (InitProducerId with a higher epoch): this one
    is a zombie and can only be closed. Java's ``ProducerFencedException`` (code 90; 47 from older coordinators
    is read the same way)."""

    error_code = ErrorCode.PRODUCER_FENCED

    def __init__(self, message: Optional[str] = None):
        super().__init__(self.error_code, message)


# -- results ----------------------------------------------------------------------------------------------------------
class TransactionalRequestResult:
    """The outcome of one blocking transactional call, completed on the I/O side (``done()`` / ``fail(error)``).

    ``acked`` is set once the caller has seen the outcome, which frees the producer for the next call."""

    def __init__(self, operation: str):
        self.operation = operation
        self.completed = False
        self.error: Optional[BaseException] = None
        self.acked = False
        self._callbacks: list[Callable[["TransactionalRequestResult"], None]] = []

    def done(self) -> None:
        self._complete(None)

    def fail(self, error: BaseException) -> None:
        self._complete(error)

    def _complete(self, error: Optional[BaseException]) -> None:
        if self.completed:
            return
        self.completed, self.error = True, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    @property
    def successful(self) -> bool:
        return self.completed and self.error is None

    def add_done_callback(self, callback: Callable[["TransactionalRequestResult"], None]) -> None:
        if self.completed:
            callback(self)
        else:
            self._callbacks.append(callback)

    def __repr__(self) -> str:
        status = "pending" if not self.completed else ("ok" if self.error is None else f"failed: {self.error!r}")
        return f"TransactionalRequestResult({self.operation}, {status})"
