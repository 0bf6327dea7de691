"""Shared pieces of the real-client transaction tests (``test_transactions_<client>.py``).

Each client file runs the same scenarios of issue 17 against a kafkalab broker, with that client's own
transactional producer and its own consumer, and checks the API versions it sent against transactions.md §6:

* **commit and abort**: one transaction across two topics is committed, a second one aborted, a third committed;
  a read_committed consumer reads exactly the committed values, a read_uncommitted one every value, in offset
  order (:func:`commit_abort_plan`);
* **consume-process-produce after a crash**: a processor reads ``input``, writes ``out-<value>`` and sends its
  offsets inside each transaction; the first instance commits one transaction, writes a second and dies without
  deciding it; a new instance with the same ``transactional.id`` fences it, the broker aborts the open
  transaction, and the new one finishes the input: every output exists exactly once for read_committed (counted),
  while read_uncommitted still shows the abandoned copies;
* **fencing**: a second producer with the same ``transactional.id`` fences the first, which gets its client's
  fenced error and whose records nobody reads committed;
* **the LSO**: a read_committed consumer stops at an open transaction's first offset even when a later
  transaction on the same partition has committed, and goes on once the open one commits, or once the
  coordinator aborts it at ``transaction.timeout.ms`` (a short one here, with a broker that looks for timed-out
  transactions every :data:`ABORT_SCAN_MS`);
* **fetches inside an aborted transaction** (:func:`interleaved_transactions`): one batch per fetch, so most
  fetches start after the aborted transaction's first offset.

Client-specific traps (the fenced error's code, KIP-360 epoch bumps) are in the client's own file.

Readers read to the end of each partition and the tests compare exact lists, so a missing or extra record fails.
Before reading committed data, :func:`wait_stable` waits until every marker is written (the last stable offset
equals the high watermark): EndTxn is answered once the decision is durable, the markers follow.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import NamedTuple

from ._broker_support import PHASE_S, unique

#: How often the coordinator looks for transactions past their timeout (Kafka's default is 10 s).
ABORT_SCAN_MS = 100

#: A single broker: ``__transaction_state`` and ``__consumer_offsets`` with one replica and few partitions (they
#: load faster), groups without the initial rebalance delay and with short sessions (a crashed member leaves
#: soon), and a quick timed-out-transaction scan.
TXN_OVERRIDES = {"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
                 "transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 5,
                 "group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": ABORT_SCAN_MS}

#: The transaction timeout (ms) of the producer the coordinator aborts; librdkafka's minimum is 1000.
SHORT_TXN_TIMEOUT_MS = 1000


class Sent(NamedTuple):
    topic: str
    partition: int
    value: bytes


def new_topic(cluster, tag: str, partitions: int = 2) -> str:
    name = unique(tag)
    cluster.create_topic(name, partitions)
    return name


def commit_abort_plan(t1: str, t2: str, tag: str) -> list[tuple[str, list[Sent]]]:
    """Three transactions, each across both topics: committed, aborted, committed."""
    def txn(kind, n):
        return [Sent(t1, 0, f"{tag}-{kind}-a".encode()), Sent(t2, 0, f"{tag}-{kind}-b".encode()),
                Sent(t2, 1, f"{tag}-{kind}-c".encode()), Sent(t1, 0, f"{tag}-{kind}-d".encode())][:n]
    return [("commit", txn("c1", 4)), ("abort", txn("x", 4)), ("commit", txn("c2", 3))]


def expected_reads(plan) -> tuple[list[Sent], list[Sent]]:
    """(read_committed, read_uncommitted): what a reader of every partition sees, sorted like :func:`ordered`."""
    committed = [s for kind, sends in plan if kind == "commit" for s in sends]
    everything = [s for _kind, sends in plan for s in sends]
    return ordered(committed), ordered(everything)


def ordered(records) -> list[Sent]:
    """Records by (topic, partition), keeping the order within each partition (offset order)."""
    return sorted(records, key=lambda s: (s.topic, s.partition))  # sorted() is stable


def plan_partitions(plan) -> list[tuple[str, int]]:
    return sorted({(s.topic, s.partition) for _kind, sends in plan for s in sends})


def wait_stable(cluster, partitions, timeout: float = PHASE_S) -> None:
    """Wait until no transaction is open on any of ``partitions`` (LSO == high watermark, markers written)."""
    logs = [cluster.broker(0).log_manager.get_log(t, p) for t, p in partitions]
    end = time.monotonic() + timeout
    while True:
        open_ = [(tp, log.last_stable_offset, log.high_watermark) for tp, log in zip(partitions, logs)
                 if log.last_stable_offset != log.high_watermark]
        if not open_:
            return
        assert time.monotonic() < end, f"transactions still open (partition, LSO, HW): {open_}"
        time.sleep(0.02)


def lso(cluster, topic: str, partition: int) -> tuple[int, int]:
    """(last stable offset, high watermark) of one partition, as the broker has them now."""
    log = cluster.broker(0).log_manager.get_log(topic, partition)
    return log.last_stable_offset, log.high_watermark


# -- consume-process-produce ------------------------------------------------------------------------------------------
INPUT_COUNT = 8
#: The first instance commits the outputs of the first FIRST_COMMIT inputs, then writes (and abandons) the next
#: ABANDONED ones; the restarted instance must produce outputs for all of the rest, each once.
FIRST_COMMIT = 3
ABANDONED = 3
#: (LSO, high watermark) of the output after the crash: the first transaction and its marker, then the open one
CRASHED_LSO = (FIRST_COMMIT + 1, FIRST_COMMIT + 1 + ABANDONED)


def input_values(tag: str) -> list[bytes]:
    return [f"{tag}-in-{i}".encode() for i in range(INPUT_COUNT)]


def output_of(value: bytes) -> bytes:
    return b"out-" + value


def assert_exactly_once(committed_outputs, uncommitted_outputs, inputs) -> None:
    """Every input's output exactly once for read_committed; the abandoned copies are in the log (so the crash
    really left an open transaction behind, and the test could have seen duplicates)."""
    counts = Counter(committed_outputs)
    assert counts == Counter(output_of(v) for v in inputs), \
        f"read_committed outputs are not exactly one per input: {sorted(counts.items())}"
    abandoned = Counter(uncommitted_outputs) - counts
    assert abandoned == Counter(output_of(v) for v in inputs[FIRST_COMMIT:FIRST_COMMIT + ABANDONED]), \
        f"the crashed instance's uncommitted outputs are not the expected ones: {sorted(abandoned.items())}"


def produce_inputs(bootstrap: str, topic: str, values) -> None:
    """The processor's input, written non-transactionally to partition 0 (so it is consumed in order)."""
    import confluent_kafka as ck

    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for v in values:
        p.produce(topic, value=v, partition=0)
    assert p.flush(PHASE_S) == 0


# -- what travelled ---------------------------------------------------------------------------------------------------
TXN_APIS = ("FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
            "TxnOffsetCommit")


def txn_api_versions(cluster, client_id: str) -> dict[str, list[int]]:
    """The versions of the transaction APIs one client sent (from the broker's request log)."""
    time.sleep(0.05)  # a request is logged once its response is written
    seen: dict[str, set] = {}
    for r in cluster.broker(0).channel.request_log.records:
        if r.client_id == client_id and r.api_name in TXN_APIS:
            seen.setdefault(r.api_name, set()).add(r.api_version)
    return {name: sorted(v) for name, v in sorted(seen.items())}


def count_requests(cluster, client_id: str, api_name: str) -> int:
    time.sleep(0.05)
    return sum(1 for r in cluster.broker(0).channel.request_log.records
               if r.client_id == client_id and r.api_name == api_name)


def wait_lso(cluster, topic: str, expected: tuple[int, int], partition: int = 0, timeout: float = PHASE_S) -> None:
    """Wait until the partition's (LSO, high watermark) is ``expected`` (a marker is written after EndTxn)."""
    end = time.monotonic() + timeout
    while lso(cluster, topic, partition) != expected:
        assert time.monotonic() < end, f"(LSO, HW) of {topic}-{partition} is {lso(cluster, topic, partition)}, " \
                                       f"expected {expected}"
        time.sleep(0.02)


# -- fetches that start inside an aborted transaction -----------------------------------------------------------------
def interleaved_transactions(cluster, topic: str, tag: str, pairs: int = 5) -> tuple[list[Sent], list[Sent]]:
    """Two transactions on partition 0 of ``topic``, one batch per record, alternating: ``a0 c0 a1 c1 ...``; the
    ``a`` one aborts and the ``c`` one commits. A reader that fetches one batch at a time starts most fetches
    inside the aborted transaction, which the broker must still list in ``aborted_transactions`` (it began before
    the fetch offset; transactions.md pitfall 11). Returns (read_committed, read_uncommitted) as they must read."""
    import confluent_kafka as ck

    aborting, committing = (ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
                                         "transactional.id": unique(f"{tag}-{kind}")}) for kind in "ac")
    for p in (aborting, committing):
        p.init_transactions(PHASE_S)
        p.begin_transaction()
    everything = []
    for i in range(pairs):
        for p, kind in ((aborting, "a"), (committing, "c")):
            value = f"{tag}-{kind}{i}".encode()
            p.produce(topic, value, partition=0)
            assert p.flush(PHASE_S) == 0           # one batch per record
            everything.append(Sent(topic, 0, value))
    aborting.abort_transaction(PHASE_S)
    committing.commit_transaction(PHASE_S)
    wait_stable(cluster, [(topic, 0)])
    return [s for s in everything if b"-c" in s.value], everything
