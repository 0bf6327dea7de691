"""The producer: ``send()`` returns at once with a future; batching, retries and idempotence happen behind it.

Theory of operation
-------------------
``Producer.send(topic, value, key=...)`` does the cheap part on the caller's thread -- turn ``str`` into UTF-8
bytes, stamp the timestamp (now, in ms, unless given), create a small future (:mod:`.future`) -- and hands the
record to the producer's I/O thread (:mod:`kafkalab.common.loop_thread`). There, in the order ``send()`` was
called:

1. the topic's metadata is looked up (the first send to a topic waits up to ``max.block.ms`` for it, as
   Java's ``waitOnMetadata`` does);
2. the **partitioner** picks the partition, unless the caller gave one (:mod:`.partitioner`);
3. the record is appended to that partition's open batch in the **accumulator** (:mod:`.accumulator`);
4. the **sender** (:mod:`.sender`) ships batches to partition leaders when they are full or ``linger.ms``
   has passed, and completes the futures from the broker's answers.

The future resolves to :class:`RecordMetadata` ``(topic, partition, offset, timestamp)``; ``on_delivery(err,
metadata)`` is called too, on the I/O thread (keep it short; never call blocking producer methods from it).
``flush()`` makes every batch sendable at once and waits for all outstanding records; ``close()`` flushes, then
stops the I/O thread. The producer is a context manager.

**Transactions** (``transactional.id`` set; idempotence is implied): Java's API, with Java's rules::

    producer.init_transactions()               # once: fences older producers with the same transactional.id
    producer.begin_transaction()
    producer.send("out", b"...")               # the partition joins the transaction before its first batch
    producer.send_offsets_to_transaction({tp: offset}, consumer.group_metadata())   # consume-process-produce
    producer.commit_transaction()              # or abort_transaction()

The blocking calls wait up to ``max.block.ms`` (or ``timeout`` seconds); one that timed out may be called again
to keep waiting. A :class:`~.transaction_state.ProducerFencedError` (and any error after which the state is
``FATAL_ERROR``) leaves only ``close()``; other failures leave the transaction *abortable*: call
``abort_transaction()`` and go on. ``close()`` aborts a transaction still open. The state machine lives in
:mod:`.transaction_manager` and :mod:`.transaction_state`.

``time=`` injects the clock (:class:`~kafkalab.common.time.Time`, ``SystemTime`` by default) that decides
``linger.ms``, ``delivery.timeout.ms``, ``request.timeout.ms``, retry and reconnect backoffs, the metadata age,
``flush(timeout)`` and the records' default timestamps: with a ``MockTime`` a lab moves them by hand
(:mod:`kafkalab.clients.clock`).

``trace=True`` keeps every request and response (:class:`~kafkalab.clients.tracing.ClientTrace`,
``producer.trace``); ``trace=callable`` calls it with each :class:`~kafkalab.clients.tracing.TraceEvent`.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/KafkaProducer.java``.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from typing import Any, Callable, Mapping, Optional

from kafkalab.clients.config import producer_config
from kafkalab.clients.consumer.group_metadata import ConsumerGroupMetadata
from kafkalab.clients.consumer.subscription_state import OffsetAndMetadata
from kafkalab.clients.errors import ClientClosedError, KafkaProtocolError, KafkaTimeoutError
from kafkalab.clients.network_client import NetworkClient
from kafkalab.clients.producer.accumulator import (RecordAccumulator, RecordMetadata, TopicPartition,
                                                   estimate_size)
from kafkalab.clients.producer.future import FutureRecordMetadata
from kafkalab.clients.producer.partitioner import Partitioner
from kafkalab.clients.producer.sender import Sender
from kafkalab.clients.producer.transaction_manager import TransactionManager
from kafkalab.clients.producer.transaction_state import TransactionStateError
from kafkalab.clients.tracing import make_tracer
from kafkalab.common.loop_thread import LoopThread
from kafkalab.common.time import SYSTEM, Time
from kafkalab.protocol import ErrorCode
from kafkalab.records import SimpleRecord

__all__ = ["Producer", "RecordMetadata"]


def _to_bytes(what: str, v) -> Optional[bytes]:
    if v is None or type(v) is bytes:
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"{what} must be bytes, str or None, not {type(v).__name__} (serialize it first)")


def _headers(headers) -> tuple:
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"header names are str, not {type(name).__name__}")
        out.append((name, _to_bytes(f"header {name!r}", value)))
    return tuple(out)


def _group_metadata(metadata) -> ConsumerGroupMetadata:
    if isinstance(metadata, str):
        return ConsumerGroupMetadata(metadata, -1, "", None)
    if metadata is None or not all(hasattr(metadata, f) for f in ConsumerGroupMetadata._fields):
        raise ValueError("Consumer group metadata could not be null: pass consumer.group_metadata()")
    metadata = ConsumerGroupMetadata(metadata.group_id, metadata.generation_id, metadata.member_id,
                                     metadata.group_instance_id)
    if metadata.generation_id > 0 and metadata.member_id == "":
        raise ValueError(f"Passed in group metadata {metadata} has generationId > 0 but member.id ")
    return metadata


def _offset_and_metadata(om) -> OffsetAndMetadata:
    if isinstance(om, OffsetAndMetadata):
        return om
    if isinstance(om, tuple):                  # any (offset, metadata, leader_epoch) shape
        return OffsetAndMetadata(*om)
    if not isinstance(om, int) or om < 0:
        raise ValueError(f"Invalid offset {om!r}: offsets are non-negative ints")
    return OffsetAndMetadata(om)


class Producer:
    """A Kafka producer configured with Kafka's names: ``Producer({"bootstrap.servers": ..., "acks": "all"})``."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, trace=None, time: Optional[Time] = None):
        self.config = cfg = producer_config(config)
        self.client_id = cfg["client.id"]
        self.time: Time = time if time is not None else SYSTEM
        self._max_request_size = cfg["max.request.size"]      # read once: _append runs for every record
        self._hook, self.trace = make_tracer(trace)
        self._io = LoopThread(f"kafka-producer-network-thread | {self.client_id}")
        self._incoming: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False
        self._pending_topics: dict[str, collections.deque] = {}
        try:
            self._io.run(self._start(), timeout=30)
        except BaseException:
            self._io.stop()
            raise

    async def _start(self) -> None:
        cfg = self.config
        self.client = NetworkClient(cfg, tracer=self._hook, allow_auto_topic_creation=True, time=self.time,
                                    metric_group_prefix="producer")
        idempotent = cfg["enable.idempotence"]
        self.partitioner = Partitioner(cfg["partitioner"], batch_size=cfg["batch.size"],
                                       ignore_keys=cfg["partitioner.ignore.keys"])
        self.accumulator = RecordAccumulator(
            batch_size=cfg["batch.size"], linger_ms=cfg["linger.ms"], delivery_timeout_ms=cfg["delivery.timeout.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"], retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
            max_in_flight=cfg["max.in.flight.requests.per.connection"], idempotent=idempotent,
            adaptive_partitioning=cfg["partitioner.adaptive.partitioning.enable"],
            partition_availability_timeout_ms=cfg["partitioner.availability.timeout.ms"],
            load_stats_listener=self.partitioner.sticky.update_partition_load_stats)
        self.transaction_manager = TransactionManager(
            cfg["transactional.id"], cfg["transaction.timeout.ms"], cfg["retry.backoff.ms"]) if idempotent else None
        self.sender = Sender(self.client, self.accumulator, cfg, self.transaction_manager)
        self.client.start_metadata_updater()
        self._sender_task = asyncio.get_running_loop().create_task(self.sender.run())

    # -- sending ----------------------------------------------------------------------------------------------
    def send(self, topic: str, value=None, key=None, headers=None, partition: Optional[int] = None,
             timestamp: Optional[int] = None, on_delivery: Optional[Callable] = None) -> FutureRecordMetadata:
        """Queue one record; returns a Future of :class:`RecordMetadata`. ``on_delivery(err, metadata)``."""
        if self._closed:
            raise ClientClosedError("Cannot send after the producer is closed.")
        if not isinstance(topic, str) or not topic:
            raise TypeError("topic must be a non-empty str")
        if partition is not None and (not isinstance(partition, int) or partition < 0):
            raise ValueError(f"Invalid partition {partition!r}")
        if timestamp is None:
            timestamp = self.time.milliseconds()
        elif not isinstance(timestamp, int) or timestamp < 0:
            raise ValueError(f"Invalid timestamp: {timestamp!r}. Timestamp should always be non-negative or None.")
        record = SimpleRecord(_to_bytes("key", key), _to_bytes("value", value), _headers(headers), timestamp)
        if self.transaction_manager is not None:
            self.transaction_manager.fail_if_not_ready_for_send()
        future = FutureRecordMetadata()
        with self._lock:
            self._incoming.append((topic, partition, record, future, on_delivery))
            if self._scheduled:
                return future
            self._scheduled = True
        self._io.call_soon(self._take_incoming)
        return future

    def produce(self, topic: str, value=None, key=None, **kw) -> FutureRecordMetadata:
        """Alias of :meth:`send` (confluent-kafka's name)."""
        return self.send(topic, value, key, **kw)

    def _take_incoming(self) -> None:
        with self._lock:
            items = list(self._incoming)
            self._incoming.clear()
            self._scheduled = False
        cluster = self.client.metadata.cluster
        counts: dict = {}                      # partition count per topic, looked up once per call, not per record
        for item in items:
            topic = item[0]
            pending = self._pending_topics.get(topic)
            n = counts.get(topic)
            if n is None:
                n = counts[topic] = cluster.partition_count(topic)
            if pending is None and n:
                self._append(item, cluster, n)
            else:
                if pending is None:
                    pending = self._pending_topics[topic] = collections.deque()
                    asyncio.ensure_future(self._await_topic(topic))
                pending.append(item)
        self.sender.wakeup.set()

    async def _await_topic(self, topic: str) -> None:
        try:
            cluster = await self.client.wait_for_metadata(topic, self.config["max.block.ms"])
        except Exception as e:  # noqa: BLE001 -- every waiting record learns why
            for item in self._pending_topics.pop(topic, ()):
                self._fail_item(item, e)
        else:
            for item in self._pending_topics.pop(topic, ()):
                self._append(item, cluster)
            self.sender.wakeup.set()
        await self.sender._notify()

    @staticmethod
    def _fail_item(item, error: BaseException) -> None:
        _, _, _, future, on_delivery = item
        if not future.done():
            future.set_exception(error)
        if on_delivery is not None:
            try:
                on_delivery(error, None)
            except Exception:  # noqa: BLE001
                pass

    def _append(self, item, cluster, n: Optional[int] = None) -> None:
        topic, partition, record, future, on_delivery = item
        if n is None:
            n = cluster.partition_count(topic)
        size = estimate_size(record.key, record.value, record.headers)
        if size + 61 > self._max_request_size:
            self._fail_item(item, KafkaProtocolError(ErrorCode.MESSAGE_TOO_LARGE, (
                f"The message is {size + 61} bytes when serialized which is larger than {self._max_request_size}, "
                "which is the value of the max.request.size configuration.")))
            return
        available = None
        if partition is None:
            available = cluster.available_partitions(topic)
            partition = self.partitioner.partition(topic, record.key, n, available)
            if self.partitioner.is_sticky(record.key):
                # RecordAccumulator.partitionChanged: a switch held back while the sticky partition's last batch
                # was open completes once it is full (or refuses this record); the record then goes to the new one
                if self.accumulator.all_batches_full(TopicPartition(topic, partition), size):
                    partition = self.partitioner.update_partition_info(topic, partition, 0, True, n, available)
            else:
                available = None
        elif partition >= n:
            self._fail_item(item, KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                     f"Invalid partition given with record: {partition} is not in "
                                                     f"the range [0...{n}]."))
            return
        tp = TopicPartition(topic, partition)
        if self.transaction_manager is not None:
            try:
                self.transaction_manager.maybe_add_partition(tp)
            except Exception as e:  # noqa: BLE001 -- the state changed since send(): this record learns why
                self._fail_item(item, e)
                return
        batch, created = self.accumulator.append(tp, record, size, self.client.now_ms(), future, on_delivery)
        if available is not None:                # keyless: count the bytes the batch grew by (a new one: header too)
            self.partitioner.update_partition_info(topic, partition, batch.size if created else size,
                                                   self.accumulator.all_batches_full(tp), n, available)

    # -- transactions -----------------------------------------------------------------------------------------
    def _transactional(self) -> TransactionManager:
        tm = self.transaction_manager
        if tm is None or not tm.is_transactional:
            raise TransactionStateError("Cannot use transactional methods without enabling transactions by setting "
                                        "the transactional.id configuration property")
        if self._closed:
            raise ClientClosedError("Cannot perform operation after producer has been closed")
        return tm

    def _await_transactional(self, start: Callable, timeout: Optional[float]) -> None:
        """Start a transactional call on the I/O thread (``start(tm)`` returns its result) and wait for it."""
        tm = self._transactional()
        timeout_ms = self.config["max.block.ms"] if timeout is None else timeout * 1000

        async def go():
            await self._appended()
            result = start(tm)
            self.sender.wakeup.set()
            done = asyncio.get_running_loop().create_future()
            result.add_done_callback(lambda r: done.done() or done.set_result(None))
            if not await self.client.waits.done(done, timeout_ms):
                raise KafkaTimeoutError(f"Timeout expired after {timeout_ms:.0f}ms while awaiting {result.operation}")
            result.acked = True
            if result.error is not None:
                raise result.error
        self._io.run(go())

    async def _appended(self) -> None:
        """Wait until every record given to send() so far is in the accumulator (its topic's metadata known), so
        that a commit or abort covers exactly the records sent before it, as Java's blocking send() does."""
        if self._incoming:
            self._take_incoming()
        while self._pending_topics:
            await asyncio.sleep(0.005)

    def init_transactions(self, timeout: Optional[float] = None) -> None:
        """Find the transaction coordinator and get the producer id and epoch of ``transactional.id`` -- which
        fences any older producer with the same id, and completes (aborts) its open transaction. Call once."""
        self._await_transactional(lambda tm: tm.initialize_transactions(), timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (local only: nothing is sent until the first record or offsets)."""
        tm = self._transactional()
        self._io.call(tm.begin_transaction)

    def send_offsets_to_transaction(self, offsets: Mapping, consumer_group_metadata,
                                    timeout: Optional[float] = None) -> None:
        """Commit ``offsets`` (``{(topic, partition): offset | OffsetAndMetadata}``, the *next* offsets to read)
        for the consumer group as part of the transaction: they become visible only if it commits.
        ``consumer_group_metadata`` is ``consumer.group_metadata()`` (or a group id, as Java's deprecated form)."""
        self._transactional()
        metadata = _group_metadata(consumer_group_metadata)
        normalized = {TopicPartition(*tp): _offset_and_metadata(om) for tp, om in offsets.items()}
        if not normalized:
            return
        self._await_transactional(lambda tm: tm.send_offsets_to_transaction(normalized, metadata), timeout)

    def commit_transaction(self, timeout: Optional[float] = None) -> None:
        """Send what is queued, wait for every record, then commit (EndTxn). Raises the error that made the
        transaction abortable, if any (then call :meth:`abort_transaction`)."""
        self._await_transactional(lambda tm: tm.begin_commit(), timeout)

    def abort_transaction(self, timeout: Optional[float] = None) -> None:
        """Drop the records not yet sent, wait for those in flight, then abort (EndTxn): read_committed consumers
        never see this transaction's records, and its offsets are not committed."""
        self._await_transactional(lambda tm: tm.begin_abort(), timeout)

    # -- waiting ----------------------------------------------------------------------------------------------
    def _idle(self) -> bool:
        return not self._incoming and not self._pending_topics and not self.accumulator.has_incomplete()

    async def _flush(self) -> None:
        acc = self.accumulator
        acc.flushes_in_progress += 1
        try:
            self.sender.wakeup.set()
            async with self.sender.progress:
                while not self._idle():
                    self.sender.wakeup.set()
                    try:
                        await asyncio.wait_for(self.sender.progress.wait(), 0.05)
                    except asyncio.TimeoutError:
                        pass
        finally:
            acc.flushes_in_progress -= 1

    def _flush_within(self, timeout: Optional[float]):
        """The flush, bounded by ``timeout`` seconds of the producer's clock (None: unbounded)."""
        return self._flush() if timeout is None else self.client.waits.wait_for(self._flush(), timeout * 1000)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Send everything queued now (ignoring ``linger.ms``) and wait until every record is acknowledged or
        failed. ``timeout`` in seconds (None = wait as long as it takes); raises ``KafkaTimeoutError`` on expiry."""
        if self._closed:
            return
        try:
            self._io.run(self._flush_within(timeout))
        except (TimeoutError, concurrent.futures.TimeoutError):
            raise KafkaTimeoutError(f"Failed to flush accumulated records within {timeout} s") from None

    def partitions_for(self, topic: str) -> list:
        """The topic's partitions as the producer's metadata knows them (waits for the metadata)."""
        cluster = self._io.run(self.client.wait_for_metadata(topic, self.config["max.block.ms"]))
        return [cluster.topics[topic].partitions[p] for p in sorted(cluster.topics[topic].partitions)]

    @property
    def metadata(self):
        """The producer's current view of the cluster (a ClusterView snapshot)."""
        return self.client.metadata.cluster

    def metrics(self) -> dict:
        """Kafka's client metrics, measured now: ``{MetricName(name, group, tags): value}`` (group
        ``producer-metrics`` and, per broker, ``producer-node-metrics``), as Java's ``metrics()``."""
        return self.client.metrics.metrics() if self._closed else self._io.call(self.client.metrics.metrics)

    # -- closing ----------------------------------------------------------------------------------------------
    def close(self, timeout: Optional[float] = None) -> None:
        """Flush (up to ``timeout`` seconds; 0 = fail what is queued at once), then stop the I/O thread."""
        if self._closed:
            return
        self._closed = True
        try:
            if timeout is None or timeout > 0:
                try:
                    self._io.run(self._flush_within(timeout))
                except (TimeoutError, concurrent.futures.TimeoutError):
                    pass
                self._abort_open_transaction(timeout)
            self._io.run(self._shutdown(), 10)
        finally:
            self._io.stop()

    def _abort_open_transaction(self, timeout: Optional[float]) -> None:
        """A transaction still open at close() is aborted, as Java's sender does on shutdown."""
        tm = self.transaction_manager
        if tm is None or not tm.is_transactional or not tm.has_ongoing_transaction():
            return
        bound = self.config["request.timeout.ms"] / 1000 if timeout is None else timeout
        try:
            self._io.run(self._abort_within(tm, bound))
        except Exception:  # noqa: BLE001 -- closing anyway; the coordinator's timeout aborts it otherwise
            pass

    async def _abort_within(self, tm: TransactionManager, timeout: float) -> None:
        result = tm.pending_result() if tm.is_completing() else tm.begin_abort()
        self.sender.wakeup.set()
        if result is not None:
            done = asyncio.get_running_loop().create_future()
            result.add_done_callback(lambda r: done.done() or done.set_result(None))
            await self.client.waits.done(done, timeout * 1000)

    async def _shutdown(self) -> None:
        error = ClientClosedError("Producer is closed forcefully.")
        with self._lock:
            items = list(self._incoming)
            self._incoming.clear()
        for topic in list(self._pending_topics):
            items.extend(self._pending_topics.pop(topic))
        for item in items:
            self._fail_item(item, error)
        self.accumulator.abort_all(error)
        for batch in list(self.accumulator.incomplete):
            batch.fail(error)
        if self.transaction_manager is not None:
            self.transaction_manager.close()
        await self.sender.close()
        self._sender_task.cancel()
        await self.client.close()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Producer(client.id={self.client_id!r}, {'closed' if self._closed else 'open'})"
