"""Kafka's znodes: where each fact lives in ZooKeeper, and the JSON it is written in.

Theory of operation
-------------------
A ZooKeeper-era Kafka cluster keeps its shared state in a fixed tree. Brokers announce themselves with an
*ephemeral* znode each; the controller is whoever holds the ephemeral ``/controller``; everything that must
survive every broker (topics, assignments, partition leaders, configs) is *persistent*::

    /brokers/ids/<id>                                 ephemeral  BrokerInfo JSON (v5), czxid = broker epoch
    /brokers/topics/<topic>                           persistent replica assignment (v3) + topic_id
    /brokers/topics/<topic>/partitions/<p>/state      persistent leader, leader_epoch, isr, controller_epoch
    /brokers/seqid                                    persistent its version is the last generated broker id
    /controller                                       ephemeral  {"version":2,"brokerid":...}
    /controller_epoch                                 persistent plain text, e.g. 7
    /config/<entity type>/<name>                      persistent {"version":1,"config":{...}}
    /config/changes/config_change_<seq>               persistent {"version":2,"entity_path":"topics/t"}
    /admin/delete_topics/<topic>                      persistent marker, no data
    /admin/preferred_replica_election                 persistent partitions to elect
    /isr_change_notification/isr_change_<seq>         persistent partitions whose ISR changed
    /cluster/id                                       persistent {"version":"1","id":"..."}
    /latest_producer_id_block                         persistent the last block of producer ids handed out

Each ``encode_*`` returns the bytes Kafka writes (compact JSON, Kafka's field names and versions) and each
``decode_*`` reads them back, tolerating what Kafka tolerates (older versions, missing optional fields). JSON
key order is not significant to Kafka -- its encoder iterates a hash map -- so we use a readable order (for the
partition state, the one Kafka's docs show). Bad bytes raise :class:`ZNodeDecodeError` (a ``ValueError``)
naming the znode and field.

Mirrors: ``core/src/main/scala/kafka/zk/ZkData.scala`` (``BrokerIdZNode``, ``TopicZNode``,
``TopicPartitionStateZNode``, ``ControllerZNode``, ...), ``kafka/cluster/EndPoint.scala``,
``server-common/.../ProducerIdsBlock.java``, ``clients/.../common/Uuid.java``.
"""
from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Iterable, NamedTuple, Optional

__all__ = [
    # paths
    "CONTROLLER_PATH", "CONTROLLER_EPOCH_PATH", "BROKERS_PATH", "BROKER_IDS_PATH", "TOPICS_PATH",
    "BROKER_SEQUENCE_ID_PATH", "CONFIG_PATH", "CONFIG_CHANGES_PATH", "CONFIG_CHANGE_PREFIX", "ADMIN_PATH",
    "DELETE_TOPICS_PATH", "PREFERRED_REPLICA_ELECTION_PATH", "ISR_CHANGE_NOTIFICATION_PATH", "ISR_CHANGE_PREFIX",
    "CLUSTER_PATH", "CLUSTER_ID_PATH", "PRODUCER_ID_BLOCK_PATH", "CONSUMERS_PATH", "LOG_DIR_EVENT_NOTIFICATION_PATH",
    "LOG_DIR_EVENT_PREFIX", "LOG_DIR_FAILURE_EVENT", "log_dir_event_notification_path", "encode_log_dir_event_notification",
    "decode_log_dir_event_notification",
    "PERSISTENT_ZK_PATHS", "ConfigType", "DEFAULT_ENTITY",
    "broker_id_path", "topic_path", "topic_partitions_path", "topic_partition_path", "topic_partition_state_path",
    "config_entity_type_path", "config_entity_path", "delete_topic_path", "isr_change_notification_path",
    "sequence_number",
    # values
    "ZNodeDecodeError", "TopicPartition", "EndPoint", "BrokerInfo", "ControllerRegistration", "ReplicaAssignment",
    "TopicIdReplicaAssignment", "LeaderRecoveryState", "LeaderAndIsr", "LeaderIsrAndControllerEpoch",
    "ProducerIdsBlock", "random_uuid", "validate_uuid",
    # codecs
    "encode_broker_info", "decode_broker_info", "encode_controller", "decode_controller", "encode_controller_epoch",
    "decode_controller_epoch", "encode_topic_assignment", "decode_topic_assignment", "encode_partition_state",
    "decode_partition_state", "encode_entity_config", "decode_entity_config", "encode_config_change_notification",
    "decode_config_change_notification", "encode_isr_change_notification", "decode_isr_change_notification",
    "encode_preferred_replica_election", "decode_preferred_replica_election", "encode_cluster_id",
    "decode_cluster_id", "encode_producer_id_block", "decode_producer_id_block",
]

# -- paths ------------------------------------------------------------------------------------------------------
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
CONSUMERS_PATH = "/consumers"  # the pre-0.9 consumer's offsets; still created on startup
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
#: ``LogDirEventNotificationHandler.LogDirFailureEvent``: the one event a broker reports there
LOG_DIR_FAILURE_EVENT = 1


class ConfigType:
    """The entity types under ``/config`` (``server-common/.../config/ConfigType.java``)."""
    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    ALL = (TOPIC, CLIENT, USER, BROKER, IP)


DEFAULT_ENTITY = "<default>"  # /config/brokers/<default>: the cluster-wide dynamic broker defaults


def broker_id_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def topic_partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}"


def topic_partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def config_entity_type_path(entity_type: str) -> str:
    return f"{CONFIG_PATH}/{entity_type}"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG_PATH}/{entity_type}/{entity_name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def isr_change_notification_path(sequence_number: str = "") -> str:
    """With no argument: the prefix to create sequentially under."""
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{ISR_CHANGE_PREFIX}{sequence_number}"


def log_dir_event_notification_path(sequence_number: str = "") -> str:
    """With no argument: the prefix to create sequentially under."""
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{LOG_DIR_EVENT_PREFIX}{sequence_number}"


def sequence_number(name: str, prefix: str) -> str:
    """'isr_change_0000000003' -> '0000000003' (Kafka passes sequence numbers around as strings)."""
    return name[name.rindex(prefix) + len(prefix):]


# Persistent paths every broker makes sure exist on startup (ZkData.PersistentZkPaths)
PERSISTENT_ZK_PATHS = (CONSUMERS_PATH, BROKER_IDS_PATH, TOPICS_PATH, CONFIG_CHANGES_PATH, DELETE_TOPICS_PATH,
                       BROKER_SEQUENCE_ID_PATH, ISR_CHANGE_NOTIFICATION_PATH, PRODUCER_ID_BLOCK_PATH,
                       LOG_DIR_EVENT_NOTIFICATION_PATH) + tuple(config_entity_type_path(t) for t in ConfigType.ALL)


# -- helpers ----------------------------------------------------------------------------------------------------
class ZNodeDecodeError(ValueError):
    """Bytes in a znode that do not parse: names the znode kind and the field."""

    def __init__(self, znode: str, field_name: str, problem: str):
        self.znode, self.field_name = znode, field_name
        super().__init__(f"{znode}: field {field_name!r}: {problem}")


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _parse(znode: str, data: Optional[bytes]) -> dict:
    if not data:
        raise ZNodeDecodeError(znode, "(root)", "no data")
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZNodeDecodeError(znode, "(root)", f"not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ZNodeDecodeError(znode, "(root)", "not a JSON object")
    return doc


def _field(znode: str, doc: dict, name: str, kind, default: Any = ...) -> Any:
    if name not in doc or doc[name] is None:
        if default is ...:
            raise ZNodeDecodeError(znode, name, "missing")
        return default
    value = doc[name]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise ZNodeDecodeError(znode, name, f"expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _int_list(znode: str, name: str, value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ZNodeDecodeError(znode, name, f"expected a list of ints, got {value!r}")
    return list(value)


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


# -- /brokers/ids/<id> ------------------------------------------------------------------------------------------
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class EndPoint:
    host: Optional[str]
    port: int
    listener_name: str
    security_protocol: str

    @property
    def connection_string(self) -> str:
        """'PLAINTEXT://127.0.0.1:9092' ('[::1]' for IPv6, empty host for 'listen on all')."""
        host = self.host or ""
        return f"{self.listener_name}://{'[' + host + ']' if ':' in host else host}:{self.port}"

    @classmethod
    def parse(cls, connection_string: str, protocol_map: Optional[dict[str, str]] = None) -> "EndPoint":
        m = _ENDPOINT.match(connection_string)
        if m is None:
            raise ZNodeDecodeError("BrokerIdZNode", "endpoints", f"unparseable endpoint {connection_string!r}")
        listener, host, port = m.group(1), m.group(2), int(m.group(3))
        protocol = (protocol_map or {}).get(listener, listener)  # default map: listener name = protocol name
        return cls(host or None, port, listener, protocol)


@dataclass(frozen=True)
class BrokerInfo:
    """A broker's registration. ``features``: {name: {"min_version": a, "max_version": b}} (v5)."""
    id: int
    endpoints: tuple[EndPoint, ...]
    rack: Optional[str] = None
    jmx_port: int = -1
    features: dict = field(default_factory=dict)
    version: int = 5
    timestamp: Optional[str] = None  # set when decoded: the registration time in ms, as text

    @property
    def path(self) -> str:
        return broker_id_path(self.id)


def encode_broker_info(info: BrokerInfo, timestamp_ms: int) -> bytes:
    """Kafka's BrokerIdZNode.encode. Top-level host/port: the first PLAINTEXT endpoint (for pre-0.10 clients),
    else null/-1."""
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    doc: dict[str, Any] = {}
    if info.version >= 4:
        doc["listener_security_protocol_map"] = {e.listener_name: e.security_protocol for e in info.endpoints}
    if info.version >= 5:
        doc["features"] = {name: dict(rng) for name, rng in info.features.items()}
    doc["endpoints"] = [e.connection_string for e in info.endpoints]
    doc["jmx_port"] = info.jmx_port
    doc["host"] = plaintext.host if plaintext else None
    doc["timestamp"] = str(timestamp_ms)
    doc["port"] = plaintext.port if plaintext else -1
    doc["version"] = info.version
    if info.rack is not None and info.version >= 3:
        doc["rack"] = info.rack
    return _json(doc)


def decode_broker_info(broker_id: int, data: bytes) -> BrokerInfo:
    z = "BrokerIdZNode"
    doc = _parse(z, data)
    version = _field(z, doc, "version", int)
    jmx_port = _field(z, doc, "jmx_port", int)
    if version < 1:
        raise ZNodeDecodeError(z, "version", f"unsupported version {version}")
    if version == 1:  # host and port only, PLAINTEXT implied
        endpoints = (EndPoint(_field(z, doc, "host", str), _field(z, doc, "port", int), "PLAINTEXT", "PLAINTEXT"),)
    else:
        protocol_map = _field(z, doc, "listener_security_protocol_map", dict, {})
        endpoints = tuple(EndPoint.parse(s, protocol_map) for s in _field(z, doc, "endpoints", list))
    features = _field(z, doc, "features", dict, {})
    return BrokerInfo(broker_id, endpoints, _field(z, doc, "rack", str, None), jmx_port, features, version,
                      str(doc["timestamp"]) if doc.get("timestamp") is not None else None)


# -- /controller and /controller_epoch -------------------------------------------------------------------------
@dataclass(frozen=True)
class ControllerRegistration:
    broker_id: int
    kraft_controller_epoch: Optional[int]
    zk_version: int
    timestamp: Optional[str] = None


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
    """ControllerZNode.encode: version 2 since KIP-866 (ZK mode writes kraftControllerEpoch -1)."""
    return _json({"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
                  "kraftControllerEpoch": kraft_controller_epoch})


def decode_controller(data: bytes, zk_version: int = -1) -> ControllerRegistration:
    z = "ControllerZNode"
    doc = _parse(z, data)
    return ControllerRegistration(_field(z, doc, "brokerid", int), _field(z, doc, "kraftControllerEpoch", int, None),
                                  zk_version, None if doc.get("timestamp") is None else str(doc["timestamp"]))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(bytes(data).decode("ascii"))
    except (ValueError, UnicodeDecodeError, TypeError):
        raise ZNodeDecodeError("ControllerEpochZNode", "(root)", f"not an integer: {data!r}") from None


# -- /brokers/topics/<topic> -----------------------------------------------------------------------------------
def random_uuid() -> str:
    """A new topic id / cluster id: 16 random bytes, URL-safe base64 without padding (22 chars). Like Kafka's
    Uuid.randomUuid it never returns the reserved all-zero / ...01 ids, nor one starting with '-'."""
    while True:
        raw = os.urandom(16)
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if int.from_bytes(raw, "big") > 1 and not text.startswith("-"):
            return text


def validate_uuid(text: str, znode: str = "TopicZNode", field_name: str = "topic_id") -> str:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raw = b""
    if len(text) > 24 or len(raw) != 16:
        raise ZNodeDecodeError(znode, field_name, f"not a base64 UUID: {text!r}")
    return text


@dataclass(frozen=True)
class ReplicaAssignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicIdReplicaAssignment:
    topic: str
    topic_id: Optional[str]
    assignment: dict[int, ReplicaAssignment]  # partition -> replicas


def encode_topic_assignment(topic_id: Optional[str], assignment: dict[int, Any]) -> bytes:
    """TopicZNode.encode (version 3). Values: a ReplicaAssignment or a plain list of broker ids."""
    parts, adding, removing = {}, {}, {}
    for p in sorted(assignment):
        ra = assignment[p] if isinstance(assignment[p], ReplicaAssignment) else ReplicaAssignment(tuple(assignment[p]))
        parts[str(p)] = list(ra.replicas)
        if ra.adding_replicas:
            adding[str(p)] = list(ra.adding_replicas)
        if ra.removing_replicas:
            removing[str(p)] = list(ra.removing_replicas)
    doc: dict[str, Any] = {"version": 3, "partitions": parts}
    if topic_id is not None:
        doc["topic_id"] = topic_id
    doc["adding_replicas"], doc["removing_replicas"] = adding, removing
    return _json(doc)


def decode_topic_assignment(topic: str, data: bytes) -> TopicIdReplicaAssignment:
    z = "TopicZNode"
    doc = _parse(z, data)
    topic_id = _field(z, doc, "topic_id", str, None)
    if topic_id is not None:
        validate_uuid(topic_id)
    adding = _field(z, doc, "adding_replicas", dict, {})
    removing = _field(z, doc, "removing_replicas", dict, {})
    assignment = {}
    for key, replicas in _field(z, doc, "partitions", dict, {}).items():
        if not key.lstrip("-").isdigit():
            raise ZNodeDecodeError(z, "partitions", f"partition {key!r} is not a number")
        assignment[int(key)] = ReplicaAssignment(
            tuple(_int_list(z, f"partitions.{key}", replicas)),
            tuple(_int_list(z, f"adding_replicas.{key}", adding.get(key, []))),
            tuple(_int_list(z, f"removing_replicas.{key}", removing.get(key, []))))
    return TopicIdReplicaAssignment(topic, topic_id, dict(sorted(assignment.items())))


# -- /brokers/topics/<topic>/partitions/<p>/state ----------------------------------------------------------------
class LeaderRecoveryState(IntEnum):
    """KIP-704: RECOVERING while an unclean leader is still recovering its log; only then is it written."""
    RECOVERED = 0
    RECOVERING = 1


@dataclass(frozen=True)
class LeaderAndIsr:
    """``partition_epoch`` is the state znode's version (zkVersion): the token for the next conditional write."""
    NO_LEADER = -1
    INITIAL_LEADER_EPOCH = 0
    INITIAL_PARTITION_EPOCH = 0

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = 0

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> "LeaderAndIsr":
        """A new leader (or ISR under a new leader): the leader epoch goes up by one."""
        return replace(self, leader=leader, isr=tuple(isr), leader_epoch=self.leader_epoch + 1)

    def with_partition_epoch(self, partition_epoch: int) -> "LeaderAndIsr":
        return replace(self, partition_epoch=partition_epoch)


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    leader_and_isr: LeaderAndIsr
    controller_epoch: int


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """TopicPartitionStateZNode.encode (version 1); leader_recovery_state only when RECOVERING."""
    lai = state.leader_and_isr
    doc: dict[str, Any] = {"controller_epoch": state.controller_epoch, "leader": lai.leader, "version": 1,
                           "leader_epoch": lai.leader_epoch, "isr": list(lai.isr)}
    if lai.leader_recovery_state != LeaderRecoveryState.RECOVERED:
        doc["leader_recovery_state"] = int(lai.leader_recovery_state)
    return _json(doc)


def decode_partition_state(data: bytes, zk_version: int = 0) -> LeaderIsrAndControllerEpoch:
    z = "TopicPartitionStateZNode"
    doc = _parse(z, data)
    recovery = _field(z, doc, "leader_recovery_state", int, 0)
    if recovery not in (0, 1):
        raise ZNodeDecodeError(z, "leader_recovery_state", f"unknown value {recovery}")
    lai = LeaderAndIsr(_field(z, doc, "leader", int), _field(z, doc, "leader_epoch", int),
                       tuple(_int_list(z, "isr", _field(z, doc, "isr", list))), LeaderRecoveryState(recovery),
                       zk_version)
    return LeaderIsrAndControllerEpoch(lai, _field(z, doc, "controller_epoch", int))


# -- /config ---------------------------------------------------------------------------------------------------
def encode_entity_config(config: dict[str, Any]) -> bytes:
    """ConfigEntityZNode.encode: values are strings (a java.util.Properties)."""
    return _json({"version": 1, "config": {str(k): str(v) for k, v in config.items()}})


def decode_entity_config(data: Optional[bytes]) -> dict[str, str]:
    if not data:
        return {}
    config = _field("ConfigEntityZNode", _parse("ConfigEntityZNode", data), "config", dict, {})
    return {k: str(v) for k, v in config.items()}


def encode_config_change_notification(sanitized_entity_path: str) -> bytes:
    """Version 2: {"version":2,"entity_path":"topics/orders"} (AdminZkClient writes '<entity type>/<name>')."""
    return _json({"version": 2, "entity_path": sanitized_entity_path})


def decode_config_change_notification(data: bytes) -> str:
    z = "ConfigEntityChangeNotificationSequenceZNode"
    doc = _parse(z, data)
    version = _field(z, doc, "version", int)
    if version == 1:  # {"version":1,"entity_type":"topics","entity_name":"orders"}
        return f"{_field(z, doc, 'entity_type', str)}/{_field(z, doc, 'entity_name', str)}"
    if version != 2:
        raise ZNodeDecodeError(z, "version", f"unsupported version {version}")
    return _field(z, doc, "entity_path", str)


# -- partition lists: ISR change notifications, preferred replica election -------------------------------------
def _encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    return _json({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]})


def _decode_partitions(z: str, data: bytes) -> list[TopicPartition]:
    out = []
    for i, item in enumerate(_field(z, _parse(z, data), "partitions", list)):
        if not isinstance(item, dict):
            raise ZNodeDecodeError(z, f"partitions[{i}]", "not an object")
        out.append(TopicPartition(_field(z, item, "topic", str), _field(z, item, "partition", int)))
    return out


def encode_isr_change_notification(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partitions(partitions)


def decode_isr_change_notification(data: bytes) -> list[TopicPartition]:
    return _decode_partitions("IsrChangeNotificationSequenceZNode", data)


def encode_log_dir_event_notification(broker_id: int, event: int = LOG_DIR_FAILURE_EVENT) -> bytes:
    """``LogDirEventNotificationSequenceZNode``: which broker had a log dir event (``{"version":1,...}``)."""
    return _json({"version": 1, "broker": broker_id, "event": event})


def decode_log_dir_event_notification(data: bytes) -> int:
    """The broker id of a ``log_dir_event_<seq>`` notification."""
    z = "LogDirEventNotificationSequenceZNode"
    return _field(z, _parse(z, data), "broker", int)


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partitions(partitions)


def decode_preferred_replica_election(data: bytes) -> list[TopicPartition]:
    return _decode_partitions("PreferredReplicaElectionZNode", data)


# -- /cluster/id and /latest_producer_id_block ------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    """ClusterIdZNode.toJson -- note the version is the *string* "1"."""
    return _json({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return _field("ClusterIdZNode", _parse("ClusterIdZNode", data), "id", str)


@dataclass(frozen=True)
class ProducerIdsBlock:
    """A range of producer ids handed to one broker (``server-common/.../common/ProducerIdsBlock.java``)."""
    PRODUCER_ID_BLOCK_SIZE = 1000

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size


def encode_producer_id_block(block: ProducerIdsBlock) -> bytes:
    """ProducerIdBlockZNode: block_start and block_end are strings (longs would lose precision in JSON)."""
    return _json({"version": 1, "broker": block.assigned_broker_id, "block_start": str(block.first_producer_id),
                  "block_end": str(block.last_producer_id)})


def decode_producer_id_block(data: bytes) -> ProducerIdsBlock:
    z = "ProducerIdBlockZNode"
    doc = _parse(z, data)
    try:
        start, end = int(_field(z, doc, "block_start", str)), int(_field(z, doc, "block_end", str))
    except ValueError:
        raise ZNodeDecodeError(z, "block_start", "not a number") from None
    return ProducerIdsBlock(_field(z, doc, "broker", int), start, end - start + 1)
