"""Admin operations on a broker: create, delete and grow topics, change their configs -- through ZooKeeper.

Theory of operation
-------------------
In the ZooKeeper era a broker that receives CreateTopics does not create anything itself. It validates the
request, decides the **replica assignment** (which brokers hold each partition) and writes it to
``/brokers/topics/<topic>`` (and the topic's configs to ``/config/topics/<topic>``). The controller, which
watches ``/brokers/topics``, then elects leaders and tells the replicas (LeaderAndIsr) and every broker
(UpdateMetadata). DeleteTopics only writes a marker under ``/admin/delete_topics``; the controller does the
rest. Config changes are written to ``/config/topics/<t>`` plus a sequential *change notification* under
``/config/changes`` that every broker watches to reload the topic's config.

Topic names: at most 249 characters of ASCII letters, digits, ``.``, ``_`` and ``-``, not ``.`` or ``..``.
``.`` and ``_`` collide in metric names, so Kafka warns about (and rejects creating) a topic that differs from
an existing one only by them.

Mirrors: ``core/src/main/scala/kafka/server/ZkAdminManager.scala``, ``core/src/main/scala/kafka/zk/AdminZkClient.scala``,
``clients/.../internals/Topic.java``, ``core/src/main/scala/kafka/server/ConfigHandler.scala``.
"""
from __future__ import annotations

import logging
import re
from typing import Optional

from kafkalab.controller.election import AssignmentError, assign_replicas_to_brokers
from kafkalab.protocol import ErrorCode
from kafkalab.server.partition import PartitionError
from kafkalab.storage.log_config import TOPIC_CONFIGS, LogConfig
from kafkalab.zk import NoNodeException, TopicExistsException
from kafkalab.zk.paths import ConfigType

__all__ = ["AdminManager", "validate_topic_name", "INTERNAL_TOPICS"]

log = logging.getLogger("kafkalab.server.AdminManager")

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: raise PartitionError(INVALID_TOPIC_EXCEPTION) with Kafka's wording."""
    if not name:
        raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                             f"topic name: {name}")
    if not _LEGAL.match(name):
        raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f'Topic name "{name}" is illegal, it contains a character other than ASCII '
                             f"alphanumerics, '.', '_' and '-'")


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


class AdminManager:
    def __init__(self, broker):
        self.broker = broker
        self.zk = broker.zk
        self.config = broker.config

    def _live_brokers(self) -> list[int]:
        return self.zk.get_sorted_broker_list()

    # ------------------------------------------------------------------------------------------ create
    def validate_new_topic(self, name: str, partitions: int, replication_factor: int, assignment: Optional[dict],
                           configs: dict) -> dict[int, list[int]]:
        """Everything CreateTopics checks; returns the assignment to write. Raises PartitionError."""
        validate_topic_name(name)
        if self.zk.topic_exists(name):
            raise PartitionError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        key = _collision_key(name)
        for existing in self.zk.get_all_topics_in_cluster():
            if _collision_key(existing) == key:
                raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                     f"Topic '{name}' collides with existing topic: {existing}")
        try:
            LogConfig.from_broker(self.config.originals, configs)
        except ValueError as e:
            raise PartitionError(ErrorCode.INVALID_CONFIG, str(e)) from None
        brokers = self._live_brokers()
        if assignment:
            if partitions != -1 or replication_factor != -1:
                raise PartitionError(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and "
                                     "replicasAssignments were set. Both cannot be used at the same time.")
            parts = sorted(assignment)
            if parts != list(range(len(parts))):
                raise PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     "Unexpected existing replica assignment for topic... partitions must be "
                                     "consecutive and start at 0")
            for p, replicas in assignment.items():
                if not replicas or len(set(replicas)) != len(replicas):
                    raise PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                         f"Duplicate replica assignment found: {list(replicas)}")
                missing = [b for b in replicas if b not in brokers]
                if missing:
                    raise PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                         f"Unknown broker(s) in replica assignment: {', '.join(map(str, missing))}.")
            return {p: list(r) for p, r in assignment.items()}
        if partitions == -1:
            partitions = self.config["num.partitions"]
        if replication_factor == -1:
            replication_factor = self.config["default.replication.factor"]
        if partitions <= 0:
            raise PartitionError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise PartitionError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        try:
            return assign_replicas_to_brokers(partitions, replication_factor, brokers)
        except AssignmentError as e:
            raise PartitionError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1,
                     assignment: Optional[dict] = None, configs: Optional[dict] = None,
                     validate_only: bool = False) -> tuple[dict, Optional[str]]:
        """Validate, then write the topic to ZooKeeper (unless ``validate_only``). Returns (assignment, topic id)."""
        configs = dict(configs or {})
        placed = self.validate_new_topic(name, partitions, replication_factor, assignment, configs)
        if validate_only:
            return placed, None
        try:
            topic_id = self.zk.create_topic(name, placed, configs)
        except TopicExistsException:
            raise PartitionError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
        log.info("broker %d: created topic %s with %d partition(s), replicas %s", self.broker.broker_id, name,
                 len(placed), placed)
        return placed, topic_id

    def auto_create_topics(self, names: list[str]) -> dict[str, Optional[PartitionError]]:
        """Metadata/Produce auto-creation with ``num.partitions`` and ``default.replication.factor``;
        ``__consumer_offsets`` uses the offsets topic settings (compacted)."""
        results = {}
        for name in names:
            try:
                if name == "__consumer_offsets":
                    brokers = len(self._live_brokers())
                    rf = self.config["offsets.topic.replication.factor"]
                    if brokers < rf:
                        raise PartitionError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                             f"Number of alive brokers '{brokers}' does not meet the required "
                                             f"replication factor '{rf}' for the offsets topic (configured via "
                                             f"'offsets.topic.replication.factor').")
                    self.create_topic(name, self.config["offsets.topic.num.partitions"], rf,
                                      configs={"cleanup.policy": "compact", "compression.type": "producer",
                                               "segment.bytes": "104857600"})
                else:
                    self.create_topic(name)
                results[name] = None
            except PartitionError as e:
                if e.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
                    results[name] = None  # somebody else created it first: fine
                else:
                    results[name] = e
        return results

    # ------------------------------------------------------------------------------------------ delete / grow
    def delete_topic(self, name: str) -> None:
        if not self.config["delete.topic.enable"]:
            raise PartitionError(ErrorCode.TOPIC_DELETION_DISABLED)
        if not self.zk.topic_exists(name):
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not self.zk.is_topic_marked_for_deletion(name):
            self.zk.create_delete_topic_path(name)

    def create_partitions(self, name: str, count: int, assignment: Optional[list] = None,
                          validate_only: bool = False) -> None:
        found = self.zk.get_replica_assignment_and_topic_id(name)
        if found is None or self.zk.is_topic_marked_for_deletion(name):
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        existing = {p: list(ra.replicas) for p, ra in found.assignment.items()}
        current = len(existing)
        if count < current:
            raise PartitionError(ErrorCode.INVALID_PARTITIONS,
                                 f"Topic currently has {current} partitions, which is higher than the requested "
                                 f"{count}.")
        if count == current:
            raise PartitionError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        brokers = self._live_brokers()
        rf = len(existing[0]) if existing else 1
        if assignment:
            if len(assignment) != count - current:
                raise PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"Increasing the number of partitions by {count - current} but "
                                     f"{len(assignment)} assignments provided.")
            new = {current + i: list(r) for i, r in enumerate(assignment)}
        else:
            try:
                new = assign_replicas_to_brokers(count - current, rf, brokers, start_partition=current,
                                                 start_index=existing[0][0] if existing else None)
            except AssignmentError as e:
                raise PartitionError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None
        if validate_only:
            return
        existing.update(new)
        self.zk.set_topic_assignment(name, found.topic_id, existing)

    # ------------------------------------------------------------------------------------------ configs
    def topic_config(self, name: str) -> LogConfig:
        return LogConfig.from_broker(self.config.originals, self.zk.get_entity_configs(ConfigType.TOPIC, name))

    def topic_overrides(self, name: str) -> dict:
        return self.zk.get_entity_configs(ConfigType.TOPIC, name)

    def alter_topic_config(self, name: str, changes: list[tuple[str, int, Optional[str]]],
                           validate_only: bool = False) -> None:
        """IncrementalAlterConfigs for a topic: ops 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (lists only)."""
        if not self.zk.topic_exists(name):
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        overrides = dict(self.topic_overrides(name))
        for key, op, value in changes:
            if key not in TOPIC_CONFIGS:
                raise PartitionError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
            if op == 0:
                overrides[key] = value
            elif op == 1:
                overrides.pop(key, None)
            elif op in (2, 3):
                if TOPIC_CONFIGS[key].type.name != "LIST":
                    raise PartitionError(ErrorCode.INVALID_CONFIG,
                                         f"Config value append is not allowed for config key: {key}")
                current = overrides.get(key)
                items = [s for s in (current.split(",") if current else
                                     [str(v) for v in self.topic_config(name)[key]]) if s]
                delta = [s for s in (value or "").split(",") if s]
                items = items + [d for d in delta if d not in items] if op == 2 else [i for i in items if i not in delta]
                overrides[key] = ",".join(items)
            else:
                raise PartitionError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
        try:
            LogConfig.from_broker(self.config.originals, overrides)
        except ValueError as e:
            raise PartitionError(ErrorCode.INVALID_CONFIG, str(e)) from None
        if not validate_only:
            self.zk.change_topic_config(name, overrides)

    # ------------------------------------------------------------------------------------------ notifications
    def watch_config_changes(self, apply) -> None:
        """Call ``apply(topic)`` for every topic-config change notification from now on."""
        seen: set[str] = set(n for n, _ in self.zk.get_config_change_notifications())

        def on_change(_event=None):
            try:
                notes = self.zk.get_config_change_notifications(watch=on_change)
            except NoNodeException:
                return
            for name, entity in notes:
                if name in seen:
                    continue
                seen.add(name)
                kind, _, topic = entity.partition("/")
                if kind == "topics":
                    apply(topic)

        self.zk.make_sure_persistent_path_exists("/config/changes")
        on_change()
