"""The admin client's transaction operations (describe/list transactions, describe producers, abort): Java's
results and error rules against a scripted broker, then the real thing against brokers with transactions."""
from __future__ import annotations

import time

import pytest

from kafkalab.clients import (AbortTransactionSpec, Admin, AdminError, TopicPartition, TransactionState)
from kafkalab.clients.api_versions import UnsupportedVersionError
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.trace import ScriptedListener

from ._txn_replies import Producer, Txn, TxnReplies, sent
from .conftest import unique

FAST = {"retry.backoff.ms": 1, "retry.backoff.max.ms": 5, "default.api.timeout.ms": 5000}
T0 = TopicPartition("orders", 0)


def scripted(**kw):
    kw.setdefault("topics", {"orders": 2})
    return ScriptedListener(TxnReplies(**kw))


def admin_for(listener, **extra) -> Admin:
    return Admin({"bootstrap.servers": listener.bootstrap_servers, **FAST, **extra})


# -- describe_transactions -------------------------------------------------------------------------------------
def test_describe_transactions_results_as_java_reads_them():
    txns = {"app-1": Txn(1000, "Ongoing", 3, 30_000, 1_700_000_000_000, (("orders", 1), ("orders", 0))),
            "app-2": Txn(1001, "Empty"), "app-3": Txn(1002, "Dead")}
    with scripted(transactions=txns) as lst, admin_for(lst) as admin:
        got = admin.describe_transactions(["app-1", "app-2", "app-3"])
        assert len(sent(lst, ApiKey.DESCRIBE_TRANSACTIONS)) == 1          # one request per coordinator
    one = got["app-1"]
    assert (one.coordinator_id, one.state, one.producer_id, one.producer_epoch, one.transaction_timeout_ms,
            one.transaction_start_time_ms) == (0, TransactionState.ONGOING, 1000, 3, 30_000, 1_700_000_000_000)
    assert one.topic_partitions == {T0, TopicPartition("orders", 1)}
    assert got["app-2"].transaction_start_time_ms is None and got["app-2"].state is TransactionState.EMPTY
    assert got["app-3"].state is TransactionState.UNKNOWN and str(got["app-3"].state) == "Unknown"


def test_describe_transactions_finds_a_moved_coordinator_and_waits_for_a_loading_one():
    errors = {(ApiKey.DESCRIBE_TRANSACTIONS, "app"): [ErrorCode.NOT_COORDINATOR,
                                                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]}
    with scripted(transactions={"app": Txn(7)}, errors=errors) as lst, admin_for(lst) as admin:
        assert admin.describe_transactions(["app"])["app"].producer_id == 7
        finds = sent(lst, ApiKey.FIND_COORDINATOR)
        assert len(sent(lst, ApiKey.DESCRIBE_TRANSACTIONS)) == 3
    assert len(finds) == 3 and all(f.body.key_type == 1 for f in finds)   # FindCoordinator, transaction kind


def test_describe_transactions_fails_each_unknown_id_with_javas_message():
    with scripted(transactions={"app": Txn(7)}) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.describe_transactions(["app", "nope"])
    assert set(e.value.results) == {"app"}
    error = e.value.errors["nope"]
    assert error.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert error.message == "DescribeTransactions request for transactionalId `nope` failed because the ID could " \
                            "not be found"


def test_describe_transactions_authorization_failure_is_final():
    errors = {(ApiKey.DESCRIBE_TRANSACTIONS, "app"): [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]}
    with scripted(transactions={"app": Txn(7)}, errors=errors) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.describe_transactions(["app"])
        assert len(sent(lst, ApiKey.DESCRIBE_TRANSACTIONS)) == 1
    assert e.value.errors["app"].message.endswith("failed due to authorization failure")


# -- list_transactions -----------------------------------------------------------------------------------------
def test_list_transactions_by_broker_with_filters_on_the_wire():
    txns = {"a": Txn(1, "Ongoing"), "b": Txn(2, "CompleteCommit"), "c": Txn(3, "Ongoing")}
    with scripted(transactions=txns) as lst, admin_for(lst) as admin:
        assert admin.list_transactions() == {0: [(t, txns[t].producer_id, TransactionState.parse(txns[t].state))
                                                 for t in ("a", "b", "c")]}
        got = admin.list_transactions(filter_states=[TransactionState.ONGOING], filter_producer_ids=[3, 2],
                                      filter_on_duration=60_000)
        request = sent(lst, ApiKey.LIST_TRANSACTIONS)[-1]
    assert [t.transactional_id for t in got[0]] == ["c"]
    assert (request.api_version, request.body.state_filters, request.body.producer_id_filters,
            request.body.duration_filter) == (1, ("Ongoing",), (3, 2), 60_000)


def test_list_transactions_duration_filter_needs_version_1():
    apis = ((ApiKey.LIST_TRANSACTIONS, 0, 0),)
    with scripted(transactions={"a": Txn(1)}, txn_apis=apis) as lst, admin_for(lst) as admin:
        assert [t.transactional_id for t in admin.list_transactions()[0]] == ["a"]    # v0 without the filter
        with pytest.raises(AdminError) as e:
            admin.list_transactions(filter_on_duration=1000)
        assert len(sent(lst, ApiKey.LIST_TRANSACTIONS)) == 1
    assert isinstance(e.value.errors[0], UnsupportedVersionError)
    assert "Duration filter can be set only when using API version 1 or higher" in e.value.errors[0].message


def test_list_transactions_retries_a_loading_coordinator_and_fails_a_closing_one():
    errors = {(ApiKey.LIST_TRANSACTIONS, None): [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                                 ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]}
    with scripted(transactions={"a": Txn(1)}, errors=errors) as lst, admin_for(lst) as admin:
        assert len(admin.list_transactions()[0]) == 1
        assert len(sent(lst, ApiKey.LIST_TRANSACTIONS)) == 3
    errors = {(ApiKey.LIST_TRANSACTIONS, None): [ErrorCode.COORDINATOR_NOT_AVAILABLE]}
    with scripted(transactions={"a": Txn(1)}, errors=errors) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.list_transactions()
    assert e.value.errors[0].message == ("ListTransactions request sent to broker 0 failed because the coordinator "
                                         "is shutting down")


# -- describe_producers ----------------------------------------------------------------------------------------
def test_describe_producers_reads_absent_values_as_none():
    producers = {("orders", 0): [Producer(1000, 2, 41, 1_700_000_000_123, 5, 17), Producer(1001)]}
    with scripted(producers=producers) as lst, admin_for(lst) as admin:
        got = admin.describe_producers([("orders", 0), ("orders", 1)])
    assert got[TopicPartition("orders", 1)].active_producers == ()
    first, second = got[T0].active_producers
    assert first == (1000, 2, 41, 1_700_000_000_123, 5, 17)
    assert (second.coordinator_epoch, second.current_transaction_start_offset) == (None, None)


def test_describe_producers_follows_a_moved_leader_unless_a_broker_was_named():
    errors = {(ApiKey.DESCRIBE_PRODUCERS, ("orders", 0)): [ErrorCode.NOT_LEADER_OR_FOLLOWER]}
    with scripted(errors=errors, producers={("orders", 0): [Producer(9)]}) as lst, admin_for(lst) as admin:
        assert admin.describe_producers([T0])[T0].active_producers[0].producer_id == 9
        assert len(sent(lst, ApiKey.DESCRIBE_PRODUCERS)) == 2
    with scripted(errors={k: list(v) for k, v in errors.items()}) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.describe_producers([T0], broker_id=0)
        assert len(sent(lst, ApiKey.DESCRIBE_PRODUCERS)) == 1
    assert e.value.errors[T0].message == "Failed to describe active producers for partition orders-0 on brokerId 0"


def test_describe_producers_topic_authorization_failure():
    errors = {(ApiKey.DESCRIBE_PRODUCERS, ("orders", 0)): [ErrorCode.TOPIC_AUTHORIZATION_FAILED]}
    with scripted(errors=errors) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.describe_producers([T0])
    assert e.value.errors[T0].message == ("Failed to describe active producers for partition orders-0 due to "
                                          "authorization failure on topic `orders`")


# -- abort_transaction -----------------------------------------------------------------------------------------
def test_abort_transaction_writes_one_abort_marker_on_the_leader():
    errors = {(ApiKey.WRITE_TXN_MARKERS, ("orders", 0)): [ErrorCode.NOT_LEADER_OR_FOLLOWER]}
    with scripted(errors=errors) as lst, admin_for(lst) as admin:
        admin.abort_transaction(AbortTransactionSpec(("orders", 0), 1000, 4, 2))
        requests = sent(lst, ApiKey.WRITE_TXN_MARKERS)
    assert len(requests) == 2                                   # the leader was looked up again, then it worked
    (marker,) = requests[-1].body.markers
    assert (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.transaction_result) == \
        (1000, 4, 2, False)
    assert [(t.name, t.partition_indexes) for t in marker.topics] == [("orders", (0,))]


def test_abort_transaction_fenced_epoch_is_final():
    errors = {(ApiKey.WRITE_TXN_MARKERS, ("orders", 0)): [ErrorCode.INVALID_PRODUCER_EPOCH]}
    spec = AbortTransactionSpec(T0, 1000, 4, 2)
    with scripted(errors=errors) as lst, admin_for(lst) as admin:
        with pytest.raises(AdminError) as e:
            admin.abort_transaction(spec)
    assert e.value.errors[T0].message == (
        "WriteTxnMarkers request with AbortTransactionSpec(topicPartition=orders-0, producerId=1000, "
        "producerEpoch=4, coordinatorEpoch=2) failed due an invalid producer epoch")


# -- against brokers with transactions -------------------------------------------------------------------------
def _serves_transaction_admin(admin: Admin) -> bool:
    """False when the broker does not have ListTransactions (the transaction admin APIs come together)."""
    try:
        admin.list_transactions()
    except AdminError as e:
        if all(isinstance(x, UnsupportedVersionError) for x in e.errors.values()):
            return False
        raise
    return True


def _open_transaction(broker, admin):
    """A confluent-kafka transactional producer with one record in an open transaction: (producer, topic, id)."""
    ck = pytest.importorskip("confluent_kafka")
    broker.lacks("transaction_admin")
    if not _serves_transaction_admin(admin):
        pytest.skip(f"{broker.name} does not serve DescribeTransactions/ListTransactions/DescribeProducers yet")
    topic, tid = unique("txn-admin"), unique("txn-app")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid,
                            "transaction.timeout.ms": 60_000, "log_level": 0})
    admin.create_topics([(topic, 1, 1)])
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"inside", partition=0)
    assert producer.flush(30) == 0
    return producer, topic, tid


def test_an_open_then_committed_transaction_seen_by_the_coordinator(broker):
    """Open: described Ongoing with its partition and listed; committed: CompleteCommit with no partitions."""
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        producer, topic, tid = _open_transaction(broker, admin)
        open_txn = admin.describe_transactions([tid])[tid]
        assert open_txn.state is TransactionState.ONGOING
        assert open_txn.topic_partitions == {TopicPartition(topic, 0)}
        assert open_txn.transaction_timeout_ms == 60_000 and open_txn.transaction_start_time_ms is not None
        listed = [t for ts in admin.list_transactions(filter_states=["Ongoing"]).values() for t in ts]
        assert (tid, open_txn.producer_id, TransactionState.ONGOING) in listed
        producer.commit_transaction(30)
        # EndTxn is answered once PrepareCommit is durable; the markers, then CompleteCommit, follow (as in Kafka)
        deadline = time.monotonic() + 15
        done = admin.describe_transactions([tid])[tid]
        while done.state is TransactionState.PREPARE_COMMIT and time.monotonic() < deadline:
            time.sleep(0.05)
            done = admin.describe_transactions([tid])[tid]
        assert done.state is TransactionState.COMPLETE_COMMIT and done.topic_partitions == frozenset()


def test_the_leader_shows_the_open_transactions_first_offset(broker):
    broker.lacks("describe_producers_state")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        producer, topic, tid = _open_transaction(broker, admin)
        pid = admin.describe_transactions([tid])[tid].producer_id
        (state,) = admin.describe_producers([(topic, 0)])[TopicPartition(topic, 0)].active_producers
        assert (state.producer_id, state.current_transaction_start_offset) == (pid, 0)
        producer.commit_transaction(30)
        deadline = time.monotonic() + 15      # the COMMIT marker reaches the leader after EndTxn is answered
        (state,) = admin.describe_producers([(topic, 0)])[TopicPartition(topic, 0)].active_producers
        while state.current_transaction_start_offset is not None and time.monotonic() < deadline:
            time.sleep(0.05)
            (state,) = admin.describe_producers([(topic, 0)])[TopicPartition(topic, 0)].active_producers
        assert state.current_transaction_start_offset is None and state.coordinator_epoch is not None
