"""Admin operations against kafkalab, Tansu and noida-db."""
import pytest

from kafkalab.clients import Admin, AdminError, ConfigResource, Producer, TopicPartition
from kafkalab.protocol import ErrorCode

from .conftest import unique


@pytest.fixture
def admin(broker):
    with Admin({"bootstrap.servers": broker.bootstrap_servers}, trace=True) as a:
        yield a


def test_create_describe_and_delete_topics(broker, admin):
    name = unique("adm")
    made = admin.create_topics([(name, 3, 1)])
    assert made[name]["num_partitions"] in (3, -1)
    desc = admin.describe_topics([name])[name]
    assert desc.partition_count == 3
    assert all(p.leader >= 0 and p.replicas for p in desc.partitions.values())
    with pytest.raises(AdminError) as e:
        admin.create_topics([(name, 1, 1)])
    assert e.value.errors[name].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert name in admin.list_topics()
    broker.lacks("delete_topics")
    assert admin.delete_topics([name]) == {name: None}
    with pytest.raises(AdminError) as e:
        admin.describe_topics([name])
    assert e.value.errors[name].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_validate_only_creates_nothing(broker, admin):
    broker.lacks("validate_only")
    name = unique("adm")
    admin.create_topics([(name, 2, 1)], validate_only=True)
    assert name not in admin.list_topics()


def test_create_partitions(broker, admin):
    broker.lacks("create_partitions")
    name = unique("adm")
    admin.create_topics([(name, 1, 1)])
    assert admin.create_partitions({name: 4}) == {name: None}
    assert admin.describe_topics([name])[name].partition_count == 4
    with pytest.raises(AdminError) as e:
        admin.create_partitions({name: 2})
    assert e.value.errors[name].error_code == ErrorCode.INVALID_PARTITIONS


def test_describe_cluster(broker, admin):
    d = admin.describe_cluster()
    assert d.brokers and d.controller_id in d.brokers
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    assert any(b["port"] == int(port) for b in d.brokers.values())


def test_describe_and_alter_topic_configs(broker, admin):
    broker.lacks("topic_configs")
    name = unique("adm")
    admin.create_topics([(name, 1, 1, {"retention.ms": "3600000"})])
    res = ConfigResource("topic", name)
    configs = admin.describe_configs([res])[res]
    assert configs["retention.ms"].value == "3600000"
    admin.incremental_alter_configs({res: {"retention.ms": "7200000"}})
    assert admin.describe_configs([res])[res]["retention.ms"].value == "7200000"


def test_describe_unknown_topic_config_fails_clearly(broker, admin):
    broker.lacks("unknown_topic_configs")
    res = ConfigResource("topic", unique("missing"))
    with pytest.raises(AdminError) as e:
        admin.describe_configs([res])
    assert e.value.errors[res].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_list_offsets_and_delete_records(broker, admin):
    name = unique("adm")
    admin.create_topics([(name, 1, 1)])
    tp = TopicPartition(name, 0)
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}) as p:
        for i in range(5):
            p.send(name, b"v%d" % i, partition=0, timestamp=1_700_000_000_000 + i * 1000)
    offsets = admin.list_offsets({tp: "earliest"})
    assert offsets[tp].offset == 0
    broker.lacks("high_watermark")
    assert admin.list_offsets({tp: "latest"})[tp].offset == 5
    broker.lacks("list_offsets_by_time")
    assert admin.list_offsets({tp: 1_700_000_002_500})[tp].offset == 3
    broker.lacks("delete_records")
    assert admin.delete_records({tp: 2}) == {tp: 2}
    assert admin.list_offsets({tp: "earliest"})[tp].offset == 2


def test_admin_trace_shows_the_controller_getting_create_topics(broker, admin):
    admin.trace.clear()
    admin.create_topics([unique("adm")])       # broker defaults for partitions and replication
    apis = [e.api_name for e in admin.trace]
    assert "Metadata" in apis and "CreateTopics" in apis


def test_consumer_group_operations(broker, admin):
    from kafkalab.clients import Consumer
    topic, group = unique("adm"), unique("g")
    admin.create_topics([(topic, 2, 1)])
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}) as p:
        for i in range(6):
            p.send(topic, b"v%d" % i, partition=i % 2)
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "session.timeout.ms": 6000,
                   "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                   "fetch.max.wait.ms": 100}) as c:
        c.subscribe([topic])
        got = []
        for _ in range(50):
            got += c.poll(0.2)
            if len(got) >= 6:
                break
        c.commit()
        assert group in [g.group_id for g in admin.list_consumer_groups()]
        desc = admin.describe_consumer_groups([group])[group]
        assert desc.state == "Stable" and desc.protocol_type == "consumer"
        assert len(desc.members) == 1
    offsets = admin.list_consumer_group_offsets(group)
    assert {tp: om.offset for tp, om in offsets.items()} == {t0: 3, t1: 3}
    assert admin.alter_consumer_group_offsets(group, {t0: 1}) == {t0: None}
    assert admin.list_consumer_group_offsets(group, [t0])[t0].offset == 1
    broker.lacks("offset_delete")
    assert admin.delete_consumer_group_offsets(group, [t1]) == {t1: None}
    assert t1 not in admin.list_consumer_group_offsets(group)
    assert admin.delete_consumer_groups([group]) == {group: None}
    assert group not in [g.group_id for g in admin.list_consumer_groups()]
    broker.lacks("describe_group_members")
    assert desc.partition_assignor == "range"
    assert sorted(desc.members[0].assignment) == [t0, t1] and desc.members[0].topics == [topic]


def test_create_topics_with_replicas_assignments():
    """NewTopic(name, replicas_assignments={...}) places each partition's replicas as given, the first one leading
    (Kafka's NewTopic(name, replicasAssignments)); counts together with an assignment are an INVALID_REQUEST."""
    from kafkalab import Cluster
    from kafkalab.clients import NewTopic

    with Cluster(brokers=2) as cluster, Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        made = admin.create_topics([NewTopic("placed", replicas_assignments={0: [1, 0], 1: [0, 1], 2: [1, 0]})])
        assert made["placed"]["num_partitions"] == 3 and made["placed"]["replication_factor"] == 2
        partitions = admin.describe_topics(["placed"])["placed"].partitions
        assert {p: (i.replicas, i.leader) for p, i in partitions.items()} == \
            {0: ((1, 0), 1), 1: ((0, 1), 0), 2: ((1, 0), 1)}
        with pytest.raises(AdminError) as e:
            admin.create_topics([NewTopic("both", 2, -1, {}, {0: [0], 1: [1]})])
        assert e.value.errors["both"].error_code == ErrorCode.INVALID_REQUEST
