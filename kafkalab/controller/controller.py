"""The controller (ZooKeeper era): one broker, elected through ZooKeeper, that decides leaders for everyone.

Theory of operation
-------------------
Every broker runs this code, but only one is *active*: the one that created the ephemeral ``/controller``
znode first. The others watch that znode; when its owner's session ends (the broker died or was cut off),
the znode disappears, the watches fire, and they race again. Each new controller increments
``/controller_epoch`` and stamps every request and every ZooKeeper write with it, so a deposed controller
that does not know it yet ("zombie") is ignored by brokers and fenced by ZooKeeper.

The active controller works through **events**, one at a time (Kafka's ControllerEventManager):

* *failover* -- read everything from ZooKeeper, tell every broker the whole state (UpdateMetadata), tell every
  replica its role (LeaderAndIsr), elect leaders for partitions that have none;
* *broker change* (``/brokers/ids`` children) -- a new broker gets the metadata and its replicas' roles; for a
  dead broker, each partition it led gets a new leader (the first live ISR member in assignment order, see
  :mod:`.election`) with a bumped leader epoch, and it leaves the ISR of the others;
* *topic change* (``/brokers/topics`` children) -- a new topic's partitions get their first leader and ISR,
  written to ``/brokers/topics/<t>/partitions/<p>/state``;
* *partition modification* -- CreatePartitions added partitions to a topic;
* *topic deletion* (``/admin/delete_topics``) -- StopReplica with delete to every replica, then the znodes go;
* *ISR change notification* -- a leader changed an ISR in ZooKeeper; all brokers get UpdateMetadata;
* *log dir event notification* / *LeaderAndIsr response received* -- a broker's log dir failed: its replicas
  there go offline and lose their leaderships (:mod:`.log_dir_failures`);
* *replica leader election* (an ElectLeaders request, key 43) -- an operator's PREFERRED or UNCLEAN election
  (:mod:`.replica_election`);
* *controlled shutdown* (a ControlledShutdown request, key 7, from a broker about to stop) -- the broker is
  marked shutting down; each partition it leads gets a new leader among the other ISR members (chosen as in
  :func:`~.election.controlled_shutdown_leader`), it leaves the ISR of those it follows (after a StopReplica
  without delete), and the answer lists the partitions it still leads (:mod:`.controlled_shutdown`);
* *expire* / *re-register* -- this broker's own ZooKeeper session expired: queued events are dropped, a
  controller resigns; once the broker has a new session and a new ``/brokers/ids/<id>`` it runs for election
  again (Kafka's ``Expire`` and ``RegisterBrokerAndReelect``).

Which method handles which event is one table, :data:`EVENTS` (event name -> :class:`ControllerEvent`: the
handler, Kafka's name for the event, its ``ControllerState``, and what puts it in the queue), declared once at
the end of this module; an event that is not in the table is refused when it is queued. The event thread times
each event on the timer of its state, and after each one recomputes the controller's gauges
(:mod:`.controller_stats`; :meth:`KafkaController.metrics`).

The collaborators (:mod:`.controlled_shutdown`, :mod:`.replica_election`, :mod:`.log_dir_failures`) use one
interface of the controller: ``context``, ``is_active``, ``name``, ``zk``, ``new_batch()``, ``write_states()``,
``elect_offline_partitions()``, ``remove_from_isr()`` and ``send()``.

Every decision is written to ZooKeeper first (conditionally on the controller epoch's zkVersion), then sent
to brokers through :class:`~kafkalab.controller.channel.ControllerBrokerRequestBatch`.

Mirrors: ``core/src/main/scala/kafka/controller/KafkaController.scala``, ``PartitionStateMachine.scala``,
``ReplicaStateMachine.scala``, ``TopicDeletionManager.scala``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, NamedTuple, Optional

from kafkalab.controller.channel import ControllerBrokerRequestBatch, send_all
from kafkalab.controller.context import ControllerContext
from kafkalab.common.time import SYSTEM, Time
from kafkalab.controller.controlled_shutdown import on_controlled_shutdown, preempt_controlled_shutdown
from kafkalab.controller.controller_stats import ControllerStats, controller_gauges, log_partition_online
from kafkalab.controller.election import offline_partition_leader
from kafkalab.controller.log_dir_failures import (on_leader_and_isr_response_received, on_log_dir_event_notification,
                                                  storage_errors_in, watch_log_dir_events)
from kafkalab.controller.topic_changes import (delete_topics, on_partition_modifications, on_topic_change,
                                               on_topic_deletion)
from kafkalab.controller.replica_election import (not_controller, on_replica_leader_election,
                                                 preempt_replica_leader_election)
from kafkalab.protocol import ApiKey, ErrorCode
from kafkalab.zk import ControllerMovedException, KeeperException, NodeExistsException
from kafkalab.zk.paths import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["KafkaController", "ControllerEvent", "EVENTS", "UnknownControllerEvent"]

log = logging.getLogger("kafkalab.controller.KafkaController")

#: new partition states written per ZooKeeper batch before the event loop gets a turn
PARTITIONS_PER_WRITE = 250


class UnknownControllerEvent(ValueError):
    """An event name that has no row in :data:`EVENTS`."""


class KafkaController:
    """``unclean_election(topic) -> bool`` answers ``unclean.leader.election.enable`` for a topic."""

    def __init__(self, broker_id: int, zk, channel, *, inter_broker_listener: str = "PLAINTEXT",
                 controller_to_broker_listener: Optional[str] = None,
                 unclean_election: Optional[Callable[[str], bool]] = None, name: Optional[str] = None,
                 time: Time = SYSTEM):
        self.broker_id = broker_id
        self.time = time
        #: where the channel to each broker connects: ``control.plane.listener.name`` if set (KIP-291), else the
        #: inter-broker listener (LeaderAndIsr's ``live_leaders`` always name the inter-broker endpoints)
        self.controller_to_broker_listener = controller_to_broker_listener or inter_broker_listener
        self.zk = zk
        self.channel = channel
        self.context = ControllerContext(ControllerStats(time))
        self.context.inter_broker_listener = inter_broker_listener
        self.unclean_election = unclean_election or (lambda topic: False)
        self.name = name or f"Controller id={broker_id}"
        self.active_controller_id = -1
        self.events: Optional[asyncio.Queue] = None
        self._worker: Optional[asyncio.Task] = None
        self.event_log: list[tuple[str, str]] = []   # (event, outcome) for labs
        self._listeners: list[Callable[[str, dict], None]] = []
        self._gauges = controller_gauges(self.context, False)

    # ------------------------------------------------------------------------------------------ lifecycle
    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id

    def metrics(self) -> dict:
        """Kafka's controller metrics by name: the ``KafkaController`` gauges (``ActiveControllerCount`` read now,
        the others as the last event left them) and the ``ControllerStats`` meters and timers (counts)."""
        return {"ActiveControllerCount": int(self.is_active), **self._gauges, **self.context.stats.metrics()}

    def _update_gauges(self) -> None:
        """Kafka's ``updateMetrics``: after every event; a controller that is not active reports zeros."""
        self._gauges = controller_gauges(self.context, self.is_active)

    def add_listener(self, fn: Callable[[str, dict], None]) -> None:
        """``fn(event, details)`` after each processed event (labs draw controller timelines from this)."""
        self._listeners.append(fn)

    async def startup(self) -> None:
        self.events = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._run(), name=f"{self.name}-event-thread")
        self.enqueue("startup")

    async def shutdown(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        if self.is_active:
            self._resign()
        if hasattr(self.channel, "shutdown"):
            self.channel.shutdown()

    def session_expired(self) -> None:
        """This broker's ZooKeeper session expired (Kafka's ``Expire``, put ahead of everything queued):
        pending events were decided under the old session and are dropped; an active controller resigns."""
        while self.events is not None and not self.events.empty():
            event, args = self.events.get_nowait()
            if EVENTS[event].preempt is not None:   # a request waits on it: it hears NOT_CONTROLLER
                EVENTS[event].preempt(*args)
        if self.is_active:
            self._resign()
        self.active_controller_id = -1
        self.event_log.append(("expire", "ok"))

    def reelect(self) -> None:
        """After the broker registered again on a new session: watch ``/controller`` and run for election."""
        self.enqueue("startup")

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> asyncio.Future:
        """A ControlledShutdown request: a future of ``(error_code, partitions the broker still leads)``."""
        future = asyncio.get_running_loop().create_future()
        if self.events is None:
            future.set_result((ErrorCode.NOT_CONTROLLER, []))
        else:
            self.enqueue("controlled_shutdown", broker_id, broker_epoch, future)
        return future

    def elect_leaders(self, partitions, election_type: int) -> asyncio.Future:
        """An ElectLeaders request (key 43): a future of ``{(topic, partition): new leader id, or the ApiException
        saying why not}`` (:mod:`.replica_election`)."""
        future = asyncio.get_running_loop().create_future()
        if self.events is None:
            future.set_result(not_controller(partitions))
        else:
            self.enqueue("replica_leader_election", partitions, election_type, future)
        return future

    def enqueue(self, event: str, *args) -> None:
        """Queue ``event`` (a key of :data:`EVENTS`) with the arguments its handler takes."""
        if event not in EVENTS:
            raise UnknownControllerEvent(f"unknown controller event {event!r} (known: {', '.join(EVENTS)})")
        if self.events is not None:
            self.events.put_nowait((event, args))

    def watch(self, event: str, *args) -> Callable:
        return lambda _watched: self.enqueue(event, *args)

    async def _run(self) -> None:
        while True:
            event, args = await self.events.get()
            timer = self.context.stats.rate_and_time_metrics[EVENTS[event].state]
            start_ns = self.time.nanoseconds()
            try:
                await EVENTS[event].handler(self, *args)
                outcome = "ok"
            except ControllerMovedException as e:
                log.info("%s: %s while processing %s; resigning", self.name, e, event)
                self._resign()
                self.enqueue("reelect")
                outcome = "controller moved"
            except KeeperException as e:  # e.g. our session expired: try again after re-election
                log.warning("%s: ZooKeeper error in %s: %s", self.name, event, e)
                outcome = f"zookeeper error: {e}"
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: error processing %s", self.name, event)
                outcome = "error"
            timer.update((self.time.nanoseconds() - start_ns) / 1e6)
            self._update_gauges()
            self.event_log.append((event, outcome))
            for fn in list(self._listeners):
                try:
                    fn(event, {"outcome": outcome, "active": self.is_active, "epoch": self.context.epoch})
                except Exception:
                    pass

    # ------------------------------------------------------------------------------------------ election
    async def _on_startup(self) -> None:
        self.zk.controller_exists(watch=self.watch("controller_change"))
        await self._elect()

    async def _on_reelect(self) -> None:
        await self._elect()

    async def _on_controller_change(self) -> None:
        was_active = self.is_active
        current = self.zk.get_controller_id(watch=self.watch("controller_change"))
        self.active_controller_id = -1 if current is None else current
        if was_active and not self.is_active:
            self._resign()
        if current is None:
            await self._elect()

    async def _elect(self) -> None:
        try:
            epoch, zk_version = self.zk.register_controller_and_increment_controller_epoch(self.broker_id)
        except (ControllerMovedException, NodeExistsException):
            current = self.zk.get_controller_id(watch=self.watch("controller_change"))
            self.active_controller_id = -1 if current is None else current
            if current is None:
                self.enqueue("reelect")
            return
        self.zk.controller_exists(watch=self.watch("controller_change"))
        self.active_controller_id = self.broker_id
        listener = self.context.inter_broker_listener   # clear() forgets it; it is configuration, not state
        self.context.clear()
        self.context.inter_broker_listener = listener or "PLAINTEXT"
        self.context.epoch, self.context.epoch_zk_version = epoch, zk_version
        log.info("%s: elected as the controller with epoch %d", self.name, epoch)
        await self._on_controller_failover()

    def _resign(self) -> None:
        log.info("%s: resigning as controller", self.name)
        if hasattr(self.channel, "shutdown"):
            self.channel.shutdown()
        listener = self.context.inter_broker_listener
        self.context.clear()
        self.context.inter_broker_listener = listener
        if self.active_controller_id == self.broker_id:
            self.active_controller_id = -1
        self._update_gauges()

    # ------------------------------------------------------------------------------------------ failover
    async def _on_controller_failover(self) -> None:
        ctx = self.context
        self.zk.get_children("/brokers/ids", watch=self.watch("broker_change"))
        self.zk.get_children("/brokers/topics", watch=self.watch("topic_change"))
        self.zk.make_sure_persistent_path_exists("/admin/delete_topics")
        self.zk.make_sure_persistent_path_exists("/isr_change_notification")
        for broker_id, (info, epoch) in self.zk.get_all_broker_and_epochs_in_cluster().items():
            ctx.live_brokers[broker_id] = info
            ctx.broker_epochs[broker_id] = epoch
            self._add_channel(broker_id)
        for topic in self.zk.get_all_topics_in_cluster():
            self.load_topic(topic)
        for tp, state in self.zk.get_topic_partition_states(
                TopicPartition(t, p) for t, p in ctx.assignments).items():
            ctx.partition_states[(tp.topic, tp.partition)] = state
        deletions = self.zk.get_topic_deletions(watch=self.watch("topic_deletion"))
        ctx.topics_being_deleted.update(t for t in deletions if (t, 0) in ctx.assignments or t in ctx.topic_ids)
        self.zk.get_all_isr_change_notifications(watch=self.watch("isr_change_notification"))
        watch_log_dir_events(self.zk, ctx, self.watch("log_dir_event_notification"))
        batch = self.new_batch()
        batch.add_update_metadata(ctx.live_broker_ids(), list(ctx.assignments))
        # Partitions never initialised (the creator died halfway) or without a live leader need an election.
        new = [tp for tp in ctx.assignments if tp not in ctx.partition_states]
        await self.initialize_partitions(new, batch)
        offline = ctx.offline_partitions()
        self.elect_offline_partitions(offline, batch)
        dead = {b for tp in ctx.assignments for b in ctx.replicas(tp) if not ctx.is_live(b)}
        self.remove_from_isr(sorted(dead), set(offline) | set(new), batch)
        for tp in ctx.assignments:
            if tp not in new and tp[0] not in ctx.topics_being_deleted:
                batch.add_leader_and_isr([b for b in ctx.replicas(tp) if ctx.is_live(b)], tp)
        await self.send(batch)
        if ctx.topics_being_deleted:
            await delete_topics(self, sorted(ctx.topics_being_deleted))

    def load_topic(self, topic: str) -> None:
        found = self.zk.get_replica_assignment_and_topic_id(topic, watch=self.watch("partition_modifications",
                                                                                      topic))
        if found is None:
            return
        self.context.topic_ids[topic] = found.topic_id
        for p, ra in found.assignment.items():
            self.context.assignments[(topic, p)] = tuple(ra.replicas)

    def _add_channel(self, broker_id: int) -> None:
        """A channel (connection + queue) to the broker's control-plane listener, else its inter-broker one."""
        if not hasattr(self.channel, "add_broker") or broker_id not in self.context.live_brokers:
            return
        endpoint = self.context.endpoint_on(broker_id, self.controller_to_broker_listener)
        if endpoint is None:    # a broker registered without that listener: no channel, say why (Kafka throws)
            log.error("%s: End point with listener name %s not found for broker %d", self.name,
                      self.controller_to_broker_listener, broker_id)
            return
        self.channel.add_broker(broker_id, *endpoint)

    def _remove_channel(self, broker_id: int) -> None:
        if hasattr(self.channel, "remove_broker"):
            self.channel.remove_broker(broker_id)

    def new_batch(self) -> ControllerBrokerRequestBatch:
        return ControllerBrokerRequestBatch(self.broker_id, self.context)

    async def send(self, batch: ControllerBrokerRequestBatch) -> None:
        if batch.is_empty():
            return
        requests = batch.build(self.context.epoch, self.context.broker_epochs)
        if hasattr(self.channel, "enqueue"):
            # Kafka's controller never waits for brokers: each request joins its broker's queue.
            for broker_id, api_key, version, body in requests:
                self.channel.enqueue(broker_id, api_key, version, body,
                                     callback=self._on_response if api_key == ApiKey.LEADER_AND_ISR else None)
            return
        await send_all(self.channel, requests, on_response=self._on_response)

    def _on_response(self, broker_id: int, api_key: int, response) -> None:
        """A LeaderAndIsr answer with KAFKA_STORAGE_ERROR partitions becomes a LeaderAndIsrResponseReceived event."""
        if api_key == ApiKey.LEADER_AND_ISR and self.is_active:
            failed = storage_errors_in(response, self.context)
            if failed:
                self.enqueue("leader_and_isr_response_received", broker_id, failed)

    # ------------------------------------------------------------------------------------------ partitions
    async def initialize_partitions(self, partitions, batch) -> None:
        """NewPartition -> OnlinePartition: leader = first live replica, ISR = live replicas, epoch 0.

        The states are written :data:`PARTITIONS_PER_WRITE` at a time, and the event loop (which serves every
        connection of this broker) gets a turn between two writes: a topic of 10,000 partitions is 10,000
        znodes to create, and other clients must not wait for all of them."""
        ctx = self.context
        pending = sorted(partitions)
        for start in range(0, len(pending), PARTITIONS_PER_WRITE):
            if start:
                await asyncio.sleep(0)
            states = {}
            for tp in pending[start:start + PARTITIONS_PER_WRITE]:
                live = [b for b in ctx.replicas(tp) if ctx.is_live(b)]
                if not live:
                    log.warning("%s: no live replica for new partition %s-%s", self.name, *tp)
                    continue
                lai = LeaderAndIsr(live[0], LeaderAndIsr.INITIAL_LEADER_EPOCH, tuple(live))
                states[TopicPartition(*tp)] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
            if states:
                self._create_partition_states(states, batch)

    def _create_partition_states(self, states: dict, batch) -> None:
        ctx = self.context
        results = self.zk.create_topic_partition_states(states, ctx.epoch_zk_version)
        for tp, result in results.items():
            key = (tp.topic, tp.partition)
            if isinstance(result, Exception):
                existing = self.zk.get_topic_partition_state(tp)
                if existing is not None:
                    ctx.partition_states[key] = existing
                continue
            ctx.partition_states[key] = states[tp]
            batch.add_leader_and_isr([b for b in ctx.replicas(key) if ctx.is_live(b)], key, is_new=True)
            log_partition_online(self.broker_id, ctx.epoch, key, "NewPartition", states[tp].leader_and_isr)

    def elect_offline_partitions(self, partitions, batch) -> None:
        """OfflinePartition -> OnlinePartition with a new leader chosen from the live ISR (or uncleanly: the
        meter ``UncleanLeaderElectionsPerSec`` is marked). Each partition elected goes to the state-change log."""
        ctx = self.context
        updates, elected = {}, set()
        for tp in partitions:
            state = ctx.partition_states.get(tp)
            if state is None:
                continue
            lai = state.leader_and_isr
            online = [b for b in ctx.live_broker_ids() if ctx.is_replica_online(b, tp)]
            election = offline_partition_leader(ctx.replicas(tp), lai.isr, online, self.unclean_election(tp[0]))
            if election.leader < 0:
                if lai.leader != -1:  # record that the partition is offline: leader -1, same ISR
                    updates[tp] = lai.new_leader_and_isr(-1, lai.isr)
                continue
            if election.unclean:
                ctx.stats.unclean_leader_election_rate.mark()
            updates[tp] = lai.new_leader_and_isr(election.leader, election.isr)
            elected.add(tp)
        for tp, lai in self.write_states(updates, batch).items():
            if tp in elected:
                log_partition_online(self.broker_id, ctx.epoch, tp, "OfflinePartition", lai)

    def write_states(self, updates: dict, batch) -> dict:
        """Write the new states (conditionally; a state changed meanwhile is read again and retried), queue
        LeaderAndIsr for each; returns ``{partition: LeaderAndIsr as written}``."""
        ctx = self.context
        written = {}
        while updates:
            result = self.zk.update_leader_and_isr({TopicPartition(*tp): lai for tp, lai in updates.items()},
                                                   ctx.epoch, ctx.epoch_zk_version)
            for tp, lai in result.finished_partitions.items():
                key = (tp.topic, tp.partition)
                if isinstance(lai, Exception):
                    continue
                ctx.partition_states[key] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
                batch.add_leader_and_isr([b for b in ctx.replicas(key) if ctx.is_live(b)], key)
                written[key] = lai
            retry = {}
            for tp in result.partitions_to_retry:  # somebody (a leader changing its ISR) wrote first: re-read
                fresh = self.zk.get_topic_partition_state(tp)
                key = (tp.topic, tp.partition)
                if fresh is None or key not in updates:
                    continue
                ctx.partition_states[key] = fresh
                wanted = updates[key]
                retry[key] = LeaderAndIsr(wanted.leader, fresh.leader_and_isr.leader_epoch + 1, wanted.isr,
                                          wanted.leader_recovery_state, fresh.leader_and_isr.partition_epoch)
            updates = retry
        return written

    # ------------------------------------------------------------------------------------------ brokers
    async def _on_broker_change(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        ids = set(self.zk.get_children("/brokers/ids", watch=self.watch("broker_change")))
        current = {int(i) for i in ids}
        registered = self.zk.get_all_broker_and_epochs_in_cluster()
        new = sorted(b for b in current if b not in ctx.live_brokers
                     or registered.get(b, (None, -1))[1] != ctx.broker_epochs.get(b))
        dead = sorted(b for b in ctx.live_brokers if b not in current)
        for b in dead:
            ctx.live_brokers.pop(b, None)
            ctx.broker_epochs.pop(b, None)
            ctx.shutting_down_brokers.discard(b)
            ctx.replicas_on_offline_dirs.pop(b, None)
            self._remove_channel(b)
        for b in new:
            info, epoch = registered[b]
            ctx.live_brokers[b] = info
            ctx.broker_epochs[b] = epoch
            ctx.shutting_down_brokers.discard(b)  # a new incarnation (restart, or a new session)
            ctx.replicas_on_offline_dirs.pop(b, None)
            self._remove_channel(b)  # a bounced broker: its old connection is dead
            self._add_channel(b)
        if dead:
            await self._on_broker_failure(dead)
        if new:
            await self._on_broker_startup(new)

    async def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.context
        batch = self.new_batch()
        batch.add_update_metadata(ctx.live_broker_ids(), list(ctx.assignments))
        for b in new_brokers:
            for tp in ctx.partitions_on(b):
                if tp[0] not in ctx.topics_being_deleted and tp in ctx.partition_states:
                    batch.add_leader_and_isr([b], tp)
        self.elect_offline_partitions(ctx.offline_partitions(), batch)
        await self.send(batch)

    async def _on_broker_failure(self, dead: list[int]) -> None:
        ctx = self.context
        batch = self.new_batch()
        led = [tp for b in dead for tp in ctx.partitions_led_by(b)]
        self.elect_offline_partitions(sorted(set(led)), batch)
        self.remove_from_isr(dead, set(led), batch)
        batch.add_update_metadata(ctx.live_broker_ids(), list(ctx.assignments))
        await self.send(batch)

    def remove_from_isr(self, dead, skip, batch) -> None:
        """Replicas on dead brokers go offline: they leave the ISR (the leader stays; the leader epoch moves on).
        Kafka's ReplicaStateMachine, OnlineReplica -> OfflineReplica."""
        ctx = self.context
        shrink = {}
        for b in dead:
            for tp in ctx.partitions_on(b):
                state = ctx.partition_states.get(tp)
                if state is None or tp in skip:
                    continue
                lai = shrink.get(tp) or state.leader_and_isr
                if b in lai.isr and len(lai.isr) > 1:
                    base = state.leader_and_isr
                    shrink[tp] = base.new_leader_and_isr(lai.leader, [r for r in lai.isr if r != b])
        self.write_states(shrink, batch)

    # ------------------------------------------------------------------------------------------ controlled shutdown
    async def _on_controlled_shutdown(self, broker_id: int, broker_epoch: int, future: asyncio.Future) -> None:
        await on_controlled_shutdown(self, broker_id, broker_epoch, future)

    # ------------------------------------------------------------------------------------------ topics
    async def _on_topic_change(self) -> None:
        if self.is_active:
            await on_topic_change(self)

    async def _on_partition_modifications(self, topic: str) -> None:
        if self.is_active:
            await on_partition_modifications(self, topic)

    async def _on_topic_deletion(self) -> None:
        if self.is_active:
            await on_topic_deletion(self)

    # ------------------------------------------------------------------------------------------ log dir failures
    async def _on_log_dir_event_notification(self) -> None:
        if self.is_active:
            await on_log_dir_event_notification(self, self.watch("log_dir_event_notification"))

    async def _on_leader_and_isr_response_received(self, broker_id: int, partitions: list) -> None:
        if self.is_active:
            await on_leader_and_isr_response_received(self, broker_id, partitions)

    async def _on_replica_leader_election(self, partitions, election_type: int, future: asyncio.Future) -> None:
        await on_replica_leader_election(self, partitions, election_type, future)

    # ------------------------------------------------------------------------------------------ ISR changes
    async def _on_isr_change_notification(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        seqs = self.zk.get_all_isr_change_notifications(watch=self.watch("isr_change_notification"))
        if not seqs:
            return
        changed = self.zk.get_partitions_from_isr_change_notifications(seqs)
        self.zk.delete_isr_change_notifications(seqs, ctx.epoch_zk_version)
        tps = []
        for tp, state in self.zk.get_topic_partition_states(changed).items():
            ctx.partition_states[(tp.topic, tp.partition)] = state
            tps.append((tp.topic, tp.partition))
        if tps:
            batch = self.new_batch()
            batch.add_update_metadata(ctx.live_broker_ids(), tps)
            await self.send(batch)


# ------------------------------------------------------------------------------------------ the event table
class ControllerEvent(NamedTuple):
    """One row of :data:`EVENTS`: what runs, Kafka's name for the event and its ``ControllerState`` (which names
    the timer, :data:`~.controller_stats.RATE_AND_TIME_METRICS`), and what queues it."""

    handler: Callable
    kafka_event: str
    state: str
    queued_by: str
    #: answers the request waiting on an event dropped unprocessed (Kafka's ``ControllerEvent.preempt``)
    preempt: Optional[Callable] = None


_C = KafkaController
#: event name -> its row. The event thread looks handlers up here and nowhere else (Kafka's ``ControllerEvent``
#: subclasses and ``KafkaController.process``).
EVENTS: dict[str, ControllerEvent] = {
    "startup": ControllerEvent(_C._on_startup, "Startup", "ControllerChange",
                               "the broker starts, or registered again after its session expired"),
    "reelect": ControllerEvent(_C._on_reelect, "Reelect", "ControllerChange",
                               "an election found no controller, or this one was deposed (ControllerMoved)"),
    "controller_change": ControllerEvent(_C._on_controller_change, "ControllerChange", "ControllerChange",
                                         "watch on /controller: the znode was created, changed or deleted"),
    "broker_change": ControllerEvent(_C._on_broker_change, "BrokerChange", "BrokerChange",
                                     "watch on the children of /brokers/ids: a broker registered or went away"),
    "topic_change": ControllerEvent(_C._on_topic_change, "TopicChange", "TopicChange",
                                    "watch on the children of /brokers/topics: a topic was created"),
    "partition_modifications": ControllerEvent(_C._on_partition_modifications, "PartitionModifications",
                                               "TopicChange", "watch on /brokers/topics/<topic>: partitions were added"),
    "topic_deletion": ControllerEvent(_C._on_topic_deletion, "TopicDeletion", "TopicDeletion",
                                      "watch on the children of /admin/delete_topics: a deletion was requested"),
    "isr_change_notification": ControllerEvent(_C._on_isr_change_notification, "IsrChangeNotification", "IsrChange",
                                               "watch on the children of /isr_change_notification: a leader "
                                               "changed an ISR"),
    "controlled_shutdown": ControllerEvent(_C._on_controlled_shutdown, "ControlledShutdown", "ControlledShutdown",
                                           "a ControlledShutdown request (key 7) from a broker about to stop",
                                           preempt_controlled_shutdown),
    "replica_leader_election": ControllerEvent(_C._on_replica_leader_election, "ReplicaLeaderElection",
                                               "ManualLeaderBalance",
                                               "an ElectLeaders request (key 43): PREFERRED or UNCLEAN",
                                               preempt_replica_leader_election),
    "log_dir_event_notification": ControllerEvent(_C._on_log_dir_event_notification, "LogDirEventNotification",
                                                  "LogDirChange", "watch on the children of "
                                                  "/log_dir_event_notification: a broker's log dir failed"),
    "leader_and_isr_response_received": ControllerEvent(_C._on_leader_and_isr_response_received,
                                                        "LeaderAndIsrResponseReceived", "LeaderAndIsrResponseReceived",
                                                        "a LeaderAndIsr response with KAFKA_STORAGE_ERROR partitions"),
}
