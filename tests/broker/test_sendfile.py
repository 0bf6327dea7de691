"""Fetch responses whose record data goes out with sendfile, when the socket cannot take it all at once.

The socket server sends a large segment slice straight to the socket with ``os.sendfile`` while the transport
has nothing buffered, and hands whatever the socket did not take to the event loop's ``sendfile``, which waits
for room. Here the broker's send buffer is tiny (``socket.send.buffer.bytes=4096``) and the client reads only
after a pause, so every slice is cut short: the response must still arrive whole, byte for byte.
"""
from __future__ import annotations

import random
import time

from kafkalab import Cluster
from kafkalab.network import response_send
from kafkalab.protocol import ApiKey, decode_response, request_class
from kafkalab.records import build_batch, decode_batches

from ._raw_wire import Conn, request_frame

Produce = request_class(ApiKey.PRODUCE)
Fetch = request_class(ApiKey.FETCH)
PARTITIONS = 4


def test_a_fetch_response_larger_than_the_socket_buffer_arrives_whole(monkeypatch):
    direct = []
    original = response_send._sendfile_while_it_takes

    def spy(out_fd, in_fd, position, count):
        sent = original(out_fd, in_fd, position, count)
        direct.append((sent, count))
        return sent
    monkeypatch.setattr(response_send, "_sendfile_while_it_takes", spy)

    rnd = random.Random(7)
    values = {p: [rnd.randbytes(100_000) for _ in range(3)] for p in range(PARTITIONS)}   # incompressible
    with Cluster(brokers=1, overrides={"socket.send.buffer.bytes": "4096"}) as c:
        c.create_topic("big", PARTITIONS)
        with Conn(c.broker(0).bound_endpoints[0].port, timeout=20) as conn:
            for p, vs in values.items():
                batch = build_batch([(b"k%d" % i, v, [], 1_700_000_000_000 + i) for i, v in enumerate(vs)])
                answer = conn.call(Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(
                    Produce.TopicProduceData(name="big", partition_data=(
                        Produce.PartitionProduceData(index=p, records=batch),)),)), 9)
                assert answer.responses[0].partition_responses[0].error_code == 0
            conn.send(fetch_everything_frame())
            time.sleep(0.3)                          # let the broker fill its send buffer and wait
            frame = conn.recv_frame()
        assert frame is not None
    body = decode_response(frame, ApiKey.FETCH, 12).body
    got = {p.partition_index: p for t in body.responses for p in t.partitions}
    assert sorted(got) == list(range(PARTITIONS))
    for p, vs in values.items():
        assert got[p].error_code == 0
        records = [r for b in decode_batches(got[p].records) for r in b.records]
        assert [r.value for r in records] == vs
    # Every slice went out with sendfile, and the socket took only part of some directly: the rest went
    # through the loop's sendfile (the response above is whole, so both halves were right).
    assert len(direct) == PARTITIONS
    assert any(sent < count for sent, count in direct), direct


def fetch_everything_frame() -> bytes:
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                 session_epoch=-1, topics=(Fetch.FetchTopic(topic="big", partitions=tuple(
                     Fetch.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                     for p in range(PARTITIONS))),), forgotten_topics_data=(), rack_id="")
    return request_frame(body, 12, correlation_id=9)


# -- the counters of what went which way (kafkalab's own: Kafka has no metric for it) ----------------------------
COUNTERS = ("sendfile-bytes-total", "sendfile-sends-total", "copied-bytes-total", "copied-sends-total",
            "copied-file-bytes-total")


def test_send_counters_show_a_large_slice_sent_with_sendfile_and_a_small_one_copied():
    rnd = random.Random(11)
    big = build_batch([(b"big", rnd.randbytes(300_000), [], 1_700_000_000_000)])      # far above the threshold
    small = build_batch([(b"small", b"v" * 100, [], 1_700_000_000_000)])
    with Cluster(brokers=1) as c:
        c.create_topic("counted", 2)
        broker = c.broker(0)
        listener = broker.bound_endpoints[0].listener_name
        with Conn(broker.bound_endpoints[0].port, timeout=20) as conn:
            for p, batch in enumerate((big, small)):
                answer = conn.call(Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(
                    Produce.TopicProduceData(name="counted", partition_data=(
                        Produce.PartitionProduceData(index=p, records=batch),)),)), 9)
                assert answer.responses[0].partition_responses[0].error_code == 0
            large_fetch = counted_fetch(broker, listener, conn, "counted", 0)
            small_fetch = counted_fetch(broker, listener, conn, "counted", 1)
        totals = broker.metrics()
    records, response_size, delta = large_fetch
    assert len(records) == len(big)                              # stored as sent (two fields patched)
    assert delta["sendfile-bytes-total"] == len(big) and delta["sendfile-sends-total"] == 1
    assert delta["copied-file-bytes-total"] == 0                # the records never entered the process
    assert response_size - len(big) <= delta["copied-bytes-total"] < len(big)   # the header and fields only
    records, response_size, delta = small_fetch
    assert len(records) == len(small)
    assert delta["sendfile-bytes-total"] == 0 and delta["sendfile-sends-total"] == 0
    assert delta["copied-bytes-total"] >= response_size         # read by the handler, copied with the rest
    for name in COUNTERS:                                       # the broker's total sums its listeners
        assert totals[name] == sum(v for k, v in totals.items() if k.startswith(f"{name},listener="))
    assert totals["sendfile-bytes-total"] >= len(big)


def counted_fetch(broker, listener, conn, topic, partition):
    """One Fetch on ``conn``; returns its records, the response size (prefix included) and what the listener's
    counters added once the whole response is counted (a sendfile counts when done, maybe after the client
    read the last byte)."""
    def counters():
        metrics = broker.metrics()
        return {name: metrics.get(f"{name},listener={listener}", 0) for name in COUNTERS}
    before = counters()
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                 session_epoch=-1, topics=(Fetch.FetchTopic(topic=topic, partitions=(Fetch.FetchPartition(
                     partition=partition, fetch_offset=0, partition_max_bytes=1 << 20),)),),
                 forgotten_topics_data=(), rack_id="")
    conn.send(request_frame(body, 12, correlation_id=21))
    frame = conn.recv_frame()
    deadline = time.monotonic() + 5
    while True:
        delta = {name: value - before[name] for name, value in counters().items()}
        if delta["sendfile-bytes-total"] + delta["copied-bytes-total"] >= 4 + len(frame) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    partition_data = decode_response(frame, ApiKey.FETCH, 12).body.responses[0].partitions[0]
    assert partition_data.error_code == 0
    return bytes(partition_data.records), 4 + len(frame), delta
