"""The client's metadata cache: brokers, topics, partitions and their leaders, and when to refresh them.

Theory of operation
-------------------
A Kafka client knows nothing at first but ``bootstrap.servers``. It asks any of them a ``MetadataRequest``
and learns the cluster: every broker (id, host, port, rack), the controller, and for each topic it cares
about the partitions with their leader, leader epoch, replicas and ISR. Produce and fetch requests go to the
*leader* of each partition, so the cache decides where every byte is sent.

The cache goes stale -- leaders move, topics are created -- so it is refreshed:

* **by age**: at the latest ``metadata.max.age.ms`` after the last refresh;
* **on demand**: when a response says the cache was wrong (``NOT_LEADER_OR_FOLLOWER``,
  ``UNKNOWN_TOPIC_OR_PARTITION``, ``LEADER_NOT_AVAILABLE``, ``FENCED_LEADER_EPOCH``, a disconnect...), the
  client calls :meth:`Metadata.request_update`; the next refresh happens after ``retry.backoff.ms`` at the
  earliest (so a cluster in the middle of an election is not flooded), then the failed request is retried;
* **for a new topic**: the first send to a topic adds it to the topics of interest and asks for an update.

A newer answer never loses against an older one: a partition whose ``leader_epoch`` went backwards is kept
from the cache (a broker with an older view answered), as Java's ``Metadata.updateLatestMetadata`` does.

This class is sans-IO: it takes responses and the current time (ms) and answers questions; the network client
does the sending. Mirrors ``clients/src/main/java/org/apache/kafka/clients/Metadata.java`` and
``common/Cluster.java``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from kafkalab.protocol import ErrorCode

__all__ = ["BrokerInfo", "PartitionInfo", "TopicInfo", "ClusterView", "Metadata", "STALE_METADATA_ERRORS"]

#: Errors that mean "your metadata is out of date": refresh it, then retry.
STALE_METADATA_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_CONTROLLER, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.BROKER_NOT_AVAILABLE,
})


@dataclasses.dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: Optional[str] = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: tuple = ()
    isr: tuple = ()
    offline_replicas: tuple = ()
    error_code: int = 0


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: dict            # partition -> PartitionInfo
    error_code: int = 0
    topic_id: Optional[object] = None
    is_internal: bool = False

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


@dataclasses.dataclass(frozen=True)
class ClusterView:
    """One immutable snapshot of what the client believes about the cluster."""

    brokers: dict = dataclasses.field(default_factory=dict)      # node_id -> BrokerInfo
    topics: dict = dataclasses.field(default_factory=dict)       # name -> TopicInfo
    controller_id: int = -1
    cluster_id: Optional[str] = None

    def partition_count(self, topic: str) -> Optional[int]:
        t = self.topics.get(topic)
        return None if t is None or t.error_code or not t.partitions else t.partition_count

    def leader_for(self, topic: str, partition: int) -> Optional[int]:
        t = self.topics.get(topic)
        p = t.partitions.get(partition) if t else None
        return None if p is None or p.leader < 0 or p.leader not in self.brokers else p.leader

    _available: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions with a live leader, computed once per snapshot (Java's ``Cluster`` keeps
        ``availablePartitionsByTopic`` too): the partitioner asks for every record it places."""
        found = self._available.get(topic)
        if found is None:
            t = self.topics.get(topic)
            found = [] if t is None else sorted(
                p for p, info in t.partitions.items() if info.leader >= 0 and info.leader in self.brokers)
            self._available[topic] = found
        return found


class Metadata:
    """The cache plus its refresh policy. Times are milliseconds on the client's clock (its injected Time)."""

    def __init__(self, *, metadata_max_age_ms: int = 300_000, retry_backoff_ms: int = 100):
        self.metadata_max_age_ms = metadata_max_age_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.cluster = ClusterView()
        self.topics: set[str] = set()          # topics of interest; empty with all_topics=False = none
        self.all_topics = False
        self.last_refresh_ms: Optional[float] = None
        self.last_attempt_ms: Optional[float] = None
        self.need_update = True
        self.update_version = 0
        #: called when a refresh should go out now (the network client wakes its metadata updater)
        self.on_update_requested: Optional[Callable[[], None]] = None

    # -- what to ask for ---------------------------------------------------------------------------------------
    def add_topics(self, *topics: str) -> bool:
        """Add topics of interest; True when one was new. A new topic is asked for at once, without waiting out
        ``retry.backoff.ms`` since the last attempt (Java's ``Metadata.requestUpdateForNewTopics``): an
        ``assign()`` or ``send()`` to a topic the cache has never seen must not wait for the clock to move."""
        new = [t for t in topics if t not in self.topics]
        if new:
            self.topics.update(new)
            self.need_update = True
            self.last_attempt_ms = None
            if self.on_update_requested is not None:
                self.on_update_requested()
        return bool(new)

    def request_update(self) -> int:
        """Ask for a refresh soon; returns the current version so a caller can wait for a newer one."""
        self.need_update = True
        return self.update_version

    def time_to_next_update(self, now_ms: float) -> float:
        """0 when a refresh is due now; otherwise how many ms until one is (never below the backoff)."""
        if self.last_refresh_ms is None:
            expiry = 0.0
        elif self.need_update:
            expiry = 0.0
        else:
            expiry = max(0.0, self.last_refresh_ms + self.metadata_max_age_ms - now_ms)
        backoff = 0.0 if self.last_attempt_ms is None else \
            max(0.0, self.last_attempt_ms + self.retry_backoff_ms - now_ms)
        return max(expiry, backoff)

    def attempt(self, now_ms: float) -> None:
        self.last_attempt_ms = now_ms

    def failed(self, now_ms: float) -> None:
        self.last_attempt_ms = now_ms
        self.need_update = True

    # -- what came back ----------------------------------------------------------------------------------------
    def update(self, body, now_ms: float, *, requested_topics: Optional[set] = None) -> ClusterView:
        """Fold a MetadataResponse body into the cache and return the new snapshot."""
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in body.brokers}
        old = self.cluster.topics
        topics = {} if requested_topics is None else {n: t for n, t in old.items() if n not in requested_topics}
        if requested_topics is not None and not self.all_topics:
            topics = {n: t for n, t in topics.items() if n in self.topics}
        retry_needed = False
        for t in body.topics:
            parts = {}
            prior = old.get(t.name)
            for p in t.partitions:
                info = PartitionInfo(t.name, p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                     tuple(p.isr_nodes), tuple(p.offline_replicas), p.error_code)
                before = prior.partitions.get(p.partition_index) if prior else None
                if before is not None and 0 <= info.leader_epoch < before.leader_epoch:
                    info = before                   # an older view of this partition: keep what we knew
                parts[p.partition_index] = info
                if info.leader < 0:
                    retry_needed = True
            if t.error_code in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                retry_needed = retry_needed or t.name in self.topics
            topics[t.name] = TopicInfo(t.name, parts, t.error_code, getattr(t, "topic_id", None),
                                       getattr(t, "is_internal", False))
        self.cluster = ClusterView(brokers, topics, getattr(body, "controller_id", -1),
                                   getattr(body, "cluster_id", None))
        self.last_refresh_ms = self.last_attempt_ms = now_ms
        self.need_update = retry_needed
        self.update_version += 1
        return self.cluster

    def request_topics(self) -> Optional[list[str]]:
        """The topics a MetadataRequest should name (None = all topics)."""
        return None if self.all_topics else sorted(self.topics)
