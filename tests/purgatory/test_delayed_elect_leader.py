"""DelayedElectLeader: an ElectLeaders answer waits until the metadata shows each expected leader, and the
partitions still waiting at the timeout answer REQUEST_TIMED_OUT next to the outcomes known from the start."""
from __future__ import annotations

from kafkalab.common.time import MockTime
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import DelayedElectLeader, DelayedOperationPurgatory, TopicPartitionOperationKey


def setup(delay_ms=1000):
    time = MockTime()
    purgatory = DelayedOperationPurgatory("ElectLeader", time=time)
    leaders = {("t", 0): 2, ("t", 1): 0}
    answers = []
    not_needed = ApiException(ErrorCode.ELECTION_NOT_NEEDED)
    op = DelayedElectLeader(delay_ms, {("t", 0): 1, ("t", 1): 1}, {("u", 0): not_needed},
                            lambda tp: leaders.get(tp, -1), answers.append)
    keys = [TopicPartitionOperationKey("t", 0), TopicPartitionOperationKey("t", 1)]
    assert not purgatory.try_complete_else_watch(op, keys)
    return time, purgatory, leaders, answers, not_needed


def test_completes_when_every_new_leader_is_in_the_metadata():
    time, purgatory, leaders, answers, not_needed = setup()
    leaders[("t", 0)] = 1
    assert purgatory.check_and_complete(TopicPartitionOperationKey("t", 0)) == 0 and answers == []
    leaders[("t", 1)] = 1
    assert purgatory.check_and_complete(TopicPartitionOperationKey("t", 1)) == 1
    assert answers == [{("t", 0): None, ("t", 1): None, ("u", 0): not_needed}]
    assert purgatory.num_delayed == 0


def test_the_timeout_answers_request_timed_out_for_what_still_waits():
    time, purgatory, leaders, answers, not_needed = setup()
    leaders[("t", 0)] = 1
    time.sleep(1000)
    purgatory.poll()
    (answer,) = answers
    assert answer[("t", 0)] is None and answer[("u", 0)] is not_needed
    assert answer[("t", 1)].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert purgatory.metrics()["ExpiresPerSec,delayedOperation=ElectLeader"] == 1


def test_a_zero_timeout_answers_at_once():
    time, purgatory, leaders, answers, _ = setup(delay_ms=0)
    assert [sorted((tp, e.error_code if e else 0) for tp, e in a.items()) for a in answers] == [
        [(("t", 0), ErrorCode.REQUEST_TIMED_OUT), (("t", 1), ErrorCode.REQUEST_TIMED_OUT),
         (("u", 0), ErrorCode.ELECTION_NOT_NEEDED)]]
