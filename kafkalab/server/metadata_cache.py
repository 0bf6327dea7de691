"""The metadata cache: every broker's own picture of the cluster, filled only by UpdateMetadata.

Theory of operation
-------------------
Any broker can answer a Metadata request -- which brokers are alive, where they listen, which partitions
each topic has, who leads each one and which replicas are in sync -- without asking anyone. It answers from
its *metadata cache*. In the ZooKeeper-era design the cache is written by exactly one party, the
**controller**, through UpdateMetadata requests: when a broker joins or leaves, when a leader is elected,
when an ISR changes. So right after a change, brokers may briefly disagree; clients cope by refreshing their
metadata when a broker answers NOT_LEADER_OR_FOLLOWER.

The cache keeps:

* live brokers with their endpoints per listener (a client on listener ``CLIENT`` is told the ``CLIENT``
  addresses of the other brokers, never the internal ones) and racks;
* the controller id and the controller epoch of the last update (older updates from a zombie controller are
  ignored);
* per partition: leader, leader epoch, ISR, replicas, offline replicas;
* topic names <-> topic ids.

Mirrors: ``core/src/main/scala/kafka/server/metadata/ZkMetadataCache.scala`` (``updateMetadata``,
``getTopicMetadata``, ``getAliveBrokerNodes``).
"""
from __future__ import annotations

import threading
import uuid
from typing import NamedTuple, Optional

__all__ = ["MetadataCache", "PartitionState", "BrokerEndpoints", "NO_LEADER"]

NO_LEADER = -1
ZERO_UUID = uuid.UUID(int=0)
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class PartitionState(NamedTuple):
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple
    replicas: tuple
    offline_replicas: tuple = ()
    controller_epoch: int = 0
    zk_version: int = 0


class BrokerEndpoints(NamedTuple):
    broker_id: int
    endpoints: dict        # listener name -> (host, port, security protocol)
    rack: Optional[str]


class MetadataCache:
    """What this broker believes about the cluster. Thread-safe; updated only through :meth:`update_metadata`."""

    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self._lock = threading.RLock()
        self.controller_id: int = NO_LEADER
        self.controller_epoch: int = -1
        self.cluster_id: Optional[str] = None
        self._brokers: dict[int, BrokerEndpoints] = {}
        self._partitions: dict[str, dict[int, PartitionState]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self.updates = 0

    # ------------------------------------------------------------------------------------------ updates
    def update_metadata(self, body, version: int) -> list[str]:
        """Apply an UpdateMetadataRequest. Returns the topics that were deleted (partitions with leader -2).

        Raises ValueError for an update from an older controller epoch (STALE_CONTROLLER_EPOCH).
        """
        with self._lock:
            if body.controller_epoch < self.controller_epoch:
                raise ValueError(f"UpdateMetadata from controller {body.controller_id} with epoch "
                                 f"{body.controller_epoch} is older than {self.controller_epoch}")
            self.controller_id = body.controller_id
            self.controller_epoch = body.controller_epoch
            brokers = {}
            for b in body.live_brokers:
                endpoints = {}
                if version == 0:
                    endpoints["PLAINTEXT"] = (b.v0_host, b.v0_port, "PLAINTEXT")
                for ep in b.endpoints:
                    proto = next((p for p, i in _PROTOCOL_IDS.items() if i == ep.security_protocol), "PLAINTEXT")
                    endpoints[(ep.listener or proto).upper()] = (ep.host, ep.port, proto)
                brokers[b.id] = BrokerEndpoints(b.id, endpoints, b.rack)
            self._brokers = brokers
            deleted = []
            states = []
            if version >= 5:
                for t in body.topic_states:
                    if version >= 7 and t.topic_id != ZERO_UUID:
                        self._set_topic_id(t.topic_name, t.topic_id)
                    states.extend((t.topic_name, p) for p in t.partition_states)
            else:
                states.extend((p.topic_name, p) for p in body.ungrouped_partition_states)
            for topic, p in states:
                if p.leader == -2:  # LeaderAndIsr.LeaderDuringDelete: the topic is being deleted
                    self._remove_partition(topic, p.partition_index)
                    if topic not in self._partitions and topic not in deleted:
                        deleted.append(topic)
                    continue
                self._partitions.setdefault(topic, {})[p.partition_index] = PartitionState(
                    topic, p.partition_index, p.leader, p.leader_epoch, tuple(p.isr), tuple(p.replicas),
                    tuple(p.offline_replicas), p.controller_epoch, p.zk_version)
            self.updates += 1
            return deleted

    def _set_topic_id(self, topic: str, topic_id: uuid.UUID) -> None:
        old = self._topic_ids.get(topic)
        if old is not None and old != topic_id:
            self._topic_names.pop(old, None)
        self._topic_ids[topic] = topic_id
        self._topic_names[topic_id] = topic

    def _remove_partition(self, topic: str, partition: int) -> None:
        parts = self._partitions.get(topic)
        if parts is None:
            return
        parts.pop(partition, None)
        if not parts:
            del self._partitions[topic]
            tid = self._topic_ids.pop(topic, None)
            if tid is not None:
                self._topic_names.pop(tid, None)

    # ------------------------------------------------------------------------------------------ queries
    def alive_brokers(self) -> list[BrokerEndpoints]:
        with self._lock:
            return [self._brokers[b] for b in sorted(self._brokers)]

    def alive_broker_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._brokers)

    def is_alive(self, broker_id: int) -> bool:
        with self._lock:
            return broker_id in self._brokers

    def broker_endpoint(self, broker_id: int, listener: str) -> Optional[tuple]:
        """``(host, port)`` of ``broker_id`` on ``listener``, or None if it has no such listener."""
        with self._lock:
            b = self._brokers.get(broker_id)
            ep = b.endpoints.get(listener) if b else None
            return (ep[0], ep[1]) if ep else None

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._partitions)

    def contains_topic(self, topic: str) -> bool:
        with self._lock:
            return topic in self._partitions

    def partitions(self, topic: str) -> list[PartitionState]:
        with self._lock:
            parts = self._partitions.get(topic, {})
            return [parts[p] for p in sorted(parts)]

    def partition_state(self, topic: str, partition: int) -> Optional[PartitionState]:
        with self._lock:
            return self._partitions.get(topic, {}).get(partition)

    def partition_count(self, topic: str) -> int:
        with self._lock:
            return len(self._partitions.get(topic, {}))

    def topic_id(self, topic: str) -> uuid.UUID:
        with self._lock:
            return self._topic_ids.get(topic, ZERO_UUID)

    def topic_name(self, topic_id: uuid.UUID) -> Optional[str]:
        with self._lock:
            return self._topic_names.get(topic_id)

    def leader_of(self, topic: str, partition: int) -> int:
        state = self.partition_state(topic, partition)
        return state.leader if state else NO_LEADER

    def snapshot(self) -> dict:
        """Everything, as plain data (for labs and tests)."""
        with self._lock:
            return {
                "controller_id": self.controller_id, "controller_epoch": self.controller_epoch,
                "brokers": {b.broker_id: {"endpoints": dict(b.endpoints), "rack": b.rack}
                            for b in self._brokers.values()},
                "topics": {t: {"topic_id": str(self._topic_ids.get(t, ZERO_UUID)),
                               "partitions": {p: s._asdict() for p, s in sorted(parts.items())}}
                           for t, parts in sorted(self._partitions.items())},
            }
