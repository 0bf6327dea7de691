"""TxnOffsetCommit on the wire against a broker: the offsets are appended as a transactional batch, stay pending
(OffsetFetch v7+ with require_stable answers UNSTABLE_OFFSET_COMMIT), and become the committed offsets once the
COMMIT marker is on __consumer_offsets and the group coordinator is told (what the WriteTxnMarkers handler
does; here the test writes the marker itself)."""
from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC
from kafkalab.protocol import ApiKey, ErrorCode as E, request_class
from kafkalab.records import ControlRecordType, build_end_txn_marker_batch
from kafkalab.security.acl import AclOperation as Op
from kafkalab.security.acl import AclPermissionType, PatternType, ResourceType
from kafkalab.server.apis import enabled_apis

from tests.broker._admin_support import req, wire
from tests.broker._raw_wire import Conn

TxnOffsetCommit = request_class(ApiKey.TXN_OFFSET_COMMIT)
OffsetFetch = request_class(ApiKey.OFFSET_FETCH)
TOPIC = "input"


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                                       "auto.create.topics.enable": "false"}) as c:
        c.create_topic(TOPIC, 2)
        c.create_topic(OFFSETS_TOPIC, 1, 1, {"cleanup.policy": "compact"})
        c.wait_until(lambda: c.broker(0).group_coordinator.manager.owned_partitions == {0}, 10,
                     "the coordinator did not load __consumer_offsets-0")
        yield c


def _txn_commit(port, version, group, producer_id, offsets, **v3):
    T = TxnOffsetCommit
    topics: dict = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(T.TxnOffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""))
    body = T(transactional_id="txn-1", group_id=group, producer_id=producer_id, producer_epoch=0,
             topics=tuple(T.TxnOffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()),
             **v3)
    with Conn(port) as c:
        response = c.call(body, version)
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def _fetch(port, group, partitions, require_stable, version=7):
    F = OffsetFetch
    topics = (F.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=tuple(partitions)),)
    if version >= 8:
        body = F(groups=(F.OffsetFetchRequestGroup(group_id=group, topics=tuple(
            F.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=tuple(partitions)) for _ in [0])),),
            require_stable=require_stable)
    else:
        body = F(group_id=group, topics=topics, require_stable=require_stable)
    with Conn(port) as c:
        response = c.call(body, version)
    parts = (response.groups[0].topics if version >= 8 else response.topics)[0].partitions
    return {p.partition_index: (p.committed_offset, p.error_code) for p in parts}


def _write_marker(cluster, producer_id, committed):
    """Append the COMMIT/ABORT marker to __consumer_offsets-0, then tell the group coordinator."""
    broker = cluster.broker(0)
    marker = build_end_txn_marker_batch(ControlRecordType.COMMIT if committed else ControlRecordType.ABORT,
                                        producer_id=producer_id, producer_epoch=0, coordinator_epoch=0)

    def write():
        tp = (OFFSETS_TOPIC, 0)
        result = broker.replica_manager.append_records({tp: marker}, required_acks=1, origin="coordinator")[tp]
        assert not isinstance(result, Exception), result
        broker.group_coordinator.handle_txn_completion(producer_id, [tp], committed)
    cluster.call(write)


def test_pending_until_the_commit_marker(cluster):
    port = cluster.broker(0).bound_endpoints[0].port
    errors = _txn_commit(port, 3, "g-commit", 7, {(TOPIC, 0): 10, (TOPIC, 1): 11, ("missing", 0): 1},
                         generation_id=-1, member_id="", group_instance_id=None)
    assert errors == {(TOPIC, 0): E.NONE, (TOPIC, 1): E.NONE, ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert _fetch(port, "g-commit", [0, 1], require_stable=False) == {0: (-1, E.NONE), 1: (-1, E.NONE)}
    unstable = (-1, E.UNSTABLE_OFFSET_COMMIT)
    assert _fetch(port, "g-commit", [0, 1], require_stable=True) == {0: unstable, 1: unstable}
    assert _fetch(port, "g-commit", [0], require_stable=True, version=8) == {0: unstable}
    batches = cluster.call(lambda: list(cluster.broker(0).group_coordinator.manager.log.read(0)))
    txn = [b for b in batches if b.producer_id == 7]
    assert txn and all(b.is_transactional for b in txn), "the offsets are a transactional batch"
    _write_marker(cluster, 7, committed=True)
    assert _fetch(port, "g-commit", [0, 1], require_stable=True) == {0: (10, E.NONE), 1: (11, E.NONE)}


def test_v0_commit_then_abort(cluster):
    port = cluster.broker(0).bound_endpoints[0].port
    assert _txn_commit(port, 0, "g-abort", 8, {(TOPIC, 0): 5}) == {(TOPIC, 0): E.NONE}
    assert _fetch(port, "g-abort", [0], require_stable=True) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    _write_marker(cluster, 8, committed=False)
    assert _fetch(port, "g-abort", [0], require_stable=True) == {0: (-1, E.NONE)}


def test_v3_member_checks_and_group_id(cluster):
    port = cluster.broker(0).bound_endpoints[0].port
    assert _txn_commit(port, 3, "g-members", 9, {(TOPIC, 0): 1}, generation_id=4, member_id="nobody",
                       group_instance_id=None) == {(TOPIC, 0): E.UNKNOWN_MEMBER_ID}
    assert _txn_commit(port, 1, "", 9, {(TOPIC, 0): 1}) == {(TOPIC, 0): E.INVALID_GROUP_ID}


def test_load_in_progress_is_coordinator_not_available_below_v2(cluster):
    """Clients before TxnOffsetCommit v2 could not retry COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296)."""
    manager = cluster.broker(0).group_coordinator.manager

    def loading(on):
        (manager.owned_partitions.discard if on else manager.owned_partitions.add)(0)
        (manager.loading_partitions.add if on else manager.loading_partitions.discard)(0)
    cluster.call(loading, True)
    try:
        port = cluster.broker(0).bound_endpoints[0].port
        assert _txn_commit(port, 1, "g-load", 10, {(TOPIC, 0): 1}) == {(TOPIC, 0): E.COORDINATOR_NOT_AVAILABLE}
        assert _txn_commit(port, 2, "g-load", 10, {(TOPIC, 0): 1}) == {(TOPIC, 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    finally:
        cluster.call(loading, False)


def test_advertised_versions():
    assert enabled_apis()[ApiKey.TXN_OFFSET_COMMIT] == (0, 3)


# ---------------------------------------------------------------------------------------------- authorization
def _acl(c, rtype, name, op):
    CreateAcls = req(ApiKey.CREATE_ACLS)
    r = wire(c.broker(0), CreateAcls(creations=(CreateAcls.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=PatternType.LITERAL, principal="User:alice",
        host="*", operation=op, permission_type=AclPermissionType.ALLOW),)), 3)
    assert [x.error_code for x in r.results] == [0]


def test_authorization_in_kafkas_order():
    """WRITE on the transactional id, then READ on the group, then READ on each topic (User:ANONYMOUS here;
    a resource with an ACL for alice only is refused to it)."""
    with Cluster(brokers=1, overrides={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                       "allow.everyone.if.no.acl.found": "true", "auto.create.topics.enable": "false",
                                       "offsets.topic.num.partitions": 1,
                                       "offsets.topic.replication.factor": 1}) as c:
        c.create_topic("open")
        c.create_topic("secret")
        _acl(c, ResourceType.TRANSACTIONAL_ID, "txn-secret", Op.ALL)
        _acl(c, ResourceType.GROUP, "g-secret", Op.ALL)
        _acl(c, ResourceType.TOPIC, "secret", Op.ALL)
        port = c.broker(0).bound_endpoints[0].port
        T = TxnOffsetCommit

        def commit(transactional_id, group, topics):
            body = T(transactional_id=transactional_id, group_id=group, producer_id=1, producer_epoch=0,
                     topics=tuple(T.TxnOffsetCommitRequestTopic(name=t, partitions=(T.TxnOffsetCommitRequestPartition(
                         partition_index=0, committed_offset=1, committed_metadata=None),)) for t in topics))
            with Conn(port) as conn:
                r = conn.call(body, 0)
            return {t.name: t.partitions[0].error_code for t in r.topics}
        assert commit("txn-secret", "g-secret", ["open"]) == {"open": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        assert commit("txn-open", "g-secret", ["open"]) == {"open": E.GROUP_AUTHORIZATION_FAILED}
        # the group coordinator is not loaded in this cluster (no __consumer_offsets): the topic check comes first
        result = commit("txn-open", "g-open", ["open", "secret"])
        assert result["secret"] == E.TOPIC_AUTHORIZATION_FAILED
        assert result["open"] in (E.NONE, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR)


def test_a_restarted_coordinator_loads_pending_committed_and_aborted_offsets():
    """Loading __consumer_offsets from the broker's log: a committed transaction's offsets are committed, an
    aborted one's dropped, an open one's pending (and its marker, written after the restart, completes it)."""
    with Cluster(brokers=1, overrides={"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                                       "auto.create.topics.enable": "false"}) as c:
        c.create_topic(TOPIC, 3)
        c.create_topic(OFFSETS_TOPIC, 1, 1, {"cleanup.policy": "compact"})
        loaded = lambda: c.broker(0).group_coordinator.manager.owned_partitions == {0}  # noqa: E731
        c.wait_until(loaded, 10, "the coordinator did not load __consumer_offsets-0")
        port = c.broker(0).bound_endpoints[0].port
        for producer_id, partition in ((21, 0), (22, 1), (23, 2)):
            assert _txn_commit(port, 0, "g-reload", producer_id, {(TOPIC, partition): 100 + partition}) == \
                {(TOPIC, partition): E.NONE}
        _write_marker(c, 21, committed=True)
        _write_marker(c, 22, committed=False)
        c.restart(0)
        c.wait_until(loaded, 10, "the restarted coordinator did not load __consumer_offsets-0")
        port = c.broker(0).bound_endpoints[0].port
        assert _fetch(port, "g-reload", [0, 1, 2], require_stable=True) == \
            {0: (100, E.NONE), 1: (-1, E.NONE), 2: (-1, E.UNSTABLE_OFFSET_COMMIT)}
        _write_marker(c, 23, committed=True)
        assert _fetch(port, "g-reload", [2], require_stable=True) == {2: (102, E.NONE)}
