"""What transactions cost, in one run: transactional against idempotent produce, read_committed against
read_uncommitted consume, on kafkalab and on the peer brokers that have transactions.

    .venv/bin/python benchmarks/transactions.py              # 50,000 records per run, 3 rounds
    .venv/bin/python benchmarks/transactions.py --quick      # 10,000 records, 1 round (rough numbers)
    .venv/bin/python benchmarks/transactions.py --brokers kafkalab,noida --records 100000 --rounds 5

Each broker (``--brokers``, default kafkalab, tansu and noida: both peers commit confluent-kafka's transactions;
a peer that is not installed, or a broker that cannot run a transaction, is reported and left out) runs alone,
one after the other. kafkalab is one ``kafkalab broker`` process with ``transaction.state.log.replication.factor``
and ``transaction.state.log.min.isr`` at 1 (one broker cannot hold three replicas of ``__transaction_state``).

**Produce.** confluent-kafka (librdkafka) writes ``--records`` values of 1 KiB to a fresh one-partition topic,
idempotent (``enable.idempotence=true``, acks=all), and the same as transactions of 1, 10 and 100 batches: a
batch is ``--batch-records`` records (``batch.num.messages``; ``batch.size`` large enough never to cut one
first), so a transaction of K batches is ``begin_transaction()``, K x ``--batch-records`` ``produce()`` calls and
``commit_transaction()``, which waits for the broker (EndTxn, the markers). ``--records`` is rounded up to whole
transactions of 100 batches. The time runs from the first ``produce()`` to the last acknowledgement (idempotent)
or the last commit; ``init_transactions()`` (FindCoordinator, InitProducerId, creating ``__transaction_state`` on
a fresh broker) comes before it.

**Consume.** The topic the 100-batch run wrote (records, and a COMMIT marker after every transaction) is read
back from offset 0 by two ``assign()``-ed consumers, ``isolation.level=read_uncommitted`` and
``read_committed``, in alternating order; each must get every record, in order. read_committed reads only up to
the last stable offset and skips aborted transactions (there are none here): what it costs is the broker's
LSO bookkeeping and the aborted-transaction lookup on every fetch.

Runs rotate their order every round; before the first round every run is done once with a tenth of the
records, untimed. Figures are medians of the rounds with [min-max]; ratios are per round, then their median.

Targets (issue 17), for kafkalab: with 100 batches per transaction at least 0.8x the idempotent throughput;
read_committed consume at least 0.9x read_uncommitted. The peers' ratios are printed for comparison.
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (INDEX, RECORD_SIZE, SPECS, THROUGHPUT_CONSUMER, BrokerProcess, ClientLog,  # noqa: E402
                     Unavailable, client_version, create_topic, paired_ratios, print_rows, ratio_spread, spread,
                     value_of)

import confluent_kafka as ck  # noqa: E402

BATCHES_PER_TRANSACTION = (1, 10, 100)
PRODUCE_RUNS = ("idempotent",) + tuple(f"txn-{k}" for k in BATCHES_PER_TRANSACTION)
CONSUME_RUNS = ("read_uncommitted", "read_committed")
#: kafkalab's broker alone: the transaction log's replicas and min ISR cannot be Kafka's defaults (3 and 2)
KAFKALAB_TXN_OVERRIDES = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}
TRANSACTION_TIMEOUT_MS = 60_000


def producer_settings(batch_records: int) -> dict:
    """The producer of every run: idempotent, acks=all, batches of exactly ``batch_records`` records."""
    return {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "compression.type": "none",
            "batch.num.messages": batch_records, "batch.size": 2 * batch_records * (RECORD_SIZE + 100),
            "delivery.report.only.error": True}


def broker_spec(name: str, workdir: str):
    spec = SPECS[name](workdir)
    if name == "kafkalab":
        base = spec.argv

        def argv(port: int, datadir: str) -> list[str]:
            extra = [a for k, v in KAFKALAB_TXN_OVERRIDES.items() for a in ("--override", f"{k}={v}")]
            return base(port, datadir) + extra
        spec.argv = argv
        spec.how += "".join(f" --override {k}={v}" for k, v in KAFKALAB_TXN_OVERRIDES.items())
    return spec


def can_commit(bootstrap: str, clog: ClientLog, timeout: float = 30.0) -> str:
    """'' when a transaction of one record commits within ``timeout`` s, else why not."""
    topic = f"txn-probe-{uuid.uuid4().hex[:6]}"
    try:
        create_topic(bootstrap, topic, clog)
        p = ck.Producer(clog.config(bootstrap, **{"transactional.id": f"probe-{uuid.uuid4().hex[:6]}",
                                                  "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS}))
        p.init_transactions(timeout)
        p.begin_transaction()
        p.produce(topic, b"probe")
        p.commit_transaction(timeout)
        return ""
    except (ck.KafkaException, RuntimeError) as e:
        return str(e)


def produce(bootstrap: str, topic: str, n: int, batch_records: int, batches: int, clog: ClientLog) -> dict:
    """Write ``n`` records; ``batches`` = 0: idempotent, else transactions of ``batches`` batches."""
    failures: collections.Counter = collections.Counter()

    def on_delivery(err, msg):
        if err is not None:
            failures[str(err)] += 1
    settings = {**producer_settings(batch_records), "on_delivery": on_delivery}
    per_txn = batches * batch_records
    if batches:
        settings.update({"transactional.id": f"bench-{topic}", "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS})
    p = ck.Producer(clog.config(bootstrap, **settings))
    p.list_topics(topic, timeout=30)
    if batches:
        p.init_transactions(60)
    send, poll = p.produce, p.poll
    commits = 0
    t0 = time.perf_counter()
    for start in range(0, n, per_txn or n):
        if batches:
            p.begin_transaction()
        for i in range(start, min(n, start + (per_txn or n))):
            while True:
                try:
                    send(topic, value_of(i), partition=0)
                    break
                except BufferError:
                    poll(0.005)
            if not i & 1023:
                poll(0)
        if batches:
            p.commit_transaction(120)
            commits += 1
    remaining = p.flush(120)
    elapsed = time.perf_counter() - t0
    lost = remaining + sum(failures.values())
    return {"rps": (n - lost) / elapsed, "seconds": elapsed, "failed": lost, "commits": commits,
            "errors": dict(failures)}


def consume(bootstrap: str, topic: str, n: int, isolation: str, clog: ClientLog, timeout: float = 120.0,
            stall: float = 8.0) -> dict:
    """Read the ``n`` committed records of ``topic`` from offset 0 with ``isolation``; each must be the next one
    (the index in its first 8 bytes), whatever its offset (the markers take offsets too)."""
    c = ck.Consumer(clog.config(bootstrap, **{**THROUGHPUT_CONSUMER, "group.id": "txn-bench",
                                              "isolation.level": isolation}))
    c.list_topics(topic, timeout=30)
    got = bad = 0
    t0 = last = time.perf_counter()
    c.assign([ck.TopicPartition(topic, 0, 0)])
    gave_up = None
    while got < n:
        now = time.perf_counter()
        if now - t0 > timeout or now - last > stall:
            gave_up = f"gave up after {now - t0:.0f} s with {got:,} of {n:,} records"
            break
        batch = c.consume(min(10_000, n - got), 0.5)
        if batch:
            last = time.perf_counter()
        for m in batch:
            if m.error():
                continue
            v = m.value()
            if len(v) != RECORD_SIZE or INDEX.unpack_from(v)[0] != got:
                bad += 1
            got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return {"rps": got / elapsed, "records": got, "bad": bad, "complete": got >= n and not bad, "gave_up": gave_up}


def one_round(bootstrap: str, records: int, batch_records: int, tag: str, r: int, clog: ClientLog) -> dict:
    """{run name: records/s} for the produce runs (in rotated order) and the two consumers."""
    out: dict = {}
    order = PRODUCE_RUNS[r % len(PRODUCE_RUNS):] + PRODUCE_RUNS[:r % len(PRODUCE_RUNS)]
    written = None
    for run in order:
        topic = f"txn-bench-{run}-{tag}"
        create_topic(bootstrap, topic, clog)
        batches = 0 if run == "idempotent" else int(run.split("-")[1])
        got = produce(bootstrap, topic, records, batch_records, batches, clog)
        if got["failed"]:
            raise RuntimeError(f"{run}: {got['failed']} records failed: {got['errors']}")
        out[run] = got["rps"]
        if run == f"txn-{BATCHES_PER_TRANSACTION[-1]}":
            written = topic
    for isolation in (CONSUME_RUNS if r % 2 == 0 else CONSUME_RUNS[::-1]):
        got = consume(bootstrap, written, records, isolation, clog)
        if not got["complete"]:
            raise RuntimeError(f"{isolation}: {got['gave_up'] or ''} ({got['bad']} out of order)")
        out[isolation] = got["rps"]
    return out


def bench_broker(name: str, workdir: str, cfg, clog: ClientLog) -> dict:
    """{run: [records/s per round]}, or {"skipped": why}."""
    try:
        spec = broker_spec(name, workdir)
    except Unavailable as e:
        return {"skipped": str(e)}
    broker = BrokerProcess(spec, workdir, "txn")
    try:
        broker.start()
    except RuntimeError as e:
        return {"skipped": f"did not start: {str(e).splitlines()[0]}"}
    try:
        why = can_commit(broker.bootstrap, clog)
        if why:
            return {"skipped": f"cannot commit a transaction: {why}"}
        print(f"{name}: {spec.version}")
        one_round(broker.bootstrap, cfg.warmup, cfg.batch_records, "warmup", 0, clog)     # untimed
        results: dict = collections.defaultdict(list)
        for r in range(cfg.rounds):
            got = one_round(broker.bootstrap, cfg.records, cfg.batch_records, str(r), r, clog)
            for run, rps in got.items():
                results[run].append(rps)
            print(f"  round {r + 1}: " + "  ".join(f"{run} {rps:,.0f}/s" for run, rps in got.items()))
        return dict(results)
    finally:
        broker.stop()


def report(all_results: dict, cfg) -> None:
    rows = []
    for name, res in all_results.items():
        if "skipped" in res:
            continue
        for run in PRODUCE_RUNS:
            base = "idempotent"
            rows.append([name, f"produce {run}", spread(res[run], "rec/s"),
                         "" if run == base else ratio_spread(paired_ratios(res[run], res[base])), "vs idempotent"])
        for run in CONSUME_RUNS:
            base = "read_uncommitted"
            rows.append([name, f"consume {run}", spread(res[run], "rec/s"),
                         "" if run == base else ratio_spread(paired_ratios(res[run], res[base])),
                         "vs read_uncommitted"])
    print()
    if rows:
        print_rows(["broker", "run", "rec/s", "ratio", "of"], rows)
    for name, res in all_results.items():
        if "skipped" in res:
            print(f"{name}: left out -- {res['skipped']}")
    print("\nTargets (kafkalab; the peers for comparison):")
    big = f"txn-{BATCHES_PER_TRANSACTION[-1]}"
    for name, res in all_results.items():
        if "skipped" in res:
            continue
        produce_ratio = statistics.median(paired_ratios(res[big], res["idempotent"]))
        consume_ratio = statistics.median(paired_ratios(res["read_committed"], res["read_uncommitted"]))
        for what, value, target in ((f"{BATCHES_PER_TRANSACTION[-1]} batches per transaction >= 0.8x idempotent",
                                     produce_ratio, 0.8),
                                    ("read_committed >= 0.9x read_uncommitted", consume_ratio, 0.9)):
            print(f"  {name:9s} {what:55s} {'MET' if value >= target else 'MISSED':7s} ({value:.2f}x)")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=50_000, help="records per run (rounded up to whole "
                    "transactions of the largest size)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-records", type=int, default=100, help="records per batch (batch.num.messages)")
    ap.add_argument("--brokers", default="kafkalab,tansu,noida",
                    help=f"comma-separated, of {', '.join(SPECS)} (default all)")
    ap.add_argument("--quick", action="store_true", help="10,000 records, 1 round")
    cfg = ap.parse_args(argv)
    if cfg.quick:
        cfg.records, cfg.rounds = 10_000, 1
    unknown = [b for b in cfg.brokers.split(",") if b not in SPECS]
    if unknown:
        ap.error(f"unknown broker(s) {', '.join(unknown)}; choose from {', '.join(SPECS)}")
    if cfg.records < 1 or cfg.rounds < 1 or cfg.batch_records < 1:
        ap.error("--records, --rounds and --batch-records must be at least 1")
    per_txn = BATCHES_PER_TRANSACTION[-1] * cfg.batch_records
    cfg.records = -(-cfg.records // per_txn) * per_txn
    cfg.warmup = max(per_txn, -(-cfg.records // 10 // per_txn) * per_txn)
    return cfg


def main(argv=None) -> int:
    cfg = parse_args(argv)
    t_start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="kafkalab-transactions-bench-")
    clog = ClientLog()
    print(f"transactions benchmark: {cfg.records:,} records of 1 KiB per run, batches of {cfg.batch_records} "
          f"records, transactions of {', '.join(map(str, BATCHES_PER_TRANSACTION))} batches, {cfg.rounds} "
          f"round(s); confluent-kafka {client_version()} / librdkafka {ck.libversion()[0]}; producer "
          f"{producer_settings(cfg.batch_records)}")
    results = {name: bench_broker(name, workdir, cfg, clog) for name in cfg.brokers.split(",")}
    report(results, cfg)
    if clog.messages:
        print(f"\nclient messages: {sum(clog.messages.values())} ({len(clog.messages)} distinct)")
    print(f"\ntotal time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
