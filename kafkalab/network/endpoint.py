"""Listeners and endpoints: ``PLAINTEXT://127.0.0.1:9092`` taken apart.

Theory of operation
-------------------
A broker can listen on several sockets at once -- one for clients, one for other brokers, one with TLS, one
with SASL -- and each is a *listener* with a name. ``listeners`` says where to bind
(``CLIENT://0.0.0.0:9092,BROKER://10.0.0.5:9093``), ``advertised.listeners`` what to tell clients in
Metadata responses, and ``listener.security.protocol.map`` which security protocol each name speaks
(``CLIENT:SASL_SSL,BROKER:PLAINTEXT``). By default a listener called ``PLAINTEXT`` speaks PLAINTEXT, so the
common one-listener case needs no map. ``inter.broker.listener.name`` picks the listener that brokers and
the controller use to reach each other.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/Endpoint.java``,
``core/src/main/scala/kafka/cluster/EndPoint.scala`` and ``kafka.utils.CoreUtils.listenerListToEndPoints``.
"""
from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple, Optional

from kafkalab.common.config import ConfigException

__all__ = ["EndPoint", "SECURITY_PROTOCOLS", "DEFAULT_SECURITY_PROTOCOL_MAP", "parse_listeners",
           "parse_protocol_map"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_SECURITY_PROTOCOL_MAP = {p: p for p in SECURITY_PROTOCOLS}

_LISTENER = re.compile(r"^(?P<name>[a-zA-Z][\w-]*)://(?P<host>\[[0-9a-fA-F:.]+\]|[^:\[\]]*):(?P<port>-?\d+)$")


class EndPoint(NamedTuple):
    listener_name: str
    host: str
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.connection_string


def parse_protocol_map(text: str) -> dict[str, str]:
    """``"CLIENT:SASL_SSL,BROKER:PLAINTEXT"`` -> ``{"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}``."""
    result: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or not name or not proto:
            raise ConfigException(f"Invalid value {text} for configuration listener.security.protocol.map: Map "
                              f"entry '{item}' is improperly formatted")
        if proto.upper() not in SECURITY_PROTOCOLS:
            raise ConfigException(f"Invalid value {text} for configuration listener.security.protocol.map: No enum "
                              f"constant org.apache.kafka.common.security.auth.SecurityProtocol.{proto}")
        result[name.upper()] = proto.upper()
    return result


def parse_listeners(text: str, protocol_map: Optional[dict[str, str]] = None, *,
                    config_name: str = "listeners", require_distinct_ports: bool = True) -> list[EndPoint]:
    """Parse ``NAME://host:port,...`` with Kafka's validation and messages."""
    protocol_map = DEFAULT_SECURITY_PROTOCOL_MAP if protocol_map is None else protocol_map
    endpoints = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = _LISTENER.match(item)
        if not m:
            raise ConfigException(f"Error creating broker listeners from '{text}': Unable to parse {item} to a broker "
                              f"endpoint")
        name = m.group("name").upper()
        if name not in protocol_map:
            raise ConfigException(f"Error creating broker listeners from '{text}': No security protocol defined for "
                              f"listener {name}")
        host = m.group("host").strip("[]")
        endpoints.append(EndPoint(name, host, int(m.group("port")), protocol_map[name]))
    names = [e.listener_name for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigException(f"requirement failed: Each listener must have a different name, {config_name}: {text}")
    if require_distinct_ports:
        _check_distinct_ports(endpoints, text, config_name)
    return endpoints


def _ip_version(host: str) -> Optional[int]:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _check_distinct_ports(endpoints: list[EndPoint], text: str, config_name: str) -> None:
    """Each port once (0, "any free port", excepted) -- unless exactly two listeners share it and one binds an
    IPv4 address, the other an IPv6 address (KIP-797)."""
    by_port: dict[int, list[EndPoint]] = {}
    for e in endpoints:
        if e.port != 0:
            by_port.setdefault(e.port, []).append(e)
    for port, eps in by_port.items():
        if len(eps) == 1:
            continue
        versions = [_ip_version(e.host) for e in eps]
        if len(eps) > 2:
            raise ConfigException(f"requirement failed: Each listener must have a different port unless exactly one "
                              f"listener has an IPv4 address and the other IPv6 address, {config_name}: {text}, "
                              f"port: {port}")
        if None in versions:
            raise ConfigException(f"requirement failed: Each listener must have a different port, {config_name}: {text}")
        if sorted(versions) != [4, 6]:
            raise ConfigException(f"requirement failed: If you have two listeners on the same port then one needs to be "
                              f"IPv4 and the other IPv6, {config_name}: {text}, port: {port}")
