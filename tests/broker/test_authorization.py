"""Per-request authorization over the wire, as User:ANONYMOUS on a PLAINTEXT listener.

The cluster runs with ``allow.everyone.if.no.acl.found=true``: a resource becomes protected as soon as it has an
ACL. The cluster resource gets ACLs for User:ANONYMOUS (ALTER to manage ACLs, CLUSTER_ACTION so that the broker's
own controller -- also User:ANONYMOUS on PLAINTEXT -- keeps working, DESCRIBE), so CREATE on it is refused."""
import pytest

from kafkalab.cluster import Cluster
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.records import build_batch
from kafkalab.security.acl import AclOperation as Op
from kafkalab.security.acl import AclPermissionType, PatternType, ResourceType
from kafkalab.server.auth_helper import SUPPORTED_OPERATIONS, to_bit_field

from ._admin_support import req, wire

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
CreateAcls = req(ApiKey.CREATE_ACLS)
Produce, Fetch, Metadata = req(ApiKey.PRODUCE), req(ApiKey.FETCH), req(ApiKey.METADATA)
ListOffsets, FindCoordinator, JoinGroup = req(ApiKey.LIST_OFFSETS), req(ApiKey.FIND_COORDINATOR), req(ApiKey.JOIN_GROUP)
OffsetCommit, DescribeCluster = req(ApiKey.OFFSET_COMMIT), req(ApiKey.DESCRIBE_CLUSTER)
CreateTopics = req(ApiKey.CREATE_TOPICS)
DescribeConfigs, DeleteTopics = req(ApiKey.DESCRIBE_CONFIGS), req(ApiKey.DELETE_TOPICS)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                        "allow.everyone.if.no.acl.found": "true",
                                        "auto.create.topics.enable": "false"}) as c:
        c.create_topic("secret")
        c.create_topic("open")
        add_acl(c, ResourceType.TOPIC, "secret", "User:alice", Op.ALL)
        add_acl(c, ResourceType.GROUP, "g-secret", "User:alice", Op.ALL)
        add_acl(c, ResourceType.CLUSTER, "kafka-cluster", "User:ANONYMOUS", Op.ALTER, Op.CLUSTER_ACTION, Op.DESCRIBE)
        yield c


def add_acl(c, rtype, name, principal, *ops, perm=ALLOW, host="*", pattern=PatternType.LITERAL):
    r = wire(c.broker(0), CreateAcls(creations=tuple(CreateAcls.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal, host=host,
        operation=op, permission_type=perm) for op in ops)), 3)
    assert [x.error_code for x in r.results] == [0] * len(ops)


def produce(c, topic):
    body = Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=topic, partition_data=(Produce.PartitionProduceData(index=0, records=build_batch([(b"k", b"v")])),)),))
    return wire(c.broker(0), body, 9).responses[0].partition_responses[0].error_code


def fetch(c, topic):
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, topics=(
        Fetch.FetchTopic(topic=topic, partitions=(Fetch.FetchPartition(partition=0, fetch_offset=0,
                                                                      partition_max_bytes=1 << 20),)),))
    return wire(c.broker(0), body, 12).responses[0].partitions[0].error_code


def metadata(c, topics=None, **kw):
    body = Metadata(topics=None if topics is None else tuple(Metadata.MetadataRequestTopic(name=t) for t in topics),
                    allow_auto_topic_creation=False, **kw)
    return wire(c.broker(0), body, 12).topics


def test_metadata_hides_unauthorized_topics_and_refuses_named_ones(cluster):
    names = {t.name for t in metadata(cluster)}
    assert "open" in names and "secret" not in names
    [t] = metadata(cluster, ["secret"])
    assert t.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and t.partitions == ()
    secret_id = cluster.broker(0).metadata_cache.topic_id("secret")
    body = Metadata(topics=(Metadata.MetadataRequestTopic(name=None, topic_id=secret_id),),
                    allow_auto_topic_creation=False)
    [t] = wire(cluster.broker(0), body, 12).topics      # asked by id: the name is not given away
    assert (t.error_code, t.name, t.topic_id) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, secret_id)


def test_produce_fetch_and_offsets_are_refused_on_a_protected_topic(cluster):
    assert produce(cluster, "open") == ErrorCode.NONE
    assert produce(cluster, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert fetch(cluster, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    body = ListOffsets(replica_id=-1, isolation_level=0, topics=(ListOffsets.ListOffsetsTopic(
        name="secret", partitions=(ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=-1),)),))
    assert wire(cluster.broker(0), body, 7).topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    body = DescribeConfigs(resources=(DescribeConfigs.DescribeConfigsResource(
        resource_type=2, resource_name="secret", configuration_keys=None),), include_synonyms=False)
    assert wire(cluster.broker(0), body, 4).results[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    body = DeleteTopics(topic_names=("secret",), timeout_ms=1000)
    assert wire(cluster.broker(0), body, 5).responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_groups_are_refused(cluster):
    r = wire(cluster.broker(0), FindCoordinator(key="g-secret", key_type=0), 3)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = wire(cluster.broker(0), JoinGroup(group_id="g-secret", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                          member_id="", protocol_type="consumer", protocols=()), 5)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    body = OffsetCommit(group_id="g-secret", generation_id_or_member_epoch=-1, member_id="", topics=(
        OffsetCommit.OffsetCommitRequestTopic(name="open", partitions=(
            OffsetCommit.OffsetCommitRequestPartition(partition_index=0, committed_offset=0),)),))
    r = wire(cluster.broker(0), body, 8)
    assert r.topics[0].partitions[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_create_topics_needs_create(cluster):
    add_acl(cluster, ResourceType.TOPIC, "locked-", "User:alice", Op.ALL, pattern=PatternType.PREFIXED)
    body = CreateTopics(topics=(CreateTopics.CreatableTopic(name="locked-1", num_partitions=1, replication_factor=1,
                                                            assignments=(), configs=()),), timeout_ms=0)
    [t] = wire(cluster.broker(0), body, 7).topics
    assert (t.error_code, t.error_message) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")


def test_allow_then_deny_and_authorized_operations(cluster):
    add_acl(cluster, ResourceType.TOPIC, "secret", "User:ANONYMOUS", Op.WRITE)
    assert produce(cluster, "secret") == ErrorCode.NONE
    assert fetch(cluster, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED      # WRITE is not READ
    [t] = metadata(cluster, ["secret"], include_topic_authorized_operations=True)   # WRITE implies DESCRIBE
    assert t.error_code == ErrorCode.NONE
    assert t.topic_authorized_operations == to_bit_field([Op.WRITE, Op.DESCRIBE])
    [o] = metadata(cluster, ["open"], include_topic_authorized_operations=True)
    assert o.topic_authorized_operations == to_bit_field(SUPPORTED_OPERATIONS[ResourceType.TOPIC])
    add_acl(cluster, ResourceType.TOPIC, "secret", "User:ANONYMOUS", Op.WRITE, perm=DENY, host="127.0.0.1")
    assert produce(cluster, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    r = wire(cluster.broker(0), DescribeCluster(include_cluster_authorized_operations=True), 0)
    assert r.cluster_authorized_operations == to_bit_field([Op.ALTER, Op.CLUSTER_ACTION, Op.DESCRIBE])


def test_the_controller_works_through_a_cluster_action_acl(cluster):
    cluster.create_topic("after-acls", 1, 1, timeout=10)     # LeaderAndIsr/UpdateMetadata were authorized


def test_transactions_need_the_transactional_id_and_topics(cluster):
    import time

    b = cluster.broker(0)
    add_acl(cluster, ResourceType.TRANSACTIONAL_ID, "txn-secret", "User:alice", Op.ALL)
    init = req(ApiKey.INIT_PRODUCER_ID)
    assert wire(b, FindCoordinator(key="txn-secret", key_type=1), 1).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert wire(b, init(transactional_id="txn-secret", transaction_timeout_ms=1000), 1).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    end = req(ApiKey.END_TXN)(transactional_id="txn-secret", producer_id=1, producer_epoch=0, committed=True)
    assert wire(b, end, 1).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    offsets = req(ApiKey.ADD_OFFSETS_TO_TXN)(transactional_id="txn-secret", producer_id=1, producer_epoch=0,
                                              group_id="g")
    assert wire(b, offsets, 1).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    described = wire(b, req(ApiKey.DESCRIBE_TRANSACTIONS)(transactional_ids=("txn-secret",)), 0)
    assert described.transaction_states[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    add_parts = req(ApiKey.ADD_PARTITIONS_TO_TXN)
    A = add_parts.AddPartitionsToTxnTopic

    def add(txn, pid, *topics):
        r = wire(b, add_parts(v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                              v3_and_below_producer_epoch=0,
                              v3_and_below_topics=tuple(A(name=t, partitions=(0,)) for t in topics)), 0)
        return {t.name: t.results_by_partition[0].partition_error_code for t in r.results_by_topic_v3_and_below}
    assert add("txn-secret", 1, "open") == {"open": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    deadline = time.monotonic() + 10
    while True:
        r = wire(b, init(transactional_id="txn-open", transaction_timeout_ms=1000), 1)
        if r.error_code == ErrorCode.NONE or time.monotonic() > deadline:
            break
        wire(b, FindCoordinator(key="txn-open", key_type=1), 1)
        time.sleep(0.05)
    assert r.error_code == ErrorCode.NONE
    assert add("txn-open", r.producer_id, "open", "secret") == {"open": ErrorCode.OPERATION_NOT_ATTEMPTED,
                                                                "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    listed = wire(b, req(ApiKey.LIST_TRANSACTIONS)(state_filters=(), producer_id_filters=()), 0)
    assert "txn-open" in {s.transactional_id for s in listed.transaction_states}


def test_offset_for_leader_epoch_needs_cluster_action_or_describe_whatever_the_replica_id():
    """As ``KafkaApis.handleOffsetForLeaderEpochRequest``: CLUSTER_ACTION on the cluster answers every topic; without
    it each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED per partition), also for a request naming a replica."""
    Epoch = req(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                       "allow.everyone.if.no.acl.found": "true"}) as c:
        c.create_topic("open")
        c.create_topic("secret")
        add_acl(c, ResourceType.TOPIC, "secret", "User:alice", Op.ALL)
        add_acl(c, ResourceType.CLUSTER, "kafka-cluster", "User:ANONYMOUS", Op.ALTER, Op.DESCRIBE)

        def ask(replica_id):
            body = Epoch(replica_id=replica_id, topics=tuple(Epoch.OffsetForLeaderTopic(topic=t, partitions=(
                Epoch.OffsetForLeaderPartition(partition=0, leader_epoch=0),)) for t in ("open", "secret")))
            return {t.topic: t.partitions[0].error_code for t in wire(c.broker(0), body, 4).topics}
        denied = {"open": ErrorCode.NONE, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert ask(-1) == ask(1) == denied
        add_acl(c, ResourceType.CLUSTER, "kafka-cluster", "User:ANONYMOUS", Op.CLUSTER_ACTION)
        assert ask(-1) == ask(1) == {"open": ErrorCode.NONE, "secret": ErrorCode.NONE}
