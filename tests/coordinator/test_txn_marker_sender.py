"""The marker sender: one connection per leader, WriteTxnMarkers v1 over it, a failed send queued again and
retried, scripted connections instead of brokers."""
import asyncio

from kafkalab.coordinator.transaction.marker_sender import TransactionMarkerSender
from kafkalab.protocol import ApiKey, ErrorCode as E, response_class

from .test_txn_coordinator import Env, S, begin

R = response_class(ApiKey.WRITE_TXN_MARKERS)


def ok_response(body, code=E.NONE):
    return R(markers=tuple(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(
        R.WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(
            R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code) for p in t.partition_indexes))
        for t in m.topics)) for m in body.markers))


class FakeConnection:
    def __init__(self, log, fail_first):
        self.log = log
        self.fail_first = fail_first
        self.closed = False
        self.in_flight = 0

    async def send(self, api_key, version, body):
        self.in_flight += 1
        assert self.in_flight == 1                     # one request in flight per broker
        try:
            await asyncio.sleep(0)
            self.log.append((api_key, version, body))
            if self.fail_first:
                self.fail_first -= 1
                raise ConnectionError("broker down")
            return ok_response(body)
        finally:
            self.in_flight -= 1

    def close(self):
        self.closed = True


def test_markers_go_out_and_a_failed_send_is_retried():
    async def run():
        env = Env()
        sent, connections = [], []

        def connect(host, port, client_id):
            assert (host, port, client_id) == ("b1", 9093, "0")
            connections.append(FakeConnection(sent, fail_first=1 if not connections else 0))
            return connections[-1]
        sender = TransactionMarkerSender(env.markers, lambda b: ("b1", 9093) if b == 1 else None, connect, "0",
                                         retry_backoff_ms=1)
        pid, epoch = begin(env, (("a", 0), ("a", 1)))
        assert env.end(pid, epoch) == E.NONE
        for _ in range(200):
            if env.meta().state == S.COMPLETE_COMMIT:
                break
            await asyncio.sleep(0.005)
        sender.shutdown()
        return env, sent, connections
    env, sent, connections = asyncio.run(run())
    assert env.meta().state == S.COMPLETE_COMMIT
    assert [(k, v) for k, v, _ in sent] == [(ApiKey.WRITE_TXN_MARKERS, 1)] * 2        # the failure, then the retry
    m = sent[-1][2].markers[0]
    assert (m.transaction_result, m.coordinator_epoch, [(t.name, t.partition_indexes) for t in m.topics]) == \
        (True, 5, [("a", (0, 1))])
    assert connections[0].closed and len(connections) == 2


def test_no_endpoint_keeps_the_markers_queued():
    async def run():
        env = Env()
        sender = TransactionMarkerSender(env.markers, lambda b: None, lambda *a: None, "0", retry_backoff_ms=1)
        pid, epoch = begin(env)
        env.end(pid, epoch)
        await asyncio.sleep(0.02)
        sender.shutdown()
        return env
    env = asyncio.run(run())
    assert env.meta().state == S.PREPARE_COMMIT and env.markers.brokers_with_work() == [1]
