"""The authorizer on the broker: configuration, ACLs in the coordination store, the ACL APIs, the course's story."""
import json
import logging

import pytest

from kafkalab.cluster import BrokerLog, Cluster
from kafkalab.common.config import ConfigException
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.records import build_batch
from kafkalab.security.acl import (ANY_FILTER, AccessControlEntry, AccessControlEntryFilter, AclBinding,
                                   AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern,
                                   ResourcePatternFilter, ResourceType)
from kafkalab.server.config import KafkaConfig

from ._admin_support import req, wire

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
OPEN = {"authorizer.class.name": ACL_AUTHORIZER, "super.users": "User:ANONYMOUS"}
CreateAcls, DescribeAcls, DeleteAcls = req(ApiKey.CREATE_ACLS), req(ApiKey.DESCRIBE_ACLS), req(ApiKey.DELETE_ACLS)
Metadata, Produce, Fetch = req(ApiKey.METADATA), req(ApiKey.PRODUCE), req(ApiKey.FETCH)


def creation(name, principal, op, perm=AclPermissionType.ALLOW, rtype=ResourceType.TOPIC,
             pattern=PatternType.LITERAL, host="*"):
    return CreateAcls.AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
                                  principal=principal, host=host, operation=op, permission_type=perm)


def describe_all(**kw):
    fields = dict(resource_type_filter=ResourceType.ANY, resource_name_filter=None, pattern_type_filter=PatternType.ANY,
                  principal_filter=None, host_filter=None, operation=AclOperation.ANY,
                  permission_type=AclPermissionType.ANY)
    fields.update(kw)
    return DescribeAcls(**fields)


@pytest.mark.parametrize("name", ["com.example.MyAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"])
def test_unknown_authorizer_class_refused_at_start_up(name):
    with pytest.raises(ConfigException, match=f"ClassNotFoundException: {name}"):
        KafkaConfig({"authorizer.class.name": name})
    for ok in ("", ACL_AUTHORIZER, "org.apache.kafka.metadata.authorizer.StandardAuthorizer"):
        assert KafkaConfig({"authorizer.class.name": ok})["authorizer.class.name"] == ok


def test_acl_apis_without_authorizer_say_security_disabled():
    with Cluster(brokers=1) as c:
        b = c.broker(0)
        assert wire(b, describe_all(), 3).error_code == ErrorCode.SECURITY_DISABLED
        r = wire(b, CreateAcls(creations=(creation("t", "User:a", AclOperation.READ),)), 3)
        assert r.results[0].error_code == ErrorCode.SECURITY_DISABLED


def test_create_describe_delete_over_the_wire_and_in_the_store():
    with Cluster(brokers=2, overrides=OPEN) as c:
        b0, b1 = c.broker(0), c.broker(1)
        r = wire(b0, CreateAcls(creations=(
            creation("orders", "User:alice", AclOperation.WRITE),
            creation("ord", "User:bob", AclOperation.READ, pattern=PatternType.PREFIXED),
            creation("x", "User:alice", AclOperation.READ, rtype=ResourceType.CLUSTER),
            creation("", "User:alice", AclOperation.READ))), 3)
        assert [(x.error_code, x.error_message) for x in r.results] == [
            (0, None), (0, None),
            (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (ErrorCode.INVALID_REQUEST, "Invalid empty resource name")]
        store = c.zk_store
        literal, _ = store.get("/kafka-acl/Topic/orders")
        assert json.loads(literal) == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
        assert store.get("/kafka-acl-extended/prefixed/Topic/ord")[0]
        changes = store.get_children("/kafka-acl-changes")
        assert [store.get(f"/kafka-acl-changes/{n}")[0] for n in changes] == [b"TOPIC:orders"]
        ext = store.get_children("/kafka-acl-extended-changes")
        assert json.loads(store.get(f"/kafka-acl-extended-changes/{ext[0]}")[0]) == {
            "version": 1, "resourceType": "TOPIC", "name": "ord", "patternType": "PREFIXED"}
        # Two brokers: the controller's requests and the follower's fetches pass as the super user User:ANONYMOUS.
        c.create_topic("replicated", 1, 2, timeout=10)
        leader = c.broker(b0.metadata_cache.leader_of("replicated", 0))
        body = Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
            name="replicated", partition_data=(Produce.PartitionProduceData(index=0, records=build_batch(
                [(b"k", b"v")])),)),))
        # acks=all is answered once the follower has fetched the record
        assert wire(leader, body, 9).responses[0].partition_responses[0].error_code == ErrorCode.NONE
        # The other broker learned them through the change notifications.
        c.wait_until(lambda: len(b1.authorizer.core.index) == 2, 5, "broker 1 did not see the ACLs")
        d = wire(b1, describe_all(resource_type_filter=ResourceType.TOPIC, resource_name_filter="orders-eu",
                                  pattern_type_filter=PatternType.MATCH), 3)
        assert d.error_code == 0
        assert [(x.resource_name, x.pattern_type, [a.principal for a in x.acls]) for x in d.resources] == [
            ("ord", PatternType.PREFIXED, ["User:bob"])]
        f = DeleteAcls.DeleteAclsFilter(resource_type_filter=ResourceType.TOPIC, resource_name_filter=None,
                                        pattern_type_filter=PatternType.ANY, principal_filter="User:alice",
                                        host_filter=None, operation=AclOperation.ANY,
                                        permission_type=AclPermissionType.ANY)
        r = wire(b1, DeleteAcls(filters=(f,)), 3)
        assert [m.resource_name for m in r.filter_results[0].matching_acls] == ["orders"]
        assert store.exists("/kafka-acl/Topic/orders") is None
        c.wait_until(lambda: len(b0.authorizer.core.index) == 1, 5, "broker 0 did not see the deletion")


def test_acls_survive_a_restart():
    with Cluster(brokers=1, overrides=OPEN) as c:
        wire(c.broker(0), CreateAcls(creations=(creation("t", "User:alice", AclOperation.READ),)), 3)
        c.restart(0)
        assert [str(b) for b in c.broker(0).authorizer.acls(ANY_FILTER)] == [
            "(pattern=ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), entry=(principal=User:alice, "
            "host=*, operation=READ, permissionType=ALLOW))"]


def test_acl_apis_need_cluster_permissions():
    with Cluster(brokers=1, overrides={"authorizer.class.name": ACL_AUTHORIZER, "super.users": "User:admin"},
                 wait_for_metadata=False) as c:
        b = c.broker(0)
        assert wire(b, describe_all(), 3).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = wire(b, CreateAcls(creations=(creation("t", "User:a", AclOperation.READ),)), 3)
        assert r.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_the_course_story_cluster_authorization_failed_then_super_users():
    """One broker, ACL authorizer, PLAINTEXT inter-broker listener: its own controller is User:ANONYMOUS."""
    broker_log = BrokerLog().install()
    audit = BrokerLog("kafkalab.authorizer.logger", level=logging.INFO).install()
    try:
        with Cluster(brokers=1, overrides={"authorizer.class.name": ACL_AUTHORIZER}, wait_for_metadata=False) as c:
            b = c.broker(0)
            with pytest.raises(Exception, match="did not come online"):
                c.create_topic("story", 1, 1, timeout=1.5)
            assert all(p.leader < 0 for p in b.metadata_cache.partitions("story"))
            # A client allowed to use the topic (an ACL written through the broker's authorizer) finds no leader:
            # the broker never accepted its controller's UpdateMetadata, so it knows neither the topic nor itself.
            c.call(b.authorizer.create_acls, [AclBinding(ResourcePattern(ResourceType.TOPIC, "story"),
                   AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.ALLOW))])
            md = wire(b, Metadata(topics=(Metadata.MetadataRequestTopic(name="story"),),
                                  allow_auto_topic_creation=False), 12)
            assert md.brokers == () and md.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            # A follower's Fetch (replica id >= 0) needs CLUSTER_ACTION: refused per partition with 29, not 31.
            fetch = Fetch(replica_id=1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=(
                Fetch.FetchTopic(topic="story", partitions=(Fetch.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))
            assert wire(b, fetch, 12).responses[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            refused = [m for m in broker_log.messages() if "Error when handling request" in m]
            assert any("clientId=0, correlationId=0, api=UPDATE_METADATA" in m for m in refused), refused
            assert any("api=LEADER_AND_ISR" in m for m in refused), refused
            assert any("ClusterAuthorizationException: Request Request(processor=0, connectionId=<connection>, "
                       "session=Session(User:ANONYMOUS,/127.0.0.1), listenerName=ListenerName(PLAINTEXT), "
                       "securityProtocol=PLAINTEXT, buffer=null) is not authorized." in m for m in refused), refused
            assert any(m.startswith("Principal = User:ANONYMOUS is Denied Operation = ClusterAction from host = "
                                    "127.0.0.1 on resource = Cluster:LITERAL:kafka-cluster for request = "
                                    "UpdateMetadata with resourceRefCount = 1") for m in audit.messages())
        broker_log.clear()
        with Cluster(brokers=1, overrides=OPEN) as c:      # the fix: the inter-broker principal is a super user
            c.create_topic("story", 1, 1, timeout=10)
            md = wire(c.broker(0), Metadata(topics=(Metadata.MetadataRequestTopic(name="story"),),
                                            allow_auto_topic_creation=False), 12)
            assert [b.node_id for b in md.brokers] == [0] and md.topics[0].partitions[0].leader_id == 0
            assert not [m for m in broker_log.messages() if "Error when handling request" in m]
    finally:
        logging.getLogger("kafkalab.authorizer.logger").removeHandler(audit)
        logging.getLogger("kafkalab.authorizer.logger").setLevel(logging.NOTSET)
        logging.getLogger("kafkalab").removeHandler(broker_log)


def test_init_producer_id_needs_idempotent_write_or_write_on_some_topic():
    """KIP-679: an idempotent producer is allowed by IDEMPOTENT_WRITE on the cluster or WRITE on any topic."""
    InitProducerId = req(ApiKey.INIT_PRODUCER_ID)
    body = InitProducerId(transactional_id=None, transaction_timeout_ms=60000)
    with Cluster(brokers=1, overrides={"authorizer.class.name": ACL_AUTHORIZER}, wait_for_metadata=False) as c:
        b = c.broker(0)
        assert wire(b, body, 4).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        c.call(b.authorizer.create_acls, [AclBinding(ResourcePattern(ResourceType.TOPIC, "any", PatternType.PREFIXED),
               AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.ALLOW))])
        r = wire(b, body, 4)
        assert r.error_code == ErrorCode.NONE and r.producer_id >= 0


def test_change_notifications_older_than_15_minutes_are_purged():
    from kafkalab.common.time import MockTime
    from kafkalab.server.acl_authorizer import AclAuthorizer
    from kafkalab.zk import KafkaZkClient, ZkStore

    time = MockTime()
    store = ZkStore(None, time=time)
    zk = KafkaZkClient.connect(store)
    authorizer = AclAuthorizer(ACL_AUTHORIZER, zk)
    authorizer.startup()

    def allow(name):
        return AclBinding(ResourcePattern(ResourceType.TOPIC, name),
                          AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW))
    assert authorizer.create_acls([allow("t1")]) == [None]
    first = store.get_children("/kafka-acl-changes")
    time.sleep(15 * 60 * 1000 + 1)
    authorizer.create_acls([allow("t2")])
    left = store.get_children("/kafka-acl-changes")
    assert len(first) == 1 and first[0] not in left and len(left) == 1
    assert authorizer.core.authorize("User:a", "h", AclOperation.READ, ResourceType.TOPIC, "t1")


ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


def _store_authorizer(data_dir=None):
    from kafkalab.common.time import MockTime
    from kafkalab.server.acl_authorizer import AclAuthorizer
    from kafkalab.zk import KafkaZkClient, ZkStore

    store = ZkStore(data_dir, time=MockTime())
    authorizer = AclAuthorizer(ACL_AUTHORIZER, KafkaZkClient.connect(store))
    authorizer.startup()
    return store, authorizer


def _allow(name, principal="User:a", pattern=PatternType.LITERAL):
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, pattern),
                      AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW))


def test_a_create_or_delete_request_is_one_store_commit_and_costs_what_it_changes(tmp_path):
    """CreateAcls and DeleteAcls write every resource they touch, and a change node per resource, as one multi:
    one commit (one fsync) per request. Each commit appends only what it changed to the store's log: 20 requests
    of one ACL each after 1,000 resources exist write a few KB, where rewriting the store per commit wrote the
    whole tree (about 450 KB here) each time, and one commit per resource made 10,000 ACLs take minutes."""
    store, authorizer = _store_authorizer(str(tmp_path))
    store.take_snapshot()
    zxid = store.last_zxid
    assert authorizer.create_acls([_allow(f"t{i}") for i in range(1000)]) == [None] * 1000
    assert store.last_zxid == zxid + 1
    assert len(store.get_children("/kafka-acl/Topic")) == 1000
    assert len(store.get_children("/kafka-acl-changes")) == 1000, "one change notification per resource"
    before = store.disk_stats()
    for i in range(20):
        authorizer.create_acls([_allow(f"u{i}")])
    after = store.disk_stats()
    assert after["log_records"] - before["log_records"] == 20 and after["snapshots"] == before["snapshots"]
    assert (after["bytes_written"] - before["bytes_written"]) / 20 < 2000
    zxid = store.last_zxid
    bob = [_allow(f"t{i}", "User:bob") for i in range(10)]
    authorizer.create_acls(bob)
    deleted = authorizer.delete_acls([AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, None,
                                                                             PatternType.ANY), ANY_ENTRY),
                                      ANY_FILTER])
    assert store.last_zxid == zxid + 2, "one commit for the creation, one for the deletion"
    assert len(deleted[0]) == 1000 + 20 + 10 and deleted[1] == [], "each binding under the first filter only"
    assert store.get_children("/kafka-acl/Topic") == [] and authorizer.acls(ANY_FILTER) == []
    assert not authorizer.core.authorize("User:a", "h", AclOperation.READ, ResourceType.TOPIC, "t1")


def test_an_update_that_loses_a_race_reads_again_and_retries():
    """Another broker changed a resource between our read and our multi: the multi writes nothing, and the
    request reads the resources again and retries (Kafka's versioned updates)."""
    store, authorizer = _store_authorizer()
    authorizer.create_acls([_allow("t")])
    real_multi, raced = authorizer.zk.multi, []

    def multi_after_another_broker(ops):
        if not raced:   # another broker adds bob's ACL to the same znode first
            raced.append(True)
            data = json.loads(store.get("/kafka-acl/Topic/t")[0])
            data["acls"].append({"principal": "User:bob", "permissionType": "Allow", "operation": "Write",
                                 "host": "*"})
            store.set("/kafka-acl/Topic/t", json.dumps(data).encode())
        return real_multi(ops)
    authorizer.zk.multi = multi_after_another_broker
    assert authorizer.create_acls([_allow("t", "User:carol"), _allow("other")]) == [None, None]
    principals = {a["principal"] for a in json.loads(store.get("/kafka-acl/Topic/t")[0])["acls"]}
    assert principals == {"User:a", "User:bob", "User:carol"}, "nobody's ACL lost"
    assert store.exists("/kafka-acl/Topic/other") is not None


def test_an_update_that_keeps_losing_fails_every_binding_and_writes_nothing():
    from kafkalab.zk import BadVersionException

    store, authorizer = _store_authorizer()

    def always_raced(ops):
        raise BadVersionException("/kafka-acl/Topic/t")
    authorizer.zk.multi = always_raced
    results = authorizer.create_acls([_allow("t"), _allow("u"), AclBinding(ResourcePattern(ResourceType.TOPIC, ""),
                                                                           _allow("x").entry)])
    assert [r.error_code for r in results] == [ErrorCode.UNKNOWN_SERVER_ERROR] * 2 + [ErrorCode.INVALID_REQUEST]
    assert "after trying a maximum of 10 times" in str(results[0])
    assert store.get_children("/kafka-acl-changes") == [] and authorizer.acls(ANY_FILTER) == []
