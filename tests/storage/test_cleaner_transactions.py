"""Log compaction meets transactions: aborted batches never count and are removed, COMMIT/ABORT markers stay
until their data is gone and their delete horizon has passed, the cleaned .txnindex names only what is kept,
the last batch of each producer survives, and nothing at or above the last stable offset is cleaned. Ports of
Kafka's LogCleanerTest transactional cases (same logs, same expected offsets)."""
import os

from kafkalab.records import SimpleRecord, build_batch, build_end_txn_marker_batch, decode_batches
from kafkalab.records.control import ControlRecordType
from kafkalab.storage import LogCleaner
from kafkalab.storage.cleaner import Cleaner, LogToClean
from kafkalab.storage.transaction_index import AbortedTxn

from .helpers import T0, segment_files

DAY_MS = 86_400_000                  # delete.retention.ms's default
LARGE_TIMESTAMP = T0 + 1_000_000     # any "now": the markers are stamped T0


def compacted(make_log, segment_bytes=1024, **extra):
    return make_log({"cleanup.policy": "compact", "segment.bytes": segment_bytes, **extra})


def producer(log, pid, epoch=0, *, transactional=True, origin="client"):
    """appendTransactionalAsLeader: each call appends one batch of ``keys`` (key = value = str(k))."""
    sequence = [0]

    def append(keys):
        records = [SimpleRecord(str(k).encode(), str(k).encode(), (), T0) for k in keys]
        data = build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=sequence[0],
                           transactional=transactional)
        sequence[0] += len(records)
        return log.append_as_leader(data, leader_epoch=0, origin=origin)
    return append


def marker(log, pid, control_type, epoch=0):
    data = build_end_txn_marker_batch(control_type, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0,
                                      timestamp=T0)
    return log.append_as_leader(data, leader_epoch=0, origin="coordinator")


def commit(log, pid, epoch=0):
    return marker(log, pid, ControlRecordType.COMMIT, epoch)


def abort(log, pid, epoch=0):
    return marker(log, pid, ControlRecordType.ABORT, epoch)


def record(log, key, value):
    data = build_batch([SimpleRecord(str(key).encode(), None if value is None else str(value).encode(), (), T0)])
    return log.append_as_leader(data, leader_epoch=0)


def batches(log):
    return [b for s in log.segments for b in decode_batches(s.log.read(0, s.size), verify=False)]


def keys_in_log(log):
    """LogTestUtils.keysInLog: keys of the data records with a value."""
    return [int(r.key) for b in batches(log) if not b.is_control_batch for r in b.records
            if r.key is not None and r.value is not None]


def offsets_in_log(log):
    """offsetsInLog: offsets of every record with a key and a value, markers included."""
    return [r.offset for b in batches(log) for r in b.records if r.key is not None and r.value is not None]


def last_offsets_per_batch(log):
    return [b.last_offset for b in batches(log)]


def batch_base_offsets(log):
    return [b.base_offset for b in batches(log)]


def all_aborted_txns(log):
    return log.collect_aborted_transactions(0, log.log_end_offset)


def clean(log, clock, first_dirty=0, now=LARGE_TIMESTAMP, max_map_entries=1 << 22):
    """Cleaner.doClean on [first_dirty, active segment base), as Kafka's tests call it; the next dirty offset."""
    to_clean = LogToClean(log, first_dirty, log.active_segment.base_offset, 0, 0)
    return Cleaner(clock, max_map_entries=max_map_entries).do_clean(to_clean, now)[0]


def two_pass_clean(log, clock, first_dirty=0, now=LARGE_TIMESTAMP):
    """runTwoPassClean: the first pass stamps the delete horizons, the second runs past them."""
    clean(log, clock, first_dirty, now)
    return clean(log, clock, first_dirty, now + DAY_MS + 1)


# ------------------------------------------------------------------------------------ aborted transactions

def test_basic_transaction_aware_cleaning(make_log, clock):
    """testBasicTransactionAwareCleaning."""
    log = compacted(make_log, 2048)
    p1, p2 = producer(log, 1), producer(log, 2)
    p1([1, 2])                                  # 0-1 aborted
    p2([2, 3])                                  # 2-3 committed
    p1([3, 4])                                  # 4-5 aborted
    abort(log, 1)                               # 6
    commit(log, 2)                              # 7
    p1([2])                                     # 8 committed
    commit(log, 1)                              # 9
    aborted = log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)
    log.roll()
    clean(log, clock)
    assert keys_in_log(log) == [3, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8, 9]
    assert log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset) == aborted


def test_clean_with_transactions_spanning_segments(make_log, clock):
    """testCleanWithTransactionsSpanningSegments."""
    log = compacted(make_log)
    p1, p2, p3 = producer(log, 1), producer(log, 2), producer(log, 3)
    p1([1, 2])
    p3([2, 3])
    p2([3, 4])
    log.roll()
    p2([5, 6])
    p3([6, 7])
    p1([7, 8])
    abort(log, 2)
    p3([8, 9])
    commit(log, 3)
    p1([9, 10])
    abort(log, 1)
    dirty = clean(log, clock)                   # only the first segment is cleanable
    assert keys_in_log(log) == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    log.roll()
    p2([11])
    p1([12])
    clean(log, clock, dirty)                    # now only pid 3's keys are left of those transactions
    assert keys_in_log(log) == [2, 3, 6, 7, 8, 9, 11, 12]


def test_multi_pass_segment_cleaning_with_aborted_transactions(make_log, clock):
    """testMultiPassSegmentCleaningWithAbortedTransactions: a map of 3 keys cleans the log in three passes; the
    index keeps the aborted transactions while their data is there, the markers go after delete.retention.ms."""
    log = compacted(make_log, 1 << 20, **{"delete.retention.ms": 50_000})
    p1, p2 = producer(log, 1, origin="replication"), producer(log, 2, origin="replication")
    p1([1, 2])                                  # [0, 1]
    p2([2, 3])                                  # [2, 3]
    p1([3, 4])                                  # [4, 5]
    commit(log, 1)                              # [6, 6]
    commit(log, 2)                              # [7, 7]
    p1([2, 3])                                  # [8, 9]
    abort(log, 1)                               # [10, 10]
    p2([4, 5])                                  # [11, 12]
    p1([5, 6])                                  # [13, 14]
    commit(log, 1)                              # [15, 15]
    abort(log, 2)                               # [16, 16]
    p2([6, 7])                                  # [17, 18]
    commit(log, 2)                              # [19, 19]
    log.roll()
    assert log.log_end_offset == 20
    expected = [AbortedTxn(1, 8, 10, 11), AbortedTxn(2, 11, 16, 17)]
    assert all_aborted_txns(log) == expected

    def complete():
        return all(e.current_txn_first_offset is None for e in log.producer_state_manager.active_producers().values())

    dirty = clean(log, clock, 0, T0, max_map_entries=3)
    assert dirty == 4
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert complete() and all_aborted_txns(log) == expected

    dirty = clean(log, clock, dirty, T0, max_map_entries=3)
    assert dirty == 14
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert complete() and all_aborted_txns(log) == []           # markers kept, but nothing left to index

    dirty = clean(log, clock, dirty, T0 + 50_000, max_map_entries=3)
    assert dirty == 20
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]
    assert complete() and all_aborted_txns(log) == []


def test_aborted_transaction_spanning_segments(make_log, clock):
    """testAbortedTransactionSpanningSegments: the aborted batch stays (empty) as the producer's last, so its
    marker stays too, pass after pass."""
    log = compacted(make_log, 128)
    producer(log, 1)([1])
    log.roll()
    abort(log, 1)
    log.roll()
    clean(log, clock, 0, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch(log) == [0, 1]
    clean(log, clock, 0, 2**63 - 1)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch(log) == [0, 1]
    assert all_aborted_txns(log) == [AbortedTxn(1, 0, 1, 2)]
    # two groups: the entry is rebuilt in the cleaned segment that holds the marker, as the append wrote it
    assert [os.path.basename(p) for p in segment_files(log, ".txnindex")] == ["00000000000000000001.txnindex"]


def test_abort_marker_removal(make_log, clock):
    """testAbortMarkerRemoval."""
    log = compacted(make_log, 256)
    p = producer(log, 1)
    p([1])
    p([2, 3])
    abort(log, 1)
    p([3])
    commit(log, 1)
    log.roll()
    dirty = clean(log, clock)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [3, 4, 5]                     # aborted records gone, the marker kept
    two_pass_clean(log, clock, dirty)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [4, 5]


def test_abort_marker_retention_with_empty_batch(make_log, clock):
    """testAbortMarkerRetentionWithEmptyBatch."""
    log = compacted(make_log, 256)
    p = producer(log, 1)
    p([2, 3])                                   # last offset 1
    abort(log, 1)                               # 2
    log.roll()

    def assert_aborted_transaction_indexed():
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.collect_aborted_transactions(0, 100)] \
            == [(1, 0, 2)]

    assert_aborted_transaction_indexed()
    dirty = clean(log, clock)
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [2]                           # the abort marker is retained
    assert last_offsets_per_batch(log) == [1, 2]                # and the empty batch
    dirty = two_pass_clean(log, clock, dirty)
    assert_aborted_transaction_indexed()
    assert offsets_in_log(log) == [2]
    assert last_offsets_per_batch(log) == [1, 2]                # it still holds the last sequence

    p([1])                                      # 3: now the empty batch may go
    log.roll()
    dirty = clean(log, clock, dirty)
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [2, 3]                        # the marker stays: this pass read the empty batch
    assert last_offsets_per_batch(log) == [2, 3]
    two_pass_clean(log, clock, dirty)
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [3]
    assert last_offsets_per_batch(log) == [3]
    assert log.collect_aborted_transactions(0, 100) == []


def test_last_sequence_is_retained_even_if_the_transaction_aborted(make_log, clock):
    """testLogCleanerRetainsLastSequenceEvenIfTransactionAborted."""
    log = compacted(make_log)
    p = producer(log, 1)
    p([1])
    p([2, 3])
    abort(log, 1)
    log.roll()
    clean(log, clock)
    assert last_offsets_per_batch(log) == [2, 3]
    assert {b.producer_id: b.last_sequence for b in batches(log) if not b.is_control_batch} == {1: 2}
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [3]
    p([1, 5])
    log.roll()
    clean(log, clock)
    assert last_offsets_per_batch(log) == [3, 5]
    assert {b.producer_id: b.last_sequence for b in batches(log) if not b.is_control_batch} == {1: 4}
    assert keys_in_log(log) == [1, 5]
    assert offsets_in_log(log) == [3, 4, 5]


def test_deleted_batches_with_no_messages_read(make_log, clock):
    """testDeletedBatchesWithNoMessagesRead."""
    log = compacted(make_log, 1000, **{"max.message.bytes": 100})
    p = producer(log, 1)
    p([1])
    abort(log, 1)
    p([2])
    p([2])
    commit(log, 1)
    log.roll()
    clean(log, clock)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [1, 3, 4]
    two_pass_clean(log, clock)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [3, 4]


# ------------------------------------------------------------------------------------ commit markers

def test_commit_marker_removal(make_log, clock):
    """testCommitMarkerRemoval."""
    log = compacted(make_log, 256)
    p = producer(log, 1)
    p([1])
    p([2, 3])
    commit(log, 1)
    p([2])
    commit(log, 1)
    log.roll()
    dirty = clean(log, clock)                   # the markers stay: their transactions still have records
    assert keys_in_log(log) == [1, 3, 2]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5]
    p([1, 3])
    commit(log, 1)
    log.roll()
    dirty = clean(log, clock, dirty)            # the marker at 3 stays: this pass still read its records
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    assert not [b for b in batches(log) if b.has_delete_horizon_ms]
    dirty = clean(log, clock, dirty)            # its data is gone: the delete horizon is stamped, not passed
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    [stamped] = [b for b in batches(log) if b.has_delete_horizon_ms]
    assert stamped.base_offset == 3 and stamped.is_control_batch
    assert stamped.delete_horizon_ms == LARGE_TIMESTAMP + DAY_MS
    assert [r.timestamp for r in stamped.records] == [T0]       # the marker's own timestamp survives
    clean(log, clock, dirty, 2**63 - 1)
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8]


def test_commit_marker_retention_with_empty_batch(make_log, clock):
    """testCommitMarkerRetentionWithEmptyBatch."""
    log = compacted(make_log, 256)
    producer1, producer2 = producer(log, 1), producer(log, 2)
    producer1([2, 3])                           # 0, 1
    log.roll()
    producer2([2, 3])                           # 2, 3
    commit(log, 2)                              # 4
    log.roll()
    record(log, 2, 2)                           # 5
    record(log, 3, 3)                           # 6
    commit(log, 1)                              # 7
    log.roll()
    dirty = clean(log, clock)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch(log) == [1, 3, 4, 5, 6, 7]
    dirty = clean(log, clock, dirty)            # the empty batches still hold the last sequences
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch(log) == [1, 3, 4, 5, 6, 7]
    producer2([1])                              # 8
    commit(log, 2)                              # 9
    log.roll()
    dirty = clean(log, clock, dirty)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8, 9]
    assert last_offsets_per_batch(log) == [1, 4, 5, 6, 7, 8, 9]
    two_pass_clean(log, clock, dirty)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [5, 6, 7, 8, 9]
    assert last_offsets_per_batch(log) == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch(make_log, clock):
    """testCleanEmptyControlBatch: a producer with no data keeps its last marker (its epoch), emptied."""
    log = compacted(make_log, 256)
    commit(log, 1)                              # 0
    record(log, 2, 2)                           # 1
    record(log, 3, 3)                           # 2
    log.roll()
    dirty = two_pass_clean(log, clock)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch(log) == [0, 1, 2]
    [empty] = [b for b in batches(log) if b.base_offset == 0]
    assert empty.is_control_batch and empty.is_transactional and empty.records_count == 0
    assert (empty.producer_id, empty.base_timestamp, empty.max_timestamp) == (1, -1, T0)    # writeEmptyHeader
    clean(log, clock, dirty, 2**63 - 1)         # an empty control batch is no trouble
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch(log) == [0, 1, 2]


def test_committed_transaction_spanning_segments(make_log, clock):
    """testCommittedTransactionSpanningSegments."""
    log = compacted(make_log, 128)
    producer(log, 1)([1])
    log.roll()
    commit(log, 1)
    log.roll()
    two_pass_clean(log, clock)
    assert offsets_in_log(log) == [0, 1]
    assert last_offsets_per_batch(log) == [0, 1]


def test_empty_batch_removal_with_sequence_reuse(make_log, clock):
    """testEmptyBatchRemovalWithSequenceReuse: the group coordinator starts every batch at sequence 0."""
    log = compacted(make_log, 2048)
    producer(log, 1, origin="replication")([1])
    commit(log, 1)
    producer(log, 1, origin="replication")([2])
    commit(log, 1)
    record(log, 1, 1)
    record(log, 2, 1)
    log.roll()
    clean(log, clock)
    assert offsets_in_log(log) == [1, 3, 4, 5]
    assert last_offsets_per_batch(log) == [1, 2, 3, 4, 5]
    two_pass_clean(log, clock)
    assert offsets_in_log(log) == [3, 4, 5]
    assert last_offsets_per_batch(log) == [2, 3, 4, 5]


def test_keys_conflicting_with_txn_marker_keys(make_log, clock):
    """testCleaningWithKeysConflictingWithTxnMarkerKeys: a data record whose key is a COMMIT marker's key does
    not make the marker removable."""
    log = compacted(make_log)
    producer(log, 1)([1])
    commit(log, 1)
    commit_key = bytes([0, 0, 0, 1])
    log.append_as_leader(build_batch([SimpleRecord(commit_key, b"foo", (), T0)], producer_id=2, producer_epoch=0,
                                     base_sequence=0, transactional=True), leader_epoch=0)
    commit(log, 2)
    log.roll()
    assert offsets_in_log(log) == [0, 1, 2, 3]
    clean(log, clock, 0, T0)
    assert last_offsets_per_batch(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [0, 1, 2, 3]


def test_partial_segment_clean(make_log, clock):
    """testPartialSegmentClean: an offset map of one key still makes progress, one key per pass."""
    log = compacted(make_log)
    for key in (0, 1, 0, 1, 0):
        record(log, key, key)
    log.roll()
    clean(log, clock, 2, max_map_entries=1)
    assert keys_in_log(log) == [1, 0, 1, 0]
    assert offsets_in_log(log) == [1, 2, 3, 4]
    clean(log, clock, 3, max_map_entries=1)
    assert keys_in_log(log) == [0, 1, 0]
    assert offsets_in_log(log) == [2, 3, 4]
    clean(log, clock, 4, max_map_entries=1)
    assert keys_in_log(log) == [1, 0]
    assert offsets_in_log(log) == [3, 4]


# ------------------------------------------------------------------------------ the index, the LSO, the log

def test_the_cleaned_txnindex_names_only_the_aborted_transactions_whose_batches_the_pass_read(make_log, clock):
    """The pass that removes an aborted transaction's last batch still indexes it (it read the batch); the next
    pass drops the entry and stamps the ABORT marker's delete horizon; a pass past the horizon removes it."""
    log = compacted(make_log, 1 << 20)
    p1, p2 = producer(log, 1), producer(log, 2)
    p1([1])                                     # 0: aborted, pid 1's last data: kept as an empty batch
    abort(log, 1)                               # 1
    p2([2])                                     # 2: aborted, removed
    abort(log, 2)                               # 3
    p2([3])                                     # 4
    commit(log, 2)                              # 5
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert all_aborted_txns(log) == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 2, 3, 4)]
    cleaner = LogCleaner(lambda: {log.topic_partition: log}, time=clock)

    def horizons():
        return [b.base_offset for b in batches(log) if b.has_delete_horizon_ms]

    cleaner.clean_now(log)
    assert last_offsets_per_batch(log) == [0, 1, 3, 4, 5]
    assert all_aborted_txns(log) == [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 2, 3, 4)] and horizons() == []
    cleaner.clean_now(log)
    assert last_offsets_per_batch(log) == [0, 1, 3, 4, 5]
    assert all_aborted_txns(log) == [AbortedTxn(1, 0, 1, 2)] and horizons() == [3]
    got = log.read(0, 1 << 20, isolation="txn_committed")
    assert [(t.producer_id, t.first_offset) for t in got.aborted_transactions] == [(1, 0)]

    p1([4])                                     # 6: pid 1's empty batch is no longer its last
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner.clean_now(log)
    assert last_offsets_per_batch(log) == [1, 3, 4, 5, 6]
    assert all_aborted_txns(log) == [AbortedTxn(1, 0, 1, 2)] and horizons() == [3]
    cleaner.clean_now(log)
    assert all_aborted_txns(log) == [] and horizons() == [1, 3]
    assert segment_files(log, ".txnindex") == []
    clock.advance(DAY_MS)
    cleaner.clean_now(log)                      # both abort markers have outlived their data by delete.retention.ms
    assert last_offsets_per_batch(log) == [4, 5, 6]
    log.close()
    reopened = make_log({"cleanup.policy": "compact"}, had_clean_shutdown=False)
    assert all_aborted_txns(reopened) == []
    assert keys_in_log(reopened) == [3, 4]


def test_a_fenced_producers_last_marker_outlives_its_horizon_as_an_empty_batch(make_log, clock):
    """A coordinator's abort with a bumped epoch leaves the producer with no data batch at its epoch: its marker
    is its last record (it carries the epoch that fences the zombie). Past its delete horizon the marker is
    emptied, not removed, until the producer writes again."""
    log = compacted(make_log, 1 << 20)
    producer(log, 1, epoch=0)([1])              # 0
    abort(log, 1, epoch=1)                      # 1: the fencing abort
    record(log, 2, 2)                           # 2
    log.roll()
    dirty = two_pass_clean(log, clock)          # the data goes, then the marker gets its horizon
    assert [(b.base_offset, b.records_count, b.has_delete_horizon_ms) for b in batches(log)] == \
        [(1, 1, True), (2, 1, False)]
    assert all_aborted_txns(log) == []
    clean(log, clock, dirty, 2**63 - 1)         # past it: emptied, kept as the producer's last
    assert [(b.base_offset, b.is_control_batch, b.records_count) for b in batches(log)] == \
        [(1, True, 0), (2, False, 1)]
    clean(log, clock, dirty, 2**63 - 1)         # an empty control batch is no trouble
    assert last_offsets_per_batch(log) == [1, 2]
    producer(log, 1, epoch=1)([3])              # 3: the producer writes again at its epoch
    log.roll()
    clean(log, clock, dirty, 2**63 - 1)         # the empty marker is no longer its last: it goes
    assert last_offsets_per_batch(log) == [2, 3]


def test_a_marker_that_ends_the_cleaned_range_goes_like_any_other(make_log, clock):
    """Nothing is kept for being the last batch below the active segment: only a producer's last record is."""
    log = compacted(make_log, 1 << 20)
    p = producer(log, 1)
    p([1])                                      # 0: aborted
    abort(log, 1)                               # 1: the last batch of the cleanable range
    log.roll()
    p([2])                                      # 2: the producer's last batch, in the active segment
    clean(log, clock)                           # the data goes
    two_pass_clean(log, clock)                  # the horizon is stamped, then passed
    assert last_offsets_per_batch(log) == [2]


def test_nothing_at_or_above_the_last_stable_offset_is_cleaned(make_log, clock):
    log = compacted(make_log, 1 << 20)
    record(log, 1, "a")                         # 0
    record(log, 1, "b")                         # 1
    log.roll()
    p = producer(log, 7)
    p([1])                                      # 2: a transaction still open
    record(log, 1, "c")                         # 3
    log.roll()
    record(log, 1, "d")                         # 4
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 2
    cleaner = LogCleaner(lambda: {log.topic_partition: log}, time=clock)
    before = [open(f, "rb").read() for f in segment_files(log, ".log")[1:]]
    result = cleaner.clean_now(log)
    assert result.end_offset == 2
    assert offsets_in_log(log) == [1, 2, 3, 4]
    assert [open(f, "rb").read() for f in segment_files(log, ".log")[1:]] == before
    abort(log, 7)                               # 5 (in the active segment)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 6
    cleaner.clean_now(log)
    assert [(b.base_offset, b.records_count) for b in batches(log)] == [(2, 0), (4, 1), (5, 1)]
    assert all_aborted_txns(log) == [AbortedTxn(7, 2, 5, 6)]
    assert [r.value for b in batches(log) if not b.is_control_batch for r in b.records] == [b"d"]


def test_a_first_dirty_offset_past_the_first_uncleanable_offset_cleans_only_below_it(make_log, clock):
    """The segment holding the first uncleanable offset is never rewritten, even when the checkpoint has gone
    past it (a partial pass ended inside that segment)."""
    log = compacted(make_log, 1 << 20)
    for key in (1, 1, 1):
        record(log, key, key)                   # 0-2
    log.roll()
    p = producer(log, 1)
    p([2])                                      # 3: aborted: a rewrite would drop it
    abort(log, 1)                               # 4
    p([3])                                      # 5
    log.roll()
    held = open(segment_files(log, ".log")[1], "rb").read()
    to_clean = LogToClean(log, 4, 3, 0, 0)
    assert Cleaner(clock).do_clean(to_clean, LARGE_TIMESTAMP)[0] == 4
    assert open(segment_files(log, ".log")[1], "rb").read() == held
    assert offsets_in_log(log) == [0, 1, 2, 3, 4, 5]            # nothing was mapped: nothing removed


# --------------------------------------------------------------------------- __consumer_offsets end to end

class LogBackedOffsetsLog:
    """The group coordinator's OffsetsLog over a real compacted UnifiedLog (one partition), appends acked at once."""

    def __init__(self, log):
        self.log = log

    def append_async(self, partition, batch, callback):
        info = self.log.append_as_leader(batch, leader_epoch=0, origin="coordinator")
        self.log.update_high_watermark(self.log.log_end_offset)
        callback(0, info.first_offset)

    def append(self, partition, batch):
        return self.append_async(partition, batch, lambda *_: None)

    def read(self, partition):
        return batches(self.log)


def test_an_aborted_transactional_offset_commit_does_not_compact_away_the_committed_offset(make_log, clock):
    """A committed offset, then TxnOffsetCommits of the same keys: one transaction commits, a later one aborts.
    After compaction and a reload, the group still has the committed offsets."""
    from kafkalab.common import MockScheduler
    from kafkalab.coordinator.group import GroupConfig, GroupCoordinator
    from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata

    group, tp_a, tp_b = "g", ("input", 0), ("input", 1)
    scheduler = MockScheduler(clock)

    def coordinator(offsets_log):
        gc = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=1), clock, scheduler, offsets_log)
        gc.startup()
        gc.on_election(0)
        clock.advance(0)
        return gc

    def fetch(gc):
        error, offsets = gc.handle_fetch_offsets(group, [tp_a, tp_b], False)
        assert error == 0
        return {tp: (None if v is None else v if isinstance(v, int) else v.offset) for tp, v in offsets.items()}

    def end_txn(gc, offsets_log, pid, committed):
        """WriteTxnMarkers on __consumer_offsets: the marker, then the coordinator is told."""
        kind = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        offsets_log.append(0, build_end_txn_marker_batch(kind, producer_id=pid, producer_epoch=0, coordinator_epoch=0))
        gc.handle_txn_completion(pid, [0], committed)

    log = make_log({"cleanup.policy": "compact"}, name="__consumer_offsets-0")
    offsets_log = LogBackedOffsetsLog(log)
    gc = coordinator(offsets_log)
    gc.handle_commit_offsets(group, "", None, -1, {tp_a: OffsetAndMetadata(10)}, lambda _: None)
    gc.handle_txn_commit_offsets(group, 1, 0, "", None, -1, {tp_b: OffsetAndMetadata(15)}, lambda _: None)
    end_txn(gc, offsets_log, 1, committed=True)
    gc.handle_txn_commit_offsets(group, 2, 0, "", None, -1,
                                 {tp_a: OffsetAndMetadata(20), tp_b: OffsetAndMetadata(25)}, lambda _: None)
    end_txn(gc, offsets_log, 2, committed=False)
    assert fetch(gc) == {tp_a: 10, tp_b: 15}
    log.roll()
    log.update_high_watermark(log.log_end_offset)

    LogCleaner(lambda: {log.topic_partition: log}, time=clock).clean_now(log)

    gc.shutdown()
    log.close()
    log = make_log({"cleanup.policy": "compact"}, name="__consumer_offsets-0")
    assert fetch(coordinator(LogBackedOffsetsLog(log))) == {tp_a: 10, tp_b: 15}
    aborted = [b for b in batches(log) if b.producer_id == 2 and not b.is_control_batch]
    assert [b.records_count for b in aborted] == [0]            # kept only as pid 2's last batch, emptied
