"""Sans-IO pieces of the consumer: SubscriptionState and CompletedFetch (decoding, skipping, read_committed)."""
import pytest

from kafkalab.clients.consumer import CompletedFetch, IllegalStateError, NoOffsetForPartitionError, SubscriptionState
from kafkalab.clients.consumer.completed_fetch import READ_COMMITTED, READ_UNCOMMITTED
from kafkalab.protocol import response_class, ApiKey
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.records.control import ControlRecordType, build_end_txn_marker_batch

TP = ("t", 0)
Aborted = response_class(ApiKey.FETCH).AbortedTransaction


def recs(*values):
    return [SimpleRecord(b"k", v, (), 1000 + i) for i, v in enumerate(values)]


def test_subscription_state_modes_positions_and_pause():
    s = SubscriptionState("earliest")
    s.assign_from_user([TP, ("t", 1)])
    with pytest.raises(IllegalStateError):
        s.subscribe(["x"])
    assert s.initializing_partitions() == [("t", 0), ("t", 1)] and not s.fetchable_partitions()
    s.seek(TP, 5)
    s.reset_initializing([("t", 1)])
    assert s.partitions_needing_reset() == [("t", 1)] and s.fetchable_partitions() == [TP]
    s.pause(TP)
    assert s.fetchable_partitions() == [] and s.all_consumed()[TP].offset == 5
    s.assign_from_user([TP])
    assert s.position(TP) == 5 and s.is_paused(TP)          # kept partitions keep their state
    none = SubscriptionState("none")
    none.assign_from_user([TP])
    with pytest.raises(NoOffsetForPartitionError):
        none.reset_initializing([TP])


@pytest.mark.parametrize("compression", [None, "gzip", "lz4", "zstd", "snappy"])
def test_records_before_the_fetch_offset_are_skipped(compression):
    data = build_batch(recs(b"a", b"b", b"c", b"d"), compression=compression, base_offset=10) + \
        build_batch(recs(b"e", b"f"), compression=compression, base_offset=14)
    f = CompletedFetch(TP, 12, data + data[:30])           # a partial batch at the end is ignored
    first = f.drain(3)
    assert [(r.offset, r.value) for r in first] == [(12, b"c"), (13, b"d"), (14, b"e")]
    assert f.next_fetch_offset == 15
    assert [r.offset for r in f.drain(10)] == [15] and f.next_fetch_offset == 16 and f.consumed


def test_read_committed_skips_aborted_transactions_and_markers():
    pid_a, pid_c = 7, 8
    data = b"".join([
        build_batch(recs(b"a1", b"a2"), producer_id=pid_a, producer_epoch=0, base_sequence=0, transactional=True,
                    base_offset=0),
        build_batch(recs(b"c1"), producer_id=pid_c, producer_epoch=0, base_sequence=0, transactional=True,
                    base_offset=2),
        build_end_txn_marker_batch(ControlRecordType.ABORT, producer_id=pid_a, producer_epoch=0, coordinator_epoch=0,
                                   base_offset=3),
        build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=pid_c, producer_epoch=0,
                                   coordinator_epoch=0, base_offset=4),
        build_batch(recs(b"plain"), base_offset=5),
    ])
    aborted = [Aborted(producer_id=pid_a, first_offset=0)]
    committed = CompletedFetch(TP, 0, data, isolation_level=READ_COMMITTED, aborted_transactions=aborted)
    assert [r.value for r in committed.drain(100)] == [b"c1", b"plain"]
    assert committed.next_fetch_offset == 6
    everything = CompletedFetch(TP, 0, data, isolation_level=READ_UNCOMMITTED, aborted_transactions=aborted)
    assert [r.value for r in everything.drain(100)] == [b"a1", b"a2", b"c1", b"plain"]   # never markers


def test_drain_in_slices_within_a_batch_keeps_every_field():
    records = [SimpleRecord(b"k%d" % i, b"v%d" % i, (("h", b"x"), ("n", None)) if i % 2 else (), 1000 + i)
               for i in range(5)]
    data = build_batch(records, base_offset=20, partition_leader_epoch=3) + build_batch(recs(b"z"), base_offset=25)
    f = CompletedFetch(TP, 21, data)
    got = []
    while not f.consumed:
        part = f.drain(2)
        assert len(part) <= 2
        got += part
        if part:
            assert f.next_fetch_offset == part[-1].offset + 1
    assert [r.offset for r in got] == [21, 22, 23, 24, 25] and f.next_fetch_offset == 26
    r21 = got[0]
    assert (r21.topic, r21.partition, r21.key, r21.value, r21.timestamp, r21.timestamp_type, r21.leader_epoch) == \
        ("t", 0, b"k1", b"v1", 1001, 0, 3)
    assert r21.headers == [("h", b"x"), ("n", None)] and got[1].headers == []
    assert got[1].headers is not got[3].headers                 # each record owns its list
    assert f.last_epoch is None                                 # the last batch had no leader epoch


def test_poll_returns_on_time_while_the_coordinator_lookup_goes_unanswered():
    """A broker that accepts and never answers (one that is stopping): ``poll(0.3)`` returns [] after about 0.3 s
    instead of waiting out socket.connection.setup.timeout.ms (30 s here), and the next poll waits on the same
    connection attempt rather than opening another (Java's ``ensureCoordinatorReady(timer)`` keeps its
    FindCoordinator in flight)."""
    import time

    from kafkalab.clients import Consumer
    from tests.clients._fake_broker import FakeBroker

    with FakeBroker(lambda api_key, api_version, request: None) as fb:
        consumer = Consumer({"bootstrap.servers": fb.bootstrap_servers, "group.id": "silent",
                             "socket.connection.setup.timeout.ms": 30_000, "request.timeout.ms": 30_000})
        try:
            consumer.subscribe(["t"])
            started = time.monotonic()
            assert consumer.poll(0.3) == [] and consumer.poll(0.3) == []
            assert time.monotonic() - started < 10, "poll waited for the unanswered connection"
            assert [api_key for api_key, _, _ in fb.requests] == [18]      # one ApiVersions, never answered
        finally:
            consumer.close(0.5)
