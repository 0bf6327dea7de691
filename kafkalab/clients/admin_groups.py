"""The admin client's consumer-group operations: list, describe, delete groups; read, alter, delete their offsets.

Theory of operation
-------------------
Groups are not kept by the controller but by the **group coordinators**, spread over the brokers: each group
belongs to the broker leading the ``__consumer_offsets`` partition its id hashes to. So:

=================================  ========================  ==================================================
method                             request                   sent to
=================================  ========================  ==================================================
list_consumer_groups               ListGroups                *every* broker (each knows only its own groups)
describe_consumer_groups           DescribeGroups            each group's coordinator (FindCoordinator first)
delete_consumer_groups             DeleteGroups              each group's coordinator (the group must be empty)
list_consumer_group_offsets        OffsetFetch               the group's coordinator
alter_consumer_group_offsets       OffsetCommit              the group's coordinator, as generation -1 with no
                                                             member id -- accepted only while the group is empty
delete_consumer_group_offsets      OffsetDelete              the group's coordinator
=================================  ========================  ==================================================

DescribeGroups returns each member's JoinGroup metadata and SyncGroup assignment as opaque bytes; for
``protocol_type == "consumer"`` they are decoded with the consumer protocol (:mod:`.consumer.assignors.protocol`),
so the description shows which partitions each member owns.

**Who does what.** :class:`ConsumerGroupOperations` is a collaborator owned by the admin client
(``admin.groups``): it builds and sends the group requests through the network client and the two coroutines
it is given (find a coordinator, refresh metadata); the admin's blocking methods of the table above run its
coroutines under the admin's timeout.

Mirrors ``KafkaAdminClient``'s group calls and ``clients/.../admin/internals/{ListConsumerGroupOffsetsHandler,
DescribeConsumerGroupsHandler,DeleteConsumerGroupsHandler,AlterConsumerGroupOffsetsHandler,
DeleteConsumerGroupOffsetsHandler}.java``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Awaitable, Callable, Optional

from kafkalab.clients.consumer.assignors.protocol import (PROTOCOL_TYPE, TopicPartition, decode_assignment,
                                                          decode_subscription)
from kafkalab.clients.consumer.subscription_state import OffsetAndMetadata
from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiKey, DecodeError, ErrorCode, request_class

__all__ = ["ConsumerGroupOperations", "ConsumerGroupListing", "ConsumerGroupDescription", "MemberDescription"]


@dataclasses.dataclass(frozen=True)
class ConsumerGroupListing:
    group_id: str
    protocol_type: str
    state: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    host: str
    assignment: list                 # [TopicPartition] (consumer groups)
    topics: list                     # the member's subscription (consumer groups)


@dataclasses.dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    partition_assignor: str          # the chosen protocol name, e.g. "range"
    members: list
    coordinator: int


_RETRY = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def _decode_member(m, consumer: bool) -> MemberDescription:
    assignment, topics = [], []
    if consumer:
        try:
            if m.member_assignment:
                assignment = decode_assignment(m.member_assignment).partitions
            if m.member_metadata:
                topics = decode_subscription(m.member_metadata).topics
        except DecodeError:
            pass
    return MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host, assignment, topics)


class ConsumerGroupOperations:
    """The group operations of one :class:`~kafkalab.clients.admin.Admin`, which owns it (``admin.groups``) and
    forwards its blocking ``*_consumer_group*`` methods to these coroutines, run on its own I/O thread.

    ``client`` the admin's :class:`~kafkalab.clients.network_client.NetworkClient`; ``retries`` how often a group
    request is sent again after NOT_COORDINATOR & co (at most 10); ``find_coordinator(key, key_type)`` a
    coroutine returning the coordinator's node id; ``metadata()`` a coroutine refreshing the cluster view.
    """

    def __init__(self, client, *, retries: int, find_coordinator: Callable[[str, int], Awaitable[int]],
                 metadata: Callable[[], Awaitable[Any]]):
        self.client = client
        self._retries = retries
        self._find_coordinator = find_coordinator
        self._metadata = metadata

    async def _group_send(self, group_id: str, body):
        """Send to the group's coordinator; rediscover it and retry on NOT_COORDINATOR & co."""
        for _attempt in range(max(1, min(self._retries, 10))):
            node = await self._find_coordinator(group_id, 0)
            conn = await self.client.connection(node)
            version = conn.version_for(body.API_KEY)
            resp = await conn.send(fit(body, version), version)
            code = getattr(resp.body, "error_code", 0)
            if code not in _RETRY:
                return node, version, resp.body
        raise KafkaProtocolError(code, f"the coordinator of group {group_id!r} kept failing")

    async def list_groups(self) -> list:
        cluster = await self._metadata()
        out, errors = {}, {}
        for node in sorted(cluster.brokers):
            resp = await self.client.send(node, request_class(ApiKey.LIST_GROUPS)())
            if resp.body.error_code:
                errors[node] = KafkaProtocolError(resp.body.error_code, f"ListGroups on broker {node}")
                continue
            for g in resp.body.groups:
                if g.protocol_type in (PROTOCOL_TYPE, ""):
                    out[g.group_id] = ConsumerGroupListing(g.group_id, g.protocol_type,
                                                           getattr(g, "group_state", None) or None)
        if errors:
            from kafkalab.clients.admin import AdminError
            raise AdminError("list_consumer_groups", errors, out)
        return sorted(out.values(), key=lambda g: g.group_id)

    async def describe_groups(self, group_ids) -> dict:
        cls = request_class(ApiKey.DESCRIBE_GROUPS)
        results, errors = {}, {}
        for gid in group_ids:
            node, _, body = await self._group_send(gid, cls(groups=(gid,)))
            g = body.groups[0]
            if g.error_code:
                errors[gid] = KafkaProtocolError(g.error_code, getattr(g, "error_message", None) or None)
                continue
            consumer = g.protocol_type == PROTOCOL_TYPE
            results[gid] = ConsumerGroupDescription(
                gid, g.group_state, g.protocol_type, g.protocol_data,
                [_decode_member(m, consumer) for m in g.members], node)
        return self._check_groups("describe_consumer_groups", results, errors)

    async def delete_groups(self, group_ids) -> dict:
        cls = request_class(ApiKey.DELETE_GROUPS)
        results, errors = {}, {}
        for gid in group_ids:
            _, _, body = await self._group_send(gid, cls(groups_names=(gid,)))
            r = body.results[0]
            if r.error_code:
                errors[gid] = KafkaProtocolError(r.error_code, None)
            else:
                results[gid] = None
        return self._check_groups("delete_consumer_groups", results, errors)

    async def group_offsets(self, group_id, partitions) -> dict:
        cls = request_class(ApiKey.OFFSET_FETCH)
        by_topic: Optional[dict] = None
        if partitions is not None:
            by_topic = {}
            for tp in partitions:
                by_topic.setdefault(tp[0], []).append(tp[1])
        node = await self._find_coordinator(group_id, 0)
        version = (await self.client.connection(node)).version_for(ApiKey.OFFSET_FETCH)
        if version >= 8:
            topics = None if by_topic is None else tuple(
                cls.OffsetFetchRequestTopics(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())
            body = cls(groups=(cls.OffsetFetchRequestGroup(group_id=group_id, topics=topics),))
        else:
            topics = None if by_topic is None else tuple(
                cls.OffsetFetchRequestTopic(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())
            body = cls(group_id=group_id, topics=topics)
        _, version, b = await self._group_send(group_id, body)
        if version >= 8:
            code, topics_out = b.groups[0].error_code, b.groups[0].topics
        else:
            code, topics_out = b.error_code, b.topics
        if code:
            raise KafkaProtocolError(code, f"OffsetFetch of group {group_id!r}")
        out = {}
        for t in topics_out:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaProtocolError(p.error_code, f"OffsetFetch of {t.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    epoch = p.committed_leader_epoch
                    out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", epoch if epoch >= 0 else None)
        return dict(sorted(out.items()))

    async def alter_group_offsets(self, group_id, offsets) -> dict:
        cls = request_class(ApiKey.OFFSET_COMMIT)
        topics: dict = {}
        for tp, om in offsets.items():
            om = om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om))
            topics.setdefault(tp[0], []).append(cls.OffsetCommitRequestPartition(
                partition_index=tp[1], committed_offset=om.offset,
                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                committed_metadata=om.metadata or ""))
        body = cls(group_id=group_id, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
                   topics=tuple(cls.OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()))
        _, _, b = await self._group_send(group_id, body)
        return self._partition_results("alter_consumer_group_offsets", b.topics)

    async def delete_group_offsets(self, group_id, partitions) -> dict:
        cls = request_class(ApiKey.OFFSET_DELETE)
        topics: dict = {}
        for tp in partitions:
            topics.setdefault(tp[0], []).append(cls.OffsetDeleteRequestPartition(partition_index=tp[1]))
        body = cls(group_id=group_id, topics=tuple(cls.OffsetDeleteRequestTopic(name=t, partitions=tuple(ps))
                                                   for t, ps in topics.items()))
        _, _, b = await self._group_send(group_id, body)
        if b.error_code:
            raise KafkaProtocolError(b.error_code, f"OffsetDelete of group {group_id!r}")
        return self._partition_results("delete_consumer_group_offsets", b.topics)

    def _partition_results(self, operation: str, topics) -> dict:
        results, errors = {}, {}
        for t in topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    errors[tp] = KafkaProtocolError(p.error_code, None)
                else:
                    results[tp] = None
        return self._check_groups(operation, results, errors)

    @staticmethod
    def _check_groups(operation: str, results: dict, errors: dict) -> dict:
        if errors:
            from kafkalab.clients.admin import AdminError
            raise AdminError(operation, errors, results)
        return results
