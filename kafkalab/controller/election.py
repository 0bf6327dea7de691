"""Leader election and replica placement: the controller's decisions as pure functions.

Theory of operation
-------------------
Every rule here takes facts (the assigned replicas in order, the ISR, which brokers are alive) and returns a
decision, with no I/O, so a test or a notebook can try them one by one.

**Offline partition** (its leader died): the new leader is the *first replica in assignment order that is
alive and in the ISR*. Only in-sync replicas have every committed record, so electing one loses nothing. If no
ISR member is alive, the partition stays offline -- unless ``unclean.leader.election.enable`` is true, in
which case the first alive replica leads, and records it never received are lost (the trade-off Jepsen showed
in 2013; off by default since Kafka 0.11, KIP-106).

**Preferred leader**: the first assigned replica, if it is alive and in the ISR (rebalances leadership after
restarts). **Controlled shutdown**: the first alive ISR member that is not shutting down.

**Replica placement** for a new topic (rack-unaware): partition ``p``'s first replica goes to broker
``(start + p) % n``; the others follow with a shift that grows every ``n`` partitions, so that leaders and
followers both spread evenly over the brokers.

Mirrors: ``core/src/main/scala/kafka/controller/PartitionStateMachine.scala``
(``PartitionLeaderElectionAlgorithms``) and ``server-common/.../admin/AdminUtils.java``
(``assignReplicasToBrokersRackUnaware``).
"""
from __future__ import annotations

import random
from typing import Iterable, NamedTuple, Optional, Sequence

__all__ = ["offline_partition_leader", "preferred_replica_leader", "controlled_shutdown_leader",
           "assign_replicas_to_brokers", "Election", "AssignmentError"]


class Election(NamedTuple):
    leader: int                # -1: no leader could be elected
    isr: tuple
    unclean: bool = False


def offline_partition_leader(assignment: Sequence[int], isr: Iterable[int], live: Iterable[int],
                             unclean_allowed: bool) -> Election:
    """The leader of a partition whose leader is gone (and the new ISR: the live members of the old one)."""
    live = set(live)
    isr = [b for b in isr if b in live]
    for replica in assignment:
        if replica in live and replica in isr:
            return Election(replica, tuple(isr))
    if unclean_allowed:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), unclean=True)
    return Election(-1, tuple(isr))


def preferred_replica_leader(assignment: Sequence[int], isr: Iterable[int], live: Iterable[int]) -> Election:
    isr = tuple(isr)
    if assignment and assignment[0] in set(live) and assignment[0] in isr:
        return Election(assignment[0], isr)
    return Election(-1, isr)


def controlled_shutdown_leader(assignment: Sequence[int], isr: Iterable[int], live: Iterable[int],
                               shutting_down: Iterable[int]) -> Election:
    live = set(live) - set(shutting_down)
    isr = tuple(b for b in isr if b not in set(shutting_down))
    for replica in assignment:
        if replica in live and replica in isr:
            return Election(replica, isr)
    return Election(-1, isr)


class AssignmentError(ValueError):
    """Replication factor larger than the live brokers (Kafka: InvalidReplicationFactorException)."""


def assign_replicas_to_brokers(num_partitions: int, replication_factor: int, brokers: Sequence[int], *,
                               start_index: Optional[int] = None, start_partition: int = 0,
                               rng: Optional[random.Random] = None) -> dict[int, list[int]]:
    """Rack-unaware placement of ``num_partitions`` partitions with ``replication_factor`` replicas each."""
    if num_partitions <= 0:
        raise AssignmentError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise AssignmentError("Replication factor must be larger than 0.")
    brokers = sorted(brokers)
    n = len(brokers)
    if replication_factor > n:
        raise AssignmentError(f"Replication factor: {replication_factor} larger than available brokers: {n}.")
    rng = rng or random.Random()
    start = rng.randrange(n) if start_index is None else start_index
    shift = rng.randrange(n) if start_index is None else start_index
    result = {}
    current = max(0, start_partition)   # Kafka's callers pass -1 for "from partition 0"
    for _ in range(num_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, shift, j, n)])
        result[current] = replicas
        current += 1
    return result


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    shifted = 1 + (shift + j) % (n - 1)
    return (first + shifted) % n
