"""``kafkalab console-consumer``: kafka-console-consumer.sh's (3.9) flags, formatter properties, output bytes,
exit codes and messages, against kafkalab."""
from __future__ import annotations

import io
import os
import struct
import subprocess
import sys

import pytest

from kafkalab import Cluster
from kafkalab.cli import build_parser
from kafkalab.clients import Admin, Producer
from kafkalab.clients.consumer.completed_fetch import ConsumerRecord
from kafkalab.tools.console_consumer import DefaultMessageFormatter, run


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"group.initial.rebalance.delay.ms": 0}) as c:   # joins at once
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.create_topics([("cc", 2, 1)])
        with Producer({"bootstrap.servers": c.bootstrap_servers}) as p:
            p.send("cc", b"v0", key=b"k0", partition=0, timestamp=1000, headers=[("h", b"x"), ("n", None)]).result(10)
            p.send("cc", None, key=None, partition=0, timestamp=1001).result(10)
            p.send("cc", struct.pack(">i", 7), key=b"k2", partition=1, timestamp=1002).result(10)
        yield c


def consume(cluster, *args):
    parsed = build_parser().parse_args(["console-consumer", "--bootstrap-server", cluster.bootstrap_servers, *args])
    out, err = io.BytesIO(), io.StringIO()
    rc = run(parsed, out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def test_from_beginning_prints_values_and_the_count(cluster):
    rc, out, err = consume(cluster, "--topic", "cc", "--partition", "0", "--from-beginning", "--max-messages", "2")
    assert (rc, out) == (0, b"v0\nnull\n")
    assert err == "Processed a total of 2 messages\n"


def test_every_column_golden(cluster):
    rc, out, _ = consume(cluster, "--topic", "cc", "--partition", "0", "--offset", "0", "--max-messages", "2",
                         "--property", "print.timestamp=true", "--property", "print.partition=true",
                         "--property", "print.offset=true", "--property", "print.headers=true",
                         "--property", "print.key=true", "--property", "key.separator=|",
                         "--property", "null.literal=<null>")
    assert rc == 0
    assert out == (b"CreateTime:1000|Partition:0|Offset:0|h:x,n:<null>|k0|v0\n"
                   b"CreateTime:1001|Partition:0|Offset:1|NO_HEADERS|<null>|<null>\n")


def test_offset_and_deserializer(cluster):
    rc, out, _ = consume(cluster, "--topic", "cc", "--partition", "1", "--offset", "earliest", "--max-messages", "1",
                         "--property", "print.value=true", "--property", "print.key=true",
                         "--value-deserializer", "org.apache.kafka.common.serialization.IntegerDeserializer")
    assert (rc, out) == (0, b"k2\t7\n")


def test_group_subscription_and_timeout(cluster):
    rc, out, err = consume(cluster, "--topic", "cc", "--from-beginning", "--group", "cc-readers", "--timeout-ms",
                           "1500")
    assert rc == 0 and sorted(out.splitlines()) == sorted([b"null", b"v0", struct.pack(">i", 7)])
    assert err.endswith("ERROR Error processing message, terminating consumer process: "
                        "org.apache.kafka.common.errors.TimeoutException\nProcessed a total of 3 messages\n")


def test_include_pattern_latest_by_default_times_out_empty(cluster):
    rc, out, err = consume(cluster, "--include", "c.", "--timeout-ms", "800")
    assert (rc, out) == (0, b"") and err.endswith("Processed a total of 0 messages\n")


@pytest.mark.parametrize("args,message", [
    ([], "Exactly one of --include/--topic is required. "),
    (["--topic", "a", "--include", "b"], "Exactly one of --include/--topic is required. "),
    (["--include", "a", "--partition", "0"], "The topic is required when partition is specified."),
    (["--topic", "a", "--partition", "0", "--offset", "1", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (["--topic", "a", "--offset", "1"], "The partition is required when offset is specified."),
    (["--topic", "a", "--group", "g", "--consumer-property", "group.id=h"],
     "The group ids provided in different places (directly using '--group', via '--consumer-property', or via "
     "'--consumer.config') do not match. Detected group ids: 'g', 'h'"),
    (["--topic", "a", "--partition", "0", "--group", "g"], "Options group and partition cannot be specified together."),
    (["--topic", "a", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"],
     "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please remove one option"),
    (["--topic", "a", "--partition", "0", "--offset", "-5"],
     "The provided offset value '-5' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    (["--topic", "a", "--formatter", "com.example.Nope"], "com.example.Nope"),
])
def test_usage_errors_exit_1(cluster, args, message):
    rc, out, err = consume(cluster, *args)
    assert (rc, out) == (1, b"") and err == message + "\n"


def _record(**kw):
    base = dict(topic="t", partition=3, offset=9, key=b"k", value=b"v", headers=[], timestamp=5, timestamp_type=1)
    return ConsumerRecord(**{**base, **kw})


def test_formatter_defaults_and_switches():
    assert DefaultMessageFormatter().format(_record()) == b"v\n"
    assert DefaultMessageFormatter({"print.value": "false"}).format(_record()) == b""
    f = DefaultMessageFormatter({"print.timestamp": " TRUE ", "print.value": "false", "line.separator": ";"})
    assert f.format(_record()) == b"LogAppendTime:5;"
    assert DefaultMessageFormatter({"print.timestamp": "true"}).format(_record(timestamp_type=-1)) == \
        b"NO_TIMESTAMP\tv\n"
    long_value = DefaultMessageFormatter({"value.deserializer":
                                          "org.apache.kafka.common.serialization.LongDeserializer"})
    assert long_value.format(_record(value=struct.pack(">q", -3))) == b"-3\n"
    with pytest.raises(ValueError, match="Size of data received by LongDeserializer is not 8"):
        long_value.format(_record(value=b"abc"))


def test_the_kafkalab_command_pipes_producer_into_consumer(cluster):
    """The real entry point: stdin lines in, stdout bytes out, the exit codes and stderr lines of Kafka's tools."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli = [sys.executable, "-m", "kafkalab.cli"]
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    sent = subprocess.run([*cli, "console-producer", *bootstrap, "--topic", "piped"], input=b"a\nb\n",
                          capture_output=True, env=env, timeout=60)
    assert (sent.returncode, sent.stdout, sent.stderr) == (0, b"", b"")
    read = subprocess.run([*cli, "console-consumer", *bootstrap, "--topic", "piped", "--from-beginning",
                           "--max-messages", "2"], capture_output=True, env=env, timeout=60)
    assert (read.returncode, read.stdout) == (0, b"a\nb\n")
    assert read.stderr.endswith(b"Processed a total of 2 messages\n")
