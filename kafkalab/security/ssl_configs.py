"""The ``ssl.*`` settings, declared once for the broker and the clients, with Kafka's names and defaults.

Theory of operation
-------------------
Kafka declares its TLS settings once (``SslConfigs.addClientSslSupport``) and adds them to the broker's,
the producer's, the consumer's and the admin client's tables; the broker adds two of its own
(``ssl.client.auth`` and ``ssl.principal.mapping.rules``, from ``BrokerSecurityConfigs``). kafkalab does the
same: :func:`define_client_ssl_configs` and :func:`define_broker_ssl_configs` add the keys to a
:class:`~kafkalab.common.config.ConfigDef`.

The defaults are Kafka's, including ``ssl.keystore.type=JKS`` and ``ssl.truststore.type=JKS``: kafkalab reads
**PEM** stores only (``ssl.keystore.type=PEM``), and a JKS or PKCS12 store is refused with a message saying
so when the listener or the client is set up (:mod:`kafkalab.security.ssl_factory`), never silently read as
something else. Private keys and inline PEM (``ssl.keystore.key``, ``ssl.keystore.certificate.chain``,
``ssl.truststore.certificates``) are ``PASSWORD`` values, as in Kafka: printed ``[hidden]``.

On a broker each key can be overridden per listener with ``listener.name.<listener>.<key>``
(:func:`listener_ssl_values`).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/config/SslConfigs.java`` and
``clients/.../common/config/internals/BrokerSecurityConfigs.java``.
"""
from __future__ import annotations

from typing import Any, Mapping

from kafkalab.common.config import (CaseInsensitiveValidString, ConfigDef, Importance, Type, ValidList,
                                    ValidString)

__all__ = ["define_client_ssl_configs", "define_broker_ssl_configs", "CLIENT_SSL_KEYS", "BROKER_SSL_KEYS",
           "listener_ssl_values", "PEM"]

PEM = "PEM"
H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
T = Type

#: The keys :func:`define_client_ssl_configs` declares (what a client, and a broker's listener, reads).
CLIENT_SSL_KEYS = ("ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.keystore.type",
                   "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
                   "ssl.keystore.certificate.chain", "ssl.truststore.type", "ssl.truststore.location",
                   "ssl.truststore.password", "ssl.truststore.certificates", "ssl.endpoint.identification.algorithm")
#: ... and the broker's two more.
BROKER_SSL_KEYS = CLIENT_SSL_KEYS + ("ssl.client.auth", "ssl.principal.mapping.rules")


def define_client_ssl_configs(definition: ConfigDef) -> ConfigDef:
    """Add the TLS keys every Kafka client (and every broker listener) has (``addClientSslSupport``)."""
    return (
        definition
        .define("ssl.protocol", T.STRING, "TLSv1.3", ValidString.in_("TLS", "TLSv1.2", "TLSv1.3"), M,
                "The TLS protocol of the SSL context: TLSv1.3 (the default) also speaks TLSv1.2 when that is "
                "enabled; TLSv1.2 caps connections at TLS 1.2.")
        .define("ssl.enabled.protocols", T.LIST, "TLSv1.2,TLSv1.3", ValidList.in_("TLSv1.2", "TLSv1.3"), M,
                "The TLS versions a connection may use (kafkalab: TLSv1.2 and TLSv1.3; older versions are "
                "insecure and refused).")
        .define("ssl.cipher.suites", T.LIST, None, None, L, "Cipher suites (IANA names) a connection may use; "
                "empty: the TLS library's secure defaults (kafkalab honours only the default).")
        .define("ssl.keystore.type", T.STRING, "JKS", None, M, "The format of the key store: kafkalab reads PEM "
                "only (JKS, Kafka's default, and PKCS12 are refused).")
        .define("ssl.keystore.location", T.STRING, None, None, H, "A PEM file holding the private key followed "
                "by the certificate chain.")
        .define("ssl.keystore.password", T.PASSWORD, None, None, H, "The key store's password (not allowed "
                "with PEM: use ssl.key.password).")
        .define("ssl.key.password", T.PASSWORD, None, None, H, "The password of the (encrypted PKCS#8) private "
                "key.")
        .define("ssl.keystore.key", T.PASSWORD, None, None, H, "The private key as inline PEM (PKCS#8), with "
                "ssl.keystore.certificate.chain instead of ssl.keystore.location.")
        .define("ssl.keystore.certificate.chain", T.PASSWORD, None, None, H, "The certificate chain as inline "
                "PEM, with ssl.keystore.key.")
        .define("ssl.truststore.type", T.STRING, "JKS", None, M, "The format of the trust store: kafkalab reads "
                "PEM only.")
        .define("ssl.truststore.location", T.STRING, None, None, H, "A PEM file of the trusted (CA) "
                "certificates.")
        .define("ssl.truststore.password", T.PASSWORD, None, None, H, "The trust store's password (not allowed "
                "with PEM).")
        .define("ssl.truststore.certificates", T.PASSWORD, None, None, H, "The trusted certificates as inline "
                "PEM, instead of ssl.truststore.location.")
        .define("ssl.endpoint.identification.algorithm", T.STRING, "https", ValidString.in_("https", ""), L,
                "https: check that the server's certificate names the host connected to (hostname "
                "verification); empty: do not.")
    )


def define_broker_ssl_configs(definition: ConfigDef) -> ConfigDef:
    """The client keys plus the broker's own (``BrokerSecurityConfigs``)."""
    return (
        define_client_ssl_configs(definition)
        .define("ssl.client.auth", T.STRING, "none", CaseInsensitiveValidString.in_("required", "requested",
                                                                                    "none"), M,
                "Whether an SSL listener asks clients for a certificate: required (no certificate, no "
                "connection), requested (optional), none. On SASL_SSL listeners only as a per-listener "
                "override (KIP-684).")
        .define("ssl.principal.mapping.rules", T.STRING, "DEFAULT", None, L, "How a client certificate's "
                "distinguished name becomes a principal name: a comma-separated list of "
                "RULE:pattern/replacement/[LU] and DEFAULT (the whole name), the first match wins.")
    )


def listener_ssl_values(values: Mapping[str, Any], originals: Mapping[str, Any], definition: ConfigDef,
                        listener_name: str, security_protocol: str) -> dict[str, Any]:
    """The ``ssl.*`` values one listener uses: ``listener.name.<listener lower case>.<key>`` when given, else
    the broker-wide value (Kafka's ``valuesWithPrefixOverride``). On a SASL_SSL listener ``ssl.client.auth``
    is ``none`` unless the listener's own override sets it: the broker-wide key is for SSL listeners (KIP-684)."""
    prefix = f"listener.name.{listener_name.lower()}."
    result = {}
    for key in BROKER_SSL_KEYS:
        if prefix + key in originals:
            result[key] = definition.parse_value(key, originals[prefix + key])
        elif key == "ssl.client.auth" and security_protocol == "SASL_SSL":
            result[key] = "none"
        else:
            result[key] = values[key]
    return result
