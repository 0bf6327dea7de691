"""Broker configuration: ``server.properties`` with Kafka's names, defaults and start-up checks.

Theory of operation
-------------------
A Kafka broker is configured by a Java properties file (``config/server.properties``) plus overrides on the
command line (``kafka-server-start.sh server.properties --override log.dirs=/data``). Every key has a type,
a default and a validator; a bad value stops the broker at start-up with a message naming the key. The keys
are the vocabulary of operating Kafka, so kafkalab uses exactly Kafka's names: a learner who tunes
``log.segment.bytes`` here tunes the same thing on a real cluster.

Two families live side by side:

* broker keys (``broker.id``, ``listeners``, ``num.io.threads``, ``queued.max.requests``, ...) defined here;
* log keys (``log.segment.bytes``, ``log.retention.hours``, ``message.max.bytes``, ...), the broker-wide
  defaults of topic configs (``segment.bytes``, ``retention.ms``, ``max.message.bytes``...), defined with the
  topic configs in :mod:`kafkalab.storage.log_config`.

kafkalab's own additions start with ``kafkalab.`` so nobody mistakes them for Kafka's.

Mirrors: ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (``validateValues``) and
``clients/src/main/java/org/apache/kafka/common/config/ConfigDef.java``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional

from kafkalab.network.endpoint import (DEFAULT_SECURITY_PROTOCOL_MAP, ConfigError, EndPoint, parse_listeners,
                                       parse_protocol_map)

__all__ = ["ConfigKey", "KafkaConfig", "BROKER_CONFIGS", "load_properties", "ConfigError"]

LONG_MAX = 9223372036854775807


class ConfigKey(NamedTuple):
    name: str
    type: str                  # int, long, double, boolean, string, list, password
    default: Any
    doc: str
    dynamic: str = "read-only"  # read-only, per-broker, cluster-wide (what kafka-configs may change live)
    minimum: Optional[float] = None


def _k(name, type_, default, doc, dynamic="read-only", minimum=None) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, dynamic, minimum)


#: Broker keys kafkalab implements (log-level keys come from kafkalab.storage.log_config).
BROKER_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in (
    _k("broker.id", "int", 0, "This broker's id, unique in the cluster (kafkalab's default is 0, Kafka's -1).",
       minimum=-1),
    _k("broker.rack", "string", None, "The rack of this broker, for rack-aware replica placement."),
    _k("listeners", "list", "PLAINTEXT://127.0.0.1:9092", "Where to listen: NAME://host:port, comma separated."),
    _k("advertised.listeners", "list", None, "What Metadata tells clients to connect to (default: listeners)."),
    _k("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Listener name -> security protocol."),
    _k("inter.broker.listener.name", "string", None, "The listener brokers and the controller use."),
    _k("security.inter.broker.protocol", "string", "PLAINTEXT",
       "Security protocol between brokers (if inter.broker.listener.name is not set)."),
    _k("log.dirs", "list", "kafka-logs", "Directories holding the log data (kafkalab: relative to the working "
       "directory; Kafka's default is /tmp/kafka-logs)."),
    _k("num.partitions", "int", 1, "Partitions of an auto-created topic.", minimum=1),
    _k("default.replication.factor", "int", 1, "Replication factor of an auto-created topic.", minimum=1),
    _k("auto.create.topics.enable", "boolean", True, "Create a topic when a client asks for its metadata or "
       "produces to it."),
    _k("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
    _k("num.network.threads", "int", 3, "Network threads (kafkalab: informational; one event loop).", minimum=1),
    _k("num.io.threads", "int", 8, "Request handlers working the request queue.", minimum=1),
    _k("queued.max.requests", "int", 500, "Requests that may wait in the request queue.", minimum=1),
    _k("queued.max.request.bytes", "long", -1, "Bytes that may wait in the request queue (-1: no limit)."),
    _k("socket.request.max.bytes", "int", 104857600, "The largest request the broker accepts.", minimum=1),
    _k("socket.send.buffer.bytes", "int", 102400, "SO_SNDBUF of the socket server's connections (-1: OS default)."),
    _k("socket.receive.buffer.bytes", "int", 102400, "SO_RCVBUF of the socket server's sockets (-1: OS default)."),
    _k("connections.max.idle.ms", "long", 600000, "Close connections idle for longer than this."),
    _k("connection.failed.authentication.delay.ms", "int", 100, "Delay before closing after a failed login."),
    _k("fetch.max.bytes", "int", 57671680, "Broker-side cap on the bytes of one Fetch response.", minimum=1024),
    _k("replica.lag.time.max.ms", "long", 30000, "A follower that has not caught up for this long leaves the "
       "ISR."),
    _k("replica.fetch.wait.max.ms", "int", 500, "Max wait of a follower's fetch."),
    _k("replica.fetch.min.bytes", "int", 1, "Min bytes of a follower's fetch."),
    _k("replica.fetch.max.bytes", "int", 1048576, "Bytes per partition a follower asks for."),
    _k("replica.fetch.response.max.bytes", "int", 10485760, "Bytes a follower asks for in one Fetch response."),
    _k("replica.fetch.backoff.ms", "int", 1000, "Sleep of a replica fetcher after a fetch error."),
    _k("replica.socket.timeout.ms", "int", 30000, "Socket timeout of a replica fetcher's requests."),
    _k("num.replica.fetchers", "int", 1, "Fetcher threads per source broker.", minimum=1),
    _k("controller.socket.timeout.ms", "int", 30000, "Socket timeout of the controller's requests to brokers."),
    _k("producer.purgatory.purge.interval.requests", "int", 1000, "Purge completed produce requests from the "
       "purgatory's watch lists after this many."),
    _k("fetch.purgatory.purge.interval.requests", "int", 1000, "Purge completed fetch requests from the "
       "purgatory's watch lists after this many."),
    _k("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "How often high watermarks are saved."),
    _k("log.retention.check.interval.ms", "long", 300000, "How often old segments are looked for."),
    _k("log.flush.scheduler.interval.ms", "long", LONG_MAX, "How often logs are checked for a time-based flush."),
    _k("log.flush.offset.checkpoint.interval.ms", "int", 60000, "How often recovery points are saved."),
    _k("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, "How often log start offsets are saved."),
    _k("log.cleaner.enable", "boolean", True, "Run the log cleaner (compaction)."),
    _k("log.cleaner.backoff.ms", "long", 15000, "Sleep of the cleaner when there is nothing to clean."),
    _k("zookeeper.connect", "string", "embedded", "The coordination store (kafkalab: 'embedded', in-process)."),
    _k("zookeeper.session.timeout.ms", "int", 18000, "A broker whose session is silent this long is dead."),
    _k("controlled.shutdown.enable", "boolean", True, "Move leadership away before stopping."),
    _k("controlled.shutdown.max.retries", "int", 3, "ControlledShutdown attempts before stopping anyway."),
    _k("controlled.shutdown.retry.backoff.ms", "long", 5000, "Wait between ControlledShutdown attempts."),
    _k("offsets.topic.num.partitions", "int", 50, "Partitions of __consumer_offsets.", minimum=1),
    _k("offsets.topic.replication.factor", "short", 1, "Replication factor of __consumer_offsets (Kafka's built-in "
       "default is 3; its sample server.properties sets 1, as kafkalab does).", minimum=1),
    _k("group.min.session.timeout.ms", "int", 6000, "Smallest session.timeout.ms a group member may ask for."),
    _k("group.max.session.timeout.ms", "int", 1800000, "Largest session.timeout.ms a group member may ask for."),
    _k("group.initial.rebalance.delay.ms", "int", 3000, "How long the first rebalance of an empty group waits "
       "for more members to join."),
    _k("group.max.size", "int", 2147483647, "Most members one consumer group may have.", minimum=1),
    _k("offsets.retention.minutes", "int", 10080, "How long the offsets of an empty group are kept.", minimum=1),
    _k("offsets.retention.check.interval.ms", "long", 600000, "How often expired offsets are looked for.",
       minimum=1),
    _k("offsets.commit.timeout.ms", "int", 5000, "How long an offset commit waits for the in-sync replicas of "
       "__consumer_offsets (acks=all) before failing.", minimum=1),
    _k("offset.metadata.max.bytes", "int", 4096, "Largest metadata string of a committed offset."),
    _k("transactional.id.expiration.ms", "int", 604800000, "Forget an idle transactional id after this."),
    _k("producer.id.expiration.ms", "int", 86400000, "Forget an idle producer id after this."),
    _k("kafkalab.zookeeper.data.dir", "string", None, "Where the embedded coordination store keeps its data "
       "(default: 'zookeeper' next to the first log dir)."),
)}


_TYPE_NAMES = {"BOOLEAN": "boolean", "STRING": "string", "INT": "int", "SHORT": "short", "LONG": "long",
               "DOUBLE": "double", "LIST": "list", "CLASS": "string", "PASSWORD": "password"}


def broker_log_configs() -> list[ConfigKey]:
    """The broker-level defaults of topic configs (``log.segment.bytes`` for ``segment.bytes``...), taken from
    the synonyms table of :mod:`kafkalab.storage.log_config` so the two can never disagree."""
    from kafkalab.storage.log_config import TOPIC_CONFIGS

    keys = []
    for key in TOPIC_CONFIGS.values():
        for syn in key.synonyms:
            type_name = _TYPE_NAMES.get(key.type.name, "string") if syn.factor == 1 else "int"
            default = ",".join(syn.default) if isinstance(syn.default, list) else syn.default
            keys.append(ConfigKey(syn.name, type_name, default,
                                  f"The broker's default for the topic config {key.name}.", "cluster-wide"))
    return keys


def load_properties(path) -> dict[str, str]:
    """Read a Java ``.properties`` file as ``java.util.Properties.load`` does: ``key=value`` / ``key: value`` /
    ``key value``; ``#`` and ``!`` comment lines; a line ending in an odd number of backslashes continues on the
    next (whose leading whitespace is dropped); escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` -> ``x`` in keys and
    values (so ``\\=``, ``\\:`` and ``\\ `` put separators into a key, and ``C:\\\\kafka`` is ``C:\\kafka``). Values
    are trimmed, as Kafka's ``ConfigDef`` trims every value it parses."""
    props: dict[str, str] = {}
    for line in _logical_lines(Path(path).read_text(encoding="utf-8")):
        key, value = _split_property(line)
        props[key] = value
    return props


_WS = " \t\f"


def _logical_lines(text: str):
    pending: Optional[str] = None
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(_WS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending:
        yield pending


def _split_property(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" + _WS:
        i += 2 if line[i] == "\\" else 1
    key_end = min(i, n)
    while i < n and line[i] in _WS:
        i += 1
    if i < n and line[i] in "=:":
        i += 1
    while i < n and line[i] in _WS:
        i += 1
    return _unescape(line[:key_end]), _unescape(line[i:]).strip()


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:   # a lone backslash at the very end of the file
            break
        c = text[i + 1]
        if c == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(c, c))
        i += 2
    return "".join(out)


def _convert(key: ConfigKey, value: Any):
    if value is None:
        return None
    name, t = key.name, key.type
    try:
        if t in ("int", "long", "short"):
            v = int(str(value).strip())
        elif t == "double":
            v = float(value)
        elif t == "boolean":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s not in ("true", "false"):
                raise ValueError
            return s == "true"
        elif t == "list":
            return value if isinstance(value, list) else [s.strip() for s in str(value).split(",") if s.strip()]
        else:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number of type "
                          f"{t.upper()}" if t != "boolean" else
                          f"Invalid value {value} for configuration {name}: Expected value to be either true or "
                          f"false") from None
    if key.minimum is not None and v < key.minimum:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {key.minimum:g}")
    return v


class KafkaConfig:
    """A validated broker configuration. ``config["log.dirs"]`` gives typed values (defaults filled in);
    ``config.originals`` what was explicitly given."""

    def __init__(self, props: Optional[Mapping[str, Any]] = None):
        self.originals: dict[str, Any] = {k: v for k, v in dict(props or {}).items()}
        self.definitions: dict[str, ConfigKey] = dict(BROKER_CONFIGS)
        for key in broker_log_configs():
            self.definitions.setdefault(key.name, key)
        self.values: dict[str, Any] = {}
        for name, key in self.definitions.items():
            self.values[name] = _convert(key, self.originals.get(name, key.default))
        self.unknown = sorted(k for k in self.originals if k not in self.definitions
                              and not k.startswith("listener.name."))
        self._validate()

    @classmethod
    def from_file(cls, path, overrides: Optional[Mapping[str, Any]] = None) -> "KafkaConfig":
        props = load_properties(path)
        props.update(overrides or {})
        return cls(props)

    def __getitem__(self, name: str):
        return self.values[name] if name in self.values else self.originals[name]

    def get(self, name: str, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def is_default(self, name: str) -> bool:
        return name not in self.originals

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
        name = self.values["inter.broker.listener.name"]
        if name:
            return name.upper()
        proto = self.values["security.inter.broker.protocol"].upper()
        for ep in self.advertised_listeners:
            if ep.security_protocol == proto:
                return ep.listener_name
        return proto

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(d) for d in self.values["log.dirs"]]

    def _validate(self) -> None:
        v = self.values
        if "inter.broker.listener.name" in self.originals and "security.inter.broker.protocol" in self.originals:
            raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should "
                              "be set.")
        protocol_map = self.protocol_map
        listeners = self.listeners
        advertised = self.advertised_listeners
        names = {e.listener_name for e in listeners}
        adv_names = [e.listener_name for e in advertised]
        if not set(adv_names) <= names:
            raise ConfigError(f"requirement failed: advertised.listeners listener names must be equal to or a subset "
                              f"of the ones defined in listeners. Found {','.join(adv_names)}. The valid options "
                              f"based on the current configuration are {','.join(sorted(names))}")
        if any(e.host == "0.0.0.0" for e in advertised):
            raise ConfigError("requirement failed: advertised.listeners cannot use the nonroutable meta-address "
                              "0.0.0.0. Use a routable IP address.")
        ibl = v["inter.broker.listener.name"]
        if ibl:
            if ibl.upper() not in protocol_map:
                raise ConfigError(f"Listener with name {ibl} defined in inter.broker.listener.name not found in "
                                  f"listener.security.protocol.map.")
            if ibl.upper() not in adv_names:
                raise ConfigError(f"requirement failed: inter.broker.listener.name must be a listener name defined in "
                                  f"advertised.listeners. The valid options based on currently configured listeners "
                                  f"are {','.join(adv_names)}")
        elif self.inter_broker_listener_name not in adv_names:
            raise ConfigError(f"requirement failed: inter.broker.listener.name must be a listener name defined in "
                              f"advertised.listeners. The valid options based on currently configured listeners are "
                              f"{','.join(adv_names)}")
        qb = v["queued.max.request.bytes"]
        if qb > 0 and qb < v["socket.request.max.bytes"]:
            raise ConfigError("requirement failed: queued.max.request.bytes must be larger or equal to "
                              "socket.request.max.bytes")
        if v["connection.failed.authentication.delay.ms"] >= v["connections.max.idle.ms"]:
            raise ConfigError(f"requirement failed: connection.failed.authentication.delay.ms="
                              f"{v['connection.failed.authentication.delay.ms']} should always be less than "
                              f"connections.max.idle.ms={v['connections.max.idle.ms']} to prevent failed "
                              f"authentication responses from timing out")
        if v["replica.fetch.wait.max.ms"] > v["replica.lag.time.max.ms"]:
            raise ConfigError("requirement failed: replica.fetch.wait.max.ms should always be less than or equal to "
                              "replica.lag.time.max.ms to prevent frequent changes in ISR")

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(self.originals.items()))
        return f"KafkaConfig({shown})"


DEFAULT_PROTOCOLS = DEFAULT_SECURITY_PROTOCOL_MAP
