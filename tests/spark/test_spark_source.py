"""format("kafkalab") end to end: Structured Streaming queries on a real SparkSession against in-process clusters.

One SparkSession for the run (``conftest.spark``); one 1-broker cluster for the module, a topic per test; the
failover test starts its own 3-broker cluster. Every query uses ``trigger(availableNow=True)``, an explicit
checkpoint under ``tmp_path`` and ``foreachBatch`` to collect rows (restartable, unlike the memory sink).
"""
from __future__ import annotations

import itertools
import json
import uuid

import pytest

from kafkalab.clients import Admin, Producer, TopicPartition
from kafkalab.cluster import Cluster

pytestmark = pytest.mark.spark

_ids = itertools.count()


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def new_topic(cluster, partitions=3, rf=1) -> str:
    name = f"t{next(_ids)}-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(name, partitions, rf)
    return name


def produce(bootstrap, topic, values, *, partition=None, headers=None, key=True) -> None:
    with Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0}) as p:
        futures = [p.send(topic, v if isinstance(v, bytes) else str(v).encode(),
                          key=(f"k{v}".encode() if key else None), partition=partition, headers=headers)
                   for v in values]
        p.flush()
        for f in futures:
            f.result()


class Run:
    """One availableNow run of a streaming read: rows collected per micro-batch, plus the query's progress."""

    def __init__(self, spark, bootstrap, checkpoint, **options):
        self.batches: list[list] = []
        reader = spark.readStream.format("kafkalab").option("kafka.bootstrap.servers", bootstrap)
        for k, v in options.items():
            reader = reader.option(k, str(v))
        self.df = reader.load()
        self.checkpoint = str(checkpoint)

    def start(self, on_batch=None):
        def collect(batch_df, batch_id):
            rows = batch_df.collect()
            self.batches.append(rows)
            if on_batch is not None:
                on_batch(batch_id, rows)
        self.query = (self.df.writeStream.foreachBatch(collect).option("checkpointLocation", self.checkpoint)
                      .queryName(f"q{next(_ids)}").trigger(availableNow=True).start())
        return self

    def wait(self, timeout=120):
        try:
            assert self.query.awaitTermination(timeout), "the availableNow query did not finish"
            self.progress = self.query.recentProgress
        finally:
            self.query.stop()
        return self

    @property
    def rows(self) -> list:
        return [r for b in self.batches for r in b]

    @property
    def sizes(self) -> list[int]:
        return [p["numInputRows"] for p in self.progress if p["numInputRows"]]


def read_stream(spark, bootstrap, checkpoint, **options) -> Run:
    return Run(spark, bootstrap, checkpoint, **options).start().wait()


def end_offset(run) -> dict:
    end = run.progress[-1]["sources"][0]["endOffset"]
    return json.loads(end) if isinstance(end, str) else end


def positions(rows) -> list[tuple]:
    return sorted((r["partition"], r["offset"]) for r in rows)


# -- reading ----------------------------------------------------------------------------------------------------
def test_available_now_reads_exactly_n_records_from_3_partitions(spark, cluster, tmp_path):
    topic = new_topic(cluster, 3)
    n = 60
    produce(cluster.bootstrap_servers, topic, range(n))
    run = read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", subscribe=topic,
                      startingOffsets="earliest")
    rows = run.rows
    assert len(rows) == n
    assert sorted(int(r["value"]) for r in rows) == list(range(n))
    assert all(r["key"] == b"k" + r["value"] for r in rows)
    by_partition = {}
    for p, o in positions(rows):
        by_partition.setdefault(p, []).append(o)
    assert sorted(by_partition) == [0, 1, 2]
    assert all(offs == list(range(len(offs))) for offs in by_partition.values())     # no gaps, no repeats
    assert {r["topic"] for r in rows} == {topic} and {r["timestampType"] for r in rows} == {0}
    assert run.df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert end_offset(run) == {topic: {str(p): len(o) for p, o in by_partition.items()}}


def test_max_offsets_per_trigger_then_restart_reads_only_new_records(spark, cluster, tmp_path):
    topic = new_topic(cluster, 2)
    produce(cluster.bootstrap_servers, topic, range(8), partition=0)
    produce(cluster.bootstrap_servers, topic, range(8, 16), partition=1)
    opts = dict(subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=4)
    first = read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", **opts)
    assert first.sizes == [4, 4, 4, 4]                     # 2 + 2 per batch, by backlog
    assert len({(r["partition"], r["offset"]) for r in first.rows}) == 16
    produce(cluster.bootstrap_servers, topic, range(100, 103), partition=1)
    second = read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", **opts)
    assert second.sizes == [3]
    assert positions(second.rows) == [(1, 8), (1, 9), (1, 10)]
    assert sorted(int(r["value"]) for r in second.rows) == [100, 101, 102]
    third = read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", **opts)
    assert third.rows == []                                # nothing new: no batch with data


def test_starting_offsets_variants(spark, cluster, tmp_path):
    topic = new_topic(cluster, 2)
    produce(cluster.bootstrap_servers, topic, range(5), partition=0)
    produce(cluster.bootstrap_servers, topic, range(5, 10), partition=1)
    boot = cluster.bootstrap_servers

    assert len(read_stream(spark, boot, tmp_path / "e", subscribe=topic, startingOffsets="earliest").rows) == 10
    run = read_stream(spark, boot, tmp_path / "l", subscribe=topic)                 # default: latest
    assert run.rows == []
    json_mixed = read_stream(spark, boot, tmp_path / "j", subscribe=topic,
                             startingOffsets=f'{{"{topic}":{{"0":-2,"1":-1}}}}')
    assert positions(json_mixed.rows) == [(0, o) for o in range(5)]
    explicit = read_stream(spark, boot, tmp_path / "x", assign=f'{{"{topic}":[0,1]}}',
                           startingOffsets=f'{{"{topic}":{{"0":3,"1":1}}}}')
    assert positions(explicit.rows) == [(0, 3), (0, 4), (1, 1), (1, 2), (1, 3), (1, 4)]

    # the checkpoint wins over startingOffsets on a restart: "latest" resumes where it was, new records only
    produce(boot, topic, [42], partition=1)
    again = read_stream(spark, boot, tmp_path / "l", subscribe=topic, startingOffsets="earliest")
    assert positions(again.rows) == [(1, 5)]


def test_batch_read_with_ending_offsets_and_headers(spark, cluster):
    topic = new_topic(cluster, 2)
    produce(cluster.bootstrap_servers, topic, range(6), partition=0, headers=[("trace", b"abc"), ("n", None)])
    produce(cluster.bootstrap_servers, topic, range(6, 10), partition=1, key=False)
    reader = (spark.read.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribePattern", topic.replace("-", ".")))
    assert len(reader.load().collect()) == 10                       # defaults: earliest .. latest
    df = (reader.option("startingOffsets", f'{{"{topic}":{{"0":1,"1":-2}}}}')
          .option("endingOffsets", f'{{"{topic}":{{"0":4,"1":-1}}}}').option("includeHeaders", "true").load())
    assert df.columns[-1] == "headers"
    rows = df.collect()
    assert positions(rows) == [(0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3)]
    p0 = [r for r in rows if r["partition"] == 0]
    assert [(h["key"], h["value"]) for h in p0[0]["headers"]] == [("trace", b"abc"), ("n", None)]
    p1 = [r for r in rows if r["partition"] == 1]
    assert all(r["headers"] is None and r["key"] is None for r in p1)
    assert df.groupBy("partition").count().orderBy("partition").collect()[0]["count"] == 3


def test_min_partitions_splits_ranges_into_more_tasks_reading_each_offset_once(spark, cluster):
    topic = new_topic(cluster, 2)
    produce(cluster.bootstrap_servers, topic, range(30), partition=0)
    produce(cluster.bootstrap_servers, topic, range(30, 40), partition=1)
    reader = (spark.read.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", topic))
    assert reader.load().rdd.getNumPartitions() == 2                 # default: one task per Kafka partition
    df = reader.option("minPartitions", "4").load()
    assert df.rdd.getNumPartitions() == 4                           # 30 of 40 records -> 3 pieces, 10 -> 1
    assert positions(df.collect()) == [(0, o) for o in range(30)] + [(1, o) for o in range(10)]


def test_new_partitions_are_picked_up_from_earliest(spark, cluster, tmp_path):
    topic = new_topic(cluster, 1)
    produce(cluster.bootstrap_servers, topic, range(4), partition=0)
    opts = dict(subscribe=topic, startingOffsets="earliest")
    assert len(read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", **opts).rows) == 4
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_partitions({topic: 3})
    cluster.wait_until(lambda: all(b.metadata_cache.partition_count(topic) == 3 for b in cluster.brokers.values()))
    for p in (1, 2):
        produce(cluster.bootstrap_servers, topic, [10 * p, 10 * p + 1], partition=p)
    produce(cluster.bootstrap_servers, topic, [99], partition=0)
    run = read_stream(spark, cluster.bootstrap_servers, tmp_path / "cp", **opts)
    assert positions(run.rows) == [(0, 4), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert end_offset(run) == {topic: {"0": 5, "1": 2, "2": 2}}


def test_fail_on_data_loss_true_fails_and_false_skips(spark, cluster, tmp_path):
    from pyspark.errors import StreamingQueryException
    topic = new_topic(cluster, 1)
    boot = cluster.bootstrap_servers
    produce(boot, topic, range(5))
    for cp in ("strict", "lenient"):
        assert len(read_stream(spark, boot, tmp_path / cp, subscribe=topic, startingOffsets="earliest").rows) == 5
    produce(boot, topic, range(5, 10))
    with Admin({"bootstrap.servers": boot}) as admin:
        assert admin.delete_records({TopicPartition(topic, 0): 8}) == {TopicPartition(topic, 0): 8}

    strict = Run(spark, boot, tmp_path / "strict", subscribe=topic).start()
    with pytest.raises(StreamingQueryException, match="failOnDataLoss"):
        strict.wait()
    lenient = read_stream(spark, boot, tmp_path / "lenient", subscribe=topic, failOnDataLoss="false")
    assert positions(lenient.rows) == [(0, 8), (0, 9)]


def test_bad_options_fail_with_a_clear_error(spark, cluster):
    with pytest.raises(Exception, match="Exactly one of the options"):
        (spark.read.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .load().collect())
    with pytest.raises(Exception, match="kafka.group.id"):
        (spark.read.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("subscribe", "x").option("kafka.group.id", "g").load().collect())
    with pytest.raises(Exception, match="Did you mean 'fetch.max.wait.ms'"):
        (spark.read.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("subscribe", "x").option("kafka.fetch.max.wait", "100").load().collect())


# -- writing ----------------------------------------------------------------------------------------------------
def test_stream_sink_output_read_back_by_confluent_kafka(spark, cluster, tmp_path):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from pyspark.sql import functions as F
    source, sink = new_topic(cluster, 2), new_topic(cluster, 2)
    produce(cluster.bootstrap_servers, source, [f"word{i}" for i in range(12)])
    df = (spark.readStream.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .select("key", F.upper(F.col("value").cast("string")).alias("value"),
                  F.array(F.struct(F.lit("src").alias("key"), F.col("offset").cast("string").cast("binary")
                                   .alias("value"))).alias("headers")))
    q = (df.writeStream.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("topic", sink).option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
         .start())
    try:
        assert q.awaitTermination(120)
    finally:
        q.stop()
    # the batch writer, with a topic column
    spark.createDataFrame([(sink, "extra", 1)], "topic string, value string, partition int") \
        .write.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers).mode("append").save()

    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check",
                                         "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(sink, p, confluent_kafka.OFFSET_BEGINNING) for p in (0, 1)])
        got = []
        for _ in range(200):
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg)
            if len(got) >= 13:
                break
    finally:
        consumer.close()
    values = sorted(m.value().decode() for m in got)
    assert values == sorted([f"WORD{i}" for i in range(12)] + ["extra"])
    words = [m for m in got if m.value() != b"extra"]
    assert all(m.key() == b"kword" + m.value()[4:].lower() for m in words)
    assert all(m.headers()[0][0] == "src" for m in words)
    assert [m.partition() for m in got if m.value() == b"extra"] == [1]


# -- failover ---------------------------------------------------------------------------------------------------
def test_a_broker_killed_mid_query_loses_nothing(spark, tmp_path):
    with Cluster(brokers=3, overrides={"min.insync.replicas": 2}) as cluster:
        topic = "orders"
        cluster.create_topic(topic, 3, 3)
        boot = cluster.bootstrap_servers            # all three, the killed one included
        n = 150
        produce(boot, topic, range(n))
        victim = cluster.partition_state(topic, 0)["leader"]
        killed = []

        def kill_after_two_batches(batch_id, rows):
            if batch_id == 1 and not killed:
                cluster.kill(victim)
                killed.append(victim)
        run = Run(spark, boot, tmp_path / "cp", subscribe=topic, startingOffsets="earliest",
                  maxOffsetsPerTrigger=20).start(kill_after_two_batches).wait(180)
        assert killed == [victim]
        assert len(run.sizes) >= 7 and max(run.sizes) <= 22
        pos = positions(run.rows)
        assert len(pos) == n and len(set(pos)) == n                      # all of them, each once
        assert sorted(int(r["value"]) for r in run.rows) == list(range(n))
        assert cluster.partition_state(topic, 0)["leader"] != victim

        # with the broker still down: more records (acks=all, 2 in-sync replicas left), the query restarted from
        # its checkpoint asks the cluster for new end offsets and reads exactly those records
        produce(boot, topic, range(n, n + 30))
        again = Run(spark, boot, tmp_path / "cp", subscribe=topic,
                    maxOffsetsPerTrigger=20).start().wait(180)
        assert sorted(int(r["value"]) for r in again.rows) == list(range(n, n + 30))


# -- event time (lab 15) -----------------------------------------------------------------------------------------
def test_the_watermark_drops_rows_of_closed_windows_only_as_lab15_predicts(spark, cluster, tmp_path):
    from pyspark.sql import functions as F

    from kafkalab.labs import lab15
    topic = new_topic(cluster, partitions=1)
    windows: list = []

    def run():
        src = (spark.readStream.format("kafkalab").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
               .option("subscribe", topic).option("startingOffsets", "earliest").load())
        counts = (src.select(F.from_json(F.col("value").cast("string"), lab15.EVENT_SCHEMA).alias("e")).select("e.*")
                  .withWatermark("event_time", "2 minutes")
                  .groupBy(F.window("event_time", "10 minutes").alias("w")).agg(F.count("*").alias("n"))
                  .select(F.date_format("w.start", "HH:mm").alias("window"), "n"))
        q = (counts.writeStream.outputMode("append")
             .foreachBatch(lambda df, _: windows.extend((r["window"], r["n"]) for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(120), "the availableNow query did not finish"
            return lab15.watermark_table(q.recentProgress)
        finally:
            q.stop()

    produce(cluster.bootstrap_servers, topic, [lab15.click_value(i, t) for i, t in
                                               [("a", "19:00:30"), ("b", "19:07:00"), ("c", "19:25:00")]])
    assert run()[-1]["watermark"] == "19:23:00"
    assert windows == [("19:00", 2)]
    # behind the watermark: 19:05 (window ended 19:10) and 19:22 (window 19:20-19:30 still open)
    late = {"late": "2026-03-14T19:05:00.000Z", "kept": "2026-03-14T19:22:00.000Z"}
    assert lab15.dropped_by_watermark(list(late.values()), "2026-03-14T19:23:00.000Z", 10) == [late["late"]]
    produce(cluster.bootstrap_servers, topic, [lab15.click_value(i, t[11:19]) for i, t in late.items()]
            + [lab15.click_value("d", "19:40:00")])
    second = run()
    assert (second[0]["rows read"], second[0]["dropped by watermark"]) == (3, 1)
    assert windows == [("19:00", 2), ("19:20", 2)]        # 19:00 unchanged; 19:20 holds 19:22 and 19:25
