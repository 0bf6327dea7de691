"""A zombie controller fenced by the controller epoch.

The controller (broker C) is paused (``kill -STOP``) long enough for its session to expire: ``/controller``
vanishes and another broker wins it with epoch + 1, moves leadership of C's partition and tells every broker.
C then resumes, still holding its old picture of the cluster and its old epoch, and acts on it: it sends
LeaderAndIsr ("C leads fenced-0 again, with a higher leader epoch") and UpdateMetadata to every broker, over
the inter-broker listener with its broker id as ``clientId``, as its channel would. Every broker answers
STALE_CONTROLLER_EPOCH and keeps its state: the leader, leader epoch and ISR of its replica, and its metadata
cache (leader, controller id and epoch). That includes a broker that hosts no replica at all and so only ever
heard from the new controller through UpdateMetadata (Kafka's broker takes the controller epoch from both).
"""
from __future__ import annotations

import asyncio
import copy


from kafkalab.controller.channel import ControllerBrokerRequestBatch
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.cluster import Cluster
from kafkalab.zk.paths import LeaderAndIsr, LeaderIsrAndControllerEpoch

OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}
TP = ("fenced", 0)


def _broker_view(cluster, broker_id):
    """What ``broker_id`` believes: leader and leader epoch of its replica of fenced-0 (or None) and of its
    metadata cache, and the controller. (Not the ISR: the resumed broker's fetcher may legitimately rejoin it.)"""
    def read():
        b = cluster.brokers[broker_id]
        p = b.replica_manager.get_partition(*TP)
        md = b.metadata_cache.partition_state(*TP)
        return {"replica": None if p is None else (p.leader_id, p.leader_epoch),
                "metadata": None if md is None else (md.leader, md.leader_epoch),
                "controller": (b.metadata_cache.controller_id, b.metadata_cache.controller_epoch),
                "controller_epoch": b.replica_manager.controller_epoch}
    return cluster.call(read)


def test_zombie_controller_is_fenced_by_the_controller_epoch():
    with Cluster(brokers=3, overrides=OVERRIDES, zk_tick_time_ms=500) as cluster:
        zombie = cluster.controller_id
        x, y = (zombie + 1) % 3, (zombie + 2) % 3            # y hosts no replica at all
        cluster.call(cluster.brokers[zombie].admin.create_topic, "fenced", -1, -1, {0: [zombie, x]}, {})
        cluster.wait_until(lambda: all(b.metadata_cache.partition_count("fenced") == 1 and
                                       b.metadata_cache.partition_state(*TP).leader == zombie
                                       for b in cluster.brokers.values()), 10, "fenced-0 did not come online")
        old_epoch = cluster.call(lambda: cluster.brokers[zombie].controller.context.epoch)
        stale_view = cluster.call(lambda: copy.deepcopy(cluster.brokers[zombie].controller.context))

        cluster.pause(zombie)
        def new_controller():
            return next((b for b in (x, y) if cluster.brokers[b].controller.is_active and
                         cluster.brokers[b].controller.context.epoch > old_epoch), None)
        cluster.wait_until(lambda: new_controller() is not None, 15, "no broker took over /controller")
        winner = new_controller()
        new_epoch = cluster.call(lambda: cluster.brokers[winner].controller.context.epoch)
        assert new_epoch == old_epoch + 1
        cluster.wait_until(lambda: all(cluster.brokers[b].metadata_cache.partition_state(*TP).leader == x
                                       for b in (x, y)), 15, "leadership did not move to the ISR member")
        cluster.resume(zombie)       # its session expired while it was frozen (re-registration may follow)
        cluster.wait_until(lambda: all(cluster.brokers[b].metadata_cache.controller_epoch == new_epoch
                                       for b in range(3)), 15, "the brokers did not hear from the new controller")
        before = {b: _broker_view(cluster, b) for b in range(3)}
        assert before[x]["metadata"][0] == x and before[y]["replica"] is None

        # The zombie acts on its stale view: "I lead fenced-0 again (leader epoch + 5), replicas everywhere".
        lai = stale_view.partition_states[TP].leader_and_isr
        stale_view.partition_states[TP] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(zombie, lai.leader_epoch + 5, (zombie, x, y)), old_epoch)
        stale_view.assignments[TP] = (zombie, x, y)
        batch = ControllerBrokerRequestBatch(zombie, stale_view)
        batch.add_leader_and_isr([zombie, x, y], TP)
        requests = batch.build(old_epoch, {})
        assert {(b, k) for b, k, _, _ in requests} == {(b, k) for b in range(3)
                                                       for k in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA)}
        endpoints = {b: cluster.brokers[b].bound_endpoints[0] for b in range(3)}

        async def send_all():
            out = []
            for b, api_key, version, body in requests:
                conn = InterBrokerConnection(endpoints[b].host, endpoints[b].port, client_id=str(zombie))
                try:
                    out.append((b, api_key, (await conn.send(api_key, version, body)).error_code))
                finally:
                    conn.close()
            return out
        sent = cluster.run(send_all())
        assert sent == [(b, k, ErrorCode.STALE_CONTROLLER_EPOCH) for b, k, _, _ in requests], sent

        # Each broker logged the zombie's requests (clientId = its broker id) and changed nothing.
        for b in range(3):
            cluster.wait_until(lambda b=b: {r.api_key for r in cluster.brokers[b].channel.request_log.records
                                            if r.client_id == str(zombie)} >= {ApiKey.LEADER_AND_ISR,
                                                                               ApiKey.UPDATE_METADATA}, 5)
        asyncio.run(asyncio.sleep(0.2))
        after = {b: _broker_view(cluster, b) for b in range(3)}
        assert after == before
        assert cluster.call(lambda: cluster.brokers[y].replica_manager.get_partition(*TP)) is None
