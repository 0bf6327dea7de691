"""FetchSessionCache, FetchManager and the fetch contexts, step by step with MockTime (KIP-227)."""
from __future__ import annotations

import random
from types import SimpleNamespace

from kafkalab.common.time import MockTime
from kafkalab.protocol import ErrorCode
from kafkalab.purgatory import FetchPartitionInfo
from kafkalab.server.fetch_session import (FINAL_EPOCH, MAX_EPOCH, FetchManager, FetchSessionCache,
                                           FullFetchContext, IncrementalFetchContext, SessionErrorContext,
                                           SessionlessFetchContext, next_epoch)

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def info(offset: int) -> FetchPartitionInfo:
    return FetchPartitionInfo(fetch_offset=offset)


def answer(hw=10, log_start=0, lso=10, records=b"", error=ErrorCode.NONE):
    return SimpleNamespace(high_watermark=hw, log_start_offset=log_start, last_stable_offset=lso, records=records,
                           error_code=error, preferred_read_replica=-1, diverging_epoch=None)


def manager(slots=1000, eviction_ms=120_000):
    time = MockTime()
    return FetchManager(FetchSessionCache(slots, eviction_ms, rng=random.Random(7)), time), time


def open_session(m, parts=(A0, A1, B0), follower=False):
    ctx = m.new_context(12, 0, 0, follower, {tp: info(0) for tp in parts})
    assert isinstance(ctx, FullFetchContext)
    sid, sent = ctx.update_and_generate([(tp, answer()) for tp in parts])
    return sid, sent


def test_epochs_count_from_one_and_wrap_around():
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_a_full_request_opens_a_session_and_answers_everything():
    m, _ = manager()
    sid, sent = open_session(m)
    assert sid != 0 and len(sent) == 3
    session = m.cache.get(sid)
    assert session.epoch == 1 and list(session.partitions) == [A0, A1, B0]
    assert session.partitions[A0].high_watermark == 10


def test_session_ids_are_deterministic_with_a_seeded_random():
    sid1, _ = open_session(manager()[0])
    sid2, _ = open_session(manager()[0])
    assert sid1 == sid2 != 0


def test_sessionless_full_fetch_keeps_nothing():
    m, _ = manager()
    ctx = m.new_context(12, 0, FINAL_EPOCH, False, {A0: info(0)})
    assert isinstance(ctx, SessionlessFetchContext)
    assert ctx.update_and_generate([(A0, answer())]) == (0, [(A0, answer())])
    assert len(m.cache) == 0


def test_incremental_with_no_changes_reads_everything_and_answers_nothing():
    m, _ = manager()
    sid, _ = open_session(m)
    ctx = m.new_context(12, sid, 1, False, {})
    assert isinstance(ctx, IncrementalFetchContext)
    assert [tp for tp, _ in ctx.partitions()] == [A0, A1, B0]      # the broker reads the whole session
    assert ctx.update_and_generate([(tp, answer()) for tp in (A0, A1, B0)]) == (sid, [])
    assert m.cache.get(sid).epoch == 2


def test_new_data_or_moved_offsets_appear_in_the_incremental_response():
    m, _ = manager()
    sid, _ = open_session(m)
    ctx = m.new_context(12, sid, 1, False, {A1: info(5)})            # A1's fetch offset moved
    assert dict(ctx.partitions())[A1].fetch_offset == 5
    assert dict(ctx.partitions())[A0].fetch_offset == 0             # the others keep their cached request
    sid2, sent = ctx.update_and_generate([(A0, answer()), (A1, answer(records=b"xyz")), (B0, answer(hw=11))])
    assert sid2 == sid and [tp for tp, _ in sent] == [A1, B0]
    assert list(m.cache.get(sid).partitions) == [A0, A1, B0]          # answered ones moved to the back, in order
    ctx = m.new_context(12, sid, 2, False, {})
    assert ctx.update_and_generate([(A0, answer(log_start=3)), (A1, answer()), (B0, answer(hw=11))])[1] == \
        [(A0, answer(log_start=3))]
    assert list(m.cache.get(sid).partitions) == [A1, B0, A0]


def test_errors_are_always_answered():
    m, _ = manager()
    sid, _ = open_session(m)
    err = answer(hw=-1, log_start=-1, lso=-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    ctx = m.new_context(12, sid, 1, False, {})
    assert ctx.update_and_generate([(A0, err), (A1, answer()), (B0, answer())])[1] == [(A0, err)]
    ctx = m.new_context(12, sid, 2, False, {})
    assert ctx.update_and_generate([(A0, err), (A1, answer()), (B0, answer())])[1] == [(A0, err)]


def test_forgotten_topics_leave_the_session_and_an_empty_session_closes():
    m, _ = manager()
    sid, _ = open_session(m)
    ctx = m.new_context(12, sid, 1, False, {}, to_forget=[A0, A1])
    assert [tp for tp, _ in ctx.partitions()] == [B0]
    ctx.update_and_generate([(B0, answer())])
    ctx = m.new_context(12, sid, 2, False, {}, to_forget=[B0])
    assert isinstance(ctx, SessionlessFetchContext) and ctx.partitions() == []
    assert m.cache.get(sid) is None


def test_wrong_epoch_and_unknown_id_are_session_errors():
    m, _ = manager()
    sid, _ = open_session(m)
    ctx = m.new_context(12, sid, 5, False, {})
    assert isinstance(ctx, SessionErrorContext) and ctx.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert ctx.update_and_generate([(A0, answer())]) == (0, [])
    ctx = m.new_context(12, sid + 1, 1, False, {})
    assert ctx.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # A v13+ request may not continue a session opened by names (or the other way round).
    assert m.new_context(13, sid, 1, False, {}).error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # The session is still usable at its epoch.
    assert isinstance(m.new_context(12, sid, 1, False, {}), IncrementalFetchContext)


def test_a_response_after_the_session_moved_on_is_an_epoch_error():
    m, _ = manager()
    sid, _ = open_session(m)
    slow = m.new_context(12, sid, 1, False, {})
    fast = m.new_context(12, sid, 2, False, {})
    fast.update_and_generate([(A0, answer())])
    m.new_context(12, sid, 3, False, {})
    assert slow.update_and_generate([(A0, answer())]) == (0, [])
    assert slow.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_a_full_request_with_a_session_id_closes_that_session():
    m, _ = manager()
    sid, _ = open_session(m)
    assert isinstance(m.new_context(12, sid, FINAL_EPOCH, False, {}), SessionlessFetchContext)
    assert m.cache.get(sid) is None


def test_eviction_when_full_follows_kafkas_rules():
    m, time = manager(slots=2, eviction_ms=120_000)
    a, _ = open_session(m, parts=[("a", i) for i in range(10)])
    b, _ = open_session(m, parts=[("b", i) for i in range(5)])
    time.advance(60_000)
    # A follower (privileged) evicts the smallest consumer session.
    f, _ = open_session(m, parts=[("f", i) for i in range(20)], follower=True)
    assert f != 0 and m.cache.get(b) is None and m.cache.get(a) is not None
    time.advance(40_000)
    # A consumer cannot evict sessions younger than the eviction time: it fetches sessionless.
    c, _ = open_session(m, parts=[("c", i) for i in range(50)])
    assert c == 0 and len(m.cache) == 2
    # Once A has been idle longer than the eviction time, the next newcomer takes its slot.
    m.cache.touch(m.cache.get(f), time.milliseconds())
    time.advance(100_000)
    c, _ = open_session(m, parts=[("c", i) for i in range(50)])
    assert c != 0 and m.cache.get(a) is None and m.cache.evictions == 2
    assert m.cache.metrics() == {"NumIncrementalFetchSessions": 2, "NumIncrementalFetchPartitionsCached": 70,
                                 "IncrementalFetchSessionEvictionsPerSec": 2}


def test_a_follower_does_not_evict_a_bigger_consumer_session():
    m, time = manager(slots=1)
    big, _ = open_session(m, parts=[("a", i) for i in range(10)])
    f, _ = open_session(m, parts=[A0], follower=True)
    assert f == 0 and m.cache.get(big) is not None


def test_zero_slots_means_no_sessions():
    m, _ = manager(slots=0)
    sid, sent = open_session(m)
    assert sid == 0 and len(sent) == 3
