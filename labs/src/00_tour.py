# Source of labs/00_tour.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 00
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 00 · Kafka in one notebook
#
# Before we take Kafka apart byte by byte, twenty minutes of what it *does*. A Kafka **cluster** is a few
# servers, the **brokers**, that keep streams of records called **topics**. Producers append records at the end
# of a topic; consumers read them back, as often as they like, from wherever they like. Every lab after this one
# opens one of the boxes you will see here.
#
# No protocol yet: everything below uses clients, as an application would. Run the cells top to bottom.
#
# **By the end of this lab you can**
#
# 1. start a three-broker cluster and say what a topic, a partition and a broker are;
# 2. create a topic with the admin client, and see another one appear because a producer asked for it;
# 3. produce and consume records with keys, values, headers and timestamps — with kafkalab's clients and with a
#    real one;
# 4. re-read a partition from any offset, and say what retention removes;
# 5. find each partition's leader and followers, kill a broker, and watch the cluster carry on;
# 6. read the broker and client metrics that show all this;
# 7. name six things Kafka is used for, see three of them work, and find the lab that answers your next question.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C17** topics, partitions, brokers, clusters | a three-broker cluster, its topics and partitions | 1-2 |
# | **C23** topics created by admin clients or automatically | `orders` by the admin client, `page-views` by a producer | 2 |
# | **C25** a record: key, value, headers, timestamp | records written and read by two different clients | 3 |
# | **C24** a partition is an append-only array read from any offset | offsets; a seek back to offset 1 | 3-4 |
# | **C19** records stay after being read; retention deletes old data | a second read; retention by size | 4-5 |
# | **C22** partitions spread over brokers, leaders and followers | the placement picture; a broker killed | 6-7 |
# | **C36** client and broker metrics | Produce requests per broker; a producer's `producer-metrics` | 7 |
# | **C20** uses of Kafka | six small examples; three proved: many readers, a state rebuilt by replay, a stream processor | 8 |

# %%
import logging

import pandas as pd
from IPython.display import display
from confluent_kafka import Consumer as LibrdkafkaConsumer
from confluent_kafka import Producer as LibrdkafkaProducer
from confluent_kafka import TopicPartition as LibrdkafkaTopicPartition

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Admin, Consumer, NewTopic, OffsetSpec, Producer, TopicPartition
from kafkalab.labs import evidence, lab00
from kafkalab.viz import ClusterControls, ClusterDashboard

pd.set_option("display.max_colwidth", 80)
broker_log = BrokerLog().install()                       # the brokers' warnings: kept in a list, not on stderr
librdkafka_log = logging.getLogger("kafkalab.lab00.librdkafka")   # confluent-kafka logs go here, not to stderr
librdkafka_log.addHandler(logging.NullHandler())
librdkafka_log.propagate = False
T0 = lab00.T0


def read_all(topic, partitions, *, start=None, client_id="tour-reader"):
    """Every record of the given partitions, from the beginning (or from ``start``: {partition: offset})."""
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id,
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as reader:
        tps = [TopicPartition(topic, p) for p in partitions]
        reader.assign(tps)
        for tp in tps:
            if start and tp.partition in start:
                reader.seek(tp, start[tp.partition])
        end = reader.end_offsets(tps)
        records = []
        for _ in range(30):                          # up to a minute: far more than a read of a few records takes
            if all(reader.position(tp) >= end[tp] for tp in tps):
                return sorted(records, key=lambda r: (r.partition, r.offset))
            records += reader.poll(2.0)
        raise RuntimeError(f"could not read {topic} to its end: is the cluster running? (run the cells from section 1)")


def admin_end_offsets(topic, partitions=range(3)):
    """The log end offset of each partition, as the brokers report it (ListOffsets, through the admin client)."""
    specs = {TopicPartition(topic, p): OffsetSpec.LATEST for p in partitions}
    return {tp.partition: info.offset for tp, info in admin.list_offsets(specs).items()}


# %% [markdown]
# ## 1 · A cluster of three brokers
#
# `Cluster` starts three brokers in this notebook's process, on free ports of your machine. They are real Kafka
# brokers as far as any client can tell: they speak Kafka's protocol on TCP, store records in files, and elect a
# **controller** (one broker with the extra job of deciding who leads what — lab 09).

# %%
cluster = Cluster(brokers=3, overrides=lab00.OVERRIDES).start()
print("brokers:", sorted(cluster.brokers), "| controller:", cluster.controller_id)
print("bootstrap.servers has", len(cluster.bootstrap_servers.split(",")), "addresses, one per broker")

# %% [markdown]
# A client needs only `bootstrap.servers`, one or more of these addresses; it asks any of them for the rest.
#
# Below is the cluster's **dashboard**. It is live: four times a second it reads the brokers' own state and
# redraws — which brokers run and which is the controller, every partition with its leader, its replicas, its
# in-sync replicas (ISR) and a bar per replica to its log end offset, the requests each API handles per second,
# and the consumer groups. Keep an eye on it while you run the cells below: topics appear, bars grow, a broker
# goes down and comes back. (A notebook opened without running shows a note here instead; run the cell.)

# %%
dashboard = ClusterDashboard(cluster)
dashboard

# %% [markdown]
# ## 2 · Topics: made by an admin, or on first use
#
# A **topic** is a named stream of records, split into **partitions**: each partition is an ordered log of its
# own, and partitions are what Kafka spreads over brokers and over consumers (the unit of parallelism). Each
# partition is stored on several brokers, its **replicas** (the replication factor).
#
# The usual way to make a topic is an admin tool or client. Here `orders` gets three partitions, each stored
# on all three brokers; we also say which broker comes first for each partition (the *preferred leader*), so
# that every run of this notebook looks the same:

# %%
admin = Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tour-admin"})
created = admin.create_topics([NewTopic("orders", replicas_assignments=lab00.ORDERS_ASSIGNMENT)])
{name: {k: v for k, v in info.items() if k != "topic_id"} for name, info in created.items()}

# %% [markdown]
# A broker can also create a topic by itself, the first time a client asks about it (`auto.create.topics.enable`,
# on by default; production clusters often turn it off). Nobody creates `page-views`: a producer simply sends
# to it, and the broker makes it with its defaults, `num.partitions` and `default.replication.factor` (3 and 3
# in this cluster):

# %%
producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tour-producer", "linger.ms": 0})
producer.send("page-views", b"/home", key=b"alice", timestamp=T0).result(10)
pd.DataFrame([{"topic": name, "partitions": len(info.partitions),
               "replication factor": len(info.partitions[0].replicas)}
              for name, info in sorted(admin.describe_topics(["orders", "page-views"]).items())]).set_index("topic")

# %% [markdown]
# ## 3 · Records: key, value, headers, timestamp
#
# A **record** is a value (bytes: JSON, text, anything), an optional **key** (bytes too), optional **headers**
# (name → bytes, for metadata such as a trace id) and a **timestamp**. A producer appends records at the end
# of a partition; the broker gives each one the next **offset** in that partition: 0, 1, 2, ...
#
# The producer picks the partition from the key (a hash of it), so every order of one customer lands in the
# same partition, in the order sent:

# %%
ORDERS = [("alice", "2 x coffee"), ("bob", "1 x tea"), ("alice", "1 x cake"), ("carol", "3 x juice"),
          ("bob", "2 x scone"), ("alice", "1 x tea"), ("dave", "1 x coffee"), ("carol", "1 x cake")]
acks = [producer.send("orders", value.encode(), key=customer.encode(), timestamp=T0 + i * 1000,
                      headers=[("source", b"web" if i % 3 else b"app")]).result(10)
        for i, (customer, value) in enumerate(ORDERS)]
pd.DataFrame([{"key": c, "value": v, "partition": m.partition, "offset": m.offset} for (c, v), m in zip(ORDERS, acks)])

# %% [markdown]
# A consumer reads them back. It asks for a partition from an offset and gets the records with everything the
# producer gave them:

# %%
records = read_all("orders", range(3))
pd.DataFrame([{"partition": r.partition, "offset": r.offset, "key": r.key.decode(), "value": r.value.decode(),
               "headers": {k: v.decode() for k, v in r.headers},
               "timestamp": pd.Timestamp(r.timestamp, unit="ms")} for r in records]).set_index(["partition", "offset"])

# %% [markdown]
# Within a partition the order is the order of the offsets; across partitions there is no order. All of
# alice's orders are in one partition, so they are read in the order she made them.
#
# **It is really Kafka.** These brokers do not care which client talks to them. confluent-kafka (librdkafka,
# the C client behind most non-Java Kafka clients) adds an order, and reads back what kafkalab's producer wrote:

# %%
real_producer = LibrdkafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tour-librdkafka",
                                    "logger": librdkafka_log})
real_producer.produce("orders", b"2 x bagel", key=b"erin", timestamp=T0 + 8000, headers=[("source", b"kiosk")])
real_producer.flush(10)
real = LibrdkafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "tour-librdkafka",
                           "client.id": "tour-librdkafka", "enable.auto.commit": False, "logger": librdkafka_log})
real.assign([LibrdkafkaTopicPartition("orders", p, 0) for p in range(3)])
seen = []
for _ in range(30):
    m = real.poll(2.0)
    if m is not None and m.error() is None:
        seen.append(m)
    if len(seen) == len(ORDERS) + 1:
        break
real.close()
pd.DataFrame([{"partition": m.partition(), "offset": m.offset(), "key": m.key().decode(), "value": m.value().decode(),
               "headers": dict((k, v.decode()) for k, v in m.headers())}
              for m in sorted(seen, key=lambda m: (m.partition(), m.offset()))]).set_index(["partition", "offset"])

# %% [markdown]
# ## 4 · Reading again, from any offset
#
# Reading does not remove anything. A partition is an **append-only array** on the broker: the consumer keeps
# its own position (the next offset to read), and can move it anywhere with `seek`. Reading `orders-0` again,
# from offset 1:

# %%
p0 = next(r.partition for r in records if r.key == b"alice")
again = read_all("orders", [p0], start={p0: 1})
pd.DataFrame([{"offset": r.offset, "key": r.key.decode(), "value": r.value.decode()} for r in again]).set_index("offset")

# %% [markdown]
# The same records as before, as many times as you like, by any number of consumers: each keeps its own
# position (lab 10 shows how a consumer *group* stores it in Kafka). This is what makes Kafka different from a
# queue that deletes a message once it is delivered: new consumers can read history, and a consumer that made
# a mistake can go back and read again.

# %% [markdown]
# ## 5 · What retention does
#
# Records stay until **retention** deletes them: by age (`retention.ms`, seven days by default) or by size
# (`retention.bytes` per partition, unlimited by default). A partition is stored in files called **segments**;
# retention deletes whole segments, oldest first, and a partition always keeps one segment to write to.
#
# `app-logs` has tiny segments (`segment.bytes` = 300) and `retention.bytes` = 600 — per partition. We write 30
# log lines to its one partition, then run the retention check each broker runs every
# `log.retention.check.interval.ms` (five minutes):

# %% tags=["figure:retention"]
admin.create_topics([NewTopic("app-logs", replicas_assignments={0: [1, 2, 0]},
                              config={"segment.bytes": "300", "retention.bytes": "600"})])
for i in range(30):
    producer.send("app-logs", b"GET /item/%02d 200" % i, partition=0, timestamp=T0 + i * 1000).result(10)
before = lab00.segments(cluster, 1, "app-logs", 0)
print("segments (base offset, bytes) before:", before)
deleted = cluster.call(cluster.brokers[1].log_manager.cleanup_logs)
after = lab00.segments(cluster, 1, "app-logs", 0)
print("segments deleted:", deleted, "| left:", after)
start, end, _ = lab00.partition_logs(cluster, "app-logs", 0)[1]
lab00.OffsetStrip([b for b, _ in before], start, end, title="app-logs-0 on its leader, broker 1")

# %% [markdown]
# The grey offsets are gone; the **log start offset** moved up. A consumer that asks for offset 0 now is out of
# range, and its `auto.offset.reset` policy decides where it goes (`earliest`: the log start):

# %%
[r.offset for r in read_all("app-logs", [0], start={0: 0})][:5]

# %% [markdown]
# Offsets never change and are never reused: the first record left keeps its number (21). (Lab 06 opens the
# segment files, and shows retention by time and *compaction*, which keeps the last record of each key.)

# %% [markdown]
# ## 6 · Partitions spread over brokers: leaders and followers
#
# Each partition has one **leader**, the replica producers write to and consumers read from, and **followers**,
# which copy the leader by fetching from it, as a consumer would. The replicas that are up to date are the
# **in-sync replicas** (ISR). Leaders are spread over the brokers, so the work is too:

# %% tags=["figure:placement"]
lab00.PlacementPicture.of(cluster, ["orders", "app-logs"], title="Where the partitions of orders and app-logs live")

# %% [markdown]
# (The controller chose these leaders: for each partition, the first replica of its assignment.) Every broker
# holds a copy of `orders-0`, and only broker 0 takes its reads and writes. Lab 04 shows how a client learns
# this map, lab 08 how followers keep up.
#
# The dashboard shows the same placement, with each replica's **log end offset** (LEO, the offset its next
# record will get) and the leader's **high watermark** (HW, how far every in-sync replica has copied: what
# consumers may read). Here it is frozen once the followers have caught up (`dashboard.snapshot()` is a
# picture of the dashboard now; the live one, in section 1, also shows `page-views`, whose replicas the broker
# placed at random):

# %%
cluster.wait_until(lambda: lab00.replicas_settled(cluster, ["orders", "app-logs"]), 15,
                   "the followers did not catch up with their leaders")
dashboard.snapshot(sections=("brokers", "partitions"), topics=["orders", "app-logs"])

# %% [markdown]
# ## 7 · A broker dies; the cluster carries on
#
# We note how many Produce requests each broker has handled (its request metrics, kept per API: on a Kafka
# broker, the meter `kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce`), send ten orders,
# then **kill broker 0** — the leader of `orders-0` — as a crash would, and send ten more with the same
# producer.
#
# You can do it yourself, too. The same live dashboard is shown again below; look at its **request rates**:
# Produce, Fetch (consumers, and the followers copying their leaders), Metadata... per second, with the bytes
# in and out — the numbers Kafka's own monitoring is built on. Under it are **controls**: kill, restart, pause
# or isolate a broker, produce records with the `acks` you choose, run a consumer in a group, change a topic's
# config. Run this section's cells first (the scripted kill below expects all three brokers up); then play:
# kill a broker that leads a partition of `orders` and watch the leader move, produce 1000 records and watch the
# bars and the rates, start a consumer and watch its group's lag fall to 0.

# %%
controls = ClusterControls(cluster, topic="orders")
display(dashboard, controls)

# %% tags=["figure:after_broker_death"]
customers = ["alice", "bob", "carol", "dave"]
counts = {}
before = lab00.produce_requests(cluster)
for i in range(10):
    producer.send("orders", b"order %d" % i, key=customers[i % 4].encode(), timestamp=T0 + 10_000 + i).result(10)
counts["10 orders, 3 brokers"] = lab00.produce_requests_since(cluster, before, 10)

cluster.kill(0)
cluster.wait_until(lambda: all(cluster.brokers[b].metadata_cache.partition_state("orders", 0).leader == 1
                               for b in (1, 2)), 15, "orders-0 got no new leader")
before = lab00.produce_requests(cluster)
for i in range(10, 20):
    producer.send("orders", b"order %d" % i, key=customers[i % 4].encode(), timestamp=T0 + 10_000 + i).result(30)
counts["10 orders, broker 0 killed"] = lab00.produce_requests_since(cluster, before, 10)
lab00.PlacementPicture.of(cluster, ["orders", "app-logs"], title="After broker 0 was killed")

# %% [markdown]
# Broker 0 was also the controller: another broker took over that job at once. The new controller moved the
# leadership of `orders-0` to broker 1, the next replica in its list, and dropped broker 0 from every ISR. The producer got an error for its next request to broker 0, asked for fresh metadata,
# and went on: every record was acknowledged. The brokers' metrics tell the story — each Produce request is
# counted by the broker that handled it; broker 0's count stops, and broker 1 takes over `orders-0`'s share:

# %%
pd.DataFrame(counts).rename(index=lambda b: f"broker {b}").rename_axis("Produce requests handled")

# %% [markdown]
# Nothing was lost: the consumers' view of `orders` still starts at offset 0 of each partition, and has the
# records of both halves (9 from section 3, 20 now):

# %%
survivors = read_all("orders", range(3), client_id="tour-reader-2")
print(len(survivors), "records in orders;", sum(r.value.startswith(b"order ") for r in survivors), "of the 20 new ones")

# %% [markdown]
# A restarted broker comes back as a follower: it catches up from the leaders and rejoins the ISR. (In Kafka the
# controller's periodic rebalance, `auto.leader.rebalance.enable`, later moves leadership back to each partition's
# preferred replica. kafkalab leaves that to you: `kafkalab leader-election --bootstrap-server <a broker's
# address> --election-type preferred --all-topic-partitions`, which sends the same ElectLeaders request Kafka's
# `kafka-leader-election.sh` sends.)

# %%
cluster.restart(0)
cluster.wait_until(lambda: all(0 in cluster.brokers[1].metadata_cache.partition_state("orders", p).isr
                               for p in range(3)), 30, "broker 0 did not rejoin the ISR of orders")
lab00.PlacementPicture.of(cluster, ["orders"], title="Broker 0 is back, as a follower")

# %% [markdown]
# The client keeps its own metrics too, under the names of Kafka's Java client: its group `producer-metrics`
# holds `request-total`, `outgoing-byte-total`, `incoming-byte-total` and `connection-creation-total`, each
# with a `-rate` next to it. A producer sends five records to each partition; its requests are also traced one
# by one (`trace=True`), so that we can check its books:

# %%
with Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tour-metered", "linger.ms": 0},
              trace=True) as metered:
    for i in range(15):
        metered.send("orders", b"metered %d" % i, partition=i % 3, timestamp=T0 + 20_000 + i).result(10)
    rows = metered.trace.table()
books = {m.name: int(v) for m, v in metered.metrics().items() if m.group == "producer-metrics" and not m.tags}
produce = [r for r in rows if r["api"] == "Produce"]
print(f"Produce requests: {len(produce)}, {sum(r['bytes_out'] + 4 for r in produce)} bytes out and "
      f"{sum(r['bytes_in'] + 4 for r in produce)} bytes in, size prefixes included")
print("the set-up requests:", sorted({r["api"] for r in rows} - {"Produce"}))
evidence("The producer's own metrics (producer-metrics) agree with its trace", {
    "request-total counts every request it sent: the 15 Produce and the set-up": books["request-total"] == len(rows),
    "outgoing-byte-total counts every request's bytes, 4-byte size included":
        books["outgoing-byte-total"] == sum(r["bytes_out"] + 4 for r in rows),
    "incoming-byte-total counts every response's bytes, the same way":
        books["incoming-byte-total"] == sum(r["bytes_in"] + 4 for r in rows),
    "connection-creation-total counts its connections, each opened by an ApiVersions request":
        books["connection-creation-total"] == sum(r["api"] == "ApiVersions" for r in rows),
})

# %% [markdown]
# Fifteen records took more than fifteen requests: each connection starts with ApiVersions, the producer asks
# for Metadata, and InitProducerId gives it a producer id (it is idempotent by default, lab 05). The totals
# themselves differ a little from run to run, with the broker the producer happened to ask for its producer id
# (one connection more or not): print `books` to see this run's. Kafka's monitoring plots the rates of these
# numbers, per broker and per client: requests per second, bytes in and out, connections created (lab 03 reads
# a broker's and a client's side by side).

# %% [markdown]
# ## 8 · What Kafka is used for
#
# One cluster, one idea — a log that many producers append to and many consumers read — and six common uses.
# Each example below is a few lines on our cluster.
#
# **Messaging.** Decouple the service that takes an order from the one that ships it: the shop writes, the
# warehouse reads when it can, and a second warehouse could read the same stream.

# %%
for order in [b"ship #1001", b"ship #1002", b"ship #1003"]:
    producer.send("shipments", order, key=b"shop", timestamp=T0).result(10)
warehouse = [r.value.decode() for r in read_all("shipments", range(3), client_id="warehouse")]
warehouse

# %% [markdown]
# The shop did not wait for anyone: its sends were acknowledged by the cluster before any warehouse ran. A
# second warehouse that starts only now still gets every order, in order, and reading took nothing away from
# the first:

# %%
second_warehouse = [r.value.decode() for r in read_all("shipments", range(3), client_id="warehouse-2")]
evidence("One stream of messages, any number of readers", {
    "the second warehouse, started later, read all three orders in the shop's order":
        second_warehouse == ["ship #1001", "ship #1002", "ship #1003"],
    "both warehouses read the same orders": second_warehouse == warehouse,
    "the orders are still in the topic after being read":
        sum(admin_end_offsets("shipments").values()) == 3,
})

# %% [markdown]
# **Activity tracking.** Every click of every user, as it happens; analytics read it later (the original use
# at LinkedIn, where Kafka was born). Keyed by user, so each user's clicks stay in order:

# %%
clicks = [("alice", "/home"), ("bob", "/search?q=tea"), ("alice", "/cart"), ("alice", "/checkout"), ("bob", "/home")]
for i, (user, page) in enumerate(clicks):
    producer.send("page-views", page.encode(), key=user.encode(), timestamp=T0 + 1000 + i).result(10)
views = read_all("page-views", range(3), client_id="analytics")
pd.Series([r.key.decode() for r in views]).value_counts().rename("page views").rename_axis("user").to_frame()

# %% [markdown]
# **Metrics.** Hosts send measurements; a consumer aggregates them (or a monitoring system does):

# %%
for i, (host, cpu) in enumerate([("web-1", 41), ("web-2", 77), ("web-1", 45), ("web-2", 81), ("web-1", 43)]):
    producer.send("cpu", str(cpu).encode(), key=host.encode(), timestamp=T0 + i * 10_000).result(10)
samples = read_all("cpu", range(3), client_id="dashboard")
pd.DataFrame([{"host": r.key.decode(), "cpu %": int(r.value)} for r in samples]).groupby("host").mean()

# %% [markdown]
# **Log aggregation.** Many services write their log lines to one topic instead of local files; one reader
# filters them all:

# %%
for i, (service, line) in enumerate([("auth", "INFO login alice"), ("shop", "ERROR payment timeout"),
                                     ("auth", "INFO login bob"), ("ship", "ERROR no courier")]):
    producer.send("logs", line.encode(), key=service.encode(), timestamp=T0 + i,
                  headers=[("host", b"node-%d" % (i % 2))]).result(10)
[f"{r.key.decode()}: {r.value.decode()}" for r in read_all("logs", range(3), client_id="alerts")
 if r.value.startswith(b"ERROR")]

# %% [markdown]
# **Commit log, event sourcing.** A system writes every change to Kafka first; its state can be rebuilt at any time by
# replaying the log — a replica, a cache, a search index. Account balances, rebuilt from the start:

# %%
changes = [("acct-1", 100), ("acct-2", 50), ("acct-1", 80), ("acct-3", 10), ("acct-2", 65)]
for i, (account, balance) in enumerate(changes):
    producer.send("balances", str(balance).encode(), key=account.encode(), partition=0, timestamp=T0 + i).result(10)


def rebuild_balances(client_id):
    """A cache that starts empty and replays the whole log: the last balance of each account wins."""
    state = {}
    for r in read_all("balances", [0], client_id=client_id):
        state[r.key.decode()] = int(r.value)
    return state


state = rebuild_balances("rebuild")
state

# %% [markdown]
# The cache crashes and loses its memory; a brand-new copy replays the same log and gets the same state. A
# change written after the crash is simply the next record:

# %%
producer.send("balances", b"30", key=b"acct-3", partition=0, timestamp=T0 + 5).result(10)
after_crash = rebuild_balances("rebuild-after-crash")
print("rebuilt after the crash:", after_crash)
evidence("State rebuilt by replaying the log", {
    "the replayed state holds the last balance of each account": state == {"acct-1": 80, "acct-2": 65, "acct-3": 10},
    "a new copy after the crash has every balance, with the later change applied":
        after_crash == {**state, "acct-3": 30},
    "the log kept every change, the old balances too": sum(admin_end_offsets("balances").values()) == 6,
})

# %% [markdown]
# **Stream processing.** A program reads one topic and writes another, record by record, and keeps its place
# with a committed offset (lab 10). This one counts page views per user and writes each new count to the topic
# `page-view-counts`, keyed by user. Kafka Streams and Spark (lab 15) are this idea grown up.

# %%
view_counts = {}                                        # the processor's state (Kafka Streams keeps it in a topic)


def count_page_views():
    """One pass of the processor: the page views not yet processed, each turned into a new count. Returns how
    many it processed."""
    processed = 0
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "view-counter",
                   "auto.offset.reset": "earliest", "enable.auto.commit": False}) as source:
        tps = [TopicPartition("page-views", p) for p in range(3)]
        source.assign(tps)
        end = source.end_offsets(tps)
        for _ in range(30):
            if all(source.position(tp) >= end[tp] for tp in tps):
                break
            for r in source.poll(2.0):
                user = r.key.decode()
                view_counts[user] = view_counts.get(user, 0) + 1
                producer.send("page-view-counts", str(view_counts[user]).encode(), key=r.key,
                              timestamp=r.timestamp).result(10)
                processed += 1
        source.commit()                                 # where the next pass starts
    return processed


first_pass = count_page_views()
latest_counts = {r.key.decode(): int(r.value) for r in read_all("page-view-counts", range(3), client_id="report")}
print("processed:", first_pass, "| latest count per user in page-view-counts:", latest_counts)

# %% [markdown]
# Bob clicks once more. The next pass starts at the committed offsets, so it processes only the new click, and
# the output topic gets Bob's new count:

# %%
producer.send("page-views", b"/tea/green", key=b"bob", timestamp=T0 + 2000).result(10)
second_pass = count_page_views()
latest_counts = {r.key.decode(): int(r.value) for r in read_all("page-view-counts", range(3), client_id="report")}
evidence("A stream processor: a topic in, a topic out", {
    "the first pass turned the 6 page views so far (sections 2 and 8) into 6 counts": first_pass == 6,
    "the second pass processed only the new click (it resumed at its committed offset)": second_pass == 1,
    "the output topic holds the latest count of each user: alice 4, bob 3": latest_counts == {"alice": 4, "bob": 3},
})

# %% [markdown]
# (A topic like `balances` or `page-view-counts` usually has `cleanup.policy=compact`, so Kafka keeps the last
# value of each key forever: lab 06. Lab 15 builds a whole streaming pipeline on Spark.)
#
# The cluster keeps running until the last cell of this notebook, so the dashboard and the controls stay live
# while you work on the exercises.

# %% [markdown]
# ## 9 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Read it again
#
# A partition holds `VALUES` (the record at offset *n* is `VALUES[n]`), but retention has deleted everything
# below `LOG_START`. A consumer with `auto.offset.reset=earliest` seeks to `SEEK` and reads to the end. Which
# values does it get, in order?

# %%
VALUES = ["a", "b", "c", "d", "e", "f", "g", "h"]
LOG_START = 3
SEEK = 1

# %% tags=["solution"]
reread = VALUES[max(SEEK, LOG_START):]

# %%
lab00.check_reread(reread, VALUES, LOG_START, SEEK)

# %% [markdown]
# ### Exercise 2 · Retention by size
#
# A partition's segments are `SEGMENTS`, `(base offset, bytes)`, oldest first; the last one is being written.
# The topic has `retention.bytes = RETENTION_BYTES`. After the next retention check, what is the partition's
# log start offset?

# %%
SEGMENTS = [(0, 400), (12, 400), (25, 400), (37, 150)]
RETENTION_BYTES = 700

# %% tags=["solution"]
log_start = 12

# %%
lab00.check_log_start(log_start, SEGMENTS, RETENTION_BYTES)

# %% [markdown]
# ### Exercise 3 · Who leads now?
#
# A topic has four partitions with replicas `ASSIGNMENT` (preferred leader first) and leaders `LEADERS`; every
# replica is in sync. Brokers `DEAD` crash. Which broker leads each partition afterwards? Give
# `{partition: broker}`, with `None` for a partition that has no leader left.

# %%
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3], 3: [3, 0]}
LEADERS = {0: 1, 1: 1, 2: 2, 3: 3}
DEAD = [1, 3]

# %% tags=["solution"]
new_leaders = {0: 0, 1: 2, 2: 2, 3: 0}

# %%
lab00.check_leaders_after(new_leaders, ASSIGNMENT, LEADERS, DEAD)

# %% [markdown]
# ## 10 · Recap, and a map of the course
#
# * **A cluster** is brokers; one of them is also the controller. Clients need only a bootstrap address.
# * **A topic** is split into partitions, each an ordered, append-only log, stored on several brokers. Topics
#   are created by admin clients, or automatically when a client asks for one that does not exist.
# * **A record** has a key, a value, headers and a timestamp; the broker gives it an offset. The key picks the
#   partition, so one key's records stay in order.
# * **Reading does not delete.** Consumers keep their own position and can seek anywhere; **retention** deletes
#   whole old segments, by age or size, and moves the log start offset.
# * **Each partition has a leader** that takes reads and writes, and followers that copy it. When a broker dies,
#   the controller makes another in-sync replica the leader, and clients follow.
# * **Metrics** count it all: requests, bytes, per broker and per client.
# * **Uses**: messaging, activity tracking, metrics, log aggregation, a commit log, stream processing.
#
# Every box of this tour is opened by one lab. Which lab answers which question:

# %%
lab00.course_map()

# %% [markdown]
# **Next:** lab 01, *The wire*: the bytes behind the first request any client sends.
#
# When you are done with the dashboard and the controls, stop the cluster. Its dashboard stops with it (the
# view keeps its last frame) and so do the consumers the controls started:

# %%
controls.actions.close()
producer.close()
admin.close()
cluster.stop()
dashboard.stop()                      # it ends by itself once the cluster stopped; this waits for its thread
print("cluster running:", cluster.is_running, "| dashboard refreshing:", dashboard.running)
