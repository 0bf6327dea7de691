"""``kafkalab topics``, ``console-producer`` and ``console-consumer`` against kafkalab and the peer brokers: the
same lines from any broker that speaks the protocol (a broker without DescribeTopicPartitions gets ``Elr: N/A``,
as Kafka's tool prints after its admin client fell back to Metadata)."""
from __future__ import annotations

import io
import re

from kafkalab.cli import build_parser, main
from kafkalab.tools import console_consumer, console_producer
from kafkalab.clients import Admin

from tests.clients.conftest import unique

PARTITION_LINE = re.compile(r"\tTopic: (?P<topic>\S+)\tPartition: (?P<p>\d+)\tLeader: (?:\d+|none)\tReplicas: [\d,]+"
                            r"\tIsr: [\d,]*\tElr: (?P<elr>[\d,]*|N/A)\tLastKnownElr: (?P<lke>[\d,]*|N/A)")


def test_create_list_describe_delete(broker, capsys):
    topic = unique("cli-topics")

    def topics(*args):
        rc = main(["topics", "--bootstrap-server", broker.bootstrap_servers, *args])
        return rc, capsys.readouterr().out

    assert topics("--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1") == \
        (0, f"Created topic {topic}.\n")
    assert topic in topics("--list")[1].splitlines()
    rc, out = topics("--describe", "--topic", topic)
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 3
    assert re.fullmatch(rf"Topic: {topic}(\tTopicId: [A-Za-z0-9_-]{{22}})?\tPartitionCount: 2\tReplicationFactor: 1"
                        r"\tConfigs: .*", lines[0])
    matches = [PARTITION_LINE.fullmatch(line) for line in lines[1:]]
    assert all(matches) and [m["p"] for m in matches] == ["0", "1"]
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        has_dtp = admin.describe_elr([topic]) is not None
    assert all((m["elr"] == "N/A") != has_dtp for m in matches)
    # the broker's error message, or the error code's default one when the broker sent none (as Kafka's client)
    assert topics("--create", "--topic", topic) in (
        (1, f"Error while executing topic command : Topic '{topic}' already exists.\n"),
        (1, "Error while executing topic command : Topic with this name already exists.\n"))
    assert topics("--delete", "--topic", topic) == (0, "")
    assert topic not in topics("--list")[1].splitlines()



def test_console_producer_then_consumer(broker):
    topic = unique("cli-console")
    assert main(["topics", "--bootstrap-server", broker.bootstrap_servers, "--create", "--topic", topic,
                 "--partitions", "1"]) == 0
    err = io.StringIO()
    args = build_parser().parse_args(["console-producer", "--bootstrap-server", broker.bootstrap_servers, "--topic",
                                      topic, "--property", "parse.key=true"])
    assert console_producer.run(args, stdin=io.StringIO("k1\tv1\nk2\tv2\n"), err=err) == 0 and err.getvalue() == ""
    out, err = io.BytesIO(), io.StringIO()
    args = build_parser().parse_args(["console-consumer", "--bootstrap-server", broker.bootstrap_servers, "--topic",
                                      topic, "--partition", "0", "--offset", "earliest", "--max-messages", "2",
                                      "--property", "print.key=true", "--property", "print.offset=true"])
    assert console_consumer.run(args, out=out, err=err) == 0
    assert out.getvalue() == b"Offset:0\tk1\tv1\nOffset:1\tk2\tv2\n"
    assert err.getvalue() == "Processed a total of 2 messages\n"
