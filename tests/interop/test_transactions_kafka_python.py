"""kafka-python 3 transactions against the kafkalab broker (issue 17, "Real clients").

kafka-python sends the transaction APIs up to v3 and InitProducerId up to v4 (transactions.md §6). It turns on
KIP-360 recovery only when the broker version it infers from ApiVersions is at least 2.5; then a Produce answered
with INVALID_PRODUCER_EPOCH (47) is not fatal by itself but leads to an epoch bump, InitProducerId v3+ with the
old producer id and epoch, which a broker whose epoch has moved on answers with PRODUCER_FENCED (90): the fenced
producer ends with :class:`kafka.errors.ProducerFencedError` either way (§3.1, §6). The scenarios are described
in ``_txn_support.py``.
"""
from __future__ import annotations

import time

import pytest

from ._broker_support import PHASE_S, TIMEOUT_MS, stored_batches, unique
from ._txn_support import (ABANDONED, CRASHED_LSO, FIRST_COMMIT, INPUT_COUNT, SHORT_TXN_TIMEOUT_MS, Sent,
                           assert_exactly_once, commit_abort_plan, count_requests, expected_reads, input_values,
                           interleaved_transactions, new_topic, ordered, output_of, plan_partitions, produce_inputs,
                           txn_api_versions, wait_lso, wait_stable)

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition  # noqa: E402
from kafka.errors import (InvalidProducerEpochError, KafkaError, MessageSizeTooLargeError,  # noqa: E402
                          OutOfOrderSequenceNumberError, ProducerFencedError)

pytestmark = pytest.mark.interop


def txn_producer(cluster, tid: str, **conf) -> KafkaProducer:
    config = dict(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid, request_timeout_ms=TIMEOUT_MS,
                  max_block_ms=int(PHASE_S * 1000), linger_ms=5)
    config.update(conf)
    producer = KafkaProducer(**config)
    producer.init_transactions()
    return producer


def consumer(cluster, isolation: str, **conf) -> KafkaConsumer:
    config = dict(bootstrap_servers=cluster.bootstrap_servers, group_id=None, enable_auto_commit=False,
                  isolation_level=isolation, auto_offset_reset="earliest", request_timeout_ms=TIMEOUT_MS,
                  fetch_max_wait_ms=50)
    config.update(conf)
    return KafkaConsumer(**config)


def poll_records(c, seconds: float) -> list:
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _tp, messages in c.poll(timeout_ms=50).items():
            got.extend(messages)
    return got


def read_until(c, ends: dict, timeout: float = PHASE_S) -> list[Sent]:
    """Poll until the consumer's position reached ``ends`` ({TopicPartition: offset}) on every partition; every
    record read on the way is returned."""
    got = []
    end = time.monotonic() + timeout
    while any(c.position(tp) < offset for tp, offset in ends.items()):
        assert time.monotonic() < end, f"read {got} before the deadline; ends {ends}"
        for _tp, messages in c.poll(timeout_ms=100).items():
            got.extend(Sent(m.topic, m.partition, m.value) for m in messages)
    return got


def read_to_end(cluster, partitions, isolation: str, **conf) -> list[Sent]:
    c = consumer(cluster, isolation, **conf)
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        c.assign(tps)
        c.seek_to_beginning()
        return ordered(read_until(c, c.end_offsets(tps)))
    finally:
        c.close()


def test_commit_and_abort_across_two_topics(txn_cluster):
    t1, t2 = new_topic(txn_cluster, "kp-txn-a"), new_topic(txn_cluster, "kp-txn-b")
    plan = commit_abort_plan(t1, t2, "kp")
    client_id = unique("kp-txn")
    producer = txn_producer(txn_cluster, unique("kp-tid"), client_id=client_id)
    try:
        for kind, sends in plan:
            producer.begin_transaction()
            futures = [producer.send(s.topic, s.value, partition=s.partition) for s in sends]
            if kind == "commit":
                producer.commit_transaction()
            else:
                producer.flush(PHASE_S)
                assert all(f.succeeded() for f in futures)
                producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    partitions = plan_partitions(plan)
    wait_stable(txn_cluster, partitions)
    committed, everything = expected_reads(plan)
    assert read_to_end(txn_cluster, partitions, "read_committed") == committed
    assert read_to_end(txn_cluster, partitions, "read_uncommitted") == everything
    assert txn_api_versions(txn_cluster, client_id) == {
        "AddPartitionsToTxn": [3], "EndTxn": [3], "FindCoordinator": [6], "InitProducerId": [4]}


def test_consume_process_produce_survives_a_crash(txn_cluster):
    source, sink = new_topic(txn_cluster, "kp-eos-in", 1), new_topic(txn_cluster, "kp-eos-out", 1)
    inputs = input_values("kp")
    produce_inputs(txn_cluster.bootstrap_servers, source, inputs)
    group, tid = unique("kp-eos"), unique("kp-eos-tid")
    source_tp = TopicPartition(source, 0)

    def instance(client_id):
        producer = txn_producer(txn_cluster, tid, client_id=client_id)
        c = consumer(txn_cluster, "read_committed", group_id=group, session_timeout_ms=3000, heartbeat_interval_ms=200)
        c.subscribe([source])   # a group member: TxnOffsetCommit v3 carries its generation and member id (KIP-447)
        return producer, c

    def process(producer, c, n: int, commit: bool) -> None:
        batch = []
        end = time.monotonic() + PHASE_S
        while len(batch) < n:
            assert time.monotonic() < end, f"read {len(batch)} of {n} inputs"
            for _tp, messages in c.poll(timeout_ms=100, max_records=n - len(batch)).items():
                batch.extend(messages)
        producer.begin_transaction()
        for m in batch:
            producer.send(sink, output_of(m.value), partition=0)
        producer.send_offsets_to_transaction({source_tp: OffsetAndMetadata(batch[-1].offset + 1, "", -1)},
                                             c.group_metadata())
        if commit:
            producer.commit_transaction()
        else:
            producer.flush(PHASE_S)

    crashed = unique("kp-eos-1")
    producer, c = instance(crashed)
    process(producer, c, FIRST_COMMIT, commit=True)
    process(producer, c, ABANDONED, commit=False)
    c.close()
    producer.close(timeout=0)                          # no EndTxn: the transaction stays open
    assert count_requests(txn_cluster, crashed, "EndTxn") == 1
    wait_lso(txn_cluster, sink, CRASHED_LSO)        # the open transaction holds the LSO

    restarted = unique("kp-eos-2")
    producer, c = instance(restarted)                  # init_transactions() fences the crashed one and aborts
    try:
        process(producer, c, INPUT_COUNT - FIRST_COMMIT, commit=True)
    finally:
        c.close()
        producer.close(timeout=5)
    wait_stable(txn_cluster, [(sink, 0)])
    committed = [s.value for s in read_to_end(txn_cluster, [(sink, 0)], "read_committed")]
    everything = [s.value for s in read_to_end(txn_cluster, [(sink, 0)], "read_uncommitted")]
    assert_exactly_once(committed, everything, inputs)
    # its first InitProducerId met the open transaction: CONCURRENT_TRANSACTIONS while the broker aborts it
    assert count_requests(txn_cluster, restarted, "InitProducerId") >= 2
    assert txn_api_versions(txn_cluster, restarted) == {
        "AddOffsetsToTxn": [3], "AddPartitionsToTxn": [3], "EndTxn": [3], "FindCoordinator": [6],
        "InitProducerId": [4], "TxnOffsetCommit": [3]}


def commit_error_after_bump(cluster, producer, client_id: str, init_requests: int = 2):
    """What commit_transaction() raises once the producer's epoch bump (its ``init_requests``-th InitProducerId)
    is answered. Until the client has handled that answer it refuses the commit for being in
    BUMPING_PRODUCER_EPOCH, a plain KafkaError: that is retried for a moment."""
    end = time.monotonic() + PHASE_S
    while count_requests(cluster, client_id, "InitProducerId") < init_requests:
        assert time.monotonic() < end, f"{client_id} never bumped its epoch"
    while True:
        try:
            producer.commit_transaction()
        except KafkaError as e:
            if "BUMPING_PRODUCER_EPOCH" in str(e) and time.monotonic() < end:
                time.sleep(0.02)
                continue
            return e
        raise AssertionError("commit_transaction() succeeded for a fenced producer")


def test_a_second_producer_fences_the_first(txn_cluster):
    topic = new_topic(txn_cluster, "kp-fence", 1)
    tid = unique("kp-fence-tid")
    zombie_id = unique("kp-zombie")
    first = txn_producer(txn_cluster, tid, client_id=zombie_id)
    second = None
    try:
        first.begin_transaction()
        first.send(topic, b"zombie-1", partition=0).get(PHASE_S)
        second = txn_producer(txn_cluster, tid)        # bumps the epoch and aborts the first's transaction
        second.begin_transaction()
        second.send(topic, b"live", partition=0)
        second.commit_transaction()
        # Produce with the old epoch: 47, which kafka-python (KIP-360, broker >= 2.5) answers with an epoch bump,
        # InitProducerId v4 with its producer id and old epoch, which the coordinator refuses with 90: fatal
        with pytest.raises(InvalidProducerEpochError):
            first.send(topic, b"zombie-2", partition=0).get(PHASE_S)
        # kafka-python is now in FATAL_ERROR with the 90 as its last error, and says so
        error = commit_error_after_bump(txn_cluster, first, zombie_id)
        assert "in an error state: [Error 90] ProducerFencedError" in str(error), error
        assert txn_api_versions(txn_cluster, zombie_id)["InitProducerId"] == [4]
    finally:
        first.close(timeout=0)
        if second is not None:
            second.close(timeout=5)
    wait_stable(txn_cluster, [(topic, 0)])
    assert read_to_end(txn_cluster, [(topic, 0)], "read_committed") == [Sent(topic, 0, b"live")]
    assert read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted") == \
        [Sent(topic, 0, b"zombie-1"), Sent(topic, 0, b"live")]


def test_read_committed_waits_at_the_lso_until_commit_or_timeout(txn_cluster):
    topic = new_topic(txn_cluster, "kp-lso", 1)
    tp = TopicPartition(topic, 0)
    reader = consumer(txn_cluster, "read_committed")
    reader.assign([tp])
    reader.seek_to_beginning()
    producers = []
    try:
        open_txn = txn_producer(txn_cluster, unique("kp-lso-open"))
        later = txn_producer(txn_cluster, unique("kp-lso-later"))
        producers += [open_txn, later]
        later.begin_transaction()                      # first a committed record: the reader is fetching
        later.send(topic, b"start", partition=0)
        later.commit_transaction()
        assert read_until(reader, {tp: 2}) == [Sent(topic, 0, b"start")]
        open_txn.begin_transaction()
        open_txn.send(topic, b"open", partition=0).get(PHASE_S)
        later.begin_transaction()
        later.send(topic, b"later", partition=0)
        later.commit_transaction()
        wait_lso(txn_cluster, topic, (2, 5))
        assert poll_records(reader, 0.5) == [] and reader.position(tp) == 2
        open_txn.commit_transaction()
        assert read_until(reader, {tp: 6}) == [Sent(topic, 0, b"open"), Sent(topic, 0, b"later")]

        expiring = txn_producer(txn_cluster, unique("kp-lso-expiring"),
                                transaction_timeout_ms=SHORT_TXN_TIMEOUT_MS)
        producers.append(expiring)
        started = time.monotonic()
        expiring.begin_transaction()
        expiring.send(topic, b"expired", partition=0).get(PHASE_S)
        later.begin_transaction()
        later.send(topic, b"after-expiry", partition=0)
        later.commit_transaction()
        assert read_until(reader, {tp: 10}) == [Sent(topic, 0, b"after-expiry")]
        # not before the coordinator aborted it (its clock starts at AddPartitionsToTxn, after started)
        assert SHORT_TXN_TIMEOUT_MS / 1000 <= time.monotonic() - started < SHORT_TXN_TIMEOUT_MS / 1000 + 5
        with pytest.raises(ProducerFencedError):       # the abort bumped its epoch: it is fenced now
            expiring.commit_transaction()
    finally:
        reader.close()
        for p in producers:
            p.close(timeout=0)


def test_a_bump_in_the_middle_of_a_transaction_is_fenced(txn_cluster):
    """kafka-python's KIP-360 trap (transactions.md §6): a batch the broker refuses (MESSAGE_TOO_LARGE) is
    abortable, and the aborted transaction leaves a gap in the producer's sequence numbers, so the next
    transaction's Produce gets OUT_OF_ORDER_SEQUENCE_NUMBER (45). kafka-python answers with an epoch bump at once,
    without aborting first: InitProducerId v4 with (pid, epoch) for an Ongoing transaction, which the coordinator
    fences and aborts (epoch + 1, answer CONCURRENT_TRANSACTIONS); the retry, still with the old epoch, is
    PRODUCER_FENCED (90): fatal. Kafka's own rules (§2.4) give the same; the log holds two abort markers."""
    topic = unique("kp-bump")
    txn_cluster.create_topic(topic, 1, config={"max.message.bytes": 2000})
    client_id = unique("kp-bump")
    producer = txn_producer(txn_cluster, unique("kp-bump-tid"), client_id=client_id, linger_ms=0)
    try:
        producer.begin_transaction()
        with pytest.raises(MessageSizeTooLargeError):
            producer.send(topic, b"x" * 5000, partition=0).get(PHASE_S)
        producer.abort_transaction()
        producer.begin_transaction()
        with pytest.raises(OutOfOrderSequenceNumberError):
            producer.send(topic, b"second", partition=0).get(PHASE_S)
        error = commit_error_after_bump(txn_cluster, producer, client_id, init_requests=3)
        assert "in an error state: [Error 90] ProducerFencedError" in str(error), error
    finally:
        producer.close(timeout=0)
    assert txn_api_versions(txn_cluster, client_id)["InitProducerId"] == [4]
    assert count_requests(txn_cluster, client_id, "InitProducerId") >= 3   # 51 may come twice
    wait_stable(txn_cluster, [(topic, 0)])
    assert [(b.is_control_batch, b.producer_epoch) for b in stored_batches(txn_cluster, topic, 0)] == \
        [(True, 0), (True, 1)]                         # the application's abort, then the fence's


def test_fetches_inside_an_aborted_transaction(txn_cluster):
    topic = new_topic(txn_cluster, "kp-interleaved", 1)
    committed, everything = interleaved_transactions(txn_cluster, topic, "kp")
    one_batch = dict(max_partition_fetch_bytes=1, fetch_max_bytes=1)
    assert read_to_end(txn_cluster, [(topic, 0)], "read_committed", **one_batch) == committed
    assert read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted", **one_batch) == everything
