"""confluent-kafka (librdkafka) transactions against the kafkalab broker (issue 17, "Real clients").

librdkafka sends AddPartitionsToTxn and AddOffsetsToTxn at v0 only, EndTxn up to v1, TxnOffsetCommit up to v3 (with
the consumer's generation and member id) and InitProducerId up to v4 (transactions.md §6). A fenced producer gets
``_FENCED`` as a fatal error: from a Produce answered with INVALID_PRODUCER_EPOCH (47), or from EndTxn v1, where
PRODUCER_FENCED (90) must be down-converted to 47 (§3, §3.1). librdkafka consumers read with ``isolation.level``
read_committed by default. The scenarios are described in ``_txn_support.py``.
"""
from __future__ import annotations

import gc
import time

import pytest

from ._broker_support import PHASE_S, TIMEOUT_MS, stored_batches, unique
from ._txn_support import (ABANDONED, CRASHED_LSO, FIRST_COMMIT, INPUT_COUNT, SHORT_TXN_TIMEOUT_MS, Sent,
                           assert_exactly_once, commit_abort_plan, count_requests, expected_reads, input_values,
                           interleaved_transactions, new_topic, ordered, output_of, plan_partitions, produce_inputs,
                           txn_api_versions, wait_lso, wait_stable)

ck = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.interop


def txn_producer(cluster, tid: str, **conf):
    config = {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid,
              "socket.timeout.ms": TIMEOUT_MS, "linger.ms": 5}
    config.update(conf)
    producer = ck.Producer(config)
    producer.init_transactions(PHASE_S)
    return producer


def consumer(cluster, isolation: str, **conf):
    config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": unique("ck-reader"),
              "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True,
              "auto.offset.reset": "earliest", "socket.timeout.ms": TIMEOUT_MS, "fetch.wait.max.ms": 50}
    config.update(conf)
    return ck.Consumer(config)


def collect(c, partitions, count: int, timeout: float = PHASE_S) -> list[Sent]:
    """Poll until ``count`` records arrived and every partition then reported its end (EOF at the LSO for
    read_committed); more records than ``count`` are returned too, so an exact comparison catches them."""
    got, eof = [], set()
    end = time.monotonic() + timeout
    while len(got) < count or eof != set(partitions):
        assert time.monotonic() < end, f"read {got} (EOF on {eof}) before the deadline, expected {count}"
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            assert m.error().code() == ck.KafkaError._PARTITION_EOF, m.error()
            eof.add((m.topic(), m.partition()))
            continue
        got.append(Sent(m.topic(), m.partition(), m.value()))
        eof.discard((m.topic(), m.partition()))
    return got


def read_to_end(cluster, partitions, isolation: str, count: int, **conf) -> list[Sent]:
    c = consumer(cluster, isolation, **conf)
    try:
        c.assign([ck.TopicPartition(t, p, ck.OFFSET_BEGINNING) for t, p in partitions])
        return ordered(collect(c, partitions, count))
    finally:
        c.close()


def poll_for(c, seconds: float) -> list[Sent]:
    """Whatever records arrive within ``seconds`` (EOF events are ignored)."""
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        m = c.poll(0.05)
        if m is not None and not m.error():
            got.append(Sent(m.topic(), m.partition(), m.value()))
    return got


def assert_fenced(excinfo) -> None:
    err = excinfo.value.args[0]
    assert err.code() == ck.KafkaError._FENCED and err.fatal(), err


def test_commit_and_abort_across_two_topics(txn_cluster):
    t1, t2 = new_topic(txn_cluster, "ck-txn-a"), new_topic(txn_cluster, "ck-txn-b")
    plan = commit_abort_plan(t1, t2, "ck")
    client_id = unique("ck-txn")
    producer = txn_producer(txn_cluster, unique("ck-tid"), **{"client.id": client_id})
    for kind, sends in plan:
        producer.begin_transaction()
        for s in sends:
            producer.produce(s.topic, s.value, partition=s.partition)
        if kind == "commit":
            producer.commit_transaction(PHASE_S)
        else:
            assert producer.flush(PHASE_S) == 0  # abort_transaction() purges what is still queued
            producer.abort_transaction(PHASE_S)
    partitions = plan_partitions(plan)
    wait_stable(txn_cluster, partitions)
    committed, everything = expected_reads(plan)
    assert read_to_end(txn_cluster, partitions, "read_committed", len(committed)) == committed
    assert read_to_end(txn_cluster, partitions, "read_uncommitted", len(everything)) == everything
    versions = txn_api_versions(txn_cluster, client_id)
    assert versions == {"AddPartitionsToTxn": [0], "EndTxn": [1], "FindCoordinator": [2], "InitProducerId": [4]}


def test_consume_process_produce_survives_a_crash(txn_cluster):
    source, sink = new_topic(txn_cluster, "ck-eos-in", 1), new_topic(txn_cluster, "ck-eos-out", 1)
    inputs = input_values("ck")
    produce_inputs(txn_cluster.bootstrap_servers, source, inputs)
    group, tid = unique("ck-eos"), unique("ck-eos-tid")

    def instance(client_id):
        producer = txn_producer(txn_cluster, tid, **{"client.id": client_id})
        c = consumer(txn_cluster, "read_committed", **{"group.id": group, "enable.partition.eof": False,
                                                       "session.timeout.ms": 3000, "heartbeat.interval.ms": 200})
        c.subscribe([source])   # a group member: TxnOffsetCommit v3 carries its generation and member id (KIP-447)
        return producer, c

    def process(producer, c, n: int, commit: bool) -> None:
        batch = []
        end = time.monotonic() + PHASE_S
        while len(batch) < n:
            assert time.monotonic() < end, f"read {len(batch)} of {n} inputs"
            m = c.poll(0.1)
            if m is not None:
                assert not m.error(), m.error()
                batch.append(m)
        producer.begin_transaction()
        for m in batch:
            producer.produce(sink, output_of(m.value()), partition=0)
        producer.send_offsets_to_transaction([ck.TopicPartition(source, 0, batch[-1].offset() + 1)],
                                             c.consumer_group_metadata(), PHASE_S)
        if commit:
            producer.commit_transaction(PHASE_S)
        else:
            assert producer.flush(PHASE_S) == 0

    crashed = unique("ck-eos-1")
    producer, c = instance(crashed)
    process(producer, c, FIRST_COMMIT, commit=True)
    process(producer, c, ABANDONED, commit=False)
    c.close()                                          # leaves the group, so the restarted one joins at once
    del producer                                       # rd_kafka_destroy(): no EndTxn, the transaction stays open
    gc.collect()
    assert count_requests(txn_cluster, crashed, "EndTxn") == 1
    wait_lso(txn_cluster, sink, CRASHED_LSO)        # the open transaction holds the LSO

    restarted = unique("ck-eos-2")
    producer, c = instance(restarted)                  # init_transactions() fences the crashed one and aborts
    process(producer, c, INPUT_COUNT - FIRST_COMMIT, commit=True)
    c.close()
    wait_stable(txn_cluster, [(sink, 0)])
    committed = [s.value for s in read_to_end(txn_cluster, [(sink, 0)], "read_committed", INPUT_COUNT)]
    everything = [s.value for s in read_to_end(txn_cluster, [(sink, 0)], "read_uncommitted",
                                               INPUT_COUNT + ABANDONED)]
    assert_exactly_once(committed, everything, inputs)
    # its first InitProducerId met the open transaction: CONCURRENT_TRANSACTIONS while the broker aborts it
    assert count_requests(txn_cluster, restarted, "InitProducerId") >= 2
    assert txn_api_versions(txn_cluster, restarted) == {
        "AddOffsetsToTxn": [0], "AddPartitionsToTxn": [0], "EndTxn": [1], "FindCoordinator": [2],
        "InitProducerId": [4], "TxnOffsetCommit": [3]}


def test_a_second_producer_fences_the_first(txn_cluster):
    topic = new_topic(txn_cluster, "ck-fence", 1)
    tid = unique("ck-fence-tid")
    first = txn_producer(txn_cluster, tid)
    first.begin_transaction()
    first.produce(topic, b"zombie-1", partition=0)
    assert first.flush(PHASE_S) == 0
    second = txn_producer(txn_cluster, tid)           # bumps the epoch and aborts the first's transaction
    second.begin_transaction()
    second.produce(topic, b"live", partition=0)
    second.commit_transaction(PHASE_S)
    first.produce(topic, b"zombie-2", partition=0)
    with pytest.raises(ck.KafkaException) as excinfo:
        first.commit_transaction(PHASE_S)
    assert_fenced(excinfo)
    wait_stable(txn_cluster, [(topic, 0)])
    assert read_to_end(txn_cluster, [(topic, 0)], "read_committed", 1) == [Sent(topic, 0, b"live")]
    assert read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted", 2) == \
        [Sent(topic, 0, b"zombie-1"), Sent(topic, 0, b"live")]


def test_read_committed_waits_at_the_lso_until_commit_or_timeout(txn_cluster):
    topic = new_topic(txn_cluster, "ck-lso", 1)
    reader = consumer(txn_cluster, "read_committed")
    reader.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    try:
        later = txn_producer(txn_cluster, unique("ck-lso-later"))
        later.begin_transaction()                      # first a committed record: the reader is fetching
        later.produce(topic, b"start", partition=0)
        later.commit_transaction(PHASE_S)
        assert collect(reader, [(topic, 0)], 1) == [Sent(topic, 0, b"start")]
        # an open transaction, then a committed one after it on the same partition
        open_txn = txn_producer(txn_cluster, unique("ck-lso-open"))
        open_txn.begin_transaction()
        open_txn.produce(topic, b"open", partition=0)
        assert open_txn.flush(PHASE_S) == 0
        later.begin_transaction()
        later.produce(topic, b"later", partition=0)
        later.commit_transaction(PHASE_S)
        wait_lso(txn_cluster, topic, (2, 5))            # "later" and its marker are written, "open" is not decided
        assert poll_for(reader, 0.5) == []             # blocked at offset 2 although "later" is committed
        open_txn.commit_transaction(PHASE_S)
        assert collect(reader, [(topic, 0)], 2) == [Sent(topic, 0, b"open"), Sent(topic, 0, b"later")]

        # an open transaction the coordinator aborts at its transaction.timeout.ms
        expiring = txn_producer(txn_cluster, unique("ck-lso-expiring"), **{
            "transaction.timeout.ms": SHORT_TXN_TIMEOUT_MS, "socket.timeout.ms": SHORT_TXN_TIMEOUT_MS})
        started = time.monotonic()
        expiring.begin_transaction()
        expiring.produce(topic, b"expired", partition=0)
        assert expiring.flush(PHASE_S) == 0
        later.begin_transaction()
        later.produce(topic, b"after-expiry", partition=0)
        later.commit_transaction(PHASE_S)
        assert collect(reader, [(topic, 0)], 1) == [Sent(topic, 0, b"after-expiry")]
        # not before the coordinator aborted it (its clock starts at AddPartitionsToTxn, after started)
        assert SHORT_TXN_TIMEOUT_MS / 1000 <= time.monotonic() - started < SHORT_TXN_TIMEOUT_MS / 1000 + 5
        with pytest.raises(ck.KafkaException) as excinfo:   # the abort bumped its epoch: it is fenced now
            expiring.commit_transaction(PHASE_S)
        assert_fenced(excinfo)
    finally:
        reader.close()


def test_a_fenced_producer_s_add_offsets_to_txn_is_fatal(txn_cluster):
    """librdkafka treats only INVALID_PRODUCER_EPOCH (47) from AddOffsetsToTxn (v0) as fenced; a PRODUCER_FENCED
    (90) there would merely be abortable (transactions.md §3.1, pitfall 3): the broker must down-convert."""
    topic = new_topic(txn_cluster, "ck-fence-offsets", 1)
    tid = unique("ck-fence-offsets-tid")
    client_id = unique("ck-zombie")
    first = txn_producer(txn_cluster, tid, **{"client.id": client_id})
    first.begin_transaction()                          # nothing sent yet: the coordinator knows no transaction
    txn_producer(txn_cluster, tid)                     # bumps the epoch
    reader = consumer(txn_cluster, "read_committed", **{"group.id": unique("ck-fence-group")})
    try:
        with pytest.raises(ck.KafkaException) as excinfo:
            first.send_offsets_to_transaction([ck.TopicPartition(topic, 0, 1)], reader.consumer_group_metadata(),
                                              PHASE_S)
    finally:
        reader.close()
    assert_fenced(excinfo)
    assert txn_api_versions(txn_cluster, client_id)["AddOffsetsToTxn"] == [0]


def test_an_abortable_produce_error_ends_in_an_epoch_bump(txn_cluster):
    """A batch the broker refuses (MESSAGE_TOO_LARGE) is abortable; its sequence numbers are then skipped, so the
    next transaction's Produce gets OUT_OF_ORDER_SEQUENCE_NUMBER (the marker left the producer at epoch 0 with no
    sequence), which librdkafka answers, after EndTxn(abort), with the KIP-360 bump: InitProducerId v4 with its
    producer id and epoch, which the coordinator bumps (transactions.md §2.4, §6). The third transaction commits."""
    topic = unique("ck-bump")
    txn_cluster.create_topic(topic, 1, config={"max.message.bytes": 2000})
    client_id = unique("ck-bump")
    producer = txn_producer(txn_cluster, unique("ck-bump-tid"), **{"client.id": client_id, "linger.ms": 0})
    errors = []
    for value in (b"x" * 5000, b"second", b"third"):
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        try:
            producer.commit_transaction(PHASE_S)
        except ck.KafkaException as e:
            err = e.args[0]
            errors.append((err.code(), err.txn_requires_abort(), err.fatal()))
            producer.abort_transaction(PHASE_S)
    assert errors == [(ck.KafkaError.MSG_SIZE_TOO_LARGE, True, False),
                      (ck.KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, True, False)]
    # init, then the bump (again if it met the abort still writing its markers: CONCURRENT_TRANSACTIONS)
    assert count_requests(txn_cluster, client_id, "InitProducerId") >= 2
    assert txn_api_versions(txn_cluster, client_id)["InitProducerId"] == [4]
    wait_stable(txn_cluster, [(topic, 0)])
    data = [(b.producer_epoch, b.base_sequence) for b in stored_batches(txn_cluster, topic, 0)
            if not b.is_control_batch]
    assert data == [(1, 0)]                            # "third", at the epoch bumped once, sequence 0
    assert read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted", 1) == [Sent(topic, 0, b"third")]


def test_fetches_inside_an_aborted_transaction(txn_cluster):
    topic = new_topic(txn_cluster, "ck-interleaved", 1)
    committed, everything = interleaved_transactions(txn_cluster, topic, "ck")
    one_batch = {"max.partition.fetch.bytes": 1, "fetch.max.bytes": 1000, "message.max.bytes": 1000}
    assert read_to_end(txn_cluster, [(topic, 0)], "read_committed", len(committed), **one_batch) == committed
    assert read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted", len(everything), **one_batch) == everything
