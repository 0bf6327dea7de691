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

:data:`TOPIC_CONFIGS` is a :class:`~kafkalab.common.config.ConfigDef` with one key per topic config: type,
default, validator, documentation, and the ordered broker synonyms with their unit (the broker keys themselves,
with their own defaults, are declared in :mod:`kafkalab.storage.server_log_configs`).
:meth:`LogConfig.from_broker` resolves a full config from the broker properties and a topic's overrides, and
:meth:`LogConfig.describe` produces what a DescribeConfigs response needs (value, source, synonyms, type).
Invalid values raise :class:`~kafkalab.storage.errors.InvalidConfigurationError` (the table's
:class:`~kafkalab.common.config.ConfigException`, as the INVALID_CONFIG error a request gets) worded as Kafka
words it: ``Invalid value 10 for configuration segment.bytes: Value must be at least 14``. A few of Kafka's
topic configs are declared ``inert`` (tiered storage, replication throttles, ``preallocate``): kafkalab does
not implement them and accepts them only at their default -- any other value is INVALID_CONFIG.

:class:`LogManagerConfig` (re-exported from :mod:`~kafkalab.storage.server_log_configs`) holds the
broker-only settings of the log manager (check intervals, cleaner switches, producer-id expiration).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java``,
``clients/src/main/java/org/apache/kafka/common/config/TopicConfig.java``,
``server-common/src/main/java/org/apache/kafka/server/config/ServerTopicConfigSynonyms.java`` and
``core/src/main/scala/kafka/server/ConfigHelper.scala`` (``createTopicConfigEntry``).
"""
from __future__ import annotations

import enum
import random
from typing import Any, Callable, Mapping, NamedTuple, Optional

from kafkalab.common.config import (INT_MAX, LONG_MAX, ConfigDef, ConfigException, ConfigKey, Importance,
                                    LambdaValidator, Range, Type, ValidList, ValidString, to_string)
from kafkalab.storage.errors import InvalidConfigurationError
from kafkalab.storage.server_log_configs import SERVER_LOG_CONFIGS, LogManagerConfig

__all__ = ["LogConfig", "ConfigKey", "TOPIC_CONFIGS", "ConfigSource", "ConfigType", "DescribedConfig",
           "ConfigSynonym", "LogManagerConfig", "LONG_MAX", "INT_MAX", "BROKER_COMPRESSION_TYPES"]

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


# ------------------------------------------------------------------------------------------ validators

def _between_1_and_9_or_minus_1(value) -> bool:
    return value == -1 or 1 <= value <= 9


GZIP_LEVEL = LambdaValidator.with_(_between_1_and_9_or_minus_1, "[1,...,9] or -1",
                                   "Value must be between 1 and 9 or equal to -1")


# --------------------------------------------------------------------------------------------- the table

#: Every topic config Kafka 3.9 defines, in the order of ``LogConfig.CONFIG``; synonyms name broker keys of
#: :data:`~kafkalab.storage.server_log_configs.SERVER_LOG_CONFIGS` (with the factor between their units).
TOPIC_CONFIGS = ConfigDef()
_ATTR_TO_NAME: dict = {}


def _k(name, ctype, default, validator, synonyms, attr, doc, inert=False) -> None:
    TOPIC_CONFIGS.define(name, ctype, default, validator, Importance.MEDIUM, doc, synonyms=synonyms, inert=inert)
    _ATTR_TO_NAME[attr] = name     # attribute name on LogConfig (snake_case of Kafka's field)


at_least, between, one_of, list_of = Range.at_least, Range.between, ValidString.in_, ValidList.in_
C = Type
_k("segment.bytes", C.INT, 1073741824, at_least(14), ["log.segment.bytes"], "segment_size",
   "Roll to a new segment once the active one would grow past this many bytes.")
_k("segment.ms", C.LONG, 604800000, at_least(1), ["log.roll.ms", ("log.roll.hours", _HOURS)],
   "segment_ms", "Roll the active segment once its first batch is this old, so retention can delete it.")
_k("segment.jitter.ms", C.LONG, 0, at_least(0), ["log.roll.jitter.ms", ("log.roll.jitter.hours", _HOURS)],
   "segment_jitter_ms", "Random amount subtracted from segment.ms so partitions do not all roll at once.")
_k("segment.index.bytes", C.INT, 10485760, at_least(4), ["log.index.size.max.bytes"],
   "max_index_size", "Size the offset and time indexes are preallocated to; a full index rolls the segment.")
_k("flush.messages", C.LONG, LONG_MAX, at_least(1), ["log.flush.interval.messages"],
   "flush_interval", "fsync after this many messages; by default never: durability comes from replication.")
_k("flush.ms", C.LONG, LONG_MAX, at_least(0),
   ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"], "flush_ms",
   "fsync when the log has not been flushed for this long (checked by the log flusher task).")
_k("retention.bytes", C.LONG, -1, None, ["log.retention.bytes"], "retention_size",
   "Delete the oldest segments while the partition is larger than this (-1: no size limit).")
_k("retention.ms", C.LONG, 604800000, at_least(-1),
   ["log.retention.ms", ("log.retention.minutes", _MINUTES), ("log.retention.hours", _HOURS)],
   "retention_ms", "Delete a segment once its newest record is older than this (-1: keep forever).")
_k("max.message.bytes", C.INT, 1048588, at_least(0), ["message.max.bytes"], "max_message_size",
   "Largest record batch the log accepts (1 MiB plus the 12-byte log overhead).")
_k("index.interval.bytes", C.INT, 4096, at_least(0), ["log.index.interval.bytes"], "index_interval",
   "Add an offset-index entry after roughly this many bytes of batches: the index is sparse.")
_k("delete.retention.ms", C.LONG, 86400000, at_least(0), ["log.cleaner.delete.retention.ms"],
   "delete_retention_ms", "How long the cleaner keeps a tombstone after it first sees it (compacted topics).")
_k("min.compaction.lag.ms", C.LONG, 0, at_least(0), ["log.cleaner.min.compaction.lag.ms"],
   "compaction_lag_ms", "A record stays uncompacted for at least this long.")
_k("max.compaction.lag.ms", C.LONG, LONG_MAX, at_least(1), ["log.cleaner.max.compaction.lag.ms"],
   "max_compaction_lag_ms", "A record becomes eligible for compaction after at most this long.")
_k("file.delete.delay.ms", C.LONG, 60000, at_least(0), ["log.segment.delete.delay.ms"],
   "file_delete_delay_ms", "Segments are renamed .deleted and removed from disk only after this delay.")
_k("min.cleanable.dirty.ratio", C.DOUBLE, 0.5, between(0, 1), ["log.cleaner.min.cleanable.ratio"],
   "min_cleanable_ratio", "Clean a compacted log once this share of its bytes is dirty (not yet cleaned).")
_k("cleanup.policy", C.LIST, ["delete"], list_of("compact", "delete"), ["log.cleanup.policy"],
   "cleanup_policy", "delete: retention by time/size; compact: keep the latest record per key; or both.")
_k("unclean.leader.election.enable", C.BOOLEAN, False, None, ["unclean.leader.election.enable"],
   "unclean_leader_election_enable", "Let an out-of-sync replica become leader as a last resort (may lose data).")
_k("min.insync.replicas", C.INT, 1, at_least(1), ["min.insync.replicas"], "min_in_sync_replicas",
   "With acks=all, the ISR size below which produce requests fail with NOT_ENOUGH_REPLICAS.")
_k("compression.type", C.STRING, "producer", one_of(*BROKER_COMPRESSION_TYPES), ["compression.type"],
   "compression_type", "Codec the log stores: 'producer' keeps the producer's, anything else recompresses.")
_k("compression.gzip.level", C.INT, -1, GZIP_LEVEL, ["compression.gzip.level"], "compression_gzip_level",
   "Level used when the broker itself compresses with gzip.")
_k("compression.lz4.level", C.INT, 9, between(1, 17), ["compression.lz4.level"], "compression_lz4_level",
   "Level used when the broker itself compresses with lz4.")
_k("compression.zstd.level", C.INT, 3, between(-131072, 22), ["compression.zstd.level"],
   "compression_zstd_level", "Level used when the broker itself compresses with zstd.")
_k("preallocate", C.BOOLEAN, False, None, ["log.preallocate"], "preallocate",
   "Preallocate segment files on creation.", inert=True)
_k("message.format.version", C.STRING, "3.0-IV1", None, ["log.message.format.version"],
   "message_format_version", "Deprecated and, as in Kafka 3.x (inter.broker.protocol.version 3.0 or newer), "
   "ignored: the log stores record batches of magic 2 only.")
_k("message.timestamp.type", C.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
   ["log.message.timestamp.type"], "message_timestamp_type",
   "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock at append.")
_k("message.timestamp.difference.max.ms", C.LONG, LONG_MAX, at_least(0),
   ["log.message.timestamp.difference.max.ms"], "message_timestamp_difference_max_ms",
   "Deprecated: both bounds below fall back to it while they are at their default.")
_k("message.timestamp.before.max.ms", C.LONG, LONG_MAX, at_least(0),
   ["log.message.timestamp.before.max.ms"], "_message_timestamp_before_max_ms",
   "Reject (INVALID_TIMESTAMP) a CreateTime record this much older than the broker's clock.")
_k("message.timestamp.after.max.ms", C.LONG, LONG_MAX, at_least(0),
   ["log.message.timestamp.after.max.ms"], "_message_timestamp_after_max_ms",
   "Reject (INVALID_TIMESTAMP) a CreateTime record this much ahead of the broker's clock.")
_k("leader.replication.throttled.replicas", C.LIST, [], None, [], "leader_replication_throttled_replicas",
   "Replicas throttled on the leader side.", inert=True)
_k("follower.replication.throttled.replicas", C.LIST, [], None, [], "follower_replication_throttled_replicas",
   "Replicas throttled on the follower side.", inert=True)
_k("message.downconversion.enable", C.BOOLEAN, True, None, ["log.message.downconversion.enable"],
   "message_downconversion_enable", "Down-convert batches for consumers too old for magic 2 (Fetch v0-v3); false answers them "
   "UNSUPPORTED_VERSION for the partition (KIP-283). Followers are always served.")
_k("remote.storage.enable", C.BOOLEAN, False, None, [], "remote_storage_enable",
   "Tiered storage (not implemented in kafkalab).", inert=True)
_k("local.retention.ms", C.LONG, -2, at_least(-2), ["log.local.retention.ms"], "local_retention_ms",
   "Tiered storage local retention (not implemented).", inert=True)
_k("local.retention.bytes", C.LONG, -2, at_least(-2), ["log.local.retention.bytes"],
   "local_retention_bytes", "Tiered storage local retention (not implemented).", inert=True)
_k("remote.log.copy.disable", C.BOOLEAN, False, None, [], "remote_log_copy_disable",
   "Tiered storage (not implemented).", inert=True)
_k("remote.log.delete.on.disable", C.BOOLEAN, False, None, [], "remote_log_delete_on_disable",
   "Tiered storage (not implemented).", inert=True)
del C


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
        try:   # a ConfigException here is an INVALID_CONFIG answer to whoever asked
            for key in TOPIC_CONFIGS.values():
                for syn in key.synonyms:
                    if syn.name in broker_props:
                        self.broker_props[syn.name] = SERVER_LOG_CONFIGS.parse_value(syn.name, broker_props[syn.name])
                if key.name in overrides:
                    value = TOPIC_CONFIGS.parse_value(key.name, overrides[key.name])
                    self.topic_overrides[key.name] = value
                else:
                    value = self._from_synonyms(key)
                self._values[key.name] = value
        except ConfigException as e:
            raise InvalidConfigurationError(str(e)) from None
        inert = TOPIC_CONFIGS.inert_overrides(self.topic_overrides)
        if inert:   # a Kafka topic config kafkalab does not implement: refused, never silently ignored
            name = inert[0].split("=")[0]
            raise InvalidConfigurationError(f"{inert[0]} is not implemented by kafkalab: only the default of {name} "
                                            f"is accepted")
        self._validate_values()

    def _from_synonyms(self, key: ConfigKey):
        """The first broker synonym that is set (converted to this config's unit), else the default."""
        for syn in key.synonyms:
            if syn.name in self.broker_props:
                raw = self.broker_props[syn.name]
                value = raw * syn.factor if syn.factor != 1 else raw
                if key.validator is not None:
                    try:
                        key.validator(key.name, value)
                    except ConfigException:
                        raise ConfigException(syn.name, raw, f"resolves {key.name}={value}, which is invalid") \
                            from None
                return value
        return TOPIC_CONFIGS.default(key.name)

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
        return "{" + ", ".join(f"{k}={to_string(v)}"
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
            value = to_string(self._values[name])
            synonyms = []
            if name in self.topic_overrides:
                synonyms.append(ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG))
            for syn in key.synonyms:
                if syn.name in self.broker_props:
                    synonyms.append(ConfigSynonym(syn.name, to_string(self.broker_props[syn.name]),
                                                  ConfigSource.STATIC_BROKER_CONFIG))
            for syn in key.synonyms:
                default = SERVER_LOG_CONFIGS[syn.name].default
                if default is not None:
                    synonyms.append(ConfigSynonym(syn.name, to_string(default), ConfigSource.DEFAULT_CONFIG))
            source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
            out.append(DescribedConfig(name, value, False, source, False,
                                       tuple(synonyms) if include_synonyms else (), ConfigType(key.type.id),
                                       key.doc if include_documentation else None))
        return out
