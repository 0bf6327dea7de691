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
# shows what happens to an idle consumer when there is no waiting room.
#
# **By the end of this lab you can**
#
# 1. follow an `acks=all` Produce into the produce purgatory and out of it (metrics, the completion case);
# 2. explain `fetch.min.bytes` and `fetch.max.wait.ms`, and watch a Fetch wait and then complete on new data;
# 3. read a hierarchical timing wheel: levels, buckets, and how timeouts cascade down as the clock moves;
# 4. estimate the Fetch rate of an idle consumer with and without a wait, and say why Kafka parks fetches.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C39** Produce and Fetch, from producers, consumers and followers | both requests parked; a consumer Fetch by hand | 1, 2 |
# | **C42** acks=all waits in purgatory until the in-sync replicas have the records | a DelayedProduce: metrics before, during and after, `completed_by`, a timeout | 1 |
# | **C43** Fetch names partitions and offsets, caps bytes, waits for `min_bytes` up to a maximum | a Fetch parked until a record arrives; one that expires | 2, 4 |
# | **C44** consumers read below the high watermark | a parked consumer Fetch wakes when the HW moves, not when the leader appends | 2 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | the purgatory | `kafkalab/purgatory/purgatory.py`, `delayed_operation.py` | `core/src/main/scala/kafka/server/DelayedOperation.scala` |
# | the waiting Produce and Fetch | `kafkalab/purgatory/delayed_produce.py`, `delayed_fetch.py` | `DelayedProduce.scala`, `DelayedFetch.scala` |
# | the timing wheel | `kafkalab/purgatory/timing_wheel.py`, `timer.py` | `server-common/.../util/timer/TimingWheel.java`, `SystemTimer.java` |
# | where the broker uses them | `kafkalab/server/replica_manager.py` | `core/src/main/scala/kafka/server/ReplicaManager.scala` |
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
from kafkalab.viz import LiveRequestLog

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
print("produce:", produce("quiet", [b"wake up"], acks=1))
fetcher.join()
answer = box["answer"]
print(f"answered with {answer['records']} record(s), high_watermark {answer['high_watermark']}, "
      f"completed_by {parked.completed_by!r}")
evidence("The Fetch waited for data, not for its timeout", {
    "it waited at least 0.3 s (until the record came)": answer["took_s"] >= 0.3,
    "far less than max_wait_ms (under 5 s of the 10)": answer["took_s"] < 5})

# %% [markdown]
# Case **G** of Kafka's `DelayedFetch`: the bytes available between the fetch offset and the end the consumer
# may read reached `min_bytes`. For a consumer that end is the **high watermark**, not the LEO: on a replicated
# partition a consumer's Fetch wakes when the followers' fetches move the HW, not at the leader's append. (A
# follower's Fetch reads to the LEO, so it wakes at the append.) The other ways out: the broker stopped leading
# (A), lost the replica (B), does not know the partition (C), its log dir failed (D), the leader epoch is fenced
# (E), the offset is no longer on the active segment (F), the follower's log diverged (H) — or the timeout.
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
# storm is worse. Against a broker that ignores `max_wait_ms`, confluent-kafka has been measured sending about
# 316,000 Fetch requests in 10 s — and getting nothing back.) With the wait, the rate of an idle consumer
# is about `1000 / (fetch.max.wait.ms + round trip)` per second per partition leader it fetches from: the
# purgatory turns a busy loop into a long poll. Followers do the same with `replica.fetch.wait.max.ms`.
#
# ## 5 · Exercises
#
# Each exercise has a task, an answer cell and a check cell: replace the `...`, run, then run the check.
# *Instructors:* the answer cells hold the solutions (tagged `solution`).
#
# ### Exercise 1 · Where does each timeout go?
#
# A timer with `tick_ms = TICK` and `wheel_size = SIZE`, its current time 0 (a multiple of every tick). For each
# task, give `(level, start of its slot)` with level 1 the finest, or `None` if it runs at once.

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
# in `WINDOW_MS`, for each `fetch.max.wait.ms` below? (The next request leaves when the answer arrives.)

# %%
WINDOW_MS, RTT_MS, WAITS = 10_000, 0.5, (0, 100, 500)

# %% tags=["solution"]
fetches = {w: int(WINDOW_MS // (w + RTT_MS)) for w in WAITS}

# %%
lab07.check_idle_fetches(fetches, WINDOW_MS, RTT_MS, WAITS)

# %% [markdown]
# ### Exercise 3 · Does the fetch complete?
#
# A consumer Fetch is parked at offset `FETCH_OFFSET` with `min_bytes = MIN_BYTES`. A follower fetch has just
# moved the HW to `HW`; between the fetch offset and the HW there are `AVAILABLE` bytes. Does the DelayedFetch
# complete now — `"G"`, `"F"` — or `"wait"`?

# %%
FETCH_OFFSET, HW, AVAILABLE, MIN_BYTES = 120, 123, 180, 1024

# %% tags=["solution"]
fetch_case = "wait" if FETCH_OFFSET <= HW and AVAILABLE < MIN_BYTES else ("F" if FETCH_OFFSET > HW else "G")

# %%
lab07.check_fetch_case(fetch_case, FETCH_OFFSET, HW, AVAILABLE, MIN_BYTES)

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
#
# Next: lab 08, where the followers whose fetches move the HW are the subject.

# %%
cluster.stop()
