"""Kafka's znode JSON formats: round trips, and the examples in Kafka's own tests and docs.

Sources of the expected strings: ``core/src/test/scala/unit/kafka/cluster/BrokerEndPointTest.scala`` (broker
registrations v1-v5), ``core/src/test/scala/unit/kafka/zk/KafkaZkClientTest.scala`` (ISR change and config change
notifications, sequence names), ``docs/implementation.html`` (partition state key order) and ``ZkData.scala``.
"""
import json

import pytest

from kafkalab.zk import paths as P
from kafkalab.zk.paths import (BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, LeaderRecoveryState,
                               ProducerIdsBlock, ReplicaAssignment, TopicPartition, ZNodeDecodeError)


def test_paths():
    assert P.broker_id_path(0) == "/brokers/ids/0"
    assert P.topic_partition_state_path("orders", 3) == "/brokers/topics/orders/partitions/3/state"
    assert P.config_entity_path(P.ConfigType.TOPIC, "orders") == "/config/topics/orders"
    assert P.config_entity_path(P.ConfigType.BROKER, P.DEFAULT_ENTITY) == "/config/brokers/<default>"
    assert P.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert P.isr_change_notification_path() == "/isr_change_notification/isr_change_"
    assert P.sequence_number("isr_change_0000000042", P.ISR_CHANGE_PREFIX) == "0000000042"
    assert "/config/topics" in P.PERSISTENT_ZK_PATHS and "/latest_producer_id_block" in P.PERSISTENT_ZK_PATHS


# -- /brokers/ids -------------------------------------------------------------------------------------------------
def test_broker_info_v5_encoding():
    info = BrokerInfo(0, (EndPoint("127.0.0.1", 9092, "PLAINTEXT", "PLAINTEXT"),
                          EndPoint("127.0.0.1", 9093, "REPLICATION", "SSL")), rack="dc1",
                      features={"metadata.version": {"min_version": 1, "max_version": 20}})
    doc = json.loads(P.encode_broker_info(info, 1700000000000))
    assert doc == {"version": 5, "host": "127.0.0.1", "port": 9092, "jmx_port": -1, "timestamp": "1700000000000",
                   "endpoints": ["PLAINTEXT://127.0.0.1:9092", "REPLICATION://127.0.0.1:9093"], "rack": "dc1",
                   "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "REPLICATION": "SSL"},
                   "features": {"metadata.version": {"min_version": 1, "max_version": 20}}}
    back = P.decode_broker_info(0, P.encode_broker_info(info, 1700000000000))
    assert back.endpoints == info.endpoints and back.rack == "dc1" and back.timestamp == "1700000000000"
    assert back.features == info.features and back.version == 5


def test_broker_info_without_plaintext_has_null_host_and_port_minus_one():
    info = BrokerInfo(2, (EndPoint("h", 9093, "SSL", "SSL"),), version=4)
    doc = json.loads(P.encode_broker_info(info, 1))
    assert doc["host"] is None and doc["port"] == -1 and "features" not in doc and "rack" not in doc


@pytest.mark.parametrize("version,json_text,listener,host,port,rack", [
    (1, '{"jmx_port":-1,"timestamp":"1420485325400","host":"172.16.8.243","version":1,"port":9091}',
     "PLAINTEXT", "172.16.8.243", 9091, None),
    (2, '{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1416974968782",'
        '"endpoints":["PLAINTEXT://localhost:9092"]}', "PLAINTEXT", "localhost", 9092, None),
    (3, '{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        '"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],"rack":"dc1"}', "SSL", "host1", 9093, "dc1"),
    (4, '{"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        '"endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],'
        '"listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},"rack":null}',
     "CLIENT", "host1", 9092, None),
    (5, '{"version":5,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        '"endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],'
        '"listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},"rack":"dc1",'
        '"features": {"feature1": {"min_version": 1, "max_version": 2}, '
        '"feature2": {"min_version": 2, "max_version": 4}}}', "CLIENT", "host1", 9092, "dc1"),
    (100, '{"foo":"bar","version":100,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1416974968782",'
          '"endpoints":["SSL://localhost:9093"]}', "SSL", "localhost", 9093, None),
])
def test_broker_info_decodes_kafkas_examples(version, json_text, listener, host, port, rack):
    info = P.decode_broker_info(1, json_text.encode())
    ep = next(e for e in info.endpoints if e.listener_name == listener)
    assert (info.id, info.version, ep.host, ep.port, info.rack) == (1, version, host, port, rack)
    if version == 4:
        assert ep.security_protocol == "SSL"
    if version == 5:
        assert info.features["feature2"] == {"min_version": 2, "max_version": 4}


def test_endpoint_connection_strings():
    assert EndPoint("::1", 9092, "PLAINTEXT", "PLAINTEXT").connection_string == "PLAINTEXT://[::1]:9092"
    assert EndPoint.parse("PLAINTEXT://[::1]:9092").host == "::1"
    assert EndPoint.parse("INTERNAL://:9094", {"INTERNAL": "SASL_PLAINTEXT"}) == \
        EndPoint(None, 9094, "INTERNAL", "SASL_PLAINTEXT")
    with pytest.raises(ZNodeDecodeError):
        EndPoint.parse("no-scheme:9092")


# -- controller ---------------------------------------------------------------------------------------------------
def test_controller_znodes():
    assert P.encode_controller(0, 1700000000000) == \
        b'{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    reg = P.decode_controller(b'{"version":1,"brokerid":101,"timestamp":"1614570663255"}', zk_version=0)
    assert (reg.broker_id, reg.kraft_controller_epoch, reg.timestamp) == (101, None, "1614570663255")
    assert P.encode_controller_epoch(7) == b"7" and P.decode_controller_epoch(b"7") == 7
    with pytest.raises(ZNodeDecodeError):
        P.decode_controller_epoch(b"seven")


# -- topics and partition states -----------------------------------------------------------------------------------
def test_topic_assignment_v3():
    data = P.encode_topic_assignment("AAAAAAAAAAAAAAAAAAAAAQ", {1: [1, 0], 0: [0, 1]})
    assert data == (b'{"version":3,"partitions":{"0":[0,1],"1":[1,0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",'
                    b'"adding_replicas":{},"removing_replicas":{}}')
    moving = {0: ReplicaAssignment((0, 1, 2), adding_replicas=(2,), removing_replicas=(0,))}
    back = P.decode_topic_assignment("t", P.encode_topic_assignment(None, moving))
    assert back.topic_id is None and back.assignment == moving
    old = P.decode_topic_assignment("t", b'{"version":1,"partitions":{"1":[101,103],"0":[103,102]}}')
    assert list(old.assignment) == [0, 1] and old.assignment[1].replicas == (101, 103)
    with pytest.raises(ZNodeDecodeError, match="topic_id"):
        P.decode_topic_assignment("t", b'{"version":3,"partitions":{},"topic_id":"short"}')


def test_random_uuids_are_kafka_style():
    ids = {P.random_uuid() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and P.validate_uuid(i) == i for i in ids)


def test_partition_state_in_the_key_order_of_kafkas_docs():
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), controller_epoch=1)
    assert P.encode_partition_state(state) == \
        b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
    back = P.decode_partition_state(P.encode_partition_state(state), zk_version=5)
    assert back.leader_and_isr == LeaderAndIsr(0, 0, (0,), partition_epoch=5) and back.controller_epoch == 1


def test_partition_state_recovering_round_trip():  # TopicPartitionStateZNodeTest
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 6, (1,), LeaderRecoveryState.RECOVERING, 5), 10)
    data = P.encode_partition_state(state)
    assert json.loads(data)["leader_recovery_state"] == 1
    assert P.decode_partition_state(data, 5) == state
    with pytest.raises(ZNodeDecodeError, match="isr"):
        P.decode_partition_state(b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":"0"}')


def test_leader_and_isr_helpers():
    lai = LeaderAndIsr(0, 3, (0, 1), partition_epoch=7)
    assert lai.new_leader_and_isr(1, [1]) == LeaderAndIsr(1, 4, (1,), partition_epoch=7)
    assert lai.with_partition_epoch(8).partition_epoch == 8 and LeaderAndIsr.NO_LEADER == -1


# -- config, notifications, cluster id, producer ids ----------------------------------------------------------------
def test_entity_config():
    data = P.encode_entity_config({"retention.ms": 1000, "cleanup.policy": "compact"})
    assert data == b'{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}'
    assert P.decode_entity_config(data) == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert P.decode_entity_config(b'{"version":1,"config":{}}') == {} and P.decode_entity_config(None) == {}


def test_config_change_notification():
    # KafkaZkClientTest.testCreateConfigChangeNotification passes a full path as the (opaque) entity path
    assert P.encode_config_change_notification("/config/topics/topic1") == \
        b'{"version":2,"entity_path":"/config/topics/topic1"}'
    assert P.decode_config_change_notification(b'{"version":2,"entity_path":"topics/orders"}') == "topics/orders"
    assert P.decode_config_change_notification(
        b'{"version":1,"entity_type":"topics","entity_name":"orders"}') == "topics/orders"


def test_isr_change_notification_matches_kafka():
    tps = [TopicPartition("topic-a", 0), TopicPartition("topic-b", 0)]
    data = P.encode_isr_change_notification(tps)
    assert data == b'{"version":1,"partitions":[{"topic":"topic-a","partition":0},{"topic":"topic-b","partition":0}]}'
    assert P.decode_isr_change_notification(data) == tps
    assert P.decode_preferred_replica_election(P.encode_preferred_replica_election(tps)) == tps
    with pytest.raises(ZNodeDecodeError, match=r"partitions\[0\]"):
        P.decode_isr_change_notification(b'{"version":1,"partitions":[3]}')


def test_cluster_id_and_producer_id_block():
    assert P.encode_cluster_id("7p2OzMvhT1qh5GsAtlzY5A") == b'{"version":"1","id":"7p2OzMvhT1qh5GsAtlzY5A"}'
    assert P.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"
    block = ProducerIdsBlock(0, 0, 1000)
    assert P.encode_producer_id_block(block) == b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
    assert P.decode_producer_id_block(P.encode_producer_id_block(block)) == block
    assert (block.last_producer_id, block.next_block_first_id) == (999, 1000)


@pytest.mark.parametrize("data", [b"", b"not json", b"[1]", b'{"version":"5"}', b"\xff"])
def test_bad_bytes_raise_one_typed_error(data):
    with pytest.raises(ZNodeDecodeError) as e:
        P.decode_broker_info(0, data)
    assert isinstance(e.value, ValueError) and "BrokerIdZNode" in str(e.value)
