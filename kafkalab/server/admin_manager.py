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

So a ZooKeeper write is not the end of an admin request: a client that gave a timeout wants to hear back
only once the change is *visible*. Kafka parks such requests in the topic purgatory (``DelayedCreatePartitions``,
``DelayedDeleteTopics``) until the controller's UpdateMetadata shows every new partition with a leader, or the
topic gone; :meth:`AdminManager.wait_for` plays that part for the handlers in :mod:`kafkalab.server.apis.topics`.

**Bounded work.** A request names counts the broker expands (``num_partitions``, a CreatePartitions ``count``),
so a well-formed request for 2,147,483,647 partitions would have the broker build that many replica lists.
Kafka refuses a request that would create more than :data:`MAX_PARTITIONS_PER_BATCH` (10,000) partitions in
total, with POLICY_VIOLATION "Excessively large number of partitions per request." for every topic of it
(KAFKA-17870 for CreateTopics, KAFKA-19673/19674 for CreatePartitions and the ZooKeeper mode); the handlers
check the whole request before placing anything, and :meth:`AdminManager.create_topic` and
:meth:`AdminManager.create_partitions` check again before they build an assignment.

Topic names: at most 249 characters of ASCII letters, digits, ``.``, ``_`` and ``-``, not ``.`` or ``..``.
``.`` and ``_`` collide in metric names, so Kafka warns about (and rejects creating) a topic that differs from
an existing one only by them.

Mirrors: ``core/src/main/scala/kafka/server/ZkAdminManager.scala``, ``core/src/main/scala/kafka/zk/AdminZkClient.scala``,
``clients/.../internals/Topic.java``, ``core/src/main/scala/kafka/server/ConfigHandler.scala``,
``ConfigAdminManager.prepareIncrementalConfigs``, ``DelayedCreatePartitions.scala``, ``DelayedDeleteTopics.scala``.
"""
from __future__ import annotations

import asyncio
import logging
import re
from typing import Callable, Iterable, Optional

from kafkalab.controller.election import AssignmentError, assign_replicas_to_brokers
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.storage.errors import InvalidConfigurationError
from kafkalab.storage.log_config import TOPIC_CONFIGS, LogConfig
from kafkalab.zk import NodeExistsException, NoNodeException, TopicExistsException
from kafkalab.zk.paths import ConfigType

__all__ = ["AdminManager", "validate_topic_name", "is_legal_topic_name", "validate_total_number_of_partitions",
           "INTERNAL_TOPICS", "transaction_topic_configs", "MAX_PARTITIONS_PER_BATCH", "OP_SET", "OP_DELETE", "OP_APPEND", "OP_SUBTRACT"]

log = logging.getLogger("kafkalab.server.AdminManager")

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: IncrementalAlterConfigs operations (``AlterConfigOp.OpType``).
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
WAIT_POLL_S = 0.005
#: At most this many partitions created by one CreateTopics or CreatePartitions request (a constant in Kafka,
#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``, not a configuration).
MAX_PARTITIONS_PER_BATCH = 10_000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."


def transaction_topic_configs(config) -> dict:
    """The configs ``__transaction_state`` is created with (TransactionStateManager.transactionTopicConfigs):
    compacted, uncompressed, no unclean election, ``min.insync.replicas`` = ``transaction.state.log.min.isr``,
    ``segment.bytes`` = ``transaction.state.log.segment.bytes``."""
    return {"cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
            "segment.bytes": str(config["transaction.state.log.segment.bytes"])}


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: raise ApiException(INVALID_TOPIC_EXCEPTION) with Kafka's wording."""
    if not name:
        raise ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION,
                           f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                           f"topic name: {name}")
    if not _LEGAL.fullmatch(name):  # the whole name: ``$`` alone would let a trailing newline through
        raise ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION,
                           f'Topic name "{name}" is illegal, it contains a character other than ASCII '
                           f"alphanumerics, '.', '_' and '-'")


def validate_total_number_of_partitions(counts: Iterable[int]) -> None:
    """Raise POLICY_VIOLATION once the partitions a request would create pass :data:`MAX_PARTITIONS_PER_BATCH`.

    ``counts`` is one number per topic (non-positive ones add nothing: they fail their own checks); the sum is
    checked as it grows, so the answer comes before anything is built however large the numbers are."""
    total = 0
    for count in counts:
        if count > 0:
            total += count
            if total > MAX_PARTITIONS_PER_BATCH:
                raise ApiException(ErrorCode.POLICY_VIOLATION, EXCESSIVE_PARTITIONS)


def is_legal_topic_name(name: str) -> bool:
    """True when :func:`validate_topic_name` accepts ``name``: only such a topic can exist, so a request naming
    another one is answered without looking it up (a NUL byte is not even a legal znode path)."""
    try:
        validate_topic_name(name)
    except ApiException:
        return False
    return True


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


def _validate_replica_assignment(assignment: dict[int, list[int]], replication_factor: int) -> None:
    """AdminZkClient.validateReplicaAssignment for the partitions CreatePartitions adds by hand."""
    for p, replicas in sorted(assignment.items()):
        if not replicas:
            raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Cannot have replication factor of 0 for partition id {p}.")
        if len(set(replicas)) != len(replicas):
            raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Duplicate brokers not allowed in replica assignment: "
                               f"{', '.join(map(str, replicas))} for partition id {p}.")
    bad = [(p, len(r)) for p, r in sorted(assignment.items()) if len(r) != replication_factor]
    if bad:
        raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Inconsistent replication factor between partitions, partition 0 has "
                           f"{replication_factor} while partitions [{', '.join(str(p) for p, _ in bad)}] have "
                           f"replication factors [{', '.join(str(n) for _, n in bad)}], respectively.")


def _validate_assignment_shape(placed: dict[int, list[int]], brokers: list[int]) -> None:
    """The assignment's shape (AdminZkClient.validateTopicCreate): as many replicas everywhere, no duplicates,
    partitions 0..n-1; and every replica on a live broker."""
    if len({len(r) for r in placed.values()}) != 1:
        raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "All partitions should have the same number of replicas")
    for replicas in placed.values():
        if len(set(replicas)) != len(replicas):
            raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Duplicate replica assignment found: {placed}")
    if sorted(placed) != list(range(len(placed))):
        raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "partitions should be a consecutive 0-based integer sequence")
    # kafkalab (like a KRaft controller, unlike a ZooKeeper-era broker) refuses replicas on unknown brokers
    # up front instead of creating partitions that can never get a leader.
    if any(not r for r in placed.values()):
        raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes an empty replica list.")
    missing = sorted({b for r in placed.values() for b in r if b not in brokers})
    if missing:
        raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Unknown broker(s) in replica assignment: {', '.join(map(str, missing))}.")


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
        """Everything CreateTopics checks, in Kafka's order; returns the assignment to write. Raises ApiException.

        ``ZkAdminManager.createTopics`` first (already known, null config values, counts vs. manual assignment,
        placement), then ``AdminZkClient.validateTopicCreate`` (name, being deleted, exists, collisions, the
        shape of the assignment, the configs)."""
        if self.broker.metadata_cache.contains_topic(name):
            raise ApiException(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        nulls = [k for k, v in configs.items() if v is None]
        if nulls:
            raise ApiException(ErrorCode.INVALID_CONFIG,
                               f"Null value not supported for topic configs: {','.join(nulls)}")
        brokers = self._live_brokers()
        placed = self._place_new_topic(partitions, replication_factor, assignment, brokers)
        # AdminZkClient.validateTopicCreate
        validate_topic_name(name)
        if self.zk.is_topic_marked_for_deletion(name):
            raise ApiException(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
        if self.zk.topic_exists(name):
            raise ApiException(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            existing = self.zk.get_all_topics_in_cluster()
            if name in existing:
                raise ApiException(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            colliding = [t for t in existing if _collision_key(t) == _collision_key(name)]
            if colliding:
                raise ApiException(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   f"Topic '{name}' collides with existing topics: {', '.join(colliding)}")
        _validate_assignment_shape(placed, brokers)
        self._validate_topic_configs(configs)
        return placed

    def _place_new_topic(self, partitions: int, replication_factor: int, assignment: Optional[dict],
                         brokers: list[int]) -> dict[int, list[int]]:
        """The manual assignment as given, or counts (-1: the broker's defaults) placed on the live brokers."""
        if assignment:
            if partitions != -1 or replication_factor != -1:
                raise ApiException(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and "
                                   "replicasAssignments were set. Both cannot be used at the same time.")
            validate_total_number_of_partitions([len(assignment)])
            return {int(p): [int(b) for b in r] for p, r in assignment.items()}
        if partitions == -1:
            partitions = self.config["num.partitions"]
        if replication_factor == -1:
            replication_factor = self.config["default.replication.factor"]
        if partitions <= 0:
            raise ApiException(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        validate_total_number_of_partitions([partitions])
        try:
            return assign_replicas_to_brokers(partitions, replication_factor, brokers)
        except AssignmentError as e:
            raise ApiException(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None

    def partitions_to_create(self, num_partitions: int, assignment_size: int) -> int:
        """How many partitions a CreateTopics entry asks for, as Kafka counts them for the per-request limit:
        the manual assignment's size, else ``num_partitions`` (-1: ``num.partitions``)."""
        if assignment_size:
            return assignment_size
        return self.config["num.partitions"] if num_partitions == -1 else num_partitions

    def partitions_to_add(self, name: str, count: int) -> int:
        """How many partitions a CreatePartitions entry adds to ``name`` (0 when it adds none, or the topic is
        unknown: its own checks answer those)."""
        current = self.zk.get_topic_partition_count(name) if is_legal_topic_name(name) else None
        return 0 if current is None else max(0, count - current)

    def _validate_topic_configs(self, configs: dict) -> LogConfig:
        """LogConfig.validate: the names first (InvalidConfigurationException), then the values against the
        broker's defaults (ConfigException). Both are INVALID_CONFIG; the message says which."""
        for key in configs:
            if key not in TOPIC_CONFIGS:
                raise ApiException(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        try:
            return LogConfig.from_broker(self.config.originals, configs)
        except (ValueError, InvalidConfigurationError) as e:
            raise ApiException(ErrorCode.INVALID_CONFIG, str(e)) from None

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
            raise ApiException(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
        log.info("broker %d: created topic %s with %d partition(s), replicas %s", self.broker.broker_id, name,
                 len(placed), placed)
        return placed, topic_id

    def auto_create_topics(self, names: list[str]) -> dict[str, Optional[ApiException]]:
        """Metadata/Produce auto-creation with ``num.partitions`` and ``default.replication.factor``;
        ``__consumer_offsets`` uses the offsets topic settings (compacted), ``__transaction_state`` the
        ``transaction.state.log.*`` ones."""
        results = {}
        for name in names:
            try:
                if name == "__consumer_offsets":
                    brokers = len(self._live_brokers())
                    rf = self.config["offsets.topic.replication.factor"]
                    if brokers < rf:
                        raise ApiException(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                           f"Number of alive brokers '{brokers}' does not meet the required "
                                           f"replication factor '{rf}' for the offsets topic (configured via "
                                           f"'offsets.topic.replication.factor').")
                    self.create_topic(name, self.config["offsets.topic.num.partitions"], rf,
                                      configs={"cleanup.policy": "compact", "compression.type": "producer",
                                               "segment.bytes": "104857600"})
                elif name == "__transaction_state":
                    self._create_transaction_state_topic()
                else:
                    self.create_topic(name)
                results[name] = None
            except ApiException as e:
                if e.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
                    results[name] = None  # somebody else created it first: fine
                else:
                    results[name] = e
        return results

    def _create_transaction_state_topic(self) -> None:
        """``__transaction_state`` with ``transaction.state.log.*`` and TransactionLog's forced configs."""
        brokers = len(self._live_brokers())
        rf = self.config["transaction.state.log.replication.factor"]
        if brokers < rf:
            raise ApiException(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               f"Number of alive brokers '{brokers}' does not meet the required replication factor "
                               f"'{rf}' for the transactions state topic (configured via "
                               f"'transaction.state.log.replication.factor'). This error can be ignored if the "
                               f"cluster is starting up and not all brokers are up yet.")
        self.create_topic("__transaction_state", self.config["transaction.state.log.num.partitions"], rf,
                          configs=transaction_topic_configs(self.config))

    # ------------------------------------------------------------------------------------------ delete / grow
    def delete_topic(self, name: str) -> None:
        """AdminZkClient.deleteTopic: write the marker ``/admin/delete_topics/<topic>``; the controller does the
        rest. A topic already marked is fine (the caller still waits for it to go)."""
        if not self.config["delete.topic.enable"]:
            raise ApiException(ErrorCode.TOPIC_DELETION_DISABLED)
        if not is_legal_topic_name(name) or not self.zk.topic_exists(name):
            raise ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic `{name}` to delete does not exist")
        if not self.zk.is_topic_marked_for_deletion(name):
            try:
                self.zk.create_delete_topic_path(name)
            except NodeExistsException:
                pass  # TopicAlreadyMarkedForDeletionException: swallowed, as Kafka does

    def is_topic_queued_for_deletion(self, name: str) -> bool:
        controller = self.broker.controller
        queued = controller is not None and name in controller.context.topics_being_deleted
        return queued or (is_legal_topic_name(name) and self.zk.is_topic_marked_for_deletion(name))

    def create_partitions(self, name: str, count: int, assignment: Optional[list] = None,
                          validate_only: bool = False) -> list[int]:
        """CreatePartitions for one topic (``ZkAdminManager.createPartitions``,
        ``AdminZkClient.createNewPartitionsAssignment``). ``assignment`` is None (place them like a new topic's)
        or one replica list per new partition. Returns every partition the topic has afterwards."""
        found = self.zk.get_replica_assignment_and_topic_id(name) if is_legal_topic_name(name) else None
        if found is None or not found.assignment:
            raise ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        existing = {p: list(ra.replicas) for p, ra in found.assignment.items()}
        current = len(existing)
        increment = count - current
        if increment < 0:
            raise ApiException(ErrorCode.INVALID_PARTITIONS,
                               f"Topic currently has {current} partitions, which is higher than the requested "
                               f"{count}.")
        if increment == 0:
            raise ApiException(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        validate_total_number_of_partitions([increment])
        brokers = self._live_brokers()
        first = existing.get(0)
        if first is None:
            raise ApiException(ErrorCode.UNKNOWN_SERVER_ERROR,
                               f"Unexpected existing replica assignment for topic '{name}', partition id 0 is "
                               f"missing. Assignment: {existing}")
        if assignment is not None:
            unknown = sorted({b for r in assignment for b in r} - set(brokers))
            if unknown:
                raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
            if len(assignment) != increment:
                raise ApiException(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"Increasing the number of partitions by {increment} but {len(assignment)} "
                                   f"assignments provided.")
            new = {current + i: [int(b) for b in r] for i, r in enumerate(assignment)}
            _validate_replica_assignment(new, len(first))
        else:
            # AdminZkClient: start at the broker holding partition 0's first replica (its index in the list).
            start = max(0, next((i for i, b in enumerate(brokers) if b >= first[0]), -1))
            try:
                new = assign_replicas_to_brokers(increment, len(first), brokers, start_partition=current,
                                                 start_index=start)
            except AssignmentError as e:
                raise ApiException(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None
        existing.update(new)
        if not validate_only:
            self.zk.set_topic_assignment(name, found.topic_id, existing)
            log.info("broker %d: topic %s now has %d partitions (new: %s)", self.broker.broker_id, name,
                     len(existing), new)
        return sorted(existing)

    # ------------------------------------------------------------------------------------------ configs
    def topic_config(self, name: str) -> LogConfig:
        return LogConfig.from_broker(self.config.originals, self.zk.get_entity_configs(ConfigType.TOPIC, name))

    def topic_overrides(self, name: str) -> dict:
        return self.zk.get_entity_configs(ConfigType.TOPIC, name)

    def alter_topic_config(self, name: str, changes: list[tuple[str, int, Optional[str]]],
                           validate_only: bool = False) -> None:
        """IncrementalAlterConfigs for a topic: ops 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (lists only).

        As ``ZkAdminManager.incrementalAlterConfigs``: apply the operations to the stored overrides
        (``prepareIncrementalConfigs``; APPEND/SUBTRACT start from the built-in default when the topic has no
        override), then check the topic exists and validate the result, then write it and the change
        notification every broker reacts to."""
        if not name:
            raise ApiException(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        validate_topic_name(name)   # first, as AdminZkClient.validateTopicConfig (and before any znode path)
        overrides = dict(self.topic_overrides(name))
        for key, op, value in changes:
            if op == OP_SET:
                overrides[key] = value
            elif op == OP_DELETE:
                overrides.pop(key, None)
            elif op in (OP_APPEND, OP_SUBTRACT):
                verb = "append" if op == OP_APPEND else "subtract"
                spec = TOPIC_CONFIGS.get(key)
                if spec is None:
                    raise ApiException(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
                if spec.type.name != "LIST":
                    raise ApiException(ErrorCode.INVALID_CONFIG,
                                       f"Config value {verb} is not allowed for config key: {key}")
                current = overrides.get(key)
                if current is None:
                    current = ",".join(spec.default) if spec.default else ""
                items = [s for s in current.split(",") if s] if op == OP_APPEND else current.split(",")
                delta = (value or "").split(",")
                if op == OP_APPEND:
                    items = items + [d for d in delta if d not in items]
                else:
                    for d in delta:  # a multiset difference, like Scala's List.diff
                        if d in items:
                            items.remove(d)
                overrides[key] = ",".join(items)
            else:
                raise ApiException(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
        if not self.broker.metadata_cache.contains_topic(name) or not self.zk.topic_exists(name):
            raise ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        try:
            self._validate_topic_configs(overrides)
        except ApiException as e:
            message = str(e)
            if message.startswith("Invalid value"):  # a ConfigException: Kafka names the resource
                message = f"Invalid config value for resource ConfigResource(type=TOPIC, name='{name}'): {message}"
            raise ApiException(ErrorCode.INVALID_CONFIG, message) from None
        if not validate_only:
            log.info("broker %d: updating topic %s with new configuration: %s", self.broker.broker_id, name,
                     overrides)
            self.zk.change_topic_config(name, overrides)

    # ------------------------------------------------------------------------------------------ waiting
    async def wait_for(self, done: Callable[[], bool], timeout_ms: int) -> bool:
        """Wait until ``done()`` (a look at this broker's metadata cache) holds, at most ``timeout_ms``.

        This plays Kafka's *topic purgatory* (``DelayedCreatePartitions``, ``DelayedDeleteTopics``): the
        operation waits for the controller's UpdateMetadata to reach this broker. Kafka re-checks it each time
        an UpdateMetadata arrives; kafkalab's metadata cache has no change callback, so it looks every few
        milliseconds instead -- on the event loop, never holding a request handler."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        while not done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(WAIT_POLL_S, remaining))
        return True

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
