"""kcat 1.7.1 (Debian, librdkafka 2.0.2) against the kafkalab broker: metadata, produce with every codec, consume.

librdkafka 2.0.2 gates features on single advertised versions (protocol-compat.md §5.3): gzip, snappy and lz4
need Produce v0 inside the advertised range (the broker advertises Produce 0-11 and refuses v0-2 at request
time, as Kafka 4 does), lz4 needs FindCoordinator v0, zstd needs Produce v7 and Fetch v10. If one of them were
off, librdkafka would log "not compressing batch" and send the batch uncompressed -- so the tests look at the
codec of the batches *stored* by the broker, not at kcat's exit code.

kcat cannot set a record's timestamp: it stamps records with its own clock; the test brackets them.
"""
from __future__ import annotations

import json
import time

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import (CODEC_IDS, CODECS, Rec, assert_same_records, confluent_produce, kcat, kcat_consume,
                              kcat_lines, require_kcat, requests, sample_records, stored_batches, stored_records)

pytestmark = pytest.mark.interop

HEADERS = (("trace", b"kcat"), ("seq", b"1"), ("seq", b"again"), ("empty", b""))
HEADER_ARGS = [arg for name, value in HEADERS for arg in ("-H", f"{name}={value.decode()}")]


@pytest.fixture(autouse=True)
def _kcat():
    require_kcat()


def test_list_metadata(cluster, topic):
    port = cluster.broker(0).bound_endpoints[0].port
    md = json.loads(kcat(cluster.bootstrap_servers, "-L", "-J"))
    assert md["controllerid"] == 0
    assert md["brokers"] == [{"id": 0, "name": f"127.0.0.1:{port}"}]
    [t] = [t for t in md["topics"] if t["topic"] == topic]
    assert t.get("error") is None
    assert [(p["partition"], p["leader"], p["replicas"], p["isrs"]) for p in t["partitions"]] == [
        (0, 0, [{"id": 0}], [{"id": 0}]), (1, 0, [{"id": 0}], [{"id": 0}])]
    # kcat speaks Metadata v4 (its maximum): the broker's range must contain it.
    assert {r.api_version for r in requests(cluster, client_id="rdkafka", api_key=ApiKey.METADATA)} == {4}


def test_list_one_unknown_topic_is_auto_created(cluster):
    name = "kcat-auto-created"
    md = json.loads(kcat(cluster.bootstrap_servers, "-L", "-J", "-t", name))
    assert [t["topic"] for t in md["topics"]] == [name]
    cluster.wait_until(lambda: cluster.broker(0).metadata_cache.contains_topic(name), 10)


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume(cluster, topic, codec):
    """-P with keys (-K:) and headers (-H), idempotent, one codec; then -C -e reads everything back."""
    sent = []
    before = int(time.time() * 1000)
    for partition in (0, 1):
        records = [Rec(partition, f"k{partition}-{i}".encode(), f"{codec} value {partition}-{i}".encode(), HEADERS, 0)
                   for i in range(5)]
        args = ["-P", "-t", topic, "-p", str(partition), "-K:", *HEADER_ARGS,
                "-X", f"compression.codec={codec}", "-X", "enable.idempotence=true", "-X", "linger.ms=200"]
        kcat(cluster.bootstrap_servers, *args, input=kcat_lines(records))
        sent += records
    after = int(time.time() * 1000)

    got = kcat_consume(cluster.bootstrap_servers, topic)
    assert all(before <= r.timestamp <= after for r in got), (before, after, [r.timestamp for r in got])
    assert_same_records([r._replace(timestamp=0) for r in got], sent, "kcat -C")
    # what kcat read is exactly what the broker stored (timestamps included)
    assert_same_records(got, stored_records(cluster, topic, (0, 1)), "kcat -C vs the log")

    for partition in (0, 1):
        batches = stored_batches(cluster, topic, partition)
        assert batches, f"nothing stored in partition {partition}"
        codecs = {b.compression_type for b in batches}
        # a batch that compression would not shrink is sent uncompressed by librdkafka; a codec turned off by
        # its feature gating would leave every batch uncompressed
        assert CODEC_IDS[codec] in codecs and codecs <= {CODEC_IDS[codec], 0}, \
            f"{codec}: librdkafka 2.0.2 did not compress (feature gating?): {codecs}"
        assert all(b.producer_id >= 0 and b.base_sequence >= 0 for b in batches), "not idempotent"
    versions = {r.api_version for r in requests(cluster, client_id="rdkafka", api_key=ApiKey.PRODUCE)}
    assert versions == {7}, versions          # librdkafka 2.0.2's maximum


def test_consume_reads_exact_timestamps_and_offsets(cluster, topic):
    """Records with explicit timestamps (written by confluent-kafka) come out of kcat unchanged; -o s@ts and
    -Q (offsets for times, ListOffsets v2) find them by timestamp."""
    records = sample_records("kcat", ascii_only=True)
    confluent_produce(cluster.bootstrap_servers, topic, records)
    assert_same_records(kcat_consume(cluster.bootstrap_servers, topic, [0, 1]), records, "kcat -C")

    third = [r for r in records if r.partition == 1][3]
    out = kcat(cluster.bootstrap_servers, "-Q", "-t", f"{topic}:1:{third.timestamp}").decode()
    assert out.strip() == f"{topic} [1] offset 3", out
    out = kcat(cluster.bootstrap_servers, "-Q", "-t", f"{topic}:1:{third.timestamp + 10 ** 9}").decode()
    assert out.strip() == f"{topic} [1] offset -1", out   # after the last record: no offset

    lines = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-p", "1", "-o", f"s@{third.timestamp}", "-e", "-J",
                 "-q").splitlines()
    assert [json.loads(line)["offset"] for line in lines] == [3, 4, 5]
