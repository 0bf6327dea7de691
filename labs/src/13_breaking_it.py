# Source of labs/13_breaking_it.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 13
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 13 · Breaking it: durability under failure
#
# Labs 07-09 showed the machinery: the high watermark, the ISR, `acks`, `min.insync.replicas`, leader election.
# This lab stops admiring it and attacks it. In 2013 Kyle Kingsbury's Jepsen series took Kafka 0.8, cut a
# leader off from its follower, kept writing, killed the leader — and showed that writes the producer had
# been told were safe simply disappeared. We run that experiment in miniature on brokers inside the notebook,
# and we do not judge it by looking at broker internals: a **history checker** gets only what clients were
# told and what a reader found afterwards, and says whether any promise was broken.
#
# (The cluster is the ZooKeeper-era design the course teaches; Kafka 4 elects leaders through KRaft instead, and
# its controller can keep an "eligible leader replicas" set (KIP-966: from 4.0, on by default for new clusters
# from 4.1) — the trade-offs on this page are the same.)
#
# **By the end of this lab you can**
#
# 1. record a run as a history of `ok` / `fail` / `info` operations and say why a timeout is `info`, not `fail`;
# 2. reproduce the 2013 lost writes (RF=2, `min.insync.replicas=1`, `acks=1`, unclean election) and point at
#    exactly which acknowledged offsets vanished;
# 3. show that `min.insync.replicas=2` with `acks=all` turns those losses into refusals (error 19);
# 4. show that turning unclean election off turns them into unavailability instead;
# 5. fill in what each setting buys — acks, `min.insync.replicas`, `unclean.leader.election.enable`, RF;
# 6. watch an idempotent producer write every record exactly once while its leaders are killed.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C29** `acks=0/1/all` and `min.insync.replicas` | acks=1 writes acknowledged by a leader alone, then lost; acks=all with min ISR 2 refused instead | 1, 3, 5 |
# | **C42** acks=all needs enough in-sync replicas before the leader appends | NOT_ENOUGH_REPLICAS (19) for every write while the ISR is the leader alone | 3 |
# | **C44** consumers only see records below the high watermark | with an ISR of one the leader's high watermark reaches its log end (readable), then the unclean election drops those records; the reader stops at the new leader's shorter high watermark | 1, 2 |
# | Jepsen-style testing | faults (partition, kill), a history of client operations, a checker that finds `lost-write` | all |
#
# | what you use | kafkalab module | what it mirrors |
# |---|---|---|
# | the faults | `kafkalab/cluster/faults.py` (`partition`, `kill`, `heal`) | Jepsen's nemeses |
# | the history and its checker | `kafkalab/cluster/history.py` | `jepsen.tests.kafka`'s checker, in spirit |
# | the election rule | `kafkalab/controller/` | `PartitionLeaderElectionAlgorithms.scala` (ZooKeeper era) |
# | the controller's metrics (`UncleanLeaderElectionsPerSec`, `OfflinePartitionsCount`, `ActiveControllerCount`) | `kafkalab/controller/controller_stats.py` | `ControllerStats` and the gauges of `KafkaController.scala` |
# | one run of the experiment, the timeline picture, the checks | `kafkalab/labs/lab13.py` | — |

# %%
import pandas as pd
from IPython.display import display
from confluent_kafka import Producer

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog, History
from kafkalab.labs import evidence, lab13
from kafkalab.viz import ClusterControls, ClusterDashboard

broker_log = BrokerLog().install()          # the brokers' warnings (killed peers, if any) go to a list
loop_log = BrokerLog("asyncio").install()  # ... and those of the cluster's event loop (tasks of killed brokers)
print("the faults' settings:", {k: v for k, v in lab13.OVERRIDES.items() if k.startswith(("replica.lag", "zookeeper"))})

# %% [markdown]
# The brokers use short timeouts so that the run takes seconds: a follower leaves the ISR after 0.8 s without
# catching up (`replica.lag.time.max.ms`, default 30 s), and a dead broker's session expires after 2 s.
#
# ## 1 · The 2013 experiment: RF=2, min ISR 1, acks=1, unclean election on
#
# A fresh cluster of two brokers and one partition with replicas `[0, 1]`: broker 0 leads, broker 1 follows.
# `unclean.leader.election.enable=true` and `min.insync.replicas=1` — Kafka 0.8's world (unclean election was
# the only behaviour then; it is off by default since 0.11).
#
# `JepsenRun.write` sends each record on its own and waits for its answer before the next, with `retries=0`.
# That makes the experiment *deterministic*: how many records each phase writes is fixed, whatever the timing.
# Each send goes into a `History` as an operation that ends `ok` (with its offset), `fail` or `info`.

# %%
run = lab13.JepsenRun(acks=1, min_insync_replicas=1, unclean=True)
print("offsets:", run.write([b"before-%d" % i for i in range(10)], "before the cut"))
run.caught_up(10)
pd.DataFrame(lab13.replica_rows(run.state())).set_index("broker")

# %% [markdown]
# Ten records, both replicas have them, and the follower knows they are committed (its HW is 10 as well).
#
# This run's cluster, live: the dashboard shows its two brokers (a cut link shows on the broker's chip), the
# partition's leader, leader epoch and ISR, and each replica's log end offset with the high watermark; it
# redraws by itself while the cells below run. Under it, controls that drive the same fault machinery the
# experiment uses — kill, restart, isolate, heal; produce with the `acks` you choose; change
# `min.insync.replicas`. The cells below run the experiment by script, so that this notebook reads the same
# every time; at the end of section 2 you get to drive this cluster yourself before it stops. (Opened without
# running, the notebook shows notes here instead.)

# %%
dashboard = ClusterDashboard(run.cluster, sections=("brokers", "partitions"))
controls = ClusterControls(run.cluster, topic=lab13.TOPIC)
display(dashboard, controls)

# %% [markdown]
# Now the network splits: `partition(0, 1)` cuts the link between the two brokers. Clients still reach both —
# in 2013 too, the producer kept talking to the isolated leader. One subtlety: a follower that is *at the
# leader's log end* counts as caught up however long it is silent, so the leader only drops it once there is a
# record it cannot fetch. The `probe` write provides one.

# %%
run.cut()
print("probe:", run.write([b"probe"], "probe"))
run.wait_shrink()
print("the leader's ISR after replica.lag.time.max.ms:", list(run.leader_isr()))

# %% [markdown]
# The leader has shrunk the ISR to **itself**. With `acks=1` nothing stops it from acknowledging writes only it
# holds — and with `acks=all` and `min.insync.replicas=1` nothing would either: "all in-sync replicas" is now a
# set of one. Ten more writes:

# %%
during = run.write([b"during-%d" % i for i in range(10)], "leader cut off")
before_kill = run.state()["logs"]
print("offsets:", during)
print("the leader's log end offset / high watermark:", before_kill[0])
print("the follower's log end offset:", before_kill[1]["log_end_offset"])

# %% [markdown]
# Every one acknowledged, offsets 11-20, none on broker 1. And every one **committed**: with
# `min.insync.replicas=1` an ISR of one is enough, so the leader's high watermark followed its log end to 21 —
# a consumer may read all of them. Now the leader dies (`kill`: its session expires and
# the controller hears of it). The only live replica, broker 1, is **not in the ISR**. With unclean election on,
# the controller elects it anyway.
#
# Nothing in the broker's log warns about it. Kafka 3.9's ZooKeeper controller writes the election to its
# state-change log (`state.change.logger`, at INFO) in the same words as any other ("Changed partition
# jepsen-0 from OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=1, ...)"), and marks a
# meter: `kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec`. That counter is how an
# operator learns that acknowledged records may be gone. Every broker has it; only the active controller's
# moves — broker 1's now, the controller since broker 0 died (`ActiveControllerCount` is 1 on the active
# controller, 0 elsewhere). (A KRaft controller also logs the unclean election at INFO.)

# %%
state = run.kill_leader()
print(f"leader: broker {state['leader']}, leader epoch {state['leader_epoch']}, ISR {state['isr']}")
print("the new leader's log end offset / high watermark:", state["logs"][1])
after_kill = run.controller_metrics()
print("broker 1's controller metrics:", after_kill[1])
evidence("The unclean election, as the controller's metrics show it", {
    "broker 1 is the active controller now (ActiveControllerCount 1)": after_kill[1]["ActiveControllerCount"] == 1,
    "it counted one unclean election (UncleanLeaderElectionsPerSec)":
        after_kill[1]["UncleanLeaderElectionsPerSec"] == 1,
    "and the partition is online again (OfflinePartitionsCount 0)": after_kill[1]["OfflinePartitionsCount"] == 0,
    "the broker log holds no line about it": not any("unclean" in m.lower() for m in broker_log.messages()),
})

# %% [markdown]
# ## 2 · The verdict
#
# A reader consumes the partition from offset 0 to its end, and the checker compares what it read with what the
# producer was told. An acknowledged write that a complete read did not find is a **lost-write**.

# %%
seen = run.read()
result = run.check()
result

# %%
lost_offsets = sorted(c["offset"] for c in result.lost_write)
print("lost offsets:", lost_offsets)
evidence(f"{len(result.lost_write)} acknowledged writes lost", {
    "some writes were lost": len(result.lost_write) > 0,
    "every lost write had been acknowledged (ok)":
        all(op.type == "ok" for op in run.history.sends if op.value in {c["value"] for c in result.lost_write}),
    "... and written while the follower was cut off":
        {c["value"] for c in result.lost_write} == {b"probe"} | {b"during-%d" % i for i in range(10)},
    "they were below the old leader's high watermark (readable) before the kill":
        max(lost_offsets) < before_kill[0]["high_watermark"],
    "the reader stopped at the new leader's high watermark": seen[-1][0] + 1 == state["logs"][1]["high_watermark"],
})

# %% [markdown]
# Eleven writes, each answered with an offset, are gone: the new leader's log ends at 10, and when broker 0
# comes back it will truncate its offsets 10-20 to match (lab 08's OffsetForLeaderEpoch). They were not only
# acknowledged but *committed*: below the old leader's high watermark (21), so a consumer could have read them
# before the kill — records it saw that no longer exist (and once the new leader writes, offsets 10-20 hold
# other records: Jepsen's inconsistent offsets, exercise 1). The high watermark protects readers only as far as
# the ISR really holds the records; an ISR of one and an unclean election break both promises, the producer's
# and the consumer's.
#
# The whole run as a picture: one square per send in the order they were made, the faults as dashed lines, the
# leader below. (Hover a square for its value and offset.)

# %% tags=["figure:unsafe_timeline"]
run.timeline

# %%
pd.DataFrame(run.timeline.rows()).set_index("phase")

# %% [markdown]
# **Your turn, before this cluster stops.** Broker 0 is down with offsets 10-20 that nobody else has. With the
# controls above (scroll up to the dashboard), *restart* broker 0 and watch its log end offset on the dashboard
# fall from 21 to 10: it truncates to the new leader's log. Then run the experiment again by hand on broker 1,
# the leader now: produce a few records, *isolate* it, produce with `acks=1` and with `acks=all`, *heal* it —
# and once more with `min.insync.replicas` set to 2. Each control says next to it what the brokers answered;
# the dashboard shows where the records went. Then run the next cell, which stops this cluster (and its
# dashboard).

# %%
controls.actions.close()
run.stop()
dashboard.stop()                            # it stops with the cluster; this waits until its thread has ended

# %% [markdown]
# ## 3 · The same faults with min.insync.replicas=2 and acks=all
#
# Same cluster, same faults, same counts; only the topic's `min.insync.replicas=2` and the producer's
# `acks=all` change. `run()` does sections 1-2 in one go.

# %%
safe = lab13.JepsenRun(acks="all", min_insync_replicas=2, unclean=True)
safe_result = safe.run()
safe_result

# %%
display(evidence("The safe settings", {"the history checker finds the run valid": safe_result.valid}))
print("refusals:", sorted({op.error for op in safe.history.sends if op.type == "fail"}),
      "×", sum(op.type == "fail" for op in safe.history.sends))
print("the probe ended as:", next(op.type for op in safe.history.sends if op.value == b"probe"))
safe.timeline

# %% [markdown]
# * While the ISR is the leader alone, every `acks=all` write gets **NOT_ENOUGH_REPLICAS (19)** *before* the
#   append: nothing written, so the producer knows — those are `fail`s, and no one will ever read them.
# * The `probe` was sent while broker 1 was still in the ISR: the leader appended it and parked the request in
#   purgatory (lab 07) to wait for the follower, which never came; it timed out. Was it written? Yes, on the
#   leader — and then lost with it. The client cannot know, so the operation is `info`, and the checker does not
#   count an `info` that vanished as lost (nor would one that turned up).
# * After the kill, broker 1 leads (unclean) with ten records — all ten acknowledged ones. Nothing promised was
#   broken. The price was availability: ten writes refused.

# %%
pd.DataFrame(safe.timeline.rows()).set_index("phase")

# %% [markdown]
# ## 4 · Unclean election off: unavailable instead of wrong
#
# Back to `acks=1` and `min.insync.replicas=1`, but with `unclean.leader.election.enable=false` (Kafka's default
# since 0.11, KIP-106). Same steps up to the kill:

# %%
strict = lab13.JepsenRun(acks=1, min_insync_replicas=1, unclean=False)
strict.write([b"before-%d" % i for i in range(10)], "before the cut")
strict.caught_up(10)
strict.cut()
strict.write([b"probe"], "probe")
strict.wait_shrink()
strict.write([b"during-%d" % i for i in range(10)], "leader cut off")
state = strict.kill_leader()
print(f"after the kill: leader {state['leader']} (none), ISR {state['isr']}")
print("broker 1's controller metrics:", strict.controller_metrics()[1])
print("a write now:", strict.write([b"offline-0"], "no leader", message_timeout_ms=1500))

# %% [markdown]
# The ISR names only the dead broker, and broker 1 may not lead: the partition is **offline**, and the
# controller's gauge `OfflinePartitionsCount` says so (the number operators alert on when it is above 0); no
# unclean election was counted. The write has
# nowhere to go and times out in the client (`_MSG_TIMED_OUT`, an `info`). When broker 0 comes back (a `kill`
# keeps the page cache, so its log survived), it leads again with everything it acknowledged, and broker 1
# fetches the missing records:

# %% tags=["figure:strict_timeline"]
state = strict.restart_old_leader()
print(f"leader: broker {state['leader']}, epoch {state['leader_epoch']}")
strict.read()
strict_result = strict.check()
display(evidence("The strict settings", {"the history checker finds the run valid": strict_result.valid}))
print("acknowledged:", strict_result.stats["acknowledged"], "| read:", strict_result.stats["read"])
strict.stop()
strict.timeline

# %% [markdown]
# Had broker 0 died with its machine (`kill(0, lose_unflushed=True)`: Kafka does not fsync each write, so the
# bytes in the page cache go too), even this could lose the acknowledged tail — which is why the stronger
# guarantee comes from the ISR never being the leader alone (section 3), not from the disk.
#
# ## 5 · What each setting buys
#
# The three runs are points in a small space. The rule behind them — with the experiment's faults: the leader
# cut off from *every* follower while writes go on, then killed — is `lab13.setting_outcome`; the last column
# says which runs of this notebook measured it.

# %%
measured = {(1, 1, True, 2): f"section 1: {len(result.lost_write)} lost",
            ("all", 2, True, 2): f"section 3: {sum(op.type == 'fail' for op in safe.history.sends)} refused",
            (1, 1, False, 2): "section 4: offline, then valid"}
SETTINGS = [(1, 1, True, 2), ("all", 1, True, 2), ("all", 2, True, 2), ("all", 2, True, 3), (1, 1, False, 2),
            ("all", 2, False, 3), ("all", 3, False, 3)]
pd.DataFrame([{"acks": a, "min.insync.replicas": m, "unclean election": u, "RF": rf,
               **lab13.setting_outcome(a, m, u, rf), "measured": measured.get((a, m, u, rf), "")}
              for a, m, u, rf in SETTINGS]).set_index(["acks", "min.insync.replicas", "unclean election", "RF"])

# %% [markdown]
# Read it as three dials:
#
# * **acks** decides *who must have a write* before the producer hears "ok". `acks=1`: the leader. `acks=all`:
#   the ISR — which can shrink to the leader alone, so on its own it is no stronger (second row, Jepsen's point).
#   (`acks=0` is weaker still: the producer is never told anything, so there is no acknowledgement to lose.)
# * **min.insync.replicas** (acks=all only) puts a floor under that ISR: below it the leader refuses (19).
#   Durability bought with availability for writes. With RF=2 and min ISR 2, one dead broker stops all writes;
#   RF=3 with min ISR 2 survives one — the usual production choice.
# * **unclean.leader.election.enable** decides what happens when no ISR member is alive: lead with a
#   shorter log (available, loses acknowledged writes) or wait (consistent, offline).
#
# ## 6 · Retries without duplicates: an idempotent producer under leader kills
#
# Losing writes is one failure; writing one twice is the other. A producer that retries after a timeout may
# resend a batch the old leader had already appended and replicated. The **idempotent producer** (lab 05, C30)
# numbers its batches per partition under a producer id, and the leader drops a batch whose sequence it has
# already written. Three brokers, RF=3, `min.insync.replicas=2`, `acks=all`, `enable.idempotence=true`, and
# librdkafka retrying as long as it likes; we kill the leader twice while records are in flight, and restart
# it each time.

# %%
cluster = Cluster(brokers=3, overrides={"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 200,
                                        "replica.fetch.backoff.ms": 100, "auto.create.topics.enable": False,
                                        "offsets.topic.replication.factor": 1}).start()
cluster.call(cluster.broker(cluster.controller_id).admin.create_topic, lab13.TOPIC, -1, -1, {0: [0, 1, 2]},
             {"min.insync.replicas": "2"})
cluster.wait_until(lambda: all(b.metadata_cache.partition_count(lab13.TOPIC) == 1 for b in cluster.brokers.values()))
history = History()
producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab13-idempotent",
                     "acks": "all", "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 25000,
                     "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 500, "logger": lab13.CLIENT_LOG})
sent, leaders = 0, [cluster.partition_state(lab13.TOPIC, 0)["leader"]]
idempotent_dashboard = ClusterDashboard(cluster, sections=("brokers", "partitions"))
display(idempotent_dashboard)                # live while this cell runs: the leader moves twice


def send(count):
    global sent
    for _ in range(count):
        value = b"order-%d" % sent
        producer.produce(lab13.TOPIC, value=value, partition=0, on_delivery=lab13.recorder(history, value))
        sent += 1
        producer.poll(0)


for _ in range(2):
    send(100)
    producer.flush(0.2)
    leader = leaders[-1]
    cluster.kill(leader)                                   # records are in flight to it right now
    send(100)                                              # ... and these are sent while it fails over
    cluster.wait_until(lambda old=leader: cluster.partition_state(lab13.TOPIC, 0)["leader"] not in (-1, old), 15)
    leaders.append(cluster.partition_state(lab13.TOPIC, 0)["leader"])
    cluster.restart(leader)
    cluster.wait_until(lambda: len(cluster.partition_state(lab13.TOPIC, 0)["isr"]) == 3, 20)
send(100)
unfinished = producer.flush(30)                        # sends still without an answer after 30 s
print("leaders, one after the other:", leaders)

# %%
lab13.read_everything(cluster, history)
exactly_once = history.check()
cluster.stop()
idempotent_dashboard.stop()
display(evidence(f"{sent} records, two leaders killed mid-stream", {
    "every send ended (none left in flight)": unfinished == 0,
    "the checker finds the history valid": exactly_once.valid,
    "sent == acknowledged == read": sent == exactly_once.stats["acknowledged"] == exactly_once.stats["read"],
    "no duplicates": len(exactly_once.duplicate) == 0,
    "no lost writes": len(exactly_once.lost_write) == 0,
}))
exactly_once

# %% [markdown]
# 500 records, two leaders killed mid-stream, every record read exactly once. Without idempotence the same
# retries *may* write a batch twice — whether they do depends on where the kill lands, so that case is for the
# scenario tests to hunt, not for a notebook that must print the same thing every time. Idempotence covers one
# producer session and one partition; atomic writes across partitions are transactions (lab 11).
#
# ## 7 · Exercises
#
# Write your answer in the answer cell (replace the `...`), run it, then run the check: ✓ means right; ✗ comes
# with a hint. The checks compute the right answer from the data in the task.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Which acknowledged writes are lost?
#
# The old leader's log is `OLD_LOG` (offset = position). The producer was told "ok" for the values in
# `ACKNOWLEDGED` (not `x-5`: its acks=all request timed out). The follower had `FOLLOWER_LEO` records when it
# was cut off; it is elected (unclean) and then writes `WRITTEN_AFTER`. Which acknowledged values are lost?
# Answer with a list of the values (`b"x-..."`).

# %%
OLD_LOG = [b"x-0", b"x-1", b"x-2", b"x-3", b"x-4", b"x-5", b"x-6"]
ACKNOWLEDGED = [b"x-0", b"x-1", b"x-2", b"x-3", b"x-4", b"x-6"]
FOLLOWER_LEO = 4
WRITTEN_AFTER = [b"y-0", b"y-1"]

# %% tags=["solution"]
new_log = OLD_LOG[:FOLLOWER_LEO] + WRITTEN_AFTER
lost_answer = [v for v in ACKNOWLEDGED if v not in new_log]

# %%
lab13.check_lost_values(lost_answer, OLD_LOG, ACKNOWLEDGED, FOLLOWER_LEO, WRITTEN_AFTER)

# %% [markdown] tags=["solution"]
# (Offsets 4 and 5 now hold `y-0` and `y-1`: a consumer that had read offset 4 from the old leader would see a
# different value there now — Jepsen's *inconsistent offsets*.)

# %% [markdown]
# ### Exercise 2 · What does each setting buy?
#
# For each case, under this lab's faults, give a dict with the three keys of `lab13.setting_outcome` (a list of
# four dicts, one per case, in the order of `CASES`):
# `"acknowledged writes lost"` (bool), `"writes refused while cut off"` (bool) and `"after the leader dies"`
# (`"a follower leads, writes go on"`, `"a follower leads, writes refused"` or
# `"offline until the old leader returns"`).

# %%
CASES = [
    {"acks": 1, "min_insync_replicas": 2, "unclean": True, "replication_factor": 3},
    {"acks": "all", "min_insync_replicas": 1, "unclean": True, "replication_factor": 3},
    {"acks": "all", "min_insync_replicas": 3, "unclean": True, "replication_factor": 3},
    {"acks": "all", "min_insync_replicas": 1, "unclean": False, "replication_factor": 3},
]

# %% tags=["solution"]
settings_answer = [
    {"acknowledged writes lost": True, "writes refused while cut off": False,
     "after the leader dies": "a follower leads, writes go on"},
    {"acknowledged writes lost": True, "writes refused while cut off": False,
     "after the leader dies": "a follower leads, writes go on"},
    {"acknowledged writes lost": False, "writes refused while cut off": True,
     "after the leader dies": "a follower leads, writes refused"},
    {"acknowledged writes lost": False, "writes refused while cut off": False,
     "after the leader dies": "offline until the old leader returns"},
]

# %%
lab13.check_setting_outcomes(settings_answer, CASES)

# %% [markdown]
# ### Exercise 3 · ok, fail or info?
#
# A history needs each send ended as `"ok"` (it happened), `"fail"` (it certainly did not) or `"info"`
# (unknown). Classify what a producer got back — an offset, or an error name.

# %%
OUTCOMES = [17, "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "_MSG_TIMED_OUT"]

# %% tags=["solution"]
classify_answer = ["ok", "fail", "info", "info", "info"]

# %%
lab13.check_classification(classify_answer, OUTCOMES)

# %% [markdown] tags=["solution"]
# (Error 20 comes *after* the append: the record is in the leader's log and may well be read later. Calling it
# `fail` would make the checker report an aborted read when it turns up.)

# %% [markdown]
# ## Recap
#
# * A run is judged by its **history**: what clients were told (`ok` / `fail` / `info`) and what a reader found.
#   Only definite errors are `fail`; a timeout is `info`, and an `info` is neither lost nor wrongly read.
# * Jepsen 2013: the ISR shrank to the leader alone, `acks=1` (or `acks=all` with min ISR 1) kept
#   acknowledging, the leader died, an out-of-sync follower was elected — every write acknowledged in that
#   window was **lost**, and the checker named their offsets. The controller logs no warning for that election:
#   an operator sees it in the meter `UncleanLeaderElectionsPerSec` (and a partition left without a leader in
#   `OfflinePartitionsCount`).
# * `min.insync.replicas=2` + `acks=all`: the same faults give **NOT_ENOUGH_REPLICAS** refusals, no losses.
# * Unclean election off: no out-of-sync leader, so no losses — the partition is **offline** until an ISR member
#   returns.
# * RF=3, min ISR 2, acks=all, unclean off, idempotence on: survives one broker, refuses rather than loses, and
#   retries without duplicates.
