"""Cluster speed: replication cost and leader failover of a 3-broker kafkalab cluster, driven by confluent-kafka.

Run from the repository root::

    .venv/bin/python benchmarks/cluster.py                  # full run: 60,000 records per run, 5 rounds
    .venv/bin/python benchmarks/cluster.py --quick          # smoke run: 5,000 records, 1 round (rough numbers)
    .venv/bin/python benchmarks/cluster.py --records 50000 --rounds 3
    .venv/bin/python benchmarks/cluster.py --skip-failover  # only the produce table

Part 1, produce: ``python -m kafkalab.cli cluster --brokers 3`` runs as a subprocess (three brokers and the
coordination store in one process, so the load generator never shares that process's GIL). One topic per
configuration and round (one partition unless ``--partitions`` says otherwise; record i goes to partition
i % partitions), created with CreateTopics through the cluster, then primed with one acks=all record per
partition before the clock starts (see ``prime_followers``: a follower only fetches a new partition from its
next Fetch, and the one in flight may sit in the leader's purgatory for up to replica.fetch.wait.max.ms):

    RF=1 / acks=1     replication factor 1 (no followers)
    RF=3 / acks=1     replication factor 3, the leader answers after its own append
    RF=3 / acks=all   replication factor 3, min.insync.replicas=2: the answer waits in the purgatory until
                      every ISR member has fetched the records (the high watermark passed them)

For each: throughput (1 KiB records, linger.ms=5, batch.size=1 MB, no compression, no idempotence, as in
benchmarks/broker.py; timed from the first produce() to the end of flush()), and ack latency (produce() to
delivery callback, one record in flight, linger.ms=0, the configuration's acks). The configurations are
interleaved within each round, in a rotating order. The cluster process's CPU time per record is reported too.

Part 2, failover: a child process (this script with ``--failover-child``) runs an in-process
``kafkalab.cluster.Cluster(brokers=3)`` with ``zookeeper.session.timeout.ms`` = ``--session-timeout-ms``, a
topic with RF=3 and min.insync.replicas=2, and a confluent-kafka producer with acks=all that has already written
to the leader. The clock starts at ``cluster.kill(leader)`` and stops at the delivery report of the first
acks=all record produced after the kill (librdkafka retries it until the new leader takes it). Two kinds of kill:

    session lost at once   kill(leader): the broker's coordination session expires with it (the harness default,
                           like a broker whose ZooKeeper connection closes as its process dies)
    session times out      kill(leader, expire_session=False): like kill -9 with the session left to expire,
                           so the controller only learns of the death after zookeeper.session.timeout.ms

The target bound (session timeout + 1 s) is meant for the second; both are reported against it.
After each trial the killed broker is restarted and the script waits for the ISR to be full again.

This is a report, not a test: the exit status is 0 even when a target is MISSED.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

from harness import (MB, RECORD_SIZE, REPO, AdminClient, ClientLog, NewTopic, ck, client_version,
                     fmt, git_revision, kafkalab_env, latency_run, median, pct, print_rows,
                     ProbedProcess, produce_run, value_of)

LATENCY_PRODUCER = {"linger.ms": 0, "compression.type": "none", "enable.idempotence": False}

#: name, replication factor, acks, topic configs
CONFIGS = [
    ("RF=1/acks=1", 1, "1", {}),
    ("RF=3/acks=1", 3, "1", {}),
    ("RF=3/acks=all", 3, "all", {"min.insync.replicas": "2"}),
]
TARGET_ALL_VS_RF1 = 0.40
TARGET_P99_MS = 20.0
FAILOVER_SLACK_S = 1.0


# ============================================================================================ part 1
class ClusterProcess(ProbedProcess):
    """``python -m kafkalab.cli cluster --brokers N`` as a subprocess; ``start()`` waits for its ready line."""

    def __init__(self, workdir: str, brokers: int = 3, overrides: Optional[dict] = None):
        self.workdir, self.brokers, self.overrides = workdir, brokers, dict(overrides or {})
        self.proc: Optional[subprocess.Popen] = None
        self.bootstrap = ""
        self.ready_line = ""

    def start(self, timeout: float = 60.0) -> float:
        argv = [sys.executable, "-m", "kafkalab.cli", "cluster", "--brokers", str(self.brokers),
                "--log-dirs", os.path.join(self.workdir, "cluster")]
        for k, v in self.overrides.items():
            argv += ["--override", f"{k}={v}"]
        env = kafkalab_env()
        self.log_path = os.path.join(self.workdir, "cluster.stderr")
        self.stderr = open(self.log_path, "w+")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env,
                                     cwd=REPO)
        got: list = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        line = got[0] if got else ""
        if "ready" not in line or "bootstrap.servers=" not in line:
            self.stop()
            raise RuntimeError(f"cluster did not start: {line!r} {self.log_tail()}")
        self.ready_line = line.strip()
        self.bootstrap = line.split("bootstrap.servers=", 1)[1].split()[0]
        return time.perf_counter() - t0

    def log_tail(self, n: int = 15) -> str:
        try:
            self.stderr.flush()
        except (AttributeError, ValueError, OSError):  # not started, or already closed
            pass
        return super().log_tail(n)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def create_topic(bootstrap: str, topic: str, rf: int, config: dict, clog: ClientLog, partitions: int = 1) -> dict:
    """Create the topic and wait until every partition has a leader and a full ISR; returns {partition: leader}."""
    admin = AdminClient(clog.config(bootstrap))
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf, config=config)],
                        operation_timeout=15, request_timeout=15)[topic].result(20)
    deadline = time.monotonic() + 20
    while True:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == rf for p in t.partitions.values()):
            return {p.id: p.leader for p in t.partitions.values()}
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} not ready: {t.error if t else 'missing'}")
        time.sleep(0.05)


def wait_for_followers(bootstrap: str, topic: str, records: int, clog, timeout: float = 60.0,
                       partitions: int = 1) -> float:
    """Wait until the high watermarks add up to ``records``: every in-sync follower has fetched the run's records.

    With acks=1 the producer finishes before its followers do; without this wait their catch-up traffic (which
    shares the fetcher connections of the next topic on the same leader) would be measured as the next
    configuration's cost. Returns how long the followers still needed after the last acknowledgement."""
    # ListOffsets(latest) through the admin client: a consumer with a group.id would make the cluster create
    # __consumer_offsets (50 partitions, RF 3), whose idle partitions then ride in every follower fetch.
    from confluent_kafka.admin import OffsetSpec
    admin = AdminClient(clog.config(bootstrap))
    tps = [ck.TopicPartition(topic, p) for p in range(partitions)]
    t0 = time.perf_counter()
    while True:
        answers = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=5)
        high = sum(answers[tp].result().offset for tp in tps)
        if high >= records:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"{topic}: high watermark {high} < {records} after {timeout:.0f} s")
        time.sleep(0.01)


def prime_followers(bootstrap: str, topic: str, partitions: int, clog) -> None:
    """One acks=all record per partition, before the clock starts: when it is acknowledged, every follower is
    fetching the new partition.

    A follower's fetcher adds a new partition to its *next* Fetch request; the one in flight (parked in the
    leader's purgatory for up to replica.fetch.wait.max.ms, 500 ms) does not carry it, so the first acks=all
    batch of a brand-new topic waits up to half a second -- Kafka's ReplicaFetcherThread behaves the same. Left
    in the timed run, that start-up wait decided most of a 60,000-record measurement."""
    p = ck.Producer(clog.config(bootstrap, acks="all", **{"linger.ms": 0, "enable.idempotence": False}))
    failures: list = []
    for part in range(partitions):
        p.produce(topic, value_of(part), partition=part,
                  on_delivery=lambda err, _msg: failures.append(err) if err is not None else None)
    if p.flush(30) or failures:
        raise RuntimeError(f"{topic}: priming records not acknowledged: {failures}")


def run_config(cl: ClusterProcess, name: str, rf: int, acks: str, config: dict, tag: str, cfg, clog) -> dict:
    topic = f"bench-{name.replace('=', '').replace('/', '-')}-{tag}".lower()
    leaders = create_topic(cl.bootstrap, topic, rf, config, clog, partitions=cfg.partitions)
    prime_followers(cl.bootstrap, topic, cfg.partitions, clog)
    cpu0, c0 = cl.cpu_seconds(), time.process_time()
    tput = produce_run(cl.bootstrap, topic, cfg.records, acks, clog, partitions=cfg.partitions)
    tput["leaders"] = sorted(set(leaders.values()))
    cpu1, c1 = cl.cpu_seconds(), time.process_time()
    if cpu0 is not None and cpu1 is not None:
        tput["cluster_cpu_us"] = (cpu1 - cpu0) / cfg.records * 1e6
    tput["client_cpu_us"] = (c1 - c0) / cfg.records * 1e6
    if rf > 1:
        tput["catch_up_s"] = wait_for_followers(cl.bootstrap, topic, cfg.records + cfg.partitions, clog,
                                                partitions=cfg.partitions)
    lat = latency_run(cl.bootstrap, topic, cfg.latency_records, clog, acks=acks, **LATENCY_PRODUCER)
    delete_topic(cl.bootstrap, topic, clog)
    return {"tput": tput, "lat": lat}


def delete_topic(bootstrap: str, topic: str, clog, timeout: float = 30.0) -> None:
    """Delete a measured topic and wait until it is gone, so every configuration starts with the same amount of
    data in the cluster (the cluster runs with ``log.segment.delete.delay.ms=0`` and
    ``log.initial.task.delay.ms=0``, so the files are removed at once, not after 60 s or 30 s).

    Without it the page cache only grows, and on a virtual machine that hands free memory back to its host
    (virtio-balloon free page reporting) every page the guest uses for the first time costs a fault in the host
    too. Past about 1.2 GB written, the kernel's copy into the page cache (copy_folio_from_iter_atomic) took 53%
    of the cluster's samples and its system time went from 2-3 to 10-13 us per record; acks=all writes three
    copies, so it paid three times what RF=1 paid. Pages freed by the deletion are written into again by the
    next run, and the slowdown does not happen."""
    admin = AdminClient(clog.config(bootstrap))
    admin.delete_topics([topic], operation_timeout=15, request_timeout=15)[topic].result(timeout)
    deadline = time.monotonic() + timeout
    while topic in admin.list_topics(timeout=5).topics:
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} still listed {timeout:.0f} s after its deletion")
        time.sleep(0.05)


def produce_part(cfg, workdir: str) -> dict:
    clog = ClientLog()
    # a deleted topic's files go at once (not after file.delete.delay.ms, nor after the first 30 s): see delete_topic
    cl = ClusterProcess(workdir, overrides={"log.segment.delete.delay.ms": 0, "log.initial.task.delay.ms": 0})
    ready_s = cl.start()
    print(f"  {cl.ready_line}  ({ready_s:.2f} s)", flush=True)
    results: dict = {name: [] for name, *_ in CONFIGS}
    load_during = []
    try:
        for rnd in range(cfg.rounds):
            order = CONFIGS[rnd % len(CONFIGS):] + CONFIGS[:rnd % len(CONFIGS)]
            for name, rf, acks, config in order:
                t0 = time.perf_counter()
                try:
                    r = run_config(cl, name, rf, acks, config, f"r{rnd}", cfg, clog)
                except Exception as e:
                    print(f"  round {rnd + 1} {name:<14} FAILED: {type(e).__name__}: {e}", flush=True)
                    continue
                load_during.append(os.getloadavg()[0])
                r["round"] = rnd
                results[name].append(r)
                s = r["lat"]["samples"]
                print(f"  round {rnd + 1} {name:<14} {time.perf_counter() - t0:5.1f} s: "
                      f"{r['tput']['rps']:>9,.0f} rec/s ({r['tput']['failed']} failed), "
                      f"ack p50 {fmt(pct(s, 50), 'ms')} ms p99 {fmt(pct(s, 99), 'ms')} ms, "
                      f"cluster CPU {r['tput'].get('cluster_cpu_us', float('nan')):.1f} us/rec, "
                      f"{r['tput'].get('produce_requests', '?')} produce requests, "
                      f"leaders on brokers {r['tput']['leaders']}", flush=True)
        rss = cl.peak_rss_mb()
    finally:
        cl.stop()
        if cl.proc is not None and cl.proc.returncode not in (0, None, -15):
            print(f"  cluster exited with {cl.proc.returncode}: {cl.log_tail()}")
    summ = {}
    for name, *_ in CONFIGS:
        rs = results[name]
        ok = [r for r in rs if not r["tput"]["failed"]]
        rps = median([r["tput"]["rps"] for r in ok])
        lat = [x for r in rs for x in r["lat"]["samples"]]
        summ[name] = {
            "rps": rps, "mbs": rps * RECORD_SIZE / MB if rps else None,
            "rps_by_round": {r["round"]: r["tput"]["rps"] for r in ok},
            "p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat) if lat else None, "lat_n": len(lat),
            "cpu": median([r["tput"].get("cluster_cpu_us") for r in rs]),
            "client_cpu": median([r["tput"]["client_cpu_us"] for r in rs]),
            "failed_runs": len(rs) - len(ok), "runs": len(rs),
            "errors": collections.Counter(), }
        for r in rs:
            summ[name]["errors"].update(r["tput"].get("errors", {}))
            summ[name]["errors"].update(r["lat"].get("errors", {}))
    return {"summ": summ, "rss": rss, "ready_s": ready_s, "load_during": load_during,
            "client_log": clog.messages}


def print_produce_table(summ: dict) -> None:
    names = [n for n, *_ in CONFIGS]
    base = summ[names[0]]
    rows = [("produce", "rec/s (higher better)", "rps", "rec/s"),
            ("produce", "MB/s (higher better)", "mbs", "MB/s"),
            ("ack latency p50", "ms (lower better)", "p50", "ms"),
            ("ack latency p99", "ms (lower better)", "p99", "ms"),
            ("ack latency max", "ms (lower better)", "max", "ms"),
            ("cluster CPU, produce", "us/rec (lower better)", "cpu", "us/rec"),
            ("client CPU, produce", "us/rec (lower better)", "client_cpu", "us/rec")]
    cols = ["metric", "unit"] + names + [f"{n} / {names[0]}" for n in names[1:]]
    table = []
    for label, unit, key, unit_fmt in rows:
        row = [label, unit] + [fmt(summ[n][key], unit_fmt) if summ[n][key] is not None else "FAILED" for n in names]
        row += [f"{summ[n][key] / base[key]:.2f}x" if summ[n][key] and base[key] else "n/a" for n in names[1:]]
        table.append(row)
    print_rows(cols, table)


# ============================================================================================ part 2
#: Both failover producers retry a lost leader's connection every 20-100 ms (defaults 50 ms growing to 1 s), so
#: the time measured is the cluster's failover, not a client's reconnect backoff; each failed connect makes the
#: client refresh its metadata, which is how it learns the new leader.
FAILOVER_RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100}

def failover_child(args) -> int:
    """Runs in its own process: an in-process Cluster, trials of kill -> first acks=all delivery. JSON on stdout."""
    import logging
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    from kafkalab.cluster import Cluster
    session_ms = args.session_timeout_ms
    out = {"session_timeout_ms": session_ms, "zk_tick_time_ms": args.zk_tick_time_ms, "trials": []}
    clog = ClientLog()
    with Cluster(brokers=3, overrides={"zookeeper.session.timeout.ms": session_ms},
                 zk_tick_time_ms=args.zk_tick_time_ms) as cluster:
        topic = "failover"
        cluster.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
        cluster.wait_until(lambda: True)
        p = ck.Producer(clog.config(cluster.bootstrap_servers, acks="all", **LATENCY_PRODUCER,
                                    **{"message.timeout.ms": 60_000, "retry.backoff.ms": 20,
                                       "retry.backoff.max.ms": 100, "topic.metadata.refresh.interval.ms": 60_000},
                                    **FAILOVER_RECONNECT))
        # The same kill is watched by two producers: kafkalab's own (Java-client semantics: a broken connection
        # or NOT_LEADER_OR_FOLLOWER triggers a metadata refresh after retry.backoff.ms) and librdkafka's, which
        # re-queries a partition whose leader is down on a once-a-second timer.
        from kafkalab.clients import Producer as LabProducer
        lab = LabProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                           "retry.backoff.ms": 20, "retry.backoff.max.ms": 100, "delivery.timeout.ms": 60_000,
                           **FAILOVER_RECONNECT})
        seq = [0]

        def send_one(timeout: float) -> tuple:
            """Produce one record, wait for its report: (delivered at perf_counter or None, error)."""
            done: list = []
            seq[0] += 1
            p.produce(topic, value_of(seq[0]), partition=0,
                      on_delivery=lambda err, msg: done.append((time.perf_counter(), err)))
            deadline = time.perf_counter() + timeout
            while not done and time.perf_counter() < deadline:
                p.poll(0.005)
            return done[0] if done else (None, "no report")

        def lab_send(timeout: float, into: list) -> None:
            seq[0] += 1
            try:
                lab.send(topic, value_of(seq[0]), partition=0).result(timeout)
                into.append((time.perf_counter(), None))
            except Exception as e:  # noqa: BLE001 -- reported, not raised
                into.append((None, repr(e)))

        for kind in args.kinds.split(","):
            for trial in range(args.trials):
                for _ in range(20):   # both producers know the current leader and have written to it
                    t, err = send_one(10)
                    if err is not None:
                        raise RuntimeError(f"warm-up produce failed: {err}")
                    warm: list = []
                    lab_send(10, warm)
                    if warm[0][1] is not None:
                        raise RuntimeError(f"warm-up produce (kafkalab) failed: {warm[0][1]}")
                before = cluster.partition_state(topic, 0)
                leader = before["leader"]
                elected: list = []

                # elected is bound now: a watcher that outlives its join(5) must not write into the next trial's list
                def watch(old_epoch=before["leader_epoch"], elected=elected):
                    end = time.perf_counter() + session_ms / 1000 + 30
                    while time.perf_counter() < end:
                        s = cluster.partition_state(topic, 0)
                        if s["leader_epoch"] > old_epoch and s["leader"] >= 0:
                            elected.append((time.perf_counter(), s))
                            return
                        time.sleep(0.005)
                t0 = time.perf_counter()
                cluster.kill(leader, expire_session=(kind == "expire"))
                killed = time.perf_counter()
                watcher = threading.Thread(target=watch, daemon=True)
                watcher.start()
                lab_done: list = []
                lab_thread = threading.Thread(target=lab_send, args=(session_ms / 1000 + 30, lab_done), daemon=True)
                lab_thread.start()
                t1, err = send_one(session_ms / 1000 + 30)
                watcher.join(5)
                lab_thread.join(session_ms / 1000 + 35)
                lab_t, lab_err = lab_done[0] if lab_done else (None, "no answer")
                after = cluster.partition_state(topic, 0)
                out["trials"].append({
                    "kind": kind, "old_leader": leader, "new_leader": after["leader"], "isr": after["isr"],
                    "kill_call_s": killed - t0,
                    "elected_s": (elected[0][0] - t0) if elected else None,
                    "serving_s": (lab_t - t0) if lab_t is not None else None,
                    "librdkafka_s": (t1 - t0) if t1 is not None and err is None else None,
                    "error": "; ".join(str(e) for e in (lab_err, err) if e is not None) or None})
                print(f"[child] {kind} trial {trial + 1}: {out['trials'][-1]}", file=sys.stderr, flush=True)
                cluster.restart(leader)
                cluster.wait_until(lambda: len(cluster.partition_state(topic, 0)["isr"]) == 3, 60,
                                   "the restarted broker did not rejoin the ISR")
        p.flush(10)
        lab.close()
    out["client_log"] = dict(clog.messages)
    print(json.dumps(out), flush=True)
    return 0


def failover_part(cfg) -> dict:
    env = kafkalab_env()
    argv = [sys.executable, os.path.abspath(__file__), "--failover-child", "--trials", str(cfg.trials),
            "--session-timeout-ms", str(cfg.session_timeout_ms), "--zk-tick-time-ms", str(cfg.zk_tick_time_ms),
            "--kinds", "expire,timeout"]
    budget = 120 + cfg.trials * 2 * (cfg.session_timeout_ms / 1000 + 40)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=budget)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"failover child exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def print_failover(fo: dict) -> dict:
    bound = fo["session_timeout_ms"] / 1000 + FAILOVER_SLACK_S
    print(f"zookeeper.session.timeout.ms={fo['session_timeout_ms']} (bound {bound:.1f} s), ZooKeeper tickTime="
          f"{fo['zk_tick_time_ms']} ms (a session expires between the timeout and the timeout + one tick after its "
          f"last ping); times from "
          f"cluster.kill(leader); 'elected' = the controller's view shows a new leader epoch; 'serving' = the first "
          f"acks=all record produced after the kill acknowledged by the new leader, seen by kafkalab's producer "
          f"(Java-client semantics: it refreshes metadata retry.backoff.ms after losing the leader); 'librdkafka' = "
          f"the same seen by confluent-kafka, which re-queries a leaderless partition on a once-a-second timer and, "
          f"when the dead broker leaves the metadata, may park the partition for one more tick\n")
    print(f"{'kill':<22} {'trial':>5}  {'leader':>9}  {'kill call':>9}  {'elected':>9}  {'serving':>9}  "
          f"{'librdkafka':>10}  note")
    worst: dict = {}
    counts = collections.Counter()
    for t in fo["trials"]:
        kind = "session lost at once" if t["kind"] == "expire" else "session times out"
        counts[kind] += 1
        e = "n/a" if t["elected_s"] is None else f"{t['elected_s']:.3f} s"
        s = "FAILED" if t["serving_s"] is None else f"{t['serving_s']:.3f} s"
        r = "FAILED" if t.get("librdkafka_s") is None else f"{t['librdkafka_s']:.3f} s"
        print(f"{kind:<22} {counts[kind]:>5}  {t['old_leader']:>4} -> {t['new_leader']:<2} "
              f"{t['kill_call_s']:>7.3f} s  {e:>9}  {s:>9}  {r:>10}  {t['error'] or ''}")
        w = worst.get(kind, 0.0)
        worst[kind] = float("inf") if t["serving_s"] is None or w == float("inf") else max(w, t["serving_s"])
    return {"bound": bound, "worst": worst}


# ============================================================================================ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (rough numbers)")
    ap.add_argument("--records", type=int, help="records per throughput run (default 60000, --quick 5000)")
    ap.add_argument("--latency-records", type=int, help="records per latency run (default 1000, --quick 200)")
    ap.add_argument("--rounds", type=int, help="rounds, configurations interleaved (default 5, --quick 1)")
    ap.add_argument("--partitions", type=int, default=1,
                    help="partitions of each throughput topic (default 1: one leader, two followers; 3 puts a "
                         "leader on every broker)")
    ap.add_argument("--trials", type=int, help="failover trials per kind of kill (default 3, --quick 1)")
    ap.add_argument("--session-timeout-ms", type=int, default=6000,
                    help="zookeeper.session.timeout.ms of the failover cluster (default 6000)")
    ap.add_argument("--zk-tick-time-ms", type=int, default=500,
                    help="the coordination store's tickTime (default 500; sessions expire in tick buckets, so the "
                         "worst case is the session timeout + one tick; ZooKeeper's sample config uses 2000)")
    ap.add_argument("--skip-failover", action="store_true")
    ap.add_argument("--skip-produce", action="store_true")
    ap.add_argument("--failover-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kinds", default="expire,timeout", help=argparse.SUPPRESS)
    cfg = ap.parse_args(argv)
    if cfg.failover_child:
        cfg.trials = cfg.trials or 1
        return failover_child(cfg)
    cfg.records = cfg.records or (5_000 if cfg.quick else 60_000)
    cfg.latency_records = cfg.latency_records or (200 if cfg.quick else 1000)
    cfg.rounds = cfg.rounds or (1 if cfg.quick else 5)
    cfg.trials = cfg.trials or (1 if cfg.quick else 3)

    load0 = os.getloadavg()
    import kafkalab
    rev = git_revision()
    print(f"cluster benchmark: 3 brokers in one process (kafkalab cluster), {cfg.records:,} records of "
          f"{RECORD_SIZE} B per throughput run, {cfg.latency_records} latency records per run, {cfg.rounds} round(s); "
          f"failover: {cfg.trials} trial(s) per kind of kill")
    print(f"versions: kafkalab {kafkalab.__version__} (git {rev}), Python {sys.version.split()[0]}, "
          f"confluent-kafka {client_version()} / librdkafka {ck.libversion()[0]}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}"
          + ("  (WARNING: other processes compete for the CPU; trust the ratios more than the numbers)"
             if load0[0] > 0.5 else ""))
    t_start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="kafkalab-cluster-bench-")
    prod = fo = None
    try:
        if not cfg.skip_produce:
            print("\nproduce (python -m kafkalab.cli cluster --brokers 3 as a subprocess):", flush=True)
            prod = produce_part(cfg, workdir)
        if not cfg.skip_failover:
            print("\nfailover (in-process Cluster(brokers=3) in a child process) ...", flush=True)
            try:
                fo = failover_part(cfg)
            except Exception as e:
                print(f"  failover FAILED: {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    def verdict(ok: Optional[bool]) -> str:
        return "n/a" if ok is None else ("MET" if ok else "MISSED")
    targets = []
    if prod is not None:
        summ = prod["summ"]
        print(f"\nProduce results (median of {cfg.rounds} round(s); latency percentiles over "
              f"{summ['RF=1/acks=1']['lat_n']} samples per configuration; MB = 10^6 bytes of values; "
              f"cluster CPU = the 3-broker process's user+sys time per record):\n")
        print_produce_table(summ)
        for name, s in summ.items():
            if s["errors"]:
                print(f"  {name}: errors {dict(s['errors'])}")
        # The ratio is judged pairwise: within each round the configurations run back to back, under the same
        # machine conditions, so a round where the machine is slow (it happens here, for whole rounds) slows
        # both sides of its ratio. The ratio of the two medians is printed too; it can pair a fast round of one
        # configuration with a slow round of the other.
        all_r, rf1_r = summ["RF=3/acks=all"]["rps_by_round"], summ["RF=1/acks=1"]["rps_by_round"]
        paired = [all_r[k] / rf1_r[k] for k in sorted(all_r) if k in rf1_r]
        a, b = summ["RF=3/acks=all"]["rps"], summ["RF=1/acks=1"]["rps"]
        of_medians = a / b if a and b else None
        r = median(paired) if paired else None
        if paired:
            print("\nRF=3/acks=all / RF=1/acks=1 within each round: " + ", ".join(f"{x:.0%}" for x in paired)
                  + f"; median {r:.0%} (ratio of the medians above: "
                  + ("n/a" if of_medians is None else f"{of_medians:.0%}") + ")")
        targets.append((f"RF=3/acks=all throughput >= {TARGET_ALL_VS_RF1:.0%} of RF=1/acks=1",
                        verdict(None if r is None else r >= TARGET_ALL_VS_RF1),
                        "n/a" if r is None else f"{r:.0%}, the median of the rounds' ratios"))
        for name in summ:
            p99 = summ[name]["p99"]
            targets.append((f"ack latency p99 < {TARGET_P99_MS:.0f} ms, {name}",
                            verdict(None if p99 is None else p99 < TARGET_P99_MS), f"{fmt(p99, 'ms')} ms"))
    if fo is not None:
        print("\nFailover results:\n")
        f = print_failover(fo)
        for kind, w in f["worst"].items():
            targets.append((f"failover < session timeout + 1 s, {kind}", verdict(w < f["bound"]),
                            f"worst of the trials {w:.3f} s, bound {f['bound']:.1f} s" if w != float("inf") else "a trial failed"))
    if targets:
        print("\nTargets:")
        width = max(len(t[0]) for t in targets)
        for label, v, detail in targets:
            print(f"  {label:<{width}}  {v:<7} ({detail})")
    print("\nNotes:")
    if prod is not None:
        ld = prod["load_during"]
        print(f"  cluster start to ready {prod['ready_s']:.2f} s; cluster process peak RSS "
              f"{fmt(prod['rss'], 'MiB')} MiB; load average after each run "
              f"{min(ld, default=0):.2f}-{max(ld, default=0):.2f}")
        msgs = prod["client_log"]
        if msgs:
            print(f"  librdkafka said ({sum(msgs.values())} messages): "
                  + "; ".join(f"{m} (x{n})" for m, n in msgs.most_common(4)))
    if fo is not None and fo.get("client_log"):
        msgs = collections.Counter(fo["client_log"])
        print(f"  failover producer's librdkafka said ({sum(msgs.values())} messages; disconnects are expected): "
              + "; ".join(f"{m[:120]} (x{n})" for m, n in msgs.most_common(3)))
    load1 = os.getloadavg()
    print(f"  load average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print(f"\ntotal time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
