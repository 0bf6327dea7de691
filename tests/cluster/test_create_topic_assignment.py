"""Cluster.create_topic(assignment=...): replicas placed explicitly, preferred leader first."""
from kafkalab import Cluster


def test_explicit_assignment_places_replicas_and_leaders():
    with Cluster(brokers=2) as cluster:
        cluster.create_topic("placed", assignment={0: [1, 0], 1: [0, 1], 2: [1, 0]})
        states = {p: cluster.partition_state("placed", p) for p in range(3)}
        assert {p: s["leader"] for p, s in states.items()} == {0: 1, 1: 0, 2: 1}
        assert {p: list(s["replicas"]) for p, s in states.items()} == {0: [1, 0], 1: [0, 1], 2: [1, 0]}
