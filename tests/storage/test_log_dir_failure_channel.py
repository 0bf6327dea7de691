"""I/O errors in a log are reported to the log dir failure channel once per directory, with Kafka's message,
and still reach the caller as KAFKA_STORAGE_ERROR."""
import errno
import logging
import os

import pytest

from kafkalab.protocol import ErrorCode
from kafkalab.storage import KafkaStorageError, LogManager, file_records
from kafkalab.storage.log_dir_failure_channel import LogDirFailureChannel

from .helpers import batch


def full_disk(*_args, **_kw):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_each_dir_goes_to_the_handler_once_even_when_it_failed_before_the_handler_was_set(caplog):
    channel = LogDirFailureChannel()
    with caplog.at_level(logging.ERROR):
        channel.maybe_add_offline_log_dir("/d1", "Error while appending records to t-0 in dir /d1", OSError("x"))
    handled = []
    channel.set_handler(handled.append)
    channel.maybe_add_offline_log_dir("/d1", "again", OSError("y"))
    channel.maybe_add_offline_log_dir("/d2", "other", OSError("z"))
    assert handled == ["/d1", "/d2"] and channel.offline_log_dirs == ["/d1", "/d2"]
    assert "Error while appending records to t-0 in dir /d1 (OSError: x)" in caplog.messages


@pytest.mark.parametrize("operation, patch, message", [
    ("append", (file_records.FileRecords, "append"), "Error while appending records to topic-0 in dir {dir}"),
    ("retention", (file_records.FileRecords, "rename_to"), "Error while deleting segments for topic-0 in dir {dir}"),
    ("truncate", (file_records.FileRecords, "truncate_to"),
     "Error while truncating log to offset 1 for topic-0 in dir {dir}"),
])
def test_an_io_error_in_the_log_is_reported_with_kafkas_message(make_log, monkeypatch, caplog, operation, patch,
                                                                 message):
    channel = LogDirFailureChannel()
    handled = []
    channel.set_handler(handled.append)
    log = make_log({"segment.bytes": 200, "retention.ms": 1}, log_dir_failure_channel=channel)
    for i in range(4):
        log.append_as_leader(batch([b"v%d" % i * 20]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    monkeypatch.setattr(*patch, full_disk)
    with pytest.raises(KafkaStorageError) as info, caplog.at_level(logging.ERROR):
        if operation == "append":
            log.append_as_leader(batch([b"more"]), leader_epoch=0)
        elif operation == "retention":
            log.time.advance(10)
            log.delete_old_segments()
        else:
            log.truncate_to(1)
    assert info.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert handled == [log.parent_dir]
    assert f"{message.format(dir=log.parent_dir)} (OSError: [Errno 28] No space left on device)" in caplog.messages


def test_a_failed_checkpoint_takes_the_dir_offline_and_no_clean_shutdown_marker_is_written(tmp_path, monkeypatch):
    manager = LogManager([tmp_path / "a", tmp_path / "b"])
    manager.startup()
    handled = []
    manager.log_dir_failure_channel.set_handler(lambda d: handled.append(manager.handle_log_dir_failure(d)))
    manager.get_or_create_log("t", 0)
    manager.get_or_create_log("t", 1)
    failing = manager.get_log("t", 0).parent_dir
    real = file_records.FileRecords.flush

    def flush(self):
        if self.path.startswith(failing + os.sep):
            full_disk()
        return real(self)
    monkeypatch.setattr(file_records.FileRecords, "flush", flush)
    manager.get_log("t", 0).append_as_leader(batch([b"x"]), leader_epoch=0)
    with pytest.raises(KafkaStorageError):
        manager.get_log("t", 0).flush()
    assert handled == [[("t", 0)]]                                   # the handler took it offline
    assert manager.offline_log_dirs == [failing] and manager.get_log("t", 0) is None
    assert manager.get_or_create_log("t", 2).parent_dir != failing  # new logs go to the live dir only
    manager.shutdown()
    assert not os.path.exists(os.path.join(failing, ".kafka_cleanshutdown"))
    assert os.path.exists(os.path.join(manager.live_log_dirs[0], ".kafka_cleanshutdown"))
