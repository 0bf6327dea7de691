"""``kafkalab transactions`` (kafka-transactions.sh): its tables to the byte, its messages and exit status,
find-hanging's decisions and abort's marker, against a scripted broker."""
from __future__ import annotations

import io

import pytest

from kafkalab.cli import build_parser, main
from kafkalab.common.time import MockTime
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.tools import transactions as tool
from kafkalab.trace import ScriptedListener

from tests.clients._txn_replies import Producer, Txn, TxnReplies, sent

NOW = 1_700_000_000_000
MINUTE = 60_000


@pytest.fixture
def command_config(tmp_path):
    path = tmp_path / "admin.properties"
    path.write_text("retry.backoff.ms=1\nretry.backoff.max.ms=5\ndefault.api.timeout.ms=3000\n")
    return str(path)


def run(listener, command_config, *argv, now=NOW):
    """(exit status, stdout, stderr) of ``kafkalab transactions ... argv``."""
    args = build_parser().parse_args(["transactions", "--bootstrap-server", listener.bootstrap_servers,
                                      "--command-config", command_config, *argv])
    out, err = io.StringIO(), io.StringIO()
    status = tool.run(args, out=out, err=err, time=MockTime(now))
    return status, out.getvalue(), err.getvalue()


def scripted(**kw):
    kw.setdefault("topics", {"orders": 2})
    return ScriptedListener(TxnReplies(**kw))


def test_table_pads_every_cell_to_its_column_and_ends_it_with_a_tab():
    out = io.StringIO()
    tool.pretty_print_table(("A", "Longer"), [("wide-value", "x")], out)
    assert out.getvalue() == "A         \tLonger\t\nwide-value\tx     \t\n"


def test_list(command_config):
    txns = {"orders-app": Txn(1000, "Ongoing"), "b": Txn(12, "CompleteCommit")}
    with scripted(transactions=txns) as lst:
        assert run(lst, command_config, "list") == (0, (
            "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n"
            "b              \t0          \t12        \tCompleteCommit  \t\n"
            "orders-app     \t0          \t1000      \tOngoing         \t\n"), "")


def test_list_with_a_duration_filter(command_config):
    with scripted(transactions={"a": Txn(1)}) as lst:
        assert run(lst, command_config, "list", "--duration-filter", "60000")[0] == 0
        (request,) = sent(lst, ApiKey.LIST_TRANSACTIONS)
    assert (request.api_version, request.body.duration_filter) == (1, 60_000)


def test_describe_an_open_and_an_empty_transaction(command_config):
    txns = {"app": Txn(1000, "Ongoing", 2, 60_000, NOW - 1500, (("orders", 1), ("orders", 0))),
            "idle": Txn(1001, "Empty")}
    with scripted(transactions=txns) as lst:
        status, out, _ = run(lst, command_config, "describe", "--transactional-id", "app")
        assert status == 0
        assert out.splitlines() == [
            "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\t"
            "CurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions  \t",
            f"0            \tapp            \t1000      \t2            \tOngoing         \t60000               \t"
            f"{NOW - 1500}                \t1500                 \torders-0,orders-1\t"]
        status, out, _ = run(lst, command_config, "describe", "--transactional-id", "idle")
        assert [cell.strip() for cell in out.splitlines()[1].split("\t")[4:9]] == ["Empty", "60000", "None",
                                                                                     "None", ""]


def test_describe_unknown_id_fails_with_javas_message(command_config):
    with scripted() as lst:
        assert run(lst, command_config, "describe", "--transactional-id", "nope") == (1, "", (
            "Failed to describe transaction state of transactional-id `nope`: DescribeTransactions request for "
            "transactionalId `nope` failed because the ID could not be found. Enable debug logging for additional "
            "detail.\n"))


def test_describe_producers(command_config):
    producers = {("orders", 1): [Producer(1000, 2, 41, NOW - 5, 3, 17), Producer(7, 0, 9, NOW - 9)]}
    with scripted(producers=producers) as lst:
        status, out, _ = run(lst, command_config, "describe-producers", "--topic", "orders", "--partition", "1")
        assert (status, out.splitlines()) == (0, [
            "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\t"
            "CurrentTransactionStartOffset\t",
            f"1000      \t2            \t3                     \t41          \t{NOW - 5}\t17                           \t",
            f"7         \t0            \t-1                    \t9           \t{NOW - 9}\tNone                         \t"])


def test_describe_producers_names_the_replica_asked_when_it_fails(command_config):
    errors = {(ApiKey.DESCRIBE_PRODUCERS, ("orders", 0)): [ErrorCode.NOT_LEADER_OR_FOLLOWER]}
    with scripted(errors=errors) as lst:
        status, out, err = run(lst, command_config, "describe-producers", "--topic", "orders", "--partition", "0",
                               "--broker-id", "0")
    assert (status, out) == (1, "")
    assert err == ("Failed to describe producers for partition orders-0 on broker 0: Failed to describe active "
                   "producers for partition orders-0 on brokerId 0. Enable debug logging for additional detail.\n")


def test_find_hanging_reports_what_the_coordinator_no_longer_counts_in(command_config):
    """Open and older than the timeout: pid 1 unknown to every coordinator (hanging), pid 2's transaction holds
    orders-0 (not hanging), pid 3's transaction is on other partitions (hanging), pid 4's id is unknown (hanging);
    pid 5 is young, pid 6 has nothing open."""
    old, young = NOW - 20 * MINUTE, NOW - MINUTE
    producers = {("orders", 0): [Producer(1, 0, 5, old, -1, 10), Producer(2, 1, 5, old, 4, 11),
                                 Producer(3, 2, 5, old - 10 * MINUTE, 4, 12), Producer(5, 0, 5, young, 4, 13),
                                 Producer(6, 0, 5, old, 4)],
                 ("orders", 1): [Producer(4, 0, 5, old, 2, 30)]}
    txns = {"two": Txn(2, "Ongoing", 1, 60_000, old, (("orders", 0),)),
            "three": Txn(3, "Ongoing", 2, 60_000, old, (("orders", 1),)),
            "four": Txn(4, "Ongoing")}
    errors = {(ApiKey.DESCRIBE_TRANSACTIONS, "four"): [ErrorCode.TRANSACTIONAL_ID_NOT_FOUND]}  # listed, not known
    with scripted(transactions=txns, producers=producers, errors=errors) as lst:
        status, out, err = run(lst, command_config, "find-hanging", "--topic", "orders")
        listed = sent(lst, ApiKey.LIST_TRANSACTIONS)
    assert (status, err) == (0, "")
    assert sorted(listed[0].body.producer_id_filters) == [1, 2, 3, 4]
    rows = [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.splitlines()]
    assert rows[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                       "LastTimestamp", "Duration(min)"]
    assert sorted(rows[1:]) == [["orders", "0", "1", "0", "-1", "10", str(old), "20"],
                                ["orders", "0", "3", "2", "4", "12", str(old - 10 * MINUTE), "30"],
                                ["orders", "1", "4", "0", "2", "30", str(old), "20"]]


def test_find_hanging_by_broker_searches_every_topic_it_holds_a_replica_of(command_config):
    producers = {("orders", 0): [Producer(1, 0, 5, NOW - 20 * MINUTE, -1, 10)],
                 ("__consumer_offsets", 0): [Producer(2, 0, 0, NOW - 20 * MINUTE, -1, 3)]}
    with scripted(topics={"orders": 1, "__consumer_offsets": 1}, producers=producers) as lst:
        status, out, _ = run(lst, command_config, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "5")
        assert status == 0
        assert sorted(line.split("\t")[0].strip() for line in out.splitlines()[1:]) == ["__consumer_offsets",
                                                                                         "orders"]
        status, out, _ = run(lst, command_config, "find-hanging", "--broker-id", "7")
    assert status == 0 and len(out.splitlines()) == 1           # broker 7 holds no replica: nothing to search


@pytest.mark.parametrize("argv,message", [
    ((), "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search"),
    (("--broker-id", "0", "--partition", "1"), "The --partition argument requires --topic to be provided"),
])
def test_find_hanging_scope_errors(command_config, argv, message):
    with scripted() as lst:
        assert run(lst, command_config, "find-hanging", *argv) == (1, "", message + "\n")


def test_abort_by_start_offset_writes_the_marker_describe_producers_found(command_config):
    producers = {("orders", 0): [Producer(1000, 3, 5, NOW, 7, 42), Producer(1001, 0, 5, NOW, -1, 50)]}
    with scripted(producers=producers) as lst:
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "0", "--start-offset", "50") \
            == (0, "", "")
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "0", "--start-offset", "42") \
            == (0, "", "")
        markers = [r.body.markers[0] for r in sent(lst, ApiKey.WRITE_TXN_MARKERS)]
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "0", "--start-offset", "43") \
            == (1, "", "Could not find any open transactions starting at offset 43 on partition orders-0\n")
    assert [(m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result) for m in markers] == \
        [(1001, 0, 0, False), (1000, 3, 7, False)]


def test_abort_by_producer_and_its_missing_arguments(command_config):
    with scripted() as lst:
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "1", "--producer-id", "5",
                   "--producer-epoch", "2", "--coordinator-epoch", "-1") == (0, "", "")
        (request,) = sent(lst, ApiKey.WRITE_TXN_MARKERS)
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "1") == (1, "", (
            "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) "
            "or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)\n"))
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "1", "--producer-id", "5") \
            == (1, "", "Missing required argument --producer-epoch\n")
        assert run(lst, command_config, "abort", "--topic", "orders", "--partition", "1", "--producer-id", "5",
                   "--producer-epoch", "2") == (1, "", "Missing required argument --coordinator-epoch\n")
    marker = request.body.markers[0]
    assert (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (5, 2, 0)   # -1 becomes 0


def test_abort_failure_names_the_spec(command_config):
    errors = {(ApiKey.WRITE_TXN_MARKERS, ("orders", 1)): [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]}
    with scripted(errors=errors) as lst:
        status, _, err = run(lst, command_config, "abort", "--topic", "orders", "--partition", "1", "--producer-id",
                             "5", "--producer-epoch", "2", "--coordinator-epoch", "3")
    spec = "AbortTransactionSpec(topicPartition=orders-1, producerId=5, producerEpoch=2, coordinatorEpoch=3)"
    assert (status, err) == (1, f"Failed to abort transaction {spec}: WriteTxnMarkers request with {spec} failed "
                                f"due to cluster authorization error. Enable debug logging for additional detail.\n")


def test_usage_errors_exit_with_1(capsys):
    with pytest.raises(SystemExit) as e:
        main(["transactions", "--bootstrap-server", "127.0.0.1:1", "describe"])
    assert e.value.code == 1 and "--transactional-id" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["transactions", "list"])
    assert e.value.code == 1 and "--bootstrap-server" in capsys.readouterr().err


def test_unreadable_command_config(tmp_path, capsys):
    status = main(["transactions", "--bootstrap-server", "127.0.0.1:1", "--command-config",
                   str(tmp_path / "missing.properties"), "list"])
    assert status == 1 and capsys.readouterr().err.startswith("Failed to load admin client properties: ")
