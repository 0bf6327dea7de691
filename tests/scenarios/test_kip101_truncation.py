"""KIP-101 on a real two-broker cluster: a follower truncates by leader epoch, never to its high watermark.

1. *Divergent logs.* The leader is cut off from its follower (the ISR stays {leader, follower}: the lag limit
   is long) and takes acks=1 writes at offsets 10..14 (epoch 0) that never commit. It dies; the follower,
   still in the ISR, is elected cleanly (epoch 1) and takes other writes at offsets 10..12. The old leader
   returns as a follower with its log at 15 and no high-watermark checkpoint at all (it was killed, so its HW
   comes back as 0). OffsetForLeaderEpoch(0) answers 10 -- where epoch 0 ends on the new leader -- and it
   truncates to 10 (neither to its HW 0 nor keeping the divergent tail), then copies 10..12: both ``.log``
   files end up byte for byte the same.
2. *The classic data loss.* A follower holding ten committed records is killed before it checkpointed its HW
   and restarted: truncating to its HW would throw all ten away, and if the leader died right then, the
   follower would be elected with an empty log. With epochs it keeps them; the leader dies, the follower
   leads, and the history checker finds every acknowledged record.
"""
from __future__ import annotations

import logging

import pytest

from kafkalab.cluster import Cluster, History

confluent_kafka = pytest.importorskip("confluent_kafka")

from scenario_support import log_batches, produce, read_everything, segment_bytes  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 30000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}
FETCHER_LOG = "kafkalab.server.ReplicaFetcherThread"


def _roles(cluster, topic):
    state = cluster.partition_state(topic, 0)
    return state["leader"], next(b for b in state["replicas"] if b != state["leader"])


def _offset_epochs(cluster, broker_id, topic) -> list[tuple[int, int]]:
    """``(offset, partition_leader_epoch)`` of every record in a replica's log files (batching varies)."""
    return [(o, epoch) for base, last, epoch in log_batches(cluster, broker_id, topic) for o in range(base, last + 1)]


def _hw_checkpoint(cluster, broker_id, topic) -> dict:
    """``{(topic, partition): hw}`` of ``replication-offset-checkpoint`` (empty when it has no entry yet)."""
    path = cluster.base_dir / f"broker-{broker_id}" / "replication-offset-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().split("\n")[2:]
    return {(t, int(p)): int(hw) for t, p, hw in (line.split() for line in lines if line.strip())}


def test_follower_truncates_to_the_divergence_point_not_its_high_watermark(caplog):
    caplog.set_level(logging.INFO, logger=FETCHER_LOG)
    with Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        cluster.create_topic("kip101", 1, 2, {"min.insync.replicas": 1})
        history = History()
        produce(cluster, "kip101", history, [b"committed-%d" % i for i in range(10)], "all")
        old_leader, follower = _roles(cluster, "kip101")
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["logs"][follower] ==
                           {"log_end_offset": 10, "high_watermark": 10}, 10, "the follower did not catch up")
        # Appended on the leader only, never committed: the follower cannot fetch, the ISR does not shrink.
        cluster.partition(old_leader, follower)
        produce(cluster, "kip101", history, [b"uncommitted-%d" % i for i in range(5)], "1")
        assert cluster.partition_state("kip101", 0)["logs"][old_leader] == {"log_end_offset": 15,
                                                                           "high_watermark": 10}
        cluster.kill(old_leader)
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["leader"] == follower, 15,
                           "the follower was not elected")
        assert cluster.partition_state("kip101", 0)["leader_epoch"] == 1
        cluster.heal()
        produce(cluster, "kip101", history, [b"new-%d" % i for i in range(3)], "1")
        # On the old leader's disk: a divergent tail 10..14 under epoch 0, which its HW checkpoint (written at its
        # first LeaderAndIsr, then every 5 s, never at the kill) does not cover.
        assert _offset_epochs(cluster, old_leader, "kip101")[-5:] == [(o, 0) for o in range(10, 15)]
        assert _hw_checkpoint(cluster, old_leader, "kip101").get(("kip101", 0), 0) <= 10

        caplog.clear()
        cluster.restart(old_leader)
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["logs"].get(old_leader, {}).get(
            "log_end_offset") == 13 and len(cluster.partition_state("kip101", 0)["isr"]) == 2, 15,
            "the old leader did not catch up and rejoin the ISR")
        truncations = [r.getMessage() for r in caplog.records
                       if r.name == FETCHER_LOG and "truncat" in r.getMessage() and "kip101-0" in r.getMessage()]
        assert len(truncations) == 1 and "from 15 to 10" in truncations[0], truncations

        expected = [(o, 0) for o in range(10)] + [(o, 1) for o in range(10, 13)]
        assert _offset_epochs(cluster, follower, "kip101") == expected
        assert _offset_epochs(cluster, old_leader, "kip101") == expected
        assert segment_bytes(cluster, old_leader, "kip101") == segment_bytes(cluster, follower, "kip101")
        values = read_everything(cluster.bootstrap_servers, "kip101", history)
        assert values == [b"committed-%d" % i for i in range(10)] + [b"new-%d" % i for i in range(3)]
        result = history.check()
        # The uncommitted writes were acknowledged with acks=1 by the old leader alone: they are lost, as
        # acks=1 allows -- and the checker names exactly them.
        assert set(result.anomalies) == {"lost-write"}, str(result)
        assert sorted(c["value"] for c in result.lost_write) == [b"uncommitted-%d" % i for i in range(5)]


def test_restarted_follower_with_a_stale_high_watermark_keeps_committed_records(caplog):
    caplog.set_level(logging.INFO, logger=FETCHER_LOG)
    with Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        cluster.create_topic("kip101", 1, 2, {"min.insync.replicas": 1})
        history = History()
        produce(cluster, "kip101", history, [b"committed-%d" % i for i in range(10)], "all")
        leader, follower = _roles(cluster, "kip101")
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["logs"][follower]["log_end_offset"] == 10,
                           10, "the follower did not catch up")
        cluster.kill(follower)
        # Ten committed records on the follower's disk, but the HW checkpoint says 0 (written at its first
        # LeaderAndIsr, next due 5 s later): truncating to the HW means to 0.
        assert _offset_epochs(cluster, follower, "kip101") == [(o, 0) for o in range(10)]
        assert _hw_checkpoint(cluster, follower, "kip101").get(("kip101", 0), 0) == 0
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["isr"] == [leader], 10,
                           "the dead follower did not leave the ISR")

        caplog.clear()
        cluster.restart(follower)
        cluster.wait_until(lambda: sorted(cluster.partition_state("kip101", 0)["isr"]) == sorted([leader, follower]),
                           15, "the restarted follower did not rejoin the ISR")
        assert not [r for r in caplog.records if r.name == FETCHER_LOG and "truncat" in r.getMessage()]
        assert segment_bytes(cluster, follower, "kip101") == segment_bytes(cluster, leader, "kip101")
        # The leader dies at once (the follower may not even have learnt the HW yet): the follower leads with
        # every committed record. (min.insync.replicas=1: with 2, a lone new leader could not advance its HW.)
        cluster.kill(leader)
        cluster.wait_until(lambda: cluster.partition_state("kip101", 0)["leader"] == follower, 15,
                           "the follower was not elected")
        assert read_everything(cluster.bootstrap_servers, "kip101", history) == \
            [b"committed-%d" % i for i in range(10)]
        result = history.check()
        assert result.valid and result.stats["acknowledged"] == result.stats["read"] == 10, str(result)
