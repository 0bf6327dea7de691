"""KafkaZkClient: registration, controller election and fencing, partition states, notifications, ids."""
import pytest

from kafkalab.zk import (ConnectionLossException, ControllerMovedException, KafkaZkClient, NodeExistsException,
                         NoNodeException, SessionExpiredException, SessionState, TopicExistsException)
from kafkalab.zk.client import UNKNOWN_VERSION
from kafkalab.zk.paths import (BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment,
                               TopicPartition, decode_partition_state, topic_partition_state_path)

from .conftest import EXPIRY_MS, TIMEOUT_MS

TP = TopicPartition("orders", 0)


def broker(broker_id):
    return BrokerInfo(broker_id, (EndPoint("127.0.0.1", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT"),))


@pytest.fixture
def admin(store):
    zk = KafkaZkClient(store)  # no session: an admin tool
    zk.create_top_level_paths()
    return zk


def test_register_broker_returns_the_broker_epoch(store, admin):
    zk = KafkaZkClient.connect(store, TIMEOUT_MS)
    epoch = zk.register_broker(broker(0))
    data, stat = store.get("/brokers/ids/0")
    assert epoch == stat.czxid and stat.ephemeral_owner == zk.session.session_id
    assert stat.version == 1, "created empty, then set at version 0 (Kafka's CheckedEphemeral)"
    assert zk.register_broker(broker(0)) == epoch, "re-registering on the same session is idempotent"
    other = KafkaZkClient.connect(store, TIMEOUT_MS)
    with pytest.raises(NodeExistsException):
        other.register_broker(broker(0))
    other.register_broker(broker(1))
    assert admin.get_sorted_broker_list() == [0, 1]
    brokers = admin.get_all_broker_and_epochs_in_cluster()
    assert brokers[0][1] == epoch and brokers[1][1] > epoch
    assert [b.endpoints[0].port for b in admin.get_all_brokers_in_cluster()] == [9092, 9093]
    assert admin.get_broker(1).endpoints == broker(1).endpoints and admin.get_broker(7) is None


def test_a_restarted_broker_gets_a_new_epoch(store, time, admin):
    zk = KafkaZkClient.connect(store, TIMEOUT_MS)
    first = zk.register_broker(broker(0))
    time.advance(EXPIRY_MS)
    store.expire_sessions()
    assert admin.get_sorted_broker_list() == []
    with pytest.raises(SessionExpiredException):
        zk.register_broker(broker(0))
    zk.reinitialize()
    assert zk.register_broker(broker(0)) > first


def test_controller_election_race_and_failover(store, time, admin):
    """Two brokers race; the loser watches /controller and takes over, epoch + 1, when the winner's session
    expires."""
    zk0, zk1 = KafkaZkClient.connect(store, TIMEOUT_MS), KafkaZkClient.connect(store, TIMEOUT_MS)
    assert zk0.try_create_controller(0) is True
    assert zk1.try_create_controller(1) is False
    assert admin.get_controller_id() == 0 and admin.get_controller_epoch() == (1, 1)
    reg = admin.get_controller_registration()
    assert reg.kraft_controller_epoch == -1 and reg.timestamp == str(time.milliseconds())

    elected = []

    def on_controller_change(event):  # broker 1's ControllerChangeHandler: run for election again
        if not zk1.controller_exists(watch=on_controller_change):
            elected.append(zk1.try_create_controller(1))
    assert zk1.controller_exists(watch=on_controller_change)

    for _ in range(3):  # broker 1 keeps heartbeating, broker 0 has gone silent
        time.advance(TIMEOUT_MS // 2)
        zk1.session.heartbeat()
        store.expire_sessions()
    assert zk0.session.state is SessionState.EXPIRED
    assert elected == [True]
    assert admin.get_controller_id() == 1 and admin.get_controller_epoch() == (2, 2)


def test_a_deposed_controller_is_fenced_by_the_epoch_zk_version(store, time, admin):
    """The old controller's session expires (say, a long GC pause); it reconnects with a new session still
    believing it is the controller. Its writes carry the old /controller_epoch zkVersion and are refused."""
    old = KafkaZkClient.connect(store, TIMEOUT_MS)
    epoch, epoch_zk_version = old.register_controller_and_increment_controller_epoch(0)
    admin.create_topic("orders", {0: [0, 1]})
    old.create_topic_partition_state(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0, 1)), epoch),
                                     epoch_zk_version)
    time.advance(EXPIRY_MS)
    store.expire_sessions()
    new = KafkaZkClient.connect(store, TIMEOUT_MS)
    assert new.register_controller_and_increment_controller_epoch(1) == (epoch + 1, epoch_zk_version + 1)

    old.reinitialize()
    state = old.get_topic_partition_state(TP)
    with pytest.raises(ControllerMovedException):
        old.update_leader_and_isr({TP: state.leader_and_isr.new_leader_and_isr(1, [1])}, epoch, epoch_zk_version)
    with pytest.raises(ControllerMovedException):
        old.delete_topic_deletions(["orders"], epoch_zk_version)
    with pytest.raises(ControllerMovedException):
        old.increment_controller_epoch(epoch_zk_version)
    assert not old.try_create_controller(0)
    assert admin.get_topic_partition_state(TP) == state and admin.get_controller_id() == 1
    # the current controller's fenced writes go through
    result = new.update_leader_and_isr({TP: state.leader_and_isr.new_leader_and_isr(1, [1])}, epoch + 1,
                                       epoch_zk_version + 1)
    assert result.finished_partitions[TP].leader == 1
    assert admin.get_topic_partition_state(TP).controller_epoch == epoch + 1


def test_conditional_partition_state_update_fails_after_a_concurrent_change(store, admin):
    admin.create_topic("orders", {0: [0, 1, 2]})
    admin.create_topic_partition_state(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0, 1, 2)), 1))
    leader_view = admin.get_topic_partition_state(TP)
    controller_view = admin.get_topic_partition_state(TP)
    assert leader_view.leader_and_isr.partition_epoch == 0

    # the leader shrinks the ISR, conditional on the zkVersion it read
    shrunk = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0, 1), partition_epoch=0), 1)
    assert admin.update_partition_state(TP, shrunk, 0) == (True, 1)
    # the controller, working from its stale read, must not overwrite that decision
    result = admin.update_leader_and_isr({TP: controller_view.leader_and_isr.new_leader_and_isr(2, [2])}, 1)
    assert result.partitions_to_retry == [TP] and result.finished_partitions == {}
    assert admin.update_partition_state(TP, shrunk, 0) == (False, UNKNOWN_VERSION)
    # re-read and retry: now it works, and the new zkVersion comes back as partition_epoch
    fresh = admin.get_topic_partition_state(TP)
    result = admin.update_leader_and_isr({TP: fresh.leader_and_isr.new_leader_and_isr(2, [2])}, 1)
    assert result.finished_partitions[TP] == LeaderAndIsr(2, 1, (2,), partition_epoch=2)
    data, stat = store.get(topic_partition_state_path(*TP))
    assert decode_partition_state(data, stat.version).leader_and_isr == result.finished_partitions[TP]


def test_create_partition_states_reports_per_partition(store, admin):
    admin.create_topic("orders", {0: [0], 1: [0]})
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1)
    assert admin.create_topic_partition_states({TopicPartition("orders", 0): state}) == {TopicPartition("orders", 0): 0}
    results = admin.create_topic_partition_states({TopicPartition("orders", p): state for p in (0, 1)})
    assert isinstance(results[TopicPartition("orders", 0)], NodeExistsException)
    assert results[TopicPartition("orders", 1)] == 0
    assert store.get_children("/brokers/topics/orders/partitions") == ["0", "1"]
    missing = admin.create_topic_partition_states({TopicPartition("ghost", 0): state})
    assert isinstance(missing[TopicPartition("ghost", 0)], NoNodeException), "no topic znode: reported, not raised"


def test_topics_assignments_and_deletion_markers(store, admin):
    topic_id = admin.create_topic("orders", {0: [0, 1], 1: [1, 0]}, {"retention.ms": "1000"})
    assert len(topic_id) == 22 and admin.get_topic_id("orders") == topic_id
    with pytest.raises(TopicExistsException):
        admin.create_topic("orders", {0: [0]})
    assert admin.get_partition_assignment("orders") == {0: ReplicaAssignment((0, 1)), 1: ReplicaAssignment((1, 0))}
    assert admin.get_topic_partition_count("orders") == 2 and admin.get_replicas_for_partition(TP) == [0, 1]
    assert admin.get_entity_configs("topics", "orders") == {"retention.ms": "1000"}
    admin.set_topic_assignment("orders", topic_id, {0: [0, 1], 1: [1, 0], 2: [0, 1]})
    assert admin.get_topic_partition_count("orders") == 3
    assert admin.get_all_topics_in_cluster() == ["orders"] and admin.get_partition_assignment("nope") == {}
    assert admin.create_topic("legacy", {0: [0]}, uses_topic_id=False) is None

    admin.create_delete_topic_path("orders")
    assert admin.is_topic_marked_for_deletion("orders") and admin.get_topic_deletions() == ["orders"]
    admin.delete_topic_znode("orders")
    admin.delete_topic_configs(["orders"])
    admin.delete_topic_deletions(["orders"])
    assert not admin.topic_exists("orders") and admin.get_topic_deletions() == []
    assert admin.get_entity_configs("topics", "orders") == {}


def test_config_changes_and_notifications(store, admin, recorder):
    watch = recorder()
    assert admin.get_config_change_notifications(watch) == []
    first = admin.change_topic_config("orders", {"cleanup.policy": "compact"})
    assert first == "/config/changes/config_change_0000000000" and watch.types == ["NodeChildrenChanged"]
    admin.change_broker_config(None, {"log.retention.ms": "1"})
    admin.change_broker_config(0, {"log.cleaner.threads": "2"})
    assert admin.get_config_change_notifications() == [
        ("config_change_0000000000", "topics/orders"), ("config_change_0000000001", "brokers/<default>"),
        ("config_change_0000000002", "brokers/0")]
    assert admin.get_all_entities_with_config("brokers") == ["0", "<default>"]
    admin.change_topic_config("orders", {"cleanup.policy": "delete"})
    assert admin.get_entity_configs("topics", "orders") == {"cleanup.policy": "delete"}


def test_isr_change_notifications(store, admin, recorder):
    """KafkaZkClientTest.testIsrChangeNotificationGetters, in our words."""
    watch = recorder()
    assert admin.get_all_isr_change_notifications(watch) == []
    a, b = TopicPartition("topic-a", 0), TopicPartition("topic-b", 0)
    assert admin.propagate_isr_changes([a, b]) == "/isr_change_notification/isr_change_0000000000"
    admin.propagate_isr_changes([a])
    assert watch.types == ["NodeChildrenChanged"]
    assert admin.get_all_isr_change_notifications() == ["0000000000", "0000000001"]
    assert admin.get_partitions_from_isr_change_notifications(["0000000000", "0000000001", "0000000009"]) == [a, b, a]
    admin.delete_isr_change_notifications(["0000000000"])
    assert admin.get_all_isr_change_notifications() == ["0000000001"]
    admin.propagate_isr_changes([b])
    admin.delete_isr_change_notifications()
    assert admin.get_all_isr_change_notifications() == []


def test_preferred_replica_election_znode(admin):
    admin.create_preferred_replica_election([TP])
    assert admin.get_preferred_replica_election() == [TP]
    admin.delete_preferred_replica_election()
    assert admin.get_preferred_replica_election() == []


def test_producer_id_blocks_are_disjoint_and_claimed_by_conditional_writes(store, admin):
    first = admin.allocate_producer_id_block(0)
    second = admin.allocate_producer_id_block(1)
    assert (first.first_producer_id, first.last_producer_id) == (0, 999)
    assert (second.assigned_broker_id, second.first_producer_id, second.last_producer_id) == (1, 1000, 1999)
    assert store.get("/latest_producer_id_block")[0] == \
        b'{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}'

    # a competing broker writes between our read and our conditional write: we lose once, retry, and win
    real_set, raced = store.set, []

    def racing_set(path, data, version=-1, **kw):
        if path == "/latest_producer_id_block" and not raced:
            raced.append(True)
            KafkaZkClient(store).allocate_producer_id_block(2, block_size=10)
        return real_set(path, data, version, **kw)
    store.set = racing_set
    third = admin.allocate_producer_id_block(0)
    assert third.first_producer_id == 2010, "after broker 2's block 2000..2009"


def test_cluster_id_is_created_once(store, admin):
    cluster_id = admin.get_or_create_cluster_id()
    assert len(cluster_id) == 22
    assert KafkaZkClient(store).get_or_create_cluster_id() == cluster_id
    assert admin.create_or_get_cluster_id("someone-else") == cluster_id


def test_broker_sequence_ids(store):
    zk = KafkaZkClient(store)
    assert [zk.generate_broker_sequence_id() for _ in range(3)] == [1, 2, 3]


def test_an_isolated_broker_cannot_write(store, admin):
    zk = KafkaZkClient.connect(store, TIMEOUT_MS)
    zk.register_broker(broker(0))
    store.isolate(zk.session)
    with pytest.raises(ConnectionLossException):
        zk.propagate_isr_changes([TP])
    store.heal(zk.session)
    assert zk.propagate_isr_changes([TP]).endswith("0000000000")
