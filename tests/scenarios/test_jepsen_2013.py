"""Jepsen's 2013 Kafka experiment in miniature (aphyr.com/posts/293-jepsen-kafka), judged by the history checker.

RF=2 with ``unclean.leader.election.enable=true``. The leader is cut off from its follower; after
``replica.lag.time.max.ms`` it shrinks the ISR to itself. With min.insync.replicas=1 and acks=1 (Kafka 0.8's
world) it keeps acknowledging writes only it has. Then it dies, the lagging follower is elected (unclean), and
every write acknowledged in that window is gone: lost writes. With min.insync.replicas=2 and acks=all the same
faults cost availability instead: the producer gets NOT_ENOUGH_REPLICAS, and nothing acknowledged is lost.
"""
from __future__ import annotations

import pytest

from kafkalab.cluster import Cluster, History

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402

from scenario_support import read_everything, recorder  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 800, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}


def produce(cluster, history, values, acks):
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "retries": 0, "linger.ms": 0,
                  "message.timeout.ms": 8000, "request.timeout.ms": 2000, "log_level": 0})
    for v in values:
        p.produce("jepsen", value=v, partition=0, on_delivery=recorder(history, v))
    assert p.flush(15) == 0


def run(min_isr: int, acks: str):
    with Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        cluster.create_topic("jepsen", 1, 2, {"min.insync.replicas": min_isr,
                                              "unclean.leader.election.enable": True})
        history = History()
        produce(cluster, history, [b"before-%d" % i for i in range(10)], acks)
        state = cluster.partition_state("jepsen", 0)
        leader, follower = state["leader"], next(b for b in state["replicas"] if b != state["leader"])
        # The follower has every record and knows they are committed (its high watermark comes with its next
        # fetch): as a leader under min.insync.replicas it could not advance it any more.
        cluster.wait_until(lambda: cluster.partition_state("jepsen", 0)["logs"][follower] ==
                           {"log_end_offset": 10, "high_watermark": 10}, 10, "the follower did not catch up")
        # 1. The network splits the leader from its follower; once the leader has a record the follower cannot
        #    fetch (a follower at the leader's log end counts as caught up), it drops it from the ISR.
        cluster.partition(leader, follower)
        produce(cluster, history, [b"probe"], acks)     # acks=all: waits in purgatory, times out (unknown)
        cluster.wait_until(lambda: cluster.call(
            lambda: cluster.brokers[leader].replica_manager.get_partition("jepsen", 0).isr) == (leader,), 10,
            "the leader did not shrink the ISR")
        # 2. Writes go on -- to the leader alone.
        produce(cluster, history, [b"during-%d" % i for i in range(10)], acks)
        # 3. The leader dies; the out-of-sync follower is elected (unclean) and serves from its shorter log.
        cluster.kill(leader)
        cluster.wait_until(lambda: cluster.partition_state("jepsen", 0)["leader"] == follower, 15,
                           "the follower was not elected")
        cluster.heal()
        read_everything(cluster.bootstrap_servers, "jepsen", history)
        return history, history.check()


def test_min_isr_1_acks_1_loses_acknowledged_writes():
    history, result = run(min_isr=1, acks="1")
    assert result.stats["acknowledged"] == 21
    assert not result.valid
    assert sorted(c["value"] for c in result.lost_write) == sorted([b"probe"] + [b"during-%d" % i for i in range(10)])
    assert sorted(c["offset"] for c in result.lost_write) == list(range(10, 21))
    assert set(result.anomalies) == {"lost-write"}


def test_min_isr_2_acks_all_refuses_instead_of_losing():
    history, result = run(min_isr=2, acks="all")
    assert result.valid, str(result)
    assert result.stats["acknowledged"] == 10 and result.stats["failed"] == 10
    assert result.stats["indeterminate"] == 1                 # the probe: appended on the leader alone, never acked
    assert {op.error for op in history.sends if op.type == "fail"} == {"NOT_ENOUGH_REPLICAS"}
