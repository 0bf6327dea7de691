# Source of labs/14_real_clients.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 14
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 14 · Watching real clients
#
# Every lab so far looked at one client at a time, mostly kafkalab's own. Real applications use confluent-kafka
# (librdkafka), kafka-python, aiokafka, kafkajs, kcat, the Java client — and they all speak the same protocol
# differently. This lab gives five of them **the same job** on a three-broker cluster and watches every byte
# they exchange through a **tap**: a recording proxy between the clients and the brokers.
#
# The job: create a topic with 6 partitions, produce 1,000 keyed records, consume them in a consumer group from
# the beginning, commit, close.
#
# **By the end of this lab you can**
#
# 1. put a tap between an unmodified client and a cluster, and say why it must rewrite broker addresses;
# 2. count the connections a client opens and say which broker each one is for;
# 3. read which API versions each client negotiated, and which APIs only some clients needed;
# 4. compare how the clients batch records into requests;
# 5. check a client's own metrics against what went over the wire;
# 6. write the traffic as a pcap file and open it with Wireshark's dissector (tshark).

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C2** a client keeps one persistent connection per broker it needs | each client's connections, per broker, and what travelled on each | 2 |
# | **C5** each client takes, per API, the highest version both sides speak | the version matrix: five clients, five choices | 3 |
# | **C45** dozens of request types besides Produce, Fetch and Metadata | the APIs each client used, and those only some needed | 3 |
# | **C28** producers batch records per partition | records per batch and batches per request, client by client | 4 |
# | **C36** client metrics: request rate, bytes in and out | each client's own metrics next to the tap's counts | 5 |
# | **C21** the ecosystem: the Java client, librdkafka, frameworks, Streams, Connect | the client families, and what is built on them | 7 |
#
# | what you use | kafkalab module | what it mirrors |
# |---|---|---|
# | the tap | `kafkalab/trace/tap.py`, `tap_rewrite.py` | `advertised.listeners`, done from outside |
# | its views | `kafkalab/trace/views.py` | the broker's per-API request metrics, from the wire |
# | the pcap file | `kafkalab/trace/pcap.py` | libpcap's file format |
# | the job, client by client | `kafkalab/labs/lab14.py`, `lab14_kafkajs.js` | — |

# %%
import pandas as pd

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.labs import evidence, lab14
from kafkalab.trace import (BatchingTable, ConnectionsTable, Tap, TapRequestLogs, VersionMatrix,
                            connection_summaries, produce_batching, sequence_diagram, versions_used)
from kafkalab.viz import LiveRequestLog

pd.set_option("display.max_colwidth", None)     # section 7's table has sentences in its cells: show them whole
broker_log = BrokerLog().install()          # the brokers' log lines go to a list, not under the cells
print("clients:", ", ".join(lab14.CLIENTS))
print("this machine can run:", ", ".join(c for c in lab14.CLIENTS if lab14.available(c)))

# %% [markdown]
# ## 1 · A tap in front of the cluster
#
# Three brokers. The group coordinator's topic, `__consumer_offsets`, gets one partition led by broker 1, so
# that every group in this lab has the same coordinator and the tables below read the same on every run.

# %%
cluster = Cluster(brokers=3, overrides={"offsets.topic.num.partitions": 1}).start()
cluster.create_topic("__consumer_offsets", assignment={0: [1, 2, 0]}, config={"cleanup.policy": "compact"})
first = cluster.broker(0).bound_endpoints[0]
tap = Tap(f"{first.host}:{first.port}").start()
listeners = {(e.host, e.port): e.listener_name for b in cluster.brokers.values() for e in b.bound_endpoints}
print("brokers:", sorted(cluster.brokers), "listeners:", sorted(set(listeners.values())))

# %% [markdown]
# A client is given the tap's address as `bootstrap.servers`. It asks that address for Metadata, and the broker
# answers with **its** address and the other brokers' — left alone, the client would go on to connect to the
# brokers directly, and the tap would see nothing more. So the tap rewrites every broker address in Metadata,
# FindCoordinator and DescribeCluster responses into a tap port of its own, one per broker, and changes no
# other byte.
#
# The tap also feeds the live request log of the dashboard: each answered request as the tap relays it, per
# broker, with the round trip it measured (the broker's own queue, local, remote and send times are not visible
# from outside: "—"). It shows the group traffic; clear the API filter to see everything. (Opened without
# running, the notebook shows a note here instead.)

# %%
live = LiveRequestLog(TapRequestLogs(tap), api="FindCoordinator, JoinGroup, SyncGroup, OffsetCommit, LeaveGroup")
live

# %% [markdown]
# Each client runs its job now, one after another (about half a minute in all):

# %%
results = {}
for client in lab14.CLIENTS:
    results[client] = lab14.run_job(client, tap, cluster)
    print(f"{client:16} consumed {results[client].consumed} records")
rewritten = sorted({c.node_id for c in tap.rewrites()})
evidence("The tap saw everything", {
    "every client consumed all 1,000 records": all(r.consumed == lab14.RECORD_COUNT for r in results.values()),
    "the tap rewrote the address of each of the three brokers": rewritten == [0, 1, 2],
    "every client connection went through a tap port (one per broker)":
        {c.tap for c in tap.connections} == set(tap.broker_ports.values()) and len(tap.broker_ports) == 3,
    "every request decoded": not [f for f in tap.requests() if f.error],
})

# %% [markdown]
# ## 2 · Connections: one per broker it needs — per client object
#
# C2 says a client keeps one persistent connection per broker it needs. "A client" here is one producer, one
# consumer or one admin client: the job creates three of them (kcat two, having no admin API), and each opens
# its own connections. Per client library:

# %%
summaries = connection_summaries(tap, client_of=lab14.client_of, listeners=listeners)
counts = lab14.connection_counts(summaries)
pd.DataFrame({client: {k: v for k, v in row.items() if k != "connections"} for client, row in counts.items()}).T

# %% [markdown]
# How many connections each library opened in all (7 for kcat, 10 to 12 for the others) depends on details — which broker an admin
# client picks for Metadata, whether a bootstrap connection is reused — so the table counts the ones that
# matter. Read it row by row:
#
# * every client reached all **3** brokers: the topic's 6 partitions have leaders on all of them;
# * **3** connections carried Produce requests — one per partition leader — and **3** carried Fetch: a
#   producer and a consumer each need every leader;
# * exactly **one** connection carried the group's JoinGroup, and it is not one of the three Fetch connections:
#   every consumer here talks to its group coordinator (broker 1) on a connection of its own, next to the one it
#   fetches from broker 1 on. The Java client does the same (its coordinator is a node with id
#   `Integer.MAX_VALUE - broker id`), and so does librdkafka (a logical "GroupCoordinator" broker);
# * the rest are bootstrap connections (the first one, to the tap's first port, for ApiVersions and Metadata)
#   and the admin client's.
#
# kcat's seven connections, what each carried. Which APIs only: how many of each depends on timing, and so
# does whether a Heartbeat, a Metadata refresh or a repeated FindCoordinator went out on a given connection,
# so those three are left out here (the sequence diagram below shows the bootstrap Metadata):

# %%
ConnectionsTable([s for s in summaries if s.client == "kcat"], show_counts=False,
                 ignore={"Heartbeat", "Metadata", "FindCoordinator"})

# %%
evidence("A separate connection to the coordinator", {
    "every library opened more connections than there are brokers":
        all(row["connections"] > 3 for row in counts.values()),
    **{f"{client}: the JoinGroup connection carried no Fetch":
       all("Fetch" not in s.requests for s in summaries if s.client == client and "JoinGroup" in s.requests)
       for client in lab14.CLIENTS}})

# %% [markdown]
# One connection, frame by frame: the start of kcat's first connection. The client's first words on any
# connection are ApiVersions (what can you speak?), then Metadata (who leads what?). Correlation ids count up
# from 1 per client; each response carries its request's id back.

# %% tags=["figure:kcat_sequence"]
kcat_first = next(s.connection for s in summaries if s.client == "kcat")
sequence_diagram(tap, kcat_first, limit=4, client_name="kcat", subtitle="its first connection", count_the_rest=False,
                 title="kcat's first connection, first 4 frames")

# %% tags=["figure:aiokafka_sequence"]
aiokafka_first = next(s.connection for s in summaries if s.client == "aiokafka")
sequence_diagram(tap, aiokafka_first, limit=4, client_name="aiokafka", subtitle="its first connection",
                 count_the_rest=False, title="aiokafka's first connection, first 4 frames")

# %%
kcat_frames = [f for f in tap.frames if f.connection == kcat_first][:4]
evidence("Request, response, request, response", {
    "the first request is ApiVersions": kcat_frames[0].api_name == "ApiVersions",
    "each response carries the correlation id of the request before it":
        [f.correlation_id for f in kcat_frames[1::2]] == [f.correlation_id for f in kcat_frames[0::2]],
    "each response names its request (request_index)":
        [f.request_index for f in kcat_frames[1::2]] == [f.index for f in kcat_frames[0::2]],
})

# %% [markdown]
# ## 3 · Which versions, which APIs
#
# Each client sent ApiVersions and picked, for every API, the highest version both it and the broker speak.
# The broker is the same for all; the choices are not. (Heartbeat is left out of the matrix: whether a client
# sent one depends on how long its job took against its `heartbeat.interval.ms`.)

# %%
used = versions_used(tap, client_of=lab14.client_of)
apis = ["ApiVersions", "Metadata", "CreateTopics", "InitProducerId", "Produce", "FindCoordinator", "JoinGroup",
        "SyncGroup", "OffsetFetch", "ListOffsets", "Fetch", "OffsetCommit", "LeaveGroup"]
matrix = VersionMatrix(used, apis)
matrix

# %% [markdown]
# **aiokafka** asks ApiVersions **v0** and stays with older versions throughout (Metadata v5): it supports a
# fixed, older set. **kafka-python 3** and **librdkafka** pick the newest versions here; kafkajs and kcat (an
# older librdkafka than confluent-kafka's) sit in between. Each version the broker accepts is one it
# advertised in its ApiVersions answer.
# Some columns are not full: exercise 2 asks why.

# %%
evidence("Five clients, five choices", {
    "every client used Produce, Fetch and OffsetCommit": all({"Produce", "Fetch", "OffsetCommit"} <= set(u)
                                                            for u in used.values()),
    "not every client chose the same Fetch version": len({max(u["Fetch"]) for u in used.values()}) > 1,
    "each client stuck to one version per API": all(len(v) == 1 for u in used.values() for v in u.values()),
})

# %% [markdown]
# ## 4 · Batching side by side
#
# A producer keeps one batch per partition and sends when `linger.ms` passes or the batch is full. Here
# `linger.ms` is 2 s and each job flushes after its last record, so every partition's records leave in one
# batch; the difference is how batches are packed into requests.

# %%
batching = produce_batching(tap, client_of=lab14.client_of)
BatchingTable(batching)

# %% [markdown]
# * The **librdkafka** clients (confluent-kafka and kcat) send **one Produce request per partition**: 6 requests
#   of one batch, two per connection. kafka-python, aiokafka and kafkajs put all the batches for one leader into
#   **one request**: 3 requests of two batches.
# * The records per batch differ between the two groups as well: librdkafka's default partitioner is
#   `consistent_random` (CRC32 of the key), the Java-compatible clients use murmur2 — the same key lands on a
#   different partition. (Set `partitioner=murmur2_random` in librdkafka to agree with Java.)

# %%
by_client = {row[0]: row for row in BatchingTable(batching).rows()}
evidence("One batch per partition, packed differently", {
    "every client sent 6 batches holding 1,000 records": all(r[2] == 6 and r[3] == 1000 for r in by_client.values()),
    "librdkafka's clients: one batch per request": by_client["confluent-kafka"][5] == by_client["kcat"][5] == "1",
    "the others: two batches per request (two partitions per leader)":
        all(by_client[c][5] == "2" for c in ("kafka-python", "aiokafka", "kafkajs")),
})

# %% [markdown]
# ## 5 · What the clients say about themselves
#
# librdkafka emits a statistics JSON every `statistics.interval.ms` (per broker: requests by type, bytes,
# round-trip times; per topic and partition: messages, batches); kafka-python keeps Kafka's producer metrics
# (`records-per-request-avg`, `request-rate`, ...: rates and averages). Set next to the tap's counts:

# %%
pd.DataFrame(lab14.compare_produce_counts(results, tap), dtype=object)

# %%
rows = lab14.compare_produce_counts(results, tap)
evidence("The clients' metrics agree with the wire", {
    f"{r['client']}: {r['metric']}": r["client says"] == r["tap says"] for r in rows})

# %% [markdown]
# ## 6 · A pcap for Wireshark
#
# The tap writes what it recorded as a libpcap file: a TCP connection per client connection, reconstructed, so
# that Wireshark and tshark open it and dissect Kafka (tell them which ports are Kafka: `-d tcp.port==P,kafka`).
# Here tshark (where installed; else the file is read back by kafkalab) lists the first frames of kcat's first
# connection again:

# %%
tap.write_pcap("lab14.pcap")
used_tshark, lines = lab14.tshark_summary("lab14.pcap", tap, kcat_first)
print("\n".join(lines))
evidence("The pcap says what the tap saw", {
    "the same four frames, in order": lines == [f"{f.direction:8} {f.api_name} v{f.api_version}"
                                                for f in kcat_frames],
})

# %% [markdown]
# Wireshark's Kafka dissector lags behind the protocol: a version it does not know (Wireshark 4.0 knows
# Metadata only up to v9) it marks "Unsupported", but the framing is still right. Open `labs/lab14.pcap` in Wireshark to browse the whole
# job.
#
# ## 7 · The client ecosystem
#
# The clients above are two families; there are more, and two things built *on* clients:

# %%
pd.DataFrame(lab14.ecosystem_rows()).set_index("family")

# %%
live.close()
tap.stop()
cluster.stop()

# %% [markdown]
# ## Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Records per partition
#
# From `batching` (section 4: a list of Produce requests, each with `.client` and `.batches`, a tuple of
# `(topic, partition, records)`), give confluent-kafka's records per partition as a dict
# `{partition: records}` in `ex1_records`. The check counts them from `batching` too.

# %% tags=["solution"]
ex1_records = {}
for request in batching:
    if request.client == "confluent-kafka":
        for _topic, partition, count in request.batches:
            ex1_records[partition] = ex1_records.get(partition, 0) + count

# %%
lab14.check_records_per_partition(ex1_records, batching, "confluent-kafka")

# %% [markdown]
# ### Exercise 2 · APIs only some clients used
#
# Which APIs of the matrix in section 3 did some clients use and others not? Put a set of API names, spelled
# as in the matrix's header, in `ex2_apis`, and think about why each one is missing where it is.

# %% tags=["solution"]
ex2_apis = {api for api in matrix.apis if any(api not in u for u in matrix.used.values())}

# %%
lab14.check_only_some(ex2_apis, matrix)

# %% [markdown] tags=["solution"]
# * **CreateTopics** is missing for kcat: it has no admin API (the lab created its topic through the cluster).
# * **InitProducerId** only for kafka-python: kafka-python 3 turns idempotence on by default, as the Java
#   producer does since Kafka 3.0; librdkafka, aiokafka and kafkajs leave `enable.idempotence` off unless asked.

# %% [markdown]
# ### Exercise 3 · Predict the requests
#
# A topic has 9 partitions whose leaders are spread over 3 brokers. A producer sends records to every partition
# and flushes once, with `linger.ms` long enough that each partition's records make one batch. How many
# Produce requests does confluent-kafka send, and how many kafka-python? Answer in `ex3_requests` as
# `{"confluent-kafka": n, "kafka-python": m}`, using section 4's table; the numbers are in `ex3_partitions` and
# `ex3_leaders`.

# %%
ex3_partitions, ex3_leaders = 9, 3

# %% tags=["solution"]
ex3_requests = {"confluent-kafka": ex3_partitions, "kafka-python": ex3_leaders}

# %%
lab14.check_predicted_requests(ex3_requests, ex3_partitions, ex3_leaders)

# %% [markdown]
# ## Recap
#
# * A tap must rewrite broker addresses in Metadata, FindCoordinator and DescribeCluster, or a client leaves it
#   after bootstrap; everything else passes byte for byte.
# * One connection per broker a client needs — per client object: a producer, a consumer and an admin client
#   each have their own; some consumers keep a separate one for the group coordinator (C2).
# * Five clients, one broker, five sets of versions: each takes the highest version both sides speak, from its
#   own list (C5); and each needed its own set of the dozens of APIs (C45).
# * One batch per partition everywhere; librdkafka sends a request per partition, the others a request per
#   leader (C28).
# * A client's own metrics count what went over the wire: compare them with a capture when in doubt (C36).
# * The clients come in families, and Kafka Streams and Connect are built on the Java client (C21).
#
# **Next:** lab 15, *Finale: a streaming pipeline on Spark*: one more client application, Spark, reading the
# log with assigned partitions and offsets of its own.
