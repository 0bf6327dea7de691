"""Admin requests stay bounded under abuse (issue 15, items 1 and 2).

* A well-formed request for an absurd number of partitions is refused before the broker builds anything: more
  than 10,000 new partitions in one CreateTopics or CreatePartitions is a POLICY_VIOLATION for every topic of the
  request (Kafka's ``MAX_PARTITIONS_PER_BATCH``, KAFKA-17870 / KAFKA-19673 / KAFKA-19674).
* Creating (and deleting) a topic of 1,000 partitions does not freeze the broker: a Produce on another
  connection keeps being answered within a second while the creation runs, and the creation completes.

The broker runs as a subprocess (``python -m kafkalab.cli broker``) whose address space is capped with
``RLIMIT_AS``: a broker that starts building two billion replica lists runs out of memory there (and the test
fails) instead of taking the machine down. Every socket read has a timeout.
"""
from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.records import build_batch

from ._raw_wire import Conn

CreateTopics = request_class(ApiKey.CREATE_TOPICS)
CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
DeleteTopics = request_class(ApiKey.DELETE_TOPICS)
Metadata = request_class(ApiKey.METADATA)
Produce = request_class(ApiKey.PRODUCE)

REPO = Path(__file__).resolve().parents[2]
#: the broker's address space: it idles at about 200 MB of it; two billion replica lists need far more
MEMORY_CAP_BYTES = 1 << 30
INT32_MAX = 2**31 - 1
EXCESSIVE = "Excessively large number of partitions per request."


def _cap_memory() -> None:   # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    data = tmp_path_factory.mktemp("bounded-broker")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "broker", "--log-level", "WARNING",
                             "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={data / 'kafka-logs'}",
                             "--override", "auto.create.topics.enable=false"],
                            cwd=data, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_cap_memory)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    deadline = time.monotonic() + 30
    while not any("started" in line for line in list(lines)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the broker did not start (exit {proc.poll()}):\n{''.join(lines)}")
        time.sleep(0.02)
    yield port
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert alive, f"the broker died during the tests (exit {proc.returncode}):\n{''.join(lines)}"


def _topic(name, partitions=1, rf=1, assignments=()):
    return CreateTopics.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                                       assignments=assignments, configs=())


def _create(port, *topics, timeout_ms=10_000, validate_only=False, timeout=15.0):
    with Conn(port, timeout=timeout) as c:
        return c.call(CreateTopics(topics=topics, timeout_ms=timeout_ms, validate_only=validate_only), 7).topics


def _add_partitions(port, *counts, validate_only=False, assignments=None):
    topics = tuple(CreatePartitions.CreatePartitionsTopic(name=name, count=count, assignments=assignments)
                   for name, count in counts)
    with Conn(port, timeout=15.0) as c:
        return c.call(CreatePartitions(topics=topics, timeout_ms=10_000, validate_only=validate_only), 3).results


def _partition_count(port, topic) -> int:
    with Conn(port) as c:
        body = c.call(Metadata(topics=(Metadata.MetadataRequestTopic(name=topic),),
                               allow_auto_topic_creation=False), 12)
    (t,) = body.topics
    return 0 if t.error_code else len(t.partitions)


# ---------------------------------------------------------------------------------------------- item 1

@pytest.mark.parametrize("topics", [
    pytest.param([("huge", INT32_MAX)], id="one topic of 2**31-1 partitions"),
    pytest.param([("a", 5000), ("b", 5000), ("c", 1)], id="10,001 over three topics"),
    pytest.param([("a", INT32_MAX), ("b", INT32_MAX), ("c", INT32_MAX)], id="a sum past int32"),
])
def test_create_topics_beyond_the_limit_is_refused_whole(port, topics):
    results = _create(port, *(_topic(name, n) for name, n in topics))
    assert [(r.name, r.error_code, r.error_message) for r in results] == \
        [(name, ErrorCode.POLICY_VIOLATION, EXCESSIVE) for name, _ in topics]
    assert all(_partition_count(port, name) == 0 for name, _ in topics)


def test_create_topics_limit_counts_assignments_and_the_default(port):
    # num.partitions (1 here) stands for -1, a manual assignment counts its entries: 9,999 + 1 + 1 > 10,000
    many = _topic("many", 9_999)
    default = _topic("default", -1, -1)
    manual = CreateTopics.CreatableTopic(name="manual", num_partitions=-1, replication_factor=-1, configs=(),
                                         assignments=(CreateTopics.CreatableReplicaAssignment(partition_index=0,
                                                                                             broker_ids=(0,)),))
    assert {r.error_code for r in _create(port, many, default, manual)} == {ErrorCode.POLICY_VIOLATION}
    # exactly 10,000 is allowed (validate_only: placed and checked, nothing written)
    ok = _create(port, _topic("many", 9_999), default, validate_only=True)
    assert [(r.error_code, r.num_partitions) for r in ok] == [(ErrorCode.NONE, 9_999), (ErrorCode.NONE, 1)]


def test_create_partitions_beyond_the_limit_is_refused_whole(port):
    assert [r.error_code for r in _create(port, _topic("grow-a"), _topic("grow-b"))] == [ErrorCode.NONE] * 2
    for counts in ([("grow-a", INT32_MAX)], [("grow-a", 5_001), ("grow-b", 5_002)]):
        results = _add_partitions(port, *counts)
        assert [(r.name, r.error_code, r.error_message) for r in results] == \
            [(name, ErrorCode.POLICY_VIOLATION, EXCESSIVE) for name, _ in counts]
    assert _partition_count(port, "grow-a") == _partition_count(port, "grow-b") == 1
    # 10,000 new partitions in all (the existing one does not count) is allowed
    ok = _add_partitions(port, ("grow-a", 5_001), ("grow-b", 5_000), validate_only=True)
    assert [r.error_code for r in ok] == [ErrorCode.NONE] * 2
    # a replica list per new partition that does not match the count is refused before anything is placed
    wrong = _add_partitions(port, ("grow-a", 4), assignments=(CreatePartitions.CreatePartitionsAssignment(
        broker_ids=(0,)),))
    assert [r.error_code for r in wrong] == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]


# ---------------------------------------------------------------------------------------------- item 2

class ProduceLatencies:
    """acks=1 Produce requests, one after another on one connection, each round trip timed, until stopped."""

    def __init__(self, port: int, topic: str):
        self.conn = Conn(port, timeout=30.0)
        self.topic = topic
        self.latencies: list[float] = []
        self.errors: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        correlation_id = 0
        while not self._stop.is_set():
            correlation_id += 1
            body = Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
                name=self.topic, partition_data=(Produce.PartitionProduceData(
                    index=0, records=build_batch([(b"k", b"v" * 100)])),)),))
            start = time.monotonic()
            response = self.conn.call(body, 9, correlation_id)
            self.latencies.append(time.monotonic() - start)
            self.errors += [p.error_code for t in response.responses for p in t.partition_responses if p.error_code]
            time.sleep(0.005)

    def __enter__(self) -> "ProduceLatencies":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(35)
        self.conn.close()


def _delete(port, name, timeout_ms=60_000):
    with Conn(port, timeout=90.0) as c:
        return [r.error_code for r in c.call(DeleteTopics(topic_names=(name,), timeout_ms=timeout_ms), 5).responses]


def _served_throughout(produce: ProduceLatencies, what: str, took: float) -> None:
    assert not produce.errors
    assert len(produce.latencies) >= 5, f"only {len(produce.latencies)} Produce requests answered during {what}"
    assert max(produce.latencies) < 1.0, \
        f"a Produce waited {max(produce.latencies):.2f}s while {what} took {took:.1f}s"


def test_creating_and_deleting_a_thousand_partitions_leaves_produce_served(port):
    assert [r.error_code for r in _create(port, _topic("steady"))] == [ErrorCode.NONE]
    with ProduceLatencies(port, "steady") as produce:
        time.sleep(0.2)
        started = time.monotonic()
        (result,) = _create(port, _topic("wide", 1000), timeout_ms=60_000, timeout=90.0)
        took = time.monotonic() - started
        time.sleep(0.2)
    assert (result.error_code, result.num_partitions) == (ErrorCode.NONE, 1000), took
    assert _partition_count(port, "wide") == 1000
    _served_throughout(produce, "creating 1,000 partitions", took)

    with ProduceLatencies(port, "steady") as produce:
        time.sleep(0.2)
        started = time.monotonic()
        assert _delete(port, "wide") == [ErrorCode.NONE]
        took = time.monotonic() - started
        time.sleep(0.2)
    assert _partition_count(port, "wide") == 0
    _served_throughout(produce, "deleting 1,000 partitions", took)
