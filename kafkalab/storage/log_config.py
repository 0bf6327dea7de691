"""Topic-level log configs: Kafka's names, types, defaults, validators, and the broker settings they default from.

Theory of operation
-------------------
Every partition's log is governed by about thirty *topic configs* (``segment.bytes``, ``retention.ms``,
``cleanup.policy`` ...). Each one can be set in three places, and the most specific wins:

1. a **topic override** (``kafka-configs.sh --alter --entity-type topics``; stored in ZooKeeper in the
   ZooKeeper era) -- DescribeConfigs reports its source as ``TOPIC_CONFIG``;
2. a **broker setting** in ``server.properties`` with a different name, its *synonym*: ``retention.ms``
   defaults from ``log.retention.ms``, else ``log.retention.minutes``, else ``log.retention.hours`` (converted
   to milliseconds) -- source ``STATIC_BROKER_CONFIG``;
3. the **built-in default** -- source ``DEFAULT_CONFIG``.

:data:`TOPIC_CONFIGS` holds one :class:`ConfigKey` per topic config: type, default, validator, and the
ordered broker synonyms with their unit. :meth:`LogConfig.from_broker` resolves a full config from the broker
properties and a topic's overrides, and :meth:`LogConfig.describe` produces what a DescribeConfigs response
needs (value, source, synonyms, type). Invalid values raise
:class:`~kafkalab.storage.errors.InvalidConfigurationError` worded as Kafka words it: ``Invalid value 10 for
configuration segment.bytes: Value must be at least 14``.

:class:`LogManagerConfig` holds the broker-only settings of the log manager (check intervals, cleaner
switches, producer-id expiration).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java``,
``clients/src/main/java/org/apache/kafka/common/config/TopicConfig.java``,
``server-common/src/main/java/org/apache/kafka/server/config/ServerTopicConfigSynonyms.java`` and
``core/src/main/scala/kafka/server/ConfigHelper.scala`` (``createTopicConfigEntry``).
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional

from kafkalab.storage.errors import InvalidConfigurationError

__all__ = ["LogConfig", "ConfigKey", "TOPIC_CONFIGS", "ConfigSource", "ConfigType", "DescribedConfig",
           "ConfigSynonym", "LogManagerConfig", "LONG_MAX", "BROKER_COMPRESSION_TYPES"]

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647
_HOURS = 3_600_000
_MINUTES = 60_000
#: ``compression.type`` values: a codec name, "uncompressed", or "producer" (keep what the producer used).
BROKER_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class ConfigSource(enum.IntEnum):
    """DescribeConfigs ``config_source`` ids (``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    """DescribeConfigs ``config_type`` ids (``DescribeConfigsResponse.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


# ----------------------------------------------------------------------------------------- parse & validate

def _fail(name: str, value: Any, reason: str) -> InvalidConfigurationError:
    return InvalidConfigurationError(f"Invalid value {_java_str(value)} for configuration {name}: {reason}")


def _java_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_value(name: str, ctype: ConfigType, raw: Any) -> Any:
    """Turn a raw value (a string from a properties file or a request, or an already typed value) into the
    config's Python type, as Kafka's ``ConfigDef.parseType`` does."""
    if ctype in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT):
        limit = {ConfigType.INT: INT_MAX, ConfigType.LONG: LONG_MAX, ConfigType.SHORT: 32767}[ctype]
        if isinstance(raw, bool):
            raise _fail(name, raw, f"Not a number of type {ctype.name}")
        if isinstance(raw, int):
            value = raw
        else:
            try:
                value = int(str(raw).strip())
            except ValueError:
                raise _fail(name, raw, f"Not a number of type {ctype.name}") from None
        if not -limit - 1 <= value <= limit:
            raise _fail(name, raw, f"Not a number of type {ctype.name}")
        return value
    if ctype is ConfigType.DOUBLE:
        try:
            return float(str(raw).strip()) if not isinstance(raw, (int, float)) or isinstance(raw, bool) else float(raw)
        except ValueError:
            raise _fail(name, raw, "Not a number of type DOUBLE") from None
    if ctype is ConfigType.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise _fail(name, raw, "Expected value to be either true or false")
    if ctype is ConfigType.LIST:
        if isinstance(raw, (list, tuple)):
            return [str(v).strip() for v in raw]
        text = str(raw).strip()
        return [] if not text else [part.strip() for part in text.split(",")]
    return str(raw).strip() if ctype is not ConfigType.PASSWORD else str(raw)


def at_least(minimum) -> Callable[[str, Any], None]:
    def check(name, value):
        if value < minimum:
            raise _fail(name, value, f"Value must be at least {minimum}")
    check.describe = f"[{minimum},...]"
    return check


def between(lo, hi) -> Callable[[str, Any], None]:
    def check(name, value):
        if value < lo:
            raise _fail(name, value, f"Value must be at least {lo}")
        if value > hi:
            raise _fail(name, value, f"Value must be no more than {hi}")
    check.describe = f"[{lo},...,{hi}]"
    return check


def one_of(*choices, case_insensitive=False) -> Callable[[str, Any], None]:
    def check(name, value):
        ok = value.lower() in [c.lower() for c in choices] if case_insensitive else value in choices
        if not ok:
            raise _fail(name, value, f"String must be one of: {', '.join(choices)}")
    check.describe = f"[{', '.join(choices)}]"
    return check


def list_of(*choices) -> Callable[[str, Any], None]:
    def check(name, value):
        for item in value:
            if item not in choices:
                raise _fail(name, item, f"String must be one of: {', '.join(choices)}")
    check.describe = f"[{', '.join(choices)}]"
    return check


def gzip_level(name, value):
    if value > 9 or (value < 1 and value != -1):
        raise _fail(name, value, "Value must be between 1 and 9 or equal to -1")


gzip_level.describe = "[1,...,9] or -1"


# --------------------------------------------------------------------------------------------- the table

class Synonym(NamedTuple):
    """A broker setting a topic config defaults from: its name, its own default (None = unset) and the factor
    that turns its unit into the topic config's (hours -> ms is 3600000)."""

    name: str
    default: Any = None
    factor: int = 1


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any
    validator: Optional[Callable[[str, Any], None]]
    synonyms: tuple
    doc: str
    attr: str                 # attribute name on LogConfig (snake_case of Kafka's field)
    inert: bool = False       # accepted and reported, but nothing in kafkalab acts on it yet


def _k(name, ctype, default, validator, synonyms, attr, doc, inert=False) -> ConfigKey:
    return ConfigKey(name, ctype, default, validator, tuple(Synonym(*s) for s in synonyms), doc, attr, inert)


C = ConfigType
#: Every topic config Kafka 3.9 defines, in the order of ``LogConfig.CONFIG``.
TOPIC_CONFIGS: dict = {k.name: k for k in (
    _k("segment.bytes", C.INT, 1073741824, at_least(14), [("log.segment.bytes", 1073741824)], "segment_size",
       "Roll to a new segment once the active one would grow past this many bytes."),
    _k("segment.ms", C.LONG, 604800000, at_least(1), [("log.roll.ms",), ("log.roll.hours", 168, _HOURS)],
       "segment_ms", "Roll the active segment once its first batch is this old, so retention can delete it."),
    _k("segment.jitter.ms", C.LONG, 0, at_least(0), [("log.roll.jitter.ms",), ("log.roll.jitter.hours", 0, _HOURS)],
       "segment_jitter_ms", "Random amount subtracted from segment.ms so partitions do not all roll at once."),
    _k("segment.index.bytes", C.INT, 10485760, at_least(4), [("log.index.size.max.bytes", 10485760)],
       "max_index_size", "Size the offset and time indexes are preallocated to; a full index rolls the segment."),
    _k("flush.messages", C.LONG, LONG_MAX, at_least(1), [("log.flush.interval.messages", LONG_MAX)],
       "flush_interval", "fsync after this many messages; by default never: durability comes from replication."),
    _k("flush.ms", C.LONG, LONG_MAX, at_least(0),
       [("log.flush.interval.ms",), ("log.flush.scheduler.interval.ms", LONG_MAX)], "flush_ms",
       "fsync when the log has not been flushed for this long (checked by the log flusher task)."),
    _k("retention.bytes", C.LONG, -1, None, [("log.retention.bytes", -1)], "retention_size",
       "Delete the oldest segments while the partition is larger than this (-1: no size limit)."),
    _k("retention.ms", C.LONG, 604800000, at_least(-1),
       [("log.retention.ms",), ("log.retention.minutes", None, _MINUTES), ("log.retention.hours", 168, _HOURS)],
       "retention_ms", "Delete a segment once its newest record is older than this (-1: keep forever)."),
    _k("max.message.bytes", C.INT, 1048588, at_least(0), [("message.max.bytes", 1048588)], "max_message_size",
       "Largest record batch the log accepts (1 MiB plus the 12-byte log overhead)."),
    _k("index.interval.bytes", C.INT, 4096, at_least(0), [("log.index.interval.bytes", 4096)], "index_interval",
       "Add an offset-index entry after roughly this many bytes of batches: the index is sparse."),
    _k("delete.retention.ms", C.LONG, 86400000, at_least(0), [("log.cleaner.delete.retention.ms", 86400000)],
       "delete_retention_ms", "How long the cleaner keeps a tombstone after it first sees it (compacted topics)."),
    _k("min.compaction.lag.ms", C.LONG, 0, at_least(0), [("log.cleaner.min.compaction.lag.ms", 0)],
       "compaction_lag_ms", "A record stays uncompacted for at least this long."),
    _k("max.compaction.lag.ms", C.LONG, LONG_MAX, at_least(1), [("log.cleaner.max.compaction.lag.ms", LONG_MAX)],
       "max_compaction_lag_ms", "A record becomes eligible for compaction after at most this long."),
    _k("file.delete.delay.ms", C.LONG, 60000, at_least(0), [("log.segment.delete.delay.ms", 60000)],
       "file_delete_delay_ms", "Segments are renamed .deleted and removed from disk only after this delay."),
    _k("min.cleanable.dirty.ratio", C.DOUBLE, 0.5, between(0, 1), [("log.cleaner.min.cleanable.ratio", 0.5)],
       "min_cleanable_ratio", "Clean a compacted log once this share of its bytes is dirty (not yet cleaned)."),
    _k("cleanup.policy", C.LIST, ["delete"], list_of("compact", "delete"), [("log.cleanup.policy", ["delete"])],
       "cleanup_policy", "delete: retention by time/size; compact: keep the latest record per key; or both."),
    _k("unclean.leader.election.enable", C.BOOLEAN, False, None, [("unclean.leader.election.enable", False)],
       "unclean_leader_election_enable", "Let an out-of-sync replica become leader as a last resort (may lose data)."),
    _k("min.insync.replicas", C.INT, 1, at_least(1), [("min.insync.replicas", 1)], "min_in_sync_replicas",
       "With acks=all, the ISR size below which produce requests fail with NOT_ENOUGH_REPLICAS."),
    _k("compression.type", C.STRING, "producer", one_of(*BROKER_COMPRESSION_TYPES), [("compression.type", "producer")],
       "compression_type", "Codec the log stores: 'producer' keeps the producer's, anything else recompresses."),
    _k("compression.gzip.level", C.INT, -1, gzip_level, [("compression.gzip.level", -1)], "compression_gzip_level",
       "Level used when the broker itself compresses with gzip."),
    _k("compression.lz4.level", C.INT, 9, between(1, 17), [("compression.lz4.level", 9)], "compression_lz4_level",
       "Level used when the broker itself compresses with lz4."),
    _k("compression.zstd.level", C.INT, 3, between(-131072, 22), [("compression.zstd.level", 3)],
       "compression_zstd_level", "Level used when the broker itself compresses with zstd."),
    _k("preallocate", C.BOOLEAN, False, None, [("log.preallocate", False)], "preallocate",
       "Preallocate segment files on creation.", inert=True),
    _k("message.format.version", C.STRING, "3.0-IV1", None, [("log.message.format.version", "3.0-IV1")],
       "message_format_version", "Deprecated; kafkalab only ever stores magic 2.", inert=True),
    _k("message.timestamp.type", C.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
       [("log.message.timestamp.type", "CreateTime")], "message_timestamp_type",
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock at append."),
    _k("message.timestamp.difference.max.ms", C.LONG, LONG_MAX, at_least(0),
       [("log.message.timestamp.difference.max.ms", LONG_MAX)], "message_timestamp_difference_max_ms",
       "Deprecated: both bounds below fall back to it while they are at their default."),
    _k("message.timestamp.before.max.ms", C.LONG, LONG_MAX, at_least(0),
       [("log.message.timestamp.before.max.ms", LONG_MAX)], "_message_timestamp_before_max_ms",
       "Reject (INVALID_TIMESTAMP) a CreateTime record this much older than the broker's clock."),
    _k("message.timestamp.after.max.ms", C.LONG, LONG_MAX, at_least(0),
       [("log.message.timestamp.after.max.ms", LONG_MAX)], "_message_timestamp_after_max_ms",
       "Reject (INVALID_TIMESTAMP) a CreateTime record this much ahead of the broker's clock."),
    _k("leader.replication.throttled.replicas", C.LIST, [], None, [], "leader_replication_throttled_replicas",
       "Replicas throttled on the leader side.", inert=True),
    _k("follower.replication.throttled.replicas", C.LIST, [], None, [], "follower_replication_throttled_replicas",
       "Replicas throttled on the follower side.", inert=True),
    _k("message.downconversion.enable", C.BOOLEAN, True, None, [("log.message.downconversion.enable", True)],
       "message_downconversion_enable", "Down-convert for old fetchers (kafkalab never does).", inert=True),
    _k("remote.storage.enable", C.BOOLEAN, False, None, [], "remote_storage_enable",
       "Tiered storage (not implemented in kafkalab).", inert=True),
    _k("local.retention.ms", C.LONG, -2, at_least(-2), [("log.local.retention.ms", -2)], "local_retention_ms",
       "Tiered storage local retention (not implemented).", inert=True),
    _k("local.retention.bytes", C.LONG, -2, at_least(-2), [("log.local.retention.bytes", -2)],
       "local_retention_bytes", "Tiered storage local retention (not implemented).", inert=True),
    _k("remote.log.copy.disable", C.BOOLEAN, False, None, [], "remote_log_copy_disable",
       "Tiered storage (not implemented).", inert=True),
    _k("remote.log.delete.on.disable", C.BOOLEAN, False, None, [], "remote_log_delete_on_disable",
       "Tiered storage (not implemented).", inert=True),
)}
del C
_ATTR_TO_NAME = {key.attr: key.name for key in TOPIC_CONFIGS.values()}


def _to_string(ctype: ConfigType, value: Any) -> Optional[str]:
    """Kafka's ``ConfigDef.convertToString``."""
    if value is None:
        return None
    if ctype is ConfigType.LIST:
        return ",".join(value)
    if ctype is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if ctype is ConfigType.DOUBLE:
        return repr(float(value))
    return str(value)


class ConfigSynonym(NamedTuple):
    name: str
    value: Optional[str]
    source: ConfigSource


class DescribedConfig(NamedTuple):
    """One entry of a DescribeConfigs result for a topic (field names as in the response)."""

    name: str
    value: Optional[str]
    read_only: bool
    config_source: ConfigSource
    is_sensitive: bool
    synonyms: tuple
    config_type: ConfigType
    documentation: Optional[str]


# ---------------------------------------------------------------------------------------------- LogConfig

class LogConfig:
    """The resolved topic configs of one log. Read them by Kafka name (``config["retention.ms"]``) or as
    attributes (``config.retention_ms``, ``config.compact``, ``config.segment_size`` ...).

    ``LogConfig({"segment.bytes": 1000})`` treats the given keys as topic overrides over the built-in defaults;
    :meth:`from_broker` also takes the broker's ``server.properties``.
    """

    def __init__(self, overrides: Optional[Mapping[str, Any]] = None, *,
                 broker_props: Optional[Mapping[str, Any]] = None):
        overrides = dict(overrides or {})
        broker_props = {k: v for k, v in (broker_props or {}).items() if v is not None}
        unknown = [name for name in overrides if name not in TOPIC_CONFIGS]
        if unknown:
            raise InvalidConfigurationError(f"Unknown topic config name: {unknown[0]}")
        self.topic_overrides: dict = {}
        self.broker_props: dict = {}
        self._values: dict = {}
        for key in TOPIC_CONFIGS.values():
            for syn in key.synonyms:
                if syn.name in broker_props:
                    self.broker_props[syn.name] = parse_value(
                        syn.name, key.type if syn.factor == 1 else ConfigType.LONG, broker_props[syn.name])
            if key.name in overrides:
                value = parse_value(key.name, key.type, overrides[key.name])
                self.topic_overrides[key.name] = value
            else:
                value = self._from_synonyms(key, broker_props)
            if key.validator is not None:
                key.validator(key.name, value)
            self._values[key.name] = value
        self._validate_values()

    def _from_synonyms(self, key: ConfigKey, broker_props: Mapping[str, Any]):
        for syn in key.synonyms:
            if syn.name in broker_props:
                raw = self.broker_props[syn.name]
                value = raw * syn.factor if syn.factor != 1 else raw
                if key.validator is not None:
                    try:
                        key.validator(key.name, value)
                    except InvalidConfigurationError:
                        raise _fail(syn.name, raw, f"resolves {key.name}={value}, which is invalid") from None
                return value
        return list(key.default) if isinstance(key.default, list) else key.default

    def _validate_values(self) -> None:
        lo, hi = self._values["min.compaction.lag.ms"], self._values["max.compaction.lag.ms"]
        if lo > hi:
            raise InvalidConfigurationError(f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                                            f"max.compaction.lag.ms ({hi})")

    @classmethod
    def from_broker(cls, props: Optional[Mapping[str, Any]] = None,
                    topic_overrides: Optional[Mapping[str, Any]] = None) -> "LogConfig":
        """Resolve every topic config: ``topic_overrides`` first, then the broker synonyms in ``props`` (the
        broker's ``server.properties``), then Kafka's defaults."""
        return cls(topic_overrides, broker_props=props)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "LogConfig":
        """A new config with more topic overrides (as ``kafka-configs.sh --alter --add-config`` would give)."""
        merged = dict(self.topic_overrides)
        merged.update(overrides)
        return LogConfig(merged, broker_props=self.broker_props)

    # ------------------------------------------------------------------------------------------- reading
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def values(self) -> dict:
        return dict(self._values)

    def __getattr__(self, attr: str) -> Any:
        name = _ATTR_TO_NAME.get(attr)
        if name is None or attr.startswith("__"):
            raise AttributeError(attr)
        return self.__dict__["_values"][name]

    def __eq__(self, other) -> bool:
        return isinstance(other, LogConfig) and self._values == other._values

    def __repr__(self) -> str:
        return f"LogConfig({self.overridden_configs_as_string()[1:-1]})"

    @property
    def compact(self) -> bool:
        return "compact" in self._values["cleanup.policy"]

    @property
    def delete(self) -> bool:
        return "delete" in self._values["cleanup.policy"]

    @property
    def message_timestamp_before_max_ms(self) -> int:
        """Falls back to the deprecated ``message.timestamp.difference.max.ms`` while left at its default."""
        value = self._values["message.timestamp.before.max.ms"]
        return value if value != LONG_MAX else self._values["message.timestamp.difference.max.ms"]

    @property
    def message_timestamp_after_max_ms(self) -> int:
        value = self._values["message.timestamp.after.max.ms"]
        return value if value != LONG_MAX else self._values["message.timestamp.difference.max.ms"]

    @property
    def log_append_time(self) -> bool:
        return self._values["message.timestamp.type"] == "LogAppendTime"

    @property
    def init_file_size(self) -> int:
        return self._values["segment.bytes"] if self._values["preallocate"] else 0

    def random_segment_jitter(self, rng: Callable[[int], int] = random.randrange) -> int:
        """Kafka's ``randomSegmentJitter``: 0 unless ``segment.jitter.ms`` is set."""
        jitter = self._values["segment.jitter.ms"]
        return 0 if jitter == 0 else rng(min(jitter, self._values["segment.ms"]))

    def overridden_configs_as_string(self) -> str:
        return "{" + ", ".join(f"{k}={_to_string(TOPIC_CONFIGS[k].type, v)}"
                               for k, v in sorted(self.topic_overrides.items())) + "}"

    # ------------------------------------------------------------------------------------ DescribeConfigs
    def describe(self, names=None, *, include_synonyms: bool = True,
                 include_documentation: bool = False) -> list:
        """One :class:`DescribedConfig` per topic config (or per name in ``names``), as a ZooKeeper-era broker
        answers DescribeConfigs for a topic: the source is the first synonym found in order topic override,
        broker setting, broker default."""
        out = []
        for name in (names if names is not None else TOPIC_CONFIGS):
            key = TOPIC_CONFIGS[name]
            value = _to_string(key.type, self._values[name])
            synonyms = []
            if name in self.topic_overrides:
                synonyms.append(ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG))
            for syn in key.synonyms:
                if syn.name in self.broker_props:
                    raw = self.broker_props[syn.name]
                    synonyms.append(ConfigSynonym(syn.name, _to_string(key.type if syn.factor == 1 else ConfigType.LONG,
                                                                       raw), ConfigSource.STATIC_BROKER_CONFIG))
            for syn in key.synonyms:
                if syn.default is not None:
                    synonyms.append(ConfigSynonym(syn.name, _to_string(key.type if syn.factor == 1 else ConfigType.INT,
                                                                       syn.default), ConfigSource.DEFAULT_CONFIG))
            source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
            out.append(DescribedConfig(name, value, False, source, False,
                                       tuple(synonyms) if include_synonyms else (), key.type,
                                       key.doc if include_documentation else None))
        return out


# --------------------------------------------------------------------------------- broker-only settings

@dataclass
class LogManagerConfig:
    """The broker settings of the log manager itself (not topic configs), with Kafka's names and defaults."""

    log_dirs: list = field(default_factory=lambda: ["/tmp/kafka-logs"])
    retention_check_ms: int = 300000                 # log.retention.check.interval.ms
    flush_check_ms: int = LONG_MAX                   # log.flush.scheduler.interval.ms
    flush_recovery_offset_checkpoint_ms: int = 60000  # log.flush.offset.checkpoint.interval.ms
    flush_start_offset_checkpoint_ms: int = 60000    # log.flush.start.offset.checkpoint.interval.ms
    initial_task_delay_ms: int = 30000               # log.initial.task.delay.ms
    cleaner_enable: bool = True                      # log.cleaner.enable
    cleaner_backoff_ms: int = 15000                  # log.cleaner.backoff.ms
    cleaner_dedupe_buffer_size: int = 134217728      # log.cleaner.dedupe.buffer.size
    cleaner_io_buffer_load_factor: float = 0.9       # log.cleaner.io.buffer.load.factor
    producer_id_expiration_ms: int = 86400000        # producer.id.expiration.ms
    producer_id_expiration_check_interval_ms: int = 600000  # producer.id.expiration.check.interval.ms

    KEYS = {
        "log.retention.check.interval.ms": ("retention_check_ms", ConfigType.LONG, at_least(1)),
        "log.flush.scheduler.interval.ms": ("flush_check_ms", ConfigType.LONG, None),
        "log.flush.offset.checkpoint.interval.ms": ("flush_recovery_offset_checkpoint_ms", ConfigType.INT, at_least(0)),
        "log.flush.start.offset.checkpoint.interval.ms": ("flush_start_offset_checkpoint_ms", ConfigType.INT,
                                                          at_least(0)),
        "log.initial.task.delay.ms": ("initial_task_delay_ms", ConfigType.LONG, at_least(0)),
        "log.cleaner.enable": ("cleaner_enable", ConfigType.BOOLEAN, None),
        "log.cleaner.backoff.ms": ("cleaner_backoff_ms", ConfigType.LONG, at_least(0)),
        "log.cleaner.dedupe.buffer.size": ("cleaner_dedupe_buffer_size", ConfigType.LONG, None),
        "log.cleaner.io.buffer.load.factor": ("cleaner_io_buffer_load_factor", ConfigType.DOUBLE, None),
        "producer.id.expiration.ms": ("producer_id_expiration_ms", ConfigType.INT, at_least(1)),
        "producer.id.expiration.check.interval.ms": ("producer_id_expiration_check_interval_ms", ConfigType.INT,
                                                     at_least(1)),
    }

    @classmethod
    def from_props(cls, props: Optional[Mapping[str, Any]] = None) -> "LogManagerConfig":
        props = dict(props or {})
        cfg = cls()
        dirs = props.get("log.dirs") or props.get("log.dir")
        if dirs:
            cfg.log_dirs = [d.strip() for d in dirs.split(",")] if isinstance(dirs, str) else list(dirs)
        for name, (attr, ctype, validator) in cls.KEYS.items():
            if props.get(name) is not None:
                value = parse_value(name, ctype, props[name])
                if validator is not None:
                    validator(name, value)
                setattr(cfg, attr, value)
        return cfg
