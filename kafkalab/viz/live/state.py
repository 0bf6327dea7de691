"""What a live dashboard shows, read from the brokers' own state in one pass on the cluster's event loop.

Theory of operation
-------------------
Broker state (replica managers, metadata caches, group coordinators) is touched only on the cluster's event
loop, so :func:`read_cluster_state` is one function run there (``cluster.call``): it copies what the dashboard
draws into immutable tuples and returns them to the refresher's thread, which renders them. Nothing is
invented for display:

* **brokers** -- running or down (``KafkaServer.is_running``), paused (``cluster.paused``), cut links
  (``cluster.links``), and the controller (the ``/controller`` znode's owner that knows it is active);
* **partitions** -- leader, leader epoch and replicas from the controller's metadata cache (any running
  broker's when there is no controller), the ISR as the leader's ``Partition`` holds it (it shrinks and grows
  there first; the metadata's when the leader is down), and each running replica's log end offset and high
  watermark from its own ``Partition.log``;
* **requests** -- each running broker's ``RequestMetrics``: per API the requests, and requests, request bytes and
  response bytes per second over the broker's sliding window, summed over the brokers (Kafka's nearest names:
  the ``RequestsPerSec`` meter and the ``RequestBytes`` histogram; ``BytesInPerSec``/``BytesOutPerSec`` are
  something else, record bytes per topic);
* **purgatories** -- ``PurgatorySize`` and ``NumDelayedOperations`` per ``delayedOperation`` per broker;
* **groups** -- on each group coordinator: state, generation, members, and lag per partition = the leader's
  high watermark minus the committed offset (``kafka-consumer-groups --describe`` computes it the same way,
  against the log end offset a consumer can read, i.e. the high watermark).

The cluster is duck-typed (``brokers``, ``paused``, ``links``, ``controller_id``, ``call``): viz sits below
:mod:`kafkalab.cluster` and never imports it.

Mirrors the read side of Kafka's ``kafka-topics --describe``, ``kafka-consumer-groups --describe`` and the
broker's JMX request metrics.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

__all__ = ["BrokerState", "ReplicaState", "PartitionView", "ApiRate", "PurgatoryState", "GroupView",
           "ClusterState", "read_cluster_state", "cluster_is_running"]


ZK = "zk"    # the coordination store's name in the cluster's link table (kafkalab.cluster.faults.ZK)


class BrokerState(NamedTuple):
    broker_id: int
    status: str              # "up", "down", "paused", "isolated" (an "up" broker may still have cut links)
    is_controller: bool
    cut_links: tuple         # the other ends of this broker's cut links ("zk" or broker ids)


class ReplicaState(NamedTuple):
    broker_id: int
    log_end_offset: int      # -1: no log here (the broker is down or has not created it)
    high_watermark: int


class PartitionView(NamedTuple):
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple
    isr: tuple
    logs: tuple              # ReplicaState per replica, in replica order


class ApiRate(NamedTuple):
    api_name: str
    requests: int
    requests_per_sec: float
    request_bytes_per_sec: float
    response_bytes_per_sec: float


class PurgatoryState(NamedTuple):
    broker_id: int
    operation: str           # Kafka's delayedOperation tag: Produce, Fetch
    purgatory_size: int
    num_delayed_operations: int


class GroupView(NamedTuple):
    group_id: str
    coordinator: int
    state: str
    generation: int
    members: tuple           # (member id, client id)
    lag: tuple               # (topic, partition, committed offset, high watermark, lag)


class ClusterState(NamedTuple):
    brokers: tuple
    controller: int
    partitions: tuple
    requests: tuple
    purgatories: tuple
    groups: tuple

    @property
    def total_lag(self) -> int:
        return sum(row[4] for g in self.groups for row in g.lag)


def cluster_is_running(cluster) -> bool:
    """``Cluster.is_running``: whether ``cluster`` is started; a stopped cluster ends its dashboards' refreshers."""
    return bool(getattr(cluster, "is_running", False))


def read_cluster_state(cluster, *, internal_topics: bool = False, timeout: float = 5.0) -> ClusterState:
    """Read everything a dashboard shows, on the cluster's loop (see the module doc)."""
    return cluster.call(lambda: _read(cluster, internal_topics), timeout=timeout)


def _read(cluster, internal_topics: bool) -> ClusterState:
    brokers = dict(sorted(cluster.brokers.items()))
    controller = cluster.controller_id
    running = {b: s for b, s in brokers.items() if s.is_running}
    return ClusterState(_brokers(cluster, brokers, controller), controller,
                        _partitions(brokers, running, controller, internal_topics), _requests(running),
                        _purgatories(running), _groups(running))


def _brokers(cluster, brokers: dict, controller: int) -> tuple:
    paused = set(cluster.paused)
    cuts = cluster.links.cut_links
    out = []
    for broker_id, server in brokers.items():
        ends = tuple(sorted((b if a == broker_id else a for a, b in cuts if broker_id in (a, b)), key=str))
        if not server.is_running:
            status = "down"
        elif broker_id in paused:
            status = "paused"
        elif ZK in ends or (len(brokers) > 1 and set(brokers) - {broker_id} <= set(ends)):
            status = "isolated"          # cut off from the store, or from every other broker
        else:
            status = "up"
        out.append(BrokerState(broker_id, status, broker_id == controller, ends))
    return tuple(out)


def _metadata_source(running: dict, controller: int):
    if controller in running:
        return running[controller].metadata_cache
    return next((s.metadata_cache for s in running.values()), None)


def _partitions(brokers: dict, running: dict, controller: int, internal_topics: bool) -> tuple:
    cache = _metadata_source(running, controller)
    if cache is None:
        return ()
    out = []
    for topic in sorted(cache.topics()):
        if topic.startswith("__") and not internal_topics:
            continue
        for p in sorted(cache.partitions(topic), key=lambda p: p.partition):
            logs = []
            for replica in p.replicas:
                logs.append(_replica_state(running.get(replica), replica, topic, p.partition))
            out.append(PartitionView(topic, p.partition, p.leader, p.leader_epoch, tuple(p.replicas),
                                     _leader_isr(running.get(p.leader), topic, p.partition, p.isr), tuple(logs)))
    return tuple(out)


def _leader_isr(leader, topic: str, partition: int, published: tuple) -> tuple:
    """The ISR as the leader holds it (what acks=all waits for; it shrinks and grows there first), else the one
    the metadata publishes."""
    rm = leader.replica_manager if leader is not None else None
    p = rm.get_partition(topic, partition) if rm is not None else None
    return tuple(p.isr) if p is not None and p.isr else tuple(published)


def _replica_state(server, broker_id: int, topic: str, partition: int) -> ReplicaState:
    rm = server.replica_manager if server is not None else None
    p = rm.get_partition(topic, partition) if rm is not None else None
    log = p.log if p is not None else None
    if log is None:
        return ReplicaState(broker_id, -1, -1)
    return ReplicaState(broker_id, log.log_end_offset, log.high_watermark)


def _requests(running: dict) -> tuple:
    totals: dict[str, list] = {}
    for server in running.values():
        channel = server.channel
        if channel is None:
            continue
        for row in channel.metrics.snapshot():
            t = totals.setdefault(row["api_name"], [0, 0.0, 0.0, 0.0])
            t[0] += row["requests"]
            t[1] += row["requests_per_sec"]
            t[2] += row["request_bytes_per_sec"]
            t[3] += row["response_bytes_per_sec"]
    return tuple(ApiRate(name, *t) for name, t in sorted(totals.items()))


def _purgatories(running: dict) -> tuple:
    out = []
    for broker_id, server in running.items():
        rm = server.replica_manager
        if rm is None:
            continue
        for purgatory in (rm.delayed_produce_purgatory, rm.delayed_fetch_purgatory):
            out.append(PurgatoryState(broker_id, purgatory.purgatory_name, purgatory.watched, purgatory.num_delayed))
    return tuple(out)


def _high_watermark(running: dict, topic: str, partition: int, leaders: dict) -> Optional[int]:
    server = running.get(leaders.get((topic, partition), -1))
    p = server.replica_manager.get_partition(topic, partition) if server is not None and server.replica_manager \
        else None
    return p.log.high_watermark if p is not None and p.log is not None else None


def _groups(running: dict) -> tuple:
    leaders = {}
    for server in running.values():
        for topic in server.metadata_cache.topics():
            for p in server.metadata_cache.partitions(topic):
                leaders.setdefault((topic, p.partition), p.leader)
    out = []
    for broker_id, server in running.items():
        coordinator = server.group_coordinator
        if coordinator is None or not getattr(coordinator, "is_active", True):
            continue
        manager = coordinator.manager
        for group_id, group in sorted(manager.groups.items()):
            members = tuple(sorted((m.member_id, m.client_id) for m in group.members.values()))
            lag = []
            for (topic, partition), committed in sorted(manager.get_offsets(group_id, None).items()):
                offset = getattr(committed, "offset", None)
                if not isinstance(offset, int):
                    continue
                hw = _high_watermark(running, topic, partition, leaders)
                if hw is not None:
                    lag.append((topic, partition, offset, hw, max(0, hw - offset)))
            out.append(GroupView(group_id, broker_id, group.state.value, getattr(group, "generation_id", -1),
                                 members, tuple(lag)))
    return tuple(out)
