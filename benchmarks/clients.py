"""Client speed: kafkalab's producer and consumer against confluent-kafka and kafka-python, in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/clients.py                    # 20,000 records of 1 KiB, 3 rounds
    .venv/bin/python benchmarks/clients.py --quick            # smoke run, 3,000 records, 1 round
    .venv/bin/python benchmarks/clients.py --records 50000 --rounds 5
    .venv/bin/python benchmarks/clients.py --only kafkalab,kafka-python
    .venv/bin/python benchmarks/clients.py --profile          # also cProfile kafkalab's producer (both threads)

One kafkalab broker runs as a separate process (``python -m kafkalab.cli broker``, as in
``benchmarks/broker.py``), listening on 127.0.0.1, so no client shares a GIL with it. Every client does the
same work against it:

* **produce**: ``--records`` records of ``--size`` bytes (each value starts with its index) to partition 0 of
  its own one-partition topic, ``acks=1``, no compression, no idempotence, ``linger.ms=5``,
  ``batch.size=262144``, 5 requests in flight; the clock runs from the first ``send`` to the end of ``flush``
  (every record acknowledged).
* **consume**: read those records back from offset 0 with ``assign`` (no group), 1 MiB per partition per
  fetch, and check every offset, size and index; the clock runs from ``assign`` to the last record.

Clients: ``kafkalab`` (``kafkalab.clients.Producer`` / ``Consumer``; when ``Consumer`` is missing, the consume
side falls back to kafkalab's ``NetworkClient`` issuing Fetch requests directly, and the report says so),
``confluent-kafka`` (librdkafka, C) and ``kafka-python`` (pure Python, the target). The order of the clients
rotates every round and the median round counts; before round 1 each client produces and consumes
``--warmup`` records once, untimed (imports, first connections). Ratios are kafkalab / other: above 1.0 means kafkalab is
faster. The target is kafkalab >= 1.0x kafka-python on both; the ratio to confluent-kafka is reported.

This is a report, not a test: the exit status is 0 even when a target is missed.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid

import harness

CLIENTS = ("kafkalab", "confluent-kafka", "kafka-python")
_INDEX = harness.INDEX
MiB = 1 << 20

#: The same producer settings for every client, in each client's own spelling.
LINGER_MS, BATCH_SIZE, MAX_IN_FLIGHT = 5, 262_144, 5
#: The same consumer limits: per partition per fetch, and per fetch.
PARTITION_FETCH_BYTES, FETCH_MAX_BYTES = 1 * MiB, 50 * MiB


def make_value(i: int, size: int, pad: bytes) -> bytes:
    return _INDEX.pack(i) + pad


# ============================================================================================ produce
def produce_kafkalab(bootstrap, topic, values):
    from kafkalab.clients import Producer
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "bench-kafkalab", "acks": 1,
                  "linger.ms": LINGER_MS, "batch.size": BATCH_SIZE, "compression.type": "none",
                  "enable.idempotence": False, "max.in.flight.requests.per.connection": MAX_IN_FLIGHT})
    p.partitions_for(topic)                   # connect and learn the leader before the clock starts
    send = p.send
    t0 = time.perf_counter()
    futures = [send(topic, v, partition=0) for v in values]
    p.flush()
    elapsed = time.perf_counter() - t0
    failed = sum(1 for f in futures if f.exception() is not None)
    p.close()
    return elapsed, failed


def produce_confluent(bootstrap, topic, values):
    import confluent_kafka as ck
    failures = [0]

    def on_error(err, msg):
        if err is not None:
            failures[0] += 1
    clog = harness.ClientLog()
    p = ck.Producer(clog.config(bootstrap, **{"client.id": "bench-confluent", "acks": "1", "linger.ms": LINGER_MS,
                                              "batch.size": BATCH_SIZE, "compression.type": "none",
                                              "enable.idempotence": False, "on_delivery": on_error,
                                              "max.in.flight.requests.per.connection": MAX_IN_FLIGHT,
                                              "delivery.report.only.error": True}))
    p.list_topics(topic, timeout=10)
    produce, poll = p.produce, p.poll
    t0 = time.perf_counter()
    for i, v in enumerate(values):
        while True:
            try:
                produce(topic, v, partition=0)
                break
            except BufferError:
                poll(0.005)
        if not i & 1023:
            poll(0)
    remaining = p.flush(120)
    return time.perf_counter() - t0, remaining + failures[0]


def produce_kafka_python(bootstrap, topic, values):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="bench-kafka-python", acks=1, linger_ms=LINGER_MS,
                      batch_size=BATCH_SIZE, compression_type=None, enable_idempotence=False,
                      max_in_flight_requests_per_connection=MAX_IN_FLIGHT, max_request_size=2 * MiB)
    p.partitions_for(topic)
    send = p.send
    t0 = time.perf_counter()
    futures = [send(topic, v, partition=0) for v in values]
    p.flush(120)
    elapsed = time.perf_counter() - t0
    failed = sum(1 for f in futures if not f.succeeded())
    p.close()
    return elapsed, failed


# ============================================================================================ consume
class Checker:
    """Counts records and checks offset, size and the index in the value, in arrival order."""

    def __init__(self, size: int):
        self.size, self.expect, self.got, self.bad = size, 0, 0, 0

    def add(self, offset: int, value: bytes) -> None:
        if offset != self.expect or len(value) != self.size or _INDEX.unpack_from(value)[0] != offset:
            self.bad += 1
        self.expect = offset + 1
        self.got += 1


def _consume_loop(n, size, poll_batch, timeout=120.0):
    check = Checker(size)
    t0 = time.perf_counter()
    while check.got < n and time.perf_counter() - t0 < timeout:
        for offset, value in poll_batch():
            check.add(offset, value)
    return time.perf_counter() - t0, check


def kafkalab_consumer_available() -> bool:
    try:
        from kafkalab.clients import Consumer
    except ImportError:
        return False
    return all(hasattr(Consumer, m) for m in ("assign", "poll", "close"))


def consume_kafkalab(bootstrap, topic, n, size):
    from kafkalab.clients import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "bench-kafkalab", "group.id": "bench-kafkalab",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "max.poll.records": 10_000,
                  "max.partition.fetch.bytes": PARTITION_FETCH_BYTES, "fetch.max.bytes": FETCH_MAX_BYTES})
    c.assign([TopicPartition(topic, 0)])

    def poll_batch():
        return [(r.offset, r.value) for r in c.poll(0.5)]
    try:
        return _consume_loop(n, size, poll_batch)
    finally:
        c.close()


def consume_kafkalab_raw_fetch(bootstrap, topic, n, size):
    """kafkalab's NetworkClient issuing Fetch requests itself (the fallback while Consumer does not exist)."""
    from kafkalab.clients.config import consumer_config, producer_config
    from kafkalab.clients.network_client import NetworkClient
    from kafkalab.protocol import ApiKey, request_class
    from kafkalab.records import decode_batches

    try:
        cfg = consumer_config({"bootstrap.servers": bootstrap, "client.id": "bench-kafkalab-fetch",
                               "group.id": "bench"})
    except Exception:
        cfg = producer_config({"bootstrap.servers": bootstrap, "client.id": "bench-kafkalab-fetch"})
    Fetch = request_class(ApiKey.FETCH)

    async def run():
        client = NetworkClient(cfg, allow_auto_topic_creation=False)
        try:
            cluster = await client.update_metadata([topic])
            leader = cluster.leader_for(topic, 0)
            conn = await client.connection(leader)
            version = conn.version_for(ApiKey.FETCH, None, 12)   # 13+ name topics by id
            check = Checker(size)
            t0 = time.perf_counter()
            while check.got < n and time.perf_counter() - t0 < 120:
                part = Fetch.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=check.expect,
                                                       last_fetched_epoch=-1, log_start_offset=-1,
                                                       partition_max_bytes=PARTITION_FETCH_BYTES)
                body = Fetch(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=FETCH_MAX_BYTES,
                             isolation_level=0, session_id=0, session_epoch=-1,
                             topics=(Fetch.FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=(),
                             rack_id="")
                resp = await conn.send(body, version)
                for p in resp.body.responses[0].partitions:
                    for b in decode_batches(p.records or b""):
                        for r in b.records:
                            if r.offset >= check.expect:
                                check.add(r.offset, r.value)
            return time.perf_counter() - t0, check
        finally:
            await client.close()
    return asyncio.run(run())


def consume_confluent(bootstrap, topic, n, size):
    import confluent_kafka as ck
    clog = harness.ClientLog()
    c = ck.Consumer(clog.config(bootstrap, **{"client.id": "bench-confluent", "group.id": "bench-confluent",
                                              "enable.auto.commit": False, "enable.auto.offset.store": False,
                                              "max.partition.fetch.bytes": PARTITION_FETCH_BYTES,
                                              "fetch.max.bytes": FETCH_MAX_BYTES}))
    c.list_topics(topic, timeout=10)

    def poll_batch():
        return [(m.offset(), m.value()) for m in c.consume(10_000, 0.5) if m.error() is None]
    c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    try:
        return _consume_loop(n, size, poll_batch)
    finally:
        c.close()


def consume_kafka_python(bootstrap, topic, n, size):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="bench-kafka-python", group_id=None,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      max_partition_fetch_bytes=PARTITION_FETCH_BYTES, fetch_max_bytes=FETCH_MAX_BYTES)
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()

    def poll_batch():
        return [(m.offset, m.value) for recs in c.poll(timeout_ms=500, max_records=10_000).values() for m in recs]
    try:
        return _consume_loop(n, size, poll_batch)
    finally:
        c.close()


PRODUCE = {"kafkalab": produce_kafkalab, "confluent-kafka": produce_confluent, "kafka-python": produce_kafka_python}
CONSUME = {"kafkalab": consume_kafkalab, "confluent-kafka": consume_confluent, "kafka-python": consume_kafka_python}


# ============================================================================================ the run
def versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in ("kafkalab", "confluent-kafka", "kafka-python"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    try:
        import confluent_kafka
        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return out


def create_topic(bootstrap: str, name: str) -> None:
    harness.create_topic(bootstrap, name, harness.ClientLog())


def _arguments():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=1024, help="bytes per record value")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2000,
                    help="records each client produces and consumes once, untimed, before round 1 (imports, "
                         "connections, caches); 0 to skip")
    ap.add_argument("--quick", action="store_true", help="3,000 records, 1 round")
    ap.add_argument("--only", default=",".join(CLIENTS))
    ap.add_argument("--profile", action="store_true", help="cProfile kafkalab's producer and consumer once")
    cfg = ap.parse_args()
    if cfg.quick:
        cfg.records, cfg.rounds, cfg.warmup = 3000, 1, 500
    clients = [c for c in cfg.only.split(",") if c]
    for c in clients:
        if c not in CLIENTS:
            sys.exit(f"unknown client {c!r}; choose from {', '.join(CLIENTS)}")
    return cfg, clients


def main() -> None:
    cfg, clients = _arguments()
    raw_fetch = "kafkalab" in clients and not kafkalab_consumer_available()
    if raw_fetch:
        CONSUME["kafkalab"] = consume_kafkalab_raw_fetch

    pad = bytes((i * 31 + 7) & 0xFF for i in range(cfg.size - _INDEX.size))
    values = [make_value(i, cfg.size, pad) for i in range(cfg.records)]
    mb = cfg.records * cfg.size / 1e6

    print("benchmarks/clients.py: kafkalab's clients vs confluent-kafka and kafka-python")
    print(f"  {cfg.records} records x {cfg.size} B = {mb:.1f} MB per run; {cfg.rounds} round(s), median counts")
    print(f"  produce: acks=1, no compression, no idempotence, linger.ms={LINGER_MS}, batch.size={BATCH_SIZE}, "
          f"{MAX_IN_FLIGHT} in flight, one partition")
    print(f"  consume: assign from offset 0, {PARTITION_FETCH_BYTES // MiB} MiB per partition fetch")
    print("  versions:", ", ".join(f"{k} {v}" for k, v in versions().items()))
    print(f"  machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if raw_fetch:
        print("  NOTE: kafkalab.clients.Consumer is not available: kafkalab's consume column uses kafkalab's "
              "NetworkClient issuing Fetch requests directly")
    else:
        print("  kafkalab consume: kafkalab.clients.Consumer (assign + poll)")

    workdir = tempfile.mkdtemp(prefix="clients-bench-")
    spec = harness.kafkalab_spec(workdir)
    proc = harness.BrokerProcess(spec, workdir, "clients")
    proc.start()
    print(f"  broker: {spec.how} (ready in {proc.ready_s:.2f} s)\n")
    results = {c: {"produce": [], "consume": []} for c in clients}
    problems = []
    try:
        bootstrap = proc.bootstrap
        if cfg.warmup:
            for c in clients:
                topic = f"bench-warmup-{c}-{uuid.uuid4().hex[:6]}"
                create_topic(bootstrap, topic)
                PRODUCE[c](bootstrap, topic, values[:cfg.warmup])
                CONSUME[c](bootstrap, topic, cfg.warmup, cfg.size)
            print(f"  warm-up: {cfg.warmup} records produced and consumed once by each client (not timed)")
        for rnd in range(cfg.rounds):
            order = clients[rnd % len(clients):] + clients[:rnd % len(clients)]
            for c in order:
                topic = f"bench-{c}-{rnd}-{uuid.uuid4().hex[:6]}"
                create_topic(bootstrap, topic)
                secs, failed = PRODUCE[c](bootstrap, topic, values)
                if failed:
                    problems.append(f"round {rnd + 1} {c} produce: {failed} record(s) failed")
                results[c]["produce"].append(cfg.records / secs)
                secs, check = CONSUME[c](bootstrap, topic, cfg.records, cfg.size)
                if check.got < cfg.records or check.bad:
                    problems.append(f"round {rnd + 1} {c} consume: {check.got}/{cfg.records} records, "
                                    f"{check.bad} bad")
                results[c]["consume"].append(check.got / secs)
                print(f"  round {rnd + 1} {c:16s} produce {results[c]['produce'][-1]:>9,.0f} rec/s   "
                      f"consume {results[c]['consume'][-1]:>9,.0f} rec/s")
        if cfg.profile and "kafkalab" in clients:
            topic = f"bench-profile-{uuid.uuid4().hex[:6]}"
            create_topic(bootstrap, topic)
            with harness.ThreadProfiles() as tp:
                produce_kafkalab(bootstrap, topic, values)
            print("\ncProfile of kafkalab's producer (caller thread + I/O thread), by own time:")
            print(tp.report())
            with harness.ThreadProfiles() as tc:
                CONSUME["kafkalab"](bootstrap, topic, cfg.records, cfg.size)
            print("\ncProfile of kafkalab's consume side, by own time:")
            print(tc.report())
    finally:
        proc.stop()

    print(f"\n  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _print_results(clients, results, problems, cfg.size)


def _print_results(clients: list, results: dict, problems: list, size: int) -> None:
    print(f"\n{'client':18s}{'produce rec/s':>15s}{'MB/s':>8s}{'consume rec/s':>15s}{'MB/s':>8s}")
    med = {c: {k: statistics.median(v) for k, v in r.items()} for c, r in results.items()}
    for c in clients:
        p, q = med[c]["produce"], med[c]["consume"]
        print(f"{c:18s}{p:>15,.0f}{p * size / 1e6:>8.1f}{q:>15,.0f}{q * size / 1e6:>8.1f}")
    if "kafkalab" in clients:
        print()
        for other in clients:
            if other == "kafkalab":
                continue
            rp = med["kafkalab"]["produce"] / med[other]["produce"]
            rc = med["kafkalab"]["consume"] / med[other]["consume"]
            target = other == "kafka-python"
            verdict = ""
            if target:
                verdict = "  target >= 1.0x: produce " + ("MET" if rp >= 1 else "MISSED") + ", consume " + \
                          ("MET" if rc >= 1 else "MISSED")
            print(f"kafkalab / {other:16s} produce {rp:5.2f}x   consume {rc:5.2f}x{verdict}")
    for p in problems:
        print("PROBLEM:", p)


if __name__ == "__main__":
    main()
