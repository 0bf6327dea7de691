"""A scripted broker that answers the transaction admin requests (DescribeTransactions, ListTransactions,
DescribeProducers, WriteTxnMarkers) from fixed facts, with error codes queued per item: the admin client's and
``kafkalab transactions``' tests run against it (the real broker side is tested in its own rooms)."""
from __future__ import annotations

from typing import NamedTuple

from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.trace import DEFAULT_ADVERTISED, ScriptedListener, ScriptedReplies

TXN_APIS = ((ApiKey.DESCRIBE_PRODUCERS, 0, 0), (ApiKey.DESCRIBE_TRANSACTIONS, 0, 0),
            (ApiKey.LIST_TRANSACTIONS, 0, 1), (ApiKey.WRITE_TXN_MARKERS, 0, 1))


class Txn(NamedTuple):
    producer_id: int
    state: str = "Ongoing"
    producer_epoch: int = 0
    timeout_ms: int = 60_000
    start_ms: int = -1
    partitions: tuple = ()                 # ((topic, partition), ...)


class Producer(NamedTuple):
    producer_id: int
    producer_epoch: int = 0
    last_sequence: int = 0
    last_timestamp: int = 0
    coordinator_epoch: int = -1
    current_txn_start_offset: int = -1


class TxnReplies(ScriptedReplies):
    """``transactions``: {transactional id: Txn}; ``producers``: {(topic, partition): [Producer]}; ``errors``:
    {(api key, item): [error codes answered first, one per request]} where the item is the transactional id
    (65), None (66) or (topic, partition) (61, 27). ``advertised``: replaces the transaction APIs' ranges."""

    def __init__(self, topics=None, transactions=None, producers=None, errors=None, txn_apis=TXN_APIS):
        super().__init__(tuple(DEFAULT_ADVERTISED) + tuple(txn_apis), topics=topics or {}, auto_create=False)
        self.transactions = dict(transactions or {})
        self.producers = dict(producers or {})
        self.errors = {k: list(v) for k, v in (errors or {}).items()}
        self._handlers.update({ApiKey.DESCRIBE_TRANSACTIONS: self.describe_transactions,
                               ApiKey.LIST_TRANSACTIONS: self.list_transactions,
                               ApiKey.DESCRIBE_PRODUCERS: self.describe_producers,
                               ApiKey.WRITE_TXN_MARKERS: self.write_txn_markers})

    def _error(self, api_key, item) -> int:
        queued = self.errors.get((api_key, item))
        return queued.pop(0) if queued else ErrorCode.NONE

    def describe_transactions(self, request, listener=None):
        cls = response_class(ApiKey.DESCRIBE_TRANSACTIONS)
        states = []
        for tid in request.body.transactional_ids:
            code = self._error(ApiKey.DESCRIBE_TRANSACTIONS, tid)
            txn = self.transactions.get(tid)
            if code == ErrorCode.NONE and txn is None:
                code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            if code != ErrorCode.NONE:
                states.append(cls.TransactionState(error_code=code, transactional_id=tid, transaction_state="",
                                                   producer_id=-1, producer_epoch=-1, topics=()))
                continue
            topics: dict = {}
            for topic, partition in txn.partitions:
                topics.setdefault(topic, []).append(partition)
            states.append(cls.TransactionState(
                error_code=0, transactional_id=tid, transaction_state=txn.state,
                transaction_timeout_ms=txn.timeout_ms, transaction_start_time_ms=txn.start_ms,
                producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                topics=tuple(cls.TopicData(topic=t, partitions=tuple(ps)) for t, ps in topics.items())))
        return cls(throttle_time_ms=0, transaction_states=tuple(states))

    def list_transactions(self, request, listener=None):
        cls = response_class(ApiKey.LIST_TRANSACTIONS)
        code = self._error(ApiKey.LIST_TRANSACTIONS, None)
        body = request.body
        states = [cls.TransactionState(transactional_id=tid, producer_id=t.producer_id, transaction_state=t.state)
                  for tid, t in sorted(self.transactions.items())
                  if (not body.state_filters or t.state in body.state_filters)
                  and (not body.producer_id_filters or t.producer_id in body.producer_id_filters)]
        return cls(throttle_time_ms=0, error_code=code, unknown_state_filters=(),
                   transaction_states=() if code else tuple(states))

    def describe_producers(self, request, listener=None):
        cls = response_class(ApiKey.DESCRIBE_PRODUCERS)
        topics = []
        for t in request.body.topics:
            partitions = []
            for p in t.partition_indexes:
                code = self._error(ApiKey.DESCRIBE_PRODUCERS, (t.name, p))
                active = () if code else tuple(cls.ProducerState(**s._asdict())
                                               for s in self.producers.get((t.name, p), ()))
                partitions.append(cls.PartitionResponse(partition_index=p, error_code=code, error_message=None,
                                                        active_producers=active))
            topics.append(cls.TopicResponse(name=t.name, partitions=tuple(partitions)))
        return cls(throttle_time_ms=0, topics=tuple(topics))

    def write_txn_markers(self, request, listener=None):
        cls = response_class(ApiKey.WRITE_TXN_MARKERS)
        markers = []
        for m in request.body.markers:
            topics = tuple(cls.WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(
                cls.WritableTxnMarkerPartitionResult(
                    partition_index=p, error_code=self._error(ApiKey.WRITE_TXN_MARKERS, (t.name, p)))
                for p in t.partition_indexes)) for t in m.topics)
            markers.append(cls.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
        return cls(markers=tuple(markers))


def sent(listener: ScriptedListener, api_key: int) -> list:
    """The requests of ``api_key`` the listener received, in order."""
    return [r.request for r in listener.requests if r.request is not None and r.request.api_key == api_key]
