"""Bad transactional input on the wire, against a one-broker kafkalab cluster: Kafka's error code, no state change
(DescribeTransactions, the partitions' logs and last stable offsets looked at after), and a broker that goes on.

Unknown transactional ids, a wrong producer id or epoch, EndTxn twice, EndTxn and commits after the coordinator
aborted a transaction on its timeout. And what Kafka 3.x *accepts* because kafkalab, like a 3.x broker with
``transaction.partition.verification.enable=false`` (KIP-890's check is not implemented), does not ask the
coordinator whether a partition belongs to the transaction: a transactional Produce to a partition never added, and
a TxnOffsetCommit for a group never added with AddOffsetsToTxn. Both are written; EndTxn then writes no marker
there, so the transaction hangs on that partition (its last stable offset stops; the offsets stay pending) until
``kafkalab transactions find-hanging`` finds it and ``abort`` closes it -- the KIP-664 remedy. A 3.6+ broker with
verification on answers INVALID_TXN_STATE (48) to both instead.

Last, a small seeded fuzz of mangled transaction frames (flipped, cut and spliced bytes).

The coordinator's decisions have sans-IO tests (tests/coordinator/test_txn_coordinator.py); these look at the wire
and at what the broker holds afterwards.
"""
from __future__ import annotations

import io
import logging
import random
import time

import pytest

from kafkalab.cli import build_parser
from kafkalab.cluster.cluster import Cluster
from kafkalab.common.time import MockTime
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC
from kafkalab.protocol import ApiKey, ErrorCode as E, request_class
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.tools import transactions as transactions_tool

from . import test_transactions_wire as w
from ._admin_support import wire
from ._raw_wire import Conn, frame_of, request_frame

Produce = request_class(ApiKey.PRODUCE)
ApiVersions = request_class(ApiKey.API_VERSIONS)
DescribeProducers = request_class(ApiKey.DESCRIBE_PRODUCERS)
TxnOffsetCommit = request_class(ApiKey.TXN_OFFSET_COMMIT)
OffsetFetch = request_class(ApiKey.OFFSET_FETCH)
TOPIC = "t"
CLEANUP_INTERVAL_MS = 100            # transaction.abort.timed.out.transaction.cleanup.interval.ms


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"transaction.state.log.num.partitions": 1,
                                       "transaction.state.log.replication.factor": 1,
                                       "transaction.state.log.min.isr": 1,
                                       "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                                           CLEANUP_INTERVAL_MS,
                                       "offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                                       "auto.create.topics.enable": "false"}) as c:
        c.create_topic(TOPIC, 2)
        c.create_topic(OFFSETS_TOPIC, 1, 1, {"cleanup.policy": "compact"})
        c.wait_until(lambda: c.broker(0).group_coordinator.manager.owned_partitions == {0}, 10,
                     "the group coordinator did not load __consumer_offsets-0")
        yield c


@pytest.fixture
def broker(cluster, caplog):
    """The broker; after the test it still answers, and nothing it logged is an error."""
    caplog.set_level(logging.WARNING, logger="kafkalab")
    b = cluster.broker(0)
    yield b
    assert wire(b, ApiVersions(), 0).error_code == E.NONE
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("kafkalab")]
    assert not errors, errors


def initialised(broker, txn, timeout_ms=60000):
    w.until(lambda: w.find(broker, txn).error_code == E.NONE)
    return w.init_ok(broker, txn, timeout_ms=timeout_ms)


def state(broker, txn):
    """(error, state, producer id, epoch, {(topic, partition)}) as DescribeTransactions tells it."""
    d = w.describe(broker, txn)
    return (d.error_code, d.transaction_state, d.producer_id, d.producer_epoch,
            {(t.topic, p) for t in d.topics for p in t.partitions})


def settled(broker, txn, wanted):
    """The state once it is ``wanted`` (the markers of a commit or abort are written after EndTxn is answered)."""
    return w.until(lambda: (lambda s: s if s[1] == wanted else None)(state(broker, txn))) or state(broker, txn)


def produce(broker, txn, pid, epoch, seq, values, partition=0, version=9):
    batch = build_batch([SimpleRecord(b"k", v.encode(), (), int(time.time() * 1000)) for v in values],
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    body = Produce(transactional_id=txn, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=TOPIC, partition_data=(Produce.PartitionProduceData(index=partition, records=batch),)),))
    part = wire(broker, body, version).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def offsets(cluster, topic, partition):
    """(log end offset, high watermark, last stable offset) of the broker's replica."""
    def read():
        log = cluster.broker(0).replica_manager.get_partition(topic, partition).log
        return log.log_end_offset, log.high_watermark, log.last_stable_offset
    return cluster.call(read)


def open_transactions(broker, topic, partition):
    """{producer id: current transaction start offset} from DescribeProducers, for the producers with one open."""
    body = DescribeProducers(topics=(DescribeProducers.TopicRequest(name=topic, partition_indexes=(partition,)),))
    part = wire(broker, body, 0).topics[0].partitions[0]
    assert part.error_code == E.NONE, part
    return {p.producer_id: p.current_txn_start_offset for p in part.active_producers if p.current_txn_start_offset >= 0}


def transactions_tool_run(cluster, *argv):
    """(exit status, stdout, stderr) of ``kafkalab transactions ... argv``, an hour from now (so that any open
    transaction is older than find-hanging's --max-transaction-timeout)."""
    args = build_parser().parse_args(["transactions", "--bootstrap-server", cluster.bootstrap_servers, *argv])
    out, err = io.StringIO(), io.StringIO()
    status = transactions_tool.run(args, out=out, err=err, time=MockTime(int(time.time() * 1000) + 3_600_000))
    return status, out.getvalue(), err.getvalue()


def table_rows(text):
    lines = [[cell.strip() for cell in line.split("\t")[:-1]] for line in text.splitlines() if line]
    return [dict(zip(lines[0], row)) for row in lines[1:]]


# -- unknown ids, wrong producer ids and epochs ---------------------------------------------------------------------
def test_unknown_transactional_id_is_invalid_producer_id_mapping_and_creates_nothing(broker):
    w.until(lambda: w.find(broker, "never-initialised").error_code == E.NONE)
    assert state(broker, "never-initialised")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    for version in (0, 3):
        assert w.add(broker, "never-initialised", 1234, 0, version=version) == {
            (TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING}
    off = wire(broker, w.AddOffsetsToTxn(transactional_id="never-initialised", producer_id=1234, producer_epoch=0,
                                         group_id="g"), 3)
    assert off.error_code == E.INVALID_PRODUCER_ID_MAPPING
    for committed in (True, False):
        assert w.end(broker, "never-initialised", 1234, 0, commit=committed, version=3) == \
            E.INVALID_PRODUCER_ID_MAPPING
    assert state(broker, "never-initialised")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    listed = wire(broker, w.ListTransactions(state_filters=(), producer_id_filters=()), 0).transaction_states
    assert "never-initialised" not in {s.transactional_id for s in listed}


def test_wrong_producer_id_or_epoch_changes_nothing(cluster, broker):
    pid, epoch = initialised(broker, "wrong-ids")
    before = state(broker, "wrong-ids")
    assert before == (E.NONE, "Empty", pid, epoch, set())
    assert w.add(broker, "wrong-ids", pid + 1, epoch, version=3) == {(TOPIC, 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert w.add(broker, "wrong-ids", pid, epoch + 1, version=3) == {(TOPIC, 0): E.PRODUCER_FENCED}
    assert w.add(broker, "wrong-ids", pid, epoch + 1, version=1) == {(TOPIC, 0): E.INVALID_PRODUCER_EPOCH}
    off = wire(broker, w.AddOffsetsToTxn(transactional_id="wrong-ids", producer_id=pid, producer_epoch=epoch + 1,
                                         group_id="g"), 3)
    assert off.error_code == E.PRODUCER_FENCED
    assert state(broker, "wrong-ids") == before

    assert w.add(broker, "wrong-ids", pid, epoch) == {(TOPIC, 0): E.NONE}
    ongoing = state(broker, "wrong-ids")
    assert ongoing == (E.NONE, "Ongoing", pid, epoch, {(TOPIC, 0)})
    assert w.end(broker, "wrong-ids", pid + 1, epoch, version=3) == E.INVALID_PRODUCER_ID_MAPPING
    assert w.end(broker, "wrong-ids", pid, epoch - 1 if epoch else epoch + 1, version=3) == E.PRODUCER_FENCED
    assert state(broker, "wrong-ids") == ongoing
    assert all(m[1] != pid for m in w.markers_in_log(cluster, 0, TOPIC, 0))        # nothing was ended
    assert w.end(broker, "wrong-ids", pid, epoch, commit=False, version=3) == E.NONE
    assert settled(broker, "wrong-ids", "CompleteAbort") == (E.NONE, "CompleteAbort", pid, epoch, set())


# -- EndTxn twice ----------------------------------------------------------------------------------------------------
def test_end_txn_twice_while_the_markers_are_pending_and_after(cluster, broker):
    # A scripted leader holds the markers back (answers REQUEST_TIMED_OUT), so that the second EndTxn meets
    # PrepareCommit: a one-broker cluster has no link to cut between the coordinator and the leader.
    pid, epoch = initialised(broker, "twice")
    assert w.add(broker, "twice", pid, epoch, ((TOPIC, 1),)) == {(TOPIC, 1): E.NONE}
    with w.scripted_markers() as markers:
        markers.clear()
        w.ANSWER["code"] = E.REQUEST_TIMED_OUT
        assert w.end(broker, "twice", pid, epoch, version=3) == E.NONE
        assert w.until(lambda: [m for m in markers if m[0] == pid])
        prepared = state(broker, "twice")
        assert prepared == (E.NONE, "PrepareCommit", pid, epoch, {(TOPIC, 1)})
        # Prepare* is durable, so the transaction has a pending transition (to CompleteCommit) while its markers
        # go out: Kafka checks that before the state, and answers CONCURRENT_TRANSACTIONS to either result
        assert w.end(broker, "twice", pid, epoch, version=3) == E.CONCURRENT_TRANSACTIONS      # retry later
        assert w.end(broker, "twice", pid, epoch, commit=False, version=3) == E.CONCURRENT_TRANSACTIONS
        assert state(broker, "twice") == prepared
        w.ANSWER["code"] = E.NONE
        assert settled(broker, "twice", "CompleteCommit") == (E.NONE, "CompleteCommit", pid, epoch, set())
    assert w.end(broker, "twice", pid, epoch, version=3) == E.NONE                     # a retry that came late
    assert w.end(broker, "twice", pid, epoch, commit=False, version=3) == E.INVALID_TXN_STATE
    assert state(broker, "twice") == (E.NONE, "CompleteCommit", pid, epoch, set())


# -- after the coordinator aborted a transaction on its timeout ------------------------------------------------------
def test_commit_and_end_txn_after_a_timeout_abort_are_fenced(cluster, broker):
    pid, epoch = initialised(broker, "timed-out", timeout_ms=200)
    assert w.add(broker, "timed-out", pid, epoch) == {(TOPIC, 0): E.NONE}
    error, first = produce(broker, "timed-out", pid, epoch, 0, ["doomed"])
    assert error == E.NONE
    aborted = settled(broker, "timed-out", "CompleteAbort")
    assert aborted == (E.NONE, "CompleteAbort", pid, epoch + 1, set())        # fenced: the abort bumped the epoch
    markers = [m for m in w.markers_in_log(cluster, 0, TOPIC, 0) if m[1] == pid]
    assert [m[2:4] for m in markers] == [(epoch + 1, False)]
    end_offsets = offsets(cluster, TOPIC, 0)
    assert end_offsets[2] == end_offsets[1] == end_offsets[0]                  # the LSO moved past the abort

    assert w.end(broker, "timed-out", pid, epoch, version=3) == E.PRODUCER_FENCED          # the late commit
    assert w.end(broker, "timed-out", pid, epoch, version=1) == E.INVALID_PRODUCER_EPOCH    # before KIP-588
    assert w.end(broker, "timed-out", pid, epoch, commit=False, version=3) == E.PRODUCER_FENCED
    assert w.add(broker, "timed-out", pid, epoch, version=3) == {(TOPIC, 0): E.PRODUCER_FENCED}
    assert produce(broker, "timed-out", pid, epoch, 1, ["zombie"])[0] == E.INVALID_PRODUCER_EPOCH
    assert state(broker, "timed-out") == aborted
    assert [m[:4] for m in w.markers_in_log(cluster, 0, TOPIC, 0) if m[1] == pid] == [m[:4] for m in markers]
    assert offsets(cluster, TOPIC, 0) == end_offsets                          # nothing written
    assert w.end(broker, "timed-out", pid, epoch + 1, commit=False, version=3) == E.NONE    # the abort, retried
    assert w.init_ok(broker, "timed-out") == (pid, epoch + 2)                # the producer starts over


# -- what a 3.x broker without KIP-890 verification accepts --------------------------------------------------------
def test_produce_to_a_partition_never_added_is_written_and_left_hanging_by_end_txn(cluster, broker):
    pid, epoch = initialised(broker, "unadded")
    assert w.add(broker, "unadded", pid, epoch, ((TOPIC, 0),)) == {(TOPIC, 0): E.NONE}
    assert produce(broker, "unadded", pid, epoch, 0, ["added"], partition=0)[0] == E.NONE
    error, hanging_offset = produce(broker, "unadded", pid, epoch, 0, ["never-added"], partition=1)
    assert error == E.NONE                                 # 3.6+ with verification: INVALID_TXN_STATE
    assert w.end(broker, "unadded", pid, epoch, version=3) == E.NONE
    assert settled(broker, "unadded", "CompleteCommit") == (E.NONE, "CompleteCommit", pid, epoch, set())
    assert [m[1:4] for m in w.markers_in_log(cluster, 0, TOPIC, 0) if m[1] == pid] == [(pid, epoch, True)]
    assert [m for m in w.markers_in_log(cluster, 0, TOPIC, 1) if m[1] == pid] == []
    leo, hw, lso = offsets(cluster, TOPIC, 1)
    assert lso == hanging_offset < hw == leo               # read_committed readers stop there
    assert open_transactions(broker, TOPIC, 1) == {pid: hanging_offset}

    status, out, err = transactions_tool_run(cluster, "find-hanging", "--topic", TOPIC)
    assert status == 0, err
    assert [(r["Topic"], r["Partition"], r["ProducerId"], r["StartOffset"]) for r in table_rows(out)] == [
        (TOPIC, "1", str(pid), str(hanging_offset))]
    status, _, err = transactions_tool_run(cluster, "abort", "--topic", TOPIC, "--partition", "1",
                                           "--start-offset", str(hanging_offset))
    assert status == 0, err
    assert open_transactions(broker, TOPIC, 1) == {}
    leo, hw, lso = offsets(cluster, TOPIC, 1)
    assert lso == hw == leo
    assert [m[1:4] for m in w.markers_in_log(cluster, 0, TOPIC, 1) if m[1] == pid] == [(pid, epoch, False)]
    assert transactions_tool_run(cluster, "find-hanging", "--topic", TOPIC)[1].count("\n") == 1   # the header


def txn_offset_commit(broker, txn, group, pid, epoch, offset, version=3):
    T = TxnOffsetCommit
    body = T(transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
             member_id="", group_instance_id=None, topics=(T.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=(
                 T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                   committed_leader_epoch=-1, committed_metadata=""),)),))
    return wire(broker, body, version).topics[0].partitions[0].error_code


def committed_offset(broker, group, require_stable):
    F = OffsetFetch
    body = F(group_id=group, topics=(F.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=(0,)),),
             require_stable=require_stable)
    part = wire(broker, body, 7).topics[0].partitions[0]
    return part.committed_offset, part.error_code


def test_txn_offset_commit_for_a_group_never_added_stays_pending_after_the_commit(cluster, broker):
    pid, epoch = initialised(broker, "offsets-unadded")
    assert w.add(broker, "offsets-unadded", pid, epoch) == {(TOPIC, 0): E.NONE}
    assert txn_offset_commit(broker, "offsets-unadded", "g-unadded", pid, epoch, 42) == E.NONE   # 3.6+: 48
    assert committed_offset(broker, "g-unadded", require_stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    assert w.end(broker, "offsets-unadded", pid, epoch, version=3) == E.NONE
    assert settled(broker, "offsets-unadded", "CompleteCommit")[1] == "CompleteCommit"
    # no marker went to __consumer_offsets: the offset is neither committed nor dropped
    assert [m for m in w.markers_in_log(cluster, 0, OFFSETS_TOPIC, 0) if m[1] == pid] == []
    assert committed_offset(broker, "g-unadded", require_stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    assert committed_offset(broker, "g-unadded", require_stable=False) == (-1, E.NONE)
    hanging = open_transactions(broker, OFFSETS_TOPIC, 0)
    assert pid in hanging
    status, _, err = transactions_tool_run(cluster, "abort", "--topic", OFFSETS_TOPIC, "--partition", "0",
                                           "--start-offset", str(hanging[pid]))
    assert status == 0, err
    assert committed_offset(broker, "g-unadded", require_stable=True) == (-1, E.NONE)     # aborted: never committed
    assert pid not in open_transactions(broker, OFFSETS_TOPIC, 0)


# -- mangled bytes ---------------------------------------------------------------------------------------------------
def test_mutated_transaction_requests_are_answered_or_closed_and_the_coordinator_goes_on(cluster, broker):
    """A small seeded fuzz over the transaction APIs' frames (flip, cut, splice, and int32 edges), sent on fresh
    connections while a transaction of the same id is open: each is answered with its correlation id or closed
    without an answer; afterwards the coordinator still ends that transaction."""
    pid, epoch = initialised(broker, "mangled")
    assert w.add(broker, "mangled", pid, epoch) == {(TOPIC, 0): E.NONE}
    assert produce(broker, "mangled", pid, epoch, 0, ["open"])[0] == E.NONE
    T = TxnOffsetCommit
    Markers = request_class(ApiKey.WRITE_TXN_MARKERS)
    bodies = [
        (w.InitProducerId(transactional_id="mangled", transaction_timeout_ms=60000, producer_id=pid,
                          producer_epoch=epoch), 4),
        (w.AddPartitionsToTxn(v3_and_below_transactional_id="mangled", v3_and_below_producer_id=pid,
                              v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
                                  w.AddPartitionsToTxn.AddPartitionsToTxnTopic(name=TOPIC, partitions=(0, 1)),)), 3),
        (w.AddOffsetsToTxn(transactional_id="mangled", producer_id=pid, producer_epoch=epoch, group_id="g"), 3),
        (w.EndTxn(transactional_id="mangled", producer_id=pid, producer_epoch=epoch, committed=True), 3),
        (T(transactional_id="mangled", group_id="g-mangled", producer_id=pid, producer_epoch=epoch,
           generation_id=-1, member_id="", group_instance_id=None, topics=(T.TxnOffsetCommitRequestTopic(
               name=TOPIC, partitions=(T.TxnOffsetCommitRequestPartition(
                   partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=""),)),)),
         3),
        (Markers(markers=(Markers.WritableTxnMarker(
            producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
            topics=(Markers.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=(1,)),)),)), 1),
        (w.DescribeTransactions(transactional_ids=("mangled", "other")), 0),
        (w.ListTransactions(state_filters=("Ongoing",), producer_id_filters=(pid,)), 1),
        (DescribeProducers(topics=(DescribeProducers.TopicRequest(name=TOPIC, partition_indexes=(0, 1)),)), 0),
    ]
    seeds = [request_frame(body, version, 1)[4:] for body, version in bodies]
    rnd = random.Random(20261126)
    answered = closed = 0
    port = broker.bound_endpoints[0].port
    for _ in range(200):
        data = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 4)):
            op = rnd.random()
            pos = rnd.randrange(8, len(data))          # keep api key, version and correlation id
            if op < 0.5:
                data[pos] = rnd.randrange(256)
            elif op < 0.7:
                del data[pos:pos + rnd.randint(1, 8)]
            elif op < 0.85:
                data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
            else:
                data[pos:pos + 4] = rnd.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"])
        with Conn(port, timeout=5) as c:
            c.send(frame_of(bytes(data)))
            frame = c.recv_frame()
            if frame is None:
                closed += 1
            else:
                assert frame[:4] == data[4:8], "answered with another correlation id"
                answered += 1
    assert answered and closed
    # whatever the mangled requests did (a mangled EndTxn may have ended it, a mangled epoch fenced it), the
    # transaction is still in a state the coordinator can finish
    d = w.describe(broker, "mangled")
    assert d.error_code == E.NONE and d.transaction_state in (
        "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Empty"), d
    if d.transaction_state == "Ongoing":
        assert w.end(broker, "mangled", d.producer_id, d.producer_epoch, commit=False, version=3) == E.NONE
    w.until(lambda: state(broker, "mangled")[1] in ("CompleteCommit", "CompleteAbort", "Empty"))
    assert state(broker, "mangled")[1] in ("CompleteCommit", "CompleteAbort", "Empty")
    assert w.init_ok(broker, "mangled")[0] >= 0
