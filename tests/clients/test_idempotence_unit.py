"""The idempotent producer's sequence and epoch logic, driven without sockets."""
from kafkalab.clients.producer.accumulator import RecordAccumulator, TopicPartition, estimate_size
from kafkalab.clients.producer.transaction_manager import TransactionManager
from kafkalab.protocol import ErrorCode, KafkaProtocolError
from kafkalab.records import SimpleRecord

TP = TopicPartition("t", 0)


def batches(n: int, per_batch: int = 2):
    acc = RecordAccumulator(batch_size=1, linger_ms=0, idempotent=True)   # one record per batch... then merge
    acc.batch_size = 10_000
    out = []
    for _i in range(n):
        for _j in range(per_batch):
            r = SimpleRecord(None, b"v", (), 1)
            b, _ = acc.append(TP, r, estimate_size(None, b"v", ()), 0)
        acc.batches[TP][-1].closed = True
        out.append(b)
    return acc, out


def test_sequences_count_records_per_partition():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(1000, 0)
    _, bs = batches(3, per_batch=2)
    for b in bs:
        tm.assign(b)
    assert [b.base_sequence for b in bs] == [0, 2, 4]
    assert [(b.producer_id, b.producer_epoch) for b in bs] == [(1000, 0)] * 3
    assert tm.sequence_for(TP) == 6
    assert tm.sequence_for(TopicPartition("t", 1)) == 0


def test_a_retry_keeps_its_sequence():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(1000, 0)
    _, (b,) = batches(1)
    tm.assign(b)
    tm.handle_retry(b, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    tm.assign(b)
    assert b.base_sequence == 0 and tm.sequence_for(TP) == 2


def test_out_of_order_is_retriable_only_behind_an_earlier_failure():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(1000, 0)
    _, (b0, b1) = batches(2)
    tm.assign(b0)
    tm.assign(b1)
    # b0 failed retriably, so b1 (seq 2) hit a gap: retriable
    assert tm.is_retriable_out_of_order(b1)
    # b0 itself is exactly what the broker expects next: an out-of-order answer for it is unresolvable
    assert not tm.is_retriable_out_of_order(b0)
    tm.handle_completed(b0)
    assert tm.last_acked_sequence[TP] == 1
    assert not tm.is_retriable_out_of_order(b1)


def test_a_failed_batch_requests_an_epoch_bump_that_resets_sequences():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(1000, 0)
    acc, (b0, b1) = batches(2)
    acc.batches[TP].clear()
    tm.assign(b0)
    tm.handle_failed(b0, ErrorCode.MESSAGE_TOO_LARGE, KafkaProtocolError(10))
    assert tm.epoch_bump_required and not tm.needs_init()       # an idempotent producer bumps locally
    b1.set_producer_state(1000, 0, 2)
    acc.batches[TP].append(b1)
    assert tm.bump_idempotent_epoch()
    acc.reset_sequences()
    assert (tm.producer_id, tm.producer_epoch) == (1000, 1)
    assert tm.epoch_bumps == 1 and not tm.epoch_bump_required
    assert not b1.has_sequence
    tm.assign(b1)
    assert (b1.producer_epoch, b1.base_sequence) == (1, 0)


def test_an_exhausted_epoch_asks_for_a_new_producer_id():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(1000, 2**15 - 1)
    tm.request_epoch_bump()
    assert not tm.bump_idempotent_epoch()
    assert tm.needs_init() and tm.init_request_fields() == (-1, -1)


def test_unknown_producer_id_bumps_and_retries():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(5, 0)
    _, (b,) = batches(1)
    tm.assign(b)
    tm.handle_retry(b, ErrorCode.UNKNOWN_PRODUCER_ID)
    assert tm.epoch_bump_required


def test_fenced_is_fatal():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(5, 0)
    _, (b,) = batches(1)
    tm.assign(b)
    err = KafkaProtocolError(ErrorCode.PRODUCER_FENCED)
    tm.handle_failed(b, ErrorCode.PRODUCER_FENCED, err)
    assert tm.fatal_error is err and not tm.needs_init()


def test_sequences_wrap_at_int32():
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(5, 0)
    tm.next_sequence[TP] = 2**31 - 1
    _, (b,) = batches(1, per_batch=2)
    tm.assign(b)
    assert b.base_sequence == 2**31 - 1 and b.last_sequence == 0 and tm.sequence_for(TP) == 1
