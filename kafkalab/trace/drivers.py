"""Client drivers: tiny scripts that make a real Kafka client do one thing, with short timeouts.

Theory of operation
-------------------
:func:`kafkalab.trace.capture.capture` runs a client in a **subprocess**, never in its own process: a fresh
process gives every client the same starting state (kafka-python numbers its default client ids per process,
``kafka-python-producer-1``, ``-2``...; librdkafka keeps global threads), can be killed if it hangs, and keeps
client logs out of a notebook's output.

For kcat the subprocess is kcat itself (``-L`` lists metadata, ``-P`` produces what it reads on stdin). For the
three Python libraries it is this file, run as a script (``python drivers.py``) with a JSON spec on stdin; it
imports nothing from kafkalab, only the client library. Every driver does the same two actions:

* ``metadata``: bootstrap (ApiVersions, Metadata) and look up one topic's partitions;
* ``produce``: send the given records to partition 0 of the topic and wait for the acknowledgements,

then prints one line ``KAFKALAB-REPORT {json}`` saying what the client believes happened (partitions found,
offsets acknowledged, errors), which :func:`parse_report` reads back.

kcat reads the records as lines ``key<TAB>value``, so with kcat keys and values must not contain tabs or
newlines, a null key or value travels as an empty one, every record gets the same headers (``-H``) and the
timestamps are kcat's clock.

Timeouts are set in each client's own vocabulary (``socket.timeout.ms``, ``request_timeout_ms``...) from the
spec's ``timeout``, so a client that gets no answer gives up within seconds.
"""
from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys

CLIENTS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka")
_MODULES = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}
REPORT_PREFIX = "KAFKALAB-REPORT "
#: Producers wait this long (``linger.ms``) before sending a batch, so that all records of a capture travel in
#: one batch whatever the machine's speed; the drivers flush right after the last record anyway.
LINGER_MS = 100

#: Records produced when none are given: keys, values and headers, with fixed timestamps (ms since the epoch)
#: so that a client that honours them (the three Python libraries; not kcat) builds the same batch every run.
DEFAULT_RECORDS = [
    {"key": "key1", "value": "hello", "headers": [["trace", "kafkalab"]], "timestamp": 1700000000000},
    {"key": "user-42", "value": "wire", "headers": [["trace", "kafkalab"]], "timestamp": 1700000000001},
    {"key": "a", "value": "bytes", "headers": [["trace", "kafkalab"]], "timestamp": 1700000000002},
]


# -- used by kafkalab.trace.capture (parent side) -------------------------------------------------------------------
def is_available(client: str) -> bool:
    if client == "kcat":
        return shutil.which("kcat") is not None
    import importlib.util
    return importlib.util.find_spec(_MODULES[client]) is not None


def install_hint(client: str) -> str:
    return "apt-get install -y kcat" if client == "kcat" else f"pip install {client}"


@functools.lru_cache(maxsize=None)
def installed_version(client: str) -> str:
    if client == "kcat":
        path = shutil.which("kcat")
        if path is None:
            return ""
        out = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            if line.startswith("Version "):
                # "Version 1.7.1 (JSON, ..., librdkafka 2.0.2 builtin.features=...)"
                kcat_version = line.split()[1]
                lib = line.split("librdkafka ", 1)[1].split()[0] if "librdkafka " in line else "?"
                return f"{kcat_version} (librdkafka {lib})"
        return "?"
    from importlib import metadata
    version = metadata.version(client)
    if client == "confluent-kafka":
        code = "import confluent_kafka; print(confluent_kafka.libversion()[0])"
        lib = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10).stdout
        return f"{version} (librdkafka {lib.strip()})"
    return version


def command(spec: dict) -> list[str]:
    """The argv that runs ``spec``'s client."""
    if spec["client"] == "kcat":
        return _kcat_argv(spec)
    return [sys.executable, __file__]


def stdin_for(spec: dict) -> str:
    """What the subprocess reads on stdin: kcat's input lines, or the JSON spec for a Python driver."""
    if spec["client"] != "kcat":
        return json.dumps(spec)
    if spec["action"] != "produce":
        return ""
    return "".join(f"{r.get('key') or ''}\t{r.get('value') or ''}\n" for r in spec["records"])


def parse_report(stdout: str):
    for line in reversed(stdout.splitlines()):
        if line.startswith(REPORT_PREFIX):
            return json.loads(line[len(REPORT_PREFIX):])
    if stdout.lstrip().startswith("{"):           # kcat -L -J
        try:
            return json.loads(stdout)
        except ValueError:
            return None
    return None


def _librdkafka_conf(spec: dict) -> dict:
    ms = int(spec["timeout"] * 1000)
    conf = {
        "bootstrap.servers": spec["bootstrap"],
        "socket.timeout.ms": str(min(ms, 3000)),
        "api.version.request.timeout.ms": str(min(ms, 3000)),
        "message.timeout.ms": str(max(ms - 500, 1000)),
        "reconnect.backoff.ms": "50",
        "reconnect.backoff.max.ms": "500",
        "log_level": "3",
    }
    if spec.get("client_id"):
        conf["client.id"] = spec["client_id"]
    if spec["action"] == "produce":
        conf["linger.ms"] = str(LINGER_MS)
        conf["acks"] = str(spec["acks"])
        if spec.get("idempotent") is not None:
            conf["enable.idempotence"] = "true" if spec["idempotent"] else "false"
        if spec.get("compression"):
            conf["compression.type"] = spec["compression"]
    conf.update({k: str(v) for k, v in spec.get("config", {}).items()})
    return conf


def _kcat_argv(spec: dict) -> list[str]:
    argv = [shutil.which("kcat") or "kcat", "-m", str(max(1, int(spec["timeout"]) - 1))]
    conf = _librdkafka_conf(spec)
    argv += ["-b", conf.pop("bootstrap.servers")]
    codec = conf.pop("compression.type", None)
    for k, v in conf.items():
        argv += ["-X", f"{k}={v}"]
    if spec["action"] == "metadata":
        return argv + ["-L", "-J", "-t", spec["topic"]]
    headers = {json.dumps(r.get("headers") or []) for r in spec["records"]}
    if len(headers) > 1:
        raise ValueError("kcat applies the same headers (-H) to every record; give all records the same ones")
    for name, value in json.loads(headers.pop()):
        argv += ["-H", f"{name}={value if value is not None else ''}"]
    if codec:
        argv += ["-z", codec]
    return argv + ["-P", "-t", spec["topic"], "-p", "0", "-K", "\t"]


# -- the Python drivers (child side) ----------------------------------------------------------------------------
def _b(s):
    return None if s is None else s.encode("utf-8")


def _report(**facts) -> None:
    print(REPORT_PREFIX + json.dumps(facts, default=str), flush=True)


def run_confluent_kafka(spec: dict) -> None:
    from confluent_kafka import Producer
    producer = Producer(_librdkafka_conf(spec))
    if spec["action"] == "metadata":
        md = producer.list_topics(spec["topic"], timeout=spec["timeout"] - 0.5)
        _report(brokers={b.id: f"{b.host}:{b.port}" for b in md.brokers.values()},
                topics={t: sorted(tm.partitions) for t, tm in md.topics.items()}, controller_id=md.controller_id)
        return
    delivered = []

    def on_delivery(err, msg):
        delivered.append([msg.partition(), msg.offset(), None if err is None else str(err)])

    for r in spec["records"]:
        headers = [(k, _b(v)) for k, v in r.get("headers") or []]
        producer.produce(spec["topic"], key=_b(r.get("key")), value=_b(r.get("value")), headers=headers,
                         partition=0, timestamp=r.get("timestamp") or 0, on_delivery=on_delivery)
    left = producer.flush(spec["timeout"] - 0.5)
    _report(delivered=delivered, undelivered=left)


def run_kafka_python(spec: dict) -> None:
    from kafka import KafkaProducer
    ms = int(spec["timeout"] * 1000)
    conf = dict(bootstrap_servers=spec["bootstrap"], request_timeout_ms=min(ms, 3000), max_block_ms=ms - 500,
                bootstrap_timeout_ms=ms - 500, reconnect_backoff_ms=50, reconnect_backoff_max_ms=500,
                retry_backoff_ms=50, delivery_timeout_ms=ms - 500)
    if spec.get("client_id"):
        conf["client_id"] = spec["client_id"]
    if spec["action"] == "produce":
        conf["linger_ms"] = LINGER_MS
        conf["acks"] = {-1: "all"}.get(spec["acks"], spec["acks"])
        if spec.get("idempotent") is not None:
            conf["enable_idempotence"] = spec["idempotent"]
        if spec.get("compression"):
            conf["compression_type"] = spec["compression"]
    conf.update(spec.get("config", {}))
    producer = KafkaProducer(**conf)
    try:
        if spec["action"] == "metadata":
            _report(topics={spec["topic"]: sorted(producer.partitions_for(spec["topic"]))})
            return
        futures = []
        for r in spec["records"]:
            headers = [(k, _b(v)) for k, v in r.get("headers") or []]
            futures.append(producer.send(spec["topic"], key=_b(r.get("key")), value=_b(r.get("value")),
                                         headers=headers, partition=0, timestamp_ms=r.get("timestamp")))
        producer.flush(spec["timeout"] - 0.5)
        delivered = []
        for f in futures:
            try:
                md = f.get(timeout=0.5)
                delivered.append([md.partition, md.offset, None])
            except Exception as e:  # noqa: BLE001 -- reported, not raised
                delivered.append([0, -1, repr(e)])
        _report(delivered=delivered)
    finally:
        producer.close(timeout=1)


def run_aiokafka(spec: dict) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def main():
        ms = int(spec["timeout"] * 1000)
        conf = dict(bootstrap_servers=spec["bootstrap"], request_timeout_ms=min(ms, 3000), retry_backoff_ms=50)
        if spec.get("client_id"):
            conf["client_id"] = spec["client_id"]
        if spec["action"] == "produce":
            conf["linger_ms"] = LINGER_MS
            conf["acks"] = {-1: "all"}.get(spec["acks"], spec["acks"])
            if spec.get("idempotent") is not None:
                conf["enable_idempotence"] = spec["idempotent"]
            if spec.get("compression"):
                conf["compression_type"] = spec["compression"]
        conf.update(spec.get("config", {}))
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            if spec["action"] == "metadata":
                _report(topics={spec["topic"]: sorted(await producer.partitions_for(spec["topic"]))})
                return
            futures = []
            for r in spec["records"]:
                headers = [(k, _b(v)) for k, v in r.get("headers") or []]
                futures.append(await producer.send(spec["topic"], key=_b(r.get("key")), value=_b(r.get("value")),
                                                   headers=headers, partition=0, timestamp_ms=r.get("timestamp")))
            delivered = []
            for f in futures:
                try:
                    md = await f            # None with acks=0: nothing was acknowledged
                    delivered.append([0, None, None] if md is None else [md.partition, md.offset, None])
                except Exception as e:  # noqa: BLE001
                    delivered.append([0, -1, repr(e)])
            _report(delivered=delivered)
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(main(), spec["timeout"]))


_RUNNERS = {"confluent-kafka": run_confluent_kafka, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}

if __name__ == "__main__":
    _spec = json.loads(sys.stdin.read())
    _RUNNERS[_spec["client"]](_spec)
