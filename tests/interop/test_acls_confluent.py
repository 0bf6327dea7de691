"""ACLs with real clients (confluent-kafka / librdkafka, kcat) as User:ANONYMOUS on PLAINTEXT: refused without
WRITE, allowed after confluent's ``AdminClient.create_acls`` or ``kafkalab acls --add``, refused again by a DENY."""
from __future__ import annotations

import subprocess

import pytest

from kafkalab import Cluster
from kafkalab.cli import main

from ._broker_support import require_kcat

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,  # noqa: E402
                                   AdminClient, ResourcePatternType, ResourceType)

OVERRIDES = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
             # the cluster resource has no ACL: the broker's own controller (User:ANONYMOUS) keeps working
             "allow.everyone.if.no.acl.found": "true", "auto.create.topics.enable": "false"}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=OVERRIDES) as c:
        for t in ("guarded-a", "guarded-b", "guarded-kcat"):
            c.create_topic(t)
        yield c


def produce_error(cluster, topic: str):
    """The delivery error code of one record (None when delivered)."""
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 4000,
                            "socket.timeout.ms": 4000})
    errors = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert len(errors) == 1
    return None if errors[0] is None else errors[0].code()


def test_write_acl_lifecycle_with_a_real_producer(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # alice owns both topics: for everyone else they now have ACLs and none of them match.
    owner = [AclBinding(ResourceType.TOPIC, t, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALL,
                        AclPermissionType.ALLOW) for t in ("guarded-a", "guarded-b")]
    for f in admin.create_acls(owner).values():
        f.result(10)
    assert produce_error(cluster, "guarded-a") == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED

    allow = AclBinding(ResourceType.TOPIC, "guarded-a", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                       AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([allow])[allow].result(10)
    assert produce_error(cluster, "guarded-a") is None

    assert produce_error(cluster, "guarded-b") == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert main(["acls", "--bootstrap-server", cluster.bootstrap_servers, "--add", "--allow-principal",
                 "User:ANONYMOUS", "--operation", "Write", "--topic", "guarded-b"]) == 0
    assert produce_error(cluster, "guarded-b") is None

    assert main(["acls", "--bootstrap-server", cluster.bootstrap_servers, "--add", "--deny-principal",
                 "User:ANONYMOUS", "--operation", "Write", "--topic", "guarded-a"]) == 0
    assert produce_error(cluster, "guarded-a") == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED

    described = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, "guarded-a", ResourcePatternType.LITERAL,
                                                     None, None, AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert {(b.principal, b.operation, b.permission_type) for b in described} == {
        ("User:alice", AclOperation.ALL, AclPermissionType.ALLOW),
        ("User:ANONYMOUS", AclOperation.WRITE, AclPermissionType.ALLOW),
        ("User:ANONYMOUS", AclOperation.WRITE, AclPermissionType.DENY)}


def test_kcat_is_refused_then_allowed(cluster):
    kcat = require_kcat()

    def produce():
        return subprocess.run([kcat, "-b", cluster.bootstrap_servers, "-P", "-t", "guarded-kcat", "-X",
                               "message.timeout.ms=4000"], input=b"hello\n", capture_output=True, timeout=30)
    assert main(["acls", "--bootstrap-server", cluster.bootstrap_servers, "--add", "--allow-principal",
                 "User:alice", "--topic", "guarded-kcat"]) == 0
    refused = produce()
    assert refused.returncode != 0 and b"Topic authorization failed" in refused.stderr
    assert main(["acls", "--bootstrap-server", cluster.bootstrap_servers, "--add", "--allow-principal",
                 "User:ANONYMOUS", "--operation", "Write", "--topic", "guarded-kcat"]) == 0
    assert produce().returncode == 0
