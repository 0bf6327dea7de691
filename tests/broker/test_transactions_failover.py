"""Three brokers, ``__transaction_state`` replicated three times: the transaction coordinator is killed between
PrepareCommit and the markers; the broker that becomes leader of its partition loads ``__transaction_state`` and
finishes the commit with its own coordinator epoch. The marker is held back by cutting the link between the
coordinator and the data partition's leader, and read back from that leader's log."""
from __future__ import annotations

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.protocol import ErrorCode as E

from . import test_transactions_wire as w
from ._admin_support import wire


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides={"transaction.state.log.num.partitions": 1,
                                       "transaction.state.log.replication.factor": 3,
                                       "transaction.state.log.min.isr": 2,
                                       "replica.lag.time.max.ms": 1000,
                                       "offsets.topic.num.partitions": 1}) as c:
        yield c


def coordinator_of(cluster, txn):
    for b in cluster.brokers.values():
        try:
            r = w.find(b, txn)
        except OSError:             # a killed broker
            continue
        if r.error_code == E.NONE:
            return cluster.broker(r.node_id)
    return None


def test_killed_coordinator_is_replaced_and_the_commit_completes(cluster):
    coordinator = w.until(lambda: coordinator_of(cluster, "fo-1"), timeout=20)
    assert coordinator is not None
    leader = next(b for b in cluster.brokers if b != coordinator.broker_id)
    cluster.create_topic("data", assignment={0: [leader] + [b for b in cluster.brokers if b != leader]})
    pid, epoch = w.init_ok(coordinator, "fo-1")
    assert w.add(coordinator, "fo-1", pid, epoch, (("data", 0),)) == {("data", 0): E.NONE}
    old_epoch = coordinator.transaction_coordinator.state_manager.get_transaction_state("fo-1").coordinator_epoch
    cluster.partition(coordinator.broker_id, leader)             # the marker cannot reach the leader
    try:
        assert w.end(coordinator, "fo-1", pid, epoch) == E.NONE
        assert w.describe(coordinator, "fo-1").transaction_state == "PrepareCommit"
        cluster.kill(coordinator.broker_id)
    finally:
        cluster.heal()
    successor = w.until(lambda: (lambda b: b if b is not None and b.broker_id != coordinator.broker_id else None)(
        coordinator_of(cluster, "fo-1")), timeout=20)
    assert successor is not None
    d = w.until(lambda: (lambda d: d if d.error_code == E.NONE and d.transaction_state == "CompleteCommit" else None)(
        w.describe(successor, "fo-1")), timeout=20)
    assert d and (d.producer_id, d.producer_epoch) == (pid, epoch)
    markers = [m for m in w.markers_in_log(cluster, leader, "data", 0) if m[1] == pid]
    assert len(markers) == 1 and markers[0][2:4] == (epoch, True) and markers[0][4] > old_epoch   # the successor's
    assert w.end(successor, "fo-1", pid, epoch) == E.NONE              # the client's retry is idempotent
    assert wire(successor, w.InitProducerId(transactional_id="fo-1", transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1), 3).producer_epoch == epoch + 1
