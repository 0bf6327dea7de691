"""Illegal names in requests: answered with Kafka's error for the name, never UNKNOWN_SERVER_ERROR.

A topic name Kafka's ``Topic.validate`` rejects (a NUL byte, a trailing newline, ...) cannot exist. Requests that
create or configure a topic answer INVALID_TOPIC_EXCEPTION with ``Topic.validate``'s message; requests that only
look a topic up answer UNKNOWN_TOPIC_OR_PARTITION, as for any other topic that does not exist. A NUL byte is not
even a legal ZooKeeper path, so no lookup may reach the coordination store with it.
"""
from __future__ import annotations

import logging

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.protocol.api_keys import messages_for
from kafkalab.records import build_batch
from kafkalab.server.admin_manager import validate_topic_name
from kafkalab.server.apis import enabled_apis

from ._raw_wire import Conn

NUL_NAME = "bad\x00name"
NEWLINE_NAME = "bad-name\n"
ILLEGAL_NAMES = [NUL_NAME, NEWLINE_NAME]
BROKER_ONLY = {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
               ApiKey.API_VERSIONS}
NAME_ENTITIES = {"topicName", "groupId", "transactionalId"}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:       # auto.create.topics.enable=true (Kafka's default)
        c.create_topic("good", 1)
        yield c


@pytest.fixture
def conn(cluster):
    with Conn(cluster.broker(0).bound_endpoints[0].port) as c:
        yield c


@pytest.fixture(autouse=True)
def no_unexpected_errors(caplog):
    with caplog.at_level(logging.ERROR, logger="kafkalab"):
        yield
    unexpected = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not unexpected, unexpected


def error_codes(obj, path: str = "") -> list[tuple[str, int]]:
    """Every non-zero ``error_code`` of a response body, with its path."""
    out = []
    for attr in getattr(obj, "_fields", ()):
        value = getattr(obj, attr)
        if attr == "error_code" and value:
            out.append((path + attr, value))
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                out += error_codes(item, f"{path}{attr}[{i}].")
        elif hasattr(type(value), "SCHEMA"):
            out += error_codes(value, f"{path}{attr}.")
    return out


def request_naming(api_key: int, version: int, name: str):
    """A request of ``api_key`` whose every topic, group and transactional id (and config resource) is ``name``;
    every array of structs holds one element, everything else is at its default (a Produce asks acks=1 so
    that it is answered)."""
    schema, _ = messages_for(api_key)

    def build(cls, fields):
        kw = {}
        for f in fields:
            if not f.present_in(version):
                continue
            if f.is_struct:
                value = build(schema.struct_class(f), schema.struct_fields(f))
                kw[f.attr] = (value,) if f.is_array else value
            elif f.element_type == "string" and (f.entity in NAME_ENTITIES or f.attr in ("name", "resource_name")):
                kw[f.attr] = (name,) if f.is_array else name
            elif f.attr == "resource_type":
                kw[f.attr] = 2                                  # TOPIC
            elif f.attr == "acks":
                kw[f.attr] = 1
            elif f.attr in ("num_partitions", "replication_factor", "count"):
                kw[f.attr] = 1
        return cls(**kw)

    return build(schema.body_class, schema.fields)


def client_apis():
    for key, (lo, hi) in sorted(enabled_apis().items()):
        if key not in BROKER_ONLY:
            schema, _ = messages_for(key)
            for version in sorted({max(lo, schema.valid_versions.lo), hi}):
                yield pytest.param(key, version, id=f"{ApiKey(key).name}-v{version}")


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=["nul", "newline"])
@pytest.mark.parametrize("api_key,version", list(client_apis()))
def test_no_request_with_an_illegal_name_is_an_unknown_server_error(conn, api_key, version, name):
    response = conn.call(request_naming(api_key, version, name), version, 7)
    codes = error_codes(response)
    assert (ErrorCode.UNKNOWN_SERVER_ERROR not in {c for _, c in codes}), codes


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=["nul", "newline"])
def test_validate_rejects_the_whole_name(name):
    with pytest.raises(Exception) as info:
        validate_topic_name(name)
    assert info.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "contains a character other than ASCII alphanumerics" in str(info.value)


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=["nul", "newline"])
def test_create_and_auto_create_answer_invalid_topic(conn, cluster, name):
    CreateTopics = request_class(ApiKey.CREATE_TOPICS)
    created = conn.call(CreateTopics(topics=(CreateTopics.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1),), timeout_ms=5000), 7)
    assert created.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "is illegal" in created.topics[0].error_message
    Metadata = request_class(ApiKey.METADATA)
    md = conn.call(Metadata(topics=(Metadata.MetadataRequestTopic(name=name),), allow_auto_topic_creation=True), 12)
    assert md.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert not cluster.broker(0).metadata_cache.contains_topic(name)


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=["nul", "newline"])
def test_configuring_an_illegal_name_is_invalid_topic(conn, name):
    Alter = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    altered = conn.call(Alter(resources=(Alter.AlterConfigsResource(resource_type=2, resource_name=name, configs=(
        Alter.AlterableConfig(name="retention.ms", config_operation=0, value="1000"),)),)), 1)
    assert altered.responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    Describe = request_class(ApiKey.DESCRIBE_CONFIGS)
    described = conn.call(Describe(resources=(Describe.DescribeConfigsResource(resource_type=2, resource_name=name),)), 4)
    assert described.results[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=["nul", "newline"])
def test_looking_up_an_illegal_name_is_unknown_topic(conn, name):
    CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
    grown = conn.call(CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name=name, count=2),),
                                       timeout_ms=5000), 3)
    assert grown.results[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    DeleteTopics = request_class(ApiKey.DELETE_TOPICS)
    deleted = conn.call(DeleteTopics(topic_names=(name,), timeout_ms=5000), 5)
    assert deleted.responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    Produce = request_class(ApiKey.PRODUCE)
    produced = conn.call(Produce(acks=1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=name, partition_data=(Produce.PartitionProduceData(index=0, records=build_batch([(b"k", b"v", [], 1)])),)),)),
        9)
    assert produced.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
