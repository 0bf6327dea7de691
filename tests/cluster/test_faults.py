"""Fault injection in the cluster harness: cut links, isolation from the store, pause/resume, and kill with
and without the page cache. Timing comes from short overrides (replica lag 1 s, session timeout 2 s)."""
from __future__ import annotations

import pytest

from kafkalab.cluster import ZK, Cluster, LinkTable

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}


def produce(cluster, topic, values, acks="1"):
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "linger.ms": 0,
                  "message.timeout.ms": 8000, "log_level": 0})
    out = []
    for v in values:
        p.produce(topic, value=v, partition=0,
                  on_delivery=lambda err, msg: out.append(err.code() if err else msg.offset()))
    assert p.flush(15) == 0
    return out


def isr(cluster, topic, broker_id, partition=0):
    return cluster.call(lambda: tuple(sorted(
        cluster.brokers[broker_id].replica_manager.get_partition(topic, partition).isr)))


def registered(cluster):
    return cluster.call(lambda: sorted(int(b) for b in cluster.zk_store.get_children("/brokers/ids")))


def test_link_table():
    t = LinkTable()
    t.cut(0, 1)
    t.cut(2, ZK)
    assert not t.allowed(1, 0) and not t.allowed(ZK, 2) and t.allowed(0, 2) and t.allowed(1, 1)
    assert t.cut_links == [(0, 1), (2, "zk")]
    t.restore(1, 0)
    assert t.allowed(0, 1)
    t.heal()
    assert t.cut_links == []
    with pytest.raises(ValueError):
        t.cut(3, 3)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides=OVERRIDES, zk_tick_time_ms=500) as c:
        yield c


def _leader_and_followers(cluster, topic):
    cluster.create_topic(topic, 1, 3)
    assert produce(cluster, topic, [b"a", b"b"]) == [0, 1]
    cluster.wait_until(lambda: len(cluster.partition_state(topic, 0)["isr"]) == 3, 10)
    leader = cluster.partition_state(topic, 0)["leader"]
    followers = [b for b in range(3) if b != leader]
    return leader, followers


def test_partition_between_leader_and_follower_shrinks_the_isr_and_heal_restores_it(cluster):
    leader, (f1, f2) = _leader_and_followers(cluster, "cut")
    cluster.partition(leader, f1)
    assert produce(cluster, "cut", [b"c"]) == [2]
    cluster.wait_until(lambda: isr(cluster, "cut", leader) == tuple(sorted((leader, f2))), 10,
                       "the cut-off follower stayed in the ISR")
    assert registered(cluster) == [0, 1, 2]          # the store still hears everyone
    cluster.heal()
    cluster.wait_until(lambda: isr(cluster, "cut", leader) == (0, 1, 2), 10, "the follower did not rejoin")


def test_isolating_a_broker_from_the_store_expires_its_session(cluster):
    leader, (f1, f2) = _leader_and_followers(cluster, "zkcut")
    victim = f1 if f1 != cluster.controller_id else f2
    cluster.partition(victim, ZK)
    cluster.wait_until(lambda: victim not in registered(cluster), 10, "the session did not expire")
    # The controller saw the broker go and took it out of the ISR.
    cluster.wait_until(lambda: victim not in cluster.partition_state("zkcut", 0)["isr"], 10)
    old_epoch = cluster.call(lambda: cluster.brokers[victim].broker_epoch)
    cluster.heal()   # it learns its session expired, opens a new one and registers again (a new broker epoch)
    cluster.wait_until(lambda: registered(cluster) == [0, 1, 2], 10, "the broker did not register again")
    assert cluster.call(lambda: cluster.brokers[victim].broker_epoch) > old_epoch
    # The controller treats it as a new broker: LeaderAndIsr, it catches up, and the leader takes it back.
    assert produce(cluster, "zkcut", [b"c"]) == [2]
    cluster.wait_until(lambda: victim in isr(cluster, "zkcut", leader), 10, "it did not rejoin the ISR")


def test_pause_shorter_than_the_session_timeout(cluster):
    leader, (f1, f2) = _leader_and_followers(cluster, "nap")
    follower = f1 if f1 != cluster.controller_id else f2
    cluster.pause(follower)
    assert produce(cluster, "nap", [b"c"]) == [2]
    cluster.wait_until(lambda: follower not in isr(cluster, "nap", leader), 10, "the ISR did not shrink")
    assert cluster.resume(follower) is True          # back within zookeeper.session.timeout.ms
    cluster.wait_until(lambda: follower in isr(cluster, "nap", leader), 10, "the follower did not catch up")
    assert follower in registered(cluster)


def test_a_paused_broker_stops_serving_and_loses_its_session(cluster):
    # A partition led by a broker that is not the controller (pausing the controller: the test below).
    cluster.create_topic("freeze", 3, 3)
    controller = cluster.controller_id
    partition, leader = next((p, s["leader"]) for p in range(3)
                             for s in [cluster.partition_state("freeze", p)] if s["leader"] != controller)
    cluster.pause(leader)
    # Its socket is not read: a client's request times out instead of being refused.
    p = Producer({"bootstrap.servers": cluster.brokers[leader].bootstrap_servers, "acks": "1",
                  "message.timeout.ms": 1500, "log_level": 0})
    out = []
    p.produce("freeze", value=b"x", partition=partition, on_delivery=lambda err, msg: out.append(err))
    p.flush(10)
    assert out and out[0] is not None
    cluster.wait_until(lambda: leader not in registered(cluster), 10, "the paused broker kept its session")
    cluster.wait_until(lambda: cluster.partition_state("freeze", partition)["leader"] not in (-1, leader), 15,
                       "no failover")
    assert cluster.resume(leader) is False           # its session did not survive the pause ...
    cluster.wait_until(lambda: registered(cluster) == [0, 1, 2], 10, "no re-registration")  # ... so a new one
    new_leader = cluster.partition_state("freeze", partition)["leader"]
    cluster.wait_until(lambda: leader in isr(cluster, "freeze", new_leader, partition), 10,
                       "the resumed broker did not rejoin the ISR")
    # It follows now: it no longer believes it leads the partition.
    assert cluster.call(lambda: cluster.brokers[leader].replica_manager.get_partition("freeze", partition)
                        .leader_id) == new_leader


@pytest.mark.parametrize("lose_unflushed, flush_messages, survivors", [
    (False, None, 5),        # kill -9: the page cache survives
    (True, None, 0),         # machine crash: nothing was ever fsync'd (Kafka's default)
    (True, 1, 5),            # ... unless the topic flushes every message
])
def test_kill_and_the_page_cache(lose_unflushed, flush_messages, survivors):
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": False,
                                       "offsets.topic.replication.factor": 1}) as c:
        c.create_topic("pc", 1, 1, {"flush.messages": flush_messages} if flush_messages else None)
        assert produce(c, "pc", [b"%d" % i for i in range(5)]) == list(range(5))
        c.kill(0, lose_unflushed=lose_unflushed)
        c.restart(0)
        c.wait_until(lambda: c.brokers[0].replica_manager.get_partition("pc", 0) is not None, 10)
        assert c.call(lambda: c.brokers[0].replica_manager.get_partition("pc", 0).log.log_end_offset) == survivors


def test_pausing_the_controller_fails_over_and_the_old_one_comes_back_as_a_broker(cluster):
    cluster.create_topic("ctlnap", 3, 3)
    cluster.wait_until(lambda: all(len(cluster.partition_state("ctlnap", p)["isr"]) == 3 for p in range(3)), 10)
    old = cluster.controller_id
    led = [p for p in range(3) if cluster.partition_state("ctlnap", p)["leader"] == old]
    cluster.pause(old)
    # Its session expires after zookeeper.session.timeout.ms; another broker wins /controller, and the
    # paused one (a zombie that still believes it is the controller) no longer counts.
    cluster.wait_until(lambda: cluster.controller_id not in (-1, old), 10, "no controller failover")
    cluster.wait_until(lambda: all(cluster.partition_state("ctlnap", p)["leader"] not in (-1, old) for p in led), 10,
                       "the paused controller's partitions did not move")
    assert cluster.resume(old) is False
    cluster.wait_until(lambda: registered(cluster) == [0, 1, 2], 10, "no re-registration")
    assert cluster.call(lambda: cluster.brokers[old].controller.is_active) is False   # it resigned
    cluster.wait_until(lambda: all(old in cluster.partition_state("ctlnap", p)["isr"] for p in range(3)), 15,
                       "the old controller did not rejoin the ISRs")
