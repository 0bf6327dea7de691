"""DelayedProduce: Kafka's completion cases A, B, C.1, C.2 and the timeout, against fake partitions."""
import pytest

from kafkalab.common.time import MockTime
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import (DelayedOperationPurgatory, DelayedProduce, ProducePartitionStatus,
                                TopicPartitionOperationKey, check_enough_replicas_reach_offset)


class PartitionError(ApiException):
    def __init__(self, code):
        super().__init__(code, code.name)


class FakePartition:
    """A leader with a high watermark, a maximal ISR and an effective min ISR."""

    def __init__(self, hw=0, isr=(1, 2, 3), min_isr=2, leader=True):
        self.hw, self.isr, self.min_isr, self.leader = hw, list(isr), min_isr, leader

    def check_enough_replicas_reach_offset(self, required_offset):
        return check_enough_replicas_reach_offset(required_offset, is_leader=self.leader, high_watermark=self.hw,
                                                  maximal_isr_size=len(self.isr), effective_min_isr=self.min_isr)


class Broker:
    def __init__(self, time):
        self.partitions = {}
        self.known = set()
        self.purgatory = DelayedOperationPurgatory("Produce", time=time)
        time.on_advance(self.purgatory.poll)
        self.responses = []

    def lookup(self, tp):
        if tp in self.partitions:
            return self.partitions[tp]
        raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER if tp in self.known
                             else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def produce(self, required, timeout_ms=30_000, errors=None):
        status = {tp: ProducePartitionStatus(required_offset=off, base_offset=off - 1) for tp, off in required.items()}
        for tp, code in (errors or {}).items():
            status[tp].error_code = code
        op = DelayedProduce(timeout_ms, status, self.lookup, self.responses.append)
        keys = [TopicPartitionOperationKey(*tp) for tp in required]
        done = self.purgatory.try_complete_else_watch(op, keys)
        return op, done


T0, T1 = ("t", 0), ("t", 1)


@pytest.fixture
def time():
    return MockTime()


@pytest.fixture
def broker(time):
    b = Broker(time)
    b.partitions = {T0: FakePartition(), T1: FakePartition()}
    b.known = {T0, T1}
    return b


def codes(response):
    return {tp: ErrorCode(s.error_code).name for tp, s in response.items()}


def test_rule_table():
    f = check_enough_replicas_reach_offset
    assert f(10, is_leader=False, high_watermark=10, maximal_isr_size=3, effective_min_isr=2) == \
        (False, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert f(10, is_leader=True, high_watermark=9, maximal_isr_size=3, effective_min_isr=2) == (False, ErrorCode.NONE)
    assert f(10, is_leader=True, high_watermark=10, maximal_isr_size=2, effective_min_isr=2) == (True, ErrorCode.NONE)
    assert f(10, is_leader=True, high_watermark=12, maximal_isr_size=1, effective_min_isr=2) == \
        (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_waits_for_the_high_watermark_then_answers_none(broker):
    op, done = broker.produce({T0: 5, T1: 3})
    assert not done and broker.responses == []
    assert all(s.acks_pending and s.error_code == ErrorCode.REQUEST_TIMED_OUT for s in op.produce_status.values())
    broker.partitions[T0].hw = 5                       # followers caught up on t-0 only
    assert broker.purgatory.check_and_complete(TopicPartitionOperationKey(*T0)) == 0
    assert not op.produce_status[T0].acks_pending and op.produce_status[T1].acks_pending
    broker.partitions[T1].hw = 3
    assert broker.purgatory.check_and_complete(TopicPartitionOperationKey(*T1)) == 1
    assert [codes(r) for r in broker.responses] == [{T0: "NONE", T1: "NONE"}]
    assert op.produce_status[T0].completed_by == "C.2"


def test_already_replicated_completes_at_once(broker):
    broker.partitions[T0].hw = 10
    op, done = broker.produce({T0: 10})
    assert done and codes(broker.responses[0]) == {T0: "NONE"}
    assert broker.purgatory.num_delayed == 0


def test_case_b_leadership_moved(broker):
    op, _ = broker.produce({T0: 5})
    broker.partitions[T0].leader = False
    assert broker.purgatory.check_and_complete(T0) == 1
    assert codes(broker.responses[0]) == {T0: "NOT_LEADER_OR_FOLLOWER"}
    assert op.produce_status[T0].completed_by == "B"


def test_case_a_replica_no_longer_hosted(broker):
    op, _ = broker.produce({T0: 5, T1: 5})
    del broker.partitions[T0]                          # still known to the cluster: NOT_LEADER_OR_FOLLOWER
    broker.known.discard(T1)
    del broker.partitions[T1]                          # gone entirely: UNKNOWN_TOPIC_OR_PARTITION
    broker.purgatory.check_and_complete(T0)
    assert codes(broker.responses[0]) == {T0: "NOT_LEADER_OR_FOLLOWER", T1: "UNKNOWN_TOPIC_OR_PARTITION"}
    assert op.produce_status[T0].completed_by == "A"


def test_lookup_may_return_an_error_code(time):
    responses = []
    op = DelayedProduce(1000, {T0: ProducePartitionStatus(5)}, lambda tp: int(ErrorCode.KAFKA_STORAGE_ERROR),
                        responses.append)
    assert op.try_complete()
    assert codes(responses[0]) == {T0: "KAFKA_STORAGE_ERROR"}


def test_case_c1_isr_shrank_after_append(broker):
    op, _ = broker.produce({T0: 5})
    p = broker.partitions[T0]
    p.isr = [1]                                        # shrink below min.insync.replicas=2 ...
    assert broker.purgatory.check_and_complete(T0) == 0   # ... the HW has not reached the offset: still waiting
    p.hw = 5
    assert broker.purgatory.check_and_complete(T0) == 1
    assert codes(broker.responses[0]) == {T0: "NOT_ENOUGH_REPLICAS_AFTER_APPEND"}
    assert op.produce_status[T0].completed_by == "C.1"


def test_partition_that_failed_locally_keeps_its_error(broker):
    op, _ = broker.produce({T0: 5, T1: 5}, errors={T1: ErrorCode.CORRUPT_MESSAGE})
    assert not op.produce_status[T1].acks_pending
    broker.partitions[T0].hw = 5
    broker.purgatory.check_and_complete(T0)
    assert codes(broker.responses[0]) == {T0: "NONE", T1: "CORRUPT_MESSAGE"}


def test_timeout_answers_request_timed_out_and_marks_meters(time, broker):
    op, _ = broker.produce({T0: 5, T1: 5}, timeout_ms=1500)
    broker.partitions[T1].hw = 5
    broker.purgatory.check_and_complete(T1)
    time.advance(1499)
    assert broker.responses == []
    time.advance(1)
    assert codes(broker.responses[0]) == {T0: "REQUEST_TIMED_OUT", T1: "NONE"}
    assert op.expired and op.produce_status[T0].completed_by == "timeout"
    m = broker.purgatory.metrics()
    assert m["ExpiresPerSec,delayedOperation=Produce"] == 1
    assert m["ExpiresPerSec,delayedOperation=Produce,partition=0,topic=t"] == 1
    assert "ExpiresPerSec,delayedOperation=Produce,partition=1,topic=t" not in m
    # A late high-watermark move changes nothing: the answer went out once.
    broker.partitions[T0].hw = 5
    assert broker.purgatory.check_and_complete(T0) == 0
    assert len(broker.responses) == 1


def test_exceptions_without_an_error_code_propagate(broker):
    def broken(tp):
        raise RuntimeError("bug")

    op = DelayedProduce(1000, {T0: ProducePartitionStatus(5)}, broken, lambda r: None)
    with pytest.raises(RuntimeError):
        op.try_complete()
