"""The transactional producer's state table and coordinator requests, driven step by step without sockets.

Each test plays the sender: it takes the next request from the TransactionManager, looks at what would be sent,
and hands in the coordinator's answer as a response body -- including the errors Java's TransactionManager
tells apart (fenced, abortable, CONCURRENT_TRANSACTIONS retries, coordinator moves)."""
import pytest

from kafkalab.clients.consumer import ConsumerGroupMetadata, OffsetAndMetadata
from kafkalab.clients.producer.accumulator import RecordAccumulator, TopicPartition, estimate_size
from kafkalab.clients.producer.future import FutureRecordMetadata
from kafkalab.clients.producer.transaction_manager import TransactionManager
from kafkalab.clients.producer.transaction_state import (VALID_PREVIOUS_STATES, CoordinatorType, ProducerFencedError,
                                                         State, TransactionError, TransactionStateError)
from kafkalab.clients.producer.transactional_requests import (ADD_PARTITIONS_RETRY_BACKOFF_MS,
                                                              AddOffsetsToTxnHandler, AddPartitionsToTxnHandler,
                                                              EndTxnHandler, FindCoordinatorHandler,
                                                              InitProducerIdHandler, TxnOffsetCommitHandler)
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, response_class
from kafkalab.records import SimpleRecord

E = ErrorCode
TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)
FC, IPI = response_class(ApiKey.FIND_COORDINATOR), response_class(ApiKey.INIT_PRODUCER_ID)
APT, AOT = response_class(ApiKey.ADD_PARTITIONS_TO_TXN), response_class(ApiKey.ADD_OFFSETS_TO_TXN)
TOC, ET = response_class(ApiKey.TXN_OFFSET_COMMIT), response_class(ApiKey.END_TXN)
GROUP = ConsumerGroupMetadata("g", 3, "member-1", None)


# -- the sender's part, played by hand -----------------------------------------------------------------------------
def take(tm, incomplete=False):
    """The next request the sender would send, as Java's sender does: look the coordinator up first if unknown."""
    handler = tm.next_request(incomplete)
    if handler is not None and handler.coordinator_type is not None and tm.coordinator(handler.coordinator_type) is None:
        tm.lookup_coordinator(handler.coordinator_type, handler.coordinator_key)
        tm.retry(handler)
        handler = tm.next_request(incomplete)
    return handler


def find_coordinator_answer(node=1, code=E.NONE):
    return FC(error_code=code, node_id=node, host="h", port=9092)


def add_partitions_answer(codes):
    by_topic = {}
    for tp, code in codes.items():
        by_topic.setdefault(tp.topic, []).append(APT.AddPartitionsToTxnPartitionResult(
            partition_index=tp.partition, partition_error_code=code))
    return APT(results_by_topic_v3_and_below=tuple(APT.AddPartitionsToTxnTopicResult(name=t, results_by_partition=tuple(ps))
                                                   for t, ps in by_topic.items()))


def offsets_answer(codes):
    by_topic = {}
    for tp, code in codes.items():
        by_topic.setdefault(tp.topic, []).append(TOC.TxnOffsetCommitResponsePartition(partition_index=tp.partition,
                                                                                      error_code=code))
    return TOC(topics=tuple(TOC.TxnOffsetCommitResponseTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def initialized(pid=7, epoch=0, bump_support=True) -> TransactionManager:
    tm = TransactionManager("tx", 60_000, 100)
    result = tm.initialize_transactions()
    h = take(tm)
    assert isinstance(h, FindCoordinatorHandler)
    h.handle_response(find_coordinator_answer())
    tm.coordinator_ready(4 if bump_support else 2)
    h = take(tm)
    assert isinstance(h, InitProducerIdHandler)
    h.handle_response(IPI(error_code=0, producer_id=pid, producer_epoch=epoch))
    assert result.successful and tm.state is State.READY
    result.acked = True
    return tm


def in_transaction(*tps, **kw) -> TransactionManager:
    tm = initialized(**kw)
    tm.begin_transaction()
    for tp in tps:
        tm.maybe_add_partition(tp)
    if tps:
        h = take(tm)
        assert isinstance(h, AddPartitionsToTxnHandler)
        h.handle_response(add_partitions_answer({tp: E.NONE for tp in tps}))
    return tm


def a_batch(tm, tp=TP0):
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, idempotent=True)
    batch, _ = acc.append(tp, SimpleRecord(None, b"v", (), 1), estimate_size(None, b"v", ()), 0)
    tm.assign(batch)
    return batch


# -- the table ---------------------------------------------------------------------------------------------------
def test_the_transition_table_is_javas():
    allowed = {target: (None if sources is None else {s.name for s in sources})
               for target, sources in VALID_PREVIOUS_STATES.items()}
    assert allowed == {
        State.UNINITIALIZED: {"READY", "ABORTABLE_ERROR"},
        State.INITIALIZING: {"UNINITIALIZED", "ABORTING_TRANSACTION"},
        State.READY: {"INITIALIZING", "COMMITTING_TRANSACTION", "ABORTING_TRANSACTION"},
        State.IN_TRANSACTION: {"READY"},
        State.COMMITTING_TRANSACTION: {"IN_TRANSACTION"},
        State.ABORTING_TRANSACTION: {"IN_TRANSACTION", "ABORTABLE_ERROR"},
        State.ABORTABLE_ERROR: {"IN_TRANSACTION", "COMMITTING_TRANSACTION", "ABORTABLE_ERROR", "INITIALIZING"},
        State.FATAL_ERROR: None,
    }
    assert State.IN_TRANSACTION.can_transition(State.FATAL_ERROR)


def test_calls_out_of_order_are_refused_without_changing_the_state():
    tm = TransactionManager("tx")
    with pytest.raises(TransactionStateError, match="before completing a call to initTransactions"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(TransactionStateError, match="Invalid transition attempted from state UNINITIALIZED to "
                                                    "state IN_TRANSACTION"):
        tm.begin_transaction()
    tm = initialized()
    with pytest.raises(TransactionStateError, match="from state READY to state COMMITTING_TRANSACTION"):
        tm.begin_commit()
    with pytest.raises(TransactionStateError, match="Cannot call send in state READY"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(TransactionStateError, match="while in state  READY"):
        tm.maybe_add_partition(TP0)
    with pytest.raises(TransactionStateError, match="Cannot send offsets if a transaction is not in progress"):
        tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(5)}, GROUP)
    assert tm.state is State.READY and not tm.has_pending_requests()
    with pytest.raises(TransactionStateError, match="non-transactional producer"):
        TransactionManager(None).initialize_transactions()


# -- InitProducerId and the coordinator --------------------------------------------------------------------------
def test_init_finds_the_transaction_coordinator_then_gets_the_producer_id():
    tm = TransactionManager("tx", 45_000, 100)
    result = tm.initialize_transactions()
    assert tm.state is State.INITIALIZING
    h = take(tm)
    assert isinstance(h, FindCoordinatorHandler)
    assert h.build(3).key_type == 1 and h.build(3).key == "tx"
    assert h.build(4).coordinator_keys == ("tx",) and h.build(4).key_type == 1
    h.handle_response(FC(coordinators=(FC.Coordinator(key="tx", node_id=2, host="b2", port=9093, error_code=0),)))
    assert tm.coordinator(CoordinatorType.TRANSACTION) == (2, "b2", 9093)
    h = take(tm)
    body = h.build(4)
    assert (body.transactional_id, body.transaction_timeout_ms, body.producer_id, body.producer_epoch) == \
        ("tx", 45_000, -1, -1)
    assert not result.completed
    h.handle_response(IPI(error_code=0, producer_id=1000, producer_epoch=5))
    assert result.successful and tm.state is State.READY
    assert (tm.producer_id, tm.producer_epoch) == (1000, 5)


@pytest.mark.parametrize("code", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_looked_up_again_before_the_retry(code):
    tm = TransactionManager("tx")
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_answer(node=1))
    take(tm).handle_response(IPI(error_code=code, producer_id=-1, producer_epoch=-1))
    assert tm.coordinator(CoordinatorType.TRANSACTION) is None
    h = take(tm)
    assert isinstance(h, FindCoordinatorHandler)
    h.handle_response(find_coordinator_answer(node=2))
    h = take(tm)
    assert isinstance(h, InitProducerIdHandler) and h.is_retry
    h.handle_response(IPI(error_code=0, producer_id=9, producer_epoch=0))
    assert tm.state is State.READY and tm.coordinator(CoordinatorType.TRANSACTION).node_id == 2


def test_find_coordinator_retries_while_the_coordinator_is_not_available():
    tm = TransactionManager("tx")
    tm.initialize_transactions()
    h = take(tm)
    h.handle_response(find_coordinator_answer(code=E.COORDINATOR_NOT_AVAILABLE))
    again = take(tm)
    assert again is h and h.is_retry and tm.state is State.INITIALIZING


@pytest.mark.parametrize("code", [E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS])
def test_init_retries_concurrent_transactions_at_the_same_coordinator(code):
    tm = TransactionManager("tx")
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_answer())
    h = take(tm)
    h.handle_response(IPI(error_code=code, producer_id=-1, producer_epoch=-1))
    assert take(tm) is h and tm.coordinator(CoordinatorType.TRANSACTION) is not None
    h.handle_response(IPI(error_code=0, producer_id=3, producer_epoch=1))
    assert tm.state is State.READY


@pytest.mark.parametrize("code", [E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH])
def test_a_fenced_init_is_fatal(code):
    tm = TransactionManager("tx")
    result = tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_answer())
    take(tm).handle_response(IPI(error_code=code, producer_id=-1, producer_epoch=-1))
    assert tm.state is State.FATAL_ERROR and isinstance(result.error, ProducerFencedError)
    result.acked = True                                    # the caller saw the error
    with pytest.raises(ProducerFencedError, match="has been fenced by another producer"):
        tm.begin_transaction()


def test_a_timed_out_call_can_only_be_retried_as_the_same_call():
    tm = TransactionManager("tx")
    first = tm.initialize_transactions()
    assert tm.initialize_transactions() is first           # the same pending result, no second request
    assert len(tm.pending_requests()) == 1
    tm.state = State.IN_TRANSACTION                          # (pretend) -- another operation is refused
    with pytest.raises(TransactionStateError, match="previous call to `initTransactions` timed out and must be "
                                                    "retried"):
        tm.begin_commit()


# -- AddPartitionsToTxn ------------------------------------------------------------------------------------------
def test_a_partition_is_added_before_its_first_batch_may_be_sent():
    tm = initialized()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(TP1)
    tm.maybe_add_partition(TP0)
    assert not tm.is_send_to_partition_allowed(TP0)
    h = take(tm)
    body = h.build(3)
    assert body.v3_and_below_transactional_id == "tx" and body.v3_and_below_producer_id == 7
    assert [(t.name, t.partitions) for t in body.v3_and_below_topics] == [("out", (0, 1))]
    assert not tm.is_send_to_partition_allowed(TP0)        # still pending
    tm.maybe_add_partition(TP0)
    assert tm.next_request(False) is None                  # a pending partition is not added twice
    h.handle_response(add_partitions_answer({TP0: E.NONE, TP1: E.NONE}))
    assert tm.is_send_to_partition_allowed(TP0) and tm.is_send_to_partition_allowed(TP1)
    assert tm.transaction_started and h.result.successful


def test_concurrent_transactions_on_the_first_add_retries_after_20_ms():
    tm = initialized()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    h = take(tm)
    assert h.retry_backoff_ms() == 100
    h.handle_response(add_partitions_answer({TP0: E.CONCURRENT_TRANSACTIONS}))
    assert take(tm) is h and h.retry_backoff_ms() == ADD_PARTITIONS_RETRY_BACKOFF_MS == 20
    h.handle_response(add_partitions_answer({TP0: E.NONE}))
    tm.maybe_add_partition(TP1)                            # a later add of the same transaction: normal backoff
    h2 = take(tm)
    h2.handle_response(add_partitions_answer({TP1: E.CONCURRENT_TRANSACTIONS}))
    assert take(tm) is h2 and h2.retry_backoff_ms() == 100


def test_add_partitions_coordinator_moved_then_retried():
    tm = in_transaction()
    tm.maybe_add_partition(TP0)
    h = take(tm)
    h.handle_response(add_partitions_answer({TP0: E.NOT_COORDINATOR}))
    assert isinstance(take(tm), FindCoordinatorHandler)


def test_unauthorized_topic_makes_the_transaction_abortable_and_abort_recovers():
    tm = initialized()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(TopicPartition("secret", 0))
    h = take(tm)
    h.handle_response(add_partitions_answer({TP0: E.OPERATION_NOT_ATTEMPTED,
                                             TopicPartition("secret", 0): E.TOPIC_AUTHORIZATION_FAILED}))
    assert tm.state is State.ABORTABLE_ERROR
    assert isinstance(h.result.error, KafkaProtocolError) and "secret" in str(h.result.error)
    assert not tm.is_send_to_partition_allowed(TP0) and not tm.has_partitions_to_add()
    with pytest.raises(TransactionError, match="in an error state"):
        tm.begin_commit()
    with pytest.raises(TransactionError, match="previous transactional or idempotent request has failed"):
        tm.fail_if_not_ready_for_send()
    result = tm.begin_abort()
    assert take(tm) is None and result.successful            # nothing was added: no EndTxn at all
    assert tm.state is State.READY


@pytest.mark.parametrize("code", [E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH])
def test_fenced_on_add_partitions_is_fatal(code):
    tm = initialized()
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    take(tm).handle_response(add_partitions_answer({TP0: code}))
    assert tm.has_fatal_error() and isinstance(tm.last_error, ProducerFencedError)
    with pytest.raises(ProducerFencedError):
        tm.begin_abort()
    assert not tm.is_send_to_partition_allowed(TP0)


@pytest.mark.parametrize("bump_support, state", [(True, State.ABORTABLE_ERROR), (False, State.FATAL_ERROR)])
def test_unknown_producer_id_is_abortable_with_a_bump_only_if_the_coordinator_can_bump(bump_support, state):
    tm = initialized(bump_support=bump_support)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    take(tm).handle_response(add_partitions_answer({TP0: E.UNKNOWN_PRODUCER_ID}))
    assert tm.state is state and tm.epoch_bump_required == bump_support


# -- EndTxn ------------------------------------------------------------------------------------------------------
def test_commit_waits_for_the_batches_then_sends_end_txn():
    tm = in_transaction(TP0)
    result = tm.begin_commit()
    assert tm.state is State.COMMITTING_TRANSACTION and tm.is_completing()
    assert tm.next_request(has_incomplete_batches=True) is None
    h = take(tm)
    assert isinstance(h, EndTxnHandler)
    body = h.build(3)
    assert (body.transactional_id, body.producer_id, body.producer_epoch, body.committed) == ("tx", 7, 0, True)
    h.handle_response(ET(error_code=0))
    assert result.successful and tm.state is State.READY
    assert not tm.partitions_in_transaction and not tm.transaction_started


def test_a_transaction_without_partitions_or_offsets_ends_without_end_txn():
    tm = initialized()
    tm.begin_transaction()
    result = tm.begin_commit()
    assert tm.next_request(False) is None
    assert result.successful and tm.state is State.READY


@pytest.mark.parametrize("code", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_end_txn_follows_the_coordinator(code):
    tm = in_transaction(TP0)
    result = tm.begin_abort()
    h = take(tm)
    h.handle_response(ET(error_code=code))
    f = take(tm)
    assert isinstance(f, FindCoordinatorHandler)
    f.handle_response(find_coordinator_answer(node=3))
    h2 = take(tm)
    assert h2 is h and not h2.build(3).committed
    h2.handle_response(ET(error_code=0))
    assert result.successful and tm.state is State.READY


def test_end_txn_concurrent_transactions_is_retried():
    tm = in_transaction(TP0)
    tm.begin_commit()
    h = take(tm)
    h.handle_response(ET(error_code=E.CONCURRENT_TRANSACTIONS))
    assert take(tm) is h and tm.state is State.COMMITTING_TRANSACTION


@pytest.mark.parametrize("code, error_type", [(E.PRODUCER_FENCED, ProducerFencedError),
                                              (E.INVALID_PRODUCER_EPOCH, ProducerFencedError),
                                              (E.INVALID_TXN_STATE, KafkaProtocolError),
                                              (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaProtocolError)])
def test_fatal_end_txn_answers(code, error_type):
    tm = in_transaction(TP0)
    result = tm.begin_commit()
    take(tm).handle_response(ET(error_code=code))
    assert tm.state is State.FATAL_ERROR and isinstance(result.error, error_type)
    result.acked = True
    with pytest.raises(ProducerFencedError if error_type is ProducerFencedError else TransactionError,
                       match="fenced by another producer" if error_type is ProducerFencedError else "error state"):
        tm.begin_transaction()


def test_abortable_end_txn_answer_then_abort():
    tm = in_transaction(TP0)
    result = tm.begin_commit()
    take(tm).handle_response(ET(error_code=E.TRANSACTION_ABORTABLE))
    assert tm.state is State.ABORTABLE_ERROR and result.error.error_code == E.TRANSACTION_ABORTABLE
    result.acked = True
    tm.begin_abort()
    h = take(tm)
    assert isinstance(h, EndTxnHandler) and not h.committed


# -- failed batches and the KIP-360 epoch bump -------------------------------------------------------------------
def test_a_failed_batch_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch():
    tm = in_transaction(TP0)
    batch = a_batch(tm)
    assert batch.transactional and batch.base_sequence == 0
    tm.handle_failed(batch, E.INVALID_RECORD, KafkaProtocolError(E.INVALID_RECORD))
    assert tm.state is State.ABORTABLE_ERROR and tm.epoch_bump_required
    result = tm.begin_abort()
    end = take(tm)
    assert isinstance(end, EndTxnHandler) and not end.committed
    end.handle_response(ET(error_code=0))
    assert tm.state is State.INITIALIZING and not result.completed
    bump = take(tm)
    assert isinstance(bump, InitProducerIdHandler) and bump.is_epoch_bump and bump.version_range == (3, None)
    assert (bump.build(3).producer_id, bump.build(3).producer_epoch) == (7, 0)
    bump.handle_response(IPI(error_code=0, producer_id=7, producer_epoch=1))
    assert result.successful and tm.state is State.READY and (tm.producer_id, tm.producer_epoch) == (7, 1)
    assert tm.sequence_for(TP0) == 0


def test_without_bump_support_the_abort_sends_no_init_producer_id():
    tm = in_transaction(TP0, bump_support=False)
    tm.handle_failed(a_batch(tm), E.INVALID_RECORD, KafkaProtocolError(E.INVALID_RECORD))
    assert tm.state is State.ABORTABLE_ERROR and not tm.epoch_bump_required
    result = tm.begin_abort()
    take(tm).handle_response(ET(error_code=0))
    assert result.successful and tm.state is State.READY and tm.next_request(False) is None


@pytest.mark.parametrize("code", [E.PRODUCER_FENCED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                  E.CLUSTER_AUTHORIZATION_FAILED])
def test_a_fenced_or_unauthorized_batch_is_fatal(code):
    tm = in_transaction(TP0)
    tm.handle_failed(a_batch(tm), code, KafkaProtocolError(code))
    assert tm.state is State.FATAL_ERROR and tm.fatal_error is not None


def test_requests_queued_during_an_abortable_error_fail_except_find_coordinator():
    tm = in_transaction(TP0)
    tm.maybe_add_partition(TP1)
    tm.handle_failed(a_batch(tm), E.INVALID_RECORD, KafkaProtocolError(E.INVALID_RECORD))
    assert tm.next_request(False) is None                  # the AddPartitions for TP1 failed with the last error
    tm.lookup_coordinator(CoordinatorType.TRANSACTION, "tx")
    assert isinstance(tm.next_request(False), FindCoordinatorHandler)


# -- offsets in the transaction ----------------------------------------------------------------------------------
def test_send_offsets_adds_the_group_then_commits_the_offsets_at_the_group_coordinator():
    tm = in_transaction()
    offsets = {TP0: OffsetAndMetadata(10, "m"), TP1: OffsetAndMetadata(20, "", 4)}
    result = tm.send_offsets_to_transaction(offsets, GROUP)
    h = take(tm)
    assert isinstance(h, AddOffsetsToTxnHandler)
    assert (h.build(0).group_id, h.build(0).producer_id) == ("g", 7)
    h.handle_response(AOT(error_code=0))
    assert not result.completed and tm.transaction_started
    commit = tm.next_request(False)
    assert isinstance(commit, TxnOffsetCommitHandler) and commit.coordinator_type is CoordinatorType.GROUP
    assert tm.coordinator(CoordinatorType.GROUP) is None
    tm.lookup_coordinator(CoordinatorType.GROUP, commit.coordinator_key)
    tm.retry(commit)
    find = tm.next_request(False)
    assert find.build(3).key_type == 0 and find.build(3).key == "g"
    find.handle_response(find_coordinator_answer(node=2))
    commit = take(tm)
    body = commit.build(3)
    assert (body.group_id, body.generation_id, body.member_id, body.producer_epoch) == ("g", 3, "member-1", 0)
    parts = {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
             for t in body.topics for p in t.partitions}
    assert parts == {("out", 0): (10, -1, "m"), ("out", 1): (20, 4, "")}
    commit.handle_response(offsets_answer({TP0: E.NONE, TP1: E.COORDINATOR_LOAD_IN_PROGRESS}))
    again = take(tm)
    assert again is commit and list(again.pending) == [TP1]          # only the one that failed goes again
    again.handle_response(offsets_answer({TP1: E.NOT_COORDINATOR}))
    assert tm.coordinator(CoordinatorType.GROUP) is None and isinstance(take(tm), FindCoordinatorHandler)
    tm.set_coordinator(CoordinatorType.GROUP, 2, "h", 1)
    take(tm).handle_response(offsets_answer({TP1: E.NONE}))
    assert result.successful
    tm.begin_commit()
    assert isinstance(take(tm), EndTxnHandler)              # offsets alone make the transaction worth ending


@pytest.mark.parametrize("code, state", [(E.ILLEGAL_GENERATION, State.ABORTABLE_ERROR),
                                         (E.UNKNOWN_MEMBER_ID, State.ABORTABLE_ERROR),
                                         (E.FENCED_INSTANCE_ID, State.ABORTABLE_ERROR),
                                         (E.GROUP_AUTHORIZATION_FAILED, State.ABORTABLE_ERROR),
                                         (E.PRODUCER_FENCED, State.FATAL_ERROR),
                                         (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, State.FATAL_ERROR),
                                         (E.INVALID_PRODUCER_ID_MAPPING, State.FATAL_ERROR)])
def test_txn_offset_commit_errors(code, state):
    tm = in_transaction()
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(1)}, GROUP)
    take(tm).handle_response(AOT(error_code=0))
    tm.set_coordinator(CoordinatorType.GROUP, 1, "h", 1)
    take(tm).handle_response(offsets_answer({TP0: code}))
    assert tm.state is state and result.error is not None
    if code == E.ILLEGAL_GENERATION:
        assert "consumer group metadata mismatch" in str(result.error)


@pytest.mark.parametrize("code, state", [(E.GROUP_AUTHORIZATION_FAILED, State.ABORTABLE_ERROR),
                                         (E.PRODUCER_FENCED, State.FATAL_ERROR),
                                         (E.INVALID_TXN_STATE, State.FATAL_ERROR)])
def test_add_offsets_errors(code, state):
    tm = in_transaction()
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(1)}, GROUP)
    take(tm).handle_response(AOT(error_code=code))
    assert tm.state is state and result.error is not None and not tm.has_pending_requests()


def test_add_offsets_concurrent_transactions_is_retried():
    tm = in_transaction()
    tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(1)}, GROUP)
    h = take(tm)
    h.handle_response(AOT(error_code=E.CONCURRENT_TRANSACTIONS))
    assert take(tm) is h


def test_close_fails_whatever_is_pending():
    tm = in_transaction(TP0)
    result = tm.begin_commit()
    tm.close()
    assert isinstance(result.error, TransactionError) and not tm.has_pending_requests()


def test_an_abort_drops_only_the_batches_never_sent_and_a_completing_transaction_sends_at_once():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=60_000, idempotent=True)
    retried, _ = acc.append(TP0, SimpleRecord(None, b"r", (), 1), 20, 0, FutureRecordMetadata())
    retried.set_producer_state(7, 0, 0, transactional=True)    # was sent once: it keeps its sequence
    acc.batches[TP0][0].closed = True
    dropped = FutureRecordMetadata()
    fresh, _ = acc.append(TP0, SimpleRecord(None, b"f", (), 1), 20, 0, dropped)
    assert fresh is not retried
    assert acc.ready(lambda tp: 1, now_ms=1)[0] == {1}        # two batches queued: the first one is sendable
    acc.abort_undrained(TransactionError("aborted"))
    assert list(acc.batches[TP0]) == [retried] and fresh.done and not retried.done
    assert isinstance(dropped.exception(0), TransactionError)
    lone, _ = acc.append(TP1, SimpleRecord(None, b"x", (), 1), 20, 0)
    assert acc.ready(lambda tp: 2 if tp == TP1 else None, now_ms=1)[0] == set()   # lingering
    acc.transaction_completing = True
    assert acc.ready(lambda tp: 2 if tp == TP1 else None, now_ms=1)[0] == {2}
