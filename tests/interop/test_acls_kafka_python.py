"""kafka-python's KafkaAdminClient manages ACLs on kafkalab (CreateAcls, DescribeAcls, DeleteAcls at its versions)."""
from __future__ import annotations

import pytest

from kafkalab import Cluster

kafka_admin = pytest.importorskip("kafka.admin")


def test_create_describe_delete_acls():
    A = kafka_admin
    overrides = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}
    with Cluster(brokers=1, overrides=overrides) as c:
        admin = A.KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=5000)
        try:
            acl = A.ACL("User:alice", "*", A.ACLOperation.READ, A.ACLPermissionType.ALLOW,
                        A.ResourcePattern(A.ResourceType.TOPIC, "orders-", A.ACLResourcePatternType.PREFIXED))
            assert admin.create_acls([acl])["failed"] == []
            every = A.ACLFilter(None, None, A.ACLOperation.ANY, A.ACLPermissionType.ANY, A.ResourcePatternFilter(
                A.ResourceType.ANY, None, A.ACLResourcePatternType.ANY))
            found, error = admin.describe_acls(every)
            assert [(a.principal, a.operation, a.resource_pattern.pattern_type) for a in found] == [
                ("User:alice", A.ACLOperation.READ, A.ACLResourcePatternType.PREFIXED)]
            [(_, deleted, _)] = admin.delete_acls([every])
            assert [a.principal for a in deleted] == ["User:alice"]
            assert admin.describe_acls(every)[0] == []
        finally:
            admin.close()
