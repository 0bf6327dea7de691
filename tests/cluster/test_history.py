"""The history checker on hand-made histories: one per anomaly, plus a clean run and the 'info' rules; and how
much work a check does for a long history (counted, not timed)."""
import itertools

import pytest

from kafkalab.cluster.history import History


def acked(h, value, offset, partition=0):
    return h.send(value, partition=partition).ok(partition, offset)


def clean_history():
    h = History()
    for i in range(3):
        acked(h, f"v{i}", i)
    h.poll([(0, 0, "v0"), (0, 1, "v1")])
    h.poll([(0, 2, "v2")])
    h.read_to_end(0, 3)
    return h


def test_a_clean_history_is_valid():
    result = clean_history().check()
    assert result.valid and bool(result) and result.anomalies == {}
    assert result.stats["acknowledged"] == 3 and result.stats["read"] == 3
    assert "valid: True" in str(result) and "valid" in result._repr_html_()


def test_lost_write_needs_a_read_past_it_or_to_the_end():
    h = History()
    acked(h, "a", 0)
    acked(h, "b", 1)
    h.poll([(0, 0, "a")])
    assert h.check().valid                       # nobody read as far as offset 1 yet
    h.read_to_end(0, 2)
    result = h.check()
    assert not result.valid
    assert result.lost_write == [{"value": "b", "partition": 0, "offset": 1}]
    assert "lost-write" in result.anomalies and "lost-write: 1" in str(result)


def test_a_read_past_the_offset_also_reveals_a_lost_write():
    h = History()
    acked(h, "a", 0)
    acked(h, "b", 1)
    h.poll([(0, 0, "a"), (0, 2, "c")])
    h.send("c", partition=0).ok(0, 2)
    assert [c["value"] for c in h.check().lost_write] == ["b"]


def test_indeterminate_sends_are_never_lost_and_may_be_read():
    h = History()
    acked(h, "a", 0)
    h.send("maybe-1").info("REQUEST_TIMED_OUT")
    h.send("maybe-2").info("REQUEST_TIMED_OUT")
    h.send("pending")                            # never completed: also indeterminate
    h.poll([(0, 0, "a"), (0, 1, "maybe-2")])
    h.read_to_end(0, 2)
    result = h.check()
    assert result.valid, str(result)
    assert result.stats["indeterminate"] == 3


def test_duplicate():
    h = History()
    acked(h, "a", 0)
    h.poll([(0, 0, "a"), (0, 1, "a")])
    result = h.check()
    assert result.duplicate == [{"value": "a", "at": [(0, 0), (0, 1)]}]
    assert not result.valid


def test_inconsistent_offsets_across_consumers():
    h = History()
    acked(h, "a", 0)
    h.send("b").info()
    h.poll([(0, 0, "a")], process="c1")
    h.poll([(0, 0, "b")], process="c2")
    result = h.check()
    assert result.inconsistent_offsets == [{"partition": 0, "offset": 0, "values": ["a", "b"]}]
    assert result.duplicate == [] and result.aborted_read == []


def test_aborted_read_only_for_known_failed_sends():
    h = History()
    h.send("x").fail("NOT_ENOUGH_REPLICAS")
    h.poll([(0, 0, "x")])
    result = h.check()
    assert result.aborted_read == [{"value": "x", "at": [(0, 0)], "error": "NOT_ENOUGH_REPLICAS"}]


def test_unexpected_read():
    h = History()
    h.poll([(0, 0, "ghost")])
    assert h.check().unexpected_read == [{"value": "ghost", "at": [(0, 0)]}]


def test_poll_skip_counts_only_offsets_known_to_exist():
    h = History()
    for i, v in enumerate("abcd"):
        acked(h, v, i)
    h.poll([(0, 0, "a")], process="c1")
    h.poll([(0, 3, "d")], process="c1")          # skipped 1 and 2, which were acknowledged
    h.poll([(0, 0, "a"), (0, 1, "b"), (0, 2, "c"), (0, 3, "d")], process="c2")
    result = h.check()
    assert result.poll_skip == [{"process": "c1", "partition": 0, "from": 0, "to": 3, "skipped": [1, 2]}]
    # gaps nobody knows of (compaction, transaction markers) are not skips
    g = History()
    acked(g, "a", 0)
    acked(g, "b", 5)
    g.poll([(0, 0, "a"), (0, 5, "b")])
    assert g.check().valid


def test_nonmonotonic_poll_unless_the_consumer_seeked():
    h = History()
    acked(h, "a", 0)
    acked(h, "b", 1)
    h.poll([(0, 0, "a"), (0, 1, "b")])
    h.seek(0, 0)
    h.poll([(0, 0, "a")])                        # after a seek: fine
    assert h.check().valid
    h.poll([(0, 0, "a")])                        # again, without a seek: backwards (well, not forwards)
    result = h.check()
    assert result.nonmonotonic_poll == [{"process": 0, "partition": 0, "from": 0, "to": 0}]
    assert result.duplicate == []                # same value at the same offset is not a duplicate


def test_partitions_are_independent():
    h = History()
    acked(h, "a", 0, partition=("t", 0))
    acked(h, "b", 0, partition=("t", 1))
    h.poll([(("t", 0), 0, "a"), (("t", 1), 0, "b")])
    h.read_to_end(("t", 0), 1)
    h.read_to_end(("t", 1), 1)
    assert h.check().valid


def test_a_write_acknowledged_at_an_offset_the_log_no_longer_has_is_lost():
    h = History()
    acked(h, "a", 0)
    acked(h, "b", 1)                             # acknowledged by a leader that then died ...
    h.poll([(0, 0, "a")])
    h.read_to_end(0, 1)                          # ... and the new leader's log ends at 1
    assert [c["value"] for c in h.check().lost_write] == ["b"]


def test_a_complete_read_does_not_judge_writes_acknowledged_after_it():
    h = History()
    acked(h, "a", 0)
    h.poll([(0, 0, "a")])
    h.read_to_end(0, 1)
    acked(h, "b", 1)
    assert h.check().valid


# -- the work of a check grows with the history, not with its square ----------------------------------------------
class OverBudget(Exception):
    pass


class CountedInt(int):
    """An offset (or history position) that counts every ordering comparison made with it, and stops the check
    once a budget is spent: a quadratic checker fails fast instead of running for minutes."""
    used = 0
    budget = 0

    def _tick(self):
        CountedInt.used += 1
        if CountedInt.used > CountedInt.budget:
            raise OverBudget(f"more than {CountedInt.budget} comparisons")

    def __lt__(self, other):
        self._tick()
        return int.__lt__(self, other)

    def __le__(self, other):
        self._tick()
        return int.__le__(self, other)

    def __gt__(self, other):
        self._tick()
        return int.__gt__(self, other)

    def __ge__(self, other):
        self._tick()
        return int.__ge__(self, other)


@pytest.fixture
def comparisons():
    def spend(budget: int):
        CountedInt.used, CountedInt.budget = 0, budget
    yield spend
    CountedInt.used = CountedInt.budget = 0


def test_poll_order_check_is_not_quadratic_in_the_records_of_a_partition(comparisons):
    """10,000 records of one partition read by two consumers: a check that scans the partition's known offsets
    for every record read makes ~10^8 comparisons; a sort plus a binary search per record, a few hundred
    thousand."""
    n = 10_000
    h = History()
    offsets = [CountedInt(o) for o in range(n + 2)]
    for o in range(n + 2):
        if o != n // 2:                          # offset n/2: a gap nobody knows of (not a skip)
            h.send(f"v{o}", partition=0).ok(0, offsets[o])
    records = [(0, offsets[o], f"v{o}") for o in range(n + 2) if o != n // 2]
    for process in ("c1", "c2"):
        for i in range(0, len(records), 100):
            h.poll(records[i:i + 100], process=process)
    h.poll([(0, offsets[n + 1], f"v{n + 1}")], process="c3")
    h.poll([(0, offsets[n - 1], f"v{n - 1}")], process="c3")   # backwards
    h.seek(0, 0, process="c1")
    h.poll([(0, offsets[0], "v0"), (0, offsets[3], "v3")], process="c1")   # skips the known 1 and 2
    comparisons(100 * 2 * n)
    result = h.check()
    assert result.poll_skip == [{"process": "c1", "partition": 0, "from": 0, "to": 3, "skipped": [1, 2]}]
    assert result.nonmonotonic_poll == [{"process": "c3", "partition": 0, "from": n + 1, "to": n - 1}]
    assert len(result.anomalies) == 2 and result.stats["read"] == n + 1


def test_lost_write_check_is_not_quadratic_in_complete_reads(comparisons):
    """A read to the end after each of 10,000 acknowledged writes that no reader saw: each write is lost, and
    deciding it must not walk the partition's list of complete reads once per write."""
    n = 10_000
    h = History()
    h._clock = map(CountedInt, itertools.count())   # positions in the history that count their comparisons
    for o in range(n):
        h.send(f"v{o}", partition=0).ok(0, o)
        h.read_to_end(0, o + 1)
    comparisons(20 * n)
    result = h.check()
    assert [c["offset"] for c in result.lost_write] == list(range(n))


# ---------------------------------------------------------------------------------------------- transactions
def committed_txn(h, values, start, partition=0, process=0, sources=None):
    """A committed transaction writing ``values`` at consecutive offsets from ``start`` (a marker follows)."""
    txn = h.transaction(process=process)
    for i, v in enumerate(values):
        txn.send(v, partition=partition, source=sources[i] if sources else None).ok(partition, start + i)
    return txn.commit()


def test_a_clean_transactional_history_is_valid():
    h = History()
    committed_txn(h, ["a", "b"], 0)                           # marker at 2
    aborted = h.transaction()
    aborted.send("x", partition=0).ok(0, 3)
    aborted.abort()                                           # marker at 4
    committed_txn(h, ["c"], 5)                                # marker at 6
    h.poll([(0, 0, "a"), (0, 1, "b"), (0, 5, "c")], process="rc", read_committed=True)
    h.poll([(0, 0, "a"), (0, 1, "b"), (0, 3, "x"), (0, 5, "c")], process="ru")
    h.read_to_end(0, 7)
    result = h.check()
    assert result.valid, str(result)
    assert result.stats["transactions"] == 3 and result.stats["committed"] == 2


def test_an_aborted_record_read_by_read_committed_is_an_aborted_read():
    h = History()
    txn = h.transaction()
    txn.send("x", partition=0).ok(0, 0)
    txn.abort()
    h.poll([(0, 0, "x")], process="ru")                        # read_uncommitted: allowed
    assert h.check().valid
    h.poll([(0, 0, "x")], process="rc", read_committed=True)
    result = h.check()
    assert not result.valid
    assert result.aborted_read == [{"value": "x", "at": [(0, 0)], "transaction": 0}]


def test_an_aborted_transaction_is_never_a_lost_write():
    h = History()
    txn = h.transaction()
    txn.send("x", partition=0).ok(0, 0)
    txn.abort()
    acked(h, "y", 2)
    h.poll([(0, 2, "y")], read_committed=True)
    h.read_to_end(0, 3)
    assert h.check().valid


def test_a_committed_transaction_unread_after_a_complete_read_is_lost():
    h = History()
    committed_txn(h, ["a"], 0)
    h.read_to_end(0, 2)
    assert h.check().lost_write == [{"value": "a", "partition": 0, "offset": 0}]


def test_a_complete_read_before_the_commit_does_not_make_a_transactional_write_lost():
    h = History()
    txn = h.transaction()
    txn.send("a", partition=0).ok(0, 0)
    h.read_to_end(0, 0)                                       # the LSO held the reader before the open txn
    txn.commit()
    assert h.check().valid


def test_partial_transaction_across_partitions():
    h = History()
    committed_txn(h, ["a"], 0, partition=0)
    txn = h.transaction()
    txn.send("b", partition=0).ok(0, 2)
    txn.send("c", partition=1).ok(1, 0)
    txn.commit()
    acked(h, "d", 2, partition=1)
    h.poll([(0, 0, "a"), (0, 2, "b")], read_committed=True)
    assert h.check().valid, "partition 1 not read yet: nothing to say"
    h.poll([(1, 2, "d")], read_committed=True)                 # read past c's offset without seeing c
    result = h.check()
    assert not result.valid
    assert result.partial_transaction == [{"transaction": 1, "process": 0, "read": ["b"],
                                           "missing": [{"value": "c", "partition": 1, "offset": 0}]}]


def test_partial_transaction_by_a_complete_read_after_the_commit():
    h = History()
    txn = h.transaction()
    txn.send("a", partition=0).ok(0, 0)
    txn.send("b", partition=1).ok(1, 0)
    txn.commit()
    h.poll([(0, 0, "a")], read_committed=True)
    h.read_to_end(1, 2)
    assert h.check().partial_transaction[0]["missing"] == [{"value": "b", "partition": 1, "offset": 0}]


def test_an_undecided_transaction_seen_by_read_committed_must_be_seen_whole():
    h = History()
    txn = h.transaction()
    txn.send("a", partition=0).ok(0, 0)
    txn.send("b", partition=0).ok(0, 1)
    txn.info("coordinator killed during EndTxn")
    acked(h, "c", 3)
    h.poll([(0, 3, "c")], read_committed=True)
    assert h.check().valid, "unseen: it may have aborted; skipping its offsets is fine"
    h.poll([(0, 0, "a"), (0, 3, "c")], process=1, read_committed=True)
    assert h.check().partial_transaction[0]["missing"] == [{"value": "b", "partition": 0, "offset": 1}]


def test_read_committed_may_skip_the_offsets_of_aborted_transactions():
    h = History()
    acked(h, "a", 0)
    txn = h.transaction()
    txn.send("x", partition=0).ok(0, 1)
    txn.abort()
    acked(h, "b", 3)
    h.poll([(0, 0, "a"), (0, 3, "b")], process="rc", read_committed=True)
    assert h.check().valid
    h.poll([(0, 0, "a"), (0, 3, "b")], process="ru")           # read_uncommitted must not skip it
    result = h.check()
    assert [c["process"] for c in result.poll_skip] == ["ru"]


def test_read_committed_may_skip_an_unacknowledged_aborted_send_that_read_uncommitted_saw():
    h = History()
    acked(h, "a", 0)
    txn = h.transaction()
    txn.send("x", partition=0).info("producer crashed")       # never acknowledged
    txn.abort()
    acked(h, "b", 2)
    h.poll([(0, 0, "a"), (0, 1, "x"), (0, 2, "b")], process="ru")
    h.poll([(0, 0, "a"), (0, 2, "b")], process="rc", read_committed=True)
    assert h.check().valid


def test_duplicate_output_in_consume_process_produce():
    h = History()
    committed_txn(h, ["out-1-a"], 0, sources=["in-1"])
    committed_txn(h, ["out-2-a"], 2, sources=["in-2"])
    retried = h.transaction()                                 # a zombie's retry of in-1 that was aborted
    retried.send("out-1-b", partition=0, source="in-1").ok(0, 4)
    retried.abort()
    h.poll([(0, 0, "out-1-a"), (0, 2, "out-2-a")], read_committed=True)
    h.poll([(0, 0, "out-1-a"), (0, 2, "out-2-a"), (0, 4, "out-1-b")], process="ru")
    assert h.check().valid, "the aborted second output is invisible to read_committed"
    twice = h.transaction()                                   # a second committed output of in-1: not exactly once
    twice.send("out-1-c", partition=0, source="in-1").ok(0, 6)
    twice.commit()
    h.poll([(0, 6, "out-1-c")], read_committed=True)
    result = h.check()
    assert result.duplicate_output == [{"input": "in-1", "outputs": ["out-1-a", "out-1-c"]}]
    assert "duplicate-output" in result.anomalies
