"""kafkalab's consumer against kafkalab, Tansu and noida-db: assign/seek, groups, commits, times, pause, interop."""
from __future__ import annotations

import collections
import threading
import time

import pytest

from kafkalab.clients import Admin, Consumer, OffsetAndMetadata, Producer, TopicPartition
from kafkalab.clients.config import ConfigException
from kafkalab.clients.consumer import ConsumerGroupMetadata

from .conftest import unique

GROUP = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest",
         "fetch.max.wait.ms": 100}


def make_topic(broker, partitions: int) -> str:
    name = unique("cons")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as a:
        a.create_topics([(name, partitions, 1)])
    return name


def produce(broker, topic, n, *, partitions=1, prefix=b"v", **cfg) -> list:
    """``n`` records spread round-robin over ``partitions``; returns [(partition, offset, key, value)]."""
    out = []
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, **cfg}) as p:
        futures = [p.send(topic, prefix + b"%d" % i, key=b"k%d" % i, partition=i % partitions,
                          headers=[("h", b"%d" % i)], timestamp=1_700_000_000_000 + i * 1000) for i in range(n)]
        for i, f in enumerate(futures):
            md = f.result(10)
            out.append((md.partition, md.offset, b"k%d" % i, prefix + b"%d" % i))
    return out


def drain(consumer, want: int, timeout: float = 10.0) -> list:
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got += consumer.poll(0.2)
    return got


def consumer(broker, **cfg) -> Consumer:
    return Consumer({"bootstrap.servers": broker.bootstrap_servers, "fetch.max.wait.ms": 100, **cfg})


def test_assign_seek_and_poll(broker):
    topic = make_topic(broker, 1)
    produce(broker, topic, 20)
    tp = TopicPartition(topic, 0)
    with consumer(broker, **{"max.poll.records": 7}) as c:
        c.assign([tp])
        assert c.assignment() == {tp}
        c.seek(tp, 5)
        first = c.poll(5)
        assert 0 < len(first) <= 7 and first[0].offset == 5
        rest = drain(c, 15 - len(first))
        got = first + rest
        assert [r.offset for r in got] == list(range(5, 20))
        r = got[0]
        assert (r.topic, r.partition, r.key, r.value, r.headers) == (topic, 0, b"k5", b"v5", [("h", b"5")])
        assert r.timestamp == 1_700_000_005_000 and r.timestamp_type == 0
        broker.lacks("high_watermark")
        assert c.position(tp) == 20
        c.seek_to_beginning([tp])
        assert c.position(tp) == 0
        c.seek_to_end()
        assert c.position(tp) == 20
        assert c.poll(0.3) == []


@pytest.mark.parametrize("compression", ["gzip", "lz4", "zstd", "snappy"])
def test_compressed_batches_read_from_the_middle(broker, compression):
    topic = make_topic(broker, 1)
    produce(broker, topic, 10, **{"compression.type": compression, "linger.ms": 50})
    tp = TopicPartition(topic, 0)
    with consumer(broker) as c:
        c.assign([tp])
        c.seek(tp, 3)                        # inside the first compressed batch
        got = drain(c, 7)
    assert [r.offset for r in got] == list(range(3, 10))
    assert [r.value for r in got] == [b"v%d" % i for i in range(3, 10)]


def test_auto_offset_reset(broker):
    topic = make_topic(broker, 1)
    produce(broker, topic, 5)
    tp = TopicPartition(topic, 0)
    with consumer(broker, **{"auto.offset.reset": "earliest"}) as c:
        c.assign([tp])
        assert [r.offset for r in drain(c, 5)] == list(range(5))
    broker.lacks("offset_out_of_range")
    with consumer(broker, **{"auto.offset.reset": "earliest"}) as c:
        c.assign([tp])
        c.seek(tp, 1000)                      # OFFSET_OUT_OF_RANGE -> reset to earliest
        got = drain(c, 5)
        assert [r.offset for r in got] == list(range(5))
    from kafkalab.clients import NoOffsetForPartitionError
    with consumer(broker, **{"auto.offset.reset": "none", "group.id": unique("g")}) as c:
        c.assign([tp])
        with pytest.raises(NoOffsetForPartitionError):
            deadline = time.monotonic() + 15      # the committed-offset lookup may outlast one short poll
            while time.monotonic() < deadline:
                c.poll(0.5)
    broker.lacks("high_watermark")
    with consumer(broker, **{"auto.offset.reset": "latest"}) as c:
        c.assign([tp])
        assert c.position(tp) == 5


def test_offsets_for_times_and_end_offsets(broker):
    broker.lacks("list_offsets_by_time")
    topic = make_topic(broker, 1)
    produce(broker, topic, 5)
    tp = TopicPartition(topic, 0)
    with consumer(broker) as c:
        found = c.offsets_for_times({tp: 1_700_000_002_500})
        assert found[tp].offset == 3 and found[tp].timestamp == 1_700_000_003_000
        assert c.offsets_for_times({tp: 1_800_000_000_000})[tp] is None
        assert c.beginning_offsets([tp]) == {tp: 0}
        broker.lacks("high_watermark")
        assert c.end_offsets([tp]) == {tp: 5}


def test_pause_and_resume(broker):
    topic = make_topic(broker, 2)
    produce(broker, topic, 20, partitions=2)
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with consumer(broker, **{"auto.offset.reset": "earliest"}) as c:
        c.assign([t0, t1])
        c.pause([t1])
        assert c.paused() == {t1}
        got = drain(c, 10)
        got += c.poll(0.5)
        assert {r.partition for r in got} == {0} and len(got) == 10
        assert c.position(t1) == 0
        c.resume([t1])
        got = drain(c, 10)
        assert {r.partition for r in got} == {1} and [r.offset for r in got] == list(range(10))


def test_our_producer_to_our_consumer_identical(broker):
    topic = make_topic(broker, 3)
    sent = produce(broker, topic, 90, partitions=3, **{"compression.type": "lz4"})
    with consumer(broker, **{"auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = drain(c, 90)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in got) == sorted(sent)


class Recorder:
    def __init__(self):
        self.events = []

    def on_partitions_revoked(self, partitions):
        self.events.append(("revoked", sorted(partitions)))

    def on_partitions_assigned(self, partitions):
        self.events.append(("assigned", sorted(partitions)))

    def on_partitions_lost(self, partitions):
        self.events.append(("lost", sorted(partitions)))


class Member(threading.Thread):
    """A group member polling in its own thread, recording what it reads and what it is assigned."""

    def __init__(self, broker, group, topic, **cfg):
        super().__init__(daemon=True)
        self.c = consumer(broker, **{"group.id": group, **GROUP, **cfg})
        self.listener = Recorder()
        self.c.subscribe([topic], listener=self.listener)
        self.records, self.stop, self.error = [], threading.Event(), None
        self.assigned: set = set()
        self.lock = threading.Lock()

    def run(self):
        try:
            while not self.stop.is_set():
                recs = self.c.poll(0.1)
                with self.lock:
                    self.records += recs
                    self.assigned = self.c.assignment()
        except Exception as e:  # noqa: BLE001
            self.error = e

    def finish(self, close=True):
        self.stop.set()
        self.join(15)
        if close:
            self.c.close()
        assert self.error is None, self.error


def wait_until(check, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_group_of_three_shares_six_partitions_and_rebalances(broker):
    broker.lacks("group_rebalance")
    topic = make_topic(broker, 6)
    group = unique("g")
    sent = produce(broker, topic, 60, partitions=6)
    members = [Member(broker, group, topic) for _ in range(3)]
    for m in members:
        m.start()
    everyone = {TopicPartition(topic, p) for p in range(6)}

    def balanced(ms):
        sets = [m.assigned for m in ms]
        return sum(len(s) for s in sets) == 6 and set().union(*sets) == everyone and \
            all(len(s) == 6 // len(ms) for s in sets)
    assert wait_until(lambda: balanced(members)), [m.assigned for m in members]
    assert wait_until(lambda: sum(len(m.records) for m in members) >= 60)
    got = [(r.partition, r.offset, r.key, r.value) for m in members for r in m.records]
    assert sorted(got) == sorted(sent)                   # each partition read exactly once
    for m in members:
        m.c.commit()
    leaving = members.pop()
    owned = sorted(leaving.assigned)
    leaving.finish()                                     # LeaveGroup: its partitions move to the others
    assert leaving.listener.events[-1] == ("revoked", owned)
    assert wait_until(lambda: balanced(members)), [m.assigned for m in members]
    more = produce(broker, topic, 30, partitions=6, prefix=b"w")
    assert wait_until(lambda: sum(len(m.records) for m in members) >= 60 - len(leaving.records) + 30)
    for m in members:
        m.finish()
    later = sorted((r.partition, r.offset, r.key, r.value) for m in members for r in m.records
                   if r.value.startswith(b"w"))
    assert later == sorted(more)


def test_commit_then_restart_resumes_without_loss_or_duplicates(broker):
    broker.lacks("consumer_groups")
    topic = make_topic(broker, 2)
    group = unique("g")
    sent = produce(broker, topic, 40, partitions=2)
    cfg = {"group.id": group, **GROUP, "enable.auto.commit": False, "max.poll.records": 15}
    with consumer(broker, **cfg) as c:
        c.subscribe([topic])
        first = drain(c, 15)
        assert 15 <= len(first) < 40
        c.commit()                                       # the positions: just past what poll() returned
        committed = c.committed([TopicPartition(topic, p) for p in range(2)])
    seen = {(r.partition, r.offset) for r in first}
    assert all(om is not None for om in committed.values())
    for tp, om in committed.items():
        assert om.offset == 1 + max([o for p, o in seen if p == tp.partition], default=-1)
    with consumer(broker, **cfg) as c:
        c.subscribe([topic])
        rest = drain(c, 40 - len(first))
    got = sorted([(r.partition, r.offset, r.key, r.value) for r in first + rest])
    assert got == sorted(sent)


def test_auto_commit_on_poll_and_close(broker):
    broker.lacks("auto_commit_close")
    topic = make_topic(broker, 1)
    group = unique("g")
    produce(broker, topic, 10)
    tp = TopicPartition(topic, 0)
    cfg = {"group.id": group, **GROUP, "enable.auto.commit": True, "auto.commit.interval.ms": 200}
    with consumer(broker, **cfg) as c:
        c.subscribe([topic])
        assert len(drain(c, 10)) == 10
        assert wait_until(lambda: (c.poll(0.1) or True) and (c.committed([tp])[tp] or OffsetAndMetadata(-1))
                          .offset == 10, 5)
    produce(broker, topic, 3)
    with consumer(broker, **{**cfg, "auto.commit.interval.ms": 60_000}) as c:
        c.subscribe([topic])
        got = drain(c, 3)
        assert [r.offset for r in got] == [10, 11, 12]
    with consumer(broker, **cfg) as c:                   # the close() above committed 13
        assert c.committed([tp])[tp].offset == 13


def test_cooperative_sticky_moves_only_what_must_move(broker):
    broker.lacks("group_rebalance")
    topic = make_topic(broker, 4)
    group = unique("g")
    cfg = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(broker, group, topic, **cfg)
    a.start()
    everyone = {TopicPartition(topic, p) for p in range(4)}
    assert wait_until(lambda: a.assigned == everyone)
    b = Member(broker, group, topic, **cfg)
    b.start()
    assert wait_until(lambda: len(a.assigned) == 2 and len(b.assigned) == 2 and a.assigned | b.assigned == everyone)
    events, kept = list(a.listener.events), set(a.assigned)
    a.finish(), b.finish()
    revoked = [parts for kind, parts in events if kind == "revoked"]
    assert revoked and all(set(parts) <= everyone - kept for parts in revoked)   # only what moved to b
    assert not [e for e in events if e[0] == "lost"]


def test_confluent_producer_to_our_consumer_identical(broker):
    ck = pytest.importorskip("confluent_kafka")
    topic = make_topic(broker, 2)
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "compression.type": "gzip"})
    for i in range(40):
        p.produce(topic, b"c%d" % i, key=b"k%d" % i, partition=i % 2, headers=[("h", b"x")],
                  timestamp=1_700_000_000_000 + i)
    assert p.flush(10) == 0, "confluent-kafka could not deliver every message"
    with consumer(broker, **{"auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = drain(c, 40)
    assert len(got) == 40, f"consumed {len(got)} of the 40 records produced"
    per_partition = collections.defaultdict(list)
    for r in got:
        per_partition[r.partition].append((r.offset, r.key, r.value, r.headers, r.timestamp))
    assert sorted(per_partition) == [0, 1]
    for part, rows in per_partition.items():
        assert [o for o, *_ in rows] == list(range(20))
        assert [(k, v) for _, k, v, _, _ in rows] == [(b"k%d" % i, b"c%d" % i) for i in range(part, 40, 2)]
        assert all(h == [("h", b"x")] for *_, h, _ in rows)
        assert [t for *_, t in rows] == [1_700_000_000_000 + i for i in range(part, 40, 2)]


def test_group_metadata_follows_the_completed_rebalance(kafkalab_broker):
    """``group_metadata()`` (Java's ConsumerGroupMetadata): unknown generation and member until the first
    rebalance completes, then the coordinator's generation and member id; the static instance id throughout."""
    broker = kafkalab_broker
    topic = make_topic(broker, 1)
    group = unique("g")
    with consumer(broker) as c:
        with pytest.raises(ConfigException, match="valid group.id"):
            c.group_metadata()
    with consumer(broker, **{"group.id": group, **GROUP, "group.instance.id": "instance-1"}) as c:
        assert c.group_metadata() == ConsumerGroupMetadata(group, -1, "", "instance-1")
        c.subscribe([topic])
        assert wait_until(lambda: (c.poll(0.1), c.assignment())[1] == {TopicPartition(topic, 0)})
        md = c.group_metadata()
        gc = broker.cluster.broker(0).group_coordinator
        stored = broker.cluster.call(lambda: gc.manager.get_group(group))
        assert md == ConsumerGroupMetadata(group, stored.generation_id, stored.leader_id, "instance-1")
        assert md.generation_id >= 1 and md.member_id
