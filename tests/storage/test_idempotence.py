"""Idempotent producer state: duplicates, gaps, epochs, wrap-around, and state surviving restarts."""
import os
import struct

import pytest

from kafkalab.protocol.errors import ErrorCode
from kafkalab.storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from kafkalab.storage.producer_state import read_snapshot

from .helpers import T0, batch

PID = 4000
INT_MAX = 2**31 - 1


def send(log, seq, n=1, epoch=0, pid=PID, value="v"):
    return log.append_as_leader(batch([f"{value}{seq + i}" for i in range(n)], pid=pid, epoch=epoch, seq=seq),
                                leader_epoch=0)


def test_duplicate_returns_the_original_offsets(make_log):
    log = make_log()
    first = send(log, 0, 3)
    send(log, 3, 2)
    retry = send(log, 0, 3)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == 5                       # nothing appended


def test_only_the_last_five_batches_are_remembered(make_log):
    log = make_log()
    infos = [send(log, i) for i in range(6)]
    for i in range(1, 6):
        assert send(log, i).first_offset == infos[i].first_offset
    with pytest.raises(OutOfOrderSequenceError):        # batch 0 is forgotten: it now looks like a gap backwards
        send(log, 0)


def test_gap_is_out_of_order(make_log):
    log = make_log()
    send(log, 0)
    with pytest.raises(OutOfOrderSequenceError) as e:
        send(log, 2)
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert str(e.value) == ("Out of order sequence number for producer 4000 at offset 1 in partition topic-0: 2 "
                            "(incoming seq. number), 0 (current end sequence number)")


def test_older_epoch_is_fenced(make_log):
    log = make_log()
    send(log, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError) as e:
        send(log, 1, epoch=2)
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH == 47
    assert "which is smaller than the last seen epoch 3" in str(e.value)


def test_new_epoch_starts_at_zero(make_log):
    log = make_log()
    send(log, 0, epoch=0)
    send(log, 1, epoch=0)
    with pytest.raises(OutOfOrderSequenceError, match="Invalid sequence number for new epoch"):
        send(log, 2, epoch=1)
    send(log, 0, epoch=1)
    assert log.producer_state_manager.last_entry(PID).producer_epoch == 1


def test_sequence_wraps_after_int_max(make_log):
    log = make_log()
    send(log, INT_MAX - 1, 2)                            # sequences 2147483646, 2147483647
    assert log.producer_state_manager.last_entry(PID).last_seq == INT_MAX
    assert send(log, 0).first_offset == 2               # after 2147483647 comes 0
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 2)


def test_batch_spanning_the_wrap_is_recognised_as_duplicate(make_log):
    log = make_log()
    first = send(log, INT_MAX - 1, 3)                    # 2147483646, 2147483647, 0
    assert log.producer_state_manager.last_entry(PID).last_seq == 0
    assert send(log, INT_MAX - 1, 3).duplicate
    assert send(log, 1).first_offset == first.last_offset + 1


def test_unknown_producer_accepted_at_any_sequence(make_log):
    log = make_log()
    assert send(log, 17).first_offset == 0


def test_non_idempotent_batches_are_not_tracked(make_log):
    log = make_log()
    log.append_as_leader(batch(["a"]), leader_epoch=0)
    log.append_as_leader(batch(["a"]), leader_epoch=0)
    assert log.log_end_offset == 2 and log.producer_state_manager.is_empty()


def test_state_survives_a_clean_restart_via_the_snapshot(make_log):
    log = make_log()
    send(log, 0, 2)
    last = send(log, 2, 2)
    log.close()
    snap = os.path.join(log.dir, "00000000000000000004.snapshot")
    assert os.path.exists(snap)
    (entry,) = read_snapshot(snap)
    assert (entry.producer_id, entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (PID, 0, 3, 3)
    again = make_log()
    retry = send(again, 2, 2)
    assert retry.duplicate and retry.first_offset == last.first_offset
    with pytest.raises(OutOfOrderSequenceError):
        send(again, 5)
    send(again, 4)


def test_state_is_rebuilt_by_scanning_when_snapshots_are_missing(make_log):
    log = make_log({"segment.bytes": 200})
    for seq in range(0, 12, 2):
        send(log, seq, 2)
    assert log.number_of_segments > 2
    log.close()
    for name in os.listdir(log.dir):
        if name.endswith(".snapshot"):
            os.remove(os.path.join(log.dir, name))
    again = make_log({"segment.bytes": 200}, had_clean_shutdown=False)
    assert again.producer_state_manager.last_entry(PID).last_seq == 11
    assert send(again, 10, 2).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        send(again, 13)


def test_clean_restart_without_any_snapshot_skips_the_scan_as_kafka_does(make_log):
    log = make_log()
    send(log, 0, 2)
    log.close()
    for name in os.listdir(log.dir):
        if name.endswith(".snapshot"):
            os.remove(os.path.join(log.dir, name))
    again = make_log()                                   # clean shutdown + no snapshot = "no idempotent data"
    assert again.producer_state_manager.is_empty()
    assert send(again, 7).first_offset == 2              # unknown producer: any sequence


def test_snapshot_format_is_kafkas(make_log):
    log = make_log()
    send(log, 0, 3)
    log.close()
    data = open(os.path.join(log.dir, "00000000000000000003.snapshot"), "rb").read()
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, len(data)) == (1, 1, 10 + 46)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (PID, 0, 2, 2, 2, T0, -1, -1)


def test_corrupt_snapshot_is_ignored_and_state_rebuilt(make_log):
    log = make_log()
    send(log, 0, 3)
    log.close()
    path = os.path.join(log.dir, "00000000000000000003.snapshot")
    raw = bytearray(open(path, "rb").read())
    raw[-1] ^= 1
    open(path, "wb").write(bytes(raw))
    again = make_log(had_clean_shutdown=False)
    assert again.producer_state_manager.last_entry(PID).last_seq == 2


def test_expired_producers_are_forgotten(make_log, clock):
    log = make_log()
    send(log, 0)
    clock.advance(86_400_000)
    assert log.remove_expired_producers(clock.milliseconds()) == [PID]
    assert send(log, 9).first_offset == 1               # unknown again: accepted


def test_follower_replays_without_checks(make_log):
    leader = make_log(name="t-0")
    send(leader, 0, 2)
    send(leader, 2, 1)
    follower = make_log(name="t-1")
    follower.append_as_follower(leader.read(0, 10**6, isolation="log_end").records)
    assert follower.producer_state_manager.last_entry(PID).last_seq == 2
