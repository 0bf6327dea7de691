"""The deprecated AlterConfigs (API 33) on the wire, every version: a resource's whole set of overrides replaces
the stored one; the preprocessing checks and the broker's refusal of dynamic broker configs, in Kafka's words."""
from __future__ import annotations

import pytest

from kafkalab.cluster.cluster import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, request_class

from ._admin_support import wire

CreateTopics = request_class(ApiKey.CREATE_TOPICS)
AlterConfigs = request_class(ApiKey.ALTER_CONFIGS)
ApiVersions = request_class(ApiKey.API_VERSIONS)
Resource, Config = AlterConfigs.AlterConfigsResource, AlterConfigs.AlterableConfig
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": False}) as c:
        yield c


@pytest.fixture(scope="module")
def broker(cluster):
    return cluster.broker(0)


def create(broker, name, **configs):
    body = CreateTopics(topics=(CreateTopics.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(),
        configs=tuple(CreateTopics.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                      for k, v in configs.items())),), timeout_ms=5000, validate_only=False)
    assert wire(broker, body, 7).topics[0].error_code == 0


def alter(broker, *resources, version=2, validate_only=False):
    body = AlterConfigs(resources=resources, validate_only=validate_only)
    return [(r.error_code, r.error_message) for r in wire(broker, body, version).responses]


def topic(name, **configs):
    return Resource(resource_type=TOPIC, resource_name=name,
                    configs=tuple(Config(name=k.replace("_", "."), value=v) for k, v in configs.items()))


def test_advertised_as_kafka_3_9(broker):
    body = wire(broker, ApiVersions(client_software_name="admin-tests", client_software_version="1"), 3)
    assert {(k.min_version, k.max_version) for k in body.api_keys if k.api_key == ApiKey.ALTER_CONFIGS} == {(0, 2)}


def test_the_set_replaces_the_topic_overrides_every_version(cluster, broker):
    create(broker, "ac", retention_ms="60000")
    log = broker.log_manager.get_log("ac", 0)
    for v in (0, 1, 2):
        assert alter(broker, topic("ac", segment_ms=str(100000 + v)), version=v) == [(0, None)]
        assert cluster.call(broker.admin.topic_overrides, "ac") == {"segment.ms": str(100000 + v)}
        cluster.wait_until(lambda v=v: log.config.segment_ms == 100000 + v, 5)
    assert log.config.retention_ms == 7 * 24 * 3_600_000          # left out of the set: back to the default
    assert alter(broker, topic("ac", retention_ms="1000"), validate_only=True) == [(0, None)]
    assert cluster.call(broker.admin.topic_overrides, "ac") == {"segment.ms": "100002"}
    assert alter(broker, topic("ac")) == [(0, None)]               # the empty set: every override removed
    assert cluster.call(broker.admin.topic_overrides, "ac") == {}


def test_checks_and_refusals(broker):
    create(broker, "ac-checks")
    assert alter(
        broker,
        topic("ac-checks", retention_ms="1"), topic("ac-checks"),
        Resource(resource_type=TOPIC, resource_name="dup-keys", configs=(Config(name="retention.ms", value="1"),
                                                                         Config(name="retention.ms", value="2"))),
        topic("nulls", retention_ms=None, segment_ms=None),
        topic(""),
        topic("absent", retention_ms="1"),
        topic("ac-bad", segment_bytes="1"),
        Resource(resource_type=BROKER, resource_name="0", configs=(Config(name="num.io.threads", value="4"),
                                                                  Config(name="log.retention.ms", value="1"))),
        Resource(resource_type=BROKER, resource_name="7", configs=()),
        Resource(resource_type=BROKER, resource_name="zero", configs=()),
        Resource(resource_type=BROKER, resource_name="", configs=(Config(name="log.retention.ms", value="1"),)),
        topic("ac-unknown", no_such="1"),
        Resource(resource_type=BROKER_LOGGER, resource_name="0", configs=())) == [
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms"),
        (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'absent' does not exist."),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ac-bad' does not exist."),
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.ms, num.io.threads)"),
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 7"),
        (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: zero"),
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.ms)"),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ac-unknown' does not exist."),
        (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")]
    assert alter(broker, topic("ac-checks", segment_bytes="1"), topic("ac-checks2", retention_ms="1")) == [
        (ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=TOPIC, name='ac-checks'): "
                                   "Invalid value 1 for configuration segment.bytes: Value must be at least 14"),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ac-checks2' does not exist.")]
    assert alter(broker, topic("ac-checks", no_such="1")) == [
        (ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such")]
    # the empty set is what a broker with no dynamic configs can accept (kafka-configs.sh sends it for nothing)
    assert alter(broker, Resource(resource_type=BROKER, resource_name="0", configs=())) == [(0, None)]


@pytest.fixture(scope="module")
def guarded():
    """A broker with an authorizer: ACLs on ``secret`` and on the cluster (none of them ALTER_CONFIGS for the
    anonymous user), ``open`` unprotected (``allow.everyone.if.no.acl.found``)."""
    from kafkalab.security.acl import AclOperation as Op, ResourceType

    from .test_authorization import add_acl
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                        "allow.everyone.if.no.acl.found": "true",
                                        "auto.create.topics.enable": "false"}) as c:
        c.create_topic("secret")
        c.create_topic("open")
        add_acl(c, ResourceType.TOPIC, "secret", "User:alice", Op.ALL)
        add_acl(c, ResourceType.CLUSTER, "kafka-cluster", "User:ANONYMOUS", Op.ALTER, Op.CLUSTER_ACTION, Op.DESCRIBE)
        yield c


def test_alter_configs_needs_alter_configs_on_the_topic_or_the_cluster(guarded):
    broker = guarded.broker(0)
    assert alter(broker, topic("secret", retention_ms="1000"), topic("open", retention_ms="1000"),
                 Resource(resource_type=BROKER, resource_name="0", configs=())) == [
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None),
        (0, None),
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)]
    assert guarded.call(broker.admin.topic_overrides, "secret") == {}
