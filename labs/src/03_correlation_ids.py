# Source of labs/03_correlation_ids.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 03
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 03 · Correlation ids, pipelining, order
#
# A Kafka client does not open a connection per request, and it does not wait for one answer before sending
# the next question. It keeps a few long-lived connections and pushes requests down each of them as fast as it
# likes; the broker works through them and answers. How does the client know which answer belongs to which
# question? Why are answers never overtaken? What stops one client from flooding a broker with a huge
# request? This lab answers those questions on a live broker, with a raw socket and with real clients.
#
# **By the end of this lab you can**
#
# 1. tell how many connections a client opens, to which brokers, and why a client needs no pool of them;
# 2. pipeline several requests on one connection and match each response to its request by **correlation id**;
# 3. explain the broker's rule: **one request at a time per connection, answers in order** — and see what it
#    costs a request stuck behind a slow one;
# 4. draw a client's conversation as a sequence diagram, from the broker's request log;
# 5. follow a request through the broker: network thread, **request queue**, **I/O threads**, purgatory, and
#    name the time each stage adds;
# 6. read the broker's request metrics and a client's own (`request-rate`, `outgoing-byte-rate`,
#    `connection-creation-rate`), name them as Kafka does, and compute a rate the way Kafka's clients do;
# 7. say what happens to a request larger than `socket.request.max.bytes`, and why a broker never speaks first.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C2** persistent connections, one per broker, no pool | a producer's connections to three brokers, from the brokers' logs | 1 |
# | **C3** requests answered in the order sent, one at a time per connection; clients pipeline | six requests in one write; a slow Fetch holding up a Metadata | 2, 3 |
# | **C4** every request comes from the client; a maximum request size closes the socket | a silent connection; a request one byte too big; a real client that never finds out | 6 |
# | **C36** client metrics: request rate, bytes in and out, connections | the broker's per-API metrics next to a client's `request-rate`, `outgoing-byte-rate`, `connection-creation-rate` | 5 |
# | **C38** a request queue, and I/O threads that take requests from it | the request path and the time each stage adds | 4 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | connections, framing, muting, the size limit | `kafkalab/network/socket_server.py` | `core/src/main/scala/kafka/network/SocketServer.scala` (`Processor`), `clients/.../common/network/NetworkReceive.java` |
# | request queue, timings, the request log, metrics | `kafkalab/network/request_channel.py` | `core/src/main/scala/kafka/network/RequestChannel.scala`, `RequestMetrics` |
# | a client's metrics | `kafkalab/clients/selector_metrics.py`, `kafkalab/common/metrics.py` | `clients/.../common/network/Selector.java` (`SelectorMetrics`), `clients/.../common/metrics/stats/Rate.java` |
# | I/O threads | `kafkalab/server/request_handler.py` | `core/src/main/scala/kafka/server/KafkaRequestHandler.scala` |
# | waiting for data (purgatory) | `kafkalab/server/apis/fetch.py` | `core/src/main/scala/kafka/server/DelayedFetch.scala` |
# | helpers and pictures of this lab | `kafkalab/labs/lab03.py`; `kafkalab/viz/sequence.py` (`SequenceDiagram`); `kafkalab/trace/raw.py` (`RawConnection`) | — |

# %%
import collections
import logging
import time

import pandas as pd

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.labs import evidence, lab03
from kafkalab.protocol import (ApiKey, api_name, decode_response, encode_request, error_info, make_request,
                               request_class)
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.trace import RawConnection
from kafkalab.viz import API_COLOURS, SequenceDiagram

pd.set_option("display.max_colwidth", 90)
broker_log = BrokerLog().install()                          # the broker's warnings, kept for when we ask
client_log = BrokerLog("kafka").install()                   # kafka-python's warnings, likewise
librdkafka_log = logging.getLogger("kafkalab.lab03.librdkafka")   # confluent-kafka logs through this logger
librdkafka_log.addHandler(logging.NullHandler())
librdkafka_log.propagate = False
CLIENT_ID = lab03.CLIENT_ID
API_KEYS = {api_name(k): int(k) for k in ApiKey}           # "Metadata" -> 3


def request(body, version, correlation_id, client_id="raw-socket"):
    """One request frame (without its size prefix)."""
    return encode_request(make_request(body, api_version=version, correlation_id=correlation_id,
                                       client_id=client_id))

# %% [markdown]
# ## 1 · One connection per broker, and no pool
#
# Data in Kafka is spread over brokers: each partition has a leader, and produce and fetch requests must go to
# it. So a client talks to several brokers, but to each of them over **one** connection, kept open for as long
# as it is needed. Let's see that on a cluster of three brokers, with a topic whose three partitions are led by
# brokers 0, 1 and 2 (Kafka would place them starting at a random broker; the lab fixes the placement).

# %%
cluster = Cluster(brokers=3).start()
lab03.create_topic_with_leaders(cluster, lab03.TOPIC, leaders=[0, 1, 2])
leaders = {p: cluster.partition_state(lab03.TOPIC, p)["leader"] for p in range(3)}
print("partition -> leader:", leaders)

# %% [markdown]
# A confluent-kafka producer that knows only broker 0's address (its *bootstrap* server) sends 30 records:
# ten rounds of one record per partition, waiting for the acknowledgements after each round (`flush`).

# %%
from confluent_kafka import Producer

producer = Producer({"bootstrap.servers": cluster.broker(0).bootstrap_servers, "client.id": CLIENT_ID,
                     "linger.ms": 5, "logger": librdkafka_log, **lab03.LIBRDKAFKA_SOFTWARE})
for round_ in range(10):
    for partition in range(3):
        producer.produce(lab03.TOPIC, key=b"order-%d" % round_, value=b"%d" % round_, partition=partition,
                         timestamp=lab03.TIMESTAMP)
    producer.flush(10)

lab03.wait_for_connections(cluster, {0: 1, 1: 1, 2: 1})     # until the bootstrap connection is gone
connections = lab03.client_connections(cluster, CLIENT_ID)
pd.DataFrame([{"connection": c.number, "broker": c.broker,
               "requests on it": ", ".join(f"{api} ×{n}" if api == "Produce" else api for api, n in c.apis.items()),
               "still open": "yes" if c.open else "no (closed by the client)"} for c in connections]
             ).set_index("connection")

# %% [markdown]
# (librdkafka sometimes repeats its first Metadata request; the table names each API once and counts only
# the Produce requests.)

# %% tags=["figure:connections"]
lab03.connections_diagram(connections, "confluent-kafka producer", brokers=range(3), leaders=leaders)

# %% [markdown]
# * The first connection goes to the **bootstrap** address. Over it the client asks ApiVersions and Metadata,
#   learns the brokers (by id, host and port) and who leads each partition, and then lets it go: librdkafka
#   treats the bootstrap address as a broker of its own until it knows the real ids.
# * Then **one connection per broker it needs**, each starting with ApiVersions (lab 02). All ten Produce
#   requests for a partition travel on the same connection: no new connection per request, no pool of
#   connections to one broker. A TCP connection (and a TLS or SASL handshake) is expensive to set up; kept open,
#   it costs nothing per request.
# * One connection is enough because a client does not wait for an answer before sending the next request.
#   That is the next section.

# %% [markdown]
# ## 2 · Several requests in flight on one connection
#
# Every request header carries a **correlation id**, a number the client chooses; the response starts with the
# same number and nothing else that says what it answers (lab 01). With it, a client can write several requests
# one after the other without waiting — *pipelining* — and still know which answer is which.
#
# Let's be that client, on a raw socket to broker 0 (client id `raw-socket`): six requests, correlation ids 1 to
# 6, written in **one** `sendall`. Two of them look at the end of partition 0 (ListOffsets, "latest"), before and after a Produce to it.

# %%
Metadata, ApiVersions = request_class(ApiKey.METADATA), request_class(ApiKey.API_VERSIONS)
ListOffsets, Produce = request_class(ApiKey.LIST_OFFSETS), request_class(ApiKey.PRODUCE)
latest = ListOffsets(replica_id=-1, isolation_level=0, topics=(ListOffsets.ListOffsetsTopic(
    name=lab03.TOPIC, partitions=(ListOffsets.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=-1, timestamp=-1),)),))        # timestamp -1 = "latest"
one_record = Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
    name=lab03.TOPIC, partition_data=(Produce.TopicProduceData.PartitionProduceData(
        index=0, records=build_batch([SimpleRecord(b"order-x", b"x", (), lab03.TIMESTAMP)])),)),))
pipeline = [
    ("ApiVersions", 3, ApiVersions(client_software_name="kafkalab-lab", client_software_version="1.0")),
    ("Metadata", 12, Metadata(topics=(Metadata.MetadataRequestTopic(name=lab03.TOPIC),),
                              allow_auto_topic_creation=False)),
    ("ListOffsets", 7, latest),
    ("Produce", 9, one_record),
    ("ListOffsets", 7, latest),
    ("Metadata", 4, Metadata(topics=None, allow_auto_topic_creation=False)),
]
frames = [request(body, version, corr) for corr, (name, version, body) in enumerate(pipeline, start=1)]

with RawConnection(cluster.broker(0).bootstrap_servers) as conn:
    conn.send(*frames)                                      # all six in one write
    answers = [conn.receive() for _ in frames]

rows = []
for (name, version, _), frame, answer in zip(pipeline, frames, answers):
    corr = int.from_bytes(answer[:4], "big", signed=True)
    body = decode_response(answer, API_KEYS[name], version).body
    what = ""
    if name == "ListOffsets":
        what = f"latest offset of partition 0: {body.topics[0].partitions[0].offset}"
    elif name == "Produce":
        what = f"record appended at offset {body.responses[0].partition_responses[0].base_offset}"
    rows.append({"sent": f"{name} v{version}", "correlation id sent": int.from_bytes(frame[4:8], "big"),
                 "request bytes": len(frame) + 4, "answer's correlation id": corr, "what it says": what})
pd.DataFrame(rows).set_index("sent")

# %% [markdown]
# The six answers came back **in the order the requests were sent**, each with its request's correlation id.
# And the two ListOffsets tell us more: the one sent *after* the Produce already sees the new record. On one
# connection the broker handles requests strictly in order, so a client can rely on it: a request sees the
# effect of every request sent before it on the same connection.
#
# The broker does not check correlation ids, it only echoes them. Uniqueness is the client's business:

# %%
with RawConnection(cluster.broker(0).bootstrap_servers) as conn:
    conn.send(*(request(ApiVersions(), 0, corr) for corr in (42, 7, 7, -1)))
    echoed = [int.from_bytes(conn.receive()[:4], "big", signed=True) for _ in range(4)]
print("sent 42, 7, 7, -1; the answers carry", echoed)

# %% [markdown]
# Real clients number their requests 1, 2, 3...: kafka-python per connection (you will see it in section 3),
# librdkafka per broker, the Java client with one counter for all its connections. Each keeps a queue of the
# requests in flight on a connection. Each response must match the head of that queue; a client that finds
# another correlation id there concludes the connection is broken and closes it.
#
# ### One at a time
#
# Pipelining does not mean the broker works on several requests of a connection at once. The socket server
# reads one request, hands it on, and **mutes** the connection: it reads nothing more from it until the answer
# is written. The other requests wait in the socket buffers. That is how the order is kept — and it has a cost.
#
# To see the cost, we need a request that takes long. A Fetch with `min_bytes=1` at the end of a partition has
# no data to return, so the broker holds it for up to `max_wait_ms` (here 800 ms) in case records arrive
# (lab 07 looks at that waiting room, the *purgatory*). On connection A we pipeline that Fetch and a Metadata
# request; on connection B, opened right after, a lone Metadata request.

# %%
Fetch = request_class(ApiKey.FETCH)
end_of_p0 = decode_response(answers[4], ApiKey.LIST_OFFSETS, 7).body.topics[0].partitions[0].offset
slow_fetch = Fetch(replica_id=-1, max_wait_ms=800, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                   session_epoch=-1, topics=(Fetch.FetchTopic(topic=lab03.TOPIC, partitions=(
                       Fetch.FetchTopic.FetchPartition(partition=0, fetch_offset=end_of_p0, partition_max_bytes=1 << 20,
                                                       current_leader_epoch=-1, log_start_offset=-1),)),),
                   forgotten_topics_data=(), rack_id="")
small_metadata = Metadata(topics=None, allow_auto_topic_creation=False)

log = cluster.broker(0).channel.request_log
mark = len(log.records)
a, b = RawConnection(cluster.broker(0).bootstrap_servers), RawConnection(cluster.broker(0).bootstrap_servers)
started = time.monotonic()
a.send(request(slow_fetch, 12, 1, "conn-A"), request(small_metadata, 12, 2, "conn-A"))
time.sleep(0.05)
b.send(request(small_metadata, 12, 1, "conn-B"))
arrived = []
pending = {"A": (a, 2), "B": (b, 1)}
while any(n for _, n in pending.values()):
    for label, (conn, n) in list(pending.items()):
        if n and conn.readable(0.01):
            frame = conn.receive()
            arrived.append((label, int.from_bytes(frame[:4], "big"), (time.monotonic() - started) * 1000))
            pending[label] = (conn, n - 1)
a.close()
b.close()
cluster.wait_until(lambda: len(log.records) >= mark + 3)

names = {("A", 1): "Fetch (max_wait_ms 800)", ("A", 2): "Metadata", ("B", 1): "Metadata"}
pd.DataFrame([{"answer #": i + 1, "connection": conn, "correlation id": corr, "request": names[(conn, corr)],
               "client waited": lab03.coarse(ms, 600)} for i, (conn, corr, ms) in enumerate(arrived)]
             ).set_index("answer #")

# %% [markdown]
# B's Metadata, sent last, is answered first: connections do not wait for each other. A's Metadata, as quick
# to answer as B's, waits for the Fetch ahead of it. Now the same three requests as the **broker** measured them
# (its request log, times in coarse bins):

# %%
slow = [r for r in log.records[mark:] if r.client_id in ("conn-A", "conn-B")]
phases = ["request_queue_time_ms", "local_time_ms", "remote_time_ms", "response_send_time_ms", "total_time_ms"]
pd.DataFrame([{"request": f"{r.client_id[-1]} · {names[(r.client_id[-1], r.correlation_id)]}",
               **{p.replace("_ms", ""): lab03.coarse(getattr(r, p), 600) for p in phases}} for r in slow]
             ).set_index("request")

# %% [markdown]
# For the broker, A's Metadata was as quick as B's. The 800 ms it spent waiting happened *before* the broker
# read it, in the connection's buffers, where no broker metric sees it. When a client reports slow requests
# that the broker's metrics do not show, look for a slow request ahead of them on the same connection.
#
# The same story as a sequence diagram. The grey bars show what the broker is busy with on each connection:

# %% tags=["figure:muted_connection"]
seq = SequenceDiagram([("A", "connection A", "client_id conn-A"), ("broker", "broker 0", "one network thread, many connections"),
                       ("B", "connection B", "client_id conn-B")])
colour = API_COLOURS
first = seq.message("A", "broker", "Fetch v12 · corr=1 · max_wait_ms=800", colour=colour["Fetch"])
seq.message("A", "broker", "Metadata v12 · corr=2", colour=colour["Metadata"], note="")
seq.note("A's Metadata waits in the socket buffer: the connection is muted")
b_in = seq.message("B", "broker", "Metadata v12 · corr=1", colour=colour["Metadata"])
seq.message("broker", "B", "corr=1", dashed=True)
seq.note("… 800 ms: no record arrives, max_wait_ms expires …")
fetch_out = seq.message("broker", "A", "corr=1 · no records", dashed=True)
meta_in = seq.note("the broker unmutes A and reads the next request")
seq.message("broker", "A", "corr=2", dashed=True)
seq.span("broker", first, fetch_out, "#f3f0ff")
seq.span("broker", meta_in, meta_in + 1)
seq.span("broker", b_in, b_in + 1)
seq

# %% [markdown]
# ## 3 · A client's conversation, request by request
#
# Now a whole conversation of a real client, drawn from the broker's request log. A fresh one-broker cluster, and
# a kafka-python producer (idempotent, as kafka-python is by default) sending three records, waiting for each
# acknowledgement.

# %%
from kafka import KafkaProducer

small = Cluster(brokers=1).start()
small.create_topic(lab03.TOPIC, partitions=1)
kp = KafkaProducer(bootstrap_servers=small.bootstrap_servers, client_id=CLIENT_ID, linger_ms=5)
for i in range(3):
    kp.send(lab03.TOPIC, key=b"order-%d" % i, value=b"%d" % i, partition=0, timestamp_ms=lab03.TIMESTAMP)
    kp.flush(10)
kp.close(2)
lab03.wait_for_connections(small, {0: 0})
records = [r for r in small.broker(0).channel.request_log.records if r.client_id == CLIENT_ID]
print(f"{len(records)} requests on {len({r.connection_id for r in records})} connections")

# %% tags=["figure:producer_conversation"]
numbers = {}
for r in records:
    numbers.setdefault(r.connection_id, len(numbers))
lanes = [("client", "kafka-python producer", f"client_id {CLIENT_ID}")] + [
    (f"c{n}", f"broker 0 · connection {n}", "bootstrap" if n == 0 else "the partition leader, by id")
    for n in numbers.values()]
conversation = SequenceDiagram(lanes, title="A kafka-python producer, as the broker's request log saw it")
for r in records:
    lane = f"c{numbers[r.connection_id]}"
    conversation.message("client", lane, f"{r.api_name} v{r.api_version} · corr={r.correlation_id}",
                         colour=API_COLOURS.get(r.api_name, "#495057"))
    conversation.message(lane, "client", f"corr={r.correlation_id}", dashed=True)
conversation

# %% [markdown]
# Read it from the top:
#
# * **Bootstrap** (connection 0): ApiVersions, then Metadata, which names the brokers and the partition leaders.
# * **The leader** (connection 1, the same broker reached by its id): ApiVersions again (a new connection always
#   starts with it), then InitProducerId (the idempotent producer gets its producer id, lab 05 §7), a Metadata
#   refresh for the topic, and one Produce per record.
# * **Correlation ids start again from 1** on the new connection: kafka-python counts per connection. They only
#   have to be unique among the requests in flight on that connection (the Java client, with one counter for all
#   its connections, would have gone on with 3).
# * Arrows always start at the client: the broker only ever answers.

# %% [markdown]
# ## 4 · Inside the broker: request queue and I/O threads
#
# What happens between a request's arrival and its answer? Kafka splits the work between two kinds of threads:
#
# * **network threads** (Kafka's *processors*, `num.network.threads`, 3 by default per listener) read bytes from
#   the sockets, cut them into requests, parse the headers — and mute the connection, as you saw. The acceptor
#   hands new connections to them in turn, so each network thread serves many connections, not one;
# * every parsed request goes into one **request queue**, bounded by `queued.max.requests` (500 by default).
#   When it is full, the network threads stop reading: the clients feel back-pressure as TCP windows fill up;
# * **I/O threads** (request handlers, `num.io.threads`, 8 by default) take requests from the queue and do the
#   work: append to a log, read a log, look up metadata;
# * a request that has to wait (a Fetch without enough data, a Produce with `acks=all` waiting for followers)
#   is parked in a **purgatory** so that its I/O thread can move on; it completes later;
# * the response goes back to the network thread, which writes it and unmutes the connection.

# %% tags=["figure:request_path"]
lab03.request_path_diagram(num_io_threads=cluster.broker(0).config["num.io.threads"],
                           queued_max_requests=cluster.broker(0).config["queued.max.requests"])

# %% [markdown]
# The request log records how long each request spent in each stage, under Kafka's own metric names:
# `request_queue_time` (waiting for an I/O thread), `local_time` (the I/O thread's work), `remote_time` (waiting in
# purgatory), `response_send_time` (writing the answer). The table in section 2 showed them for the slow Fetch:
# its 800 ms were all *remote* time, and the I/O thread was free during them. For everything else in this lab
# the stages take well under a millisecond, far too little (and too machine-dependent) to print; on a busy
# broker with too few I/O threads, the queue time is what grows.
#
# (kafkalab runs the network threads and the `num.io.threads` handlers as coroutines on one event loop: the
# design and the measurements are Kafka's, but more handlers do not add CPU here.)

# %% [markdown]
# ## 5 · Metrics: the broker's books and the client's
#
# Both ends of a connection measure the traffic on it. The broker counts, per API, the requests, the bytes of
# the requests and the bytes of the responses, and turns them into rates. A fresh broker and a kafka-python
# producer sending twenty records, one at a time:

# %%
metered = Cluster(brokers=1).start()
metered.create_topic(lab03.TOPIC, partitions=1)
kp = KafkaProducer(bootstrap_servers=metered.bootstrap_servers, client_id=CLIENT_ID, linger_ms=5)
for i in range(20):
    kp.send(lab03.TOPIC, key=b"order-%d" % i, value=b"%02d" % i, partition=0, timestamp_ms=lab03.TIMESTAMP)
    kp.flush(10)
client_metrics = kp.metrics()
kp.close(2)
lab03.wait_for_connections(metered, {0: 0})
metrics = metered.broker(0).channel.metrics
snapshot = metrics.snapshot()
window_s = metrics.window_ms / 1000
lab03.MetricsBars(snapshot, title="the broker's request metrics, per API")

# %%
pd.DataFrame([{"API": r["api_name"], "requests": r["requests"], "request bytes": r["request_bytes"],
               "response bytes": r["response_bytes"], f"requests/s (last {window_s:g} s)": round(r["requests_per_sec"], 3)}
              for r in snapshot]).set_index("API")

# %% [markdown]
# Not every row is the producer's. UpdateMetadata and LeaderAndIsr come from the broker's own controller, which
# connects to its broker like any other client when the topic is created (lab 09 §1). The bytes have rates too,
# computed the same way as `requests/s`; Exercise 5 asks for one.
#
# What would these columns be called on a real broker? Kafka publishes its metrics over JMX, and none of them is
# quite this table:
#
# | this table | on a Kafka broker |
# |---|---|
# | requests | the count of the meter `kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9` (one per API and version) |
# | requests/s | that meter's rates are a mean since start-up and moving averages over 1, 5 and 15 minutes; kafkalab shows a simpler rate, the requests of the last 30 s divided by 30 |
# | request bytes | each request's size goes into the histogram `kafka.network:type=RequestMetrics,name=RequestBytes,request=Produce`: count, mean, max, percentiles, no sum; the table adds them up |
# | response bytes | no per-API metric: the network threads count all responses together, `outgoing-byte-total` in the group `socket-server-metrics` |
#
# And the two names every Kafka dashboard plots, `BytesInPerSec` and `BytesOutPerSec`
# (`kafka.server:type=BrokerTopicMetrics`, per topic and for all topics), measure something else again: the
# bytes of the **record batches** a leader appended from Produce requests, and the record bytes it sent in Fetch
# responses. Request headers and the rest of the request are not in them. Our 20 Produce requests, and what
# `BytesInPerSec` would have counted for them (the batches are what the partition's log holds):

# %%
produce = next(r for r in snapshot if r["api_name"] == "Produce")
record_bytes = metered.broker(0).log_manager.get_log(lab03.TOPIC, 0).size_in_bytes
print(f"Produce requests: {produce['request_bytes']} B   record batches appended (BytesInPerSec's bytes): "
      f"{record_bytes} B")
print(f"the other {produce['request_bytes'] - record_bytes} B: size prefixes, request headers, acks, timeout, topic and "
      "partition fields")

# %% [markdown]
# Connections are counted too. The one still open is the controller's; the producer's two are closed:

# %%
print(f"connections created: {metrics.connections_created}, closed: {metrics.connections_closed}, "
      f"open now: {metrics.connection_count}")

# %% [markdown]
# ### The client's books
#
# Every Kafka client keeps its own metrics, and in the Java client (and in kafka-python, which copies its
# names) they come from the layer that owns the sockets, so producers, consumers and admin clients all have
# them: `request-rate` and `request-total` (requests sent), `request-size-avg` and `request-size-max`,
# `outgoing-byte-rate` and `incoming-byte-rate` (bytes written and read, size prefixes included),
# `connection-creation-rate` and `connection-close-rate`, `connection-count`. They sit in the group
# `producer-metrics` (or `consumer-metrics`, `admin-client-metrics`), and again per broker in
# `producer-node-metrics` with a tag `node-id` = `node-0`. (A broker's network threads keep the same set, in
# `socket-server-metrics`.)
#
# kafkalab's producer keeps them too, measured on its own clock. We give it a `MockTime`: a clock that stands
# still until we move it, so the rates below are the same on every run. Twenty records again:

# %%
from kafkalab.clients import Producer as KafkalabProducer
from kafkalab.common import MockTime

client_clock = MockTime()
start_ms = client_clock.milliseconds()
own = KafkalabProducer({"bootstrap.servers": metered.bootstrap_servers, "client.id": "lab03-kafkalab",
                        "linger.ms": 0, "enable.idempotence": False}, time=client_clock)
for i in range(20):
    own.send(lab03.TOPIC, b"%02d" % i, key=b"order-%d" % i, partition=0, timestamp=lab03.TIMESTAMP).result(10)
books = lab03.client_metrics(own.metrics(), "producer-metrics")
lab03.wait_for_requests(metered, "lab03-kafkalab", int(books["request-total"]))   # the broker logs after answering
seen = [r for r in metered.broker(0).channel.request_log.records if r.client_id == "lab03-kafkalab"]
pd.DataFrame([
    {"metric": "request-total", "the client counted": books["request-total"], "the broker saw": len(seen)},
    {"metric": "outgoing-byte-total", "the client counted": books["outgoing-byte-total"],
     "the broker saw": sum(r.request_bytes for r in seen)},
    {"metric": "incoming-byte-total", "the client counted": books["incoming-byte-total"],
     "the broker saw": sum(r.response_bytes for r in seen)},
    {"metric": "request-size-max", "the client counted": books["request-size-max"],
     "the broker saw": max(r.request_bytes for r in seen)},
    {"metric": "connection-creation-total", "the client counted": books["connection-creation-total"],
     "the broker saw": len({r.connection_id for r in seen})},
]).set_index("metric")

# %% [markdown]
# Counts and sizes agree exactly: two views of the same bytes. (Two connections: the bootstrap address, then
# broker 0 by its id.) Now the rates. A Java client keeps each rate in 2 samples of 30 s
# (`metrics.num.samples`, `metrics.sample.window.ms`) and divides what they hold by the time since the oldest
# of them began — plus one more 30 s window while that time is still shorter than a window. So a burst in a
# client's first second reads as spread over 30 s, not as a huge rate. A sample is dropped once 2 × 30 s have
# passed since its last event. We move the producer's clock and read three rates each time:

# %%
rates = []
for step_ms in (0, 15_000, 30_000, 15_000):
    client_clock.advance(step_ms)
    now = lab03.client_metrics(own.metrics(), "producer-metrics")
    rates.append({"client clock": f"+{(client_clock.milliseconds() - start_ms) // 1000} s",
                  **{name: round(now[name], 4) for name in ("request-rate", "outgoing-byte-rate",
                                                            "connection-creation-rate")}})
own.close()
pd.DataFrame(rates).set_index("client clock")

# %%
evidence("Kafka's rate rule", {
    "at +0 s: request-rate = request-total / 30 s": abs(rates[0]["request-rate"] - books["request-total"] / 30) < 1e-3,
    "at +15 s: the same requests over 45 s (15 s + one full window)":
        abs(rates[1]["request-rate"] - books["request-total"] / 45) < 1e-3,
    "at +45 s: over 45 s (a full window has passed: nothing added)":
        abs(rates[2]["request-rate"] - books["request-total"] / 45) < 1e-3,
    "at +60 s: no event in the last 2 × 30 s, every rate is 0": rates[3]["request-rate"] == 0,
})

# %% [markdown]
# kafka-python keeps the same books under the same names, and its counts agree with the broker's as well:

# %%
largest = max(r.request_bytes for r in metered.broker(0).channel.request_log.records if r.client_id == CLIENT_ID)
overall = client_metrics["producer-metrics"]
print(f"client: request-size-max {overall['request-size-max']:.0f} B   broker: largest request {largest} B")
print(f"client: records-per-request-avg {overall['records-per-request-avg']:.1f}   "
      f"broker: {produce['requests']} Produce requests for 20 records")
print("client metric names:", ", ".join(sorted(k for k in overall if k.endswith("-rate"))))

# %% [markdown]
# librdkafka (confluent-kafka) keeps the same counts under other names: set `statistics.interval.ms` and a
# `stats_cb`, and every interval it hands you a JSON document with, per broker, `tx` and `txbytes` (requests
# and bytes sent), `rx` and `rxbytes`, `connects`, `disconnects`, and `req`, the requests per API. Twenty more
# records, and the entry for broker 0 checked against what broker 0 logged on that client's connection to it:

# %%
import json

rd_stats = []
rd = Producer({"bootstrap.servers": metered.bootstrap_servers, "client.id": "lab03-librdkafka", "linger.ms": 5,
               "statistics.interval.ms": 100, "stats_cb": lambda doc: rd_stats.append(json.loads(doc)),
               "logger": librdkafka_log, **lab03.LIBRDKAFKA_SOFTWARE})
for i in range(20):
    rd.produce(lab03.TOPIC, key=b"order-%d" % i, value=b"%02d" % i, partition=0, timestamp=lab03.TIMESTAMP)
    rd.flush(10)
lab03.wait_for_requests(metered, "lab03-librdkafka", 20, api="Produce")
rd_seen = [r for r in metered.broker(0).channel.request_log.records if r.client_id == "lab03-librdkafka"]
on_conn = [r for r in rd_seen if r.connection_id == rd_seen[-1].connection_id]     # broker 0, by its id


def broker_0(doc):
    return next((b for b in doc["brokers"].values() if b["nodeid"] == 0), None)


metered.wait_until(lambda client=rd: client.poll(0.05) is not None and rd_stats and broker_0(rd_stats[-1]) is not None
                   and broker_0(rd_stats[-1])["rx"] == len(on_conn), 10, "no statistics after the last answer")
entry = broker_0(rd_stats[-1])
# (how many requests: 21 or 22, as librdkafka sometimes repeats a Metadata request; the claims hold either way)
evidence("librdkafka's statistics for broker 0 and broker 0's request log of that connection", {
    "tx: as many requests as broker 0 logged": entry["tx"] == len(on_conn),
    "txbytes: the bytes of those requests, size prefixes included":
        entry["txbytes"] == sum(r.request_bytes for r in on_conn),
    "rxbytes: the bytes of their responses": entry["rxbytes"] == sum(r.response_bytes for r in on_conn),
    "req['Produce']: the 20 Produce requests": entry["req"]["Produce"] == 20 == sum(
        r.api_name == "Produce" for r in on_conn),
})

# %% [markdown]
# Same bytes, other names. (librdkafka's statistics list brokers by id; the bootstrap connection it dropped
# is not among them.)

# %% [markdown]
# ## 6 · Too big, and never first
#
# Two more rules of the connection. First: **every exchange starts with the client.** A broker never sends
# anything unasked — no greeting, no notice before it closes. Connect, wait half a second, and see:

# %%
limited = Cluster(brokers=1, overrides={"socket.request.max.bytes": 4096}).start()
limited.create_topic(lab03.TOPIC, partitions=1)
with RawConnection(limited.bootstrap_servers) as conn:
    print("anything from the broker within 0.5 s?", conn.readable(0.5))

# %% [markdown]
# Second: **a broker has a maximum request size**, `socket.request.max.bytes` (100 MiB by default; this broker
# has 4096 bytes). It reads the 4-byte size of each request first and compares it with the limit, before reading
# or allocating anything else. Two Produce requests, one of exactly 4096 bytes after the size field, one a
# single byte bigger:

# %%
broker_log.clear()
outcomes = []
for size in (4096, 4097):
    frame = lab03.produce_frame(size, correlation_id=size)
    with RawConnection(limited.bootstrap_servers) as conn:
        conn.send(frame)
        answer = conn.receive()
    if answer is None:
        outcome = "no answer: the broker closed the connection"
    else:
        r = decode_response(answer, ApiKey.PRODUCE, 9).body.responses[0].partition_responses[0]
        outcome = f"answered: {error_info(r.error_code).name}, base_offset {r.base_offset}"
    outcomes.append({"size field": size, "bytes on the wire": len(frame) + 4, "outcome": outcome})
pd.DataFrame(outcomes).set_index("size field")

# %%
print("broker log:", *broker_log.messages(), sep="\n  ")
print("requests the broker handled:",
      [(r.api_name, r.correlation_id) for r in limited.broker(0).channel.request_log.records])

# %% [markdown]
# The oversized request never reached a handler, so it is not in the request log and got no error code: the
# broker cannot parse what it refuses to read, and it will not allocate up to 2 GiB (the largest size an int32
# size field can claim) because a client says so. What does a real client make of that? confluent-kafka, sending one 5000-byte record to this broker (giving up after 1.5 s):

# %%
broker_log.clear()
limited.create_topic("big", partitions=1)
before = len(limited.broker(0).channel.request_log.records)
outcome = []
big_producer = Producer({"bootstrap.servers": limited.bootstrap_servers, "client.id": CLIENT_ID, "linger.ms": 5,
                         "message.timeout.ms": 1500, "logger": librdkafka_log, **lab03.LIBRDKAFKA_SOFTWARE})
big_producer.produce("big", value=b"x" * 5000, partition=0, timestamp=lab03.TIMESTAMP,
                     on_delivery=lambda err, msg: outcome.append(err))
big_producer.flush(10)
del big_producer
handled = collections.Counter(r.api_name for r in limited.broker(0).channel.request_log.records[before:])
print("delivery report:", outcome[0].str())
print("Produce requests answered by the broker:", handled.get("Produce", 0))
print("the broker closed a connection for this reason, more than once:", len(broker_log.messages()) > 1)
print("broker log (each distinct line once):", *sorted(set(broker_log.messages())), sep="\n  ")

# %% [markdown]
# The client only sees its connection drop, reconnects (ApiVersions again, each time), sends the same request
# again, and finally gives up: "Message timed out". It never learns that the request was too big. Compare a
# limit the broker *can* report: a topic's `max.message.bytes` is checked by an I/O thread after the request
# was read and parsed, so the producer gets an answer with an error code:

# %%
limited.create_topic("strict", partitions=1, config={"max.message.bytes": 1000})
with RawConnection(limited.bootstrap_servers) as conn:
    conn.send(lab03.produce_frame(2000, topic="strict", correlation_id=9))
    r = decode_response(conn.receive(), ApiKey.PRODUCE, 9).body.responses[0].partition_responses[0]
print(f"{error_info(r.error_code).name} ({r.error_code}): {r.error_message}")

# %% [markdown]
# That's all the brokers of this lab:

# %%
del producer, rd                                            # the librdkafka producers close their connections
for c in (cluster, small, metered, limited):
    c.stop()
print("4 clusters stopped")

# %% [markdown]
# ## 7 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the same data you were given.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · How big may a request be?
#
# A broker runs with `socket.request.max.bytes = 4096`. What is the largest request, counted in bytes on the
# wire *including* the 4-byte size prefix, that it accepts? Store it in `largest`.

# %% tags=["solution"]
largest = 4096 + 4

# %%
lab03.check_max_request_size(largest, 4096)

# %% [markdown]
# ### Exercise 2 · The order of the answers
#
# Three clients each pipeline requests on their own connection, all written at the same moment. Next to each
# request: how long the broker needs to answer it once it starts on it (the Fetch requests wait for data). In
# which order does the broker send the six responses? Give the labels as a list in `order`.

# %%
SCENARIO = {
    "A": [("A1 Fetch", 500), ("A2 Metadata", 1)],
    "B": [("B1 Produce", 5), ("B2 Fetch", 200), ("B3 ApiVersions", 1)],
    "C": [("C1 Metadata", 2)],
}

# %% tags=["solution"]
order = ["C1 Metadata", "B1 Produce", "B2 Fetch", "B3 ApiVersions", "A1 Fetch", "A2 Metadata"]

# %%
lab03.check_response_order(order, SCENARIO)

# %% [markdown]
# ### Exercise 3 · Which answer is which?
#
# A client has four requests in flight on one connection (`IN_FLIGHT`: correlation id → API and version). Four
# response frames arrive (`ANSWERS`, each with its size prefix). Which API does each frame answer? Give a list of
# API names in the order of `ANSWERS`. Read the bytes; do not decode the bodies.

# %%
IN_FLIGHT = {19: ("ListOffsets", 7), 17: ("Metadata", 12), 20: ("ApiVersions", 3), 18: ("Produce", 9)}
ANSWERS = lab03.response_frames(IN_FLIGHT)
for frame in ANSWERS:
    print(frame.hex(" "))

# %% tags=["solution"]
apis = [IN_FLIGHT[int.from_bytes(frame[4:8], "big")][0] for frame in ANSWERS]

# %%
lab03.check_match_responses(apis, IN_FLIGHT, ANSWERS)

# %% [markdown]
# ### Exercise 4 · Connections per broker
#
# `client_records` holds every request the confluent-kafka producer of section 1 sent, as `(broker id,
# RequestRecord)` pairs taken from the three brokers' request logs. How many connections did it open to each
# broker? Give a dict `{broker id: connections}` in `per_broker`.

# %%
client_records = [(b, r) for b in range(3) for r in cluster.broker(b).channel.request_log.records
                  if r.client_id == CLIENT_ID]
print("fields of a record:", ", ".join(client_records[0][1]._fields[:6]), "...")

# %% tags=["solution"]
ids = collections.defaultdict(set)
for broker, r in client_records:
    ids[broker].add(r.connection_id)
per_broker = {broker: len(connection_ids) for broker, connection_ids in sorted(ids.items())}

# %%
lab03.check_connections_per_broker(per_broker, client_records, CLIENT_ID)

# %% [markdown]
# ### Exercise 5 · Size and rate
#
# From `produce` (the Produce row of the broker's metrics snapshot in section 5) and the `window_s`-second
# window: what is the average size of a Produce request (the mean a `RequestBytes` histogram would show), and
# how many request bytes per second did Produce bring in over the window? Give a dict with the keys
# `"avg_request_bytes"` and `"request_bytes_per_sec"` in `sizes`.

# %%
print({k: produce[k] for k in ("api_name", "requests", "request_bytes", "response_bytes")}, "window:", window_s, "s")

# %% tags=["solution"]
sizes = {
    "avg_request_bytes": produce["request_bytes"] / produce["requests"],
    "request_bytes_per_sec": produce["request_bytes"] / window_s,
}

# %%
lab03.check_produce_rates(sizes, produce, window_s)

# %% [markdown]
# ### Exercise 6 · A client's request-rate
#
# A consumer with Kafka's default metric settings (2 samples of 30 s) sends 90 requests, all at the instant
# its clock reads 0, and nothing after. What does its `request-rate` read 20, 40 and 70 seconds later? Give a
# dict `{20: ..., 40: ..., 70: ...}` in `rates_read`. (Section 5's last table shows the rule at work.)

# %% tags=["solution"]
rates_read = {20: 90 / (20 + 30), 40: 90 / 40, 70: 0.0}

# %%
lab03.check_client_rates(rates_read, 90, (20, 40, 70))

# %% [markdown]
# ## 8 · Recap
#
# * **Connections (C2).** A client opens one long-lived connection per broker it needs (plus a bootstrap
#   connection it drops once it knows the brokers by id), never a pool to one broker.
# * **Correlation ids (C3, C37).** The client numbers its requests (kafka-python per connection, the Java client
#   across all of them); each response starts with its request's number, and nothing else says what it answers.
# * **Pipelining and order (C3).** Clients write several requests without waiting. The broker reads one
#   request per connection at a time (it *mutes* the connection until the answer is written), so answers come
#   in order and a request sees the effect of earlier ones — and a slow request delays those behind it, invisibly
#   to the broker's metrics.
# * **Inside the broker (C38).** Network threads parse and mute; a bounded request queue (`queued.max.requests`);
#   I/O threads (`num.io.threads`) do the work; purgatory holds requests that wait. The request log names the
#   time spent in each: queue, local, remote, response send.
# * **Metrics (C36).** The broker counts requests and request and response bytes per API (Kafka:
#   `RequestsPerSec`, a meter with 1-, 5- and 15-minute rates; `RequestBytes`, a histogram); `BytesInPerSec` and
#   `BytesOutPerSec` are record bytes per topic. Every client counts the same traffic from its side:
#   `request-rate`, `outgoing-byte-rate`, `connection-creation-rate`, over 2 samples of 30 s.
# * **Limits and initiative (C4).** A request above `socket.request.max.bytes` closes the connection without an
#   answer; the client sees only disconnects. The broker never speaks first.
#
# **Next:** lab 04, *Metadata and routing*: how a client finds the leader of each partition, and what happens
# when it asks the wrong broker.
