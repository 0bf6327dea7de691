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

The **high watermark** (HW) is the offset up to which every in-sync replica has the data: consumers read
only below it. The leader computes it as the smallest log end offset among the ISR, it never moves backwards,
and it does not advance at all while the ISR is smaller than ``min.insync.replicas``. With a single replica
the HW simply follows the log end offset.

Two fencing checks protect clients from a stale view (KIP-320): a request that carries a
``current_leader_epoch`` older than ours gets FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.

Mirrors: ``core/src/main/scala/kafka/cluster/Partition.scala`` (``makeLeader``, ``makeFollower``,
``appendRecordsToLeader``, ``maybeIncrementLeaderHW``, ``readRecords``, ``fetchOffsetForTimestamp``).
"""
from __future__ import annotations

import threading
import uuid
from typing import Any, NamedTuple, Optional

from kafkalab.protocol import ErrorCode

__all__ = ["Partition", "PartitionError", "LogReadResult"]


class PartitionError(Exception):
    """An error with a Kafka error code, raised for one partition."""

    def __init__(self, error_code: int, message: Optional[str] = None):
        self.error_code = ErrorCode(error_code)
        super().__init__(message or self.error_code.message)


class LogReadResult(NamedTuple):
    records: Any                 # the storage read result (bytes and file slices), or None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    bytes: int


class Partition:
    """One topic-partition on this broker."""

    def __init__(self, topic: str, partition: int, broker_id: int, log_manager, *, topic_id: Optional[uuid.UUID] = None,
                 topic_config=None):
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.topic_id = topic_id
        self.topic_config = topic_config
        self.log = None
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.isr: tuple = ()
        self.replicas: tuple = ()
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return f"<Partition {self.topic}-{self.partition} {role} epoch={self.leader_epoch} isr={list(self.isr)}>"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config["min.insync.replicas"] if self.log is not None else 1

    # ------------------------------------------------------------------------------------------ roles
    def _ensure_log(self):
        if self.log is None:
            self.log = self.log_manager.get_or_create_log(self.topic, self.partition, self.topic_config, self.topic_id)
        return self.log

    def apply_state(self, state) -> bool:
        """Apply a LeaderAndIsrPartitionState. Returns True if this broker became leader (or a new epoch)."""
        with self.lock:
            if state.leader_epoch < self.leader_epoch:
                raise PartitionError(ErrorCode.STALE_CONTROLLER_EPOCH,
                                     f"LeaderAndIsr for {self.topic}-{self.partition} has leader epoch "
                                     f"{state.leader_epoch} older than the current {self.leader_epoch}")
            log = self._ensure_log()
            new_epoch = state.leader_epoch != self.leader_epoch
            self.controller_epoch = state.controller_epoch
            self.leader_id = state.leader
            self.leader_epoch = state.leader_epoch
            self.partition_epoch = state.partition_epoch
            self.isr = tuple(state.isr)
            self.replicas = tuple(state.replicas)
            if self.is_leader:
                if new_epoch:
                    # Batches appended from now on carry the new epoch; it starts at the current log end.
                    log.leader_epoch_cache.assign(self.leader_epoch, log.log_end_offset)
                self.maybe_increment_leader_hw()
            return self.is_leader and new_epoch

    # ------------------------------------------------------------------------------------------ writes
    def append_records_to_leader(self, records, *, origin: str = "client", required_acks: int = 1):
        with self.lock:
            if not self.is_leader:
                raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     f"Leader not local for partition {self.topic}-{self.partition} on broker "
                                     f"{self.broker_id}")
            min_isr = min(self.min_insync_replicas, len(self.replicas) or 1)
            if required_acks == -1 and len(self.isr) < min_isr:
                raise PartitionError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                     f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the "
                                     f"min.isr requirement of {min_isr} for partition {self.topic}-{self.partition}")
            info = self.log.append_as_leader(records, leader_epoch=self.leader_epoch, origin=origin)
            self.maybe_increment_leader_hw()
            return info

    def maybe_increment_leader_hw(self) -> bool:
        """HW = min LEO over the ISR; here only the leader's replica is tracked (followers come with
        replication), so the HW follows the leader's log end offset while the ISR is the leader alone."""
        log = self.log
        if log is None or not self.is_leader:
            return False
        if len(self.isr) < min(self.min_insync_replicas, len(self.replicas) or 1):
            return False
        if set(self.isr) - {self.broker_id}:
            return False  # followers' positions are not tracked on a single-replica partition
        new_hw = log.log_end_offset
        if new_hw > log.high_watermark:
            log.update_high_watermark(new_hw)
            return True
        return False

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

    def read_records(self, fetch_offset: int, max_bytes: int, *, isolation: str, current_leader_epoch: int = -1,
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

    def fetch_offset_for_timestamp(self, timestamp: int, *, isolation: Optional[str], current_leader_epoch: int,
                                   fetch_only_from_leader: bool = True):
        """ListOffsets for one partition: ``(timestamp, offset, leader_epoch)`` or None."""
        with self.lock:
            if fetch_only_from_leader:
                self._check_leader()
            self.check_leader_epoch(current_leader_epoch)
            log = self.log
            if timestamp == -1:  # LATEST: the end a consumer may see under its isolation level
                bound = {"high_watermark": log.high_watermark, "txn_committed": log.last_stable_offset}.get(
                    isolation or "", log.log_end_offset)
                return (-1, bound, self._epoch_at(bound))
            found = log.fetch_offset_by_timestamp(timestamp)
            if found is None:
                return None
            ts, offset, epoch = found
            if isolation == "high_watermark" and offset >= log.high_watermark and timestamp >= 0:
                return None
            return (ts, offset, epoch)

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
