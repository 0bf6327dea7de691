"""RF=3, min.insync.replicas=2, acks=all, an idempotent confluent-kafka producer: the leader is killed and
restarted three times during production, and afterwards every acknowledged record is read exactly once."""
from __future__ import annotations

import pytest

from kafkalab.cluster import Cluster, History

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402

from scenario_support import read_everything, recorder  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}


def test_idempotent_acks_all_producer_loses_and_duplicates_nothing_across_leader_kills():
    with Cluster(brokers=3, overrides=OVERRIDES) as cluster:
        cluster.create_topic("orders", 1, 3, {"min.insync.replicas": 2})
        history = History()
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 25000,
                             "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 500, "log_level": 0})
        n = 0

        def send(count):
            nonlocal n
            for _ in range(count):
                value = b"v-%d" % n
                producer.produce("orders", value=value, partition=0, on_delivery=recorder(history, value))
                n += 1
                producer.poll(0)

        kills = []
        for _ in range(3):
            send(100)
            producer.flush(0.2)
            leader = cluster.partition_state("orders", 0)["leader"]
            cluster.kill(leader)
            kills.append(leader)
            send(100)                                     # produced while the partition fails over
            cluster.wait_until(lambda leader=leader: cluster.partition_state("orders", 0)["leader"] not in (-1, leader),
                               15, "no new leader")
            cluster.restart(leader)
            cluster.wait_until(lambda: len(cluster.partition_state("orders", 0)["isr"]) == 3, 20,
                               "the restarted broker did not rejoin the ISR")
        send(100)
        assert producer.flush(30) == 0
        read_everything(cluster.bootstrap_servers, "orders", history)
        result = history.check()
        assert result.valid, str(result)
        assert result.stats["acknowledged"] == n == 700, str(result)
        assert result.stats["read"] == n
