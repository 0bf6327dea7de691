"""The controller's memory: live brokers, assignments, partition states -- read from ZooKeeper at failover.

Theory of operation
-------------------
When a broker becomes the controller it reads the whole cluster state from ZooKeeper once -- which brokers are
registered, every topic's replica assignment and id, every partition's leader/ISR state -- and from then on
keeps it in memory, updating it with each event it handles and writing each change back to ZooKeeper
*before* telling brokers about it. ZooKeeper is the truth; the context is the controller's working copy.
It also carries the controller's meters (``stats``, :class:`~.controller_stats.ControllerStats`), which, as in
Kafka, survive :meth:`ControllerContext.clear` (a resignation or a new election).

Mirrors: ``core/src/main/scala/kafka/controller/ControllerContext.scala``.
"""
from __future__ import annotations

from typing import Iterable, Optional

from kafkalab.controller.controller_stats import ControllerStats

__all__ = ["ControllerContext"]


class ControllerContext:
    def __init__(self, stats: Optional[ControllerStats] = None):
        #: the meters (Kafka's ``controllerContext.stats``): kept by :meth:`clear`
        self.stats = stats if stats is not None else ControllerStats()
        self.epoch: int = 0
        self.epoch_zk_version: int = -1
        self.live_brokers: dict[int, object] = {}        # broker id -> BrokerInfo
        self.broker_epochs: dict[int, int] = {}          # broker id -> czxid of its registration
        self.shutting_down_brokers: set[int] = set()
        self.assignments: dict[tuple[str, int], tuple[int, ...]] = {}
        self.topic_ids: dict[str, Optional[str]] = {}
        self.partition_states: dict[tuple[str, int], object] = {}  # -> LeaderIsrAndControllerEpoch
        self.topics_being_deleted: set[str] = set()
        self.inter_broker_listener: str = "PLAINTEXT"
        #: broker id -> partitions whose replica there is in a failed log dir (until that broker restarts)
        self.replicas_on_offline_dirs: dict[int, set[tuple[str, int]]] = {}

    def clear(self) -> None:
        self.__init__(self.stats)

    # ------------------------------------------------------------------------------------------ queries
    def live_broker_ids(self) -> list[int]:
        return sorted(b for b in self.live_brokers if b not in self.shutting_down_brokers)

    def live_or_shutting_down_broker_ids(self) -> list[int]:
        return sorted(self.live_brokers)

    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.live_brokers and broker_id not in self.shutting_down_brokers

    def is_replica_online(self, broker_id: int, tp: tuple[str, int]) -> bool:
        """The broker is live and the replica's log dir has not failed (Kafka's ``isReplicaOnline``)."""
        return self.is_live(broker_id) and tp not in self.replicas_on_offline_dirs.get(broker_id, ())

    def replicas(self, tp: tuple[str, int]) -> tuple[int, ...]:
        return self.assignments.get(tp, ())

    @property
    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.assignments})

    def partitions_of(self, topic: str) -> list[tuple[str, int]]:
        return sorted(tp for tp in self.assignments if tp[0] == topic)

    def partitions_on(self, broker_id: int) -> list[tuple[str, int]]:
        return sorted(tp for tp, replicas in self.assignments.items() if broker_id in replicas)

    def partitions_led_by(self, broker_id: int) -> list[tuple[str, int]]:
        return sorted(tp for tp, s in self.partition_states.items() if s.leader_and_isr.leader == broker_id)

    def offline_partitions(self) -> list[tuple[str, int]]:
        out = []
        for tp in self.assignments:
            state = self.partition_states.get(tp)
            if tp[0] in self.topics_being_deleted:
                continue
            if state is None or not self.is_replica_online(state.leader_and_isr.leader, tp):
                out.append(tp)
        return sorted(out)

    def leader_endpoints(self, broker_ids: Iterable[int]) -> list[tuple[int, str, int]]:
        """``(id, host, port)`` of each broker's inter-broker listener (LeaderAndIsr's ``live_leaders``)."""
        out = []
        for b in sorted(set(broker_ids)):
            info = self.live_brokers.get(b)
            if info is None:
                continue
            ep = next((e for e in info.endpoints if e.listener_name == self.inter_broker_listener),
                      info.endpoints[0] if info.endpoints else None)
            if ep is not None:
                out.append((b, ep.host or "", ep.port))
        return out

    def endpoint_on(self, broker_id: int, listener: str) -> Optional[tuple[str, int]]:
        """``(host, port)`` of a live broker's endpoint named ``listener`` in its registration, or None (Kafka's
        ``Broker.node(listenerName)``, which throws ``BrokerEndPointNotAvailableException`` instead)."""
        info = self.live_brokers.get(broker_id)
        ep = next((e for e in info.endpoints if e.listener_name == listener), None) if info is not None else None
        return (ep.host or "", ep.port) if ep is not None else None

    def remove_topic(self, topic: str) -> None:
        for tp in [tp for tp in self.assignments if tp[0] == topic]:
            self.assignments.pop(tp, None)
            self.partition_states.pop(tp, None)
        self.topic_ids.pop(topic, None)
        self.topics_being_deleted.discard(topic)

    def snapshot(self) -> dict:
        """Plain data for labs: epoch, live brokers, each partition's leader/epoch/ISR/replicas."""
        return {
            "epoch": self.epoch, "live_brokers": self.live_broker_ids(),
            "shutting_down": sorted(self.shutting_down_brokers),
            "partitions": {f"{t}-{p}": {"replicas": list(r),
                                        "leader": getattr(self.partition_states.get((t, p)), "leader_and_isr", None)
                                        and self.partition_states[(t, p)].leader_and_isr.leader,
                                        "leader_epoch": self.partition_states[(t, p)].leader_and_isr.leader_epoch
                                        if (t, p) in self.partition_states else None,
                                        "isr": list(self.partition_states[(t, p)].leader_and_isr.isr)
                                        if (t, p) in self.partition_states else []}
                           for (t, p), r in sorted(self.assignments.items())},
        }
