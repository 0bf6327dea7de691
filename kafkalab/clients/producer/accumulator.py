"""The record accumulator: per-partition queues of batches, and the rules for when a batch may leave.

Theory of operation
-------------------
``send()`` never writes to a socket. It appends the record to the *open batch* at the tail of its
partition's queue (a deque of :class:`ProducerBatch`); when that batch has no room for it (``batch.size``
bytes, estimated), a new batch is opened. A record larger than ``batch.size`` gets a batch of its own.

The sender thread asks two questions, over and over:

* :meth:`RecordAccumulator.ready` -- *which brokers have something to send?* A partition's first batch is
  sendable when it is full (or another batch queues behind it), when it has waited ``linger.ms``, when a
  ``flush()`` or ``close()`` is in progress -- and not while it is backing off after a failure
  (``retry.backoff.ms``, doubling up to ``retry.backoff.max.ms``). The answer is the set of *leaders* of those
  partitions, plus how long to sleep until the next batch becomes sendable, plus the topics whose leader is
  unknown (the sender then asks for fresh metadata). On the way it measures each topic's queues for the sticky
  partitioner (``partitioner.adaptive.partitioning.enable``; ``partitioner.availability.timeout.ms`` leaves out
  partitions whose leader could not take batches for that long), and :meth:`RecordAccumulator.all_batches_full`
  tells the partitioner when it may switch away from a partition (see :mod:`.partitioner`).
* :meth:`RecordAccumulator.drain` -- *what goes into the next request to broker N?* At most one batch per
  partition led by N, until ``max.request.size``. With ``max.in.flight.requests.per.connection=1`` a partition
  with a batch in flight is *muted* (strict order without idempotence). With idempotence a batch coming back
  for a retry carries its sequence number and goes out alone, only once nothing else of that partition is in
  flight: retries are re-queued **in sequence order**, so the broker sees sequences without gaps and order is
  kept with up to 5 requests in flight.

Batches older than ``delivery.timeout.ms`` that have not been sent fail with a timeout
(:meth:`expired_batches`). Everything here is sans-IO: times are passed in (ms), the network is elsewhere.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/{RecordAccumulator,
ProducerBatch}.java``.
"""
from __future__ import annotations

import collections
from typing import Callable, NamedTuple, Optional

from kafkalab.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, SimpleRecord, build_batch

__all__ = ["TopicPartition", "RecordMetadata", "ProducerBatch", "RecordAccumulator", "estimate_size",
           "RECORD_BATCH_OVERHEAD"]

RECORD_BATCH_OVERHEAD = 61


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RecordMetadata(NamedTuple):
    """Where a record was written: what ``send()``'s future resolves to (Java's ``RecordMetadata``).
    ``offset`` is -1 when ``acks=0`` (nobody said)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


def _varint_len(n: int) -> int:
    z = (n << 1) ^ (n >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def estimate_size(key: Optional[bytes], value: Optional[bytes], headers) -> int:
    """Bytes one record takes inside a batch (upper estimate, as Java's ``DefaultRecord.sizeInBytes``)."""
    klen = -1 if key is None else len(key)
    vlen = -1 if value is None else len(value)
    body = 1 + 10 + 5 + _varint_len(klen) + max(klen, 0) + _varint_len(vlen) + max(vlen, 0) + 5
    for hk, hv in headers:
        hkb = len(hk.encode()) if isinstance(hk, str) else len(hk)
        hvl = -1 if hv is None else len(hv)
        body += _varint_len(hkb) + hkb + _varint_len(hvl) + max(hvl, 0)
    return body + _varint_len(body)


class ProducerBatch:
    """Records for one partition that travel together, with the futures of their senders."""

    def __init__(self, tp: TopicPartition, created_ms: float):
        self.tp = tp
        self.records: list[SimpleRecord] = []
        self.thunks: list = []                 # (future, on_delivery) per record
        self.size = RECORD_BATCH_OVERHEAD
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.retry_at_ms = 0.0
        self.attempts = 0
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.transactional = False             # part of a transaction (the batch's attribute bit 4)
        self.closed = False                    # no more appends (it was sent or is being retried)
        self.done = False
        self._built: Optional[bytes] = None

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def in_retry(self) -> bool:
        return self.attempts > 0

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence != NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.record_count - 1) % 2**31

    def try_append(self, record: SimpleRecord, size: int, batch_size: int, future, on_delivery) -> bool:
        if self.closed or (self.records and self.size + size > batch_size):
            return False
        self.records.append(record)
        self.thunks.append((future, on_delivery))
        self.size += size
        return True

    def is_full(self, batch_size: int) -> bool:
        return self.closed or self.size >= batch_size

    def has_room_for(self, size: int, batch_size: int) -> bool:
        """Whether :meth:`try_append` would take a record of ``size`` bytes (Java closes a batch that refuses
        one: from then on it counts as full)."""
        return not self.closed and (not self.records or self.size + size <= batch_size)

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int,
                           transactional: bool = False) -> None:
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.transactional = transactional
        self._built = None

    def reset_producer_state(self) -> None:
        """Forget the sequence (after an epoch bump the batch gets a new one when drained again)."""
        self.set_producer_state(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE)

    def build(self, compression, compression_level: Optional[int] = None) -> bytes:
        """The RecordBatch bytes; built once, so a retry re-sends exactly the same bytes."""
        if self._built is None:
            self._built = build_batch(self.records, compression=compression, compression_level=compression_level,
                                      producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                                      base_sequence=self.base_sequence, transactional=self.transactional)
        return self._built

    def complete(self, base_offset: int, log_append_time: int = -1) -> None:
        self._finish(base_offset, log_append_time, None)

    def fail(self, error: BaseException) -> None:
        self._finish(-1, -1, error)

    def _finish(self, base_offset: int, log_append_time: int, error: Optional[BaseException]) -> None:
        if self.done:
            return
        self.done = True
        topic, partition = self.tp
        for i, ((future, on_delivery), rec) in enumerate(zip(self.thunks, self.records)):
            md = None
            if error is None:
                offset = -1 if base_offset < 0 else base_offset + i
                ts = log_append_time if log_append_time >= 0 else rec.timestamp
                md = RecordMetadata(topic, partition, offset, ts)
                if not future.done():
                    future.set_result(md)
            elif not future.done():
                future.set_exception(error)
            if on_delivery is not None:
                try:
                    on_delivery(error, md)
                except Exception:  # noqa: BLE001 -- a user callback never breaks the sender (Java logs it)
                    pass

    def __repr__(self) -> str:
        seq = f" seq={self.base_sequence}" if self.has_sequence else ""
        return f"ProducerBatch({self.tp.topic}-{self.tp.partition}, {self.record_count} records, {self.size} B{seq})"


class RecordAccumulator:
    """Per-partition batch queues; ``ready``/``drain``/``reenqueue`` decide what the sender sends."""

    def __init__(self, *, batch_size: int = 16384, linger_ms: float = 5, delivery_timeout_ms: float = 120_000,
                 retry_backoff_ms: float = 100, retry_backoff_max_ms: float = 1000, max_in_flight: int = 5,
                 idempotent: bool = False, adaptive_partitioning: bool = False,
                 partition_availability_timeout_ms: float = 0,
                 load_stats_listener: Optional[Callable[[str, Optional[list], Optional[list], int], None]] = None):
        self.batch_size = batch_size
        self.adaptive_partitioning = adaptive_partitioning and load_stats_listener is not None
        self.partition_availability_timeout_ms = partition_availability_timeout_ms
        self.load_stats_listener = load_stats_listener
        self.node_stats: dict[int, list[float]] = {}     # node -> [ready time, drain time] (NodeLatencyStats)
        self.linger_ms = linger_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self.guarantee_order = max_in_flight == 1
        self.idempotent = idempotent
        self.batches: dict[TopicPartition, collections.deque] = {}
        self.in_flight: dict[TopicPartition, list[ProducerBatch]] = collections.defaultdict(list)
        self.muted: set[TopicPartition] = set()
        self.flushes_in_progress = 0
        self.closing = False
        self.transaction_completing = False    # a commit/abort waits for every batch: send them all now
        self.incomplete: set[ProducerBatch] = set()

    # -- appending --------------------------------------------------------------------------------------------
    def append(self, tp: TopicPartition, record: SimpleRecord, size: int, now_ms: float, future=None,
               on_delivery=None) -> tuple[ProducerBatch, bool]:
        """Append to the open batch of ``tp`` (or a new one). Returns (batch, new_batch_created)."""
        dq = self.batches.get(tp)
        if dq is None:
            dq = self.batches[tp] = collections.deque()
        if dq and dq[-1].try_append(record, size, self.batch_size, future, on_delivery):
            return dq[-1], False
        batch = ProducerBatch(tp, now_ms)
        batch.try_append(record, size, self.batch_size, future, on_delivery)
        dq.append(batch)
        self.incomplete.add(batch)
        return batch, True

    def all_batches_full(self, tp: TopicPartition, size: Optional[int] = None) -> bool:
        """Java's ``allBatchesFull``: the partition has no batch, or its last one is full -- the sticky
        partitioner may only switch away then. With ``size``: also when that record would not fit (Java's failed
        ``tryAppend`` closes the batch before it asks again)."""
        dq = self.batches.get(tp)
        if not dq:
            return True
        last = dq[-1]
        return last.is_full(self.batch_size) or (size is not None and not last.has_room_for(size, self.batch_size))

    # -- what is sendable -------------------------------------------------------------------------------------
    def _backoff_ms(self, batch: ProducerBatch) -> float:
        return min(self.retry_backoff_ms * 2 ** max(batch.attempts - 1, 0), self.retry_backoff_max_ms)

    def ready(self, leader_for: Callable[[TopicPartition], Optional[int]], now_ms: float,
              partition_count: Optional[Callable[[str], Optional[int]]] = None) -> tuple[set, float, set]:
        """(nodes with a sendable batch, ms until the next check, topics whose leader is unknown). With
        ``partition_count``, also the queue sizes of each topic for adaptive partitioning."""
        nodes: set = set()
        next_ms = float("inf")
        unknown: set = set()
        flushing = self.flushes_in_progress > 0 or self.closing or self.transaction_completing
        if partition_count is not None and self.load_stats_listener is not None:
            self._update_load_stats(leader_for, partition_count)
        for tp, dq in self.batches.items():
            if not dq:
                continue
            leader = leader_for(tp)
            if leader is None:
                unknown.add(tp.topic)
                continue
            if tp in self.muted or leader in nodes:
                continue
            batch = dq[0]
            backing_off = batch.in_retry and now_ms < batch.retry_at_ms
            if backing_off:
                next_ms = min(next_ms, batch.retry_at_ms - now_ms)
                continue
            waited = now_ms - batch.created_ms
            full = len(dq) > 1 or batch.is_full(self.batch_size)
            if full or flushing or batch.in_retry or waited >= self.linger_ms:
                nodes.add(leader)
            else:
                next_ms = min(next_ms, self.linger_ms - waited)
        return nodes, next_ms, unknown

    def _update_load_stats(self, leader_for: Callable[[TopicPartition], Optional[int]],
                           partition_count: Callable[[str], Optional[int]]) -> None:
        """Java's ``partitionReady`` per topic: the queue length of each partition with a leader, once the
        topic has a queue for every partition; a partition whose leader could not be drained for more than
        ``partitioner.availability.timeout.ms`` is left out. Handed to the partitioner."""
        if not self.adaptive_partitioning:
            return                                         # no queue sizes: the partitioner stays uniform
        by_topic: dict[str, list] = {}
        for tp in sorted(self.batches):
            by_topic.setdefault(tp.topic, []).append(tp)
        for topic, tps in by_topic.items():
            sizes: Optional[list[int]] = None
            ids: Optional[list[int]] = None
            if len(tps) >= (partition_count(topic) or 0):
                sizes, ids = [0] * len(tps), [0] * len(tps)
            i = -1
            for tp in tps:
                leader = leader_for(tp)
                if leader is not None and sizes is not None:
                    i += 1
                    ids[i] = tp.partition
                dq = self.batches[tp]
                if not dq or leader is None:
                    continue
                if sizes is not None:
                    sizes[i] = len(dq)
                if self.partition_availability_timeout_ms > 0:
                    stats = self.node_stats.get(leader)
                    if stats is not None and stats[0] - stats[1] > self.partition_availability_timeout_ms:
                        i -= 1
            self.load_stats_listener(topic, sizes, ids, i + 1)

    def update_node_latency_stats(self, node: int, now_ms: float, can_drain: bool) -> None:
        """Java's ``updateNodeLatencyStats``: the sender found ``node`` with data to send; ``can_drain`` when it
        could also send to it. Only kept with ``partitioner.availability.timeout.ms`` > 0."""
        if self.partition_availability_timeout_ms <= 0:
            return
        stats = self.node_stats.setdefault(node, [now_ms, now_ms])
        if can_drain:
            stats[1] = now_ms
        stats[0] = now_ms

    def drain(self, leader_for: Callable[[TopicPartition], Optional[int]], nodes, max_request_size: int,
              now_ms: float, can_send: Optional[Callable[[ProducerBatch], bool]] = None) -> dict[int, list]:
        """For each node, the batches of its next ProduceRequest (at most one per partition)."""
        out: dict[int, list] = {n: [] for n in nodes}
        sizes = {n: 0 for n in nodes}
        for tp, dq in self.batches.items():
            if not dq or tp in self.muted:
                continue
            node = leader_for(tp)
            if node not in out:
                continue
            batch = dq[0]
            if batch.in_retry and now_ms < batch.retry_at_ms:
                continue
            if self.idempotent and batch.has_sequence and self.in_flight.get(tp):
                continue                       # a retry goes out alone, in sequence order
            if out[node] and sizes[node] + batch.size > max_request_size:
                continue
            if can_send is not None and not can_send(batch):
                continue
            dq.popleft()
            batch.closed = True
            out[node].append(batch)
            sizes[node] += batch.size
            self.in_flight[tp].append(batch)
            if self.guarantee_order:
                self.muted.add(tp)
        return {n: b for n, b in out.items() if b}

    # -- coming back ------------------------------------------------------------------------------------------
    def sent_done(self, batch: ProducerBatch) -> None:
        """The request carrying ``batch`` is over (answered or failed)."""
        lst = self.in_flight.get(batch.tp)
        if lst and batch in lst:
            lst.remove(batch)
        self.muted.discard(batch.tp)

    def reenqueue(self, batch: ProducerBatch, now_ms: float) -> None:
        """Put a batch back for a retry: at the front, in sequence order, after the retry backoff."""
        batch.attempts += 1
        batch.last_attempt_ms = now_ms
        batch.retry_at_ms = now_ms + self._backoff_ms(batch)
        dq = self.batches.setdefault(batch.tp, collections.deque())
        if self.idempotent and batch.has_sequence:
            i = 0
            while i < len(dq) and dq[i].has_sequence and dq[i].base_sequence < batch.base_sequence:
                i += 1
            dq.insert(i, batch)
        else:
            dq.appendleft(batch)

    def completed(self, batch: ProducerBatch) -> None:
        self.incomplete.discard(batch)

    def expired_batches(self, now_ms: float) -> list[ProducerBatch]:
        """Queued (not in-flight) batches older than ``delivery.timeout.ms``: removed and returned."""
        out = []
        for _tp, dq in self.batches.items():
            while dq and now_ms - dq[0].created_ms >= self.delivery_timeout_ms:
                out.append(dq.popleft())
        return out

    def next_expiry_ms(self, now_ms: float) -> float:
        """How long until the oldest queued batch reaches ``delivery.timeout.ms`` (Java's ``nextExpiryTimeMs``):
        the sender wakes no later than that, so a batch fails when its time is up, not at the next wake-up."""
        oldest = min((dq[0].created_ms for dq in self.batches.values() if dq), default=None)
        return float("inf") if oldest is None else max(0.0, oldest + self.delivery_timeout_ms - now_ms)

    def reset_sequences(self) -> None:
        """After a producer id/epoch change: queued batches get new sequences when drained."""
        for dq in self.batches.values():
            for batch in dq:
                if batch.has_sequence:
                    batch.reset_producer_state()

    def abort_all(self, error: BaseException) -> None:
        for dq in self.batches.values():
            while dq:
                batch = dq.popleft()
                batch.fail(error)
                self.completed(batch)

    def abort_undrained(self, error: BaseException) -> None:
        """Fail the queued batches that were never sent (a transaction is being aborted). Batches waiting for a
        retry keep their sequence and go out again, so the partition's sequences stay without gaps."""
        for dq in self.batches.values():
            kept = [b for b in dq if b.has_sequence]
            for batch in dq:
                if not batch.has_sequence:
                    batch.fail(error)
                    self.completed(batch)
            dq.clear()
            dq.extend(kept)

    def has_undrained(self) -> bool:
        return any(self.batches.values())

    def has_incomplete(self) -> bool:
        return bool(self.incomplete)
