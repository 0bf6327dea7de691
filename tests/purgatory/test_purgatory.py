"""The purgatory contract: try-complete, watch, check again after watching, complete once, expire, purge."""
import threading

import pytest

from kafkalab.common.time import MockTime
from kafkalab.purgatory import DelayedOperation, DelayedOperationPurgatory, TopicPartitionOperationKey


class MockDelayedOperation(DelayedOperation):
    """Completes when ``completable`` is set (Kafka's DelayedOperationTest has the same helper)."""

    def __init__(self, delay_ms, completable=False, lock=None):
        super().__init__(delay_ms, lock)
        self.completable = completable
        self.completions = 0
        self.expirations = 0
        self.checks = 0

    def try_complete(self):
        self.checks += 1
        return self.force_complete() if self.completable else False

    def on_complete(self):
        self.completions += 1

    def on_expiration(self):
        self.expirations += 1


@pytest.fixture
def time():
    return MockTime()


@pytest.fixture
def purgatory(time):
    p = DelayedOperationPurgatory("mock", time=time, purge_interval=1000)
    time.on_advance(p.poll)
    return p


def test_completes_at_once_when_it_can(purgatory):
    op = MockDelayedOperation(100_000, completable=True)
    assert purgatory.try_complete_else_watch(op, ["k"]) is True
    assert op.is_completed and op.completions == 1
    assert purgatory.watched == 0 and purgatory.num_delayed == 0


def test_watch_then_check_and_complete(purgatory):
    op1, op2 = MockDelayedOperation(100_000), MockDelayedOperation(100_000)
    assert purgatory.try_complete_else_watch(op1, ["k1"]) is False
    assert purgatory.try_complete_else_watch(op2, ["k2"]) is False
    assert op1.checks == 2                      # once before watching, once after
    assert purgatory.watched == 2 and purgatory.num_delayed == 2
    assert purgatory.check_and_complete("k1") == 0
    op1.completable = True
    assert purgatory.check_and_complete("k1") == 1
    assert purgatory.check_and_complete("k1") == 0
    assert op1.completions == 1 and not op2.is_completed
    assert purgatory.num_delayed == 1           # completing cancels the timeout
    assert purgatory.watch_keys() == {"k2": 1}  # an emptied list leaves


def test_check_again_after_watching_closes_the_race(purgatory):
    """The event arrives between the first check and the watching: its check_and_complete finds nothing to
    complete (the operation is not watched yet). Only the second check saves the operation from waiting."""

    class Racy(MockDelayedOperation):
        def try_complete(self):
            self.checks += 1
            if self.checks == 1:
                assert purgatory.check_and_complete("k") == 0   # the event fires now: nobody watched
                self.completable = True
                return False
            return self.force_complete() if self.completable else False

    op = Racy(100_000)
    assert purgatory.try_complete_else_watch(op, ["k"]) is True
    assert op.completions == 1 and op.checks == 2
    assert purgatory.num_delayed == 0           # never added to the timer


def test_expires_on_timeout_with_kafka_order(time, purgatory):
    order = []

    class Op(MockDelayedOperation):
        def on_complete(self):
            order.append("on_complete")

        def on_expiration(self):
            order.append("on_expiration")

    op = Op(500)
    purgatory.try_complete_else_watch(op, ["k"])
    time.advance(499)
    assert not op.is_completed
    time.advance(1)
    assert op.is_completed and op.expired
    assert order == ["on_complete", "on_expiration"]
    assert purgatory.num_delayed == 0
    assert purgatory.watched == 1               # still listed until seen or purged
    assert purgatory.check_and_complete("k") == 0
    assert purgatory.watched == 0
    assert purgatory.expires_per_sec.count == 1


def test_completion_cancels_the_timeout(time, purgatory):
    op = MockDelayedOperation(500)
    purgatory.try_complete_else_watch(op, ["k"])
    op.completable = True
    assert purgatory.check_and_complete("k") == 1
    time.advance(1000)
    assert op.completions == 1 and op.expirations == 0 and not op.expired


def test_completes_exactly_once_when_timeout_and_completion_race(time):
    purgatory = DelayedOperationPurgatory("race", time=time)
    ops = [MockDelayedOperation(10) for _ in range(200)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [i % 7])
    for op in ops:
        op.completable = True
    time.advance(10)                            # due now; nobody has polled yet
    barrier = threading.Barrier(9)

    def completer(key):
        barrier.wait()
        purgatory.check_and_complete(key)

    def reaper():
        barrier.wait()
        purgatory.poll()

    def forcer():
        barrier.wait()
        for op in ops:
            op.force_complete()

    threads = [threading.Thread(target=completer, args=(k,)) for k in range(7)]
    threads += [threading.Thread(target=reaper), threading.Thread(target=forcer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(op.completions == 1 for op in ops)
    assert all(op.expirations == (1 if op.expired else 0) for op in ops)
    assert purgatory.num_delayed == 0


def test_force_complete_has_one_winner():
    op = MockDelayedOperation(1000)
    barrier = threading.Barrier(8)
    results = []

    def go():
        barrier.wait()
        results.append(op.force_complete())

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert op.completions == 1


def test_several_keys_and_stale_entries(purgatory):
    op = MockDelayedOperation(100_000)
    keys = [TopicPartitionOperationKey("t", p) for p in range(3)]
    purgatory.try_complete_else_watch(op, keys)
    assert purgatory.watched == 3 and purgatory.num_delayed == 1
    op.completable = True
    assert purgatory.check_and_complete(("t", 0)) == 1     # a plain tuple is the same key
    assert purgatory.watched == 2                           # still in the other lists
    assert purgatory.check_and_complete(keys[1]) == 0       # seen completed there: removed, not counted
    assert purgatory.watched == 1


def test_purge_after_purge_interval(time):
    purgatory = DelayedOperationPurgatory("purge", time=time, purge_interval=3)
    ops = [MockDelayedOperation(100_000) for _ in range(5)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["a", "b"])
    assert purgatory.watched == 10
    for op in ops[:4]:
        op.force_complete()                     # completed elsewhere: still listed under both keys
    assert purgatory.watched == 10 and purgatory.num_delayed == 1
    purgatory.poll()                            # 5 watched - 1 delayed = 4 > 3: purge
    assert purgatory.purges == 1
    assert purgatory.watched == 2
    purgatory.poll()                            # the estimate was reset to the delayed count
    assert purgatory.purges == 1


def test_no_purge_below_interval(time):
    purgatory = DelayedOperationPurgatory("purge", time=time, purge_interval=1000)
    op = MockDelayedOperation(100_000)
    purgatory.try_complete_else_watch(op, ["a"])
    op.force_complete()
    purgatory.advance_clock(0)
    assert purgatory.purges == 0 and purgatory.watched == 1
    assert purgatory.purge_completed() == 1 and purgatory.watched == 0


def test_cancel_for_key(purgatory):
    op = MockDelayedOperation(100_000)
    purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.cancel_for_key("k") == [op]
    assert not op.is_completed and op.completions == 0
    assert purgatory.watched == 0 and purgatory.num_delayed == 0


def test_watch_keys_must_not_be_empty(purgatory):
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(MockDelayedOperation(10), [])


def test_timer_disabled_never_expires(time):
    purgatory = DelayedOperationPurgatory("notimer", time=time, timer_enabled=False)
    op = MockDelayedOperation(10)
    purgatory.try_complete_else_watch(op, ["k"])
    time.advance(100)
    purgatory.poll()
    assert not op.is_completed and purgatory.num_delayed == 0


def test_metrics_use_kafkas_names(time, purgatory):
    class Tagged(MockDelayedOperation):
        def expiration_tags(self):
            return [{"fetcherType": "consumer"}]

    purgatory.try_complete_else_watch(Tagged(5), ["k"])
    purgatory.try_complete_else_watch(MockDelayedOperation(100_000), ["k", "j"])
    m = purgatory.metrics()
    assert m["PurgatorySize,delayedOperation=mock"] == 3
    assert m["NumDelayedOperations,delayedOperation=mock"] == 2
    assert m["ExpiresPerSec,delayedOperation=mock"] == 0
    time.advance(5)
    m = purgatory.metrics()
    assert m["ExpiresPerSec,delayedOperation=mock"] == 1
    assert m["ExpiresPerSec,delayedOperation=mock,fetcherType=consumer"] == 1
    assert m["NumDelayedOperations,delayedOperation=mock"] == 1
    time.advance(995)
    assert purgatory.expires_per_sec.one_minute_rate == pytest.approx(1.0)   # 1 expiry in the 1 s so far
    assert purgatory.expires_meter(fetcherType="consumer").count == 1


def test_shared_lock_serializes_checks():
    lock = threading.RLock()
    a, b = MockDelayedOperation(1000, lock=lock), MockDelayedOperation(1000, lock=lock)
    assert a.lock is b.lock
    with lock:                                  # re-entrant: a completion may check its sibling
        assert a.safe_try_complete() is False


def test_asyncio_reaper_expires_and_purges():
    import asyncio

    from kafkalab.common.time import SystemTime

    purgatory = DelayedOperationPurgatory("async", time=SystemTime(), purge_interval=0)
    op = MockDelayedOperation(20)

    async def main():
        reaper = asyncio.create_task(purgatory.run(max_idle_ms=1000))
        purgatory.try_complete_else_watch(op, ["k"])
        for _ in range(300):
            if op.is_completed and purgatory.watched == 0:
                break
            await asyncio.sleep(0.01)
        reaper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reaper

    asyncio.run(main())
    assert op.expired and op.completions == 1
    assert purgatory.watched == 0               # purged by the reaper's tick
