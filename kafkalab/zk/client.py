"""KafkaZkClient: what Kafka's brokers and controller ask of ZooKeeper, each a few store operations.

Theory of operation
-------------------
Kafka never uses ZooKeeper's API directly in its logic: it goes through ``KafkaZkClient``, one method per
question ("register me", "who is the controller?", "write this partition state if nobody changed it"). Four
patterns recur, and this module shows each in a handful of lines:

1. **Ephemeral registration.** ``register_broker`` creates ``/brokers/ids/<id>`` on the broker's session (as
   Kafka does: create empty, then set the data with ``version 0``, in one multi) and returns its czxid -- the
   **broker epoch** the controller uses to tell a restarted broker from its previous incarnation.
2. **Election by create.** ``register_controller_and_increment_controller_epoch`` creates the ephemeral
   ``/controller`` and bumps ``/controller_epoch`` conditionally on its version, atomically. The first broker
   to succeed is the controller; the others get NODEEXISTS, leave a watch on ``/controller`` and try again when
   it is deleted (the controller's session ended). The new **controller epoch** fences the old one.
3. **Conditional writes.** Partition states are written with the version read last (``partition_epoch``, the
   zkVersion): a write based on stale state fails with BADVERSION instead of overwriting a newer decision
   (``update_leader_and_isr``, ``conditional_update_path``). Controller writes may also carry
   ``expected_controller_epoch_zk_version``: they become ``multi([CheckOp("/controller_epoch", v), write])`` and
   raise :class:`ControllerMovedException` once another controller has bumped the epoch.
4. **Notifications as sequential znodes.** A broker whose ISR changed, or an admin who changed a config,
   creates ``isr_change_<seq>`` / ``config_change_<seq>``; the controller (or every broker) has a child watch on
   the parent, reads the new children and deletes them once handled.

The client is bound to one :class:`~kafkalab.zk.store.Session` (or None: an all-powerful admin that never
expires). Where Kafka's client blocks and retries until reconnected, ours raises ``ConnectionLossException``
(session isolated) or ``SessionExpiredException``; :meth:`KafkaZkClient.reinitialize` opens a new session, as
Kafka does after expiry, after which the broker must register again.

Mirrors: ``core/src/main/scala/kafka/zk/KafkaZkClient.scala``, ``AdminZkClient.scala``,
``kafka/coordinator/transaction/ProducerIdManager.scala`` (``ZkProducerIdManager``),
``kafka/server/KafkaServer.scala`` (``getOrGenerateClusterId``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

from kafkalab.common import Time
from kafkalab.zk import fenced_writes
from kafkalab.zk.errors import (BadVersionException, KeeperException, NodeExistsException, NoNodeException,
                               NotEmptyException)
from kafkalab.zk.paths import (BROKER_IDS_PATH, BROKER_SEQUENCE_ID_PATH, CLUSTER_ID_PATH, CONFIG_CHANGE_PREFIX,
                               CONFIG_CHANGES_PATH, CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, DEFAULT_ENTITY,
                               DELETE_TOPICS_PATH, ISR_CHANGE_NOTIFICATION_PATH, ISR_CHANGE_PREFIX,
                               PERSISTENT_ZK_PATHS, PREFERRED_REPLICA_ELECTION_PATH, PRODUCER_ID_BLOCK_PATH,
                               TOPICS_PATH, BrokerInfo, ConfigType, ControllerRegistration, LeaderAndIsr,
                               LeaderIsrAndControllerEpoch, ProducerIdsBlock, ReplicaAssignment,
                               TopicIdReplicaAssignment, TopicPartition, config_entity_path, config_entity_type_path,
                               decode_broker_info, decode_cluster_id, decode_config_change_notification,
                               decode_controller, decode_controller_epoch, decode_entity_config,
                               decode_isr_change_notification, decode_log_dir_event_notification,
                               encode_log_dir_event_notification, log_dir_event_notification_path,
                               LOG_DIR_EVENT_NOTIFICATION_PATH, LOG_DIR_EVENT_PREFIX,
                               decode_partition_state, decode_preferred_replica_election, decode_producer_id_block,
                               decode_topic_assignment, delete_topic_path, encode_broker_info, encode_cluster_id,
                               encode_config_change_notification, encode_controller, encode_controller_epoch,
                               encode_entity_config, encode_isr_change_notification, encode_partition_state,
                               encode_preferred_replica_election, encode_producer_id_block, encode_topic_assignment,
                               isr_change_notification_path, random_uuid, sequence_number, topic_partition_path,
                               topic_partition_state_path, topic_partitions_path, topic_path)
from kafkalab.zk.fenced_writes import ControllerMovedException
from kafkalab.zk.store import CreateOp, DeleteOp, Op, Session, SetDataOp, Stat, ZkStore
from kafkalab.zk.watches import Watcher

__all__ = ["KafkaZkClient", "ControllerMovedException", "TopicExistsException", "UpdateLeaderAndIsrResult",
           "MATCH_ANY_VERSION", "UNKNOWN_VERSION", "INITIAL_CONTROLLER_EPOCH", "INITIAL_CONTROLLER_EPOCH_ZK_VERSION"]

MATCH_ANY_VERSION = -1  # ZkVersion.MatchAnyVersion
UNKNOWN_VERSION = -2    # ZkVersion.UnknownVersion: "the znode does not exist" (Kafka's own constant)
INITIAL_CONTROLLER_EPOCH = 0            # KafkaController.InitialControllerEpoch
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0
_MAX_LONG = (1 << 63) - 1


class TopicExistsException(NodeExistsException):
    """AdminZkClient's translation of NODEEXISTS on ``/brokers/topics/<topic>`` (error TOPIC_ALREADY_EXISTS)."""


@dataclass
class UpdateLeaderAndIsrResult:
    """Per partition: the written LeaderAndIsr (with its new partition_epoch) or the exception; partitions that
    hit BADVERSION (someone else wrote first) are to be re-read and retried."""
    finished_partitions: dict[TopicPartition, Union[LeaderAndIsr, Exception]] = field(default_factory=dict)
    partitions_to_retry: list[TopicPartition] = field(default_factory=list)


class KafkaZkClient:
    def __init__(self, store: ZkStore, session: Optional[Session] = None, *, time: Optional[Time] = None):
        self.store = store
        self.session = session
        self.time = time or store.time

    @classmethod
    def connect(cls, store: ZkStore, session_timeout_ms: int = 18_000, **session_options) -> "KafkaZkClient":
        """Open a session (``zookeeper.session.timeout.ms``, default 18000) and a client bound to it."""
        return cls(store, store.open_session(session_timeout_ms, **session_options))

    def reinitialize(self, **session_options) -> Session:
        """After ``Expired``: open a fresh session (ephemeral znodes must then be created again)."""
        old = self.session
        timeout = old.timeout_ms if old is not None else 18_000
        if old is not None:
            session_options.setdefault("auto_heartbeat", old.auto_heartbeat)
            session_options.setdefault("dispatcher", old.dispatcher)
        self.session = self.store.open_session(timeout, **session_options)
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.store.close_session(self.session)

    # -- generic helpers (KafkaZkClient's own building blocks) ----------------------------------------------
    def get_data_and_stat(self, path: str, watch: Optional[Watcher] = None
                          ) -> tuple[Optional[bytes], Optional[Stat]]:
        try:
            return self.store.get(path, watch, session=self.session)
        except NoNodeException:
            return None, None

    def get_data_and_version(self, path: str) -> tuple[Optional[bytes], int]:
        data, stat = self.get_data_and_stat(path)
        return data, (UNKNOWN_VERSION if stat is None else stat.version)

    def get_children(self, path: str, watch: Optional[Watcher] = None) -> list[str]:
        try:
            return self.store.get_children(path, watch, session=self.session)
        except NoNodeException:
            return []

    def path_exists(self, path: str, watch: Optional[Watcher] = None) -> bool:
        return self.store.exists(path, watch, session=self.session) is not None

    def conditional_update_path(self, path: str, data: bytes, expect_version: int) -> tuple[bool, int]:
        """Set ``path`` only if it is still at ``expect_version``: (True, new version) or
        (False, UNKNOWN_VERSION) when the version moved on or the znode is gone."""
        try:
            return True, self.store.set(path, data, expect_version, session=self.session).version
        except (BadVersionException, NoNodeException):
            return False, UNKNOWN_VERSION

    def conditional_delete_path(self, path: str, expect_version: int) -> bool:
        """Delete ``path`` only if it is still at ``expect_version`` (Kafka's ``conditionalDelete``): True when
        deleted or already gone, False when the version moved on (or it gained children)."""
        try:
            self.store.delete(path, expect_version, session=self.session)
            return True
        except NoNodeException:
            return True
        except (BadVersionException, NotEmptyException):
            return False

    def create_recursive(self, path: str, data: Optional[bytes] = None, throw_if_path_exists: bool = True) -> None:
        """Create ``path`` (parents as empty persistent znodes). NodeExistsException unless told otherwise."""
        try:
            self.store.create(path, data, make_parents=True, session=self.session)
        except NodeExistsException:
            if throw_if_path_exists:
                raise

    def make_sure_persistent_path_exists(self, path: str) -> None:
        self.create_recursive(path, None, throw_if_path_exists=False)

    def create_top_level_paths(self) -> None:
        """What every broker does on startup (ZkData.PersistentZkPaths)."""
        for path in PERSISTENT_ZK_PATHS:
            self.make_sure_persistent_path_exists(path)

    def create_sequential_persistent_path(self, path: str, data: Optional[bytes] = None) -> str:
        return self.store.create(path, data, sequential=True, make_parents=True, session=self.session)

    def delete_recursive(self, path: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> bool:
        """Delete ``path`` and everything under it (children first, in batches: :meth:`_write_all`); False if
        it did not exist."""
        doomed: list[str] = []
        stack = [(path, False)]
        while stack:  # post-order: every znode after its children
            current, expanded = stack.pop()
            if expanded:
                doomed.append(current)
                continue
            try:
                children = self.store.get_children(current, session=self.session)
            except NoNodeException:
                continue
            stack.append((current, True))
            stack.extend((f"{current.rstrip('/')}/{child}", False) for child in children)
        if not doomed:
            return False
        for result in self._write_all([DeleteOp(p) for p in doomed], expected_controller_epoch_zk_version):
            if isinstance(result, KeeperException) and not isinstance(result, NoNodeException):
                raise result
        return True

    def multi(self, ops: list) -> list:
        """Several writes as one transaction, all or nothing (ZooKeeper's ``multi``): per op its result; the
        first failing op's KeeperException otherwise (nothing written)."""
        return self.store.multi(ops, session=self.session)

    def conditional_delete_paths(self, expected_versions: dict[str, int]) -> None:
        """Delete many independent znodes, each only at its expected version, in batches of one multi each
        (:meth:`_write_all`); those gone already or changed since are left alone."""
        self._write_all([DeleteOp(path, version) for path, version in expected_versions.items()])

    def _write(self, op: Op, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION):
        """One write, fenced by the controller epoch's zkVersion unless it is MATCH_ANY_VERSION."""
        return fenced_writes.write(self.store, self.session, op, expected_controller_epoch_zk_version)

    def _write_all(self, ops: list, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> list:
        """Many independent writes in batches (:func:`~kafkalab.zk.fenced_writes.write_all`): per op its result
        or its KeeperException."""
        return fenced_writes.write_all(self.store, self.session, ops, expected_controller_epoch_zk_version)

    # -- brokers --------------------------------------------------------------------------------------------
    def register_broker(self, broker_info: BrokerInfo) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; returns its czxid, the broker epoch."""
        if self.session is None:
            raise ValueError("registering a broker needs a session (its znode is ephemeral)")
        data = encode_broker_info(broker_info, self.time.milliseconds())
        try:  # Kafka's CheckedEphemeral: create with no data, then set it at version 0, atomically
            stat = self.store.multi([CreateOp(broker_info.path, None, ephemeral=True),
                                     SetDataOp(broker_info.path, data, 0)], session=self.session)[1]
        except NodeExistsException:
            _, stat = self.get_data_and_stat(broker_info.path)
            if stat is None or stat.ephemeral_owner != self.session.session_id:
                raise
        return stat.czxid

    def update_broker_info(self, broker_info: BrokerInfo) -> None:
        self.store.set(broker_info.path, encode_broker_info(broker_info, self.time.milliseconds()),
                       session=self.session)

    def get_sorted_broker_list(self, watch: Optional[Watcher] = None) -> list[int]:
        return sorted(int(c) for c in self.get_children(BROKER_IDS_PATH, watch))

    def get_broker(self, broker_id: int) -> Optional[BrokerInfo]:
        data, _ = self.get_data_and_stat(f"{BROKER_IDS_PATH}/{broker_id}")
        return None if data is None else decode_broker_info(broker_id, data)

    def get_all_brokers_in_cluster(self) -> list[BrokerInfo]:
        return [b for b, _ in self.get_all_broker_and_epochs_in_cluster().values()]

    def get_all_broker_and_epochs_in_cluster(self) -> dict[int, tuple[BrokerInfo, int]]:
        """broker id -> (BrokerInfo, broker epoch); brokers that vanish while we read are skipped."""
        out = {}
        for broker_id in self.get_sorted_broker_list():
            data, stat = self.get_data_and_stat(f"{BROKER_IDS_PATH}/{broker_id}")
            if data is not None:
                out[broker_id] = (decode_broker_info(broker_id, data), stat.czxid)
        return out

    def generate_broker_sequence_id(self) -> int:
        """Set ``/brokers/seqid`` and return its new version (KafkaServer adds reserved.broker.max.id)."""
        try:
            return self.store.set(BROKER_SEQUENCE_ID_PATH, b"", session=self.session).version
        except NoNodeException:
            self.create_recursive(BROKER_SEQUENCE_ID_PATH, b"", throw_if_path_exists=False)
            return self.generate_broker_sequence_id()

    # -- topics and assignments -----------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: dict[int, Iterable[int]], config: Optional[dict] = None, *,
                     topic_id: Optional[str] = None, uses_topic_id: bool = True) -> Optional[str]:
        """AdminZkClient.createTopicWithAssignment: the config znode first (not atomic with the rest), then
        the assignment znode, which the controller is watching for. Returns the topic id."""
        if self.topic_exists(topic):
            raise TopicExistsException(topic_path(topic), f"Topic '{topic}' already exists.")
        self.set_or_create_entity_configs(ConfigType.TOPIC, topic, config or {})
        if topic_id is None and uses_topic_id:
            topic_id = random_uuid()
        try:
            self.create_topic_assignment(topic, topic_id, assignment)
        except NodeExistsException:
            raise TopicExistsException(topic_path(topic), f"Topic '{topic}' already exists.") from None
        return topic_id

    def create_topic_assignment(self, topic: str, topic_id: Optional[str], assignment: dict) -> None:
        self.create_recursive(topic_path(topic), encode_topic_assignment(topic_id, assignment))

    def set_topic_assignment(self, topic: str, topic_id: Optional[str], assignment: dict,
                             expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        self._write(SetDataOp(topic_path(topic), encode_topic_assignment(topic_id, assignment)),
                    expected_controller_epoch_zk_version)

    def get_replica_assignment_and_topic_id(self, topic: str, watch: Optional[Watcher] = None
                                            ) -> Optional[TopicIdReplicaAssignment]:
        data, _ = self.get_data_and_stat(topic_path(topic), watch)
        return None if data is None else decode_topic_assignment(topic, data)

    def get_partition_assignment(self, topic: str) -> dict[int, ReplicaAssignment]:
        """partition -> ReplicaAssignment (empty when the topic does not exist)."""
        found = self.get_replica_assignment_and_topic_id(topic)
        return {} if found is None else found.assignment

    def get_topic_id(self, topic: str) -> Optional[str]:
        found = self.get_replica_assignment_and_topic_id(topic)
        return None if found is None else found.topic_id

    def get_topic_partition_count(self, topic: str) -> Optional[int]:
        found = self.get_replica_assignment_and_topic_id(topic)
        return None if found is None else len(found.assignment)

    def get_replicas_for_partition(self, tp: TopicPartition) -> list[int]:
        ra = self.get_partition_assignment(tp.topic).get(tp.partition)
        return [] if ra is None else list(ra.replicas)

    def get_all_topics_in_cluster(self, watch: Optional[Watcher] = None) -> list[str]:
        return self.get_children(TOPICS_PATH, watch)

    def topic_exists(self, topic: str) -> bool:
        return self.path_exists(topic_path(topic))

    # -- partition states -----------------------------------------------------------------------------------
    def create_topic_partition_states(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                      expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
                                      ) -> dict[TopicPartition, Union[int, KeeperException]]:
        """Create each ``.../partitions/<p>/state`` (and its parents). Per partition: the new zkVersion (0)
        or the KeeperException (NodeExistsException if another controller got there first)."""
        parents = sorted({topic_partitions_path(tp.topic) for tp in states} |
                         {topic_partition_path(*tp) for tp in states})
        # existing parents (new partitions of an old topic) are left out, so the rest can go as one batch;
        # NodeExists / NoNode among them is reported per partition below
        self._write_all([CreateOp(path) for path in parents if not self.path_exists(path)],
                        expected_controller_epoch_zk_version)
        partitions = list(states)
        written = self._write_all([CreateOp(topic_partition_state_path(*tp), encode_partition_state(states[tp]))
                                   for tp in partitions], expected_controller_epoch_zk_version)
        return {tp: (result if isinstance(result, KeeperException) else 0)
                for tp, result in zip(partitions, written)}

    def create_topic_partition_state(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch,
                                     expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> int:
        result = self.create_topic_partition_states({tp: state}, expected_controller_epoch_zk_version)[tp]
        if isinstance(result, Exception):
            raise result
        return result

    def get_topic_partition_state(self, tp: TopicPartition, watch: Optional[Watcher] = None
                                  ) -> Optional[LeaderIsrAndControllerEpoch]:
        """The state with ``leader_and_isr.partition_epoch`` = the znode's version, or None."""
        data, stat = self.get_data_and_stat(topic_partition_state_path(*tp), watch)
        return None if data is None else decode_partition_state(data, stat.version)

    def get_topic_partition_states(self, partitions: Iterable[TopicPartition]
                                   ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        out = {}
        for tp in partitions:
            state = self.get_topic_partition_state(tp)
            if state is not None:
                out[tp] = state
        return out

    def update_leader_and_isr(self, leader_and_isrs: dict[TopicPartition, LeaderAndIsr], controller_epoch: int,
                              expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
                              ) -> UpdateLeaderAndIsrResult:
        """The controller's write: each state conditional on its ``partition_epoch`` (the version it read).
        ControllerMovedException propagates: a fenced controller must stop altogether."""
        result = UpdateLeaderAndIsrResult()
        partitions = list(leader_and_isrs)
        written = self._write_all([SetDataOp(topic_partition_state_path(*tp), encode_partition_state(
            LeaderIsrAndControllerEpoch(leader_and_isrs[tp], controller_epoch)), leader_and_isrs[tp].partition_epoch)
            for tp in partitions], expected_controller_epoch_zk_version)
        for tp, stat in zip(partitions, written):
            if isinstance(stat, BadVersionException):
                result.partitions_to_retry.append(tp)
            elif isinstance(stat, KeeperException):
                result.finished_partitions[tp] = stat
            else:
                result.finished_partitions[tp] = leader_and_isrs[tp].with_partition_epoch(stat.version)
        return result

    def update_partition_state(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch,
                               expected_version: int) -> tuple[bool, int]:
        """The leader's own ISR write of the ZooKeeper era (before AlterPartition, KIP-497): conditional on
        the zkVersion it last saw; (True, new zkVersion) or (False, UNKNOWN_VERSION) after a concurrent change."""
        return self.conditional_update_path(topic_partition_state_path(*tp), encode_partition_state(state),
                                            expected_version)

    # -- configs --------------------------------------------------------------------------------------------
    def set_or_create_entity_configs(self, entity_type: str, entity_name: str, config: dict) -> None:
        path, data = config_entity_path(entity_type, entity_name), encode_entity_config(config)
        try:
            self.store.set(path, data, session=self.session)
        except NoNodeException:
            try:
                self.create_recursive(path, data)
            except NodeExistsException:
                self.store.set(path, data, session=self.session)

    def get_entity_configs(self, entity_type: str, entity_name: str) -> dict[str, str]:
        data, _ = self.get_data_and_stat(config_entity_path(entity_type, entity_name))
        return decode_entity_config(data)

    def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        return self.get_children(config_entity_type_path(entity_type))

    def create_config_change_notification(self, sanitized_entity_path: str) -> str:
        return self.create_sequential_persistent_path(f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}",
                                                      encode_config_change_notification(sanitized_entity_path))

    def change_topic_config(self, topic: str, config: dict) -> str:
        """AdminZkClient.changeTopicConfig: write the overrides, then notify every broker."""
        self.set_or_create_entity_configs(ConfigType.TOPIC, topic, config)
        return self.create_config_change_notification(f"{ConfigType.TOPIC}/{topic}")

    def change_broker_config(self, broker_id: Optional[int], config: dict) -> str:
        """Dynamic broker config; ``broker_id=None`` writes the cluster-wide default (``<default>``)."""
        name = DEFAULT_ENTITY if broker_id is None else str(broker_id)
        self.set_or_create_entity_configs(ConfigType.BROKER, name, config)
        return self.create_config_change_notification(f"{ConfigType.BROKER}/{name}")

    def get_config_change_notifications(self, watch: Optional[Watcher] = None) -> list[tuple[str, str]]:
        """[(znode name, entity path)] under ``/config/changes``, oldest first."""
        out = []
        for name in self.get_children(CONFIG_CHANGES_PATH, watch):
            data, _ = self.get_data_and_stat(f"{CONFIG_CHANGES_PATH}/{name}")
            if data is not None:
                out.append((name, decode_config_change_notification(data)))
        return out

    def delete_topic_configs(self, topics: Iterable[str],
                             expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        for topic in topics:
            try:
                self._write(DeleteOp(config_entity_path(ConfigType.TOPIC, topic)), expected_controller_epoch_zk_version)
            except NoNodeException:
                pass

    # -- controller election --------------------------------------------------------------------------------
    def register_controller_and_increment_controller_epoch(self, controller_id: int,
                                                           session: Optional[Session] = None) -> tuple[int, int]:
        """Become the controller: (new controller epoch, its zkVersion), or ControllerMovedException."""
        session = session or self.session
        if session is None:
            raise ValueError("running for controller needs a session (/controller is ephemeral)")
        current = self.get_controller_epoch() or self._maybe_create_controller_epoch_znode()
        new_epoch = current[0] + 1
        try:
            stat = self.store.multi([
                CreateOp(CONTROLLER_PATH, encode_controller(controller_id, self.time.milliseconds()), ephemeral=True),
                SetDataOp(CONTROLLER_EPOCH_PATH, encode_controller_epoch(new_epoch), current[1])],
                session=session)[1]
            return new_epoch, stat.version
        except (NodeExistsException, BadVersionException):
            # the multi failed; maybe our own earlier attempt won (Kafka's checkControllerAndEpoch)
            if self.get_controller_id() == controller_id:
                epoch = self.get_controller_epoch()
                if epoch is not None and epoch[0] == new_epoch:
                    return epoch
            raise ControllerMovedException("Controller moved to another broker. "
                                           "Aborting controller startup procedure") from None

    def try_create_controller(self, broker_id: int, session: Optional[Session] = None) -> bool:
        """Run for controller: True if this broker won (the epoch is then ``get_controller_epoch()``)."""
        try:
            self.register_controller_and_increment_controller_epoch(broker_id, session)
            return True
        except ControllerMovedException:
            return False

    def _maybe_create_controller_epoch_znode(self) -> tuple[int, int]:
        try:
            self.store.create(CONTROLLER_EPOCH_PATH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH),
                              session=self.session)
            return INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        except NodeExistsException:
            epoch = self.get_controller_epoch()
            if epoch is None:
                raise
            return epoch

    def get_controller_id(self, watch: Optional[Watcher] = None) -> Optional[int]:
        registration = self.get_controller_registration(watch)
        return None if registration is None else registration.broker_id

    def get_controller_registration(self, watch: Optional[Watcher] = None) -> Optional[ControllerRegistration]:
        data, stat = self.get_data_and_stat(CONTROLLER_PATH, watch)
        return None if data is None else decode_controller(data, stat.version)

    def controller_exists(self, watch: Optional[Watcher] = None) -> bool:
        """exists(/controller) leaving a watch even when absent: how a broker waits to run for election."""
        return self.path_exists(CONTROLLER_PATH, watch)

    def get_controller_epoch(self) -> Optional[tuple[int, int]]:
        """(controller epoch, zkVersion of /controller_epoch), or None before the first election."""
        data, stat = self.get_data_and_stat(CONTROLLER_EPOCH_PATH)
        return None if data is None else (decode_controller_epoch(data), stat.version)

    def increment_controller_epoch(self, expected_version: int) -> tuple[int, int]:
        """Bump /controller_epoch if still at ``expected_version``; ControllerMovedException otherwise."""
        current = self.get_controller_epoch() or self._maybe_create_controller_epoch_znode()
        try:
            stat = self.store.set(CONTROLLER_EPOCH_PATH, encode_controller_epoch(current[0] + 1), expected_version,
                                  session=self.session)
        except BadVersionException:
            raise ControllerMovedException(f"Controller epoch zkVersion check fails. Expected zkVersion = "
                                           f"{expected_version}") from None
        return current[0] + 1, stat.version

    def delete_controller(self, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        try:
            self._write(DeleteOp(CONTROLLER_PATH), expected_controller_epoch_zk_version)
        except NoNodeException:
            pass

    # -- topic deletion, ISR changes, preferred replica election ---------------------------------------------
    def create_delete_topic_path(self, topic: str) -> None:
        self.create_recursive(delete_topic_path(topic))

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.path_exists(delete_topic_path(topic))

    def get_topic_deletions(self, watch: Optional[Watcher] = None) -> list[str]:
        return self.get_children(DELETE_TOPICS_PATH, watch)

    def delete_topic_deletions(self, topics: Iterable[str],
                               expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        for topic in topics:
            try:
                self._write(DeleteOp(delete_topic_path(topic)), expected_controller_epoch_zk_version)
            except NoNodeException:
                pass

    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        self.delete_recursive(topic_path(topic), expected_controller_epoch_zk_version)

    def propagate_log_dir_event(self, broker_id: int) -> str:
        """A broker tells the controller one of its log dirs failed: a new ``log_dir_event_<seq>``."""
        return self.create_sequential_persistent_path(log_dir_event_notification_path(),
                                                      encode_log_dir_event_notification(broker_id))

    def get_all_log_dir_event_notifications(self, watch: Optional[Watcher] = None) -> list[str]:
        """Sequence numbers of the pending ``log_dir_event_<seq>`` notifications."""
        return [sequence_number(c, LOG_DIR_EVENT_PREFIX)
                for c in self.get_children(LOG_DIR_EVENT_NOTIFICATION_PATH, watch)]

    def get_broker_ids_from_log_dir_event_notifications(self, sequence_numbers: Iterable[str]) -> list[int]:
        out = []
        for seq in sequence_numbers:
            data, _ = self.get_data_and_stat(log_dir_event_notification_path(seq))
            if data is not None:
                out.append(decode_log_dir_event_notification(data))
        return out

    def delete_log_dir_event_notifications(self, sequence_numbers: Iterable[str],
                                           expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        for seq in sequence_numbers:
            try:
                self._write(DeleteOp(log_dir_event_notification_path(seq)), expected_controller_epoch_zk_version)
            except NoNodeException:
                pass

    def propagate_isr_changes(self, partitions: Iterable[TopicPartition]) -> str:
        """A leader tells the controller its ISR changed: a new ``isr_change_<seq>``; returns its path."""
        return self.create_sequential_persistent_path(isr_change_notification_path(),
                                                      encode_isr_change_notification(partitions))

    def get_all_isr_change_notifications(self, watch: Optional[Watcher] = None) -> list[str]:
        """Sequence numbers ('0000000003') of the pending notifications."""
        return [sequence_number(c, ISR_CHANGE_PREFIX) for c in self.get_children(ISR_CHANGE_NOTIFICATION_PATH, watch)]

    def get_partitions_from_isr_change_notifications(self, sequence_numbers: Iterable[str]) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for seq in sequence_numbers:
            data, _ = self.get_data_and_stat(isr_change_notification_path(seq))
            if data is not None:
                out += decode_isr_change_notification(data)
        return out

    def delete_isr_change_notifications(self, sequence_numbers: Optional[Iterable[str]] = None,
                                        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        """Delete the given notifications (all of them when None)."""
        if sequence_numbers is None:
            sequence_numbers = self.get_all_isr_change_notifications()
        for seq in sequence_numbers:
            try:
                self._write(DeleteOp(isr_change_notification_path(seq)), expected_controller_epoch_zk_version)
            except NoNodeException:
                pass

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        self.create_recursive(PREFERRED_REPLICA_ELECTION_PATH, encode_preferred_replica_election(partitions))

    def get_preferred_replica_election(self, watch: Optional[Watcher] = None) -> list[TopicPartition]:
        data, _ = self.get_data_and_stat(PREFERRED_REPLICA_ELECTION_PATH, watch)
        return [] if data is None else decode_preferred_replica_election(data)

    def delete_preferred_replica_election(self,
                                          expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        try:
            self._write(DeleteOp(PREFERRED_REPLICA_ELECTION_PATH), expected_controller_epoch_zk_version)
        except NoNodeException:
            pass

    # -- producer ids and cluster id ------------------------------------------------------------------------
    def allocate_producer_id_block(self, broker_id: int,
                                   block_size: int = ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE) -> ProducerIdsBlock:
        """ZkProducerIdManager.getNewProducerIdBlock: read the last block and its version, claim the next one
        with a conditional write, and start over if another broker claimed it first."""
        self.make_sure_persistent_path_exists(PRODUCER_ID_BLOCK_PATH)
        while True:
            data, version = self.get_data_and_version(PRODUCER_ID_BLOCK_PATH)
            if data:
                current = decode_producer_id_block(data)
                if current.last_producer_id > _MAX_LONG - block_size:
                    raise RuntimeError("Have exhausted all producerIds.")
                block = ProducerIdsBlock(broker_id, current.next_block_first_id, block_size)
            else:
                block = ProducerIdsBlock(broker_id, 0, block_size)
            written, _ = self.conditional_update_path(PRODUCER_ID_BLOCK_PATH, encode_producer_id_block(block), version)
            if written:
                return block

    def get_cluster_id(self) -> Optional[str]:
        data, _ = self.get_data_and_stat(CLUSTER_ID_PATH)
        return None if data is None else decode_cluster_id(data)

    def create_or_get_cluster_id(self, proposed_cluster_id: str) -> str:
        try:
            self.create_recursive(CLUSTER_ID_PATH, encode_cluster_id(proposed_cluster_id))
            return proposed_cluster_id
        except NodeExistsException:
            cluster_id = self.get_cluster_id()
            if cluster_id is None:
                raise RuntimeError("Failed to get cluster id from Zookeeper. This can happen if /cluster/id is "
                                   "deleted from Zookeeper.") from None
            return cluster_id

    def get_or_create_cluster_id(self) -> str:
        """KafkaServer.getOrGenerateClusterId: the first broker to start names the cluster."""
        return self.get_cluster_id() or self.create_or_get_cluster_id(random_uuid())
