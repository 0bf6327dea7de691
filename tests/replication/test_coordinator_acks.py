"""The group coordinator's appends to __consumer_offsets wait for the in-sync replicas (acks=all), through the
produce purgatory, and fail with the coordinator's mapped error when they cannot get there."""
import threading
import time as wall

from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC
from kafkalab.protocol import ErrorCode as E
from kafkalab.cluster import Cluster

OVERRIDES = {"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 3,
             "offsets.commit.timeout.ms": 1500, "replica.lag.time.max.ms": 60_000}


def _commit(cluster, broker, group, offset):
    """Commit on the coordinator (on the cluster's loop); returns (results holder, event set on completion)."""
    done, holder = threading.Event(), []

    def callback(results):
        holder.append(results)
        done.set()
    cluster.call(lambda: broker.group_coordinator.handle_commit_offsets(
        group, "", None, -1, {("t", 0): OffsetAndMetadata(offset)}, callback))
    return holder, done


def test_commit_completes_when_followers_have_it_and_fails_mapped_without_them():
    with Cluster(brokers=3, overrides=OVERRIDES) as cluster:
        cluster.create_topic(OFFSETS_TOPIC, 1, 3, {"min.insync.replicas": 2, "cleanup.policy": "compact"})
        cluster.create_topic("t", 1, 3)
        leader = cluster.partition_state(OFFSETS_TOPIC, 0)["leader"]
        coordinator = cluster.broker(leader)
        cluster.wait_until(lambda: coordinator.group_coordinator.manager.owned_partitions == {0}, 10,
                           "coordinator did not load __consumer_offsets-0")
        holder, done = _commit(cluster, coordinator, "g", 42)
        assert done.wait(10) and holder[0] == {("t", 0): E.NONE}
        p = coordinator.replica_manager.get_partition(OFFSETS_TOPIC, 0)
        end = p.log.log_end_offset
        assert p.log.high_watermark >= end, "acknowledged only once the high watermark passed the append"
        for b in cluster.brokers.values():
            assert b.replica_manager.get_partition(OFFSETS_TOPIC, 0).log.log_end_offset == end
        # followers gone (the controller not told: the ISR stays {0,1,2}): the append waits, then times out
        for follower in [b for b in cluster.brokers if b != leader]:
            cluster.kill(follower, expire_session=False)
        start = wall.monotonic()
        holder, done = _commit(cluster, coordinator, "g", 43)
        assert not done.is_set(), "a local append is not enough"
        assert done.wait(10) and holder[0] == {("t", 0): E.REQUEST_TIMED_OUT}  # passed through, as Kafka does
        assert wall.monotonic() - start >= 1.0
        offsets = cluster.call(lambda: coordinator.group_coordinator.manager.get_offsets("g", [("t", 0)]))
        assert offsets[("t", 0)].offset == 42, "the cache changes only after a successful append"
