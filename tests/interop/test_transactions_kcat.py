"""kcat (librdkafka 2.0.2) as a read_committed and a read_uncommitted consumer of transactions written to the
kafkalab broker by kafkalab's own transactional producer (issue 17, "Real clients").

``kcat -C -e`` reads to the end of each partition and exits: for ``-X isolation.level=read_committed`` that end
is the last stable offset, so with a transaction still open it stops before it, and reads the rest once the
transaction commits (librdkafka consumers are read_committed by default, transactions.md pitfall 10).
"""
from __future__ import annotations

import json

import pytest

from kafkalab.clients import Producer

from ._broker_support import kcat, unique
from ._txn_support import Sent, commit_abort_plan, expected_reads, new_topic, ordered, plan_partitions, wait_lso, \
    wait_stable

pytestmark = pytest.mark.interop


def kcat_read(cluster, topics, isolation: str) -> list[Sent]:
    out = []
    for topic in topics:
        for line in kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
                         "-X", f"isolation.level={isolation}").splitlines():
            m = json.loads(line)
            out.append(Sent(m["topic"], m["partition"], m["payload"].encode()))
    return ordered(out)


def our_producer(cluster, tid: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid, "linger.ms": 0,
                         "max.block.ms": 20_000})
    producer.init_transactions()
    return producer


def test_kcat_reads_committed_and_uncommitted(txn_cluster):
    t1, t2 = new_topic(txn_cluster, "kcat-txn-a"), new_topic(txn_cluster, "kcat-txn-b")
    plan = commit_abort_plan(t1, t2, "kcat")
    with our_producer(txn_cluster, unique("kcat-tid")) as producer:
        for kind, sends in plan:
            producer.begin_transaction()
            futures = [producer.send(s.topic, s.value, partition=s.partition) for s in sends]
            if kind == "commit":
                producer.commit_transaction()
            else:
                for f in futures:
                    f.result(20)
                producer.abort_transaction()
    wait_stable(txn_cluster, plan_partitions(plan))
    committed, everything = expected_reads(plan)
    assert kcat_read(txn_cluster, [t1, t2], "read_committed") == committed
    assert kcat_read(txn_cluster, [t1, t2], "read_uncommitted") == everything


def test_kcat_read_committed_stops_at_an_open_transaction(txn_cluster):
    topic = new_topic(txn_cluster, "kcat-lso", 1)
    with our_producer(txn_cluster, unique("kcat-open")) as open_txn, \
            our_producer(txn_cluster, unique("kcat-later")) as later:
        later.begin_transaction()
        later.send(topic, b"before", partition=0)
        later.commit_transaction()
        open_txn.begin_transaction()
        open_txn.send(topic, b"open", partition=0).result(20)
        later.begin_transaction()
        later.send(topic, b"later", partition=0)
        later.commit_transaction()
        wait_lso(txn_cluster, topic, (2, 5))
        assert kcat_read(txn_cluster, [topic], "read_committed") == [Sent(topic, 0, b"before")]
        assert kcat_read(txn_cluster, [topic], "read_uncommitted") == \
            [Sent(topic, 0, v) for v in (b"before", b"open", b"later")]
        open_txn.commit_transaction()
    wait_stable(txn_cluster, [(topic, 0)])
    assert kcat_read(txn_cluster, [topic], "read_committed") == \
        [Sent(topic, 0, v) for v in (b"before", b"open", b"later")]
