"""kafkajs 2.2.4 transactions against the kafkalab broker (issue 17, "Real clients").

kafkajs sends InitProducerId and the transaction APIs at v0-1 and FindCoordinator v0-2 (transactions.md §6): at
those versions PRODUCER_FENCED (90) does not exist and the broker answers INVALID_PRODUCER_EPOCH (47). kafkajs
retries differently from the Java client (§3.1, pitfall 19): CONCURRENT_TRANSACTIONS (51) is retried for
InitProducerId (the restarted processor below gets it while the broker aborts the crashed one's transaction),
while EndTxn and AddOffsetsToTxn errors, fencing included, go to the application unretried. kafkajs has no consumer
without a group; its consumers are read_committed unless ``readUncommitted``. Each scenario runs in one node
process (``kafkajs/transactions.js``); the scenarios are described in ``_txn_support.py``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ._broker_support import PHASE_S, kafkajs, unique
from ._txn_support import (ABANDONED, CRASHED_LSO, FIRST_COMMIT, INPUT_COUNT, SHORT_TXN_TIMEOUT_MS, Sent,
                           assert_exactly_once, commit_abort_plan, count_requests, expected_reads, input_values,
                           interleaved_transactions, lso, new_topic, ordered, plan_partitions, produce_inputs,
                           txn_api_versions, wait_lso, wait_stable)

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).resolve().parent / "kafkajs" / "transactions.js"


def run(cluster, action: str, timeout: float = PHASE_S, **spec) -> dict:
    return kafkajs({"brokers": [cluster.bootstrap_servers], "action": action, **spec}, timeout=timeout,
                   script=SCRIPT)


def read(cluster, topics, count: int, uncommitted: bool = False, **options) -> list[Sent]:
    """Every record a kafkajs consumer reads from the beginning of ``topics``: ``count`` of them and whatever
    else arrives within the next 300 ms."""
    report = run(cluster, "read", topics=topics, read_uncommitted=uncommitted, count=count, settle_ms=300, **options)
    return ordered(Sent(t, p, v.encode()) for t, p, v in report["records"])


def test_commit_and_abort_across_two_topics(txn_cluster):
    t1, t2 = new_topic(txn_cluster, "js-txn-a"), new_topic(txn_cluster, "js-txn-b")
    plan = commit_abort_plan(t1, t2, "js")
    client_id = unique("js-txn")
    run(txn_cluster, "plan", client_id=client_id, transactional_id=unique("js-tid"),
        plan=[[kind, [[s.topic, s.partition, s.value.decode()] for s in sends]] for kind, sends in plan])
    wait_stable(txn_cluster, plan_partitions(plan))
    committed, everything = expected_reads(plan)
    assert read(txn_cluster, [t1, t2], len(committed)) == committed
    assert read(txn_cluster, [t1, t2], len(everything), uncommitted=True) == everything
    assert txn_api_versions(txn_cluster, client_id) == {
        "AddPartitionsToTxn": [1], "EndTxn": [1], "FindCoordinator": [2], "InitProducerId": [1]}


def test_consume_process_produce_survives_a_crash(txn_cluster):
    source, sink = new_topic(txn_cluster, "js-eos-in", 1), new_topic(txn_cluster, "js-eos-out", 1)
    inputs = input_values("js")
    produce_inputs(txn_cluster.bootstrap_servers, source, inputs)
    common = dict(input=source, output=sink, group=unique("js-eos"), transactional_id=unique("js-eos-tid"))

    crashed = unique("js-eos-1")
    report = run(txn_cluster, "process", client_id=crashed, steps=[[FIRST_COMMIT, "commit"], [ABANDONED, "leave"]],
                 **common)
    assert report["crashed"] and report["processed"] == [
        [v.decode() for v in inputs[:FIRST_COMMIT]], [v.decode() for v in inputs[FIRST_COMMIT:FIRST_COMMIT + ABANDONED]]]
    assert count_requests(txn_cluster, crashed, "EndTxn") == 1
    wait_lso(txn_cluster, sink, CRASHED_LSO)        # the open transaction holds the LSO

    restarted = unique("js-eos-2")
    report = run(txn_cluster, "process", client_id=restarted, steps=[[INPUT_COUNT - FIRST_COMMIT, "commit"]],
                 timeout=2 * PHASE_S, **common)
    assert report["processed"] == [[v.decode() for v in inputs[FIRST_COMMIT:]]]
    # its first InitProducerId met the open transaction: CONCURRENT_TRANSACTIONS while the broker aborts it, retried
    assert count_requests(txn_cluster, restarted, "InitProducerId") >= 2
    wait_stable(txn_cluster, [(sink, 0)])
    committed = [s.value for s in read(txn_cluster, [sink], INPUT_COUNT)]
    everything = [s.value for s in read(txn_cluster, [sink], INPUT_COUNT + ABANDONED, uncommitted=True)]
    assert_exactly_once(committed, everything, inputs)
    assert txn_api_versions(txn_cluster, restarted) == {
        "AddOffsetsToTxn": [1], "AddPartitionsToTxn": [1], "EndTxn": [1], "FindCoordinator": [2],
        "InitProducerId": [1], "TxnOffsetCommit": [1]}


def test_a_second_producer_fences_the_first(txn_cluster):
    topic = new_topic(txn_cluster, "js-fence", 1)
    report = run(txn_cluster, "fence", topic=topic, transactional_id=unique("js-fence-tid"),
                 group=unique("js-fence-group"))
    # Produce v7 with the old epoch, AddOffsetsToTxn v1 and EndTxn v1 for the old epoch: 47 each time, and kafkajs
    # hands each to the application (its own name for 47 is INVALID_PRODUCER_EPOCH)
    for step in ("send", "send_offsets", "commit"):
        assert report[step] is not None and report[step]["type"] == "INVALID_PRODUCER_EPOCH", (step, report)
    wait_stable(txn_cluster, [(topic, 0)])
    assert read(txn_cluster, [topic], 1) == [Sent(topic, 0, b"live")]
    assert read(txn_cluster, [topic], 2, uncommitted=True) == [Sent(topic, 0, b"zombie-1"), Sent(topic, 0, b"live")]


def test_read_committed_waits_at_the_lso_until_commit_or_timeout(txn_cluster):
    topic = new_topic(txn_cluster, "js-lso", 1)
    report = run(txn_cluster, "lso", topic=topic, transaction_timeout=SHORT_TXN_TIMEOUT_MS, blocked_ms=500,
                 timeout=2 * PHASE_S)
    assert report["start"] == [[topic, 0, "start"]]   # the reader is fetching before the open transaction
    assert report["blocked"] == []                    # "later" is committed, but after the open transaction
    assert report["after_commit"] == [[topic, 0, "open"], [topic, 0, "later"]]
    assert report["after_expiry"] == [[topic, 0, "after-expiry"]]
    assert SHORT_TXN_TIMEOUT_MS <= report["waited_ms"] < SHORT_TXN_TIMEOUT_MS + 5000  # not before the abort
    assert report["expired_commit"]["type"] == "INVALID_PRODUCER_EPOCH", report   # the abort bumped its epoch
    assert lso(txn_cluster, topic, 0) == (10, 10)


def test_fetches_inside_an_aborted_transaction(txn_cluster):
    topic = new_topic(txn_cluster, "js-interleaved", 1)
    committed, everything = interleaved_transactions(txn_cluster, topic, "js")
    assert read(txn_cluster, [topic], len(committed), max_bytes_per_partition=1) == committed
    assert read(txn_cluster, [topic], len(everything), uncommitted=True, max_bytes_per_partition=1) == everything
