"""Transactions on the partition leader: the .txnindex, the producer state's open and unreplicated transactions,
the last stable offset, and read_committed reads with their aborted transactions (Kafka's TransactionIndexTest,
ProducerStateManagerTest and UnifiedLogTest transactional cases)."""
import io
import os
import struct

import pytest

from kafkalab.protocol.errors import ErrorCode
from kafkalab.records import SimpleRecord, build_batch, build_end_txn_marker_batch, decode_batches
from kafkalab.records.control import ControlRecordType
from kafkalab.storage import LogCleaner
from kafkalab.storage.errors import (CorruptIndexError, InvalidProducerEpochError, InvalidTxnStateError,
                                     TransactionCoordinatorFencedError)
from kafkalab.storage.producer_state import read_snapshot
from kafkalab.storage.transaction_index import ABORTED_TXN_SIZE, AbortedTxn, TransactionIndex
from kafkalab.tools.dump_log import main as dump_log_main

from .helpers import T0, batch, segment_files

P1, P2 = 1000, 2000


def txn(log, pid, seq, n=1, epoch=0):
    recs = [SimpleRecord(b"k", b"t%d" % (seq + i), (), T0) for i in range(n)]
    return log.append_as_leader(build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                            transactional=True), leader_epoch=0)


def marker(log, pid, control_type, epoch=0, coordinator_epoch=0):
    data = build_end_txn_marker_batch(control_type, producer_id=pid, producer_epoch=epoch,
                                      coordinator_epoch=coordinator_epoch, timestamp=T0)
    return log.append_as_leader(data, leader_epoch=0, origin="coordinator")


def abort(log, pid, **kw):
    return marker(log, pid, ControlRecordType.ABORT, **kw)


def commit(log, pid, **kw):
    return marker(log, pid, ControlRecordType.COMMIT, **kw)


def plain(log, n=1):
    return log.append_as_leader(batch(["p"] * n), leader_epoch=0)


def hw_to_end(log):
    log.update_high_watermark(log.log_end_offset)


# ------------------------------------------------------------------------------------------- the index file

def test_aborted_txn_is_34_big_endian_bytes():
    entry = AbortedTxn(producer_id=5, first_offset=10, last_offset=20, last_stable_offset=15)
    data = entry.to_bytes()
    assert len(data) == ABORTED_TXN_SIZE == 34
    assert data == struct.pack(">hqqqq", 0, 5, 10, 20, 15)
    assert AbortedTxn.from_bytes(data) == entry


def test_index_collects_overlapping_and_stops_at_the_last_stable_offset(tmp_path):
    index = TransactionIndex(0, str(tmp_path / "00000000000000000000.txnindex"))
    assert not os.path.exists(index.path)                   # created lazily, on the first entry
    entries = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25),
               AbortedTxn(3, 32, 50, 40)]
    for e in entries:
        index.append(e)
    assert os.path.getsize(index.path) == 4 * 34
    assert index.collect_aborted_txns(0, 32) == ([entries[0], entries[1], entries[2]], True)
    assert index.collect_aborted_txns(11, 32) == ([entries[1], entries[2]], True)
    assert index.collect_aborted_txns(16, 60) == ([entries[2], entries[3]], False)
    reopened = TransactionIndex(0, index.path)
    assert reopened.all_aborted_txns() == entries


def test_index_last_offset_must_increase(tmp_path):
    index = TransactionIndex(0, str(tmp_path / "00000000000000000000.txnindex"))
    index.append(AbortedTxn(0, 0, 10, 11))
    with pytest.raises(ValueError, match="must increase sequentially"):
        index.append(AbortedTxn(1, 5, 10, 13))


def test_index_truncate_and_sanity_check(tmp_path):
    index = TransactionIndex(0, str(tmp_path / "00000000000000000000.txnindex"))
    for e in (AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25)):
        index.append(e)
    index.truncate_to(15)
    assert [t.last_offset for t in index.all_aborted_txns()] == [10]
    assert os.path.getsize(index.path) == 34
    late = TransactionIndex(20, index.path)                 # an entry ending before its segment begins
    with pytest.raises(CorruptIndexError, match="less than start offset 20"):
        late.sanity_check()


# ------------------------------------------------------------------------------ the log: LSO and the index

def test_open_transaction_pins_the_last_stable_offset(make_log):
    log = make_log()
    plain(log, 2)                                            # 0-1
    txn(log, P1, 0, 2)                                       # 2-3, open
    plain(log)                                               # 4: behind the open transaction
    hw_to_end(log)
    assert (log.first_unstable_offset, log.last_stable_offset, log.high_watermark) == (2, 2, 5)
    commit(log, P1)                                          # 5
    assert log.last_stable_offset == 2                       # the marker is not below the high watermark yet
    hw_to_end(log)
    assert log.first_unstable_offset is None and log.last_stable_offset == 6
    assert not segment_files(log, ".txnindex")               # a commit writes no index entry


def test_abort_writes_an_index_entry_with_the_last_stable_offset(make_log):
    log = make_log()
    txn(log, P1, 0, 2)                                       # 0-1
    txn(log, P2, 0)                                          # 2: another producer's open transaction
    abort(log, P1)                                           # 3
    hw_to_end(log)
    assert log.last_stable_offset == 2                       # P2 still holds it
    [path] = segment_files(log, ".txnindex")
    assert os.path.basename(path) == "00000000000000000000.txnindex"
    with open(path, "rb") as f:
        assert AbortedTxn.from_bytes(f.read()) == AbortedTxn(P1, 0, 3, 2)
    abort(log, P2)                                           # 4: nothing else open -> marker + 1
    assert log.active_segment.txn_index.all_aborted_txns()[-1] == AbortedTxn(P2, 2, 4, 5)


def test_marker_without_open_transaction_changes_nothing(make_log):
    log = make_log()
    info = abort(log, P1, epoch=3, coordinator_epoch=2)
    assert info.first_offset == 0 and log.log_end_offset == 1
    assert not segment_files(log, ".txnindex")
    entry = log.producer_state_manager.last_entry(P1)
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.current_txn_first_offset) == (3, 2, None)


def test_read_committed_returns_aborted_transactions_overlapping_the_read(make_log):
    log = make_log()
    txn(log, P1, 0, 2)                                       # 0-1 aborted
    plain(log)                                               # 2
    abort(log, P1)                                           # 3
    txn(log, P2, 0)                                          # 4 committed
    commit(log, P2)                                          # 5
    hw_to_end(log)
    committed = log.read(2, 1 << 20, isolation="txn_committed")
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(P1, 0)]  # began before 2
    assert log.read(2, 1 << 20, isolation="high_watermark").aborted_transactions is None
    assert log.read(4, 1 << 20, isolation="txn_committed").aborted_transactions == []
    assert log.read(6, 1 << 20, isolation="txn_committed").aborted_transactions == []   # at the LSO: nothing
    first_only = log.read(0, 1, isolation="txn_committed")   # one batch (0-1): U = 2, the abort ends after it
    assert [b.last_offset for b in decode_batches(first_only.records)] == [1]
    assert [t.first_offset for t in first_only.aborted_transactions] == [0]


def test_read_committed_stops_at_the_open_transaction(make_log):
    log = make_log()
    plain(log)
    txn(log, P1, 0)
    plain(log)
    hw_to_end(log)
    got = log.read(0, 1 << 20, isolation="txn_committed")
    assert [b.last_offset for b in decode_batches(got.records)] == [0]


def test_abort_spanning_segments_is_indexed_where_the_marker_is(make_log):
    log = make_log()
    txn(log, P1, 0, 2)                                       # 0-1 in segment 0
    log.roll()
    plain(log)                                               # 2 in segment 2
    abort(log, P1)                                           # 3 in segment 2
    hw_to_end(log)
    assert [os.path.basename(p) for p in segment_files(log, ".txnindex")] == ["00000000000000000002.txnindex"]
    got = log.read(0, 1 << 20, isolation="txn_committed")    # reads segment 0 only: U = 2, segment 2's entry counts
    assert [(t.producer_id, t.first_offset) for t in got.aborted_transactions] == [(P1, 0)]
    assert log.collect_aborted_transactions(0, 4) == [AbortedTxn(P1, 0, 3, 4)]


def test_truncation_drops_index_entries_and_reopens_the_transaction(make_log):
    log = make_log()
    txn(log, P1, 0)                                          # 0
    abort(log, P1)                                           # 1
    log.truncate_to(1)
    assert log.active_segment.txn_index.all_aborted_txns() == []
    assert log.producer_state_manager.ongoing_transactions() == {0: P1}
    assert log.last_stable_offset == 0


# --------------------------------------------------------------------------------- producer-state rules

def test_zombie_coordinator_and_old_epoch_markers_are_fenced(make_log):
    log = make_log()
    txn(log, P1, 0, epoch=1)
    commit(log, P1, epoch=1, coordinator_epoch=5)
    txn(log, P1, 1, epoch=1)
    with pytest.raises(TransactionCoordinatorFencedError) as e:
        abort(log, P1, epoch=1, coordinator_epoch=4)
    assert e.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    with pytest.raises(InvalidProducerEpochError):
        abort(log, P1, epoch=0, coordinator_epoch=5)
    end = log.log_end_offset
    abort(log, P1, epoch=2, coordinator_epoch=5)             # a bumped epoch (fencing abort) is fine
    assert log.log_end_offset == end + 1
    with pytest.raises(InvalidProducerEpochError):            # the old producer's data is fenced now
        txn(log, P1, 2, epoch=1)


def test_non_transactional_write_inside_a_transaction_is_invalid_txn_state(make_log):
    log = make_log()
    txn(log, P1, 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(batch(["x"], pid=P1, epoch=0, seq=1), leader_epoch=0)


# ------------------------------------------------------------------------------------ restarts and crashes

def test_snapshot_keeps_the_open_transaction(make_log):
    log = make_log()
    plain(log)
    txn(log, P1, 0)                                          # 1, open
    log.close()
    [snap] = segment_files(log, ".snapshot")
    assert [e.current_txn_first_offset for e in read_snapshot(snap)] == [1]
    log = make_log()
    hw_to_end(log)
    assert log.last_stable_offset == 1
    abort(log, P1)
    hw_to_end(log)
    assert log.last_stable_offset == 3
    assert log.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(P1, 1, 2, 3)]


def test_recovery_rebuilds_the_transaction_index(make_log):
    log = make_log()
    txn(log, P1, 0)                                          # 0
    txn(log, P2, 0)                                          # 1
    abort(log, P1)                                           # 2
    log.roll()
    abort(log, P2)                                           # 3
    expected = [t for s in log.segments for t in s.txn_index.all_aborted_txns()]
    assert expected == [AbortedTxn(P1, 0, 2, 1), AbortedTxn(P2, 1, 3, 4)]
    log.simulate_crash(lose_unflushed=False)
    for path in segment_files(log, ".txnindex"):
        os.remove(path)
    log = make_log(had_clean_shutdown=False)
    assert [t for s in log.segments for t in s.txn_index.all_aborted_txns()] == expected
    assert log.producer_state_manager.ongoing_transactions() == {}


def test_corrupt_index_is_rebuilt_at_load(make_log):
    log = make_log()
    txn(log, P1, 0)
    abort(log, P1)
    log.roll()
    plain(log)
    log.close()
    path = os.path.join(log.dir, "00000000000000000002.txnindex")
    with open(path, "wb") as f:                              # an entry that belongs to an earlier segment
        f.write(AbortedTxn(P1, 0, 1, 2).to_bytes())
    log = make_log()
    assert not os.path.exists(path)
    assert log.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(P1, 0, 1, 2)]


def test_dump_log_prints_the_txnindex_as_kafka_dump_log_does(make_log):
    log = make_log()
    txn(log, P1, 0, 2)
    abort(log, P1)
    log.close()
    [path] = segment_files(log, ".txnindex")
    out, err = io.StringIO(), io.StringIO()
    assert dump_log_main(["--files", path], out, err) == 0
    assert out.getvalue().splitlines()[1:] == [
        f"version: 0 producerId: {P1} firstOffset: 0 lastOffset: 2 lastStableOffset: 3"]


def test_compaction_keeps_the_aborted_transactions_of_the_cleaned_segments(make_log, clock):
    log = make_log({"cleanup.policy": "compact"})
    txn(log, P1, 0, 2)                                       # 0-1
    abort(log, P1)                                           # 2
    plain(log)                                               # 3
    log.roll()
    plain(log)                                               # 4: the active segment is never cleaned
    hw_to_end(log)
    LogCleaner(lambda: {log.topic_partition: log}, time=clock).clean_now(log)
    assert log.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(P1, 0, 2, 3)]
    assert [os.path.basename(p) for p in segment_files(log, ".txnindex")] == ["00000000000000000000.txnindex"]
    got = log.read(0, 1 << 20, isolation="txn_committed")
    assert [(t.producer_id, t.first_offset) for t in got.aborted_transactions] == [(P1, 0)]
