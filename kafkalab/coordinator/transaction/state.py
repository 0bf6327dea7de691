"""The transaction state machine: eight states, each with the states it may be entered from.

Theory of operation
-------------------
The transaction coordinator keeps, per ``transactional.id``, one :class:`TransactionState`. The whole machine is
one table, :data:`VALID_PREVIOUS_STATES` (Kafka's ``validPreviousStates``): for every state, the states it may
be entered *from*; every transition is checked against it. Each state also has the **id** that is persisted as
``TransactionStatus`` in ``__transaction_state`` and the **name** DescribeTransactions and ListTransactions
report.

* **Empty** (0) -- a producer called InitProducerId: the id has a producer id and epoch, no transaction.
* **Ongoing** (1) -- partitions (AddPartitionsToTxn) or a group's offsets (AddOffsetsToTxn) were added.
* **PrepareCommit** (2) / **PrepareAbort** (3) -- EndTxn was received and the decision is durable; the
  coordinator now writes COMMIT / ABORT markers to every partition of the transaction. The client was already
  answered; the next request for this id gets CONCURRENT_TRANSACTIONS until the markers are all written.
* **CompleteCommit** (4) / **CompleteAbort** (5) -- every leader wrote its marker; the id may begin anew.
* **Dead** (6) -- the id expired (``transactional.id.expiration.ms``): a tombstone is written, never the state.
* **PrepareEpochFence** (7) -- only ever a *pending* state: a new producer (InitProducerId) or the timeout
  scanner is fencing the producer of an Ongoing transaction, bumping its epoch before aborting it.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala`` (``TransactionState``
and its objects; 3.9, without the 4.x TV2 edges).
"""
from __future__ import annotations

import enum

__all__ = ["TransactionState", "VALID_PREVIOUS_STATES", "TRANSITIONS", "EXPIRABLE_STATES", "can_transition",
           "check_transition", "IllegalTransactionStateTransition"]


class TransactionState(str, enum.Enum):
    """Values are Kafka's state names (``TransactionState.name``); :attr:`id` the persisted status byte."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    def __str__(self) -> str:
        return self.value

    @property
    def id(self) -> int:
        return _IDS[self]

    @classmethod
    def from_id(cls, state_id: int) -> "TransactionState":
        """The state persisted as ``TransactionStatus``; ValueError for an unknown byte."""
        for state, i in _IDS.items():
            if i == state_id:
                return state
        raise ValueError(f"Unknown transaction state id {state_id} from the transaction status message")

    @classmethod
    def from_name(cls, name: str):
        """The state called ``name`` (ListTransactions' ``StateFilters``), or None."""
        try:
            return cls(name)
        except ValueError:
            return None


S = TransactionState
_IDS = {S.EMPTY: 0, S.ONGOING: 1, S.PREPARE_COMMIT: 2, S.PREPARE_ABORT: 3, S.COMPLETE_COMMIT: 4, S.COMPLETE_ABORT: 5,
        S.DEAD: 6, S.PREPARE_EPOCH_FENCE: 7}

#: state -> the states it may be entered from (Kafka 3.9's ``validPreviousStates``).
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

#: States whose transactional id may expire after ``transactional.id.expiration.ms`` of inactivity.
EXPIRABLE_STATES = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})

#: Why each edge is taken, for diagrams and the lab: (from, to, what happened).
TRANSITIONS: tuple = (
    (S.EMPTY, S.EMPTY, "InitProducerId again: epoch + 1 (or a new producer id when the epoch is exhausted)"),
    (S.COMPLETE_COMMIT, S.EMPTY, "InitProducerId after a committed transaction"),
    (S.COMPLETE_ABORT, S.EMPTY, "InitProducerId after an aborted transaction"),
    (S.EMPTY, S.ONGOING, "AddPartitionsToTxn / AddOffsetsToTxn: the transaction starts"),
    (S.COMPLETE_COMMIT, S.ONGOING, "AddPartitionsToTxn: the next transaction starts"),
    (S.COMPLETE_ABORT, S.ONGOING, "AddPartitionsToTxn: the next transaction starts"),
    (S.ONGOING, S.ONGOING, "AddPartitionsToTxn: more partitions"),
    (S.ONGOING, S.PREPARE_COMMIT, "EndTxn(commit)"),
    (S.ONGOING, S.PREPARE_ABORT, "EndTxn(abort)"),
    (S.ONGOING, S.PREPARE_EPOCH_FENCE, "InitProducerId from a new producer, or the transaction timed out"),
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT, "the fenced transaction is aborted with the bumped epoch"),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT, "every partition leader wrote its COMMIT marker"),
    (S.PREPARE_ABORT, S.COMPLETE_ABORT, "every partition leader wrote its ABORT marker"),
    (S.EMPTY, S.DEAD, "transactional.id.expiration.ms without activity"),
    (S.COMPLETE_COMMIT, S.DEAD, "transactional.id.expiration.ms without activity"),
    (S.COMPLETE_ABORT, S.DEAD, "transactional.id.expiration.ms without activity"),
)


class IllegalTransactionStateTransition(RuntimeError):
    """A transition the table forbids (Kafka's IllegalStateException): a bug, never a client's error."""


def can_transition(current: TransactionState, target: TransactionState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def check_transition(transactional_id: str, current: TransactionState, target: TransactionState) -> None:
    if not can_transition(current, target):
        raise IllegalTransactionStateTransition(
            f"Preparing transaction state transition to {target} failed since the target state {target} is not a "
            f"valid previous state of the current state {current} (transactional id {transactional_id})")
