"""Followers fetch in fetch sessions (KIP-227): one privileged session per follower in each leader's cache,
full requests first, then incremental ones that name only the partitions that moved."""
from __future__ import annotations

import time

import pytest

from kafkalab.cluster.cluster import Cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402

OVERRIDES = {"replica.fetch.wait.max.ms": 100, "replica.fetch.backoff.ms": 100, "auto.create.topics.enable": False,
             "offsets.topic.replication.factor": 1}
TOPIC = "followed"
ASSIGNMENT = {p: [0, 1] for p in range(6)}      # broker 0 leads all six, broker 1 follows them


def _produce(cluster: Cluster, partition: int, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0, "log_level": 0})
    for i in range(n):
        p.produce(TOPIC, value=b"v%d" % i, partition=partition)
    assert p.flush(15) == 0


def _view(cluster: Cluster) -> dict:
    def read():
        fetcher = cluster.brokers[1].replica_manager.replica_fetcher_manager.fetchers[0]
        sessions = list(cluster.brokers[0].fetch_manager.cache.sessions.values())
        follower_ends = {p: cluster.brokers[1].replica_manager.get_partition(TOPIC, p).log.log_end_offset
                         for p in ASSIGNMENT}
        return dict(handler=(fetcher.session.session_id, fetcher.session.full_requests,
                             fetcher.session.incremental_requests),
                    last_request_partitions=fetcher.last_request_partitions, fetching=len(fetcher.partitions),
                    sessions=[(s.id, s.privileged, s.size) for s in sessions], follower_ends=follower_ends)
    return cluster.call(read)


def test_followers_use_incremental_fetch_sessions():
    with Cluster(brokers=2, overrides=OVERRIDES) as cluster:
        cluster.create_topic(TOPIC, assignment=ASSIGNMENT)
        cluster.wait_until(lambda: _view(cluster)["handler"][2] >= 3, 10, "no incremental fetches")
        view = _view(cluster)
        session_id, full, _ = view["handler"]
        assert session_id != 0 and full >= 1
        assert (session_id, True, 6) in view["sessions"]         # the leader's cache: one privileged session
        _produce(cluster, 2, 5)
        cluster.wait_until(lambda: _view(cluster)["follower_ends"][2] == 5, 10, "partition 2 not replicated")
        time.sleep(0.3)
        view = _view(cluster)
        assert view["handler"][0] == session_id                  # still the same session
        assert view["fetching"] == 6 and view["last_request_partitions"] < 6
        assert view["follower_ends"] == {0: 0, 1: 0, 2: 5, 3: 0, 4: 0, 5: 0}


def test_a_restarted_leader_answers_session_id_not_found_and_the_follower_starts_over():
    with Cluster(brokers=2, overrides={**OVERRIDES, "controlled.shutdown.enable": False}) as cluster:
        cluster.create_topic(TOPIC, assignment=ASSIGNMENT)
        cluster.wait_until(lambda: _view(cluster)["handler"][2] >= 2, 10, "no incremental fetches")
        before = _view(cluster)["handler"]
        cluster.call(lambda: cluster.brokers[0].fetch_manager.cache.sessions.clear())   # as after a restart
        cluster.wait_until(lambda: _view(cluster)["handler"][1] > before[1], 10, "no new full fetch")
        cluster.wait_until(lambda: _view(cluster)["handler"][0] not in (0, before[0]), 10, "no new session")
        _produce(cluster, 4, 3)
        cluster.wait_until(lambda: _view(cluster)["follower_ends"][4] == 3, 10, "partition 4 not replicated")
