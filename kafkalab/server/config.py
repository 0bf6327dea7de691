"""Broker configuration: ``server.properties`` with Kafka's names, defaults and start-up checks.

Theory of operation
-------------------
A Kafka broker is configured by a Java properties file (``config/server.properties``) plus overrides on the
command line (``kafka-server-start.sh server.properties --override log.dirs=/data``). Every key has a type,
a default and a validator; a bad value stops the broker at start-up with a message naming the key. The keys
are the vocabulary of operating Kafka, so kafkalab uses exactly Kafka's names: a learner who tunes
``log.segment.bytes`` here tunes the same thing on a real cluster.

:data:`BROKER_CONFIGS` is one :class:`~kafkalab.common.config.ConfigDef` assembled from four tables, each
declared next to the code that reads it:

* broker keys (``broker.id``, ``listeners``, ``num.io.threads``, ``queued.max.requests``, ...) declared here;
* group coordinator keys (``group.*``, ``offsets.*``) in :mod:`kafkalab.coordinator.group.coordinator_config`;
* transaction coordinator keys (``transaction.*``, ``transactional.id.expiration.ms``) in
  :mod:`kafkalab.coordinator.transaction.transaction_config`;
* log keys (``log.segment.bytes``, ``log.retention.hours``, ``message.max.bytes``, ...), the broker-wide
  defaults of topic configs (``segment.bytes``, ``retention.ms``, ``max.message.bytes``...) and the log
  manager's settings, in :mod:`kafkalab.storage.server_log_configs`.

Each key also says whether Kafka can change it on a running broker (``Dynamic``: read-only, per-broker,
cluster-wide) and which other keys are its synonyms; DescribeConfigs reads both from the table.

kafkalab's own additions start with ``kafkalab.`` so nobody mistakes them for Kafka's.

A key nobody declared is treated as Kafka treats it -- kept, and warned about ("isn't a known config") --
unless it is one of *Kafka's* broker keys (:mod:`kafkalab.common.kafka_config_names`, generated from Kafka's
source): then kafkalab does not implement it, and the broker refuses to start with a ConfigException naming
it, because running on as if it had taken effect would teach something false. The same holds for the
per-listener form ``listener.name.<listener>.<key>`` of a key kafkalab does not read per listener, and for
a key the tables declare ``inert`` (``log.preallocate``, the tiered-storage ``log.local.retention.*``) set to
anything but its default.

Mirrors: ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (``configDef``, ``validateValues``) and
``server/src/main/java/org/apache/kafka/server/config/ServerConfigs.java``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional

from kafkalab.common.config import (AbstractConfig, ConfigDef, ConfigException, ConfigKey, Dynamic, Importance,
                                    Range, ValidString, load_properties)
from kafkalab.common.config import Type as T
from kafkalab.common.kafka_config_names import AUTHORIZER_CONFIG_NAMES, BROKER_CONFIG_NAMES
from kafkalab.coordinator.group.coordinator_config import GROUP_COORDINATOR_CONFIGS
from kafkalab.coordinator.transaction.transaction_config import TRANSACTION_COORDINATOR_CONFIGS
from kafkalab.network.connection_quotas import parse_max_connections_per_ip_overrides
from kafkalab.network.endpoint import (DEFAULT_SECURITY_PROTOCOL_MAP, SECURITY_PROTOCOLS, EndPoint, parse_listeners,
                                       parse_protocol_map)
from kafkalab.security.ssl_configs import BROKER_SSL_KEYS, define_broker_ssl_configs, listener_ssl_values
from kafkalab.server.acl_authorizer import check_authorizer_class_name
from kafkalab.server.api_version_floors import RELEASES
from kafkalab.storage.server_log_configs import SERVER_LOG_CONFIGS
from kafkalab.server.sasl_listeners import validate_sasl_listeners

__all__ = ["ConfigKey", "KafkaConfig", "BROKER_CONFIGS", "SERVER_CONFIGS", "load_properties", "ConfigException",
           "server_setting", "KAFKA_BROKER_KEYS", "LISTENER_KEYS", "unimplemented_kafka_keys"]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
PB, CW = Dynamic.PER_BROKER, Dynamic.CLUSTER_WIDE
at_least = Range.at_least

#: The broker's own keys (the group coordinator's and the log's are declared in their rooms).
SERVER_CONFIGS = (
    ConfigDef()
    .define("broker.id", T.INT, 0, at_least(-1), H, "This broker's id, unique in the cluster (kafkalab's default "
            "is 0, Kafka's -1).")
    .define("broker.rack", T.STRING, None, None, M, "The rack of this broker, for rack-aware replica placement.")
    .define("listeners", T.LIST, "PLAINTEXT://127.0.0.1:9092", None, H, "Where to listen: NAME://host:port, comma "
            "separated.", dynamic=PB)
    .define("advertised.listeners", T.LIST, None, None, H, "What Metadata tells clients to connect to (default: "
            "listeners).", dynamic=PB)
    .define("listener.security.protocol.map", T.STRING,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", None, L,
            "Listener name -> security protocol.", dynamic=PB)
    .define("inter.broker.listener.name", T.STRING, None, None, M, "The listener brokers use to talk to each other "
            "(replica fetchers, ControlledShutdown; also the controller, unless control.plane.listener.name is "
            "set). It is an error to set this and security.inter.broker.protocol at the same time.")
    .define("security.inter.broker.protocol", T.STRING, "PLAINTEXT", ValidString.in_(*SECURITY_PROTOCOLS), M,
            "Security protocol between brokers, if inter.broker.listener.name is not set: the inter-broker "
            "listener is then the listener *named* like the protocol (e.g. SASL_PLAINTEXT://...), which must be in "
            "advertised.listeners.")
    .define("control.plane.listener.name", T.STRING, None, None, H, "The listener the controller's requests "
            "(LeaderAndIsr, UpdateMetadata, StopReplica) travel on (KIP-291): the broker serves it with its own "
            "socket, request queue and request handler, and the controller connects to each broker's endpoint of "
            "this name (from its registration in ZooKeeper). Must be in advertised.listeners and differ from the "
            "inter-broker listener. Unset: controller requests use the inter-broker listener.")
    .define("log.dirs", T.LIST, "kafka-logs", None, H, "Directories holding the log data (kafkalab: relative to "
            "the working directory; Kafka's default is /tmp/kafka-logs).")
    .define("num.partitions", T.INT, 1, at_least(1), M, "Partitions of an auto-created topic.")
    .define("default.replication.factor", T.INT, 1, at_least(1), M, "Replication factor of an auto-created topic.")
    .define("auto.create.topics.enable", T.BOOLEAN, True, None, H, "Create a topic when a client asks for its "
            "metadata or produces to it.")
    .define("delete.topic.enable", T.BOOLEAN, True, None, H, "Allow DeleteTopics.")
    .define("num.network.threads", T.INT, 3, at_least(1), H, "Network threads (kafkalab: informational; one "
            "event loop).", dynamic=CW)
    .define("num.io.threads", T.INT, 8, at_least(1), H, "Request handlers working the request queue.", dynamic=CW)
    .define("queued.max.requests", T.INT, 500, at_least(1), H, "Requests that may wait in the request queue.")
    .define("queued.max.request.bytes", T.LONG, -1, None, M, "Bytes of requests the broker holds before it stops "
            "reading more (its memory pool; -1: no limit). A connection whose next request does not fit is muted "
            "until memory is released.")
    .define("socket.request.max.bytes", T.INT, 104857600, at_least(1), H, "The largest request the broker "
            "accepts.")
    .define("socket.send.buffer.bytes", T.INT, 102400, None, H, "SO_SNDBUF of the socket server's connections "
            "(-1: OS default).")
    .define("socket.receive.buffer.bytes", T.INT, 102400, None, H, "SO_RCVBUF of the socket server's sockets (-1: "
            "OS default).")
    .define("connections.max.idle.ms", T.LONG, 600000, None, M, "Close connections idle for longer than this.")
    .define("max.connections.per.ip", T.INT, 2147483647, at_least(0), M, "Connections allowed from one IP "
            "address; the next one is closed as soon as it is accepted. 0 is allowed only together with "
            "max.connections.per.ip.overrides.", dynamic=CW)
    .define("max.connections.per.ip.overrides", T.STRING, "", None, M, "Per host or IP address limits that "
            "replace max.connections.per.ip, e.g. \"hostName:100,127.0.0.1:200\".", dynamic=CW)
    .define("max.connections", T.INT, 2147483647, at_least(0), M, "Connections allowed in the broker at once, "
            "besides the per-IP limits; per listener as listener.name.<listener>.max.connections. When the "
            "listener or the broker is full, new connections wait to be accepted. The inter-broker listener is "
            "exempt from the broker-wide limit: the least recently used connection on another listener is "
            "closed instead.", dynamic=CW)
    .define("max.connection.creation.rate", T.INT, 2147483647, at_least(0), M, "New connections per second the "
            "broker accepts; per listener as listener.name.<listener>.max.connection.creation.rate. Faster ones "
            "are delayed; the inter-broker listener is held only to its own listener limit.", dynamic=CW)
    .define("connection.failed.authentication.delay.ms", T.INT, 100, None, L, "Delay before closing after a "
            "failed login.")
    .define("sasl.enabled.mechanisms", T.LIST, "GSSAPI", None, M, "SASL mechanisms a SASL listener enables "
            "(kafkalab implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; per listener: listener.name.<listener>."
            "sasl.enabled.mechanisms). Each needs listener.name.<listener>.<mechanism>.sasl.jaas.config.",
            dynamic=PB)
    .define("sasl.mechanism.inter.broker.protocol", T.STRING, "GSSAPI", None, M, "SASL mechanism brokers and "
            "the controller log in with on a SASL inter-broker listener.", dynamic=PB)
    .define("connections.max.reauth.ms", T.LONG, 0, None, M, "When positive, a SASL session lasts at most this "
            "long: clients must re-authenticate (KIP-368) or their connection is closed. 0: sessions never end.")
    .define("sasl.server.max.receive.size", T.INT, 524288, None, L, "The largest frame accepted before SASL "
            "authentication completes.")
    .define("fetch.max.bytes", T.INT, 57671680, at_least(1024), M, "Broker-side cap on the bytes of one Fetch "
            "response.")
    .define("replica.lag.time.max.ms", T.LONG, 30000, None, H, "A follower that has not caught up for this long "
            "leaves the ISR.")
    .define("replica.fetch.wait.max.ms", T.INT, 500, None, M, "Max wait of a follower's fetch.")
    .define("replica.fetch.min.bytes", T.INT, 1, None, H, "Min bytes of a follower's fetch.")
    .define("replica.fetch.max.bytes", T.INT, 1048576, None, M, "Bytes per partition a follower asks for.")
    .define("replica.fetch.response.max.bytes", T.INT, 10485760, None, M, "Bytes a follower asks for in one "
            "Fetch response.")
    .define("replica.fetch.backoff.ms", T.INT, 1000, None, M, "Sleep of a replica fetcher after a fetch error.")
    .define("replica.socket.timeout.ms", T.INT, 30000, None, H, "Socket timeout of a replica fetcher's requests.")
    .define("num.replica.fetchers", T.INT, 1, at_least(1), H, "Fetcher threads per source broker.", dynamic=CW)
    .define("max.incremental.fetch.session.cache.slots", T.INT, 1000, at_least(0), M, "Fetch sessions (KIP-227) "
            "the broker keeps; 0 turns incremental fetching off.")
    .define("min.incremental.fetch.session.eviction.ms", T.INT, 120000, at_least(0), M, "A fetch session younger "
            "than this can be evicted only by a follower's, and only if it is a consumer's and smaller.")
    .define("request.timeout.ms", T.INT, 30000, at_least(0), M, "How long the broker's own requests to other "
            "brokers (the transaction coordinator's WriteTxnMarkers) wait for a response, and how long a marker "
            "append on a partition leader waits for the in-sync replicas before it answers REQUEST_TIMED_OUT.")
    .define("controller.socket.timeout.ms", T.INT, 30000, None, M, "Socket timeout of the controller's requests "
            "to brokers.")
    .define("producer.purgatory.purge.interval.requests", T.INT, 1000, None, M, "Purge completed produce requests "
            "from the purgatory's watch lists after this many.")
    .define("fetch.purgatory.purge.interval.requests", T.INT, 1000, None, M, "Purge completed fetch requests "
            "from the purgatory's watch lists after this many.")
    .define("replica.high.watermark.checkpoint.interval.ms", T.LONG, 5000, None, H, "How often high watermarks "
            "are saved.")
    .define("zookeeper.connect", T.STRING, "embedded", None, H, "The coordination store (kafkalab: 'embedded', "
            "in-process).")
    .define("zookeeper.session.timeout.ms", T.INT, 18000, None, H, "A broker whose session is silent this long "
            "is dead.")
    .define("controlled.shutdown.enable", T.BOOLEAN, True, None, M, "Move leadership away before stopping.")
    .define("controlled.shutdown.max.retries", T.INT, 3, None, M, "ControlledShutdown attempts before stopping "
            "anyway.")
    .define("controlled.shutdown.retry.backoff.ms", T.LONG, 5000, None, M, "Wait between ControlledShutdown "
            "attempts.")
    .define("max.request.partition.size.limit", T.INT, 2000, at_least(1), L, "Most partitions one "
            "DescribeTopicPartitions response describes (the rest come with a cursor).")
    .define("authorizer.class.name", T.STRING, "", None, L, "The authorizer that decides every request: "
            "kafka.security.authorizer.AclAuthorizer (ACLs in ZooKeeper) or "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer; empty: no authorization. kafkalab serves exactly "
            "these two names and loads no class.")
    .define("super.users", T.STRING, None, None, L, "Principals allowed everything, whatever the ACLs say: "
            "semicolon-separated, e.g. User:admin;User:ANONYMOUS (read by the authorizer).")
    .define("allow.everyone.if.no.acl.found", T.BOOLEAN, False, None, L, "Allow every principal on a resource that "
            "has no ACL at all (read by the authorizer). False: only super users.")
    .define("kafkalab.zookeeper.data.dir", T.STRING, None, None, L, "Where the embedded coordination store keeps "
            "its data (default: 'zookeeper' next to the first log dir).")
    .define("kafkalab.api.version.floors", T.STRING, "3.9", ValidString.in_(*RELEASES), M, "Which Kafka release's "
            "API versions the broker advertises and accepts: 3.9 (a ZooKeeper-mode Kafka 3.9 broker, old versions "
            "included) or 4.0 (KIP-896's floors: ListOffsets v0, OffsetCommit v0-1, Fetch v0-3, ... refused; Produce "
            "still advertised from v0, but v0-2 refused, as Kafka 4.0 does).")
)
# TLS: Kafka's ssl.* keys, declared once for the broker and the clients (kafkalab.security.ssl_configs).
define_broker_ssl_configs(SERVER_CONFIGS)

#: Every broker key kafkalab implements: its own, the group and transaction coordinators' and the log's.
BROKER_CONFIGS = ConfigDef(SERVER_CONFIGS, GROUP_COORDINATOR_CONFIGS, TRANSACTION_COORDINATOR_CONFIGS,
                           SERVER_LOG_CONFIGS)

#: Every key of Kafka's broker configuration, the authorizers' included (generated from Kafka's source).
KAFKA_BROKER_KEYS = BROKER_CONFIG_NAMES | AUTHORIZER_CONFIG_NAMES

#: Keys kafkalab reads per listener, as ``listener.name.<listener>.<key>`` (besides each SASL mechanism's
#: ``listener.name.<listener>.<mechanism>.sasl.jaas.config``).
LISTENER_KEYS = frozenset(BROKER_SSL_KEYS) | {"max.connections", "max.connection.creation.rate",
                                              "sasl.enabled.mechanisms", "connections.max.reauth.ms"}

_LISTENER_PREFIXED = re.compile(r"listener\.name\.([^.]+)\.(.+)\Z")
_MECHANISM_JAAS = re.compile(r"[^.]+\.sasl\.jaas\.config\Z")

def _unimplemented_reason(name: str, definitions: ConfigDef) -> Optional[str]:
    """Why ``name`` is refused, or None: a declared key, a per-listener key kafkalab reads, or no Kafka key."""
    if name in definitions:
        return None
    if name in KAFKA_BROKER_KEYS:
        return f"{name} is not implemented by kafkalab"
    prefixed = _LISTENER_PREFIXED.match(name)
    if prefixed is None:
        return None
    listener, key = prefixed.groups()
    if key in LISTENER_KEYS or _MECHANISM_JAAS.match(key):
        return None
    mechanism_key = key.split(".", 1)[-1]   # listener.name.<l>.<mechanism>.sasl.* (callback handlers, login)
    base = key if key in KAFKA_BROKER_KEYS else mechanism_key if mechanism_key.startswith("sasl.") and \
        mechanism_key in KAFKA_BROKER_KEYS else None
    if base is None:
        return None
    return f"{name} is not implemented by kafkalab: it does not read {base} per listener ({listener})"


def unimplemented_kafka_keys(props: Mapping[str, Any], definitions: Optional[ConfigDef] = None) -> list[str]:
    """The reasons to refuse each key of ``props`` that is Kafka's but that kafkalab does not implement."""
    definitions = BROKER_CONFIGS if definitions is None else definitions
    reasons = (_unimplemented_reason(str(name), definitions) for name in sorted(props, key=str))
    return [r for r in reasons if r is not None]


class KafkaConfig(AbstractConfig):
    """A validated broker configuration. ``config["log.dirs"]`` gives typed values (defaults filled in);
    ``config.originals`` what was explicitly given."""

    def __init__(self, props: Optional[Mapping[str, Any]] = None):
        super().__init__(BROKER_CONFIGS, props)
        self.definitions: ConfigDef = BROKER_CONFIGS
        refused = unimplemented_kafka_keys(self.originals, self.definitions)
        refused += [f"{given} is not implemented by kafkalab (only the default of {given.split('=')[0]} is accepted)"
                    for given in self.definitions.inert_overrides(self.originals)]
        if refused:
            these = "It is a Kafka broker configuration" if len(refused) == 1 else "They are Kafka broker configurations"
            raise ConfigException(f"{'; '.join(refused)}. {these}: kafkalab refuses what it does not implement "
                                  f"rather than ignore it.")
        self.unknown = [k for k in self.unused() if not k.startswith("listener.name.")]
        self._validate()

    def is_sensitive(self, name: str) -> bool:
        """PASSWORD keys, also as per-listener overrides (``listener.name.<l>.<key>``), as KafkaConfig's
        ``maybeSensitive`` treats them."""
        if name.startswith("listener.name."):
            base = name.split(".", 3)[3] if name.count(".") >= 3 else name
            return base not in self.definition or super().is_sensitive(base)
        return super().is_sensitive(name)

    @classmethod
    def from_file(cls, path, overrides: Optional[Mapping[str, Any]] = None) -> "KafkaConfig":
        props = load_properties(path)
        props.update(overrides or {})
        return cls(props)

    # ----------------------------------------------------------------------------------------- derived
    @property
    def broker_id(self) -> int:
        return self.values["broker.id"]

    @property
    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.values["listener.security.protocol.map"])

    @property
    def listeners(self) -> list[EndPoint]:
        return parse_listeners(",".join(self.values["listeners"]), self.protocol_map)

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        adv = self.values["advertised.listeners"]
        if not adv:
            return self.listeners
        return parse_listeners(",".join(adv), self.protocol_map, config_name="advertised.listeners",
                               require_distinct_ports=False)

    @property
    def inter_broker_listener_name(self) -> str:
        """``inter.broker.listener.name`` if set, else the listener *named* like ``security.inter.broker.protocol``
        (Kafka's ``ListenerName.forSecurityProtocol``: SASL_PLAINTEXT -> the listener SASL_PLAINTEXT, never
        another listener that happens to use that protocol)."""
        name = self.values["inter.broker.listener.name"]
        if name is not None:
            if "security.inter.broker.protocol" in self.originals:
                raise ConfigException("Only one of inter.broker.listener.name and security.inter.broker.protocol "
                                      "should be set.")
            if name.upper() not in self.protocol_map:
                raise ConfigException(f"Listener with name {name.upper()} defined in inter.broker.listener.name not "
                                      f"found in listener.security.protocol.map.")
            return name.upper()
        return self.values["security.inter.broker.protocol"]

    @property
    def control_plane_listener_name(self) -> Optional[str]:
        """``control.plane.listener.name`` (normalised to upper case), or None."""
        name = self.values["control.plane.listener.name"]
        if name is None:
            return None
        if name.upper() not in self.protocol_map:
            raise ConfigException(f"Listener with {name.upper()} defined in control.plane.listener.name not found "
                                  f"in listener.security.protocol.map.")
        return name.upper()

    @property
    def control_plane_listener(self) -> Optional[EndPoint]:
        """The endpoint of ``listeners`` the controller's connections arrive on, or None (Kafka's
        ``controlPlaneListener``)."""
        name = self.control_plane_listener_name
        return next((ep for ep in self.listeners if ep.listener_name == name), None) if name else None

    @property
    def data_plane_listeners(self) -> list[EndPoint]:
        """Every listener but the control-plane one (Kafka's ``dataPlaneListeners``)."""
        name = self.control_plane_listener_name
        return [ep for ep in self.listeners if ep.listener_name != name]

    @property
    def controller_to_broker_listener_name(self) -> str:
        """The listener the controller's channel connects to on every broker: the control-plane listener if set,
        else the inter-broker listener (``ControllerChannelManager.addNewBroker``)."""
        return self.control_plane_listener_name or self.inter_broker_listener_name

    def listener_ssl_values(self, listener_name: str) -> dict[str, Any]:
        """The ``ssl.*`` values of one listener: its ``listener.name.<listener>.ssl.*`` overrides, else the
        broker-wide values (Kafka's ``valuesWithPrefixOverride``)."""
        protocol = self.protocol_map.get(listener_name.upper(), "PLAINTEXT")
        return listener_ssl_values(self.values, self.originals, self.definitions, listener_name, protocol)

    #: keys a listener may override as ``listener.name.<listener>.<key>`` (Kafka's ListenerReconfigurableConfigs)
    LISTENER_CONNECTION_KEYS = ("max.connections", "max.connection.creation.rate")

    def listener_value(self, listener_name: str, key: str) -> Any:
        """``listener.name.<listener>.<key>`` if given (parsed and validated as ``key``), else ``key``'s value
        (Kafka's ``valuesWithPrefixOverride(listenerName.configPrefix)``)."""
        prefixed = f"listener.name.{listener_name.lower()}.{key}"
        if prefixed in self.originals:
            return self.definitions.parse_value(key, self.originals[prefixed])
        return self.values[key]

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return parse_max_connections_per_ip_overrides(self.values["max.connections.per.ip.overrides"])

    def _validate_connection_limits(self) -> None:
        overrides = self.max_connections_per_ip_overrides
        if self.values["max.connections.per.ip"] == 0 and not overrides:
            raise ConfigException("requirement failed: max.connections.per.ip can be set to zero only if "
                                  "max.connections.per.ip.overrides property is set.")
        for ep in self.listeners:
            for key in self.LISTENER_CONNECTION_KEYS:
                self.listener_value(ep.listener_name, key)

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(d) for d in self.values["log.dirs"]]

    def _validate(self) -> None:
        v = self.values
        # In Kafka's order (KafkaConfig.validateValues, ZooKeeper mode): the inter-broker listener, the advertised
        # listeners, then the control-plane listener.
        inter_broker = self.inter_broker_listener_name
        names = [e.listener_name for e in self.listeners]
        adv_names = [e.listener_name for e in self.advertised_listeners]
        if inter_broker not in adv_names:
            raise ConfigException(f"requirement failed: inter.broker.listener.name must be a listener name defined "
                                  f"in advertised.listeners. The valid options based on currently configured "
                                  f"listeners are {','.join(adv_names)}")
        if not set(adv_names) <= set(names):
            raise ConfigException(f"requirement failed: advertised.listeners listener names must be equal to or a "
                                  f"subset of the ones defined in listeners. Found {','.join(adv_names)}. The valid "
                                  f"options based on the current configuration are {','.join(names)}")
        if any(e.host == "0.0.0.0" for e in self.advertised_listeners):
            raise ConfigException("requirement failed: advertised.listeners cannot use the nonroutable meta-address "
                                  "0.0.0.0. Use a routable IP address.")
        control_plane = self.control_plane_listener_name
        if control_plane is not None:
            if control_plane not in adv_names:
                raise ConfigException(f"requirement failed: control.plane.listener.name must be a listener name "
                                      f"defined in advertised.listeners. The valid options based on currently "
                                      f"configured listeners are {','.join(adv_names)}")
            if control_plane == inter_broker:
                raise ConfigException(f"requirement failed: control.plane.listener.name, when defined, should have a "
                                      f"different value from the inter broker listener name. Currently they both "
                                      f"have the value {control_plane}")
        self._validate_connection_limits()
        check_authorizer_class_name(v["authorizer.class.name"])
        qb = v["queued.max.request.bytes"]
        if qb > 0 and qb < v["socket.request.max.bytes"]:
            raise ConfigException("requirement failed: queued.max.request.bytes must be larger or equal to "
                                  "socket.request.max.bytes")
        if v["connection.failed.authentication.delay.ms"] >= v["connections.max.idle.ms"]:
            raise ConfigException(f"requirement failed: connection.failed.authentication.delay.ms="
                                  f"{v['connection.failed.authentication.delay.ms']} should always be less than "
                                  f"connections.max.idle.ms={v['connections.max.idle.ms']} to prevent failed "
                                  f"authentication responses from timing out")
        validate_sasl_listeners(self)
        if v["replica.fetch.wait.max.ms"] > v["replica.lag.time.max.ms"]:
            raise ConfigException("requirement failed: replica.fetch.wait.max.ms should always be less than or equal "
                                  "to replica.lag.time.max.ms to prevent frequent changes in ISR")

DEFAULT_PROTOCOLS = DEFAULT_SECURITY_PROTOCOL_MAP


def server_setting(config: Optional[Mapping[str, Any]], key: str) -> Any:
    """``key`` from a broker's settings (a :class:`KafkaConfig` or a plain mapping, as unit tests pass), falling
    back to the default declared in :data:`BROKER_CONFIGS`: components never repeat a default literal."""
    value = config.get(key) if config is not None else None
    return BROKER_CONFIGS.default(key) if value is None else value
