"""The controller's pure rules: which replica leads, and where a new topic's replicas go.

Leader election follows Kafka's ``PartitionLeaderElectionAlgorithms`` / ``Election.scala``; placement follows
``AdminUtils.assignReplicasToBrokersRackUnaware`` (server-common), checked against a re-statement of it below
and against the expected table of Kafka's own ``AdminRackAwareTest.testReplicaAssignment``."""
from __future__ import annotations

import collections
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.controller.election import (AssignmentError, Election, assign_replicas_to_brokers,
                                          controlled_shutdown_leader, offline_partition_leader,
                                          preferred_replica_leader)


# -- offline partitions -------------------------------------------------------------------------------------------
def test_offline_leader_is_the_first_live_isr_member_in_assignment_order():
    e = offline_partition_leader([1, 2, 3], isr=[3, 2, 1], live=[2, 3], unclean_allowed=False)
    assert (e.leader, e.unclean) == (2, False)
    assert set(e.isr) == {2, 3}                     # the dead broker leaves the ISR


def test_offline_election_keeps_the_isr_order():
    e = offline_partition_leader([1, 2, 3], isr=[3, 2, 1], live=[2, 3], unclean_allowed=False)
    assert e.isr == (3, 2)


def test_assignment_order_not_isr_order_decides():
    assert offline_partition_leader([3, 1, 2], isr=[1, 2, 3], live=[1, 2, 3], unclean_allowed=False).leader == 3


def test_a_live_replica_outside_the_isr_is_not_elected_cleanly():
    e = offline_partition_leader([1, 2, 3], isr=[1], live=[2, 3], unclean_allowed=False)
    assert e == Election(-1, ())


def test_unclean_election_picks_the_first_live_replica_and_makes_it_the_whole_isr():
    e = offline_partition_leader([1, 3, 2], isr=[1], live=[2, 3], unclean_allowed=True)
    assert e == Election(3, (3,), unclean=True)


def test_unclean_is_only_a_fallback():
    e = offline_partition_leader([1, 2, 3], isr=[3], live=[2, 3], unclean_allowed=True)
    assert (e.leader, e.unclean) == (3, False)


def test_no_live_replica_no_leader_even_uncleanly():
    assert offline_partition_leader([1, 2], isr=[1, 2], live=[3], unclean_allowed=True).leader == -1


@given(assignment=st.lists(st.integers(0, 7), min_size=1, max_size=5, unique=True),
       isr=st.sets(st.integers(0, 7)), live=st.sets(st.integers(0, 7)), unclean=st.booleans())
def test_offline_election_properties(assignment, isr, live, unclean):
    e = offline_partition_leader(assignment, sorted(isr), live, unclean)
    clean = [r for r in assignment if r in live and r in isr]
    if clean:
        assert e.leader == clean[0] and not e.unclean and e.leader in e.isr
        assert set(e.isr) <= live
    elif unclean and any(r in live for r in assignment):
        assert e.unclean and e.leader == next(r for r in assignment if r in live) and e.isr == (e.leader,)
    else:
        assert e.leader == -1 and not e.unclean


# -- preferred replica ----------------------------------------------------------------------------------------------
def test_preferred_leader_is_the_first_assigned_replica_if_live_and_in_sync():
    assert preferred_replica_leader([2, 0, 1], isr=[0, 1, 2], live=[0, 1, 2]) == Election(2, (0, 1, 2))


@pytest.mark.parametrize("isr, live", [([0, 1], [0, 1, 2]), ([0, 1, 2], [0, 1])])
def test_no_preferred_election_when_the_preferred_replica_cannot_lead(isr, live):
    """Kafka does not fall back to the second replica: the election fails (PREFERRED_LEADER_NOT_AVAILABLE)."""
    assert preferred_replica_leader([2, 0, 1], isr=isr, live=live).leader == -1


# -- controlled shutdown --------------------------------------------------------------------------------------------
def test_controlled_shutdown_moves_leadership_off_the_stopping_broker():
    e = controlled_shutdown_leader([1, 2, 3], isr=[1, 2, 3], live=[1, 2, 3], shutting_down=[1])
    assert e == Election(2, (2, 3))


def test_controlled_shutdown_keeps_the_isr_order_minus_the_stopping_brokers():
    e = controlled_shutdown_leader([1, 2, 3], isr=[3, 1, 2], live=[1, 2, 3], shutting_down=[1])
    assert e == Election(2, (3, 2))


def test_controlled_shutdown_needs_another_live_isr_member():
    assert controlled_shutdown_leader([1, 2], isr=[1], live=[1, 2], shutting_down=[1]).leader == -1
    assert controlled_shutdown_leader([1, 2], isr=[1, 2], live=[1], shutting_down=[1]).leader == -1


# -- replica placement ----------------------------------------------------------------------------------------------
def test_kafkas_own_expected_assignment():
    """AdminRackAwareTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3, start index 0."""
    assert assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], start_index=0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_broker_ids_are_used_in_sorted_order():
    assert assign_replicas_to_brokers(3, 2, [30, 10, 20], start_index=0) == {0: [10, 20], 1: [20, 30], 2: [30, 10]}


def test_start_index_and_start_partition():
    """Adding partitions continues the leaders' round-robin: CreatePartitions passes the first new partition's
    number. (The follower shift restarts from the start index in each call, in Kafka too.)"""
    whole = assign_replicas_to_brokers(8, 2, [0, 1, 2], start_index=1)
    tail = assign_replicas_to_brokers(3, 2, [0, 1, 2], start_index=1, start_partition=5)
    assert sorted(tail) == [5, 6, 7]
    assert [tail[p][0] for p in tail] == [whole[p][0] for p in (5, 6, 7)] == [0, 1, 2]
    assert tail == {5: [0, 2], 6: [1, 2], 7: [2, 0]}
    assert assign_replicas_to_brokers(2, 1, [0, 1, 2], start_index=0, start_partition=-1) == {0: [0], 1: [1]}


def test_random_start_comes_from_the_given_rng():
    a = assign_replicas_to_brokers(6, 2, [0, 1, 2], rng=random.Random(7))
    b = assign_replicas_to_brokers(6, 2, [0, 1, 2], rng=random.Random(7))
    assert a == b


@pytest.mark.parametrize("partitions, rf, brokers, message", [
    (0, 1, [0], "Number of partitions must be larger than 0."),
    (1, 0, [0], "Replication factor must be larger than 0."),
    (1, 4, [0, 1, 2], "Replication factor: 4 larger than available brokers: 3."),
])
def test_invalid_assignments(partitions, rf, brokers, message):
    with pytest.raises(AssignmentError, match=message.replace(".", r"\.")):
        assign_replicas_to_brokers(partitions, rf, brokers, start_index=0)
    assert issubclass(AssignmentError, ValueError)


def kafka_rack_unaware(n_partitions, rf, brokers, start_index, start_partition):
    """AdminUtils.assignReplicasToBrokersRackUnaware with a fixed start index, restated."""
    n = len(brokers)
    out, current, shift = {}, max(0, start_partition), start_index
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        out[current] = [brokers[first]] + [brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)]
        current += 1
    return out


placement = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1000), min_size=n, max_size=n, unique=True),   # broker ids
    st.integers(1, 40),                                                     # partitions
    st.integers(1, n),                                                      # replication factor
    st.integers(0, n - 1),                                                  # start index
    st.integers(0, 30)))                                                    # start partition


@settings(max_examples=300, deadline=None)
@given(placement)
def test_assignment_matches_kafkas_algorithm(args):
    brokers, partitions, rf, start, start_partition = args
    got = assign_replicas_to_brokers(partitions, rf, brokers, start_index=start, start_partition=start_partition)
    assert got == kafka_rack_unaware(partitions, rf, sorted(brokers), start, start_partition)


@settings(max_examples=300, deadline=None)
@given(placement, st.integers(0, 2**32))
def test_every_partition_gets_rf_distinct_replicas_and_load_is_balanced(args, seed):
    brokers, _, rf, _, _ = args
    n = len(brokers)
    rounds = 1 + seed % 4
    got = assign_replicas_to_brokers(rounds * n, rf, brokers, rng=random.Random(seed))
    assert sorted(got) == list(range(rounds * n))
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas)) and set(replicas) <= set(brokers)
    leaders = collections.Counter(r[0] for r in got.values())
    assert set(leaders.values()) == {rounds}, "every broker leads the same number of partitions"
    replicas = collections.Counter(b for r in got.values() for b in r)
    assert set(replicas.values()) == {rounds * rf}, "every broker holds the same number of replicas"


@settings(max_examples=200, deadline=None)
@given(placement)
def test_leaders_never_differ_by_more_than_one(args):
    brokers, partitions, rf, start, start_partition = args
    got = assign_replicas_to_brokers(partitions, rf, brokers, start_index=start, start_partition=start_partition)
    leaders = collections.Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
