# Source of labs/08_replication.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 08
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 08 · Replication, the ISR and acks
#
# A topic created with `replication.factor=3` keeps each partition on three brokers. One of them, the
# **leader**, takes every write; the two others, the **followers**, are clients of the leader like any
# consumer: they send it Fetch requests and append what comes back to their own logs. Out of that simple
# loop come the rules that decide what "written" means in Kafka: which replicas count as **in sync** (the
# ISR), how far consumers may read (the **high watermark**), and what a producer's `acks` waits for. This lab
# watches one partition on three brokers running in the notebook, stops followers on purpose, and looks at
# what the leader does about it.
#
# (The cluster here is the ZooKeeper-era design: the leader writes ISR changes to the coordination store
# itself. From Kafka 2.7 the leader asks the controller instead (AlterIsr, renamed AlterPartition in 3.2), and
# Kafka 4 runs on KRaft; the rules on this page did not change.)
#
# **By the end of this lab you can**
#
# 1. show that followers replicate by fetching, and tell a follower's Fetch from a consumer's (`replica_id`);
# 2. read the log end offset (LEO) and high watermark (HW) of every replica, and say why they differ;
# 3. explain when a follower leaves the ISR (`replica.lag.time.max.ms`) and when it comes back;
# 4. say what `acks=1` and `acks=all` each wait for;
# 5. predict NOT_ENOUGH_REPLICAS (19) and NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) from the ISR and
#    `min.insync.replicas`.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C22** each partition has a leader; followers replicate by fetching from it | the followers' Fetch requests on the leader, with `replica_id` | 1 |
# | **C44** consumers see only records below the high watermark; followers fetch beyond it | a consumer's Fetch stopping at the HW while a follower already has more | 2, 3 |
# | **C42** acks=all needs enough in-sync replicas, then waits until they have the records | acks=1 answered before the followers copy; acks=all held until the HW passes; error 19 | 4, 5 |
# | **C29** `acks=0/1/all` and `min.insync.replicas` | a table of outcomes with a full, a shrunken and a lone-leader ISR | 4, 5 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | ISR, HW, min ISR, the follower's fetch state | `kafkalab/server/partition.py` | `core/src/main/scala/kafka/cluster/Partition.scala`, `Replica.scala` |
# | appends, follower fetches, the ISR task | `kafkalab/server/replica_manager.py` | `core/src/main/scala/kafka/server/ReplicaManager.scala` |
# | the follower's fetch loop | `kafkalab/server/replica_fetcher.py` | `core/src/main/scala/kafka/server/ReplicaFetcherThread.scala`, `AbstractFetcherThread.scala` |
# | acks=all waiting | `kafkalab/purgatory/delayed_produce.py` | `core/src/main/scala/kafka/server/DelayedProduce.scala` (lab 07) |
# | the tap, tables, pictures, checks | `kafkalab/labs/lab08.py` | — |

# %%
import time

import pandas as pd

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Producer
from kafkalab.labs import evidence, lab08
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, request_class
from kafkalab.purgatory import check_enough_replicas_reach_offset
from kafkalab.records import decode_batches
from kafkalab.viz import ClusterDashboard

broker_log = BrokerLog().install()          # the brokers' warnings: kept in a list, not on stderr
loop_log = BrokerLog("asyncio").install()  # ... and those of the cluster's event loop (tasks of killed brokers)
TOPIC = lab08.TOPIC
LAG_MS = 1500                               # replica.lag.time.max.ms (default 30000): short, so the lab is quick

cluster = Cluster(brokers=3, overrides={
    "replica.lag.time.max.ms": LAG_MS,
    "replica.fetch.wait.max.ms": 200,       # a follower's Fetch waits at most this long for new data (default 500)
    "replica.fetch.backoff.ms": 100,
    "auto.create.topics.enable": False,
    # Fetch sessions off (KIP-227): with them an idle follower's Fetch names no partition at all, and
    # section 1 wants to look at one.
    "max.incremental.fetch.session.cache.slots": 0,
}).start()
admin = cluster.broker(cluster.controller_id).admin
# One partition, replicas on brokers 0, 1, 2 in that order: the first is the preferred leader.
cluster.call(admin.create_topic, TOPIC, -1, -1, {0: [0, 1, 2]}, {"min.insync.replicas": "2"})
cluster.wait_until(lambda: all(b.metadata_cache.partition_count(TOPIC) == 1 for b in cluster.brokers.values()))
state = cluster.partition_state(TOPIC, 0)
print(f"{TOPIC}-0: replicas {state['replicas']}, leader {state['leader']}, ISR {state['isr']}, "
      f"leader epoch {state['leader_epoch']}, min.insync.replicas=2")

# %% [markdown]
# Three replicas, all in sync, broker 0 leading. `produce` below sends records with kafkalab's producer and
# returns, for each, the offset the broker gave it or the error it answered (`retries=0`, so that an error is
# shown rather than retried).

# %%
def produce(values, acks="all"):
    out = []
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab08", "acks": acks,
                   "retries": 0, "linger.ms": 0}) as p:
        futures = [p.send(TOPIC, v, partition=0) for v in values]
        p.flush()
        for f in futures:
            try:
                out.append(f.result().offset)
            except ApiException as e:  # the broker's error code (a KafkaProtocolError)
                out.append(f"{e.error_code.name} ({e.error_code})")
            except Exception as e:
                out.append(type(e).__name__)
    return out


def settled(leo):
    """True (on the cluster loop) once every live replica has LEO == HW == leo."""
    logs = cluster.partition_state(TOPIC, 0)["logs"]
    return all(v["log_end_offset"] == leo and v["high_watermark"] == leo for v in logs.values())


timeline = lab08.ReplicaTimeline([f"broker {b}" for b in range(3)])
timeline.add("created", lab08.replica_rows(cluster, TOPIC))

# %% [markdown]
# The partition, live: for each replica a bar to its **log end offset** (LEO), dark up to the **high
# watermark** (HW: what every in-sync replica has, so what consumers may read), pale beyond it; the leader's
# ISR; and which brokers run. It redraws by itself four times a second while the cells below run (opened
# without running, the notebook shows a note here instead). The steps of this lab are also drawn, frozen, in
# one picture at the end of section 6.

# %%
dashboard = ClusterDashboard(cluster, sections=("brokers", "partitions"))
dashboard

# %% [markdown]
# ## 1 · Followers are fetchers
#
# Nothing pushes records to a follower. Each follower broker runs a fetcher per leader it follows
# (`ReplicaFetcherThread` in Kafka) that sends the leader **Fetch** requests over the inter-broker listener,
# in a loop, from its own log end offset. To see them we put a tap on the leader's request queue: it keeps the
# decoded body of every request the leader's handler threads take.
#
# Produce four records with `acks=all`, let everything settle, then look at the next Fetch from each
# follower.

# %%
tap = cluster.call(lambda: lab08.RequestTap(cluster.broker(0)).install())
print("offsets:", produce([b"order-%d" % i for i in range(4)]))
cluster.wait_until(lambda: settled(4))
tap.requests.clear()
time.sleep(0.5)                             # > replica.fetch.wait.max.ms: every follower fetched again
pd.DataFrame(lab08.fetch_rows(tap, TOPIC)).set_index("client_id")

# %% [markdown]
# * `replica_id` is the follower's **broker id**. A consumer sends `-1` there: that one field is how the leader
#   tells the two kinds of fetcher apart, and it changes what they may read (section 3).
# * `fetch_offset` = 4 is the follower's own log end offset: "I have everything before 4, send me 4 onwards".
#   That is also how the leader learns how far each follower got: there is no separate acknowledgement.
# * `max_wait_ms` / `min_bytes` come from `replica.fetch.wait.max.ms` / `replica.fetch.min.bytes`: with nothing
#   new, the leader parks the Fetch for up to 200 ms instead of answering empty at once (lab 07 looks inside).
#
# Every replica has the four records, and every replica knows they are committed:

# %%
timeline.add("4 × acks=all", lab08.replica_rows(cluster, TOPIC))
pd.DataFrame(lab08.replica_rows(cluster, TOPIC)).set_index("replica")

# %% [markdown]
# ## 2 · Log end offset and high watermark
#
# Two offsets per replica:
#
# * the **log end offset** (LEO): the offset its next record will get, i.e. how much it has;
# * the **high watermark** (HW): on the leader, the smallest LEO among the in-sync replicas — the records all of
#   them have, which Kafka calls *committed*. Followers learn the leader's HW from each Fetch response and keep
#   `min(their LEO, that HW)`.
#
# The leader keeps a record per follower (Kafka's `Replica`): the LEO of its last fetch, and the last time it was
# caught up.

# %%
pd.DataFrame(lab08.leader_view(cluster, TOPIC)).set_index("follower")

# %% [markdown]
# Now make the two offsets differ. We **kill broker 2** without letting its coordination session expire — the
# process is gone, but nobody is told: only the leader will notice, because the Fetch requests stop. Then
# three records with `acks=1`.

# %%
cluster.kill(2, expire_session=False)
acks1 = produce([b"order-%d" % i for i in range(4, 7)], acks=1)
acks1_hw = cluster.call(lambda: lab08.leader_partition(cluster, TOPIC).log.high_watermark)
print("acks=1 offsets:", acks1, "| the leader's HW when the answers arrived:", acks1_hw)
cluster.wait_until(lambda: cluster.partition_state(TOPIC, 0)["logs"][1]["log_end_offset"] == 7)
time.sleep(0.3)                             # broker 1 fetches once more and learns the (unchanged) HW
timeline.add("broker 2 stuck, 3 × acks=1", lab08.replica_rows(cluster, TOPIC))
pd.DataFrame(lab08.replica_rows(cluster, TOPIC)).set_index("replica")

# %% tags=["figure:written_not_committed"]
timeline   # the steps so far: the leader's high watermark stays below its log end offset

# %% [markdown]
# The leader and broker 1 have 7 records, but the high watermark stays at 4: broker 2 is still in the ISR (the
# leader has no proof yet that it is gone) and its LEO, as the leader last saw it, is 4. Records 4-6 are
# **written but not committed**.
#
# ## 3 · Who may read what
#
# Ask the leader for everything from offset 0, once as a consumer (`replica_id=-1`) and once as broker 1
# would (`replica_id=1`). The reads are bounded differently: a consumer reads up to the HW, a follower up to
# the LEO (Kafka's `FetchIsolation`: `HIGH_WATERMARK` vs `LOG_END`).

# %%
Fetch = request_class(ApiKey.FETCH)


def fetch_from_leader(replica_id, client_id):
    body = Fetch(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                 session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
                 topics=(Fetch.FetchTopic(topic=TOPIC, partitions=(Fetch.FetchPartition(
                     partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                     partition_max_bytes=1 << 20),)),))
    ep = cluster.broker(0).bound_endpoints[0]

    async def send():
        conn = InterBrokerConnection(ep.host, ep.port, client_id=client_id)
        try:
            return await conn.send(ApiKey.FETCH, 11, body)
        finally:
            conn.close()
    part = cluster.run(send()).responses[0].partitions[0]
    offsets = [r.offset for b in decode_batches(part.records or b"") for r in b.records]
    return {"asked as": client_id, "replica_id": replica_id, "offsets returned": f"{offsets[0]}..{offsets[-1]}",
            "high_watermark in the response": part.high_watermark}


pd.DataFrame([fetch_from_leader(-1, "lab08-consumer"), fetch_from_leader(1, "lab08-as-broker-1")]).set_index("asked as")

# %% [markdown]
# (Our second request *claimed* to be broker 1, and the leader believed it: for a moment it noted broker 1's
# LEO as 0, until broker 1's own next Fetch. Real Kafka checks that a fetch with a replica id comes from a
# broker — the CLUSTER_ACTION permission when an authorizer is configured.)
#
# A consumer never sees records 4-6 while they are uncommitted: if the leader died now and broker 2 came back
# as the new leader, those records would be gone, and no consumer would have read something that later
# vanished. The follower must fetch beyond the HW, of course: that is how the HW moves at all.
#
# ## 4 · The ISR shrinks, and acks=all waits
#
# Send one record with `acks=all` now. The leader appends it, but may not answer until every in-sync replica
# has it — and broker 2 never will. The request waits in the leader's *produce purgatory* (lab 07) until one of
# two things happens: the ISR changes so that the HW passes the record, or the request's timeout (30 s)
# expires.
#
# Watch it happen on the dashboard (the same live view as above): the leader's bar grows by one pale record
# that stays pale while the request waits; after `replica.lag.time.max.ms` broker 2 leaves the ISR, the HW
# jumps, and the bar turns dark.

# %%
dashboard

# %%
t0 = time.time()
acks_all = produce([b"order-7"], acks="all")
answered_ms = time.time() * 1000
leader = cluster.call(lambda: lab08.leader_partition(cluster, TOPIC))
shrink_ms, isr_after = next((t, isr) for t, isr in leader.isr_history if 2 not in isr)
b2 = leader.remote_replicas[2]
print("acks=all offsets:", acks_all)
print("ISR after the shrink:", list(isr_after))
evidence("The ISR shrank, then acks=all was answered", {
    "broker 2 left the ISR at least replica.lag.time.max.ms after it was last caught up":
        shrink_ms - b2.last_caught_up_time_ms >= LAG_MS,
    "... and within replica.lag.time.max.ms + 1 s of it": shrink_ms - b2.last_caught_up_time_ms <= LAG_MS + 1000,
    "the acks=all answer came after the shrink": answered_ms >= shrink_ms,
    "the answer took at least 500 ms (acks=1's came at once: this one waited for the ISR)":
        answered_ms - t0 * 1000 >= 500,
})

# %% [markdown]
# The leader runs a periodic task (`isr-expiration`, every `replica.lag.time.max.ms / 2`) that drops every
# follower that is **not caught up**. A follower is caught up when its LEO equals the leader's, or when it was
# caught up at some point within the last `replica.lag.time.max.ms` (`Replica.isCaughtUp`). Note the first half:
# a dead follower on an idle partition stays in the ISR forever — it is the acks=1 writes above that made broker
# 2 fall behind. Shrinking is also what covers *slow* followers: one that fetches all the time but never
# reaches the leader's end is out too.
#
# The leader writes the new ISR to the partition's state in the coordination store (conditionally on the
# version it last saw) and tells the controller, which sends every broker an UpdateMetadata. With broker 2 gone
# from the ISR, the HW jumps to the smallest LEO of {0, 1}: the waiting produce is satisfied and answered.

# %%
cluster.wait_until(lambda: cluster.partition_state(TOPIC, 0)["logs"][1]["high_watermark"] == 8)
timeline.add("ISR shrank, 1 × acks=all", lab08.replica_rows(cluster, TOPIC))
pd.DataFrame(lab08.leader_view(cluster, TOPIC)).set_index("follower")

# %% [markdown]
# ## 5 · min.insync.replicas and errors 19 and 20
#
# "All in-sync replicas" is a moving target: if the ISR shrinks to the leader alone, `acks=all` means "the
# leader has it" — exactly `acks=1`, and a failure of that one broker loses the record (Jepsen showed this in
# 2013). `min.insync.replicas` (a topic or broker config, here 2) puts a floor under it, **for acks=all only**:
#
# * **NOT_ENOUGH_REPLICAS (19)** — checked *before* the append: the ISR is smaller than
#   `min(min.insync.replicas, replication factor)`. Nothing is written.
# * **NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)** — checked when the waiting produce completes: the record was
#   appended and then the ISR shrank below the minimum. The record *is* in the leader's log, but not as safely
#   as asked.
#
# Stop broker 1 as well, write one record with `acks=1` so that it falls behind, and wait for the ISR to become
# the leader alone.

# %%
cluster.kill(1, expire_session=False)
print("acks=1:", produce([b"order-8"], acks=1))
cluster.wait_until(lambda: lab08.leader_partition(cluster, TOPIC).isr == (0,), 10)
leo_before = cluster.call(lambda: lab08.leader_partition(cluster, TOPIC).log.log_end_offset)
rows = []
for acks in ("all", 1):
    result = produce([b"order-9"], acks=acks)[0]
    p = cluster.call(lambda: lab08.leader_partition(cluster, TOPIC))
    rows.append({"acks": acks, "result": result if isinstance(result, str) else f"offset {result}",
                 "leader LEO after": p.log.log_end_offset, "leader HW after": p.log.high_watermark})
print("ISR:", list(cluster.call(lambda: lab08.leader_partition(cluster, TOPIC).isr)), "| LEO before:", leo_before)
timeline.add("ISR = {0}", lab08.replica_rows(cluster, TOPIC))
pd.DataFrame(rows).set_index("acks")

# %% [markdown]
# * `acks=all` got **NOT_ENOUGH_REPLICAS** and the LEO did not move: the leader refused before writing.
# * `acks=1` still works — `min.insync.replicas` does not apply to it — and its record lands *above* the HW.
# * The HW does not move at all while the ISR is below the minimum (Kafka's strict rule, "the HW can only
#   advance if the ISR size is equal or larger than the min ISR"): the leader's own records are not committed
#   until a second replica has them.
#
# Error 20 needs a race — the ISR shrinking while an appended request waits — and Kafka's strict HW rule makes
# it rare (a request parked when the ISR drops below the minimum usually ends in REQUEST_TIMED_OUT, 7, because
# the HW stops). The decision itself is a small rule, `Partition.checkEnoughReplicasReachOffset`, which
# kafkalab's DelayedProduce calls as each follower fetch moves the HW:

# %%
cases = [("HW below the record", 11, 9, 3), ("HW passed, ISR 3", 11, 11, 3), ("HW passed, ISR 2", 11, 11, 2),
         ("HW passed, ISR 1", 11, 11, 1)]
pd.DataFrame([{"case": name, "required_offset": req, "high_watermark": hw, "maximal ISR size": isr,
               "done": done, "error": ErrorCode(err).name}
              for name, req, hw, isr in cases
              for done, err in [check_enough_replicas_reach_offset(req, is_leader=True, high_watermark=hw,
                                                                   maximal_isr_size=isr, effective_min_isr=2)]]
             ).set_index("case")

# %% [markdown]
# ## 6 · The followers come back
#
# Restart both. Each one first asks the leader where its log and the leader's agree (OffsetForLeaderEpoch, by
# leader epoch: KIP-101), truncates whatever diverged, and fetches the rest. Once a follower's LEO has reached
# the leader's HW (and the start of the leader's current epoch), the leader adds it back to the ISR (Kafka's
# `maybeExpandIsr`) — and only then can the HW move past the records written while it was alone.
#
# (That first round trip is how this cluster's followers do it, as Kafka's did up to inter-broker protocol 2.6.
# From 2.7 a restarted follower usually fetches at once: its Fetch names the epoch of its last record
# (`last_fetched_epoch`), and where the logs part the leader answers with a `diverging_epoch` instead of
# records — the same truncation, folded into Fetch.)
#
# On the dashboard: two brokers come back up, their bars catch up with the leader's, they rejoin the ISR one
# after the other, and the leader's pale records turn dark.

# %%
dashboard

# %%
cluster.restart(1)
cluster.wait_until(lambda: sorted(lab08.leader_partition(cluster, TOPIC).isr) == [0, 1], 15)
cluster.restart(2)
cluster.wait_until(lambda: sorted(lab08.leader_partition(cluster, TOPIC).isr) == [0, 1, 2], 15)
end = cluster.call(lambda: lab08.leader_partition(cluster, TOPIC).log.log_end_offset)
cluster.wait_until(lambda: settled(end), 10)
timeline.add("both back", lab08.replica_rows(cluster, TOPIC))
history = cluster.call(lambda: [list(isr) for _, isr in lab08.leader_partition(cluster, TOPIC).isr_history])
print("the leader's ISR, change by change:", " -> ".join(map(str, history)))
pd.DataFrame(lab08.replica_rows(cluster, TOPIC)).set_index("replica")

# %% [markdown]
# The whole story, one group of bars per step (hover a bar for its numbers). The pale top of a bar is written
# but not committed; consumers read only the dark part.

# %% tags=["figure:high_watermark_steps"]
timeline

# %%
pd.DataFrame(timeline.rows()).set_index("step")

# %% [markdown]
# ### Sampling while records flow
#
# The steps above were taken at quiet moments, so they print the same on every run. While records stream in,
# the exact numbers depend on timing — but some rules hold in every sample, whatever the timing. Produce 300
# records with `acks=1` from one thread while another samples every replica's LEO and HW:

# %%
import threading

samples, done = [], threading.Event()


def sampler():
    while not done.is_set():
        logs = cluster.partition_state(TOPIC, 0)["logs"]
        samples.append({f"broker {b}": v for b, v in logs.items()})
        time.sleep(0.002)


thread = threading.Thread(target=sampler)
thread.start()
start = end
produce([b"tick-%d" % i for i in range(300)], acks=1)
cluster.wait_until(lambda: settled(start + 300), 10)
done.set()
thread.join()
evidence("300 records with acks=1, sampled as they flowed",
         {**lab08.sample_invariants(samples, "broker 0"), "at least 10 samples were taken": len(samples) >= 10})

# %% [markdown]
# ## 7 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · The leader's high watermark
#
# A partition with three replicas and `min.insync.replicas=2`. The leader has LEO `LEADER_LEO` and a current HW
# of `CURRENT_HW`; the followers' LEOs (as of their last fetch) and the ISR are below. What is the leader's HW?

# %%
LEADER_LEO, CURRENT_HW, MIN_ISR = 120, 100, 2
FOLLOWER_LEOS = {"broker 1": 117, "broker 2": 64}
ISR = ["broker 0", "broker 1"]

# %% tags=["solution"]
hw_answer = min([LEADER_LEO] + [FOLLOWER_LEOS[b] for b in ISR if b in FOLLOWER_LEOS]) if len(ISR) >= MIN_ISR \
    else CURRENT_HW

# %%
lab08.check_high_watermark(hw_answer, LEADER_LEO, FOLLOWER_LEOS, ISR, MIN_ISR, CURRENT_HW)

# %% [markdown]
# ### Exercise 2 · What does each Produce get?
#
# For each case, say what the leader does before any waiting: `"no response"`, `"answered at once"`,
# `"waits in purgatory"` or `"NOT_ENOUGH_REPLICAS"`. Answer with a list of five of these strings, one per case,
# in the order of `CASES`.

# %%
CASES = [
    {"acks": "all", "isr_size": 3, "min_insync_replicas": 2, "replication_factor": 3},
    {"acks": "all", "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 3},
    {"acks": 1, "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 3},
    {"acks": 0, "isr_size": 3, "min_insync_replicas": 2, "replication_factor": 3},
    {"acks": "all", "isr_size": 1, "min_insync_replicas": 2, "replication_factor": 1},
]

# %% tags=["solution"]
acks_answer = ["waits in purgatory", "NOT_ENOUGH_REPLICAS", "answered at once", "no response", "waits in purgatory"]

# %%
lab08.check_acks_outcomes(acks_answer, CASES)

# %% [markdown] tags=["solution"]
# (The last case: with one replica, `min.insync.replicas=2` can never be met, so Kafka uses
# `min(min.insync.replicas, replication factor)`.)

# %% [markdown]
# ### Exercise 3 · Who stays in the ISR?
#
# `replica.lag.time.max.ms` = `LAG`. At `NOW` (ms), the leader runs its ISR check. The followers in the ISR were
# last caught up at the times below, and none has the leader's LEO. Which followers does it keep? Answer with a
# list of their names (`"broker 1"`, ...).

# %%
LAG, NOW = 30_000, 1_000_000
LAST_CAUGHT_UP = {"broker 1": 990_000, "broker 2": 970_000, "broker 3": 965_000}
FOLLOWERS_IN_ISR = ["broker 1", "broker 2", "broker 3"]

# %% tags=["solution"]
isr_answer = [f for f in FOLLOWERS_IN_ISR if NOW - LAST_CAUGHT_UP[f] <= LAG]

# %%
lab08.check_isr_after(isr_answer, LAST_CAUGHT_UP, NOW, LAG, FOLLOWERS_IN_ISR)

# %% [markdown]
# ## Recap
#
# * Followers replicate by **fetching** from the leader, with `replica_id` = their broker id; the fetch offset
#   doubles as their acknowledgement.
# * **LEO**: what a replica has. **HW**: the smallest LEO in the ISR, on the leader; consumers read below it,
#   followers beyond it.
# * A follower leaves the ISR when it has not been caught up for `replica.lag.time.max.ms`; it comes back once
#   its LEO reaches the leader's HW.
# * `acks=1` answers after the leader's append; `acks=all` after the HW passes the record (purgatory, lab 07).
# * `min.insync.replicas` (acks=all only): too small an ISR → **19** before the append; shrunk while waiting →
#   **20** after it; and the HW stops while the ISR is below the minimum.
#
# Next: lab 09, the controller that elects a new leader when one of these brokers dies for good.

# %%
tap.requests.clear()
cluster.call(tap.remove)
cluster.stop()
dashboard.stop()                            # it stops with the cluster; this waits until its thread has ended
