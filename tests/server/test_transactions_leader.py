"""The partition leader's side of transactions, on the wire: transactional Produce (and what it refuses),
WriteTxnMarkers, and what the last stable offset lets read_committed readers see (Fetch, ListOffsets, and a
real confluent-kafka consumer with isolation.level=read_committed)."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.records import SimpleRecord, build_batch, build_end_txn_marker_batch, decode_batches
from kafkalab.records.control import ControlRecordType

from tests.broker._raw_wire import Conn

Produce = request_class(ApiKey.PRODUCE)
Fetch = request_class(ApiKey.FETCH)
ListOffsets = request_class(ApiKey.LIST_OFFSETS)
Markers = request_class(ApiKey.WRITE_TXN_MARKERS)
DescribeProducers = request_class(ApiKey.DESCRIBE_PRODUCERS)
T0 = int(time.time() * 1000)        # markers carry the broker's clock: no time-based roll between them


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": "false"}) as c:
        yield c


@pytest.fixture
def topic(cluster, request):
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:100]
    cluster.create_topic(name, 1)
    return name


def port(cluster) -> int:
    return cluster.broker(0).bound_endpoints[0].port


def txn_batch(pid, seq, values, epoch=0, transactional=True):
    recs = [SimpleRecord(b"k", v.encode(), (), T0) for v in values]
    return build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)


def produce(cluster, topic, records, transactional_id="tx", version=9, partition=0):
    body = Produce(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=(
        Produce.TopicProduceData(name=topic, partition_data=(
            Produce.PartitionProduceData(index=partition, records=records),)),))
    with Conn(port(cluster)) as c:
        return c.call(body, version).responses[0].partition_responses[0]


def write_markers(cluster, topic, pid, committed, epoch=0, coordinator_epoch=0, partitions=(0,), version=1):
    body = Markers(markers=(Markers.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=committed, coordinator_epoch=coordinator_epoch,
        topics=(Markers.WritableTxnMarkerTopic(name=topic, partition_indexes=tuple(partitions)),)),))
    with Conn(port(cluster)) as c:
        result = c.call(body, version)
    [marker] = result.markers
    assert marker.producer_id == pid
    return {p.partition_index: p.error_code for t in marker.topics for p in t.partitions}


def fetch(cluster, topic, level, offset=0):
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=level, session_id=0,
                 session_epoch=-1, topics=(Fetch.FetchTopic(topic=topic, partitions=(
                     Fetch.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),))
    with Conn(port(cluster)) as c:
        return c.call(body, 11).responses[0].partitions[0]


def latest(cluster, topic, level):
    body = ListOffsets(replica_id=-1, isolation_level=level, topics=(ListOffsets.ListOffsetsTopic(
        name=topic, partitions=(ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=-1),)),))
    with Conn(port(cluster)) as c:
        return c.call(body, 7).topics[0].partitions[0].offset


# --------------------------------------------------------------------------------------- the happy paths

def test_abort_marker_completes_the_transaction_for_read_committed(cluster, topic):
    assert produce(cluster, topic, txn_batch(7, 0, ["a", "b"])).error_code == ErrorCode.NONE      # 0-1
    assert produce(cluster, topic, build_batch([SimpleRecord(b"k", b"plain", (), T0)]),
                   transactional_id=None).error_code == ErrorCode.NONE                           # 2
    assert (latest(cluster, topic, 0), latest(cluster, topic, 1)) == (3, 0)
    part = fetch(cluster, topic, 1)
    assert (part.high_watermark, part.last_stable_offset, bytes(part.records)) == (3, 0, b"")
    assert write_markers(cluster, topic, 7, committed=False) == {0: ErrorCode.NONE}                 # 3
    assert (latest(cluster, topic, 0), latest(cluster, topic, 1)) == (4, 4)
    part = fetch(cluster, topic, 1)
    assert (part.high_watermark, part.last_stable_offset) == (4, 4)
    assert [(t.producer_id, t.first_offset) for t in part.aborted_transactions] == [(7, 0)]
    batches = decode_batches(bytes(part.records))
    assert [(b.base_offset, b.is_control_batch) for b in batches] == [(0, False), (2, False), (3, True)]
    assert fetch(cluster, topic, 0).aborted_transactions is None            # read_uncommitted: null
    log = cluster.call(lambda: cluster.broker(0).replica_manager.partition_or_error(topic, 0).log.segments[0]
                       .txn_index.all_aborted_txns())
    assert [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in log] == [(7, 0, 3, 4)]


def test_commit_marker_needs_no_aborted_transactions(cluster, topic):
    produce(cluster, topic, txn_batch(8, 0, ["a"]))
    assert write_markers(cluster, topic, 8, committed=True) == {0: ErrorCode.NONE}
    part = fetch(cluster, topic, 1)
    assert (part.last_stable_offset, tuple(part.aborted_transactions)) == (2, ())


def mixed_transactions(cluster, topic) -> None:
    """An aborted, a committed and a plain write, interleaved (offsets 0-1, 2, 3; markers at 4 and 5)."""
    produce(cluster, topic, txn_batch(11, 0, ["aborted-1", "aborted-2"]))
    produce(cluster, topic, txn_batch(12, 0, ["committed"]))
    produce(cluster, topic, build_batch([SimpleRecord(b"k", b"plain", (), T0)]), transactional_id=None)
    write_markers(cluster, topic, 11, committed=False)
    write_markers(cluster, topic, 12, committed=True)


def test_confluent_kafka_read_committed_consumer_skips_the_aborted_records(cluster, topic):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    mixed_transactions(cluster, topic)

    def consume(level):
        consumer = confluent_kafka.Consumer({"bootstrap.servers": f"127.0.0.1:{port(cluster)}", "group.id": topic + level,
                                             "auto.offset.reset": "earliest", "isolation.level": level,
                                             "enable.auto.commit": False})
        try:
            consumer.subscribe([topic])
            seen = []
            for _ in range(40):
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen.append(msg.value().decode())
                if len(seen) >= 4 or (seen and msg is None):
                    break
            return seen
        finally:
            consumer.close()
    assert consume("read_committed") == ["committed", "plain"]
    assert consume("read_uncommitted") == ["aborted-1", "aborted-2", "committed", "plain"]


# ------------------------------------------------------------------------------ what the leader refuses

def test_produce_refuses_what_kafka_refuses(cluster, topic):
    bad_epoch_source = txn_batch(20, 0, ["a"], epoch=1)
    assert produce(cluster, topic, txn_batch(20, 0, ["a"]), transactional_id=None).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    marker = build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=20, producer_epoch=0,
                                        coordinator_epoch=0, timestamp=T0)
    assert produce(cluster, topic, marker).error_code == ErrorCode.INVALID_RECORD     # clients write no markers
    assert produce(cluster, topic, bad_epoch_source).error_code == ErrorCode.NONE
    assert produce(cluster, topic, txn_batch(20, 1, ["b"], transactional=False, epoch=1)).error_code == \
        ErrorCode.INVALID_TXN_STATE                                                 # plain data inside the txn
    assert produce(cluster, topic, txn_batch(20, 1, ["b"], epoch=0)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_transactional_batches_of_two_producers_in_one_request(cluster, topic):
    cluster.create_topic(topic + "-b", 1)
    body = Produce(transactional_id="tx", acks=-1, timeout_ms=5000, topic_data=(
        Produce.TopicProduceData(name=topic, partition_data=(
            Produce.PartitionProduceData(index=0, records=txn_batch(30, 0, ["a"])),)),
        Produce.TopicProduceData(name=topic + "-b", partition_data=(
            Produce.PartitionProduceData(index=0, records=txn_batch(31, 0, ["b"])),))))
    with Conn(port(cluster)) as c:
        codes = [p.error_code for t in c.call(body, 9).responses for p in t.partition_responses]
    assert codes == [ErrorCode.INVALID_PRODUCER_ID_MAPPING] * 2


def test_markers_are_fenced_and_checked(cluster, topic):
    produce(cluster, topic, txn_batch(40, 0, ["a"], epoch=2))
    assert write_markers(cluster, topic, 40, committed=True, epoch=2, coordinator_epoch=5) == {0: ErrorCode.NONE}
    produce(cluster, topic, txn_batch(40, 1, ["b"], epoch=2))
    assert write_markers(cluster, topic, 40, committed=False, epoch=2, coordinator_epoch=4) == \
        {0: ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert write_markers(cluster, topic, 40, committed=False, epoch=1, coordinator_epoch=5) == \
        {0: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert write_markers(cluster, topic, 40, committed=False, epoch=2, coordinator_epoch=5, partitions=(0, 9)) == \
        {0: ErrorCode.NONE, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert latest(cluster, topic, 1) == latest(cluster, topic, 0)


def test_write_txn_markers_with_no_markers_is_answered(cluster):
    with Conn(port(cluster)) as c:
        assert c.call(Markers(markers=()), 1).markers == ()


def test_describe_producers_shows_the_open_transaction(cluster, topic):
    produce(cluster, topic, txn_batch(50, 0, ["a", "b"], epoch=3))              # 0-1, still open
    produce(cluster, topic, txn_batch(51, 0, ["c"]))                            # 2
    write_markers(cluster, topic, 51, committed=True, coordinator_epoch=6)     # 3
    body = DescribeProducers(topics=(DescribeProducers.TopicRequest(name=topic, partition_indexes=(0, 7)),
                                     DescribeProducers.TopicRequest(name="no-such-topic", partition_indexes=(0,)),
                                     DescribeProducers.TopicRequest(name="bad/name", partition_indexes=(0,))))
    with Conn(port(cluster)) as c:
        topics = c.call(body, 0).topics
    [p0, p7] = topics[0].partitions
    assert p0.error_code == ErrorCode.NONE and p7.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    states = {s.producer_id: (s.producer_epoch, s.last_sequence, s.coordinator_epoch, s.current_txn_start_offset)
              for s in p0.active_producers}
    assert states == {50: (3, 1, -1, 0), 51: (0, 0, 6, -1)}
    assert topics[1].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert topics[2].partitions[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_write_txn_markers_needs_alter_or_cluster_action_and_describe_producers_read():
    from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                       AclPermissionType, ResourcePattern, ResourceType)
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                       "super.users": "User:admin"}, wait_for_metadata=False) as c:
        assert write_markers(c, "t", 1, committed=True, partitions=(0, 1)) == \
            {0: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 1: ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        body = DescribeProducers(topics=(DescribeProducers.TopicRequest(name="t", partition_indexes=(0,)),))
        with Conn(port(c)) as conn:
            assert conn.call(body, 0).topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        for op in (AclOperation.CLUSTER_ACTION, AclOperation.ALTER):
            binding = AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
                                 AccessControlEntry("User:ANONYMOUS", "*", op, AclPermissionType.ALLOW))
            c.call(c.broker(0).authorizer.create_acls, [binding])
            assert write_markers(c, "t", 1, committed=True) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            c.call(c.broker(0).authorizer.delete_acls, [AclBindingFilter()])        # one at a time
            assert write_markers(c, "t", 1, committed=True) == {0: ErrorCode.CLUSTER_AUTHORIZATION_FAILED}


def test_list_offsets_by_timestamp_stops_at_the_last_stable_offset(cluster, topic):
    produce(cluster, topic, txn_batch(60, 0, ["a"]))                            # 0, open

    def by_time(level):
        body = ListOffsets(replica_id=-1, isolation_level=level, topics=(ListOffsets.ListOffsetsTopic(
            name=topic, partitions=(ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=T0),)),))
        with Conn(port(cluster)) as c:
            return c.call(body, 7).topics[0].partitions[0].offset
    assert (by_time(0), by_time(1)) == (0, -1)
    write_markers(cluster, topic, 60, committed=True)
    assert by_time(1) == 0


def test_a_cut_transactional_batch_is_left_to_the_log_checks(cluster, topic):
    whole = txn_batch(80, 0, ["a"])
    assert produce(cluster, topic, whole[:-3], transactional_id=None).error_code in (
        ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD)
    assert produce(cluster, topic, whole[:30], transactional_id=None).error_code in (
        ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD)


def test_kafka_python_and_kcat_read_committed_skip_the_aborted_records(cluster, topic):
    kafka = pytest.importorskip("kafka")
    mixed_transactions(cluster, topic)
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=f"127.0.0.1:{port(cluster)}", group_id=None,
                                   auto_offset_reset="earliest", isolation_level="read_committed",
                                   consumer_timeout_ms=3000, enable_auto_commit=False)
    try:
        assert [m.value.decode() for m in consumer] == ["committed", "plain"]
    finally:
        consumer.close()
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed")
    out = subprocess.run([kcat, "-C", "-b", f"127.0.0.1:{port(cluster)}", "-t", topic, "-o", "beginning", "-e", "-q",
                          "-f", "%s\\n"], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["committed", "plain"]            # librdkafka is read_committed by default
