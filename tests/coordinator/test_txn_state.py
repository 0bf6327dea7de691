"""The transaction state table and TransactionMetadata's two-step transitions (Kafka's TransactionMetadataTest)."""
import pytest

from kafkalab.coordinator.transaction.state import (TRANSITIONS, VALID_PREVIOUS_STATES,
                                                    IllegalTransactionStateTransition, TransactionState as S,
                                                    can_transition)
from kafkalab.coordinator.transaction.transaction_metadata import (IllegalTransactionState, TransactionMetadata,
                                                                   is_epoch_exhausted)
from kafkalab.protocol import ErrorCode as E


def test_ids_and_names_are_kafkas():
    assert [(s.value, s.id) for s in S] == [("Empty", 0), ("Ongoing", 1), ("PrepareCommit", 2), ("PrepareAbort", 3),
                                            ("CompleteCommit", 4), ("CompleteAbort", 5), ("Dead", 6),
                                            ("PrepareEpochFence", 7)]
    assert S.from_id(3) is S.PREPARE_ABORT
    with pytest.raises(ValueError):
        S.from_id(8)
    assert S.from_name("Ongoing") is S.ONGOING and S.from_name("Nope") is None


def test_table_and_edges_agree():
    assert {(a, b) for a, b, _ in TRANSITIONS} == {(a, b) for b, prev in VALID_PREVIOUS_STATES.items() for a in prev}
    assert can_transition(S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT)
    assert not can_transition(S.EMPTY, S.PREPARE_COMMIT)


def md(**kw):
    base = dict(transactional_id="t", producer_id=10, producer_epoch=0, txn_timeout_ms=30000, state=S.EMPTY,
                txn_last_update_timestamp=0)
    base.update(kw)
    return TransactionMetadata(**base)


def test_fresh_id_gets_epoch_zero():
    m = md(producer_epoch=-1)
    transit, err = m.prepare_increment_producer_epoch(30000, None, 5)
    assert err is None and m.pending_state == S.EMPTY
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch, m.pending_state) == (0, -1, None)


def test_kip360_bump_and_retry_of_a_successful_bump():
    m = md(producer_epoch=4)
    transit, _ = m.prepare_increment_producer_epoch(30000, 4, 1)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch) == (5, 4)
    transit, _ = m.prepare_increment_producer_epoch(30000, 4, 2)       # retry: the same epoch comes back
    assert transit.producer_epoch == 5
    m.complete_transition_to(transit)
    m.pending_state = None
    _, err = m.prepare_increment_producer_epoch(30000, 2, 3)
    assert err == E.PRODUCER_FENCED


def test_two_pending_transitions_are_a_bug():
    m = md()
    m.prepare_add_partitions({("a", 0)}, 5)
    with pytest.raises(IllegalTransactionState):
        m.prepare_add_partitions({("a", 1)}, 6)


def test_illegal_edge_is_refused():
    m = md()
    with pytest.raises(IllegalTransactionStateTransition):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, 5)


def test_add_partitions_sets_start_time_once():
    m = md()
    m.complete_transition_to(m.prepare_add_partitions({("a", 0)}, 100))
    m.complete_transition_to(m.prepare_add_partitions({("a", 1)}, 200))
    assert (m.state, m.txn_start_timestamp, m.txn_last_update_timestamp) == (S.ONGOING, 100, 200)
    assert m.topic_partitions == {("a", 0), ("a", 1)}


def test_complete_clears_partitions_keeps_start():
    m = md()
    m.complete_transition_to(m.prepare_add_partitions({("a", 0)}, 100))
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 150))
    m.complete_transition_to(m.prepare_complete(160))
    assert (m.state, m.topic_partitions, m.txn_start_timestamp) == (S.COMPLETE_COMMIT, set(), 100)


def test_fence_bumps_once_even_after_a_failed_fence():
    m = md(producer_epoch=3)
    m.complete_transition_to(m.prepare_add_partitions({("a", 0)}, 1))
    assert m.prepare_fence_producer_epoch().producer_epoch == 4
    m.pending_state = None
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 3


def test_fence_at_short_max_is_refused_and_exhaustion_starts_at_32766():
    assert not is_epoch_exhausted(32765) and is_epoch_exhausted(32766)
    m = md(producer_epoch=32767, state=S.ONGOING)
    with pytest.raises(IllegalTransactionState):
        m.prepare_fence_producer_epoch()
    with pytest.raises(IllegalTransactionState):
        md(producer_epoch=32766).prepare_increment_producer_epoch(30000, None, 1)


def test_rotation_gives_a_new_id_with_epoch_zero():
    m = md(producer_epoch=32766, state=S.COMPLETE_ABORT, txn_start_timestamp=5)
    transit = m.prepare_producer_id_rotation(11, 30000, 9, record_last_epoch=True)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_id, m.last_producer_epoch) == (11, 0, 10, 32766)


def test_complete_refuses_an_unexpected_transit():
    m = md()
    m.prepare_add_partitions({("a", 0)}, 1)
    bad = md(producer_epoch=5).prepare_add_partitions({("a", 0)}, 1)
    with pytest.raises(IllegalTransactionState):
        m.complete_transition_to(bad)


def test_time_going_backwards_is_tolerated():
    m = md(txn_last_update_timestamp=1000)
    transit, _ = m.prepare_increment_producer_epoch(30000, None, 900)
    m.complete_transition_to(transit)
    assert m.txn_last_update_timestamp == 900
