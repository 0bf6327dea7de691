"""A partition as one broker sees it: its role (leader or follower), its log, and the high watermark.

Theory of operation
-------------------
The controller decides who leads each partition and tells the replicas with a LeaderAndIsr request: the
leader's id, the **leader epoch** (bumped at every change of leader), the **ISR** (in-sync replicas) and the
assigned replicas. :meth:`Partition.make_leader` / :meth:`make_follower` apply such a state; a request from
an older epoch is ignored, which fences a zombie controller or a delayed request.

The leader is the only replica that accepts writes (``append_records_to_leader``) and, for consumers, reads.
Every batch it appends is stamped with the current leader epoch, and the leader-epoch cache records at which
offset each epoch began (KIP-101): that is what lets a follower later find where its log diverged.

The leader also keeps a :class:`Replica` for every follower: its log end offset (learned from the offset of
each follower Fetch) and ``last_caught_up_time_ms`` -- the last time it had everything the leader had (at
that fetch, or at its previous one). From these come the two ISR rules:

* **shrink** (``maybe_shrink_isr``, run by the replica manager every ``replica.lag.time.max.ms / 2``): a
  follower is out of sync when its LEO differs from the leader's *and* it has not been caught up for
  ``replica.lag.time.max.ms`` -- whether it stopped fetching (stuck) or never keeps up (slow). An idle
  partition never shrinks: a follower with everything is in sync;
* **expand** (``maybe_expand_isr``, on a follower fetch): a follower joins once its LEO reached the high
  watermark and the start of the leader's current epoch.

The leader writes each ISR change itself to the partition's state znode, conditionally on the zkVersion it
last saw (``partition_epoch``); if the write loses (the controller changed the state), nothing changes here
and the controller's next LeaderAndIsr brings the truth.

The **high watermark** (HW) is the offset up to which every in-sync replica has the data: consumers read
only below it. The leader computes it as the smallest log end offset among the (maximal) ISR -- plus
followers caught up and about to join --, it never moves backwards, and it does not advance at all while the
ISR is smaller than ``min.insync.replicas`` (capped at the replication factor). With a single replica the HW
simply follows the log end offset. A follower's HW is min(its LEO, the HW in the leader's Fetch response).
``check_enough_replicas_reach_offset`` tells a waiting ``acks=all`` produce whether the HW passed its
records, and NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile.

Two fencing checks protect clients from a stale view (KIP-320): a request that carries a
``current_leader_epoch`` older than ours gets FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.

Mirrors: ``core/src/main/scala/kafka/cluster/Partition.scala`` (``makeLeader``, ``makeFollower``,
``appendRecordsToLeader``, ``maybeIncrementLeaderHW``, ``maybeExpandIsr``, ``maybeShrinkIsr``,
``updateFollowerFetchState``, ``checkEnoughReplicasReachOffset``, ``readRecords``, ``fetchOffsetForTimestamp``)
and ``core/src/main/scala/kafka/cluster/Replica.scala`` (``updateFetchState``, ``isCaughtUp``).
"""
from __future__ import annotations

import threading
import uuid
from typing import Any, NamedTuple, Optional

from kafkalab.common.time import SYSTEM
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import LogOffsetSnapshot, check_enough_replicas_reach_offset
from kafkalab.storage.fetch_data_info import FetchIsolation
from kafkalab.storage.legacy_offsets import legacy_fetch_offsets_before

__all__ = ["Partition", "PartitionError", "LogReadResult", "Replica"]


class PartitionError(ApiException):
    """An error with a Kafka error code, raised for one partition (an error of a whole topic or request is a
    plain :class:`~kafkalab.protocol.ApiException`)."""

    def __init__(self, error_code: int, message: Optional[str] = None):
        super().__init__(error_code, message)


class LogReadResult(NamedTuple):
    records: Any                 # the storage read result (bytes and file slices), or None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    bytes: int


class Replica:
    """What the leader knows about one follower: its log end offset and when it was last caught up.

    ``last_caught_up_time_ms`` advances when a fetch reaches the leader's current LEO, or the LEO the leader
    had at that follower's previous fetch (Kafka's ``Replica.updateFetchState``)."""

    __slots__ = ("broker_id", "log_end_offset", "log_start_offset", "last_caught_up_time_ms",
                 "last_fetch_leader_log_end_offset", "last_fetch_time_ms")

    def __init__(self, broker_id: int, last_caught_up_time_ms: int = 0):
        self.broker_id = broker_id
        self.log_end_offset = -1                 # unknown until its first fetch
        self.log_start_offset = -1
        self.last_caught_up_time_ms = last_caught_up_time_ms
        self.last_fetch_leader_log_end_offset = -1
        self.last_fetch_time_ms = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return leader_end_offset == self.log_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms

    def as_dict(self) -> dict:
        return {"log_end_offset": self.log_end_offset, "last_caught_up_time_ms": self.last_caught_up_time_ms,
                "last_fetch_time_ms": self.last_fetch_time_ms}


class Partition:
    """One topic-partition on this broker.

    ``alter_isr(partition, new_isr) -> new zkVersion or None`` writes a leader's ISR change to the coordination
    store (conditionally on ``partition_epoch``, the zkVersion last seen); ``time`` reads the clock."""

    def __init__(self, topic: str, partition: int, broker_id: int, log_manager, *, topic_id: Optional[uuid.UUID] = None,
                 topic_config=None, time=None, replica_lag_time_max_ms: int = 30000, alter_isr=None):
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.topic_id = topic_id
        self.topic_config = topic_config
        self.time = time or SYSTEM
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.alter_isr = alter_isr
        self.log = None
        self.leader_id = -1
        self.leader_epoch = -1
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.isr: tuple = ()
        self.replicas: tuple = ()
        self.remote_replicas: dict[int, Replica] = {}
        self.isr_history: list[tuple[int, tuple]] = []   # (time ms, isr) after each change, for labs
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return f"<Partition {self.topic}-{self.partition} {role} epoch={self.leader_epoch} isr={list(self.isr)}>"

    @property
    def topic_partition(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config["min.insync.replicas"] if self.log is not None else 1

    @property
    def effective_min_isr(self) -> int:
        """``min(min.insync.replicas, replication factor)``."""
        return min(self.min_insync_replicas, len(self.replicas) or 1)

    @property
    def maximal_isr(self) -> tuple:
        """The committed ISR plus pending additions (KIP-497). In the ZooKeeper era the leader's ISR write is
        synchronous, so nothing is ever pending: the maximal ISR is the ISR."""
        return self.isr

    @property
    def is_under_min_isr(self) -> bool:
        return len(self.maximal_isr) < self.effective_min_isr

    # ------------------------------------------------------------------------------------------ roles
    def _ensure_log(self):
        if self.log is None:
            self.log = self.log_manager.get_or_create_log(self.topic, self.partition, self.topic_config, self.topic_id)
        return self.log

    def apply_state(self, state) -> bool:
        """Apply a LeaderAndIsrPartitionState: :meth:`make_leader` or :meth:`make_follower`. Returns True if
        something changed for this broker's role (a new leader or a new epoch)."""
        if state.leader == self.broker_id:
            return self.make_leader(state)
        return self.make_follower(state)

    def _check_epoch(self, state) -> None:
        if state.leader_epoch < self.leader_epoch:
            raise PartitionError(ErrorCode.STALE_CONTROLLER_EPOCH,
                                 f"LeaderAndIsr for {self.topic}-{self.partition} has leader epoch "
                                 f"{state.leader_epoch} older than the current {self.leader_epoch}")

    def _set_state(self, state) -> None:
        self.controller_epoch = state.controller_epoch
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        if tuple(state.isr) != self.isr:
            self.isr_history.append((self.time.milliseconds(), tuple(state.isr)))
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)

    def make_leader(self, state) -> bool:
        """Become leader: the new epoch starts at our log end offset (leader-epoch cache), every follower's
        position is unknown until it fetches; those in the ISR count as caught up now."""
        with self.lock:
            self._check_epoch(state)
            log = self._ensure_log()
            new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
            self._set_state(state)
            now = self.time.milliseconds()
            if new_epoch:
                log.leader_epoch_cache.assign(self.leader_epoch, log.log_end_offset)
                self.leader_epoch_start_offset = log.log_end_offset
                self.remote_replicas = {b: Replica(b, now if b in self.isr else 0)
                                        for b in self.replicas if b != self.broker_id}
            else:
                for b in self.replicas:
                    if b != self.broker_id and b not in self.remote_replicas:
                        self.remote_replicas[b] = Replica(b, now if b in self.isr else 0)
                for b in list(self.remote_replicas):
                    if b not in self.replicas:
                        del self.remote_replicas[b]
            self.maybe_increment_leader_hw(now)
            return new_epoch

    def make_follower(self, state) -> bool:
        """Become (or stay) a follower. True if the leader or its epoch changed: the replica fetcher must then
        (re)start, truncating first (KIP-101)."""
        with self.lock:
            self._check_epoch(state)
            self._ensure_log()
            changed = state.leader != self.leader_id or state.leader_epoch != self.leader_epoch
            self._set_state(state)
            self.remote_replicas = {}
            self.leader_epoch_start_offset = -1
            return changed

    # ------------------------------------------------------------------------------------------ writes
    def append_records_to_leader(self, records, *, origin: str = "client", required_acks: int = 1):
        """Append as leader; returns ``(LogAppendInfo, high_watermark_moved)``."""
        with self.lock:
            if not self.is_leader:
                raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     f"Leader not local for partition {self.topic}-{self.partition} on broker "
                                     f"{self.broker_id}")
            min_isr = self.effective_min_isr
            if required_acks == -1 and len(self.isr) < min_isr:
                raise PartitionError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                     f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the "
                                     f"min.isr requirement of {min_isr} for partition {self.topic}-{self.partition}")
            info = self.log.append_as_leader(records, leader_epoch=self.leader_epoch, origin=origin)
            return info, self.maybe_increment_leader_hw()

    def append_records_to_follower(self, records):
        """Append batches fetched from the leader verbatim (their offsets and leader epochs included)."""
        with self.lock:
            return self.log.append_as_follower(records)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower's HW is min(its LEO, the leader's HW from the fetch response)."""
        with self.lock:
            log = self.log
            new_hw = min(leader_high_watermark, log.log_end_offset)
            if new_hw > log.high_watermark:
                log.update_high_watermark(new_hw)

    def maybe_increment_leader_hw(self, now_ms: Optional[int] = None) -> bool:
        """HW = min LEO over the maximal ISR plus followers caught up and about to join (Kafka's
        ``maybeIncrementLeaderHW``); never backwards; not at all while the ISR is below
        ``min.insync.replicas``. True if it moved."""
        log = self.log
        if log is None or not self.is_leader:
            return False
        if self.is_under_min_isr:
            return False
        now = self.time.milliseconds() if now_ms is None else now_ms
        hw = log.high_watermark
        new_hw = log.log_end_offset
        for b, r in self.remote_replicas.items():
            in_isr = b in self.maximal_isr
            if in_isr or (r.log_end_offset >= hw and now - r.last_caught_up_time_ms <= self.replica_lag_time_max_ms):
                new_hw = min(new_hw, r.log_end_offset)
        if new_hw > hw:
            log.update_high_watermark(new_hw)
            return True
        return False

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """acks=all: has the HW reached ``required_offset``, and with enough in-sync replicas? (DelayedProduce)"""
        with self.lock:
            return check_enough_replicas_reach_offset(
                required_offset, is_leader=self.is_leader and self.log is not None,
                high_watermark=self.log.high_watermark if self.log is not None else -1,
                maximal_isr_size=len(self.maximal_isr), effective_min_isr=self.effective_min_isr)

    # ------------------------------------------------------------------------------------------ the ISR
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    fetch_time_ms: int, leader_end_offset: int) -> bool:
        """A follower fetched from ``fetch_offset``: record its position, maybe add it to the ISR, maybe
        move the HW. Returns True if the HW moved (delayed produces/fetches may complete)."""
        with self.lock:
            replica = self.remote_replicas.get(replica_id)
            if replica is None or not self.is_leader:
                return False
            replica.update_fetch_state(fetch_offset, log_start_offset, fetch_time_ms, leader_end_offset)
            self.maybe_expand_isr(replica)
            return self.maybe_increment_leader_hw(fetch_time_ms)

    def maybe_expand_isr(self, replica: Replica) -> bool:
        """A follower outside the ISR joins once it reached the HW and the start of the current epoch."""
        log = self.log
        if replica.broker_id in self.isr or log is None:
            return False
        if replica.log_end_offset < log.high_watermark or replica.log_end_offset < self.leader_epoch_start_offset:
            return False
        return self._write_isr(tuple(self.isr) + (replica.broker_id,))

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> list[int]:
        leo = self.log.log_end_offset
        return [b for b in self.isr if b != self.broker_id and b in self.remote_replicas
                and not self.remote_replicas[b].is_caught_up(leo, now_ms, max_lag_ms)]

    def maybe_shrink_isr(self, now_ms: Optional[int] = None) -> bool:
        """Drop followers that have not caught up within ``replica.lag.time.max.ms`` (stuck or slow). Returns
        True if the HW moved (shrinking can let it advance)."""
        with self.lock:
            if not self.is_leader or self.log is None:
                return False
            now = self.time.milliseconds() if now_ms is None else now_ms
            out = self.out_of_sync_replicas(now, self.replica_lag_time_max_ms)
            if not out:
                return False
            if not self._write_isr(tuple(b for b in self.isr if b not in out)):
                return False
            return self.maybe_increment_leader_hw(now)

    def _write_isr(self, new_isr: tuple) -> bool:
        """The leader's own ISR write (ZooKeeper era): conditional on the zkVersion it last saw."""
        if self.alter_isr is None:
            return False
        new_version = self.alter_isr(self, new_isr)
        if new_version is None:
            return False  # somebody (the controller) changed the state: a LeaderAndIsr will follow
        self.isr = tuple(new_isr)
        self.partition_epoch = new_version
        self.isr_history.append((self.time.milliseconds(), self.isr))
        return True

    # ------------------------------------------------------------------------------------------ admin
    def delete_records_on_leader(self, offset: int) -> int:
        with self.lock:
            self._check_leader()
            log = self.log
            if offset == -1:  # DeleteRecordsRequest.HIGH_WATERMARK
                offset = log.high_watermark
            if offset < 0 or offset > log.high_watermark:
                raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                     f"Cannot increment the log start offset to {offset} of partition "
                                     f"{self.topic}-{self.partition} since it is larger than the high watermark "
                                     f"{log.high_watermark}")
            log.maybe_increment_log_start_offset(offset, "client delete records request")
            return log.log_start_offset

    # ------------------------------------------------------------------------------------------ reads
    def _check_leader(self):
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320 fencing: -1 means the client does not know the epoch (no check)."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise PartitionError(ErrorCode.FENCED_LEADER_EPOCH)
        if current_leader_epoch > self.leader_epoch:
            raise PartitionError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    def read_records(self, fetch_offset: int, max_bytes: int, *, isolation: FetchIsolation,
                     current_leader_epoch: int = -1,
                     fetch_only_from_leader: bool = True, min_one_message: bool = True) -> LogReadResult:
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            self.check_leader_epoch(current_leader_epoch)
            log = self.log
            if log is None:
                raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            hw, lso, lso_start, leo = (log.high_watermark, log.last_stable_offset, log.log_start_offset,
                                       log.log_end_offset)
            data = log.read(fetch_offset, max_bytes, isolation=isolation, min_one_message=min_one_message)
            size = data.size_in_bytes if data is not None else 0  # without reading the bytes (sendfile later)
            return LogReadResult(data, hw, lso, lso_start, leo, size)

    def fetch_offset_snapshot(self, current_leader_epoch: int, fetch_only_from_leader: bool) -> LogOffsetSnapshot:
        """The log's offsets with segment positions, read together (what a DelayedFetch checks)."""
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            self.check_leader_epoch(current_leader_epoch)
            log = self.log
            if log is None:
                raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            hw = log.high_watermark_metadata
            lso = log.last_stable_offset
            lso_md = hw if lso == hw.message_offset else log.offset_metadata(lso)
            return LogOffsetSnapshot(log.log_start_offset, log.log_end_offset_metadata, hw, lso_md)

    def fetch_offset_for_timestamp(self, timestamp: int, *, isolation: Optional[FetchIsolation], current_leader_epoch: int,
                                   fetch_only_from_leader: bool = True):
        """ListOffsets for one partition: ``(timestamp, offset, leader_epoch)`` or None."""
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            self.check_leader_epoch(current_leader_epoch)
            log = self.log
            isolation = FetchIsolation.of(isolation or FetchIsolation.LOG_END)
            if timestamp == -1:  # LATEST: the end a consumer may see under its isolation level
                bound = {FetchIsolation.HIGH_WATERMARK: log.high_watermark,
                         FetchIsolation.TXN_COMMITTED: log.last_stable_offset,
                         FetchIsolation.LOG_END: log.log_end_offset}[isolation]
                return (-1, bound, self._epoch_at(bound))
            found = log.fetch_offset_by_timestamp(timestamp)
            if found is None:
                return None
            ts, offset, epoch = found
            # a consumer never learns of an offset it could not fetch: the high watermark bounds read_uncommitted,
            # the last stable offset read_committed (the log start offsets, -2 and -4, are always answered)
            bound = {FetchIsolation.HIGH_WATERMARK: log.high_watermark,
                     FetchIsolation.TXN_COMMITTED: log.last_stable_offset}.get(isolation)
            if bound is not None and offset >= bound and timestamp not in (-2, -4):
                return None
            return (ts, offset, epoch)

    def legacy_fetch_offsets_for_timestamp(self, timestamp: int, max_num_offsets: int, *, is_from_consumer: bool,
                                           fetch_only_from_leader: bool) -> list[int]:
        """ListOffsets v0 (:mod:`kafkalab.storage.legacy_offsets`): a consumer never sees an offset above the
        high watermark -- those are dropped and the high watermark put first (Kafka's
        ``Partition.legacyFetchOffsetsForTimestamp``)."""
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            log = self.log
            if log is None:
                raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            offsets = legacy_fetch_offsets_before(log.segments, log.log_start_offset, log.log_end_offset,
                                                  log.time.milliseconds(), timestamp, max_num_offsets)
            high_watermark = log.high_watermark
            if is_from_consumer and any(o > high_watermark for o in offsets):
                offsets = [high_watermark] + [o for o in offsets if o <= high_watermark]
            return offsets

    def _epoch_at(self, offset: int) -> int:
        """The leader epoch of the batch before ``offset`` (what ListOffsets LATEST reports), -1 if none."""
        epoch = self.log.leader_epoch_cache.epoch_for_offset(max(offset - 1, 0))
        return -1 if epoch is None else epoch

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int,
                                     fetch_only_from_leader: bool = True) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end_offset)`` of the largest epoch <= ``leader_epoch`` (KIP-279)."""
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            self.check_leader_epoch(current_leader_epoch)
            return self.log.end_offset_for_epoch(leader_epoch)
