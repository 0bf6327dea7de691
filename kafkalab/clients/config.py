"""Client configuration: Kafka's config names, types, defaults and validation for producer, consumer and admin.

Theory of operation
-------------------
Every Kafka client is configured with one flat map of dotted names (``bootstrap.servers``, ``acks``,
``linger.ms``...). The Java client declares each name once in a ``ConfigDef`` -- its type, default, validator
and importance -- and ``AbstractConfig`` parses the user's map against it (kafkalab's own
:mod:`kafkalab.common.config` does the same for the broker, the topics and these clients): values given as strings are
converted (``"5"`` -> 5, ``"true"`` -> True), out-of-range values raise ``ConfigException``, and names nobody
declared are logged as "unused". kafkalab is stricter: an unknown name is an error, with the closest valid
name suggested (``lingr.ms`` -> did you mean ``linger.ms``?), because a typo in a notebook should fail loudly.

After parsing, a client post-processes values that depend on each other, as Java's ``ProducerConfig`` does:
``acks=all`` becomes ``-1``; idempotence (on by default) needs ``acks=all``, ``retries > 0`` and at most 5
requests in flight -- if the user *asked* for idempotence those are errors, otherwise idempotence is quietly
switched off; ``delivery.timeout.ms`` must cover ``linger.ms + request.timeout.ms``.

Not every declared name changes behaviour yet (metric reporters...); they are declared so configs written
for the Java client load unchanged, marked ``inert`` in the tables, and :data:`IGNORED` lists them. Booleans
may also be written ``yes``/``no`` or ``1``/``0`` (as librdkafka accepts them).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/config/{ConfigDef,AbstractConfig}.java``,
``clients/.../clients/{CommonClientConfigs,producer/ProducerConfig,consumer/ConsumerConfig,
admin/AdminClientConfig}.java``.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Optional

from kafkalab.clients.sasl import check_security
from kafkalab.common.config import (INT_MAX, CaseInsensitiveValidString, ConfigDef, ConfigException, ConfigKey,
                                    Importance, NO_DEFAULT_VALUE, NonEmptyList, NonEmptyString, Password, Range,
                                    ValidList,
                                    Type, suggest)
from kafkalab.security.ssl_configs import define_client_ssl_configs

T = Type

__all__ = ["ConfigException", "ConfigKey", "ClientConfig", "PRODUCER_CONFIGS", "CONSUMER_CONFIGS",
           "ADMIN_CONFIGS", "IGNORED", "producer_config", "consumer_config", "admin_config", "parse_config",
           "suggest"]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
at_least, between = Range.at_least, Range.between
one_of = CaseInsensitiveValidString.in_


# -- the definitions -------------------------------------------------------------------------------------------------
def _common() -> ConfigDef:
    """``CommonClientConfigs``: the keys every client has (and ``SslConfigs``' TLS keys)."""
    return define_client_ssl_configs(
        ConfigDef(lenient_booleans=True)
        .define("bootstrap.servers", T.LIST, NO_DEFAULT_VALUE,
                NonEmptyList("Missing required configuration 'bootstrap.servers': give a list of host:port"), H,
                "host:port pairs for the first connection; the cluster's metadata names the rest.")
        .define("client.id", T.STRING, "", None, M, "A name sent with every request, for the broker's logs and "
                "quotas (default: producer-N, consumer-N, adminclient-N).")
        .define("client.dns.lookup", T.STRING, "use_all_dns_ips",
                one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"), M,
                "How host names are resolved.", inert=True)
        .define("metadata.max.age.ms", T.LONG, 300_000, at_least(0), L, "Refresh metadata at least this often.")
        .define("send.buffer.bytes", T.INT, 128 * 1024, at_least(-1), M, "SO_SNDBUF (-1: OS default).", inert=True)
        .define("receive.buffer.bytes", T.INT, 64 * 1024, at_least(-1), M, "SO_RCVBUF (-1: OS default).",
                inert=True)
        .define("reconnect.backoff.ms", T.LONG, 50, at_least(0), L, "Wait before reconnecting to a broker.")
        .define("reconnect.backoff.max.ms", T.LONG, 1000, at_least(0), L, "The reconnect backoff grows "
                "exponentially up to this.")
        .define("retry.backoff.ms", T.LONG, 100, at_least(0), L, "Wait before retrying a failed request.")
        .define("retry.backoff.max.ms", T.LONG, 1000, at_least(0), L, "The retry backoff grows exponentially up "
                "to this.")
        .define("request.timeout.ms", T.INT, 30_000, at_least(0), M, "How long to wait for a response before "
                "failing (or retrying) the request.")
        .define("socket.connection.setup.timeout.ms", T.LONG, 10_000, at_least(0), M, "How long a connection "
                "attempt may take.")
        .define("socket.connection.setup.timeout.max.ms", T.LONG, 30_000, at_least(0), M, "The connection setup "
                "timeout grows exponentially up to this.", inert=True)
        .define("connections.max.idle.ms", T.LONG, 540_000, None, M, "Close connections idle for longer than "
                "this.", inert=True)
        .define("security.protocol", T.STRING, "PLAINTEXT", one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT",
                                                                    "SASL_SSL"), M,
                "Protocol used to talk to brokers: SSL and SASL_SSL connect with TLS (the ssl.* keys).")
        .define("metrics.sample.window.ms", T.LONG, 30_000, at_least(0), L,
                "The length of one sample of the client's metrics (rates span metrics.num.samples of them).")
        .define("metrics.num.samples", T.INT, 2, at_least(1), L, "Samples kept per metric (the rates' window).")
        .define("metrics.recording.level", T.STRING, "INFO", one_of("INFO", "DEBUG", "TRACE"), L,
                "Highest recording level of metrics.", inert=True)
        .define("metric.reporters", T.LIST, [], None, L, "Metrics reporter classes.", inert=True)
        .define("enable.metrics.push", T.BOOLEAN, True, None, L, "Push client metrics to the broker (KIP-714).",
                inert=True)
        .define("metadata.recovery.strategy", T.STRING, "none", one_of("none", "rebootstrap"), L,
                "What to do when no known broker is reachable.", inert=True)
        .define("sasl.mechanism", T.STRING, "GSSAPI", None, M, "SASL mechanism of a SASL_* protocol (kafkalab: "
                "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).")
        .define("sasl.jaas.config", T.PASSWORD, None, None, M, "The JAAS login line with username and password, "
                "in Java's syntax; parsed, never loaded.")
    )


PRODUCER_CONFIGS = (
    _common()
    .define("acks", T.STRING, "all", one_of("all", "-1", "0", "1"), H, "Acknowledgements the leader waits for: "
            "0 (none), 1 (the leader's own write), all/-1 (the whole ISR).")
    .define("linger.ms", T.LONG, 5, at_least(0), M, "Wait this long for more records before sending a batch.")
    .define("batch.size", T.INT, 16384, at_least(0), M, "Largest batch of records per partition, in bytes.")
    .define("buffer.memory", T.LONG, 32 * 1024 * 1024, at_least(0), H, "Memory for records waiting to be sent.",
            inert=True)
    .define("compression.type", T.STRING, "none", one_of("none", "gzip", "snappy", "lz4", "zstd"), H,
            "Codec of the batches the producer sends.")
    .define("compression.gzip.level", T.INT, -1, between(-1, 9), L, "gzip level (-1: the codec's default).")
    .define("compression.lz4.level", T.INT, 9, between(1, 17), L, "lz4 level.")
    .define("compression.zstd.level", T.INT, 3, between(-131072, 22), L, "zstd level.")
    .define("max.in.flight.requests.per.connection", T.INT, 5, at_least(1), L, "Unanswered requests per "
            "connection (at most 5 with idempotence).")
    .define("retries", T.INT, INT_MAX, between(0, INT_MAX), H, "How often a failed batch is retried (within "
            "delivery.timeout.ms).")
    .define("delivery.timeout.ms", T.INT, 120_000, at_least(0), M, "Upper bound on the time from send() to "
            "success or failure.")
    .define("max.block.ms", T.LONG, 60_000, at_least(0), M, "How long send() may block for metadata.")
    .define("max.request.size", T.INT, 1024 * 1024, at_least(0), M, "Largest request the producer sends.")
    .define("enable.idempotence", T.BOOLEAN, True, None, L, "Producer id and sequence numbers, so retries never "
            "duplicate.")
    .define("transactional.id", T.STRING, None, NonEmptyString(), L, "The id that makes the producer "
            "transactional (idempotence implied) and fences older producers with the same id.")
    .define("transaction.timeout.ms", T.INT, 60_000, None, L, "How long a transaction may stay open before the "
            "coordinator aborts it (at most the broker's transaction.max.timeout.ms).")
    .define("partitioner", T.STRING, "murmur2_random",
            one_of("murmur2_random", "murmur2", "consistent_random", "consistent", "random"), M,
            "murmur2_random = the Java client's built-in partitioner; consistent_random = librdkafka's default")
    .define("partitioner.class", T.CLASS, None, None, M, "A partitioner class.", inert=True)
    .define("partitioner.ignore.keys", T.BOOLEAN, False, None, M, "Ignore keys when choosing partitions.")
    .define("partitioner.adaptive.partitioning.enable", T.BOOLEAN, True, None, L, "Keyless records: the "
            "sticky partitioner favours partitions with shorter queues of batches (faster brokers).")
    .define("partitioner.availability.timeout.ms", T.LONG, 0, at_least(0), L, "Keyless records: leave out "
            "partitions whose leader could not take batches for longer than this (0 = never; needs adaptive "
            "partitioning).")
    .define("metadata.max.idle.ms", T.LONG, 300_000, at_least(5000), L, "Forget the metadata of topics idle "
            "this long.", inert=True)
    .define("key.serializer", T.CLASS, None, None, H, "Serializer of keys (kafkalab sends bytes).", inert=True)
    .define("value.serializer", T.CLASS, None, None, H, "Serializer of values (kafkalab sends bytes).",
            inert=True)
    .define("interceptor.classes", T.LIST, [], None, L, "Interceptor classes.", inert=True)
)

CONSUMER_CONFIGS = (
    _common()
    .define("group.id", T.STRING, None, None, H, "The consumer group; without one, no commits and no "
            "subscribe().")
    .define("group.instance.id", T.STRING, None, None, M, "Static membership (KIP-345).")
    .define("group.protocol", T.STRING, "classic", one_of("classic", "consumer"), M, "Rebalance protocol.")
    .define("group.remote.assignor", T.STRING, None, None, M, "Server-side assignor (consumer protocol).")
    .define("session.timeout.ms", T.INT, 45_000, None, H, "A member silent this long leaves the group.")
    .define("heartbeat.interval.ms", T.INT, 3_000, None, H, "How often the member heartbeats.")
    .define("partition.assignment.strategy", T.LIST, ["range", "cooperative-sticky"],
            ValidList.in_("range", "roundrobin", "sticky", "cooperative-sticky", case_insensitive=True), M,
            "assignors by name: range, roundrobin, sticky, cooperative-sticky")
    .define("enable.auto.commit", T.BOOLEAN, True, None, M, "Commit positions in the background.")
    .define("auto.commit.interval.ms", T.INT, 5_000, at_least(0), L, "How often positions are committed.")
    .define("auto.offset.reset", T.STRING, "latest", one_of("latest", "earliest", "none"), M, "Where to start "
            "without a committed offset.")
    .define("fetch.min.bytes", T.INT, 1, at_least(0), H, "The broker waits for this many bytes (or "
            "fetch.max.wait.ms).")
    .define("fetch.max.bytes", T.INT, 50 * 1024 * 1024, at_least(0), M, "Most bytes in one Fetch response.")
    .define("fetch.max.wait.ms", T.INT, 500, at_least(0), L, "How long the broker may hold a Fetch.")
    .define("max.partition.fetch.bytes", T.INT, 1024 * 1024, at_least(0), H, "Most bytes per partition in one "
            "Fetch response.")
    .define("max.poll.records", T.INT, 500, at_least(1), M, "Most records one poll() returns.")
    .define("max.poll.interval.ms", T.INT, 300_000, at_least(1), M, "Longest time between polls before the "
            "member leaves the group.")
    .define("check.crcs", T.BOOLEAN, True, None, L, "Verify the CRC of fetched batches.")
    .define("isolation.level", T.STRING, "read_uncommitted", one_of("read_uncommitted", "read_committed"), M,
            "read_committed stops at the last stable offset.")
    .define("exclude.internal.topics", T.BOOLEAN, True, None, M, "Pattern subscriptions skip internal topics.")
    .define("allow.auto.create.topics", T.BOOLEAN, True, None, M, "Metadata requests may create topics.")
    .define("client.rack", T.STRING, "", None, L, "This consumer's rack (fetch from the closest replica).")
    .define("default.api.timeout.ms", T.INT, 60_000, at_least(0), M, "Timeout of blocking calls without one.")
    .define("key.deserializer", T.CLASS, None, None, H, "Deserializer of keys (kafkalab returns bytes).",
            inert=True)
    .define("value.deserializer", T.CLASS, None, None, H, "Deserializer of values (kafkalab returns bytes).",
            inert=True)
    .define("interceptor.classes", T.LIST, [], None, L, "Interceptor classes.", inert=True)
)

ADMIN_CONFIGS = (
    _common()
    .define("retries", T.INT, INT_MAX, between(0, INT_MAX), L, "How often a failed call is retried.")
    .define("default.api.timeout.ms", T.INT, 60_000, at_least(0), M, "Timeout of calls without one.")
).with_default("connections.max.idle.ms", 300_000)

#: Declared (so Java configs load) but without effect in kafkalab's clients: the ``inert`` keys of the tables.
IGNORED = PRODUCER_CONFIGS.inert_keys() | CONSUMER_CONFIGS.inert_keys() | ADMIN_CONFIGS.inert_keys()


# -- parsing ---------------------------------------------------------------------------------------------------------
class ClientConfig(Mapping):
    """The parsed config: every declared name with its value (given or default); ``originals`` = what was given."""

    def __init__(self, kind: str, values: dict, originals: dict, table: Optional[ConfigDef] = None):
        self.kind = kind
        self._values = values
        self.originals = originals
        self.table = table

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def user_set(self, name: str) -> bool:
        return name in self.originals

    def __repr__(self) -> str:
        def shown(name, value):   # a PASSWORD never shows
            key = self.table.get(name) if self.table is not None else None
            return Password(value) if key is not None and key.type is Type.PASSWORD else value
        return f"{self.kind.capitalize()}Config({ {k: shown(k, v) for k, v in self.originals.items()}!r})"


def parse_config(kind: str, table: ConfigDef, config: Optional[Mapping]) -> ClientConfig:
    """Check ``config`` against ``table``: reject unknown names (with a suggestion), convert and validate values."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ConfigException(f"a {kind} takes one dict of Kafka config names, not {type(config).__name__}")
    unknown = table.unknown(config)
    if unknown:
        lines = [f"Unknown {kind} configuration {n!r}.{table.suggest(n)}" for n in unknown]
        raise ConfigException("\n".join(lines))
    return ClientConfig(kind, table.parse(config), dict(config), table)


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
    if cfg.user_set("transactional.id") and not v["enable.idempotence"]:
        raise ConfigException("Cannot set a transactional.id without also enabling idempotence.")
    if v["delivery.timeout.ms"] < v["linger.ms"] + v["request.timeout.ms"]:
        if cfg.user_set("delivery.timeout.ms"):
            raise ConfigException(f"delivery.timeout.ms should be equal to or larger than linger.ms + "
                                  f"request.timeout.ms ({v['linger.ms'] + v['request.timeout.ms']})")
        v["delivery.timeout.ms"] = v["linger.ms"] + v["request.timeout.ms"]
    if not cfg.user_set("client.id") and v["transactional.id"] is not None:
        v["client.id"] = f"producer-{v['transactional.id']}"      # Java's default for a transactional producer
    else:
        _client_id(cfg, "producer")
    check_security(cfg)
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
    check_security(cfg)
    return cfg


def admin_config(config: Optional[Mapping]) -> ClientConfig:
    cfg = parse_config("admin", ADMIN_CONFIGS, config)
    _client_id(cfg, "adminclient")
    check_security(cfg)
    return cfg
