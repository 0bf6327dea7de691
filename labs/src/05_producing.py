# Source of labs/05_producing.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 05
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 05 · The producer's journey
#
# `producer.send("orders", value, key="customer-042")` returns at once. Between that call and a record sitting in a
# broker's log, the producer makes four decisions on its own: **which partition** the record belongs to, **which
# batch** it travels in, **when** that batch leaves and in **which request**, and what to do when no answer
# comes back. This lab watches those decisions through kafkalab's own producer, which keeps every request and
# response it exchanges (`trace=True`), against a cluster of three brokers running inside the notebook.
#
# **By the end of this lab you can**
#
# 1. say what a record is made of and who turns your objects into its bytes;
# 2. predict how many batches and Produce requests `linger.ms` and `batch.size` give, and read them from a trace;
# 3. compute Java's partition for a key by hand (murmur2, `toPositive`, modulo) and explain why librdkafka
#    clients put the same key elsewhere;
# 4. explain sticky partitioning of keyless records;
# 5. compare what each compression codec saves on a realistic payload;
# 6. say what `acks=0`, `1` and `all` each wait for, and what `acks=0` cannot tell you;
# 7. show that an idempotent producer's retried batch is written once, and that without idempotence it is not.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C25** a record is key, value, headers and a timestamp | one record decoded from the Produce request the producer sent | 1 |
# | **C26** serializers turn keys and values into bytes | a dict and a str becoming the bytes in the batch | 1 |
# | **C28** batching (`batch.size`, `linger.ms`); partition by key, or sticky without one | request and batch counts from the trace; murmur2 by hand; Java vs librdkafka; sticky batches | 2-4 |
# | **C9** one Produce carries many partitions and topics | one request per broker, with a batch for each of its partitions that has records; one request carries two topics | 2 |
# | **C39** Produce, the producer's request | its fields (`acks`, `timeout_ms`, `topic_data`), its answer, and the case with no answer | 2, 6 |
# | **C30** the idempotent producer | InitProducerId, sequences, and a re-sent request that the broker turns into a no-op | 7 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | `send()`, `flush()`, the I/O thread | `kafkalab/clients/producer/producer.py` | `clients/.../producer/KafkaProducer.java` |
# | partition choice | `kafkalab/clients/producer/partitioner.py` | `clients/.../producer/internals/BuiltInPartitioner.java`, `common/utils/Utils.java` (`murmur2`) |
# | batches, `linger.ms`, `batch.size` | `kafkalab/clients/producer/accumulator.py` | `clients/.../producer/internals/RecordAccumulator.java`, `ProducerBatch.java` |
# | requests to leaders, answers, retries | `kafkalab/clients/producer/sender.py` | `clients/.../producer/internals/Sender.java` |
# | producer id, epoch, sequences | `kafkalab/clients/producer/transaction_manager.py` | `clients/.../producer/internals/TransactionManager.java` |
# | the broker's duplicate check | `kafkalab/storage/producer_state.py` | `storage/.../internals/log/ProducerStateManager.java` |
# | the trace, tables, pictures, checks | `kafkalab/clients/tracing.py`, `kafkalab/labs/lab05.py` | — |

# %%
import json
import random
import tempfile
import zlib
from pathlib import Path

import pandas as pd
from confluent_kafka import Producer as LibrdkafkaProducer

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Producer
from kafkalab.clients.producer import Partitioner, RecordAccumulator, TopicPartition, murmur2, to_positive
from kafkalab.clients.producer.accumulator import estimate_size
from kafkalab.labs import lab05
from kafkalab.records import SimpleRecord, decode_batch

pd.set_option("display.max_colwidth", 90)
broker_log = BrokerLog().install()          # the brokers' warnings: kept in a list, shown when we ask
workdir = tempfile.TemporaryDirectory(prefix="kafkalab-lab05-")
BASE = Path(workdir.name)
T0 = lab05.T0                               # every record carries a fixed timestamp: sizes stay the same each run

cluster = Cluster(brokers=3, log_dirs=str(BASE)).start()
LEADERS = {p: p % 3 for p in range(6)}      # orders-0 on broker 0, orders-1 on broker 1, ... (one replica each)


def create_topic(name, assignment, **config):
    """Create a topic with a fixed replica assignment (the broker would pick a random start otherwise)."""
    admin = cluster.broker(cluster.controller_id).admin
    cluster.call(admin.create_topic, name, -1, -1, {p: [b] for p, b in assignment.items()},
                 {"retention.ms": "-1", **{k.replace("_", "."): str(v) for k, v in config.items()}})
    cluster.wait_until(lambda: all(b.metadata_cache.partition_count(name) == len(assignment)
                                   for b in cluster.brokers.values()))


create_topic("orders", LEADERS)             # retention.ms=-1: our records are stamped 2023 (lab 06 §8 shows why)
create_topic("clicks", {0: 0})
create_topic("payments", {0: 0})
print(cluster.num_brokers, "brokers; topics: orders (6 partitions), clicks (1), payments (1)")
pd.DataFrame([{"partition": f"orders-{p}", "leader": f"broker {b}"} for p, b in LEADERS.items()]).set_index("partition").T

# %% [markdown]
# ## 1 · A record, and who makes its bytes
#
# A Kafka record is a **key**, a **value**, a list of **headers** (name → bytes) and a **timestamp**. The broker
# never looks inside key or value: to Kafka both are byte strings. Turning your objects into bytes is the job
# of a *serializer* on the client side: Java's `StringSerializer` and `ByteArraySerializer`, Avro or Protobuf
# serializers with a schema registry in the wider ecosystem. kafkalab's producer, like confluent-kafka, takes
# `bytes` or `str` (encoded as UTF-8) and leaves everything else to you: here `json.dumps` is the value
# serializer.

# %%
order = {"order_id": "ord-100042", "customer": "customer-042", "total": 23.9, "currency": "EUR"}
with Producer(lab05.config(cluster.bootstrap_servers), trace=True) as producer:
    future = producer.send("orders", json.dumps(order).encode(), key="customer-042",
                           headers=[("source", b"web-shop"), ("schema", b"order-v1")], timestamp=T0)
    metadata = future.result()
print(metadata)

request = lab05.produce_requests(producer.trace)[0].request
batch = decode_batch(request.body.topic_data[0].partition_data[0].records)
record = batch.records[0]
pd.DataFrame([{"field": "key", "as sent (bytes)": record.key},
              {"field": "value", "as sent (bytes)": record.value},
              {"field": "headers", "as sent (bytes)": record.headers},
              {"field": "timestamp", "as sent (bytes)": record.timestamp}]).set_index("field")

# %% [markdown]
# `send()` gave back a future; it resolved to a `RecordMetadata`: the partition the record went to and the
# offset the leader gave it. The table is decoded from the request frame the producer wrote, not from the
# producer's memory: the dict became JSON bytes, the str key became UTF-8 bytes, and the headers travel as
# `(str, bytes)` pairs. A consumer gets exactly these bytes back and needs the matching *deserializers*; agreeing
# on them is a contract between the applications, not something Kafka checks.
#
# ## 2 · Batching: `linger.ms` and `batch.size`
#
# The producer never writes a record straight to a socket. `send()` appends it to an open **batch** for its
# partition in the *record accumulator*; a separate I/O loop, the *sender*, ships batches to the partition
# leaders. When does a batch leave? When it is full (`batch.size` bytes, default 16384), when it has waited
# `linger.ms` (default 5 ms in Java since Kafka 4.0, 0 before), or when someone calls `flush()`.
#
# First, the slow way: send 50 click events to the one-partition topic `clicks` and wait for each answer before
# sending the next, as code that calls `.result()` (or Java's `.get()`) after every `send()` does.

# %%
clicks = [(f"user-{i % 7}".encode(), json.dumps({"page": f"/item/{i * 37 % 500}", "ms": 40 + i % 9}).encode())
          for i in range(50)]
with Producer(lab05.config(cluster.bootstrap_servers, linger_ms=0), trace=True) as one_by_one:
    for i, (key, value) in enumerate(clicks):
        one_by_one.send("clicks", value, key=key, timestamp=T0 + i).result()
rows = lab05.batch_rows(one_by_one.trace)
print(f"{len(clicks)} records -> {len(lab05.produce_requests(one_by_one.trace))} Produce requests, "
      f"{len(rows)} batches of {sorted({r['records'] for r in rows})} record(s), "
      f"{sum(r['batch bytes'] for r in rows)} batch bytes in all")

# %% [markdown]
# One request, one batch, one record, one round trip each: correct, but every record pays the full price of a
# request (headers, a batch header of 61 bytes, a turn through the broker's request queue). Now the same 50 records
# with a long `linger.ms`: `send()` returns at once each time, the records pile up in one batch, and `flush()`
# makes it sendable without waiting out the linger.

# %%
def send_all(config, records, topic="clicks"):
    """Send every record without waiting, then flush(); returns the producer (closed) for its trace."""
    with Producer(config, trace=True) as p:
        for i, (key, value) in enumerate(records):
            p.send(topic, value, key=key, timestamp=T0 + i)
        p.flush()
    return p


lingered = send_all(lab05.config(cluster.bootstrap_servers, linger_ms=60_000), clicks)
lingered_rows = lab05.batch_rows(lingered.trace)
print(f"one batch of {lingered_rows[0]['records']} records: {lingered_rows[0]['batch bytes']} bytes; "
      f"{len(rows)} batches of one record (above): {sum(r['batch bytes'] for r in rows)} bytes")
pd.DataFrame(lingered_rows).set_index("request")

# %% [markdown]
# One request carrying one batch of all 50 records. Because the records of a batch share one header, their
# timestamps and offsets are stored as small deltas, so a batch of 50 costs far less than 50 batches of one.
# `linger.ms` is the trade: a little latency for fewer, fuller requests.
#
# `batch.size` caps a batch. Set it to 1024 bytes and the same records need several batches; each full batch
# may leave at once, without waiting for the linger or the flush.

# %%
capped = send_all(lab05.config(cluster.bootstrap_servers, linger_ms=60_000, batch_size=1024), clicks)
capped_rows = lab05.batch_rows(capped.trace)
sizes = [estimate_size(k, v, ()) for k, v in clicks]
print("records per batch, from the trace:           ", [r["records"] for r in capped_rows])
print("records per batch, by the accumulator's rule:", lab05.plan_batches(sizes, 1024))
pd.DataFrame(capped_rows).set_index("request")

# %% [markdown]
# Four batches, each under 1024 bytes. The accumulator's rule is simple enough to run by hand
# (`lab05.plan_batches`): a batch starts at 61 bytes of header, and a record joins it while header plus records
# stay within `batch.size`; the record that does not fit opens the next batch. (It uses an upper estimate of
# each record's size, so real batches come out a little smaller than the cap.) With one partition, each
# request carries one batch: four batches, four requests.
#
# ### Many partitions and topics in one request (C9)
#
# A Produce request is addressed to a **broker**, not to a partition: it carries one batch for each of several
# partitions, of several topics, that this broker leads. Send 12 orders with keys to the six partitions of
# `orders` and three clicks to `clicks`, all within one linger:

# %%
customers = [f"customer-{n:03d}" for n in (7, 42, 19, 88, 3, 150, 61, 42, 7, 99, 120, 42)]
with Producer(lab05.config(cluster.bootstrap_servers, linger_ms=60_000), trace=True) as multi:
    order_futures = [multi.send("orders", json.dumps({"n": i}).encode(), key=c, timestamp=T0 + i)
                     for i, c in enumerate(customers)]
    for i in range(3):
        multi.send("clicks", b'{"page": "/"}', timestamp=T0 + i)
    multi.flush()
requests = []
for ev in lab05.sent_order(lab05.produce_requests(multi.trace)):
    requests.append({"to broker": ev.node_id, "acks": ev.request.body.acks,
                     "timeout_ms": ev.request.body.timeout_ms,
                     "topic_data": "; ".join(f"{t.name}: partitions {sorted(pd_.index for pd_ in t.partition_data)}"
                                             for t in sorted(ev.request.body.topic_data, key=lambda t: t.name))})
pd.DataFrame(requests).set_index("to broker")

# %% [markdown]
# Three brokers, three requests: each holds one batch for every partition of its broker that got records (no
# key hashed to `orders-1`, so broker 1's request carries `orders-4` alone), and broker 0's carries two topics. This is why a producer keeps **one connection per broker** and why the leaders have to be
# known before sending (lab 04): the sender groups batches by leader. The other fields are the ones every
# Produce has: `acks` (section 6) and `timeout_ms`, how long the leader may wait for replicas.
#
# ## 3 · Partitioning by key
#
# Which partition did each order go to? Records with the same key must always land in the same partition:
# that is how Kafka keeps per-key order (all of one customer's orders, in order). Java's producer, and
# kafkalab's by default, computes `toPositive(murmur2(key bytes)) % number of partitions`.

# %%
placements = [(c, f.result().partition) for c, f in zip(customers, order_futures)]
pd.DataFrame([{"key": c, "partition": p, "offset": f.result().offset, "leader": f"broker {LEADERS[p]}"}
              for (c, p), f in zip(placements, order_futures)]).set_index("key")

# %% tags=["figure:key_routing"]
lab05.routing_diagram(placements, LEADERS, title="12 orders by customer key: record → partition → leader. "
                      "customer-042 (three orders) and customer-007 (two) always take the same path.")

# %% [markdown]
# ### murmur2 by hand
#
# MurmurHash2 mixes the key four bytes at a time. Kafka's version (`Utils.murmur2`) starts from the seed
# `0x9747b28c` XOR the key's length, reads each 4-byte block **little-endian**, multiplies and shifts, folds in
# the last 1-3 bytes, and ends with a final mix. All arithmetic is on 32 bits. Here is every step for the key
# `customer-042`:

# %%
KEY = "customer-042"
steps = lab05.murmur2_steps(KEY.encode())
pd.DataFrame(steps).set_index("step")

# %%
h = steps[-1]["h (Java int)"]
print(f"murmur2({KEY!r})       = {h}   (kafkalab.clients.producer.murmur2 says {murmur2(KEY.encode())})")
print(f"toPositive(h)            = h & 0x7fffffff = {to_positive(h)}")
print(f"partition                = {to_positive(h)} % 6 = {to_positive(h) % 6}")
print(f"where the producer put it: partition {dict(placements)[KEY]}")

# %% [markdown]
# `toPositive` clears the sign bit; it is **not** `abs()`. For a negative hash the two differ, and a client
# that used `abs()` would disagree with Java for about half of all keys. Key `a` is the classic example:
# murmur2 gives -1563381124, `toPositive` 584102524, `abs` 1563381124.
#
# ### Same key, different client, different partition
#
# librdkafka (confluent-kafka, kcat, and the clients built on it) has its own default partitioner,
# `consistent_random`: `crc32(key) % partitions`, with a **random** partition for an empty or null key. Same
# key, another hash, another partition:

# %%
KEYS = ["customer-042", "customer-007", "user-42", "a", "key1", "hello world", "order-7", "sensor-3"]
table = pd.DataFrame(lab05.partition_table(KEYS, 6)).set_index("key")
table

# %% [markdown]
# Ask a real librdkafka producer. confluent-kafka's delivery reports say which partition each record went to,
# and kafkalab's producer with `"partitioner": "consistent_random"` (librdkafka's name for it) should agree:

# %%
reported = {}
rdk = LibrdkafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": lab05.CLIENT_ID,
                          "logger": lab05.quiet_logger()})
for key in KEYS:
    rdk.produce("orders", b"{}", key=key.encode(), timestamp=T0,
                on_delivery=lambda err, msg: reported.__setitem__(msg.key().decode(), msg.partition()))
rdk.flush(10)
del rdk
with Producer(lab05.config(cluster.bootstrap_servers, partitioner="consistent_random")) as crc_producer:
    ours = {key: crc_producer.send("orders", b"{}", key=key, timestamp=T0).result().partition for key in KEYS}
compare = table[["Java: % 6", "librdkafka: % 6"]].copy()
compare["confluent-kafka (default)"] = [reported[k] for k in KEYS]
compare["kafkalab, consistent_random"] = [ours[k] for k in KEYS]
compare["same partition in Java and librdkafka?"] = compare["Java: % 6"] == compare["librdkafka: % 6"]
compare

# %% tags=["figure:librdkafka_routing"]
lab05.routing_diagram([(key, reported[key]) for key in KEYS], LEADERS,
                      title="The same keys from confluent-kafka (librdkafka's default partitioner, consistent_random): "
                      "compare each key's partition with Java's column above")

# %% [markdown]
# confluent-kafka agrees with the `crc32` column, and with Java only where the two hashes happen to land on the
# same partition. A topic written by a Java service and by a Python service using confluent-kafka's defaults
# is therefore **not partitioned by key consistently**: one customer's orders end up in two partitions, and
# per-key order is gone. The fix is configuration: `partitioner=murmur2_random` in librdkafka is Java's rule.
#
# The partition count is part of the formula too. Add partitions to a topic and most keys move:

# %%
moves = pd.DataFrame({"6 partitions": [to_positive(murmur2(k.encode())) % 6 for k in KEYS],
                      "8 partitions": [to_positive(murmur2(k.encode())) % 8 for k in KEYS]}, index=KEYS)
moves["moved"] = moves["6 partitions"] != moves["8 partitions"]
print(f"{moves['moved'].sum()} of {len(KEYS)} keys change partition when orders grows from 6 to 8 partitions")
moves.T

# %% [markdown]
# Old records stay where they were written, new ones go to the new partition: for a while, a key's records are
# in two places. That is why keyed topics are created with enough partitions up front.
#
# ## 4 · Records without a key: sticky batches
#
# A record with no key can go anywhere. Sending each one to the next partition in turn (round-robin) spreads
# them evenly but makes one small batch per partition. Since Kafka 2.4 (KIP-480, refined in 3.3 by KIP-794) the
# Java producer is **sticky**: it sends keyless records to one partition until at least `batch.size` bytes have
# gone there *and* the batch it is filling is full, then picks a partition at random (the same one may come up
# again).
#
# The accumulator and the partitioner are plain objects that take times as arguments, so we can drive them by
# hand, without a network, with a seeded random generator (the real producer's is not seeded), in the order
# Java's `RecordAccumulator.append` does. 20 keyless clicks of about 55 bytes arrive within one linger,
# `batch.size` 600, six partitions:

# %%
ALL = list(range(6))


def accumulate(partitioner=None, n=20, batch_size=600):
    """n keyless clicks through an accumulator: sticky with ``partitioner``, round-robin without one."""
    acc = RecordAccumulator(batch_size=batch_size, linger_ms=0)
    for i in range(n):
        rec = SimpleRecord(None, json.dumps({"page": f"/item/{i * 37 % 500}", "ms": 40 + i % 9}).encode(), (), T0 + i)
        size = estimate_size(rec.key, rec.value, rec.headers)
        if partitioner is None:
            p = i % 6
        else:
            p = partitioner.partition("clicks", None, 6, ALL)               # the sticky partition
            if acc.all_batches_full(TopicPartition("clicks", p), size):     # its batch is full: a held-back switch
                p = partitioner.update_partition_info("clicks", p, 0, True, 6, ALL)
        batch, new_batch = acc.append(TopicPartition("clicks", p), rec, size, now_ms=0)
        if partitioner is not None:                                        # count the bytes; switch if due
            partitioner.update_partition_info("clicks", p, batch.size if new_batch else size,
                                              acc.all_batches_full(TopicPartition("clicks", p)), 6, ALL)
    return [{"partition": tp.partition, "batch": n, "records": b.record_count, "bytes (estimated)": b.size}
            for tp, dq in sorted(acc.batches.items()) for n, b in enumerate(dq)]


sticky_batches = accumulate(Partitioner("murmur2_random", batch_size=600, rng=random.Random(5)))
round_robin = accumulate()
print(f"sticky:      {len(sticky_batches)} batches, records per batch {[b['records'] for b in sticky_batches]}")
print(f"round robin: {len(round_robin)} batches, records per batch {[b['records'] for b in round_robin]}")
pd.DataFrame(sticky_batches).set_index(["partition", "batch"]).T

# %% [markdown]
# Round-robin: six batches, one in every partition, each less than half full, for 20 small records. Sticky: half
# as many batches, and the two in partition 2 are full (nine clicks each; a tenth would not fit in 600 bytes).
# Why two? The count of bytes sent to the partition includes each batch's 61-byte header: the first batch holds
# 552 bytes, short of 600, so the producer stays; the count passes 600 while the second batch is open, and the
# producer only switches away from a full batch. So it moves on when click 19 does not fit, and clicks 19 and 20
# open a batch on partition 4, where the next clicks would join them. No half-filled batch is left behind
# (unless the count reaches twice `batch.size` first: then the producer switches anyway). Over many batches every
# partition gets the same share; in the short run, keyless records of one moment cluster in one partition.
# kafkalab's partitioner follows Kafka 3.9's `BuiltInPartitioner` rule for rule.
#
# ## 5 · Compression
#
# A producer can compress each batch (`compression.type`: none, gzip, snappy, lz4, zstd). It compresses the
# records of the batch as one block; the 61-byte header stays readable, with the codec in its `attributes`.
# The broker stores the batch as it arrived (lab 06) and consumers decompress. Ratios depend entirely on the
# data, so here is something realistic: 200 JSON order events from a seeded generator (same bytes every run).

# %%
events = lab05.order_events(200)
print(f"one event: key {events[0][0]!r}, value {len(events[0][1])} bytes:\n{events[0][1].decode()}")
by_codec = lab05.compression_rows(events)
pd.DataFrame(by_codec).set_index("compression.type")

# %% [markdown]
# JSON repeats its field names in every record, and a batch puts 200 of them side by side, which is why
# compressing a whole batch works so much better than compressing each record alone: the last column sends the
# same 200 records as one-record batches, each compressed on its own, and gzip then saves about a fifth of the
# bytes instead of five sixths. gzip and zstd squeeze
# most; lz4 and snappy trade some ratio for speed (they are the cheap ones on the CPU). Bigger batches compress
# better: `linger.ms` and `batch.size` decide the ratio as much as the codec does.
#
# Those numbers came from building batches by hand. The producer does the same: send the 200 events with zstd
# and read the batch back from the trace.

# %%
zstd_producer = send_all(lab05.config(cluster.bootstrap_servers, linger_ms=60_000, batch_size=1_000_000,
                                      compression_type="zstd"), events, topic="orders")
zstd_rows = lab05.batch_rows(zstd_producer.trace)
[one_zstd_batch] = [r["batch bytes"] for r in by_codec if r["compression.type"] == "zstd"]
print(f"{len(zstd_rows)} zstd batches, {sum(r['batch bytes'] for r in zstd_rows)} bytes in all; "
      f"one zstd batch of all {len(events)} (the table above): {one_zstd_batch} bytes")
pd.DataFrame(zstd_rows).set_index("request")

# %% [markdown]
# The keys are customers, so the 200 events spread over the six partitions: six zstd batches, one request per
# broker. Smaller batches than the 200-record one above, so a lower ratio: compression and batching go together.
#
# ## 6 · `acks`: what the producer waits for
#
# `acks` travels in every Produce request and tells the leader when to answer:
#
# | `acks` | the leader answers | the producer learns |
# |---|---|---|
# | `0` | never: the request has no response at all | nothing, not even the offset (-1) or an error |
# | `1` | once the batch is in its own log | the offset, or the error |
# | `all` (`-1`) | once every in-sync replica has the batch (`min.insync.replicas` applies) | the offset, or the error |
#
# To see the difference, send a record the broker must **refuse**: the topic `small` allows batches of at most
# 200 bytes (`max.message.bytes`), our record is 500 bytes.

# %%
create_topic("small", {0: 1}, max_message_bytes=200)
outcomes = []
for acks in (0, 1, "all"):
    with Producer(lab05.config(cluster.bootstrap_servers, acks=acks, retries=0), trace=True) as p:
        try:
            result = f"offset {p.send('small', b'x' * 500, timestamp=T0).result().offset}"
        except Exception as e:
            result = f"{type(e).__name__}: {str(e).split(':')[0]}"
        p.flush()
        ev = lab05.produce_requests(p.trace)[-1]
    outcomes.append({"acks": acks, "Produce acks field": ev.request.body.acks, "request bytes": len(ev.request_frame),
                     "response": "none" if ev.response is None else
                     f"{len(ev.response_frame)} bytes, error_code {ev.response.body.responses[0].partition_responses[0].error_code}",
                     "the future says": result})
leo = cluster.call(lambda: cluster.broker(1).replica_manager.get_partition("small", 0).log.log_end_offset)
print(f"small-0 log end offset: {leo} (nothing was written)")
pd.DataFrame(outcomes).set_index("acks")

# %% [markdown]
# With `acks=0` the producer writes the request and considers the record sent: the future resolves with offset
# -1, and the broker's refusal (error 10, `MESSAGE_TOO_LARGE`) is never seen, because no response exists to carry
# it. (A Kafka broker goes one step further and closes the connection of an `acks=0` client whose write failed,
# so that it at least refreshes its metadata.) `acks=0` is the fastest setting and the one that silently loses
# data: use it only where losing some records is acceptable.
#
# `acks=1` and `acks=all` both report the error. On this topic they look the same because it has one replica:
# the leader *is* every in-sync replica. The difference, the leader holding the answer in *purgatory* until the
# followers have fetched the batch, and `min.insync.replicas`, needs replication: lab 08 shows it.
#
# ## 7 · Idempotence: a retried duplicate becomes a no-op
#
# Retries can create duplicates. The producer sends a batch, the leader writes it, the answer is lost (a
# timeout, a dropped connection); the producer cannot tell "not written" from "written, answer lost", so it sends
# the batch again. Without help, the broker writes it a second time.
#
# The **idempotent producer** (`enable.idempotence=true`, the default in Java since 3.0, and here) fixes this.
# It asks for an identity first (InitProducerId: a `producer_id` and an epoch) and numbers its records per
# partition (`base_sequence` in the batch header). The leader remembers the last five batches of each producer
# per partition; a batch it already has is answered with the **original** offset and not written again.

# %%
with Producer(lab05.config(cluster.bootstrap_servers, acks="all"), trace=True) as idem:
    for i in range(3):
        idem.send("payments", json.dumps({"payment": i, "eur": 10 + i}).encode(), key=f"pay-{i}",
                  timestamp=T0 + i).result()
print("requests:", [e.api_name for e in idem.trace if e.api_name in ("InitProducerId", "Produce")])
init = idem.trace.of("InitProducerId")[0].response.body
print(f"InitProducerId answer: producer_id={lab05.pid(init.producer_id)}, producer_epoch={init.producer_epoch}")
pd.DataFrame(lab05.batch_rows(idem.trace, sequences=True)).set_index("request")

# %% [markdown]
# Now play the lost answer ourselves. The trace kept the exact bytes of the last Produce request; send them
# again, unchanged, on a fresh connection to the leader: a retry the producer never made.

# %%
last = lab05.produce_requests(idem.trace)[-1]
original = last.response.body.responses[0].partition_responses[0]
replayed = lab05.resend(last).body.responses[0].partition_responses[0]
pd.DataFrame([{"answer": "original", "error_code": original.error_code, "base_offset": original.base_offset},
              {"answer": "replayed, same bytes", "error_code": replayed.error_code,
               "base_offset": replayed.base_offset}]).set_index("answer")

# %%
PAYMENTS = BASE / "broker-0" / "payments-0"
pd.DataFrame(lab05.log_rows(PAYMENTS)).set_index("offset")

# %% [markdown]
# The broker answered the replay with success and the offset the batch got the first time, and the log still
# holds each payment once. The retry was a no-op. Now the same with `enable.idempotence=false`
# (and `acks=1`): the batches carry no producer id (-1) and no sequence, so the broker cannot recognise a
# repeat.

# %%
with Producer(lab05.config(cluster.bootstrap_servers, acks=1, enable_idempotence=False), trace=True) as plain:
    plain.send("payments", b'{"payment": 3, "eur": 13}', key="pay-3", timestamp=T0 + 3).result()
first = lab05.produce_requests(plain.trace)[-1]
again = lab05.resend(first).body.responses[0].partition_responses[0]
print(f"first answer: base_offset {first.response.body.responses[0].partition_responses[0].base_offset}; "
      f"replayed: base_offset {again.base_offset}")
pd.DataFrame(lab05.log_rows(PAYMENTS)).set_index("offset")

# %% [markdown]
# `pay-3` is in the log twice. Idempotence is per producer id and partition, and only for the producer's
# lifetime: a restarted producer gets a new id, so it does not protect against an application that sends the
# same thing twice (that needs transactions or keys the consumer can deduplicate; lab 11). The leader's rule for
# each incoming batch, given the batches it remembers:

# %%
stored = [(0, 1), (1, 1), (2, 1)]      # payments 0, 1, 2: (base_sequence, record count)
cases = {"replay of payment 2": (2, 1), "next batch": (3, 2), "a batch after a lost one": (5, 1),
         "replay of payment 0": (0, 1)}
pd.DataFrame([{"incoming batch": name, "base_sequence": s, "records": n,
               "leader's decision": lab05.sequence_outcome(stored, s, n)} for name, (s, n) in cases.items()]
             ).set_index("incoming batch")

# %% [markdown]
# A gap means a batch went missing: `OUT_OF_ORDER_SEQUENCE_NUMBER`. The producer sends retries in sequence
# order (so with up to five requests in flight the order of records survives retries) and, if a batch fails for
# good, starts a new epoch so that its sequences can start over at 0.

# %% [markdown]
# ## 8 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Java's partition
#
# A Java producer sends a record with key `EX_KEY` to a topic with `EX_PARTITIONS` partitions. Which partition?
# Use `murmur2` and `to_positive` (imported above), or do the steps yourself.

# %%
EX_KEY = "invoice-2024-0117"
EX_PARTITIONS = 12

# %% tags=["solution"]
java_partition = to_positive(murmur2(EX_KEY.encode())) % EX_PARTITIONS

# %%
lab05.check_java_partition(java_partition, EX_KEY, EX_PARTITIONS)

# %% [markdown]
# ### Exercise 2 · librdkafka's partition
#
# A confluent-kafka producer with default settings sends the same record. Which partition? (librdkafka's CRC-32
# is the one `zlib.crc32` computes; `zlib` is imported at the top.)

# %% tags=["solution"]
librdkafka_partition = zlib.crc32(EX_KEY.encode()) % EX_PARTITIONS

# %%
lab05.check_librdkafka_partition(librdkafka_partition, EX_KEY, EX_PARTITIONS)

# %% [markdown]
# ### Exercise 3 · Cutting records into batches
#
# Records of the sizes below (bytes, as the accumulator estimates them) go to one partition, with
# `batch.size = EX_BATCH_SIZE` and a long `linger.ms`. How many records does each batch get? Answer with a list,
# e.g. `[4, 1, 5]`. Remember the batch header.

# %%
EX_SIZES = [100, 150, 200, 90, 120, 130, 180, 70, 60, 110]
EX_BATCH_SIZE = 500

# %% tags=["solution"]
batches, used = [], 0
for s in EX_SIZES:
    if batches and used + s <= EX_BATCH_SIZE:
        batches[-1] += 1
        used += s
    else:
        batches.append(1)
        used = 61 + s
records_per_batch = batches

# %%
lab05.check_batches(records_per_batch, EX_SIZES, EX_BATCH_SIZE)

# %% [markdown]
# ### Exercise 4 · Duplicate, next, or out of order?
#
# An idempotent producer has written the batches `EX_STORED` to a partition, `(base_sequence, record count)`
# each, oldest first. For each incoming batch, what does the leader do? Answer `"append"`, `"duplicate"` or
# `"OUT_OF_ORDER_SEQUENCE_NUMBER"` for each name.

# %%
EX_STORED = [(0, 5), (5, 3), (8, 4)]
EX_INCOMING = {"A": (12, 2), "B": (5, 3), "C": (14, 1), "D": (8, 4)}

# %% tags=["solution"]
decisions = {"A": "append", "B": "duplicate", "C": "OUT_OF_ORDER_SEQUENCE_NUMBER", "D": "duplicate"}

# %%
lab05.check_sequences(decisions, EX_STORED, EX_INCOMING)

# %% [markdown]
# ## 9 · Recap
#
# * **A record (C25, C26)** is key, value, headers and a timestamp; key and value are bytes, made by the
#   client's serializers. The broker never interprets them.
# * **Batching (C28, C9).** `send()` appends to a per-partition batch; the sender ships a batch when it is full
#   (`batch.size`), has waited `linger.ms`, or on `flush()`. One Produce request goes to one broker and carries a
#   batch for each partition it leads, of any number of topics (C39). Fewer, fuller requests; a little latency.
# * **Partition by key (C28):** Java: `toPositive(murmur2(key)) % partitions` (not `abs`); librdkafka's default
#   `consistent_random`: `crc32(key) % partitions`. Mixed clients split a key over two partitions; so does
#   adding partitions.
# * **No key:** sticky partitioning: one partition until `batch.size` bytes went there and its batch is full, then
#   a random one (possibly the same).
# * **Compression** works per batch; batching decides the ratio as much as the codec.
# * **acks:** `0` no response at all (no offset, no error), `1` the leader's log, `all` every in-sync replica
#   (lab 08).
# * **Idempotence (C30):** producer id + epoch + per-partition sequences; the leader answers a repeated batch
#   with its original offset and writes nothing. Without it, a retry can write twice.
#
# **Next:** lab 06, *The log on disk*: what happens to these batches once the leader has them.

# %%
cluster.stop()
workdir.cleanup()
print("cluster stopped, lab files removed")
