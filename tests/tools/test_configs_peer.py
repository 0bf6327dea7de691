"""``kafkalab configs`` against a peer broker (noida-db, the Go Kafka-compatible server): the tool speaks only
the public protocol (DescribeConfigs, IncrementalAlterConfigs, AlterConfigs), so what it prints about another
implementation follows from that broker's answers -- here one that accepts a dynamic broker config."""
from __future__ import annotations

import tempfile

import pytest

from kafkalab.cli import main
from kafkalab.clients import Admin
from kafkalab.clients.admin import NewTopic

from tests.clients.conftest import _start_peer


@pytest.fixture(scope="module")
def peer():
    with tempfile.TemporaryDirectory(prefix="kafkalab-noida-") as workdir:
        proc = _start_peer("noida", workdir)
        try:
            yield f"127.0.0.1:{proc.port}"
        finally:
            proc.stop()


def test_topic_and_broker_configs_against_noida(peer, capsys):
    with Admin({"bootstrap.servers": peer}) as admin:
        admin.create_topics([NewTopic("orders", 1, 1)])

    def configs(*args):
        capsys.readouterr()
        code = main(["configs", "--bootstrap-server", peer, *args])
        return code, capsys.readouterr().out

    assert configs("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config",
                   "retention.ms=7200000") == (0, "Completed updating config for topic orders.\n")
    assert configs("--describe", "--entity-type", "topics", "--entity-name", "orders") == (0, (
        "Dynamic configs for topic orders are:\n"
        "  retention.ms=7200000 sensitive=false synonyms={}\n"))       # noida lists no synonyms
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "orders", "--delete-config",
                   "retention.ms") == (0, "Completed updating config for topic orders.\n")
    assert configs("--describe", "--entity-type", "topics", "--entity-name", "orders") == \
        (0, "Dynamic configs for topic orders are:\n")
    assert configs("--describe", "--entity-type", "brokers") == \
        (0, "Dynamic configs for broker 1 are:\nDefault configs for brokers in the cluster are:\n")
    # AlterConfigs (the deprecated API the tool uses for brokers): noida accepts it where kafkalab refuses
    assert configs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
                   "log.retention.ms=1000") == (0, "Completed updating config for broker 1.\n")
