"""Lab 04's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". Fast: no broker (the notebook itself runs the 3-broker scenario under nbval)."""
from __future__ import annotations

import pytest

from kafkalab.clients.metadata import ClusterView, Metadata
from kafkalab.labs import lab04
from kafkalab.protocol import ErrorCode

BROKERS = {10: "kafka-a:9092", 11: "kafka-b:9092", 12: "kafka-c:9092"}
PARTITIONS = {0: {"leader": 12, "replicas": [12, 10, 11], "isr": [12, 10, 11]},
              1: {"leader": 10, "replicas": [11, 10, 12], "isr": [10, 12]}}


# -- helpers ---------------------------------------------------------------------------------------------------------------
def test_next_requests():
    assert lab04.next_requests(1, 1) == [("Produce", 1)]
    assert lab04.next_requests(2, 0) == [("Produce", 2), ("Metadata", 2), ("Produce", 0)]


def test_routing_table_and_diagram_from_a_cluster_view():
    from kafkalab.clients.metadata import BrokerInfo, PartitionInfo, TopicInfo
    parts = {0: PartitionInfo("t", 0, 1, 3, (1, 2, 0), (1, 2)), 1: PartitionInfo("t", 1, 5, 0, (5,), (5,))}
    view = ClusterView({b: BrokerInfo(b, "h", 9000 + b) for b in (0, 1, 2)}, {"t": TopicInfo("t", parts)}, 0)
    rows = lab04.routing_table(view, "t")
    assert rows[0]["send Produce to"] == "broker 1" and rows[0]["leader_epoch"] == 3
    assert rows[1]["send Produce to"].startswith("(unknown")          # leader 5 is not a known broker
    source = lab04.cluster_diagram(view, "t", dead=[5]).source
    assert source == lab04.cluster_diagram(view, "t", dead=[5]).source
    assert "(controller)" in source and "(dead)" in source
    assert "b0 -> p0 [color=\"#adb5bd\" dir=back style=dashed]" in source     # t-0: broker 0 is outside the ISR


def _top_edges(svg: str) -> dict[str, float]:
    """Each node's top edge (y of the first point of its outline) in a rendered Graphviz SVG."""
    import re
    return {name: float(y) for name, y in
            re.findall(r'<title>(\w+)</title>\s*<path[^>]*? d="M[\d.-]+,([\d.-]+)', svg)}


def test_cluster_diagram_stacks_partitions_and_brokers_in_order():
    """The lab's own case (orders-0 led by broker 1, orders-1 by 2, orders-2 by 0): partitions and brokers each
    read top to bottom in order, whatever way the leader edges cross."""
    from kafkalab.clients.metadata import BrokerInfo, PartitionInfo, TopicInfo
    replicas = {0: (1, 2, 0), 1: (2, 0, 1), 2: (0, 1, 2)}
    parts = {p: PartitionInfo("orders", p, r[0], 0, r, r) for p, r in replicas.items()}
    view = ClusterView({b: BrokerInfo(b, "h", 9000 + b) for b in (0, 1, 2)}, {"orders": TopicInfo("orders", parts)}, 0)
    tops = _top_edges(lab04.cluster_diagram(view, "orders").svg())
    assert tops["p0"] < tops["p1"] < tops["p2"]
    assert tops["b0"] < tops["b1"] < tops["b2"]
    assert "in ISR" not in lab04.cluster_diagram(view, "orders").source          # no edge labels to untangle


def test_error_name():
    assert lab04.error_name(6) == "NOT_LEADER_OR_FOLLOWER"


# -- checks ----------------------------------------------------------------------------------------------------------------
def test_check_routing():
    right = {0: "kafka-c:9092", 1: "kafka-a:9092"}
    assert lab04.check_routing(right, PARTITIONS, BROKERS).passed
    assert lab04.check_routing(..., PARTITIONS, BROKERS).status == "todo"
    first_replica = lab04.check_routing({0: "kafka-c:9092", 1: "kafka-b:9092"}, PARTITIONS, BROKERS)
    assert not first_replica.passed
    assert "only the leader" in [p for p in first_replica.parts if p.label == "partition 1"][0].note
    unknown = lab04.check_routing({0: "kafka-z:1", 1: "kafka-a:9092"}, PARTITIONS, BROKERS)
    assert "not one of the brokers" in [p for p in unknown.parts if p.label == "partition 0"][0].note
    moved = {**PARTITIONS, 1: {**PARTITIONS[1], "leader": 12}}                   # follows the data
    assert lab04.check_routing({0: "kafka-c:9092", 1: "kafka-c:9092"}, moved, BROKERS).passed


def test_check_refresh_errors():
    candidates = ["NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE", "LEADER_NOT_AVAILABLE", "CORRUPT_MESSAGE"]
    assert lab04.check_refresh_errors({"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE"}, candidates).passed
    assert lab04.check_refresh_errors(["LEADER_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER"], candidates).passed
    assert lab04.check_refresh_errors(..., candidates).status == "todo"
    missing = lab04.check_refresh_errors({"NOT_LEADER_OR_FOLLOWER"}, candidates)
    assert not missing.passed and "missing" in missing.hint
    extra = lab04.check_refresh_errors({"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "MESSAGE_TOO_LARGE"},
                                       candidates)
    assert not extra.passed and "too many" in extra.hint
    assert not lab04.check_refresh_errors("NOT_LEADER_OR_FOLLOWER", candidates).passed
    assert lab04.check_refresh_errors(set(), ["MESSAGE_TOO_LARGE"]).passed                # follows the data


def test_check_retry_sequence():
    assert lab04.check_retry_sequence([("Produce", 2), ("Metadata", 2), ("Produce", 0)], 2, 0).passed
    assert lab04.check_retry_sequence([["Produce", 2], ["Metadata", 2], ["Produce", 0]], 2, 0).passed
    assert lab04.check_retry_sequence(..., 2, 0).status == "todo"
    clairvoyant = lab04.check_retry_sequence([("Produce", 0)], 2, 0)
    assert not clairvoyant.passed and "goes where its cache says" in clairvoyant.hint
    no_refresh = lab04.check_retry_sequence([("Produce", 2), ("Produce", 0)], 2, 0)
    assert "learns something new" in no_refresh.hint
    assert lab04.check_retry_sequence([("Produce", 1)], 1, 1).passed


@pytest.mark.parametrize("name", ["NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION"])
def test_refresh_errors_follow_the_client(name):
    from kafkalab.clients.metadata import STALE_METADATA_ERRORS
    assert ErrorCode[name] in STALE_METADATA_ERRORS
    assert Metadata().need_update


def test_refresh_times_count_from_the_last_refresh():
    assert lab04.refresh_times(60, [], 150) == [0, 60, 120]
    assert lab04.refresh_times(60, [25], 150) == [0, 25, 85, 145]
    assert lab04.refresh_times(60, [25, 30], 100) == [0, 25, 30, 90]


def test_check_refresh_times():
    assert lab04.check_refresh_times([0, 25, 85, 145], 60, [25], 150).passed
    grid = lab04.check_refresh_times([0, 25, 60, 120], 60, [25], 150)
    assert not grid.passed and "last refresh" in grid.hint
    assert "at once" in lab04.check_refresh_times([0, 60, 120], 60, [25], 150).hint
    assert not lab04.check_refresh_times([0, 60, 120, 145], 60, [25], 150).passed
    assert lab04.check_refresh_times(..., 60, [25], 150).status == "todo"


def test_requests_rows_and_config_rows():
    from types import SimpleNamespace as NS

    def ev(api, node):
        return NS(api_name=api, api_version=1, node_id=node)
    events = [ev("Metadata", -1), ev("DescribeConfigs", -1), ev("CreatePartitions", 2), ev("FindCoordinator", 0),
              ev("FindCoordinator", 0), ev("OffsetCommit", 1), ev("ListGroups", 0), ev("ListGroups", 1),
              ev("ListGroups", 2), ev("DeleteRecords", 0)]
    rows = lab04.requests_rows(events, {"CreatePartitions": ("the controller", [2]),
                                        "OffsetCommit": ("the coordinator", [0]),
                                        "ListGroups": ("every broker", None)}, brokers=[0, 1, 2])
    got = {r["request"]: (r["must go to"], r["went there"]) for r in rows}
    assert list(got) == ["DescribeConfigs v1", "CreatePartitions v1", "FindCoordinator v1", "OffsetCommit v1",
                         "ListGroups v1", "DeleteRecords v1"]
    assert got["DescribeConfigs v1"] == ("any broker", "yes") and got["CreatePartitions v1"][1] == "yes"
    assert got["OffsetCommit v1"] == ("the coordinator", "NO") and got["ListGroups v1"] == ("every broker", "yes")
    partial = lab04.requests_rows(events[6:8], {"ListGroups": ("every broker", None)}, brokers=[0, 1, 2])
    assert partial[0]["went there"] == "NO"
    configs = {"retention.ms": NS(value="3600000", config_source=1)}
    assert lab04.config_rows(configs, ["retention.ms"]) == [
        {"config": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}]
