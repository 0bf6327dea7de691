"""Lab 14 (``labs/14_real_clients.ipynb``): the same job done by five real clients, watched through the tap.

Theory of operation
-------------------
Every client library implements the same protocol, and each makes its own choices inside it: how many
connections it opens, which API versions it picks from the broker's ApiVersions answer, which APIs it needs for
a job at all, how it packs records into batches and batches into requests, what it counts about itself. The lab
makes those choices visible by giving every client **the same job** on one three-broker ``Cluster`` and putting a
:class:`~kafkalab.trace.Tap` in front of it:

    create topic ``job-<client>`` (6 partitions, replication factor 3) -> produce :data:`RECORD_COUNT` keyed
    records -> consume them in group ``job-<client>`` from the beginning -> commit -> close.

:func:`run_job` runs it for one client: confluent-kafka (librdkafka), kafka-python and aiokafka in this process
(their log output kept off the page), kcat and kafkajs (Node, ``lab14_kafkajs.js``, kafkajs from the
repository's ``node_modules``) as subprocesses. Every client uses the client id that is its name, so the tap's
views (:mod:`kafkalab.trace.views`) tell them apart. The producers are set to wait (``linger.ms``) longer than
producing takes and then flush, so batching does not depend on the machine's speed: every partition's records
travel in one batch.

:class:`JobResult` keeps what each client said about itself: librdkafka's statistics JSON (``stats_cb``: per
broker ``req`` counts by request type, ``txmsgs``), kafka-python's ``metrics()`` (``records-per-request-avg``, rates per node). :func:`compare_produce_counts` sets them next to what the tap counted.

Mirrors nothing in Kafka; the job is what ``kafka-console-producer.sh`` + ``kafka-console-consumer.sh --group``
do together.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from kafkalab.labs import CheckResult, check_equal, is_unanswered

__all__ = ["CLIENTS", "RECORD_COUNT", "PARTITIONS", "JobResult", "records", "topic_for", "available", "run_job",
           "client_of", "ecosystem_rows", "compare_produce_counts", "tshark_summary", "connection_counts",
           "tap_counts", "predicted_produce_requests", "check_records_per_partition", "check_only_some",
           "check_predicted_requests"]

#: The clients of the lab, in the order the notebook runs them.
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kafkajs", "kcat")
RECORD_COUNT = 1000
PARTITIONS = 6
REPLICATION_FACTOR = 3
#: How long the producers wait for more records before sending (``linger.ms``): longer than producing takes, so
#: each partition's records go in one batch however slow the machine; each job flushes right after its last send.
LINGER_MS = 2000
_TIMEOUT_S = 60
_REPORT = "KAFKALAB-REPORT "


def records() -> list[tuple[str, str]]:
    """The job's records: ``(key, value)``, 50 keys so that every partition gets some, values numbered."""
    return [(f"user-{i % 50:02d}", f"click-{i:04d}") for i in range(RECORD_COUNT)]


def topic_for(client: str) -> str:
    return f"job-{client}"


def client_of(client_id: Optional[str]) -> Optional[str]:
    """The client a request's client id belongs to (each client runs with its own name as client id)."""
    return client_id if client_id in CLIENTS else None


def _repo_root() -> Optional[Path]:
    for d in [Path.cwd(), *Path.cwd().parents]:
        if (d / "node_modules" / "kafkajs").is_dir():
            return d
    return None


def available(client: str) -> bool:
    """Whether this machine can run ``client`` (a library installed, or a command and Node's kafkajs)."""
    if client == "kcat":
        return shutil.which("kcat") is not None
    if client == "kafkajs":
        return shutil.which("node") is not None and _repo_root() is not None
    import importlib.util
    module = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}[client]
    return importlib.util.find_spec(module) is not None


@dataclasses.dataclass
class JobResult:
    """What one client did and said: records consumed, and its own metrics where it keeps any."""

    client: str
    consumed: int
    metrics: dict = dataclasses.field(default_factory=dict)


def _quiet(*names: str) -> logging.Logger:
    """The clients' loggers, kept off the notebook's stderr (a lab cell must not write there)."""
    for name in names:
        log = logging.getLogger(name)
        log.addHandler(logging.NullHandler())
        log.propagate = False
    return logging.getLogger(names[0])


# -- confluent-kafka (librdkafka) -----------------------------------------------------------------------------------
def _confluent(bootstrap: str, topic: str) -> JobResult:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    logger = _quiet("kafkalab.lab14.librdkafka")
    common = {"bootstrap.servers": bootstrap, "client.id": "confluent-kafka", "logger": logger}
    admin = AdminClient(common)
    admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])[topic].result(_TIMEOUT_S)
    stats: list = []
    producer = ck.Producer({**common, "linger.ms": LINGER_MS, "statistics.interval.ms": 100,
                            "stats_cb": stats.append})
    for key, value in records():
        producer.produce(topic, value.encode(), key.encode())
    producer.flush(_TIMEOUT_S)
    stats.clear()
    while not stats:                    # one more statistics report, taken after every Produce was answered
        producer.poll(0.1)
    last_stats = json.loads(stats[-1])
    consumer = ck.Consumer({**common, "group.id": topic, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + _TIMEOUT_S
    while seen < RECORD_COUNT and time.monotonic() < deadline:
        seen += len([m for m in consumer.consume(500, 0.5) if not m.error()])
    consumer.commit(asynchronous=False)
    consumer.close()
    return JobResult("confluent-kafka", seen, {"statistics": last_stats})


# -- kafka-python ---------------------------------------------------------------------------------------------------
def _kafka_python(bootstrap: str, topic: str) -> JobResult:
    _quiet("kafka")
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python")
    admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kafka-python", linger_ms=LINGER_MS)
    for key, value in records():
        producer.send(topic, value.encode(), key.encode())
    producer.flush(_TIMEOUT_S)
    metrics = producer.metrics()
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, client_id="kafka-python", group_id=topic,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    seen, deadline = 0, time.monotonic() + _TIMEOUT_S
    while seen < RECORD_COUNT and time.monotonic() < deadline:
        seen += sum(len(v) for v in consumer.poll(500).values())
    consumer.commit()
    consumer.close()
    return JobResult("kafka-python", seen, {"producer": metrics})


# -- aiokafka -------------------------------------------------------------------------------------------------------
async def _aiokafka_job(bootstrap: str, topic: str) -> JobResult:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="aiokafka")
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="aiokafka", linger_ms=LINGER_MS)
    await producer.start()
    try:
        for key, value in records():
            await producer.send(topic, value.encode(), key.encode())
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, client_id="aiokafka", group_id=topic,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    seen = 0
    try:
        deadline = time.monotonic() + _TIMEOUT_S
        while seen < RECORD_COUNT and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            seen += sum(len(v) for v in batch.values())
        await consumer.commit()
    finally:
        await consumer.stop()
    return JobResult("aiokafka", seen)


def _aiokafka(bootstrap: str, topic: str) -> JobResult:
    """aiokafka on its own event loop in a thread (a notebook's kernel already runs one)."""
    _quiet("aiokafka")
    out: list = []

    def run() -> None:
        try:
            out.append(asyncio.run(_aiokafka_job(bootstrap, topic)))
        except BaseException as e:   # noqa: BLE001 -- handed to the caller's thread
            out.append(e)

    thread = threading.Thread(target=run, name="kafkalab-lab14-aiokafka")
    thread.start()
    thread.join(3 * _TIMEOUT_S)
    if not out:
        raise TimeoutError("aiokafka's job did not finish")
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


# -- kafkajs and kcat (subprocesses) --------------------------------------------------------------------------------
def _report(stdout: str) -> dict:
    for line in stdout.splitlines():
        if line.startswith(_REPORT):
            return json.loads(line[len(_REPORT):])
    return {"error": "no report"}


def _kafkajs(bootstrap: str, topic: str) -> JobResult:
    root = _repo_root()
    script = Path(__file__).with_name("lab14_kafkajs.js")
    spec = {"brokers": bootstrap.split(","), "topic": topic, "group": topic, "client_id": "kafkajs",
            "partitions": PARTITIONS, "replication_factor": REPLICATION_FACTOR, "records": records()}
    env = {**os.environ, "NODE_PATH": str(root / "node_modules")} if root else dict(os.environ)
    proc = subprocess.run(["node", str(script)], input=json.dumps(spec), capture_output=True, text=True,
                          timeout=3 * _TIMEOUT_S, env=env)
    report = _report(proc.stdout)
    if proc.returncode != 0 or "error" in report:
        raise RuntimeError(f"kafkajs' job failed: {report.get('error')} {proc.stderr[-500:]}")
    return JobResult("kafkajs", report["consumed"])


def _kcat(bootstrap: str, topic: str, cluster) -> JobResult:
    """kcat has no admin API: the topic is created by the lab's cluster, not through the tap."""
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=REPLICATION_FACTOR)
    common = ["kcat", "-b", bootstrap, "-X", "client.id=kcat", "-q"]
    lines = "".join(f"{k}:{v}\n" for k, v in records())
    subprocess.run(common + ["-P", "-t", topic, "-K:", "-X", f"linger.ms={LINGER_MS}"], input=lines, text=True,
                   check=True, capture_output=True, timeout=_TIMEOUT_S)
    out = subprocess.run(common + ["-G", topic, "-X", "auto.offset.reset=earliest", "-c", str(RECORD_COUNT),
                                   "-f", "%k\n", topic], capture_output=True, text=True, check=True,
                         timeout=_TIMEOUT_S).stdout
    return JobResult("kcat", len(out.splitlines()))


def run_job(client: str, tap, cluster) -> JobResult:
    """The lab's job for ``client`` through ``tap`` (which stands in front of ``cluster``)."""
    bootstrap, topic = tap.bootstrap_servers, topic_for(client)
    if client == "confluent-kafka":
        return _confluent(bootstrap, topic)
    if client == "kafka-python":
        return _kafka_python(bootstrap, topic)
    if client == "aiokafka":
        return _aiokafka(bootstrap, topic)
    if client == "kafkajs":
        return _kafkajs(bootstrap, topic)
    if client == "kcat":
        return _kcat(bootstrap, topic, cluster)
    raise ValueError(f"unknown client {client!r}; the lab's clients are {', '.join(CLIENTS)}")


# -- what the tap saw, per client -----------------------------------------------------------------------------------
def connection_counts(summaries) -> dict[str, dict]:
    """Per client: how many connections it opened, to how many distinct brokers, and how many carried Produce,
    Fetch and group requests (JoinGroup)."""
    out: dict[str, dict] = {}
    for s in summaries:
        row = out.setdefault(s.client, {"connections": 0, "brokers": set(), "with Produce": 0, "with Fetch": 0,
                                        "with JoinGroup": 0})
        row["connections"] += 1
        if s.broker is not None:
            row["brokers"].add(s.broker)
        for api in ("Produce", "Fetch", "JoinGroup"):
            row[f"with {api}"] += api in s.requests
    for row in out.values():
        row["brokers"] = len(row["brokers"])
    return out


def tap_counts(tap, client: str, api: str) -> int:
    """Requests of ``api`` the tap saw from ``client``."""
    return sum(1 for f in list(tap.frames) if f.direction == "request" and client_of(f.client_id) == client
               and f.api_key is not None and f.api_name == api)


def compare_produce_counts(results: Mapping[str, JobResult], tap) -> list[dict]:
    """What a client counted about its own producing next to what the tap counted.

    librdkafka's statistics: ``brokers.<name>.req.Produce`` (requests sent per broker) and ``txmsgs`` (messages
    sent); kafka-python's metrics: ``producer-metrics`` ``records-per-request-avg`` (kafka-python keeps rates and
    averages, not totals)."""
    rows = []
    stats = results.get("confluent-kafka", JobResult("", 0)).metrics.get("statistics")
    if stats:
        produce = sum(b.get("req", {}).get("Produce", 0) for b in stats["brokers"].values())
        rows.append({"client": "confluent-kafka", "metric": "sum of brokers.*.req.Produce",
                     "client says": produce, "tap says": tap_counts(tap, "confluent-kafka", "Produce")})
        rows.append({"client": "confluent-kafka", "metric": "txmsgs",
                     "client says": stats["txmsgs"], "tap says": _records_sent(tap, "confluent-kafka")})
    metrics = results.get("kafka-python", JobResult("", 0)).metrics.get("producer")
    if metrics:
        producer = metrics["producer-metrics"]
        requests = tap_counts(tap, "kafka-python", "Produce")
        rows.append({"client": "kafka-python", "metric": "producer-metrics records-per-request-avg",
                     "client says": round(producer["records-per-request-avg"], 1),
                     "tap says": round(_records_sent(tap, "kafka-python") / max(requests, 1), 1)})
    return rows


def _records_sent(tap, client: str) -> int:
    from kafkalab.trace.views import produce_batching
    return sum(r.records for r in produce_batching(tap, client_of=client_of) if r.client == client)


# -- the pcap, read by tshark ---------------------------------------------------------------------------------------
def tshark_summary(path, tap, connection: int, count: int = 4) -> tuple[bool, list[str]]:
    """``(tshark was used, lines)``: the first ``count`` Kafka frames of ``connection`` in the pcap at ``path``, as
    ``direction API vN``. tshark dissects them where it is installed (``-d tcp.port==P,kafka`` for
    every tap port); elsewhere the file is read back with :func:`kafkalab.trace.read_pcap`, same lines."""
    ports = sorted(p for _, p in tap.broker_ports.values())
    tshark = shutil.which("tshark")
    if tshark is None:
        return False, _pcap_lines(path, tap, connection, count)
    args = [tshark, "-r", str(path)]
    for port in ports:
        args += ["-d", f"tcp.port=={port},kafka"]
    client_port = next(c.client[1] for c in tap.connections if c.number == connection)
    args += ["-Y", f"kafka && tcp.port == {client_port}", "-T", "fields", "-e", "_ws.col.Info"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    lines = []
    for info in res.stdout.splitlines():
        # Wireshark's Info column, e.g. "Kafka Metadata v4 Request"
        match = re.search(r"Kafka (\w+) v(\d+) (Request|Response)", info)
        if match is None:
            continue
        api, version, kind = match.groups()
        lines.append(f"{kind.lower():8} {api} v{version}")
        if len(lines) == count:
            break
    return True, lines


def _pcap_lines(path, tap, connection: int, count: int) -> list[str]:
    from kafkalab.trace import read_pcap
    conn = next(c for c in tap.connections if c.number == connection)
    out = []
    frames = {f.frame if f.forwarded is None else f.forwarded: f for f in tap.frames if f.connection == connection}
    for pf in read_pcap(path):
        if pf.source != tuple(conn.client) and pf.destination != tuple(conn.client):
            continue
        f = frames.get(pf.frame)
        if f is not None:
            out.append(f"{f.direction:8} {f.api_name} v{f.api_version}")
        if len(out) == count:
            break
    return out


# -- the ecosystem --------------------------------------------------------------------------------------------------
def ecosystem_rows() -> list[dict]:
    """The client ecosystem on one table: what each is, what it speaks, and its place in this lab."""
    return [
        {"family": "the Java client", "examples": "kafka-clients (Producer, Consumer, Admin)",
         "what it is": "Kafka's own client, released with the broker; the reference every other client follows",
         "in this lab": "no (it needs a JVM); kafkalab's own clients copy its design"},
        {"family": "librdkafka family", "examples": "confluent-kafka (Python), confluent-kafka-go, .NET, kcat",
         "what it is": "one C library speaking the protocol, wrapped for many languages: the same batching and "
                       "statistics JSON everywhere, and the same API versions for the same librdkafka release "
                       "(kcat's older one chose older versions above)", "in this lab": "confluent-kafka, kcat"},
        {"family": "pure-language clients", "examples": "kafka-python, aiokafka, kafkajs, Sarama, franz-go",
         "what it is": "the protocol written again in one language, each with its own choice of API versions",
         "in this lab": "kafka-python, aiokafka, kafkajs"},
        {"family": "Kafka Streams", "examples": "KafkaStreams (Java library)",
         "what it is": "a stream-processing library inside the application, built on the Java producer, consumer "
                       "and admin client: on the wire it is those clients (transactional ones with "
                       "processing.guarantee=exactly_once_v2)",
         "in this lab": "no"},
        {"family": "Kafka Connect", "examples": "connect-distributed.sh and its connectors",
         "what it is": "a separate service moving data in and out of Kafka with the Java clients; its workers "
                       "form a group of their own with the consumers' JoinGroup/SyncGroup protocol (protocol type "
                       "connect)", "in this lab": "no"},
    ]


# -- exercises ------------------------------------------------------------------------------------------------------
def _sorted_repr(value: Any) -> str:
    """A dict shown with its keys in order (an answer built in the order requests arrived varies run to run)."""
    if isinstance(value, dict):
        try:
            return repr(dict(sorted(value.items())))
        except TypeError:
            pass
    return repr(value)


def check_records_per_partition(answer: Any, batching, client: str) -> CheckResult:
    """``answer``: ``{partition: records in its batch}`` for ``client``'s Produce requests."""
    expected: dict = {}
    for request in batching:
        if request.client == client:
            for _topic, partition, count in request.batches:
                expected[partition] = expected.get(partition, 0) + count
    return check_equal(f"{client}: records per partition", answer, dict(sorted(expected.items())),
                       hint="each ProduceRequestBatches has .client and .batches: (topic, partition, records)",
                       describe=_sorted_repr)


def check_only_some(answer: Any, matrix) -> CheckResult:
    """``answer``: the set of APIs of ``matrix`` that some clients used and others did not."""
    if is_unanswered(answer):
        return check_equal("APIs only some clients used", answer, None)
    got = set(answer) if isinstance(answer, (set, frozenset, list, tuple)) else answer
    return check_equal("APIs only some clients used", got, set(matrix.partial_apis()),
                       hint="a column with a '—' in some rows and a version in others",
                       describe=lambda v: ", ".join(sorted(v)) if isinstance(v, (set, frozenset)) else repr(v))


def predicted_produce_requests(partitions: int, leaders: int) -> dict[str, int]:
    """Produce requests for one flush of records to every partition, leaders spread over ``leaders`` brokers:
    librdkafka sends one request per partition, the other clients one per leader."""
    return {"confluent-kafka": partitions, "kafka-python": min(partitions, leaders)}


def check_predicted_requests(answer: Any, partitions: int, leaders: int) -> CheckResult:
    """``answer``: ``{"confluent-kafka": n, "kafka-python": m}`` Produce requests for one flush."""
    expected = predicted_produce_requests(partitions, leaders)

    def diagnose(got):
        if isinstance(got, dict) and got.get("confluent-kafka") == min(partitions, leaders):
            return "librdkafka does not combine partitions into one request, even for the same leader"
        return None
    return check_equal("Produce requests for one flush", answer, expected, diagnose=diagnose,
                       hint="section 4: which client packs batches per leader, which per partition?")
