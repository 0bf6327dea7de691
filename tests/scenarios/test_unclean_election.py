"""Unclean leader election, off and on. RF=2: the follower is cut off and drops out of the ISR while the leader
takes acks=1 writes alone; then the leader dies.

* ``unclean.leader.election.enable=false`` (Kafka's default since 0.11): the only live replica is not in the ISR,
  so the partition goes offline -- leader -1 in ZooKeeper and in every broker's metadata, produce fails --
  until the old leader returns; then nothing acknowledged is missing.
* ``true``: the out-of-sync follower is elected at once and serves its shorter log; the writes only the old
  leader had are gone, and the history checker reports them as lost writes.
"""
from __future__ import annotations

import pytest

from kafkalab.cluster import Cluster, History

confluent_kafka = pytest.importorskip("confluent_kafka")

from scenario_support import make_producer, produce, read_everything  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 800, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}
UNAVAILABLE = {"NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "_MSG_TIMED_OUT"}


def _follower_drops_out_then_leader_dies(cluster, history, unclean: bool):
    cluster.create_topic("unclean", 1, 2, {"min.insync.replicas": 1,
                                           "unclean.leader.election.enable": str(unclean).lower()})
    produce(cluster, "unclean", history, [b"before-%d" % i for i in range(10)], "all")
    state = cluster.partition_state("unclean", 0)
    leader, follower = state["leader"], next(b for b in state["replicas"] if b != state["leader"])
    cluster.wait_until(lambda: cluster.partition_state("unclean", 0)["logs"][follower] ==
                       {"log_end_offset": 10, "high_watermark": 10}, 10, "the follower did not catch up")
    cluster.partition(leader, follower)
    produce(cluster, "unclean", history, [b"probe"], "1")
    cluster.wait_until(lambda: cluster.partition_state("unclean", 0)["isr"] == [leader], 10,
                       "the follower did not leave the ISR")
    produce(cluster, "unclean", history, [b"during-%d" % i for i in range(10)], "1")
    cluster.kill(leader)
    cluster.heal()
    return leader, follower


def test_unclean_election_disabled_keeps_the_partition_offline_until_the_old_leader_returns():
    with Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        history = History()
        leader, follower = _follower_drops_out_then_leader_dies(cluster, history, unclean=False)
        cluster.wait_until(lambda: cluster.controller_id == follower and cluster.call(
            lambda: cluster.brokers[follower].metadata_cache.partition_state("unclean", 0).leader) == -1, 15,
            "the partition did not go offline")
        state = cluster.partition_state("unclean", 0)
        assert state["leader"] == -1 and state["isr"] == [leader]      # the ISR keeps the dead leader
        controller = cluster.call(cluster.brokers[follower].metrics)
        assert (controller["UncleanLeaderElectionsPerSec"], controller["OfflinePartitionsCount"]) == (0, 1)
        # Produce fails: no broker leads the partition.
        p = make_producer(cluster, "1", **{"message.timeout.ms": 1500})
        errors = []
        p.produce("unclean", value=b"offline", partition=0,
                  on_delivery=lambda err, msg: errors.append(err.name() if err else msg.offset()))
        p.flush(10)
        assert len(errors) == 1 and errors[0] in UNAVAILABLE, errors
        # The follower's log was never touched: it is still at 10 (it would have been elected with it).
        assert cluster.partition_state("unclean", 0)["logs"][follower]["log_end_offset"] == 10
        cluster.restart(leader)
        cluster.wait_until(lambda: cluster.partition_state("unclean", 0)["leader"] == leader, 15,
                           "the old leader did not come back as leader")
        assert cluster.partition_state("unclean", 0)["leader_epoch"] >= 1
        read_everything(cluster.bootstrap_servers, "unclean", history)
        result = history.check()
        assert result.valid, str(result)
        assert result.stats["acknowledged"] == 21


def test_unclean_election_enabled_elects_the_lagging_follower_and_loses_writes():
    with Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        history = History()
        leader, follower = _follower_drops_out_then_leader_dies(cluster, history, unclean=True)
        cluster.wait_until(lambda: cluster.partition_state("unclean", 0)["leader"] == follower, 15,
                           "the out-of-sync follower was not elected")
        assert cluster.partition_state("unclean", 0)["isr"] == [follower]
        # no warning in any log: the controller (the follower's broker now) counts it on Kafka's meter
        controller = cluster.call(cluster.brokers[follower].metrics)
        assert (controller["ActiveControllerCount"], controller["UncleanLeaderElectionsPerSec"],
                controller["OfflinePartitionsCount"]) == (1, 1, 0)
        read_everything(cluster.bootstrap_servers, "unclean", history)
        result = history.check()
        assert not result.valid and set(result.anomalies) == {"lost-write"}, str(result)
        assert sorted(c["value"] for c in result.lost_write) == \
            sorted([b"probe"] + [b"during-%d" % i for i in range(10)])
