"""The admin client: topics, partitions, configs, offsets and the cluster, managed over the Kafka protocol.

Theory of operation
-------------------
Administration in Kafka is just more requests. Each method here builds one request family, sends it to the
broker that must answer it, and turns per-item error codes into results:

======================  ============================  =======================================================
method                  request                       sent to
======================  ============================  =======================================================
create_topics           CreateTopics                  the controller (``NOT_CONTROLLER``: refresh, retry)
delete_topics           DeleteTopics                  the controller
create_partitions       CreatePartitions              the controller
describe_topics         Metadata                      any broker (the least loaded)
describe_elr            DescribeTopicPartitions       any broker (:mod:`.admin_topics`)
describe_cluster        DescribeCluster (or Metadata  any broker
                        when not supported)
describe_configs        DescribeConfigs               any broker; a BROKER resource goes to that broker
incremental_alter_...   IncrementalAlterConfigs       as describe_configs (:mod:`.admin_configs`)
alter_configs           AlterConfigs (deprecated)     as describe_configs
list_offsets            ListOffsets                   each partition's leader
delete_records          DeleteRecords                 each partition's leader
elect_leaders           ElectLeaders                  the controller (:mod:`.admin_elect_leaders`)
======================  ============================  =======================================================

One request may partly succeed -- each topic or partition has its own error code -- so every method returns a
dict of per-item results, and raises :class:`AdminError` (listing *every* failed item, with the partial
``results``) when any item failed. Retriable errors (stale metadata, ``NOT_CONTROLLER``, timeouts) are
retried up to ``retries`` times within ``default.api.timeout.ms``, after a metadata refresh.

ACLs (create/describe/delete) are built by :mod:`.admin_acls`' :class:`~.admin_acls.AclOperations` (``admin.acls``).
Transactions (describe/list, a partition's producers, aborting a hanging one) by :mod:`.admin_transactions`'
:class:`~.admin_transactions.TransactionOperations` (``admin.transactions``).
Consumer-group operations (list/describe/delete groups, read/alter/delete their offsets) go to each group's
coordinator, found with :meth:`Admin.find_coordinator`; the requests are built by :mod:`.admin_groups`'
:class:`~.admin_groups.ConsumerGroupOperations`, a collaborator the admin owns and forwards to.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/admin/KafkaAdminClient.java`` (its ``Call``s and
``NodeProvider``s: controller, least loaded, leader of a partition).
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Union

from kafkalab.clients.admin_acls import AclOperations
from kafkalab.clients import admin_configs, admin_elect_leaders, admin_log_dirs, admin_scram
from kafkalab.clients.admin_configs import ConfigResource
from kafkalab.clients.admin_topics import DEFAULT_PARTITION_LIMIT, describe_elr
from kafkalab.clients.admin_groups import ConsumerGroupOperations
from kafkalab.clients.admin_transactions import AbortTransactionSpec, TransactionOperations
from kafkalab.clients.config import admin_config
from kafkalab.clients.errors import KafkaProtocolError, KafkaTimeoutError
from kafkalab.clients.metadata import STALE_METADATA_ERRORS, ClusterView, TopicInfo
from kafkalab.clients.network_client import NetworkClient
from kafkalab.clients.producer.accumulator import TopicPartition
from kafkalab.clients.tracing import make_tracer
from kafkalab.common.loop_thread import LoopThread
from kafkalab.common.time import SYSTEM, Time
from kafkalab.protocol import ApiKey, ErrorCode, error_info, request_class

__all__ = ["Admin", "AdminError", "NewTopic", "NewPartitions", "ConfigResource", "OffsetSpec", "ListOffsetsResult",
           "ClusterDescription"]


class NewTopic(NamedTuple):
    """A topic to create: counts (placed by the broker), or ``replicas_assignments`` ``{partition: [broker ids,
    preferred leader first]}`` (Kafka's ``NewTopic(name, replicasAssignments)``; the counts then stay -1)."""

    name: str
    num_partitions: int = -1           # -1: the broker's num.partitions
    replication_factor: int = -1       # -1: the broker's default.replication.factor
    config: Mapping[str, str] = {}
    replicas_assignments: Mapping[int, Sequence[int]] = {}


class NewPartitions(NamedTuple):
    total_count: int


class OffsetSpec:
    """What ``list_offsets`` asks for: the special timestamps of ListOffsets, or a timestamp in ms."""

    EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
    NAMES = {"earliest": -2, "latest": -1, "max_timestamp": -3}

    @classmethod
    def of(cls, spec: Union[str, int]) -> int:
        if isinstance(spec, str):
            return cls.NAMES[spec.lower()]
        return int(spec)


class ListOffsetsResult(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int


@dataclasses.dataclass(frozen=True)
class ClusterDescription:
    cluster_id: Optional[str]
    controller_id: int
    brokers: dict


class AdminError(KafkaProtocolError):
    """Some items of an admin operation failed. ``errors``: item -> KafkaProtocolError; ``results``: the rest."""

    def __init__(self, operation: str, errors: dict, results: dict):
        self.errors, self.results = errors, results
        first = next(iter(errors.values()))
        detail = "; ".join(f"{k}: {e}" for k, e in errors.items())
        super().__init__(first.error_code, f"{operation} failed for {len(errors)} item(s): {detail}")


def _error(code: int, message: Optional[str]) -> KafkaProtocolError:
    return KafkaProtocolError(code, message or None)


def _check(operation: str, results: dict, errors: dict) -> dict:
    if errors:
        raise AdminError(operation, errors, results)
    return results


class Admin:
    """``Admin({"bootstrap.servers": ...})``: blocking admin operations (an asyncio core underneath)."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, trace=None, time: Optional[Time] = None):
        self.config = cfg = admin_config(config)
        self.client_id = cfg["client.id"]
        self.time: Time = time if time is not None else SYSTEM    # decides every timeout and backoff
        self._hook, self.trace = make_tracer(trace)
        self._io = LoopThread(f"kafka-admin-client-thread | {self.client_id}")
        self.client: NetworkClient = self._io.run(self._make_client(), 30)
        #: the consumer-group requests (:mod:`.admin_groups`); the ``*_consumer_group*`` methods below forward
        self.groups = ConsumerGroupOperations(self.client, retries=cfg["retries"],
                                              find_coordinator=self._find_coordinator, metadata=self._metadata)
        #: the ACL requests (:mod:`.admin_acls`); ``create_acls``/``describe_acls``/``delete_acls`` forward
        self.acls = AclOperations(self.client)
        #: the transaction requests (:mod:`.admin_transactions`); ``*_transaction*``/``describe_producers`` forward
        self.transactions = TransactionOperations(
            self.client, retries=cfg["retries"], retry_backoff_ms=cfg["retry.backoff.ms"],
            retry_backoff_max_ms=cfg["retry.backoff.max.ms"], find_coordinator=self._find_coordinator,
            metadata=self._metadata)
        self._closed = False

    async def _make_client(self) -> NetworkClient:
        return NetworkClient(self.config, tracer=self._hook, allow_auto_topic_creation=False, time=self.time,
                             metric_group_prefix="admin-client")

    def _run(self, coro, timeout_ms: Optional[float] = None):
        if self._closed:
            coro.close()
            raise RuntimeError("the admin client is closed")
        t_ms = timeout_ms or self.config["default.api.timeout.ms"]
        waits = self.client.waits               # the deadline is on the admin's Time; a real one only backs it up
        try:
            return self._io.run(waits.wait_for(coro, t_ms), waits.real_timeout(t_ms / 1000 + 5))
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"the admin operation did not complete within {t_ms / 1000:.1f} s") from None

    # -- plumbing ---------------------------------------------------------------------------------------------
    async def _metadata(self, topics: Optional[list[str]] = None) -> ClusterView:
        return await self.client.update_metadata(topics if topics is not None else [])

    async def _controller(self) -> int:
        cluster = await self._metadata()
        return cluster.controller_id if cluster.controller_id in cluster.brokers else \
            self.client.least_loaded_node()

    async def _retrying(self, attempt):
        """Run ``attempt()`` (which returns (results, errors, retriable_items)) until nothing is retriable."""
        backoff_ms = self.config["retry.backoff.ms"]
        tries = 0
        while True:
            try:
                results, errors, retry = await attempt()
            except KafkaProtocolError as e:
                if not e.retriable or tries >= self.config["retries"]:
                    raise
                self.client.request_metadata_update()
                retry, results, errors = True, {}, {}
            if not retry or tries >= self.config["retries"]:
                return results, errors
            tries += 1
            await self.client.waits.sleep(min(backoff_ms * 2 ** (tries - 1), self.config["retry.backoff.max.ms"]))

    @staticmethod
    def _classify(code: int) -> str:
        if code == ErrorCode.NONE:
            return "ok"
        if code in STALE_METADATA_ERRORS or code == ErrorCode.NOT_CONTROLLER or error_info(code).retriable:
            return "retry"
        return "fail"

    # -- topics -----------------------------------------------------------------------------------------------
    def create_topics(self, new_topics, *, validate_only: bool = False, timeout_ms: Optional[int] = None) -> dict:
        """Create topics: ``NewTopic``s, names, or (name, partitions, replication) tuples. Returns
        ``{name: {"num_partitions", "replication_factor", "topic_id"}}``."""
        topics = [NewTopic(t) if isinstance(t, str) else NewTopic(*t) for t in new_topics]
        return self._run(self._create_topics(topics, validate_only, timeout_ms), timeout_ms)

    async def _create_topics(self, topics, validate_only, timeout_ms) -> dict:
        cls = request_class(ApiKey.CREATE_TOPICS)
        todo = {t.name: t for t in topics}
        results, errors = {}, {}

        async def attempt():
            body = cls(topics=tuple(cls.CreatableTopic(
                name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
                assignments=tuple(cls.CreatableReplicaAssignment(partition_index=int(p), broker_ids=tuple(int(b) for b in r))
                                  for p, r in sorted(dict(t.replicas_assignments).items())),
                configs=tuple(cls.CreatableTopicConfig(name=k, value=str(v)) for k, v in dict(t.config).items()))
                for t in todo.values()), timeout_ms=timeout_ms or self.config["request.timeout.ms"],
                validate_only=validate_only)
            resp = await self.client.send(await self._controller(), body)
            retry = False
            for r in resp.body.topics:
                kind = self._classify(r.error_code)
                if kind == "ok":
                    results[r.name] = {"num_partitions": r.num_partitions, "replication_factor": r.replication_factor,
                                       "topic_id": r.topic_id}
                    todo.pop(r.name, None)
                elif kind == "retry":
                    retry = True
                    self.client.request_metadata_update()
                    errors[r.name] = _error(r.error_code, r.error_message)
                else:
                    errors[r.name] = _error(r.error_code, r.error_message)
                    todo.pop(r.name, None)
            if retry:
                for name in todo:
                    errors.pop(name, None)
            return results, errors, retry and bool(todo)
        results, errors = await self._retrying(attempt)
        return _check("create_topics", results, errors)

    def delete_topics(self, names, *, timeout_ms: Optional[int] = None) -> dict:
        """Delete topics by name. Returns ``{name: None}``."""
        return self._run(self._delete_topics(list(names), timeout_ms), timeout_ms)

    async def _delete_topics(self, names, timeout_ms) -> dict:
        cls = request_class(ApiKey.DELETE_TOPICS)
        results, errors = {}, {}

        async def attempt():
            pending = [n for n in names if n not in results and n not in errors or
                       (n in errors and errors[n].retriable)]
            body = cls(topics=tuple(cls.DeleteTopicState(name=n) for n in pending), topic_names=tuple(pending),
                       timeout_ms=timeout_ms or self.config["request.timeout.ms"])
            resp = await self.client.send(await self._controller(), body)
            return results, errors, self._fold_results(
                ((r.name, r.error_code, r.error_message, None) for r in resp.body.responses), results, errors)
        results, errors = await self._retrying(attempt)
        return _check("delete_topics", results, errors)

    def create_partitions(self, new_partitions: Mapping[str, Union[int, NewPartitions]], *,
                          validate_only: bool = False, timeout_ms: Optional[int] = None) -> dict:
        """Grow topics to a new total partition count: ``{"events": 6}``. Returns ``{name: None}``."""
        counts = {t: (n.total_count if isinstance(n, NewPartitions) else int(n)) for t, n in new_partitions.items()}
        return self._run(self._create_partitions(counts, validate_only, timeout_ms), timeout_ms)

    async def _create_partitions(self, counts, validate_only, timeout_ms) -> dict:
        cls = request_class(ApiKey.CREATE_PARTITIONS)
        results, errors = {}, {}

        async def attempt():
            pending = {t: c for t, c in counts.items() if t not in results and
                       (t not in errors or errors[t].retriable)}
            body = cls(topics=tuple(cls.CreatePartitionsTopic(name=t, count=c, assignments=None)
                                    for t, c in pending.items()),
                       timeout_ms=timeout_ms or self.config["request.timeout.ms"], validate_only=validate_only)
            resp = await self.client.send(await self._controller(), body)
            return results, errors, self._fold_results(
                ((r.name, r.error_code, r.error_message, None) for r in resp.body.results), results, errors)
        results, errors = await self._retrying(attempt)
        return _check("create_partitions", results, errors)

    def _fold_results(self, answers, results: dict, errors: dict) -> bool:
        """Fold ``(key, error_code, error_message, value)`` answers into ``results`` / ``errors``; True if one of
        them is worth retrying."""
        retry = False
        for key, code, message, value in answers:
            kind = self._classify(code)
            if kind == "ok":
                results[key] = value
                errors.pop(key, None)
            else:
                errors[key] = _error(code, message)
                retry = retry or kind == "retry"
        return retry

    def describe_topics(self, names) -> dict[str, TopicInfo]:
        """Partitions, leaders, replicas and ISR of each topic, from a MetadataRequest."""
        return self._run(self._describe_topics(list(names)))

    async def _describe_topics(self, names) -> dict:
        cluster = await self._metadata(names)
        results, errors = {}, {}
        for n in names:
            t = cluster.topics.get(n)
            if t is None:
                errors[n] = _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif t.error_code:
                errors[n] = _error(t.error_code, None)
            else:
                results[n] = t
        return _check("describe_topics", results, errors)

    def list_topics(self) -> list[str]:
        """Names of every topic the cluster has (Metadata for all topics)."""
        async def go():
            return sorted((await self.client.update_metadata()).topics)
        self.client.metadata.all_topics = True
        try:
            return self._run(go())
        finally:
            self.client.metadata.all_topics = False

    def describe_elr(self, names, partition_limit: int = DEFAULT_PARTITION_LIMIT) -> Optional[dict]:
        """DescribeTopicPartitions (:mod:`.admin_topics`): ``{topic: {partition: (elr, last_known_elr)}}``."""
        return self._run(describe_elr(self.client, list(names), partition_limit))

    # -- cluster ----------------------------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterDescription:
        return self._run(self._describe_cluster())

    async def _describe_cluster(self) -> ClusterDescription:
        node = self.client.least_loaded_node()
        conn = await self.client.connection(node)
        if conn.api_versions.supports(ApiKey.DESCRIBE_CLUSTER):
            resp = await conn.send(request_class(ApiKey.DESCRIBE_CLUSTER)())
            b = resp.body
            if b.error_code:
                raise _error(b.error_code, b.error_message)
            brokers = {x.broker_id: {"host": x.host, "port": x.port, "rack": x.rack} for x in b.brokers}
            return ClusterDescription(b.cluster_id, b.controller_id, brokers)
        cluster = await self._metadata()
        brokers = {i: {"host": x.host, "port": x.port, "rack": x.rack} for i, x in cluster.brokers.items()}
        return ClusterDescription(cluster.cluster_id, cluster.controller_id, brokers)

    # -- SCRAM users (:mod:`.admin_scram`) ----------------------------------------------------------------------
    def describe_user_scram_credentials(self, users=None) -> dict:
        """{user: UserScramCredentialsDescription or ApiException}; ``users=None``: every SCRAM user."""
        return self._run(admin_scram.describe_user_scram_credentials(self.client, users))

    def alter_user_scram_credentials(self, alterations) -> dict:
        """Upsertions and deletions (:class:`~.admin_scram.UserScramCredentialUpsertion` /
        ``UserScramCredentialDeletion``); {user: None or ApiException}. The password never leaves this client."""
        return self._run(admin_scram.alter_user_scram_credentials(self.client, alterations))

    def elect_leaders(self, election_type: int, partitions=None, *, timeout_ms: Optional[int] = None) -> dict:
        """ElectLeaders: ``election_type`` 0 (PREFERRED) or 1 (UNCLEAN) for ``partitions`` ((topic, partition)
        pairs; None: every partition). ``{TopicPartition: None or KafkaProtocolError}`` (:mod:`.admin_elect_leaders`)."""
        wait_ms = timeout_ms or self.config["default.api.timeout.ms"]

        async def go():
            return await admin_elect_leaders.elect_leaders(self.client, await self._controller(), election_type,
                                                           partitions, wait_ms)
        return self._run(go(), timeout_ms)

    def describe_log_dirs(self, broker_ids) -> dict:
        """``{broker: {log dir: LogDirDescription}}`` (:mod:`.admin_log_dirs`), one DescribeLogDirs per broker."""
        return self._run(admin_log_dirs.describe_log_dirs(self.client, broker_ids))

    # -- configs (:mod:`.admin_configs`) ----------------------------------------------------------------------
    OPS = admin_configs.OPS

    def describe_configs(self, resources, *, include_synonyms: bool = False) -> dict:
        """``{ConfigResource: {name: DescribeConfigsResourceResult}}`` (value, read_only, config_source, ...)."""
        found = self._run(admin_configs.describe_configs(self.client, [ConfigResource(*r) for r in resources],
                                                         include_synonyms))
        return _check("describe_configs", *found)

    def incremental_alter_configs(self, changes: Mapping, *, validate_only: bool = False) -> dict:
        """``{ConfigResource("topic", "t"): {"retention.ms": "1000", "cleanup.policy": None}}``: a value SETs,
        None DELETEs (back to the default), ``("APPEND", "x")`` appends to a list. Returns ``{resource: None}``."""
        found = self._run(admin_configs.incremental_alter_configs(
            self.client, {ConfigResource(*k): v for k, v in changes.items()}, validate_only))
        return _check("incremental_alter_configs", *found)

    def alter_configs(self, configs: Mapping, *, validate_only: bool = False) -> dict:
        """Deprecated AlterConfigs: ``{ConfigResource("broker", "0"): {"key": "value", ...}}``, each resource's
        whole new set of overrides (a key left out returns to its default). Returns ``{resource: None}``."""
        found = self._run(admin_configs.alter_configs(
            self.client, {ConfigResource(*k): dict(v) for k, v in configs.items()}, validate_only))
        return _check("alter_configs", *found)

    # -- offsets and records ----------------------------------------------------------------------------------
    async def _by_leader(self, tps) -> dict[int, list]:
        cluster = await self._metadata(sorted({tp.topic for tp in tps}))
        out: dict[int, list] = {}
        for tp in tps:
            leader = cluster.leader_for(tp.topic, tp.partition)
            out.setdefault(-1 if leader is None else leader, []).append(tp)
        return out

    def list_offsets(self, specs: Mapping, *, isolation_level: str = "read_uncommitted") -> dict:
        """``{TopicPartition: "earliest" | "latest" | "max_timestamp" | timestamp_ms}`` ->
        ``{TopicPartition: ListOffsetsResult(offset, timestamp, leader_epoch)}``."""
        want = {TopicPartition(*tp): OffsetSpec.of(s) for tp, s in specs.items()}
        level = 1 if isolation_level == "read_committed" else 0
        return self._run(self._list_offsets(want, level))

    async def _list_offsets(self, want, level) -> dict:
        cls = request_class(ApiKey.LIST_OFFSETS)
        results, errors = {}, {}

        async def attempt():
            pending = [tp for tp in want if tp not in results]
            retry = False
            for leader, tps in (await self._by_leader(pending)).items():
                if leader < 0:
                    for tp in tps:
                        errors[tp] = _error(ErrorCode.LEADER_NOT_AVAILABLE, None)
                    retry = True
                    continue
                topics: dict[str, list] = {}
                for tp in tps:
                    topics.setdefault(tp.topic, []).append(cls.ListOffsetsPartition(
                        partition_index=tp.partition, timestamp=want[tp]))
                body = cls(replica_id=-1, isolation_level=level, topics=tuple(
                    cls.ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()))
                conn = await self.client.connection(leader)
                low = 7 if any(v == OffsetSpec.MAX_TIMESTAMP for v in want.values()) else None
                resp = await conn.send(body, conn.version_for(ApiKey.LIST_OFFSETS, low=low))
                retry = self._fold_results(
                    ((TopicPartition(t.name, p.partition_index), p.error_code, None,
                      ListOffsetsResult(p.offset, p.timestamp, p.leader_epoch))
                     for t in resp.body.topics for p in t.partitions), results, errors) or retry
            if retry:
                self.client.request_metadata_update()
            return results, errors, retry
        results, errors = await self._retrying(attempt)
        return _check("list_offsets", results, errors)

    def delete_records(self, before: Mapping, *, timeout_ms: Optional[int] = None) -> dict:
        """Delete records below an offset: ``{TopicPartition: offset}`` (-1 = the high watermark) ->
        ``{TopicPartition: low_watermark}``."""
        want = {TopicPartition(*tp): int(o) for tp, o in before.items()}
        return self._run(self._delete_records(want, timeout_ms), timeout_ms)

    async def _delete_records(self, want, timeout_ms) -> dict:
        cls = request_class(ApiKey.DELETE_RECORDS)
        results, errors = {}, {}

        async def attempt():
            pending = [tp for tp in want if tp not in results]
            retry = False
            for leader, tps in (await self._by_leader(pending)).items():
                if leader < 0:
                    retry = True
                    continue
                topics: dict[str, list] = {}
                for tp in tps:
                    topics.setdefault(tp.topic, []).append(cls.DeleteRecordsPartition(partition_index=tp.partition,
                                                                                      offset=want[tp]))
                body = cls(topics=tuple(cls.DeleteRecordsTopic(name=t, partitions=tuple(ps))
                                        for t, ps in topics.items()),
                           timeout_ms=timeout_ms or self.config["request.timeout.ms"])
                resp = await self.client.send(leader, body)
                retry = self._fold_results(
                    ((TopicPartition(t.name, p.partition_index), p.error_code, None, p.low_watermark)
                     for t in resp.body.topics for p in t.partitions), results, errors) or retry
            if retry:
                self.client.request_metadata_update()
            return results, errors, retry
        results, errors = await self._retrying(attempt)
        return _check("delete_records", results, errors)

    # -- ACLs (forwarded to AclOperations) ---------------------------------------------------------------------
    def create_acls(self, bindings) -> None:
        """Create ``kafkalab.security.acl.AclBinding``s; AdminError names each one a broker refused."""
        created, refused = self._run(self.acls.create_acls(bindings))
        _check("create_acls", created, refused)

    def describe_acls(self, acl_filter=None) -> list:
        """The ``AclBinding``s an ``AclBindingFilter`` matches (all of them by default)."""
        return self._run(self.acls.describe_acls(acl_filter) if acl_filter is not None else self.acls.describe_acls())

    def delete_acls(self, filters) -> dict:
        """Delete what each ``AclBindingFilter`` matches: ``{filter: [deleted AclBinding]}``."""
        deleted, refused = self._run(self.acls.delete_acls(filters))
        return _check("delete_acls", deleted, refused)

    # -- consumer groups: finding the coordinator (the operations are in admin_groups) ----------------------
    def find_coordinator(self, key: str, key_type: int = 0) -> int:
        """The node id of the coordinator of group ``key`` (``key_type`` 0) or transactional id (1)."""
        return self._run(self._find_coordinator(key, key_type))

    async def _find_coordinator(self, key: str, key_type: int) -> int:
        """Retriable answers (COORDINATOR_NOT_AVAILABLE while ``__consumer_offsets`` is created) are asked again."""
        async def attempt():
            return {key: await self._find_coordinator_once(key, key_type)}, {}, False
        return (await self._retrying(attempt))[0][key]

    async def _find_coordinator_once(self, key: str, key_type: int) -> int:
        cls = request_class(ApiKey.FIND_COORDINATOR)
        conn = await self.client.connection(self.client.least_loaded_node())
        version = conn.version_for(ApiKey.FIND_COORDINATOR)
        body = cls(key_type=key_type, coordinator_keys=(key,)) if version >= 4 else cls(key=key, key_type=key_type)
        resp = await conn.send(body, version)
        b = resp.body
        if version >= 4:
            c = b.coordinators[0]
            if c.error_code:
                raise _error(c.error_code, c.error_message)
            node = c.node_id
        else:
            if b.error_code:
                raise _error(b.error_code, b.error_message)
            node = b.node_id
        if node not in self.client.metadata.cluster.brokers:
            await self._metadata()
        return node

    # -- consumer groups (forwarded to ConsumerGroupOperations) -------------------------------------------------
    def list_consumer_groups(self) -> list:
        """Every group on every broker: ``[ConsumerGroupListing(group_id, protocol_type, state)]``."""
        return self._run(self.groups.list_groups())

    def describe_consumer_groups(self, group_ids) -> dict:
        """``{group_id: ConsumerGroupDescription}``: state, assignor, members with their decoded assignments."""
        return self._run(self.groups.describe_groups(list(group_ids)))

    def delete_consumer_groups(self, group_ids) -> dict:
        """Delete empty groups (and their committed offsets). ``{group_id: None}``."""
        return self._run(self.groups.delete_groups(list(group_ids)))

    def list_consumer_group_offsets(self, group_id: str, partitions=None) -> dict:
        """``{TopicPartition: OffsetAndMetadata}`` committed by ``group_id`` (all partitions when None)."""
        return self._run(self.groups.group_offsets(group_id, partitions))

    def alter_consumer_group_offsets(self, group_id: str, offsets: Mapping) -> dict:
        """Set committed offsets of an *empty* group: ``{tp: offset | OffsetAndMetadata}`` -> ``{tp: None}``."""
        return self._run(self.groups.alter_group_offsets(group_id, offsets))

    def delete_consumer_group_offsets(self, group_id: str, partitions) -> dict:
        """Delete committed offsets of partitions no member subscribes to (OffsetDelete) -> ``{tp: None}``."""
        return self._run(self.groups.delete_group_offsets(group_id, list(partitions)))

    # -- transactions (forwarded to TransactionOperations) ------------------------------------------------------
    def describe_transactions(self, transactional_ids) -> dict:
        """``{transactional_id: TransactionDescription}`` from each id's transaction coordinator."""
        return _check("describe_transactions", *self._run(self.transactions.describe_transactions(transactional_ids)))

    def list_transactions(self, *, filter_states=(), filter_producer_ids=(), filter_on_duration: int = -1) -> dict:
        """``{broker_id: [TransactionListing]}`` from every broker (Java's ``allByBrokerId()``): only the states
        named (``TransactionState`` or ``"Ongoing"``), the producer ids given, transactions running longer than
        ``filter_on_duration`` ms (ListTransactions v1+) when given."""
        return _check("list_transactions", *self._run(self.transactions.list_transactions(
            filter_states, filter_producer_ids, filter_on_duration)))

    def describe_producers(self, partitions, *, broker_id: Optional[int] = None) -> dict:
        """``{TopicPartition: PartitionProducerState}``: each partition's active producers, from its leader (or
        from ``broker_id``, which may be a follower)."""
        return _check("describe_producers", *self._run(self.transactions.describe_producers(partitions, broker_id)))

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Write an ABORT marker on ``spec.topic_partition``'s leader: closes a hanging transaction (needs
        CLUSTER_ACTION, as the coordinator's own markers do)."""
        _check("abort_transaction", *self._run(self.transactions.abort_transaction(spec)))

    def metrics(self) -> dict:
        """Kafka's client metrics, measured now: ``{MetricName(name, group, tags): value}`` (group
        ``admin-client-metrics`` and, per broker, ``admin-client-node-metrics``), as Java's ``metrics()``."""
        return self.client.metrics.metrics() if self._closed else self._io.call(self.client.metrics.metrics)

    # -- lifecycle --------------------------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._io.run(self.client.close(), 10)
        finally:
            self._io.stop()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Admin(client.id={self.client_id!r})"
