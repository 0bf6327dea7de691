"""SASL on the broker's listeners: which mechanisms each listener enables, its JAAS credentials, start-up
validation, and the authenticator every new connection on it gets.

Theory of operation
-------------------
A SASL_PLAINTEXT or SASL_SSL listener needs, per listener (Kafka's ``listener.name.<listener>.`` prefix
overrides the broker-wide key):

* ``sasl.enabled.mechanisms`` -- Kafka's default is GSSAPI (Kerberos), which kafkalab does not implement;
  PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 it does;
* per mechanism a JAAS line, ``listener.name.<listener>.<mechanism lower-case>.sasl.jaas.config``. For PLAIN it
  holds the users (``user_alice="alice-secret"``); SCRAM users live in the coordination store
  (``/config/users/<user>``, written by AlterUserScramCredentials). ``username``/``password`` are what this
  broker itself logs in with when the listener is the inter-broker listener.

A listener that lacks any of this refuses to start with Kafka's message (``Could not find a 'KafkaServer' or
'sasl_plaintext.KafkaServer' entry in the JAAS configuration. System property
'java.security.auth.login.config' is not set``): serving it without authentication is never an option.
Likewise ``sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used
for inter-broker communication``.

:func:`authenticator_factories` turns the configuration into, per SASL listener, a function making a fresh
:class:`~kafkalab.security.sasl_server.SaslServerAuthenticator`; the socket server calls it for each
connection. SCRAM credentials are read from the coordination store at each login, so a user created a moment
ago can log in at once (Kafka keeps a cache refreshed by change notifications; the effect is the same). A
request that arrives in the middle of a SaslHandshake v1 login instead of SaslAuthenticate is answered with its
handler's error response (:func:`pre_authentication_error_response`, ILLEGAL_SASL_STATE in every error field),
as Kafka answers it with ``getErrorResponse``.

Mirrors: ``KafkaConfig.validateValues`` (the inter-broker mechanism rule), ``JaasContext.loadServerContext``,
``SaslChannelBuilder`` and ``CredentialCache``.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from kafkalab.common.config import ConfigException
from kafkalab.security.jaas import JaasEntry, parse_jaas_config
from kafkalab.security.plain import PlainSaslServer
from kafkalab.security.sasl_server import SaslServerAuthenticator, top_level_error_response
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramCredential, credential_from_string
from kafkalab.security.scram_sasl import ScramSaslServer
from kafkalab.security.sasl_client import SaslLogin
from kafkalab.server.apis.base import REGISTRY

__all__ = ["SUPPORTED_MECHANISMS", "SASL_PROTOCOLS", "listener_setting", "enabled_mechanisms", "jaas_entry",
           "validate_sasl_listeners", "authenticator_factories", "inter_broker_login",
           "scram_credential_lookup", "sasl_plaintext_overrides", "pre_authentication_error_response"]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def listener_setting(cfg, listener: str, key: str):
    """``listener.name.<listener>.<key>`` if given, else the broker-wide ``key`` (Kafka's
    ``valuesWithPrefixOverride``)."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in cfg.originals:
        return cfg.originals[prefixed]
    return cfg.get(key)


def enabled_mechanisms(cfg, listener: str) -> list[str]:
    value = listener_setting(cfg, listener, "sasl.enabled.mechanisms")
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    return [v for v in (value or []) if v]


def jaas_entry(cfg, listener: str, mechanism: str) -> JaasEntry:
    """The listener's JAAS line for ``mechanism``; ConfigException with Kafka's message when there is none."""
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = cfg.originals.get(key)
    if text is None:
        raise ConfigException(f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in the "
                              f"JAAS configuration. System property 'java.security.auth.login.config' is not set")
    text = getattr(text, "value", text)   # a Password
    return parse_jaas_config(str(text), mechanism=mechanism if mechanism in SUPPORTED_MECHANISMS else "")


def validate_sasl_listeners(cfg) -> None:
    """Refuse to start unless every SASL listener is fully configured (called from KafkaConfig)."""
    for ep in cfg.listeners:
        if ep.security_protocol not in SASL_PROTOCOLS:
            continue
        mechanisms = enabled_mechanisms(cfg, ep.listener_name)
        if not mechanisms:
            raise ConfigException("No SASL mechanisms are enabled")
        for mechanism in mechanisms:
            jaas_entry(cfg, ep.listener_name, mechanism)
            if mechanism not in SUPPORTED_MECHANISMS:
                raise ConfigException(f"Invalid value {mechanism} for configuration sasl.enabled.mechanisms: "
                                      f"kafkalab implements {', '.join(SUPPORTED_MECHANISMS)}")
    ibl = cfg.inter_broker_listener_name
    protocol = cfg.protocol_map.get(ibl)
    if protocol in SASL_PROTOCOLS:
        mechanism = cfg["sasl.mechanism.inter.broker.protocol"]
        if mechanism not in enabled_mechanisms(cfg, ibl):
            raise ConfigException("requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
                                  "sasl.enabled.mechanisms when SASL is used for inter-broker communication")
        _check_own_login(cfg, ibl, mechanism, "the inter-broker listener")
    control_plane = cfg.control_plane_listener_name
    if control_plane is not None and cfg.protocol_map.get(control_plane) in SASL_PROTOCOLS:
        # The controller logs in there with sasl.mechanism.inter.broker.protocol (Kafka's ControllerChannelManager);
        # Kafka would only fail at the first connection: kafkalab says so at start-up.
        mechanism = cfg["sasl.mechanism.inter.broker.protocol"]
        if mechanism not in enabled_mechanisms(cfg, control_plane):
            raise ConfigException(f"sasl.mechanism.inter.broker.protocol ({mechanism}) must be included in the "
                                  f"sasl.enabled.mechanisms of listener {control_plane}: the controller logs in with "
                                  f"it on control.plane.listener.name")
        _check_own_login(cfg, control_plane, mechanism, "control.plane.listener.name")


def _check_own_login(cfg, listener: str, mechanism: str, role: str) -> None:
    entry = jaas_entry(cfg, listener, mechanism)
    if not entry.options.get("username") or "password" not in entry.options:
        raise ConfigException(f"The JAAS configuration of listener {listener} for {mechanism} needs username and "
                              f"password: this broker logs in with them on {role}")


def inter_broker_login(cfg, listener: Optional[str] = None) -> Optional[SaslLogin]:
    """What this broker logs in with on ``listener`` (default: the inter-broker listener, where its replica
    fetchers and ControlledShutdown go; the controller's channel uses ``controller_to_broker_listener_name``),
    or None (no SASL there). The mechanism is always ``sasl.mechanism.inter.broker.protocol``."""
    listener = listener or cfg.inter_broker_listener_name
    if cfg.protocol_map.get(listener) not in SASL_PROTOCOLS:
        return None
    mechanism = cfg["sasl.mechanism.inter.broker.protocol"]
    entry = jaas_entry(cfg, listener, mechanism)
    return SaslLogin(mechanism, entry.options["username"], entry.options["password"])


def scram_credential_lookup(read_user_config: Callable[[str], dict]) -> Callable[[str, str], Optional[ScramCredential]]:
    """``(mechanism, user) -> ScramCredential or None`` over ``read_user_config(user) -> {key: value}``
    (the user's entity config in the coordination store)."""
    def lookup(mechanism: str, user: str) -> Optional[ScramCredential]:
        try:
            text = read_user_config(user).get(mechanism)
            return credential_from_string(text) if text else None
        except (ValueError, KeyError, OSError):
            return None
        except Exception:   # the store is unreachable: a failed login, never a crash
            return None
    return lookup


class _UnauthenticatedRequest(NamedTuple):
    """A request decoded by the authenticator, shaped as the handlers' error builders read one."""
    body: Any
    header: Any
    context: Any     # the decoded request itself: api_key, api_version, correlation_id


def pre_authentication_error_response(request, error_code: int, message: Optional[str]):
    """The error response the broker's handler of ``request`` gives when it fails (None: it cannot carry one),
    for a request that came before the login finished; a top-level error code when no handler has one."""
    handler = REGISTRY.get(int(request.api_key))
    if handler is None or handler.error_response is None:
        return top_level_error_response(request, error_code, message)
    return handler.error_response(_UnauthenticatedRequest(request.body, request.header, request), error_code, message)


def authenticator_factories(cfg, scram_lookup: Callable[[str, str], Optional[ScramCredential]],
                            supported_versions: dict) -> dict[str, Callable[[], SaslServerAuthenticator]]:
    """Listener name -> a function making the authenticator of one new connection on that listener."""
    factories = {}
    for ep in cfg.listeners:
        if ep.security_protocol not in SASL_PROTOCOLS:
            continue
        listener = ep.listener_name
        mechanisms = enabled_mechanisms(cfg, listener)
        plain_users = jaas_entry(cfg, listener, "PLAIN").users() if "PLAIN" in mechanisms else {}
        reauth_ms = int(listener_setting(cfg, listener, "connections.max.reauth.ms") or 0)
        max_receive = int(cfg["sasl.server.max.receive.size"])

        def server_factory(mechanism: str, plain_users=plain_users):
            if mechanism == "PLAIN":
                return PlainSaslServer(plain_users.get)
            if mechanism in SCRAM_MECHANISMS:
                return ScramSaslServer(mechanism, lambda user, m=mechanism: scram_lookup(m, user))
            raise ValueError(f"unsupported mechanism {mechanism}")

        def make(mechanisms=mechanisms, server_factory=server_factory, reauth_ms=reauth_ms, listener=listener,
                 max_receive=max_receive) -> SaslServerAuthenticator:
            return SaslServerAuthenticator(mechanisms, server_factory, supported_versions,
                                           max_receive_size=max_receive, connections_max_reauth_ms=reauth_ms,
                                           listener=listener, error_response=pre_authentication_error_response)
        factories[listener] = make
    return factories


def sasl_plaintext_overrides(users: dict, *, admin: tuple = ("admin", "admin-secret"),
                             mechanisms: tuple = SUPPORTED_MECHANISMS, inter_broker_mechanism: str = "PLAIN",
                             listener: str = "SASL_PLAINTEXT", host: str = "127.0.0.1", port: int = 0) -> dict:
    """Broker settings for one SASL_PLAINTEXT listener that is also the inter-broker listener (labs, tests,
    ``Cluster(overrides=...)``): ``users`` are PLAIN's (name -> password; SCRAM users are created with
    AlterUserScramCredentials), ``admin`` what the brokers log in with (a PLAIN user too, and for SCRAM it must
    be created in the store before a second broker starts)."""
    from kafkalab.security.jaas import jaas_line

    name, password = admin
    prefix = f"listener.name.{listener.lower()}."
    config = {"listeners": f"{listener}://{host}:{port}", "listener.security.protocol.map":
              f"{listener}:SASL_PLAINTEXT", "inter.broker.listener.name": listener,
              "sasl.enabled.mechanisms": ",".join(mechanisms),
              "sasl.mechanism.inter.broker.protocol": inter_broker_mechanism}
    for mechanism in mechanisms:
        extra = dict(users, **{name: password}) if mechanism == "PLAIN" else {}
        config[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = jaas_line(mechanism, name, password, **extra)
    return config
