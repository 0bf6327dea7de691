"""The group APIs on the wire: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
ListGroups, DescribeGroups, DeleteGroups, OffsetDelete.

Theory of operation
-------------------
These handlers only translate: request bodies become calls on the sans-IO
:class:`~kafkalab.coordinator.group.GroupCoordinator`, its answers become response bodies at the version the
client spoke. JoinGroup and SyncGroup may have to *wait* (until every member rejoined, until the leader sent
the assignment): the coordinator takes a callback, the handler turns it into a future and returns
:class:`~.base.Delayed` when it is not resolved yet, so the request-handler worker moves on and the response is
sent when the round completes (Kafka parks these requests in its rebalance purgatory).

The coordinator reaches ``__consumer_offsets`` through :class:`BrokerOffsetsLog`: appends go through the replica
manager like a producer's (``acks=all``, origin "coordinator") and complete through the produce purgatory once
the in-sync replicas have them, so an OffsetCommit (and a leader's SyncGroup) is answered only then, without
holding a request-handler worker; loading reads the partition's log from its start to its end.

Authorization (Kafka's table): JoinGroup, SyncGroup, Heartbeat, LeaveGroup need READ on the group; OffsetCommit
READ on the group and on each topic; OffsetFetch DESCRIBE on the group and each topic (unauthorized topics are
left out of "all offsets"); DescribeGroups DESCRIBE, DeleteGroups DELETE on each group; OffsetDelete DELETE on
the group and READ on each topic; ListGroups shows every group to DESCRIBE on the cluster, else only the groups
the principal may describe. Refusals: GROUP_AUTHORIZATION_FAILED (30), TOPIC_AUTHORIZATION_FAILED (29).

Versions: JoinGroup 0-9 (v4+ MEMBER_ID_REQUIRED, v5+ group.instance.id), SyncGroup 0-5, Heartbeat 0-4,
LeaveGroup 0-5 (v3+ batched members), OffsetCommit 0-9 (v0 writes to ZooKeeper, :mod:`.zk_offsets`; v1 may
set the commit timestamp; v9 is v8 for a classic group), OffsetFetch 0-9 (v0 reads ZooKeeper; v7+
``require_stable``: a partition whose commit is pending, plain or inside a transaction, answers
UNSTABLE_OFFSET_COMMIT; v8 several groups; v9's member id and epoch are for KIP-848 groups, which a classic
coordinator ignores), ListGroups 0-5 (v5's type filter: every group here is "classic"), DescribeGroups 0-5, DeleteGroups 0-2, OffsetDelete 0 -- what the ZooKeeper-era coordinator of Kafka 3.x serves.

Mirrors: ``KafkaApis.handleJoinGroupRequest``, ``handleSyncGroupRequest``, ``handleHeartbeatRequest``,
``handleLeaveGroupRequest``, ``handleOffsetCommitRequest``, ``handleOffsetFetchRequest``,
``handleListGroupsRequest``, ``handleDescribeGroupsRequest``, ``handleDeleteGroupsRequest``,
``handleOffsetDeleteRequest``.
"""
from __future__ import annotations


from kafkalab.coordinator.group import JoinGroupResult, SyncGroupResult
from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.records import decode_batches
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.apis.base import Delayed, callback_future, handles, top_level_error
from kafkalab.server.apis.zk_offsets import commit_offsets_to_zookeeper, fetch_offsets_from_zookeeper
from kafkalab.server.config import server_setting
from kafkalab.storage import FetchIsolation

__all__ = ["BrokerOffsetsLog"]

JoinGroupResponse = response_class(ApiKey.JOIN_GROUP)
SyncGroupResponse = response_class(ApiKey.SYNC_GROUP)
HeartbeatResponse = response_class(ApiKey.HEARTBEAT)
LeaveGroupResponse = response_class(ApiKey.LEAVE_GROUP)
OffsetCommitResponse = response_class(ApiKey.OFFSET_COMMIT)
OffsetFetchResponse = response_class(ApiKey.OFFSET_FETCH)
ListGroupsResponse = response_class(ApiKey.LIST_GROUPS)
DescribeGroupsResponse = response_class(ApiKey.DESCRIBE_GROUPS)
DeleteGroupsResponse = response_class(ApiKey.DELETE_GROUPS)
OffsetDeleteResponse = response_class(ApiKey.OFFSET_DELETE)

LOAD_BUFFER_BYTES = 5 * 1024 * 1024     # offsets.load.buffer.size


class BrokerOffsetsLog:
    """The coordinator's view of ``__consumer_offsets`` on this broker."""

    def __init__(self, broker):
        self.broker = broker

    @property
    def commit_timeout_ms(self) -> int:
        """``offsets.commit.timeout.ms``: how long an append waits for the in-sync replicas."""
        return int(server_setting(self.broker.config, "offsets.commit.timeout.ms"))

    def append(self, partition: int, batch: bytes) -> int:
        """Local append only: the error code of the leader's append (use :meth:`append_async` to wait)."""
        tp = (OFFSETS_TOPIC, partition)
        result = self.broker.replica_manager.append_records({tp: batch}, required_acks=-1, origin="coordinator")[tp]
        return int(result.error_code) if isinstance(result, ApiException) else int(ErrorCode.NONE)

    def append_async(self, partition: int, batch: bytes, callback) -> None:
        """Append with ``acks=all`` as a producer's would: ``callback(error code, base offset)`` once the high watermark
        passes the batch (NONE), at once if the leader's append failed (NOT_ENOUGH_REPLICAS with the ISR below
        ``min.insync.replicas``, NOT_LEADER_OR_FOLLOWER ...), or from the produce purgatory when
        ``offsets.commit.timeout.ms`` passes (REQUEST_TIMED_OUT) or the ISR shrank below the minimum
        (NOT_ENOUGH_REPLICAS_AFTER_APPEND). Kafka: ``GroupMetadataManager.appendForGroup``."""
        tp = (OFFSETS_TOPIC, partition)

        def on_complete(status: dict) -> None:
            code = int(status[tp].error_code)
            callback(code, status[tp].base_offset if code == ErrorCode.NONE else -1)
        self.broker.replica_manager.append_records({tp: batch}, required_acks=-1, origin="coordinator",
                                                   timeout_ms=self.commit_timeout_ms,
                                                   response_callback=on_complete)

    def read(self, partition: int):
        p = self.broker.replica_manager.get_partition(OFFSETS_TOPIC, partition)
        if p is None or p.log is None:
            return
        log = p.log
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, LOAD_BUFFER_BYTES, isolation=FetchIsolation.LOG_END, min_one_message=True)
            raw = data.records if data is not None else b""
            if not raw:
                return
            batches = decode_batches(bytes(raw), allow_partial=True)
            if not batches:
                return
            for b in batches:
                if b.next_offset > offset:
                    yield b
            offset = max(offset, batches[-1].next_offset)


def _coordinator(broker):
    return broker.group_coordinator


def _require_group(broker, request, operation: AclOperation, group_id: str) -> None:
    """GROUP_AUTHORIZATION_FAILED unless the principal may do ``operation`` on the group."""
    if not broker.auth.authorize(request.context, operation, ResourceType.GROUP, group_id):
        raise ApiException(ErrorCode.GROUP_AUTHORIZATION_FAILED)


def _topic_denied(broker, request, operation: AclOperation, names) -> set:
    return broker.auth.denied(request.context, operation, ResourceType.TOPIC, names)


# ---------------------------------------------------------------------------------------------- JoinGroup
def _join_response(version: int, r: JoinGroupResult):
    R = JoinGroupResponse
    members = tuple(R.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md) for m, i, md in r.members)
    protocol_name = r.protocol_name if version >= 7 else (r.protocol_name or "")
    return R(throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id, protocol_type=r.protocol_type,
             protocol_name=protocol_name, leader=r.leader_id or "", skip_assignment=r.skip_assignment,
             member_id=r.member_id, members=members)


@handles(ApiKey.JOIN_GROUP, versions=(0, 9), error_response=lambda req, code, msg: JoinGroupResponse(
    error_code=code, generation_id=-1, protocol_name="", leader="", member_id=req.body.member_id))
def handle_join_group(broker, request):
    body, version, ctx = request.body, request.context.api_version, request.context
    _require_group(broker, request, AclOperation.READ, body.group_id)
    fut, callback = callback_future()
    if body.group_instance_id is not None and version < 5:
        return _join_response(version, JoinGroupResult(ErrorCode.UNSUPPORTED_VERSION, body.member_id))
    _coordinator(broker).handle_join_group(
        body.group_id, body.member_id, body.group_instance_id, version >= 4, ctx.client_id or "",
        f"/{ctx.client_host}", body.rebalance_timeout_ms if version >= 1 else -1, body.session_timeout_ms,
        body.protocol_type, [(p.name, bytes(p.metadata)) for p in body.protocols], callback,
        body.reason if version >= 8 else None)
    if fut.done():
        return _join_response(version, fut.result())

    async def later():
        return _join_response(version, await fut)
    return Delayed(later())


# ---------------------------------------------------------------------------------------------- SyncGroup
def _sync_response(version: int, r: SyncGroupResult):
    return SyncGroupResponse(throttle_time_ms=0, error_code=r.error, protocol_type=r.protocol_type,
                             protocol_name=r.protocol_name, assignment=r.assignment)


@handles(ApiKey.SYNC_GROUP, versions=(0, 5), error_response=lambda req, code, msg: SyncGroupResponse(
    error_code=code, assignment=b""))
def handle_sync_group(broker, request):
    body, version = request.body, request.context.api_version
    _require_group(broker, request, AclOperation.READ, body.group_id)
    fut, callback = callback_future()
    _coordinator(broker).handle_sync_group(
        body.group_id, body.generation_id, body.member_id, body.protocol_type if version >= 5 else None,
        body.protocol_name if version >= 5 else None, body.group_instance_id if version >= 3 else None,
        {a.member_id: bytes(a.assignment) for a in body.assignments}, callback)
    if fut.done():
        return _sync_response(version, fut.result())

    async def later():
        return _sync_response(version, await fut)
    return Delayed(later())


# ---------------------------------------------------------------------------------------------- Heartbeat / Leave
@handles(ApiKey.HEARTBEAT, versions=(0, 4), error_response=top_level_error(ApiKey.HEARTBEAT))
def handle_heartbeat(broker, request):
    body, version = request.body, request.context.api_version
    _require_group(broker, request, AclOperation.READ, body.group_id)
    code = _coordinator(broker).handle_heartbeat(body.group_id, body.member_id,
                                                 body.group_instance_id if version >= 3 else None,
                                                 body.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


@handles(ApiKey.LEAVE_GROUP, versions=(0, 5), error_response=top_level_error(ApiKey.LEAVE_GROUP))
def handle_leave_group(broker, request):
    body, version = request.body, request.context.api_version
    _require_group(broker, request, AclOperation.READ, body.group_id)
    R = LeaveGroupResponse
    if version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        members = [(body.member_id, None)]
    top, errors = _coordinator(broker).handle_leave_group(body.group_id, members)
    if version >= 3:
        return R(throttle_time_ms=0, error_code=top, members=tuple(
            R.MemberResponse(member_id=m, group_instance_id=i, error_code=e) for (m, i), e in zip(members, errors)))
    return R(throttle_time_ms=0, error_code=top if top != ErrorCode.NONE else (errors[0] if errors else top))


# ---------------------------------------------------------------------------------------------- OffsetCommit
def _commit_error(request, code, message):
    R = OffsetCommitResponse
    return R(topics=tuple(R.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
        R.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions))
        for t in request.body.topics))


@handles(ApiKey.OFFSET_COMMIT, versions=(0, 9), error_response=_commit_error)
def handle_offset_commit(broker, request):
    body, version = request.body, request.context.api_version
    cache = broker.metadata_cache
    now = broker.time.milliseconds()
    retention = body.retention_time_ms if version <= 4 else -1
    _require_group(broker, request, AclOperation.READ, body.group_id)
    denied = _topic_denied(broker, request, AclOperation.READ, [t.name for t in body.topics])
    offsets, results = {}, {}
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name in denied:
                results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if cache.partition_state(t.name, p.partition_index) is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            commit_timestamp = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
            offsets[tp] = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch if version >= 6 else -1,
                                            p.committed_metadata or "", commit_timestamp,
                                            now + retention if retention is not None and retention >= 0 else -1)

    def respond(committed: dict):
        results.update(committed)
        R = OffsetCommitResponse
        return R(throttle_time_ms=0, topics=tuple(R.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            R.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                            error_code=results[(t.name, p.partition_index)]) for p in t.partitions))
            for t in body.topics))
    if not offsets:
        return respond({})
    if version == 0:
        return respond(commit_offsets_to_zookeeper(broker, body.group_id, [
            (t.name, p) for t in body.topics for p in t.partitions if (t.name, p.partition_index) in offsets]))
    fut, callback = callback_future()   # the commit completes when the in-sync replicas have it (acks=all)
    _coordinator(broker).handle_commit_offsets(
        body.group_id, body.member_id, body.group_instance_id if version >= 7 else None,
        body.generation_id_or_member_epoch, offsets, callback)
    if fut.done():
        return respond(fut.result())

    async def wait():
        return respond(await fut)
    return Delayed(wait())


# ---------------------------------------------------------------------------------------------- OffsetFetch
def _fetch_group(broker, request, group_id, topics, require_stable=False):
    """-> (error, [(topic, [(partition, OffsetAndMetadata|None, error)])]). Needs DESCRIBE on the group; a named
    topic the principal may not describe is TOPIC_AUTHORIZATION_FAILED, and "all topics" leaves it out. With
    ``require_stable`` (v7+) a partition with a pending commit is UNSTABLE_OFFSET_COMMIT, offset -1."""
    auth, context = broker.auth, request.context
    if not auth.authorize(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    denied = _topic_denied(broker, request, AclOperation.DESCRIBE, [t.name for t in topics or ()])
    refused = [(t.name, [(p, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partition_indexes])
               for t in topics or () if t.name in denied]
    partitions = None if topics is None else [(t.name, p) for t in topics if t.name not in denied
                                              for p in t.partition_indexes]
    error, offsets = _coordinator(broker).handle_fetch_offsets(group_id, partitions, require_stable)
    if error != ErrorCode.NONE:
        return error, [(t.name, [(p, None, error) for p in t.partition_indexes]) for t in (topics or ())]
    by_topic: dict = {}
    for (topic, p), om in offsets.items():
        if isinstance(om, int):     # UNSTABLE_OFFSET_COMMIT: a commit of it is pending (require_stable)
            by_topic.setdefault(topic, []).append((p, None, om))
        else:
            by_topic.setdefault(topic, []).append((p, om, ErrorCode.NONE))
    if topics is None and auth.enabled:
        visible = auth.filter_authorized(context, AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic,
                                         log_if_denied=False)
        by_topic = {t: parts for t, parts in by_topic.items() if t in visible}
    return ErrorCode.NONE, list(by_topic.items()) + refused


def _fetch_error(request, code, message):
    R = OffsetFetchResponse
    if request.context.api_version >= 8:
        return R(groups=tuple(R.OffsetFetchResponseGroup(group_id=g.group_id, topics=(), error_code=code)
                              for g in request.body.groups))
    if request.context.api_version < 2:    # no top-level error code yet: the error on every partition asked for
        return R(topics=tuple(R.OffsetFetchResponseTopic(name=t.name, partitions=tuple(
            R.OffsetFetchResponsePartition(partition_index=p, committed_offset=-1, metadata="", error_code=code)
            for p in t.partition_indexes)) for t in request.body.topics or ()))
    return R(topics=(), error_code=code)


@handles(ApiKey.OFFSET_FETCH, versions=(0, 9), error_response=_fetch_error)
def handle_offset_fetch(broker, request):
    body, version = request.body, request.context.api_version
    R = OffsetFetchResponse
    if version == 0:
        return fetch_offsets_from_zookeeper(broker, request)
    if version >= 8:
        groups = []
        for g in body.groups:
            error, topics = _fetch_group(broker, request, g.group_id, g.topics, body.require_stable)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error, topics=tuple(
                R.OffsetFetchResponseTopics(name=t, partitions=tuple(
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=om.offset if om else -1,
                                                    committed_leader_epoch=om.leader_epoch if om else -1,
                                                    metadata=om.metadata if om else "",
                                                    error_code=e)
                    for p, om, e in parts)) for t, parts in topics)))
        return R(throttle_time_ms=0, groups=tuple(groups))
    error, topics = _fetch_group(broker, request, body.group_id, body.topics, version >= 7 and body.require_stable)
    if error != ErrorCode.NONE and version >= 2:
        topics = []
    return R(throttle_time_ms=0, error_code=error, topics=tuple(
        R.OffsetFetchResponseTopic(name=t, partitions=tuple(
            R.OffsetFetchResponsePartition(partition_index=p, committed_offset=om.offset if om else -1,
                                           committed_leader_epoch=om.leader_epoch if om else -1,
                                           metadata=om.metadata if om else "", error_code=e)
            for p, om, e in parts)) for t, parts in topics))


# ---------------------------------------------------------------------------------------------- admin views
@handles(ApiKey.LIST_GROUPS, versions=(0, 5), error_response=top_level_error(ApiKey.LIST_GROUPS))
def handle_list_groups(broker, request):
    body, version = request.body, request.context.api_version
    states = set(body.states_filter or ()) if version >= 4 else None
    error, groups = _coordinator(broker).handle_list_groups(states)
    types = {t.lower() for t in body.types_filter or ()} if version >= 5 else set()
    if types and "classic" not in types:    # the classic coordinator's groups are all of type "classic"
        groups = []
    auth = broker.auth
    if auth.enabled and not auth.authorize_cluster(request.context, AclOperation.DESCRIBE, log_if_denied=False):
        visible = auth.filter_authorized(request.context, AclOperation.DESCRIBE, ResourceType.GROUP,
                                         [g for g, _, _ in groups], log_if_denied=False)
        groups = [g for g in groups if g[0] in visible]
    R = ListGroupsResponse
    return R(throttle_time_ms=0, error_code=error, groups=tuple(
        R.ListedGroup(group_id=g, protocol_type=pt, group_state=s, group_type="classic") for g, pt, s in groups))


def _describe_error(request, code, message):
    R = DescribeGroupsResponse
    return R(groups=tuple(R.DescribedGroup(error_code=code, group_id=g, group_state="", protocol_type="",
                                           protocol_data="", members=()) for g in request.body.groups))


@handles(ApiKey.DESCRIBE_GROUPS, versions=(0, 5), error_response=_describe_error)
def handle_describe_groups(broker, request):
    R = DescribeGroupsResponse
    body, version, auth = request.body, request.context.api_version, broker.auth
    out = []
    for group_id in body.groups:
        if not auth.authorize(request.context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                                        group_state="", protocol_type="", protocol_data="", members=()))
            continue
        error, s = _coordinator(broker).handle_describe_group(group_id)
        ops = -2147483648
        if version >= 3 and body.include_authorized_operations:
            ops = auth.authorized_operations(request.context, ResourceType.GROUP, group_id)
        out.append(R.DescribedGroup(
            error_code=error, group_id=group_id, group_state=s.state, protocol_type=s.protocol_type,
            protocol_data=s.protocol, authorized_operations=ops, members=tuple(
                R.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                       client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                                       member_assignment=m.assignment) for m in s.members)))
    return R(throttle_time_ms=0, groups=tuple(out))


@handles(ApiKey.DELETE_GROUPS, versions=(0, 2), error_response=lambda req, code, msg: DeleteGroupsResponse(
    results=tuple(DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=code)
                  for g in req.body.groups_names)))
def handle_delete_groups(broker, request):
    names = list(request.body.groups_names)
    denied = {g for g in names if not broker.auth.authorize(request.context, AclOperation.DELETE,
                                                             ResourceType.GROUP, g)}
    errors = _coordinator(broker).handle_delete_groups([g for g in names if g not in denied])
    errors.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in denied})
    R = DeleteGroupsResponse
    return R(throttle_time_ms=0, results=tuple(R.DeletableGroupResult(group_id=g, error_code=errors[g])
                                               for g in dict.fromkeys(names)))


@handles(ApiKey.OFFSET_DELETE, versions=(0, 0), error_response=top_level_error(ApiKey.OFFSET_DELETE))
def handle_offset_delete(broker, request):
    body = request.body
    R = OffsetDeleteResponse
    cache = broker.metadata_cache
    _require_group(broker, request, AclOperation.DELETE, body.group_id)
    denied = _topic_denied(broker, request, AclOperation.READ, [t.name for t in body.topics])
    refused = {(t.name, p.partition_index) for t in body.topics if t.name in denied for p in t.partitions}
    unknown = {(t.name, p.partition_index) for t in body.topics for p in t.partitions
               if cache.partition_state(t.name, p.partition_index) is None} - refused
    wanted = [(t.name, p.partition_index) for t in body.topics for p in t.partitions
              if (t.name, p.partition_index) not in unknown | refused]
    error, results = _coordinator(broker).handle_delete_offsets(body.group_id, wanted)
    if error != ErrorCode.NONE:
        return R(error_code=error, throttle_time_ms=0, topics=())
    results.update({tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in unknown})
    results.update({tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in refused})
    return R(error_code=ErrorCode.NONE, throttle_time_ms=0, topics=tuple(
        R.OffsetDeleteResponseTopic(name=t.name, partitions=tuple(
            R.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                            error_code=results.get((t.name, p.partition_index), ErrorCode.NONE))
            for p in t.partitions)) for t in body.topics))
