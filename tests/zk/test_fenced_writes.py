"""Many independent controller writes go to the store in batches: one multi (one zxid, one log record) per batch
when every op succeeds, op by op with a result each when one fails, and still fenced by the controller epoch."""
import pytest

from kafkalab.zk import ControllerMovedException, KafkaZkClient, NodeExistsException, NoNodeException
from kafkalab.zk import fenced_writes
from kafkalab.zk.paths import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition, topic_partition_state_path
from kafkalab.zk.znode import CreateOp, DeleteOp

from .conftest import TIMEOUT_MS


@pytest.fixture
def admin(store):
    zk = KafkaZkClient(store)
    zk.create_top_level_paths()
    return zk


def _states(topic, partitions, epoch=1):
    return {TopicPartition(topic, p): LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), epoch)
            for p in partitions}


def _snapshots(store, monkeypatch) -> list:
    """Counts the store's commits (each one a record of the transaction log when it has a data directory)."""
    commits = []
    persist = store._persist
    monkeypatch.setattr(store, "_persist", lambda txn: (commits.append(store.last_zxid), persist(txn))[1])
    return commits


def test_creating_a_thousand_partition_states_is_a_few_commits(store, admin, monkeypatch):
    admin.create_topic("wide", {p: [0] for p in range(1000)})
    commits = _snapshots(store, monkeypatch)
    results = admin.create_topic_partition_states(_states("wide", range(1000)))
    assert results == {tp: 0 for tp in _states("wide", range(1000))}
    # 1,001 parents (partitions/ and one per partition) and 1,000 states: was one commit per znode (2,001)
    assert len(commits) <= 4, len(commits)
    assert admin.get_topic_partition_state(TopicPartition("wide", 999)).leader_and_isr.leader == 0


def test_deleting_a_topic_of_a_thousand_partitions_is_a_few_commits(store, admin, monkeypatch):
    admin.create_topic("wide", {p: [0] for p in range(1000)})
    admin.create_topic_partition_states(_states("wide", range(1000)))
    commits = _snapshots(store, monkeypatch)
    admin.delete_topic_znode("wide")
    assert not admin.topic_exists("wide") and not store.exists("/brokers/topics/wide/partitions/0")
    assert len(commits) <= 5, len(commits)   # 3,001 znodes, children first


def test_one_failing_op_gets_its_own_error_and_the_rest_are_written(store, admin):
    admin.create_topic("t", {0: [0], 1: [0], 2: [0]})
    admin.create_topic_partition_states(_states("t", [1]))
    results = admin.create_topic_partition_states(_states("t", [0, 1, 2]))
    assert results[TopicPartition("t", 0)] == 0 and results[TopicPartition("t", 2)] == 0
    assert isinstance(results[TopicPartition("t", 1)], NodeExistsException)
    ops = [CreateOp("/a"), DeleteOp("/missing"), CreateOp("/b")]
    written = fenced_writes.write_all(store, None, ops)
    assert written[0] == "/a" and isinstance(written[1], NoNodeException) and written[2] == "/b"


def test_a_batch_is_fenced_by_the_controller_epoch(store, admin):
    zk = KafkaZkClient.connect(store, TIMEOUT_MS)
    epoch, zk_version = zk.register_controller_and_increment_controller_epoch(0)
    admin.create_topic("t", {0: [0], 1: [0]})
    admin.increment_controller_epoch(zk_version)     # another controller was elected since
    with pytest.raises(ControllerMovedException):
        zk.create_topic_partition_states(_states("t", [0, 1], epoch), zk_version)
    assert admin.get_topic_partition_state(TopicPartition("t", 0)) is None
    assert not store.exists(topic_partition_state_path("t", 1))
