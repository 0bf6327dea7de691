# Source of labs/09_controller.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 09
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 09 · The controller and inter-broker traffic
#
# Every lab so far has relied on someone deciding which broker leads each partition, and telling every broker
# about it so that any of them can answer a Metadata request. That someone is the **controller**: one broker of
# the cluster, chosen through the coordination store (ZooKeeper), that watches the brokers come and go, elects
# partition leaders, writes its decisions to the store, and then sends them to the brokers as ordinary Kafka
# requests. This lab opens the store, taps the controller's connections, and kills brokers — including the
# controller itself — to watch it work.
#
# (What you see is the ZooKeeper-era design, the one most of the course material describes. Kafka 4 removed
# it: there the controller is a small **quorum** of controller nodes running Raft (**KRaft**), and the cluster
# metadata is a replicated **log** (`__cluster_metadata`) that brokers fetch, instead of znodes plus
# LeaderAndIsr/UpdateMetadata pushes. The questions the controller answers are the same.)
#
# **By the end of this lab you can**
#
# 1. read the controller's znodes: `/brokers/ids`, `/controller`, `/controller_epoch`, partition `state`;
# 2. explain how one controller is elected through an ephemeral znode, and what the controller epoch is for;
# 3. recognise LeaderAndIsr and UpdateMetadata in a broker's request log, and read their bodies;
# 4. show that even a single broker receives them — from itself, over its inter-broker listener;
# 5. follow a broker failure and a controller failover step by step, from session expiry to new leaders.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C13** even one broker talks to itself | a one-broker cluster's request log: `client_id="0"` on its own listener | 1 |
# | **C15** one active controller, elected through the store; others stand by | `/controller`, `/controller_epoch`, a failover | 2, 6 |
# | **C16** cluster metadata: live brokers, leaders, topics, replica placement | the znodes and the UpdateMetadata body | 2, 3 |
# | **C7** every broker's metadata cache, kept current by UpdateMetadata | the caches after each change | 3, 4, 6 |
# | **C11** inter-broker traffic: store ↔ brokers, broker ↔ broker | sessions and watches; the controller's channels | 3, 4 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka, 3.x) |
# |---|---|---|
# | the coordination store and Kafka's paths | `kafkalab/zk/store.py`, `kafkalab/zk/client.py` | `KafkaZkClient.scala`, `ZkData.scala` |
# | election, failover, broker changes | `kafkalab/controller/controller.py`, `election.py` | `KafkaController.scala`, `PartitionStateMachine.scala` |
# | one channel per broker | `kafkalab/controller/channel_manager.py` | `ControllerChannelManager.scala` |
# | the receiving side | `kafkalab/server/apis/controller_requests.py`, `metadata_cache.py` | `KafkaApis.handleLeaderAndIsrRequest`, `handleUpdateMetadataRequest` |
# | the tap, tables, pictures, checks | `kafkalab/labs/lab09.py` | — |

# %%
import pandas as pd
from IPython.display import display

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.labs import evidence, lab09
from kafkalab.viz import ClusterDashboard

pd.set_option("display.max_colwidth", 120)
broker_log = BrokerLog().install()          # the brokers' warnings (killed brokers make some) go to a list
loop_log = BrokerLog("asyncio").install()  # ... and those of the cluster's event loop (tasks of killed brokers)
TOPIC = lab09.TOPIC

# %% [markdown]
# ## 1 · One broker talks to itself
#
# Start with the smallest cluster there is: a single broker, id 0. It is necessarily the controller. Does it
# still send requests? Look at what its own request log has received right after start-up:

# %%
solo = Cluster(brokers=1, overrides=lab09.OVERRIDES).start()
lab09.wait_until_quiet(solo)               # until the controller's first requests have been answered
print("controller:", solo.controller_id)
pd.DataFrame(lab09.controller_requests(solo))

# %% [markdown]
# One **UpdateMetadata** already: the controller (in broker 0) told broker 0 which brokers are alive. It did
# not call a function — it opened a TCP connection to the broker's **inter-broker listener** (here the only
# listener, `PLAINTEXT`), exactly as it would to another machine. The request header carries
# `client_id="0"`, the controller's broker id, and the connection numbers its requests from correlation id 0.
#
# Now create a topic with one partition on broker 0:

# %%
lab09.create_topic(solo, "solo", {0: [0]})
lab09.wait_until_quiet(solo)
pd.DataFrame(lab09.controller_requests(solo))

# %% [markdown]
# Two more requests on the same connection (correlation ids 1 and 2): **LeaderAndIsr** ("you lead `solo-0`,
# the ISR is [0]": the broker creates the log and starts serving it) and **UpdateMetadata** (the new partition,
# for the metadata cache that answers clients). A lone broker follows the same path as a large cluster;
# that is why a broker whose inter-broker listener is misconfigured (or whose ACLs refuse the controller's
# principal, `User:ANONYMOUS` on a PLAINTEXT listener: lab 12) cannot even bring its own partitions online.

# %%
solo.stop()

# %% [markdown]
# ## 2 · Three brokers, one controller
#
# Now three brokers, 0, 1 and 2, sharing one coordination store. Each broker, at start-up, registers itself
# under `/brokers/ids` and then tries to create `/controller`. Both znodes are **ephemeral**: they belong to
# the broker's session with the store and vanish when that session ends. Only one create of `/controller` can
# succeed; the brokers that lose keep a *watch* on it and stand by.

# %%
cluster = Cluster(brokers=3, overrides=lab09.OVERRIDES).start()
print(lab09.zk_tree(cluster))

# %% [markdown]
# The cluster's live dashboard. The first line names the controller: the broker whose session owns
# `/controller` and that knows it is active. Below, once the topic exists, each partition's leader, leader epoch
# and ISR. It redraws by itself while the cells below run — in sections 4 to 6 a broker dies, comes back, and
# then the controller itself dies. (Opened without running, the notebook shows a note here instead.)

# %%
dashboard = ClusterDashboard(cluster, sections=("brokers", "partitions"))
dashboard

# %% [markdown]
# Reading the tree (ports, session ids, the timestamp in `/controller` and the random `/cluster/id` are left
# out):
#
# * `/brokers/ids/<id>` — one ephemeral znode per **live** broker, with its listeners. This is the list of
#   live brokers; the controller watches its children.
# * `/controller` — ephemeral, owned by the winner's session; its data names the controller's broker id.
# * `/controller_epoch` — persistent, a counter raised by one at **every** election. The controller stamps
#   it on each request and on each write to partition states, so that brokers (and the store) can refuse a
#   deposed controller that has not noticed yet (a "zombie").
#
# Which brokers are active controllers, according to the brokers themselves? Each broker publishes it as a
# gauge, `kafka.controller:type=KafkaController,name=ActiveControllerCount`: 1 on the active controller, 0 on
# the others. Monitoring adds it up over the cluster and raises an alarm when the sum is not 1.

# %%
active = cluster.call(lambda: {b: s.metrics()["ActiveControllerCount"] for b, s in sorted(cluster.brokers.items())})
print("ActiveControllerCount per broker:", active)
evidence("One controller", {"the gauges add up to 1: one active controller": sum(active.values()) == 1,
                            "it is the broker named in /controller":
                                cluster.controller_id == [b for b, a in active.items() if a][0]})

# %% [markdown]
# ## 3 · A topic, and what the controller sends
#
# We create `orders` with three partitions and three replicas each, with a fixed assignment (the first
# replica of each list is the preferred leader, so every broker leads one partition — the same layout as lab 04).
# Before that we clear the brokers' request logs and install a **tap** on the controller's channel manager: it
# wraps each channel's `connection.send` and keeps the request bodies (the brokers' logs keep only headers).

# %%
lab09.wait_until_quiet(cluster)            # the start-up requests are all answered: nothing else in flight
tap = lab09.ControllerTap(cluster)
for b in cluster.brokers.values():
    b.channel.request_log.clear()
lab09.create_topic(cluster, TOPIC, lab09.ASSIGNMENT)
lab09.wait_until_quiet(cluster)
received = lab09.controller_requests(cluster, correlation_ids=False)
pd.DataFrame(received)

# %% [markdown]
# Each broker got one LeaderAndIsr and one UpdateMetadata, all with `client_id="0"`, on its inter-broker
# listener — broker 0, the controller's own broker, included. Each channel has its own correlation ids (they
# continue from the start-up requests, whose number depends on the order the brokers joined, so we only check
# that they go up by one on every connection):

# %%
def consecutive(broker_id):
    ids = [r.correlation_id for r in cluster.broker(broker_id).channel.request_log.records
           if r.api_key in lab09.CONTROLLER_APIS]
    return ids == list(range(ids[0], ids[0] + len(ids)))

evidence("One request at a time", {"correlation ids are consecutive on every channel":
                                        all(consecutive(b) for b in cluster.brokers)})

# %% [markdown]
# What was inside? The tap decoded the bodies (LeaderAndIsr v6, UpdateMetadata v7, the versions of Kafka
# 3.2-3.3; from 3.4 a ZooKeeper-mode controller sends v7 and v8, which only add the fields of the migration to
# KRaft, KIP-866). Here is what broker 1 was told:

# %%
bodies = lab09.body_rows(tap.sent)
pd.DataFrame([r for r in bodies if r["to"] == "broker 1"])

# %% [markdown]
# * **LeaderAndIsr** goes to the brokers that hold a replica of the partitions concerned: "for `orders-0` the
#   leader is 1, leader epoch 0, ISR [1, 2, 0]". Broker 1 becomes leader of `orders-0` and a follower of the
#   two others (it starts fetching from brokers 2 and 0, lab 08).
# * **UpdateMetadata** goes to **every** live broker and carries the same states plus the list of live brokers
#   (with their endpoints): it is what fills each broker's metadata cache, from which any broker answers a
#   client's Metadata request (lab 04).
# * Both carry `controller_epoch` 1: this controller's election number.

# %%
evidence("One picture for everyone", {"every broker was told the same UpdateMetadata states":
    len({tuple((r["partition"], r["leader"], r["leader_epoch"], tuple(r["isr"])) for r in bodies
               if r["to"] == f"broker {b}" and r["request"].startswith("UpdateMetadata")) for b in range(3)}) == 1})

# %% [markdown]
# The states are also in the store, written *before* the requests were sent:

# %%
print(lab09.zk_tree(cluster))

# %% [markdown]
# The picture: the controller lives *inside* one broker, and keeps one channel — a queue, a sender task and a
# connection — to every live broker's inter-broker listener, its own included. All brokers keep a session with
# the store (heartbeats; their ephemeral znodes live as long as it does).

# %% tags=["figure:controller_channels"]
lab09.channels_diagram(cluster, title="The controller's channels")

# %% [markdown]
# And the result, in every broker's metadata cache:

# %%
pd.DataFrame(lab09.cache_rows(cluster)).set_index("broker")

# %% [markdown]
# ## 4 · A broker dies, as the controller sees it
#
# We kill broker 2 (not the controller) abruptly. Its sockets drop and its session with the store expires.
# Everything the controller learns, it learns from the store, so let us read the store's event log from this
# moment on:

# %%
tap.clear()
since = cluster.call(lambda: cluster.zk_store.last_zxid)
cluster.kill(2)
cluster.wait_until(lambda: all(lab09.cache_rows(cluster)[i]["leaders"] == {0: 1, 1: 0, 2: 0} for i in range(2))
                   and all(len(b.metadata_cache.partition_state(TOPIC, p).isr) == 2 for p in range(3)
                           for b in cluster.brokers.values() if b.is_running), 15, "no new leaders")
lab09.wait_until_quiet(cluster)
pd.DataFrame(lab09.zk_events(cluster, since))

# %% [markdown]
# 1. The session of broker 2 **expires** (nobody heard its heartbeats), so the store deletes its ephemeral
#    `/brokers/ids/2`.
# 2. The controller's **watch** on `/brokers/ids` fires (`NodeChildrenChanged`): broker 2 is gone.
# 3. The controller elects a new leader for `orders-1`, which broker 2 led: the first replica in assignment
#    order ([2, 0, 1]) that is alive and in the ISR — broker 0. It removes broker 2 from the ISR of the other
#    partitions (their leaders stay). Each change is a conditional **set** of a `state` znode.
#
# Then it tells the survivors:

# %%
pd.DataFrame(lab09.body_rows(tap.sent))

# %% [markdown]
# Every leader epoch went up by one (0 → 1): the partition state changed, and a follower or client holding
# epoch 0 now knows its news is older. No request went to broker 2: its channel was removed along with it.
# The store agrees:

# %%
print("requests sent to broker 2:", sum(1 for _, to, *_ in tap.sent if to == 2))
print(lab09.zk_tree(cluster))

# %% tags=["figure:after_broker_death"]
lab09.channels_diagram(cluster, title="After broker 2 died", dead=[2])

# %% [markdown]
# ## 5 · The broker comes back
#
# Restart broker 2: it registers again under `/brokers/ids`, the controller's watch fires, and the newcomer
# receives UpdateMetadata (so it can answer clients) and LeaderAndIsr (it is a follower of every partition:
# leadership does not move back when it returns). It catches up and its leaders add it back to the ISR. (Kafka
# hands `orders-1` back to its preferred leader later: with `auto.leader.rebalance.enable=true`, the default,
# the controller checks every `leader.imbalance.check.interval.seconds`, 300 s, and runs a preferred election
# once more than `leader.imbalance.per.broker.percentage`, 10 %, of a broker's preferred partitions are led
# elsewhere. kafkalab does not run that task; an ElectLeaders request does the same by hand.)

# %%
tap.clear()
cluster.restart(2)
tap.refresh()
cluster.wait_until(lambda: all(len(cluster.partition_state(TOPIC, p)["isr"]) == 3 for p in range(3)), 15,
                   "broker 2 did not rejoin the ISRs")
lab09.wait_until_quiet(cluster)
display(evidence("The restarted broker is told", {
    "broker 2 received LeaderAndIsr": any(to == 2 and k == 4 for _, to, k, *_ in tap.sent),
    "broker 2 received UpdateMetadata": any(to == 2 and k == 6 for _, to, k, *_ in tap.sent)}))
pd.DataFrame([{"partition": p, **{k: v for k, v in cluster.partition_state(TOPIC, p).items() if k != "logs"}}
              for p in range(3)]).set_index("partition")

# %% [markdown]
# ## 6 · The controller dies
#
# Now kill the controller itself. Its session expires, so `/controller` vanishes; the watches of the two
# standing-by brokers fire and both try to create it. One wins (which one depends on timing, so we do not print
# it) and raises `/controller_epoch`. It reads the whole state from the store, sends UpdateMetadata to
# everyone, and elects new leaders for the partitions the old controller's broker led.
#
# The dashboard again (the same live view as in section 2): run the next cell and watch the controller's chip
# go down, the first line say "none (election under way)" for a moment, then name another broker, and the
# leaders of the dead broker's partitions move with a higher leader epoch.

# %%
dashboard

# %%
old_controller, old_epoch = cluster.controller_id, lab09.controller_epoch(cluster)
tap.clear()
cluster.kill(old_controller)
cluster.wait_until(lambda: cluster.controller_id not in (-1, old_controller), 15, "no new controller")
new_controller = cluster.controller_id
cluster.wait_until(lambda: all(r["controller"] == new_controller and old_controller not in r["live brokers"]
                               and old_controller not in r["leaders"].values()
                               for r in lab09.cache_rows(cluster)), 15, "caches not updated")
lab09.wait_until_quiet(cluster)
new_epoch = lab09.controller_epoch(cluster)
evidence(f"Controller failover (controller epoch {old_epoch} -> {new_epoch})", {
    "a different broker holds /controller": new_controller != old_controller,
    "the controller epoch went up": new_epoch > old_epoch,
    "every broker's cache names the new controller":
        all(r["controller"] == new_controller for r in lab09.cache_rows(cluster)),
    "every controller request since the kill came from the new controller":
        all(sender == new_controller for sender, *_ in tap.sent),
    "each running broker logged its latest one with client_id = the new controller's id":
        all(lab09.controller_requests(cluster, brokers=[b])[-1]["client_id"] == str(new_controller)
            for b, s in cluster.brokers.items() if s.is_running),
})

# %% [markdown]
# The partitions, as the new controller wrote them — the same result whichever broker won:

# %%
rows = []
for p in range(3):
    s = cluster.partition_state(TOPIC, p)
    rows.append({"partition": p, "replicas": s["replicas"], "leader": s["leader"], "leader_epoch": s["leader_epoch"],
                 "isr": s["isr"], "sent with the new controller epoch": all(
                     r["controller_epoch"] == new_epoch for r in lab09.body_rows(tap.sent)
                     if r["partition"] == f"{TOPIC}-{p}")})
pd.DataFrame(rows).set_index("partition")

# %% [markdown]
# Why the epoch matters: suppose the old controller had not died but only *stalled* (a long GC pause) and
# lost its session. It wakes up still believing it is the controller and sends a LeaderAndIsr stamped
# with epoch 1. Every broker has already seen epoch 2 and refuses it with **STALE_CONTROLLER_EPOCH**; and its
# writes to the store are conditional on the version of `/controller_epoch`, which has moved. The zombie can
# do no harm (exercise 3).

# %%
cluster.stop()
dashboard.stop()                            # it stops with the cluster; this waits until its thread has ended

# %% [markdown]
# ## Exercises
#
# Write your answer in the answer cell (replace the `...`), run it, then run the check: ✓ means right; ✗ comes
# with a hint. The checks compute the right answer from the data in the task.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Read the store
#
# A dump of some znodes of another cluster (data already decoded). Which broker is the controller, what is
# the controller epoch, and which brokers are alive (a sorted list)?

# %%
ex1_znodes = {
    "/brokers/ids/4": {"host": "kafka-d", "port": 9092},
    "/brokers/ids/7": {"host": "kafka-g", "port": 9092},
    "/brokers/ids/9": {"host": "kafka-i", "port": 9092},
    "/brokers/topics/payments": {"partitions": {"0": [4, 5, 7], "1": [5, 7, 9]}},
    "/controller": {"version": 2, "brokerid": 7},
    "/controller_epoch": 12,
}

# %% tags=["solution"]
ex1_answer = {"controller": 7, "controller_epoch": 12, "live_brokers": [4, 7, 9]}

# %%
lab09.check_zk_reading(ex1_answer, ex1_znodes)

# %% [markdown]
# ### Exercise 2 · Be the controller
#
# The partition states of a topic before broker 3 fails (`replicas` in assignment order). Give, for each
# partition, the leader and the ISR the controller writes afterwards, as `(leader, isr)`; keep the ISR's order.

# %%
ex2_states = {
    0: {"replicas": [3, 1, 2], "leader": 3, "isr": [3, 1, 2]},
    1: {"replicas": [1, 2, 3], "leader": 1, "isr": [1, 3]},
    2: {"replicas": [2, 3, 1], "leader": 3, "isr": [3, 1]},
}

# %% tags=["solution"]
ex2_after = {0: (1, [1, 2]), 1: (1, [1]), 2: (1, [1])}

# %%
lab09.check_failover(ex2_after, ex2_states, dead=3)

# %% [markdown]
# ### Exercise 3 · Fence the zombie
#
# A broker has seen controller epoch 8. These controller requests reach it, each with the controller epoch in
# its body. Which does it refuse with STALE_CONTROLLER_EPOCH? Give the set of names.

# %%
ex3_requests = {"LeaderAndIsr from broker 2": 7, "UpdateMetadata from broker 5": 8,
                "UpdateMetadata from broker 2": 7, "LeaderAndIsr from broker 5": 9}

# %% tags=["solution"]
ex3_refused = {"LeaderAndIsr from broker 2", "UpdateMetadata from broker 2"}

# %%
lab09.check_stale_requests(ex3_refused, ex3_requests, highest_seen=8)

# %% [markdown]
# ## Recap
#
# * One broker is the controller: the one whose session owns the ephemeral `/controller` znode. The others
#   watch it and take over when it vanishes; each election raises `/controller_epoch` (C15).
# * Live brokers are the ephemeral `/brokers/ids/<id>` znodes; partition assignments and states
#   (leader, leader epoch, ISR, controller epoch) are persistent znodes: the cluster metadata (C16).
# * The controller sends its decisions as requests over each broker's inter-broker listener, one channel per
#   broker with `client_id` = its broker id and its own correlation ids — to its own broker too, even alone (C11, C13).
# * LeaderAndIsr tells replicas their role; UpdateMetadata fills every broker's metadata cache, from which
#   clients are answered (C7).
# * A broker failure: session expiry → `/brokers/ids` watch → new leaders from the ISR, higher leader epochs →
#   LeaderAndIsr + UpdateMetadata. A controller failure: a new election with a higher epoch fences the old one.
# * Kafka 4 replaced all of this with KRaft: a Raft quorum of controllers and a metadata log the brokers
#   replicate. Next: lab 10 (consumer groups); lab 12 authenticates the inter-broker listener and shows what
#   happens when the authorizer refuses the controller (CLUSTER_AUTHORIZATION_FAILED).
