"""Which offsets a request may see: one mapping from (replica id, the wire's isolation_level) to the storage's
FetchIsolation, used by Fetch and ListOffsets alike (Kafka's ``FetchIsolation.of(replicaId, isolationLevel)``).

The wire test puts an open transaction at the end of a partition (so last stable offset < high watermark <=
log end) and asks both APIs at both isolation levels."""
from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, decode_response, request_class
from kafkalab.records import SimpleRecord, build_batch, decode_batches
from kafkalab.storage import FetchIsolation
from kafkalab.storage.fetch_data_info import IsolationLevel

from tests.broker._raw_wire import Conn, request_frame

Fetch = request_class(ApiKey.FETCH)
ListOffsets = request_class(ApiKey.LIST_OFFSETS)
TOPIC = "isolation"


@pytest.mark.parametrize("replica_id, level, expected", [
    (-1, IsolationLevel.READ_UNCOMMITTED, FetchIsolation.HIGH_WATERMARK),
    (-1, IsolationLevel.READ_COMMITTED, FetchIsolation.TXN_COMMITTED),
    (-2, IsolationLevel.READ_COMMITTED, FetchIsolation.TXN_COMMITTED),    # a debugging consumer is a consumer
    (-1, 7, FetchIsolation.HIGH_WATERMARK),                               # unknown level: read_uncommitted
    (0, IsolationLevel.READ_UNCOMMITTED, FetchIsolation.LOG_END),         # followers read to the log end
    (3, IsolationLevel.READ_COMMITTED, FetchIsolation.LOG_END),
    (-3, IsolationLevel.READ_COMMITTED, FetchIsolation.LOG_END),          # the broker's own log-dir mover
])
def test_of_request(replica_id, level, expected):
    assert FetchIsolation.of_request(replica_id, level) is expected


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": "false"}) as c:
        c.create_topic(TOPIC, 1)

        def open_transaction():
            log = c.broker(0).replica_manager.partition_or_error(TOPIC, 0).log
            recs = [SimpleRecord(b"k", b"plain-%d" % i, (), 1_700_000_000_000) for i in range(3)]
            log.append_as_leader(build_batch(recs), leader_epoch=0)                     # offsets 0-2
            txn = [SimpleRecord(b"k", b"in-txn-%d" % i, (), 1_700_000_000_000) for i in range(2)]
            log.append_as_leader(build_batch(txn, producer_id=42, producer_epoch=0, base_sequence=0,
                                             transactional=True), leader_epoch=0)      # offsets 3-4, still open
            log.update_high_watermark(log.log_end_offset)
            return log.last_stable_offset, log.high_watermark, log.log_end_offset
        assert c.call(open_transaction) == (3, 5, 5)
        yield c


def _latest(port, replica_id, level):
    body = ListOffsets(replica_id=replica_id, isolation_level=level, topics=(ListOffsets.ListOffsetsTopic(
        name=TOPIC, partitions=(ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=-1),)),))
    with Conn(port) as c:
        c.send(request_frame(body, 7, 1))
        return decode_response(c.recv_frame(), ApiKey.LIST_OFFSETS, 7).body.topics[0].partitions[0].offset


def _fetch(port, level):
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=level, session_id=0,
                 session_epoch=-1, topics=(Fetch.FetchTopic(topic=TOPIC, partitions=(
                     Fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))
    with Conn(port) as c:
        c.send(request_frame(body, 11, 2))
        part = decode_response(c.recv_frame(), ApiKey.FETCH, 11).body.responses[0].partitions[0]
    return [b.last_offset for b in decode_batches(bytes(part.records))], part.aborted_transactions


def test_list_offsets_and_fetch_follow_the_isolation_level(cluster):
    port = cluster.broker(0).bound_endpoints[0].port
    assert _latest(port, -1, IsolationLevel.READ_UNCOMMITTED) == 5          # high watermark
    assert _latest(port, -1, IsolationLevel.READ_COMMITTED) == 3            # last stable offset
    assert _latest(port, -2, IsolationLevel.READ_COMMITTED) == 5            # not a client: the log end
    assert _fetch(port, IsolationLevel.READ_UNCOMMITTED) == ([2, 4], None)
    assert _fetch(port, IsolationLevel.READ_COMMITTED) == ([2], ())
