"""Offsets inside transactions: TxnOffsetCommit keeps them pending until the transaction's marker, OffsetFetch
with require_stable sees them as unstable, and loading __consumer_offsets honours transactional batches and
markers. Ports of Kafka's GroupMetadataManagerTest / GroupCoordinatorTest transactional cases."""
import pytest

from kafkalab.common.scheduler import MockScheduler
from kafkalab.common.time import MockTime
from kafkalab.coordinator.group import GroupConfig, GroupCoordinator, GroupState
from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC, MemoryOffsetsLog, partition_for
from kafkalab.coordinator.group.records import (consumer_subscription, offset_commit_key, offset_commit_value,
                                                read_message_key, read_offset_value)
from kafkalab.protocol import ErrorCode as E
from kafkalab.records import ControlRecordType, build_batch, build_end_txn_marker_batch

G = "txn-group"
NUM_PARTITIONS = 4
P = partition_for(G, NUM_PARTITIONS)
TP = ("input", 0)
PID, EPOCH = 1000, 3


class DeferredLog(MemoryOffsetsLog):
    """Appends complete only when the test says so (the broker's acks=all wait)."""

    def __init__(self):
        super().__init__()
        self.waiting = []

    def append_async(self, partition, batch, callback):
        self.waiting.append(lambda: MemoryOffsetsLog.append_async(self, partition, batch, callback))

    def complete_all(self):
        waiting, self.waiting = self.waiting, []
        for w in waiting:
            w()


class Env:
    def __init__(self, log=None):
        self.time = MockTime()
        self.scheduler = MockScheduler(self.time)
        self.log = log or MemoryOffsetsLog()
        self.gc = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=NUM_PARTITIONS), self.time,
                                   self.scheduler, self.log)
        self.gc.startup()
        self.elect()

    def elect(self):
        for p in range(NUM_PARTITIONS):
            self.gc.on_election(p)
        self.time.advance(0)
        assert self.gc.manager.owned_partitions == set(range(NUM_PARTITIONS))

    def txn_commit(self, offset, tp=TP, pid=PID, epoch=EPOCH, member_id="", instance=None, generation=-1,
                   group=G):
        box = []
        self.gc.handle_txn_commit_offsets(group, pid, epoch, member_id, instance, generation,
                                          {tp: OffsetAndMetadata(offset)}, box.append)
        return box

    def commit(self, offset, tp=TP):
        box = []
        self.gc.handle_commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(offset)}, box.append)
        return box

    def fetch(self, tp=TP, require_stable=False):
        error, offsets = self.gc.handle_fetch_offsets(G, [tp], require_stable)
        assert error == E.NONE
        value = offsets[tp]
        if value is None:
            return -1
        return value if isinstance(value, int) else value.offset

    def marker(self, committed, pid=PID, epoch=EPOCH, partition=P):
        """What WriteTxnMarkers does on __consumer_offsets: append the control batch, then tell the coordinator."""
        kind = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        self.log.append(partition, build_end_txn_marker_batch(kind, producer_id=pid, producer_epoch=epoch,
                                                              coordinator_epoch=0))
        self.gc.handle_txn_completion(pid, [partition], committed)

    def reload(self):
        """Another coordinator takes the partitions over: a fresh coordinator on the same log."""
        self.gc.shutdown()
        self.gc = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=NUM_PARTITIONS), self.time,
                                   self.scheduler, self.log)
        self.gc.startup()
        self.elect()


@pytest.fixture
def env():
    return Env()


def test_txn_offsets_are_pending_until_the_commit_marker(env):
    assert env.txn_commit(10) == [{TP: E.NONE}]
    assert env.fetch() == -1, "not visible before the transaction commits"
    assert env.fetch(require_stable=True) == E.UNSTABLE_OFFSET_COMMIT
    env.marker(committed=True)
    assert env.fetch() == 10
    assert env.fetch(require_stable=True) == 10
    assert not env.gc.manager.get_group(G).pending_transactional_offset_commits
    assert env.gc.manager.open_groups_for_producer == {}
    timeline = [what for _, group, what in env.gc.events if group == G]
    assert timeline[-2:] == [f"TxnOffsetCommit of producer {PID} (epoch {EPOCH}): 1 offset(s) pending until the "
                             "transaction ends",
                             f"transaction of producer {PID} committed: 1 pending offset(s) now committed"]


def test_txn_offsets_are_dropped_by_the_abort_marker(env):
    env.commit(5)
    env.txn_commit(10)
    env.marker(committed=False)
    assert env.fetch() == 5
    assert env.fetch(require_stable=True) == 5


def test_the_offsets_batch_is_transactional_with_the_producer_id_and_epoch(env):
    env.txn_commit(10)
    [batch] = list(env.log.read(P))
    assert batch.is_transactional and not batch.is_control_batch
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (PID, EPOCH, 0)
    [record] = batch.records
    assert read_message_key(bytes(record.key)).topic == "input"
    assert read_offset_value(bytes(record.value)).offset == 10


def test_completion_for_another_producer_or_partition_is_ignored(env):
    """GroupCoordinatorTest.testFetchTxnOffsetsIgnoreSpuriousCommit."""
    env.txn_commit(10)
    env.gc.handle_txn_completion(PID + 1, [P], True)
    env.gc.handle_txn_completion(PID, [(P + 1) % NUM_PARTITIONS], True)
    assert env.fetch() == -1
    assert env.fetch(require_stable=True) == E.UNSTABLE_OFFSET_COMMIT
    env.gc.handle_txn_completion(PID, [(OFFSETS_TOPIC, P)], True)     # (topic, partition) pairs work too
    assert env.fetch() == 10


def test_two_producers_in_one_group_complete_independently(env):
    env.txn_commit(10, tp=("a", 0), pid=1)
    env.txn_commit(20, tp=("b", 0), pid=2)
    env.marker(committed=False, pid=1)
    env.marker(committed=True, pid=2)
    assert env.fetch(("a", 0)) == -1 and env.fetch(("b", 0)) == 20


def test_a_later_plain_commit_wins_over_an_earlier_transactional_record(env):
    env.txn_commit(10)
    env.commit(7)            # written after the transactional record
    env.marker(committed=True)
    assert env.fetch() == 7, "the transaction's record is older in the log: it does not replace the commit"


def test_a_transactional_record_written_after_a_plain_commit_wins(env):
    env.commit(7)
    env.txn_commit(10)
    env.marker(committed=True)
    assert env.fetch() == 10


def test_v0_to_v2_commits_are_accepted_by_a_group_with_members(env):
    """No member or generation in the request (v0-2): the transactional exemption of validateOffsetCommit."""
    box = []
    env.gc.handle_join_group(G, "", None, False, "c", "/h", 30_000, 10_000, "consumer",
                             [("range", consumer_subscription(["input"]))], box.append)
    env.time.advance(3_000)
    [joined] = box
    assert joined.error == E.NONE
    assert env.txn_commit(10) == [{TP: E.NONE}]
    assert env.commit(11) == [{TP: E.UNKNOWN_MEMBER_ID}], "a plain commit without a member is refused"
    # v3 with the member and generation is checked (testTxnCommitOffsetWithIllegalGeneration)
    assert env.txn_commit(12, member_id=joined.member_id, generation=joined.generation_id + 1) == \
        [{TP: E.ILLEGAL_GENERATION}]
    assert env.txn_commit(12, member_id="someone-else", generation=joined.generation_id) == \
        [{TP: E.UNKNOWN_MEMBER_ID}]
    assert env.txn_commit(12, member_id=joined.member_id, generation=joined.generation_id) == [{TP: E.NONE}]


def test_without_a_generation_an_empty_group_accepts_any_member_id(env):
    """validateOffsetCommit: generation -1 on an Empty group is a commit without group management."""
    assert env.txn_commit(1, member_id="not-a-member", generation=-1) == [{TP: E.NONE}]
    assert env.txn_commit(2, member_id="not-a-member", generation=0) == [{TP: E.UNKNOWN_MEMBER_ID}]


def test_static_member_checks_apply_to_v3(env):
    box = []
    env.gc.handle_join_group(G, "", "instance-1", True, "c", "/h", 30_000, 10_000, "consumer",
                             [("range", consumer_subscription(["input"]))], box.append)
    env.time.advance(3_000)
    [joined] = box
    assert env.txn_commit(1, member_id="old-member-id", instance="instance-1",
                          generation=joined.generation_id) == [{TP: E.FENCED_INSTANCE_ID}]
    assert env.txn_commit(1, member_id=joined.member_id, instance="instance-1",
                          generation=joined.generation_id) == [{TP: E.NONE}]


def test_group_status_errors(env):
    assert env.txn_commit(1, group="") == [{TP: E.INVALID_GROUP_ID}], "TxnOffsetCommit needs a non-empty group id"
    env.gc.on_resignation(P)
    assert env.txn_commit(1) == [{TP: E.NOT_COORDINATOR}]
    assert env.gc.manager.get_group(G) is None


def test_a_txn_commit_creates_an_empty_group_that_the_retention_sweep_keeps_while_pending(env):
    env.txn_commit(10)
    group = env.gc.manager.get_group(G)
    assert group.state == GroupState.EMPTY and not group.offsets
    env.gc.manager.expire_offsets()
    assert env.gc.manager.get_group(G) is group, "a group with pending offsets is not removed as empty"
    env.marker(committed=True)
    assert env.fetch() == 10


def test_a_failed_append_leaves_nothing_pending(env):
    env.log.fail_with = E.NOT_LEADER_OR_FOLLOWER
    assert env.txn_commit(10) == [{TP: E.NOT_COORDINATOR}]
    env.log.fail_with = None
    group = env.gc.manager.get_group(G)
    assert not group.pending_transactional_offset_commits
    assert env.gc.manager.open_groups_for_producer == {}
    assert env.fetch(require_stable=True) == -1


def test_a_fenced_epoch_from_the_log_passes_through():
    class Fencing(MemoryOffsetsLog):
        def append_async(self, partition, batch, callback):
            callback(E.INVALID_PRODUCER_EPOCH, -1)
    env = Env(Fencing())
    assert env.txn_commit(10) == [{TP: E.INVALID_PRODUCER_EPOCH}]


def test_require_stable_sees_a_plain_commit_in_flight():
    env = Env(DeferredLog())
    env.commit(3)
    env.log.complete_all()
    box = env.commit(4)
    assert box == [] and env.fetch(require_stable=True) == E.UNSTABLE_OFFSET_COMMIT
    assert env.fetch() == 3
    env.log.complete_all()
    assert box == [{TP: E.NONE}] and env.fetch(require_stable=True) == 4


def test_the_marker_before_the_txn_append_completed_does_not_commit_a_record_never_written():
    env = Env(DeferredLog())
    box = env.txn_commit(10)
    assert box == []
    env.gc.handle_txn_completion(PID, [P], True)
    env.log.complete_all()
    assert box == [{TP: E.NONE}]
    assert env.fetch() == -1


def test_offset_delete_removes_the_pending_offsets_too(env):
    env.txn_commit(10)
    assert env.gc.handle_delete_offsets(G, [TP]) == (E.NONE, {TP: E.NONE})
    env.marker(committed=True)
    assert env.fetch() == -1


def test_resignation_forgets_the_producers_groups(env):
    env.txn_commit(10)
    env.gc.on_resignation(P)
    assert env.gc.manager.open_groups_for_producer == {}


# ---------------------------------------------------------------------------------------------- loading
def test_load_with_committed_aborted_and_pending_transactional_offsets(env):
    """GroupMetadataManagerTest.testLoadWithCommittedAndAbortedAndPendingTransactionalOffsetCommits."""
    env.commit(1, tp=("plain", 0))
    env.txn_commit(2, tp=("committed", 0), pid=1)
    env.txn_commit(3, tp=("aborted", 0), pid=2)
    env.txn_commit(4, tp=("pending", 0), pid=3)
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.ABORT, producer_id=2, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.reload()
    assert env.fetch(("plain", 0)) == 1
    assert env.fetch(("committed", 0)) == 2
    assert env.fetch(("aborted", 0)) == -1
    assert env.fetch(("aborted", 0), require_stable=True) == -1
    assert env.fetch(("pending", 0)) == -1
    assert env.fetch(("pending", 0), require_stable=True) == E.UNSTABLE_OFFSET_COMMIT
    assert env.gc.manager.open_groups_for_producer == {3: {G}}
    env.marker(committed=True, pid=3)      # the coordinator that loaded the partition completes it
    assert env.fetch(("pending", 0)) == 4


def test_load_a_pending_only_group(env):
    env.txn_commit(4)
    env.reload()
    group = env.gc.manager.get_group(G)
    assert group is not None and group.state == GroupState.EMPTY
    assert env.fetch(require_stable=True) == E.UNSTABLE_OFFSET_COMMIT


def test_load_transaction_wins_when_written_after_the_consumer_commit(env):
    """testGroupLoadWithConsumerAndTransactionalOffsetCommitsTransactionWins: the transactional record is later."""
    env.commit(1)
    env.txn_commit(2)
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=PID, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.reload()
    assert env.fetch() == 2


def test_load_consumer_commit_wins_when_written_after_the_transactional_record(env):
    env.txn_commit(2)
    env.commit(1)
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=PID, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.reload()
    assert env.fetch() == 1


def test_load_a_tombstone_inside_a_transaction_removes_only_its_pending_offset(env):
    env.commit(1)
    tombstone = build_batch([(offset_commit_key(G, *TP), None)], producer_id=PID, producer_epoch=EPOCH,
                            base_sequence=0, transactional=True)
    env.txn_commit(2)
    env.log.append(P, tombstone)
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=PID, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.reload()
    assert env.fetch() == 1


def test_load_a_later_transaction_of_the_same_producer_starts_afresh(env):
    env.txn_commit(2)
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.ABORT, producer_id=PID, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.log.append(P, build_batch([(offset_commit_key(G, *TP), offset_commit_value(OffsetAndMetadata(5)))],
                                  producer_id=PID, producer_epoch=EPOCH, base_sequence=1, transactional=True))
    env.log.append(P, build_end_txn_marker_batch(ControlRecordType.COMMIT, producer_id=PID, producer_epoch=EPOCH,
                                                 coordinator_epoch=0))
    env.reload()
    assert env.fetch() == 5
