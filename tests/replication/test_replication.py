"""Replication on a three-broker cluster, driven by real clients: the controller's requests on the wire,
followers copying the leader's batches, the high watermark, the ISR shrinking and growing, min.insync.replicas
with errors 19 and timeouts, and leader failover.

Timing is kept short through broker overrides (``replica.lag.time.max.ms`` = 1 s) instead of sleeps.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.zk.paths import TopicPartition as ZkTopicPartition
from kafkalab.cluster.cluster import Cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.interop

UpdateMetadata = request_class(ApiKey.UPDATE_METADATA)

LAG_MS = 1000
OVERRIDES = {"replica.lag.time.max.ms": LAG_MS, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}


def produce(cluster: Cluster, topic: str, values, *, acks="all", timeout: float = 15.0, **extra) -> list:
    """Send ``values`` and return the delivery result of each: the offset, or the KafkaError code."""
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "retries": 0, "linger.ms": 0,
            "message.timeout.ms": 8000, "log_level": 0, **extra}
    p = Producer(conf)
    out = [None] * len(values)

    def report(i):
        return lambda err, msg: out.__setitem__(i, err.code() if err else msg.offset())
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=0, on_delivery=report(i))
    assert p.flush(timeout) == 0
    return out


def consume_all(cluster: Cluster, topic: str, expected: int, timeout: float = 15.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return got


def replica_state_now(cluster: Cluster, topic: str, broker_id: int):
    """(isr, leader epoch, LEO, HW) of the partition as ``broker_id`` sees it (on the cluster loop)."""
    p = cluster.brokers[broker_id].replica_manager.get_partition(topic, 0)
    return None if p is None else (tuple(p.isr), p.leader_epoch, p.log.log_end_offset, p.log.high_watermark)


def replica_state(cluster: Cluster, topic: str, broker_id: int):
    return cluster.call(replica_state_now, cluster, topic, broker_id)


def leader_of(cluster: Cluster, topic: str) -> int:
    return cluster.partition_state(topic, 0)["leader"]


@pytest.fixture
def cluster():
    with Cluster(brokers=3, overrides=OVERRIDES) as c:
        yield c


def test_acks_all_replicates_verbatim_and_the_high_watermark_advances(cluster):
    cluster.create_topic("rep", 1, 3, {"min.insync.replicas": 2})
    offsets = produce(cluster, "rep", [b"value-%d" % i for i in range(50)])
    assert offsets == list(range(50))
    # Every replica has every record, and (after the next follower fetch) knows the high watermark.
    cluster.wait_until(lambda: all(
        (lambda p: p is not None and p.log.log_end_offset == 50 and p.log.high_watermark == 50)(
            b.replica_manager.get_partition("rep", 0)) for b in cluster.brokers.values()), 10)
    state = cluster.partition_state("rep", 0)
    assert sorted(state["isr"]) == [0, 1, 2]
    assert state["logs"] == {b: {"log_end_offset": 50, "high_watermark": 50} for b in range(3)}
    # Followers append the leader's batches as they are: the segment files are byte-identical.
    files = [Path(cluster.base_dir) / f"broker-{b}" / "rep-0" / "00000000000000000000.log" for b in range(3)]
    data = [f.read_bytes() for f in files]
    assert data[0] and data[0] == data[1] == data[2]
    assert consume_all(cluster, "rep", 50) == [b"value-%d" % i for i in range(50)]


def test_controller_requests_travel_over_the_inter_broker_listener(cluster):
    cluster.create_topic("wire", 1, 3)
    controller = cluster.controller_id
    for broker_id, broker in cluster.brokers.items():
        records = [r for r in broker.channel.request_log.records
                   if r.api_key in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA)]
        names = {r.api_name for r in records}
        assert names == {"LeaderAndIsr", "UpdateMetadata"}, (broker_id, names)
        # clientId = the controller's broker id; one connection per broker with its own correlation ids from 0.
        assert {r.client_id for r in records} == {str(controller)}
        assert {r.listener_name for r in records} == {"PLAINTEXT"}
        assert {r.connection_id for r in records} == {records[0].connection_id}
        assert [r.correlation_id for r in records] == list(range(len(records)))
    # Followers fetch with their own client id: broker-<id>-fetcher-0.
    leader = leader_of(cluster, "wire")
    produce(cluster, "wire", [b"x"])
    time.sleep(0.5)
    fetchers = {r.client_id for r in cluster.broker(leader).channel.request_log.records if r.api_key == ApiKey.FETCH}
    assert {f"broker-{b}-fetcher-0" for b in range(3) if b != leader} <= fetchers


def test_controller_requests_are_fenced_and_authorized_by_principal_not_listener():
    overrides = {**OVERRIDES, "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
                 "inter.broker.listener.name": "PLAINTEXT"}
    with Cluster(brokers=1, overrides=overrides) as c:
        broker = c.broker(0)
        body = UpdateMetadata(controller_id=7, controller_epoch=0, broker_epoch=-1, topic_states=(), live_brokers=())
        inter, client = broker.bound_endpoints
        # A zombie controller (epoch 0 < the current epoch) is fenced.
        assert c.run(_send_raw(inter, body, 7)).error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        # Kafka guards them with CLUSTER_ACTION on the principal, not the listener: without an authorizer a
        # client listener serves them too (tests/broker/test_acls.py has the authorizer's refusal).
        assert c.run(_send_raw(client, body, 7)).error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        # ... and a ZooKeeper-era broker advertises the three APIs.
        from kafkalab.server.apis import enabled_apis
        assert {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA} <= set(enabled_apis())


async def _send_raw(ep, body, version):
    conn = InterBrokerConnection(ep.host, ep.port, client_id="intruder")
    try:
        return await conn.send(body.API_KEY, version, body)
    finally:
        conn.close()


def test_isr_shrinks_after_replica_lag_and_min_insync_replicas_guards_acks_all(cluster):
    cluster.create_topic("isr", 1, 3, {"min.insync.replicas": 2})
    assert produce(cluster, "isr", [b"a", b"b"]) == [0, 1]
    leader = leader_of(cluster, "isr")
    followers = [b for b in range(3) if b != leader]
    stuck = next((b for b in followers if b != cluster.controller_id), followers[0])
    other = next(b for b in followers if b != stuck)
    # A follower stops fetching but its session lingers: only the leader notices, by replica.lag.time.max.ms.
    cluster.kill(stuck, expire_session=False)
    assert produce(cluster, "isr", [b"c"], acks=1) == [2]     # the leader now has data the follower lacks
    t0 = time.monotonic()
    cluster.wait_until(lambda: stuck not in cluster.brokers[leader].replica_manager.get_partition("isr", 0).isr,
                       10, "the ISR did not shrink")
    waited = time.monotonic() - t0
    assert waited >= (LAG_MS - 300) / 1000.0, waited
    # The leader wrote the new ISR to the state znode; the controller told every live broker (UpdateMetadata).
    zk_state = cluster.call(lambda: cluster.brokers[leader].zk.get_topic_partition_state(ZkTopicPartition("isr", 0)))
    assert stuck not in zk_state.leader_and_isr.isr
    cluster.wait_until(lambda: all(stuck not in b.metadata_cache.partition_state("isr", 0).isr
                                   for i, b in cluster.brokers.items() if b.is_running), 10)
    # Two in-sync replicas satisfy min.insync.replicas=2.
    assert produce(cluster, "isr", [b"d"]) == [3]
    # With the leader alone: NOT_ENOUGH_REPLICAS (19) before anything is appended; acks=1 still works.
    cluster.kill(other)
    cluster.wait_until(lambda: cluster.brokers[leader].replica_manager.get_partition("isr", 0).isr == (leader,), 10)
    leo = replica_state(cluster, "isr", leader)[2]
    assert produce(cluster, "isr", [b"e"]) == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert replica_state(cluster, "isr", leader)[2] == leo
    assert produce(cluster, "isr", [b"f"], acks=1) == [leo]
    # The followers come back, truncate by leader epoch, catch up and rejoin the ISR.
    cluster.restart(stuck)
    cluster.restart(other)
    cluster.wait_until(lambda: sorted(cluster.brokers[leader].replica_manager.get_partition("isr", 0).isr) ==
                       [0, 1, 2], 15, "the followers did not rejoin the ISR")
    end = replica_state(cluster, "isr", leader)[2]
    cluster.wait_until(lambda: all(replica_state_now(cluster, "isr", b)[2] == end for b in range(3)), 10)
    assert produce(cluster, "isr", [b"g"]) == [end]


def test_acks_all_waits_in_the_produce_purgatory_and_times_out(cluster):
    cluster.create_topic("slow", 1, 3)     # min.insync.replicas=1: the append is accepted ...
    leader = leader_of(cluster, "slow")
    for b in range(3):
        if b != leader:
            cluster.kill(b, expire_session=False)   # ... but silent followers stay in the ISR for LAG_MS
    before = cluster.broker(leader).metrics()
    result = produce(cluster, "slow", [b"late"], **{"request.timeout.ms": 300})
    # The DelayedProduce expired (300 ms < replica.lag.time.max.ms): REQUEST_TIMED_OUT (7), from the broker.
    assert result == [KafkaError.REQUEST_TIMED_OUT]
    after = cluster.broker(leader).metrics()
    key = "ExpiresPerSec,delayedOperation=Produce"
    assert after[key] == before[key] + 1
    assert after[key + ",partition=0,topic=slow"] == 1
    assert after["NumDelayedOperations,delayedOperation=Produce"] == 0
    # The record was appended on the leader all the same (a timeout is not a failure: "indeterminate").
    assert replica_state(cluster, "slow", leader)[2] == 1


def test_leader_failover_elects_an_isr_member_and_clients_continue(cluster):
    cluster.create_topic("fail", 1, 3, {"min.insync.replicas": 2})
    assert produce(cluster, "fail", [b"%d" % i for i in range(20)]) == list(range(20))
    old = cluster.partition_state("fail", 0)
    cluster.kill(old["leader"])
    cluster.wait_until(lambda: cluster.controller_id >= 0 and cluster.partition_state("fail", 0)["leader"]
                       not in (-1, old["leader"]), 15, "no new leader")
    new = cluster.partition_state("fail", 0)
    assert new["leader"] in old["isr"] and new["leader_epoch"] > old["leader_epoch"]
    assert old["leader"] not in new["isr"]
    assert produce(cluster, "fail", [b"%d" % i for i in range(20, 30)], retries=5) == list(range(20, 30))
    assert consume_all(cluster, "fail", 30) == [b"%d" % i for i in range(30)]
    # Every broker's own metadata cache (filled by UpdateMetadata) names the new leader.
    cluster.wait_until(lambda: all(b.metadata_cache.partition_state("fail", 0).leader == new["leader"]
                                   for b in cluster.brokers.values() if b.is_running), 10)


def test_kcat_lists_three_brokers_and_the_harness_leaders_and_isr(cluster):
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed")
    cluster.create_topic("meta", 3, 3)
    cluster.wait_until(lambda: all(len(b.metadata_cache.partition_state("meta", p).isr) == 3
                                   for b in cluster.brokers.values() for p in range(3)), 10)
    out = subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-L", "-J", "-m", "5"], capture_output=True,
                         timeout=20, check=True).stdout
    md = json.loads(out)
    assert md["controllerid"] == cluster.controller_id
    assert sorted(b["id"] for b in md["brokers"]) == [0, 1, 2]
    [t] = [t for t in md["topics"] if t["topic"] == "meta"]
    for p in t["partitions"]:
        state = cluster.partition_state("meta", p["partition"])
        assert p["leader"] == state["leader"]
        assert [r["id"] for r in p["replicas"]] == state["replicas"]
        assert sorted(r["id"] for r in p["isrs"]) == sorted(state["isr"])


def test_large_batches_replicate_verbatim_and_in_order(cluster):
    """Produce requests of several 64 KiB+ batches and the followers' large fetch responses (received straight
    into their own buffers, decoded zero-copy): the three segment files are byte-identical, every record in order."""
    batch_bytes = 64 * 1024
    cluster.create_topic("big", 1, 3, {"min.insync.replicas": 2})
    values = [b"%06d" % i + b"x" * 4090 for i in range(400)]       # 1.6 MB: several batches over the threshold
    offsets = produce(cluster, "big", values, **{"linger.ms": 20, "batch.size": 4 * batch_bytes})
    assert offsets == list(range(400))
    cluster.wait_until(lambda: all(
        (lambda p: p is not None and p.log.log_end_offset == 400 and p.log.high_watermark == 400)(
            b.replica_manager.get_partition("big", 0)) for b in cluster.brokers.values()), 15)
    files = [Path(cluster.base_dir) / f"broker-{b}" / "big-0" / "00000000000000000000.log" for b in range(3)]
    data = [f.read_bytes() for f in files]
    assert len(data[0]) > 2 * batch_bytes and data[0] == data[1] == data[2]
    assert consume_all(cluster, "big", 400) == values


def test_high_watermarks_are_checkpointed_periodically():
    """``replica.high.watermark.checkpoint.interval.ms``: every broker rewrites replication-offset-checkpoint
    on its own, not only at a clean shutdown."""
    with Cluster(brokers=2, overrides={**OVERRIDES, "replica.high.watermark.checkpoint.interval.ms": 200}) as c:
        c.create_topic("hw", 1, 2, {"min.insync.replicas": 1})
        assert produce(c, "hw", [b"a", b"b", b"c"]) == [0, 1, 2]

        def checkpointed(broker_id):
            path = Path(c.base_dir) / f"broker-{broker_id}" / "replication-offset-checkpoint"
            return path.exists() and "hw 0 3" in path.read_text().splitlines()
        c.wait_until(lambda: checkpointed(0) and checkpointed(1), 10, "no periodic high watermark checkpoint")
