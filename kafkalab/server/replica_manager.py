"""The replica manager: every partition this broker hosts, the appends and reads that touch them, and the
purgatories where requests wait for replication.

Theory of operation
-------------------
Request handlers never touch a log directly. They ask the replica manager, which knows for each
topic-partition whether this broker hosts it, in which role, and with which log:

* **LeaderAndIsr** (from the controller) creates or updates :class:`~kafkalab.server.partition.Partition`
  objects and makes this broker leader or follower of each. A new follower gets a **replica fetcher**
  (:mod:`kafkalab.server.replica_fetcher`) that first truncates its log where it diverged from the leader's
  (KIP-101) and then fetches; a new leader stops fetching. **StopReplica** removes partitions (and deletes the
  log when the topic is deleted). Both take one request at a time (Kafka's ``replicaStateChangeLock``) and let
  the event loop serve other connections after each partition: a new log is directories, checkpoint files and
  fsyncs, and a topic of a thousand partitions must not freeze every client while Kafka's network threads
  would go on.
* **append_records** (Produce) appends to each partition's leader log. With ``acks=all`` the answer waits in
  the **produce purgatory** as a :class:`~kafkalab.purgatory.DelayedProduce` until the high watermark passes
  the last appended offset (or ``timeout_ms`` passes: REQUEST_TIMED_OUT).
* **append_txn_markers** (WriteTxnMarkers, from a transaction coordinator) builds one COMMIT or ABORT control
  batch per partition and appends it as the coordinator (``origin=coordinator``: a control batch a client may
  not write) with ``acks=all``, through the same path and purgatory as a Produce.
* **fetch_messages** (Fetch, from consumers and followers) reads each partition up to its isolation bound
  (the high watermark for consumers, the log end for followers). When less than ``min_bytes`` is there it
  parks a :class:`~kafkalab.purgatory.DelayedFetch` in the **fetch purgatory** for up to ``max_wait_ms``.
  A follower's fetch also tells the leader how far that follower got: its LEO, and so maybe a new member of
  the ISR and a higher high watermark.

* **elect_leaders** (ElectLeaders) hands the election to the controller and parks the answer in the
  **ElectLeader purgatory** as a :class:`~kafkalab.purgatory.DelayedElectLeader` until the UpdateMetadata
  requests bring the new leaders to this broker's metadata cache.

Who wakes whom (``check_and_complete`` on the partition's key): a leader append wakes fetches (followers wait
for the LEO) and, if the HW moved, produces; a follower fetch that moves the HW wakes produces and consumer
fetches; an ISR shrink that moves the HW does the same; a leadership change wakes both (they then answer
NOT_LEADER_OR_FOLLOWER).

**The ISR** (ZooKeeper era): every ``replica.lag.time.max.ms / 2`` the ``isr-expiration`` task asks each
led partition to drop followers not caught up within ``replica.lag.time.max.ms``; a follower that reaches
the HW is added back on its next fetch. The leader writes each change itself to
``/brokers/topics/<t>/partitions/<p>/state`` (conditional on the zkVersion it last saw) and records the
partition under ``/isr_change_notification``, whose watch tells the controller to send UpdateMetadata.
(Kafka batches those notifications every 2.5 s; kafkalab writes one per event-loop turn with changes.)

**A failed log directory** (:mod:`kafkalab.storage.log_dir_failure_channel`): the first I/O error in a log dir
runs :meth:`ReplicaManager.handle_log_dir_failure` on the broker's loop. Every partition whose log lives there
goes *offline*: its fetcher stops, and from then on Produce, Fetch, ListOffsets, LeaderAndIsr and StopReplica
answer KAFKA_STORAGE_ERROR for it ("Partition t-0 is in an offline log directory") until the broker restarts.
The log manager closes those logs, the broker writes ``/log_dir_event_notification/log_dir_event_<seq>`` (the
controller then asks it about its replicas and moves the leadership of the offline ones, see
:mod:`kafkalab.controller.log_dir_failures`), and if no log dir is left the broker halts.

**High watermark checkpoints**: the replica manager makes ``replication-offset-checkpoint`` (empty) in each
live log dir when it is built, and starts the ``highwatermark-checkpoint`` task with its first LeaderAndIsr
(not refused as stale): a first write at once, then every ``replica.high.watermark.checkpoint.interval.ms``.
Kafka waits for that first request so that every partition is in place before anything is written.

The purgatories' timers are driven on the broker's event loop with the broker's ``Time``: a real clock, or
a ``MockTime`` whose ``advance`` expires delayed requests exactly when a test moves it.

Mirrors: ``core/src/main/scala/kafka/server/ReplicaManager.scala`` (``appendRecords``, ``fetchMessages``,
``becomeLeaderOrFollower``, ``maybeShrinkIsr``, ``maybePropagateIsrChanges``, ``handleLogDirFailure``).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from typing import Callable, Optional

from kafkalab.common.time import SYSTEM, MockTime
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import (DelayedElectLeader, DelayedFetch, DelayedOperationPurgatory, DelayedProduce,
                                FetchPartitionStatus, ProducePartitionStatus, TopicPartitionOperationKey)
from kafkalab.records.control import ControlRecordType, build_end_txn_marker_batch
from kafkalab.server.config import server_setting
from kafkalab.server.partition import Partition, PartitionError
from kafkalab.storage.checkpoints import REPLICATION_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from kafkalab.storage.fetch_data_info import FetchIsolation, LogOffsetMetadata
from kafkalab.zk.paths import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["ReplicaManager", "PartitionError"]

log = logging.getLogger("kafkalab.server.ReplicaManager")


#: partitions a LeaderAndIsr or StopReplica handles before the event loop gets a turn (a new log costs a few
#: milliseconds of file work)
PARTITIONS_PER_TURN = 1


def _key(tp) -> TopicPartitionOperationKey:
    return TopicPartitionOperationKey(tp[0], tp[1])


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager, metadata_cache, *, topic_config_provider: Callable = None,
                 time=SYSTEM, config=None, zk=None, scheduler=None):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.topic_config_provider = topic_config_provider or (lambda topic: None)
        self.time = time
        self.zk = zk
        self.scheduler = scheduler
        get = functools.partial(server_setting, config)
        self.replica_lag_time_max_ms = int(get("replica.lag.time.max.ms"))
        self.high_watermark_checkpoint_interval_ms = int(get("replica.high.watermark.checkpoint.interval.ms"))
        self._high_watermark_checkpoint_started = False
        for log_dir in log_manager.live_log_dirs:   # Kafka's highWatermarkCheckpoints, made with the manager
            OffsetCheckpointFile(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT_FILE)).create_if_missing()
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: partitions whose log dir failed (Kafka's ``HostedPartition.Offline``)
        self.offline_partitions: set[tuple[str, int]] = set()
        self._failed_log_dirs: set[str] = set()
        self.controller_epoch = -1
        self._lock = threading.RLock()
        self._state_change_lock = asyncio.Lock()
        self.delayed_produce_purgatory = DelayedOperationPurgatory(
            "Produce", time=time, broker_id=broker_id,
            purge_interval=int(get("producer.purgatory.purge.interval.requests")))
        self.delayed_fetch_purgatory = DelayedOperationPurgatory(
            "Fetch", time=time, broker_id=broker_id,
            purge_interval=int(get("fetch.purgatory.purge.interval.requests")))
        #: ElectLeaders requests waiting for their new leaders (Kafka's, with its default purge interval)
        self.delayed_elect_leader_purgatory = DelayedOperationPurgatory("ElectLeader", time=time, broker_id=broker_id)
        self.replica_fetcher_manager = None       # set by the broker (it needs the network)
        self.isr_change_set: set[tuple[str, int]] = set()
        self._propagation_scheduled = False
        self._reapers: list[asyncio.Task] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._loop_thread: Optional[threading.Thread] = None
        self._running = False

    # ------------------------------------------------------------------------------------------ life cycle
    async def startup(self) -> None:
        """Start the purgatories' expiration reapers and the ISR expiration task on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.current_thread()
        self._running = True
        for purgatory in self._purgatories():
            self._reapers.append(self._loop.create_task(
                purgatory.run(), name=f"ExpirationReaper-{self.broker_id}-{purgatory.purgatory_name}"))
        if isinstance(self.time, MockTime):
            self.time.on_advance(lambda: self._on_loop(self._poll_purgatories))
        # Kafka's LogDirFailureHandler thread: always later on the loop, never inside the failed call
        self.log_manager.log_dir_failure_channel.set_handler(
            lambda log_dir: self._later_on_loop(lambda: self.handle_log_dir_failure(log_dir)))
        if self.scheduler is not None:
            self.scheduler.schedule("isr-expiration", lambda: self._on_loop(self.maybe_shrink_isr),
                                    delay_ms=0, period_ms=max(1, self.replica_lag_time_max_ms // 2))

    def start_high_watermark_checkpoint_thread(self) -> None:
        """Kafka's ``startHighWatermarkCheckPointThread``, run after each LeaderAndIsr and effective once: the
        ``highwatermark-checkpoint`` task writes at once, then every ``replica.high.watermark.checkpoint.interval.ms``.
        After a crash, a broker starts from these (at most one interval stale) high watermarks instead of none."""
        if self._high_watermark_checkpoint_started or self.scheduler is None:
            return
        self._high_watermark_checkpoint_started = True
        self.scheduler.schedule("highwatermark-checkpoint", lambda: self._on_loop(self.checkpoint_high_watermarks),
                                delay_ms=0, period_ms=max(1, self.high_watermark_checkpoint_interval_ms))

    def checkpoint_high_watermarks(self) -> None:
        """Write every hosted partition's high watermark to ``replication-offset-checkpoint`` (Kafka's
        ``ReplicaManager.checkpointHighWatermarks``)."""
        if not self._running:
            return
        hws = {tp: p.log.high_watermark for tp, p in list(self.partitions.items()) if p.log is not None}
        self.log_manager.checkpoint_high_watermarks(hws)   # a failed write takes its log dir offline

    def _later_on_loop(self, fn) -> None:
        if self._running and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed
                pass

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """Stop serving every replica in ``log_dir`` (Kafka's ``ReplicaManager.handleLogDirFailure``)."""
        if log_dir in self._failed_log_dirs or not self._running:
            return
        self._failed_log_dirs.add(log_dir)
        log.warning("[ReplicaManager broker=%s] Stopping serving replicas in dir %s", self.broker_id, log_dir)
        with self._lock:
            offline = sorted(tp for tp, p in self.partitions.items()
                             if p.log is not None and p.log.parent_dir == log_dir)
            if offline and self.replica_fetcher_manager is not None:
                self.replica_fetcher_manager.remove_fetcher_for_partitions(offline)
            for tp in offline:
                del self.partitions[tp]
                self.offline_partitions.add(tp)
            log.warning("[ReplicaManager broker=%s] Broker %s stopped fetcher for partitions %s and stopped moving "
                        "logs for partitions  because they are in the failed log directory %s.", self.broker_id,
                        self.broker_id, ",".join(f"{t}-{p}" for t, p in offline), log_dir)
        self.log_manager.handle_log_dir_failure(log_dir)
        if self.zk is not None:
            try:
                self.zk.propagate_log_dir_event(self.broker_id)
            except Exception as e:  # the session is gone: the controller learns it from the broker's znode
                log.info("broker %s: log dir event notification failed: %s", self.broker_id, e)
        log.warning("[ReplicaManager broker=%s] Stopped serving replicas in dir %s", self.broker_id, log_dir)
        for tp in offline:
            self.try_complete_delayed(tp)

    def _on_loop(self, fn) -> None:
        """Run ``fn`` on the broker's event loop (timers and a MockTime may call from other threads)."""
        if not self._running or self._loop is None:
            return
        try:
            if threading.current_thread() is self._loop_thread:
                fn()
            else:
                self._loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop is closed
            pass

    def _purgatories(self) -> tuple:
        return self.delayed_produce_purgatory, self.delayed_fetch_purgatory, self.delayed_elect_leader_purgatory

    def _poll_purgatories(self) -> None:
        if self._running:
            for purgatory in self._purgatories():
                purgatory.poll()

    def metrics(self) -> dict:
        """Kafka's purgatory metrics: ``PurgatorySize``, ``NumDelayedOperations``, ``ExpiresPerSec`` (count)."""
        out = {}
        for purgatory in self._purgatories():
            out.update(purgatory.metrics())
        return out

    # ------------------------------------------------------------------------------------------ lookups
    def get_partition(self, topic: str, partition: int) -> Optional[Partition]:
        return self.partitions.get((topic, partition))

    def partition_or_error(self, topic: str, partition: int) -> Partition:
        """The hosted partition, or PartitionError: UNKNOWN_TOPIC_OR_PARTITION if the cluster does not know it,
        NOT_LEADER_OR_FOLLOWER if it exists but is not hosted here (as Kafka answers)."""
        p = self.partitions.get((topic, partition))
        if p is not None:
            return p
        if (topic, partition) in self.offline_partitions:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"Partition {topic}-{partition} is in an offline log directory")
        if self.metadata_cache.partition_state(topic, partition) is not None:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def _partition_by_key(self, tp) -> Partition:
        return self.partition_or_error(tp[0], tp[1])

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def try_complete_delayed(self, tp, *, produce: bool = True, fetch: bool = True) -> None:
        key = _key(tp)
        if produce:
            self.delayed_produce_purgatory.check_and_complete(key)
        if fetch:
            self.delayed_fetch_purgatory.check_and_complete(key)

    # ------------------------------------------------------------------------------------------ controller
    async def become_leader_or_follower(self, controller_id: int, controller_epoch: int, states: list,
                                        topic_ids: dict, live_leaders: Optional[dict] = None
                                        ) -> dict[tuple[str, int], int]:
        """Apply LeaderAndIsr partition states ``[(topic, state)]``; returns an error code per partition.
        ``live_leaders``: broker id -> (host, port) of the leaders on the inter-broker listener.

        One LeaderAndIsr or StopReplica at a time (Kafka's ``replicaStateChangeLock``); between partitions
        the event loop gets a turn every :data:`PARTITIONS_PER_TURN` partitions, since a new partition means
        a new log on disk (directories, checkpoint files, fsyncs) and other connections must not wait for a
        thousand of them, as Kafka's network threads do not wait for its request handler."""
        async with self._state_change_lock:
            if controller_epoch < self.controller_epoch:
                return {(t, s.partition_index): ErrorCode.STALE_CONTROLLER_EPOCH for t, s in states}
            self.controller_epoch = controller_epoch
            results = {}
            new_leaders, new_followers = [], {}
            configs: dict = {}   # each topic's config read once per request, not once per partition
            for i, (topic, state) in enumerate(states):
                if i and i % PARTITIONS_PER_TURN == 0:
                    await asyncio.sleep(0)
                with self._lock:
                    self._apply_partition_state(topic, state, topic_ids, configs, results, new_leaders,
                                                new_followers)
            fetchers = self.replica_fetcher_manager
            if fetchers is not None:
                if new_leaders:
                    fetchers.remove_fetcher_for_partitions(new_leaders)
                if new_followers:
                    fetchers.remove_fetcher_for_partitions(list(new_followers))
                    fetchers.add_fetcher_for_partitions({
                        tp: (p.leader_id, p.leader_epoch, p.log.log_end_offset) for tp, p in new_followers.items()},
                        live_leaders or {})
            # after the first LeaderAndIsr, so that every partition is in place before the first checkpoint
            self.start_high_watermark_checkpoint_thread()
            for tp in new_leaders + list(new_followers):
                self.try_complete_delayed(tp)
            return results

    def _apply_partition_state(self, topic: str, state, topic_ids: dict, configs: dict, results: dict,
                               new_leaders: list, new_followers: dict) -> None:
        key = (topic, state.partition_index)
        if self.broker_id not in state.replicas:
            results[key] = ErrorCode.NONE
            return
        if key in self.offline_partitions:
            log.warning("broker %s: ignoring LeaderAndIsr for %s-%s: it is in an offline log directory",
                        self.broker_id, *key)
            results[key] = ErrorCode.KAFKA_STORAGE_ERROR
            return
        p = self.partitions.get(key)
        if p is None:
            if topic not in configs:
                configs[topic] = self.topic_config_provider(topic)
            p = Partition(topic, state.partition_index, self.broker_id, self.log_manager,
                          topic_id=topic_ids.get(topic), topic_config=configs[topic],
                          time=self.time, replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                          alter_isr=self._alter_isr)
            self.partitions[key] = p
        try:
            if state.leader == self.broker_id:
                p.make_leader(state)
                new_leaders.append(key)
            elif p.make_follower(state):
                if state.leader >= 0:
                    new_followers[key] = p
                else:
                    new_leaders.append(key)  # offline: nobody to fetch from (stop fetching)
            results[key] = ErrorCode.NONE
        except PartitionError as e:
            results[key] = e.error_code
        except Exception:
            log.exception("broker %s: failed to apply LeaderAndIsr for %s-%s", self.broker_id, *key)
            results[key] = ErrorCode.KAFKA_STORAGE_ERROR

    async def stop_replicas(self, controller_epoch: int, partitions: list[tuple[str, int, bool]]) -> dict:
        """StopReplica: stop hosting each ``(topic, partition, delete)``; delete the log when asked. As
        LeaderAndIsr: one at a time, the event loop served every :data:`PARTITIONS_PER_TURN` partitions, and the
        log directories' checkpoints written once at the end (Kafka's ``asyncDelete`` of many partitions)."""
        async with self._state_change_lock:
            if controller_epoch < self.controller_epoch:
                return {(t, p): ErrorCode.STALE_CONTROLLER_EPOCH for t, p, _ in partitions}
            self.controller_epoch = controller_epoch
            if self.replica_fetcher_manager is not None:
                self.replica_fetcher_manager.remove_fetcher_for_partitions([(t, p) for t, p, _ in partitions])
            results = {}
            touched_dirs: set[str] = set()
            for i, (topic, index, delete) in enumerate(partitions):
                if i and i % PARTITIONS_PER_TURN == 0:
                    await asyncio.sleep(0)
                if (topic, index) in self.offline_partitions:
                    results[(topic, index)] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                with self._lock:
                    p = self.partitions.pop((topic, index), None)
                    if delete:
                        removed = self.log_manager.delete_log(topic, index, checkpoint=False)
                        if removed is not None:
                            touched_dirs.add(removed.parent_dir)
                    elif p is not None and p.log is not None:
                        p.log.flush()
                    results[(topic, index)] = ErrorCode.NONE
                    self.try_complete_delayed((topic, index))
            for log_dir in sorted(touched_dirs):
                self.log_manager.checkpoint_dir(log_dir)
            return results

    def update_topic_config(self, topic: str, config) -> None:
        for (t, _), p in list(self.partitions.items()):
            if t == topic:
                p.topic_config = config
                if p.log is not None:
                    p.log.update_config(config)

    # ------------------------------------------------------------------------------------------ the ISR
    def _alter_isr(self, partition: Partition, new_isr: tuple) -> Optional[int]:
        """The leader's ISR write (ZooKeeper era): conditional on the zkVersion; records the change for the
        controller. Returns the new zkVersion, or None when the state moved on (a LeaderAndIsr will follow)."""
        if self.zk is None:
            return None
        lai = LeaderAndIsr(partition.leader_id, partition.leader_epoch, tuple(new_isr),
                           partition_epoch=partition.partition_epoch)
        tp = TopicPartition(partition.topic, partition.partition)
        try:
            ok, version = self.zk.update_partition_state(
                tp, LeaderIsrAndControllerEpoch(lai, partition.controller_epoch), partition.partition_epoch)
        except Exception as e:  # the session is gone (a killed or isolated broker)
            log.info("broker %s: ISR update of %s-%s failed: %s", self.broker_id, *tp, e)
            return None
        if not ok:
            log.info("broker %s: cached zkVersion %s of %s-%s does not match the store; skipping the ISR update",
                     self.broker_id, partition.partition_epoch, *tp)
            return None
        log.info("broker %s: ISR of %s-%s changed from %s to %s", self.broker_id, tp.topic, tp.partition,
                 list(partition.isr), list(new_isr))
        self.isr_change_set.add((tp.topic, tp.partition))
        if not self._propagation_scheduled and self._loop is not None:
            self._propagation_scheduled = True
            self._on_loop(self.maybe_propagate_isr_changes)
        return version

    def maybe_propagate_isr_changes(self) -> None:
        """Write one ``/isr_change_notification/isr_change_<seq>`` for the partitions whose ISR changed."""
        self._propagation_scheduled = False
        changed, self.isr_change_set = sorted(self.isr_change_set), set()
        if changed and self.zk is not None:
            try:
                self.zk.propagate_isr_changes(TopicPartition(t, p) for t, p in changed)
            except Exception as e:
                log.info("broker %s: ISR change notification failed: %s", self.broker_id, e)

    def maybe_shrink_isr(self) -> None:
        """The ``isr-expiration`` task: every led partition drops followers that fell behind."""
        if not self._running:
            return
        now = self.time.milliseconds()
        for p in self.leader_partitions():
            try:
                if p.maybe_shrink_isr(now):
                    self.try_complete_delayed(p.topic_partition)
            except Exception:
                log.exception("broker %s: ISR shrink of %s failed", self.broker_id, p)

    # ------------------------------------------------------------------------------------------ produce
    def append_records(self, entries: dict[tuple[str, int], object], *, required_acks: int, origin: str = "client",
                       timeout_ms: int = 30000, response_callback: Optional[Callable[[dict], None]] = None):
        """Append each partition's records as leader. Returns {tp: LogAppendInfo or ApiException} (the local
        results). With ``response_callback``, it is called once with {tp: ProducePartitionStatus}: at once, or
        for ``acks=all`` when the in-sync replicas have the records (DelayedProduce) or ``timeout_ms`` passed."""
        results = {}
        for tp, records in entries.items():
            try:
                p = self.partition_or_error(*tp)
                info, hw_moved = p.append_records_to_leader(records, origin=origin, required_acks=required_acks)
                results[tp] = info
                self.try_complete_delayed(tp, produce=hw_moved, fetch=True)
            except ApiException as e:  # a PartitionError, or a storage error with its Kafka error code
                results[tp] = e
            except Exception as e:
                log.exception("broker %s: append to %s-%s failed", self.broker_id, *tp)
                results[tp] = PartitionError(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        if response_callback is None:
            return results
        status = {}
        for tp, r in results.items():
            if isinstance(r, ApiException):
                status[tp] = ProducePartitionStatus(required_offset=-1, error_code=r.error_code,
                                                    error_message=str(r))
            else:
                status[tp] = ProducePartitionStatus(required_offset=r.last_offset + 1, base_offset=r.first_offset,
                                                    log_append_time_ms=r.log_append_time,
                                                    log_start_offset=r.log_start_offset)
        ok = [tp for tp, r in results.items() if not isinstance(r, ApiException)]
        if required_acks == -1 and ok:
            op = DelayedProduce(timeout_ms, status, self._partition_by_key, response_callback)
            self.delayed_produce_purgatory.try_complete_else_watch(op, [_key(tp) for tp in entries])
        else:
            response_callback(status)
        return results

    def append_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
                           partitions: list, *, timeout_ms: int, response_callback: Callable[[dict], None]) -> dict:
        """Write the end of ``producer_id``'s transaction into each partition this broker leads: a COMMIT (or
        ABORT) marker carrying the producer's epoch and the coordinator's epoch, appended with ``acks=all``.
        Partitions without a local log get UNKNOWN_TOPIC_OR_PARTITION at once (Kafka's ``getMagic`` check).
        ``response_callback({tp: ProducePartitionStatus})`` is called once, when the high watermark has passed
        every marker or ``timeout_ms`` expired. Returns the local results, as :meth:`append_records`."""
        control_type = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        now = self.time.milliseconds()
        entries, unknown = {}, {}
        for tp in partitions:
            p = self.partitions.get(tuple(tp))
            if p is None or p.log is None:
                unknown[tuple(tp)] = ProducePartitionStatus(required_offset=-1,
                                                            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                entries[tuple(tp)] = build_end_txn_marker_batch(
                    control_type, producer_id=producer_id, producer_epoch=producer_epoch,
                    coordinator_epoch=coordinator_epoch, timestamp=now)
        if not entries:
            response_callback(unknown)
            return {}

        def with_unknown(status: dict) -> None:
            response_callback({**unknown, **status})
        return self.append_records(entries, required_acks=-1, origin="coordinator", timeout_ms=timeout_ms,
                                   response_callback=with_unknown)

    # ------------------------------------------------------------------------------------------ fetch
    def fetch_messages(self, params, fetch_infos: list, response_callback: Callable[[list], None]) -> None:
        """Fetch for a consumer or a follower (``params``: :class:`~kafkalab.purgatory.FetchParams`;
        ``fetch_infos``: ``[(tp, FetchPartitionInfo)]``). ``response_callback([(tp, LogReadResult or
        ApiException)])`` is called once: at once when enough is there, else from the fetch purgatory."""
        results = self.read_from_log(params, fetch_infos)
        if params.is_from_follower:
            self._update_follower_fetch_state(params.replica_id, fetch_infos, results)
        readable = 0
        error = False
        for _, r in results:
            if isinstance(r, ApiException):
                error = True
            else:
                readable += r.bytes
        if params.max_wait_ms <= 0 or not fetch_infos or readable >= params.min_bytes or error:
            response_callback(results)
            return
        statuses = []
        for (tp, info), (_, r) in zip(fetch_infos, results):
            start = r.records.fetch_offset_metadata if r.records is not None else LogOffsetMetadata(info.fetch_offset)
            if start.message_offset_only:
                p = self.partitions.get(tp)
                if p is not None and p.log is not None:
                    start = p.log.offset_metadata(info.fetch_offset)
            statuses.append((tp, FetchPartitionStatus(start, info)))
        op = DelayedFetch(params, statuses, self._partition_by_key, self.read_from_log, response_callback)
        self.delayed_fetch_purgatory.try_complete_else_watch(op, [_key(tp) for tp, _ in fetch_infos])

    def _update_follower_fetch_state(self, replica_id: int, fetch_infos: list, results: list) -> None:
        now = self.time.milliseconds()
        for (tp, info), (_, r) in zip(fetch_infos, results):
            if isinstance(r, ApiException):
                continue
            p = self.partitions.get(tp)
            if p is not None and p.update_follower_fetch_state(replica_id, info.fetch_offset, info.log_start_offset,
                                                               now, r.log_end_offset):
                self.try_complete_delayed(tp)

    def read_from_log(self, params, fetch_infos: list) -> list:
        """One read of every partition under the request's isolation (DelayedFetch calls it at completion)."""
        reads = [(tp[0], tp[1], info.fetch_offset, info.max_bytes, info.current_leader_epoch)
                 for tp, info in fetch_infos]
        return self.read_from_local_log(reads, isolation=FetchIsolation.of(params.isolation),
                                        fetch_only_from_leader=params.fetch_only_leader, max_bytes=params.max_bytes,
                                        min_one_message=not params.hard_max_bytes_limit)

    def read_from_local_log(self, reads: list, *, isolation: FetchIsolation, fetch_only_from_leader: bool, max_bytes: int,
                            min_one_message: bool = True) -> list:
        """``reads`` = [(topic, partition, fetch_offset, partition_max_bytes, current_leader_epoch)] ->
        [(tp, LogReadResult or ApiException)]. ``max_bytes`` caps the whole response; the first partition
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
            except ApiException as e:  # a PartitionError, or a storage error with its Kafka error code
                out.append((tp, e))
            except Exception as e:
                log.exception("broker %s: read of %s-%s failed", self.broker_id, topic, partition)
                out.append((tp, PartitionError(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))))
        return out

    # ------------------------------------------------------------------------------------------ elections
    def elect_leaders(self, controller, partitions, election_type: int, response_callback, timeout_ms: int) -> None:
        """ElectLeaders (Kafka's ``ReplicaManager.electLeaders``): ``controller`` elects; the answer,
        ``{(topic, partition): None or ApiException}``, waits in the ElectLeader purgatory until this broker's
        metadata shows each new leader, at most ``timeout_ms`` from now."""
        deadline = self.time.milliseconds() + timeout_ms

        def on_elected(future) -> None:
            outcomes = future.result()
            expected = {tp: o for tp, o in outcomes.items() if not isinstance(o, ApiException)}
            failures = {tp: o for tp, o in outcomes.items() if isinstance(o, ApiException)}
            if not expected:      # nothing was elected: nothing to wait for
                response_callback(failures)
                return
            op = DelayedElectLeader(max(0, deadline - self.time.milliseconds()), expected, failures,
                                    lambda tp: self.metadata_cache.leader_of(*tp), response_callback)
            self.delayed_elect_leader_purgatory.try_complete_else_watch(op, [_key(tp) for tp in expected])
        controller.elect_leaders(partitions, election_type).add_done_callback(on_elected)

    def try_complete_election(self, tp) -> None:
        """An UpdateMetadata carried ``tp``: an election waiting for its leader may be done."""
        if self.delayed_elect_leader_purgatory.num_delayed:
            self.delayed_elect_leader_purgatory.check_and_complete(_key(tp))

    # ------------------------------------------------------------------------------------------ checkpoints
    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {tp: p.log.high_watermark for tp, p in self.partitions.items() if p.log is not None}

    def shutdown(self) -> None:
        self._running = False
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.shutdown()
        for purgatory in self._purgatories():
            purgatory.shutdown()
        for task in self._reapers:
            task.cancel()
        self._reapers = []
