"""Leader failover: kafkalab's clients keep working after the broker leading their partition is killed.

A killed broker's sockets close (the client reads EOF), its session expires and the controller elects a new
leader within a second. As in Java's NetworkClient (``handleServerDisconnect`` -> ``metadata.requestUpdate``),
the disconnect must ask for fresh metadata at once -- not after ``metadata.max.age.ms`` -- so the producer's
retried batch and the consumer's next fetch go to the new leader. Runs against kafkalab's in-process
:class:`~kafkalab.Cluster` only (the peers in ``conftest`` are single brokers); the test names carry
``kafkalab`` so that ``-k kafkalab`` selects them.
"""
from __future__ import annotations

import threading
import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import Producer
from kafkalab.clients.consumer import Consumer, TopicPartition

#: A failover takes well under a second here; the bound only has to be far below the old symptom (no recovery
#: until metadata.max.age.ms = 5 min, i.e. a TimeoutError) and below delivery.timeout.ms.
RECOVERY_S = 10


@pytest.fixture
def cluster():
    with Cluster(brokers=3, overrides={"default.replication.factor": 3,
                                       "offsets.topic.replication.factor": 1}) as c:
        c.create_topic("t", 1, replication_factor=3)
        yield c


def producer(cluster, **cfg) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                     "enable.idempotence": True, **cfg})


def read_all(cluster, want: int, timeout: float = 15.0) -> list:
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "fetch.max.wait.ms": 100}) as c:
        tp = TopicPartition("t", 0)
        c.assign([tp])
        c.seek(tp, 0)
        got, deadline = [], time.monotonic() + timeout
        while len(got) < want and time.monotonic() < deadline:
            got += c.poll(0.2)
        got += c.poll(0.3)                      # nothing more may follow
        return got


def kill_leader(cluster) -> int:
    leader = cluster.partition_state("t", 0)["leader"]
    cluster.kill(leader)
    return leader


def test_kafkalab_producer_recovers_after_an_idle_connection_to_the_leader_dies(cluster):
    p = producer(cluster)
    try:
        assert p.send("t", b"a").result(10).offset == 0
        old = kill_leader(cluster)
        t0 = time.monotonic()
        meta = p.send("t", b"b").result(RECOVERY_S + 5)
        assert time.monotonic() - t0 < RECOVERY_S
        assert meta.offset == 1
        assert cluster.partition_state("t", 0)["leader"] not in (-1, old)
    finally:
        p.close(5)
    records = read_all(cluster, 2)
    assert [(r.offset, r.value) for r in records] == [(0, b"a"), (1, b"b")]   # nothing lost, nothing twice


def test_kafkalab_producer_retries_in_flight_batches_to_the_new_leader_exactly_once(cluster):
    p = producer(cluster)
    futures, stop = [], threading.Event()

    def produce():
        i = 0
        while not stop.is_set() and i < 2000:
            futures.append(p.send("t", b"v-%d" % i))
            i += 1
            time.sleep(0.001)

    try:
        p.send("t", b"v-first").result(10)
        worker = threading.Thread(target=produce)
        worker.start()
        time.sleep(0.2)                             # batches are in flight to the leader...
        kill_leader(cluster)                        # ...when it dies
        time.sleep(0.5)
        stop.set()
        worker.join()
        deadline = time.monotonic() + RECOVERY_S
        offsets = [f.result(max(0.1, deadline - time.monotonic())).offset for f in futures]
    finally:
        p.close(5)
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    records = read_all(cluster, len(futures) + 1)
    assert [r.value for r in records] == [b"v-first"] + [b"v-%d" % i for i in range(len(futures))]
    assert [r.offset for r in records[1:]] == offsets


def test_kafkalab_assigned_consumer_keeps_reading_after_its_leader_is_killed(cluster):
    tp = TopicPartition("t", 0)
    p = producer(cluster)
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "fetch.max.wait.ms": 500})
    try:
        for i in range(5):
            p.send("t", b"before-%d" % i)
        p.flush(10)
        c.assign([tp])
        c.seek(tp, 0)
        got, deadline = [], time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            got += c.poll(0.2)
        assert [r.value for r in got] == [b"before-%d" % i for i in range(5)]
        c.poll(0.2)                                     # a long-polling fetch is now parked on the leader
        kill_leader(cluster)
        for i in range(5):
            p.send("t", b"after-%d" % i)
        p.flush(RECOVERY_S)
        t0, more = time.monotonic(), []
        while len(more) < 5 and time.monotonic() - t0 < RECOVERY_S:
            more += c.poll(0.2)
        assert [(r.offset, r.value) for r in more] == [(5 + i, b"after-%d" % i) for i in range(5)]
    finally:
        c.close()
        p.close(5)
