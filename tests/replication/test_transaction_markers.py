"""Transaction markers on a replicated partition: WriteTxnMarkers answers once the high watermark has passed the
marker (acks=all), the last stable offset waits for that too, and the follower rebuilds the same .txnindex from
the batches it copies."""
from __future__ import annotations

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.protocol import ErrorCode

from tests.server.test_transactions_leader import latest, produce, txn_batch, write_markers

TOPIC = "replicated-txn"
OVERRIDES = {"replica.fetch.wait.max.ms": 100, "replica.fetch.backoff.ms": 50, "auto.create.topics.enable": False,
             "request.timeout.ms": 700, "replica.lag.time.max.ms": 30000}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=2, overrides=OVERRIDES) as c:
        c.create_topic(TOPIC, assignment={0: [0, 1]})
        yield c


def logs(cluster):
    return [cluster.broker(b).replica_manager.partition_or_error(TOPIC, 0).log for b in (0, 1)]


def test_marker_waits_for_the_follower_and_the_follower_indexes_it(cluster):
    assert produce(cluster, TOPIC, txn_batch(70, 0, ["a", "b"])).error_code == ErrorCode.NONE     # 0-1
    cluster.partition(0, 1)                                  # the follower stops fetching
    try:
        assert write_markers(cluster, TOPIC, 70, committed=False) == {0: ErrorCode.REQUEST_TIMED_OUT}
        leader, _ = logs(cluster)
        offsets = cluster.call(lambda: (leader.log_end_offset, leader.high_watermark, leader.last_stable_offset))
        assert offsets == (3, 2, 0)                          # written, not replicated: still unstable
        assert latest(cluster, TOPIC, 1) == 0
    finally:
        cluster.heal()
    cluster.wait_until(lambda: logs(cluster)[0].last_stable_offset == 3, 10, "the LSO never passed the marker")
    assert latest(cluster, TOPIC, 1) == 3
    cluster.wait_until(lambda: logs(cluster)[1].log_end_offset == 3, 10, "the follower never copied the marker")

    def indexes():
        return [[tuple(t) for s in lg.segments for t in s.txn_index.all_aborted_txns()] for lg in logs(cluster)]
    assert cluster.call(indexes) == [[(70, 0, 2, 3, 0)]] * 2
    assert write_markers(cluster, TOPIC, 70, committed=False) == {0: ErrorCode.NONE}    # a duplicate: harmless


def test_a_follower_is_not_leader_for_markers(cluster):
    cluster.create_topic(TOPIC + "-2", assignment={0: [1, 0]})
    assert write_markers(cluster, TOPIC + "-2", 71, committed=True) == {0: ErrorCode.NOT_LEADER_OR_FOLLOWER}
