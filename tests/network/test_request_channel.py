"""The request channel: the bounded request queue, the per-request timings (Kafka's RequestQueueTimeMs,
LocalTimeMs, RemoteTimeMs, ResponseSendTimeMs, TotalTimeMs), the request log and the per-API metrics.

Time is a MockTime: every duration below is exact."""
from __future__ import annotations

import asyncio

import pytest

from kafkalab.common.time import MockTime
from kafkalab.network.request_channel import (ANONYMOUS, CloseConnectionResponse, NetworkRequest, NoOpResponse,
                                              RequestChannel, RequestContext, RequestLog, RequestMetrics,
                                              RequestRecord, SendResponse)
from kafkalab.protocol import ApiKey, make_request, request_class

Metadata = request_class(ApiKey.METADATA)


def context(api_key=ApiKey.METADATA, version=12, correlation_id=7, client_id="lab-client", listener="PLAINTEXT",
            connection="127.0.0.1:9092-127.0.0.1:50000-0") -> RequestContext:
    body = request_class(api_key)()
    header = make_request(body, api_version=version, correlation_id=correlation_id, client_id=client_id).header
    return RequestContext(connection, "127.0.0.1", 50000, listener, "PLAINTEXT", ANONYMOUS, header)


def new_request(channel: RequestChannel, *, request_bytes=40, **kw) -> NetworkRequest:
    return NetworkRequest(context(**kw), Metadata(topics=None), request_bytes, channel.time.nanoseconds(),
                          channel.time.milliseconds())


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


async def settle(n=5):
    for _ in range(n):
        await asyncio.sleep(0)


# -- the context -------------------------------------------------------------------------------------------------
def test_context_reads_the_header():
    c = context(api_key=ApiKey.FETCH, version=11, correlation_id=99, client_id="consumer-1")
    assert (c.api_key, c.api_version, c.correlation_id, c.client_id) == (ApiKey.FETCH, 11, 99, "consumer-1")
    assert c.principal == "User:ANONYMOUS"


def test_network_request_repr_names_the_api():
    async def main():
        r = new_request(RequestChannel(time=MockTime()), correlation_id=3)
        assert "Metadata v12 correlation_id=3 client_id='lab-client'" in repr(r)
    run(main())


# -- the bounded queue --------------------------------------------------------------------------------------------
def test_queued_max_requests_bounds_the_queue_and_a_full_queue_blocks_the_processor():
    async def main():
        channel = RequestChannel(queue_size=2, time=MockTime())
        r1, r2, r3 = (new_request(channel, correlation_id=i) for i in (1, 2, 3))
        await channel.send_request(r1)
        await channel.send_request(r2)
        assert channel.queue_size == 2
        blocked = asyncio.ensure_future(channel.send_request(r3))
        await settle()
        assert not blocked.done(), "a full request queue must make the network side wait (back-pressure)"
        assert (await channel.receive_request()) is r1
        await settle()
        assert blocked.done() and channel.queue_size == 2
        assert [await channel.receive_request() for _ in range(2)] == [r2, r3]   # FIFO
        assert channel.queue_size == 0
    run(main())


def test_a_handler_waits_for_a_request():
    async def main():
        channel = RequestChannel(time=MockTime())
        waiting = asyncio.ensure_future(channel.receive_request())
        await settle()
        assert not waiting.done()
        r = new_request(channel)
        await channel.send_request(r)
        assert (await waiting) is r
    run(main())


def test_default_queue_size_is_kafkas_500():
    async def main():
        channel = RequestChannel(time=MockTime())
        for i in range(500):
            await asyncio.wait_for(channel.send_request(new_request(channel, correlation_id=i)), 1)
        blocked = asyncio.ensure_future(channel.send_request(new_request(channel)))
        await settle()
        assert not blocked.done()
        blocked.cancel()
    run(main())


# -- timings ------------------------------------------------------------------------------------------------------
def test_timings_of_a_request_answered_at_once():
    """received -queue 5 ms- dequeued -local 7 ms- response ready -send 2 ms- written; no remote time."""
    async def main():
        time = MockTime()
        channel = RequestChannel(time=time)
        r = new_request(channel, request_bytes=41)
        await channel.send_request(r)
        time.advance(5)
        await channel.receive_request()
        time.advance(7)
        channel.send_response(r, SendResponse(object()))
        assert isinstance(await r.response, SendResponse)
        time.advance(2)
        return channel.complete(r, 123, "response", time.nanoseconds())
    rec = run(main())
    assert rec.request_queue_time_ms == pytest.approx(5)
    assert rec.local_time_ms == pytest.approx(7)
    assert rec.remote_time_ms == 0
    assert rec.response_send_time_ms == pytest.approx(2)
    assert rec.total_time_ms == pytest.approx(14)
    assert (rec.request_bytes, rec.response_bytes, rec.completed) == (41, 123, "response")


def test_timings_of_a_delayed_request_have_remote_time():
    """A request parked in a purgatory: the handler is done locally (local_complete_ns), the response comes
    later -- that wait is Kafka's RemoteTimeMs."""
    async def main():
        time = MockTime()
        channel = RequestChannel(time=time)
        r = new_request(channel)
        await channel.send_request(r)
        await channel.receive_request()
        time.advance(1)
        r.local_complete_ns, r.delayed = time.nanoseconds(), True     # what KafkaApis does for a Delayed result
        time.advance(300)
        channel.send_response(r, SendResponse(object()))
        time.advance(4)
        return channel.complete(r, 10, "response", time.nanoseconds())
    rec = run(main())
    assert (rec.request_queue_time_ms, rec.local_time_ms, rec.remote_time_ms, rec.response_send_time_ms,
            rec.total_time_ms) == pytest.approx((0, 1, 300, 4, 305))


def test_total_time_is_the_sum_of_the_parts():
    async def main():
        time = MockTime()
        channel = RequestChannel(time=time)
        r = new_request(channel)
        await channel.send_request(r)
        time.advance(3)
        await channel.receive_request()
        time.advance(11)
        r.local_complete_ns = time.nanoseconds()
        time.advance(13)
        channel.send_response(r, NoOpResponse())
        time.advance(17)
        return channel.complete(r, 0, "no-response", time.nanoseconds())
    rec = run(main())
    parts = rec.request_queue_time_ms + rec.local_time_ms + rec.remote_time_ms + rec.response_send_time_ms
    assert parts == pytest.approx(rec.total_time_ms) == pytest.approx(44)


def test_only_the_first_response_counts():
    async def main():
        time = MockTime()
        channel = RequestChannel(time=time)
        r = new_request(channel)
        channel.send_response(r, SendResponse("first"))
        time.advance(10)
        channel.send_response(r, CloseConnectionResponse("late"))   # e.g. shutdown racing a delayed completion
        assert (await r.response) == SendResponse("first")
    run(main())


def test_record_names_and_fields_match_kafkas_request_metrics():
    assert RequestRecord._fields[:7] == ("connection_id", "listener_name", "client_id", "correlation_id", "api_key",
                                         "api_version", "api_name")
    for kafka_name in ("request_queue_time_ms", "local_time_ms", "remote_time_ms", "response_send_time_ms",
                       "total_time_ms"):
        assert kafka_name in RequestRecord._fields


# -- the request log ----------------------------------------------------------------------------------------------
def test_request_log_entry_describes_the_request():
    async def main():
        time = MockTime()
        channel = RequestChannel(time=time)
        seen = []
        unsubscribe = channel.request_log.subscribe(seen.append)
        r = new_request(channel, api_key=ApiKey.PRODUCE, version=9, correlation_id=42, client_id="producer-1",
                        listener="CLIENT", request_bytes=1000)
        r.received_ms = time.milliseconds()
        await channel.send_request(r)
        await channel.receive_request()
        channel.send_response(r, SendResponse(object()))
        channel.complete(r, 77, "response", time.nanoseconds())
        unsubscribe()
        r2 = new_request(channel)
        channel.send_response(r2, CloseConnectionResponse("bad"))
        channel.complete(r2, 0, "closed", time.nanoseconds())
        return channel, seen
    channel, seen = run(main())
    first, second = channel.request_log.records
    assert seen == [first], "unsubscribed callbacks see no more records"
    assert (first.api_key, first.api_version, first.api_name) == (ApiKey.PRODUCE, 9, "Produce")
    assert (first.correlation_id, first.client_id, first.listener_name) == (42, "producer-1", "CLIENT")
    assert (first.request_bytes, first.response_bytes, first.completed) == (1000, 77, "response")
    assert first.connection_id == "127.0.0.1:9092-127.0.0.1:50000-0"
    assert first.received_ms == 1_700_000_000_000
    assert (second.api_name, second.completed, second.response_bytes) == ("Metadata", "closed", 0)


def _record(api_key=ApiKey.METADATA, request_bytes=10, response_bytes=20, total=1.0, correlation_id=0):
    return RequestRecord("c", "PLAINTEXT", "id", correlation_id, api_key, 0, "x", 0.0, 0.0, 0.0, 0.0, total,
                         request_bytes, response_bytes, "response", 0)


def test_request_log_is_bounded_and_keeps_the_newest():
    log = RequestLog(capacity=3)
    for i in range(5):
        log.append(_record(correlation_id=i))
    assert len(log) == 3
    assert [r.correlation_id for r in log.records] == [2, 3, 4]
    log.clear()
    assert len(log) == 0 and log.records == []


def test_a_failing_subscriber_does_not_break_the_log():
    log = RequestLog()
    good = []

    def bad(record):
        raise RuntimeError("observer bug")
    log.subscribe(bad)
    log.subscribe(good.append)
    log.append(_record())
    assert len(good) == 1 and len(log) == 1


# -- metrics ------------------------------------------------------------------------------------------------------
def test_per_api_counts_bytes_and_rates_over_the_window():
    time = MockTime()
    m = RequestMetrics(time, window_ms=10_000)
    for _ in range(4):
        m.record(_record(ApiKey.PRODUCE, request_bytes=1000, response_bytes=50, total=2.0))
    m.record(_record(ApiKey.FETCH, request_bytes=100, response_bytes=5000, total=8.0))
    produce, fetch = m.snapshot()       # sorted by API key: Produce (0) then Fetch (1)
    assert (produce["api_name"], produce["requests"], produce["request_bytes"], produce["response_bytes"]) == \
        ("Produce", 4, 4000, 200)
    assert produce["requests_per_sec"] == pytest.approx(0.4)          # 4 requests / 10 s window
    assert produce["request_bytes_per_sec"] == pytest.approx(400)
    assert produce["response_bytes_per_sec"] == pytest.approx(20)
    assert produce["avg_total_time_ms"] == pytest.approx(2.0)
    assert (fetch["api_name"], fetch["requests"], fetch["response_bytes_per_sec"]) == ("Fetch", 1, pytest.approx(500))

    time.advance(10_001)                 # the window slides past them: rates drop to 0, totals stay
    produce, fetch = m.snapshot()
    assert produce["requests"] == 4 and produce["requests_per_sec"] == 0 and produce["request_bytes_per_sec"] == 0
    m.record(_record(ApiKey.PRODUCE, request_bytes=10))
    assert m.snapshot()[0]["requests_per_sec"] == pytest.approx(0.1)


def test_channel_complete_feeds_the_metrics():
    async def main():
        channel = RequestChannel(time=MockTime())
        for i in range(3):
            r = new_request(channel, correlation_id=i, request_bytes=30)
            channel.send_response(r, SendResponse(object()))
            channel.complete(r, 70, "response", channel.time.nanoseconds())
        return channel.metrics.snapshot()
    [row] = run(main())
    assert (row["api_name"], row["requests"], row["request_bytes"], row["response_bytes"]) == \
        ("Metadata", 3, 90, 210)


def test_connection_count():
    m = RequestMetrics(MockTime())
    m.connections_created += 3
    m.connections_closed += 1
    assert m.connection_count == 2
