"""Client configuration: Kafka's config names, types, defaults and validation for producer, consumer and admin.

Theory of operation
-------------------
Every Kafka client is configured with one flat map of dotted names (``bootstrap.servers``, ``acks``,
``linger.ms``...). The Java client declares each name once in a ``ConfigDef`` -- its type, default, validator
and importance -- and ``AbstractConfig`` parses the user's map against it: values given as strings are
converted (``"5"`` -> 5, ``"true"`` -> True), out-of-range values raise ``ConfigException``, and names nobody
declared are logged as "unused". kafkalab is stricter: an unknown name is an error, with the closest valid
name suggested (``lingr.ms`` -> did you mean ``linger.ms``?), because a typo in a notebook should fail loudly.

After parsing, a client post-processes values that depend on each other, as Java's ``ProducerConfig`` does:
``acks=all`` becomes ``-1``; idempotence (on by default) needs ``acks=all``, ``retries > 0`` and at most 5
requests in flight -- if the user *asked* for idempotence those are errors, otherwise idempotence is quietly
switched off; ``delivery.timeout.ms`` must cover ``linger.ms + request.timeout.ms``.

Not every declared name changes behaviour yet (security, metrics...); they are declared so configs written
for the Java client load unchanged, and :data:`IGNORED` documents which ones kafkalab accepts but ignores.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/config/{ConfigDef,AbstractConfig}.java``,
``clients/.../clients/{CommonClientConfigs,producer/ProducerConfig,consumer/ConsumerConfig,
admin/AdminClientConfig}.java``.
"""
from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Optional

__all__ = ["ConfigException", "ConfigKey", "ClientConfig", "PRODUCER_CONFIGS", "CONSUMER_CONFIGS",
           "ADMIN_CONFIGS", "IGNORED", "producer_config", "consumer_config", "admin_config", "parse_config"]

INT_MAX = 2**31 - 1


class ConfigException(ValueError):
    """A config name that does not exist, or a value of the wrong type or out of range (Java's name)."""


class ConfigKey(NamedTuple):
    name: str
    type: str                 # "string", "int", "long", "boolean", "list", "double", "class", "password"
    default: Any
    validator: Optional[Callable[[str, Any], None]] = None
    doc: str = ""


# -- validators -----------------------------------------------------------------------------------------------------
def at_least(low):
    def check(name, value):
        if value is not None and value < low:
            raise ConfigException(f"Invalid value {value} for configuration {name}: Value must be at least {low}")
    check.text = f"[{low},...]"
    return check


def between(low, high):
    def check(name, value):
        if value is not None and not low <= value <= high:
            raise ConfigException(f"Invalid value {value} for configuration {name}: "
                                  f"Value must be between {low} and {high}")
    check.text = f"[{low},...,{high}]"
    return check


def one_of(*choices, case_insensitive: bool = True):
    def check(name, value):
        if value is None:
            return
        values = value if isinstance(value, list) else [value]
        for v in values:
            probe = v.lower() if case_insensitive and isinstance(v, str) else v
            if probe not in choices:
                raise ConfigException(f"Invalid value {v!r} for configuration {name}: "
                                      f"String must be one of: {', '.join(map(str, choices))}")
    check.text = "[" + ", ".join(map(str, choices)) + "]"
    return check


def _non_empty_list(name, value):
    if not value:
        raise ConfigException(f"Missing required configuration {name!r}: give a list of host:port")


# -- the definitions -------------------------------------------------------------------------------------------------
def _k(name, type_, default, validator=None, doc=""):
    return ConfigKey(name, type_, default, validator, doc)


_COMMON = [
    _k("bootstrap.servers", "list", [], _non_empty_list, "host:port pairs for the first connection"),
    _k("client.id", "string", ""),
    _k("client.dns.lookup", "string", "use_all_dns_ips", one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    _k("metadata.max.age.ms", "long", 300_000, at_least(0), "refresh metadata at least this often"),
    _k("send.buffer.bytes", "int", 128 * 1024, at_least(-1)),
    _k("receive.buffer.bytes", "int", 64 * 1024, at_least(-1)),
    _k("reconnect.backoff.ms", "long", 50, at_least(0)),
    _k("reconnect.backoff.max.ms", "long", 1000, at_least(0)),
    _k("retry.backoff.ms", "long", 100, at_least(0)),
    _k("retry.backoff.max.ms", "long", 1000, at_least(0)),
    _k("request.timeout.ms", "int", 30_000, at_least(0)),
    _k("socket.connection.setup.timeout.ms", "long", 10_000, at_least(0)),
    _k("socket.connection.setup.timeout.max.ms", "long", 30_000, at_least(0)),
    _k("connections.max.idle.ms", "long", 540_000),
    _k("security.protocol", "string", "PLAINTEXT", one_of("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")),
    _k("metrics.sample.window.ms", "long", 30_000, at_least(0)),
    _k("metrics.num.samples", "int", 2, at_least(1)),
    _k("metrics.recording.level", "string", "INFO", one_of("info", "debug", "trace")),
    _k("metric.reporters", "list", []),
    _k("enable.metrics.push", "boolean", True),
    _k("metadata.recovery.strategy", "string", "none", one_of("none", "rebootstrap")),
]

_PRODUCER = [
    _k("acks", "string", "all", one_of("all", "-1", "0", "1")),
    _k("linger.ms", "long", 5, at_least(0), "wait this long for more records before sending a batch"),
    _k("batch.size", "int", 16384, at_least(0)),
    _k("buffer.memory", "long", 32 * 1024 * 1024, at_least(0)),
    _k("compression.type", "string", "none", one_of("none", "gzip", "snappy", "lz4", "zstd")),
    _k("compression.gzip.level", "int", -1, between(-1, 9)),
    _k("compression.lz4.level", "int", 9, between(1, 17)),
    _k("compression.zstd.level", "int", 3, between(-131072, 22)),
    _k("max.in.flight.requests.per.connection", "int", 5, at_least(1)),
    _k("retries", "int", INT_MAX, between(0, INT_MAX)),
    _k("delivery.timeout.ms", "int", 120_000, at_least(0)),
    _k("max.block.ms", "long", 60_000, at_least(0)),
    _k("max.request.size", "int", 1024 * 1024, at_least(0)),
    _k("enable.idempotence", "boolean", True),
    _k("transactional.id", "string", None),
    _k("transaction.timeout.ms", "int", 60_000),
    _k("partitioner", "string", "murmur2_random",
       one_of("murmur2_random", "murmur2", "consistent_random", "consistent", "random"),
       "murmur2_random = the Java client's built-in partitioner; consistent_random = librdkafka's default"),
    _k("partitioner.class", "class", None),
    _k("partitioner.ignore.keys", "boolean", False),
    _k("partitioner.adaptive.partitioning.enable", "boolean", True),
    _k("partitioner.availability.timeout.ms", "long", 0, at_least(0)),
    _k("metadata.max.idle.ms", "long", 300_000, at_least(5000)),
    _k("key.serializer", "class", None),
    _k("value.serializer", "class", None),
    _k("interceptor.classes", "list", []),
]

_CONSUMER = [
    _k("group.id", "string", None),
    _k("group.instance.id", "string", None),
    _k("group.protocol", "string", "classic", one_of("classic", "consumer")),
    _k("group.remote.assignor", "string", None),
    _k("session.timeout.ms", "int", 45_000),
    _k("heartbeat.interval.ms", "int", 3_000),
    _k("partition.assignment.strategy", "list", ["range", "cooperative-sticky"],
       one_of("range", "roundrobin", "sticky", "cooperative-sticky"),
       "assignors by name: range, roundrobin, sticky, cooperative-sticky"),
    _k("enable.auto.commit", "boolean", True),
    _k("auto.commit.interval.ms", "int", 5_000, at_least(0)),
    _k("auto.offset.reset", "string", "latest", one_of("latest", "earliest", "none")),
    _k("fetch.min.bytes", "int", 1, at_least(0)),
    _k("fetch.max.bytes", "int", 50 * 1024 * 1024, at_least(0)),
    _k("fetch.max.wait.ms", "int", 500, at_least(0)),
    _k("max.partition.fetch.bytes", "int", 1024 * 1024, at_least(0)),
    _k("max.poll.records", "int", 500, at_least(1)),
    _k("max.poll.interval.ms", "int", 300_000, at_least(1)),
    _k("check.crcs", "boolean", True),
    _k("isolation.level", "string", "read_uncommitted", one_of("read_uncommitted", "read_committed")),
    _k("exclude.internal.topics", "boolean", True),
    _k("allow.auto.create.topics", "boolean", True),
    _k("client.rack", "string", ""),
    _k("default.api.timeout.ms", "int", 60_000, at_least(0)),
    _k("key.deserializer", "class", None),
    _k("value.deserializer", "class", None),
    _k("interceptor.classes", "list", []),
]

_ADMIN = [
    _k("retries", "int", INT_MAX, between(0, INT_MAX)),
    _k("default.api.timeout.ms", "int", 60_000, at_least(0)),
]


def _table(*groups) -> dict[str, ConfigKey]:
    out: dict[str, ConfigKey] = {}
    for key in itertools.chain(*groups):
        out[key.name] = key
    return out


#: name -> ConfigKey, per client type.
PRODUCER_CONFIGS = _table(_COMMON, _PRODUCER)
CONSUMER_CONFIGS = _table(_COMMON, _CONSUMER)
ADMIN_CONFIGS = _table(_COMMON, _ADMIN)
ADMIN_CONFIGS["connections.max.idle.ms"] = ADMIN_CONFIGS["connections.max.idle.ms"]._replace(default=300_000)
CONSUMER_CONFIGS["request.timeout.ms"] = CONSUMER_CONFIGS["request.timeout.ms"]._replace(default=30_000)

#: Declared (so Java configs load) but without effect in kafkalab's clients.
IGNORED = frozenset({
    "client.dns.lookup", "send.buffer.bytes", "receive.buffer.bytes", "security.protocol", "metrics.sample.window.ms",
    "metrics.num.samples", "metrics.recording.level", "metric.reporters", "enable.metrics.push",
    "metadata.recovery.strategy", "buffer.memory", "partitioner.class", "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms", "metadata.max.idle.ms", "key.serializer", "value.serializer",
    "interceptor.classes", "key.deserializer", "value.deserializer", "connections.max.idle.ms",
    "socket.connection.setup.timeout.max.ms", "transactional.id", "transaction.timeout.ms",
})


# -- parsing ---------------------------------------------------------------------------------------------------------
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _convert(key: ConfigKey, value: Any) -> Any:
    name, t = key.name, key.type
    if value is None:
        return None
    try:
        if t in ("int", "long"):
            if isinstance(value, bool):
                raise TypeError
            if isinstance(value, str):
                value = int(value.strip())
            if not isinstance(value, int):
                raise TypeError
            return value
        if t == "double":
            return float(value)
        if t == "boolean":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                return value.strip().lower() in _TRUE
            raise TypeError
        if t == "list":
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            return [str(v).strip() for v in value]
        if t == "string":
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value).strip()
        return value
    except (TypeError, ValueError):
        raise ConfigException(f"Invalid value {value!r} for configuration {name}: "
                              f"expected a value of type {t.upper()}") from None


def suggest(name: str, valid) -> str:
    """`` Did you mean 'linger.ms'?`` for the closest valid names, or ``""``."""
    close = difflib.get_close_matches(name, list(valid), n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


class ClientConfig(Mapping):
    """The parsed config: every declared name with its value (given or default); ``originals`` = what was given."""

    def __init__(self, kind: str, values: dict, originals: dict):
        self.kind = kind
        self._values = values
        self.originals = originals

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def user_set(self, name: str) -> bool:
        return name in self.originals

    def __repr__(self) -> str:
        return f"{self.kind.capitalize()}Config({self.originals!r})"


def parse_config(kind: str, table: dict[str, ConfigKey], config: Optional[Mapping]) -> ClientConfig:
    """Check ``config`` against ``table``: reject unknown names (with a suggestion), convert and validate values."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ConfigException(f"a {kind} takes one dict of Kafka config names, not {type(config).__name__}")
    unknown = [n for n in config if n not in table]
    if unknown:
        lines = [f"Unknown {kind} configuration {n!r}.{suggest(str(n), table)}" for n in unknown]
        raise ConfigException("\n".join(lines))
    values = {}
    for name, key in table.items():
        value = _convert(key, config[name]) if name in config else key.default
        if isinstance(value, list):
            value = list(value)
        if key.validator is not None:
            key.validator(name, value)
        values[name] = value
    return ClientConfig(kind, values, dict(config))


_CLIENT_IDS = {"producer": itertools.count(1), "consumer": itertools.count(1), "adminclient": itertools.count(1)}


def _client_id(cfg: ClientConfig, kind: str) -> None:
    if not cfg.user_set("client.id"):
        cfg._values["client.id"] = f"{kind}-{next(_CLIENT_IDS[kind])}"


def producer_config(config: Optional[Mapping]) -> ClientConfig:
    """Parse a producer config and apply ProducerConfig's cross-checks (acks, idempotence, timeouts)."""
    cfg = parse_config("producer", PRODUCER_CONFIGS, config)
    v = cfg._values
    v["acks"] = -1 if v["acks"].lower() in ("all", "-1") else int(v["acks"])
    if v["enable.idempotence"]:
        problems = []
        if v["retries"] == 0:
            problems.append("Must set retries to non-zero when using the idempotent producer.")
        if v["acks"] != -1:
            problems.append("Must set acks to all in order to use the idempotent producer. "
                            "Otherwise we cannot guarantee idempotence.")
        if v["max.in.flight.requests.per.connection"] > 5:
            problems.append("Must set max.in.flight.requests.per.connection to at most 5 to use the "
                            "idempotent producer.")
        if problems and cfg.user_set("enable.idempotence"):
            raise ConfigException(" ".join(problems))
        if problems:                                # Java turns idempotence off quietly when it was a default
            v["enable.idempotence"] = False
    if cfg.user_set("transactional.id") and v["transactional.id"] is not None:
        raise ConfigException("transactional.id: transactions are not implemented by kafkalab's producer yet")
    if v["delivery.timeout.ms"] < v["linger.ms"] + v["request.timeout.ms"]:
        if cfg.user_set("delivery.timeout.ms"):
            raise ConfigException(f"delivery.timeout.ms should be equal to or larger than linger.ms + "
                                  f"request.timeout.ms ({v['linger.ms'] + v['request.timeout.ms']})")
        v["delivery.timeout.ms"] = v["linger.ms"] + v["request.timeout.ms"]
    _client_id(cfg, "producer")
    return cfg


def consumer_config(config: Optional[Mapping]) -> ClientConfig:
    cfg = parse_config("consumer", CONSUMER_CONFIGS, config)
    v = cfg._values
    if v["group.id"] is None and cfg.user_set("enable.auto.commit") and v["enable.auto.commit"]:
        raise ConfigException("enable.auto.commit cannot be set to true when no group.id is given")
    if v["group.id"] is None:
        v["enable.auto.commit"] = False
    if v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
        raise ConfigException("heartbeat.interval.ms must be lower than session.timeout.ms")
    _client_id(cfg, "consumer")
    return cfg


def admin_config(config: Optional[Mapping]) -> ClientConfig:
    cfg = parse_config("admin", ADMIN_CONFIGS, config)
    _client_id(cfg, "adminclient")
    return cfg
