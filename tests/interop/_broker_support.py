"""Shared pieces of the real-client tests against the kafkalab broker (``test_broker_*.py``).

Every client test follows the same pattern: produce a known list of records (:class:`Rec`: partition, key,
value, headers, timestamp), read them back, and compare *per partition, in order*: same key, same value, same
headers (order and duplicates included), same CreateTime timestamp. The stored log is checked too
(:func:`stored_batches`, :func:`stored_records`): the broker keeps the batches the client sent (same codec,
same producer id), so what arrived on disk tells which codec really travelled.

The clients run in this process (confluent-kafka, kafka-python, aiokafka) or as subprocesses (kcat, node with
kafkajs); all are given short timeouts, and every wait here has a deadline, so a broken broker fails a test in
seconds instead of hanging the suite.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import NamedTuple, Optional

import pytest

from kafkalab.records import decode_batches, scan_batches

REPO = Path(__file__).resolve().parents[2]
KAFKAJS_DRIVER = Path(__file__).resolve().parent / "kafkajs" / "driver.js"
REPORT_PREFIX = "KAFKALAB-REPORT "

#: Short client timeouts (ms): a request the broker never answers fails within seconds.
TIMEOUT_MS = 5000
#: Upper bound (s) for one produce or consume phase of a test.
PHASE_S = 20.0
BASE_TS = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class Rec(NamedTuple):
    partition: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple            # ((name: str, value: bytes), ...) in order, duplicates kept
    timestamp: int            # CreateTime, ms


# -- the records ----------------------------------------------------------------------------------------------------
def sample_records(tag: str, partitions: int = 2, per_partition: int = 6, *, ascii_only: bool = False,
                   null_values: bool = True) -> list[Rec]:
    """Records that exercise the corners a client must carry unchanged: a null key, an empty value, a null value
    (tombstone), binary bytes, no headers, repeated header names, an empty header value, a non-ASCII header
    name. ``ascii_only`` keeps keys, values and header names printable (for kcat, which prints text)."""
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            key: Optional[bytes] = f"{tag}-k{p}-{i}".encode()
            value: Optional[bytes] = f"{tag}-value-{p}-{i}".encode()
            headers: tuple = (("trace", f"{tag}".encode()), ("seq", str(i).encode()), ("seq", b"again"))
            kind = i % 6
            if kind == 1:
                headers = ()
            elif kind == 2:
                key = None
            elif kind == 3:
                value = b""
                headers = (("empty", b""),) + ((("h\u00e9ader", "caf\u00e9".encode()),) if not ascii_only else ())
            elif kind == 4 and not ascii_only:
                value = bytes(range(256)) + f"{tag}".encode()
            elif kind == 5 and null_values:
                value = None
            out.append(Rec(p, key, value, headers, BASE_TS + 1000 * p + 10 * i))
    return out


def large_records(tag: str, count: int = 4, size: int = 120_000) -> list[Rec]:
    """Incompressible values large enough that a fetch of them is sent with sendfile (>= 64 KiB)."""
    rnd = random.Random(tag)
    return [Rec(0, f"{tag}-big-{i}".encode(), rnd.randbytes(size), (("n", str(i).encode()),), BASE_TS + i)
            for i in range(count)]


def by_partition(records) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r)
    return out


def assert_same_records(got, expected, what: str = "") -> None:
    """Per partition, in order, record by record (the first difference is named)."""
    g, e = by_partition(got), by_partition(expected)
    assert sorted(g) == sorted(e), f"{what}: partitions {sorted(g)} != {sorted(e)}"
    for p in e:
        assert len(g[p]) == len(e[p]), f"{what}: partition {p} has {len(g[p])} records, expected {len(e[p])}"
        for i, (a, b) in enumerate(zip(g[p], e[p])):
            assert a == b, f"{what}: partition {p} record {i} differs:\n got      {a}\n expected {b}"


def norm_headers(headers) -> tuple:
    return tuple((k if isinstance(k, str) else bytes(k).decode("utf-8"), None if v is None else bytes(v))
                 for k, v in (headers or ()))


# -- the broker side --------------------------------------------------------------------------------------------------
def partition_dir(cluster, topic: str, partition: int, broker_id: int = 0) -> Path:
    return Path(cluster.broker(broker_id).config.log_dirs[0]) / f"{topic}-{partition}"


def stored_batches(cluster, topic: str, partition: int, broker_id: int = 0) -> list:
    """The header of every batch in the partition's segment files (read from disk, not through the broker)."""
    headers = []
    for f in sorted(partition_dir(cluster, topic, partition, broker_id).glob("*.log")):
        scan = scan_batches(f.read_bytes())
        headers.extend(span.header for span in scan.batches)
    return headers


def stored_records(cluster, topic: str, partitions, broker_id: int = 0) -> list[Rec]:
    """Every record on disk, decoded with kafkalab's own reader (CRC checked)."""
    out = []
    for p in partitions:
        for f in sorted(partition_dir(cluster, topic, p, broker_id).glob("*.log")):
            for batch in decode_batches(f.read_bytes()):
                for r in batch.records:
                    out.append(Rec(p, r.key if r.key is None else bytes(r.key),
                                   r.value if r.value is None else bytes(r.value),
                                   norm_headers(r.headers), r.timestamp))
    return out


def requests(cluster, *, client_id: Optional[str] = None, api_key: Optional[int] = None, broker_id: int = 0,
             wait: float = 5.0):
    """The request-log entries of one client (and API). A request is logged once its response is written, which
    may be a moment after the client got it: wait up to ``wait`` seconds for at least one entry."""
    end = time.monotonic() + wait
    while True:
        found = [r for r in cluster.broker(broker_id).channel.request_log.records
                 if (client_id is None or r.client_id == client_id) and (api_key is None or r.api_key == api_key)]
        if found or time.monotonic() > end:
            return found
        time.sleep(0.01)


def used_apis(cluster, client_id: str) -> set[str]:
    """The APIs one client used (for "never used" checks; settles briefly first, see :func:`requests`)."""
    time.sleep(0.05)
    return {r.api_name for r in requests(cluster, client_id=client_id)}


def assert_used(cluster, client_id: str, api_key: int) -> None:
    assert requests(cluster, client_id=client_id, api_key=api_key), f"{client_id} never sent api key {api_key}"


GROUP_APIS = {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch"}


def deadline(seconds: float = PHASE_S) -> float:
    return time.monotonic() + seconds


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{random.randrange(1 << 30):x}"


# -- confluent-kafka ------------------------------------------------------------------------------------------------
def confluent_produce(bootstrap: str, topic: str, records, **conf) -> list[tuple[int, int]]:
    """Produce in order, wait for every delivery report; returns [(partition, offset)] in produce order."""
    import confluent_kafka as ck

    config = {"bootstrap.servers": bootstrap, "socket.timeout.ms": TIMEOUT_MS, "message.timeout.ms": 15000,
              "request.timeout.ms": TIMEOUT_MS, "linger.ms": 20, "enable.idempotence": True, "acks": "all"}
    config.update(conf)
    producer = ck.Producer(config)
    reports: list = [None] * len(records)

    def report(i):
        def cb(err, msg):
            reports[i] = (err, msg.partition(), msg.offset())
        return cb

    for i, r in enumerate(records):
        producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers) or None, timestamp=r.timestamp,
                         partition=r.partition, on_delivery=report(i))
        producer.poll(0)
    left = producer.flush(PHASE_S)
    assert left == 0, f"{left} message(s) still undelivered after {PHASE_S}s"
    errors = [rep for rep in reports if rep[0] is not None]
    assert not errors, f"delivery failed: {errors[:3]}"
    return [(p, o) for _, p, o in reports]


def confluent_consume(bootstrap: str, topic: str, partitions, count: int, **conf) -> list[Rec]:
    """assign() every partition from the beginning (no subscribe, so no group membership) and read until
    ``count`` records arrived and every partition reported EOF."""
    import confluent_kafka as ck

    config = {"bootstrap.servers": bootstrap, "group.id": unique("unused"),  # required by the Python binding
              "enable.auto.commit": False, "enable.auto.offset.store": False, "enable.partition.eof": True,
              "socket.timeout.ms": TIMEOUT_MS, "session.timeout.ms": 6000, "fetch.wait.max.ms": 100}
    config.update(conf)
    consumer = ck.Consumer(config)
    try:
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        return _confluent_poll(consumer, set(partitions), count)
    finally:
        consumer.close()


def _confluent_poll(consumer, partitions: set, count: int) -> list[Rec]:
    import confluent_kafka as ck

    got, eof = [], set()
    end = deadline()
    while (len(got) < count or eof != partitions) and time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                eof.add(m.partition())
                continue
            raise AssertionError(f"consumer error: {m.error()}")
        ts_type, ts = m.timestamp()
        assert ts_type == ck.TIMESTAMP_CREATE_TIME, m.timestamp()
        got.append(Rec(m.partition(), m.key(), m.value(), norm_headers(m.headers()), ts))
        eof.discard(m.partition())
    assert len(got) >= count, f"read {len(got)} of {count} records before the deadline"
    return got


# -- kafka-python ---------------------------------------------------------------------------------------------------
def kafka_python_produce(bootstrap: str, topic: str, records, **conf) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    config = dict(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS, max_block_ms=10000,
                  bootstrap_timeout_ms=TIMEOUT_MS, delivery_timeout_ms=15000, linger_ms=20)
    config.update(conf)
    producer = KafkaProducer(**config)
    try:
        futures = [producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                 timestamp_ms=r.timestamp, partition=r.partition) for r in records]
        producer.flush(PHASE_S)
        metas = [f.get(timeout=PHASE_S) for f in futures]
    finally:
        producer.close(timeout=5)
    return [(m.partition, m.offset) for m in metas]


def kafka_python_consumer(bootstrap: str, **conf):
    from kafka import KafkaConsumer

    config = dict(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                  request_timeout_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS, fetch_max_wait_ms=100)
    config.update(conf)
    return KafkaConsumer(**config)


def kafka_python_read(consumer, count: int) -> list[Rec]:
    got = []
    end = deadline()
    while len(got) < count and time.monotonic() < end:
        for _tp, messages in consumer.poll(timeout_ms=200).items():
            for m in messages:
                assert m.timestamp_type == 0, m  # CreateTime
                got.append(Rec(m.partition, m.key, m.value, norm_headers(m.headers), m.timestamp))
    assert len(got) >= count, f"read {len(got)} of {count} records before the deadline"
    return got


def kafka_python_consume(bootstrap: str, topic: str, partitions, count: int, **conf) -> list[Rec]:
    from kafka import TopicPartition

    consumer = kafka_python_consumer(bootstrap, **conf)
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        consumer.seek_to_beginning()
        return kafka_python_read(consumer, count)
    finally:
        consumer.close()


# -- aiokafka -------------------------------------------------------------------------------------------------------
def run_async(coro, timeout: float = 2 * PHASE_S):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def aiokafka_produce_async(bootstrap: str, topic: str, records, **conf) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    config = dict(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS, linger_ms=20)
    config.update(conf)
    producer = AIOKafkaProducer(**config)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                       timestamp_ms=r.timestamp, partition=r.partition) for r in records]
        metas = await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return [(m.partition, m.offset) for m in metas]


def aiokafka_produce(bootstrap: str, topic: str, records, **conf) -> list[tuple[int, int]]:
    return run_async(aiokafka_produce_async(bootstrap, topic, records, **conf))


async def aiokafka_read(consumer, count: int) -> list[Rec]:
    got = []
    end = deadline()
    while len(got) < count and time.monotonic() < end:
        batches = await consumer.getmany(timeout_ms=200)
        for _tp, messages in sorted(batches.items()):
            for m in messages:
                assert m.timestamp_type == 0, m  # CreateTime
                got.append(Rec(m.partition, m.key, m.value, norm_headers(m.headers), m.timestamp))
    assert len(got) >= count, f"read {len(got)} of {count} records before the deadline"
    return got


def aiokafka_consume(bootstrap: str, topic: str, partitions, count: int, **conf) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main():
        config = dict(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      request_timeout_ms=TIMEOUT_MS, fetch_max_wait_ms=100)
        config.update(conf)
        consumer = AIOKafkaConsumer(**config)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in partitions])
            await consumer.seek_to_beginning()
            return await aiokafka_read(consumer, count)
        finally:
            await consumer.stop()
    return run_async(main())


# -- kcat -----------------------------------------------------------------------------------------------------------
def require_kcat() -> str:
    path = shutil.which("kcat")
    if path:
        return path
    if os.environ.get("KAFKALAB_REQUIRE_KCAT") == "1":
        pytest.fail("kcat is required (KAFKALAB_REQUIRE_KCAT=1) but not on PATH: apt-get install -y kcat")
    pytest.skip("kcat is not installed (apt-get install -y kcat)")


def kcat(bootstrap: str, *args: str, input: Optional[bytes] = None, timeout: float = PHASE_S) -> bytes:
    """Run kcat; fails the test (with its stderr) on a non-zero exit."""
    cmd = [require_kcat(), "-b", bootstrap, "-m", "5", "-X", f"socket.timeout.ms={TIMEOUT_MS}", *args]
    res = subprocess.run(cmd, input=input, capture_output=True, timeout=timeout)
    assert res.returncode == 0, f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr.decode(errors='replace')}"
    return res.stdout


def kcat_consume(bootstrap: str, topic: str, partitions=None) -> list[Rec]:
    """``kcat -C -e -J``: every record to the end of each partition, from the JSON envelope."""
    args = ["-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q"]
    out = []
    for p in (partitions if partitions is not None else [None]):
        extra = ["-p", str(p)] if p is not None else []
        for line in kcat(bootstrap, *args, *extra).splitlines():
            m = json.loads(line)
            assert m["tstype"] == "create", m
            h = m.get("headers") or []
            headers = tuple((h[i], h[i + 1].encode()) for i in range(0, len(h), 2))
            out.append(Rec(m["partition"], None if m["key"] is None else m["key"].encode(),
                           None if m["payload"] is None else m["payload"].encode(), headers, m["ts"]))
    return out


def kcat_lines(records) -> bytes:
    """kcat -P -K: input: ``key:value`` per line (keys and values must be printable, without ':' in keys)."""
    return b"".join((r.key or b"") + b":" + (r.value or b"") + b"\n" for r in records)


# -- kafkajs --------------------------------------------------------------------------------------------------------
def require_kafkajs() -> None:
    required = os.environ.get("KAFKALAB_REQUIRE_KAFKAJS") == "1"
    missing = None
    if shutil.which("node") is None:
        missing = "node is not installed (kafkajs needs Node.js >= 14): apt-get install -y nodejs npm"
    elif not (REPO / "node_modules" / "kafkajs" / "package.json").is_file():
        missing = "kafkajs is not installed: run `npm ci` in the repository root (package-lock.json pins 2.2.4)"
    if missing:
        if required:
            pytest.fail(f"kafkajs is required (KAFKALAB_REQUIRE_KAFKAJS=1): {missing}")
        pytest.skip(missing)


def kafkajs(spec: dict, timeout: float = PHASE_S, script: Path = KAFKAJS_DRIVER) -> dict:
    """Run a kafkajs driver (``kafkajs/driver.js`` unless told) with ``spec``; returns its report (fails the
    test on an error)."""
    require_kafkajs()
    spec = dict(spec)
    spec.setdefault("timeout", TIMEOUT_MS)
    env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
    res = subprocess.run(["node", str(script)], input=json.dumps(spec).encode(), capture_output=True,
                         timeout=timeout, cwd=REPO, env=env)
    lines = [line for line in res.stdout.decode().splitlines() if line.startswith(REPORT_PREFIX)]
    assert lines, f"kafkajs driver printed no report (exit {res.returncode}):\n{res.stderr.decode()}"
    report = json.loads(lines[-1][len(REPORT_PREFIX):])
    assert res.returncode == 0 and "error" not in report, f"kafkajs failed: {report}\n{res.stderr.decode()}"
    return report


def kafkajs_records(records) -> list[dict]:
    def b64(b):
        return None if b is None else base64.b64encode(b).decode()
    return [{"partition": r.partition, "key": b64(r.key), "value": b64(r.value),
             "headers": [[k, b64(v)] for k, v in r.headers], "timestamp": r.timestamp} for r in records]
