"""The group and offset tools against a peer broker (noida-db, the Go Kafka-compatible server): they speak
only the public protocol, so what they print about another implementation follows from its answers."""
from __future__ import annotations

import tempfile

import pytest

from kafkalab.cli import main
from kafkalab.clients import Admin, Consumer, Producer
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


def test_consumer_groups_and_get_offsets_against_noida(peer, capsys):
    with Admin({"bootstrap.servers": peer}) as admin:
        admin.create_topics([NewTopic("orders", 2, 1)])
    producer = Producer({"bootstrap.servers": peer})
    for i in range(6):
        producer.send("orders", value=b"x", partition=i % 2)
    producer.flush()
    producer.close()
    consumer = Consumer({"bootstrap.servers": peer, "group.id": "app", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.max.wait.ms": 100})
    consumer.subscribe(["orders"])
    seen = 0
    for _ in range(40):
        seen += len(consumer.poll(0.5))
        if seen >= 6:
            break
    consumer.commit()
    consumer.close()
    capsys.readouterr()

    assert main(["get-offsets", "--bootstrap-server", peer, "--topic", "orders"]) == 0
    assert capsys.readouterr().out == "orders:0:3\norders:1:3\n"
    assert main(["consumer-groups", "--bootstrap-server", peer, "--list"]) == 0
    assert "app" in capsys.readouterr().out.splitlines()
    assert main(["consumer-groups", "--bootstrap-server", peer, "--describe", "--group", "app"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert rows == [["app", "orders", "0", "3", "3", "0", "-", "-", "-"],
                    ["app", "orders", "1", "3", "3", "0", "-", "-", "-"]]
    assert main(["consumer-groups", "--bootstrap-server", peer, "--reset-offsets", "--group", "app", "--topic",
                 "orders", "--to-earliest", "--execute"]) == 0
    capsys.readouterr()
    assert main(["consumer-groups", "--bootstrap-server", peer, "--describe", "--group", "app"]) == 0
    assert [line.split()[3:6] for line in capsys.readouterr().out.splitlines()[2:]] == [["0", "3", "3"],
                                                                                       ["0", "3", "3"]]
