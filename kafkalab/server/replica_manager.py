"""The replica manager: every partition this broker hosts, and the appends and reads that touch them.

Theory of operation
-------------------
Request handlers never touch a log directly. They ask the replica manager, which knows for each
topic-partition whether this broker hosts it, in which role, and with which log:

* **LeaderAndIsr** (from the controller) creates or updates :class:`~kafkalab.server.partition.Partition`
  objects and makes this broker leader or follower of each; **StopReplica** removes them (and deletes the
  log when the topic is deleted).
* **append_records** (Produce) appends to each partition's leader log and reports per partition the base
  offset or the error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, CORRUPT_MESSAGE, ...), so one request can
  partly succeed.
* **fetch_messages** (Fetch) reads from each partition up to its isolation bound (the high watermark for
  consumers, the log end for followers). When less than ``fetch.min.bytes`` is available it *waits*, up to
  ``fetch.max.wait.ms``, for appends to arrive -- instead of letting an idle consumer hammer the broker
  with fetches. (Kafka parks such a request in the fetch *purgatory*; this milestone waits on per-partition
  append notifications, the purgatory milestone replaces it with Kafka's timing-wheel design.)

Mirrors: ``core/src/main/scala/kafka/server/ReplicaManager.scala``.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Callable, Optional

from kafkalab.protocol import ErrorCode
from kafkalab.server.partition import Partition, PartitionError

__all__ = ["ReplicaManager", "PartitionError"]

log = logging.getLogger("kafkalab.server.ReplicaManager")


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager, metadata_cache, *, topic_config_provider: Callable = None):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.topic_config_provider = topic_config_provider or (lambda topic: None)
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.controller_epoch = -1
        self._lock = threading.RLock()
        self._waiters: dict[tuple[str, int], list[asyncio.Future]] = {}

    # ------------------------------------------------------------------------------------------ lookups
    def get_partition(self, topic: str, partition: int) -> Optional[Partition]:
        return self.partitions.get((topic, partition))

    def partition_or_error(self, topic: str, partition: int) -> Partition:
        """The hosted partition, or PartitionError: UNKNOWN_TOPIC_OR_PARTITION if the cluster does not know it,
        NOT_LEADER_OR_FOLLOWER if it exists but is not hosted here (as Kafka answers)."""
        p = self.partitions.get((topic, partition))
        if p is not None:
            return p
        if self.metadata_cache.partition_state(topic, partition) is not None:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    # ------------------------------------------------------------------------------------------ controller
    def become_leader_or_follower(self, controller_id: int, controller_epoch: int, states: list,
                                  topic_ids: dict) -> dict[tuple[str, int], int]:
        """Apply LeaderAndIsr partition states ``[(topic, state)]``; returns an error code per partition."""
        results = {}
        with self._lock:
            if controller_epoch < self.controller_epoch:
                return {(t, s.partition_index): ErrorCode.STALE_CONTROLLER_EPOCH for t, s in states}
            self.controller_epoch = controller_epoch
            for topic, state in states:
                key = (topic, state.partition_index)
                if self.broker_id not in state.replicas:
                    results[key] = ErrorCode.NONE
                    continue
                p = self.partitions.get(key)
                if p is None:
                    p = Partition(topic, state.partition_index, self.broker_id, self.log_manager,
                                  topic_id=topic_ids.get(topic), topic_config=self.topic_config_provider(topic))
                    self.partitions[key] = p
                try:
                    p.apply_state(state)
                    results[key] = ErrorCode.NONE
                except PartitionError as e:
                    results[key] = e.error_code
                except Exception:
                    log.exception("broker %s: failed to apply LeaderAndIsr for %s-%s", self.broker_id, *key)
                    results[key] = ErrorCode.KAFKA_STORAGE_ERROR
        return results

    def stop_replicas(self, controller_epoch: int, partitions: list[tuple[str, int, bool]]) -> dict:
        """StopReplica: stop hosting each ``(topic, partition, delete)``; delete the log when asked."""
        results = {}
        with self._lock:
            if controller_epoch < self.controller_epoch:
                return {(t, p): ErrorCode.STALE_CONTROLLER_EPOCH for t, p, _ in partitions}
            self.controller_epoch = controller_epoch
            for topic, index, delete in partitions:
                p = self.partitions.pop((topic, index), None)
                if delete:
                    self.log_manager.delete_log(topic, index)
                elif p is not None and p.log is not None:
                    p.log.flush()
                results[(topic, index)] = ErrorCode.NONE
                self._wake((topic, index))
        return results

    def update_topic_config(self, topic: str, config) -> None:
        for (t, _), p in list(self.partitions.items()):
            if t == topic:
                p.topic_config = config
                if p.log is not None:
                    p.log.update_config(config)

    # ------------------------------------------------------------------------------------------ produce
    def append_records(self, entries: dict[tuple[str, int], object], *, required_acks: int, origin: str = "client"):
        """Append each partition's records as leader. Returns {tp: LogAppendInfo or PartitionError}."""
        results = {}
        for tp, records in entries.items():
            try:
                p = self.partition_or_error(*tp)
                results[tp] = p.append_records_to_leader(records, origin=origin, required_acks=required_acks)
            except PartitionError as e:
                results[tp] = e
            except Exception as e:  # a storage error carries its Kafka error code
                code = getattr(e, "error_code", None)
                if code is None:
                    log.exception("broker %s: append to %s-%s failed", self.broker_id, *tp)
                    code = ErrorCode.UNKNOWN_SERVER_ERROR
                results[tp] = PartitionError(code, str(e))
            self._wake(tp)
        return results

    # ------------------------------------------------------------------------------------------ fetch
    def read_from_local_log(self, reads: list, *, isolation: str, fetch_only_from_leader: bool, max_bytes: int,
                            min_one_message: bool = True) -> list:
        """``reads`` = [(topic, partition, fetch_offset, partition_max_bytes, current_leader_epoch)] ->
        [(tp, LogReadResult or PartitionError)]. ``max_bytes`` caps the whole response; the first partition
        with data may exceed it by one batch (so a big batch can never block a consumer)."""
        out = []
        remaining = max_bytes
        for topic, partition, offset, part_max, leader_epoch in reads:
            tp = (topic, partition)
            try:
                p = self.partition_or_error(topic, partition)
                budget = max(0, min(part_max, remaining))
                result = p.read_records(offset, budget, isolation=isolation, current_leader_epoch=leader_epoch,
                                        fetch_only_from_leader=fetch_only_from_leader,
                                        min_one_message=min_one_message)
                remaining -= result.bytes
                if result.bytes:
                    min_one_message = False
                out.append((tp, result))
            except PartitionError as e:
                out.append((tp, e))
            except Exception as e:
                code = getattr(e, "error_code", None)
                if code is None:
                    log.exception("broker %s: read of %s-%s failed", self.broker_id, topic, partition)
                    code = ErrorCode.UNKNOWN_SERVER_ERROR
                out.append((tp, PartitionError(code, str(e))))
        return out

    async def wait_for_appends(self, tps: list[tuple[str, int]], timeout_s: float) -> bool:
        """Wait until one of ``tps`` gets an append (or is stopped), at most ``timeout_s``. True if woken."""
        if timeout_s <= 0 or not tps:
            return False
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        for tp in tps:
            self._waiters.setdefault(tp, []).append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout_s)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            for tp in tps:
                waiters = self._waiters.get(tp)
                if waiters and fut in waiters:
                    waiters.remove(fut)
                    if not waiters:
                        del self._waiters[tp]

    def _wake(self, tp: tuple[str, int]) -> None:
        for fut in self._waiters.pop(tp, ()):
            if not fut.done():
                fut.set_result(True)

    # ------------------------------------------------------------------------------------------ checkpoints
    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {tp: p.log.high_watermark for tp, p in self.partitions.items() if p.log is not None}

    def shutdown(self) -> None:
        for fut_list in self._waiters.values():
            for fut in fut_list:
                if not fut.done():
                    fut.cancel()
        self._waiters.clear()
