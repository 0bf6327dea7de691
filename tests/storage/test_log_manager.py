"""LogManager: log dirs, meta.properties, checkpoints, clean shutdown marker, scheduled tasks, deletion."""
import os
import uuid

import pytest

from kafkalab.records import crc_is_valid
from kafkalab.storage import LogConfig, LogManager
from kafkalab.storage.errors import (InconsistentClusterIdError, InconsistentTopicIdError, KafkaStorageError,
                                     StorageError)

from .helpers import batch

PROPS = {"log.initial.task.delay.ms": "0"}


@pytest.fixture
def manager(tmp_path, clock, scheduler):
    made = []

    def make(props=None, **kw):
        merged = dict(PROPS)
        merged.update(props or {})
        kw.setdefault("broker_id", 1)
        kw.setdefault("cluster_id", "lab-cluster")
        lm = LogManager([str(tmp_path / "d1"), str(tmp_path / "d2")], kw.pop("default_config", None), time=clock,
                        scheduler=scheduler, broker_props=merged, **kw)
        lm.startup()
        made.append(lm)
        return lm

    yield make
    for lm in made:
        lm._unlock_dirs()


def produce(log, n, start=0):
    for i in range(n):
        log.append_as_leader(batch([f"v{start + i}"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


def test_startup_writes_meta_properties_and_takes_the_lock(manager, tmp_path):
    lm = manager()
    text = (tmp_path / "d1" / "meta.properties").read_text().splitlines()
    assert text[0] == "#" and text[1].startswith("#")
    assert text[2:] == ["cluster.id=lab-cluster", "version=0", "broker.id=1"]
    with pytest.raises(KafkaStorageError, match="Failed to acquire lock on file .lock"):
        manager()
    lm.shutdown()
    with pytest.raises(StorageError, match="doesn't match stored broker.id"):
        manager(broker_id=2)


def test_wrong_cluster_is_refused(manager):
    manager().shutdown()
    with pytest.raises(InconsistentClusterIdError, match="doesn't match stored clusterId"):
        manager(cluster_id="other")


def test_get_or_create_log_and_partition_metadata(manager, tmp_path):
    lm = manager()
    topic_id = uuid.UUID("3f9e2a6c-0000-4000-8000-00000000abcd")
    a = lm.get_or_create_log("orders", 0, topic_id=topic_id)
    b = lm.get_or_create_log("orders", 1, topic_id=topic_id)
    assert {a.parent_dir, b.parent_dir} == {str(tmp_path / "d1"), str(tmp_path / "d2")}   # spread over log dirs
    assert lm.get_or_create_log("orders", 0) is a and lm.get_log("orders", 0) is a
    text = open(os.path.join(a.dir, "partition.metadata")).read()
    assert text == "version: 0\ntopic_id: P54qbAAAQACAAAAAAACrzQ"
    with pytest.raises(InconsistentTopicIdError):
        lm.get_or_create_log("orders", 0, topic_id=uuid.uuid4())


def test_clean_shutdown_writes_checkpoints_and_marker(manager, tmp_path):
    lm = manager()
    log = lm.get_or_create_log("t", 0)
    produce(log, 5)
    log.maybe_increment_log_start_offset(2)
    lm.shutdown()
    d = tmp_path / log.parent_dir.split(os.sep)[-1]
    assert (d / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":-1}'
    assert (d / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 5\n"
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"
    assert (d / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 5\n"
    again = manager()
    log = again.get_log("t", 0)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (2, 5, 5)
    assert again.recovery_reports[log.topic_partition].had_clean_shutdown
    assert not (d / ".kafka_cleanshutdown").exists()          # deleted at startup: a crash now counts as unclean
    assert again.recovery_reports[log.topic_partition].recovered_segments == []


def test_marker_absent_means_recovery(manager, tmp_path):
    lm = manager()
    produce(lm.get_or_create_log("t", 0), 5)
    lm.simulate_crash(lose_unflushed=False)
    again = manager()
    report = again.recovery_reports[("t", 0)]
    assert not report.had_clean_shutdown and report.recovered_segments == [0]
    assert again.get_log("t", 0).log_end_offset == 5


def test_the_marker_is_trusted(manager):
    """With the marker, recovery is skipped: a corrupt batch in the active segment is not even noticed."""
    lm = manager()
    log = lm.get_or_create_log("t", 0)
    produce(log, 3)
    path = log.active_segment.log.path
    lm.shutdown()
    raw = bytearray(open(path, "rb").read())
    raw[-1] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    again = manager()
    log = again.get_log("t", 0)
    assert log.log_end_offset == 3 and again.recovery_reports[("t", 0)].recovered_segments == []
    assert not crc_is_valid(log.read(2, 1000).records)       # served as stored; the consumer will notice


def test_power_loss_of_the_whole_broker(manager):
    lm = manager()
    log = lm.get_or_create_log("t", 0)
    produce(log, 4)
    lm.checkpoint_log_recovery_offsets()                     # recovery point 0 on disk
    log.flush()
    lm.checkpoint_log_recovery_offsets()                     # recovery point 4
    produce(log, 3, start=4)                                 # acknowledged, never flushed
    lost = lm.simulate_crash()
    assert sum(lost[("t", 0)].values()) > 0
    again = manager()
    assert again.get_log("t", 0).log_end_offset == 4


def test_scheduled_retention_and_checkpoints(manager, clock):
    lm = manager({"log.retention.check.interval.ms": "1000"},
                 default_config=LogConfig({"retention.ms": 5000, "segment.bytes": 200}))
    log = lm.get_or_create_log("t", 0)
    produce(log, 10)
    assert log.number_of_segments > 1
    clock.advance(6000)
    assert log.log_start_offset > 0 and log.number_of_segments == 1
    clock.advance(60_000)
    text = open(os.path.join(log.parent_dir, "recovery-point-offset-checkpoint")).read()
    assert text.startswith("0\n1\nt 0 ")


def test_flush_ms_is_applied_by_the_flusher(manager, clock):
    lm = manager({"log.flush.scheduler.interval.ms": "100"}, default_config=LogConfig({"flush.ms": 1000}))
    log = lm.get_or_create_log("t", 0)
    produce(log, 3)
    assert log.unflushed_messages == 3
    clock.advance(1000)
    assert log.unflushed_messages == 0 and log.recovery_point == 3


def test_delete_log_renames_then_removes(manager, tmp_path, clock):
    lm = manager()
    log = lm.get_or_create_log("gone", 0)
    produce(log, 2)
    old_dir = log.dir
    lm.delete_log("gone", 0)
    assert lm.get_log("gone", 0) is None and not os.path.exists(old_dir)
    deleted = [d for d in os.listdir(log.parent_dir) if d.startswith("gone-0.") and d.endswith("-delete")]
    assert len(deleted) == 1 and len(deleted[0]) == len("gone-0.") + 32 + len("-delete")
    clock.advance(60_000)
    assert not os.path.exists(os.path.join(log.parent_dir, deleted[0]))


def test_leftover_delete_dirs_are_removed_after_restart(manager, tmp_path, clock):
    lm = manager()
    log = lm.get_or_create_log("gone", 0)
    produce(log, 2)
    lm.delete_log("gone", 0)
    lm.simulate_crash()
    again = manager()
    assert again.get_log("gone", 0) is None
    clock.advance(60_000)
    assert not [d for d in os.listdir(log.parent_dir) if d.endswith("-delete")]


def test_truncate_to_and_topic_config_updates(manager):
    lm = manager()
    log = lm.get_or_create_log("t", 0)
    produce(log, 6)
    lm.truncate_to({("t", 0): 4})
    assert log.log_end_offset == 4
    lm.update_topic_config("t", LogConfig({"retention.ms": 1}))
    assert log.config.retention_ms == 1


def test_compacted_topics_are_left_to_the_cleaner(manager, clock):
    lm = manager(default_config=LogConfig({"cleanup.policy": "compact", "segment.bytes": 200,
                                           "min.cleanable.dirty.ratio": 0.01}))
    log = lm.get_or_create_log("c", 0)
    for i in range(12):
        log.append_as_leader(batch([f"v{i}"], keys=["same"]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    clock.advance(15_000)
    assert lm.cleaner.last_results
    text = open(os.path.join(log.parent_dir, "cleaner-offset-checkpoint")).read()
    assert text == f"0\n1\nc 0 {lm.cleaner.last_results[-1].end_offset}\n"


def test_deletion_task_sleeps_while_nothing_is_queued(manager, clock, monkeypatch):
    """With file.delete.delay.ms=0 the task used to re-arm itself every millisecond, forever; now it runs only
    when a deleted log is due, and a deletion still happens at once."""
    runs = []
    original = LogManager.delete_logs

    def counting(self):
        runs.append(clock.milliseconds())
        return original(self)

    monkeypatch.setattr(LogManager, "delete_logs", counting)
    lm = manager({"log.segment.delete.delay.ms": "0"})
    clock.advance(5_000)
    assert len(runs) == 1                          # the first run, after log.initial.task.delay.ms (0 here)
    log = lm.get_or_create_log("gone", 0)
    produce(log, 2)
    lm.delete_log("gone", 0)
    clock.advance(1)
    assert not [d for d in os.listdir(log.parent_dir) if d.endswith("-delete")]
    clock.advance(5_000)
    assert len(runs) == 2


def test_a_deleted_topic_of_many_partitions_is_removed_a_few_directories_per_run(manager, clock, monkeypatch):
    """The directories go in runs of LOGS_DELETED_PER_RUN (each run is work on the broker's event loop), the
    rest a millisecond later; and the dirs' checkpoints can be written once for many deletions."""
    from kafkalab.storage import log_manager as lm_module

    monkeypatch.setattr(lm_module, "LOGS_DELETED_PER_RUN", 3)
    lm = manager()
    logs = [lm.get_or_create_log("wide", p) for p in range(7)]
    parents = {log.parent_dir for log in logs}
    for p in range(7):
        lm.delete_log("wide", p, checkpoint=False)
    for parent in parents:
        lm.checkpoint_dir(parent)
        assert "wide" not in open(os.path.join(parent, "recovery-point-offset-checkpoint")).read()

    def left():
        return sum(1 for parent in parents for d in os.listdir(parent) if d.endswith("-delete"))

    assert left() == 7
    clock.advance(60_000)
    assert left() == 4
    clock.advance(1)
    assert left() == 1
    clock.advance(1)
    assert left() == 0


def test_startup_creates_the_checkpoint_files_empty_and_reads_them_as_empty(manager, tmp_path):
    """Kafka's CheckpointFile constructor: the files exist (0 bytes) from start-up, and an empty one reads as no
    entries, so a broker stopped before its first checkpoint starts again."""
    lm = manager({"log.initial.task.delay.ms": "30000"})
    for d in ("d1", "d2"):
        files = {p.name: p.stat().st_size for p in (tmp_path / d).iterdir()}
        assert files == {".lock": 0, "meta.properties": files["meta.properties"], "cleaner-offset-checkpoint": 0,
                         "recovery-point-offset-checkpoint": 0, "log-start-offset-checkpoint": 0}
    lm.get_or_create_log("t", 0)
    lm.simulate_crash()
    lm2 = manager()
    assert lm2.get_log("t", 0) is not None and lm2.cleaner.all_cleaner_checkpoints() == {}
