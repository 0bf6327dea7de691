"""The transactional producer end to end against a scripted broker: which requests go out, in which order, with
which fields, and what each injected error does to the application's calls."""
import threading

import pytest

from kafkalab.clients import Producer
from kafkalab.clients.config import producer_config
from kafkalab.clients.consumer import ConsumerGroupMetadata
from kafkalab.clients.producer.transaction_state import (ProducerFencedError, State, TransactionAbortedError,
                                                         TransactionError, TransactionStateError)
from kafkalab.common.config import ConfigException
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, response_class
from kafkalab.records import decode_batches

from ._fake_broker import FakeBroker

E = ErrorCode
AV, M, P = response_class(ApiKey.API_VERSIONS), response_class(ApiKey.METADATA), response_class(ApiKey.PRODUCE)
FC, IPI = response_class(ApiKey.FIND_COORDINATOR), response_class(ApiKey.INIT_PRODUCER_ID)
APT, AOT = response_class(ApiKey.ADD_PARTITIONS_TO_TXN), response_class(ApiKey.ADD_OFFSETS_TO_TXN)
TOC, ET = response_class(ApiKey.TXN_OFFSET_COMMIT), response_class(ApiKey.END_TXN)

RANGES = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9), ApiKey.PRODUCE: (3, 12),
          ApiKey.FIND_COORDINATOR: (0, 3), ApiKey.INIT_PRODUCER_ID: (0, 4), ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
          ApiKey.ADD_OFFSETS_TO_TXN: (0, 4), ApiKey.END_TXN: (0, 5), ApiKey.TXN_OFFSET_COMMIT: (0, 5)}


class TxnBroker:
    """One broker that is leader of ``out-0``/``out-1`` and every coordinator. ``errors[api_key]`` is a list of
    error codes answered (in order) before the API succeeds; ``requests`` keeps (api_key, version, body)."""

    def __init__(self, ranges=None):
        self.ranges = dict(RANGES if ranges is None else ranges)
        self.errors: dict[int, list] = {}
        self.requests: list = []
        self.epoch = -1
        self.offsets = {0: 0, 1: 0}
        self.lock = threading.Lock()
        self.fb = FakeBroker(self.handle)

    def __enter__(self):
        self.fb.__enter__()
        return self

    def __exit__(self, *exc):
        self.fb.__exit__(*exc)

    @property
    def bootstrap_servers(self):
        return self.fb.bootstrap_servers

    def sent(self, *keys):
        with self.lock:
            return [(k, v, b) for k, v, b in self.requests if not keys or k in keys]

    def names(self):
        skip = (ApiKey.API_VERSIONS, ApiKey.METADATA)
        return [ApiKey(k).name for k, _, _ in self.sent() if k not in skip]

    def _error(self, key):
        queue = self.errors.get(key)
        return queue.pop(0) if queue else E.NONE

    def handle(self, key, version, request):
        body = request.body if request is not None else None
        with self.lock:
            self.requests.append((key, version, body))
        if key == ApiKey.API_VERSIONS:
            return AV(error_code=0, api_keys=tuple(AV.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                                   for k, (lo, hi) in self.ranges.items()))
        if key == ApiKey.METADATA:
            parts = tuple(M.MetadataResponsePartition(partition_index=i, leader_id=0, replica_nodes=(0,),
                                                      isr_nodes=(0,)) for i in (0, 1))
            return M(brokers=(M.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.fb.port),),
                     controller_id=0, topics=(M.MetadataResponseTopic(name="out", partitions=parts),))
        code = self._error(key)
        if key == ApiKey.FIND_COORDINATOR:
            return FC(error_code=code, node_id=0 if not code else -1, host="127.0.0.1" if not code else "",
                      port=self.fb.port if not code else -1)
        if key == ApiKey.INIT_PRODUCER_ID:
            if code:
                return IPI(error_code=code, producer_id=-1, producer_epoch=-1)
            self.epoch += 1
            return IPI(error_code=0, producer_id=42, producer_epoch=self.epoch)
        if key == ApiKey.ADD_PARTITIONS_TO_TXN:
            return APT(results_by_topic_v3_and_below=tuple(APT.AddPartitionsToTxnTopicResult(
                name=t.name, results_by_partition=tuple(APT.AddPartitionsToTxnPartitionResult(
                    partition_index=p, partition_error_code=code) for p in t.partitions))
                for t in body.v3_and_below_topics))
        if key == ApiKey.PRODUCE:
            out = []
            for t in body.topic_data:
                parts = []
                for pd in t.partition_data:
                    n = sum(len(b.records) for b in decode_batches(pd.records))
                    parts.append(P.PartitionProduceResponse(index=pd.index, error_code=code,
                                                            base_offset=-1 if code else self.offsets[pd.index]))
                    if not code:
                        self.offsets[pd.index] += n
                out.append(P.TopicProduceResponse(name=t.name, partition_responses=tuple(parts)))
            return P(responses=tuple(out))
        if key == ApiKey.ADD_OFFSETS_TO_TXN:
            return AOT(error_code=code)
        if key == ApiKey.TXN_OFFSET_COMMIT:
            return TOC(topics=tuple(TOC.TxnOffsetCommitResponseTopic(name=t.name, partitions=tuple(
                TOC.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in t.partitions)) for t in body.topics))
        if key == ApiKey.END_TXN:
            return ET(error_code=code)
        return None


def cause_code(error):
    """The error code behind ``error``: its own, or the one of the error that put the producer in error state."""
    while not isinstance(error, KafkaProtocolError) and error is not None:
        error = error.__cause__
    return None if error is None else error.error_code


def producer(broker, **extra):
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "tx-1", "linger.ms": 0,
              "retry.backoff.ms": 10, "max.block.ms": 10_000}
    config.update(extra)
    return Producer(config)


@pytest.fixture
def broker():
    with TxnBroker() as b:
        yield b


def test_a_committed_transaction_on_the_wire(broker):
    with producer(broker, **{"transaction.timeout.ms": 30_000}) as p:
        p.init_transactions()
        p.begin_transaction()
        futures = [p.send("out", b"a", partition=0), p.send("out", b"b", partition=1)]
        p.commit_transaction()
        assert [f.result(5).offset for f in futures] == [0, 0]
        assert broker.names() == ["FIND_COORDINATOR", "INIT_PRODUCER_ID", "ADD_PARTITIONS_TO_TXN", "PRODUCE",
                                  "END_TXN"]
        (_, v, find), = broker.sent(ApiKey.FIND_COORDINATOR)
        assert (find.key, find.key_type) == ("tx-1", 1)
        (_, _, init), = broker.sent(ApiKey.INIT_PRODUCER_ID)
        assert (init.transactional_id, init.transaction_timeout_ms) == ("tx-1", 30_000)
        (_, v, add), = broker.sent(ApiKey.ADD_PARTITIONS_TO_TXN)
        assert v == 3 and [(t.name, sorted(t.partitions)) for t in add.v3_and_below_topics] == [("out", [0, 1])]
        (_, v, produce), = broker.sent(ApiKey.PRODUCE)
        assert v == 11 and produce.transactional_id == "tx-1"     # v12 would mean "the leader adds it"
        batches = [b for t in produce.topic_data for pd in t.partition_data for b in decode_batches(pd.records)]
        assert all(b.is_transactional and (b.producer_id, b.producer_epoch, b.base_sequence) == (42, 0, 0)
                   for b in batches)
        (_, v, end), = broker.sent(ApiKey.END_TXN)
        assert v == 4 and (end.transactional_id, end.producer_id, end.producer_epoch, end.committed) == \
            ("tx-1", 42, 0, True)
        assert p.transaction_manager.state is State.READY


def test_sends_before_init_or_outside_a_transaction_are_refused(broker):
    with producer(broker) as p:
        with pytest.raises(TransactionStateError, match="before completing a call to initTransactions"):
            p.send("out", b"x")
        p.init_transactions()
        with pytest.raises(TransactionStateError, match="Cannot call send in state READY"):
            p.send("out", b"x")
        with pytest.raises(TransactionStateError, match="Invalid transition attempted from state READY to state "
                                                        "COMMITTING_TRANSACTION"):
            p.commit_transaction()


def test_a_non_transactional_producer_has_no_transactional_methods(broker):
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(TransactionStateError, match="transactional.id configuration property"):
            p.init_transactions()


def test_transactional_configs_are_accepted_as_java_reads_them():
    cfg = producer_config({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "orders",
                           "transaction.timeout.ms": 5000})
    assert (cfg["transactional.id"], cfg["transaction.timeout.ms"], cfg["client.id"]) == ("orders", 5000,
                                                                                           "producer-orders")
    assert cfg["enable.idempotence"] is True                 # implied
    assert producer_config({"bootstrap.servers": "h:1", "transactional.id": "o", "client.id": "c"})["client.id"] == "c"
    with pytest.raises(ConfigException, match="String may not be empty"):
        producer_config({"bootstrap.servers": "127.0.0.1:1", "transactional.id": ""})


def test_transactional_id_needs_idempotence():
    with pytest.raises(ConfigException, match="Cannot set a transactional.id without also enabling idempotence"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "enable.idempotence": False})
    with pytest.raises(ConfigException, match="Cannot set a transactional.id without also enabling idempotence"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "acks": "1"})
    with pytest.raises(ConfigException, match="Cannot set a transactional.id without also enabling idempotence"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t",
                  "max.in.flight.requests.per.connection": 6})
    with pytest.raises(ConfigException, match="max.in.flight.requests.per.connection to at most 5"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "enable.idempotence": True,
                  "max.in.flight.requests.per.connection": 6})


def test_an_empty_transaction_sends_no_end_txn(broker):
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.commit_transaction()
        p.begin_transaction()
        p.abort_transaction()
        assert broker.names() == ["FIND_COORDINATOR", "INIT_PRODUCER_ID"]


def test_coordinator_moves_and_concurrent_transactions_are_retried(broker):
    broker.errors = {ApiKey.FIND_COORDINATOR: [E.COORDINATOR_NOT_AVAILABLE],
                     ApiKey.INIT_PRODUCER_ID: [E.NOT_COORDINATOR, E.CONCURRENT_TRANSACTIONS],
                     ApiKey.ADD_PARTITIONS_TO_TXN: [E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS],
                     ApiKey.END_TXN: [E.COORDINATOR_NOT_AVAILABLE, E.CONCURRENT_TRANSACTIONS]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        f = p.send("out", b"a", partition=0)
        p.commit_transaction()
        assert f.result(5).offset == 0
    assert broker.names() == ["FIND_COORDINATOR", "FIND_COORDINATOR",        # not available, then found
                              "INIT_PRODUCER_ID", "FIND_COORDINATOR",        # NOT_COORDINATOR: look again
                              "INIT_PRODUCER_ID", "INIT_PRODUCER_ID",        # CONCURRENT_TRANSACTIONS, then ok
                              "ADD_PARTITIONS_TO_TXN", "ADD_PARTITIONS_TO_TXN", "ADD_PARTITIONS_TO_TXN", "PRODUCE",
                              "END_TXN", "FIND_COORDINATOR", "END_TXN", "END_TXN"]


def test_fenced_at_commit_leaves_only_close(broker):
    broker.errors = {ApiKey.END_TXN: [E.PRODUCER_FENCED]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("out", b"a", partition=0)
        with pytest.raises(ProducerFencedError):
            p.commit_transaction()
        assert p.transaction_manager.state is State.FATAL_ERROR
        with pytest.raises(ProducerFencedError, match="fenced by another producer with the same transactionalId"):
            p.begin_transaction()
        with pytest.raises(TransactionError, match="previous transactional or idempotent request has failed"):
            p.send("out", b"b")


def test_fenced_at_init_older_coordinator_answers_invalid_producer_epoch(broker):
    broker.errors = {ApiKey.INIT_PRODUCER_ID: [E.INVALID_PRODUCER_EPOCH]}
    with producer(broker) as p:
        with pytest.raises(ProducerFencedError):
            p.init_transactions()


def test_a_failed_record_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch(broker):
    broker.errors = {ApiKey.PRODUCE: [E.INVALID_RECORD]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        failed = p.send("out", b"bad", partition=0)
        with pytest.raises((KafkaProtocolError, TransactionError)) as info:
            p.commit_transaction()
        assert cause_code(info.value) == E.INVALID_RECORD      # raised as is, or as the cause of the error state
        assert failed.exception(5).error_code == E.INVALID_RECORD
        assert p.transaction_manager.state is State.ABORTABLE_ERROR
        with pytest.raises(TransactionError, match="in an error state"):
            p.send_offsets_to_transaction({("out", 0): 1}, ConsumerGroupMetadata("g"))
        p.abort_transaction()
        assert (p.transaction_manager.producer_id, p.transaction_manager.producer_epoch) == (42, 1)
        p.begin_transaction()
        ok = p.send("out", b"good", partition=0)
        p.commit_transaction()
        assert ok.result(5).offset == 0
    ends = [b.committed for _, _, b in broker.sent(ApiKey.END_TXN)]
    assert ends == [False, True]
    inits = [(v, b.producer_id, b.producer_epoch) for _, v, b in broker.sent(ApiKey.INIT_PRODUCER_ID)]
    assert inits == [(4, -1, -1), (4, 42, 0)]                  # KIP-360: the bump names the current id and epoch
    (_, _, last), = broker.sent(ApiKey.PRODUCE)[-1:]
    batch, = decode_batches(last.topic_data[0].partition_data[0].records)
    assert (batch.producer_epoch, batch.base_sequence) == (1, 0)


def test_without_init_producer_id_v3_the_abort_does_not_bump():
    ranges = dict(RANGES)
    ranges[ApiKey.INIT_PRODUCER_ID] = (0, 2)
    with TxnBroker(ranges) as broker:
        broker.errors = {ApiKey.PRODUCE: [E.INVALID_RECORD]}
        with producer(broker) as p:
            p.init_transactions()
            p.begin_transaction()
            p.send("out", b"bad", partition=0)
            with pytest.raises((KafkaProtocolError, TransactionError)):
                p.commit_transaction()
            p.abort_transaction()
            assert p.transaction_manager.producer_epoch == 0
        assert len(broker.sent(ApiKey.INIT_PRODUCER_ID)) == 1


def test_abort_drops_the_records_not_yet_sent(broker):
    with producer(broker, **{"linger.ms": 60_000, "batch.size": 1_000_000}) as p:
        p.init_transactions()
        p.begin_transaction()
        queued = p.send("out", b"never", partition=1)
        p.abort_transaction()
        assert isinstance(queued.exception(5), TransactionAbortedError)
    assert not broker.sent(ApiKey.PRODUCE)


def test_offsets_go_to_the_group_coordinator_inside_the_transaction(broker):
    broker.errors = {ApiKey.TXN_OFFSET_COMMIT: [E.COORDINATOR_LOAD_IN_PROGRESS]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("out", b"a", partition=0)
        p.send_offsets_to_transaction({("in", 0): 17}, ConsumerGroupMetadata("grp", 4, "member-a", "inst-1"))
        p.commit_transaction()
    assert broker.names() == ["FIND_COORDINATOR", "INIT_PRODUCER_ID", "ADD_PARTITIONS_TO_TXN", "PRODUCE",
                              "ADD_OFFSETS_TO_TXN", "FIND_COORDINATOR", "TXN_OFFSET_COMMIT", "TXN_OFFSET_COMMIT",
                              "END_TXN"]
    (_, _, add), = broker.sent(ApiKey.ADD_OFFSETS_TO_TXN)
    assert (add.transactional_id, add.producer_id, add.group_id) == ("tx-1", 42, "grp")
    finds = [(b.key, b.key_type) for _, _, b in broker.sent(ApiKey.FIND_COORDINATOR)]
    assert finds == [("tx-1", 1), ("grp", 0)]
    _, v, commit = broker.sent(ApiKey.TXN_OFFSET_COMMIT)[-1]
    assert v == 4
    assert (commit.group_id, commit.generation_id, commit.member_id, commit.group_instance_id) == \
        ("grp", 4, "member-a", "inst-1")
    assert [(t.name, p.partition_index, p.committed_offset) for t in commit.topics for p in t.partitions] == \
        [("in", 0, 17)]


def test_txn_offset_commit_below_v3_carries_no_member():
    ranges = dict(RANGES)
    ranges[ApiKey.TXN_OFFSET_COMMIT] = (0, 2)
    with TxnBroker(ranges) as broker, producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send_offsets_to_transaction({("in", 0): 3}, ConsumerGroupMetadata("grp", 4, "member-a", None))
        p.commit_transaction()
        (_, v, commit), = broker.sent(ApiKey.TXN_OFFSET_COMMIT)
        assert v == 2 and commit.generation_id == -1 and commit.member_id == ""


def test_a_rebalanced_member_cannot_commit_offsets(broker):
    broker.errors = {ApiKey.TXN_OFFSET_COMMIT: [E.ILLEGAL_GENERATION]}
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        with pytest.raises(KafkaProtocolError, match="consumer group metadata mismatch"):
            p.send_offsets_to_transaction({("in", 0): 3}, ConsumerGroupMetadata("grp", 4, "member-a", None))
        p.abort_transaction()
        assert p.transaction_manager.state is State.READY


def test_bad_group_metadata_is_refused(broker):
    with producer(broker) as p:
        p.init_transactions()
        p.begin_transaction()
        with pytest.raises(ValueError, match="has generationId > 0 but member.id"):
            p.send_offsets_to_transaction({("in", 0): 3}, ConsumerGroupMetadata("grp", 4, "", None))
        with pytest.raises(ValueError, match="could not be null"):
            p.send_offsets_to_transaction({("in", 0): 3}, None)
        with pytest.raises(ValueError, match="Invalid offset"):
            p.send_offsets_to_transaction({("in", 0): -3}, "grp")
        assert p.transaction_manager.state is State.IN_TRANSACTION


def test_close_aborts_an_open_transaction(broker):
    p = producer(broker)
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"a", partition=0).result(5)
    p.close()
    (_, _, end), = broker.sent(ApiKey.END_TXN)
    assert end.committed is False
