"""RecordAccumulator without sockets: batching by batch.size, linger.ms, drain rules, retries in order, expiry."""
from kafkalab.clients.producer.accumulator import RecordAccumulator, TopicPartition, estimate_size
from kafkalab.records import SimpleRecord, decode_batch

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
LEADERS = {T0: 0, T1: 1}


def leader(tp):
    return LEADERS.get(tp)


def rec(i: int, size: int = 10) -> tuple:
    r = SimpleRecord(b"k%d" % i, b"x" * size, (), 1_000 + i)
    return r, estimate_size(r.key, r.value, r.headers)


def test_records_fill_a_batch_up_to_batch_size_then_open_a_new_one():
    acc = RecordAccumulator(batch_size=200, linger_ms=100)
    created = []
    for i in range(10):
        r, size = rec(i, 20)
        _, new = acc.append(T0, r, size, now_ms=0)
        created.append(new)
    batches = list(acc.batches[T0])
    assert len(batches) > 1 and created[0]
    assert all(b.size <= 200 for b in batches)
    assert sum(b.record_count for b in batches) == 10


def test_a_record_bigger_than_batch_size_gets_its_own_batch():
    acc = RecordAccumulator(batch_size=50, linger_ms=100)
    r, size = rec(0, 500)
    acc.append(T0, r, size, 0)
    r2, size2 = rec(1, 5)
    acc.append(T0, r2, size2, 0)
    assert [b.record_count for b in acc.batches[T0]] == [1, 1]


def test_ready_waits_for_linger_unless_full_or_flushing():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=50)
    r, size = rec(0)
    acc.append(T0, r, size, 0)
    nodes, next_ms, unknown = acc.ready(leader, 10)
    assert nodes == set() and next_ms == 40 and not unknown
    assert acc.ready(leader, 50)[0] == {0}
    acc.flushes_in_progress += 1
    assert acc.ready(leader, 11)[0] == {0}


def test_full_batch_is_ready_at_once():
    acc = RecordAccumulator(batch_size=100, linger_ms=10_000)
    for i in range(8):
        r, size = rec(i, 20)
        acc.append(T0, r, size, 0)
    assert acc.ready(leader, 0)[0] == {0}


def test_unknown_leader_is_reported():
    acc = RecordAccumulator(linger_ms=0)
    r, size = rec(0)
    acc.append(TopicPartition("other", 0), r, size, 0)
    assert acc.ready(leader, 0)[2] == {"other"}


def test_drain_takes_one_batch_per_partition_and_respects_max_request_size():
    acc = RecordAccumulator(batch_size=100, linger_ms=0)
    for i in range(12):
        r, size = rec(i, 20)
        acc.append(T0, r, size, 0)
        acc.append(T1, r, size, 0)
    drained = acc.drain(leader, {0, 1}, 10_000, 0)
    assert [b.tp for b in drained[0]] == [T0] and [b.tp for b in drained[1]] == [T1]
    LEADERS[T1] = 0
    try:
        drained = acc.drain(leader, {0}, 120, 0)       # the second batch would exceed max.request.size
        assert len(drained[0]) == 1
    finally:
        LEADERS[T1] = 1


def test_max_in_flight_one_mutes_the_partition():
    acc = RecordAccumulator(batch_size=30, linger_ms=0, max_in_flight=1)
    for i in range(3):
        r, size = rec(i, 20)
        acc.append(T0, r, size, 0)
    (b,) = acc.drain(leader, {0}, 10_000, 0)[0]
    assert acc.drain(leader, {0}, 10_000, 0) == {}
    acc.sent_done(b)
    assert len(acc.drain(leader, {0}, 10_000, 0)[0]) == 1


def test_retries_go_back_in_sequence_order_after_backoff():
    acc = RecordAccumulator(batch_size=30, linger_ms=0, idempotent=True, retry_backoff_ms=100)
    for i in range(3):
        r, size = rec(i, 20)
        acc.append(T0, r, size, 0)
    sent = []
    for seq in range(3):
        (b,) = acc.drain(leader, {0}, 10_000, 0)[0]
        b.set_producer_state(7, 0, seq)
        sent.append(b)
    for b in reversed(sent):           # answers come back; all three must be retried
        acc.sent_done(b)
    acc.reenqueue(sent[2], 0)
    acc.reenqueue(sent[0], 0)
    acc.reenqueue(sent[1], 0)
    assert [b.base_sequence for b in acc.batches[T0]] == [0, 1, 2]
    assert acc.drain(leader, {0}, 10_000, 50) == {}     # backing off
    (first,) = acc.drain(leader, {0}, 10_000, 100)[0]
    assert first.base_sequence == 0
    assert acc.drain(leader, {0}, 10_000, 100) == {}    # a retry goes out alone
    acc.sent_done(first)
    assert acc.drain(leader, {0}, 10_000, 100)[0][0].base_sequence == 1


def test_a_retried_batch_resends_the_same_bytes():
    acc = RecordAccumulator(linger_ms=0, idempotent=True)
    r, size = rec(0)
    batch, _ = acc.append(T0, r, size, 0)
    batch.set_producer_state(42, 3, 17)
    first = batch.build("zstd")
    assert batch.build("zstd") is first
    b = decode_batch(first)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.compression_type) == (42, 3, 17, 4)


def test_expired_batches_and_their_futures():
    import concurrent.futures
    acc = RecordAccumulator(linger_ms=0, delivery_timeout_ms=1000)
    fut = concurrent.futures.Future()
    r, size = rec(0)
    acc.append(T0, r, size, 0, fut)
    assert acc.expired_batches(999) == []
    (b,) = acc.expired_batches(1000)
    b.fail(TimeoutError("expired"))
    assert isinstance(fut.exception(), TimeoutError)


def test_complete_gives_each_record_its_offset_and_timestamp():
    import concurrent.futures
    acc = RecordAccumulator(linger_ms=0)
    futs = []
    for i in range(3):
        f = concurrent.futures.Future()
        r, size = rec(i)
        acc.append(T0, r, size, 0, f)
        futs.append(f)
    acc.batches[T0][0].complete(100)
    assert [(f.result().offset, f.result().timestamp) for f in futs] == [(100, 1000), (101, 1001), (102, 1002)]
    acc2 = RecordAccumulator(linger_ms=0)
    f = concurrent.futures.Future()
    r, size = rec(0)
    acc2.append(T0, r, size, 0, f)
    acc2.batches[T0][0].complete(5, log_append_time=777)       # LogAppendTime replaces CreateTime
    assert f.result().timestamp == 777


def test_size_estimate_is_an_upper_bound():
    from kafkalab.records import build_batch
    for klen, vlen in [(0, 0), (3, 10), (100, 5000), (None, 20)]:
        key = None if klen is None else b"k" * klen
        value = b"v" * vlen
        headers = (("h", b"1"), ("name", b"value"))
        actual = len(build_batch([SimpleRecord(key, value, headers, 5)])) - 61
        assert estimate_size(key, value, headers) >= actual
