"""Three brokers, ``__transaction_state`` replicated three times: the transaction coordinator is killed between
PrepareCommit and the markers; the broker that becomes leader of its partition loads ``__transaction_state`` and
finishes the commit with its own coordinator epoch. The leaders' WriteTxnMarkers handler is scripted (the log
side is another room): it refuses to write while ``ANSWER`` says so, then records the markers."""
from __future__ import annotations

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.protocol import ApiKey, ErrorCode as E
from kafkalab.server.apis import base as apis_base

from . import test_transactions_wire as w
from ._admin_support import wire


@pytest.fixture(scope="module")
def cluster():
    saved = apis_base.REGISTRY.get(int(ApiKey.WRITE_TXN_MARKERS))
    w.MARKERS.clear()                                 # producer ids restart at 0 in every cluster
    apis_base.handles(ApiKey.WRITE_TXN_MARKERS, versions=(1, 1))(w._scripted_write_txn_markers)
    try:
        with Cluster(brokers=3, overrides={"transaction.state.log.num.partitions": 1,
                                           "transaction.state.log.replication.factor": 3,
                                           "transaction.state.log.min.isr": 2,
                                           "offsets.topic.num.partitions": 1}) as c:
            c.create_topic("data", partitions=1, replication_factor=3)
            yield c
    finally:
        if saved is None:
            apis_base.REGISTRY.pop(int(ApiKey.WRITE_TXN_MARKERS), None)
        else:
            apis_base.REGISTRY[int(ApiKey.WRITE_TXN_MARKERS)] = saved


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
    pid, epoch = w.init_ok(coordinator, "fo-1")
    assert w.add(coordinator, "fo-1", pid, epoch, (("data", 0),)) == {("data", 0): E.NONE}
    old_epoch = coordinator.transaction_coordinator.state_manager.get_transaction_state("fo-1").coordinator_epoch
    w.ANSWER["code"] = E.NOT_ENOUGH_REPLICAS
    try:
        assert w.end(coordinator, "fo-1", pid, epoch) == E.NONE
        assert w.describe(coordinator, "fo-1").transaction_state == "PrepareCommit"
        cluster.kill(coordinator.broker_id)
        w.ANSWER["code"] = E.NONE
        successor = w.until(lambda: (lambda b: b if b is not None and b.broker_id != coordinator.broker_id else None)(
            coordinator_of(cluster, "fo-1")), timeout=20)
    finally:
        w.ANSWER["code"] = E.NONE
    assert successor is not None
    d = w.until(lambda: (lambda d: d if d.error_code == E.NONE and d.transaction_state == "CompleteCommit" else None)(
        w.describe(successor, "fo-1")), timeout=20)
    assert d and (d.producer_id, d.producer_epoch) == (pid, epoch)
    last = [m for m in w.MARKERS if m[0] == pid][-1]
    assert last[2] is True and last[3] > old_epoch and last[5] == str(successor.broker_id)
    assert w.end(successor, "fo-1", pid, epoch) == E.NONE              # the client's retry is idempotent
    assert wire(successor, w.InitProducerId(transactional_id="fo-1", transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1), 3).producer_epoch == epoch + 1
