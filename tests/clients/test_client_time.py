"""Client-side timeouts decided by an injected MockTime: nothing expires until the test advances the clock.

Each test first lets real time pass (the deadline would be long gone on the wall clock) and checks that nothing
happened, then advances the mock clock to one millisecond before the deadline, then past it.
"""
import asyncio
import contextlib
import threading
import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import CommitFailedError, Consumer, Producer
from kafkalab.clients.clock import ClientClock
from kafkalab.clients.config import admin_config
from kafkalab.clients.errors import KafkaTimeoutError, NetworkException, RequestTimedOut
from kafkalab.clients.network_client import NetworkClient
from kafkalab.common import LoopThread, MockTime
from kafkalab.clients.consumer.abstract_coordinator import MemberState
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class, response_class

from ._fake_broker import FakeBroker
from .conftest import GROUP_OVERRIDES

AV = response_class(ApiKey.API_VERSIONS)
M = response_class(ApiKey.METADATA)


def api_versions(ranges):
    return AV(error_code=0, api_keys=tuple(AV.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                           for k, (lo, hi) in ranges.items()))


def settle(future, seconds: float = 0.3) -> None:
    """Give the client's loop real time to act on whatever just happened (it should have: nothing)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not future.done():
        time.sleep(0.01)


def wait_done(future, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not future.done():
        assert time.monotonic() < deadline, "the client did not act on the advanced clock"
        time.sleep(0.01)


def test_client_clock_waits_end_only_when_the_mock_clock_passes_the_deadline():
    clock_time = MockTime()
    io = LoopThread("test-client-clock")
    try:
        clock = ClientClock(clock_time)
        sleeping = io.submit(clock.sleep(1000))
        never = io.submit(clock.wait_for(asyncio.sleep(3600), 500))
        settle(sleeping)
        assert not sleeping.done() and not never.done()
        clock_time.advance(499)
        settle(never, 0.1)
        assert not never.done()
        clock_time.advance(1)
        wait_done(never)
        with pytest.raises(asyncio.TimeoutError):
            never.result()
        assert not sleeping.done()
        clock_time.advance(500)
        wait_done(sleeping)
        assert clock.real_timeout(5.0) is None and ClientClock().real_timeout(5.0) == 5.0
    finally:
        io.stop()


def test_request_times_out_at_request_timeout_ms_on_the_injected_clock():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9)})
        return None                            # never answer anything else

    mock = MockTime()
    io = LoopThread("test-request-timeout")
    with FakeBroker(handler) as fb:
        cfg = admin_config({"bootstrap.servers": fb.bootstrap_servers, "request.timeout.ms": 200})
        client = io.call(lambda: NetworkClient(cfg, time=mock))
        try:
            conn = io.run(client.connection(-1), 10)
            pending = io.submit(conn.send(request_class(ApiKey.METADATA)(topics=None), 9))
            settle(pending)                    # 300 ms of real time: past 200 ms on the wall clock
            assert not pending.done()
            mock.advance(199)
            settle(pending, 0.1)
            assert not pending.done()
            mock.advance(1)
            wait_done(pending)
            with pytest.raises(RequestTimedOut, match="timed out after 200 ms"):
                pending.result()
            assert conn.closed
        finally:
            io.run(client.close(), 10)
            io.stop()


def test_batch_expires_at_delivery_timeout_ms_on_the_producers_clock():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9), ApiKey.PRODUCE: (3, 9)})
        if key == ApiKey.METADATA:              # the partition exists but has no leader: the batch stays queued
            return M(brokers=(M.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=fb.port),),
                     controller_id=0, topics=(M.MetadataResponseTopic(name="t", partitions=(
                         M.MetadataResponsePartition(partition_index=0, leader_id=-1),)),))
        return None

    mock = MockTime()
    with FakeBroker(handler) as fb:
        config = {"bootstrap.servers": fb.bootstrap_servers, "enable.idempotence": False, "acks": 1,
                  "linger.ms": 0, "request.timeout.ms": 500, "delivery.timeout.ms": 1000}
        with Producer(config, time=mock) as p:
            fut = p.send("t", b"x")
            settle(fut, 1.2)                   # the wall clock passes delivery.timeout.ms; the producer's does not
            assert not fut.done()
            mock.advance(999)
            settle(fut, 0.1)
            assert not fut.done()
            mock.advance(1)
            wait_done(fut)
            with pytest.raises(KafkaTimeoutError, match="has passed since batch creation"):
                fut.result()
            assert fut.exception() is not None
            p.close(0)


@contextlib.contextmanager
def ticking(mock: MockTime, step_ms: int = 10):
    """Let the mock clock follow the wall clock (in ``step_ms`` steps) for a while: a client whose clock is
    frozen also never ends a retry backoff, so joining a group needs time to pass."""
    stop = threading.Event()

    def tick():
        while not stop.wait(step_ms / 1000):
            mock.advance(step_ms)
    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_max_poll_interval_ms_on_the_consumers_clock_makes_it_leave_the_group():
    mock = MockTime()
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES) as cluster:
        cluster.create_topic("events")
        with Producer({"bootstrap.servers": cluster.bootstrap_servers}) as p:
            p.send("events", b"hello").result(10)
        config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "slow", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 60_000, "heartbeat.interval.ms": 1000,
                  "max.poll.interval.ms": 10_000}
        consumer = Consumer(config, time=mock)
        try:
            consumer.subscribe(["events"])
            with ticking(mock):                # finding the coordinator backs off while __consumer_offsets is made
                records = consumer.poll(30)
            assert [r.value for r in records] == [b"hello"]
            assert consumer.poll(0) == []      # the clock is frozen from here on; this poll() is the last one
            coord = consumer.coordinator
            member = coord.generation.member_id
            gc = cluster.broker(0).group_coordinator
            assert member and cluster.call(gc.handle_describe_group, "slow")[1].state == "Stable"

            time.sleep(0.5)                    # real time passes; no poll() for 0.5 s is nothing to the mock
            mock.advance(9_000)
            time.sleep(0.3)
            assert coord.generation.member_id == member and not coord.poll_timeout_expired
            mock.advance(1_001)                # 10 001 ms since the last poll() on the consumer's clock
            cluster.wait_until(lambda: gc.handle_describe_group("slow")[1].state == "Empty", 10,
                               "the consumer did not leave the group")
            assert coord.poll_timeout_expired and coord.generation.member_id == ""
            assert coord.rejoin_reason == "consumer poll timeout has expired."     # Java's LeaveGroup reason
            # the late commit: the consumer knows it is out of the group and fails it without sending it
            # (Java's CommitFailedException, "...not part of an active group...")
            log = cluster.broker(0).channel.request_log
            commits_before = sum(1 for r in log.records if r.api_name == "OffsetCommit")
            with pytest.raises(CommitFailedError) as failed:
                consumer.commit({("events", 0): 1})
            assert failed.value.error_code == ErrorCode.UNKNOWN_MEMBER_ID and not failed.value.retriable
            assert "not part of an active group" in str(failed.value)
            assert sum(1 for r in log.records if r.api_name == "OffsetCommit") == commits_before
            coord.state = MemberState.PREPARING_REBALANCE      # as while its next poll() rejoins
            with pytest.raises(KafkaProtocolError) as rebalancing:
                consumer.commit({("events", 0): 1})
            assert rebalancing.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS
            assert not isinstance(rebalancing.value, CommitFailedError)
            coord.state = MemberState.UNJOINED
        finally:
            with ticking(mock):
                consumer.close()


def test_metadata_max_age_ms_and_reconnect_backoff_follow_the_injected_clock():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9)})
        if key == ApiKey.METADATA:
            return M(brokers=(M.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=fb.port),),
                     controller_id=0, topics=(M.MetadataResponseTopic(name="t", partitions=(
                         M.MetadataResponsePartition(partition_index=0, leader_id=0),)),))
        return None

    def metadata_requests() -> int:
        return sum(1 for key, _, _ in fb.requests if key == ApiKey.METADATA)

    mock = MockTime()
    io = LoopThread("test-metadata-age")
    with FakeBroker(handler) as fb:
        cfg = admin_config({"bootstrap.servers": fb.bootstrap_servers, "metadata.max.age.ms": 5000,
                            "reconnect.backoff.ms": 1000, "reconnect.backoff.max.ms": 1000})
        client = io.call(lambda: NetworkClient(cfg, time=mock))
        try:
            def start():
                client.metadata.add_topics("t")
                client.start_metadata_updater()
            io.call(start)
            deadline = time.monotonic() + 10
            while metadata_requests() < 1:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            time.sleep(0.3)
            assert metadata_requests() == 1            # fresh for 5 s of the client's clock
            mock.advance(4999)
            time.sleep(0.2)
            assert metadata_requests() == 1
            mock.advance(1)
            while metadata_requests() < 2:
                assert time.monotonic() < deadline, "metadata.max.age.ms did not trigger a refresh"
                time.sleep(0.01)

            # a failed connection backs off reconnect.backoff.ms (±20 % jitter) on the same clock
            client.bootstrap.append(("127.0.0.1", 1))      # nothing listens on port 1
            with pytest.raises(NetworkException):
                io.run(client.connection(-2), 10)
            assert 800 <= io.call(client.backoff_remaining_ms, -2) <= 1200
            time.sleep(0.2)
            assert io.call(client.backoff_remaining_ms, -2) >= 800 - 1
            mock.advance(1200)
            assert io.call(client.backoff_remaining_ms, -2) == 0
        finally:
            io.run(client.close(), 10)
            io.stop()


def test_a_new_topic_is_asked_for_at_once_without_waiting_for_the_clock():
    """Java's Metadata.requestUpdateForNewTopics: the refresh backoff does not hold back a topic new to the cache,
    so a consumer on a frozen MockTime that assign()s a partition reads it without the clock moving."""
    from kafkalab.clients.metadata import Metadata
    md = Metadata(retry_backoff_ms=100)
    woken = []
    md.on_update_requested = lambda: woken.append(1)
    md.attempt(1_000)
    md.request_update()
    assert md.time_to_next_update(1_000) == 100          # an ordinary refresh waits out the backoff
    assert md.add_topics("new") and woken == [1]
    assert md.time_to_next_update(1_000) == 0
    md.attempt(1_000)
    assert not md.add_topics("new") and woken == [1]      # not new: no wake-up, the backoff holds
    assert md.time_to_next_update(1_000) == 100

    mock = MockTime()
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES) as cluster:
        cluster.create_topic("frozen")
        with Producer({"bootstrap.servers": cluster.bootstrap_servers}) as p:
            p.send("frozen", b"first", partition=0).result(10)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "auto.offset.reset": "earliest"},
                            time=mock)
        try:
            consumer.assign([("frozen", 0)])
            start = mock.milliseconds()
            deadline = time.monotonic() + 10
            records = []
            while not records and time.monotonic() < deadline:
                records = consumer.poll(0)
                time.sleep(0.01)
            assert [r.value for r in records] == [b"first"] and mock.milliseconds() == start
        finally:
            consumer.close()


def test_a_sender_waiting_for_a_connection_is_woken_when_it_is_ready_not_by_its_clock():
    """The producer's clock stands still: the connection to the leader becoming ready must wake the sender
    (Java's poll returns then), or the first record would wait for a clock that never moves."""
    mock = MockTime()
    with Cluster(brokers=1).start() as cluster:
        cluster.create_topic("t", partitions=1)
        with Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
                       "enable.idempotence": False}, time=mock) as p:
            started = time.monotonic()
            for _ in range(3):
                p.send("t", b"x", partition=0).result(timeout=5)
            assert time.monotonic() - started < 4
        assert mock.milliseconds() == MockTime().milliseconds()    # nobody moved the clock
