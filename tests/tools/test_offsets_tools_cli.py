"""``kafkalab get-offsets`` (kafka-get-offsets.sh) and ``kafkalab delete-records`` (kafka-delete-records.sh):
their filters, lines, messages and exit status against a live kafkalab broker."""
from __future__ import annotations

import json
import time

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Admin, Producer
from kafkalab.clients.admin import NewTopic
from kafkalab.tools import delete_records, get_offsets

BASE = int(time.time() * 1000) - 3_600_000         # an hour ago: well inside retention


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("orders", 3, 1), NewTopic("events", 1, 1)])
        producer = Producer({"bootstrap.servers": c.bootstrap_servers})
        for i in range(9):
            producer.send("orders", value=b"x", partition=i % 3, timestamp=BASE + 1_000 * (i + 1))
        producer.send("events", value=b"x", partition=0)
        producer.flush()
        producer.close()
        yield c


def tool(cluster, capsys, name, *argv):
    status = main([name, "--bootstrap-server", cluster.bootstrap_servers, *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_get_offsets_latest_by_default_sorted_as_kafka_sorts(cluster, capsys):
    assert tool(cluster, capsys, "get-offsets", "--topic", "orders|events") == (
        0, "events:0:1\norders:0:3\norders:1:3\norders:2:3\n", "")


def test_get_offsets_time_and_filters(cluster, capsys):
    assert tool(cluster, capsys, "get-offsets", "--topic", "ord.*", "--partitions", "0,2", "--time", "-2")[1] == \
        "orders:0:0\norders:2:0\n"
    # partition 1 holds BASE + 2000, 5000, 8000: the first at or after BASE + 4000 is its offset 1
    assert tool(cluster, capsys, "get-offsets", "--topic-partitions", "orders:1", "--time", str(BASE + 4000))[1] == \
        "orders:1:1\n"
    assert tool(cluster, capsys, "get-offsets", "--topic-partitions", "orders:1-,events:-1",
                "--time", "earliest")[1] == "events:0:0\norders:1:0\norders:2:0\n"


def test_get_offsets_errors(cluster, capsys):
    assert tool(cluster, capsys, "get-offsets", "--topic", "nothing-like-it") == (
        1, "", "Error occurred: Could not match any topic-partitions with the specified filters\n")
    assert tool(cluster, capsys, "get-offsets", "--topic-partitions", "orders", "--topic", "orders") == (
        1, "", "Error occurred: --topic-partitions cannot be used with --topic or --partitions\n")
    status, _, err = tool(cluster, capsys, "get-offsets", "--time", "yesterday")
    assert status == 1 and err.startswith("Error occurred: Malformed time argument yesterday. Please use -1 or latest")


def test_partition_filter_rules():
    wanted = get_offsets.partition_filter(":2-4,t.*:0", None, None)
    assert [p for p in range(6) if wanted("x", p)] == [2, 3]
    assert wanted("topic", 0) and not wanted("x", 0)


def test_delete_records_moves_the_log_start_offset(cluster, capsys, tmp_path):
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": [{"topic": "orders", "partition": 0, "offset": 2},
                                               {"topic": "orders", "partition": 1, "offset": 99}], "version": 1}))
    assert tool(cluster, capsys, "delete-records", "--offset-json-file", str(path)) == (0, (
        "Executing records delete operation\n"
        "Records delete operation completed:\n"
        "partition: orders-0\tlow_watermark: 2\n"
        "partition: orders-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested "
        "offset is not within the range of offsets maintained by the server.\n"), "")
    assert tool(cluster, capsys, "get-offsets", "--topic", "orders", "--time", "earliest")[1] == \
        "orders:0:2\norders:1:0\norders:2:0\n"


@pytest.mark.parametrize("text, message", [
    ("not json", "The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"version": 1}', "Missing partitions field"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]}',
     "Offset json file contains duplicate topic partitions: t-0"),
])
def test_delete_records_refuses_a_bad_file_before_sending(cluster, capsys, tmp_path, text, message):
    path = tmp_path / "offsets.json"
    path.write_text(text)
    assert tool(cluster, capsys, "delete-records", "--offset-json-file", str(path)) == (1, "", message + "\n")
    with pytest.raises(delete_records.CommandFailed):
        delete_records.parse_offset_json(text)
