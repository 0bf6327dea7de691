"""The consumer: ``poll()`` in a loop; everything else -- groups, fetching, commits -- happens inside it.

Theory of operation
-------------------
``Consumer({"bootstrap.servers": ..., "group.id": "billing"})`` is a pull client. Each ``poll(timeout)`` does,
in order (as Java's ``KafkaConsumer.poll``):

1. **Group duty** (when subscribed): find the coordinator, and if the group needs a (re)join -- first poll,
   the heartbeat task heard ``REBALANCE_IN_PROGRESS``, the subscription changed -- run the rebalance right here
   on the caller's thread: commit (if auto-committing), tell the rebalance listener what is revoked, JoinGroup
   + SyncGroup (:mod:`.abstract_coordinator`, :mod:`.consumer_coordinator`), tell the listener what is
   assigned. Then an auto-commit if ``auto.commit.interval.ms`` has passed.
2. **Positions**: partitions without one get the group's committed offset (OffsetFetch), or are reset by
   ``auto.offset.reset`` (ListOffsets, :mod:`.offset_fetcher`).
3. **Records**: return what is buffered, or send FetchRequests and wait (:mod:`.fetcher`) until records arrive
   or the timeout ends; before returning, send the next fetches (prefetch).

Calling ``poll()`` is also the proof of life: a background task heartbeats every ``heartbeat.interval.ms``,
but if ``poll()`` is not called for ``max.poll.interval.ms`` the member leaves the group.

The rebalance listener is any object with ``on_partitions_revoked(partitions)``,
``on_partitions_assigned(partitions)`` and optionally ``on_partitions_lost(partitions)`` (default: the revoked
callback, as in Java). It is called on the thread that called ``poll()``, so it may call ``commit()``.

Time: ``Consumer(config, time=MockTime())`` injects the clock every client-side deadline reads -- ``poll(timeout)``,
``max.poll.interval.ms``, ``heartbeat.interval.ms``, ``session.timeout.ms``, ``auto.commit.interval.ms``,
``request.timeout.ms``, ``default.api.timeout.ms``, backoffs and the metadata age (:mod:`kafkalab.clients.clock`);
with a mock clock they pass only when the lab advances it.

Threads: the consumer's network I/O runs on its own asyncio loop (:mod:`kafkalab.common.loop_thread`), so the
blocking API works in scripts and inside Jupyter alike. Like Java's, a consumer is meant to be used from one
thread at a time.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/KafkaConsumer.java`` (the classic protocol
path, ``internals/LegacyKafkaConsumer.java`` in Kafka 3.7+) and ``ConsumerRebalanceListener.java``.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from kafkalab.clients.config import ConfigException, consumer_config
from kafkalab.clients.consumer.abstract_coordinator import RebalanceNeeded
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.consumer.consumer_coordinator import ConsumerCoordinator
from kafkalab.clients.consumer.fetcher import Fetcher
from kafkalab.clients.consumer.group_metadata import ConsumerGroupMetadata
from kafkalab.clients.consumer.offset_fetcher import EARLIEST, LATEST, OffsetFetcher
from kafkalab.clients.consumer.subscription_state import IllegalStateError, OffsetAndMetadata, SubscriptionState
from kafkalab.clients.errors import ClientClosedError, KafkaProtocolError, KafkaTimeoutError
from kafkalab.clients.network_client import NetworkClient
from kafkalab.clients.tracing import make_tracer
from kafkalab.common.loop_thread import LoopThread
from kafkalab.common.time import SYSTEM, Time

__all__ = ["Consumer"]


def _tp(tp) -> TopicPartition:
    return TopicPartition(*tp)


class Consumer:
    """A Kafka consumer configured with Kafka's names: ``Consumer({"bootstrap.servers": ..., "group.id": ...})``."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, trace=None, time: Optional[Time] = None):
        self.config = cfg = consumer_config(config)
        self.client_id = cfg["client.id"]
        self.time: Time = time if time is not None else SYSTEM
        self.group_id = cfg["group.id"]
        self._hook, self.trace = make_tracer(trace)
        self._io = LoopThread(f"kafka-consumer-network-thread | {self.client_id}")
        self._closed = False
        self._join_prepared = False
        self.api_timeout_ms = cfg["default.api.timeout.ms"]
        try:
            self._io.run(self._start(), 30)
        except BaseException:
            self._io.stop()
            raise

    async def _start(self) -> None:
        cfg = self.config
        self.client = NetworkClient(cfg, tracer=self._hook, max_in_flight=5,
                                    allow_auto_topic_creation=cfg["allow.auto.create.topics"], time=self.time,
                                    metric_group_prefix="consumer")
        self.subscriptions = SubscriptionState(cfg["auto.offset.reset"].lower())
        self.fetcher = Fetcher(self.client, self.subscriptions, cfg)
        self.offset_fetcher = OffsetFetcher(self.client, self.subscriptions, cfg)
        self.coordinator = ConsumerCoordinator(self.client, cfg, self.subscriptions) if self.group_id else None
        if self.coordinator is not None:
            self.coordinator.wakeup = self.fetcher.arrived   # a rebalance request ends poll()'s wait
        self.client.start_metadata_updater()

    # -- plumbing --------------------------------------------------------------------------------------------
    def _run(self, coro, timeout_s: Optional[float] = None):
        if self._closed:
            coro.close()
            raise ClientClosedError("This consumer has already been closed.")
        return self._io.run(coro, timeout_s)

    def _call(self, fn, *args):
        """Run a plain function on the I/O loop (all consumer state lives there)."""
        async def go():
            return fn(*args)
        return self._run(go())

    def _timeout_ms(self, timeout: Optional[float]) -> float:
        return self.api_timeout_ms if timeout is None else max(0.0, timeout * 1000)

    # -- subscribing -----------------------------------------------------------------------------------------
    def subscribe(self, topics, listener=None) -> None:
        """Join the group and read ``topics`` (a list of names, or a ``re.Pattern`` matched against all topics).
        ``listener``: the rebalance listener (see module doc)."""
        if not self.group_id:
            raise ConfigException("To use the group management or offset commit APIs, you must provide a valid "
                                  "group.id in the consumer configuration.")

        def go():
            if isinstance(topics, re.Pattern):
                self.subscriptions.subscribe_pattern(topics, listener)
                self.client.metadata.all_topics = True
                self.client.request_metadata_update()
                changed = True
            else:
                names = [topics] if isinstance(topics, str) else list(topics)
                if not names:
                    self._unsubscribe_now()
                    return
                changed = self.subscriptions.subscribe(names, listener)
                self.client.metadata.add_topics(*names)
            if changed:
                self.coordinator.request_rejoin("the subscription changed")
        self._call(go)

    def subscription(self) -> set:
        return set(self.subscriptions.subscription)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Who this consumer is in its group after the last completed rebalance (generation -1 and no member
        id before the first, or with ``assign()``): pass it to a transactional producer's
        ``send_offsets_to_transaction`` so that the group coordinator can refuse offsets from a zombie member."""
        if not self.group_id:
            raise ConfigException("To use the group management or offset commit APIs, you must provide a valid "
                                  "group.id in the consumer configuration.")
        return self._call(lambda: self.coordinator.group_metadata)

    def assign(self, partitions) -> None:
        """Read exactly these partitions, without a group (commits still go to ``group.id`` if set)."""
        partitions = [_tp(tp) for tp in partitions]
        if not partitions:
            return self.unsubscribe()

        def go():
            before = self.subscriptions.assigned_partitions()
            self.subscriptions.assign_from_user(partitions)
            self.fetcher.clear_buffer(before - set(partitions))
            self.client.metadata.add_topics(*{tp.topic for tp in partitions})
        self._call(go)

    def assignment(self) -> set:
        return self._call(self.subscriptions.assigned_partitions)

    def unsubscribe(self) -> None:
        if self.subscriptions.has_auto_assigned_partitions():
            owned = self._call(self.subscriptions.assigned_partitions)
            if owned:
                self._listener_call("on_partitions_revoked", sorted(owned))
            self._run(self.coordinator.maybe_leave_group("the consumer unsubscribed from all topics"))
        self._call(self._unsubscribe_now)

    def _unsubscribe_now(self) -> None:
        self.subscriptions.unsubscribe()
        self.fetcher.clear_buffer()
        self.client.metadata.all_topics = False

    # -- polling ---------------------------------------------------------------------------------------------
    def poll(self, timeout: Optional[float] = None) -> list:
        """Records fetched since the last call (at most ``max.poll.records``); waits up to ``timeout`` seconds
        (None: until there are records)."""
        if self.subscriptions.type.value == "none":
            raise IllegalStateError("Consumer is not subscribed to any topics or assigned any partitions")
        now = self.time.milliseconds
        deadline = None if timeout is None else now() + max(0.0, timeout) * 1000    # ms on the consumer's Time
        if self.coordinator is not None:
            self._call(self.coordinator.record_poll)
        while True:
            self._update_assignment_metadata(deadline)
            remaining_ms = 60_000.0 if deadline is None else max(0.0, deadline - now())
            records = self._run(self._poll_for_fetches(remaining_ms))
            if records:
                return records
            if deadline is not None and now() >= deadline:
                return []

    def _remaining_ms(self, deadline) -> float:
        return self.api_timeout_ms if deadline is None else max(0.0, deadline - self.time.milliseconds())

    def _update_assignment_metadata(self, deadline) -> None:
        coord = self.coordinator
        if coord is not None:
            try:
                self._run(coord.ensure_coordinator_ready(self._remaining_ms(deadline)))
            except KafkaTimeoutError:
                return
            if self.subscriptions.has_auto_assigned_partitions():
                self._call(self._match_pattern)
                if coord.is_leader and self._call(coord.metadata_changed):
                    self._call(coord.request_rejoin, "the partition count of a subscribed topic changed")
                if coord.poll_timeout_expired:
                    coord.poll_timeout_expired = False
                while coord.needs_rejoin():
                    if not self._rebalance_once(deadline):
                        return
            self._run(coord.maybe_auto_commit())
        try:
            self._run(self._update_fetch_positions(self._remaining_ms(deadline)))
        except KafkaTimeoutError:
            pass                          # poll() never fails for lack of time: the next one goes on

    def _match_pattern(self) -> None:
        if self.subscriptions.pattern is None:
            return
        topics = {t for t, info in self.client.metadata.cluster.topics.items()
                  if self.subscriptions.matches(t) and not (info.is_internal and
                                                            self.config["exclude.internal.topics"])}
        if self.subscriptions.change_subscription(topics):
            self.coordinator.request_rejoin("the topics matching the subscribed pattern changed")

    def _rebalance_once(self, deadline) -> bool:
        """One join round with the listener around it; False when out of time."""
        coord = self.coordinator
        if not self._join_prepared:
            if coord.auto_commit and coord.generation.member_id:
                try:
                    self._run(coord.commit_offsets(self._call(self.subscriptions.all_consumed),
                                                   self._remaining_ms(deadline)))
                except (KafkaProtocolError, KafkaTimeoutError):
                    pass
            kind, partitions = self._call(coord.revoked_before_join)
            if partitions:
                self._listener_call("on_partitions_lost" if kind == "lost" else "on_partitions_revoked", partitions)
                self._call(self._drop_partitions, partitions)
            self._join_prepared = True
        try:
            generation, protocol, data = self._run(coord.join_group(self._remaining_ms(deadline)))
        except RebalanceNeeded:
            self._run(self.client.waits.sleep(coord.retry_backoff_s * 1000))
            return deadline is None or self.time.milliseconds() < deadline
        except KafkaTimeoutError:
            return False
        self._join_prepared = False
        assigned, revoked, added = self._call(coord.plan_assignment, generation, protocol, data)
        if revoked:
            self._listener_call("on_partitions_revoked", revoked)
        self._call(self._install, assigned, revoked)
        self._listener_call("on_partitions_assigned", added)
        return True

    def _drop_partitions(self, partitions) -> None:
        keep = [tp for tp in self.subscriptions.assignment if tp not in set(partitions)]
        self.subscriptions.assign_from_subscribed(keep)
        self.fetcher.clear_buffer(partitions)

    def _install(self, assigned, revoked) -> None:
        self.coordinator.install_assignment(assigned, revoked)
        self.fetcher.clear_buffer(revoked)
        self.client.metadata.add_topics(*{tp.topic for tp in assigned})

    def _listener_call(self, name: str, partitions) -> None:
        listener = self.subscriptions.listener
        if listener is None:
            return
        fn = getattr(listener, name, None)
        if fn is None and name == "on_partitions_lost":
            fn = getattr(listener, "on_partitions_revoked", None)
        if fn is not None:
            fn(sorted(partitions))

    async def _update_fetch_positions(self, timeout_ms: float) -> None:
        """Committed offsets for partitions that have no position; ``auto.offset.reset`` for the rest."""
        subs = self.subscriptions
        initializing = subs.initializing_partitions()
        if initializing and self.coordinator is not None:
            committed = await self.coordinator.fetch_committed_offsets(initializing, timeout_ms)
            for tp, om in committed.items():
                if om is not None and tp in subs.assignment and subs.position(tp) is None:
                    subs.seek(tp, om.offset, om.leader_epoch)
            initializing = subs.initializing_partitions()
        subs.reset_initializing(initializing)
        await self.offset_fetcher.reset_positions(timeout_ms)

    async def _poll_for_fetches(self, timeout_ms: float) -> list:
        fetcher = self.fetcher
        records = fetcher.collect()
        if records:
            fetcher.send_fetches()                   # prefetch while the application works
            return records
        fetcher.arrived.clear()
        sent = fetcher.send_fetches()
        wait = timeout_ms
        if self.coordinator is not None:
            wait = min(wait, self.coordinator.time_to_next_auto_commit_ms())
            if self.coordinator.needs_rejoin():
                wait = 0
        if not sent and not fetcher.in_flight:
            wait = min(wait, self.config["retry.backoff.ms"])     # nothing to fetch yet: look again soon
        if wait > 0 and not fetcher.has_buffered():
            await self.client.waits.event(fetcher.arrived, wait)
        records = fetcher.collect()
        if records:
            fetcher.send_fetches()
        return records

    # -- positions -------------------------------------------------------------------------------------------
    def seek(self, partition, offset: int) -> None:
        """Read ``partition`` from ``offset`` at the next poll."""
        if offset < 0:
            raise ValueError(f"seek offset must not be a negative number: {offset}")
        tp = _tp(partition)

        def go():
            self.subscriptions.seek(tp, offset)
            self.fetcher.clear_buffer([tp])
        self._call(go)

    def _seek_to(self, partitions, strategy: str) -> None:
        def go():
            tps = self.subscriptions.assigned_partitions() if partitions is None else [_tp(p) for p in partitions]
            for tp in tps:
                self.subscriptions.request_offset_reset(tp, strategy)
            self.fetcher.clear_buffer(tps)
        self._call(go)

    def seek_to_beginning(self, partitions=None) -> None:
        """Lazily move to the log start offset (all assigned partitions when None)."""
        self._seek_to(partitions, "earliest")

    def seek_to_end(self, partitions=None) -> None:
        """Lazily move to the end (high watermark, or last stable offset under read_committed)."""
        self._seek_to(partitions, "latest")

    def position(self, partition, timeout: Optional[float] = None) -> int:
        """The offset of the next record ``poll()`` will return for ``partition`` (fetched if not known)."""
        tp = _tp(partition)
        if not self._call(self.subscriptions.is_assigned, tp):
            raise IllegalStateError("You can only check the position for partitions assigned to this consumer.")
        self._run(self._update_fetch_positions(self._timeout_ms(timeout)))
        position = self._call(self.subscriptions.position, tp)
        if position is None:
            raise KafkaTimeoutError(f"Timeout while getting the position of {tp}")
        return position

    def committed(self, partitions, timeout: Optional[float] = None) -> dict:
        """``{tp: OffsetAndMetadata | None}``: the group's committed offsets (OffsetFetch)."""
        if self.coordinator is None:
            raise ConfigException("committed() needs a group.id")
        return self._run(self.coordinator.fetch_committed_offsets([_tp(p) for p in partitions],
                                                                  self._timeout_ms(timeout)))

    def offsets_for_times(self, timestamps: Mapping, timeout: Optional[float] = None) -> dict:
        """``{tp: timestamp_ms}`` -> ``{tp: OffsetAndTimestamp(offset, timestamp, leader_epoch) | None}``."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"The target time for partition {_tp(tp)} is {ts}. The target time cannot be "
                                 f"negative.")
        return self._run(self.offset_fetcher.list_offsets({_tp(tp): ts for tp, ts in timestamps.items()},
                                                          self._timeout_ms(timeout)))

    def beginning_offsets(self, partitions, timeout: Optional[float] = None) -> dict:
        found = self._run(self.offset_fetcher.list_offsets({_tp(p): EARLIEST for p in partitions},
                                                           self._timeout_ms(timeout)))
        return {tp: o.offset for tp, o in found.items()}

    def end_offsets(self, partitions, timeout: Optional[float] = None) -> dict:
        found = self._run(self.offset_fetcher.list_offsets({_tp(p): LATEST for p in partitions},
                                                           self._timeout_ms(timeout)))
        return {tp: o.offset for tp, o in found.items()}

    # -- commits ---------------------------------------------------------------------------------------------
    def commit(self, offsets: Optional[Mapping] = None, *, asynchronous: bool = False, callback=None,
               timeout: Optional[float] = None):
        """Commit ``offsets`` (``{tp: offset | OffsetAndMetadata}``; default: every position this consumer has).
        Synchronous by default; ``asynchronous=True`` returns a ``concurrent.futures.Future`` at once
        (``callback(offsets, exception_or_None)`` runs on the I/O thread)."""
        if self.coordinator is None:
            raise ConfigException("commit() needs a group.id")
        if offsets is None:
            offsets = self._call(self.subscriptions.all_consumed)
        else:
            offsets = {_tp(tp): (om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om)))
                       for tp, om in offsets.items()}
        if asynchronous:
            async def go():
                error = await self.coordinator.commit_async(offsets, callback)
                if error is not None:
                    raise error
                return offsets
            if self._closed:
                raise ClientClosedError("This consumer has already been closed.")
            return self._io.submit(go())
        self._run(self.coordinator.commit_offsets(offsets, self._timeout_ms(timeout)))
        return offsets

    # -- flow control ----------------------------------------------------------------------------------------
    def pause(self, partitions) -> None:
        """Stop fetching these partitions (they stay assigned; positions are kept)."""
        def go():
            for tp in partitions:
                self.subscriptions.pause(_tp(tp))
            self.fetcher.clear_buffer([_tp(tp) for tp in partitions])
        self._call(go)

    def resume(self, partitions) -> None:
        def go():
            for tp in partitions:
                self.subscriptions.resume(_tp(tp))
        self._call(go)

    def paused(self) -> set:
        return self._call(self.subscriptions.paused_partitions)

    def metrics(self) -> dict:
        """Kafka's client metrics, measured now: ``{MetricName(name, group, tags): value}`` (group
        ``consumer-metrics`` and, per broker, ``consumer-node-metrics``), as Java's ``metrics()``."""
        return self.client.metrics.metrics() if self._closed else self._io.call(self.client.metrics.metrics)

    # -- lifecycle -------------------------------------------------------------------------------------------
    def close(self, timeout: Optional[float] = None) -> None:
        """Commit (with ``enable.auto.commit``), tell the listener, leave the group, close the connections."""
        if self._closed:
            return
        timeout_ms = min(self._timeout_ms(timeout), 30_000)
        coord = self.coordinator
        try:
            if coord is not None:
                if coord.auto_commit:
                    try:
                        consumed = self._call(self.subscriptions.all_consumed)
                        self._run(coord.commit_offsets(consumed, timeout_ms))
                    except (KafkaProtocolError, KafkaTimeoutError):
                        pass
                self._run(self.client.waits.wait_for(coord.flush_commits(), timeout_ms))
                if self.subscriptions.has_auto_assigned_partitions():
                    owned = self._call(self.subscriptions.assigned_partitions)
                    lost = coord.generation.generation_id < 0
                    if owned:
                        self._listener_call("on_partitions_lost" if lost else "on_partitions_revoked", owned)
                self._run(self.client.waits.wait_for(coord.close(), timeout_ms))
            self._run(self.client.close(), 10)
            self._run(self.fetcher.close(), 5)
        finally:
            self._closed = True
            self._io.stop()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Consumer(client.id={self.client_id!r}, group.id={self.group_id!r})"
