"""The broker's log settings: ``log.*`` keys in ``server.properties``, declared once against ``ConfigDef``.

Theory of operation
-------------------
The storage layer is configured twice over. Each topic has its *topic configs* (``segment.bytes``,
``retention.ms``... in :mod:`kafkalab.storage.log_config`), and the broker has one setting per topic config
that serves as its default, under a different name: ``log.segment.bytes`` for ``segment.bytes``,
``log.retention.hours`` (or ``.minutes``, or ``.ms``) for ``retention.ms``. Those broker keys are declared
here, with their own types and defaults -- an hours key is an INT counted in hours -- and the topic table
refers to them by name as *synonyms*. The broker keys that stand for the same setting in different units
list each other as synonyms too, most specific first, which is what DescribeConfigs shows for a broker.
These are the keys Kafka lets an operator change on a running cluster (``cluster-wide``).

The log manager's own settings (how often retention is checked, whether the cleaner runs, when idle producer
ids are forgotten) are declared here as well, and :class:`LogManagerConfig` reads them as attributes.

Mirrors: ``server-common/src/main/java/org/apache/kafka/server/config/ServerLogConfigs.java``,
``ServerTopicConfigSynonyms.java`` and ``core/src/main/scala/kafka/log/LogManager.scala`` (its settings).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kafkalab.common.config import LONG_MAX, ConfigDef, Dynamic, Importance, Range
from kafkalab.common.config import Type as T

__all__ = ["SERVER_LOG_CONFIGS", "LogManagerConfig"]

_HOURS = 3_600_000
_MINUTES = 60_000
CW = Dynamic.CLUSTER_WIDE
H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

#: Broker keys of the log: topic-config defaults, then the log manager's own settings.
SERVER_LOG_CONFIGS = (
    ConfigDef()
    .define("log.segment.bytes", T.INT, 1073741824, None, H, "Default of segment.bytes: roll to a new segment "
            "past this size.", dynamic=CW)
    .define("log.roll.ms", T.LONG, None, None, H, "Default of segment.ms; when unset, log.roll.hours is used.",
            synonyms=[("log.roll.hours", _HOURS)], dynamic=CW)
    .define("log.roll.hours", T.INT, 168, None, H, "Default of segment.ms, in hours (secondary to log.roll.ms).",
            dynamic=CW)
    .define("log.roll.jitter.ms", T.LONG, None, None, H, "Default of segment.jitter.ms; when unset, "
            "log.roll.jitter.hours is used.", synonyms=[("log.roll.jitter.hours", _HOURS)], dynamic=CW)
    .define("log.roll.jitter.hours", T.INT, 0, None, H, "Default of segment.jitter.ms, in hours.", dynamic=CW)
    .define("log.index.size.max.bytes", T.INT, 10485760, None, M, "Default of segment.index.bytes.", dynamic=CW)
    .define("log.flush.interval.messages", T.LONG, LONG_MAX, None, H, "Default of flush.messages.", dynamic=CW)
    .define("log.flush.interval.ms", T.LONG, None, None, H, "Default of flush.ms; when unset, "
            "log.flush.scheduler.interval.ms is used.", synonyms=["log.flush.scheduler.interval.ms"], dynamic=CW)
    .define("log.retention.bytes", T.LONG, -1, None, H, "Default of retention.bytes (-1: no size limit).",
            dynamic=CW)
    .define("log.retention.ms", T.LONG, None, None, H, "Default of retention.ms; when unset, "
            "log.retention.minutes is used.", synonyms=[("log.retention.minutes", _MINUTES),
                                                        ("log.retention.hours", _HOURS)], dynamic=CW)
    .define("log.retention.minutes", T.INT, None, None, H, "Default of retention.ms, in minutes; when unset, "
            "log.retention.hours is used.", synonyms=[("log.retention.hours", 60)], dynamic=CW)
    .define("log.retention.hours", T.INT, 168, None, H, "Default of retention.ms, in hours (the last resort).",
            dynamic=CW)
    .define("message.max.bytes", T.INT, 1048588, None, H, "Default of max.message.bytes: the largest record "
            "batch a log accepts.", dynamic=CW)
    .define("log.index.interval.bytes", T.INT, 4096, None, M, "Default of index.interval.bytes.", dynamic=CW)
    .define("log.cleaner.delete.retention.ms", T.LONG, 86400000, None, M, "Default of delete.retention.ms.",
            dynamic=CW)
    .define("log.cleaner.min.compaction.lag.ms", T.LONG, 0, None, M, "Default of min.compaction.lag.ms.",
            dynamic=CW)
    .define("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX, None, M, "Default of max.compaction.lag.ms.",
            dynamic=CW)
    .define("log.segment.delete.delay.ms", T.LONG, 60000, None, H, "Default of file.delete.delay.ms.",
            dynamic=CW)
    .define("log.cleaner.min.cleanable.ratio", T.DOUBLE, 0.5, None, M, "Default of min.cleanable.dirty.ratio.",
            dynamic=CW)
    .define("log.cleanup.policy", T.LIST, "delete", None, M, "Default of cleanup.policy.", dynamic=CW)
    .define("unclean.leader.election.enable", T.BOOLEAN, False, None, H, "Default of the topic config of the "
            "same name: may an out-of-sync replica become leader?", dynamic=CW)
    .define("min.insync.replicas", T.INT, 1, None, H, "Default of the topic config of the same name.", dynamic=CW)
    .define("compression.type", T.STRING, "producer", None, H, "Default of the topic config of the same name.",
            dynamic=CW)
    .define("compression.gzip.level", T.INT, -1, None, M, "Default of the topic config of the same name.",
            dynamic=CW)
    .define("compression.lz4.level", T.INT, 9, None, M, "Default of the topic config of the same name.",
            dynamic=CW)
    .define("compression.zstd.level", T.INT, 3, None, M, "Default of the topic config of the same name.",
            dynamic=CW)
    .define("log.preallocate", T.BOOLEAN, False, None, M, "Default of preallocate.", dynamic=CW, inert=True)
    .define("log.message.format.version", T.STRING, "3.0-IV1", None, M, "Default of message.format.version "
            "(deprecated, and ignored as Kafka 3.x ignores it).", dynamic=CW)
    .define("log.message.timestamp.type", T.STRING, "CreateTime", None, M, "Default of message.timestamp.type.",
            dynamic=CW)
    .define("log.message.timestamp.difference.max.ms", T.LONG, LONG_MAX, None, M, "Default of "
            "message.timestamp.difference.max.ms (deprecated).", dynamic=CW)
    .define("log.message.timestamp.before.max.ms", T.LONG, LONG_MAX, None, M, "Default of "
            "message.timestamp.before.max.ms.", dynamic=CW)
    .define("log.message.timestamp.after.max.ms", T.LONG, LONG_MAX, None, M, "Default of "
            "message.timestamp.after.max.ms.", dynamic=CW)
    .define("log.message.downconversion.enable", T.BOOLEAN, True, None, L, "Default of "
            "message.downconversion.enable (for Fetch v0-v3).", dynamic=CW)
    .define("log.local.retention.ms", T.LONG, -2, None, M, "Default of local.retention.ms (tiered storage).",
            dynamic=CW, inert=True)
    .define("log.local.retention.bytes", T.LONG, -2, None, M, "Default of local.retention.bytes (tiered "
            "storage).", dynamic=CW, inert=True)
    # the log manager's own settings
    .define("log.retention.check.interval.ms", T.LONG, 300000, Range.at_least(1), M, "How often the log "
            "manager looks for segments that retention may delete.")
    .define("log.flush.scheduler.interval.ms", T.LONG, LONG_MAX, None, H, "How often logs are checked for a "
            "time-based flush (flush.ms).")
    .define("log.flush.offset.checkpoint.interval.ms", T.INT, 60000, Range.at_least(0), H, "How often the "
            "recovery points of all logs are saved (recovery-point-offset-checkpoint).")
    .define("log.flush.start.offset.checkpoint.interval.ms", T.INT, 60000, Range.at_least(0), H, "How often "
            "the log start offsets are saved (log-start-offset-checkpoint).")
    .define("log.initial.task.delay.ms", T.LONG, 30000, Range.at_least(0), L, "Delay before the log manager's "
            "background tasks (retention, flushes, checkpoints) first run.")
    .define("log.cleaner.enable", T.BOOLEAN, True, None, M, "Run the log cleaner (compaction).")
    .define("log.cleaner.backoff.ms", T.LONG, 15000, Range.at_least(0), M, "Sleep of the cleaner when there is "
            "nothing to clean.", dynamic=CW)
    .define("log.cleaner.dedupe.buffer.size", T.LONG, 134217728, None, M, "Memory for the cleaner's offset map "
            "(key hash -> latest offset).", dynamic=CW)
    .define("log.cleaner.io.buffer.load.factor", T.DOUBLE, 0.9, None, M, "How full the cleaner's offset map "
            "may become.", dynamic=CW)
    .define("producer.id.expiration.ms", T.INT, 86400000, Range.at_least(1), L, "Forget an idle producer id "
            "after this (its idempotence state is dropped).", dynamic=CW)
    .define("producer.id.expiration.check.interval.ms", T.INT, 600000, Range.at_least(1), L, "How often idle "
            "producer ids are looked for.")
)


def _default(name: str):
    return field(default_factory=lambda: SERVER_LOG_CONFIGS.default(name))


@dataclass
class LogManagerConfig:
    """The broker settings of the log manager itself (not topic configs); defaults from the table."""

    log_dirs: list = field(default_factory=lambda: ["/tmp/kafka-logs"])
    retention_check_ms: int = _default("log.retention.check.interval.ms")
    flush_check_ms: int = _default("log.flush.scheduler.interval.ms")
    flush_recovery_offset_checkpoint_ms: int = _default("log.flush.offset.checkpoint.interval.ms")
    flush_start_offset_checkpoint_ms: int = _default("log.flush.start.offset.checkpoint.interval.ms")
    initial_task_delay_ms: int = _default("log.initial.task.delay.ms")
    cleaner_enable: bool = _default("log.cleaner.enable")
    cleaner_backoff_ms: int = _default("log.cleaner.backoff.ms")
    cleaner_dedupe_buffer_size: int = _default("log.cleaner.dedupe.buffer.size")
    cleaner_io_buffer_load_factor: float = _default("log.cleaner.io.buffer.load.factor")
    producer_id_expiration_ms: int = _default("producer.id.expiration.ms")
    producer_id_expiration_check_interval_ms: int = _default("producer.id.expiration.check.interval.ms")

    #: Kafka key -> attribute.
    KEYS = {
        "log.retention.check.interval.ms": "retention_check_ms",
        "log.flush.scheduler.interval.ms": "flush_check_ms",
        "log.flush.offset.checkpoint.interval.ms": "flush_recovery_offset_checkpoint_ms",
        "log.flush.start.offset.checkpoint.interval.ms": "flush_start_offset_checkpoint_ms",
        "log.initial.task.delay.ms": "initial_task_delay_ms",
        "log.cleaner.enable": "cleaner_enable",
        "log.cleaner.backoff.ms": "cleaner_backoff_ms",
        "log.cleaner.dedupe.buffer.size": "cleaner_dedupe_buffer_size",
        "log.cleaner.io.buffer.load.factor": "cleaner_io_buffer_load_factor",
        "producer.id.expiration.ms": "producer_id_expiration_ms",
        "producer.id.expiration.check.interval.ms": "producer_id_expiration_check_interval_ms",
    }

    @classmethod
    def from_props(cls, props: Optional[Mapping[str, Any]] = None) -> "LogManagerConfig":
        props = dict(props or {})
        cfg = cls()
        dirs = props.get("log.dirs") or props.get("log.dir")
        if dirs:
            cfg.log_dirs = [d.strip() for d in dirs.split(",")] if isinstance(dirs, str) else list(dirs)
        for name, attr in cls.KEYS.items():
            if props.get(name) is not None:
                setattr(cfg, attr, SERVER_LOG_CONFIGS.parse_value(name, props[name]))
        return cfg
