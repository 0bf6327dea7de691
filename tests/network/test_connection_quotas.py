"""ConnectionQuotas and its configuration, without sockets: counting, limits, the creation-rate arithmetic (Kafka's
Rate over 11 one-second samples), the overrides format and the start-up refusals."""
from __future__ import annotations

import pytest

from kafkalab.common.config import ConfigException
from kafkalab.common.time import MockTime
from kafkalab.network.connection_quotas import (ConnectionQuotas, RateSensor, TooManyConnectionsException,
                                                parse_max_connections_per_ip_overrides)
from kafkalab.server.config import KafkaConfig

MAX = 2147483647


def quotas(listeners=("PLAINTEXT",), inter_broker="PLAINTEXT", **kw) -> ConnectionQuotas:
    args = dict(max_connections=MAX, max_connections_per_ip=MAX, per_ip_overrides={},
                max_connection_creation_rate=MAX, listener_limits={name: (MAX, MAX) for name in listeners},
                inter_broker_listener=inter_broker, time=MockTime(), resolve=lambda host: host)
    args.update(kw)
    return ConnectionQuotas(**args)


def test_the_connection_over_the_per_ip_limit_is_refused_and_overrides_win():
    q = quotas(max_connections_per_ip=2, per_ip_overrides={"10.0.0.9": 3})
    q.inc_counts("PLAINTEXT", "10.0.0.1")
    q.inc_counts("PLAINTEXT", "10.0.0.1")
    with pytest.raises(TooManyConnectionsException, match=r"Too many connections from 10.0.0.1 \(maximum = 2\)"):
        q.inc_counts("PLAINTEXT", "10.0.0.1")
    assert q.get("10.0.0.1") == 3          # counted until the acceptor closes it, as in Kafka
    q.dec("PLAINTEXT", "10.0.0.1")
    for _ in range(3):
        q.inc_counts("PLAINTEXT", "10.0.0.9")
    with pytest.raises(TooManyConnectionsException):
        q.inc_counts("PLAINTEXT", "10.0.0.9")


def test_the_inter_broker_listener_is_protected_only_beside_other_listeners():
    single = quotas(max_connections=1)
    single.inc_counts("PLAINTEXT", "h")
    assert not single.protected_listener("PLAINTEXT") and not single.connection_slot_available("PLAINTEXT")
    q = quotas(listeners=("CLIENT", "BROKER"), inter_broker="BROKER", max_connections=1)
    q.inc_counts("CLIENT", "h")
    assert not q.connection_slot_available("CLIENT") and q.connection_slot_available("BROKER")
    q.inc_counts("BROKER", "h")
    assert q.max_connections_exceeded("CLIENT") and not q.max_connections_exceeded("BROKER")


def test_listener_limits_apply_to_their_listener():
    q = quotas(listeners=("CLIENT", "BROKER"), inter_broker="BROKER",
               listener_limits={"CLIENT": (1, MAX), "BROKER": (MAX, MAX)})
    q.inc_counts("CLIENT", "h")
    assert not q.connection_slot_available("CLIENT") and q.connection_slot_available("BROKER")
    q.dec("CLIENT", "h")
    assert q.connection_slot_available("CLIENT")


def test_the_creation_rate_counts_at_least_ten_seconds():
    rate = RateSensor(1)
    assert [rate.record(1, 0) for _ in range(10)] == [0] * 10        # 10 in 10 s: exactly the quota
    assert rate.record(1, 0) == 1000                                  # 1.1/s: (1.1 - 1) / 1 * 10 s
    assert RateSensor(MAX).record(1, 0) == 0


def test_the_throttle_is_capped_at_one_window_and_the_inter_broker_listener_skips_the_broker_rate():
    q = quotas(listeners=("CLIENT", "BROKER"), inter_broker="BROKER", max_connection_creation_rate=1)
    for _ in range(10):
        assert q.record_connection_and_get_throttle_ms("CLIENT", 0) == 0
    assert q.record_connection_and_get_throttle_ms("CLIENT", 0) == 1000
    for _ in range(30):
        assert q.record_connection_and_get_throttle_ms("BROKER", 0) == 0   # listener rate unlimited


def test_overrides_are_parsed_as_kafka_parses_them():
    assert parse_max_connections_per_ip_overrides("hostName:100, 127.0.0.1:200") == {"hostName": 100,
                                                                                     "127.0.0.1": 200}
    assert parse_max_connections_per_ip_overrides("::1:5") == {"::1": 5}    # the last ':' splits
    assert parse_max_connections_per_ip_overrides("") == {}
    with pytest.raises(ConfigException, match="max.connections.per.ip.overrides contains invalid addresses : a b"):
        parse_max_connections_per_ip_overrides("a b:1")
    with pytest.raises(ConfigException, match="Error parsing configuration property "
                                              "'max.connections.per.ip.overrides'"):
        parse_max_connections_per_ip_overrides("nocount")
    with pytest.raises(ConfigException, match='For input string: "many"'):
        parse_max_connections_per_ip_overrides("h:many")


@pytest.mark.parametrize("props, message", [
    ({"max.connections.per.ip": "0"}, "requirement failed: max.connections.per.ip can be set to zero only if "
                                      "max.connections.per.ip.overrides property is set."),
    ({"max.connections": "-1"}, "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ({"max.connection.creation.rate": "-5"},
     "Invalid value -5 for configuration max.connection.creation.rate: Value must be at least 0"),
    ({"listener.name.plaintext.max.connections": "-1"},
     "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ({"max.connections.per.ip.overrides": "bad host:3"},
     "max.connections.per.ip.overrides contains invalid addresses : bad host"),
])
def test_bad_connection_limits_refuse_to_start(props, message):
    with pytest.raises(ConfigException) as e:
        KafkaConfig(props)
    assert message in str(e.value)


def test_listener_overrides_fall_back_to_the_broker_value():
    c = KafkaConfig({"listeners": "CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093",
                     "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
                     "inter.broker.listener.name": "BROKER", "max.connections": "50",
                     "listener.name.client.max.connections": "10", "max.connections.per.ip": "0",
                     "max.connections.per.ip.overrides": "127.0.0.1:5"})
    assert c.listener_value("CLIENT", "max.connections") == 10
    assert c.listener_value("BROKER", "max.connections") == 50
    assert c.max_connections_per_ip_overrides == {"127.0.0.1": 5}
