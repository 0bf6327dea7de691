"""The admin APIs of the broker, driven by real admin clients against an in-process cluster.

CreateTopics, DeleteTopics, CreatePartitions (:mod:`kafkalab.server.apis.topics`), DescribeConfigs and
IncrementalAlterConfigs (:mod:`kafkalab.server.apis.configs`), DescribeCluster, DescribeTopicPartitions and
DescribeLogDirs (:mod:`kafkalab.server.apis.cluster`). Each client negotiates its own versions (confluent-kafka:
CreateTopics v4, DescribeConfigs v1; kafka-python: CreateTopics v7, DeleteTopics v6, DescribeConfigs v4;
aiokafka: the non-flexible v3/v1/v2); the raw-wire tests at the end send every advertised version.
"""
from __future__ import annotations

import asyncio
import shutil
import time
import uuid
import warnings

import pytest

from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.cluster.cluster import Cluster
from kafkalab.controller import EVENTS

from ._admin_support import ApiSpy, confluent_results, describe_results, log_dir, partition_dirs, wire

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,  # noqa: E402
                                   ConfigSource, NewPartitions, NewTopic, ResourceType)
from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType as KType  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic as KNewTopic  # noqa: E402

pytestmark = pytest.mark.interop

T = 5          # seconds: every client call is bounded by this
T_MS = T * 1000
OVERRIDES = {
    "num.partitions": 2,                    # what -1 partitions resolves to
    "broker.rack": "rack-a",
    "auto.create.topics.enable": False,     # a Metadata request must never create what a test just deleted
    "log.retention.hours": 48,              # a server.properties value: source STATIC_BROKER_CONFIG
    "ssl.key.password": "hush",             # not a kafkalab config: described as sensitive, value hidden
    "log.initial.task.delay.ms": 0,         # the log manager's background tasks start at once ...
    "log.segment.delete.delay.ms": 1000,    # ... and remove a deleted partition's directory 1 s after renaming it
}


# ---------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=OVERRIDES) as c:
        yield c


@pytest.fixture(scope="module")
def broker(cluster):
    return cluster.broker(0)


@pytest.fixture(scope="module")
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "socket.timeout.ms": T_MS})


@pytest.fixture(scope="module")
def kadmin(cluster):
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=T_MS)
    yield client
    client.close()


@pytest.fixture
def spy(monkeypatch):
    return ApiSpy(monkeypatch)


def create(admin, *topics, **options):
    options.setdefault("operation_timeout", T)
    return confluent_results(admin.create_topics(list(topics), request_timeout=T, **options))


def leaders(cluster, topic: str, broker_id: int = 0) -> list[int]:
    return cluster.call(lambda: [p.leader for p in cluster.broker(broker_id).metadata_cache.partitions(topic)])


def produce(cluster, topic: str, count: int, size: int = 100, flush_each: bool = False) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "message.timeout.ms": T_MS})
    for i in range(count):
        p.produce(topic, key=f"k{i}".encode(), value=b"v" * size, partition=0)
        if flush_each:
            assert p.flush(T) == 0
    assert p.flush(T) == 0


def the_log(cluster, topic: str, partition: int = 0):
    return cluster.call(lambda: cluster.broker(0).log_manager.get_log(topic, partition))


def describe_topic(admin, topic: str) -> dict:
    return describe_results(admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)], request_timeout=T))[topic]


def alter_topic(admin, topic: str, *ops, validate_only: bool = False):
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, op, value in ops]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    result = confluent_results(admin.incremental_alter_configs([resource], request_timeout=T,
                                                              validate_only=validate_only))
    return result[topic]


# ---------------------------------------------------------------------------------------------- CreateTopics

def test_create_topics_waits_for_leaders_and_creates_logs(cluster, broker, admin, spy):
    assert create(admin, NewTopic("orders", 3, 1, config={"retention.ms": "3600000"})) == {"orders": None}
    # operation_timeout > 0: the answer came only once this broker's metadata cache showed every leader
    assert leaders(cluster, "orders") == [0, 0, 0]
    assert partition_dirs(broker, "orders") == ["orders-0", "orders-1", "orders-2"]
    assert list_topics(admin)["orders"] == 3
    entry = describe_topic(admin, "orders")["retention.ms"]
    assert (entry.value, entry.source) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert spy.versions("CreateTopics") == {4}


def list_topics(admin) -> dict:
    return {name: len(t.partitions) for name, t in admin.list_topics(timeout=T).topics.items()}


def test_create_topics_defaults_and_manual_assignment(cluster, admin):
    assert create(admin, NewTopic("defaults"), NewTopic("manual", 2, replica_assignment=[[0], [0]])) == \
        {"defaults": None, "manual": None}
    assert len(leaders(cluster, "defaults")) == 2        # -1 partitions -> num.partitions
    assert leaders(cluster, "manual") == [0, 0]


def test_create_topics_validate_only_writes_nothing(cluster, broker, admin):
    assert create(admin, NewTopic("dry-run", 4, 1), validate_only=True) == {"dry-run": None}
    assert create(admin, NewTopic("dry-bad", 1, 1, config={"segment.bytes": "10"}), validate_only=True) == {
        "dry-bad": (ErrorCode.INVALID_CONFIG, "Invalid value 10 for configuration segment.bytes: Value must be at "
                                              "least 14")}
    assert not cluster.call(broker.zk.topic_exists, "dry-run")
    assert "dry-run" not in list_topics(admin) and partition_dirs(broker, "dry-run") == []


def test_create_topics_errors(cluster, admin, kadmin):
    create(admin, NewTopic("taken", 1, 1))
    results = create(admin, NewTopic("taken", 1, 1), NewTopic("too-many-replicas", 1, 2),
                     NewTopic("bad name!", 1, 1), NewTopic("bad-config", 1, 1, config={"no.such.config": "1"}),
                     NewTopic("bad-policy", 1, 1, config={"cleanup.policy": "archive"}),
                     NewTopic("tiered", 1, 1, config={"remote.storage.enable": "true"}),
                     NewTopic("unknown-broker", 2, replica_assignment=[[0], [7]]),
                     NewTopic("twice-on-one-broker", 1, replica_assignment=[[0, 0]]))
    assert {name: r[0] for name, r in results.items()} == {
        "taken": ErrorCode.TOPIC_ALREADY_EXISTS,                       # 36
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,     # 38
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,                # 17
        "bad-config": ErrorCode.INVALID_CONFIG,                        # 40
        "bad-policy": ErrorCode.INVALID_CONFIG,
        "tiered": ErrorCode.INVALID_CONFIG,                            # Kafka's, not implemented by kafkalab
        "unknown-broker": ErrorCode.INVALID_REPLICA_ASSIGNMENT,        # 39
        "twice-on-one-broker": ErrorCode.INVALID_REPLICA_ASSIGNMENT}
    assert results["taken"][1] == "Topic 'taken' already exists."
    assert results["too-many-replicas"][1] == "Replication factor: 2 larger than available brokers: 1."
    assert results["bad-config"][1] == "Unknown topic config name: no.such.config"
    assert results["tiered"][1] == ("remote.storage.enable=true is not implemented by kafkalab: only the default of "
                                    "remote.storage.enable is accepted")
    assert results["bad-policy"][1] == ("Invalid value archive for configuration cleanup.policy: String must be one "
                                        "of: compact, delete")
    # kafka-python sends what librdkafka refuses to: zero partitions, and one name twice in a request
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # a list of NewTopic objects is deprecated
        response = kadmin.create_topics([KNewTopic("zero", 0, 1), KNewTopic("dup", 1, 1), KNewTopic("dup", 1, 1)],
                                        timeout_ms=T_MS, raise_errors=False)
    got = [(t["name"], t["error_code"], t["error_message"]) for t in response["topics"]]
    assert got == [("zero", ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
                   ("dup", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."),
                   ("dup", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.")]
    assert "dup" not in list_topics(admin)


def test_create_topics_v7_reports_what_the_topic_got(cluster, broker, kadmin, spy):
    response = kadmin.create_topics({"kp-created": {"num_partitions": 2, "replication_factor": 1,
                                                    "configs": {"cleanup.policy": "compact"}}}, timeout_ms=T_MS)
    assert spy.versions("CreateTopics") == {7}
    (topic,) = response["topics"]
    assert (topic["error_code"], topic["num_partitions"], topic["replication_factor"]) == (0, 2, 1)
    assert str(topic["topic_id"]) == str(cluster.call(broker.metadata_cache.topic_id, "kp-created"))
    configs = topic["configs"]
    assert (configs["cleanup.policy"]["value"], configs["cleanup.policy"]["config_source"]) == \
        ("compact", "DYNAMIC_TOPIC_CONFIG")
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["config_source"]) == \
        (str(48 * 3_600_000), "STATIC_BROKER_CONFIG")              # from log.retention.hours=48
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert len(configs) == 36 and not any(c["read_only"] or c["is_sensitive"] for c in configs.values())


def test_create_topics_with_aiokafka(cluster, spy):
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic as ANewTopic

    async def run():
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=T_MS)
        await client.start()
        try:
            ok = await client.create_topics([ANewTopic("aio-topic", 2, 1)], timeout_ms=T_MS)
            again = await client.create_topics([ANewTopic("aio-topic", 2, 1)], timeout_ms=T_MS)
            return ok, again
        finally:
            await client.close()

    ok, again = asyncio.run(asyncio.wait_for(run(), 3 * T))
    assert ok.topic_errors == [("aio-topic", 0, None)]
    assert again.topic_errors == [("aio-topic", ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'aio-topic' already exists.")]
    assert leaders(cluster, "aio-topic") == [0, 0]
    assert spy.versions("CreateTopics") == {3}


# ---------------------------------------------------------------------------------------------- DeleteTopics

def test_delete_topics_removes_metadata_and_files(cluster, broker, admin, spy):
    create(admin, NewTopic("doomed", 2, 1))
    produce(cluster, "doomed", 5)
    assert partition_dirs(broker, "doomed") == ["doomed-0", "doomed-1"]
    assert confluent_results(admin.delete_topics(["doomed"], operation_timeout=T, request_timeout=T)) == \
        {"doomed": None}
    # answered once this broker's metadata cache dropped the topic
    assert not cluster.call(broker.metadata_cache.contains_topic, "doomed")
    assert "doomed" not in list_topics(admin)
    assert not cluster.call(broker.zk.topic_exists, "doomed")
    # on disk: renamed <topic>-<p>.<id>-delete at once, removed log.segment.delete.delay.ms later
    renamed = partition_dirs(broker, "doomed")
    assert len(renamed) == 2 and all(d.startswith(("doomed-0.", "doomed-1.")) and d.endswith("-delete")
                                     for d in renamed)
    cluster.wait_until(lambda: partition_dirs(broker, "doomed") == [], 5, "deleted partitions still on disk")
    assert spy.versions("DeleteTopics") == {4}


def test_delete_unknown_topic(admin):
    assert confluent_results(admin.delete_topics(["never-was"], operation_timeout=T, request_timeout=T)) == \
        {"never-was": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Broker: Unknown topic or partition")}


def test_delete_topics_by_id_with_kafka_python(cluster, broker, admin, kadmin, spy):
    create(admin, NewTopic("by-id", 1, 1))
    topic_id = cluster.call(broker.metadata_cache.topic_id, "by-id")
    response = kadmin.delete_topics([topic_id], timeout_ms=T_MS)
    assert response["topics"] == [{"name": "by-id", "topic_id": str(topic_id), "error_code": 0, "error_message": None}]
    assert "by-id" not in list_topics(admin)
    unknown = uuid.uuid4()
    response = kadmin.delete_topics([unknown, "also-never-was"], timeout_ms=T_MS, raise_errors=False)
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        (None, ErrorCode.UNKNOWN_TOPIC_ID), ("also-never-was", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert spy.versions("DeleteTopics") == {6}


def test_delete_topics_with_aiokafka(cluster, admin, spy):
    from aiokafka.admin import AIOKafkaAdminClient

    create(admin, NewTopic("aio-doomed", 1, 1))

    async def run():
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=T_MS)
        await client.start()
        try:
            return await client.delete_topics(["aio-doomed", "aio-never-was"], timeout_ms=T_MS)
        finally:
            await client.close()

    response = asyncio.run(asyncio.wait_for(run(), 3 * T))
    assert response.topic_error_codes == [("aio-doomed", 0), ("aio-never-was", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert "aio-doomed" not in list_topics(admin)
    assert spy.versions("DeleteTopics") == {3}


def test_delete_topics_disabled():
    with Cluster(overrides={"delete.topic.enable": False}) as c:
        c.create_topic("kept")
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        result = confluent_results(admin.delete_topics(["kept"], operation_timeout=T, request_timeout=T))
        assert result["kept"][0] == ErrorCode.TOPIC_DELETION_DISABLED          # 73
        DeleteTopics = request_class(ApiKey.DELETE_TOPICS)
        for version, code in ((1, ErrorCode.INVALID_REQUEST), (2, ErrorCode.INVALID_REQUEST),
                              (3, ErrorCode.TOPIC_DELETION_DISABLED)):
            body = wire(c.broker(0), DeleteTopics(topic_names=("kept",), timeout_ms=1000), version)
            assert [(r.name, r.error_code) for r in body.responses] == [("kept", code)]
        assert c.call(c.broker(0).metadata_cache.contains_topic, "kept")


# ---------------------------------------------------------------------------------------------- CreatePartitions

def test_create_partitions(cluster, admin, spy):
    create(admin, NewTopic("growing", 1, 1))
    opts = {"operation_timeout": T, "request_timeout": T}
    assert confluent_results(admin.create_partitions([NewPartitions("growing", 3)], **opts)) == {"growing": None}
    assert leaders(cluster, "growing") == [0, 0, 0]          # waited for the new partitions' leaders
    assert confluent_results(admin.create_partitions([NewPartitions("growing", 5)], validate_only=True, **opts)) == \
        {"growing": None}
    assert list_topics(admin)["growing"] == 3
    assert confluent_results(admin.create_partitions([NewPartitions("growing", 4, replica_assignment=[[0]])],
                                                     **opts)) == {"growing": None}
    assert leaders(cluster, "growing") == [0, 0, 0, 0]
    results = confluent_results(admin.create_partitions(
        [NewPartitions("growing", 2), NewPartitions("missing", 2)], **opts))
    assert results == {"growing": (ErrorCode.INVALID_PARTITIONS,
                                   "Topic currently has 4 partitions, which is higher than the requested 2."),
                       "missing": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist.")}
    assert confluent_results(admin.create_partitions([NewPartitions("growing", 4)], **opts)) == \
        {"growing": (ErrorCode.INVALID_PARTITIONS, "Topic already has 4 partitions.")}
    assert confluent_results(admin.create_partitions([NewPartitions("growing", 5, replica_assignment=[[7]])],
                                                     **opts)) == \
        {"growing": (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 7.")}
    assert spy.versions("CreatePartitions") == {2}


def test_create_partitions_with_kafka_python_and_aiokafka(cluster, admin, kadmin, spy):
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions as ANewPartitions

    create(admin, NewTopic("grow-py", 1, 1))
    response = kadmin.create_partitions({"grow-py": 2}, timeout_ms=T_MS)
    assert [(r.name, r.error_code) for r in response.results] == [("grow-py", 0)]
    response = kadmin.create_partitions({"grow-py": {"count": 4, "assignments": [[0], [0, 0]]}}, timeout_ms=T_MS,
                                        raise_errors=False)
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Duplicate brokers not allowed in replica assignment: 0, 0 for "
                                               "partition id 3.")]

    async def run():
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=T_MS)
        await client.start()
        try:
            return await client.create_partitions({"grow-py": ANewPartitions(3)}, timeout_ms=T_MS)
        finally:
            await client.close()

    assert asyncio.run(asyncio.wait_for(run(), 3 * T)).topic_errors == [("grow-py", 0, None)]
    assert leaders(cluster, "grow-py") == [0, 0, 0]
    assert spy.versions("CreatePartitions") == {3, 1}


# ---------------------------------------------------------------------------------------------- configs

def test_describe_topic_configs_sources_and_synonyms(admin, kadmin, spy):
    create(admin, NewTopic("described", 1, 1, config={"segment.bytes": "1048576"}))
    configs = describe_topic(admin, "described")
    assert len(configs) == 36
    seg = configs["segment.bytes"]
    assert (seg.value, seg.source, seg.is_read_only, seg.is_sensitive) == \
        ("1048576", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False, False)
    assert [(s.name, s.value, s.source) for s in seg.synonyms.values()] == [
        ("segment.bytes", "1048576", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG.value)]
    ret = configs["retention.ms"]  # log.retention.hours=48 in server.properties; Kafka's default is 168
    assert (ret.value, ret.source) == (str(48 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG.value)
    assert list(ret.synonyms) == ["log.retention.hours"]   # confluent keeps one synonym per name ...
    assert configs["compression.type"].source == ConfigSource.DEFAULT_CONFIG.value
    # ... kafka-python (v4) shows them all, and filters by configuration_keys, and knows the config types
    result = kadmin.describe_configs([KConfigResource(KType.TOPIC, "described", {"retention.ms": None,
                                                                                 "cleanup.policy": None})],
                                     include_synonyms=True, config_filter="all")
    entries = result["topic"]["described"]
    assert set(entries) == {"retention.ms", "cleanup.policy"}
    assert [(s["name"], s["value"], s["source"]) for s in entries["retention.ms"]["synonyms"]] == [
        ("log.retention.hours", "48", "STATIC_BROKER_CONFIG"), ("log.retention.hours", "168", "DEFAULT_CONFIG")]
    assert (entries["retention.ms"]["config_type"], entries["cleanup.policy"]["config_type"]) == ("LONG", "LIST")
    assert spy.versions("DescribeConfigs") == {1, 4}


def test_describe_configs_of_an_unknown_topic(admin):
    future = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "nobody-home")], request_timeout=T)
    assert confluent_results(future) == {"nobody-home": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                         "Broker: Unknown topic or partition")}


def test_describe_broker_configs(cluster, broker, admin):
    configs = describe_results(admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")],
                                                      request_timeout=T))["0"]
    log_dirs = configs["log.dirs"]
    assert (log_dirs.value, log_dirs.source) == (str(cluster.base_dir / "broker-0"),
                                                 ConfigSource.STATIC_BROKER_CONFIG.value)
    io = configs["num.io.threads"]
    assert (io.value, io.source, io.is_read_only) == ("8", ConfigSource.DEFAULT_CONFIG.value, True)
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.source) == ("48", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert configs["log.retention.ms"].value is None     # unset: log.retention.hours decides
    secret = configs["ssl.key.password"]
    assert (secret.value, secret.is_sensitive) == (None, True)
    assert all(entry.is_read_only for entry in configs.values())   # kafkalab applies no dynamic broker config


def test_incremental_alter_configs_reach_the_log(cluster, admin, spy):
    create(admin, NewTopic("tuned", 1, 1))
    log = the_log(cluster, "tuned")
    assert log.config.segment_size == 1073741824 and log.config.retention_ms == 48 * 3_600_000
    produce(cluster, "tuned", 3, flush_each=True)
    assert log.number_of_segments == 1
    # segment.bytes: the next appends roll the log
    assert alter_topic(admin, "tuned", ("segment.bytes", AlterConfigOpType.SET, "1000")) is None
    cluster.wait_until(lambda: log.config.segment_size == 1000, 5, "segment.bytes did not reach the log")
    produce(cluster, "tuned", 6, size=300, flush_each=True)
    assert log.number_of_segments >= 4
    # retention.ms: visible in the log and in DescribeConfigs, as a topic override
    assert alter_topic(admin, "tuned", ("retention.ms", AlterConfigOpType.SET, "3600000")) is None
    cluster.wait_until(lambda: log.config.retention_ms == 3600000, 5, "retention.ms did not reach the log")
    entry = describe_topic(admin, "tuned")["retention.ms"]
    assert (entry.value, entry.source) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    # cleanup.policy is a list: APPEND and SUBTRACT
    assert alter_topic(admin, "tuned", ("cleanup.policy", AlterConfigOpType.APPEND, "compact")) is None
    cluster.wait_until(lambda: log.config["cleanup.policy"] == ["delete", "compact"], 5)
    assert log.config.compact and log.config.delete
    assert alter_topic(admin, "tuned", ("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete")) is None
    cluster.wait_until(lambda: log.config["cleanup.policy"] == ["compact"], 5)
    assert describe_topic(admin, "tuned")["cleanup.policy"].value == "compact"
    # DELETE: back to the broker's value
    assert alter_topic(admin, "tuned", ("retention.ms", AlterConfigOpType.DELETE, None)) is None
    cluster.wait_until(lambda: log.config.retention_ms == 48 * 3_600_000, 5)
    assert describe_topic(admin, "tuned")["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    # validate_only changes nothing
    assert alter_topic(admin, "tuned", ("retention.ms", AlterConfigOpType.SET, "1"), validate_only=True) is None
    assert describe_topic(admin, "tuned")["retention.ms"].value == str(48 * 3_600_000)
    assert spy.versions("IncrementalAlterConfigs") == {1}


def test_incremental_alter_configs_errors(admin):
    create(admin, NewTopic("strict", 1, 1))
    assert alter_topic(admin, "strict", ("segment.bytes", AlterConfigOpType.SET, "1")) == (
        ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=TOPIC, name='strict'): "
                                  "Invalid value 1 for configuration segment.bytes: Value must be at least 14")
    assert alter_topic(admin, "strict", ("retention.ms", AlterConfigOpType.APPEND, "1")) == (
        ErrorCode.INVALID_CONFIG, "Config value append is not allowed for config key: retention.ms")
    assert alter_topic(admin, "strict", ("no.such.config", AlterConfigOpType.SET, "1")) == (
        ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.config")
    assert alter_topic(admin, "strict", ("preallocate", AlterConfigOpType.SET, "true")) == (   # as unknown names
        ErrorCode.INVALID_CONFIG, "preallocate=true is not implemented by kafkalab: only the default of preallocate "
                                  "is accepted")
    assert alter_topic(admin, "not-there", ("retention.ms", AlterConfigOpType.SET, "1")) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'not-there' does not exist.")
    # broker configs: kafkalab cannot apply them to a running broker, so it refuses them as Kafka refuses
    # read-only ones
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("num.io.threads", "4", incremental_operation=AlterConfigOpType.SET)])
    assert confluent_results(admin.incremental_alter_configs([resource], request_timeout=T)) == {"0": (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.ms, num.io.threads)")}


# ---------------------------------------------------------------------------------------------- cluster views

def test_describe_cluster(cluster, broker, admin, kadmin, spy):
    described = kadmin.describe_cluster()
    port = broker.bound_endpoints[0].port
    assert described["cluster_id"] == broker.cluster_id
    assert described["controller_id"] == 0
    # DescribeCluster v1, Kafka 3.9's highest: no is_fenced yet (v2, Kafka 4.0's)
    assert described["brokers"] == [{"broker_id": 0, "host": "127.0.0.1", "port": port, "rack": "rack-a"}]
    assert set(described["authorized_operations"]) == {"CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
                                                       "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
    assert spy.versions("DescribeCluster") == {1}
    # librdkafka answers describe_cluster from Metadata: the same facts
    result = admin.describe_cluster(request_timeout=T).result()
    assert (result.cluster_id, result.controller.id, [(n.id, n.rack) for n in result.nodes]) == \
        (broker.cluster_id, 0, [(0, "rack-a")])


def test_describe_topic_partitions_pages_with_a_cursor(admin, kadmin, spy):
    create(admin, NewTopic("page-b", 2, 1), NewTopic("page-a", 3, 1))
    wanted = ["page-b", "page-missing", "page-a"]
    first = kadmin.describe_topic_partitions(wanted, response_partition_limit=2)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in first["topics"]] == \
        [("page-a", [0, 1])]
    assert first["next_cursor"] == {"topic_name": "page-a", "partition_index": 2}
    second = kadmin.describe_topic_partitions(wanted, response_partition_limit=2, cursor=first["next_cursor"])
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in second["topics"]] == \
        [("page-a", [2]), ("page-b", [0])]
    assert second["next_cursor"] == {"topic_name": "page-b", "partition_index": 1}
    last = kadmin.describe_topic_partitions(wanted, response_partition_limit=2, cursor=second["next_cursor"])
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in last["topics"]] == \
        [("page-b", 0, 1), ("page-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
    assert last["next_cursor"] is None
    p = second["topics"][0]["partitions"][0]
    assert (p["leader_id"], p["leader_epoch"], p["replica_nodes"], p["isr_nodes"], p["offline_replicas"]) == \
        (0, 0, [0], [0], [])
    assert p["eligible_leader_replicas"] is None and p["last_known_elr"] is None   # empty lists (see raw test)
    assert spy.versions("DescribeTopicPartitions") == {0}


def test_describe_log_dirs(cluster, broker, admin, kadmin, spy):
    create(admin, NewTopic("stored", 2, 1))
    produce(cluster, "stored", 5)
    (result,) = kadmin.describe_log_dirs(topic_partitions={"stored": [0, 1]})
    (d,) = result["log_dirs"]
    assert result["broker"] == 0 and d["error_code"] == 0 and d["log_dir"] == str(log_dir(broker))
    size = cluster.call(lambda: broker.log_manager.get_log("stored", 0).size_in_bytes)
    assert size > 500
    assert d["topics"] == [{"name": "stored", "partitions": [
        {"partition_index": 0, "partition_size": size, "offset_lag": 0, "is_future_key": False},
        {"partition_index": 1, "partition_size": 0, "offset_lag": 0, "is_future_key": False}]}]
    assert d["total_bytes"] == shutil.disk_usage(log_dir(broker)).total and d["usable_bytes"] > 0
    everything = kadmin.describe_log_dirs()[0]["log_dirs"][0]["topics"]      # a null topic list: all of them
    assert "stored" in {t["name"] for t in everything} and len(everything) > 1
    assert spy.versions("DescribeLogDirs") == {4}


# ---------------------------------------------------------------------------------------------- timeouts, controller

def test_slow_controller_gives_request_timed_out_without_blocking_handlers(monkeypatch):
    """With the controller's reactions switched off nothing completes: each request waits its timeout and answers
    REQUEST_TIMED_OUT -- while the broker's single request handler keeps serving others."""
    async def ignored(*args):
        return None

    with Cluster(overrides={"num.io.threads": 1}) as c:
        c.create_topic("existing")
        c.create_topic("growing")
        for event in ("topic_change", "topic_deletion", "partition_modifications"):   # rows of the event table
            monkeypatch.setitem(EVENTS, event, EVENTS[event]._replace(handler=ignored))
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        started = time.monotonic()
        pending = admin.create_topics([NewTopic("stuck", 1, 1)], operation_timeout=1.5, request_timeout=T)
        time.sleep(0.2)
        # Another connection is served meanwhile (the waiting one is muted until its answer, as in Kafka).
        other = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        assert "existing" in other.list_topics(timeout=T).topics
        assert time.monotonic() - started < 1.2
        assert confluent_results(pending)["stuck"][0] == ErrorCode.REQUEST_TIMED_OUT
        assert time.monotonic() - started >= 1.4
        assert c.call(c.broker(0).zk.topic_exists, "stuck")           # under way, just not confirmed
        deleted = admin.delete_topics(["existing"], operation_timeout=0.3, request_timeout=T)
        assert confluent_results(deleted)["existing"][0] == ErrorCode.REQUEST_TIMED_OUT
        assert c.call(c.broker(0).zk.is_topic_marked_for_deletion, "existing")
        grown = admin.create_partitions([NewPartitions("growing", 2), NewPartitions("existing", 2)],
                                        operation_timeout=0.3, request_timeout=T)
        assert confluent_results(grown) == {"growing": (ErrorCode.REQUEST_TIMED_OUT, "Broker: Request timed out"),
                                            "existing": (ErrorCode.INVALID_TOPIC_EXCEPTION,
                                                         "The topic is queued for deletion.")}


def test_three_brokers_only_the_controller_changes_topics():
    with Cluster(brokers=3) as c:
        controller = c.controller_id
        other = c.broker((controller + 1) % 3)
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        assert create(admin, NewTopic("replicated", 3, 3)) == {"replicated": None}
        assert sorted(leaders(c, "replicated", controller)) == [0, 1, 2]   # one leader per broker
        CreateTopics = request_class(ApiKey.CREATE_TOPICS)
        body = wire(other, CreateTopics(topics=(CreateTopics.CreatableTopic(name="elsewhere", num_partitions=1,
                                                                            replication_factor=1),),
                                        timeout_ms=1000), 7)
        assert [(t.name, t.error_code) for t in body.topics] == [("elsewhere", ErrorCode.NOT_CONTROLLER)]
        DeleteTopics = request_class(ApiKey.DELETE_TOPICS)
        body = wire(other, DeleteTopics(topics=(DeleteTopics.DeleteTopicState(name="replicated"),),
                                        timeout_ms=1000), 6)
        assert [r.error_code for r in body.responses] == [ErrorCode.NOT_CONTROLLER]
        CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
        body = wire(other, CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name="replicated",
                                                                                           count=4),),
                                            timeout_ms=1000), 3)
        assert [r.error_code for r in body.results] == [ErrorCode.NOT_CONTROLLER]
        # each broker describes itself only
        DescribeConfigs = request_class(ApiKey.DESCRIBE_CONFIGS)
        own = str(other.broker_id)
        body = wire(other, DescribeConfigs(resources=(
            DescribeConfigs.DescribeConfigsResource(resource_type=4, resource_name=own, configuration_keys=("broker.id",)),
            DescribeConfigs.DescribeConfigsResource(resource_type=4, resource_name=str(controller)))), 4)
        assert [(r.error_code, r.error_message) for r in body.results] == [
            (0, None), (ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {own} or empty string, but "
                                                   f"received {controller}")]
        assert [(e.name, e.value) for e in body.results[0].configs] == [("broker.id", own)]
        kadmin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=T_MS)
        try:
            per_broker = kadmin.describe_log_dirs(topic_partitions={"replicated": [0, 1, 2]})
        finally:
            kadmin.close()
        assert sorted(r["broker"] for r in per_broker) == [0, 1, 2]
        for r in per_broker:   # every broker holds a replica of each partition
            assert [p["partition_index"] for p in r["log_dirs"][0]["topics"][0]["partitions"]] == [0, 1, 2]
