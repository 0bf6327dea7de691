"""aiokafka 0.14 transactions against the kafkalab broker (issue 17, "Real clients").

aiokafka has only the v0 classes of the transaction APIs (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit) and FindCoordinator v1, and picks the highest version of its own within the broker's
range, so the broker must advertise minimum 0 (transactions.md §6). At those versions PRODUCER_FENCED (90) does
not exist: the broker answers INVALID_PRODUCER_EPOCH (47), which aiokafka raises as
:class:`aiokafka.errors.ProducerFenced` (§3, §3.1). It does no KIP-360 epoch bump. ``stop()`` does not abort an
open transaction, which is how the crash is simulated. The scenarios are described in ``_txn_support.py``.
"""
from __future__ import annotations

import asyncio
import time

import pytest

from ._broker_support import PHASE_S, TIMEOUT_MS, run_async, unique
from ._txn_support import (ABANDONED, CRASHED_LSO, FIRST_COMMIT, INPUT_COUNT, SHORT_TXN_TIMEOUT_MS, Sent,
                           assert_exactly_once, commit_abort_plan, count_requests, expected_reads, input_values,
                           interleaved_transactions, new_topic, ordered, output_of, plan_partitions, produce_inputs,
                           txn_api_versions, wait_lso, wait_stable)

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.errors import ProducerFenced  # noqa: E402

pytestmark = pytest.mark.interop

#: aiokafka's transaction APIs are v0 only (FindCoordinator v1)
V0 = {"AddPartitionsToTxn": [0], "EndTxn": [0], "FindCoordinator": [1], "InitProducerId": [0]}


async def txn_producer(cluster, tid: str, **conf) -> AIOKafkaProducer:
    config = dict(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid,
                  request_timeout_ms=TIMEOUT_MS, linger_ms=5)
    config.update(conf)
    producer = AIOKafkaProducer(**config)
    await producer.start()                             # InitProducerId
    return producer


async def consumer(cluster, isolation: str, **conf) -> AIOKafkaConsumer:
    config = dict(bootstrap_servers=cluster.bootstrap_servers, group_id=None, enable_auto_commit=False,
                  isolation_level=isolation, auto_offset_reset="earliest", request_timeout_ms=TIMEOUT_MS,
                  fetch_max_wait_ms=50)
    config.update(conf)
    c = AIOKafkaConsumer(**config)
    await c.start()
    return c


async def read_until(c, ends: dict, timeout: float = PHASE_S) -> list[Sent]:
    """getmany() until the position reached ``ends`` ({TopicPartition: offset}); returns what was read."""
    got = []
    end = time.monotonic() + timeout
    while True:
        positions = {tp: await c.position(tp) for tp in ends}
        if all(positions[tp] >= offset for tp, offset in ends.items()):
            return got
        assert time.monotonic() < end, f"read {got} before the deadline; at {positions}, ends {ends}"
        for _tp, messages in (await c.getmany(timeout_ms=100)).items():
            got.extend(Sent(m.topic, m.partition, m.value) for m in messages)


async def read_to_end(cluster, partitions, isolation: str, **conf) -> list[Sent]:
    c = await consumer(cluster, isolation, **conf)
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        return ordered(await read_until(c, await c.end_offsets(tps)))
    finally:
        await c.stop()


async def records_within(c, seconds: float) -> list:
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _tp, messages in (await c.getmany(timeout_ms=50)).items():
            got.extend(messages)
    return got


def test_commit_and_abort_across_two_topics(txn_cluster):
    t1, t2 = new_topic(txn_cluster, "aio-txn-a"), new_topic(txn_cluster, "aio-txn-b")
    plan = commit_abort_plan(t1, t2, "aio")
    client_id = unique("aio-txn")

    async def main():
        producer = await txn_producer(txn_cluster, unique("aio-tid"), client_id=client_id)
        try:
            for kind, sends in plan:
                await producer.begin_transaction()
                futures = [await producer.send(s.topic, s.value, partition=s.partition) for s in sends]
                if kind == "commit":
                    await producer.commit_transaction()
                else:
                    await asyncio.gather(*futures)     # written, then aborted
                    await producer.abort_transaction()
        finally:
            await producer.stop()
        partitions = plan_partitions(plan)
        wait_stable(txn_cluster, partitions)
        return (await read_to_end(txn_cluster, partitions, "read_committed"),
                await read_to_end(txn_cluster, partitions, "read_uncommitted"))

    committed, everything = run_async(main())
    assert (committed, everything) == expected_reads(plan)
    assert txn_api_versions(txn_cluster, client_id) == V0


def test_consume_process_produce_survives_a_crash(txn_cluster):
    source, sink = new_topic(txn_cluster, "aio-eos-in", 1), new_topic(txn_cluster, "aio-eos-out", 1)
    inputs = input_values("aio")
    produce_inputs(txn_cluster.bootstrap_servers, source, inputs)
    group, tid = unique("aio-eos"), unique("aio-eos-tid")
    source_tp = TopicPartition(source, 0)
    crashed, restarted = unique("aio-eos-1"), unique("aio-eos-2")

    async def instance(client_id):
        producer = await txn_producer(txn_cluster, tid, client_id=client_id)
        c = await consumer(txn_cluster, "read_committed", group_id=group)
        c.assign([source_tp])                          # from the group's committed offset
        return producer, c

    async def process(producer, c, n: int, commit: bool) -> None:
        batch = []
        end = time.monotonic() + PHASE_S
        while len(batch) < n:
            assert time.monotonic() < end, f"read {len(batch)} of {n} inputs"
            for _tp, messages in (await c.getmany(source_tp, timeout_ms=100, max_records=n - len(batch))).items():
                batch.extend(messages)
        await producer.begin_transaction()
        futures = [await producer.send(sink, output_of(m.value), partition=0) for m in batch]
        await producer.send_offsets_to_transaction({source_tp: batch[-1].offset + 1}, group)
        if commit:
            await producer.commit_transaction()
        else:
            await asyncio.gather(*futures)

    async def main():
        producer, c = await instance(crashed)
        await process(producer, c, FIRST_COMMIT, commit=True)
        await process(producer, c, ABANDONED, commit=False)
        await c.stop()
        await producer.stop()                          # no EndTxn: the transaction stays open
        assert count_requests(txn_cluster, crashed, "EndTxn") == 1
        wait_lso(txn_cluster, sink, CRASHED_LSO)        # the open transaction holds the LSO

        producer, c = await instance(restarted)        # InitProducerId fences the crashed one and aborts
        try:
            await process(producer, c, INPUT_COUNT - FIRST_COMMIT, commit=True)
        finally:
            await c.stop()
            await producer.stop()
        wait_stable(txn_cluster, [(sink, 0)])
        return ([s.value for s in await read_to_end(txn_cluster, [(sink, 0)], "read_committed")],
                [s.value for s in await read_to_end(txn_cluster, [(sink, 0)], "read_uncommitted")])

    committed, everything = run_async(main())
    assert_exactly_once(committed, everything, inputs)
    # its first InitProducerId met the open transaction: CONCURRENT_TRANSACTIONS while the broker aborts it
    assert count_requests(txn_cluster, restarted, "InitProducerId") >= 2
    assert txn_api_versions(txn_cluster, restarted) == {**V0, "AddOffsetsToTxn": [0], "TxnOffsetCommit": [0]}


def test_a_second_producer_fences_the_first(txn_cluster):
    topic = new_topic(txn_cluster, "aio-fence", 1)
    tid = unique("aio-fence-tid")

    async def main():
        first = await txn_producer(txn_cluster, tid)
        second = None
        try:
            await first.begin_transaction()
            await (await first.send(topic, b"zombie-1", partition=0))
            second = await txn_producer(txn_cluster, tid)  # bumps the epoch and aborts the first's transaction
            await second.begin_transaction()
            await second.send(topic, b"live", partition=0)
            await second.commit_transaction()
            # Produce v<=7 with the old epoch and EndTxn v0 both get 47: aiokafka's ProducerFenced
            with pytest.raises(ProducerFenced):
                await (await first.send(topic, b"zombie-2", partition=0))
                await first.commit_transaction()
        finally:
            await first.stop()
            if second is not None:
                await second.stop()
        wait_stable(txn_cluster, [(topic, 0)])
        return (await read_to_end(txn_cluster, [(topic, 0)], "read_committed"),
                await read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted"))

    committed, everything = run_async(main())
    assert committed == [Sent(topic, 0, b"live")]
    assert everything == [Sent(topic, 0, b"zombie-1"), Sent(topic, 0, b"live")]


def test_read_committed_waits_at_the_lso_until_commit_or_timeout(txn_cluster):
    topic = new_topic(txn_cluster, "aio-lso", 1)
    tp = TopicPartition(topic, 0)

    async def main():
        reader = await consumer(txn_cluster, "read_committed")
        reader.assign([tp])
        await reader.seek_to_beginning(tp)
        producers = []
        try:
            open_txn = await txn_producer(txn_cluster, unique("aio-lso-open"))
            later = await txn_producer(txn_cluster, unique("aio-lso-later"))
            producers += [open_txn, later]
            await later.begin_transaction()                      # first a committed record: the reader is fetching
            await later.send(topic, b"start", partition=0)
            await later.commit_transaction()
            assert await read_until(reader, {tp: 2}) == [Sent(topic, 0, b"start")]
            await open_txn.begin_transaction()
            await (await open_txn.send(topic, b"open", partition=0))
            await later.begin_transaction()
            await later.send(topic, b"later", partition=0)
            await later.commit_transaction()
            wait_lso(txn_cluster, topic, (2, 5))
            assert await records_within(reader, 0.5) == [] and await reader.position(tp) == 2
            await open_txn.commit_transaction()
            assert await read_until(reader, {tp: 6}) == [Sent(topic, 0, b"open"), Sent(topic, 0, b"later")]

            expiring = await txn_producer(txn_cluster, unique("aio-lso-expiring"),
                                          transaction_timeout_ms=SHORT_TXN_TIMEOUT_MS)
            producers.append(expiring)
            started = time.monotonic()
            await expiring.begin_transaction()
            await (await expiring.send(topic, b"expired", partition=0))
            await later.begin_transaction()
            await later.send(topic, b"after-expiry", partition=0)
            await later.commit_transaction()
            assert await read_until(reader, {tp: 10}) == [Sent(topic, 0, b"after-expiry")]
            # not before the coordinator aborted it (its clock starts at AddPartitionsToTxn, after started)
            assert SHORT_TXN_TIMEOUT_MS / 1000 <= time.monotonic() - started < SHORT_TXN_TIMEOUT_MS / 1000 + 5
            with pytest.raises(ProducerFenced):        # the abort bumped its epoch: EndTxn v0 gets 47
                await expiring.commit_transaction()
        finally:
            await reader.stop()
            for p in producers:
                await p.stop()

    run_async(main())


def test_fetches_inside_an_aborted_transaction(txn_cluster):
    topic = new_topic(txn_cluster, "aio-interleaved", 1)
    committed, everything = interleaved_transactions(txn_cluster, topic, "aio")
    one_batch = dict(max_partition_fetch_bytes=1, fetch_max_bytes=1)

    async def main():
        return (await read_to_end(txn_cluster, [(topic, 0)], "read_committed", **one_batch),
                await read_to_end(txn_cluster, [(topic, 0)], "read_uncommitted", **one_batch))

    assert run_async(main()) == (committed, everything)
