"""kafkalab's transactional producer against real brokers: kafkalab's own, Tansu and noida-db.

Committed transactions are visible to read_committed consumers and aborted ones are not (read_uncommitted sees
both); offsets sent inside a transaction are committed with it, and not at all when it aborts; a second producer
with the same transactional.id fences the first; close() aborts a transaction left open, so the last stable offset
moves on. Every test ends by committing a transaction with one ``end`` record per partition and reads until it has
seen all of them: a read_committed consumer gets there only once every transaction before is decided.

The kafkalab case needs the broker side of transactions (issue 17: transaction coordinator, markers, LSO); the
broker here runs with a one-replica ``__transaction_state`` as a single-broker cluster must.
"""
import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import Admin, Consumer, Producer
from kafkalab.clients.consumer import ConsumerGroupMetadata
from kafkalab.clients.producer.transaction_state import ProducerFencedError

from .conftest import GROUP_OVERRIDES, Broker, unique

#: A single-broker cluster: ``__transaction_state`` with one replica (Kafka's defaults want three brokers).
TXN_OVERRIDES = {**GROUP_OVERRIDES, "transaction.state.log.replication.factor": 1,
                 "transaction.state.log.min.isr": 1, "transaction.state.log.num.partitions": 5}


@pytest.fixture(scope="module")
def kafkalab_broker():
    """This module's kafkalab broker, with ``__transaction_state`` sized for one broker."""
    with Cluster(brokers=1, overrides=TXN_OVERRIDES) as cluster:
        yield Broker("kafkalab", cluster.bootstrap_servers, cluster)


def make_topic(broker, partitions: int = 2) -> str:
    name = unique("txn")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([(name, partitions, 1)])
    return name


def transactional(broker, tid=None, **extra) -> Producer:
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid or unique("tid"),
              "linger.ms": 0, "max.block.ms": 30_000}
    config.update(extra)
    producer = Producer(config)
    producer.init_transactions()
    return producer


def finish(broker, topics, partitions: int = 2) -> None:
    """Commit one ``end`` record per partition of each topic: what the readers wait for."""
    with transactional(broker) as p:
        p.begin_transaction()
        for topic in topics:
            for partition in range(partitions):
                p.send(topic, b"end", partition=partition)
        p.commit_transaction()


def read_all(broker, topic: str, isolation: str, partitions: int = 2, timeout: float = 20.0) -> list:
    """The values of ``topic`` in partition order, up to the ``end`` record of each partition."""
    with Consumer({"bootstrap.servers": broker.bootstrap_servers, "isolation.level": isolation,
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as c:
        c.assign([(topic, p) for p in range(partitions)])
        seen: dict[int, list] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while not all(v and v[-1] == b"end" for v in seen.values()):
            assert time.monotonic() < deadline, f"{isolation} read only {seen} of {topic}"
            for r in c.poll(0.2):
                if not (seen[r.partition] and seen[r.partition][-1] == b"end"):
                    seen[r.partition].append(r.value)
    return [v for p in range(partitions) for v in seen[p][:-1]]


def test_a_committed_transaction_spans_two_topics_and_an_aborted_one_is_written_but_not_committed(broker):
    t1, t2 = make_topic(broker), make_topic(broker)
    with transactional(broker) as p:
        p.begin_transaction()
        sent = [p.send(t1, b"c1", partition=0), p.send(t2, b"c2", partition=1)]
        p.commit_transaction()
        assert all(f.result(5).offset >= 0 for f in sent)
        p.begin_transaction()
        aborted = [p.send(t1, b"a1", partition=0), p.send(t2, b"a2", partition=1)]
        p.flush()                                 # written to the log before the abort
        p.abort_transaction()
        assert all(f.result(5).offset >= 0 for f in aborted)
    finish(broker, [t1, t2])
    assert read_all(broker, t1, "read_uncommitted") == [b"c1", b"a1"]
    assert read_all(broker, t2, "read_uncommitted") == [b"c2", b"a2"]


def test_read_committed_sees_exactly_the_committed_records(broker):
    broker.lacks("read_committed")
    t1, t2 = make_topic(broker), make_topic(broker)
    with transactional(broker) as p:
        p.begin_transaction()
        p.send(t1, b"c1", partition=0)
        p.send(t2, b"c2", partition=1)
        p.commit_transaction()
        p.begin_transaction()
        p.send(t1, b"a1", partition=0)
        p.send(t2, b"a2", partition=1)
        p.flush()
        p.abort_transaction()
        p.begin_transaction()
        p.send(t1, b"c3", partition=0)
        p.commit_transaction()
    finish(broker, [t1, t2])
    assert read_all(broker, t1, "read_committed") == [b"c1", b"c3"]
    assert read_all(broker, t2, "read_committed") == [b"c2"]


def test_many_transactions_in_a_row(broker):
    topic = make_topic(broker, partitions=1)
    with transactional(broker) as p:
        for i in range(10):
            p.begin_transaction()
            for j in range(3):
                p.send(topic, f"{i}-{j}".encode(), partition=0)
            p.commit_transaction()
        p.begin_transaction()                     # an empty one: no EndTxn on the wire, nothing in the log
        p.commit_transaction()
    finish(broker, [topic], partitions=1)
    assert read_all(broker, topic, "read_uncommitted", partitions=1) == \
        [f"{i}-{j}".encode() for i in range(10) for j in range(3)]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker):
    broker.lacks("fencing")
    topic = make_topic(broker, partitions=1)
    tid = unique("tid")
    zombie = transactional(broker, tid)
    try:
        zombie.begin_transaction()
        zombie.send(topic, b"zombie", partition=0).result(10)
        with transactional(broker, tid) as successor:   # its InitProducerId aborts the zombie's transaction
            with pytest.raises(ProducerFencedError):
                zombie.commit_transaction(timeout=15)
            with pytest.raises(ProducerFencedError):
                zombie.begin_transaction()
            successor.begin_transaction()
            successor.send(topic, b"successor", partition=0)
            successor.commit_transaction()
    finally:
        zombie.close(0)
    finish(broker, [topic], partitions=1)
    assert read_all(broker, topic, "read_committed", partitions=1) == [b"successor"]


def test_offsets_sent_in_a_transaction_are_committed_with_it_and_not_when_it_aborts(broker):
    source, sink = make_topic(broker, partitions=1), make_topic(broker, partitions=1)
    group = unique("g")
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as plain:
        for i in range(6):
            plain.send(source, f"in-{i}".encode(), partition=0)
    with Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                   "enable.auto.commit": False, "auto.offset.reset": "earliest"}) as consumer, \
            transactional(broker) as p:
        consumer.assign([(source, 0)])
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 6:
            assert time.monotonic() < deadline
            records += consumer.poll(0.2)
        metadata = ConsumerGroupMetadata(group)
        p.begin_transaction()                      # consume-process-produce: the first half, committed
        for r in records[:3]:
            p.send(sink, r.value.replace(b"in", b"out"), partition=0)
        p.send_offsets_to_transaction({(source, 0): records[2].offset + 1}, metadata)
        p.commit_transaction()
        p.begin_transaction()                      # the second half, aborted: its offsets must not count
        for r in records[3:]:
            p.send(sink, r.value.replace(b"in", b"out"), partition=0)
        p.send_offsets_to_transaction({(source, 0): records[5].offset + 1}, metadata)
        p.abort_transaction()
        deadline = time.monotonic() + 20          # the offset becomes visible once the marker is written
        while True:
            committed = consumer.committed([(source, 0)])
            found = next(iter(committed.values()))
            if found is not None and found.offset == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert found is not None and found.offset == 3
    finish(broker, [sink], partitions=1)
    if broker.has("read_committed"):
        assert read_all(broker, sink, "read_committed", partitions=1) == [b"out-0", b"out-1", b"out-2"]


def test_close_aborts_an_open_transaction_so_read_committed_moves_on(broker):
    broker.lacks("read_committed")
    topic = make_topic(broker, partitions=1)
    p = transactional(broker)
    p.begin_transaction()
    p.send(topic, b"left-open", partition=0).result(10)
    p.close()
    finish(broker, [topic], partitions=1)
    assert read_all(broker, topic, "read_committed", partitions=1) == []
