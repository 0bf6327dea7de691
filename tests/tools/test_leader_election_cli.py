"""``kafkalab leader-election`` (kafka-leader-election.sh): its lines and exit codes against a three-broker kafkalab
cluster, the partitions in java.util.HashSet's order, the JSON file's errors, Kafka's usage messages, a timeout
and a refusal; and the ``reassign-partitions`` / ``metadata-quorum`` commands that say what this cluster lacks."""
from __future__ import annotations

import json

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.errors import KafkaProtocolError, KafkaTimeoutError
from kafkalab.protocol import ErrorCode
from kafkalab.tools import leader_election


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides={"auto.create.topics.enable": False}) as c:
        c.create_topic("el", assignment={0: [1, 2, 0], 1: [1, 2, 0], 2: [1, 2, 0]})
        c.restart(1)            # broker 1 comes back a follower of all three partitions
        c.wait_until(lambda: all(c.partition_state("el", p)["leader"] == 2 and 1 in c.partition_state("el", p)["isr"]
                                 for p in range(3)), 20, "broker 1 did not rejoin the ISRs")
        yield c


def tool(capsys, *argv):
    status = main(["leader-election", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_elections_from_a_json_file_then_all_partitions(cluster, capsys, tmp_path):
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    path = tmp_path / "election.json"
    path.write_text(json.dumps({"partitions": [{"topic": "el", "partition": 0}, {"topic": "el", "partition": 1}]}))
    assert tool(capsys, *bootstrap, "--election-type", "preferred", "--path-to-json-file", str(path)) == (
        0, "Successfully completed leader election (PREFERRED) for partitions el-1, el-0\n", "")
    assert tool(capsys, *bootstrap, "--election-type", "PREFERRED", "--topic", "el", "--partition", "0") == (
        0, "Valid replica already elected for partitions el-0\n", "")
    assert tool(capsys, *bootstrap, "--election-type", "preferred", "--all-topic-partitions") == (
        0, "Successfully completed leader election (PREFERRED) for partitions el-2\n", "")
    assert tool(capsys, *bootstrap, "--election-type", "preferred", "--all-topic-partitions") == (0, "", "")
    assert [cluster.partition_state("el", p)["leader"] for p in range(3)] == [1, 1, 1]
    assert tool(capsys, *bootstrap, "--election-type", "unclean", "--topic", "el", "--partition", "2") == (
        0, "Valid replica already elected for partitions el-2\n", "")


def test_a_partition_that_cannot_be_elected_fails_the_command(cluster, capsys, tmp_path):
    path = tmp_path / "election.json"
    path.write_text(json.dumps({"partitions": [{"topic": "el", "partition": 0}, {"topic": "el", "partition": 9}]}))
    status, out, err = tool(capsys, "--bootstrap-server", cluster.bootstrap_servers, "--election-type", "preferred",
                            "--path-to-json-file", str(path))
    assert (status, err) == (1, "1 replica(s) could not be elected\n")
    assert out.splitlines() == [
        "Valid replica already elected for partitions el-0",
        "Error completing leader election (PREFERRED) for partition: el-9: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: The partition does not exist."]


@pytest.mark.parametrize("argv, message", [
    (("--bootstrap-server", "nohost:9092", "--election-type", "unclean", "--topic", "t"),
     "Missing required option(s): partition"),
    (("--bootstrap-server", "nohost:9092", "--election-type", "unclean", "--all-topic-partitions", "--partition", "0"),
     "Option partition is only allowed if topic is used"),
    (("--bootstrap-server", "nohost:9092", "--topic", "t", "--partition", "0"),
     "Missing required option(s): election-type"),
    (("--topic", "t", "--partition", "0"), "Missing required option(s): bootstrap-server, election-type"),
    (("--bootstrap-server", "nohost:9092", "--election-type", "preferred"),
     "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"),
    (("--bootstrap-server", "nohost:9092", "--election-type", "preferred", "--topic", "t", "--partition", "0",
      "--all-topic-partitions"),
     "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"),
    (("--bootstrap-server", "nohost:9092", "--election-type", "sideways", "--all-topic-partitions"),
     "Cannot parse argument 'sideways' of option election-type"),
    (("--bootstrap-server", "nohost:9092", "--election-type", "preferred", "--topic", "t", "--partition", "x"),
     "Cannot parse argument 'x' of option partition"),
])
def test_kafkas_usage_messages(capsys, argv, message):
    assert tool(capsys, *argv) == (1, "", message + "\n")


def test_no_option_at_all_prints_what_the_tool_does(capsys):
    status, out, err = tool(capsys)
    assert (status, out) == (1, "")
    assert err.startswith(leader_election.PURPOSE + "\nusage: kafkalab leader-election")


@pytest.mark.parametrize("content, message", [
    ("not json", "Replica election data is empty"),
    ('{"version": 1}', 'Replica election data is missing "partitions" field'),
    ('{"partitions": [{"topic": "a"}]}', "com.fasterxml.jackson.databind.JsonMappingException: No such field "
                                         "exists: `partition`"),
    ('{"partitions": [{"topic": "a", "partition": "0"}]}', "com.fasterxml.jackson.databind.JsonMappingException: "
                                                           'Expected `Integer` value, received "0"'),
    ('{"partitions": {"topic": "a"}}', "com.fasterxml.jackson.databind.JsonMappingException: Expected JSON array, "
                                       'received {"topic":"a"}'),
    ('{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 1}, {"topic": "a", "partition": 0},'
     ' {"topic": "a", "partition": 1}]}', "Replica election data contains duplicate partitions: [a-1, a-0]"),
])
def test_json_file_errors(capsys, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert tool(capsys, "--bootstrap-server", "nohost:9092", "--election-type", "preferred",
                "--path-to-json-file", str(path)) == (1, "", message + "\n")


def test_partitions_come_in_java_hash_set_order():
    # TopicPartition.hashCode of el-p is 4200 + 31p: buckets 8, 7, 6 of a 16-bucket table
    assert leader_election.java_order([TopicPartition("el", p) for p in range(3)]) == [
        TopicPartition("el", 2), TopicPartition("el", 1), TopicPartition("el", 0)]


class FailingAdmin:
    def __init__(self, error):
        self.error = error

    def __call__(self, config):
        assert (config["default.api.timeout.ms"], config["request.timeout.ms"]) == (30000, 15000)
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def elect_leaders(self, election_type, partitions):
        raise self.error


@pytest.mark.parametrize("error, line", [
    (KafkaTimeoutError("the admin operation did not complete within 30.0 s"), "Timeout waiting for election results"),
    (KafkaProtocolError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Not authorized to perform leader election"),
])
def test_a_timeout_or_a_refusal(capsys, error, line):
    from kafkalab.cli import build_parser

    args = build_parser().parse_args(["leader-election", "--bootstrap-server", "h:1", "--election-type", "unclean",
                                      "--all-topic-partitions"])
    assert leader_election.run(args, admin_factory=FailingAdmin(error)) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (line + "\n", line + "\n")


def test_reassign_partitions_and_metadata_quorum_say_what_this_cluster_lacks(capsys):
    assert main(["reassign-partitions", "--bootstrap-server", "h:1", "--execute", "--reassignment-json-file",
                 "r.json"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("Error: org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support "
                      "ALTER_PARTITION_REASSIGNMENTS")
    assert "does not implement partition reassignment" in out[1]
    assert main(["metadata-quorum", "--bootstrap-server", "h:1", "describe", "--status"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support " \
                     "DESCRIBE_QUORUM"
    assert "ZooKeeper-based" in err[1] and "no KRaft metadata quorum" in err[1]
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert "reassign-partitions     not implemented" in listing and "metadata-quorum         not applicable" in listing
    with pytest.raises(SystemExit):
        main(["metadata-quorum", "--help"])
    assert "ZooKeeper-based" in capsys.readouterr().out


def test_java_exception_names():
    from kafkalab.protocol import ApiException

    assert [leader_election.java_exception(ApiException(code)) for code in (
        ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)] == [
        "org.apache.kafka.common.errors.ElectionNotNeededException: Leader election not needed for topic partition.",
        "org.apache.kafka.common.errors.InvalidTopicException: The request attempted to perform an operation on an "
        "invalid topic.",
        "org.apache.kafka.common.errors.TimeoutException: The request timed out.",
        "org.apache.kafka.common.errors.EligibleLeadersNotAvailableException: Eligible topic partition leaders are "
        "not available."]
