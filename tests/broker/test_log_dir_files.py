"""Which files a broker's log dir holds, and when each checkpoint is first written (Kafka 3.9, ZooKeeper mode).

Kafka's ``CheckpointFile`` constructor creates its file empty, and each owner builds its checkpoint objects
when it starts: the log manager (recovery points, log start offsets), the log cleaner's manager (only with
``log.cleaner.enable``) and the replica manager (high watermarks). Contents come later: the high watermarks
with the first LeaderAndIsr, the others with their scheduled tasks or a clean shutdown."""
from kafkalab import Cluster

CHECKPOINTS = {"cleaner-offset-checkpoint", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
               "replication-offset-checkpoint"}


def _files(log_dir) -> dict:
    """``{name: size}`` of the files (not the partition directories) right in ``log_dir``."""
    return {p.name: p.stat().st_size for p in log_dir.iterdir() if p.is_file()}


def test_a_fresh_broker_log_dir_holds_kafka_39_start_up_files(tmp_path):
    with Cluster(brokers=1, log_dirs=str(tmp_path)) as c:
        log_dir = tmp_path / "broker-0"
        files = _files(log_dir)
        assert set(files) == {".lock", "meta.properties"} | CHECKPOINTS
        assert {name: files[name] for name in CHECKPOINTS} == dict.fromkeys(CHECKPOINTS, 0)

        # The first LeaderAndIsr starts "highwatermark-checkpoint", which writes at once; the log manager's
        # checkpoints wait for log.initial.task.delay.ms (30 s) and the cleaner's for a cleaning.
        c.create_topic("t", 1, 1)
        hw = log_dir / "replication-offset-checkpoint"
        c.wait_until(lambda: hw.read_text().startswith("0\n1\nt 0 "), 10, "no high watermark checkpoint")
        assert _files(log_dir)["recovery-point-offset-checkpoint"] == 0
        assert _files(log_dir)["cleaner-offset-checkpoint"] == 0


def test_without_the_log_cleaner_there_is_no_cleaner_checkpoint(tmp_path):
    with Cluster(brokers=1, log_dirs=str(tmp_path), overrides={"log.cleaner.enable": False}):
        assert set(_files(tmp_path / "broker-0")) == {".lock", "meta.properties"} | CHECKPOINTS - {
            "cleaner-offset-checkpoint"}
