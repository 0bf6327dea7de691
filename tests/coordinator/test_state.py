"""The group state machine table (Kafka's GroupState.validPreviousStates)."""
import pytest

from kafkalab.coordinator.group.state import (TRANSITIONS, VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition,
                                              can_transition, check_transition)

S = GroupState


def test_table_is_kafkas():
    assert VALID_PREVIOUS_STATES == {
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.DEAD: set(S),
    }


def test_described_transitions_are_exactly_the_table():
    edges = {(a, b) for a, b, _ in TRANSITIONS}
    table = {(prev, to) for to, prevs in VALID_PREVIOUS_STATES.items() for prev in prevs}
    assert edges == table


def test_names_are_what_describe_groups_reports():
    assert [str(s) for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def test_illegal_transition_is_refused():
    assert not can_transition(S.EMPTY, S.STABLE)
    with pytest.raises(IllegalStateTransition, match="Instead it is in Empty state"):
        check_transition("g", S.EMPTY, S.STABLE)
