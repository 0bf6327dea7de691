"""The consumer's group membership: subscriptions in, partitions out, and offsets committed to the group.

Theory of operation
-------------------
:mod:`.abstract_coordinator` moves opaque bytes through JoinGroup/SyncGroup; this class says what they are for
``protocol_type="consumer"``:

* **JoinGroup metadata**: one entry per assignor of ``partition.assignment.strategy`` (Java's default: range,
  then cooperative-sticky), each a ``ConsumerProtocolSubscription`` with the subscribed topics, the partitions
  this member owns now, its generation and ``client.rack``. The coordinator picks the first assignor every
  member lists.
* **The leader** decodes everyone's subscription, fetches metadata for all their topics and runs the chosen
  assignor (:mod:`.assignors`); the result goes back in SyncGroup, one ``ConsumerProtocolAssignment`` per member.

**Eager or cooperative.** The rebalance protocol is the best one *every* configured assignor supports: with
the default list, ``range`` only knows EAGER, so the group rebalances eagerly -- every member revokes all its
partitions before it rejoins. With only ``cooperative-sticky`` it is COOPERATIVE (KIP-429): members keep their
partitions through the rebalance, give up only what the new assignment takes away, and rejoin at once when
they gave up something, so that partition can be handed to its new owner in a second round.
:meth:`revoked_before_join` and :meth:`plan_assignment` compute which partitions the rebalance listener hears
about (``on_partitions_revoked`` / ``on_partitions_assigned`` / ``on_partitions_lost`` -- lost when the member
was thrown out of the group and can no longer commit for them).

**Offsets.** ``commit()`` sends OffsetCommit to the coordinator with the current generation and member id, so
a member that was thrown out cannot overwrite the new owner's progress: the coordinator answers
``ILLEGAL_GENERATION`` / ``UNKNOWN_MEMBER_ID`` and the commit fails (:class:`CommitFailedError`). A consumer
using ``assign()`` with a ``group.id`` commits as generation -1 with no member id. OffsetFetch reads committed
offsets back: that is where a partition newly assigned starts (``require_stable``: wait until pending
transactional offset commits are resolved). With ``enable.auto.commit`` the consumer commits its positions
every ``auto.commit.interval.ms`` during ``poll()``, before a rebalance revokes partitions, and on ``close()``.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerCoordinator.java``.
"""
from __future__ import annotations

import asyncio

from kafkalab.clients.consumer.abstract_coordinator import AbstractCoordinator, MemberState
from kafkalab.clients.consumer.assignors import (RebalanceProtocol, Subscription, TopicPartition, decode_assignment,
                                                 decode_subscription, encode_assignment, encode_subscription,
                                                 get_assignors)
from kafkalab.clients.consumer.group_metadata import ConsumerGroupMetadata
from kafkalab.clients.consumer.subscription_state import OffsetAndMetadata, SubscriptionState
from kafkalab.clients.errors import KafkaTimeoutError, NetworkException
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class

__all__ = ["ConsumerCoordinator", "CommitFailedError"]


class CommitFailedError(KafkaProtocolError):
    """Java's ``CommitFailedException``: the group rebalanced (or threw us out) before the commit, so the
    partitions may belong to someone else; retrying cannot help. ``error_code`` is what the coordinator
    answered (``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``, ``FENCED_INSTANCE_ID``), or ``UNKNOWN_MEMBER_ID``
    when the consumer did not even send the commit because it had already left the group (after
    ``max.poll.interval.ms``, for example) and so has no member id to commit with."""

    retriable = False

    def __init__(self, code: int, message: str = ""):
        super().__init__(code, message or
                         "Commit cannot be completed since the group has already rebalanced and assigned the "
                         "partitions to another member. This means that the time between subsequent calls to "
                         "poll() was longer than the configured max.poll.interval.ms, which typically implies "
                         "that the poll loop is spending too much time message processing. You can address this "
                         "either by increasing max.poll.interval.ms or by reducing the maximum size of batches "
                         "returned in poll() with max.poll.records.")


#: the consumer is not in the group and knows it (Java's ``sendOffsetCommitRequest``): nothing is sent
NOT_IN_ACTIVE_GROUP = ("Offset commit cannot be completed since the consumer is not part of an active group for "
                       "auto partition assignment; it is likely that the consumer was kicked out of the group.")
#: Java's ``RebalanceInProgressException`` messages: retry after ``poll()`` has completed the rebalance
REBALANCING_HERE = ("Offset commit cannot be completed since the consumer is undergoing a rebalance for auto "
                    "partition assignment. You can try completing the rebalance by calling poll() and then retry "
                    "the operation.")
REBALANCING_THERE = ("Offset commit cannot be completed since the consumer group is executing a rebalance at the "
                     "moment. You can try completing the rebalance by calling poll() and then retry commit again.")


_FATAL_COMMIT = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID}
_RETRY = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
          ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


class ConsumerCoordinator(AbstractCoordinator):
    def __init__(self, client, config, subscriptions: SubscriptionState):
        super().__init__(client, config)
        self.subscriptions = subscriptions
        self.assignors = get_assignors(config["partition.assignment.strategy"])
        common = set(RebalanceProtocol)
        for a in self.assignors:
            common &= set(a.supported_protocols())
        if not common:
            raise ValueError("partition.assignment.strategy: the assignors share no rebalance protocol")
        self.protocol = max(common)                     # COOPERATIVE when everyone can
        self.rack = config["client.rack"] or None
        self.auto_commit = config["enable.auto.commit"]
        self.auto_commit_interval_ms = config["auto.commit.interval.ms"]
        self.next_auto_commit_ms = client.now_ms() + self.auto_commit_interval_ms
        self.assigned_counts: dict[str, int] = {}      # leader: partition counts the assignment was built on
        self.is_leader = False
        self.pending_commits: set = set()
        #: the member's identity after the last completed rebalance (Java's ``groupMetadata``)
        self.group_metadata = ConsumerGroupMetadata(self.group_id, group_instance_id=self.group_instance_id)

    # -- JoinGroup / SyncGroup -------------------------------------------------------------------------------
    def join_metadata(self) -> list:
        self.is_leader = False                          # until the JoinGroup answer says otherwise
        topics = sorted(self.subscriptions.subscription)
        owned = sorted(self.subscriptions.assigned_partitions())
        return [(a.name, encode_subscription(Subscription(
            topics=topics, user_data=a.subscription_user_data(topics), owned_partitions=owned,
            generation_id=self.generation.generation_id, rack_id=self.rack))) for a in self.assignors]

    def assignor(self, name: str):
        for a in self.assignors:
            if a.name == name:
                return a
        raise KafkaProtocolError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"the coordinator chose assignor {name!r}, which this consumer does not have")

    async def perform_assignment(self, leader_id: str, protocol: str, members: list) -> dict:
        subscriptions = {m.member_id: decode_subscription(m.metadata, m.group_instance_id) for m in members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        self.subscriptions.group_subscription |= set(topics)
        self.client.metadata.add_topics(*topics)
        cluster = await self.client.update_metadata(self.client.metadata.request_topics())
        counts = {t: cluster.partition_count(t) or 0 for t in topics}
        self.assigned_counts = counts
        self.is_leader = True
        plan = self.assignor(protocol).assign(subscriptions, counts)
        return {m: encode_assignment(a) for m, a in plan.items()}

    # -- what the rebalance listener hears -------------------------------------------------------------------
    def revoked_before_join(self) -> tuple[str, list]:
        """Before JoinGroup (Java's onJoinPrepare): ("lost" | "revoked", partitions) to take away now."""
        owned = sorted(self.subscriptions.assigned_partitions())
        if not owned:
            return "revoked", []
        if self.generation.generation_id < 0 and not self.generation.member_id:
            return "lost", owned                       # thrown out: someone else may own them already
        if self.protocol is RebalanceProtocol.EAGER:
            return "revoked", owned
        gone = [tp for tp in owned if tp.topic not in self.subscriptions.subscription and
                not self.subscriptions.matches(tp.topic)]
        return "revoked", gone

    def plan_assignment(self, generation, protocol: str, data: bytes) -> tuple[list, list, list]:
        """After SyncGroup: (assigned, revoked, added). Revoked partitions are still ours until
        :meth:`install_assignment`, so the listener can commit them first."""
        assignment = decode_assignment(data) if data else None
        assigned = [] if assignment is None else list(dict.fromkeys(assignment.partitions))
        owned = self.subscriptions.assigned_partitions()
        revoked = sorted(tp for tp in owned if tp not in set(assigned))
        added = sorted(tp for tp in assigned if tp not in owned)
        if assignment is not None:
            self.assignor(protocol).on_assignment(assignment, generation.generation_id)
        self.group_metadata = ConsumerGroupMetadata(self.group_id, generation.generation_id, generation.member_id,
                                                    self.group_instance_id)
        if not self.is_leader:
            self.assigned_counts = {}
        return assigned, revoked, added

    def install_assignment(self, assigned: list, revoked: list) -> None:
        self.subscriptions.assign_from_subscribed(assigned)
        if self.protocol is RebalanceProtocol.COOPERATIVE and revoked:
            self.request_rejoin("partitions were revoked: rejoin so they can be reassigned")

    def metadata_changed(self) -> bool:
        """Leader only: did a subscribed topic's partition count change since we assigned?"""
        cluster = self.client.metadata.cluster
        return any((cluster.partition_count(t) or 0) != n for t, n in self.assigned_counts.items()
                   if t in cluster.topics)

    # -- commits ---------------------------------------------------------------------------------------------
    def _generation_for_commit(self):
        if self.subscriptions.has_auto_assigned_partitions():
            if self.state is not MemberState.STABLE:
                return None
            return self.generation
        return None

    async def commit_offsets(self, offsets: dict, timeout_ms: float) -> None:
        """OffsetCommit ``{tp: OffsetAndMetadata}``; retries coordinator errors until ``timeout_ms``."""
        if not offsets:
            return
        deadline = self.client.now_ms() + timeout_ms
        while True:
            try:
                await self.ensure_coordinator_ready(max(0.0, deadline - self.client.now_ms()))
                await self._commit_once(offsets)
                return
            except (NetworkException, KafkaProtocolError) as e:
                if isinstance(e, CommitFailedError) or (isinstance(e, KafkaProtocolError)
                                                         and e.error_code not in _RETRY and not e.retriable):
                    raise
                if self.client.now_ms() >= deadline:
                    raise KafkaTimeoutError(f"Timeout of {timeout_ms:.0f} ms expired before offsets could be "
                                            f"committed: {e}") from None
                await self.client.waits.sleep(self.retry_backoff_s * 1000)

    async def _commit_once(self, offsets: dict) -> None:
        cls = request_class(ApiKey.OFFSET_COMMIT)
        if self.subscriptions.has_auto_assigned_partitions():
            g = self._generation_for_commit()
            if g is None:                              # not part of an active group: fail without sending
                if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
                    raise KafkaProtocolError(ErrorCode.REBALANCE_IN_PROGRESS, REBALANCING_HERE)
                raise CommitFailedError(ErrorCode.UNKNOWN_MEMBER_ID, NOT_IN_ACTIVE_GROUP)
            generation_id, member_id, instance = g.generation_id, g.member_id, self.group_instance_id
        else:
            generation_id, member_id, instance = -1, "", None
        topics: dict[str, list] = {}
        for tp, om in sorted(offsets.items()):
            om = om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om))
            topics.setdefault(tp.topic, []).append(cls.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                committed_metadata=om.metadata or ""))
        body = cls(group_id=self.group_id, generation_id_or_member_epoch=generation_id, member_id=member_id,
                   group_instance_id=instance, retention_time_ms=-1,
                   topics=tuple(cls.OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()))
        resp = await self.send_to_coordinator(body)
        failed = None
        for t in resp.body.topics:
            for p in t.partitions:
                code = p.error_code
                if code == ErrorCode.NONE:
                    continue
                if code in _COORDINATOR_ERRORS_SET:
                    self.mark_coordinator_unknown(f"OffsetCommit: {ErrorCode(code).name}")
                if code == ErrorCode.REBALANCE_IN_PROGRESS:      # the member stays; poll() rejoins
                    self.request_rejoin("OffsetCommit: the group is rebalancing")
                    raise KafkaProtocolError(code, REBALANCING_THERE)
                if code in _FATAL_COMMIT:
                    self.reset_generation(f"OffsetCommit: {ErrorCode(code).name}")
                    raise CommitFailedError(code)
                failed = failed or KafkaProtocolError(code, f"OffsetCommit for {t.name}-{p.partition_index}")
        if failed is not None:
            raise failed

    def commit_async(self, offsets: dict, callback=None) -> asyncio.Task:
        """Fire an OffsetCommit without waiting; ``callback(offsets, exception or None)`` on the I/O thread."""
        async def go():
            error = None
            try:
                await self.ensure_coordinator_ready(self.request_timeout_ms)
                await self._commit_once(offsets)
            except (NetworkException, KafkaProtocolError) as e:
                error = e
            if callback is not None:
                try:
                    callback(offsets, error)
                except Exception:  # noqa: BLE001 -- a broken callback never breaks the consumer
                    pass
            return error
        task = asyncio.ensure_future(go())
        self.pending_commits.add(task)
        task.add_done_callback(self.pending_commits.discard)
        return task

    async def maybe_auto_commit(self) -> None:
        """Java's maybeAutoCommitOffsetsAsync: every ``auto.commit.interval.ms``, asynchronously."""
        if not self.auto_commit or self.client.now_ms() < self.next_auto_commit_ms:
            return
        self.next_auto_commit_ms = self.client.now_ms() + self.auto_commit_interval_ms
        if self.coordinator is None or (self.subscriptions.has_auto_assigned_partitions()
                                        and self.state is not MemberState.STABLE):
            return
        consumed = self.subscriptions.all_consumed()
        if consumed:
            self.commit_async(consumed)

    def time_to_next_auto_commit_ms(self) -> float:
        if not self.auto_commit:
            return float("inf")
        return max(0.0, self.next_auto_commit_ms - self.client.now_ms())

    async def flush_commits(self) -> None:
        if self.pending_commits:
            await asyncio.gather(*list(self.pending_commits), return_exceptions=True)

    # -- committed offsets -----------------------------------------------------------------------------------
    async def fetch_committed_offsets(self, partitions, timeout_ms: float) -> dict:
        """OffsetFetch: ``{tp: OffsetAndMetadata | None}``; retries coordinator errors until ``timeout_ms``."""
        partitions = sorted(TopicPartition(*tp) for tp in partitions)
        if not partitions:
            return {}
        deadline = self.client.now_ms() + timeout_ms
        while True:
            try:
                await self.ensure_coordinator_ready(max(0.0, deadline - self.client.now_ms()))
                return await self._offset_fetch_once(partitions)
            except (NetworkException, KafkaProtocolError) as e:
                if isinstance(e, KafkaProtocolError) and e.error_code not in _RETRY and not e.retriable:
                    raise
                if self.client.now_ms() >= deadline:
                    raise KafkaTimeoutError(f"Timeout of {timeout_ms:.0f} ms expired before the committed "
                                            f"offsets of {partitions} could be fetched: {e}") from None
                await self.client.waits.sleep(self.retry_backoff_s * 1000)

    async def _offset_fetch_once(self, partitions: list) -> dict:
        cls = request_class(ApiKey.OFFSET_FETCH)
        await self.ensure_coordinator_ready(self.request_timeout_ms)
        version = await self.api_version(ApiKey.OFFSET_FETCH)
        by_topic: dict[str, list] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if version >= 8:
            body = cls(groups=(cls.OffsetFetchRequestGroup(group_id=self.group_id, topics=tuple(
                cls.OffsetFetchRequestTopics(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())),),
                require_stable=True)
        else:
            body = cls(group_id=self.group_id, require_stable=True, topics=tuple(
                cls.OffsetFetchRequestTopic(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items()))
        resp = await self.send_to_coordinator(body, version)
        b = resp.body
        if version >= 8:
            group = b.groups[0]
            code, topics = group.error_code, group.topics
        else:
            code, topics = b.error_code, b.topics
        if code:
            if code in _COORDINATOR_ERRORS_SET:
                self.mark_coordinator_unknown(f"OffsetFetch: {ErrorCode(code).name}")
            raise KafkaProtocolError(code, f"OffsetFetch of group {self.group_id!r}")
        out: dict = {tp: None for tp in partitions}
        for t in topics:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaProtocolError(p.error_code, f"OffsetFetch for {t.name}-{p.partition_index}")
                tp = TopicPartition(t.name, p.partition_index)
                if p.committed_offset >= 0:
                    epoch = p.committed_leader_epoch
                    out[tp] = OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch if epoch >= 0 else None)
        return out


_COORDINATOR_ERRORS_SET = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
