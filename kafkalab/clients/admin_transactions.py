"""The admin client's transaction operations: describe and list transactions, describe a partition's producers,
abort a hanging transaction.

Theory of operation
-------------------
Transactions are kept in two places, and each question goes to the broker that holds the answer:

=======================  ====================  ============================================================
method                   request               sent to
=======================  ====================  ============================================================
describe_transactions    DescribeTransactions  each transactional id's **transaction coordinator** (the
                                               leader of its ``__transaction_state`` partition, found with
                                               FindCoordinator key_type 1); one request per coordinator
list_transactions        ListTransactions      **every** broker: each coordinator knows only its own ids
describe_producers       DescribeProducers     each partition's **leader** (or the broker named): its
                                               producer state -- epoch, last sequence, the first offset of
                                               the producer's open transaction
abort_transaction        WriteTxnMarkers       the partition's leader: an ABORT marker written by hand
=======================  ====================  ============================================================

The coordinator's view (state, partitions, start time) and the partition leaders' view (which producers have
a transaction open *here*, from which offset) can disagree: a partition whose leader still holds an open
transaction that the coordinator no longer knows is a **hanging transaction** -- it pins the last stable offset
and stalls every read_committed consumer. ``kafkalab transactions find-hanging`` compares the two views and
``abort`` closes such a transaction with an ABORT marker (KIP-664).

Errors are decided as Java's handlers decide them. A coordinator that moved (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE) is looked up again; one still loading (COORDINATOR_LOAD_IN_PROGRESS) is asked again
after a backoff; a leader that moved (NOT_LEADER_OR_FOLLOWER) is found again unless a broker was named, and an
unknown partition is asked again (it may be being created) until the admin's timeout. Everything else fails
the item with Java's message. Results are per item: ``(results, errors)`` dicts, which the admin turns into its
return value or an :class:`~.admin.AdminError` listing every failed item.

**Who does what.** :class:`TransactionOperations` is a collaborator owned by the admin client
(``admin.transactions``), built with the network client, the retry settings and two coroutines (find a
coordinator, refresh metadata); the admin's blocking methods of the table above run its coroutines under the
admin's timeout.

Mirrors ``KafkaAdminClient.describeTransactions``, ``listTransactions``, ``describeProducers``,
``abortTransaction`` and ``clients/.../admin/internals/{DescribeTransactionsHandler,ListTransactionsHandler,
DescribeProducersHandler,AbortTransactionHandler}.java``; the result types are ``clients/.../admin/
{TransactionState,TransactionListing,TransactionDescription,ProducerState,AbortTransactionSpec}.java``.
"""
from __future__ import annotations

import enum
from typing import Any, Awaitable, Callable, Iterable, NamedTuple, Optional

from kafkalab.clients.api_versions import UnsupportedVersionError
from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.clients.producer.accumulator import TopicPartition
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, request_class

__all__ = ["TransactionOperations", "TransactionState", "TransactionListing", "TransactionDescription",
           "ProducerState", "PartitionProducerState", "AbortTransactionSpec"]


class TransactionState(enum.Enum):
    """A transaction's state as the coordinator names it (Java's admin ``TransactionState``); a name this client
    does not know (``Dead``, or one from a newer broker) is UNKNOWN."""

    ONGOING = "Ongoing"
    PREPARE_ABORT = "PrepareAbort"
    PREPARE_COMMIT = "PrepareCommit"
    COMPLETE_ABORT = "CompleteAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    EMPTY = "Empty"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, name: Optional[str]) -> "TransactionState":
        try:
            return cls(name)
        except ValueError:
            return cls.UNKNOWN

    def __str__(self) -> str:
        return self.value


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: TransactionState


class TransactionDescription(NamedTuple):
    coordinator_id: int
    state: TransactionState
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: Optional[int]       # None: no transaction started (the broker says -1)
    topic_partitions: frozenset                    # {TopicPartition}: partitions still in the transaction


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: Optional[int]               # None: no marker written yet for this producer (-1)
    current_transaction_start_offset: Optional[int]  # None: no transaction open on this partition (-1)


class PartitionProducerState(NamedTuple):
    active_producers: tuple                        # (ProducerState, ...)


class AbortTransactionSpec(NamedTuple):
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        tp = self.topic_partition
        return (f"AbortTransactionSpec(topicPartition={tp[0]}-{tp[1]}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})")


def tp_name(tp) -> str:
    """``orders-0``: a partition as Java's ``TopicPartition.toString`` prints it."""
    return f"{tp[0]}-{tp[1]}"


def _fail(code: int, message: str) -> KafkaProtocolError:
    return KafkaProtocolError(code, message)


#: asked again: the coordinator moved (it is looked up again), or is still loading
_COORDINATOR_RETRY = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
_LEADER_MOVED = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
_METADATA_FAILURES = {ErrorCode.TOPIC_AUTHORIZATION_FAILED: "topic authorization failure",
                      ErrorCode.INVALID_TOPIC_EXCEPTION: "invalid topic error"}
_TOPIC_RETRY = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE}


class TransactionOperations:
    """The transaction operations of one :class:`~kafkalab.clients.admin.Admin`, which owns it
    (``admin.transactions``) and forwards its blocking methods to these coroutines, run on its own I/O thread.

    ``client`` the admin's :class:`~kafkalab.clients.network_client.NetworkClient`; ``retries`` how often an item
    that can succeed later is asked again; ``retry_backoff_ms`` / ``retry_backoff_max_ms`` the wait between
    rounds (doubling); ``find_coordinator(key, key_type)`` a coroutine returning a coordinator's node id;
    ``metadata(topics)`` a coroutine returning a fresh :class:`~kafkalab.clients.metadata.ClusterView`.
    Each coroutine returns ``(results, errors)``: item -> value, item -> :class:`KafkaProtocolError`.
    """

    def __init__(self, client, *, retries: int, retry_backoff_ms: int, retry_backoff_max_ms: int,
                 find_coordinator: Callable[[str, int], Awaitable[int]],
                 metadata: Callable[[Optional[list]], Awaitable[Any]]):
        self.client = client
        self._retries = retries
        self._backoff_ms = (retry_backoff_ms, retry_backoff_max_ms)
        self._find_coordinator = find_coordinator
        self._metadata = metadata

    async def _rounds(self, one_round, pending: set, errors: dict) -> None:
        """Run ``one_round(pending)`` (which takes items out of ``pending`` once decided) until nothing is pending;
        after ``retries`` more rounds, what is still pending fails with the last error seen for it."""
        tries = 0
        while pending:
            last = await one_round(pending)
            if not pending:
                return
            if tries >= self._retries:
                for item in pending:
                    errors[item] = last.get(item) or _fail(ErrorCode.REQUEST_TIMED_OUT, "gave up after retries")
                pending.clear()
                return
            tries += 1
            base, cap = self._backoff_ms
            await self.client.waits.sleep(min(base * 2 ** (tries - 1), cap))

    async def _send(self, node: int, body):
        """Send ``body`` fitted to the version the node supports; (response body, version)."""
        conn = await self.client.connection(node)
        version = conn.version_for(body.API_KEY)
        return (await conn.send(fit(body, version), version)).body, version

    # -- DescribeTransactions ---------------------------------------------------------------------------------
    async def describe_transactions(self, transactional_ids: Iterable[str]) -> tuple[dict, dict]:
        """({transactional_id: TransactionDescription}, {transactional_id: KafkaProtocolError})."""
        results: dict = {}
        errors: dict = {}
        pending = set(transactional_ids)
        await self._rounds(lambda p: self._describe_round(p, results, errors), pending, errors)
        return results, errors

    async def _describe_round(self, pending: set, results: dict, errors: dict) -> dict:
        retry: dict = {}
        by_node: dict[int, list] = {}
        for tid in sorted(pending):
            try:
                by_node.setdefault(await self._find_coordinator(tid, 1), []).append(tid)
            except ApiException as e:
                _failed((tid,), e, retry, errors, pending)
        cls = request_class(ApiKey.DESCRIBE_TRANSACTIONS)
        for node, tids in by_node.items():
            try:
                body, _ = await self._send(node, cls(transactional_ids=tuple(tids)))
            except ApiException as e:
                _failed(tids, e, retry, errors, pending)
                continue
            for state in body.transaction_states:
                tid = state.transactional_id
                if tid not in tids or tid not in pending:
                    continue                                  # not asked (Java logs and ignores it)
                outcome = self._describe_outcome(node, state)
                if isinstance(outcome, TransactionDescription):
                    results[tid] = outcome
                    pending.discard(tid)
                elif outcome.error_code in _COORDINATOR_RETRY:
                    retry[tid] = outcome
                else:
                    errors[tid] = outcome
                    pending.discard(tid)
        return retry

    @staticmethod
    def _describe_outcome(node: int, s):
        code, tid = s.error_code, s.transactional_id
        if code == ErrorCode.NONE:
            return TransactionDescription(
                node, TransactionState.parse(s.transaction_state), s.producer_id, s.producer_epoch,
                s.transaction_timeout_ms, None if s.transaction_start_time_ms < 0 else s.transaction_start_time_ms,
                frozenset(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions))
        about = f"DescribeTransactions request for transactionalId `{tid}`"
        if code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return _fail(code, f"{about} failed due to authorization failure")
        if code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            return _fail(code, f"{about} failed because the ID could not be found")
        if code in _COORDINATOR_RETRY:
            return _fail(code, f"{about} returned error {KafkaProtocolError(code).info.name}")
        return _fail(code, f"{about} failed due to unexpected error")

    # -- ListTransactions -------------------------------------------------------------------------------------
    async def list_transactions(self, filter_states=(), filter_producer_ids=(),
                                filter_on_duration: int = -1) -> tuple[dict, dict]:
        """({broker_id: [TransactionListing]}, {broker_id: KafkaProtocolError}) from every broker."""
        states = tuple(str(s) for s in filter_states)            # TransactionState or its name
        body = request_class(ApiKey.LIST_TRANSACTIONS)(
            state_filters=states, producer_id_filters=tuple(int(p) for p in filter_producer_ids),
            duration_filter=int(filter_on_duration))
        results: dict = {}
        errors: dict = {}
        cluster = await self._metadata([])
        pending = set(cluster.brokers)
        await self._rounds(lambda p: self._list_round(p, body, results, errors), pending, errors)
        return dict(sorted(results.items())), errors

    async def _list_round(self, pending: set, body, results: dict, errors: dict) -> dict:
        retry: dict = {}
        for node in sorted(pending):
            about = f"ListTransactions request sent to broker {node}"
            try:
                conn = await self.client.connection(node)
                version = conn.version_for(ApiKey.LIST_TRANSACTIONS)
                if body.duration_filter >= 0 and version < 1:
                    raise UnsupportedVersionError(
                        "Duration filter can be set only when using API version 1 or higher. If client is connected "
                        "to an older broker, do not specify duration filter or set duration filter to -1.")
                resp = (await conn.send(fit(body, version), version)).body
            except ApiException as e:
                _failed((node,), e, retry, errors, pending)
                continue
            code = resp.error_code
            if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                retry[node] = _fail(code, f"{about} failed because the coordinator is still loading state")
                continue
            pending.discard(node)
            if code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                errors[node] = _fail(code, f"{about} failed because the coordinator is shutting down")
            elif code != ErrorCode.NONE:
                errors[node] = _fail(code, f"{about} failed with an unexpected exception")
            else:
                results[node] = [TransactionListing(s.transactional_id, s.producer_id,
                                                    TransactionState.parse(s.transaction_state))
                                 for s in resp.transaction_states]
        return retry

    # -- DescribeProducers ------------------------------------------------------------------------------------
    async def describe_producers(self, partitions, broker_id: Optional[int] = None) -> tuple[dict, dict]:
        """({TopicPartition: PartitionProducerState}, {TopicPartition: KafkaProtocolError}); from each
        partition's leader, or from ``broker_id`` (any replica) when given."""
        results: dict = {}
        errors: dict = {}
        pending = {TopicPartition(*tp) for tp in partitions}
        await self._rounds(lambda p: self._producers_round(p, broker_id, results, errors), pending, errors)
        return results, errors

    async def _by_node(self, pending: set, broker_id: Optional[int], retry: dict, errors: dict) -> dict:
        """{node: [TopicPartition]}: the named broker, or each partition's leader from fresh metadata (Java's
        ``PartitionLeaderStrategy``: an unknown topic or a missing leader waits, a refused topic fails)."""
        cluster = await self._metadata(sorted({tp.topic for tp in pending}) if broker_id is None else [])
        if broker_id is not None:
            if broker_id in cluster.brokers:
                return {broker_id: sorted(pending)}
            retry.update((tp, _fail(ErrorCode.BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not in the cluster"))
                         for tp in pending)
            return {}
        out: dict[int, list] = {}
        for tp in sorted(pending):
            topic = cluster.topics.get(tp.topic)
            code = topic.error_code if topic is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            leader = cluster.leader_for(tp.topic, tp.partition) if not code else None
            if code and code not in _TOPIC_RETRY:
                why = _METADATA_FAILURES.get(code, "unexpected error")
                errors[tp] = _fail(code, f"Failed to fetch metadata for partition {tp_name(tp)} due to {why}")
                pending.discard(tp)
            elif leader is None:
                retry[tp] = _fail(code or ErrorCode.LEADER_NOT_AVAILABLE,
                                  f"No leader known for partition {tp_name(tp)}")
            else:
                out.setdefault(leader, []).append(tp)
        return out

    async def _producers_round(self, pending: set, broker_id: Optional[int], results: dict, errors: dict) -> dict:
        retry: dict = {}
        cls = request_class(ApiKey.DESCRIBE_PRODUCERS)
        for node, tps in (await self._by_node(pending, broker_id, retry, errors)).items():
            topics: dict[str, list] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(tp.partition)
            body = cls(topics=tuple(cls.TopicRequest(name=t, partition_indexes=tuple(ps)) for t, ps in topics.items()))
            try:
                resp, _ = await self._send(node, body)
            except ApiException as e:
                _failed(tps, e, retry, errors, pending)
                continue
            for t in resp.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if tp not in pending:
                        continue
                    outcome = self._producers_outcome(tp, p, broker_id)
                    if isinstance(outcome, PartitionProducerState):
                        results[tp] = outcome
                        pending.discard(tp)
                    elif outcome.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) and \
                            not (broker_id is not None and outcome.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER):
                        retry[tp] = outcome
                        self.client.request_metadata_update()
                    else:
                        errors[tp] = outcome
                        pending.discard(tp)
        return retry

    @staticmethod
    def _producers_outcome(tp, p, broker_id: Optional[int]):
        code = p.error_code
        if code == ErrorCode.NONE:
            return PartitionProducerState(tuple(ProducerState(
                a.producer_id, a.producer_epoch, a.last_sequence, a.last_timestamp,
                None if a.coordinator_epoch < 0 else a.coordinator_epoch,
                None if a.current_txn_start_offset < 0 else a.current_txn_start_offset) for a in p.active_producers))
        name = tp_name(tp)
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            where = f" on brokerId {broker_id}" if broker_id is not None else ""
            return _fail(code, f"Failed to describe active producers for partition {name}{where}")
        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return _fail(code, f"Unknown topic or partition {name} in the DescribeProducers response")
        if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
            return _fail(code, f"Failed to fetch metadata for partition {name} due to invalid topic error: "
                               f"{p.error_message or KafkaProtocolError(code).message}")
        if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            return _fail(code, f"Failed to describe active producers for partition {name} due to authorization "
                               f"failure on topic `{tp.topic}`")
        return _fail(code, f"Failed to describe active producers for partition {name} due to unexpected error")

    # -- WriteTxnMarkers (abort) ------------------------------------------------------------------------------
    async def abort_transaction(self, spec: AbortTransactionSpec) -> tuple[dict, dict]:
        """Write an ABORT marker for ``spec`` on its partition's leader: ({tp: None}, {tp: KafkaProtocolError})."""
        tp = TopicPartition(*spec.topic_partition)
        spec = spec._replace(topic_partition=tp)
        results: dict = {}
        errors: dict = {}
        pending = {tp}
        await self._rounds(lambda p: self._abort_round(p, spec, results, errors), pending, errors)
        return results, errors

    async def _abort_round(self, pending: set, spec: AbortTransactionSpec, results: dict, errors: dict) -> dict:
        retry: dict = {}
        tp = spec.topic_partition
        for node in await self._by_node(pending, None, retry, errors):
            cls = request_class(ApiKey.WRITE_TXN_MARKERS)
            body = cls(markers=(cls.WritableTxnMarker(
                producer_id=spec.producer_id, producer_epoch=spec.producer_epoch, transaction_result=False,
                topics=(cls.WritableTxnMarkerTopic(name=tp.topic, partition_indexes=(tp.partition,)),),
                coordinator_epoch=spec.coordinator_epoch),))
            try:
                resp, _ = await self._send(node, body)
            except ApiException as e:
                _failed((tp,), e, retry, errors, pending)
                continue
            code = self._marker_code(resp, spec)
            if code == ErrorCode.NONE:
                results[tp] = None
                pending.discard(tp)
            elif code in _LEADER_MOVED:
                retry[tp] = _fail(code, f"WriteTxnMarkers request with {spec} failed due to "
                                        f"{KafkaProtocolError(code).info.name}")
                self.client.request_metadata_update()
            else:
                errors[tp] = self._marker_error(code, spec)
                pending.discard(tp)
        return retry

    @staticmethod
    def _marker_code(resp, spec: AbortTransactionSpec):
        """The one partition's error code, or None when the response names other markers or partitions."""
        tp = spec.topic_partition
        markers = resp.markers
        if len(markers) != 1 or markers[0].producer_id != spec.producer_id or len(markers[0].topics) != 1:
            return None
        topic = markers[0].topics[0]
        if topic.name != tp.topic or len(topic.partitions) != 1 or topic.partitions[0].partition_index != tp.partition:
            return None
        return topic.partitions[0].error_code

    @staticmethod
    def _marker_error(code, spec: AbortTransactionSpec) -> KafkaProtocolError:
        about = f"WriteTxnMarkers request with {spec}"
        if code is None:
            return _fail(ErrorCode.UNKNOWN_SERVER_ERROR, f"WriteTxnMarkers response included unexpected entries "
                                                         f"(expected exactly one for {tp_name(spec.topic_partition)})")
        if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            return _fail(code, f"{about} failed due to cluster authorization error")
        if code == ErrorCode.INVALID_PRODUCER_EPOCH:
            return _fail(code, f"{about} failed due an invalid producer epoch")
        if code == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
            return _fail(code, f"{about} failed since the provided coordinator epoch {spec.coordinator_epoch} has "
                               f"been fenced by the active coordinator")
        return _fail(code, f"{about} failed due to unexpected error: {KafkaProtocolError(code).message}")


def _failed(keys, error: ApiException, retry: dict, errors: dict, pending: set) -> None:
    """A request for ``keys`` failed with ``error``: each is retried next round when the error is retriable (Java's
    handlers "unmap" and look the node up again), otherwise its result is that error."""
    for key in keys:
        if error.retriable:
            retry[key] = error
        else:
            errors[key] = error
            pending.discard(key)
