"""control.plane.listener.name (KIP-291): the controller's requests on a listener of their own.

A broker with ``listeners=PLAINTEXT://...,CONTROL://...`` and ``control.plane.listener.name=CONTROL`` serves
CONTROL with its own socket, request channel (20 deep) and request handler; every controller connects its
channel to each broker's CONTROL endpoint from the registration in the coordination store. LeaderAndIsr,
UpdateMetadata and StopReplica arrive there; replica fetchers and ControlledShutdown stay on the inter-broker
listener, as in Kafka. Metadata asked on CONTROL lists the brokers' CONTROL endpoints.
"""
from __future__ import annotations

import re

import pytest

from kafkalab import Cluster
from kafkalab.clients import Admin, Producer
from kafkalab.common.config import ConfigException
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, request_class
from kafkalab.security.jaas import jaas_line
from kafkalab.server.broker import CONTROL_PLANE_QUEUE_SIZE

Metadata = request_class(ApiKey.METADATA)

CONTROL_PLANE = {"listeners": "PLAINTEXT://127.0.0.1:0,CONTROL://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:PLAINTEXT",
                 "control.plane.listener.name": "CONTROL", "auto.create.topics.enable": False}
CONTROLLER_APIS = {"LeaderAndIsr", "UpdateMetadata", "StopReplica"}


def _port(broker, listener: str) -> int:
    return next(ep.port for ep in broker.bound_endpoints if ep.listener_name == listener)


def _records(broker, names):
    return [r for r in broker.channel.request_log.records if r.api_name in names]


async def _metadata(host: str, port: int):
    conn = InterBrokerConnection(host, port, client_id="cp-test")
    try:
        return await conn.send(ApiKey.METADATA, 12, Metadata(topics=None, allow_auto_topic_creation=False))
    finally:
        conn.close()


def test_one_broker_serves_its_controller_on_the_control_plane_listener():
    with Cluster(brokers=1, overrides=CONTROL_PLANE) as c:
        broker = c.broker(0)
        plain, control = _port(broker, "PLAINTEXT"), _port(broker, "CONTROL")
        assert plain != control and set(broker.socket_server.listeners) == {"PLAINTEXT", "CONTROL"}
        # its own request channel (Kafka's 20) and one request handler; clients bootstrap on the data plane only
        assert broker.control_plane_channel is not broker.channel
        assert broker.control_plane_channel._queue.maxsize == CONTROL_PLANE_QUEUE_SIZE == 20
        assert broker.control_plane_handlers.num_threads == 1
        assert broker.bootstrap_servers == f"127.0.0.1:{plain}"
        # the controller's channel to this broker goes to CONTROL, found in the broker's registration
        assert [(ch.host, ch.port) for ch in broker.controller.channel.brokers.values()] == [("127.0.0.1", control)]

        c.create_topic("cp", 2, 1)
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.delete_topics(["cp"])
        c.wait_until(lambda: _records(broker, {"StopReplica"}), 10, "no StopReplica")
        controller = _records(broker, CONTROLLER_APIS)
        assert {r.api_name for r in controller} == CONTROLLER_APIS
        assert {r.listener_name for r in controller} == {"CONTROL"}
        assert {r.client_id for r in controller} == {"0"}
        # ... counted by the control plane's channel, not the data plane's (the request log is shared)
        assert {s["api_name"] for s in broker.control_plane_channel.metrics.snapshot()} >= CONTROLLER_APIS
        assert not {s["api_name"] for s in broker.channel.metrics.snapshot()} & CONTROLLER_APIS
        assert {r.listener_name for r in _records(broker, {"CreateTopics", "DeleteTopics"})} == {"PLAINTEXT"}

        # Metadata answers with the endpoints of the listener it came in on, the control plane included
        on_plain = c.run(_metadata("127.0.0.1", plain))
        on_control = c.run(_metadata("127.0.0.1", control))
        assert [(b.node_id, b.port) for b in on_plain.brokers] == [(0, plain)]
        assert [(b.node_id, b.port) for b in on_control.brokers] == [(0, control)]
        assert on_control.controller_id == 0


def test_controller_requests_are_served_while_the_data_plane_handlers_are_stuck():
    """The point of KIP-291: with every data-plane request handler gone, the controller's LeaderAndIsr still
    reaches the broker through the control plane's own handler, and the new partition gets its leader."""
    with Cluster(brokers=1, overrides=CONTROL_PLANE) as c:
        broker = c.broker(0)
        c.run(broker.handlers.shutdown())          # nothing serves the data plane's request queue any more
        try:
            c.call(broker.admin.create_topic, "while-stuck", 1, 1, None, {})
            c.wait_until(lambda: broker.replica_manager.get_partition("while-stuck", 0) is not None
                         and broker.metadata_cache.partition_state("while-stuck", 0) is not None, 10,
                         "LeaderAndIsr/UpdateMetadata did not get through")
        finally:
            c.call(broker.handlers.start)
        with Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"}) as p:
            assert p.send("while-stuck", b"v").result(10).offset == 0


def test_three_brokers_controller_channels_use_the_control_plane_and_replication_stays_inter_broker():
    overrides = {**CONTROL_PLANE, "replica.fetch.wait.max.ms": 100, "offsets.topic.replication.factor": 1,
                 "controlled.shutdown.retry.backoff.ms": 100}
    with Cluster(brokers=3, overrides=overrides) as c:
        c.create_topic("rep", 1, 3)
        with Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"}) as p:
            assert p.send("rep", b"v").result(10).offset == 0
        cid = c.controller_id
        control_ports = {b: _port(s, "CONTROL") for b, s in c.brokers.items()}
        channels = c.broker(cid).controller.channel.brokers
        assert {b: ch.port for b, ch in channels.items()} == control_ports
        for broker in c.brokers.values():
            controller = _records(broker, {"LeaderAndIsr", "UpdateMetadata"})
            assert {r.listener_name for r in controller} == {"CONTROL"}
            assert {r.client_id for r in controller} == {str(cid)}
        fetches = [r for b in c.brokers.values() for r in b.channel.request_log.records
                   if r.api_name == "Fetch" and "fetcher" in (r.client_id or "")]
        assert fetches and {r.listener_name for r in fetches} == {"PLAINTEXT"}

        # ControlledShutdown goes to the controller's inter-broker endpoint (KafkaServer.controlledShutdown)
        leaving = next(b for b in c.brokers if b != cid)
        c.stop_broker(leaving, controlled=True)
        shutdowns = _records(c.broker(cid), {"ControlledShutdown"})
        assert shutdowns and {r.listener_name for r in shutdowns} == {"PLAINTEXT"}

        # a new controller connects to the control plane too
        c.kill(cid)
        c.wait_until(lambda: c.controller_id not in (-1, cid), 15, "no new controller")
        new = c.controller_id
        c.wait_until(lambda: set(c.broker(new).controller.channel.brokers) == {new}, 10)
        assert c.broker(new).controller.channel.brokers[new].port == control_ports[new]


def test_a_sasl_control_plane_listener_is_logged_into_by_the_controller():
    login = jaas_line("PLAIN", "controller", "controller-secret", controller="controller-secret")
    overrides = {**CONTROL_PLANE, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:SASL_PLAINTEXT",
                 "listener.name.control.sasl.enabled.mechanisms": "PLAIN",
                 "sasl.mechanism.inter.broker.protocol": "PLAIN",
                 "listener.name.control.plain.sasl.jaas.config": login}
    with Cluster(brokers=1, overrides=overrides) as c:
        c.create_topic("sasl-cp", 1, 1)
        controller = _records(c.broker(0), {"LeaderAndIsr", "UpdateMetadata"})
        assert {(r.listener_name, r.principal) for r in controller} == {("CONTROL", "User:controller")}


@pytest.mark.parametrize("extra, message", [
    ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
     "sasl.mechanism.inter.broker.protocol (SCRAM-SHA-256) must be included in the sasl.enabled.mechanisms of "
     "listener CONTROL"),
    ({"listener.name.control.plain.sasl.jaas.config": jaas_line("PLAIN", "", "", controller="x")},
     "The JAAS configuration of listener CONTROL for PLAIN needs username and password"),
])
def test_a_sasl_control_plane_listener_the_controller_cannot_log_into_is_refused_at_start_up(extra, message):
    overrides = {**CONTROL_PLANE, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:SASL_PLAINTEXT",
                 "listener.name.control.sasl.enabled.mechanisms": "PLAIN",
                 "sasl.mechanism.inter.broker.protocol": "PLAIN",
                 "listener.name.control.plain.sasl.jaas.config": jaas_line("PLAIN", "c", "s"), **extra}
    with pytest.raises(ConfigException, match=re.escape(message)):
        Cluster(brokers=1, overrides=overrides).start()
