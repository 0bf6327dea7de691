"""A failing disk takes its log directory offline, as Kafka's LogDirFailureChannel does.

The failure is an OSError from the file system (ENOSPC from the segment's write, or a checkpoint that cannot be
written): the request that hit it gets KAFKA_STORAGE_ERROR, the error is logged with Kafka's message, the
directory's partitions stop being served, DescribeLogDirs reports the directory with KAFKA_STORAGE_ERROR, the
controller is notified under ``/log_dir_event_notification`` and moves the offline replicas' leadership to another
ISR member, and a broker with no log dir left halts. Nothing acknowledged is lost. A clean shutdown (SIGTERM)
whose high-watermark checkpoint fails logs it and exits 0.
"""
from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.records import build_batch
from kafkalab.storage import file_records
from kafkalab.storage.checkpoints import CleanShutdownFile

from ._raw_wire import Conn

Produce = request_class(ApiKey.PRODUCE)
Fetch = request_class(ApiKey.FETCH)
DescribeLogDirs = request_class(ApiKey.DESCRIBE_LOG_DIRS)
CreateTopics = request_class(ApiKey.CREATE_TOPICS)
ROOT = Path(__file__).resolve().parents[2]


def produce(conn, topic: str, partition: int, value: bytes = b"v"):
    body = Produce(acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(name=topic, partition_data=(
        Produce.PartitionProduceData(index=partition, records=build_batch([(b"k", value, [], 1_700_000_000_000)])),)),))
    return conn.call(body, 9).responses[0].partition_responses[0]


def fetch_error(conn, topic: str, partition: int) -> int:
    body = Fetch(max_wait_ms=0, topics=(Fetch.FetchTopic(topic=topic, partitions=(
        Fetch.FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20),)),))
    return conn.call(body, 12).responses[0].partitions[0].error_code


def fail_writes_under(monkeypatch, log_dir: str) -> None:
    """Every segment append under ``log_dir`` fails as on a full disk."""
    real_append = file_records.FileRecords.append

    def append(self, data):
        if os.path.abspath(self.path).startswith(log_dir + os.sep):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_append(self, data)

    monkeypatch.setattr(file_records.FileRecords, "append", append)


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def messages(caplog, level=logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


def test_a_failed_append_takes_only_its_log_dir_offline(tmp_path, monkeypatch, caplog):
    dirs = [str(tmp_path / "disk-a"), str(tmp_path / "disk-b")]
    caplog.set_level(logging.INFO, logger="kafkalab")
    with Cluster(brokers=1, overrides={"log.dirs": ",".join(dirs)}) as cluster:
        cluster.create_topic("t", 2)
        broker = cluster.broker(0)
        with Conn(broker.bound_endpoints[0].port) as conn:
            assert produce(conn, "t", 0).error_code == produce(conn, "t", 1).error_code == ErrorCode.NONE
            failing = broker.log_manager.get_log("t", 0).parent_dir
            healthy = broker.log_manager.get_log("t", 1).parent_dir
            assert failing != healthy

            fail_writes_under(monkeypatch, failing)
            assert produce(conn, "t", 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR
            wait_until(lambda: ("t", 0) in broker.replica_manager.offline_partitions)

            again = produce(conn, "t", 0)
            assert again.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert again.error_message == "Partition t-0 is in an offline log directory"
            assert fetch_error(conn, "t", 0) == ErrorCode.KAFKA_STORAGE_ERROR
            assert produce(conn, "t", 1).error_code == ErrorCode.NONE           # the other disk still serves
            assert fetch_error(conn, "t", 1) == ErrorCode.NONE

            described = {r.log_dir: r for r in conn.call(DescribeLogDirs(topics=None), 4).results}
            assert described[failing].error_code == ErrorCode.KAFKA_STORAGE_ERROR and not described[failing].topics
            assert described[healthy].error_code == ErrorCode.NONE
            assert [t.name for t in described[healthy].topics] == ["t"]

        assert broker.is_running
        assert broker.log_manager.offline_log_dirs == [failing]
        wait_until(lambda: ("leader_and_isr_response_received", "ok") in broker.controller.event_log)
        assert ("log_dir_event_notification", "ok") in broker.controller.event_log     # notified, then asked
        logged = messages(caplog)
        assert f"Error while appending records to t-0 in dir {failing} (OSError: [Errno 28] " \
               f"No space left on device)" in logged
        assert f"Stopping serving logs in dir {failing}" in logged
        assert f"[ReplicaManager broker=0] Stopped serving replicas in dir {failing}" in logged
        assert not any("Shutdown broker" in m for m in logged)


class TwoDisksEach(Cluster):
    """Every broker with two log dirs, ``disk-a`` and ``disk-b``."""

    def _broker_config(self, broker_id: int) -> dict:
        config = super()._broker_config(broker_id)
        config["log.dirs"] = ",".join(f"{config['log.dirs']}/disk-{d}" for d in "ab")
        return config


def test_the_controller_moves_leadership_off_a_failed_log_dir(monkeypatch):
    with TwoDisksEach(brokers=2) as cluster:
        cluster.create_topic("t", assignment={0: [0, 1], 1: [0, 1]})       # broker 0 leads both
        leader, follower = cluster.broker(0), cluster.broker(1)
        with Conn(leader.bound_endpoints[0].port) as conn:
            assert produce(conn, "t", 0, b"acked").error_code == ErrorCode.NONE
            assert produce(conn, "t", 1, b"acked").error_code == ErrorCode.NONE
            failing = leader.log_manager.get_log("t", 0).parent_dir
            assert leader.log_manager.get_log("t", 1).parent_dir != failing
            fail_writes_under(monkeypatch, failing)
            assert produce(conn, "t", 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR

        def state(p):
            return follower.metadata_cache.partition_state("t", p)
        wait_until(lambda: state(0).leader == 1)
        assert state(0).isr == (1,) and state(0).offline_replicas == (0,)
        assert state(1).leader == 0 and set(state(1).isr) == {0, 1} and state(1).offline_replicas == ()
        assert leader.is_running and not cluster.zk_store.get_children("/log_dir_event_notification")
        with Conn(follower.bound_endpoints[0].port) as conn:
            assert produce(conn, "t", 0, b"after").error_code == ErrorCode.NONE   # the new leader serves
        assert follower.log_manager.get_log("t", 0).log_end_offset == 2         # "acked" was replicated


def test_a_broker_whose_every_log_dir_failed_halts_and_loses_nothing(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="kafkalab")
    with Cluster(brokers=1) as cluster:
        cluster.create_topic("t", 1)
        broker = cluster.broker(0)
        with Conn(broker.bound_endpoints[0].port) as conn:
            acked = produce(conn, "t", 0, b"acked")
            assert acked.error_code == ErrorCode.NONE
            log_dir = broker.log_manager.get_log("t", 0).parent_dir
            fail_writes_under(monkeypatch, log_dir)
            assert produce(conn, "t", 0, b"refused").error_code == ErrorCode.KAFKA_STORAGE_ERROR
        wait_until(lambda: broker.halted.is_set())
        assert not broker.is_running
        assert f"Shutdown broker because all log dirs in {log_dir} have failed" in messages(caplog)
        assert not CleanShutdownFile(log_dir).exists()                 # halted: recovered at the next start

        monkeypatch.undo()                                             # the disk was replaced
        restarted = cluster.restart(0)
        log = restarted.log_manager.get_log("t", 0)
        assert restarted.log_manager.had_clean_shutdown[log_dir] is False
        assert log.log_end_offset == 1                                 # the acknowledged record, and only it


def test_sigterm_when_the_high_watermark_checkpoint_cannot_be_written_shuts_down_cleanly(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_dir = tmp_path / "kafka-logs"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "broker", "--log-level", "WARNING",
                             "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={log_dir}",
                             "--override", "replica.high.watermark.checkpoint.interval.ms=600000"],
                            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        while line and "started" not in line:
            line = proc.stderr.readline()
        assert "started" in line
        with Conn(port, timeout=10) as conn:
            created = conn.call(CreateTopics(topics=(CreateTopics.CreatableTopic(
                name="t", num_partitions=1, replication_factor=1),), timeout_ms=10000), 7)
            assert created.topics[0].error_code == ErrorCode.NONE
            assert produce(conn, "t", 0).error_code == ErrorCode.NONE
        # The checkpoint's temporary file cannot be created: the write fails as an I/O error does (even as root).
        (log_dir / "replication-offset-checkpoint.tmp").mkdir()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert f"Error while writing to checkpoint file {log_dir / 'replication-offset-checkpoint'}" in stderr
    assert f"Error while writing to highwatermark file in directory {log_dir}" in stderr
    assert not CleanShutdownFile(str(log_dir)).exists()    # an I/O error was reported there: recover next time
    assert (log_dir / "t-0" / "00000000000000000000.log").stat().st_size > 0
