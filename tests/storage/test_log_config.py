"""LogConfig: Kafka's names, defaults, validators and broker synonyms; DescribeConfigs sources."""
import pytest

from kafkalab.protocol.errors import ErrorCode
from kafkalab.storage import ConfigSource, LogConfig, LogManagerConfig
from kafkalab.storage.errors import InvalidConfigurationError
from kafkalab.storage.log_config import LONG_MAX, TOPIC_CONFIGS

KAFKA_DEFAULTS = {
    "segment.bytes": 1073741824, "segment.ms": 604800000, "segment.index.bytes": 10485760,
    "index.interval.bytes": 4096, "retention.ms": 604800000, "retention.bytes": -1, "cleanup.policy": ["delete"],
    "delete.retention.ms": 86400000, "min.compaction.lag.ms": 0, "min.cleanable.dirty.ratio": 0.5,
    "max.message.bytes": 1048588, "message.timestamp.type": "CreateTime", "flush.messages": LONG_MAX,
    "flush.ms": LONG_MAX, "file.delete.delay.ms": 60000, "min.insync.replicas": 1,
    "unclean.leader.election.enable": False, "compression.type": "producer",
    "message.timestamp.before.max.ms": LONG_MAX, "message.timestamp.after.max.ms": LONG_MAX,
    "max.compaction.lag.ms": LONG_MAX, "segment.jitter.ms": 0, "compression.gzip.level": -1,
    "compression.lz4.level": 9, "compression.zstd.level": 3,
}


@pytest.mark.parametrize("name,value", sorted(KAFKA_DEFAULTS.items()))
def test_defaults_are_kafkas(name, value):
    assert LogConfig()[name] == value


def test_attributes_use_kafka_field_names():
    c = LogConfig()
    assert (c.segment_size, c.segment_ms, c.max_index_size, c.index_interval, c.retention_size) == (
        1073741824, 604800000, 10485760, 4096, -1)
    assert c.delete and not c.compact and c.flush_interval == LONG_MAX and c.max_message_size == 1048588


def test_cleanup_policy_list():
    both = LogConfig({"cleanup.policy": "compact,delete"})
    assert both.compact and both.delete and both["cleanup.policy"] == ["compact", "delete"]
    assert LogConfig({"cleanup.policy": "compact"}).compact and not LogConfig({"cleanup.policy": "compact"}).delete


@pytest.mark.parametrize("props,expected", [
    ({"log.retention.hours": "1"}, 3600000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
    ({"log.retention.ms": "-1"}, -1),
])
def test_retention_ms_synonym_priority(props, expected):
    assert LogConfig.from_broker(props)["retention.ms"] == expected


@pytest.mark.parametrize("props,name,expected", [
    ({"log.roll.hours": "2"}, "segment.ms", 7200000),
    ({"log.roll.ms": "1000", "log.roll.hours": "2"}, "segment.ms", 1000),
    ({"log.segment.bytes": "1024"}, "segment.bytes", 1024),
    ({"log.cleanup.policy": "compact"}, "cleanup.policy", ["compact"]),
    ({"log.cleaner.delete.retention.ms": "5"}, "delete.retention.ms", 5),
    ({"message.max.bytes": "100"}, "max.message.bytes", 100),
    ({"log.index.interval.bytes": "1"}, "index.interval.bytes", 1),
    ({"log.index.size.max.bytes": "4096"}, "segment.index.bytes", 4096),
    ({"log.flush.interval.messages": "1"}, "flush.messages", 1),
    ({"log.flush.scheduler.interval.ms": "7"}, "flush.ms", 7),
    ({"log.flush.interval.ms": "3", "log.flush.scheduler.interval.ms": "7"}, "flush.ms", 3),
    ({"log.message.timestamp.type": "LogAppendTime"}, "message.timestamp.type", "LogAppendTime"),
    ({"log.segment.delete.delay.ms": "0"}, "file.delete.delay.ms", 0),
    ({"log.cleaner.min.cleanable.ratio": "0.1"}, "min.cleanable.dirty.ratio", 0.1),
    ({"log.cleaner.min.compaction.lag.ms": "9"}, "min.compaction.lag.ms", 9),
    ({"min.insync.replicas": "2"}, "min.insync.replicas", 2),
    ({"unclean.leader.election.enable": "true"}, "unclean.leader.election.enable", True),
    ({"compression.type": "zstd"}, "compression.type", "zstd"),
])
def test_broker_synonyms(props, name, expected):
    assert LogConfig.from_broker(props)[name] == expected


def test_topic_override_beats_broker():
    c = LogConfig.from_broker({"log.retention.hours": "1"}, {"retention.ms": "10"})
    assert c.retention_ms == 10 and c.topic_overrides == {"retention.ms": 10}


def test_describe_sources_and_synonyms():
    c = LogConfig.from_broker({"log.retention.hours": "1", "log.segment.bytes": "2048"}, {"retention.ms": "10"})
    described = {d.name: d for d in c.describe()}
    rm = described["retention.ms"]
    assert rm.value == "10" and rm.config_source == ConfigSource.TOPIC_CONFIG
    assert [(s.name, s.value, s.source) for s in rm.synonyms] == [
        ("retention.ms", "10", ConfigSource.TOPIC_CONFIG),
        ("log.retention.hours", "1", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
    sb = described["segment.bytes"]
    assert sb.value == "2048" and sb.config_source == ConfigSource.STATIC_BROKER_CONFIG
    dr = described["delete.retention.ms"]
    assert dr.config_source == ConfigSource.DEFAULT_CONFIG and dr.value == "86400000"
    assert described["cleanup.policy"].value == "delete"
    assert described["min.cleanable.dirty.ratio"].value == "0.5"
    assert described["unclean.leader.election.enable"].value == "false"
    assert set(described) == set(TOPIC_CONFIGS)
    assert c.describe(["retention.ms"], include_synonyms=False)[0].synonyms == ()


@pytest.mark.parametrize("overrides,message", [
    ({"segment.bytes": "10"}, "Invalid value 10 for configuration segment.bytes: Value must be at least 14"),
    ({"segment.bytes": "abc"}, "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
    ({"cleanup.policy": "compact,shred"}, "Invalid value shred for configuration cleanup.policy: String must be one "
                                          "of: compact, delete"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value "
                                           "must be no more than 1"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one "
                                     "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type: String must "
                                        "be one of: CreateTime, LogAppendTime"),
    ({"unclean.leader.election.enable": "maybe"}, "Invalid value maybe for configuration "
                                                  "unclean.leader.election.enable: Expected value to be either true "
                                                  "or false"),
    ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ({"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: Value must be "
                                      "between 1 and 9 or equal to -1"),
    ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_validation_uses_kafkas_wording(overrides, message):
    with pytest.raises(InvalidConfigurationError) as e:
        LogConfig(overrides)
    assert str(e.value) == message and e.value.error_code == ErrorCode.INVALID_CONFIG


def test_invalid_broker_value_names_the_broker_key():
    with pytest.raises(InvalidConfigurationError, match="log.roll.hours"):
        LogConfig.from_broker({"log.roll.hours": "0"})


def test_timestamp_bounds_fall_back_to_deprecated_difference():
    c = LogConfig({"message.timestamp.difference.max.ms": "1000"})
    assert c.message_timestamp_before_max_ms == 1000 and c.message_timestamp_after_max_ms == 1000
    c = LogConfig({"message.timestamp.difference.max.ms": "1000", "message.timestamp.after.max.ms": "5"})
    assert c.message_timestamp_after_max_ms == 5


def test_with_overrides_keeps_broker_props():
    c = LogConfig.from_broker({"log.segment.bytes": "2048"}).with_overrides({"retention.ms": 1})
    assert c.segment_size == 2048 and c.retention_ms == 1


def test_log_manager_config_from_props():
    c = LogManagerConfig.from_props({"log.dirs": "/a,/b", "log.retention.check.interval.ms": "10",
                                     "log.cleaner.enable": "false"})
    assert c.log_dirs == ["/a", "/b"] and c.retention_check_ms == 10 and not c.cleaner_enable
    d = LogManagerConfig.from_props({})
    assert (d.retention_check_ms, d.flush_recovery_offset_checkpoint_ms, d.cleaner_backoff_ms,
            d.initial_task_delay_ms) == (300000, 60000, 15000, 30000)
