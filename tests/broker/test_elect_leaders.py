"""ElectLeaders (API 43) on a three-broker cluster: PREFERRED and UNCLEAN elections, every error Kafka's
controller answers, the three versions on the wire, the purgatory that waits for the new leader, and real
clients (confluent-kafka, kafka-python) asking for it."""
from __future__ import annotations

import logging
import re

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.controller.controller_stats import STATE_CHANGE_LOGGER
from kafkalab.protocol import ApiKey, ErrorCode, request_class

from ._admin_support import wire

ElectLeaders = request_class(ApiKey.ELECT_LEADERS)
PREFERRED, UNCLEAN = 0, 1


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides={"auto.create.topics.enable": False}) as c:
        yield c


def controller(cluster):
    return cluster.broker(cluster.wait_for_controller())


def request(partitions, election_type=PREFERRED, timeout_ms=10_000):
    """``partitions``: ``{topic: [partition ids]}``, or None for every partition."""
    named = None if partitions is None else tuple(
        ElectLeaders.TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in partitions.items())
    return ElectLeaders(election_type=election_type, topic_partitions=named, timeout_ms=timeout_ms)


def outcomes(response) -> dict:
    """``{"topic-p": (error code, message)}`` of an ElectLeaders response."""
    return {f"{r.topic}-{p.partition_id}": (p.error_code, p.error_message)
            for r in response.replica_election_results for p in r.partition_result}


def move_leadership_away(cluster, topic, partition=0):
    """Restart the preferred replica: it comes back a follower, and in sync again."""
    preferred = cluster.partition_state(topic, partition)["replicas"][0]
    cluster.restart(preferred)
    cluster.wait_until(lambda: cluster.partition_state(topic, partition)["leader"] not in (-1, preferred)
                       and preferred in cluster.partition_state(topic, partition)["isr"], 20,
                       f"broker {preferred} did not rejoin the ISR of {topic}-{partition}")
    return preferred


def test_preferred_election_puts_the_first_replica_back_and_answers_once_metadata_shows_it(cluster):
    cluster.create_topic("pref", assignment={0: [1, 2, 0], 1: [2, 0, 1]})
    preferred = move_leadership_away(cluster, "pref")
    before = cluster.partition_state("pref", 0)
    broker = controller(cluster)
    response = wire(broker, request({"pref": [0, 1, 7], "absent": [0]}), 2)
    # the answer came only after this broker's metadata cache had the new leader (the ElectLeader purgatory)
    assert broker.metadata_cache.leader_of("pref", 0) == preferred
    assert response.error_code == ErrorCode.NONE
    assert outcomes(response) == {
        "pref-0": (ErrorCode.NONE, None),
        "pref-1": (ErrorCode.ELECTION_NOT_NEEDED, None),
        "pref-7": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        "absent-0": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")}
    after = cluster.partition_state("pref", 0)
    assert (after["leader"], after["leader_epoch"], set(after["isr"])) == (
        preferred, before["leader_epoch"] + 1, set(before["isr"]))
    # asked again: nothing to do
    assert outcomes(wire(broker, request({"pref": [0]}), 2)) == {"pref-0": (ErrorCode.ELECTION_NOT_NEEDED, None)}


def test_all_partitions_lists_only_the_elections_that_happened(cluster):
    cluster.create_topic("every", assignment={0: [2, 0, 1], 1: [0, 1, 2]})
    move_leadership_away(cluster, "every")
    response = wire(controller(cluster), request(None), 1)
    assert response.error_code == ErrorCode.NONE
    listed = outcomes(response)       # (other tests' partitions may have lost their preferred leaders too)
    assert listed["every-0"] == (ErrorCode.NONE, None)
    assert "every-1" not in listed and ErrorCode.ELECTION_NOT_NEEDED not in {code for code, _ in listed.values()}
    assert cluster.partition_state("every", 0)["leader"] == 2


def test_v0_is_preferred_and_has_no_top_level_error(cluster):
    cluster.create_topic("old", assignment={0: [0, 1]})
    response = wire(controller(cluster), request({"old": [0]}), 0)
    assert outcomes(response) == {"old-0": (ErrorCode.ELECTION_NOT_NEEDED, None)}


def test_an_unknown_election_type_is_an_unknown_server_error(cluster):
    cluster.create_topic("kind", assignment={0: [0, 1]})
    response = wire(controller(cluster), request({"kind": [0, 0]}, election_type=7), 1)
    assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert outcomes(response) == {"kind-0": (ErrorCode.UNKNOWN_SERVER_ERROR, None)}
    assert outcomes(wire(controller(cluster), request(None, election_type=-1), 2)) == {}


def test_a_broker_that_is_not_the_controller_answers_not_controller(cluster):
    cluster.create_topic("notc", assignment={0: [0, 1]})
    other = next(b for i, b in cluster.brokers.items() if i != cluster.controller_id)
    response = wire(other, request({"notc": [0]}), 2)
    assert (response.error_code, outcomes(response)) == (ErrorCode.NONE,
                                                          {"notc-0": (ErrorCode.NOT_CONTROLLER, None)})


def test_the_preferred_replica_must_be_alive_and_in_sync(cluster):
    cluster.create_topic("down", assignment={0: [1, 2]})
    cluster.kill(1)
    try:
        cluster.wait_until(lambda: cluster.partition_state("down", 0)["leader"] == 2, 10)
        response = wire(controller(cluster), request({"down": [0]}), 2)
        assert outcomes(response) == {"down-0": (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "Failed to elect leader for partition down-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy")}
    finally:
        cluster.restart(1)


def test_unclean_election_elects_an_out_of_sync_replica_only_when_asked(cluster, caplog):
    caplog.set_level(logging.INFO, logger=STATE_CHANGE_LOGGER)
    cluster.create_topic("lossy", assignment={0: [1, 2]})
    assert outcomes(wire(controller(cluster), request({"lossy": [0]}, UNCLEAN), 2)) == {
        "lossy-0": (ErrorCode.ELECTION_NOT_NEEDED, None)}        # a live leader is never replaced
    cluster.kill(2)                                              # the follower goes: ISR [1]
    cluster.wait_until(lambda: cluster.partition_state("lossy", 0)["isr"] == [1], 10)
    cluster.kill(1)                                              # the leader goes: offline, ISR [1]
    try:
        cluster.wait_until(lambda: cluster.partition_state("lossy", 0)["leader"] == -1, 10)
        assert outcomes(wire(controller(cluster), request({"lossy": [0]}, UNCLEAN), 2)) == {"lossy-0": (
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            "Failed to elect leader for partition lossy-0 under strategy OfflinePartitionLeaderElectionStrategy(true)")}
        cluster.restart(2)           # back, but not in the ISR; unclean.leader.election.enable is false: offline
        assert cluster.partition_state("lossy", 0)["leader"] == -1
        assert outcomes(wire(controller(cluster), request({"lossy": [0]}, PREFERRED), 2)) == {"lossy-0": (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "Failed to elect leader for partition lossy-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy")}
        meter = lambda: cluster.call(controller(cluster).metrics)["UncleanLeaderElectionsPerSec"]  # noqa: E731
        before = meter()
        response = wire(controller(cluster), request({"lossy": [0]}, UNCLEAN), 1)
        assert outcomes(response) == {"lossy-0": (ErrorCode.NONE, None)}
        state = cluster.partition_state("lossy", 0)
        assert (state["leader"], state["isr"]) == (2, [2])
        assert meter() == before + 1                 # Kafka's ControllerStats meter; no warning is logged
        lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER and "lossy-0" in
                 r.getMessage()]
        assert re.fullmatch(r"\[Controller id=\d+ epoch=\d+\] Changed partition lossy-0 from OfflinePartition to "
                            r"OnlinePartition with state LeaderAndIsr\(leader=2, leaderEpoch=%d, isrWithBrokerEpoch="
                            r"List\(BrokerState\(brokerId=2, brokerEpoch=-1\)\), leaderRecoveryState=RECOVERED, "
                            r"partitionEpoch=\d+\)" % state["leader_epoch"], lines[-1]), lines
    finally:
        cluster.restart(1)


def test_an_answer_that_cannot_wait_times_out_though_the_election_happened(cluster):
    cluster.create_topic("hurry", assignment={0: [0, 1, 2]})
    move_leadership_away(cluster, "hurry")
    response = wire(controller(cluster), request({"hurry": [0]}, timeout_ms=0), 2)
    assert outcomes(response) == {"hurry-0": (ErrorCode.REQUEST_TIMED_OUT, None)}
    cluster.wait_until(lambda: cluster.partition_state("hurry", 0)["leader"] == 0, 10)


def test_confluent_kafka_elect_leaders(cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    cluster.create_topic("librd", assignment={0: [1, 0, 2], 1: [0, 1, 2]})
    move_leadership_away(cluster, "librd")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tps = [confluent_kafka.TopicPartition("librd", 0), confluent_kafka.TopicPartition("librd", 1)]
    result = admin.elect_leaders(confluent_kafka.ElectionType.PREFERRED, tps).result(30)
    by_partition = {tp.partition: error for tp, error in result.items()}
    assert by_partition[0] is None
    assert by_partition[1].code() == ErrorCode.ELECTION_NOT_NEEDED
    assert cluster.partition_state("librd", 0)["leader"] == 1


def test_kafka_python_elect_leaders(cluster):
    kafka_admin = pytest.importorskip("kafka.admin")
    from kafka.errors import ElectionNotNeededError

    cluster.create_topic("kpy", assignment={0: [2, 1, 0]})
    move_leadership_away(cluster, "kpy")
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        response = admin.elect_leaders(PREFERRED, {"kpy": [0]}, timeout_ms=10_000)
        assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
                for r in response.replica_election_results] == [("kpy", [(0, 0)])]
        assert cluster.partition_state("kpy", 0)["leader"] == 2
        again = admin.elect_leaders(PREFERRED, {"kpy": [0]}, raise_errors=False)
        assert again.replica_election_results[0].partition_result[0].error_code == ElectionNotNeededError.errno
    finally:
        admin.close()


def test_kafkalab_admin_elect_leaders(cluster):
    from kafkalab.clients import Admin
    from kafkalab.clients.consumer.assignors.protocol import TopicPartition

    cluster.create_topic("own", assignment={0: [1, 2, 0], 1: [0, 1, 2]})
    move_leadership_away(cluster, "own")
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        result = admin.elect_leaders(PREFERRED, [("own", 0), ("own", 1), ("own", 9)])
        assert result[TopicPartition("own", 0)] is None
        assert result[TopicPartition("own", 1)].error_code == ErrorCode.ELECTION_NOT_NEEDED
        assert (result[TopicPartition("own", 9)].error_code, result[TopicPartition("own", 9)].message) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        unclean = admin.elect_leaders(UNCLEAN, [("own", 0)])
        assert [(tp, e.error_code) for tp, e in unclean.items()] == [
            (TopicPartition("own", 0), ErrorCode.ELECTION_NOT_NEEDED)]
    assert cluster.partition_state("own", 0)["leader"] == 1


def test_without_alter_on_the_cluster_every_named_partition_is_refused():
    from kafkalab.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType

    CreateAcls = request_class(ApiKey.CREATE_ACLS)
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                       "allow.everyone.if.no.acl.found": "true"}) as c:
        c.create_topic("guarded")
        # the cluster gets ACLs (its own controller keeps CLUSTER_ACTION): ALTER is no longer granted to anyone
        created = wire(c.broker(0), CreateAcls(creations=tuple(CreateAcls.AclCreation(
            resource_type=ResourceType.CLUSTER, resource_name="kafka-cluster", resource_pattern_type=PatternType.LITERAL,
            principal="User:ANONYMOUS", host="*", operation=op, permission_type=AclPermissionType.ALLOW)
            for op in (AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE))), 3)
        assert [r.error_code for r in created.results] == [0, 0]
        named = wire(c.broker(0), request({"guarded": [0]}), 2)
        assert (named.error_code, outcomes(named)) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {
            "guarded-0": (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)})
        every = wire(c.broker(0), request(None), 1)
        assert (every.error_code, outcomes(every)) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})


def test_kafkalab_admin_speaks_v0_to_a_broker_that_only_offers_it(cluster, monkeypatch):
    from kafkalab.clients import Admin
    from kafkalab.clients.api_versions import UnsupportedVersionError
    from kafkalab.clients.consumer.assignors.protocol import TopicPartition
    from kafkalab.server.apis.base import REGISTRY

    from ._admin_support import ApiSpy

    cluster.create_topic("vzero", assignment={0: [0, 1]})
    monkeypatch.setitem(REGISTRY, ApiKey.ELECT_LEADERS, REGISTRY[ApiKey.ELECT_LEADERS]._replace(max_version=0))
    for broker in cluster.brokers.values():    # each broker computed its table at start: it now offers v0 only
        for table in (broker.api_versions.advertised, broker.api_versions.accepted):
            monkeypatch.setitem(table, ApiKey.ELECT_LEADERS, (0, 0))
    spy = ApiSpy(monkeypatch)
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        with pytest.raises(UnsupportedVersionError, match="API Version 0 only supports PREFERRED election type"):
            admin.elect_leaders(UNCLEAN, [("vzero", 0)])
        result = admin.elect_leaders(PREFERRED, [("vzero", 0)])
    assert [(tp, e.error_code) for tp, e in result.items()] == [(TopicPartition("vzero", 0),
                                                                 ErrorCode.ELECTION_NOT_NEEDED)]
    assert spy.versions("ElectLeaders") == {0}
