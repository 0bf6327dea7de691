"""Fetch sessions (KIP-227) on the wire: a full Fetch opens a session, incremental ones carry only changes."""
from __future__ import annotations

import pytest

from kafkalab.cluster import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.records import build_batch

from ._raw_wire import Conn

Fetch = request_class(ApiKey.FETCH)
Produce = request_class(ApiKey.PRODUCE)
TOPICS = {12: "sessions-by-name", 16: "sessions-by-id"}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": "false"}) as c:
        for topic in TOPICS.values():
            c.create_topic(topic, 3)
        yield c


@pytest.fixture
def port(cluster):
    return cluster.broker(0).bound_endpoints[0].port


def produce(conn: Conn, topic: str, partition: int, *values: bytes) -> None:
    batch = build_batch([(b"k", v, [], 1_700_000_000_000) for v in values])
    body = conn.call(Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=topic, partition_data=(Produce.PartitionProduceData(index=partition, records=batch),)),)), 9)
    assert body.responses[0].partition_responses[0].error_code == 0


def fetch(conn: Conn, topic: str, session_id: int, epoch: int, offsets: dict, *, forget=(), version=12, topic_id=None,
          max_wait_ms=0):
    named = dict(topic=topic) if version < 13 else dict(topic_id=topic_id)
    topics = (Fetch.FetchTopic(**named, partitions=tuple(
        Fetch.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20) for p, o in offsets.items())),
    ) if offsets else ()
    forgotten = (Fetch.ForgottenTopic(**named, partitions=tuple(forget)),) if forget else ()
    return conn.call(Fetch(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           session_id=session_id, session_epoch=epoch, topics=topics,
                           forgotten_topics_data=forgotten, rack_id=""), version)


def answered(body) -> dict:
    assert body.error_code == 0
    return {p.partition_index: p for t in body.responses for p in t.partitions}


@pytest.mark.parametrize("version", [12, 16])
def test_full_then_incremental_fetch(cluster, port, version):
    topic = TOPICS[version]
    topic_id = cluster.broker(0).metadata_cache.topic_id(topic)
    with Conn(port) as c:
        produce(c, topic, 0, b"a", b"b")
        full = fetch(c, topic, 0, 0, {0: 0, 1: 0, 2: 0}, version=version, topic_id=topic_id)
        session_id = full.session_id
        assert session_id != 0
        parts = answered(full)
        assert sorted(parts) == [0, 1, 2] and parts[0].records
        hw0 = parts[0].high_watermark
        # Nothing changed: the answer names no partition, and keeps the session id.
        empty = fetch(c, topic, session_id, 1, {0: hw0}, version=version, topic_id=topic_id)
        assert empty.session_id == session_id and answered(empty) == {}
        # New records on partition 2 (not named in the request): only it is answered.
        produce(c, topic, 2, b"c")
        news = fetch(c, topic, session_id, 2, {}, version=version, topic_id=topic_id, max_wait_ms=2000)
        parts = answered(news)
        assert list(parts) == [2] and parts[2].records
        # Forget partitions 0 and 1; partition 2 at its end: nothing to say.
        rest = fetch(c, topic, session_id, 3, {2: parts[2].high_watermark}, forget=[0, 1], version=version,
                     topic_id=topic_id)
        assert answered(rest) == {}
        session = cluster.broker(0).fetch_manager.cache.get(session_id)
        assert [tp[1] for tp in session.partitions] == [2] and session.epoch == 4
        metrics = cluster.broker(0).metrics()       # Kafka's FetchSessionCache metrics, by the broker
        assert metrics["NumIncrementalFetchSessions"] >= 1
        assert metrics["NumIncrementalFetchPartitionsCached"] >= 1
        assert "IncrementalFetchSessionEvictionsPerSec" in metrics
        # Session errors: a wrong epoch, an unknown id.
        bad = fetch(c, topic, session_id, 9, {}, version=version, topic_id=topic_id)
        assert bad.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH and bad.session_id == 0
        assert not bad.responses
        gone = fetch(c, topic, session_id + 1, 1, {}, version=version, topic_id=topic_id)
        assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # Epoch -1 closes the session.
        closed = fetch(c, topic, session_id, -1, {0: 0}, version=version, topic_id=topic_id)
        assert closed.session_id == 0 and list(answered(closed)) == [0]
        assert cluster.broker(0).fetch_manager.cache.get(session_id) is None


def test_a_recreated_topic_is_another_topic_for_a_v13_session(cluster, port):
    topic = "sessions-recreated"
    cluster.create_topic(topic, 1)
    old_id = cluster.broker(0).metadata_cache.topic_id(topic)
    with Conn(port) as c:
        full = fetch(c, topic, 0, 0, {0: 0}, version=16, topic_id=old_id)
        session_id = full.session_id
        assert session_id != 0 and answered(full)[0].error_code == 0
        admin = cluster.broker(cluster.controller_id).admin
        cluster.call(admin.delete_topic, topic)
        cluster.wait_until(lambda: cluster.broker(0).metadata_cache.topic_id(topic) != old_id, 10, "not deleted")
        cluster.create_topic(topic, 1)
        new_id = cluster.broker(0).metadata_cache.topic_id(topic)
        assert new_id != old_id
        produce(c, topic, 0, b"new")
        body = fetch(c, topic, session_id, 1, {}, version=16, topic_id=old_id)
        assert body.error_code == 0 and body.session_id == session_id
        [t] = body.responses
        assert t.topic_id == old_id and t.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        assert not t.partitions[0].records
        # Forgetting the old topic by its id empties (and so closes) the session.
        body = fetch(c, topic, session_id, 2, {}, forget=[0], version=16, topic_id=old_id)
        assert body.session_id == 0 and answered(body) == {}
        assert cluster.broker(0).fetch_manager.cache.get(session_id) is None
