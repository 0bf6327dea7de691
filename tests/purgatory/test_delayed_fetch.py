"""DelayedFetch: Kafka's cases A-H and the timeout, against fake partitions."""
import pytest

from kafkalab.common.time import MockTime
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import (DelayedFetch, DelayedOperationPurgatory, FetchParams, FetchPartitionInfo,
                                FetchPartitionStatus, LogOffsetSnapshot, TopicPartitionOperationKey)
from kafkalab.storage import LogOffsetMetadata


class PartitionError(ApiException):
    def __init__(self, code):
        super().__init__(code, code.name)


def at(offset, segment=0, position=None):
    """Offset metadata: ``position`` defaults to 100 bytes per offset within the segment."""
    return LogOffsetMetadata(offset, segment, (offset - segment) * 100 if position is None else position)


class FakePartition:
    def __init__(self, leo=10, hw=10, lso=None, leader=True, epoch=5, epochs=None):
        self.leo, self.hw, self.lso = at(leo), at(hw), at(hw if lso is None else lso)
        self.leader, self.epoch = leader, epoch
        self.error = None
        self.epochs = epochs or {}      # leader epoch -> end offset
        self.snapshots = 0

    def fetch_offset_snapshot(self, current_leader_epoch, fetch_only_from_leader):
        self.snapshots += 1
        if self.error is not None:
            raise PartitionError(self.error)
        if fetch_only_from_leader and not self.leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if 0 <= current_leader_epoch < self.epoch:
            raise PartitionError(ErrorCode.FENCED_LEADER_EPOCH)
        return LogOffsetSnapshot(0, self.leo, self.hw, self.lso)

    def last_offset_for_leader_epoch(self, current_leader_epoch, leader_epoch, fetch_only_from_leader=False):
        known = [e for e in self.epochs if e <= leader_epoch]
        if not known:
            return (-1, -1)
        e = max(known)
        return (e, self.epochs[e])


T0, T1 = ("t", 0), ("t", 1)


class Broker:
    def __init__(self, time):
        self.partitions = {T0: FakePartition(), T1: FakePartition()}
        self.purgatory = DelayedOperationPurgatory("Fetch", time=time)
        time.on_advance(self.purgatory.poll)
        self.responses = []
        self.reads = []

    def lookup(self, tp):
        if tp not in self.partitions:
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return self.partitions[tp]

    def read_from_log(self, params, infos):
        self.reads.append((params, infos))
        return {tp: self.partitions[tp].hw.message_offset - info.fetch_offset if tp in self.partitions else None
                for tp, info in infos}

    def fetch(self, offsets, *, min_bytes=1, max_wait_ms=500, replica_id=-1, isolation="high_watermark",
              max_bytes=1_048_576, last_fetched_epoch=-1, current_leader_epoch=-1, start=None, throttle=None):
        params = FetchParams(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, isolation=isolation)
        status = [(tp, FetchPartitionStatus(start(tp, off) if start else at(off),
                                            FetchPartitionInfo(off, max_bytes, current_leader_epoch=current_leader_epoch,
                                                               last_fetched_epoch=last_fetched_epoch)))
                  for tp, off in offsets.items()]
        op = DelayedFetch(params, status, self.lookup, self.read_from_log, self.responses.append,
                          should_leader_throttle=throttle)
        done = self.purgatory.try_complete_else_watch(op, [TopicPartitionOperationKey(*tp) for tp in offsets])
        return op, done


@pytest.fixture
def time():
    return MockTime()


@pytest.fixture
def broker(time):
    return Broker(time)


def test_case_g_min_bytes_accumulated_over_partitions(broker):
    op, done = broker.fetch({T0: 10, T1: 10}, min_bytes=250)   # both caught up: 0 bytes available
    assert not done
    broker.partitions[T0].hw = at(12)                          # 200 bytes: not yet
    assert broker.purgatory.check_and_complete(T0) == 0
    assert op.accumulated_bytes == 200
    broker.partitions[T1].hw = at(11)                          # 200 + 100 >= 250
    assert broker.purgatory.check_and_complete(T1) == 1
    assert op.completed_by == "G"
    assert broker.responses == [{T0: 2, T1: 1}]                # read at completion, not at arrival


def test_partition_max_bytes_caps_the_count(broker):
    op, _ = broker.fetch({T0: 10}, min_bytes=150, max_bytes=120)
    broker.partitions[T0].hw = at(20)                          # 1000 bytes, capped at 120
    broker.purgatory.check_and_complete(T0)
    assert not op.is_completed and op.accumulated_bytes == 120


def test_consumer_waits_for_the_high_watermark_follower_for_the_log_end(broker):
    broker.partitions[T0].leo = at(15)                         # appended, not yet replicated
    consumer, done_c = broker.fetch({T0: 10})
    follower, done_f = broker.fetch({T0: 10}, replica_id=2, isolation="log_end")
    assert not done_c and done_f and follower.completed_by == "G"
    broker.partitions[T0].lso = at(10)
    committed, done_t = broker.fetch({T0: 10}, isolation="txn_committed")
    broker.partitions[T0].hw = at(15)                          # open transaction: LSO stays
    broker.purgatory.check_and_complete(T0)
    assert consumer.completed_by == "G" and not committed.is_completed


def test_case_a_b_no_longer_leader(broker):
    op, _ = broker.fetch({T0: 10, T1: 10})
    broker.partitions[T1].leader = False
    assert broker.purgatory.check_and_complete(T1) == 1
    assert (op.completed_by, op.completed_partition) == ("A/B", T1)


def test_case_c_unknown_partition(broker):
    op, _ = broker.fetch({T0: 10})
    del broker.partitions[T0]
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "C"
    assert broker.responses == [{T0: None}]


def test_case_d_offline_log_dir(broker):
    op, _ = broker.fetch({T0: 10})
    broker.partitions[T0].error = ErrorCode.KAFKA_STORAGE_ERROR
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "D"


def test_case_e_fenced_leader_epoch(broker):
    op, done = broker.fetch({T0: 10}, current_leader_epoch=5)
    assert not done
    broker.partitions[T0].epoch = 6                            # a new leader epoch: the request is stale
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "E"


def test_case_f_log_truncated_below_the_fetch_offset(broker):
    op, _ = broker.fetch({T0: 10})
    broker.partitions[T0].hw = at(8)                           # new leader with a shorter log
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "F"


def test_case_f_fetch_offset_on_an_older_segment(broker):
    op, _ = broker.fetch({T0: 10}, min_bytes=10**9)
    broker.partitions[T0].hw = at(11, segment=11, position=0)  # the log rolled: the end is on a newer segment
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "F"


def test_roll_with_unchanged_offset_is_not_case_f(broker):
    op, _ = broker.fetch({T0: 10}, start=lambda tp, off: at(off, segment=10, position=0))
    broker.partitions[T0].hw = at(10, segment=0)               # same offset, described on the older segment
    broker.purgatory.check_and_complete(T0)
    assert not op.is_completed


def test_throttled_follower_is_not_forced_by_case_f(broker):
    op, done = broker.fetch({T0: 10}, replica_id=2, isolation="log_end", throttle=lambda p, r: True)
    broker.partitions[T0].leo = at(30, segment=20, position=0)
    broker.purgatory.check_and_complete(T0)
    assert not done and not op.is_completed


def test_case_h_diverging_epoch(broker):
    broker.partitions[T0].epochs = {3: 8, 5: 10}
    op, done = broker.fetch({T0: 10}, last_fetched_epoch=5, replica_id=2, isolation="log_end")
    assert not done                                            # epoch 5 ends at 10: no divergence
    broker.partitions[T0].epochs = {3: 8}                      # truncation removed epoch 5
    broker.purgatory.check_and_complete(T0)
    assert op.completed_by == "H"


def test_case_h_unknown_epoch(broker):
    op, done = broker.fetch({T0: 10}, last_fetched_epoch=2, replica_id=2, isolation="log_end")
    assert done and op.completed_by == "H"


def test_unknown_start_offset_is_skipped(broker):
    op, done = broker.fetch({T0: 10}, start=lambda tp, off: LogOffsetMetadata(-1))
    assert not done and broker.partitions[T0].snapshots == 0


def test_message_offset_only_metadata_counts_no_bytes(broker):
    op, done = broker.fetch({T0: 5}, start=lambda tp, off: LogOffsetMetadata(off))
    assert not done and op.accumulated_bytes == 0


def test_expires_at_max_wait_and_reads_what_is_there(time, broker):
    consumer, _ = broker.fetch({T0: 10}, min_bytes=10_000, max_wait_ms=500)
    follower, _ = broker.fetch({T1: 10}, min_bytes=10_000, max_wait_ms=500, replica_id=2, isolation="log_end")
    broker.partitions[T0].hw = at(11)
    broker.purgatory.check_and_complete(T0)
    time.advance(499)
    assert broker.responses == []
    time.advance(1)
    assert consumer.expired and consumer.completed_by == "timeout"
    assert sorted(map(str, broker.responses)) == sorted(map(str, [{T0: 1}, {T1: 0}]))
    m = broker.purgatory.metrics()
    assert m["ExpiresPerSec,delayedOperation=Fetch"] == 2
    assert m["ExpiresPerSec,delayedOperation=Fetch,fetcherType=consumer"] == 1
    assert m["ExpiresPerSec,delayedOperation=Fetch,fetcherType=follower"] == 1


def test_fetch_params_roles():
    assert FetchParams(replica_id=-1).fetch_only_leader
    assert FetchParams(replica_id=3).is_from_follower and FetchParams(replica_id=3).fetch_only_leader
    assert not FetchParams(replica_id=-1, client_metadata={"rack": "a"}).fetch_only_leader
    assert not FetchParams(replica_id=-3).is_from_consumer
