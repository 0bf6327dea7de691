"""Listeners: ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` parsed as Kafka's
``CoreUtils.listenerListToEndPoints`` and ``EndPoint.createEndPoint`` parse them."""
from __future__ import annotations

import pytest

from kafkalab.common.config import ConfigException
from kafkalab.network.endpoint import (DEFAULT_SECURITY_PROTOCOL_MAP, EndPoint, parse_listeners,
                                       parse_protocol_map)


def test_one_plaintext_listener():
    [ep] = parse_listeners("PLAINTEXT://127.0.0.1:9092")
    assert ep == EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")
    assert str(ep) == ep.connection_string == "PLAINTEXT://127.0.0.1:9092"


def test_every_default_protocol_is_its_own_listener_name():
    eps = parse_listeners("PLAINTEXT://a:1,SSL://a:2,SASL_PLAINTEXT://a:3,SASL_SSL://a:4")
    assert [(e.listener_name, e.security_protocol) for e in eps] == [(p, p) for p in DEFAULT_SECURITY_PROTOCOL_MAP]


def test_empty_host_means_every_interface_and_whitespace_is_ignored():
    eps = parse_listeners(" PLAINTEXT://:9092 , SSL://0.0.0.0:9093 ,")
    assert [(e.host, e.port) for e in eps] == [("", 9092), ("0.0.0.0", 9093)]


def test_ipv6_host_loses_its_brackets():
    [ep] = parse_listeners("PLAINTEXT://[::1]:9092")
    assert (ep.host, ep.port) == ("::1", 9092)


def test_listener_names_are_case_insensitive_like_listener_name_normalised():
    [ep] = parse_listeners("plaintext://h:1")
    assert ep.listener_name == "PLAINTEXT"


def test_custom_listener_names_take_their_protocol_from_the_map():
    pm = parse_protocol_map("CLIENT:SASL_SSL, broker:plaintext")
    assert pm == {"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}
    eps = parse_listeners("CLIENT://0.0.0.0:9092,BROKER://10.0.0.5:9093", pm)
    assert [(e.listener_name, e.security_protocol) for e in eps] == [("CLIENT", "SASL_SSL"), ("BROKER", "PLAINTEXT")]


def test_listener_without_a_security_protocol_is_rejected():
    with pytest.raises(ConfigException, match="No security protocol defined for listener CLIENT"):
        parse_listeners("CLIENT://h:9092")


@pytest.mark.parametrize("text", ["localhost:9092", "PLAINTEXT://h", "PLAINTEXT://h:port", "PLAINTEXT//h:1",
                                  "://h:1"])
def test_unparseable_listener(text):
    with pytest.raises(ConfigException, match="Unable to parse .* to a broker endpoint"):
        parse_listeners(text)


def test_duplicate_names_are_rejected():
    with pytest.raises(ConfigException, match="Each listener must have a different name, listeners: "):
        parse_listeners("PLAINTEXT://a:1,PLAINTEXT://b:2")


def test_duplicate_ports_are_rejected_for_listeners_but_not_for_advertised_listeners():
    text = "PLAINTEXT://a:9092,SSL://b:9092"
    with pytest.raises(ConfigException, match="Each listener must have a different port, listeners: "):
        parse_listeners(text)
    with pytest.raises(ConfigException, match="advertised.listeners: "):
        parse_listeners(text, config_name="advertised.listeners")
    assert len(parse_listeners(text, require_distinct_ports=False)) == 2


def test_port_zero_may_repeat():
    """Port 0 ("any free port", used by tests) is left out of the distinct-port check, as in Kafka."""
    assert [e.port for e in parse_listeners("PLAINTEXT://a:0,SSL://a:0")] == [0, 0]


def test_same_port_on_an_ipv4_and_an_ipv6_address_is_allowed():
    """Kafka allows two listeners on one port when one binds an IPv4 address and the other an IPv6 one (KIP-797);
    any other repeat of a port is refused."""
    eps = parse_listeners("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092")
    assert [e.port for e in eps] == [9092, 9092]
    with pytest.raises(ConfigException, match="one needs to be IPv4 and the other IPv6"):
        parse_listeners("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092")
    with pytest.raises(ConfigException, match="different port"):
        parse_listeners("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092,SASL_SSL://[::2]:9092")
    with pytest.raises(ConfigException):
        parse_listeners("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092,SASL_SSL://host:9092")


@pytest.mark.parametrize("text, message", [
    ("CLIENT", "Map entry 'CLIENT' is improperly formatted"),
    ("CLIENT:", "improperly formatted"),
    (":SSL", "improperly formatted"),
    ("CLIENT:TLS", "No enum constant org.apache.kafka.common.security.auth.SecurityProtocol.TLS"),
])
def test_bad_protocol_map(text, message):
    with pytest.raises(ConfigException, match=message) as e:
        parse_protocol_map(text)
    assert str(e.value).startswith(f"Invalid value {text} for configuration listener.security.protocol.map")


def test_config_error_is_a_value_error():
    assert issubclass(ConfigException, ValueError)
