"""Connection quotas over the wire: max.connections.per.ip (and its overrides), max.connections (per broker and per
listener; the inter-broker listener exempt) and max.connection.creation.rate.

Clients connect from other loopback addresses (127.0.0.2, 127.0.0.3, ...: all of 127/8 is this machine) so that
the broker's own controller connection, from 127.0.0.1, never counts against the addresses under test.
"""
from __future__ import annotations

import logging
import socket
import time

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, request_class

from ._raw_wire import Conn, request_frame

ApiVersions = request_class(ApiKey.API_VERSIONS)


def connect(port: int, source: str = "127.0.0.1", timeout: float = 5.0) -> Conn:
    conn = Conn.__new__(Conn)
    conn.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    conn.timeout, conn._buf = timeout, b""
    return conn


def served(conn: Conn, correlation_id: int = 1) -> bool:
    body = conn.call(ApiVersions(client_software_name="quota", client_software_version="1"), 3, correlation_id)
    return body.error_code == 0


def ask(conn: Conn, correlation_id: int = 1) -> None:
    conn.send(request_frame(ApiVersions(client_software_name="quota", client_software_version="1"), 3,
                            correlation_id))


def test_the_connection_over_an_address_limit_is_closed_and_overrides_are_honoured(caplog):
    overrides = {"max.connections.per.ip": 2, "max.connections.per.ip.overrides": "127.0.0.1:100,127.0.0.2:4"}
    caplog.set_level(logging.INFO, logger="kafkalab.network.Acceptor")
    with Cluster(brokers=1, overrides=overrides) as c:
        port = c.broker(0).bound_endpoints[0].port
        default = [connect(port, "127.0.0.3") for _ in range(2)]
        assert all(served(x) for x in default)
        extra = connect(port, "127.0.0.3")
        extra.assert_closed_without_response()
        assert ("Rejected connection from 127.0.0.3, address already has the configured maximum of 2 "
                "connections.") in caplog.text
        overridden = [connect(port, "127.0.0.2") for _ in range(4)]
        assert all(served(x) for x in overridden)
        connect(port, "127.0.0.2").assert_closed_without_response()
        default[0].close()                                      # a slot frees: the address may connect again
        c.wait_until(lambda: c.broker(0).socket_server.connection_quotas.get("127.0.0.3") == 1, timeout=5)
        again = connect(port, "127.0.0.3")
        assert served(again)
        for x in default[1:] + overridden + [again, extra]:
            x.close()


TWO_LISTENERS = {"listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
                 "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
                 "inter.broker.listener.name": "BROKER"}


def test_max_connections_makes_the_acceptor_wait_and_the_inter_broker_listener_is_exempt():
    with Cluster(brokers=1, overrides={**TWO_LISTENERS, "max.connections": 3}) as c:
        server = c.broker(0).socket_server
        quotas = server.connection_quotas
        c.wait_until(lambda: quotas.listener_counts["BROKER"] == 1, timeout=10,
                     message="the controller did not connect")      # the controller's own connection
        client_port, broker_port = server.bound_port("CLIENT"), server.bound_port("BROKER")
        a, b = connect(client_port), connect(client_port)
        assert served(a) and served(b)                                  # 3 connections: the broker is full
        waiting = connect(client_port)
        ask(waiting, 5)
        waiting.assert_open(wait=0.5)                                   # accepted by the kernel, not by the broker
        assert c.call(lambda: quotas.total_count) == 3
        a.close()                                                       # a slot frees: the acceptor goes on
        assert waiting.recv_frame() is not None
        # the inter-broker listener is exempt: accepted over the limit, the least recently used client goes
        inter_broker = connect(broker_port)
        assert served(inter_broker)
        b.assert_closed_without_response()
        assert served(waiting, 6)
        for x in (inter_broker, waiting):
            x.close()


def test_a_listener_limit_applies_to_its_listener_only():
    overrides = {**TWO_LISTENERS, "listener.name.client.max.connections": 1}
    with Cluster(brokers=1, overrides=overrides) as c:
        server = c.broker(0).socket_server
        first = connect(server.bound_port("CLIENT"))
        assert served(first)
        second = connect(server.bound_port("CLIENT"))
        ask(second)
        second.assert_open(wait=0.5)
        others = [connect(server.bound_port("BROKER")) for _ in range(3)]
        assert all(served(x) for x in others)
        first.close()
        assert second.recv_frame() is not None
        for x in others + [second]:
            x.close()


def test_max_connection_creation_rate_delays_accepting():
    """At 1 connection a second, measured over Kafka's quota window (11 samples of 1 s: at least 10 s counted), the
    first ten connections go through at once and each later one waits about a second."""
    with Cluster(brokers=1, overrides={"max.connection.creation.rate": 1}) as c:
        port = c.broker(0).bound_endpoints[0].port
        start = time.monotonic()
        conns = [connect(port, "127.0.0.2", timeout=10) for _ in range(11)]
        for n, x in enumerate(conns):
            ask(x, n)
        answered = []
        for x in conns:
            assert x.recv_frame() is not None
            answered.append(time.monotonic() - start)
        assert answered[4] < 1.0, answered                # the first ones are not held up
        assert answered[-1] >= 1.5, answered              # the last ones were delayed (not today: all at once)
        for x in conns:
            x.close()
