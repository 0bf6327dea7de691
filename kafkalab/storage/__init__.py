"""kafkalab.storage -- Kafka's log layer: segments, indexes, recovery, retention, compaction, on Kafka's disk layout.

Theory of operation
-------------------
A partition replica is a directory of *segments*; each segment is a ``.log`` file of record batches, stored
exactly as the leader stamped them, plus a sparse ``.index`` (offset -> position) and ``.timeindex``
(timestamp -> offset). The broker appends to the last segment, reads by walking batch headers from an index
entry, and deletes or compacts whole old segments. It never decodes a record to store or serve it: offsets
and the leader epoch are patched into bytes the CRC does not cover. Small checkpoint files remember what must
survive a restart (recovery point, log start offset, high watermark, leader epochs, producer state), and
recovery after a crash cuts each log back to its last complete, CRC-valid batch. The layout and file formats
are Kafka's, so ``kafka-dump-log.sh`` and a learner's ``ls`` see the same thing as on a real broker.

The rooms, bottom up::

    file_records      .log file; page cache versus fsync'd bytes; FileSlice for sendfile
    abstract_index, offset_index, time_index     the sparse indexes
    segment           LogSegment: append, read, roll rules, recover, truncate
    log_segments      the sorted set of segments
    local_log         LocalLog: LEO, recovery point, roll, truncate, two-step deletion
    validator         header checks, LogValidator, offset assignment by patching
    producer_state    idempotent producers: last 5 batches, sequence checks, .snapshot files
    leader_epoch_cache  leader-epoch-checkpoint, end_offset_for (KIP-101/279)
    log_loader        loading and recovery after an unclean shutdown (RecoveryReport)
    retention         retention.ms / retention.bytes / log start offset
    log               UnifiedLog: the API the broker uses
    cleaner           compaction (LogCleaner, cleaner-offset-checkpoint)
    log_manager       LogManager: log dirs, meta.properties, checkpoints, scheduled tasks
    log_config        topic configs, broker synonyms, DescribeConfigs
    server_log_configs  the broker's log.* keys (topic-config defaults, log manager settings)
    checkpoints, log_file_utils, errors, fetch_data_info, log_append_info

Public API (see each class)::

    LogConfig(overrides) / LogConfig.from_broker(props, topic_overrides) / .describe()
    LogManager(log_dirs, default_config, *, time, scheduler, broker_id, cluster_id, broker_props)
        .startup() .get_log(t, p) .get_or_create_log(t, p, config, topic_id) .delete_log(t, p) .all_logs()
        .checkpoint_high_watermarks(hws) .shutdown() .simulate_crash() .cleaner.clean_now(log)
    UnifiedLog(dir, config, *, log_start_offset, recovery_point, scheduler, time, had_clean_shutdown, topic_id)
        .append_as_leader(records, leader_epoch=, origin=) .append_as_follower(records)
        .read(start_offset, max_bytes, isolation=, min_one_message=) -> FetchDataInfo (.records, .slices)
        .fetch_offset_by_timestamp(ts) .end_offset_for_epoch(epoch) .update_high_watermark(offset)
        .truncate_to(offset) .truncate_fully_and_start_at(offset) .maybe_increment_log_start_offset(offset)
        .delete_old_segments() .roll() .flush() .close() .delete() .simulate_crash()
    StorageError and subclasses (each with .error_code)

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/{log,epoch,checkpoint}/`` and
``core/src/main/scala/kafka/log/`` (``UnifiedLog``, ``LocalLog``, ``LogManager``, ``LogCleaner``).
"""
from kafkalab.storage.cleaner import CleanResult, LogCleaner
from kafkalab.storage.errors import (CorruptRecordError, InvalidProducerEpochError, InvalidRecordError,
                                     InvalidTimestampError, KafkaStorageError, OffsetOutOfRangeError,
                                     OutOfOrderSequenceError, RecordBatchTooLargeError, RecordTooLargeError,
                                     StorageError)
from kafkalab.storage.fetch_data_info import FetchDataInfo, FetchIsolation, LogOffsetMetadata
from kafkalab.storage.file_records import FileSlice
from kafkalab.storage.leader_epoch_cache import EpochEntry, LeaderEpochFileCache
from kafkalab.storage.log import (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP,
                                  LATEST_TIMESTAMP, MAX_TIMESTAMP, UnifiedLog)
from kafkalab.storage.log_append_info import AppendOrigin, LogAppendInfo
from kafkalab.storage.log_config import ConfigSource, LogConfig, LogManagerConfig
from kafkalab.storage.log_file_utils import TopicPartition
from kafkalab.storage.log_loader import RecoveryReport
from kafkalab.storage.log_manager import LogManager
from kafkalab.storage.segment import LogSegment, TimestampAndOffset

__all__ = ["UnifiedLog", "LogManager", "LogConfig", "LogManagerConfig", "ConfigSource", "LogSegment",
           "LogAppendInfo", "AppendOrigin", "FetchDataInfo", "FetchIsolation", "LogOffsetMetadata", "FileSlice",
           "TimestampAndOffset", "RecoveryReport", "LeaderEpochFileCache", "EpochEntry", "LogCleaner", "CleanResult",
           "TopicPartition", "StorageError", "CorruptRecordError", "RecordTooLargeError", "RecordBatchTooLargeError",
           "InvalidRecordError", "InvalidTimestampError", "OffsetOutOfRangeError", "OutOfOrderSequenceError",
           "InvalidProducerEpochError", "KafkaStorageError", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP",
           "MAX_TIMESTAMP", "EARLIEST_LOCAL_TIMESTAMP", "LATEST_TIERED_TIMESTAMP"]
