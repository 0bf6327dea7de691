"""The producer against real brokers (kafkalab, Tansu, noida-db): every acks and compression, read back with
confluent-kafka identically; keys routed like Java; idempotent retries are no-ops; stale metadata is refreshed."""
import time

import pytest

from kafkalab.clients import Admin, Producer
from kafkalab.clients.producer.partitioner import java_partition
from kafkalab.protocol import ApiKey, ErrorCode, decode_response, encode_response

from ._proxy import KafkaProxy
from .conftest import unique

confluent_kafka = pytest.importorskip("confluent_kafka")

BASE_TS = 1_700_000_000_000


def make_topic(broker, partitions: int = 2) -> str:
    name = unique("p")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([(name, partitions, 1)])
    return name


def read_back(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 15.0) -> list:
    """Everything in ``topic`` as (partition, offset, key, value, headers, timestamp), read by confluent-kafka."""
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g"),
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "socket.timeout.ms": 5000, "api.version.request": True})
    c.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]))
        time.sleep(0.2)                    # anything beyond ``count`` would be a duplicate: make it visible
        while True:
            m = c.poll(0.2)
            if m is None:
                break
            if not m.error():
                out.append((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()),
                            m.timestamp()[1]))
    finally:
        c.close()
    return sorted(out)


def sample(n: int = 12):
    recs = []
    for i in range(n):
        key = None if i % 5 == 4 else f"key-{i % 3}".encode()
        value = None if i == 7 else (b"" if i == 3 else f"value-{i}-".encode() * (i + 1))
        headers = () if i % 2 else (("h1", b"x"), ("h1", b""), ("naïve", bytes([0, 255])))
        recs.append((key, value, headers, BASE_TS + i))
    return recs


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_every_acks_and_compression_read_back_identically(broker, acks, compression):
    topic = make_topic(broker, 2)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "acks": acks, "compression.type": compression,
            "linger.ms": 2}
    records = sample()
    with Producer(conf) as p:
        futures = [p.send(topic, v, key=k, headers=h, timestamp=ts) for k, v, h, ts in records]
        p.flush(20)
        metas = [f.result(0) for f in futures]
    expected = []
    counters = {}
    for (k, v, h, ts), md in zip(records, metas):
        assert md.topic == topic and md.timestamp == ts
        if k is not None:
            assert md.partition == java_partition(k, 2)
        if acks == "0":
            assert md.offset == -1
        off = counters.get(md.partition, 0)
        counters[md.partition] = off + 1
        if acks != "0":
            assert md.offset == off
        expected.append((md.partition, off, k, v, tuple(h), ts))
    assert read_back(broker.bootstrap_servers, topic, 2, len(records)) == sorted(expected)


def test_linger_and_batch_size_shape_the_requests(broker):
    topic = make_topic(broker, 1)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200, "batch.size": 100_000}
    with Producer(conf, trace=True) as p:
        futures = [p.send(topic, b"x" * 10, partition=0) for _ in range(50)]
        [f.result(10) for f in futures]
        lingered = len(p.trace.of("Produce"))
    assert lingered == 1                                        # 50 records, one batch, one request
    conf.update({"linger.ms": 0, "batch.size": 200, "max.in.flight.requests.per.connection": 1})
    with Producer(conf, trace=True) as p:
        futures = [p.send(topic, b"x" * 10, partition=0) for _ in range(50)]
        p.flush(10)
        offsets = [f.result(0).offset for f in futures]
        produces = p.trace.of("Produce")
    assert offsets == list(range(50, 100))
    assert len(produces) >= 50 * 30 // 200
    from kafkalab.records import decode_batch
    sizes = [len(decode_batch(pd.records).records) for e in produces for t in e.request.body.topic_data
             for pd in t.partition_data]
    assert sum(sizes) == 50 and max(sizes) <= 200 // 30 + 1


def test_keyless_records_stick_to_one_partition_per_batch(broker):
    topic = make_topic(broker, 4)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5000, "batch.size": 1000}
    with Producer(conf, trace=True) as p:
        futures = [p.send(topic, b"v" * 90) for _ in range(200)]
        p.flush(10)
        metas = [f.result(0) for f in futures]
        produces = p.trace.of("Produce")
    from kafkalab.clients.producer.accumulator import estimate_size
    from kafkalab.records import decode_batch
    per_batch = (1000 - 61) // estimate_size(None, b"v" * 90, ())     # records that fit in batch.size
    parts = [m.partition for m in metas]
    runs = [len(list(g)) for _, g in __import__("itertools").groupby(parts)]
    # 1000 bytes are reached in the second batch: the switch waits until that one is full too
    assert len(set(parts)) > 1 and min(runs[:-1]) >= 2 * per_batch
    counts = [len(decode_batch(pd.records).records) for e in produces for t in e.request.body.topic_data
              for pd in t.partition_data]
    assert sum(counts) == 200
    assert sum(c != per_batch for c in counts) <= 1              # only the last open batch, flushed, is not full


def produce_through_lost_answer(broker, topic):
    """Send three records through a proxy that swallows the first Produce answer (after the broker wrote it)."""
    dropped = []

    def drop_first_produce_answer(api_key, version, frame, n):
        if api_key == ApiKey.PRODUCE and n == 1:
            dropped.append(frame)
            return "drop"
        return None
    with KafkaProxy(broker.bootstrap_servers, drop_first_produce_answer) as proxy:
        conf = {"bootstrap.servers": proxy.bootstrap_servers, "linger.ms": 0, "retry.backoff.ms": 20,
                "request.timeout.ms": 3000}
        with Producer(conf, trace=True) as p:
            mds = [p.send(topic, f"r{i}".encode(), key=b"k", partition=0).result(15) for i in range(3)]
            produces = p.trace.of("Produce")
            pid = p.transaction_manager.producer_id
    assert dropped, "the proxy never saw a Produce answer"
    return mds, produces, pid


def test_idempotent_retry_of_a_lost_answer_is_a_no_op(broker):
    broker.lacks("idempotence")
    topic = make_topic(broker, 1)
    mds, produces, pid = produce_through_lost_answer(broker, topic)
    assert [m.offset for m in mds[1:]] == [1, 2]
    first, retry = produces[0], produces[1]
    assert first.response is None and "disconnected" in first.error
    assert first.request.body.topic_data == retry.request.body.topic_data        # the very same batch bytes
    from kafkalab.records import decode_batch
    b = decode_batch(retry.request.body.topic_data[0].partition_data[0].records)
    assert (b.producer_id, b.base_sequence) == (pid, 0)
    code = retry.response.body.responses[0].partition_responses[0].error_code
    assert code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
    got = read_back(broker.bootstrap_servers, topic, 1, 3)
    assert [(o, v) for _, o, _, v, _, _ in got] == [(0, b"r0"), (1, b"r1"), (2, b"r2")]   # no duplicate


def test_duplicate_is_answered_with_the_original_offset(broker):
    """Kafka answers a duplicate of one of the producer's last five batches with NONE and the offset it was
    first written at, so the retried record's metadata is complete."""
    broker.lacks("duplicate_offset")
    topic = make_topic(broker, 1)
    mds, produces, _ = produce_through_lost_answer(broker, topic)
    assert [m.offset for m in mds] == [0, 1, 2]
    assert produces[1].response.body.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_without_idempotence_the_same_retry_duplicates(broker):
    """The contrast for the lab: the same lost answer, idempotence off, and the record is written twice."""
    topic = make_topic(broker, 1)

    def drop_first(api_key, version, frame, n):
        return "drop" if api_key == ApiKey.PRODUCE and n == 1 else None
    with KafkaProxy(broker.bootstrap_servers, drop_first) as proxy:
        conf = {"bootstrap.servers": proxy.bootstrap_servers, "linger.ms": 0, "retry.backoff.ms": 20,
                "enable.idempotence": False, "acks": "all"}
        with Producer(conf) as p:
            md = p.send(topic, b"once?", partition=0).result(15)
    assert md.offset == 1
    assert [v for _, _, _, v, _, _ in read_back(broker.bootstrap_servers, topic, 1, 2)] == [b"once?", b"once?"]


def test_stale_metadata_error_refreshes_then_retries(broker):
    topic = make_topic(broker, 1)

    def not_leader_once(api_key, version, frame, n):
        if api_key != ApiKey.PRODUCE or n != 1:
            return None
        resp = decode_response(frame, api_key, version)
        t = resp.body.responses[0]
        part = t.partition_responses[0]._replace(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, base_offset=-1)
        body = resp.body._replace(responses=(t._replace(partition_responses=(part,)),))
        return encode_response(type(resp)(resp.header, body, resp.api_key, resp.api_version))
    with KafkaProxy(broker.bootstrap_servers, not_leader_once) as proxy:
        conf = {"bootstrap.servers": proxy.bootstrap_servers, "linger.ms": 0, "retry.backoff.ms": 20,
                "enable.idempotence": False, "acks": "1"}
        with Producer(conf, trace=True) as p:
            md = p.send(topic, b"v", partition=0).result(15)
            names = [e.api_name for e in p.trace if e.api_name in ("Produce", "Metadata")]
    # the write happened before the tampered answer: the retry lands at offset 1 (no idempotence here)
    assert md.offset == 1
    i = names.index("Produce")
    assert names[i:i + 3] == ["Produce", "Metadata", "Produce"]


def test_metadata_max_age_refreshes_in_the_background(broker):
    topic = make_topic(broker, 1)
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "metadata.max.age.ms": 100}, trace=True) as p:
        p.send(topic, b"v").result(10)
        before = len(p.trace.of("Metadata"))
        deadline = time.monotonic() + 10        # three refreshes take 0.3 s; a loaded machine may take longer
        while len(p.trace.of("Metadata")) - before < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = len(p.trace.of("Metadata"))
    assert after - before >= 3


def test_delivery_timeout_and_unknown_topic(broker):
    conf = {"bootstrap.servers": broker.bootstrap_servers, "max.block.ms": 300}
    if broker.name == "kafkalab":
        with Producer(conf) as p:
            fut = p.send("no-such-topic-" + unique("x"), b"v", partition=5)
            with pytest.raises(Exception) as e:
                fut.result(10)
            assert "not present in metadata" in str(e.value) or "Invalid partition" in str(e.value)


def test_callbacks_and_context_manager(broker):
    topic = make_topic(broker, 1)
    seen = []
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        for i in range(3):
            p.send(topic, str(i), on_delivery=lambda err, md: seen.append((err, md.offset if md else None)))
    assert seen == [(None, 0), (None, 1), (None, 2)]
    with pytest.raises(Exception, match="closed"):
        p.send(topic, b"late")


def test_a_failed_batch_bumps_the_epoch_and_later_records_still_go_through(broker):
    """A batch the broker rejects for good (MESSAGE_TOO_LARGE) leaves a sequence gap: the idempotent producer
    bumps its epoch locally (no request; Java's bumpIdempotentProducerEpoch), sequences restart at 0, and the
    broker accepts the higher epoch of the same producer id."""
    broker.lacks("max_message_bytes")
    topic = unique("p")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([(topic, 1, 1, {"max.message.bytes": "2000"})])
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}, trace=True) as p:
        assert p.send(topic, b"small", partition=0).result(10).offset == 0
        with pytest.raises(Exception) as e:
            p.send(topic, b"x" * 5000, partition=0).result(10)
        assert e.value.error_code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE)
        after = p.send(topic, b"after", partition=0).result(10)
        inits = p.trace.of("InitProducerId")
        produces = p.trace.of("Produce")
        pid = p.transaction_manager.producer_id
    assert after.offset == 1
    assert len(inits) == 1 and inits[0].response.body.producer_id == pid
    from kafkalab.records import decode_batch
    last = decode_batch(produces[-1].request.body.topic_data[0].partition_data[0].records)
    assert (last.producer_id, last.producer_epoch, last.base_sequence) == (pid, 1, 0)
    assert [v for _, _, _, v, _, _ in read_back(broker.bootstrap_servers, topic, 1, 2)] == [b"small", b"after"]
