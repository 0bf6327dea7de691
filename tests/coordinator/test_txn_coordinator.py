"""The transaction coordinator driven step by step (MockTime, MockScheduler, an in-memory __transaction_state,
markers through the sans-IO channel manager answered by hand). Ported from Kafka's TransactionCoordinatorTest."""
import pytest

from kafkalab.common.scheduler import MockScheduler
from kafkalab.common.time import MockTime
from kafkalab.coordinator.transaction import (MemoryTransactionLog, TransactionConfig, TransactionCoordinator,
                                              TransactionMarkerChannelManager, TransactionState)
from kafkalab.coordinator.transaction.marker_channel import LEADER_NOT_ALIVE, NO_LEADER
from kafkalab.coordinator.transaction.transaction_log import read_txn_record_key, read_txn_record_value
from kafkalab.protocol import ApiKey, ErrorCode as E, response_class

S = TransactionState
T = "txn-a"
TIMEOUT = 60_000
WriteTxnMarkersResponse = response_class(ApiKey.WRITE_TXN_MARKERS)


class Env:
    def __init__(self, hold=False, **cfg):
        self.time = MockTime()
        self.scheduler = MockScheduler(self.time)
        self.log = MemoryTransactionLog(hold=hold)
        self.config = TransactionConfig(transaction_state_log_num_partitions=4, **cfg)
        self.next_pid = 1000
        self.leaders = {}           # (topic, partition) -> broker id; default broker 1
        self.woken = []
        self.tc = TransactionCoordinator(self.config, self.time, self.scheduler, self.log, self._pid)
        self.markers = TransactionMarkerChannelManager(self.tc.state_manager,
                                                       lambda t, p: self.leaders.get((t, p), 1), self.woken.append)
        self.tc.markers = self.markers
        self.tc.startup()
        for p in range(4):
            self.tc.on_election(p, 5)

    def _pid(self):
        self.next_pid += 1
        return self.next_pid

    def init(self, txn=T, timeout=TIMEOUT, expected=None):
        out = []
        self.tc.handle_init_producer_id(txn, timeout, expected, out.append)
        return out[0] if out else None

    def add(self, pid, epoch, parts=(("a", 0),), txn=T):
        out = []
        self.tc.handle_add_partitions_to_transaction(txn, pid, epoch, set(parts), out.append)
        return out[0] if out else None

    def end(self, pid, epoch, commit=True, txn=T):
        out = []
        self.tc.handle_end_transaction(txn, pid, epoch, commit, out.append)
        return out[0] if out else None

    def meta(self, txn=T):
        return self.tc.state_manager.get_transaction_state(txn).transaction_metadata

    def answer_markers(self, broker=1, code=E.NONE):
        """Answer everything queued for ``broker`` with ``code`` for each partition."""
        items = self.markers.drain(broker)
        R = WriteTxnMarkersResponse
        markers = tuple(R.WritableTxnMarkerResult(producer_id=i.entry.producer_id, topics=tuple(
            R.WritableTxnMarkerTopicResult(name=t, partitions=(R.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=code),)) for t, p in i.entry.partitions)) for i in items)
        self.markers.on_response(broker, items, R(markers=markers))
        return items

    def states_written(self, txn=T):
        p = self.tc.partition_for(txn)
        return [S.from_id(read_txn_record_value(r.value).transaction_status) if r.value else None
                for r in self.log.records(p) if read_txn_record_key(r.key) == txn]


def begin(env, parts=(("a", 0),)):
    r = env.init()
    assert r.error == E.NONE
    assert env.add(r.producer_id, r.producer_epoch, parts) == E.NONE
    return r.producer_id, r.producer_epoch


# ---------------------------------------------------------------------------------------------- InitProducerId
def test_init_pid_with_epoch_zero_for_new_transactional_id():
    env = Env()
    r = env.init()
    assert (r.producer_id, r.producer_epoch, r.error) == (1001, 0, E.NONE)
    assert env.states_written() == [S.EMPTY]
    assert env.init().producer_epoch == 1           # again: epoch + 1, same id


def test_null_id_is_idempotent_only_and_empty_id_is_invalid():
    env = Env()
    out = []
    env.tc.handle_init_producer_id(None, 0, None, out.append)
    assert (out[0].producer_epoch, out[0].error) == (0, E.NONE)
    assert env.init(txn="").error == E.INVALID_REQUEST
    assert env.log.batches == {}


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_timeout_out_of_range_is_invalid_transaction_timeout(timeout):
    assert Env().init(timeout=timeout).error == E.INVALID_TRANSACTION_TIMEOUT


def test_not_coordinator_and_loading():
    env = Env()
    env.tc.on_resignation(env.tc.partition_for(T))
    assert env.init().error == E.NOT_COORDINATOR
    env.tc.state_manager.add_loading_partition(env.tc.partition_for(T), 6)
    assert env.init().error == E.COORDINATOR_LOAD_IN_PROGRESS


def test_init_on_ongoing_fences_aborts_and_answers_concurrent_transactions():
    env = Env()
    pid, epoch = begin(env)
    r = env.init()
    assert (r.producer_id, r.producer_epoch, r.error) == (-1, -1, E.CONCURRENT_TRANSACTIONS)
    m = env.meta()
    assert (m.state, m.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    items = env.answer_markers()
    assert [(i.entry.producer_epoch, i.entry.committed, i.entry.coordinator_epoch) for i in items] == [(1, False, 5)]
    assert env.meta().state == S.COMPLETE_ABORT
    r = env.init()                                  # the retry bumps again: old + 2
    assert (r.error, r.producer_epoch) == (E.NONE, epoch + 2)
    assert env.states_written() == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.COMPLETE_ABORT, S.EMPTY]
    assert env.add(pid, epoch) == E.PRODUCER_FENCED  # the zombie


def test_failed_fence_append_does_not_bump_twice():
    env = Env()
    pid, epoch = begin(env)
    env.log.fail_with = E.NOT_ENOUGH_REPLICAS
    assert env.init().error == E.COORDINATOR_NOT_AVAILABLE
    m = env.meta()
    assert (m.state, m.pending_state, m.has_failed_epoch_fence, m.producer_epoch) == (S.ONGOING, None, True, 1)
    env.log.fail_with = None
    assert env.init().error == E.CONCURRENT_TRANSACTIONS
    assert env.meta().producer_epoch == 1           # bumped once in all


def test_init_while_prepare_is_concurrent_transactions():
    env = Env()
    pid, epoch = begin(env)
    assert env.end(pid, epoch) == E.NONE
    assert env.meta().state == S.PREPARE_COMMIT
    assert env.init().error == E.CONCURRENT_TRANSACTIONS
    assert env.add(pid, epoch) == E.CONCURRENT_TRANSACTIONS
    assert env.end(pid, epoch) == E.CONCURRENT_TRANSACTIONS
    env.answer_markers()
    assert env.meta().state == S.COMPLETE_COMMIT


def test_new_producer_id_when_epoch_exhausted():
    env = Env()
    env.init()
    m = env.meta()
    m.producer_epoch = 32766
    r = env.init()
    assert (r.producer_id, r.producer_epoch) == (1002, 0)
    m = env.meta()
    assert (m.last_producer_id, m.last_producer_epoch) == (1001, -1)


def test_kip360_current_epoch_provided_bumps_and_retry_returns_same():
    env = Env()
    r = env.init()
    r2 = env.init(expected=(r.producer_id, r.producer_epoch))
    assert (r2.producer_id, r2.producer_epoch) == (r.producer_id, 1)
    r3 = env.init(expected=(r.producer_id, r.producer_epoch))   # retry of that successful bump
    assert (r3.error, r3.producer_epoch) == (E.NONE, 1)


def test_kip360_stale_epoch_or_other_pid_is_fenced():
    env = Env()
    r = env.init()
    env.init()
    env.init()
    assert env.init(expected=(r.producer_id, 0)).error == E.PRODUCER_FENCED
    assert env.init(expected=(999, 0)).error == E.PRODUCER_FENCED


def test_kip360_retry_after_producer_id_rotation():
    env = Env()
    r = env.init()
    env.meta().producer_epoch = 32766
    rotated = env.init(expected=(r.producer_id, 32766))
    assert (rotated.producer_id, rotated.producer_epoch) == (1002, 0)
    retry = env.init(expected=(r.producer_id, 32766))        # lost answer: the old pid with an exhausted epoch
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, 1002, 0)


def test_kip360_after_expiry_gets_the_fresh_id():
    env = Env()
    assert env.init(expected=(555, 3)).error == E.NONE


# ---------------------------------------------------------------------------------------------- AddPartitions
def test_add_partitions_errors():
    env = Env()
    assert env.add(1, 0) == E.INVALID_PRODUCER_ID_MAPPING          # no state
    r = env.init()
    assert env.add(r.producer_id + 1, 0) == E.INVALID_PRODUCER_ID_MAPPING
    assert env.add(r.producer_id, 7) == E.PRODUCER_FENCED
    assert env.add(r.producer_id, 0, txn="") == E.INVALID_REQUEST


def test_add_partitions_already_present_writes_nothing():
    env = Env()
    pid, epoch = begin(env)
    n = len(env.states_written())
    assert env.add(pid, epoch) == E.NONE
    assert len(env.states_written()) == n
    assert env.add(pid, epoch, (("a", 0), ("b", 1))) == E.NONE
    assert env.meta().topic_partitions == {("a", 0), ("b", 1)}


def test_pending_state_while_append_in_flight_and_reset_on_failure():
    env = Env(hold=True)
    out = []
    env.tc.handle_init_producer_id(T, TIMEOUT, None, out.append)
    assert out == [] and env.meta().pending_state == S.EMPTY
    assert env.init().error == E.CONCURRENT_TRANSACTIONS
    env.log.complete(E.NOT_LEADER_OR_FOLLOWER)
    assert out[0].error == E.NOT_COORDINATOR and env.meta().pending_state is None
    env.tc.handle_init_producer_id(T, TIMEOUT, None, out.append)
    env.log.complete()
    assert out[1].error == E.NONE and env.meta().producer_epoch == 0


@pytest.mark.parametrize("code,expected", [(E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
                                           (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
                                           (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
                                           (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
                                           (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
                                           (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR)])
def test_append_errors_are_translated(code, expected):
    env = Env()
    env.log.fail_with = code
    assert env.init().error == expected


def test_coordinator_epoch_change_during_append_answers_not_coordinator():
    env = Env(hold=True)
    out = []
    env.tc.handle_init_producer_id(T, TIMEOUT, None, out.append)
    p = env.tc.partition_for(T)
    env.tc.on_resignation(p)
    env.tc.on_election(p, 6)             # nothing durable in the log: reloads empty
    env.log.complete()
    assert out[0].error in (E.NOT_COORDINATOR,)


# ---------------------------------------------------------------------------------------------- EndTxn
def test_end_txn_checks():
    env = Env()
    r = env.init()
    assert env.end(r.producer_id, r.producer_epoch) == E.INVALID_TXN_STATE        # Empty
    assert env.end(r.producer_id + 1, r.producer_epoch) == E.INVALID_PRODUCER_ID_MAPPING
    assert env.end(r.producer_id, r.producer_epoch + 1) == E.PRODUCER_FENCED        # client: strict equality
    assert env.end(r.producer_id, r.producer_epoch, txn="") == E.INVALID_REQUEST
    assert env.end(1, 0, txn="unknown") == E.INVALID_PRODUCER_ID_MAPPING


def test_commit_answers_before_markers_then_completes():
    env = Env()
    env.leaders[("b", 0)] = 2
    pid, epoch = begin(env, (("a", 0), ("a", 1), ("b", 0)))
    assert env.end(pid, epoch) == E.NONE
    assert env.meta().state == S.PREPARE_COMMIT and env.woken == [1, 2]
    items = env.answer_markers(1)
    assert items[0].entry.partitions == (("a", 0), ("a", 1)) and items[0].entry.committed
    assert env.meta().state == S.PREPARE_COMMIT and env.meta().topic_partitions == {("b", 0)}
    env.answer_markers(2)
    assert env.meta().state == S.COMPLETE_COMMIT and env.meta().topic_partitions == set()
    assert env.end(pid, epoch) == E.NONE                      # idempotent retry
    assert env.end(pid, epoch, commit=False) == E.INVALID_TXN_STATE
    assert env.states_written()[-2:] == [S.PREPARE_COMMIT, S.COMPLETE_COMMIT]


def test_abort_then_wrong_result_in_prepare():
    env = Env(hold=False)
    pid, epoch = begin(env)
    assert env.end(pid, epoch, commit=False) == E.NONE
    # Complete* is pending while the markers go out: anything gets CONCURRENT_TRANSACTIONS first
    assert env.end(pid, epoch, commit=True) == E.CONCURRENT_TRANSACTIONS
    assert env.end(pid, epoch, commit=False) == E.CONCURRENT_TRANSACTIONS
    env.meta().pending_state = None                                                 # (as if nothing were pending)
    assert env.end(pid, epoch, commit=True) == E.INVALID_TXN_STATE                  # PrepareAbort + commit
    assert env.end(pid, epoch, commit=False) == E.CONCURRENT_TRANSACTIONS
    env.meta().pending_state = S.COMPLETE_ABORT
    env.answer_markers()
    assert env.end(pid, epoch, commit=False) == E.NONE and env.meta().state == S.COMPLETE_ABORT
    assert env.end(pid, epoch, commit=True) == E.INVALID_TXN_STATE


def test_marker_retriable_errors_requeue_and_fencing_errors_stop():
    env = Env()
    pid, epoch = begin(env)
    env.end(pid, epoch)
    env.answer_markers(code=E.NOT_LEADER_OR_FOLLOWER)
    assert env.meta().state == S.PREPARE_COMMIT and env.markers.brokers_with_work() == [1]
    env.answer_markers()
    assert env.meta().state == S.COMPLETE_COMMIT
    env2 = Env()
    pid, epoch = begin(env2)
    env2.end(pid, epoch)
    env2.answer_markers(code=E.TRANSACTION_COORDINATOR_FENCED)
    assert env2.meta().state == S.PREPARE_COMMIT and env2.markers.brokers_with_work() == []
    assert T not in env2.markers.transactions_with_pending_markers


def test_marker_to_a_moved_leader_and_a_disconnect():
    env = Env()
    pid, epoch = begin(env)
    env.end(pid, epoch)
    items = env.markers.drain(1)
    env.leaders[("a", 0)] = 2
    env.markers.on_disconnect(1, items)
    assert env.markers.brokers_with_work() == [2]
    env.answer_markers(2)
    assert env.meta().state == S.COMPLETE_COMMIT


def test_markers_dropped_for_deleted_topic_and_parked_for_dead_leader():
    env = Env()
    env.leaders[("gone", 0)] = NO_LEADER
    env.leaders[("b", 0)] = LEADER_NOT_ALIVE
    pid, epoch = begin(env, (("gone", 0), ("b", 0)))
    env.end(pid, epoch)
    assert env.meta().topic_partitions == {("b", 0)} and env.markers.brokers_with_work() == []
    env.leaders[("b", 0)] = 1
    env.answer_markers(1)                                     # the drain looks the parked one up again
    assert env.meta().state == S.COMPLETE_COMMIT


def test_unsupported_for_message_format_drops_the_partition():
    env = Env()
    pid, epoch = begin(env)
    env.end(pid, epoch)
    env.answer_markers(code=E.UNSUPPORTED_FOR_MESSAGE_FORMAT)
    assert env.meta().state == S.COMPLETE_COMMIT


def test_completion_append_retried_on_coordinator_not_available():
    env = Env()
    pid, epoch = begin(env)
    env.end(pid, epoch)
    env.log.fail_with = E.NOT_ENOUGH_REPLICAS
    env.answer_markers()
    m = env.meta()
    assert (m.state, m.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)      # kept for the retry
    env.log.fail_with = None
    env.markers.retry_log_appends()
    assert env.meta().state == S.COMPLETE_COMMIT


# ---------------------------------------------------------------------------------------------- load / failover
def test_new_coordinator_loads_and_completes_a_prepared_commit():
    env = Env()
    pid, epoch = begin(env, (("a", 0), ("b", 2)))
    env.end(pid, epoch)
    p = env.tc.partition_for(T)
    env.tc.on_resignation(p, 5)
    assert env.markers.transactions_with_pending_markers == {}
    env.tc.on_election(p, 6)                                  # loads: PrepareCommit -> markers again, epoch 6
    m = env.meta()
    assert (m.state, m.pending_state, m.last_producer_epoch) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT, -1)
    items = env.answer_markers()
    assert items[0].entry.coordinator_epoch == 6 and items[0].entry.committed
    assert env.meta().state == S.COMPLETE_COMMIT


def test_load_keeps_ongoing_and_forgets_tombstoned():
    env = Env()
    begin(env)
    p = env.tc.partition_for(T)
    env.tc.on_resignation(p)
    env.tc.on_election(p, 9)
    assert env.meta().state == S.ONGOING and env.meta().topic_partitions == {("a", 0)}


# ---------------------------------------------------------------------------------------------- scanners
def test_timed_out_transaction_is_aborted_with_bumped_epoch():
    env = Env()
    pid, epoch = begin(env)
    env.init(txn="other")
    env.time.advance(TIMEOUT + 10_001)                      # past the timeout, then the scanner's interval
    m = env.meta()
    assert (m.state, m.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    items = env.answer_markers()
    assert [(i.entry.producer_epoch, i.entry.committed) for i in items] == [(epoch + 1, False)]
    assert env.meta().state == S.COMPLETE_ABORT
    assert env.end(pid, epoch) == E.PRODUCER_FENCED           # the old producer's commit
    assert env.meta("other").state == S.EMPTY


def test_timed_out_transaction_with_pending_transition_is_left_alone():
    env = Env(hold=True)
    out = []
    env.tc.handle_init_producer_id(T, 1000, None, out.append)
    env.log.complete()
    pid = out[0].producer_id
    env.tc.handle_add_partitions_to_transaction(T, pid, 0, {("a", 0)}, out.append)
    env.log.complete()
    env.tc.handle_end_transaction(T, pid, 0, True, out.append)   # PrepareCommit append held
    env.time.advance(20_000)
    assert env.tc.abort_timed_out_transactions() == []
    assert env.meta().pending_state == S.PREPARE_COMMIT


def test_expired_transactional_ids_are_tombstoned():
    env = Env(transactional_id_expiration_ms=1000, remove_expired_transactional_ids_interval_ms=500)
    begin(env)
    env.init(txn="idle")
    env.time.advance(1500)
    assert env.states_written("idle") == [S.EMPTY, None]
    assert env.tc.state_manager.get_transaction_state("idle") is None
    assert env.meta().state == S.ONGOING                      # never expires while Ongoing
    assert env.add(1, 0, txn="idle") == E.INVALID_PRODUCER_ID_MAPPING


# ---------------------------------------------------------------------------------------------- admin views
def test_describe_and_list():
    env = Env()
    pid, epoch = begin(env, (("b", 1), ("a", 0)))
    env.init(txn="quiet")
    d = env.tc.handle_describe_transactions(T)
    assert (d.error, d.state, d.producer_id, d.topic_partitions) == (E.NONE, "Ongoing", pid, (("a", 0), ("b", 1)))
    assert env.tc.handle_describe_transactions("nope").error == E.TRANSACTIONAL_ID_NOT_FOUND
    assert env.tc.handle_describe_transactions("").error == E.INVALID_REQUEST
    err, unknown, found = env.tc.handle_list_transactions([], ["Ongoing", "Bogus"])
    assert (err, unknown, [m.transactional_id for m in found]) == (E.NONE, ["Bogus"], [T])
    err, _, found = env.tc.handle_list_transactions([pid], [])
    assert [m.transactional_id for m in found] == [T]
    env.time.advance(5000)
    _, _, found = env.tc.handle_list_transactions([], ["Ongoing"], duration_filter_ms=10_000)
    assert found == []
    _, _, found = env.tc.handle_list_transactions([], ["Ongoing"], duration_filter_ms=1_000)
    assert [m.transactional_id for m in found] == [T]
    env.tc.shutdown()
    assert env.tc.handle_describe_transactions(T).error == E.COORDINATOR_NOT_AVAILABLE


def test_unexpected_marker_answers_are_retried_not_fatal():
    env = Env()
    pid, epoch = begin(env)
    env.end(pid, epoch)
    env.answer_markers(code=E.CORRUPT_MESSAGE)          # Kafka throws IllegalStateException; kafkalab retries
    assert env.meta().state == S.PREPARE_COMMIT and env.markers.brokers_with_work() == [1]
    items = env.markers.drain(1)
    env.markers.on_response(1, items, WriteTxnMarkersResponse(markers=()))    # no result for this producer
    assert env.markers.brokers_with_work() == [1]
    env.answer_markers()
    assert env.meta().state == S.COMPLETE_COMMIT


def test_build_request_groups_partitions_by_topic():
    env = Env()
    pid, epoch = begin(env, (("a", 0), ("b", 3), ("a", 2)))
    env.end(pid, epoch, commit=False)
    request = env.markers.build_request(env.markers.drain(1))
    m = request.markers[0]
    assert (m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch) == (pid, epoch, False, 5)
    assert [(t.name, t.partition_indexes) for t in m.topics] == [("a", (0, 2)), ("b", (3,))]


def test_an_unreadable_log_does_not_leave_the_partition_loading_forever():
    env = Env()
    p = env.tc.partition_for(T)

    def broken(partition):
        raise OSError("disk gone")
        yield  # pragma: no cover
    env.log.read = broken
    env.tc.on_resignation(p)
    env.tc.on_election(p, 7)
    assert env.init().error == E.NONE
