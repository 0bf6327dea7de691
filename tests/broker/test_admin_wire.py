"""The admin APIs on the wire, every advertised version: what no installed client sends (CreateTopics v0-2/v5/v6,
DeleteTopics v0-2/v5, DescribeConfigs v0, DescribeCluster v0/v1, DescribeLogDirs v0-v3 ...) and the checks clients never trigger
(null config values, name *and* id, a bad cursor, duplicate resources)."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.cluster.cluster import Cluster

from ._admin_support import wire

CreateTopics = request_class(ApiKey.CREATE_TOPICS)
DeleteTopics = request_class(ApiKey.DELETE_TOPICS)
CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
DescribeConfigs = request_class(ApiKey.DESCRIBE_CONFIGS)
IncrementalAlterConfigs = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
DescribeCluster = request_class(ApiKey.DESCRIBE_CLUSTER)
DescribeTopicPartitions = request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
DescribeLogDirs = request_class(ApiKey.DESCRIBE_LOG_DIRS)
ApiVersions = request_class(ApiKey.API_VERSIONS)

ZERO_UUID = uuid.UUID(int=0)
ADVERTISED = {ApiKey.CREATE_TOPICS: (0, 7), ApiKey.DELETE_TOPICS: (0, 6), ApiKey.CREATE_PARTITIONS: (0, 3),
              ApiKey.DESCRIBE_CONFIGS: (0, 4), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
              ApiKey.DESCRIBE_CLUSTER: (0, 1), ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
              ApiKey.DESCRIBE_LOG_DIRS: (0, 4)}     # Kafka 3.9's (the default kafkalab.api.version.floors)
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": False}) as c:
        yield c


@pytest.fixture(scope="module")
def broker(cluster):
    return cluster.broker(0)


def versions(api_key):
    lo, hi = ADVERTISED[api_key]
    return range(lo, hi + 1)


def new_topic(name, partitions=1, rf=1, assignments=(), configs=()):
    return CreateTopics.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                                       assignments=assignments, configs=configs)


def create(broker, *topics, version=7, timeout_ms=5000, validate_only=False):
    return wire(broker, CreateTopics(topics=topics, timeout_ms=timeout_ms, validate_only=validate_only), version).topics


def test_api_versions_advertise_exactly_the_implemented_ranges(broker):
    body = wire(broker, ApiVersions(client_software_name="admin-tests", client_software_version="1"), 3)
    advertised = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert {k: advertised.get(int(k)) for k in ADVERTISED} == ADVERTISED


# ---------------------------------------------------------------------------------------------- topics

def test_create_topics_every_version(cluster, broker):
    for v in versions(ApiKey.CREATE_TOPICS):
        (t,) = create(broker, new_topic(f"ct-v{v}"), version=v)
        assert (t.name, t.error_code, t.error_message) == (f"ct-v{v}", 0, None if v >= 1 else ""), v
        if v == 0:   # no validate_only before v1: a v0 request always creates
            assert create(broker, new_topic("ct-v0"), version=0)[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        if v >= 5:
            assert (t.num_partitions, t.replication_factor, len(t.configs)) == (1, 1, 36)
            source = {c.name: c.config_source for c in t.configs}
            assert source["retention.ms"] == 5 and not any(c.read_only or c.is_sensitive for c in t.configs)
        else:
            assert (t.num_partitions, t.configs) == (-1, ())          # not on the wire before v5
        assert t.topic_id == (cluster.call(broker.metadata_cache.topic_id, t.name) if v >= 7 else ZERO_UUID)
        assert cluster.call(broker.metadata_cache.partition_state, t.name, 0).leader == 0


def test_create_topics_without_timeout_answers_request_timed_out(cluster, broker):
    (t,) = create(broker, new_topic("no-wait", 2), version=5, timeout_ms=0)
    # Kafka's answer to "create, don't wait": accepted but unconfirmed -- and so no counts or configs
    assert (t.error_code, t.num_partitions, t.replication_factor, t.configs) == \
        (ErrorCode.REQUEST_TIMED_OUT, -1, -1, ())
    cluster.wait_until(lambda: [p.leader for p in broker.metadata_cache.partitions("no-wait")] == [0, 0], 5)
    (t,) = create(broker, new_topic("dry", 2), version=5, timeout_ms=0, validate_only=True)
    assert (t.error_code, t.num_partitions) == (0, 2)                  # validate_only never times out


def test_create_topics_request_checks(cluster, broker):
    create(broker, new_topic("dotted.name"))
    results = create(broker,
                     new_topic("__cluster_metadata"),
                     new_topic("both", 1, 1, assignments=(CreateTopics.CreatableReplicaAssignment(
                         partition_index=0, broker_ids=(0,)),)),
                     new_topic("null-config", configs=(CreateTopics.CreatableTopicConfig(name="retention.ms",
                                                                                         value=None),)),
                     new_topic("dotted_name"),
                     new_topic("holes", -1, -1, assignments=tuple(
                         CreateTopics.CreatableReplicaAssignment(partition_index=p, broker_ids=(0,)) for p in (0, 2))),
                     new_topic("uneven", -1, -1, assignments=(
                         CreateTopics.CreatableReplicaAssignment(partition_index=0, broker_ids=(0,)),
                         CreateTopics.CreatableReplicaAssignment(partition_index=1, broker_ids=()))),
                     new_topic("x" * 250),
                     new_topic("..", 1, 1))
    assert [(t.error_code, t.error_message) for t in results] == [
        (ErrorCode.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
        (ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set. Both "
                                    "cannot be used at the same time."),
        (ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: retention.ms"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'dotted_name' collides with existing topics: dotted.name"),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be longer than 249 characters, topic "
                                            f"name: {'x' * 250}"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')]
    assert all(t.num_partitions == -1 and t.configs == () for t in results)


def test_delete_topics_every_version(cluster, broker):
    names = [f"dt-v{v}" for v in versions(ApiKey.DELETE_TOPICS)]
    assert all(t.error_code == 0 for t in create(broker, *(new_topic(n) for n in names)))
    for v, name in zip(versions(ApiKey.DELETE_TOPICS), names):
        if v >= 6:  # by id
            topic_id = cluster.call(broker.metadata_cache.topic_id, name)
            body = DeleteTopics(topics=(DeleteTopics.DeleteTopicState(name=None, topic_id=topic_id),), timeout_ms=5000)
            expected = [(name, topic_id, 0)]
        else:
            body = DeleteTopics(topic_names=(name,), timeout_ms=5000)
            expected = [(name, ZERO_UUID, 0)]
        got = wire(broker, body, v).responses
        assert [(r.name, r.topic_id, r.error_code) for r in got] == expected, v
        assert not cluster.call(broker.metadata_cache.contains_topic, name)
    # v6: a name and an id in one entry is a malformed request: every entry gets INVALID_REQUEST
    body = DeleteTopics(topics=(DeleteTopics.DeleteTopicState(name="a", topic_id=uuid.uuid4()),
                                DeleteTopics.DeleteTopicState(name="b")), timeout_ms=5000)
    assert [(r.name, r.error_code) for r in wire(broker, body, 6).responses] == [
        ("a", ErrorCode.INVALID_REQUEST), ("b", ErrorCode.INVALID_REQUEST)]


def test_create_partitions_every_version(cluster, broker):
    create(broker, new_topic("cp"))
    for count, v in enumerate(versions(ApiKey.CREATE_PARTITIONS), start=2):
        body = CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name="cp", count=count,
                                                                               assignments=None),), timeout_ms=5000)
        assert [(r.name, r.error_code, r.error_message) for r in wire(broker, body, v).results] == [("cp", 0, None)]
        assert cluster.call(broker.metadata_cache.partition_count, "cp") == count
    body = CreatePartitions(topics=(
        CreatePartitions.CreatePartitionsTopic(name="cp", count=9, assignments=()),
        CreatePartitions.CreatePartitionsTopic(name="twice", count=2, assignments=None),
        CreatePartitions.CreatePartitionsTopic(name="twice", count=3, assignments=None)), timeout_ms=5000)
    assert [(r.name, r.error_code, r.error_message) for r in wire(broker, body, 3).results] == [
        ("cp", ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Increasing the number of partitions by 4 but 0 assignments "
                                                     "provided."),
        ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]
    body = CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name="cp", count=6, assignments=None),),
                            timeout_ms=0)
    assert [r.error_code for r in wire(broker, body, 3).results] == [ErrorCode.REQUEST_TIMED_OUT]
    cluster.wait_until(lambda: broker.metadata_cache.partition_count("cp") == 6, 5)


def answered_while_others_wait(broker, body, version: int) -> tuple:
    """Send ``body`` and, while the broker works on it, ApiVersions on other connections: returns the response and
    the slowest ApiVersions answer in seconds."""
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(body=wire(broker, body, version, timeout=300)))
    worker.start()
    slowest = 0.0
    while worker.is_alive():
        start = time.monotonic()
        wire(broker, ApiVersions(client_software_name="probe", client_software_version="1"), 3, timeout=300)
        slowest = max(slowest, time.monotonic() - start)
        time.sleep(0.05)
    worker.join()
    return result["body"], slowest


def test_a_topic_named_50000_times_is_refused_without_freezing_the_broker(broker):
    """Finding of the extreme-values fuzz test: each entry was checked for duplicates by counting its name in the
    whole list, so 50,000 entries held the event loop for about 50,000^2 string comparisons."""
    topics = (new_topic("dup", 1, 1),) * 50_000
    body, slowest = answered_while_others_wait(broker, CreateTopics(topics=topics, timeout_ms=5000), 7)
    assert len(body.topics) == 50_000
    assert {(t.name, t.error_code, t.error_message) for t in body.topics} == {
        ("dup", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.")}
    assert slowest < 2.0, f"another connection waited {slowest:.1f} s"
    moves = tuple(CreatePartitions.CreatePartitionsTopic(name=f"missing-{i}", count=2, assignments=None)
                  for i in range(50_000))
    body, slowest = answered_while_others_wait(broker, CreatePartitions(topics=moves, timeout_ms=5000), 3)
    assert [(r.name, r.error_code) for r in body.results] == [
        (f"missing-{i}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for i in range(50_000)]
    assert slowest < 2.0, f"another connection waited {slowest:.1f} s"


# ---------------------------------------------------------------------------------------------- configs

def test_describe_configs_every_version(broker):
    create(broker, new_topic("dc", configs=(CreateTopics.CreatableTopicConfig(name="segment.ms", value="60000"),)))
    for v in versions(ApiKey.DESCRIBE_CONFIGS):
        body = DescribeConfigs(resources=(DescribeConfigs.DescribeConfigsResource(
            resource_type=TOPIC, resource_name="dc", configuration_keys=("segment.ms", "cleanup.policy")),),
            include_synonyms=v >= 1, include_documentation=v >= 3)
        (result,) = wire(broker, body, v).results
        assert (result.error_code, result.resource_type, result.resource_name) == (0, TOPIC, "dc")
        seg, policy = result.configs
        if v == 0:   # no source and no synonyms yet; is_default, which a Kafka 3.9 broker never sets
            assert [(c.name, c.value, c.config_source, c.is_default, c.synonyms) for c in result.configs] == [
                ("segment.ms", "60000", -1, False, ()), ("cleanup.policy", "delete", -1, False, ())]
            continue
        assert (seg.name, seg.value, seg.config_source, policy.name, policy.value, policy.config_source) == \
            ("segment.ms", "60000", 1, "cleanup.policy", "delete", 5)
        assert [(s.name, s.value, s.source) for s in seg.synonyms] == [
            ("segment.ms", "60000", 1), ("log.roll.hours", "168", 5)]
        if v >= 3:
            assert (seg.config_type, policy.config_type) == (5, 7)     # LONG, LIST
            assert seg.documentation and policy.documentation
        else:
            assert seg.config_type == 0 and not seg.documentation      # not on the wire before v3


def test_describe_configs_resource_checks(broker):
    resources = [(BROKER, ""), (BROKER, "zero"), (BROKER, "3"), (BROKER_LOGGER, "0"), (TOPIC, "no such topic"),
                 (TOPIC, "absent"), (BROKER, "0")]
    body = DescribeConfigs(resources=tuple(DescribeConfigs.DescribeConfigsResource(
        resource_type=t, resource_name=n, configuration_keys=None) for t, n in resources), include_synonyms=True)
    results = wire(broker, body, 4).results
    assert [(r.error_code, r.error_message) for r in results[:6]] == [
        (0, None),                                               # the (empty) cluster-wide dynamic defaults
        (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: zero"),
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 3"),
        (ErrorCode.INVALID_REQUEST, "Unsupported resource type: BROKER_LOGGER"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name "no such topic" is illegal, it contains a character other '
                                            "than ASCII alphanumerics, '.', '_' and '-'"),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)]
    assert results[0].configs == ()
    own = {c.name: c for c in results[6].configs}
    assert own["broker.id"].value == "0" and own["broker.id"].config_source == 4 and own["broker.id"].config_type == 3
    roll = own["log.roll.ms"]     # unset: no value, and its synonym log.roll.hours comes after it, so none listed
    assert (roll.value, roll.config_source, roll.synonyms) == (None, 5, ())
    hours = own["log.roll.hours"]
    assert [(s.name, s.value, s.source) for s in hours.synonyms] == [("log.roll.hours", "168", 5)]


def test_incremental_alter_configs_every_version_and_checks(cluster, broker):
    create(broker, new_topic("iac"))
    Resource, Config = IncrementalAlterConfigs.AlterConfigsResource, IncrementalAlterConfigs.AlterableConfig
    for v in versions(ApiKey.INCREMENTAL_ALTER_CONFIGS):
        body = IncrementalAlterConfigs(resources=(Resource(resource_type=TOPIC, resource_name="iac", configs=(
            Config(name="retention.ms", config_operation=0, value=str(1000 + v)),)),))
        assert [(r.error_code, r.resource_name) for r in wire(broker, body, v).responses] == [(0, "iac")]
        cluster.wait_until(lambda v=v: broker.log_manager.get_log("iac", 0).config.retention_ms == 1000 + v, 5)
    body = IncrementalAlterConfigs(resources=(
        Resource(resource_type=TOPIC, resource_name="iac", configs=(Config(name="retention.ms", config_operation=0,
                                                                           value=None),)),
        Resource(resource_type=TOPIC, resource_name="iac", configs=()),
        Resource(resource_type=TOPIC, resource_name="other", configs=(
            Config(name="retention.ms", config_operation=0, value="1"),
            Config(name="retention.ms", config_operation=1, value=None))),
        Resource(resource_type=TOPIC, resource_name="null", configs=(Config(name="retention.ms", config_operation=0,
                                                                            value=None),)),
        Resource(resource_type=TOPIC, resource_name="", configs=()),
        Resource(resource_type=TOPIC, resource_name="iac2", configs=(Config(name="retention.ms", config_operation=9,
                                                                            value="1"),)),
        Resource(resource_type=BROKER, resource_name="3", configs=()),
        Resource(resource_type=BROKER, resource_name="0", configs=(Config(name="log.retention.ms",
                                                                          config_operation=1, value=None),)),
        Resource(resource_type=BROKER_LOGGER, resource_name="0", configs=()),
        Resource(resource_type=7, resource_name="0", configs=())))
    assert [(r.error_code, r.error_message) for r in wire(broker, body, 1).responses] == [
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        (ErrorCode.INVALID_REQUEST, "Unknown operations type 9"),
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 3"),
        (0, None),                                                # deleting a dynamic config nobody set
        (ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, but resource type is "
                                    "BROKER_LOGGER"),
        (ErrorCode.INVALID_REQUEST, "Unknown resource type 7")]
    assert broker.log_manager.get_log("iac", 0).config.retention_ms == 1001


# ---------------------------------------------------------------------------------------------- cluster views

def test_describe_cluster_every_version(broker):
    ep = broker.bound_endpoints[0]
    for v in versions(ApiKey.DESCRIBE_CLUSTER):
        body = wire(broker, DescribeCluster(include_cluster_authorized_operations=False,
                                            include_fenced_brokers=v >= 2), v)
        assert (body.error_code, body.cluster_id, body.controller_id) == (0, broker.cluster_id, 0)
        assert [(b.broker_id, b.host, b.port, b.rack, b.is_fenced) for b in body.brokers] == \
            [(0, ep.host, ep.port, None, False)]
        assert body.cluster_authorized_operations == -2147483648      # not asked for
    for endpoint_type, code, message in (
            (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
             "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
            (0, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 0"),
            (9, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 9")):
        body = wire(broker, DescribeCluster(endpoint_type=endpoint_type), 1)
        assert (body.error_code, body.error_message, body.brokers) == (code, message, ())


def test_describe_topic_partitions_on_the_wire(broker):
    create(broker, new_topic("dtp-1", 2), new_topic("dtp-2", 1))
    body = wire(broker, DescribeTopicPartitions(topics=(), response_partition_limit=1000), 0)
    names = [t.name for t in body.topics]
    assert names == sorted(names) and {"dtp-1", "dtp-2"} <= set(names) and body.next_cursor is None
    t = next(t for t in body.topics if t.name == "dtp-1")
    p = t.partitions[0]
    # ELR lists are empty arrays, not null, as KRaft Kafka sends them with ELR disabled
    assert (p.eligible_leader_replicas, p.last_known_elr, t.is_internal, t.topic_authorized_operations) == \
        ((), (), False, 3576)
    # a limit of 0 still returns one partition
    body = wire(broker, DescribeTopicPartitions(topics=(DescribeTopicPartitions.TopicRequest(name="dtp-1"),),
                                                response_partition_limit=0), 0)
    assert [len(t.partitions) for t in body.topics] == [1]
    assert (body.next_cursor.topic_name, body.next_cursor.partition_index) == ("dtp-1", 1)
    for cursor in (DescribeTopicPartitions.Cursor(topic_name="dtp-2", partition_index=0),
                   DescribeTopicPartitions.Cursor(topic_name="dtp-1", partition_index=-1)):
        body = wire(broker, DescribeTopicPartitions(topics=(DescribeTopicPartitions.TopicRequest(name="dtp-1"),),
                                                    cursor=cursor), 0)
        assert [(t.name, t.error_code) for t in body.topics] == [("dtp-1", ErrorCode.INVALID_REQUEST)]


def test_describe_log_dirs_every_version(cluster, broker):
    create(broker, new_topic("dld", 2))
    for v in versions(ApiKey.DESCRIBE_LOG_DIRS):
        wanted = (DescribeLogDirs.DescribableLogDirTopic(topic="dld", partitions=(1, 7)),)
        body = wire(broker, DescribeLogDirs(topics=wanted), v)
        (result,) = body.results
        assert (body.error_code, result.error_code) == (0, 0)
        assert [(t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                          for p in t.partitions]) for t in result.topics] == [("dld", [(1, 0, 0, False)])]
        if v >= 4:
            assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        else:
            assert (result.total_bytes, result.usable_bytes) == (-1, -1)   # not on the wire before v4
    everything = wire(broker, DescribeLogDirs(topics=None), 4).results[0].topics
    assert "dld" in {t.name for t in everything}
    assert wire(broker, DescribeLogDirs(topics=()), 4).results[0].topics == ()
