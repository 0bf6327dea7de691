"""FetchSessionHandler (the fetcher's side of KIP-227) against FetchManager (the broker's), step by step."""
from __future__ import annotations

import random
from types import SimpleNamespace

from kafkalab.common.time import MockTime
from kafkalab.protocol import ErrorCode
from kafkalab.server.fetch_session import FetchManager, FetchSessionCache
from kafkalab.server.fetch_session_handler import FetchSessionHandler

T0, T1, T2 = ("t", 0), ("t", 1), ("t", 2)


def answer(hw=10):
    return SimpleNamespace(high_watermark=hw, log_start_offset=0, last_stable_offset=hw, records=b"",
                           error_code=ErrorCode.NONE, preferred_read_replica=-1, diverging_epoch=None)


def round_trip(handler: FetchSessionHandler, broker: FetchManager, wanted: dict):
    """One Fetch: the handler builds it, the broker answers, the handler notes the answer."""
    req = handler.build(wanted)
    ctx = broker.new_context(11, req.session_id, req.session_epoch, True, dict(req.to_send), req.to_forget)
    if ctx.error_code != ErrorCode.NONE:
        handler.handle_response(ctx.error_code, 0)
        return req, None
    session_id, sent = ctx.update_and_generate([(tp, answer()) for tp, _ in ctx.partitions()])
    handler.handle_response(ErrorCode.NONE, session_id)
    return req, [tp for tp, _ in sent]


def test_full_then_incremental_then_forget_then_start_over():
    broker = FetchManager(FetchSessionCache(rng=random.Random(1)), MockTime())
    h = FetchSessionHandler(1)
    req, sent = round_trip(h, broker, {T0: 0, T1: 0, T2: 0})
    assert req.is_full and req.session_id == 0 and list(req.to_send) == [T0, T1, T2] and sent == [T0, T1, T2]
    assert h.session_id != 0 and h.epoch == 1
    req, sent = round_trip(h, broker, {T0: 0, T1: 5, T2: 0})          # only T1 moved
    assert not req.is_full and req.session_epoch == 1 and req.to_send == {T1: 5} and req.to_forget == []
    assert sent == [] and h.epoch == 2
    req, _ = round_trip(h, broker, {T0: 0, T1: 5})                      # T2 is truncating: forget it
    assert req.to_send == {} and req.to_forget == [T2]
    assert list(broker.cache.get(h.session_id).partitions) == [T0, T1]
    # The leader restarted (its cache is empty): FETCH_SESSION_ID_NOT_FOUND, then a full request with id 0.
    broker.cache.remove(h.session_id)
    req, sent = round_trip(h, broker, {T0: 0, T1: 5})
    assert sent is None and h.session_id == 0 and h.epoch == 0
    req, sent = round_trip(h, broker, {T0: 0, T1: 5})
    assert req.is_full and req.session_id == 0 and sent == [T0, T1] and h.session_id != 0


def test_a_wrong_epoch_or_a_lost_answer_reopens_the_session():
    broker = FetchManager(FetchSessionCache(rng=random.Random(2)), MockTime())
    h = FetchSessionHandler(1)
    round_trip(h, broker, {T0: 0})
    old = h.session_id
    h.build({T0: 1})
    h.handle_error()                                  # the answer never came
    req, sent = round_trip(h, broker, {T0: 1})
    assert req.is_full and req.session_id == old     # "drop session old, open a new one"
    assert broker.cache.get(old) is None and h.session_id not in (0, old) and sent == [T0]
    h.epoch = 7                                       # out of step with the broker
    req, sent = round_trip(h, broker, {T0: 1})
    assert sent is None and h.epoch == 0 and h.session_id != 0
    assert round_trip(h, broker, {T0: 1})[0].is_full


def test_no_room_at_the_broker_means_full_requests():
    broker = FetchManager(FetchSessionCache(0), MockTime())
    h = FetchSessionHandler(1)
    for _ in range(2):
        req, sent = round_trip(h, broker, {T0: 0})
        assert req.is_full and sent == [T0] and h.session_id == 0
