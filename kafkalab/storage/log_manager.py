"""The log manager: every partition log of a broker, its log directories, and the background work on them.

Theory of operation
-------------------
A broker stores partitions in one or more *log directories* (``log.dirs``). At startup the log manager:

* takes the ``.lock`` file of each directory (two brokers must never share one);
* checks ``meta.properties`` (``version=0``, ``broker.id``, ``cluster.id``): data written by another broker
  or another cluster is refused;
* looks for ``.kafka_cleanshutdown``: present means every log was flushed and closed properly, absent means
  each log must be recovered from its recovery point (the marker is deleted at once, so a crash during
  loading still counts as unclean);
* creates ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` empty if they are missing
  (Kafka's checkpoint objects do so when they are made; the first entries come with the first checkpoint task);
* reads them and ``replication-offset-checkpoint`` and loads every ``<topic>-<partition>`` directory as a
  :class:`~kafkalab.storage.log.UnifiedLog` (directories renamed ``*-delete`` finish being deleted);
* schedules the periodic tasks, all on the injected scheduler so a lab can "advance the clock"::

    kafka-log-retention                log.retention.check.interval.ms (300 s)   delete_old_segments
    kafka-log-flusher                  log.flush.scheduler.interval.ms           flush logs older than flush.ms
    kafka-recovery-point-checkpoint    log.flush.offset.checkpoint.interval.ms (60 s)
    kafka-log-start-offset-checkpoint  log.flush.start.offset.checkpoint.interval.ms (60 s)
    kafka-delete-logs                  after file.delete.delay.ms                 remove deleted partitions
    kafka-log-cleaner-thread-0         log.cleaner.backoff.ms (15 s)             compaction (log.cleaner.enable)
    PeriodicProducerExpirationCheck    producer.id.expiration.check.interval.ms  forget idle producer ids

All of them start after ``log.initial.task.delay.ms`` (30 s). A clean ``shutdown`` flushes and closes every
log, writes the checkpoints and, last, the clean-shutdown marker. :meth:`LogManager.simulate_crash` instead
drops everything on the floor as a power cut would.

**A failed directory** (any I/O error there, see :mod:`.log_dir_failure_channel`) is taken offline by
:meth:`LogManager.handle_log_dir_failure`: its logs are closed as they are and forgotten, no checkpoint or
clean-shutdown marker is written there any more (the next start recovers it), new logs go to the live
directories only. With no live directory left the broker must stop: the log manager calls its ``halt``.

Mirrors: ``core/src/main/scala/kafka/log/LogManager.scala`` (ZooKeeper-era broker: meta.properties v0).
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
from typing import Mapping, Optional

from kafkalab.common import SystemTime
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.checkpoints import (LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE,
                                          REPLICATION_OFFSET_CHECKPOINT_FILE, CleanShutdownFile, MetaProperties,
                                          OffsetCheckpointFile)
from kafkalab.storage.cleaner import LogCleaner
from kafkalab.storage.errors import KafkaStorageError, StorageError
from kafkalab.storage.log import UnifiedLog
from kafkalab.storage.log_config import LogConfig, LogManagerConfig
from kafkalab.storage.log_dir_failure_channel import LogDirFailureChannel
from kafkalab.storage.log_file_utils import TopicPartition

__all__ = ["LogManager", "LOCK_FILE_NAME"]

log = logging.getLogger(__name__)

LOCK_FILE_NAME = ".lock"
#: directories of deleted partitions removed per run of ``kafka-delete-logs`` (see :meth:`LogManager.delete_logs`)
LOGS_DELETED_PER_RUN = 20


def _tp(topic, partition=None) -> TopicPartition:
    if partition is None:
        return TopicPartition(*topic)
    return TopicPartition(topic, int(partition))


class LogManager:
    """All logs of one broker. ``default_config`` is the topic config a topic without overrides gets
    (usually ``LogConfig.from_broker(server_properties)``); ``broker_props`` supplies the log manager's own
    settings (``log.retention.check.interval.ms`` ...)."""

    def __init__(self, log_dirs, default_config: Optional[LogConfig] = None, *, time=None, scheduler=None,
                 broker_id: int = 0, cluster_id: Optional[str] = None, broker_props: Optional[Mapping] = None,
                 topic_configs: Optional[Mapping[str, LogConfig]] = None, cleaner_enable: Optional[bool] = None,
                 log_dir_failure_channel: Optional[LogDirFailureChannel] = None, halt=None):
        if isinstance(log_dirs, (str, os.PathLike)):
            log_dirs = [log_dirs]
        self.log_dirs = [os.path.abspath(str(d)) for d in log_dirs]
        #: where I/O errors are reported; the replica manager sets its failure handler
        self.log_dir_failure_channel = log_dir_failure_channel or LogDirFailureChannel()
        #: Kafka's ``Exit.halt(1)`` when every log dir failed (the broker passes its own; alone: nothing more)
        self.halt = halt
        self._live_log_dirs = list(self.log_dirs)   # until handle_log_dir_failure takes one away
        self.default_config = default_config or LogConfig.from_broker(broker_props or {})
        self.time = time or SystemTime()
        self.scheduler = scheduler
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.config = LogManagerConfig.from_props(broker_props)
        if cleaner_enable is not None:
            self.config.cleaner_enable = cleaner_enable
        self.topic_configs: dict = dict(topic_configs or {})
        self.current_logs: dict = {}
        self.logs_to_be_deleted: list = []      # (UnifiedLog or directory path, time scheduled)
        self.recovery_reports: dict = {}
        self.had_clean_shutdown: dict = {}
        self.high_watermark_checkpoints: dict = {}
        self.cleaner: Optional[LogCleaner] = None
        self._tasks: list = []
        self._lock_fds: dict = {}
        self._running = False
        self._delete_task = None
        self._delete_started = False           # kafka-delete-logs has run once (after log.initial.task.delay.ms)
        self._delete_pending = False           # ... and is scheduled to run again

    # ------------------------------------------------------------------------------------------ startup
    def startup(self, topic_configs: Optional[Mapping[str, LogConfig]] = None) -> None:
        if topic_configs:
            self.topic_configs.update(topic_configs)
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
            self._lock_dir(log_dir)
            self._check_meta_properties(log_dir)
            for name in (RECOVERY_POINT_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE):
                OffsetCheckpointFile(os.path.join(log_dir, name)).create_if_missing()
        for log_dir in self.log_dirs:
            self._load_logs(log_dir)
        self._running = True
        self._schedule_tasks()
        if self.config.cleaner_enable:
            self.cleaner = LogCleaner(lambda: dict(self.current_logs), log_dirs=self.live_log_dirs, time=self.time,
                                      scheduler=self.scheduler,
                                      backoff_ms=self.config.cleaner_backoff_ms,
                                      dedupe_buffer_size=self.config.cleaner_dedupe_buffer_size,
                                      io_buffer_load_factor=self.config.cleaner_io_buffer_load_factor)
            self.cleaner.startup()

    def _lock_dir(self, log_dir: str) -> None:
        fd = os.open(os.path.join(log_dir, LOCK_FILE_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise KafkaStorageError(f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance in another "
                                    f"process or thread is using this directory.") from None
        self._lock_fds[log_dir] = fd

    def _unlock_dirs(self) -> None:
        for fd in self._lock_fds.values():
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._lock_fds.clear()

    def _check_meta_properties(self, log_dir: str) -> None:
        stored = MetaProperties.read(log_dir)
        if stored is None:
            MetaProperties(self.broker_id, self.cluster_id).write(log_dir, self.time.milliseconds())
            return
        stored.verify(log_dir, self.broker_id, self.cluster_id)
        if stored.cluster_id is None and self.cluster_id is not None:
            MetaProperties(self.broker_id, self.cluster_id).write(log_dir, self.time.milliseconds())

    def _read_checkpoint(self, log_dir: str, name: str) -> dict:
        try:
            return OffsetCheckpointFile(os.path.join(log_dir, name)).read()
        except StorageError as e:
            log.warning("Error occurred while reading %s of directory %s, resetting it: %s", name, log_dir, e)
            return {}

    def _load_logs(self, log_dir: str) -> None:
        marker = CleanShutdownFile(log_dir)
        clean = marker.exists()
        marker.delete()
        self.had_clean_shutdown[log_dir] = clean
        recovery_points = self._read_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT_FILE)
        log_start_offsets = self._read_checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT_FILE)
        high_watermarks = self._read_checkpoint(log_dir, REPLICATION_OFFSET_CHECKPOINT_FILE)
        entries = sorted(e for e in os.listdir(log_dir) if os.path.isdir(os.path.join(log_dir, e)))
        log.info("%s %d logs from %s", "Loading (clean shutdown)" if clean else "Recovering (no clean shutdown file)",
                 len(entries), log_dir)
        for entry in entries:
            path = os.path.join(log_dir, entry)
            if entry.endswith(names.DELETE_DIR_SUFFIX):
                self.logs_to_be_deleted.append((path, self.time.milliseconds()))
                continue
            if entry.endswith((names.FUTURE_DIR_SUFFIX, names.STRAY_DIR_SUFFIX)):
                log.warning("Ignoring %s: kafkalab does not move replicas between log dirs", path)
                continue
            try:
                tp = names.parse_topic_partition_name(path)
            except ValueError as e:
                log.warning("Skipping %s", e)
                continue
            if tp in self.current_logs:
                raise KafkaStorageError(f"Duplicate log directories for {tp} are found in both {path} and "
                                        f"{self.current_logs[tp].dir}.")
            unified = UnifiedLog(path, self._config_for(tp.topic), log_start_offset=log_start_offsets.get(tp, 0),
                                 recovery_point=recovery_points.get(tp, 0), scheduler=self.scheduler, time=self.time,
                                 had_clean_shutdown=clean,
                                 producer_id_expiration_ms=self.config.producer_id_expiration_ms,
                                 log_dir_failure_channel=self.log_dir_failure_channel)
            if tp in high_watermarks:
                self.high_watermark_checkpoints[tp] = high_watermarks[tp]
                unified.update_high_watermark(high_watermarks[tp])
            self.current_logs[tp] = unified
            self.recovery_reports[tp] = unified.recovery_report

    def _config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    def _schedule(self, name: str, fn, delay_ms: int, period_ms: int = -1) -> None:
        if self.scheduler is not None:
            self._tasks.append(self.scheduler.schedule(name, fn, delay_ms, period_ms))

    def _schedule_tasks(self) -> None:
        c, delay = self.config, self.config.initial_task_delay_ms
        self._schedule("kafka-log-retention", self.cleanup_logs, delay, c.retention_check_ms)
        self._schedule("kafka-log-flusher", self.flush_dirty_logs, delay, c.flush_check_ms)
        self._schedule("kafka-recovery-point-checkpoint", self.checkpoint_log_recovery_offsets, delay,
                       c.flush_recovery_offset_checkpoint_ms)
        self._schedule("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets, delay,
                       c.flush_start_offset_checkpoint_ms)
        self._schedule("PeriodicProducerExpirationCheck", self.remove_expired_producers,
                       c.producer_id_expiration_check_interval_ms, c.producer_id_expiration_check_interval_ms)
        if self.scheduler is not None:
            self._delete_pending = True
            self._delete_task = self.scheduler.schedule("kafka-delete-logs", self.delete_logs, delay)
            self._tasks.append(self._delete_task)

    # ------------------------------------------------------------------------------------------- access
    @property
    def live_log_dirs(self) -> list[str]:
        return list(self._live_log_dirs)

    @property
    def offline_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if d not in self._live_log_dirs]

    def is_log_dir_online(self, log_dir: str) -> bool:
        return log_dir in self._live_log_dirs

    def _storage_failure(self, log_dir: str, message: str, error: OSError) -> None:
        self.log_dir_failure_channel.maybe_add_offline_log_dir(log_dir, message, error)

    def handle_log_dir_failure(self, log_dir: str) -> list:
        """Stop serving ``log_dir`` (Kafka's ``LogManager.handleLogDirFailure``): close its logs as they are and
        forget them. Returns the partitions that went offline; with no live dir left, halts the broker."""
        log.warning("Stopping serving logs in dir %s", log_dir)
        if log_dir in self._live_log_dirs:
            self._live_log_dirs.remove(log_dir)
        if not self._live_log_dirs:
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_dirs))
            if self.halt is not None:
                self.halt()
        offline = [tp for tp, lg in list(self.current_logs.items()) if lg.parent_dir == log_dir]
        for tp in offline:
            removed = self.current_logs.pop(tp)
            try:
                removed.close_handlers()
            except OSError:
                pass
        log.warning("Partitions %s are offline due to failure on log directory %s",
                    ",".join(str(tp) for tp in offline), log_dir)
        return offline

    def get_log(self, topic, partition=None) -> Optional[UnifiedLog]:
        return self.current_logs.get(_tp(topic, partition))

    def all_logs(self) -> list:
        return list(self.current_logs.values())

    def logs_by_topic(self, topic: str) -> list:
        return [lg for tp, lg in sorted(list(self.current_logs.items())) if tp.topic == topic]

    def get_or_create_log(self, topic: str, partition: int, config: Optional[LogConfig] = None,
                          topic_id=None) -> UnifiedLog:
        """The log of ``topic-partition``, created (with ``partition.metadata`` when ``topic_id`` is given) in the
        log dir holding the fewest partitions if it does not exist yet."""
        tp = _tp(topic, partition)
        existing = self.current_logs.get(tp)
        if existing is not None:
            if topic_id is not None:
                existing.assign_topic_id(topic_id)
            return existing
        if config is not None:
            self.topic_configs.setdefault(topic, config)
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError(f"Can not create log for {tp} because log directories "
                                    f"{','.join(self.offline_log_dirs)} are offline")
        log_dir = live[0]
        if len(live) > 1:   # the dir holding the fewest partitions (Kafka's nextLogDirs)
            counts = {d: 0 for d in live}
            for lg in list(self.current_logs.values()):
                counts[lg.parent_dir] = counts.get(lg.parent_dir, 0) + 1
            log_dir = min(live, key=lambda d: counts.get(d, 0))
        path = os.path.join(log_dir, names.log_dir_name(tp))
        try:
            unified = UnifiedLog(path, config or self._config_for(topic), scheduler=self.scheduler, time=self.time,
                                 topic_id=topic_id, producer_id_expiration_ms=self.config.producer_id_expiration_ms,
                                 log_dir_failure_channel=self.log_dir_failure_channel)
        except OSError as e:
            message = f"Error while creating log for {tp} in dir {log_dir}"
            self._storage_failure(log_dir, message, e)
            raise KafkaStorageError(f"{message}: {e}") from e
        self.current_logs[tp] = unified
        log.info("Created log for partition %s in %s with properties %s", tp, path,
                 unified.config.overridden_configs_as_string())
        return unified

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """New topic configs (AlterConfigs): every log of the topic uses them from now on."""
        self.topic_configs[topic] = config
        for lg in self.logs_by_topic(topic):
            lg.update_config(config)

    def delete_log(self, topic, partition=None, *, checkpoint: bool = True) -> Optional[UnifiedLog]:
        """Kafka's ``asyncDelete``: rename the directory ``<topic>-<partition>.<uuid>-delete`` now, delete it
        ``file.delete.delay.ms`` later. Returns the removed log (None if there was none). ``checkpoint=False``
        leaves the log directory's checkpoints to the caller (:meth:`checkpoint_dir` once after many deletions,
        as Kafka's ``asyncDelete`` of a set of partitions does)."""
        tp = _tp(topic, partition)
        removed = self.current_logs.pop(tp, None)
        if removed is None:
            return None
        if self.cleaner is not None:
            self.cleaner.update_checkpoints(removed.parent_dir, remove=tp)
        removed.rename_dir(names.log_delete_dir_name(tp))
        self.logs_to_be_deleted.append((removed, self.time.milliseconds()))
        if self._delete_started and not self._delete_pending:
            self._schedule_deletion()      # (before log.initial.task.delay.ms, the first run is still to come)
        log.info("Log for partition %s is renamed to %s and is scheduled for deletion", tp, removed.dir)
        if checkpoint:
            self.checkpoint_dir(removed.parent_dir)
        return removed

    # --------------------------------------------------------------------------------- periodic work
    def cleanup_logs(self) -> int:
        """Retention for every log the cleaner does not look after; returns segments deleted."""
        total = 0
        for _tp, lg in list(self.current_logs.items()):
            if self.cleaner is not None and lg.config.compact:
                continue
            if not lg.closed:
                total += lg.delete_old_segments()
        return total

    def flush_dirty_logs(self) -> None:
        now = self.time.milliseconds()
        for lg in list(self.current_logs.values()):
            if not lg.closed and now - lg.last_flush_time >= lg.config.flush_ms:
                lg.flush()

    def remove_expired_producers(self) -> None:
        now = self.time.milliseconds()
        for lg in list(self.current_logs.values()):
            if not lg.closed:
                lg.remove_expired_producers(now)

    def delete_logs(self) -> None:
        """Delete partitions whose ``file.delete.delay.ms`` has passed; reschedules itself while any remain.

        At most :data:`LOGS_DELETED_PER_RUN` directories per run: Kafka removes them on its scheduler thread,
        kafkalab on the event loop, so the rest of a deleted topic of 1,000 partitions waits for the next run
        (a millisecond later) and other connections are served in between."""
        self._delete_pending = False
        delay = self.default_config.file_delete_delay_ms
        now = self.time.milliseconds()
        remaining = []
        deleted = 0
        for item, scheduled in self.logs_to_be_deleted:
            if scheduled + delay <= now and deleted < LOGS_DELETED_PER_RUN:
                deleted += 1
                if isinstance(item, UnifiedLog):
                    item.delete()
                    log.info("Deleted log for partition %s in %s.", item.topic_partition, item.dir)
                else:
                    shutil.rmtree(item, ignore_errors=True)
            else:
                remaining.append((item, scheduled))
        self.logs_to_be_deleted = remaining
        self._delete_started = True
        self._schedule_deletion()

    def _schedule_deletion(self) -> None:
        """Run ``kafka-delete-logs`` when the oldest queued deletion is due; with nothing queued, not at all
        (:meth:`delete_log` wakes it). Polling an empty queue would cost nothing in Kafka's own scheduler thread
        but a timer every ``file.delete.delay.ms`` -- every millisecond when that is 0 -- on this event loop."""
        if self._delete_task in self._tasks:
            self._tasks.remove(self._delete_task)
        self._delete_task = None
        if not (self._running and self.scheduler is not None and self.logs_to_be_deleted):
            return
        delay, now = self.default_config.file_delete_delay_ms, self.time.milliseconds()
        next_delay = min(s + delay - now for _, s in self.logs_to_be_deleted)
        self._delete_pending = True
        self._delete_task = self.scheduler.schedule("kafka-delete-logs", self.delete_logs, max(next_delay, 1))
        self._tasks.append(self._delete_task)

    # ------------------------------------------------------------------------------------- checkpoints
    def _logs_in_dir(self, log_dir: str) -> dict:
        return {tp: lg for tp, lg in list(self.current_logs.items()) if lg.parent_dir == log_dir}

    def checkpoint_dir(self, log_dir: str) -> None:
        """Write ``log_dir``'s recovery-point and log-start-offset checkpoints for the logs it holds now (nothing
        for an offline dir; an I/O error while writing takes the dir offline)."""
        self._checkpoint_recovery_offsets_in_dir(log_dir)
        self._checkpoint_log_start_offsets_in_dir(log_dir)

    def _checkpoint_recovery_offsets_in_dir(self, log_dir: str) -> None:
        if not self.is_log_dir_online(log_dir):
            return
        try:
            OffsetCheckpointFile(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT_FILE)).write(
                {tp: lg.recovery_point for tp, lg in self._logs_in_dir(log_dir).items()})
        except OSError as e:
            self._storage_failure(log_dir, f"Disk error while writing recovery offsets checkpoint in directory "
                                           f"{log_dir}: {e}", e)

    def _checkpoint_log_start_offsets_in_dir(self, log_dir: str) -> None:
        if not self.is_log_dir_online(log_dir):
            return
        try:
            OffsetCheckpointFile(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT_FILE)).write(
                {tp: lg.log_start_offset for tp, lg in self._logs_in_dir(log_dir).items()
                 if lg.log_start_offset > lg.segments[0].base_offset})
        except OSError as e:
            self._storage_failure(log_dir, f"Disk error while writing log start offsets checkpoint in directory "
                                           f"{log_dir}: {e}", e)

    def checkpoint_log_recovery_offsets(self) -> None:
        for log_dir in self.log_dirs:
            self._checkpoint_recovery_offsets_in_dir(log_dir)

    def checkpoint_log_start_offsets(self) -> None:
        for log_dir in self.log_dirs:
            self._checkpoint_log_start_offsets_in_dir(log_dir)

    def checkpoint_high_watermarks(self, high_watermarks: Optional[Mapping] = None) -> None:
        """Write ``replication-offset-checkpoint`` in every log dir: the given ``{(topic, partition): hw}``
        (default: every log's current high watermark)."""
        if high_watermarks is None:
            high_watermarks = {tp: lg.high_watermark for tp, lg in list(self.current_logs.items())}
        hws = {_tp(k): v for k, v in high_watermarks.items()}
        for log_dir in self.live_log_dirs:
            if self.log_dir_failure_channel.has_offline_log_dir(log_dir):
                continue      # failed already (and said so); its handler may not have run yet
            in_dir = self._logs_in_dir(log_dir)
            path = os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT_FILE)
            try:
                OffsetCheckpointFile(path).write({tp: hw for tp, hw in hws.items() if tp in in_dir})
            except OSError as e:   # CheckpointFileWithFailureHandler, then ReplicaManager.checkpointHighWatermarks
                self._storage_failure(log_dir, f"Error while writing to checkpoint file {path}", e)
                log.error("Error while writing to highwatermark file in directory %s", log_dir)
                continue
            self.high_watermark_checkpoints.update({tp: hw for tp, hw in hws.items() if tp in in_dir})

    def truncate_to(self, partition_offsets: Mapping) -> None:
        """Truncate several logs (a follower after OffsetForLeaderEpoch) and checkpoint their recovery points."""
        dirs = set()
        for key, offset in partition_offsets.items():
            lg = self.current_logs.get(_tp(key))
            if lg is not None and lg.truncate_to(offset):
                dirs.add(lg.parent_dir)
                if self.cleaner is not None:
                    self.cleaner.maybe_truncate_checkpoint(lg.parent_dir, lg.topic_partition,
                                                           lg.active_segment.base_offset)
        if dirs:
            self.checkpoint_log_recovery_offsets()

    # ---------------------------------------------------------------------------------------- shutdown
    def _stop_tasks(self) -> None:
        self._running = False
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        if self.cleaner is not None:
            self.cleaner.shutdown()

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker -- in each live
        log dir. A dir where an I/O error was reported (now or before) gets no marker, so its logs are recovered
        at the next start; the others are still closed cleanly."""
        log.info("Shutting down.")
        self._stop_tasks()
        for item, _ in self.logs_to_be_deleted:
            if isinstance(item, UnifiedLog) and not item.closed:
                try:
                    item.close()
                except (OSError, KafkaStorageError) as e:
                    log.error("Error while closing log %s being deleted: %s", item.dir, e)
        closed = []
        for log_dir in self.live_log_dirs:
            try:
                for lg in self._logs_in_dir(log_dir).values():
                    if not lg.closed:
                        lg.flush(force_flush_active_segment=True)
                        lg.close()
                closed.append(log_dir)
            except (OSError, KafkaStorageError) as e:
                log.error("There was an error in one of the threads during LogManager shutdown: %s", e)
        for log_dir in closed:
            self.checkpoint_dir(log_dir)
        self.checkpoint_high_watermarks()
        for log_dir in closed:
            if self.log_dir_failure_channel.has_offline_log_dir(log_dir):
                log.warning("Not writing the clean shutdown file in %s: an I/O error was reported there", log_dir)
                continue
            try:
                CleanShutdownFile(log_dir).write(broker_epoch)
            except OSError as e:
                log.error("There was an error in one of the threads during LogManager shutdown: %s", e)
        self._unlock_dirs()
        log.info("Shutdown complete.")

    def simulate_crash(self, lose_unflushed: bool = True) -> dict:
        """Stop as a power cut would: no flush, no checkpoint, no clean-shutdown marker; with ``lose_unflushed``
        every byte never fsync'd is lost. Returns ``{TopicPartition: {segment base offset: bytes lost}}``."""
        self._stop_tasks()
        lost = {}
        for tp, lg in self.current_logs.items():
            if not lg.closed:
                lost[tp] = lg.simulate_crash(lose_unflushed)
        for item, _ in self.logs_to_be_deleted:
            if isinstance(item, UnifiedLog) and not item.closed:
                item.simulate_crash(lose_unflushed)
        self._unlock_dirs()
        return lost
