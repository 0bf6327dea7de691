"""kcat ``-L -J`` against a three-broker cluster: three brokers, the controller, and leaders/replicas/ISR that
match the harness; after the leader of a partition is killed, the ISR shrinks and leadership moves, and kcat
shows exactly that."""
from __future__ import annotations

import json
import subprocess

import pytest

from kafkalab.cluster import Cluster

from scenario_support import require_kcat

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}


def _kcat_metadata(kcat: str, cluster: Cluster) -> dict:
    out = subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-L", "-J", "-m", "5", "-t", "meta"],
                         capture_output=True, timeout=20, check=True).stdout
    return json.loads(out)


def _assert_matches_harness(md: dict, cluster: Cluster, brokers: list[int]) -> None:
    assert md["controllerid"] == cluster.controller_id
    assert sorted(b["id"] for b in md["brokers"]) == brokers
    [t] = [t for t in md["topics"] if t["topic"] == "meta"]
    assert len(t["partitions"]) == 3
    for p in t["partitions"]:
        state = cluster.partition_state("meta", p["partition"])
        assert p["leader"] == state["leader"]
        assert [r["id"] for r in p["replicas"]] == state["replicas"]
        assert sorted(r["id"] for r in p["isrs"]) == sorted(state["isr"])


def test_kcat_sees_the_isr_shrink_and_leadership_move_after_a_kill():
    kcat = require_kcat()
    with Cluster(brokers=3, overrides=OVERRIDES) as cluster:
        cluster.create_topic("meta", 3, 3)
        cluster.wait_until(lambda: all(len(b.metadata_cache.partition_state("meta", p).isr) == 3
                                       for b in cluster.brokers.values() for p in range(3)), 10)
        before = _kcat_metadata(kcat, cluster)
        _assert_matches_harness(before, cluster, [0, 1, 2])
        led = {p["partition"]: p["leader"] for p in before["topics"][0]["partitions"]}
        victim = led[0]
        cluster.kill(victim)
        survivors = sorted({0, 1, 2} - {victim})
        cluster.wait_until(lambda: all(
            b.metadata_cache.partition_state("meta", p).leader != victim and
            victim not in b.metadata_cache.partition_state("meta", p).isr
            for i, b in cluster.brokers.items() if i != victim for p in range(3)), 15, "no failover")
        after = _kcat_metadata(kcat, cluster)
        _assert_matches_harness(after, cluster, survivors)
        for p in after["topics"][0]["partitions"]:
            assert len(p["isrs"]) == 2 and victim not in [r["id"] for r in p["isrs"]]   # the ISR shrank
            assert len(p["replicas"]) == 3                                               # the assignment did not
            assert p["leader"] in survivors
            if led[p["partition"]] == victim:
                assert p["leader"] != victim                                             # leadership moved
            else:
                assert p["leader"] == led[p["partition"]]                                # no needless moves
