"""``kafkalab consumer-groups`` (kafka-consumer-groups.sh): its tables to the byte (Java's printf widths), its
messages and exit status, against a live kafkalab broker: list, describe (offsets, members, state), reset
offsets (dry run, execute, bounds), delete offsets, delete groups."""
from __future__ import annotations

import re

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Admin, Consumer, Producer
from kafkalab.clients.admin import NewTopic
from kafkalab.clients.admin_groups import MemberDescription
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.tools import consumer_groups as tool

OFFSETS_HEADER = ("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
                  "CONSUMER-ID     HOST            CLIENT-ID")


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("orders", 2, 1)])
        producer = Producer({"bootstrap.servers": c.bootstrap_servers})
        for i in range(10):
            producer.send("orders", value=b"x", partition=i % 2)
        producer.flush()
        producer.close()
        yield c


def consume_and_commit(cluster, group: str, n: int = 10) -> Consumer:
    """A live member of ``group`` that has read and committed ``n`` records (the caller closes it)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": "c1",
                         "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100, "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    seen = 0
    for _ in range(50):
        seen += len(consumer.poll(0.5))
        if seen >= n:
            break
    consumer.commit()
    return consumer


def groups(cluster, capsys, *argv):
    """(exit status, stdout, stderr) of ``kafkalab consumer-groups ... argv``."""
    status = main(["consumer-groups", "--bootstrap-server", cluster.bootstrap_servers, *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- the tables, from rows ------------------------------------------------------------------------------------
def test_offsets_table_widens_group_topic_consumer_and_host_columns_only():
    rows = [("a-rather-long-group", "t", "0", "5", "7", "2", "-", "-", "-")]
    assert tool.offsets_table(rows) == (
        "\nGROUP               TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
        "CONSUMER-ID     HOST            CLIENT-ID"
        "\na-rather-long-group t               0          5               7               2               "
        "-               -               -")


def test_members_table_shows_group_instance_id_only_when_a_member_has_one():
    plain = MemberDescription("m-1", None, "c1", "/10.0.0.1", [TopicPartition("t", 1), TopicPartition("t", 0),
                                                               TopicPartition("u", 2)], ["t"])
    assert tool.members_table("g", [plain], verbose=True) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT\n"
        "g               m-1             /10.0.0.1       c1              3               (0,1), (2)\n")
    static = MemberDescription("m-2", "instance-1", "c2", "/h", [], [])
    assert tool.members_table("g", [static], verbose=True).splitlines()[1:] == [
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     "
        "ASSIGNMENT",
        "g               m-2             instance-1        /h              c2              0               -"]


def test_state_table_widens_the_first_column_to_the_coordinator_as_kafka_does():
    coordinator = "a-very-long-broker-host-name:9092  (0)"
    text = tool.state_table("g", coordinator, "range", "Stable", 1)
    assert text == ("\nGROUP" + " " * (len(coordinator) - 5) + " COORDINATOR (ID)          ASSIGNMENT-STRATEGY  "
                    "STATE           #MEMBERS"
                    "\ng" + " " * (len(coordinator) - 1) + " " + coordinator + " range                Stable"
                    "          1\n")


def test_reset_plan_and_delete_offsets_tables():
    assert tool.reset_plan_table({"g": {TopicPartition("t", 0): 4}}) == (
        "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
        "g                              t                              0          4              \n")
    assert tool.reset_plan_table({}) == ""
    assert tool.delete_offsets_table([("t", 0, "Successful")]) == (
        "\nTOPIC                          PARTITION       STATUS         \n"
        "t                              0               Successful     \n")


# -- against a broker -----------------------------------------------------------------------------------------
def test_list_describe_members_and_state_of_an_active_group(cluster, capsys):
    consumer = consume_and_commit(cluster, "live")
    try:
        assert groups(cluster, capsys, "--list")[1].splitlines().count("live") == 1
        status, out, _ = groups(cluster, capsys, "--list", "--state")
        assert status == 0
        assert "GROUP                     STATE               " in out.splitlines()
        assert "live                      Stable              " in out.splitlines()
        assert groups(cluster, capsys, "--list", "--state", "Empty")[1].splitlines() == [
            "GROUP                     STATE               "]

        status, out, err = groups(cluster, capsys, "--describe", "--group", "live")
        member = re.search(r"c1-[0-9a-f-]{36}", out).group(0)
        width = len(member)
        assert (status, err) == (0, "")
        assert out == (
            "\n" + OFFSETS_HEADER.replace("CONSUMER-ID     ", "CONSUMER-ID".ljust(width + 1)) + "\n"
            f"live            orders          0          5               5               0               "
            f"{member} /127.0.0.1      c1\n"
            f"live            orders          1          5               5               0               "
            f"{member} /127.0.0.1      c1\n")

        status, out, _ = groups(cluster, capsys, "--describe", "--group", "live", "--members", "--verbose")
        assert out == ("\nGROUP           " + "CONSUMER-ID".ljust(width) + " HOST            CLIENT-ID       "
                       "#PARTITIONS     ASSIGNMENT\n"
                       f"live            {member} /127.0.0.1      c1              2               (0,1)\n")

        status, out, _ = groups(cluster, capsys, "--describe", "--group", "live", "--state")
        port = cluster.bootstrap_servers.rsplit(":", 1)[1]
        coordinator = f"127.0.0.1:{port}  (0)"
        assert out == tool.state_table("live", coordinator, "range", "Stable", 1)

        status, out, _ = groups(cluster, capsys, "--reset-offsets", "--group", "live", "--topic", "orders",
                                "--to-earliest", "--execute")
        assert out == ("\nError: Assignments can only be reset if the group 'live' is inactive, but the current "
                       "state is Stable.\n\nGROUP                          TOPIC                          "
                       "PARTITION  NEW-OFFSET     \n")
        status, out, _ = groups(cluster, capsys, "--delete", "--group", "live")
        assert out == ("\nError: Deletion of some consumer groups failed:\n* Group 'live' could not be deleted due "
                       "to: java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                       "GroupNotEmptyException: The group is not empty.\n")
    finally:
        consumer.close()


def test_an_empty_group_reset_dry_run_execute_bounds_delete_offsets_and_delete(cluster, capsys):
    consume_and_commit(cluster, "idle").close()
    status, out, err = groups(cluster, capsys, "--describe", "--group", "idle")
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert out == ("\n" + OFFSETS_HEADER + "\n"
                   "idle            orders          0          5               5               0               "
                   "-               -               -\n"
                   "idle            orders          1          5               5               0               "
                   "-               -               -\n")

    plan = ("\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
            "idle                           orders                         0          0              \n"
            "idle                           orders                         1          0              \n")
    assert groups(cluster, capsys, "--reset-offsets", "--group", "idle", "--topic", "orders", "--to-earliest") \
        == (0, plan, "")
    lags = [line.split()[5] for line in groups(cluster, capsys, "--describe", "--group", "idle")[1].splitlines()[2:]]
    assert lags == ["0", "0"]                        # a dry run (the default) commits nothing
    assert groups(cluster, capsys, "--reset-offsets", "--group", "idle", "--topic", "orders:1", "--shift-by", "-2",
                  "--execute")[1].splitlines()[2].split() == ["idle", "orders", "1", "3"]
    assert groups(cluster, capsys, "--reset-offsets", "--group", "idle", "--all-topics", "--to-offset", "99")[1] \
        .startswith("\nWarn: New offset (99) is higher than latest offset for topic partition orders-0. "
                    "Value will be set to 5\n")
    rows = groups(cluster, capsys, "--describe", "--group", "idle")[1].splitlines()[2:]
    assert [row.split()[3:6] for row in rows] == [["5", "5", "0"], ["3", "5", "2"]]

    assert groups(cluster, capsys, "--delete-offsets", "--group", "idle", "--topic", "orders:1")[1] == (
        "Request succeed for deleting offsets with topic orders:1 group idle\n"
        "\nTOPIC                          PARTITION       STATUS         \n"
        "orders                         1               Successful     \n")
    assert groups(cluster, capsys, "--delete", "--group", "idle") == (
        0, "Deletion of requested consumer groups ('idle') was successful.\n", "")
    assert "idle" not in groups(cluster, capsys, "--list")[1].splitlines()


def test_a_group_that_does_not_exist(cluster, capsys):
    assert groups(cluster, capsys, "--describe", "--group", "nobody") == (
        0, "\nError: Consumer group 'nobody' does not exist.\n", "")
    # --members prints its header whatever the state, as Kafka's printMembers does
    assert groups(cluster, capsys, "--describe", "--group", "nobody", "--members")[1] == (
        "\nError: Consumer group 'nobody' does not exist.\n"
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n")
    assert groups(cluster, capsys, "--describe", "--group", "nobody", "--state")[1] == (
        "\nError: Consumer group 'nobody' does not exist.\n")


@pytest.mark.parametrize("argv, message", [
    ((), "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"),
    (("--list", "--describe"), "Command must include exactly one action"),
    (("--describe",), "Option --describe takes one of these options: --all-groups, --group"),
    (("--reset-offsets", "--group", "g", "--topic", "t"), "Option '--reset-offsets' requires one of the following"),
    (("--reset-offsets", "--group", "g", "--to-earliest"), "Option --reset-offsets takes one of these options"),
    (("--list", "--state", "Bogus"), "Invalid state list 'Bogus'. Valid states are: PreparingRebalance, "
                                      "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling"),
])
def test_usage_errors_exit_with_1(cluster, capsys, argv, message):
    status, out, err = groups(cluster, capsys, *argv)
    assert (status, out) == (1, "")
    assert err.startswith(message)


def test_reset_to_a_datetime_or_by_a_duration(cluster, capsys):
    consume_and_commit(cluster, "timed").close()
    rows = groups(cluster, capsys, "--reset-offsets", "--group", "timed", "--topic", "orders", "--by-duration",
                  "P1D")[1].splitlines()
    assert [row.split()[2:] for row in rows[2:]] == [["0", "0"], ["1", "0"]]   # every record is newer than a day
    status, out, _ = groups(cluster, capsys, "--reset-offsets", "--group", "timed", "--topic", "orders:0",
                            "--to-datetime", "2999-01-01T00:00:00.000")
    assert out == ("\nWarn: Partition 0 from topic orders is empty. Falling back to latest known offset.\n"
                   "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
                   "timed                          orders                         0          5              \n")
    assert groups(cluster, capsys, "--reset-offsets", "--group", "timed", "--topic", "orders:0", "--to-datetime",
                  "1970-01-01T00:00:00.000+01:00", "--execute")[1].splitlines()[2].split() == \
        ["timed", "orders", "0", "0"]


def test_datetime_and_duration_parsing():
    assert tool.parse_datetime("2024-03-01T12:00:00.250") == 1_709_294_400_250
    assert tool.parse_datetime("2024-03-01T12:00:00.250Z") == 1_709_294_400_250
    assert tool.parse_datetime("2024-03-01T13:30:00.250+01:30") == 1_709_294_400_250
    assert tool.parse_datetime("2024-03-01T10:00:00.250-02") == 1_709_294_400_250
    assert tool.parse_duration_ms("P1DT2H3M4.5S") == 86_400_000 + 7_200_000 + 180_000 + 4_500
    assert tool.parse_duration_ms("PT15M") == 900_000
    for bad in ("2024-03-01 12:00:00", "2024-13-01T00:00:00.000", "2024-03-01T12:00:00"):
        with pytest.raises(tool.ToolError):
            tool.parse_datetime(bad)
    for bad in ("P", "PT", "1D", "P1X"):
        with pytest.raises(tool.ToolError):
            tool.parse_duration_ms(bad)


def test_a_bad_datetime_is_a_usage_error(cluster, capsys):
    assert groups(cluster, capsys, "--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "yesterday") \
        == (1, "", 'Unparseable date: "yesterday"\n')


def test_the_first_command_on_a_fresh_cluster_waits_for_the_offsets_topic(capsys):
    """FindCoordinator answers COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created: asked again."""
    with Cluster(brokers=1) as fresh:
        assert groups(fresh, capsys, "--describe", "--group", "nobody") == (
            0, "\nError: Consumer group 'nobody' does not exist.\n", "")


def test_a_partition_that_is_not_a_number(cluster, capsys):
    assert groups(cluster, capsys, "--reset-offsets", "--group", "g", "--topic", "orders:0,x", "--to-earliest") \
        == (0, '\nError: Executing consumer group command failed due to For input string: "x"\n', "")


def test_export_a_plan_and_reset_from_the_file(cluster, capsys, tmp_path):
    consume_and_commit(cluster, "exported").close()
    status, out, _ = groups(cluster, capsys, "--reset-offsets", "--group", "exported", "--topic", "orders",
                            "--shift-by", "-1", "--export")
    assert (status, out) == (0, "orders,0,4\norders,1,4\n\n")
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,1\norders,1,2\n")
    assert groups(cluster, capsys, "--reset-offsets", "--group", "exported", "--from-file", str(plan),
                  "--execute")[0] == 0
    rows = groups(cluster, capsys, "--describe", "--group", "exported")[1].splitlines()[2:]
    assert [row.split()[3] for row in rows] == ["1", "2"]
    assert tool.parse_reset_plan("g,t,0,5\nh,t,1,6\n", None) == {"g": {TopicPartition("t", 0): 5},
                                                                 "h": {TopicPartition("t", 1): 6}}
    with pytest.raises(tool.ToolError):
        tool.parse_reset_plan("t,0,5\n", None)          # no group column and not one --group
