"""The small text files a broker keeps next to its segments, in Kafka's formats.

Theory of operation
-------------------
Segments hold the data; a few small files hold what the broker must remember about them across restarts.
They are plain text, written whole to ``<name>.tmp``, fsync'd and renamed over the old file, so a crash
leaves either the old or the new version, never half of one.

Per log directory (``log.dirs`` entry)::

    recovery-point-offset-checkpoint   topic partition offset   everything below is fsync'd: recovery starts here
    log-start-offset-checkpoint        topic partition offset   first readable offset (retention, DeleteRecords)
    replication-offset-checkpoint      topic partition offset   the high watermark
    cleaner-offset-checkpoint          topic partition offset   where the log cleaner stopped
    meta.properties                    version=0, broker.id, cluster.id (ZooKeeper-era format)
    .kafka_cleanshutdown               present only after a clean shutdown

All four ``*-checkpoint`` files share one layout: a version line (``0``), a count line, then one entry per
line. Each is created empty when its owner starts (:meth:`CheckpointFile.create_if_missing`, as Kafka's
``CheckpointFile`` constructor does) and first written later: a fresh broker's log dir holds ``.lock``,
``meta.properties`` and the four files at 0 bytes. The log manager owns the recovery-point and log-start-offset
files (written every ``log.flush.offset.checkpoint.interval.ms`` / ``log.flush.start.offset.checkpoint.interval.ms``
after ``log.initial.task.delay.ms``), the replica manager the high watermarks (written from its first LeaderAndIsr
on, every ``replica.high.watermark.checkpoint.interval.ms``), the log cleaner its own (written when it has
cleaned a log, or a log it knows is deleted or truncated); the first three are also written at a clean
shutdown. Per partition directory::

    leader-epoch-checkpoint            0 / count / "epoch start_offset" lines
    partition.metadata                 "version: 0" and "topic_id: <base64 topic id>"

Mirrors: ``server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java``,
``storage/.../checkpoint/{OffsetCheckpointFile,LeaderEpochCheckpointFile,PartitionMetadataFile,
CleanShutdownFileHandler}.java`` and ``metadata/.../properties/MetaProperties.java``.
"""
from __future__ import annotations

import base64
import json
import os
import time as _time
import uuid
from typing import Callable, Iterable, Optional

from kafkalab.storage import file_records
from kafkalab.storage.errors import InconsistentBrokerIdError, InconsistentClusterIdError, KafkaStorageError
from kafkalab.storage.log_file_utils import TopicPartition

__all__ = ["CheckpointFile", "OffsetCheckpointFile", "LeaderEpochCheckpointFile", "PartitionMetadataFile",
           "CleanShutdownFile", "MetaProperties", "write_atomically", "kafka_uuid_string", "parse_kafka_uuid",
           "RECOVERY_POINT_CHECKPOINT_FILE", "LOG_START_OFFSET_CHECKPOINT_FILE", "REPLICATION_OFFSET_CHECKPOINT_FILE",
           "CLEANER_OFFSET_CHECKPOINT_FILE", "META_PROPERTIES_FILE", "CLEAN_SHUTDOWN_FILE"]

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
META_PROPERTIES_FILE = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path.tmp``, fsync it, rename it over ``path`` and fsync the directory."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
        if file_records.FSYNC:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    file_records.fsync_dir(os.path.dirname(path) or ".")


def kafka_uuid_string(value) -> str:
    """Kafka's ``Uuid.toString``: the 16 bytes in URL-safe base64 without padding (22 characters)."""
    if isinstance(value, str):
        return value
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)


class CheckpointFile:
    """``version`` line, count line, then ``format_entry`` lines (Kafka's ``CheckpointFile``)."""

    VERSION = 0

    def __init__(self, path: str, format_entry: Callable, parse_entry: Callable):
        self.path = str(path)
        self._format = format_entry
        self._parse = parse_entry

    def create_if_missing(self) -> "CheckpointFile":
        """Create the file empty (0 bytes) unless it exists, as the constructor of Kafka's ``CheckpointFile``
        does: the owner of a checkpoint makes its file when it starts, long before it writes one. An empty
        file reads as no entries."""
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            pass
        return self

    def write(self, entries: Iterable) -> None:
        entries = list(entries)
        lines = [str(self.VERSION), str(len(entries))] + [self._format(e) for e in entries]
        write_atomically(self.path, "\n".join(lines) + "\n")

    def read(self) -> list:
        """The entries; an empty list if the file does not exist, is empty or stops after its version line (as
        Kafka reads them). Raises KafkaStorageError if malformed."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if not lines:
            return []
        where = f"checkpoint file {self.path}"
        try:
            version = int(lines[0].strip())
        except (IndexError, ValueError):
            raise KafkaStorageError(f"Malformed line in {where}: {lines[0] if lines else ''!r}") from None
        if version != self.VERSION:
            raise KafkaStorageError(f"Unrecognized version of the {where}: {version}")
        if len(lines) == 1:
            return []
        try:
            expected = int(lines[1].strip())
        except (IndexError, ValueError):
            raise KafkaStorageError(f"Malformed line in {where}: missing entry count") from None
        entries = []
        for line in lines[2:]:
            if not line.strip():
                continue
            try:
                entries.append(self._parse(line.split()))
            except (ValueError, IndexError):
                raise KafkaStorageError(f"Malformed line in {where}: {line!r}") from None
        if len(entries) != expected:
            raise KafkaStorageError(f"Expected {expected} entries in {where}, but found only {len(entries)}")
        return entries


class OffsetCheckpointFile(CheckpointFile):
    """``topic partition offset`` lines; read as ``{TopicPartition: offset}``."""

    def __init__(self, path: str):
        super().__init__(path, lambda e: f"{e[0].topic} {e[0].partition} {e[1]}",
                         lambda f: (TopicPartition(f[0], int(f[1])), int(f[2])) if len(f) == 3 else _bad())

    def write(self, offsets) -> None:  # type: ignore[override]
        items = sorted(offsets.items()) if isinstance(offsets, dict) else list(offsets)
        super().write([(TopicPartition(*tp), off) for tp, off in items])

    def read(self) -> dict:  # type: ignore[override]
        return dict(super().read())


def _bad():
    raise ValueError("wrong number of fields")


class LeaderEpochCheckpointFile(CheckpointFile):
    """``epoch start_offset`` lines."""

    def __init__(self, path: str):
        super().__init__(path, lambda e: f"{e[0]} {e[1]}",
                         lambda f: (int(f[0]), int(f[1])) if len(f) == 2 else _bad())


class PartitionMetadataFile:
    """``partition.metadata``: the topic id this partition directory belongs to (KIP-516)."""

    VERSION = 0

    def __init__(self, path: str):
        self.path = str(path)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def write(self, topic_id) -> None:
        write_atomically(self.path, f"version: {self.VERSION}\ntopic_id: {kafka_uuid_string(topic_id)}")

    def read(self) -> uuid.UUID:
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        try:
            key, version = lines[0].split()
            if key != "version:" or int(version) != self.VERSION:
                raise KafkaStorageError(f"Unrecognized version of partition metadata file ({self.path}): {version}")
            key, topic_id = lines[1].split()
            if key != "topic_id:":
                raise ValueError(key)
            return parse_kafka_uuid(topic_id)
        except (IndexError, ValueError):
            raise KafkaStorageError(f"Malformed line in partition metadata file ({self.path})") from None


class CleanShutdownFile:
    """``.kafka_cleanshutdown``: written last on a clean shutdown, deleted first at startup. JSON as Kafka 3.x
    writes it: ``{"version":0,"brokerEpoch":-1}`` (-1: a ZooKeeper-era broker has no broker epoch to record)."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(str(log_dir), CLEAN_SHUTDOWN_FILE)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def write(self, broker_epoch: int = -1) -> None:
        write_atomically(self.path, json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")))

    def delete(self) -> None:
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


class MetaProperties:
    """``meta.properties`` of a ZooKeeper-era broker (version 0): which broker and cluster a log dir belongs to."""

    def __init__(self, broker_id: int, cluster_id: Optional[str], version: int = 0):
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.version = version

    @classmethod
    def read(cls, log_dir: str) -> Optional["MetaProperties"]:
        path = os.path.join(str(log_dir), META_PROPERTIES_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        props = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line[0] in "#!" or "=" not in line:
                continue
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
        version = int(props.get("version", "0"))
        broker_id = props.get("broker.id", props.get("node.id"))
        return cls(int(broker_id) if broker_id is not None else -1, props.get("cluster.id"), version)

    def write(self, log_dir: str, now_ms: Optional[int] = None) -> None:
        """Java ``Properties.store`` layout: an empty comment line, a date comment, then ``key=value`` lines."""
        stamp = _time.strftime("%a %b %d %H:%M:%S UTC %Y",
                               _time.gmtime((now_ms if now_ms is not None else _time.time() * 1000) / 1000))
        lines = ["#", f"#{stamp}"]
        if self.cluster_id is not None:
            lines.append(f"cluster.id={self.cluster_id}")
        lines += [f"version={self.version}", f"broker.id={self.broker_id}"]
        write_atomically(os.path.join(str(log_dir), META_PROPERTIES_FILE), "\n".join(lines) + "\n")

    def verify(self, log_dir: str, broker_id: int, cluster_id: Optional[str]) -> None:
        path = os.path.join(str(log_dir), META_PROPERTIES_FILE)
        if self.version != 0:
            raise KafkaStorageError(f"Found unexpected version in {path}. ZK-based brokers that are not migrating "
                                    f"only support version 0 (which is implicit when the `version` field is missing).")
        if self.broker_id != broker_id:
            raise InconsistentBrokerIdError(f"Configured broker.id {broker_id} doesn't match stored broker.id "
                                            f"Some({self.broker_id}) in meta.properties. If you moved your data, make "
                                            f"sure your configured broker.id matches. If you intend to create a new "
                                            f"broker, you should remove all data in your data directories (log.dirs).")
        if cluster_id is not None and self.cluster_id is not None and self.cluster_id != cluster_id:
            raise InconsistentClusterIdError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId Some({self.cluster_id}) in "
                f"meta.properties. The broker is trying to join the wrong cluster. Configured zookeeper.connect may "
                f"be wrong.")

    def __repr__(self) -> str:
        return f"MetaProperties(version={self.version}, brokerId={self.broker_id}, clusterId={self.cluster_id})"
