"""SASL for kafkalab's clients: Java's settings, the login on each new connection, and re-authentication.

Theory of operation
-------------------
kafkalab's clients take the Java client's settings (librdkafka's ``sasl.username``/``sasl.password`` are not
Java's and are refused as unknown names)::

    security.protocol = SASL_PLAINTEXT
    sasl.mechanism    = SCRAM-SHA-256                 (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; Java's default GSSAPI
                                                       is not implemented)
    sasl.jaas.config  = org.apache.kafka.common.security.scram.ScramLoginModule required
                        username="alice" password="alice-secret";

The JAAS line is parsed as data (:mod:`kafkalab.security.jaas`); no class named in it is loaded. After
ApiVersions, each connection logs in with SaslHandshake v1 and SaslAuthenticate
(:class:`~kafkalab.security.sasl_client.SaslClientAuthenticator`). When the broker answers with a
``session_lifetime_ms`` (its ``connections.max.reauth.ms``, KIP-368), the connection logs in again on the
same socket at a random moment between 85% and 95% of the lifetime: the next request after that moment waits
for the requests in flight, re-authenticates, then goes out -- so the broker never has to close it.

Mirrors: ``clients/.../common/config/SaslConfigs.java``, ``SaslClientAuthenticator.java`` (``reauthenticate``)
and ``KafkaChannel.maybeBeginClientReauthentication``.
"""
from __future__ import annotations

from typing import Optional

from kafkalab.common.config import ConfigException
from kafkalab.security.jaas import parse_jaas_config
from kafkalab.security.sasl_client import SUPPORTED_MECHANISMS, SaslLogin

__all__ = ["client_login", "check_security"]

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def client_login(config) -> Optional[SaslLogin]:
    """What the client logs in with (None without SASL); ConfigException for an incomplete configuration."""
    protocol = config["security.protocol"]
    if protocol not in SASL_PROTOCOLS:
        return None
    mechanism = config["sasl.mechanism"]
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigException(f"Invalid value {mechanism} for configuration sasl.mechanism: kafkalab's clients "
                              f"implement {', '.join(SUPPORTED_MECHANISMS)}")
    jaas = config["sasl.jaas.config"]
    if jaas is None:
        raise ConfigException("Could not find a 'KafkaClient' entry in the JAAS configuration. System property "
                              "'java.security.auth.login.config' is not set")
    entry = parse_jaas_config(getattr(jaas, "value", jaas), mechanism=mechanism)
    username, password = entry.options.get("username"), entry.options.get("password")
    if not username or password is None:
        raise ConfigException(f"sasl.jaas.config for {mechanism} must set username and password")
    return SaslLogin(mechanism, username, password)


def check_security(config) -> None:
    """Validate the security settings when the client is configured (not at its first connection)."""
    client_login(config)
