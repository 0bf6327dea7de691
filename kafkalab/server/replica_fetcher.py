"""Replica fetchers: how a follower copies its leader's log, after cutting off what diverged.

Theory of operation
-------------------
A follower is a consumer of a special kind. For each broker it follows partitions from, it runs one fetcher
(Kafka's ``ReplicaFetcherThread-<fetcher id>-<leader id>``; here an asyncio task) with one connection to the
leader's inter-broker listener (``clientId`` ``broker-<id>-fetcher-<fetcher id>``). Each partition it
fetches is in one of two states:

1. **Truncating.** A new follower (after every LeaderAndIsr that changed the leader or its epoch) may hold
   records the new leader never had -- written by an old leader and never committed. It asks the leader
   ``OffsetForLeaderEpoch(its latest leader epoch)``: "where did *my* last epoch end in *your* log?", and
   truncates to that offset (bounded by its own end) -- **not** to its high watermark, which could drop
   committed records (KIP-101). When the leader answers with an older epoch than asked (the follower's last
   epoch never reached the leader), the follower truncates to where *that* epoch ends in its own log and
   asks again (KIP-279).
2. **Fetching.** It sends Fetch with ``replica_id`` = its broker id, from its log end offset, waiting up to
   ``replica.fetch.wait.max.ms`` for at least ``replica.fetch.min.bytes``. It appends the returned batches
   *verbatim* -- offsets and leader epochs as the leader wrote them (the leader-epoch cache follows) -- and
   sets its high watermark to min(the leader's HW in the response, its own LEO). The next Fetch's offset tells
   the leader how far this follower got: that is how the leader learns followers' LEOs, the ISR and the HW.

Fetch requests use a fetch session (KIP-227) through a ``FetchSessionHandler``
(:mod:`kafkalab.server.fetch_session_handler`): the first names every partition, later ones only partitions whose fetch offset (or log
start offset, or leader epoch) moved, and the leader answers only partitions with news. A session error
(FETCH_SESSION_ID_NOT_FOUND after a leader restart, INVALID_FETCH_SESSION_EPOCH) makes the next request a
full one at once.

Errors back off for ``replica.fetch.backoff.ms``; a broken connection is re-opened on the next round. The
controller's next LeaderAndIsr moves partitions between fetchers (or stops fetching, for a new leader).

Versions: Fetch v11 and OffsetForLeaderEpoch v3 -- the pair a ZooKeeper-era broker used with the inter-broker
protocol 2.3-2.6, the releases in which leaders still wrote the ISR to ZooKeeper themselves (Fetch v12 later
let the leader report a ``diverging_epoch`` inside the fetch instead).

Mirrors: ``core/src/main/scala/kafka/server/ReplicaFetcherManager.scala``, ``AbstractFetcherManager.scala``,
``ReplicaFetcherThread.scala`` and ``AbstractFetcherThread.scala``.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from typing import Callable, Optional

from kafkalab.protocol import ApiKey, DecodeError, ErrorCode, request_class
from kafkalab.server.config import server_setting
from kafkalab.server.fetch_session_handler import FetchSessionHandler

__all__ = ["ReplicaFetcherManager", "ReplicaFetcherThread", "PartitionFetchState", "FETCH_VERSION",
           "OFFSET_FOR_LEADER_EPOCH_VERSION"]

log = logging.getLogger("kafkalab.server.ReplicaFetcherThread")

FETCH_VERSION = 11
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

FetchRequest = request_class(ApiKey.FETCH)
EpochRequest = request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)


class PartitionFetchState:
    __slots__ = ("fetch_offset", "current_leader_epoch", "truncating", "delayed_until_ms")

    def __init__(self, fetch_offset: int, current_leader_epoch: int, truncating: bool = True):
        self.fetch_offset = fetch_offset
        self.current_leader_epoch = current_leader_epoch
        self.truncating = truncating
        self.delayed_until_ms = 0

    def __repr__(self) -> str:
        state = "Truncating" if self.truncating else "Fetching"
        return f"({state} offset={self.fetch_offset} epoch={self.current_leader_epoch})"


class ReplicaFetcherThread:
    """Fetches every partition this broker follows from one source broker."""

    def __init__(self, broker_id: int, source_broker_id: int, host: str, port: int, replica_manager, config, *,
                 connect: Callable, fetcher_id: int = 0, time=None):
        self.broker_id = broker_id
        self.source_broker_id = source_broker_id
        self.host, self.port = host, port
        self.replica_manager = replica_manager
        self.time = time or replica_manager.time
        self.name = f"ReplicaFetcherThread-{fetcher_id}-{source_broker_id}"
        self.client_id = f"broker-{broker_id}-fetcher-{fetcher_id}"
        get = functools.partial(server_setting, config)
        self.max_wait_ms = int(get("replica.fetch.wait.max.ms"))
        self.min_bytes = int(get("replica.fetch.min.bytes"))
        self.max_bytes = int(get("replica.fetch.response.max.bytes"))
        self.partition_max_bytes = int(get("replica.fetch.max.bytes"))
        self.backoff_ms = int(get("replica.fetch.backoff.ms"))
        timeout = max(int(get("replica.socket.timeout.ms")), self.max_wait_ms + 1000)
        self.connection = connect(host, port, self.client_id, timeout)
        self.partitions: dict[tuple[str, int], PartitionFetchState] = {}
        self.fetches = 0
        self.last_request_partitions = 0
        self.session = FetchSessionHandler(source_broker_id)
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    def __repr__(self) -> str:
        return f"<{self.name} -> {self.host}:{self.port} partitions={self.partitions}>"

    # ------------------------------------------------------------------------------------------ partitions
    def add_partitions(self, states: dict[tuple[str, int], tuple[int, int]]) -> None:
        """``{tp: (leader_epoch, fetch_offset)}``: start in the truncating state."""
        for tp, (epoch, offset) in states.items():
            self.partitions[tp] = PartitionFetchState(offset, epoch, truncating=True)
        self._wakeup.set()

    def remove_partitions(self, tps) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)

    def shutdown(self) -> None:
        self._task.cancel()
        self.connection.close()

    # ------------------------------------------------------------------------------------------ the loop
    async def _run(self) -> None:
        while True:
            now = self.time.milliseconds()
            ready = {tp: s for tp, s in self.partitions.items() if s.delayed_until_ms <= now}
            if not ready:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), self.backoff_ms / 1000.0 if self.partitions else None)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                truncating = {tp: s for tp, s in ready.items() if s.truncating}
                if truncating:
                    await self._truncate(truncating)
                fetching = {tp: s for tp, s in ready.items() if not s.truncating and self.partitions.get(tp) is s}
                if fetching:
                    await self._fetch(fetching)
            except asyncio.CancelledError:
                raise
            except (ConnectionError, OSError, asyncio.TimeoutError, DecodeError) as e:
                log.info("[%s] error talking to broker %s: %s; backing off %d ms", self.name, self.source_broker_id,
                         e, self.backoff_ms)
                self.connection.close()
                await asyncio.sleep(self.backoff_ms / 1000.0)
            except Exception:
                log.exception("[%s] unexpected error", self.name)
                await asyncio.sleep(self.backoff_ms / 1000.0)

    def _delay(self, state: PartitionFetchState) -> None:
        state.delayed_until_ms = self.time.milliseconds() + self.backoff_ms

    # ------------------------------------------------------------------------------------------ truncation
    async def _truncate(self, states: dict) -> None:
        by_topic: dict[str, list] = {}
        asked = {}
        for tp, s in states.items():
            p = self.replica_manager.get_partition(*tp)
            if p is None or p.log is None:
                self.partitions.pop(tp, None)
                continue
            epoch = p.log.latest_epoch
            if epoch is None:  # no epoch known: nothing written under any leader -- keep everything
                self._truncation_done(tp, s, p, p.log.log_end_offset)
                continue
            asked[tp] = epoch
            by_topic.setdefault(tp[0], []).append(EpochRequest.OffsetForLeaderPartition(
                partition=tp[1], current_leader_epoch=s.current_leader_epoch, leader_epoch=epoch))
        if not by_topic:
            return
        body = EpochRequest(replica_id=self.broker_id, topics=tuple(
            EpochRequest.OffsetForLeaderTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
        response = await self.connection.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body)
        for t in response.topics:
            for r in t.partitions:
                tp = (t.topic, r.partition)
                s = states.get(tp)
                p = self.replica_manager.get_partition(*tp)
                if s is None or self.partitions.get(tp) is not s or p is None or p.log is None:
                    continue  # moved meanwhile (a newer LeaderAndIsr)
                if r.error_code != ErrorCode.NONE:
                    log.info("[%s] OffsetForLeaderEpoch of %s-%s: %s", self.name, *tp, ErrorCode(r.error_code).name)
                    self._delay(s)
                    continue
                self._apply_truncation(tp, s, p, r.leader_epoch, r.end_offset)

    def _apply_truncation(self, tp, s: PartitionFetchState, p, leader_epoch: int, leader_end_offset: int) -> None:
        """Kafka's ``getOffsetTruncationState`` (KIP-101, KIP-279)."""
        log_ = p.log
        replica_end = log_.log_end_offset
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            self._truncation_done(tp, s, p, log_.high_watermark)   # the leader knows no such epoch
            return
        if leader_epoch == UNDEFINED_EPOCH:
            self._truncation_done(tp, s, p, min(leader_end_offset, replica_end))
            return
        follower_epoch, follower_end = log_.end_offset_for_epoch(leader_epoch)
        if follower_epoch == UNDEFINED_EPOCH:
            self._truncation_done(tp, s, p, min(leader_end_offset, replica_end))
        elif follower_epoch != leader_epoch:
            # The leader's answer is about an epoch this follower does not have: go back to where our
            # latest epoch below it ends, and ask again with that epoch.
            offset = min(follower_end, replica_end)
            if log_.truncate_to(offset):
                log.info("[%s] truncated %s-%s to %d (epoch %d unknown here); asking again", self.name, *tp,
                         offset, leader_epoch)
            s.fetch_offset = log_.log_end_offset
        else:
            self._truncation_done(tp, s, p, min(leader_end_offset, replica_end))

    def _truncation_done(self, tp, s: PartitionFetchState, p, offset: int) -> None:
        if offset < p.log.log_end_offset:
            log.info("[%s] truncating %s-%s from %d to %d (leader epoch %d)", self.name, *tp,
                     p.log.log_end_offset, offset, s.current_leader_epoch)
            p.log.truncate_to(offset)
        s.fetch_offset = p.log.log_end_offset
        s.truncating = False

    # ------------------------------------------------------------------------------------------ fetching
    async def _fetch(self, states: dict) -> None:
        wanted = {}
        for tp, s in states.items():
            p = self.replica_manager.get_partition(*tp)
            if p is None or p.log is None:
                self.partitions.pop(tp, None)
                continue
            wanted[tp] = FetchRequest.FetchPartition(
                partition=tp[1], current_leader_epoch=s.current_leader_epoch, fetch_offset=s.fetch_offset,
                log_start_offset=p.log.log_start_offset, partition_max_bytes=self.partition_max_bytes)
        if not wanted:
            return
        request = self.session.build(wanted)
        by_topic: dict[str, list] = {}
        for tp, data in request.to_send.items():
            by_topic.setdefault(tp[0], []).append(data)
        forgotten: dict[str, list] = {}
        for topic, partition in request.to_forget:
            forgotten.setdefault(topic, []).append(partition)
        body = FetchRequest(replica_id=self.broker_id, max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes,
                            max_bytes=self.max_bytes, isolation_level=0, session_id=request.session_id,
                            session_epoch=request.session_epoch,
                            topics=tuple(FetchRequest.FetchTopic(topic=t, partitions=tuple(ps))
                                         for t, ps in by_topic.items()),
                            forgotten_topics_data=tuple(FetchRequest.ForgottenTopic(topic=t, partitions=tuple(ps))
                                                        for t, ps in forgotten.items()), rack_id="")
        try:
            response = await self.connection.send(ApiKey.FETCH, FETCH_VERSION, body)
        except BaseException:
            self.session.handle_error()
            raise
        self.fetches += 1
        self.last_request_partitions = len(request.to_send)
        if not self.session.handle_response(response.error_code, response.session_id):
            if response.error_code in _SESSION_ERRORS:   # the next request is a full one: no back-off
                log.info("[%s] fetch session %d: %s; sending a full fetch request", self.name, request.session_id,
                         ErrorCode(response.error_code).name)
                return
            raise ConnectionError(f"fetch failed: {ErrorCode(response.error_code).name}")
        rm = self.replica_manager
        for t in response.responses:
            for r in t.partitions:
                tp = (t.topic, r.partition_index)
                s = states.get(tp)
                p = rm.get_partition(*tp)
                if s is None or self.partitions.get(tp) is not s or p is None or p.log is None or s.truncating:
                    continue
                if r.error_code == ErrorCode.NONE:
                    records = r.records
                    if records and p.log.log_end_offset == s.fetch_offset:
                        p.append_records_to_follower(records)
                        s.fetch_offset = p.log.log_end_offset
                        rm.try_complete_delayed(tp, produce=False, fetch=True)
                    p.update_follower_high_watermark(r.high_watermark)
                elif r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    log.info("[%s] %s-%s: offset %d out of range at the leader; truncating again", self.name, *tp,
                             s.fetch_offset)
                    s.truncating = True
                    self._delay(s)
                else:
                    log.info("[%s] fetch of %s-%s: %s", self.name, *tp, ErrorCode(r.error_code).name)
                    self._delay(s)


class ReplicaFetcherManager:
    """One fetcher per source broker (``num.replica.fetchers`` = 1). ``connect(host, port, client_id,
    timeout_ms)`` opens a connection (the broker passes the inter-broker client)."""

    def __init__(self, broker_id: int, replica_manager, config, connect: Callable):
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.config = config
        self.connect = connect
        self.fetchers: dict[int, ReplicaFetcherThread] = {}

    def add_fetcher_for_partitions(self, partitions: dict, live_leaders: dict) -> None:
        """``{tp: (leader_id, leader_epoch, fetch_offset)}``; ``live_leaders``: id -> (host, port)."""
        by_leader: dict[int, dict] = {}
        for tp, (leader, epoch, offset) in partitions.items():
            by_leader.setdefault(leader, {})[tp] = (epoch, offset)
        for leader, states in by_leader.items():
            endpoint = live_leaders.get(leader) or self._endpoint(leader)
            if endpoint is None:
                log.warning("broker %s: no endpoint for leader %s; not fetching %s", self.broker_id, leader,
                            sorted(states))
                continue
            fetcher = self.fetchers.get(leader)
            if fetcher is not None and (fetcher.host, fetcher.port) != tuple(endpoint):
                old = fetcher.partitions
                fetcher.shutdown()
                fetcher = None
                states = {**{tp: (s.current_leader_epoch, s.fetch_offset) for tp, s in old.items()}, **states}
            if fetcher is None:
                fetcher = self.fetchers[leader] = ReplicaFetcherThread(
                    self.broker_id, leader, endpoint[0], endpoint[1], self.replica_manager, self.config,
                    connect=self.connect)
            fetcher.add_partitions(states)

    def _endpoint(self, broker_id: int) -> Optional[tuple[str, int]]:
        cache = self.replica_manager.metadata_cache
        lookup = getattr(cache, "broker_endpoint", None)
        return lookup(broker_id) if lookup is not None else None

    def remove_fetcher_for_partitions(self, tps) -> None:
        tps = list(tps)
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(tps)
        self.shutdown_idle_fetcher_threads()

    def shutdown_idle_fetcher_threads(self) -> None:
        for leader, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                fetcher.shutdown()
                del self.fetchers[leader]

    def fetch_state(self, tp) -> Optional[PartitionFetchState]:
        for fetcher in self.fetchers.values():
            if tp in fetcher.partitions:
                return fetcher.partitions[tp]
        return None

    def shutdown(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.shutdown()
        self.fetchers.clear()
