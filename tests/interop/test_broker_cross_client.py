"""Cross-client: what one client writes through the kafkalab broker, every other client reads identically.

Each writer fills a topic of its own once (a module-scoped fixture); then every reader reads it back and must
see the same keys, values, headers and timestamps, in the same order per partition. The stored log is the
referee: it must hold exactly what the writer sent. kcat can only write printable lines with one set of headers
for all records and stamps them with its own clock, so its records' timestamps are taken from the log.
"""
from __future__ import annotations

import time

import pytest

from ._broker_support import (CODECS, Rec, aiokafka_consume, aiokafka_produce, assert_same_records, by_partition,
                              confluent_consume, confluent_produce, kafka_python_consume, kafka_python_produce,
                              kafkajs, kafkajs_records, kcat, kcat_consume, kcat_lines, require_kafkajs, require_kcat,
                              sample_records, stored_batches, stored_records, unique)

pytestmark = [pytest.mark.interop,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")]

#: (writer, codec): every reader also decompresses what another client compressed -- librdkafka's raw snappy and
#: its lz4 frames, aiokafka's xerial snappy and cramjam lz4, kafkajs's gzip (the only codec kafkajs ships).
WRITERS = (("confluent-kafka", "gzip"), ("confluent-kafka", "lz4"), ("kafka-python", "gzip"),
           ("aiokafka", "snappy"), ("aiokafka", "lz4"), ("kafkajs", "gzip"), ("kcat", "zstd"), ("kcat", "snappy"))
READERS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")
KCAT_HEADERS = (("trace", b"kcat"), ("seq", b"1"), ("seq", b"again"))


def _write(cluster, writer: str, codec: str, topic: str) -> list[Rec]:
    bs = cluster.bootstrap_servers
    records = sample_records(writer, ascii_only=True, null_values=writer != "kcat")
    if writer == "confluent-kafka":
        confluent_produce(bs, topic, records, **{"compression.type": codec})
    elif writer == "kafka-python":
        kafka_python_produce(bs, topic, records, compression_type=codec)
    elif writer == "aiokafka":
        aiokafka_produce(bs, topic, records, compression_type=codec, enable_idempotence=True)
    elif writer == "kafkajs":
        kafkajs({"brokers": [bs], "action": "produce", "topic": topic,
                 "produce": {"idempotent": True, "compression": codec, "records": kafkajs_records(records)}})
    else:  # kcat: one run per partition, keys required, the same headers for every record, kcat's clock
        records = [r._replace(key=r.key or b"nokey", headers=KCAT_HEADERS) for r in records]
        header_args = [a for k, v in KCAT_HEADERS for a in ("-H", f"{k}={v.decode()}")]
        before = int(time.time() * 1000)
        for p in (0, 1):
            kcat(bs, "-P", "-t", topic, "-p", str(p), "-K:", *header_args, "-X", f"compression.codec={codec}",
                 "-X", "linger.ms=200",
                 input=kcat_lines([r for r in records if r.partition == p]))
        stored = stored_records(cluster, topic, (0, 1))
        assert all(before <= r.timestamp <= time.time() * 1000 for r in stored)
        sent, on_disk = by_partition(records), by_partition(stored)
        records = [r._replace(timestamp=s.timestamp) for p in (0, 1) for r, s in zip(sent[p], on_disk[p])]
    for p in (0, 1):
        codecs = {b.compression_type for b in stored_batches(cluster, topic, p)}
        if writer == "kcat":
            # librdkafka sends a batch uncompressed when compressing would not make it smaller (a small batch,
            # e.g. when kcat's stdin arrives in two reads); a codec disabled by librdkafka's feature checks
            # would leave *every* batch uncompressed, which this still catches.
            assert CODECS.index(codec) in codecs and codecs <= {CODECS.index(codec), 0}, codecs
        else:
            assert codecs == {CODECS.index(codec)}
    assert_same_records(stored_records(cluster, topic, (0, 1)), records, f"what {writer} stored")
    return records


@pytest.fixture(scope="module", params=WRITERS, ids=["-".join(w) for w in WRITERS])
def written(request, cluster):
    writer, codec = request.param
    if writer == "kcat":
        require_kcat()
    if writer == "kafkajs":
        require_kafkajs()
    topic = unique(f"cross-{writer}-{codec}")
    cluster.create_topic(topic, 2)
    return writer, codec, topic, _write(cluster, writer, codec, topic)


@pytest.mark.parametrize("reader", READERS)
def test_reader_sees_what_writer_wrote(cluster, written, reader):
    writer, codec, topic, records = written
    bs = cluster.bootstrap_servers
    if reader == "confluent-kafka":
        got = confluent_consume(bs, topic, [0, 1], len(records))
    elif reader == "kafka-python":
        import kafka.codec
        if not getattr(kafka.codec, f"has_{codec}")():
            pytest.skip(f"kafka-python finds no {codec} library here (it needs the optional lz4, python-snappy or "
                        f"zstandard package)")
        got = kafka_python_consume(bs, topic, [0, 1], len(records))
    elif reader == "aiokafka":
        got = aiokafka_consume(bs, topic, [0, 1], len(records))
    else:
        require_kcat()
        got = kcat_consume(bs, topic, [0, 1])   # JSON: a null value is null, an empty one ""
    assert_same_records(got, records, f"{reader} reading {writer} ({codec})")
