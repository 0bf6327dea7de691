"""The fetcher: FetchRequests to partition leaders, and the records that come back, in order.

Theory of operation
-------------------
A consumer does not ask for one partition at a time. For every broker that leads some fetchable partition it
sends **one FetchRequest** naming all of them, each with its ``fetch_offset`` (the consumer's position) and a
per-partition size cap, and lets the broker wait:

* ``fetch.min.bytes`` -- the broker holds the answer until at least this many bytes are there...
* ``fetch.max.wait.ms`` -- ...or until this much time has passed (a *long poll*: an idle consumer costs one
  request per half second, not a busy loop);
* ``max.partition.fetch.bytes`` -- at most this much per partition, and ``fetch.max.bytes`` for the whole
  answer (both soft: the first batch is returned even when larger, so a big record never blocks a consumer);
* ``isolation.level`` -- ``read_committed`` (1) makes the broker stop at the last stable offset and list the
  aborted transactions (see :mod:`.completed_fetch`).

Only one fetch per broker is in flight at a time, and a partition whose records are still waiting in the
buffer is not fetched again. Answers are decoded into :class:`~.completed_fetch.CompletedFetch` objects and
queued; ``poll()`` drains them (``max.poll.records`` at most) and moves each partition's position. Before
``poll()`` returns, the next fetches are already sent (**prefetch**): while the application works on this
batch of records, the broker prepares the next one.

An answer is used only if the partition is still assigned and its position is still the offset the fetch
asked for -- after a ``seek()`` or a rebalance, stale data is dropped. Per-partition errors are Kafka's:
``NOT_LEADER_OR_FOLLOWER``, ``UNKNOWN_TOPIC_OR_PARTITION``, ``FENCED_LEADER_EPOCH``... refresh the metadata and
fetch again; ``OFFSET_OUT_OF_RANGE`` resets the position with ``auto.offset.reset`` (``none`` raises
:class:`OffsetOutOfRangeError`).

kafkalab's fetcher sends *sessionless* full fetches (``session_epoch`` -1): every request names every
partition. Java uses incremental fetch sessions (KIP-227), which only name what changed -- an optimisation
the wire shows, not a change in meaning.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/{Fetcher,AbstractFetch,
FetchCollector}.java``.
"""
from __future__ import annotations

import asyncio
import collections
from typing import Optional

from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.consumer.completed_fetch import READ_COMMITTED, READ_UNCOMMITTED, CompletedFetch
from kafkalab.clients.consumer.subscription_state import SubscriptionState
from kafkalab.clients.errors import NetworkException
from kafkalab.clients.metadata import STALE_METADATA_ERRORS
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class

__all__ = ["Fetcher", "OffsetOutOfRangeError"]

_REFRESH = STALE_METADATA_ERRORS | {ErrorCode.OFFSET_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_ID,
                                    ErrorCode.INCONSISTENT_TOPIC_ID}
_RETRY_QUIETLY = {ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_SERVER_ERROR}


class OffsetOutOfRangeError(KafkaProtocolError):
    """``OFFSET_OUT_OF_RANGE`` with ``auto.offset.reset=none``: ``offsets`` = {partition: the position}."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, offsets: dict):
        self.offsets = offsets
        super().__init__(self.error_code, f"Fetch position out of range and no reset policy for partitions: {offsets}")


class Fetcher:
    def __init__(self, client, subscriptions: SubscriptionState, config):
        self.client = client
        self.subscriptions = subscriptions
        self.min_bytes = config["fetch.min.bytes"]
        self.max_bytes = config["fetch.max.bytes"]
        self.max_wait_ms = config["fetch.max.wait.ms"]
        self.partition_max_bytes = config["max.partition.fetch.bytes"]
        self.max_poll_records = config["max.poll.records"]
        self.check_crcs = config["check.crcs"]
        self.isolation_level = READ_COMMITTED if config["isolation.level"] == "read_committed" else READ_UNCOMMITTED
        self.completed: collections.deque[CompletedFetch] = collections.deque()
        self.next_in_line: Optional[CompletedFetch] = None
        self.in_flight: dict[int, asyncio.Task] = {}
        self.arrived = asyncio.Event()
        self.fetches_sent = 0

    # -- sending ---------------------------------------------------------------------------------------------
    def _buffered(self) -> set:
        out = {f.tp for f in self.completed}
        if self.next_in_line is not None and not self.next_in_line.consumed:
            out.add(self.next_in_line.tp)
        return out

    def fetchable_by_node(self) -> dict[int, list]:
        """node -> [(TopicPartition, fetch_offset)] for partitions we may fetch now (Java's prepareFetchRequests)."""
        cluster = self.client.metadata.cluster
        buffered = self._buffered()
        out: dict[int, list] = {}
        for tp in self.subscriptions.fetchable_partitions():
            if tp in buffered:
                continue
            leader = cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.client.metadata.add_topics(tp.topic)
                self.client.request_metadata_update()
                continue
            if leader in self.in_flight:
                continue
            out.setdefault(leader, []).append((tp, self.subscriptions.position(tp)))
        return out

    def build_request(self, partitions: list):
        cls = request_class(ApiKey.FETCH)
        cluster = self.client.metadata.cluster
        topics: dict[str, list] = {}
        for tp, offset in partitions:
            info = cluster.topics.get(tp.topic)
            p = info.partitions.get(tp.partition) if info else None
            topics.setdefault(tp.topic, []).append(cls.FetchPartition(
                partition=tp.partition, current_leader_epoch=p.leader_epoch if p else -1, fetch_offset=offset,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=self.partition_max_bytes))
        return cls(replica_id=-1, max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                   isolation_level=self.isolation_level, session_id=0, session_epoch=-1,
                   topics=tuple(cls.FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in topics.items()),
                   forgotten_topics_data=(), rack_id="")

    def send_fetches(self) -> int:
        """Send a FetchRequest to every leader with fetchable partitions and no fetch in flight."""
        sent = 0
        for node, partitions in self.fetchable_by_node().items():
            request = self.build_request(partitions)
            task = asyncio.ensure_future(self._fetch(node, request, dict(partitions),
                                                     self.subscriptions.assignment_id))
            self.in_flight[node] = task
            task.add_done_callback(lambda _t, n=node: self._fetch_done(n, _t))
            sent += 1
        self.fetches_sent += sent
        return sent

    def _fetch_done(self, node: int, task: asyncio.Task) -> None:
        if self.in_flight.get(node) is task:
            del self.in_flight[node]
        self.arrived.set()

    async def _fetch(self, node: int, request, offsets: dict, assignment_id: int) -> None:
        try:
            conn = await self.client.connection(node)
            version = conn.version_for(ApiKey.FETCH)
            response = await conn.send(fit(request, version), version)
        except (NetworkException, KafkaProtocolError, OSError):
            self.client.request_metadata_update()
            return
        self.handle_response(response.body, offsets)

    def handle_response(self, body, offsets: dict) -> None:
        """Queue one CompletedFetch per partition of a FetchResponse (``offsets``: tp -> offset asked for)."""
        if body.error_code:
            self.client.request_metadata_update()
            return
        for topic in body.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition_index)
                if tp not in offsets:
                    continue
                self.completed.append(CompletedFetch(
                    tp, offsets[tp], p.records if p.error_code == 0 else None,
                    isolation_level=self.isolation_level, aborted_transactions=p.aborted_transactions,
                    high_watermark=p.high_watermark, last_stable_offset=p.last_stable_offset,
                    log_start_offset=p.log_start_offset, check_crcs=self.check_crcs, error_code=p.error_code))

    # -- collecting ------------------------------------------------------------------------------------------
    def _initialize(self, fetch: CompletedFetch) -> Optional[CompletedFetch]:
        """Check the fetch still applies, and deal with its error (Java's initializeCompletedFetch)."""
        tp, subs = fetch.tp, self.subscriptions
        if not subs.is_fetchable(tp) or subs.position(tp) != fetch.fetch_offset:
            return None                                  # paused, revoked or sought meanwhile: drop it
        code = fetch.error_code
        if code == ErrorCode.NONE:
            subs.update_fetch_info(tp, high_watermark=fetch.high_watermark,
                                   last_stable_offset=fetch.last_stable_offset,
                                   log_start_offset=fetch.log_start_offset)
            return fetch
        if code in _REFRESH:
            self.client.request_metadata_update()
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if subs.default_reset_strategy == "none":
                raise OffsetOutOfRangeError({tp: fetch.fetch_offset})
            subs.request_offset_reset(tp)
        elif code not in _RETRY_QUIETLY:
            raise KafkaProtocolError(code, f"fetch of {tp} at offset {fetch.fetch_offset} failed")
        return None

    def has_buffered(self) -> bool:
        return bool(self.completed) or (self.next_in_line is not None and not self.next_in_line.consumed)

    def collect(self, max_records: Optional[int] = None) -> list:
        """Records for the application, at most ``max.poll.records``; moves positions past them."""
        budget = max_records or self.max_poll_records
        out: list = []
        while budget > 0:
            if self.next_in_line is None or self.next_in_line.consumed:
                if not self.completed:
                    break
                fetch = self.completed.popleft()
                self.next_in_line = self._initialize(fetch)
                continue
            fetch = self.next_in_line
            if not self.subscriptions.is_fetchable(fetch.tp) or \
                    self.subscriptions.position(fetch.tp) != fetch.next_fetch_offset:
                self.next_in_line = None              # paused or moved since: drop the rest
                continue
            records = fetch.drain(budget)
            if fetch.next_fetch_offset != self.subscriptions.position(fetch.tp):
                self.subscriptions.seek(fetch.tp, fetch.next_fetch_offset,
                                        fetch.last_epoch if fetch.last_epoch is not None else
                                        self.subscriptions.assignment[fetch.tp].leader_epoch)
            out.extend(records)
            budget -= len(records)
        return out

    def clear_buffer(self, partitions=None) -> None:
        """Drop buffered data (all, or of ``partitions``): after seek, pause or revocation."""
        if partitions is None:
            self.completed.clear()
            self.next_in_line = None
            return
        drop = {TopicPartition(*tp) for tp in partitions}
        self.completed = collections.deque(f for f in self.completed if f.tp not in drop)
        if self.next_in_line is not None and self.next_in_line.tp in drop:
            self.next_in_line = None

    async def close(self) -> None:
        """Wait for fetches in flight to end (call after the network client closed: they fail at once)."""
        if self.in_flight:
            await asyncio.gather(*list(self.in_flight.values()), return_exceptions=True)
