"""``kafkalab topics``: kafka-topics.sh's (3.9) flags, output lines, exit codes and messages, against kafkalab."""
from __future__ import annotations

import re

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Consumer
from kafkalab.security.jaas import jaas_line
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides
from kafkalab.tools.topics import CommandError, parse_replica_assignment


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def topics(cluster, capsys, *args):
    rc = main(["topics", "--bootstrap-server", cluster.bootstrap_servers, *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def without_ids(text: str) -> str:
    return re.sub(r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: <id>", text)


def test_create_describe_alter_delete_golden(cluster, capsys):
    assert topics(cluster, capsys, "--create", "--topic", "orders", "--partitions", "2", "--replication-factor", "1",
                  "--config", "retention.ms=1000", "--config", "cleanup.policy = compact") == \
        (0, "Created topic orders.\n", "")
    rc, out, _ = topics(cluster, capsys, "--describe", "--topic", "orders")
    assert rc == 0
    configs = out.splitlines()[0].split("Configs: ")[1]
    assert sorted(configs.split(",")) == ["cleanup.policy=compact", "retention.ms=1000"]
    assert without_ids(out).replace(configs, "C") == (
        "Topic: orders\tTopicId: <id>\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: C\n"
        "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n"
        "\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n")
    assert topics(cluster, capsys, "--alter", "--topic", "orders", "--partitions", "3") == (0, "", "")
    _, out, _ = topics(cluster, capsys, "--describe", "--topic", "ord.*")
    assert "PartitionCount: 3" in out and "\tPartition: 2\tLeader: 0\t" in out
    assert topics(cluster, capsys, "--delete", "--topic", "orders") == (0, "", "")
    assert "orders" not in topics(cluster, capsys, "--list")[1].split()


def test_list_is_sorted_and_filters_by_regex(cluster, capsys):
    for name in ("list-b", "list-a", "other"):
        assert topics(cluster, capsys, "--create", "--topic", name)[0] == 0
    assert topics(cluster, capsys, "--list", "--topic", "list-.*") == (0, "list-a\nlist-b\n", "")
    assert topics(cluster, capsys, "--list", "--topic", "list-b,other") == (0, "list-b\nother\n", "")
    assert topics(cluster, capsys, "--list", "--topic", "list") == (0, "\n", "")   # a whole-name match


def test_existing_and_missing_topics(cluster, capsys):
    assert topics(cluster, capsys, "--create", "--topic", "twice")[0] == 0
    assert topics(cluster, capsys, "--create", "--topic", "twice") == \
        (1, "Error while executing topic command : Topic 'twice' already exists.\n", "")
    assert topics(cluster, capsys, "--create", "--topic", "twice", "--if-not-exists") == (0, "", "")
    missing = "Error while executing topic command : Topic 'Optional[nope]' does not exist as expected\n"
    for action in (["--describe"], ["--delete"], ["--alter", "--partitions", "2"]):
        assert topics(cluster, capsys, *action, "--topic", "nope") == (1, missing, "")
        assert topics(cluster, capsys, *action, "--topic", "nope", "--if-exists") == (0, "", "")


def test_create_warnings_and_validation(cluster, capsys):
    warning = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
               "collide. To avoid issues it is best to use either, but not both.\n")
    assert topics(cluster, capsys, "--create", "--topic", "a.b") == (0, warning + "Created topic a.b.\n", "")
    assert topics(cluster, capsys, "--create", "--topic", "p0", "--partitions", "0") == \
        (1, "Error while executing topic command : The partitions must be greater than 0\n", "")
    assert topics(cluster, capsys, "--create", "--topic", "r0", "--replication-factor", "0") == \
        (1, "Error while executing topic command : The replication factor must be between 1 and 32767 inclusive\n",
         "")
    assert topics(cluster, capsys, "--create", "--topic", "bad", "--config", "retention.ms") == \
        (1, 'Error while executing topic command : requirement failed: Invalid topic config: all configs to be '
            'added must be in the format "key=val".\n', "")
    rc, out, _ = topics(cluster, capsys, "--create", "--topic", "too-many", "--replication-factor", "3")
    assert rc == 1 and out.startswith("Error while executing topic command : ")
    assert "too-many" not in topics(cluster, capsys, "--list")[1].split()


def test_replica_assignment(cluster, capsys):
    assert topics(cluster, capsys, "--create", "--topic", "placed", "--replica-assignment", "0,0")[0] == 0
    _, out, _ = topics(cluster, capsys, "--describe", "--topic", "placed")
    assert "PartitionCount: 2\tReplicationFactor: 1" in out and "\tPartition: 1\tLeader: 0\tReplicas: 0\t" in out
    assert parse_replica_assignment("0:1, 1:2") == {0: [0, 1], 1: [1, 2]}
    with pytest.raises(CommandError, match="^Partition replica lists may not contain duplicate entries: 1$"):
        parse_replica_assignment("1:1")
    with pytest.raises(CommandError, match=r"^Partition 1 has different replication factor: \[1, 2, 0\]$"):
        parse_replica_assignment("0:1,1:2:0")


def test_report_filters_and_overrides(cluster, capsys):
    assert topics(cluster, capsys, "--create", "--topic", "strict", "--partitions", "2",
                  "--config", "min.insync.replicas=2")[0] == 0
    assert topics(cluster, capsys, "--create", "--topic", "plain")[0] == 0
    rc, out, _ = topics(cluster, capsys, "--describe", "--under-min-isr-partitions", "--topic", "strict|plain")
    assert rc == 0 and out == ("\tTopic: strict\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n"
                               "\tTopic: strict\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n")
    _, out, _ = topics(cluster, capsys, "--describe", "--at-min-isr-partitions", "--topic", "strict|plain")
    assert out == "\tTopic: plain\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n"
    assert topics(cluster, capsys, "--describe", "--under-replicated-partitions") == (0, "", "")
    assert topics(cluster, capsys, "--describe", "--unavailable-partitions") == (0, "", "")
    _, out, _ = topics(cluster, capsys, "--describe", "--topics-with-overrides", "--topic", "strict|plain")
    assert without_ids(out) == ("Topic: strict\tTopicId: <id>\tPartitionCount: 2\tReplicationFactor: 1\t"
                                "Configs: min.insync.replicas=2\n")


@pytest.mark.parametrize("args,message", [
    ([], "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
    (["--list", "--describe"], "Command must include exactly one action"),
    (["--create"], 'Missing required argument "[topic]"'),
    (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
    (["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"],
     'Option combination "[bootstrap-server, config]" can\'t be used with option "[alter]" (the kafka-configs CLI'),
    (["--list", "--config", "a=b"], 'Option "[config]" can\'t be used with option "[list]"'),
    (["--describe", "--partitions", "2"], 'Option "[partitions]" can\'t be used with option "[describe]"'),
    (["--create", "--topic", "t", "--if-exists"], 'Option "[if-exists]" can\'t be used with option "[create]"'),
    (["--delete", "--topic", "t", "--if-not-exists"], 'Option "[if-not-exists]" can\'t be used with option '
                                                        '"[delete]"'),
    (["--create", "--topic", "t", "--exclude-internal"], 'Option "[exclude-internal]" can\'t be used with option '
                                                           '"[create]"'),
    (["--create", "--topic", "t", "--replica-assignment", "0", "--partitions", "1"],
     'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
    (["--describe", "--topics-with-overrides", "--under-replicated-partitions"],
     'Option "[under-replicated-partitions]" can\'t be used with option "[topics-with-overrides]"'),
    (["--alter", "--topic", "t", "--partitions", "2", "--delete-config", "x"], 'Option "[delete-config]" can\'t be used with option '
                                                            '"[bootstrap-server]"'),
    (["--describe", "--if-exists"], "--topic or --topic-id is required to describe a topic"),
])
def test_usage_errors_exit_1_on_stderr(cluster, capsys, args, message):
    rc, out, err = topics(cluster, capsys, *args)
    assert rc == 1 and out == "" and err.startswith(message)


def test_bootstrap_server_is_required(capsys):
    assert main(["topics", "--list"]) == 1
    assert capsys.readouterr().err == "--bootstrap-server must be specified\n"


def test_exclude_internal_and_describe_by_topic_id(cluster, capsys):
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}) as c:
        c.subscribe(["plain-for-group"])
        c.poll(0.5)
    assert "__consumer_offsets" in topics(cluster, capsys, "--list")[1].split()     # listed by default
    assert "__consumer_offsets" not in topics(cluster, capsys, "--list", "--exclude-internal")[1].split()
    assert topics(cluster, capsys, "--create", "--topic", "by-id")[0] == 0
    _, out, _ = topics(cluster, capsys, "--describe", "--topic", "by-id")
    topic_id = re.search(r"TopicId: (\S+)", out)[1]
    assert topics(cluster, capsys, "--describe", "--topic-id", topic_id)[1] == out
    assert topics(cluster, capsys, "--describe", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAQ") == \
        (1, "Error while executing topic command : TopicId 'AAAAAAAAAAAAAAAAAAAAAQ' does not exist as expected\n", "")


def test_command_config_carries_the_admin_clients_sasl_settings(tmp_path, capsys):
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      f"sasl.jaas.config={jaas_line('PLAIN', 'admin', 'admin-secret')}\n")
    with Cluster(brokers=1, overrides=sasl_plaintext_overrides({})) as sasl:
        assert topics(sasl, capsys, "--command-config", str(config), "--create", "--topic", "secured") == \
            (0, "Created topic secured.\n", "")
        assert topics(sasl, capsys, "--command-config", str(config), "--list") == (0, "secured\n", "")


def test_partition_size_limit_pages_describe_topic_partitions(cluster, capsys):
    assert topics(cluster, capsys, "--create", "--topic", "paged", "--partitions", "3")[0] == 0
    _, whole, _ = topics(cluster, capsys, "--describe", "--topic", "paged")
    _, paged, _ = topics(cluster, capsys, "--describe", "--topic", "paged", "--partition-size-limit-per-response", "1")
    assert paged == whole and whole.count("\tElr: \tLastKnownElr: \n") == 3
