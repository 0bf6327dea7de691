"""Transactions through faults on three brokers: a broker dies in the middle of a commit -- after EndTxn was
answered, before every marker is written -- and afterwards each transaction is entirely visible or entirely
invisible to read_committed consumers.

Workload: kafkalab's transactional producer commits many small transactions, one record on each of the three
partitions of ``orders`` (replication factor 3, ``min.insync.replicas=2``, leaders spread over the brokers), while
:class:`~kafkalab.cluster.History` records every send and every read_committed poll; the history checker judges
the run (partial-transaction, aborted-read, lost-write, duplicate...).

The middle of a commit is made deterministic with the fault tools: the link between the transaction coordinator and
the leader of one data partition is cut, so the coordinator writes the other markers but not that one, and
DescribeTransactions shows the transaction in PrepareCommit waiting for exactly that partition. A read_committed
consumer then sees the transaction on the other partitions and stops at the last stable offset on this one. Then:

* **the data partition's leader is killed**: a follower becomes leader, the coordinator looks the leader up again
  and writes the marker there;
* **the transaction coordinator is killed**: the broker that becomes leader of ``__transaction_state`` loads the
  PrepareCommit and sends the markers again (the new leader of the data partition's marker reaches it);
* **exactly-once consume-process-produce**: an application reading ``cpp-in`` and writing one output per input
  (offsets sent in the same transaction) crashes once with a transaction open (the next life's InitProducerId
  aborts it) and once right after a commit was answered while its coordinator is then killed; the next life starts
  from the group's committed offset. No input's output may be visible twice (duplicate-output) or be missing.

A last read of every partition to its end, and the checker finds nothing. The same history, corrupted by hand (a
record of one committed transaction dropped from the reads; a committed transaction recorded as aborted), shows
that it would.
"""
from __future__ import annotations

import copy
import time

import pytest

from kafkalab.cluster import Cluster, History
from kafkalab.clients import Consumer, Producer
from kafkalab.protocol import ApiKey, ErrorCode as E, request_class

from tests.broker._admin_support import wire

DescribeTransactions = request_class(ApiKey.DESCRIBE_TRANSACTIONS)

TOPIC_PARTITIONS = 3
OVERRIDES = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 100, "replica.fetch.backoff.ms": 100,
             "auto.create.topics.enable": False, "offsets.topic.num.partitions": 1,
             "transaction.state.log.num.partitions": 1, "transaction.state.log.replication.factor": 3,
             "transaction.state.log.min.isr": 2}
TXN_STATE = "__transaction_state"


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides=OVERRIDES) as c:
        yield c


class Workload:
    """One transactional producer writing transactions of one record per partition, recorded in ``history``."""

    def __init__(self, cluster, history: History, topic: str, transactional_id: str):
        self.cluster, self.history, self.topic, self.transactional_id = cluster, history, topic, transactional_id
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                                  "transactional.id": transactional_id, "linger.ms": 0, "max.block.ms": 30_000,
                                  "request.timeout.ms": 3000, "retry.backoff.ms": 50,
                                  "metadata.max.age.ms": 1000})
        self.producer.init_transactions(timeout=30)
        self.count = 0

    def begin(self):
        """Begin a transaction and send its records (acknowledged before this returns); returns the TxnOp."""
        txn = self.history.transaction(process=self.transactional_id)
        self.producer.begin_transaction()
        sent = []
        for partition in range(TOPIC_PARTITIONS):
            value = f"{self.transactional_id}-{self.count}-{partition}".encode()
            sent.append((txn.send(value, partition=partition), self.producer.send(self.topic, value,
                                                                                   partition=partition)))
        self.count += 1
        for op, future in sent:
            metadata = future.result(30)
            op.ok(metadata.partition, metadata.offset)
        return txn

    def commit(self, txn) -> None:
        try:
            self.producer.commit_transaction(timeout=30)
        except Exception as e:                     # noqa: BLE001 - the outcome is unknown to the client
            txn.info(repr(e))
            raise
        txn.commit()

    def run(self, transactions: int) -> None:
        for _ in range(transactions):
            self.commit(self.begin())

    def close(self) -> None:
        self.producer.close(5)


def read_committed(cluster, history: History, topic: str, *, to_end: bool, seconds: float = 1.0,
                   process="reader") -> list:
    """A read_committed consumer reads every partition from the start, recording its polls: until each partition's
    end (its last stable offset, then recorded as a complete read) with ``to_end``, else for ``seconds``."""
    partitions = [(topic, p) for p in range(TOPIC_PARTITIONS)]
    values = []
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "isolation.level": "read_committed",
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as consumer:
        consumer.assign(partitions)
        for _, p in partitions:
            history.seek(p, 0, process=process)
        ends = consumer.end_offsets(partitions) if to_end else {}
        deadline = time.monotonic() + (30 if to_end else seconds)
        while time.monotonic() < deadline:
            records = consumer.poll(0.2)
            if records:
                history.poll([(r.partition, r.offset, r.value) for r in records], process=process,
                             read_committed=True)
                values += [r.value for r in records]
            if to_end and all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
        if to_end:
            for tp, end in ends.items():
                assert consumer.position(tp) >= end, f"read stopped at {consumer.position(tp)} of {end} in {tp}"
                history.read_to_end(tp[1], end)
    return values


def coordinator(cluster) -> int:
    return cluster.partition_state(TXN_STATE, 0)["leader"]


def describe(cluster, broker_id: int, transactional_id: str):
    return wire(cluster.broker(broker_id), DescribeTransactions(transactional_ids=(transactional_id,)), 0) \
        .transaction_states[0]


def wait_for_state(cluster, transactional_id: str, wanted: str, timeout: float = 20.0):
    """The description once the transaction's coordinator (whoever it is by then) says ``wanted``."""
    deadline = time.monotonic() + timeout
    while True:
        leader = coordinator(cluster)
        d = None
        if leader >= 0 and cluster.broker(leader).is_running:
            try:
                d = describe(cluster, leader, transactional_id)
            except OSError:
                d = None
        if d is not None and d.error_code == E.NONE and d.transaction_state == wanted:
            return d
        assert time.monotonic() < deadline, f"{transactional_id} never reached {wanted}: {d}"
        time.sleep(0.05)


def wait_for_full_isr(cluster, topic: str, partitions) -> None:
    """Every replica of ``partitions`` back in the ISR (nothing to wait for if the topic does not exist yet)."""
    def in_sync(p):
        state = cluster.partition_state(topic, p)
        return not state["replicas"] or len(state["isr"]) == len(state["replicas"])
    cluster.wait_until(lambda: all(in_sync(p) for p in partitions), 30,
                       f"{topic} did not get its replicas back in sync")


def setup_topic(cluster, topic: str) -> None:
    cluster.create_topic(topic, config={"min.insync.replicas": 2},
                         assignment={p: [(p + i) % 3 for i in range(3)] for p in range(TOPIC_PARTITIONS)})


def commit_with_one_marker_held_back(cluster, workload: Workload, begin=None):
    """Commit a transaction (``begin()`` begins it; ``workload.begin`` by default) while the coordinator cannot
    reach the leader of one partition of the workload's topic. Returns (txn, the coordinator's id, that leader's id,
    that partition) once EndTxn is answered and DescribeTransactions shows the commit waiting for the markers of
    that leader's partitions only (that partition, and ``__consumer_offsets`` if it leads the group's)."""
    txn_coordinator = coordinator(cluster)
    victim_partition = next(p for p in range(TOPIC_PARTITIONS)
                            if cluster.partition_state(workload.topic, p)["leader"] != txn_coordinator)
    victim = cluster.partition_state(workload.topic, victim_partition)["leader"]
    txn = (begin or workload.begin)()
    cluster.partition(txn_coordinator, victim)
    workload.commit(txn)                                          # EndTxn answered: PrepareCommit is durable
    deadline = time.monotonic() + 10
    while True:                                                   # the reachable leaders' markers get written
        d = describe(cluster, txn_coordinator, workload.transactional_id)
        pending = {(t.topic, p) for t in d.topics for p in t.partitions}
        held_back = all(cluster.partition_state(t, p)["leader"] == victim for t, p in pending)
        if held_back or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert d.transaction_state == "PrepareCommit" and (workload.topic, victim_partition) in pending and held_back, \
        (d, victim)
    return txn, txn_coordinator, victim, victim_partition


def check_and_prove_the_checker(history: History, txn, held_back_partition: int, transactions: int) -> None:
    result = history.check()
    assert result.valid, str(result)
    assert result.stats["committed"] == result.stats["transactions"] == transactions, str(result)
    assert result.stats["read"] == transactions * TOPIC_PARTITIONS, str(result)

    # Corrupted copies: the checker is not blind
    dropped = copy.deepcopy(history)
    value = next(op.value for op in txn.sends if op.partition != held_back_partition)
    dropped.events = [e if e[0] != "poll" else (e[0], e[1], [r for r in e[2] if r[2] != value], e[3])
                      for e in dropped.events]
    anomalies = dropped.check().anomalies
    assert "partial-transaction" in anomalies, anomalies
    assert anomalies["partial-transaction"][0]["missing"][0]["value"] == value
    flipped = copy.deepcopy(history)
    flipped.transactions[history.transactions.index(txn)].type = "abort"
    assert "aborted-read" in flipped.check().anomalies


def test_data_partition_leader_killed_mid_commit(cluster):
    topic, tid = "orders-leader-kill", "leader-kill"
    setup_topic(cluster, topic)
    history = History()
    workload = Workload(cluster, history, topic, tid)
    try:
        workload.run(8)
        txn, txn_coordinator, victim, victim_partition = commit_with_one_marker_held_back(cluster, workload)
        # mid-commit: the others partitions show it, the held-back one stops at its last stable offset
        during = read_committed(cluster, history, topic, to_end=False)
        assert {op.value for op in txn.sends if op.partition != victim_partition} <= set(during)
        assert next(op.value for op in txn.sends if op.partition == victim_partition) not in during

        cluster.kill(victim)
        cluster.wait_until(lambda: cluster.partition_state(topic, victim_partition)["leader"] not in (-1, victim), 15,
                           "no new leader")
        wait_for_state(cluster, tid, "CompleteCommit")             # the marker went to the new leader
        cluster.heal()
        cluster.restart(victim)
        workload.run(8)
    finally:
        cluster.heal()
        workload.close()
    read_committed(cluster, history, topic, to_end=True)
    check_and_prove_the_checker(history, txn, victim_partition, 17)
    wait_for_full_isr(cluster, topic, range(TOPIC_PARTITIONS))


def test_transaction_coordinator_killed_mid_commit(cluster):
    topic, tid = "orders-coordinator-kill", "coordinator-kill"
    setup_topic(cluster, topic)
    wait_for_full_isr(cluster, TXN_STATE, [0])
    history = History()
    workload = Workload(cluster, history, topic, tid)
    try:
        workload.run(8)
        txn, txn_coordinator, victim, victim_partition = commit_with_one_marker_held_back(cluster, workload)
        old = describe(cluster, txn_coordinator, tid)
        read_committed(cluster, history, topic, to_end=False)

        cluster.kill(txn_coordinator)
        cluster.wait_until(lambda: coordinator(cluster) not in (-1, txn_coordinator), 15, "no new coordinator")
        d = wait_for_state(cluster, tid, "CompleteCommit")         # loaded PrepareCommit, sent the markers again
        assert (d.producer_id, d.producer_epoch) == (old.producer_id, old.producer_epoch)
        cluster.heal()
        cluster.restart(txn_coordinator)
        workload.run(8)
    finally:
        cluster.heal()
        workload.close()
    read_committed(cluster, history, topic, to_end=True)
    check_and_prove_the_checker(history, txn, victim_partition, 17)


# -- exactly-once consume-process-produce through a crash and a coordinator kill ----------------------------------
class Processor:
    """One life of a consume-process-produce application: a read_committed consumer of ``source`` in ``group``
    (starting from the group's committed offset) and a transactional producer writing one output per input to
    ``sink``, each recorded with its input as ``source``; the offsets go into the same transaction."""

    def __init__(self, cluster, history: History, source: str, sink: str, group: str, life: int):
        self.history, self.source, self.sink, self.life = history, source, sink, life
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                                  "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.consumer.assign([(source, 0)])
        self.workload = Workload(cluster, history, sink, "processor")
        self.pending: list = []

    def begin(self, batch: int = 4):
        """Read up to ``batch`` inputs, begin a transaction with their outputs and offsets; returns the TxnOp, or
        None when nothing is left to read."""
        deadline = time.monotonic() + 5
        while len(self.pending) < batch and time.monotonic() < deadline:
            got = self.consumer.poll(0.2)
            self.pending += got
            if not got and self.pending:
                break
        inputs, self.pending = self.pending[:batch], self.pending[batch:]
        if not inputs:
            return None
        txn = self.history.transaction(process="processor")
        producer = self.workload.producer
        producer.begin_transaction()
        sent = []
        for record in inputs:
            value = record.value.replace(b"in-", b"out-") + b"-life-%d" % self.life
            partition = int(record.value.split(b"-")[1]) % TOPIC_PARTITIONS
            sent.append((txn.send(value, partition=partition, source=record.value),
                         producer.send(self.sink, value, partition=partition)))
        producer.send_offsets_to_transaction({(self.source, 0): inputs[-1].offset + 1},
                                             self.consumer.group_metadata())
        for op, future in sent:
            metadata = future.result(30)
            op.ok(metadata.partition, metadata.offset)
        return txn

    def crash(self) -> None:
        """Stop without committing or aborting anything (the next life's InitProducerId fences this one)."""
        self.consumer.close()
        self.workload.producer.close(0)


def test_consume_process_produce_outputs_each_input_once_through_a_crash_and_a_coordinator_kill(cluster):
    source, sink, group, inputs = "cpp-in", "cpp-out", "cpp", 40
    cluster.create_topic(source, 1, 3, {"min.insync.replicas": 2})
    setup_topic(cluster, sink)
    wait_for_full_isr(cluster, TXN_STATE, [0])
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as plain:
        for i in range(inputs):
            plain.send(source, b"in-%d" % i, partition=0)
    history = History()

    life = Processor(cluster, history, source, sink, group, 0)
    for _ in range(3):
        life.workload.commit(life.begin())
    crashed = life.begin()                               # outputs written, offsets sent, never committed
    life.crash()

    life = Processor(cluster, history, source, sink, group, 1)   # InitProducerId aborts the crashed transaction
    crashed.abort()
    life.workload.commit(life.begin())
    txn, txn_coordinator, _, held_back = commit_with_one_marker_held_back(cluster, life.workload, life.begin)
    life.crash()                                         # the commit was answered: the next life must not redo it
    cluster.kill(txn_coordinator)
    cluster.heal()
    cluster.wait_until(lambda: coordinator(cluster) not in (-1, txn_coordinator), 15, "no new coordinator")

    life = Processor(cluster, history, source, sink, group, 2)
    try:
        while (txn_left := life.begin()) is not None:
            life.workload.commit(txn_left)
    finally:
        life.crash()
        cluster.restart(txn_coordinator)
    read_committed(cluster, history, sink, to_end=True)
    result = history.check()
    assert result.valid, str(result)
    assert result.stats["read"] == inputs, str(result)     # every input's output, once
    assert all(op.source is not None for op in history.sends)
    assert txn.type == "commit" and txn_coordinator not in (-1, coordinator(cluster))

    twice = copy.deepcopy(history)                         # the crashed life's outputs, shown as committed
    twice.transactions[crashed.index].type = "commit"
    twice.events.append(("poll", "forger", [(op.partition, op.offset, op.value) for op in crashed.sends], True))
    assert "duplicate-output" in twice.check().anomalies
