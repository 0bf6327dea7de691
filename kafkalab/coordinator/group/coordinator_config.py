"""The group coordinator's broker settings (``group.*``, ``offsets.*``), declared once against ``ConfigDef``.

Theory of operation
-------------------
The coordinator is configured by broker keys: the session timeouts a member may ask for
(``group.min.session.timeout.ms`` .. ``group.max.session.timeout.ms``; outside them JoinGroup fails with
INVALID_SESSION_TIMEOUT), how long the first rebalance of an empty group waits
(``group.initial.rebalance.delay.ms``), the largest group (``group.max.size``), and the shape and retention of
``__consumer_offsets`` (``offsets.topic.num.partitions``, ``offsets.retention.minutes``...). They are declared
here, next to the coordinator that reads them, so that the broker's table (``KafkaConfig``), DescribeConfigs
and :class:`~kafkalab.coordinator.group.coordinator.GroupConfig` all take their defaults from one place.

Mirrors: ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorConfig.java``.
"""
from __future__ import annotations

from kafkalab.common.config import INT_MAX, ConfigDef, Importance, Range
from kafkalab.common.config import Type as T

__all__ = ["GROUP_COORDINATOR_CONFIGS"]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

GROUP_COORDINATOR_CONFIGS = (
    ConfigDef()
    .define("offsets.topic.num.partitions", T.INT, 50, Range.at_least(1), H, "Partitions of __consumer_offsets "
            "(fixed once the topic exists).")
    .define("offsets.topic.replication.factor", T.SHORT, 1, Range.at_least(1), H, "Replication factor of "
            "__consumer_offsets (Kafka's built-in default is 3; its sample server.properties sets 1, as kafkalab "
            "does).")
    .define("group.min.session.timeout.ms", T.INT, 6000, None, M, "Smallest session.timeout.ms a group member "
            "may ask for.")
    .define("group.max.session.timeout.ms", T.INT, 1800000, None, M, "Largest session.timeout.ms a group member "
            "may ask for.")
    .define("group.initial.rebalance.delay.ms", T.INT, 3000, None, M, "How long the first rebalance of an empty "
            "group waits for more members to join.")
    .define("group.max.size", T.INT, INT_MAX, Range.at_least(1), M, "Most members one consumer group may have.")
    .define("offsets.retention.minutes", T.INT, 10080, Range.at_least(1), H, "How long the offsets of an empty "
            "group are kept.")
    .define("offsets.retention.check.interval.ms", T.LONG, 600000, Range.at_least(1), H, "How often expired "
            "offsets are looked for.")
    .define("offsets.commit.timeout.ms", T.INT, 5000, Range.at_least(1), H, "How long an offset commit waits for "
            "the in-sync replicas of __consumer_offsets (acks=all) before failing.")
    .define("offset.metadata.max.bytes", T.INT, 4096, None, H, "Largest metadata string of a committed offset.")
)
