"""Offsets by time: ListOffsets for ``auto.offset.reset``, ``seek_to_beginning/end`` and ``offsets_for_times``.

Theory of operation
-------------------
A position can come from three places: the application (``seek``), the group (the committed offset, see
:mod:`.consumer_coordinator`), or the log itself. The last one is asked with **ListOffsets**, sent to each
partition's leader, with a "timestamp" that is either a real time in ms or a special value:

* ``-2`` EARLIEST -- the log start offset (``auto.offset.reset=earliest``, ``seek_to_beginning``);
* ``-1`` LATEST -- the high watermark, or with ``isolation.level=read_committed`` the last stable offset
  (``auto.offset.reset=latest``, ``seek_to_end``);
* ``t >= 0`` -- the first offset whose timestamp is ``>= t`` (``offsets_for_times``), answered from the
  segments' time indexes; offset -1 when no record is that new.

Resetting is lazy, as in Java: ``seek_to_beginning`` only marks the partition, and the next ``poll()`` (or
``position()``) sends the ListOffsets. If the partition was sought elsewhere in the meantime, the answer is
ignored. Stale-metadata errors refresh the cache and retry.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/OffsetFetcher.java`` and
``OffsetsForLeaderEpochUtils`` (not needed: kafkalab does not validate positions after a leader change).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.consumer.subscription_state import SubscriptionState
from kafkalab.clients.errors import KafkaTimeoutError, NetworkException
from kafkalab.clients.metadata import STALE_METADATA_ERRORS
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class

__all__ = ["OffsetFetcher", "OffsetAndTimestamp", "EARLIEST", "LATEST"]

EARLIEST, LATEST = -2, -1
_STRATEGY = {"earliest": EARLIEST, "latest": LATEST}


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: Optional[int] = None


class OffsetFetcher:
    def __init__(self, client, subscriptions: SubscriptionState, config):
        self.client = client
        self.subscriptions = subscriptions
        self.isolation_level = 1 if config["isolation.level"] == "read_committed" else 0
        self.retry_backoff_s = config["retry.backoff.ms"] / 1000

    async def list_offsets(self, timestamps: dict, timeout_ms: float) -> dict:
        """``{tp: timestamp}`` -> ``{tp: OffsetAndTimestamp | None}``, retrying stale metadata until the deadline."""
        deadline = self.client.now_ms() + timeout_ms
        todo = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        result: dict = {}
        self.client.metadata.add_topics(*{tp.topic for tp in todo})
        while todo:
            cluster = self.client.metadata.cluster
            by_leader: dict[int, dict] = {}
            unknown = False
            for tp, ts in todo.items():
                leader = cluster.leader_for(tp.topic, tp.partition)
                if leader is None:
                    unknown = True
                else:
                    by_leader.setdefault(leader, {})[tp] = ts
            retry = unknown
            for leader, wanted in by_leader.items():
                try:
                    answered = await self._send(leader, wanted)
                except NetworkException:
                    retry = True
                    continue
                for tp, (code, found) in answered.items():
                    if code == ErrorCode.NONE:
                        result[tp] = found
                        todo.pop(tp, None)
                    elif code in STALE_METADATA_ERRORS or code == ErrorCode.OFFSET_NOT_AVAILABLE:
                        retry = True
                    else:
                        raise KafkaProtocolError(code, f"ListOffsets for {tp}")
            if not todo:
                break
            if self.client.now_ms() >= deadline:
                raise KafkaTimeoutError(f"Failed to get offsets by times in {timeout_ms:.0f} ms for {sorted(todo)}")
            if retry:
                await self.client.waits.sleep(self.retry_backoff_s * 1000)
                try:
                    await self.client.update_metadata(self.client.metadata.request_topics())
                except NetworkException:
                    pass
        return result

    async def _send(self, leader: int, wanted: dict) -> dict:
        cls = request_class(ApiKey.LIST_OFFSETS)
        cluster = self.client.metadata.cluster
        topics: dict[str, list] = {}
        for tp, ts in wanted.items():
            p = cluster.topics[tp.topic].partitions.get(tp.partition)
            topics.setdefault(tp.topic, []).append(cls.ListOffsetsPartition(
                partition_index=tp.partition, timestamp=ts, current_leader_epoch=p.leader_epoch if p else -1))
        body = cls(replica_id=-1, isolation_level=self.isolation_level,
                   topics=tuple(cls.ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()))
        conn = await self.client.connection(leader)
        version = conn.version_for(ApiKey.LIST_OFFSETS)
        response = await conn.send(fit(body, version), version)
        out = {}
        for t in response.body.topics:
            for p in t.partitions:
                epoch = getattr(p, "leader_epoch", -1)
                found = None if p.offset < 0 else OffsetAndTimestamp(p.offset, p.timestamp,
                                                                     epoch if epoch >= 0 else None)
                out[TopicPartition(t.name, p.partition_index)] = (p.error_code, found)
        return out

    async def reset_positions(self, timeout_ms: float) -> None:
        """Resolve every pending reset (``auto.offset.reset``, ``seek_to_beginning/end``) with ListOffsets."""
        pending = {tp: self.subscriptions.assignment[tp].reset_strategy
                   for tp in self.subscriptions.partitions_needing_reset()}
        if not pending:
            return
        found = await self.list_offsets({tp: _STRATEGY[s] for tp, s in pending.items()}, timeout_ms)
        for tp, strategy in pending.items():
            state = self.subscriptions.assignment.get(tp)
            if state is None or state.reset_strategy != strategy or found.get(tp) is None:
                continue                      # revoked or sought meanwhile
            self.subscriptions.seek(tp, found[tp].offset, found[tp].leader_epoch)
