"""``kafkalab log-dirs`` (kafka-log-dirs.sh): its three lines, the JSON in java.util.HashMap's order, the
broker and topic filters and the unknown-broker error, against a live kafkalab broker."""
from __future__ import annotations

import json

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Admin, Producer
from kafkalab.clients.admin import NewTopic
from kafkalab.clients.admin_log_dirs import LogDirDescription, ReplicaInfo
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.tools import log_dirs


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("orders", 2, 1), NewTopic("other", 1, 1)])
        producer = Producer({"bootstrap.servers": c.bootstrap_servers})
        producer.send("orders", value=b"x", partition=1)
        producer.flush()
        producer.close()
        yield c


def tool(cluster, capsys, *argv):
    status = main(["log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_describe_one_topic(cluster, capsys):
    status, out, err = tool(cluster, capsys, "--topic-list", "orders")
    lines = out.splitlines()
    assert (status, err, lines[:2]) == (0, "", ["Querying brokers for log directories information",
                                                "Received log directory information from brokers 0"])
    described = json.loads(lines[2])
    (log_dir,) = described["brokers"][0]["logDirs"]
    size = log_dir["partitions"][1]["size"]
    assert size > 0
    assert lines[2] == ('{"brokers":[{"broker":0,"logDirs":[{"partitions":['
                        '{"partition":"orders-0","size":0,"offsetLag":0,"isFuture":false},'
                        f'{{"partition":"orders-1","size":{size},"offsetLag":0,"isFuture":false}}],'
                        f'"error":null,"logDir":{json.dumps(log_dir["logDir"])}}}]}}],"version":1}}')
    everything = json.loads(tool(cluster, capsys)[1].splitlines()[2])
    assert {p["partition"] for p in everything["brokers"][0]["logDirs"][0]["partitions"]} >= {
        "orders-0", "orders-1", "other-0"}


def test_a_broker_not_in_the_cluster(cluster, capsys):
    assert tool(cluster, capsys, "--broker-list", "0,5") == (
        1, "", "ERROR: The given brokers do not exist from --broker-list: 5. Current existent brokers: 0\n")


def test_java_hash_map_order():
    assert log_dirs.java_string_hash("hello") == 99162322
    assert log_dirs.java_string_hash("orders-x") == 1234322320
    assert log_dirs.java_hash_map_order(["version", "brokers"], log_dirs.java_string_hash) == ["brokers", "version"]
    assert log_dirs.java_hash_map_order(["logDir", "error", "partitions"], log_dirs.java_string_hash) == [
        "partitions", "error", "logDir"]
    # 13 keys do not fit 16 buckets at a 0.75 load factor: the table has 32, so 16 comes after 15
    assert log_dirs.java_hash_map_order(list(range(17, -1, -1)), lambda n: n) == list(range(18))
    assert log_dirs.java_hash_map_order([16, 1], lambda n: n) == [16, 1]       # 16 buckets: 16 is bucket 0


def test_format_reports_a_failed_directory_by_its_java_class():
    from kafkalab.clients.errors import KafkaProtocolError
    from kafkalab.protocol import ErrorCode

    failed = LogDirDescription(KafkaProtocolError(ErrorCode.KAFKA_STORAGE_ERROR, None), {})
    ok = LogDirDescription(None, {TopicPartition("t", 0): ReplicaInfo(10, 2, True)})
    text = log_dirs.format_as_json({0: {"/a": ok, "/b": failed}}, set())
    dirs = json.loads(text)["brokers"][0]["logDirs"]
    assert {d["logDir"]: d["error"] for d in dirs} == {
        "/a": None, "/b": "org.apache.kafka.common.errors.KafkaStorageException"}
    assert '{"partition":"t-0","size":10,"offsetLag":2,"isFuture":true}' in text
