"""File and directory names of a Kafka log: what ``ls`` shows in a log dir, and how to parse it back.

Theory of operation
-------------------
Kafka encodes a lot of state in names, so that a directory listing alone is enough to reload a log::

    <log.dirs>/<topic>-<partition>/                      one directory per partition replica
        00000000000000000000.log                         segment data: record batches as received
        00000000000000000000.index                       sparse offset index of that segment
        00000000000000000000.timeindex                   sparse time index of that segment
        00000000000000004213.snapshot                    producer state as of offset 4213
        leader-epoch-checkpoint, partition.metadata
    <topic>-<partition>.<32 hex>-delete/                 a deleted partition waiting for file.delete.delay.ms

A segment's files are named by its *base offset*, zero-padded to 20 digits so that a plain sort orders them
by offset. Suffixes appended to those names mark work in progress: ``.deleted`` (removed from the log,
waiting for ``file.delete.delay.ms``), ``.cleaned`` (written by the log cleaner), ``.swap`` (a cleaned segment
about to replace old ones). After a crash the loader looks at these suffixes to finish or undo that work.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogFileUtils.java`` and the name
helpers of ``core/src/main/scala/kafka/log/LocalLog.scala`` (``logDirName``, ``logDeleteDirName``,
``parseTopicPartitionName``).
"""
from __future__ import annotations

import os
import uuid
from typing import NamedTuple

__all__ = ["TopicPartition", "LOG_FILE_SUFFIX", "INDEX_FILE_SUFFIX", "TIME_INDEX_FILE_SUFFIX",
           "TXN_INDEX_FILE_SUFFIX", "PRODUCER_SNAPSHOT_FILE_SUFFIX", "DELETED_FILE_SUFFIX", "CLEANED_FILE_SUFFIX",
           "SWAP_FILE_SUFFIX", "DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX", "STRAY_DIR_SUFFIX",
           "filename_prefix_from_offset", "log_file", "offset_index_file", "time_index_file",
           "transaction_index_file", "producer_snapshot_file", "offset_from_file_name", "is_log_file",
           "is_index_file", "log_dir_name", "log_delete_dir_name", "parse_topic_partition_name",
           "LEADER_EPOCH_CHECKPOINT_FILENAME", "PARTITION_METADATA_FILENAME"]

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
LEADER_EPOCH_CHECKPOINT_FILENAME = "leader-epoch-checkpoint"
PARTITION_METADATA_FILENAME = "partition.metadata"


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:  # Kafka's TopicPartition.toString
        return f"{self.topic}-{self.partition}"


def filename_prefix_from_offset(offset: int) -> str:
    """``00000000000000000042`` for 42: twenty digits, so names sort like offsets."""
    return f"{offset:020d}"


def _file(directory, offset: int, suffix: str, extra: str) -> str:
    return os.path.join(str(directory), filename_prefix_from_offset(offset) + suffix + extra)


def log_file(directory, offset: int, suffix: str = "") -> str:
    return _file(directory, offset, LOG_FILE_SUFFIX, suffix)


def offset_index_file(directory, offset: int, suffix: str = "") -> str:
    return _file(directory, offset, INDEX_FILE_SUFFIX, suffix)


def time_index_file(directory, offset: int, suffix: str = "") -> str:
    return _file(directory, offset, TIME_INDEX_FILE_SUFFIX, suffix)


def transaction_index_file(directory, offset: int, suffix: str = "") -> str:
    return _file(directory, offset, TXN_INDEX_FILE_SUFFIX, suffix)


def producer_snapshot_file(directory, offset: int) -> str:
    return _file(directory, offset, PRODUCER_SNAPSHOT_FILE_SUFFIX, "")


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file (or snapshot) is named after: ``00000000000000000042.log.swap`` -> 42."""
    base = os.path.basename(name)
    return int(base[:base.index(".")])


def is_log_file(name: str) -> bool:
    return os.path.basename(name).endswith(LOG_FILE_SUFFIX)


def is_index_file(name: str) -> bool:
    base = os.path.basename(name)
    return base.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX))


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def log_delete_dir_name(tp: TopicPartition, unique_id: str | None = None) -> str:
    """``<topic>-<partition>.<uuid without dashes>-delete``, the topic cut short to keep the name under 255
    characters (Kafka's ``logDeleteDirName``)."""
    unique_id = unique_id or uuid.uuid4().hex
    suffix = f"-{tp.partition}.{unique_id}{DELETE_DIR_SUFFIX}"
    return tp.topic[:max(0, 255 - len(suffix))] + suffix


def parse_topic_partition_name(dirname: str) -> TopicPartition:
    """Topic and partition of a partition directory name, including the ``.<id>-delete`` / ``-future`` /
    ``-stray`` forms. Raises ValueError, worded as Kafka's ``KafkaException``, for anything else."""
    name = os.path.basename(os.path.normpath(str(dirname)))
    stem = name
    for suffix in (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX):
        if name.endswith(suffix) and "." in name:
            stem = name[:name.rindex(".")]
            break
    dash = stem.rfind("-")
    topic, part = (stem[:dash], stem[dash + 1:]) if dash > 0 else ("", "")
    if not topic or not part or not part.isdigit():
        raise ValueError(f"Found directory {dirname}, '{name}' is not in the form of topic-partition or "
                         f"topic-partition.uniqueId-delete (if marked for deletion).\nIf a directory does not "
                         f"contain Kafka topic data it should not exist in Kafka's log directory "
                         f"{os.path.dirname(str(dirname))}")
    return TopicPartition(topic, int(part))
