"""``kafkalab.api.version.floors``: Kafka 3.9's versions (the default, old ones served right on the wire) or Kafka
4.0's floors (KIP-896; Produce advertised from v0 but v0-2 refused, KAFKA-18659), enforced in the socket server
for every API."""
from __future__ import annotations

import logging
import time

import pytest

from kafkalab.cluster import Cluster
from kafkalab.common.config import ConfigException
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.records import build_batch
from kafkalab.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from kafkalab.server.api_version_floors import KAFKA_3_9, KAFKA_4_0, api_version_table
from kafkalab.server.apis import api_versions_for, served_apis
from kafkalab.server.config import KafkaConfig
from kafkalab.zk.consumer_offsets import consumer_offset_path, get_consumer_offset

from ._admin_support import req, wire
from ._raw_wire import Conn, frame_of, header_v1

ApiVersions, ListOffsets, Produce = req(ApiKey.API_VERSIONS), req(ApiKey.LIST_OFFSETS), req(ApiKey.PRODUCE)
OffsetCommit, OffsetFetch = req(ApiKey.OFFSET_COMMIT), req(ApiKey.OFFSET_FETCH)
Epoch, ListGroups = req(ApiKey.OFFSET_FOR_LEADER_EPOCH), req(ApiKey.LIST_GROUPS)
CreateAcls, DescribeAcls, DeleteAcls = req(ApiKey.CREATE_ACLS), req(ApiKey.DESCRIBE_ACLS), req(ApiKey.DELETE_ACLS)
DescribeCluster, FindCoordinator = req(ApiKey.DESCRIBE_CLUSTER), req(ApiKey.FIND_COORDINATOR)
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


# -- the tables -----------------------------------------------------------------------------------------------------
def test_the_default_is_kafka_3_9_and_only_the_two_releases_are_accepted():
    assert KafkaConfig({})["kafkalab.api.version.floors"] == "3.9"
    assert KafkaConfig({"kafkalab.api.version.floors": "4.0"})["kafkalab.api.version.floors"] == "4.0"
    with pytest.raises(ConfigException, match="kafkalab.api.version.floors"):
        KafkaConfig({"kafkalab.api.version.floors": "3.0"})


def test_each_release_clips_what_the_handlers_serve():
    served = {ApiKey.PRODUCE: (0, 11), ApiKey.LIST_OFFSETS: (0, 9), ApiKey.METADATA: (0, 13),
              ApiKey.LEADER_AND_ISR: (0, 7), 999: (0, 3)}
    kafka_3_9, kafka_4_0 = api_version_table(served, "3.9"), api_version_table(served, "4.0")
    assert kafka_3_9.advertised == kafka_3_9.accepted == {0: (0, 11), 2: (0, 9), 3: (0, 12), 4: (0, 7)}
    # 4.0: ListOffsets v0 gone, Metadata 13; Produce advertised from 0 but accepted from 3; the ZooKeeper-era
    # controller requests kept at 3.9's ranges (kafkalab's cluster needs them); an API no release has: not at all
    assert kafka_4_0.advertised == {0: (0, 11), 2: (1, 9), 3: (0, 13), 4: (0, 7)}
    assert kafka_4_0.accepted == {0: (3, 11), 2: (1, 9), 3: (0, 13), 4: (0, 7)}


def test_the_broker_serves_every_version_kafka_3_9_has_below_ours_except_produce_and_fetch():
    """Part of issue 19: every API's lowest version is 3.9's (Produce and Fetch are the records formats' work)."""
    advertised = api_versions_for("3.9").advertised
    higher_min = {key: (lo, KAFKA_3_9[key][0]) for key, (lo, _) in advertised.items()
                  if lo > KAFKA_3_9[key][0] and key not in (ApiKey.PRODUCE, ApiKey.FETCH)}
    assert higher_min == {}
    assert all(hi <= KAFKA_3_9[key][1] for key, (_, hi) in advertised.items())
    assert all(lo >= KAFKA_4_0.get(key, (lo,))[0] for key, (lo, _) in api_versions_for("4.0").accepted.items()
               if key not in (4, 5, 6, 7))
    assert served_apis()[ApiKey.METADATA] == (0, 13) and advertised[ApiKey.METADATA] == (0, 12)


# -- on the wire: Kafka 4.0's floors ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kafka_4_0():
    with Cluster(brokers=1, overrides={"kafkalab.api.version.floors": "4.0"}) as c:
        c.create_topic("floors", 1)
        yield c


def _closed_without_response(port: int, api_key: int, version: int) -> None:
    with Conn(port) as c:
        c.send(frame_of(header_v1(api_key, version, 5) + b"\x00" * 64))
        c.assert_closed_without_response()


def test_kafka_4_0_advertises_its_floors(kafka_4_0):
    broker = kafka_4_0.broker(0)
    body = wire(broker, ApiVersions(client_software_name="floors", client_software_version="1"), 3)
    advertised = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert advertised == api_versions_for("4.0").advertised
    assert {k: advertised[k] for k in (ApiKey.PRODUCE, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_COMMIT,
                                       ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_ACLS, ApiKey.METADATA)} == {
        ApiKey.PRODUCE: (0, 11), ApiKey.LIST_OFFSETS: (1, 9), ApiKey.OFFSET_COMMIT: (2, 9),
        ApiKey.CREATE_TOPICS: (2, 7), ApiKey.DESCRIBE_ACLS: (1, 3), ApiKey.METADATA: (0, 13)}


@pytest.mark.parametrize("api_key,version", [
    (ApiKey.PRODUCE, 2), (ApiKey.PRODUCE, 0), (ApiKey.LIST_OFFSETS, 0), (ApiKey.OFFSET_COMMIT, 1),
    (ApiKey.OFFSET_FETCH, 0), (ApiKey.CREATE_TOPICS, 1), (ApiKey.DELETE_TOPICS, 0),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 1), (ApiKey.DESCRIBE_ACLS, 0), (ApiKey.DESCRIBE_CONFIGS, 0),
    (ApiKey.DESCRIBE_LOG_DIRS, 0), (ApiKey.WRITE_TXN_MARKERS, 0), (ApiKey.FETCH, 3)])
def test_kafka_4_0_closes_a_request_below_its_floor(kafka_4_0, api_key, version, caplog):
    port = kafka_4_0.broker(0).bound_endpoints[0].port
    with caplog.at_level(logging.WARNING, logger="kafkalab"):
        _closed_without_response(port, api_key, version)
        deadline = time.monotonic() + 5
        while "closing" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
    if api_key == ApiKey.PRODUCE:   # advertised, yet refused: Kafka 4.0's words
        assert f"Received request api key PRODUCE with version {version} which is not enabled" in caplog.text


def test_the_floor_is_checked_on_the_header_before_the_body_is_read(kafka_4_0, caplog):
    """A Produce v2 whose body is garbage for v2: Kafka 4.0 refuses the version (SocketServer.parseRequestHeader),
    it never tries to parse the body."""
    port = kafka_4_0.broker(0).bound_endpoints[0].port
    with caplog.at_level(logging.WARNING, logger="kafkalab"):
        with Conn(port) as c:
            c.send(frame_of(header_v1(ApiKey.PRODUCE, 2, 5) + b"\xff" * 64))
            c.assert_closed_without_response()
        deadline = time.monotonic() + 5
        while "closing" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "Received request api key PRODUCE with version 2 which is not enabled" in caplog.text
    assert "error parsing request" not in caplog.text


def test_kafka_4_0_serves_its_own_maxima(kafka_4_0):
    """DescribeCluster v2 (Kafka 4.0's; 3.9 stops at 1): include_fenced_brokers and is_fenced."""
    body = wire(kafka_4_0.broker(0), DescribeCluster(include_fenced_brokers=True), 2)
    assert (body.error_code, [(b.broker_id, b.is_fenced) for b in body.brokers]) == (0, [(0, False)])


def test_kafka_3_9_closes_above_its_maxima():
    with Cluster(brokers=1) as c:
        port = c.broker(0).bound_endpoints[0].port
        _closed_without_response(port, ApiKey.DESCRIBE_CLUSTER, 2)
        _closed_without_response(port, ApiKey.METADATA, 13)
        assert wire(c.broker(0), DescribeCluster(), 1).error_code == 0


# -- on the wire: Kafka 3.9's old versions ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kafka_3_9():
    with Cluster(brokers=1, overrides={"authorizer.class.name": ACL_AUTHORIZER,
                                       "super.users": "User:ANONYMOUS"}) as c:
        c.create_topic("old", 1)
        broker = c.broker(0)
        for _ in range(3):
            body = Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
                name="old", partition_data=(Produce.PartitionProduceData(index=0, records=build_batch(
                    [(b"k", b"v"), (b"k", b"w")])),)),))
            assert wire(broker, body, 8).responses[0].partition_responses[0].error_code == 0
        deadline = time.monotonic() + 20     # the group coordinator ready (__consumer_offsets created and loaded)
        while wire(broker, FindCoordinator(key="old-group", key_type=0), 1).error_code != 0:
            assert time.monotonic() < deadline, "no group coordinator"
            time.sleep(0.05)
        yield c


def _list_offsets_v0(broker, timestamp, max_num_offsets=10, topic="old", replica_id=-1):
    body = ListOffsets(replica_id=replica_id, topics=(ListOffsets.ListOffsetsTopic(name=topic, partitions=(
        ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=timestamp, max_num_offsets=max_num_offsets),)),))
    (t,) = wire(broker, body, 0).topics
    (p,) = t.partitions
    return p.error_code, list(p.old_style_offsets)


def test_list_offsets_v0_answers_segment_boundaries_newest_first(kafka_3_9):
    broker = kafka_3_9.broker(0)
    # one segment (base 0) holding data, so the candidates are [0 (its mtime), 6 (the log end, "now")]
    assert _list_offsets_v0(broker, -1) == (0, [6, 0])
    assert _list_offsets_v0(broker, -1, max_num_offsets=1) == (0, [6])
    assert _list_offsets_v0(broker, -2) == (0, [0])
    assert _list_offsets_v0(broker, int(time.time() * 1000) + 3_600_000) == (0, [6, 0])
    assert _list_offsets_v0(broker, 1) == (0, [])          # before the segment file was last written
    assert _list_offsets_v0(broker, -3) == (ErrorCode.UNSUPPORTED_VERSION, [])     # MAX_TIMESTAMP is v7+
    assert _list_offsets_v0(broker, -1, topic="nope") == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


def test_offset_commit_v0_goes_to_zookeeper_and_offset_fetch_v0_reads_it_back(kafka_3_9):
    broker = kafka_3_9.broker(0)

    def commit(version, offset, metadata="", **extra):
        body = OffsetCommit(group_id="old-group", topics=(OffsetCommit.OffsetCommitRequestTopic(name="old", partitions=(
            OffsetCommit.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                      committed_metadata=metadata, **extra),)),))
        return wire(broker, body, version).topics[0].partitions[0].error_code

    def fetch(version, partitions=(0,)):
        body = OffsetFetch(group_id="old-group", topics=(OffsetFetch.OffsetFetchRequestTopic(
            name="old", partition_indexes=partitions),))
        return [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
                for p in wire(broker, body, version).topics[0].partitions]
    assert commit(0, 4, "kept nowhere") == ErrorCode.NONE
    zk = broker.zk
    assert kafka_3_9.call(zk.get_data_and_version, consumer_offset_path("old-group", "old", 0))[0] == b"4"
    assert kafka_3_9.call(get_consumer_offset, zk, "old-group", "old", 0) == 4
    # v0 reads ZooKeeper: the offset, no metadata; a partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION
    assert fetch(0, (0, 5)) == [(0, 4, "", 0), (5, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    # v1 asks the group coordinator, which never saw the v0 commit
    assert fetch(1) == [(0, -1, "", 0)]
    assert commit(0, 5) == ErrorCode.NONE and fetch(0) == [(0, 5, "", 0)]      # overwritten in place
    assert commit(0, 6, "x" * 5000) == ErrorCode.OFFSET_METADATA_TOO_LARGE and fetch(0) == [(0, 5, "", 0)]
    # v1 (generation -1: a commit from outside any generation) keeps its commit timestamp in __consumer_offsets
    assert commit(1, 3, "v1", commit_timestamp=1234) == ErrorCode.NONE
    assert fetch(1) == [(0, 3, "v1", 0)] and fetch(0) == [(0, 5, "", 0)]
    group = kafka_3_9.call(broker.group_coordinator.manager.get_group, "old-group")
    assert group.offsets[("old", 0)].value.commit_timestamp == 1234


def test_offset_fetch_v0_never_committed_and_unauthorized(kafka_3_9):
    body = OffsetFetch(group_id="nobody", topics=(OffsetFetch.OffsetFetchRequestTopic(name="old",
                                                                                     partition_indexes=(0,)),))
    (p,) = wire(kafka_3_9.broker(0), body, 0).topics[0].partitions
    assert (p.committed_offset, p.error_code) == (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_offset_commit_and_fetch_v9_as_v8_for_a_classic_group(kafka_3_9):
    broker = kafka_3_9.broker(0)
    body = OffsetCommit(group_id="g9", generation_id_or_member_epoch=-1, topics=(OffsetCommit.OffsetCommitRequestTopic(
        name="old", partitions=(OffsetCommit.OffsetCommitRequestPartition(partition_index=0, committed_offset=2),)),))
    assert wire(broker, body, 9).topics[0].partitions[0].error_code == 0
    body = OffsetFetch(groups=(OffsetFetch.OffsetFetchRequestGroup(group_id="g9", member_id="m", member_epoch=3,
                                                                   topics=None),))
    (group,) = wire(broker, body, 9).groups
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in group.topics] == \
        [("old", [(0, 2)])]


def test_list_groups_v5_type_filter(kafka_3_9):
    broker = kafka_3_9.broker(0)
    wire(broker, OffsetCommit(group_id="typed", generation_id_or_member_epoch=-1, topics=(
        OffsetCommit.OffsetCommitRequestTopic(name="old", partitions=(
            OffsetCommit.OffsetCommitRequestPartition(partition_index=0, committed_offset=1),)),)), 8)
    names = {t: {g.group_id for g in wire(broker, ListGroups(types_filter=t), 5).groups}
             for t in ((), ("Classic",), ("consumer",))}
    assert "typed" in names[()] and "typed" in names[("Classic",)] and names[("consumer",)] == set()


def test_offset_for_leader_epoch_v0_and_v1(kafka_3_9):
    broker = kafka_3_9.broker(0)
    body = Epoch(topics=(Epoch.OffsetForLeaderTopic(topic="old", partitions=(
        Epoch.OffsetForLeaderPartition(partition=0, leader_epoch=0),)),))
    for version in (0, 1):
        (p,) = wire(broker, body, version).topics[0].partitions
        assert (p.error_code, p.end_offset, p.leader_epoch) == (0, 6, 0 if version == 1 else -1), version


def test_offset_for_leader_epoch_only_from_the_leader_at_every_version():
    """Kafka 3.9 and 4.x answer only on the leader (NOT_LEADER_OR_FOLLOWER on a follower), whatever the replica id:
    ``ReplicaManager.lastOffsetForLeaderEpoch`` passes ``fetchOnlyFromLeader = true``, debugging id -2 included."""
    with Cluster(brokers=2) as c:
        c.create_topic("epochs", 1, assignment={0: [0, 1]})
        for version in range(5):
            for replica_id in ((-2, -1, 1) if version >= 3 else (None,)):
                extra = {} if replica_id is None else {"replica_id": replica_id}
                body = Epoch(**extra, topics=(Epoch.OffsetForLeaderTopic(topic="epochs", partitions=(
                    Epoch.OffsetForLeaderPartition(partition=0, leader_epoch=0),)),))
                assert wire(c.broker(0), body, version).topics[0].partitions[0].error_code == 0
                assert wire(c.broker(1), body, version).topics[0].partitions[0].error_code == \
                    ErrorCode.NOT_LEADER_OR_FOLLOWER, (version, replica_id)


def test_acls_v0_are_literal(kafka_3_9):
    broker = kafka_3_9.broker(0)

    def create(version, name, pattern=PatternType.LITERAL):
        body = CreateAcls(creations=(CreateAcls.AclCreation(
            resource_type=ResourceType.TOPIC, resource_name=name, resource_pattern_type=pattern,
            principal="User:old", host="*", operation=AclOperation.READ, permission_type=AclPermissionType.ALLOW),))
        return wire(broker, body, version).results[0].error_code

    def describe(version):
        body = DescribeAcls(resource_type_filter=ResourceType.TOPIC, resource_name_filter=None,
                            pattern_type_filter=PatternType.ANY if version >= 1 else PatternType.LITERAL,
                            principal_filter="User:old", host_filter=None,
                            operation=AclOperation.ANY, permission_type=AclPermissionType.ANY)
        return sorted((r.resource_name, r.pattern_type) for r in wire(broker, body, version).resources)
    assert create(0, "lit") == 0 and create(1, "pre", PatternType.PREFIXED) == 0
    # v0 has no pattern type: the request means LITERAL, so the prefixed binding stays out of its answer
    assert describe(1) == [("lit", PatternType.LITERAL), ("pre", PatternType.PREFIXED)]
    assert describe(0) == [("lit", PatternType.LITERAL)]
    body = DeleteAcls(filters=(DeleteAcls.DeleteAclsFilter(
        resource_type_filter=ResourceType.TOPIC, resource_name_filter=None, principal_filter="User:old",
        host_filter=None, operation=AclOperation.ANY, permission_type=AclPermissionType.ANY),))
    (result,) = wire(broker, body, 0).filter_results
    assert [m.resource_name for m in result.matching_acls] == ["lit"]
    assert describe(1) == [("pre", PatternType.PREFIXED)]
