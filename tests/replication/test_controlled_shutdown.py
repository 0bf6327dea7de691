"""Controlled shutdown (ControlledShutdown, key 7): a broker stopped cleanly hands its leaderships over while
it is still registered, so producers see leadership move without an outage; a killed broker's leaderships
move only after its znode is gone. The coordination store's event log gives the order of the two."""
from __future__ import annotations

import threading
import time

import pytest

from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.cluster.cluster import Cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402

pytestmark = pytest.mark.interop

OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}
ControlledShutdown = request_class(ApiKey.CONTROLLED_SHUTDOWN)


def _ready(cluster, topic, partitions=3):
    cluster.create_topic(topic, partitions, 3)
    cluster.wait_until(lambda: all(len(cluster.partition_state(topic, p)["isr"]) == 3 for p in range(partitions)),
                       10, "ISRs did not fill")


def _order(cluster, topic, partition, broker_id):
    """zxids of the first partition-state write after now and of the deletion of ``/brokers/ids/<id>``."""
    state_path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    events = cluster.call(lambda: cluster.zk_store.event_log())
    moved = [e["zxid"] for e in events if e["path"] == state_path and e["event"] == "set"]
    gone = [e["zxid"] for e in events if e["path"] == f"/brokers/ids/{broker_id}" and e["event"].startswith("delete")]
    return moved, gone


def test_a_clean_stop_moves_leadership_before_the_broker_goes():
    with Cluster(brokers=3, overrides=OVERRIDES) as cluster:
        _ready(cluster, "cs")
        leader = cluster.partition_state("cs", 0)["leader"]
        led = [p for p in range(3) if cluster.partition_state("cs", p)["leader"] == leader]
        before = cluster.call(lambda: cluster.zk_store.last_zxid)
        results, stop = [], threading.Event()

        def produce():   # acks=all into a partition led by the broker being stopped
            p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                          "message.timeout.ms": 10000, "log_level": 0})
            while not stop.is_set():
                p.produce("cs", value=b"v", partition=0,
                          on_delivery=lambda err, msg: results.append(err.code() if err else msg.offset()))
                p.poll(0)
                time.sleep(0.005)
            assert p.flush(15) == 0

        t = threading.Thread(target=produce)
        t.start()
        time.sleep(0.5)
        cluster.stop_broker(leader)
        time.sleep(0.5)
        stop.set()
        t.join(30)
        assert cluster.brokers[leader].controlled_shutdown_succeeded is True
        for p in led:
            state = cluster.partition_state("cs", p)
            assert state["leader"] not in (-1, leader) and leader not in state["isr"]
            moved, gone = _order(cluster, "cs", p, leader)
            moved = [z for z in moved if z > before]
            assert moved and gone and moved[0] < gone[-1], "leadership moved only after the broker went"
        assert results and all(isinstance(r, int) and r >= 0 for r in results), "a send failed"
        assert results == sorted(results)   # nothing lost, nothing reordered


def test_a_killed_leader_is_replaced_only_after_its_session_ends():
    with Cluster(brokers=3, overrides=OVERRIDES) as cluster:
        _ready(cluster, "crash", 1)
        leader = cluster.partition_state("crash", 0)["leader"]
        before = cluster.call(lambda: cluster.zk_store.last_zxid)
        cluster.kill(leader)
        cluster.wait_until(lambda: cluster.partition_state("crash", 0)["leader"] not in (-1, leader), 10)
        moved, gone = _order(cluster, "crash", 0, leader)
        assert [z for z in moved if z > before][0] > gone[-1]


def test_controlled_shutdown_is_answered_by_the_controller_only():
    with Cluster(brokers=2, overrides=OVERRIDES) as cluster:
        controller = cluster.controller_id
        other = 1 - controller

        async def ask(broker_id, version=3):
            server = cluster.brokers[broker_id]
            conn = InterBrokerConnection("127.0.0.1", server.bound_endpoints[0].port, client_id="t")
            try:
                return await conn.send(ApiKey.CONTROLLED_SHUTDOWN, version,
                                       ControlledShutdown(broker_id=other, broker_epoch=0))
            finally:
                conn.close()

        assert cluster.run(ask(other)).error_code == ErrorCode.NOT_CONTROLLER
        # An epoch older than the broker's registration: a previous incarnation's request.
        cluster.call(lambda: cluster.brokers[controller].controller.context.broker_epochs.__setitem__(other, 10**9))
        assert cluster.run(ask(controller)).error_code == ErrorCode.STALE_BROKER_EPOCH


def test_an_unreplicated_cluster_stops_without_delay():
    with Cluster(brokers=1, overrides=OVERRIDES) as cluster:
        cluster.create_topic("single", 1, 1)
        started = time.monotonic()
        cluster.stop_broker(0)
        assert cluster.brokers[0].controlled_shutdown_succeeded is True   # the controller asked itself
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_advertised_version_is_answered(version):
    """v0 uses request header v0 (no client id); v0-2 are non-flexible; each gets a proper answer."""
    import socket

    from kafkalab.protocol import decode_response, encode_request, make_request
    with Cluster(brokers=1) as c:
        server = c.brokers[0]
        ep = next(e for e in server.socket_server.bound_endpoints()
                  if e.listener_name == server.config.inter_broker_listener_name)
        cls = request_class(ApiKey.CONTROLLED_SHUTDOWN)
        body = cls(broker_id=7, **({"broker_epoch": -1} if version >= 2 else {}))
        frame = encode_request(make_request(body, api_version=version, correlation_id=5,
                                            client_id="" if version == 0 else "admin"), size_prefix=True)
        with socket.create_connection((ep.host or "127.0.0.1", ep.port), timeout=10) as s:
            s.sendall(frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                chunk = s.recv(65536)
                assert chunk, "the broker closed the connection"
                data += chunk
        reply = decode_response(data[4:], ApiKey.CONTROLLED_SHUTDOWN, version)
        assert reply.header.correlation_id == 5
        assert reply.body.error_code == ErrorCode.BROKER_NOT_AVAILABLE   # no broker 7 in this cluster
