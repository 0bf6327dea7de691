# Source of labs/07_fetching_and_purgatory.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 07
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 07 · Fetching, the high watermark and the purgatory
#
# Two of the most common requests cannot always be answered at once. A Produce with `acks=all` must wait until
# the followers have copied its records; a consumer's Fetch on a quiet partition has nothing to return yet. A
# broker does not block a thread for either: it parks the request in a **purgatory** — a waiting room watched
# per partition — and sets a timeout on a **timing wheel**. When a follower's fetch moves the high watermark, or
# a producer appends, the broker looks at the requests watching that partition and answers the ones that can
# now complete. This lab watches both purgatories on a running cluster, ticks a timing wheel by hand, and
# shows what happens to an idle consumer when there is no waiting room. Then three things every Fetch and
# Produce meets: the byte caps of a Fetch over many partitions, a high watermark held back by a lagging
# follower, and the checks a Produce passes before its records are read.
#
# **By the end of this lab you can**
#
# 1. follow an `acks=all` Produce into the produce purgatory and out of it (metrics, the completion case);
# 2. explain `fetch.min.bytes` and `fetch.max.wait.ms`, and watch a Fetch wait and then complete on new data;
# 3. read a hierarchical timing wheel: levels, buckets, and how timeouts cascade down as the clock moves;
# 4. estimate the Fetch rate of an idle consumer with and without a wait, and say why Kafka parks fetches;
# 5. read one Fetch over several partitions, and predict what its two byte caps cut (and what they cannot);
# 6. show a leader's high watermark held back by a lagging in-sync follower, and what consumers read meanwhile;
# 7. name the checks a Produce meets before its records are looked at: authorization, then `acks`.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C9** one Fetch reads many partitions | a Fetch naming three partitions, and its answer partition by partition | 5 |
# | **C39** Produce and Fetch, from producers, consumers and followers | both requests parked; a consumer Fetch by hand | 1, 2 |
# | **C42** acks=all waits in purgatory until the in-sync replicas have the records; a Produce is checked first | a DelayedProduce: metrics before, during and after, `completed_by`, a timeout; TOPIC_AUTHORIZATION_FAILED, INVALID_REQUIRED_ACKS | 1, 7 |
# | **C43** Fetch names partitions and offsets, caps bytes, waits for `min_bytes` up to a maximum | a Fetch parked until a record arrives; one that expires; `max_bytes` and `partition_max_bytes` cutting an answer, the oversized first batch (KIP-74) | 2, 4, 5 |
# | **C44** consumers read below the high watermark | a parked consumer Fetch wakes when the HW moves; a lagging follower holds the HW below the leader's LEO | 2, 6 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | the purgatory | `kafkalab/purgatory/purgatory.py`, `delayed_operation.py` | `core/src/main/scala/kafka/server/DelayedOperation.scala` |
# | the waiting Produce and Fetch | `kafkalab/purgatory/delayed_produce.py`, `delayed_fetch.py` | `DelayedProduce.scala`, `DelayedFetch.scala` |
# | the timing wheel | `kafkalab/purgatory/timing_wheel.py`, `timer.py` | `server-common/.../util/timer/TimingWheel.java`, `SystemTimer.java` |
# | where the broker uses them | `kafkalab/server/replica_manager.py` | `core/src/main/scala/kafka/server/ReplicaManager.scala` |
# | the byte caps of a Fetch (KIP-74) | `kafkalab/server/replica_manager.py`, `kafkalab/storage/segment.py` | `ReplicaManager.readFromLog`, `storage/.../log/LogSegment.java` |
# | a Produce's first checks | `kafkalab/server/apis/produce.py` | `KafkaApis.handleProduceRequest`, `ReplicaManager.appendRecords` |
# | a follower cut off from its leader | `kafkalab/cluster/faults.py` | — (Jepsen's nemeses) |
# | raw fetches, the wheel grid, checks | `kafkalab/labs/lab07.py` | — |

# %%
import threading
import time

import pandas as pd
from IPython.display import HTML

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Producer
from kafkalab.common.time import MockTime
from kafkalab.labs import evidence, lab07
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory import FunctionTask, SystemTimer, TopicPartitionOperationKey
from kafkalab.viz import LiveRequestLog, SequenceDiagram

broker_log = BrokerLog().install()          # the brokers' warnings: kept in a list, not on stderr
loop_log = BrokerLog("asyncio").install()  # ... and those of the cluster's event loop (tasks of killed brokers)
LAG_MS = 1500                               # replica.lag.time.max.ms, short so that the lab is quick
cluster = Cluster(brokers=3, overrides={"replica.lag.time.max.ms": LAG_MS, "replica.fetch.wait.max.ms": 200,
                                        "replica.fetch.backoff.ms": 100, "auto.create.topics.enable": False}).start()
admin = cluster.broker(cluster.controller_id).admin
cluster.call(admin.create_topic, "orders", -1, -1, {0: [0, 1, 2]}, {"min.insync.replicas": "2"})
cluster.call(admin.create_topic, "quiet", -1, -1, {0: [0]}, {})
cluster.wait_until(lambda: all(b.metadata_cache.partition_count(t) == 1 for b in cluster.brokers.values()
                               for t in ("orders", "quiet")))
leader = cluster.broker(0)
print("orders-0: replicas [0, 1, 2], leader 0, min.insync.replicas=2 | quiet-0: one replica, on broker 0")


def produce(topic, values, acks="all", **extra):
    out = []
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab07", "acks": acks,
                   "retries": 0, "linger.ms": 0, **extra}) as p:
        futures = [p.send(topic, v, partition=0) for v in values]
        p.flush()
        for f in futures:
            try:
                out.append(f.result().offset)
            except ApiException as e:  # the broker's error code (a KafkaProtocolError)
                out.append(f"{e.error_code.name} ({e.error_code})")
            except Exception as e:
                out.append(type(e).__name__)
    return out


def purgatory_metrics(name):
    m = leader.metrics()
    return {k.split(",")[0]: v for k, v in m.items() if k in (f"PurgatorySize,delayedOperation={name}",
                                                              f"NumDelayedOperations,delayedOperation={name}",
                                                              f"ExpiresPerSec,delayedOperation={name}")}


# %% [markdown]
# ## 1 · An acks=all Produce waits
#
# With `acks=all` the leader appends the batch and then must hold the answer until the **high watermark** has
# passed the batch's last offset: until every in-sync replica has fetched it. The broker wraps the request in a
# `DelayedProduce` and hands it to the *produce purgatory* with one **watch key** per partition. Each follower
# fetch that moves a partition's HW asks the purgatory to re-check the operations watching that key.
#
# Normally that takes one follower round trip. To see the wait, we stop broker 2 silently (its process is
# gone; it stays in the ISR until the leader notices after `replica.lag.time.max.ms`) and write one record
# with `acks=1` so that it falls behind. Then an `acks=all` produce, from a thread, while we look at the
# leader's produce purgatory.
#
# First a **live request log** of this lab's Produce requests: each row appears as a broker finishes a request,
# with Kafka's four request times (queue, local, remote, send). *Remote* time is time spent in a purgatory;
# rows that waited there are highlighted. Keep it in view while the next cell runs (in JupyterLab: right-click
# the output, "Create New View for Cell Output").

# %%
request_log = LiveRequestLog(cluster, client="lab07", api="Produce")
request_log

# %%
print("4 records, acks=all:", produce("orders", [b"o-%d" % i for i in range(4)]))
before = purgatory_metrics("Produce")
cluster.kill(2, expire_session=False)
print("1 record, acks=1:", produce("orders", [b"o-4"], acks=1))

result = {}
worker = threading.Thread(target=lambda: result.update(offsets=produce("orders", [b"o-5"])))
worker.start()
purgatory = leader.replica_manager.delayed_produce_purgatory
cluster.wait_until(lambda: purgatory.num_delayed == 1, 5)
during = purgatory_metrics("Produce")
waiting = purgatory.watched_operations(TopicPartitionOperationKey("orders", 0))
op = next(o for o in waiting if not o.is_completed)
print("watch keys:", {k.key_label if hasattr(k, "key_label") else str(k): n for k, n in purgatory.watch_keys().items()})
worker.join()
after = purgatory_metrics("Produce")
status = op.produce_status[("orders", 0)]
print("acks=all answer:", result["offsets"], "| completed_by:", status.completed_by,
      "| error:", ErrorCode(status.error_code).name)
pd.DataFrame({"before": before, "while waiting": during, "after": after})

# %% [markdown]
# The request log saw the same three Produce requests. Their exact times vary from run to run, so here is what
# does not: which broker answered, with which `acks`, and whether the request spent more than a second in the
# purgatory (its *remote* time).

# %%
cluster.wait_until(lambda: len(request_log.rows()) >= 3, 5)
pd.DataFrame([{"broker": broker_id, "api": f"{r.api_name} v{r.api_version}", "client id": r.client_id,
               "acks": acks, "remote time over 1 s (parked)": r.remote_time_ms > 1000}
              for (broker_id, r), acks in zip(reversed(request_log.rows()[:3]), ("all", "1", "all"))])

# %% [markdown]
# * While it waited, the operation was in the timer (**NumDelayedOperations** 1) and in the watch list of
#   `orders-0` (**PurgatorySize** counts watch-list entries: one per key per operation, and completed ones
#   until the list is purged).
# * It left through case **C.2** of Kafka's `DelayedProduce`: this broker is the leader, and enough replicas
#   reached the offset. That happened when the leader dropped broker 2 from the ISR: the HW became the LEO of
#   brokers 0 and 1, both past our record. (The other cases: **A** the partition is not on this broker any
#   more, **B** this broker is no longer the leader, **C.1** an error such as NOT_ENOUGH_REPLICAS_AFTER_APPEND.)
#
# If neither happens within the request's `timeout_ms` (the producer's `request.timeout.ms`), the timer
# expires the operation: the partition keeps the answer it was given when it was parked, REQUEST_TIMED_OUT (7),
# and **ExpiresPerSec** counts one. Stop broker 1 too: it stays in the ISR for up to `replica.lag.time.max.ms`
# but will never fetch the next record, so the HW cannot pass it. Send one with a 300 ms timeout:

# %%
cluster.kill(1, expire_session=False)
print("1 record, acks=1:", produce("orders", [b"o-6"], acks=1))
expires_before = purgatory_metrics("Produce")["ExpiresPerSec"]
print("acks=all, request.timeout.ms=300:", produce("orders", [b"o-7"], **{"request.timeout.ms": 300}))
# the client gives up after 300 ms and the broker's timer fires after 300 ms: wait until the broker has counted it
cluster.wait_until(lambda: purgatory_metrics("Produce")["ExpiresPerSec"] > expires_before, 5,
                   "the parked Produce did not expire")
evidence("The parked acks=all Produce expired", {
    "the produce purgatory's ExpiresPerSec went up by one":
        purgatory_metrics("Produce")["ExpiresPerSec"] == expires_before + 1})

# %% [markdown]
# The record was appended all the same: a timeout is an *indeterminate* outcome, not a failure — the record may
# still become committed later. A producer that retries it may write it twice, unless it is idempotent (lab 05;
# lab 11 shows where idempotence stops).
#
# ## 2 · A Fetch waits for data
#
# A consumer's Fetch names partitions and offsets, caps the bytes (`max_bytes`, per partition
# `partition_max_bytes`) and says how long it may wait: the broker answers as soon as it has **`min_bytes`**
# (consumer config `fetch.min.bytes`, default 1) or when **`max_wait_ms`** (`fetch.max.wait.ms`, default 500)
# has passed, whichever comes first. Until then the Fetch is a `DelayedFetch` in the *fetch purgatory*.
#
# On `quiet-0` (one replica, no followers to fetch it), send a consumer Fetch at the end of the log, wait 10 s at
# most, and produce a record 0.3 s later:

# %%
fetch_purgatory = leader.replica_manager.delayed_fetch_purgatory
key = TopicPartitionOperationKey("quiet", 0)
box = {}
fetcher = threading.Thread(target=lambda: box.update(
    answer=cluster.run(lab07.raw_fetch(leader, "quiet", 0, max_wait_ms=10_000))))
fetcher.start()
cluster.wait_until(lambda: len(fetch_purgatory.watched_operations(key)) == 1, 5)
parked = fetch_purgatory.watched_operations(key)[0]
print("parked:", parked)
time.sleep(0.3)
woke_it = produce("quiet", [b"wake up"], acks=1)
print("produce:", woke_it)
fetcher.join()
answer = box["answer"]
print(f"answered with {answer['records']} record(s), high_watermark {answer['high_watermark']}, "
      f"completed_by {parked.completed_by!r}")
evidence("The Fetch waited for data, not for its timeout", {
    "it waited at least 0.3 s (until the record came)": answer["took_s"] >= 0.3,
    "far less than max_wait_ms (under 5 s of the 10)": answer["took_s"] < 5})

# %% [markdown]
# The same, drawn: the Fetch waits in the purgatory until the Produce's append gives it `min_bytes`.

# %% tags=["figure:parked_fetch"]
fetch_story = SequenceDiagram([("consumer", "consumer", "replica_id -1, min_bytes 1"),
                               ("broker", "broker 0", "leader of quiet-0"),
                               ("producer", "producer", "acks=1")],
                              title="A Fetch parked in the purgatory, woken by a Produce")
asked = fetch_story.message("consumer", "broker", "Fetch quiet-0 @0 · max_wait_ms 10000", colour="#1c7ed6")
fetch_story.note("parked: a DelayedFetch watching quiet-0")
fetch_story.message("producer", "broker", "Produce quiet-0 · 1 record", colour="#2f9e44")
fetch_story.message("broker", "producer", f"offset {woke_it[0]}", colour="#2f9e44", dashed=True)
answered = fetch_story.message("broker", "consumer", f"{answer['records']} record, HW {answer['high_watermark']} "
                               f"· case {parked.completed_by}", colour="#1c7ed6", dashed=True)
fetch_story.span("broker", asked, answered, colour="#fff3bf")
fetch_story

# %% [markdown]
# Case **G** of Kafka's `DelayedFetch`: the bytes available between the fetch offset and the end the consumer
# may read reached `min_bytes`. For a consumer that end is the **high watermark**, not the LEO: on a replicated
# partition a consumer's Fetch wakes when the followers' fetches move the HW, not at the leader's append. (A
# follower's Fetch reads to the LEO, so it wakes at the append.) The other ways out: the broker stopped leading
# (A), lost the replica (B), does not know the partition (C), its log dir failed (D), the leader epoch is fenced
# (E), the fetch offset and that end are not on the same segment (F: the fetch offset is past the end — a
# truncated leader — or on an older segment than the end — the reader fell behind, or the log just rolled), the
# follower's log diverged (H) — or the timeout.
# With no producer, the same Fetch with `max_wait_ms=400` expires:

# %%
expired_before = leader.metrics().get("ExpiresPerSec,delayedOperation=Fetch,fetcherType=consumer", 0)
idle = cluster.run(lab07.raw_fetch(leader, "quiet", 1, max_wait_ms=400))
print(f"records: {idle['records']}, error: {ErrorCode(idle['error_code']).name}")
evidence("The idle Fetch expired after max_wait_ms", {
    "it took at least 0.4 s": idle["took_s"] >= 0.38,
    "... and less than 2 s": idle["took_s"] < 2,
    "ExpiresPerSec,fetcherType=consumer went up by one":
        leader.metrics()["ExpiresPerSec,delayedOperation=Fetch,fetcherType=consumer"] == expired_before + 1})

# %% [markdown]
# ## 3 · The timing wheel
#
# A busy broker holds thousands of parked requests, each with its own timeout, and completes most of them long
# before they expire. A sorted queue would cost O(log n) per insert and per cancel; Kafka uses a
# **hierarchical timing wheel** (Varghese and Lauck), where both are O(1).
#
# One wheel is a ring of `wheel_size` buckets, each covering `tick_ms`; together they cover `tick_ms ×
# wheel_size` ahead of the wheel's current time. A timeout further away goes to an **overflow wheel** whose tick
# is the whole interval of the wheel below, and so on up. Only buckets — not tasks — are put in a delay queue,
# so the clock thread wakes once per non-empty bucket. When a coarse bucket comes due, its tasks are simply
# **re-added**: they drop into a finer wheel, until the finest bucket runs them.
#
# Kafka uses `tick_ms=1`, `wheel_size=20`. To see the levels, we take Kafka's own small example (`TimingWheel.java`,
# u = 1 ms, n = 3) on a `MockTime`: the clock only moves when we say so. Four timeouts, due in 1, 2, 4 and 10 ms:

# %%
clock = MockTime()
timer = SystemTimer("lab07", time=clock, tick_ms=1, wheel_size=3)
base = timer.now_ms()
fired = []
for d in (1, 2, 4, 10):
    timer.add(FunctionTask(d, lambda d=d: fired.append((f"due+{d}", timer.now_ms() - base)), f"due+{d}"))
print(timer.describe(relative_to=base))
HTML(lab07.wheel_html(timer, base, title="t = 0 ms (blue border: each wheel's current slot)"))

# %% [markdown]
# Level 1 holds the timeouts of the next 2 ms, one per 1 ms bucket; level 2 (tick 3 ms) the one due at 4 ms,
# in bucket [3, 5]; level 3 (tick 9 ms) the one due at 10 ms, in [9, 17]. Now move the clock one millisecond at a
# time and poll the timer, as the broker's reaper does, drawing the wheels after each step:

# %%
frames = []
for step in range(1, 11):
    clock.advance(1)
    timer.poll()
    ran = [name for name, at in fired if at == step]
    frames.append(lab07.wheel_html(timer, base, title=f"t = {step} ms" + (f" — ran {', '.join(ran)}" if ran else "")))
HTML("".join(frames[i] for i in (2, 3, 8, 9)))

# %%
pd.DataFrame(fired, columns=["task", "ran at (ms)"]).set_index("task")

# %% [markdown]
# * At t = 3 the level-2 bucket [3, 5] came due: its task (due at 4) was re-added and fell into level 1.
# * At t = 9 the level-3 bucket [9, 17] came due: its task (due at 10) moved down to a finer wheel, and ran at
#   10.
# * Every task ran exactly at its due time — on a coarse wheel it is only *parked*, never late by a bucket.
#
# In the broker the same happens in real time: the reaper waits for the next bucket (at most 200 ms) and a
# parked Fetch with `max_wait_ms=500` sits on a level-3 bucket of 400 ms until it cascades down. Most operations never
# get there: when a Produce or Fetch completes, it is cancelled — unlinked from its bucket in O(1).
#
# ## 4 · The fetch storm
#
# Why park fetches at all? Because a consumer fetches in a loop: as soon as one answer is in, the next Fetch
# leaves. If the broker answers an idle partition immediately, the loop spins: every round trip is a request.
# Count the Fetch requests that one idle consumer loop sends in one second, once with `max_wait_ms=0` (answer at
# once) and once with the default 500:

# %%
async def fetch_loop(max_wait_ms, seconds, client_id):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await lab07.raw_fetch(leader, "quiet", 1, max_wait_ms=max_wait_ms, client_id=client_id)


counts = {}
for wait in (0, 500):
    client = f"idle-consumer-wait-{wait}"
    cluster.run(fetch_loop(wait, 1.0, client))
    counts[wait] = sum(1 for r in leader.channel.request_log.records if r.client_id == client and r.api_name == "Fetch")
evidence("An idle consumer loop for one second", {
    "fetch.max.wait.ms=500: 2 or 3 Fetch requests": counts[500] in (2, 3),
    "fetch.max.wait.ms=0: at least 20 times as many": counts[0] >= 20 * counts[500]})

# %% [markdown]
# (Our loop opens a new connection per request, which is slow; a real client keeps one connection, so the
# storm is worse: with a sub-millisecond round trip, one kept connection carries thousands of empty Fetches a
# second — Exercise 2 counts them.) With the wait, the rate of an idle consumer
# is about `1000 / (fetch.max.wait.ms + round trip)` per second per partition leader it fetches from: the
# purgatory turns a busy loop into a long poll. Followers do the same with `replica.fetch.wait.max.ms`.
#
# ## 5 · One Fetch, many partitions
#
# The rest of the lab runs on a fresh cluster of three brokers (the first one has two dead brokers). Two of
# its settings matter later: `replica.lag.time.max.ms` is 30 s, so a follower that stops fetching stays in the
# ISR for the whole of section 6; and the ACL authorizer is on, with `allow.everyone.if.no.acl.found=true`, so
# that only a resource with an ACL is restricted (section 7). On broker 0, a topic `wide` with three
# partitions: partitions 0 and 2 get three batches of two small records, partition 1 three batches of two
# 3,000-byte records.

# %%
cluster.stop()
lagging = Cluster(brokers=3, overrides={
    "replica.lag.time.max.ms": 30_000, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
    "auto.create.topics.enable": False, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": True}).start()
admin = lagging.broker(lagging.controller_id).admin
lagging.call(admin.create_topic, "wide", -1, -1, {0: [0], 1: [0], 2: [0]}, {})
lagging.call(admin.create_topic, "slow", -1, -1, {0: [0, 1, 2]}, {})
lagging.call(admin.create_topic, "secret", -1, -1, {0: [0]}, {})
lagging.wait_until(lambda: all(b.metadata_cache.partition_count(t) >= 1 for b in lagging.brokers.values()
                               for t in ("wide", "slow", "secret")))
b0 = lagging.broker(0)
for p in (0, 1, 2):
    for _ in range(3):
        lagging.run(lab07.raw_produce(b0, "wide", p, [b"x" * (3000 if p == 1 else 100)] * 2, acks=1))


def fetch_wide(order, max_bytes, partition_max_bytes):
    return pd.DataFrame(lagging.run(lab07.fetch_partitions(b0, "wide", {p: 0 for p in order}, max_bytes=max_bytes,
                                                           partition_max_bytes=partition_max_bytes))
                        ).set_index("partition")


# %% [markdown]
# A consumer sends **one** Fetch to each broker that leads some of its partitions, naming every such partition
# with its own fetch offset. The request carries two byte caps: **`max_bytes`** for the whole answer (consumer
# config `fetch.max.bytes`, default 52,428,800) and, per partition, **`partition_max_bytes`**
# (`max.partition.fetch.bytes`, default 1,048,576). With both large, the answer holds every partition's
# batches, each partition with its own high watermark and error code. First the request's caps and
# partitions, where they sit in its frame:

# %%
lab07.fetch_request_fields("wide", {0: 0, 1: 0, 2: 0}, max_bytes=52_428_800, partition_max_bytes=1_048_576)

# %%
full = fetch_wide((0, 1, 2), 52_428_800, 1_048_576)
full

# %% [markdown]
# Now cap each partition at 600 bytes. Partitions 0 and 2 get two of their three batches (each about 280
# bytes); partition 1 gets **nothing**: its first batch (about 6 KB) does not fit, and it is not the first
# partition that returned data:

# %%
per_partition = fetch_wide((0, 1, 2), 52_428_800, 600)
per_partition

# %% [markdown]
# And cap the whole answer at 600 bytes, with partition 1 named first. Since Fetch v3 (KIP-74) neither cap is
# absolute: the **first batch of the first partition that has data** comes back whole even when it is larger
# than both caps — otherwise one big batch would block the consumer for ever. The budget then is spent, and the
# partitions after it get nothing this time (the consumer asks for them again in its next Fetch):

# %%
kip74 = fetch_wide((1, 0, 2), 600, 600)
kip74

# %%
evidence("One Fetch, three partitions, two byte caps", {
    "uncapped: every partition answered with all its batches": list(full["batches"]) == [3, 3, 3],
    "partition_max_bytes=600: partitions 0 and 2 got 2 batches each, partition 1 none":
        list(per_partition["batches"]) == [2, 0, 2],
    "max_bytes=600, partition 1 first: its 6 KB batch came back whole, larger than the cap":
        kip74.loc[1, "batches"] == 1 and kip74.loc[1, "bytes"] > 600,
    "... and the partitions after it got nothing": list(kip74.loc[[0, 2], "bytes"]) == [0, 0]})

# %% [markdown]
# The `bytes` column is the size of each partition's `records` field. kafkalab's broker stops at the last whole
# batch that fits; Kafka's slices the segment file at the byte limit, so its answer may end in a *partial*
# batch, which the consumer drops and fetches again next time. Either way a consumer sees whole batches only.
#
# ## 6 · A lagging follower holds the high watermark back
#
# Section 2 read `quiet-0`, a partition with one replica: there the high watermark moves with every append,
# HW = LEO. On a replicated partition the leader may only move the HW to the **smallest LEO of the in-sync
# replicas**. `slow-0` has replicas 0 (leader), 1 and 2. Write two records with `acks=all`, then cut the link
# between broker 0 and broker 2 (the cluster's fault tools: broker 2's fetches no longer arrive) and write three
# more with `acks=1`:

# %%
def log_ends():
    state = lagging.partition_state("slow", 0)
    return pd.DataFrame([{"broker": b, "role": "leader" if b == state["leader"] else "follower",
                          "in ISR": b in state["isr"], "log end offset": log["log_end_offset"],
                          "high watermark": log["high_watermark"] if b == state["leader"] else "-"}
                         for b, log in sorted(state["logs"].items())]
                        ).set_index("broker")


def consumer_read():
    return lagging.run(lab07.raw_fetch(b0, "slow", 0, max_wait_ms=0))["records"]


lagging.wait_until(lambda: len(lagging.partition_state("slow", 0)["isr"]) == 3, 10)
print("acks=all:", lagging.run(lab07.raw_produce(b0, "slow", 0, [b"s-0", b"s-1"], acks=-1)))
lagging.partition(0, 2)
print("acks=1:", lagging.run(lab07.raw_produce(b0, "slow", 0, [b"s-2", b"s-3", b"s-4"], acks=1)))
lagging.wait_until(lambda: lagging.partition_state("slow", 0)["logs"][1]["log_end_offset"] == 5, 10)
cut = log_ends()
read_while_cut = consumer_read()
cut

# %% [markdown]
# (Only the leader's HW counts; a follower learns it from the leader's fetch answers, one fetch late.)
# The leader and broker 1 have all five records; broker 2 has two and is still in the ISR (it has 30 s before
# the leader gives up on it). So the HW stays at 2, and a consumer reading `slow-0` from offset 0 gets **2**
# records, not 5. Heal the link: broker 2 fetches, catches up, and the HW jumps to the LEO:

# %%
lagging.heal()
lagging.wait_until(lambda: lagging.partition_state("slow", 0)["logs"][0]["high_watermark"] == 5, 10)
healed = log_ends()
read_after_heal = consumer_read()
healed

# %% tags=["figure:lagging_follower"]
HTML(lab07.log_ends_svg([("link 0–2 cut, then 3 records with acks=1", cut.to_dict("index")),
                         ("link healed: broker 2 fetched and caught up", healed.to_dict("index"))],
                        title="slow-0: the high watermark waits for the lagging in-sync follower"))

# %%
evidence("The high watermark waited for the lagging in-sync follower", {
    "link cut: leader LEO 5, HW 2 (broker 2, in the ISR, has 2)":
        (cut.loc[0, "log end offset"], cut.loc[0, "high watermark"], cut.loc[2, "log end offset"],
         bool(cut.loc[2, "in ISR"])) == (5, 2, 2, True),
    "a consumer then read 2 records from offset 0": read_while_cut == 2,
    "healed: HW = LEO = 5, and the consumer reads all 5":
        (healed.loc[0, "high watermark"], healed.loc[0, "log end offset"], read_after_heal) == (5, 5, 5)})

# %% [markdown]
# Had broker 2 stayed away for `replica.lag.time.max.ms`, the leader would have dropped it from the ISR and the
# HW would have moved without it — section 1's case C.2. Two fine points of Kafka's
# `Partition.maybeIncrementLeaderHW`: a replica outside the ISR holds the HW back only while it has caught up
# recently and is about to rejoin; and the HW does not move at all while the ISR is smaller than
# `min.insync.replicas`.
#
# ## 7 · What a Produce is checked for before its records
#
# Section 1's Produce waited for replicas; some never get that far. For each topic the broker first asks the
# authorizer whether the principal may **WRITE** to it (Kafka's `KafkaApis.handleProduceRequest`: otherwise
# TOPIC_AUTHORIZATION_FAILED, 29); only then does `ReplicaManager.appendRecords` check `acks`: 0, 1 or -1 (all),
# anything else is INVALID_REQUIRED_ACKS (21) for every partition. A real producer never sends `acks=2` —
# kafkalab's, like Java's, refuses it in its configuration:

# %%
try:
    Producer({"bootstrap.servers": lagging.bootstrap_servers, "acks": 2})
except Exception as e:
    print(type(e).__name__ + ":", e)

# %% [markdown]
# So we send Produce requests by hand, to `secret-0`: first with no ACL on the topic (the authorizer allows
# everyone), then after a DENY WRITE for `User:ANONYMOUS` — the principal of every client on a `PLAINTEXT`
# listener (lab 12):

# %%
from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclOperation, AclPermissionType,  # noqa: E402
                                   ResourcePattern, ResourceType)

checks = {"no ACL, acks=1": lagging.run(lab07.raw_produce(b0, "secret", 0, [b"s"], acks=1)),
          "no ACL, acks=2": lagging.run(lab07.raw_produce(b0, "secret", 0, [b"s"], acks=2))}
lagging.call(b0.authorizer.create_acls, [AclBinding(ResourcePattern(ResourceType.TOPIC, "secret"), AccessControlEntry(
    "User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.DENY))])
checks.update({"DENY WRITE, acks=1": lagging.run(lab07.raw_produce(b0, "secret", 0, [b"s"], acks=1)),
               "DENY WRITE, acks=2": lagging.run(lab07.raw_produce(b0, "secret", 0, [b"s"], acks=2))})
evidence("A Produce is authorized first, then its acks are checked", {
    "no ACL: acks=1 appended, acks=2 refused with INVALID_REQUIRED_ACKS":
        (checks["no ACL, acks=1"], checks["no ACL, acks=2"]) == ("NONE", "INVALID_REQUIRED_ACKS"),
    "DENY WRITE: TOPIC_AUTHORIZATION_FAILED, whatever the acks":
        checks["DENY WRITE, acks=1"] == checks["DENY WRITE, acks=2"] == "TOPIC_AUTHORIZATION_FAILED"})
pd.Series(checks, name="error code")

# %%
lagging.stop()

# %% [markdown]
# ## 8 · Exercises
#
# Each exercise has a task, an answer cell and a check cell: replace the `...`, run, then run the check.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Where does each timeout go?
#
# A timer with `tick_ms = TICK` and `wheel_size = SIZE`, its current time 0 (a multiple of every tick). For each
# task, give `(level, start of its slot)` with level 1 the finest, or `None` if it runs at once: a dict
# `where = {task name: (level, slot start) or None}`, one entry per task of `DELAYS`.

# %%
TICK, SIZE = 1, 20
DELAYS = {"fetch": 500, "heartbeat": 7, "produce": 30_000, "now": 0}

# %% tags=["solution"]
where = {}
for name, d in DELAYS.items():
    tick, level = TICK, 1
    if d < TICK:
        where[name] = None
        continue
    while d >= tick * SIZE:
        tick, level = tick * SIZE, level + 1
    where[name] = (level, d - d % tick)

# %%
lab07.check_bucket(where, DELAYS, TICK, SIZE)

# %% [markdown]
# ### Exercise 2 · An idle consumer's fetches
#
# An idle consumer fetches from one broker with a round trip of `RTT_MS`. How many Fetch requests does it send
# in `WINDOW_MS`, for each `fetch.max.wait.ms` in `WAITS`? (The next request leaves when the answer arrives; count
# only the requests whose answer is in before the window ends.) Answer with a dict `fetches = {wait: requests}`.

# %%
WINDOW_MS, RTT_MS, WAITS = 10_000, 0.5, (0, 100, 500)

# %% tags=["solution"]
fetches = {w: int(WINDOW_MS // (w + RTT_MS)) for w in WAITS}

# %%
lab07.check_idle_fetches(fetches, WINDOW_MS, RTT_MS, WAITS)

# %% [markdown]
# ### Exercise 3 · Does the fetch complete?
#
# A consumer Fetch on one partition is parked with `min_bytes = MIN_BYTES`. The partition's segments start at
# the offsets `SEGMENTS`. Something has just happened — a follower fetch moved the HW, a segment rolled, the
# leader was truncated — and the purgatory checks the fetch again. For each situation `(fetch offset, HW, bytes
# between them)`, does the DelayedFetch complete now, by case `"F"` or `"G"` (section 2), or `"wait"`? Kafka's
# `DelayedFetch.tryComplete` looks at the offsets first, the bytes after. Answer with a dict
# `fetch_case = {situation: "F", "G" or "wait"}`, one entry per situation.

# %%
SEGMENTS, MIN_BYTES = (0, 100, 200), 1024
SITUATIONS = {"a": (120, 123, 180), "b": (120, 123, 2000), "c": (130, 123, 0), "d": (195, 205, 300),
              "e": (123, 123, 0)}

# %% tags=["solution"]
def segment_of(offset):
    return max(base for base in SEGMENTS if base <= offset)


fetch_case = {}
for name, (fetch_offset, hw, available) in SITUATIONS.items():
    if fetch_offset > hw or (fetch_offset < hw and segment_of(fetch_offset) < segment_of(hw)):
        fetch_case[name] = "F"
    elif fetch_offset < hw and available >= MIN_BYTES:
        fetch_case[name] = "G"
    else:
        fetch_case[name] = "wait"

# %%
lab07.check_fetch_case(fetch_case, SITUATIONS, SEGMENTS, MIN_BYTES)

# %% [markdown]
# ### Exercise 4 · The high watermark
#
# A partition's replicas have the log end offsets `LEOS` (broker: LEO); broker 0 leads. For each ISR below,
# what is the leader's high watermark, and how many records does a consumer get reading from offset
# `READ_FROM`? Answer with a dict `high_watermarks = {case: (high watermark, records)}`. (`min.insync.replicas`
# is 1, and no replica outside the ISR has caught up lately.)

# %%
LEOS, READ_FROM = {0: 12, 1: 9, 2: 11, 3: 4}, 5
ISRS = {"a": (0, 1, 2), "b": (0, 2), "c": (0, 2, 3)}

# %% tags=["solution"]
high_watermarks = {}
for case, isr in ISRS.items():
    hw = min(LEOS[b] for b in isr)
    high_watermarks[case] = (hw, max(0, hw - READ_FROM))

# %%
lab07.check_high_watermarks(high_watermarks, LEOS, ISRS, READ_FROM)

# %% [markdown]
# ### Exercise 5 · What one Fetch returns
#
# One consumer Fetch names four partitions, in this order, with the sizes in bytes of the batches each has from
# its fetch offset on (`[]`: nothing new). How many **whole** batches does each partition return, with
# `max_bytes = MAX_BYTES` and `partition_max_bytes = PARTITION_MAX_BYTES`? Answer with a dict
# `returned = {partition: whole batches}`. (Section 5: partitions are read in request order; what one returns
# comes off the budget; KIP-74.)

# %%
PARTITIONS = {3: [], 1: [1500, 200], 0: [300, 300], 2: [300]}
MAX_BYTES, PARTITION_MAX_BYTES = 2000, 500

# %% tags=["solution"]
left, first_with_data, returned = MAX_BYTES, True, {}
for p, sizes in PARTITIONS.items():
    limit = min(PARTITION_MAX_BYTES, left)
    if first_with_data and sizes:
        limit = max(limit, sizes[0])
    whole = total = 0
    for size in sizes:
        if total + size > limit:
            break
        whole, total = whole + 1, total + size
    returned[p] = whole
    if whole:
        first_with_data = False
        left = max(0, left - min(sum(sizes), limit))

# %%
lab07.check_batches_returned(returned, PARTITIONS, MAX_BYTES, PARTITION_MAX_BYTES)

# %% [markdown]
# ## Recap
#
# * A request that cannot be answered yet is parked in a **purgatory**, watched per partition, with a timeout
#   on a **timing wheel**; it completes exactly once — by a check (a follower fetch, an append) or by expiry.
# * `acks=all`: **DelayedProduce** until the HW passes the batch (case C.2), or REQUEST_TIMED_OUT.
# * Fetch: **DelayedFetch** until `min_bytes` are readable (case G) — below the HW for consumers — or
#   `max_wait_ms`.
# * The timing wheel: O(1) insert and cancel; coarse buckets cascade into finer ones as time passes.
# * Without the wait, an idle consumer turns into a request storm.
# * One Fetch reads many partitions; `max.partition.fetch.bytes` caps each, `fetch.max.bytes` the whole answer,
#   and neither stops the first batch of the first partition with data (KIP-74).
# * The HW is the smallest LEO of the in-sync replicas: a lagging follower holds back what consumers can read.
# * A Produce is authorized (TOPIC_AUTHORIZATION_FAILED) before its `acks` are checked (INVALID_REQUIRED_ACKS).
#
# Next: lab 08, where the followers whose fetches move the HW are the subject.
