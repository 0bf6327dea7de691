"""The purgatory: where delayed operations wait, watched by key, until completed or timed out.

Theory of operation
-------------------
A ``DelayedOperationPurgatory`` holds operations of one kind (the broker has one for Produce, one for
Fetch, ...). It knows nothing about produce or fetch; it keeps two structures:

* **watch lists**: for each *watch key* (a topic-partition for produce and fetch, a group id for joins), the
  operations that may complete when something about that key changes;
* a **timer** (:class:`~kafkalab.purgatory.timer.SystemTimer`, a hierarchical timing wheel) that expires
  operations whose wait is over.

The contract, in three calls:

1. ``try_complete_else_watch(op, keys)`` when a request must wait. Try to complete; if that fails, add the
   operation to the watch list of **every** key and try **again** -- all under the operation's lock. The
   second check closes a race: the event the operation waits for (a follower fetch raising the high
   watermark) may have happened between the first check and the watching, on a thread that found nothing to
   complete because the operation was not yet watched. After the second check no event can be missed.
   Only then is the operation added to the timer. Returns True if the caller completed it.
2. ``check_and_complete(key)`` whenever the state behind ``key`` changes: every watched operation on that key
   gets a ``safe_try_complete()``; completed ones leave the list. Returns how many it completed.
3. The timer's reaper (``poll``/``advance_clock``/``run``) expires what is left: the operation's ``run()``
   force-completes it and calls ``on_expiration``.

Whichever of 2 and 3 comes first wins; ``force_complete``'s compare-and-set makes ``on_complete`` run once.
An operation watched on several keys and completed through one stays in the other lists until it is seen
there or **purged**: each reaper round, if (operations ever watched - operations still in the timer) exceeds
``purge_interval`` (``producer.purgatory.purge.interval.requests`` / ``fetch.purgatory.purge.interval.requests``,
1000 by default), every list is swept of completed operations.

Metrics (Kafka's names): ``PurgatorySize`` (entries in all watch lists, completed-but-unpurged included),
``NumDelayedOperations`` (operations in the timer), ``ExpiresPerSec`` (a meter; Kafka keeps it in
``DelayedProduceMetrics`` / ``DelayedFetchMetrics``, kafkalab per purgatory so brokers sharing a process do
not share meters; the operation's ``expiration_tags()`` add the per-partition / ``fetcherType`` meters).

Kafka shards the watch lists over 512 locks to cut contention; one lock is plenty here.

Mirrors: ``core/src/main/scala/kafka/server/DelayedOperation.scala`` (``DelayedOperationPurgatory``,
``Watchers``, ``ExpiredOperationReaper``) and ``DelayedOperationKey.scala``.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Generic, Hashable, Iterable, NamedTuple, Optional, TypeVar

from kafkalab.common.time import SYSTEM, Time
from kafkalab.purgatory.delayed_operation import DelayedOperation
from kafkalab.common.yammer import Meter
from kafkalab.purgatory.timer import SystemTimer

__all__ = ["DelayedOperationPurgatory", "TopicPartitionOperationKey"]

log = logging.getLogger("kafkalab.purgatory.DelayedOperationPurgatory")

T = TypeVar("T", bound=DelayedOperation)


class TopicPartitionOperationKey(NamedTuple):
    """The watch key of produce and fetch operations. A tuple, so it equals ``(topic, partition)``."""

    topic: str
    partition: int

    @property
    def key_label(self) -> str:
        return f"{self.topic}-{self.partition}"


class _Watchers:
    """The operations watched on one key, in arrival order."""

    def __init__(self, key: Hashable):
        self.key = key
        self._ops: dict[DelayedOperation, None] = {}
        self._lock = threading.Lock()

    def watch(self, op: DelayedOperation) -> None:
        with self._lock:
            self._ops[op] = None

    def count_watched(self) -> int:
        return len(self._ops)

    def is_empty(self) -> bool:
        return not self._ops

    def operations(self) -> list:
        with self._lock:
            return list(self._ops)

    def _discard(self, op: DelayedOperation) -> None:
        with self._lock:
            self._ops.pop(op, None)

    def try_complete_watched(self) -> int:
        completed = 0
        for op in self.operations():  # a snapshot: completions may watch new operations on this key
            if op.is_completed:
                self._discard(op)  # completed elsewhere (another key, the timer)
            elif op.safe_try_complete():
                self._discard(op)
                completed += 1
        return completed

    def purge_completed(self) -> int:
        purged = 0
        for op in self.operations():
            if op.is_completed:
                self._discard(op)
                purged += 1
        return purged

    def cancel(self) -> list:
        with self._lock:
            ops, self._ops = list(self._ops), {}
        for op in ops:
            op.cancel()
        return ops


class DelayedOperationPurgatory(Generic[T]):
    """Operations of one kind waiting on watch keys and a timer. Generic: it never looks inside them."""

    def __init__(self, purgatory_name: str, *, time: Time = SYSTEM, timer: Optional[SystemTimer] = None,
                 broker_id: int = 0, purge_interval: int = 1000, timer_enabled: bool = True,
                 tick_ms: int = 1, wheel_size: int = 20):
        self.purgatory_name = purgatory_name
        self.broker_id = broker_id
        self.purge_interval = purge_interval
        self.timer_enabled = timer_enabled
        self.time = time
        self.timer = timer if timer is not None else SystemTimer(purgatory_name, time=time, tick_ms=tick_ms,
                                                                 wheel_size=wheel_size)
        self._watchers: dict[Hashable, _Watchers] = {}
        self._watchers_lock = threading.RLock()
        self._estimated_total_operations = 0
        self._count_lock = threading.Lock()
        self.tags = {"delayedOperation": purgatory_name}
        self.expires_per_sec = Meter(time)
        self._tagged_expires: dict[tuple, Meter] = {}
        self.purges = 0

    # ------------------------------------------------------------------------------------------ contract
    def try_complete_else_watch(self, operation: T, watch_keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if possible; else watch it on every key and start its timeout.

        True iff this call completed it (the response has been sent through ``on_complete``).
        """
        keys = list(watch_keys)
        if not keys:
            raise ValueError("The watch key list can't be empty")
        operation.add_expiration_listener(self._record_expiration)

        def watch_all() -> None:
            for key in keys:
                self._watch_for_operation(key, operation)
            with self._count_lock:
                self._estimated_total_operations += 1

        if operation.safe_try_complete_or_else(watch_all):
            return True
        # Not completable yet and now watched: start the timeout too.
        if not operation.is_completed:
            if self.timer_enabled:
                self.timer.add(operation)
            if operation.is_completed:
                operation.cancel()  # completed by another thread meanwhile: take it back out of the timer
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watched on ``key``; returns how many this call completed."""
        with self._watchers_lock:
            watchers = self._watchers.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        if watchers.is_empty():
            self._remove_key_if_empty(key, watchers)
        if completed:
            log.debug("Request key %s unblocked %d %s operations", key, completed, self.purgatory_name)
        return completed

    def cancel_for_key(self, key: Hashable) -> list:
        """Stop watching ``key``: its operations leave the list and the timer, *without* completing."""
        with self._watchers_lock:
            watchers = self._watchers.pop(key, None)
        return watchers.cancel() if watchers is not None else []

    def _watch_for_operation(self, key: Hashable, operation: T) -> None:
        with self._watchers_lock:
            watchers = self._watchers.get(key)
            if watchers is None:
                watchers = self._watchers[key] = _Watchers(key)
            watchers.watch(operation)

    def _remove_key_if_empty(self, key: Hashable, watchers: _Watchers) -> None:
        with self._watchers_lock:
            if self._watchers.get(key) is watchers and watchers.is_empty():
                del self._watchers[key]

    # ------------------------------------------------------------------------------------------ sizes
    @property
    def watched(self) -> int:
        """``PurgatorySize``: entries in all watch lists (an operation counts once per key, and completed
        ones count until seen or purged)."""
        with self._watchers_lock:
            return sum(w.count_watched() for w in self._watchers.values())

    @property
    def num_delayed(self) -> int:
        """``NumDelayedOperations``: operations waiting in the timer."""
        return self.timer.size()

    def watch_keys(self) -> dict:
        """For labs: watch key -> number of entries in its list."""
        with self._watchers_lock:
            return {k: w.count_watched() for k, w in self._watchers.items()}

    def watched_operations(self, key: Hashable) -> list:
        with self._watchers_lock:
            watchers = self._watchers.get(key)
        return watchers.operations() if watchers is not None else []

    # ------------------------------------------------------------------------------------------ reaper
    def poll(self, now_ms: Optional[int] = None) -> list:
        """Expire every operation due by ``now_ms`` (timer time; default now), then maybe purge. Sans-IO:
        with a MockTime, ``time.on_advance(purgatory.poll)`` expires operations as the clock moves."""
        expired = self.timer.poll(now_ms)
        self.maybe_purge()
        return expired

    def advance_clock(self, timeout_ms: int = 0) -> bool:
        """One round of Kafka's expiration reaper: wait up to ``timeout_ms`` for a due bucket, expire, and
        purge the watch lists if enough completed operations have piled up."""
        flushed = self.timer.advance_clock(timeout_ms)
        self.maybe_purge()
        return flushed

    async def run(self, *, max_idle_ms: int = 200) -> None:
        """The expiration reaper as a coroutine for the broker's event loop (cancel it to stop)."""
        await self.timer.run(max_idle_ms=max_idle_ms, on_tick=self.maybe_purge)

    def maybe_purge(self) -> int:
        """Purge when (operations ever watched - operations still delayed) > ``purge_interval``."""
        delayed = self.num_delayed
        with self._count_lock:
            if self._estimated_total_operations - delayed <= self.purge_interval:
                return 0
            self._estimated_total_operations = delayed
        return self.purge_completed()

    def purge_completed(self) -> int:
        """Remove completed operations from every watch list (and empty lists). Returns how many."""
        with self._watchers_lock:
            items = list(self._watchers.items())
        purged = 0
        for key, watchers in items:
            purged += watchers.purge_completed()
            if watchers.is_empty():
                self._remove_key_if_empty(key, watchers)
        self.purges += 1
        log.debug("Purged %d elements from %s watch lists", purged, self.purgatory_name)
        return purged

    def shutdown(self) -> None:
        self.timer.shutdown()

    # ------------------------------------------------------------------------------------------ metrics
    def _record_expiration(self, operation: DelayedOperation) -> None:
        self.expires_per_sec.mark()
        for tags in operation.expiration_tags():
            key = tuple(sorted(tags.items()))
            meter = self._tagged_expires.get(key)
            if meter is None:
                meter = self._tagged_expires[key] = Meter(self.time)
            meter.mark()

    def expires_meter(self, **tags: Any) -> Meter:
        """The ``ExpiresPerSec`` meter with these tags (no tags: the aggregate one)."""
        if not tags:
            return self.expires_per_sec
        key = tuple(sorted((k, v) for k, v in tags.items()))
        meter = self._tagged_expires.get(key)
        if meter is None:
            meter = self._tagged_expires[key] = Meter(self.time)
        return meter

    def metrics(self) -> dict:
        """Kafka-named metrics, JMX style: ``name`` plus ``,tag=value`` pairs -> value. Meters report their
        count; use :meth:`expires_meter` for rates."""
        tag = f",delayedOperation={self.purgatory_name}"
        out = {f"PurgatorySize{tag}": self.watched,
               f"NumDelayedOperations{tag}": self.num_delayed,
               f"ExpiresPerSec{tag}": self.expires_per_sec.count}
        for key, meter in sorted(self._tagged_expires.items(), key=lambda kv: str(kv[0])):
            out["ExpiresPerSec" + tag + "".join(f",{k}={v}" for k, v in key)] = meter.count
        return out

    def __repr__(self) -> str:
        return (f"DelayedOperationPurgatory({self.purgatory_name!r}, watched={self.watched}, "
                f"delayed={self.num_delayed})")
