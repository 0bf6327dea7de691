"""The tap's cost and the producer perf tool's speed, in one run: confluent-kafka through ``kafkalab tap``
against the same client straight to the broker, and ``kafkalab producer-perf-test`` against kafka-python.

Run from the repository root::

    .venv/bin/python benchmarks/tap.py                      # 100,000 records of 1 KiB per run, 3 rounds
    .venv/bin/python benchmarks/tap.py --quick              # smoke run: 10,000 records, 1 round (rough numbers)
    .venv/bin/python benchmarks/tap.py --routes direct,process --rounds 5
    .venv/bin/python benchmarks/tap.py --only perf          # only the perf-tool comparison
    .venv/bin/python benchmarks/tap.py --profile            # also cProfile the tap (relay threads) and the perf tool

One kafkalab broker runs as its own process (``harness.BrokerProcess``, as ``broker.py``). Three **routes** lead
to it, and every round runs the same work through each, the order rotating from round to round:

* ``direct``: the client talks to the broker;
* ``process``: through ``python -m kafkalab.cli tap --quiet`` (the command a user starts), a process of its own
  with one port per broker; it records every frame both ways (decoded header and body), as always;
* ``thread``: through a :class:`kafkalab.trace.Tap` in this process (as in a notebook: its relay threads share
  the GIL with the benchmark's own Python thread, which mostly waits in librdkafka).

**Throughput.** confluent-kafka produces ``--records`` values of 1 KiB (``harness.produce_run``: acks=1,
``linger.ms=5``, ``batch.size`` 1 MB, a delivery report only for failures) to a fresh one-partition topic,
then consumes them back (``harness.consume_run``: ``assign()`` from offset 0, every offset, size and index
checked). Ratios are route / direct per round (the runs of one round follow each other within seconds), then
their median: the target is **at least 0.5x** for produce and consume.

The targets are judged on the ``process`` route, the tap on its own as a proxy. The ``thread`` route is reported,
not judged: there the relay threads wait for the GIL whenever the host program's own Python code runs (here
``harness.consume_run`` checking every record in Python, ``produce_run``'s loop of ``produce()`` calls), so its
figures measure the host program as much as the tap (with ``sys.setswitchinterval(0.0005)`` instead of the
default 5 ms, its consume ratio went from 0.40x to 0.64x in back-to-back runs).

**Ack latency.** ``--latency`` records one at a time (``harness.latency_run``: produce, then poll until the
delivery report; ``linger.ms=0``, acks=1), after 50 untimed ones. The p50 of each route per round; what the
tap adds is route p50 - direct p50 per round, then the median: the target is **under 1 ms**.

After every run the in-process tap is checked to have recorded the requests of the run (Produce or Fetch
requests with decoded bodies, no frame with a decode error); the tap process prints its totals on exit
(frames, connections, dropped: the tap keeps at most 256 MiB of frames, oldest dropped first). The tap
process's CPU per record is read from ``/proc``.

**Producer perf tool.** ``kafkalab producer-perf-test --topic T --num-records N --record-size 1024
--throughput -1 --producer-props bootstrap.servers=... acks=1 linger.ms=5 batch.size=262144`` (called in this
process through ``kafkalab.tools.producer_perf.main``; the figure is the records/sec of its own total line, as a
user reads it) against kafka-python's ``KafkaProducer`` with the same settings sending ``--perf-records``
ready-made 1 KiB values (``send`` per record, then ``flush`` and ``close``; timed from the first ``send``).
kafkalab's ``Producer`` in the same bare loop is reported too: the difference is what the tool itself costs
(a fresh random payload per record, as Kafka's tool, a callback with the latency per record, the stats). The
order rotates every round; the target is the tool at **at least 0.8x** kafka-python (median of per-round
ratios).

This is a report, not a test: the exit status is 0 even when a target is missed (1 when a run failed).
"""
from __future__ import annotations

import argparse
import io
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Optional

import harness

ROUTES = ("direct", "process", "thread")
PERF_CLIENTS = ("perf-tool", "kafka-python", "kafkalab-producer")
LATENCY_WARMUP = 50
#: The producer settings of the perf comparison, in Kafka's spelling (kafka-python gets the same values).
PERF_PROPS = {"acks": "1", "linger.ms": "5", "batch.size": "262144"}
TOTAL_LINE = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec")
TAP_TOTALS = re.compile(r"^(\d+) frame\(s\) on (\d+) connection\(s\), (\d+) dropped")


# ============================================================================================ the taps
class TapProcess:
    """``python -m kafkalab.cli tap --quiet`` in front of ``upstream``: its bootstrap address, CPU, totals."""

    def __init__(self, upstream: str, workdir: str):
        self.log_path = os.path.join(workdir, "tap.log")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.cli", "tap", "--bootstrap-server", upstream,
             "--listen", "127.0.0.1:0", "--quiet"], stdout=subprocess.PIPE, stderr=open(self.log_path, "wb"),
            stdin=subprocess.DEVNULL, env=harness.kafkalab_env(), text=True)
        line = self.proc.stdout.readline()      # "tap listening on HOST:PORT for UPSTREAM"
        match = re.match(r"tap listening on (\S+) for", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"the tap did not start: {line!r}; see {self.log_path}")
        self.bootstrap = match.group(1)

    def cpu_seconds(self) -> Optional[float]:
        return harness.proc_cpu_seconds(self.proc.pid)

    def peak_rss_mb(self) -> Optional[float]:
        return harness.proc_peak_rss_mb(self.proc.pid)

    def stop(self) -> str:
        """Ctrl-C, as a user stops it; returns its totals line."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        totals = next((TAP_TOTALS.match(ln) for ln in out.splitlines() if TAP_TOTALS.match(ln)), None)
        return totals.group(0) if totals else f"(no totals; exit {self.proc.returncode})"


def check_recorded(tap, since: int, api_key: int) -> Optional[str]:
    """A problem with what the in-process ``tap`` recorded after frame index ``since``, or None."""
    frames = [f for f in list(tap.frames) if f.index >= since]
    errors = [f for f in frames if f.error]
    if errors:
        return f"{len(errors)} frame(s) recorded with an error, first: {errors[0].summary()}"
    if not any(f.api_key == api_key and f.direction == "request" and f.decoded is not None for f in frames):
        return f"no decoded request of API {api_key} recorded"
    return None


# ============================================================================================ the perf tool
def perf_tool(bootstrap: str, topic: str, n: int) -> float:
    """``kafkalab producer-perf-test`` (this process): the records/sec of its total line."""
    from kafkalab.tools import producer_perf

    out, err = io.StringIO(), io.StringIO()
    argv = ["--topic", topic, "--num-records", str(n), "--record-size", str(harness.RECORD_SIZE),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
            *(f"{k}={v}" for k, v in PERF_PROPS.items())]
    rc = producer_perf.main(argv, out=out, err=err)
    lines = out.getvalue().splitlines()
    match = TOTAL_LINE.match(lines[-1]) if lines else None
    if rc != 0 or err.getvalue() or not match or int(match.group(1)) != n:
        raise RuntimeError(f"producer-perf-test: exit {rc}; out {lines[-1:]}; err {err.getvalue()[:300]!r}")
    return float(match.group(2))


def kafka_python_producer(bootstrap: str, topic: str, values: list) -> float:
    """kafka-python's ``KafkaProducer``: ``send`` per record, ``flush``, ``close``; records per second."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="perf-kafka-python", acks=int(PERF_PROPS["acks"]),
                      linger_ms=int(PERF_PROPS["linger.ms"]), batch_size=int(PERF_PROPS["batch.size"]),
                      compression_type=None, enable_idempotence=False)
    send = p.send
    t0 = time.perf_counter()
    futures = [send(topic, v) for v in values]
    p.flush(120)
    p.close()
    elapsed = time.perf_counter() - t0
    failed = sum(1 for f in futures if not f.succeeded())
    if failed:
        raise RuntimeError(f"kafka-python: {failed} record(s) failed")
    return len(values) / elapsed


def kafkalab_producer(bootstrap: str, topic: str, values: list) -> float:
    """kafkalab's ``Producer`` in the same bare loop as :func:`kafka_python_producer`."""
    from kafkalab.clients import Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": "perf-kafkalab", **PERF_PROPS})
    send = p.send
    t0 = time.perf_counter()
    futures = [send(topic, v) for v in values]
    p.flush()
    p.close()
    elapsed = time.perf_counter() - t0
    failed = sum(1 for f in futures if f.exception() is not None)
    if failed:
        raise RuntimeError(f"kafkalab Producer: {failed} record(s) failed")
    return len(values) / elapsed


# ============================================================================================ the run
def _arguments(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000, help="records per throughput run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", type=int, default=500, help="timed records of each latency run")
    ap.add_argument("--perf-records", type=int, default=50_000, help="records per perf-tool run")
    ap.add_argument("--routes", default=",".join(ROUTES), help="routes to measure (direct is always included)")
    ap.add_argument("--only", default="tap,perf", help="tap, perf or both")
    ap.add_argument("--quick", action="store_true",
                    help="10,000 records, 100 latency samples, 5,000 perf records, 1 round")
    ap.add_argument("--profile", action="store_true",
                    help="also cProfile the in-process tap's relay threads and the perf tool (both threads)")
    cfg = ap.parse_args(argv)
    if cfg.quick:
        cfg.records, cfg.latency, cfg.perf_records, cfg.rounds = 10_000, 100, 5_000, 1
    cfg.routes = ["direct"] + [r for r in cfg.routes.split(",") if r and r != "direct"]
    cfg.only = set(cfg.only.split(","))
    for r in cfg.routes:
        if r not in ROUTES:
            ap.error(f"unknown route {r!r}; choose from {', '.join(ROUTES)}")
    if not cfg.only <= {"tap", "perf"}:
        ap.error("--only takes tap, perf or tap,perf")
    return cfg


def _rotate(items: list, r: int) -> list:
    return items[r % len(items):] + items[:r % len(items)]


def tap_rounds(cfg, broker, workdir: str, clog, problems: list) -> dict:
    """Throughput and latency through each route, round by round."""
    from kafkalab.trace import Tap

    taps: dict = {}
    if "process" in cfg.routes:
        taps["process"] = TapProcess(broker.bootstrap, workdir)
    if "thread" in cfg.routes:
        taps["thread"] = Tap(broker.bootstrap).start()
    bootstrap = {"direct": broker.bootstrap, **{r: t.bootstrap_servers if r == "thread" else t.bootstrap
                                                for r, t in taps.items()}}
    res = {r: {"produce": [], "consume": [], "p50": [], "p99": [], "tap_cpu_us": []} for r in cfg.routes}

    def one(route: str, n: int, tag: str, timed: bool) -> None:
        topic = f"tap-{route}-{tag}-{uuid.uuid4().hex[:6]}"
        harness.create_topic(broker.bootstrap, topic, clog)
        tap = taps.get(route)
        cpu0 = tap.cpu_seconds() if route == "process" else None
        mark = tap.frames[-1].index + 1 if route == "thread" and tap.frames else 0
        p = harness.produce_run(bootstrap[route], topic, n, "1", clog)
        c = harness.consume_run(bootstrap[route], topic, n, clog)
        cpu1 = tap.cpu_seconds() if route == "process" else None
        if p["failed"] or not c["complete"] or c["bad"]:
            problems.append(f"{route} {tag}: {p['failed']} failed, consumed {c['records']}/{n}, {c['bad']} bad "
                            f"{c['gave_up'] or ''}")
        if route == "thread":
            for api in (0, 1):
                problem = check_recorded(tap, mark, api)
                if problem:
                    problems.append(f"thread tap {tag}: {problem}")
        if not timed:
            return
        res[route]["produce"].append(p["rps"])
        res[route]["consume"].append(c["rps"])
        if cpu0 is not None and cpu1 is not None:
            res[route]["tap_cpu_us"].append((cpu1 - cpu0) / (2 * n) * 1e6)
        lat = harness.latency_run(bootstrap[route], topic, cfg.latency, clog, warmup=LATENCY_WARMUP)
        if lat["errors"]:
            problems.append(f"{route} {tag} latency: {lat['errors']}")
        res[route]["p50"].append(harness.pct(lat["samples"], 50))
        res[route]["p99"].append(harness.pct(lat["samples"], 99))
        print(f"  round {tag} {route:8s} produce {p['rps']:>10,.0f} rec/s   consume {c['rps']:>10,.0f} rec/s   "
              f"ack p50 {harness.fmt(res[route]['p50'][-1], 'ms')} ms  p99 {harness.fmt(res[route]['p99'][-1], 'ms')}"
              " ms", flush=True)

    try:
        for route in cfg.routes:     # warm-up, untimed: imports, connections, the broker's first segments
            one(route, min(cfg.records, max(1000, cfg.records // 10)), "warmup", False)
        for r in range(cfg.rounds):
            for route in _rotate(cfg.routes, r):
                one(route, cfg.records, str(r + 1), True)
        if cfg.profile and "thread" in taps:
            profile_tap(cfg, broker, clog)
    finally:
        if "thread" in taps:
            thread_tap = taps["thread"]
            thread_tap.stop()
            res["thread_totals"] = (f"{len(thread_tap.frames)} frame(s) on {len(thread_tap.connections)} "
                                    f"connection(s), {thread_tap.dropped} dropped")
        if "process" in taps:
            res["process_rss"] = taps["process"].peak_rss_mb()
            res["process_totals"] = taps["process"].stop()
    return res


def profile_tap(cfg, broker, clog) -> None:
    """cProfile a fresh in-process tap's relay threads over one produce and consume run."""
    from kafkalab.trace import Tap

    topic = f"tap-profile-{uuid.uuid4().hex[:6]}"
    harness.create_topic(broker.bootstrap, topic, clog)
    with harness.ThreadProfiles(main=False) as prof, Tap(broker.bootstrap) as tap:
        harness.produce_run(tap.bootstrap_servers, topic, cfg.records, "1", clog)
        harness.consume_run(tap.bootstrap_servers, topic, cfg.records, clog)
    print("\ncProfile of the in-process tap's relay threads (one produce and one consume run), by own time:")
    print(prof.report())


def perf_rounds(cfg, broker, clog, problems: list) -> dict:
    values = [harness.value_of(i) for i in range(cfg.perf_records)]
    runs = {"perf-tool": lambda t, n: perf_tool(broker.bootstrap, t, n),
            "kafka-python": lambda t, n: kafka_python_producer(broker.bootstrap, t, values[:n]),
            "kafkalab-producer": lambda t, n: kafkalab_producer(broker.bootstrap, t, values[:n])}
    res: dict = {c: [] for c in PERF_CLIENTS}

    def one(client: str, n: int, tag: str):
        topic = f"perf-{client}-{tag}-{uuid.uuid4().hex[:6]}"
        harness.create_topic(broker.bootstrap, topic, clog)
        try:
            return runs[client](topic, n)
        except Exception as e:      # noqa: BLE001 -- reported, the other runs go on
            problems.append(f"{client} {tag}: {type(e).__name__}: {e}")
            return None

    for client in PERF_CLIENTS:
        one(client, min(cfg.perf_records, max(500, cfg.perf_records // 10)), "warmup")
    for r in range(cfg.rounds):
        for client in _rotate(list(PERF_CLIENTS), r):
            rps = one(client, cfg.perf_records, str(r + 1))
            res[client].append(rps)
            print(f"  round {r + 1} {client:18s} {harness.fmt(rps, 'rec/s'):>10s} rec/s", flush=True)
    if cfg.profile:
        topic = f"perf-profile-{uuid.uuid4().hex[:6]}"
        harness.create_topic(broker.bootstrap, topic, clog)
        with harness.ThreadProfiles() as prof:
            perf_tool(broker.bootstrap, topic, cfg.perf_records)
        print("\ncProfile of kafkalab producer-perf-test (caller thread + the producer's I/O thread), by own time:")
        print(prof.report())
    return res


def report(cfg, tap: Optional[dict], perf: Optional[dict], problems: list) -> None:
    targets = []
    if tap is not None:
        print()
        rows = []
        for route in cfg.routes:
            r = tap[route]
            rows.append([route, "", harness.spread(r["produce"], "rec/s"), harness.spread(r["consume"], "rec/s"),
                         harness.spread(r["p50"], "ms"), harness.spread(r["p99"], "ms"),
                         harness.spread(r["tap_cpu_us"], "us/rec") if r["tap_cpu_us"] else ""])
        harness.print_rows(["route", "", "produce rec/s", "consume rec/s", "ack p50 ms", "ack p99 ms",
                            "tap CPU us/rec"], rows)
        direct = tap["direct"]
        print()
        for route in cfg.routes[1:]:
            r = tap[route]
            produce = harness.paired_ratios(r["produce"], direct["produce"])
            consume = harness.paired_ratios(r["consume"], direct["consume"])
            added = [a - b for a, b in zip(r["p50"], direct["p50"]) if a is not None and b is not None]
            print(f"{route:8s} / direct: produce {harness.ratio_spread(produce)}, consume "
                  f"{harness.ratio_spread(consume)}, p50 ack latency added {harness.spread(added, 'ms')} ms")
            if produce and consume and added and route == "process":   # the thread route: see the docstring
                worst = min(statistics.median(produce), statistics.median(consume))
                targets.append((f"tap ({route}) keeps >= 0.5x direct throughput (worse of produce/consume)",
                                worst >= 0.5, f"{worst:.2f}x"))
                targets.append((f"tap ({route}) adds < 1 ms to the p50 ack latency", statistics.median(added) < 1,
                                f"{statistics.median(added):.3f} ms"))
        if "process_totals" in tap:
            rss = tap.get("process_rss")
            print(f"tap process on exit: {tap['process_totals']}"
                  + (f"; peak RSS {rss:.0f} MiB" if rss is not None else ""))
        if "thread_totals" in tap:
            print(f"in-process tap on stop: {tap['thread_totals']}")
    if perf is not None:
        print()
        harness.print_rows(["producer", "", "rec/s", "MB/s"],
                           [[c, "", harness.spread(perf[c], "rec/s"),
                             harness.fmt(harness.median(perf[c]) and harness.median(perf[c]) * harness.RECORD_SIZE
                                         / harness.MB, "MB/s")] for c in PERF_CLIENTS])
        tool = harness.paired_ratios(perf["perf-tool"], perf["kafka-python"])
        bare = harness.paired_ratios(perf["kafkalab-producer"], perf["kafka-python"])
        own = harness.paired_ratios(perf["perf-tool"], perf["kafkalab-producer"])
        print(f"\nperf-tool / kafka-python {harness.ratio_spread(tool)}; kafkalab Producer (bare loop) / kafka-python "
              f"{harness.ratio_spread(bare)}; perf-tool / kafkalab Producer {harness.ratio_spread(own)}")
        if tool:
            targets.append(("producer-perf-test >= 0.8x kafka-python's producer", statistics.median(tool) >= 0.8,
                            f"{statistics.median(tool):.2f}x"))
    if targets:
        print("\nTargets:")
        for name, ok, value in targets:
            print(f"  {name:72s} {'MET' if ok else 'MISSED':7s} ({value})")
    for p in problems:
        print("PROBLEM:", p)


def main(argv=None) -> int:
    cfg = _arguments(argv)
    clog = harness.ClientLog()
    t_start = time.perf_counter()
    print("benchmarks/tap.py: confluent-kafka through kafkalab's tap vs direct; producer-perf-test vs kafka-python")
    print(f"  throughput: {cfg.records:,} records of {harness.RECORD_SIZE} B per run, acks=1, producer "
          f"{harness.THROUGHPUT_PRODUCER}; latency: {cfg.latency} records one at a time "
          f"({harness.LATENCY_PRODUCER}); perf: {cfg.perf_records:,} records, {PERF_PROPS}; {cfg.rounds} round(s)")
    import kafkalab
    print(f"  routes: {', '.join(cfg.routes)}; confluent-kafka {harness.client_version()}, Python "
          f"{sys.version.split()[0]}, kafkalab git {harness.git_revision()} "
          f"({os.path.dirname(os.path.dirname(kafkalab.__file__))})")
    print(f"  machine: nproc {len(os.sched_getaffinity(0))}, load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    workdir = tempfile.mkdtemp(prefix="kafkalab-tap-bench-")
    broker = harness.BrokerProcess(harness.kafkalab_spec(workdir), workdir, "tap")
    broker.start()
    problems: list = []
    tap = perf = None
    try:
        if "tap" in cfg.only:
            tap = tap_rounds(cfg, broker, workdir, clog, problems)
        if "perf" in cfg.only:
            perf = perf_rounds(cfg, broker, clog, problems)
    finally:
        broker.stop()
    print(f"\n  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(cfg, tap, perf, problems)
    if clog.messages:
        print("client log (first 5):", "; ".join(f"{m} x{n}" for m, n in list(clog.messages.items())[:5]))
    print(f"\ntotal time {time.perf_counter() - t_start:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
