"""The sender: the producer's I/O loop that turns ready batches into ProduceRequests and handles the answers.

Theory of operation
-------------------
One coroutine (Java: one thread, ``kafka-producer-network-thread``) runs :meth:`Sender.run_once` in a loop:

1. **Identity.** With idempotence on, make sure there is a producer id (InitProducerId) -- and bump the
   epoch if the transaction manager asks for it, but only once nothing is in flight
   (see :mod:`.transaction_manager`). A transactional producer instead sends the next queued coordinator
   request (FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn),
   one at a time, and sends no produce data in a round that sent one (Java's
   ``maybeSendAndPollTransactionalRequest``); only batches of partitions already added to the transaction
   are drained, and a commit or abort makes every queued batch sendable at once.
2. **Expire** queued batches older than ``delivery.timeout.ms`` (checked first, so that records fail in time
   even while no producer id can be obtained).
3. **Ready?** Ask the accumulator which leaders have sendable batches. Leaders the metadata does not know
   trigger a metadata update; leaders without a connection get one started; leaders whose connection is full
   (``max.in.flight.requests.per.connection``) wait.
4. **Drain** each ready node's batches into one ``ProduceRequest`` (one batch per partition), stamp sequences,
   and send it without waiting for the answer -- that is the pipelining. ``acks`` and ``request.timeout.ms``
   travel in the request (``timeout_ms`` is how long the broker may wait for replicas when ``acks=all``).
5. **Sleep** until the next batch becomes sendable (``linger.ms``), a new record arrives, or an answer does.

Each partition's answer completes its batch: ``NONE`` resolves every record's future with its offset
(``base_offset + i``), and the broker's ``log_append_time_ms`` replaces the timestamps when the topic uses
LogAppendTime. ``DUPLICATE_SEQUENCE_NUMBER`` means "already written": success. A retriable error re-queues the
batch (while ``retries`` and ``delivery.timeout.ms`` allow), after asking for fresh metadata when the error
says the cache is stale; anything else fails the batch's futures. With ``acks=0`` there is no answer at all:
futures resolve as soon as the request is written, with offset -1.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/producer/internals/Sender.java``.
"""
from __future__ import annotations

import asyncio
from typing import Optional

from kafkalab.clients.api_versions import UnsupportedVersionError
from kafkalab.clients.errors import KafkaTimeoutError
from kafkalab.clients.metadata import STALE_METADATA_ERRORS
from kafkalab.clients.producer.accumulator import ProducerBatch, RecordAccumulator, TopicPartition
from kafkalab.clients.producer.transaction_manager import TransactionManager
from kafkalab.clients.producer.transaction_state import CoordinatorType, TransactionAbortedError, TransactionError
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, error_info, request_class

__all__ = ["Sender", "TRANSACTIONAL_PRODUCE_MAX_VERSION"]

TRANSACTIONAL_PRODUCE_MAX_VERSION = 11


class Sender:
    def __init__(self, client, accumulator: RecordAccumulator, config, txn: Optional[TransactionManager] = None):
        self.client = client
        self.accumulator = accumulator
        self.txn = txn
        self.acks = config["acks"]
        self.retries = config["retries"]
        self.request_timeout_ms = config["request.timeout.ms"]
        self.delivery_timeout_ms = config["delivery.timeout.ms"]
        self.max_request_size = config["max.request.size"]
        self.compression = config["compression.type"]
        self.compression_level = {"gzip": config["compression.gzip.level"], "lz4": config["compression.lz4.level"],
                                  "zstd": config["compression.zstd.level"]}.get(self.compression)
        if self.compression_level == -1:
            self.compression_level = None
        self.wakeup = asyncio.Event()
        self.progress = asyncio.Condition()
        self.running = True
        self._tasks: set = set()
        self.requests_sent = 0
        # Produce v12 means "the leader adds the partition itself" (transaction.version 2): not this client
        self.produce_max_version = TRANSACTIONAL_PRODUCE_MAX_VERSION if txn is not None and txn.is_transactional \
            else None

    # -- the loop ---------------------------------------------------------------------------------------------
    def leader_for(self, tp: TopicPartition) -> Optional[int]:
        return self.client.metadata.cluster.leader_for(tp.topic, tp.partition)

    async def run(self) -> None:
        while self.running:
            try:
                wait_ms = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 -- keep the loop alive; fail what is queued
                self.accumulator.abort_all(e)
                await self._notify()
                wait_ms = 100
            if not self.running:
                break
            self.wakeup.clear()
            await self.client.waits.event(self.wakeup, max(wait_ms, 0))   # linger/backoff on the client's Time

    async def run_once(self) -> float:
        acc, now = self.accumulator, self.client.now_ms()
        for batch in acc.expired_batches(now):
            self._fail(batch, ErrorCode.REQUEST_TIMED_OUT, KafkaTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition}: "
                f"{now - batch.created_ms:.0f} ms has passed since batch creation"))
        txn = self.txn
        if txn is not None:
            wait_ms = await self._producer_state_step()
            if wait_ms is not None:
                return wait_ms
        nodes, next_ms, unknown = acc.ready(self.leader_for, now, self.client.metadata.cluster.partition_count)
        if unknown:
            self.client.metadata.add_topics(*unknown)
            self.client.request_metadata_update()
            next_ms = min(next_ms, self.client.metadata.retry_backoff_ms)
        sendable = set()
        for node in nodes:
            can_send = self.client.has_room(node)
            acc.update_node_latency_stats(node, now, can_send)   # partitioner.availability.timeout.ms
            if can_send:
                sendable.add(node)
            elif not self.client.is_ready(node):
                self.client.start_connecting(node, on_done=self.wakeup.set)
                next_ms = min(next_ms, 10)
        if sendable:
            allowed = None
            if txn is not None and txn.is_transactional:
                allowed = lambda b: txn.is_send_to_partition_allowed(b.tp)  # noqa: E731 -- added partitions only
            drained = acc.drain(self.leader_for, sendable, self.max_request_size, now, allowed)
            for node, batches in drained.items():
                if self.txn is not None:
                    for b in batches:
                        self.txn.assign(b)
                task = asyncio.ensure_future(self._send_produce(node, batches))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        if acc.has_undrained() and next_ms == float("inf"):
            next_ms = 50                        # waiting for a connection slot or an answer; woken earlier
        return min(next_ms, acc.next_expiry_ms(now), 1000)

    async def _producer_state_step(self) -> Optional[float]:
        """Step 1: the producer id, the epoch, and the transaction's coordinator requests. Returns how long to
        wait when no produce data may go out in this round, None to go on."""
        txn, acc = self.txn, self.accumulator
        if txn.fatal_error is not None:
            acc.abort_all(txn.fatal_error)
            await self._notify()
            return 1000
        if txn.is_transactional:
            acc.transaction_completing = txn.is_completing()
            wait_ms = await self._maybe_send_transactional_request()
            if txn.sequences_reset:
                acc.reset_sequences()
                txn.sequences_reset = False
            return wait_ms
        if txn.epoch_bump_required and txn.has_producer_id:
            if txn.has_in_flight():
                return 20                       # bump once the requests in flight are answered
            txn.bump_idempotent_epoch()
            acc.reset_sequences()
        if txn.needs_init() and not await self._init_producer_id():
            return self.client.config["retry.backoff.ms"]
        return None

    async def _notify(self) -> None:
        async with self.progress:
            self.progress.notify_all()

    # -- InitProducerId ---------------------------------------------------------------------------------------
    async def _init_producer_id(self) -> bool:
        txn = self.txn
        node = self.client.least_loaded_node()
        if node is None:
            return False
        try:
            conn = await self.client.connection(node)
            version = conn.version_for(ApiKey.INIT_PRODUCER_ID)
            pid, epoch = txn.init_request_fields()
            body = request_class(ApiKey.INIT_PRODUCER_ID)(transactional_id=None, transaction_timeout_ms=2**31 - 1,
                                                          producer_id=pid, producer_epoch=epoch)
            resp = await conn.send(body, version)
        except UnsupportedVersionError as e:
            txn.set_fatal_error(e)
            return False
        except KafkaProtocolError:
            return False
        code = resp.body.error_code
        if code:
            if not error_info(code).retriable:
                txn.set_fatal_error(KafkaProtocolError(code, "InitProducerId failed"))
            return False
        txn.set_producer_id_and_epoch(resp.body.producer_id, resp.body.producer_epoch)
        self.accumulator.reset_sequences()
        return True

    # -- transactional requests -------------------------------------------------------------------------------
    async def _maybe_send_transactional_request(self) -> Optional[float]:
        """Send the next coordinator request of the transaction, if one is due, and handle its answer (Java's
        ``maybeSendAndPollTransactionalRequest``). Returns how long to wait before the next round when it did
        (no produce data goes out in that round), None when there was nothing to send."""
        txn, acc = self.txn, self.accumulator
        if (txn.has_abortable_error() or txn.is_aborting()) and acc.has_undrained():
            acc.abort_undrained(txn.last_error or TransactionAbortedError())
            await self._notify()
        handler = txn.next_request(acc.has_incomplete())
        if handler is None:
            await self._notify()                # a skipped EndTxn completes its result right here
            return None
        if handler.coordinator_type is not None:
            coordinator = txn.coordinator(handler.coordinator_type)
            if coordinator is None:
                txn.lookup_coordinator(handler.coordinator_type, handler.coordinator_key)
                txn.retry(handler)
                return 0
            node = self._coordinator_node(coordinator)
        else:
            node = self.client.least_loaded_node()
            if node is None:
                self.client.request_metadata_update()
                txn.retry(handler)
                return self.client.config["retry.backoff.ms"]
        if handler.is_retry:
            await self.client.waits.sleep(handler.retry_backoff_ms())
        try:
            conn = await self.client.connection(node)
            if handler.coordinator_type is CoordinatorType.TRANSACTION:
                txn.coordinator_ready(conn.api_versions.ranges.get(ApiKey.INIT_PRODUCER_ID, (0, -1))[1])
            low, high = handler.version_range
            version = conn.version_for(handler.api_key, low, high)
            body = fit(handler.build(version), version)
            resp = await conn.send(body, version)
        except UnsupportedVersionError as e:
            handler.fatal_error(e)
        except KafkaProtocolError:              # disconnected or timed out (NetworkException, RequestTimedOut)
            handler.disconnected()
        except Exception as e:  # noqa: BLE001 -- a request that cannot be built or read: the producer stops
            handler.fatal_error(TransactionError(f"Could not execute transactional request {handler}: {e!r}"))
        else:
            try:
                handler.handle_response(resp.body)
            except Exception as e:  # noqa: BLE001 -- an answer the table has no step for: the producer stops
                handler.fatal_error(TransactionError(f"Could not handle the answer to {handler}: {e!r}"))
        await self._notify()
        return 0

    def _coordinator_node(self, coordinator) -> int:
        """The node id to reach a coordinator by: the broker's own when the metadata knows it."""
        if self.client.node_address(coordinator.node_id) is None:
            self.client.extra_nodes[coordinator.node_id] = (coordinator.host, coordinator.port)
        return coordinator.node_id

    # -- Produce ----------------------------------------------------------------------------------------------
    def produce_request(self, batches: list[ProducerBatch]):
        cls = request_class(ApiKey.PRODUCE)
        by_topic: dict[str, list] = {}
        for b in batches:
            data = cls.PartitionProduceData(index=b.tp.partition,
                                            records=b.build(self.compression, self.compression_level))
            by_topic.setdefault(b.tp.topic, []).append(data)
        topics = tuple(cls.TopicProduceData(name=t, partition_data=tuple(p)) for t, p in by_topic.items())
        transactional_id = self.txn.transactional_id if self.txn is not None else None
        return cls(transactional_id=transactional_id, acks=self.acks, timeout_ms=self.request_timeout_ms,
                   topic_data=topics)

    async def _send_produce(self, node: int, batches: list[ProducerBatch]) -> None:
        try:
            conn = await self.client.connection(node)
            version = conn.version_for(ApiKey.PRODUCE, high=self.produce_max_version)
            body = self.produce_request(batches)
            self.requests_sent += 1
            resp = await conn.send(body, version, expect_response=self.acks != 0)
        except KafkaProtocolError as e:
            for b in batches:
                self._handle(b, e.error_code, -1, -1, str(e), e)
        except UnsupportedVersionError as e:
            for b in batches:
                self.accumulator.sent_done(b)
                self._fail(b, ErrorCode.UNSUPPORTED_VERSION, e)
        except Exception as e:  # noqa: BLE001 -- an encoding bug must fail the records, not hang them
            for b in batches:
                self.accumulator.sent_done(b)
                self._fail(b, ErrorCode.UNKNOWN_SERVER_ERROR, e)
        else:
            if resp is None:
                for b in batches:
                    self._handle(b, ErrorCode.NONE, -1, -1, None, None)
            else:
                answers = {}
                for t in resp.body.responses:
                    for p in t.partition_responses:
                        answers[(t.name, p.index)] = p
                for b in batches:
                    p = answers.get((b.tp.topic, b.tp.partition))
                    if p is None:
                        self._handle(b, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1,
                                     "the ProduceResponse did not mention this partition", None)
                    else:
                        self._handle(b, p.error_code, p.base_offset, p.log_append_time_ms, p.error_message, None)
        self.wakeup.set()
        await self._notify()

    def _handle(self, batch: ProducerBatch, code: int, base_offset: int, log_append_time: int,
                message: Optional[str], error: Optional[BaseException]) -> None:
        acc, txn = self.accumulator, self.txn
        acc.sent_done(batch)
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
            if txn is not None:
                txn.handle_completed(batch)
            batch.complete(base_offset, log_append_time)
            acc.completed(batch)
            return
        now = self.client.now_ms()
        if error is None:
            error = KafkaProtocolError(code, message)
        if self._can_retry(batch, code, now):
            if code in STALE_METADATA_ERRORS:
                self.client.request_metadata_update()
            if txn is not None:
                txn.handle_retry(batch, code)
            acc.reenqueue(batch, now)
            return
        self._fail(batch, code, error)

    def _can_retry(self, batch: ProducerBatch, code: int, now: float) -> bool:
        if now - batch.created_ms >= self.delivery_timeout_ms or batch.attempts >= self.retries:
            return False
        if self.txn is not None and self.txn.fatal_error is None:
            if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                return self.txn.is_retriable_out_of_order(batch)
            if code == ErrorCode.UNKNOWN_PRODUCER_ID:
                return not self.txn.is_transactional   # a transaction aborts and bumps instead
        return error_info(code).retriable

    def _fail(self, batch: ProducerBatch, code: int, error: BaseException) -> None:
        if self.txn is not None:
            self.txn.handle_failed(batch, code, error)
        batch.fail(error)
        self.accumulator.completed(batch)

    async def close(self) -> None:
        self.running = False
        self.wakeup.set()
        for task in list(self._tasks):
            task.cancel()
