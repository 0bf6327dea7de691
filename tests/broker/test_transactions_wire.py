"""The transaction coordinator on the wire, on a one-broker cluster: FindCoordinator key_type 1 (creating
``__transaction_state``), InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions, ListTransactions, fencing and the PRODUCER_FENCED down-conversion. The markers are written by
the broker's own WriteTxnMarkers handler and read back from the partitions' logs. One test swaps in a scripted
handler (:func:`scripted_markers`): a leader that refuses to write markers for a while, which a one-broker cluster
cannot otherwise be made to do, keeps a commit in PrepareCommit across a restart of the coordinator."""
from __future__ import annotations

import contextlib
import time

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.protocol import ApiKey, ErrorCode as E, request_class, response_class
from kafkalab.records import decode_batches
from kafkalab.records.control import ControlRecordType, parse_end_txn_marker
from kafkalab.server.apis import base as apis_base

from ._admin_support import wire

FindCoordinator = request_class(ApiKey.FIND_COORDINATOR)
InitProducerId = request_class(ApiKey.INIT_PRODUCER_ID)
AddPartitionsToTxn = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
AddOffsetsToTxn = request_class(ApiKey.ADD_OFFSETS_TO_TXN)
EndTxn = request_class(ApiKey.END_TXN)
DescribeTransactions = request_class(ApiKey.DESCRIBE_TRANSACTIONS)
ListTransactions = request_class(ApiKey.LIST_TRANSACTIONS)
CreateTopics = request_class(ApiKey.CREATE_TOPICS)
WriteTxnMarkersResponse = response_class(ApiKey.WRITE_TXN_MARKERS)

#: what the scripted leaders saw: (pid, epoch, committed, coordinator epoch, ((topic, partition), ...), client id)
MARKERS: list = []
#: the code the scripted leaders answer with (REQUEST_TIMED_OUT: "not written yet, retry")
ANSWER = {"code": E.NONE}


def _scripted_write_txn_markers(broker, request):
    R = WriteTxnMarkersResponse
    out = []
    for m in request.body.markers:
        MARKERS.append((m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch,
                        tuple((t.name, p) for t in m.topics for p in t.partition_indexes), request.context.client_id))
        out.append(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(
            R.WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(
                R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=ANSWER["code"])
                for p in t.partition_indexes))
            for t in m.topics)))
    return R(markers=tuple(out))


@contextlib.contextmanager
def scripted_markers():
    """Replace the broker's WriteTxnMarkers handler with :func:`_scripted_write_txn_markers` for a while."""
    saved = apis_base.REGISTRY.get(int(ApiKey.WRITE_TXN_MARKERS))
    apis_base.handles(ApiKey.WRITE_TXN_MARKERS, versions=(1, 1))(_scripted_write_txn_markers)
    try:
        yield MARKERS
    finally:
        ANSWER["code"] = E.NONE
        if saved is None:
            apis_base.REGISTRY.pop(int(ApiKey.WRITE_TXN_MARKERS), None)
        else:
            apis_base.REGISTRY[int(ApiKey.WRITE_TXN_MARKERS)] = saved


def markers_in_log(cluster, broker_id, topic, partition):
    """The COMMIT/ABORT markers in a replica's log, in offset order: (offset, pid, epoch, committed, coordinator
    epoch)."""
    def read():
        log = cluster.broker(broker_id).replica_manager.get_partition(topic, partition).log
        out = []
        for segment in log.segments:
            raw = segment.log.read(0, segment.log.size_in_bytes())
            for batch in decode_batches(raw, allow_partial=True):
                if batch.is_control_batch:
                    marker = parse_end_txn_marker(batch.records[0].key, batch.records[0].value)
                    out.append((batch.base_offset, batch.producer_id, batch.producer_epoch,
                                marker.control_type == ControlRecordType.COMMIT, marker.coordinator_epoch))
        return out
    return cluster.call(read)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"transaction.state.log.num.partitions": 3,
                                       "offsets.topic.num.partitions": 3}) as c:
        b = c.broker(0)
        wire(b, CreateTopics(topics=(CreateTopics.CreatableTopic(name="t", num_partitions=2, replication_factor=1,
                                                                 assignments=(), configs=()),),
                             timeout_ms=5000, validate_only=False), 5)
        yield c


@pytest.fixture
def broker(cluster):
    return cluster.broker(0)


def until(fn, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def find(broker, key, version=1):
    return wire(broker, FindCoordinator(key=key, key_type=1), version)


def init(broker, txn, version=3, timeout_ms=60000, pid=-1, epoch=-1):
    return wire(broker, InitProducerId(transactional_id=txn, transaction_timeout_ms=timeout_ms, producer_id=pid,
                                       producer_epoch=epoch), version)


def init_ok(broker, txn, **kw):
    r = until(lambda: (lambda r: r if r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS,
                                                           E.NOT_COORDINATOR) else None)(init(broker, txn, **kw)))
    assert r.error_code == E.NONE, r
    return r.producer_id, r.producer_epoch


def add(broker, txn, pid, epoch, parts=(("t", 0),), version=0):
    topics = {}
    for t, p in parts:
        topics.setdefault(t, []).append(p)
    body = AddPartitionsToTxn(v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                              v3_and_below_producer_epoch=epoch, v3_and_below_topics=tuple(
                                  AddPartitionsToTxn.AddPartitionsToTxnTopic(name=t, partitions=tuple(ps))
                                  for t, ps in topics.items()))
    r = wire(broker, body, version)
    return {(t.name, p.partition_index): p.partition_error_code for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def end(broker, txn, pid, epoch, commit=True, version=0):
    return wire(broker, EndTxn(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=commit),
                version).error_code


def describe(broker, txn):
    return wire(broker, DescribeTransactions(transactional_ids=(txn,)), 0).transaction_states[0]


def test_find_coordinator_creates_the_topic_then_names_the_broker(broker):
    first = find(broker, "txn-find")
    assert first.error_code in (E.COORDINATOR_NOT_AVAILABLE, E.NONE)
    r = until(lambda: (lambda r: r if r.error_code == E.NONE else None)(find(broker, "txn-find")))
    assert (r.node_id, r.port) == (0, broker.bound_endpoints[0].port)
    assert broker.metadata_cache.partition_count("__transaction_state") == 3
    v4 = wire(broker, FindCoordinator(key_type=1, coordinator_keys=("a", "")), 4).coordinators
    assert [(c.key, c.error_code) for c in v4] == [("a", E.NONE), ("", E.INVALID_REQUEST)]
    log = broker.replica_manager.get_partition("__transaction_state", 0).log
    assert (log.config["cleanup.policy"], log.config["compression.type"]) == (["compact"], "uncompressed")


def test_commit_on_the_wire_writes_markers_then_complete_commit(cluster, broker):
    until(lambda: find(broker, "txn-1").error_code == E.NONE)
    pid, epoch = init_ok(broker, "txn-1")
    assert epoch == 0
    assert add(broker, "txn-1", pid, epoch, (("t", 0), ("t", 1))) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    off = wire(broker, AddOffsetsToTxn(transactional_id="txn-1", producer_id=pid, producer_epoch=epoch,
                                       group_id="g"), 0)
    assert off.error_code == E.NONE
    d = describe(broker, "txn-1")
    assert d.transaction_state == "Ongoing" and {t.topic for t in d.topics} == {"t", "__consumer_offsets"}
    assert end(broker, "txn-1", pid, epoch) == E.NONE
    d = until(lambda: (lambda d: d if d.transaction_state == "CompleteCommit" else None)(describe(broker, "txn-1")))
    assert d.transaction_state == "CompleteCommit" and d.topics == ()
    for topic, partition in (("t", 0), ("t", 1)):
        mine = [m[1:4] for m in markers_in_log(cluster, 0, topic, partition) if m[1] == pid]
        assert mine == [(pid, epoch, True)], (topic, partition)
    senders = {r.client_id for r in broker.channel.request_log.records if r.api_name == "WriteTxnMarkers"}
    assert senders == {"broker-0-txn-marker-sender"}                      # Kafka's NetworkClient client id
    assert end(broker, "txn-1", pid, epoch) == E.NONE                      # a retry of the same commit
    assert end(broker, "txn-1", pid, epoch, commit=False) == E.INVALID_TXN_STATE


def test_add_partitions_is_all_or_nothing(broker):
    until(lambda: find(broker, "txn-2").error_code == E.NONE)
    pid, epoch = init_ok(broker, "txn-2")
    got = add(broker, "txn-2", pid, epoch, (("t", 0), ("nope", 0), ("__consumer_offsets", 0)))
    assert got == {("t", 0): E.OPERATION_NOT_ATTEMPTED, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                   ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert describe(broker, "txn-2").transaction_state == "Empty"
    assert end(broker, "txn-2", pid, epoch) == E.INVALID_TXN_STATE         # nothing was added


def test_second_producer_fences_the_first(cluster, broker):
    until(lambda: find(broker, "txn-3").error_code == E.NONE)
    pid, epoch = init_ok(broker, "txn-3")
    assert add(broker, "txn-3", pid, epoch) == {("t", 0): E.NONE}
    r = init(broker, "txn-3")
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    pid2, epoch2 = init_ok(broker, "txn-3")
    assert (pid2, epoch2) == (pid, epoch + 2)
    aborts = [m[1:4] for m in markers_in_log(cluster, 0, "t", 0) if m[1] == pid]
    assert aborts == [(pid, epoch + 1, False)]                           # the abort carries the fenced epoch
    assert add(broker, "txn-3", pid, epoch, version=0) == {("t", 0): E.INVALID_PRODUCER_EPOCH}   # v0-1: 47
    assert add(broker, "txn-3", pid, epoch, version=2) == {("t", 0): E.PRODUCER_FENCED}
    assert end(broker, "txn-3", pid, epoch, version=1) == E.INVALID_PRODUCER_EPOCH
    assert init(broker, "txn-3", version=3, pid=pid, epoch=epoch).error_code == E.INVALID_PRODUCER_EPOCH
    assert init(broker, "txn-3", version=4, pid=pid, epoch=epoch).error_code == E.PRODUCER_FENCED


def test_init_producer_id_checks(broker):
    assert init(broker, "txn-4", timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(broker, "txn-4", pid=5, epoch=-1).error_code == E.INVALID_REQUEST
    assert init(broker, "").error_code == E.INVALID_REQUEST
    idem = init(broker, None, version=0)
    assert idem.error_code == E.NONE and idem.producer_epoch == 0


def test_list_and_describe(broker):
    until(lambda: find(broker, "txn-5").error_code == E.NONE)
    pid, epoch = init_ok(broker, "txn-5")
    add(broker, "txn-5", pid, epoch)
    r = wire(broker, ListTransactions(state_filters=("Ongoing", "Weird"), producer_id_filters=()), 1)
    assert r.error_code == E.NONE and tuple(r.unknown_state_filters) == ("Weird",)
    assert ("txn-5", pid, "Ongoing") in {(s.transactional_id, s.producer_id, s.transaction_state)
                                         for s in r.transaction_states}
    assert describe(broker, "never-seen").error_code in (E.TRANSACTIONAL_ID_NOT_FOUND, E.NOT_COORDINATOR)
    end(broker, "txn-5", pid, epoch, commit=False)


def test_advertised_versions(broker):
    from kafkalab.server.apis import enabled_apis
    apis = enabled_apis()
    assert apis[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 3)
    assert apis[ApiKey.ADD_OFFSETS_TO_TXN] == (0, 4)
    assert apis[ApiKey.END_TXN] == (0, 4)
    assert apis[ApiKey.DESCRIBE_TRANSACTIONS] == (0, 0)
    assert apis[ApiKey.LIST_TRANSACTIONS] == (0, 1)


def test_restarted_coordinator_loads_the_log_and_finishes_a_prepared_commit(cluster):
    # Scripted leader: it must refuse the marker until the coordinator has restarted, so that the commit is still
    # PrepareCommit in __transaction_state when the log is loaded again (one broker has no link to cut).
    b = cluster.broker(0)
    until(lambda: find(b, "txn-6").error_code == E.NONE)
    pid, epoch = init_ok(b, "txn-6")
    assert add(b, "txn-6", pid, epoch, (("t", 1),)) == {("t", 1): E.NONE}
    with scripted_markers() as markers:
        markers.clear()
        ANSWER["code"] = E.REQUEST_TIMED_OUT           # the leader cannot write the marker yet
        assert end(b, "txn-6", pid, epoch) == E.NONE
        assert until(lambda: [m for m in markers if m[0] == pid])        # tried (and retried with a backoff)
        assert describe(b, "txn-6").transaction_state == "PrepareCommit"
        cluster.kill(0)
        ANSWER["code"] = E.NONE
        b = cluster.restart(0)
        d = until(lambda: (lambda d: d if d.error_code == E.NONE and d.transaction_state == "CompleteCommit"
                           else None)(describe(b, "txn-6")), timeout=20)
        assert d and (d.producer_id, d.producer_epoch) == (pid, epoch)
        mine = [m for m in markers if m[0] == pid]
        # sent again by the restarted coordinator (even before its metadata cache knew topic t), not dropped
        assert len(mine) >= 2 and mine[-1][2] is True and mine[-1][4] == (("t", 1),)
        assert mine[-1][5] == "broker-0-txn-marker-sender"
    pid2, epoch2 = init_ok(b, "txn-6")                # the id survived the restart
    assert (pid2, epoch2) == (pid, epoch + 1)


def test_partition_count_comes_from_the_existing_topic():
    from kafkalab.server.config import BROKER_CONFIGS
    from kafkalab.server.transaction_wiring import transaction_config

    class Zk:
        def __init__(self, count):
            self.count = count

        def get_topic_partition_count(self, topic):
            assert topic == "__transaction_state"
            return self.count
    cfg = {k: BROKER_CONFIGS.default(k) for k in ("transaction.state.log.num.partitions",
                                                  "transaction.state.log.replication.factor",
                                                  "transaction.state.log.min.isr", "transaction.state.log.segment.bytes",
                                                  "transaction.state.log.load.buffer.size", "transaction.max.timeout.ms",
                                                  "transactional.id.expiration.ms",
                                                  "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                                                  "transaction.remove.expired.transaction.cleanup.interval.ms")}
    assert transaction_config(cfg, Zk(None)).transaction_state_log_num_partitions == 50
    assert transaction_config(cfg, Zk(3)).transaction_state_log_num_partitions == 3
