"""Reading: whole batches from the one holding the start offset, isolation bounds, max_bytes, sendfile slices."""
import os
import socket

import pytest

from kafkalab.protocol.errors import ErrorCode
from kafkalab.records import decode_batches
from kafkalab.storage.errors import OffsetOutOfRangeError

from .helpers import batch


@pytest.fixture
def log5(make_log):
    """Offsets 0-4, 5-9, 10-14 in three 5-record batches; high watermark at 10."""
    log = make_log()
    for n in range(3):
        log.append_as_leader(batch([f"v{n}{i}" for i in range(5)]), leader_epoch=0)
    log.update_high_watermark(10)
    return log


def offsets(info):
    return [(b.base_offset, b.last_offset) for b in decode_batches(info.records)]


def test_read_from_the_middle_of_a_batch_returns_the_whole_batch(log5):
    info = log5.read(7, 10**6)
    assert offsets(info) == [(5, 9)]
    assert info.fetch_offset_metadata.message_offset == 7
    assert info.fetch_offset_metadata.relative_position_in_segment == info.slices[0].position


def test_isolation_bounds(log5):
    assert offsets(log5.read(0, 10**6)) == [(0, 4), (5, 9)]                       # below the high watermark
    assert offsets(log5.read(0, 10**6, isolation="log_end")) == [(0, 4), (5, 9), (10, 14)]
    assert offsets(log5.read(0, 10**6, isolation="txn_committed")) == [(0, 4), (5, 9)]   # LSO == HW here
    assert log5.read(10, 10**6).records == b""                                     # at the HW: nothing yet
    assert log5.read(12, 10**6).records == b""                                     # beyond HW, below LEO
    log5.update_high_watermark(12)                                                 # HW inside a batch
    assert offsets(log5.read(0, 10**6)) == [(0, 4), (5, 9)]                        # that batch is not complete


def test_out_of_range(log5):
    with pytest.raises(OffsetOutOfRangeError) as e:
        log5.read(16, 100)
    assert e.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert str(e.value) == ("Received request for offset 16 for partition topic-0, but we only have log segments "
                            "upto 15.")
    assert log5.read(15, 100, isolation="log_end").records == b""                  # at the LEO: empty, no error
    log5.maybe_increment_log_start_offset(5)
    with pytest.raises(OffsetOutOfRangeError, match="starting from offset: 5"):
        log5.read(4, 100)


def test_max_bytes_whole_batches_and_min_one_message(log5):
    size = len(batch([f"v0{i}" for i in range(5)]))
    assert offsets(log5.read(0, size * 2 - 1, isolation="log_end")) == [(0, 4)]   # never a partial batch
    assert offsets(log5.read(0, size * 2, isolation="log_end")) == [(0, 4), (5, 9)]
    assert offsets(log5.read(0, 1, isolation="log_end")) == [(0, 4)]             # min_one_message
    small = log5.read(0, 1, isolation="log_end", min_one_message=False)
    assert small.records == b"" and small.first_entry_incomplete


def test_result_as_bytes_and_as_file_slices(log5, tmp_path):
    info = log5.read(0, 10**6)
    (s,) = info.slices
    assert os.path.basename(s.path) == "00000000000000000000.log" and s.position == 0 and s.size == len(info.records)
    with open(s.path, "rb") as f:
        assert f.read()[:s.size] == info.records
    a, b = socket.socketpair()
    try:
        assert s.send_to(a.fileno()) == s.size                                     # os.sendfile, zero copy
        received = b""
        while len(received) < s.size:
            received += b.recv(65536)
        assert received == info.records
    finally:
        a.close()
        b.close()


def test_read_never_crosses_a_segment(make_log):
    log = make_log({"segment.bytes": 200})
    for i in range(6):
        log.append_as_leader(batch([f"value-{i}" * 5]), leader_epoch=0)
    assert log.number_of_segments > 1
    first = log.segments[0]
    info = log.read(0, 10**6, isolation="log_end")
    assert all(s.path == first.log.path for s in info.slices)
    assert offsets(info)[-1][1] == log.segments[1].base_offset - 1


def test_read_reports_the_offset_metadata_of_later_segments(make_log):
    log = make_log({"segment.bytes": 200})
    for i in range(6):
        log.append_as_leader(batch([f"value-{i}" * 5]), leader_epoch=0)
    last = log.segments[-1]
    info = log.read(last.base_offset, 10**6, isolation="log_end")
    assert info.fetch_offset_metadata.segment_base_offset == last.base_offset


def test_reading_never_decodes_a_record(log5, monkeypatch):
    import kafkalab.records.batch as batch_module

    def forbidden(*a, **kw):
        raise AssertionError("a read decoded records")

    monkeypatch.setattr(batch_module, "decode_records", forbidden)
    for isolation in ("log_end", "high_watermark", "txn_committed"):
        for start in range(0, 10):
            info = log5.read(start, 10**6, isolation=isolation)
            assert info.records and info.batch_headers()[0].base_offset <= start
