# Source of labs/04_metadata_routing.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 04
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 04 · Metadata and routing
#
# A producer configured with a single address ends up writing to three brokers, each record to the one broker
# that leads its partition. Nobody gave it a map: it asked for one. This lab looks at that map — the
# **Metadata** response — field by field, at the copy every client keeps of it, and at what happens when the map
# is wrong because leadership moved after the client read it.
#
# **By the end of this lab you can**
#
# 1. explain why `bootstrap.servers` needs only one reachable broker, and what the first request is for;
# 2. read a Metadata response: brokers, controller, and for every partition its leader, leader epoch, replicas
#    and ISR;
# 3. turn that response into the client's routing table (partition → leader → connection);
# 4. create topics with the admin client, and say when a Metadata request creates one by itself;
# 5. use the admin client for more than topics: describe the cluster, read and change configs, add
#    partitions, delete records, list groups — and say which broker each request goes to;
# 6. watch a client refresh its metadata by age (`metadata.max.age.ms`), with nothing wrong;
# 7. follow the refresh-and-retry after `NOT_LEADER_OR_FOLLOWER` (error 6) in a client trace.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C6** the client bootstraps, asks any broker for metadata, refreshes it periodically | one address in, three brokers out; a refresh every `metadata.max.age.ms` on the wire | 1, 2, 6 |
# | **C41** any broker answers; clients cache and refresh (`metadata.max.age.ms`) | the same answer from every broker; the producer's cache | 2, 5 |
# | **C23** topics created by tools or automatically on a metadata request | `allow_auto_topic_creation`; `auto.create.topics.enable` | 3 |
# | **C35** the admin client | CreateTopics, DescribeCluster, Describe/IncrementalAlterConfigs, CreatePartitions, DeleteRecords, ListGroups | 3, 4 |
# | **C40** Produce must go to the leader, otherwise NOT_LEADER_OR_FOLLOWER | a stale cache after a failover | 7 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | the client's cache and its refresh rules | `kafkalab/clients/metadata.py` | `clients/.../Metadata.java`, `common/Cluster.java` |
# | the admin client | `kafkalab/clients/admin.py`, `admin_configs.py`, `admin_groups.py` | `clients/.../admin/KafkaAdminClient.java` |
# | the broker's answer | `kafkalab/server/apis/metadata.py`, `kafkalab/server/metadata_cache.py` | `KafkaApis.handleTopicMetadataRequest`, `MetadataCache` |
# | the error that sends the client back | `kafkalab/server/replica_manager.py` | `ReplicaManager.appendRecords` |
# | helpers, pictures, checks | `kafkalab/labs/lab04.py` | — |

# %%
import pandas as pd
from IPython.display import display

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.clients import Admin, NewTopic, Producer
from kafkalab.labs import evidence, lab04
from kafkalab.viz import ClusterDashboard

pd.set_option("display.max_colwidth", 120)
broker_log = BrokerLog().install()           # the brokers' warnings (a killed broker makes some) go to a list
TOPIC = lab04.TOPIC

# %% [markdown]
# ## 1 · Three brokers, one address
#
# We start a cluster of three brokers (ids 0, 1, 2) sharing one coordination store — the ZooKeeper-era
# architecture that lab 09 opens up. Each broker listens on its own port. Then we create the topic `orders`
# with three partitions and three replicas each, and we decide where the replicas go: the first replica of each
# list is the partition's *preferred* leader, so every broker leads one partition.

# %%
cluster = Cluster(brokers=3, overrides=lab04.OVERRIDES).start()
lab04.create_topic(cluster, TOPIC, lab04.ASSIGNMENT)
print("brokers running:", sorted(b for b, s in cluster.brokers.items() if s.is_running))
print("replica assignment:", lab04.ASSIGNMENT)

# %% [markdown]
# The cluster's live dashboard: the brokers (and which one is the controller), and for each partition of
# `orders` its leader, leader epoch, replicas and ISR, as the brokers hold them right now. It redraws by itself
# while the cells below run; watch it in section 7, when a leader dies. (Opened without running, the notebook
# shows a note here instead.)

# %%
dashboard = ClusterDashboard(cluster, sections=("brokers", "partitions"))
dashboard

# %% [markdown]
# A client is configured with `bootstrap.servers`, a list of `host:port`. The list is **not** the cluster:
# it is only where to ask. One live entry is enough; more entries only help when some of them are down. We give
# our clients the address of broker 0 and nothing else.
#
# The first thing a client sends there (after ApiVersions, lab 02) is a **MetadataRequest**: "which brokers
# are there, and who leads the partitions of these topics?". Here it is, sent by hand on a bare socket:

# %%
first_address = cluster.broker(0).bootstrap_servers
response = lab04.metadata_request(first_address, [TOPIC])
print("cluster_id is set:", response.cluster_id is not None, "| controller_id:", response.controller_id)
pd.DataFrame(lab04.brokers_table(response, cluster)).set_index("node_id")

# %% [markdown]
# We asked one broker and learned all three, with their addresses: from now on the client can connect to any
# of them directly. (We compare the ports with the brokers' listeners instead of printing them: they are picked
# at random each time the cluster starts.) The response also names the **controller**, the broker that manages
# leadership for the whole cluster (lab 09).
#
# ## 2 · The partitions: leader, replicas, ISR, leader epoch

# %%
pd.DataFrame(lab04.partitions_table(response, TOPIC)).set_index("partition")

# %% [markdown]
# * `leader` — the only broker that accepts Produce (and, by default, Fetch) for this partition.
# * `replicas` — every broker that keeps a copy, in assignment order; the first is the preferred leader.
# * `isr` — the in-sync replicas: those caught up with the leader (lab 08). A new leader is chosen from them.
# * `leader_epoch` — a counter that goes up each time the leader changes. A client that sees an epoch lower
#   than the one it already has knows the answer came from a broker with older news, and ignores it.
#
# Every broker can answer this request, because every broker keeps a **metadata cache** that the controller
# keeps filled (with UpdateMetadata requests, lab 09). Ask the other two brokers the same question:

# %%
answers = {b: lab04.partitions_table(lab04.metadata_request(cluster.broker(b).bootstrap_servers, [TOPIC]), TOPIC)
           for b in sorted(cluster.brokers)}
evidence("Any broker can answer", {"all three brokers give the same partitions": answers[0] == answers[1] == answers[2]})

# %% [markdown]
# ## 3 · Where topics come from
#
# Topics are made by tools and admin clients (`kafka-topics.sh`, `Admin.create_topics`), which send a
# **CreateTopics** request. With only a partition count and a replication factor the broker spreads the
# replicas itself (round-robin from a random starting broker, so we print only the shape):

# %%
with Admin({"bootstrap.servers": first_address}) as admin:
    admin.create_topics([NewTopic("clicks", num_partitions=6, replication_factor=2)])
    cluster.wait_until(lambda: cluster.broker(0).metadata_cache.partition_count("clicks") == 6)
clicks = lab04.partitions_table(lab04.metadata_request(first_address, ["clicks"]), "clicks")
print("partitions:", len(clicks), "| replicas per partition:", {len(r["replicas"]) for r in clicks})
evidence("Leadership is spread", {"every broker leads some partition of clicks": sorted({r["leader"] for r in clicks}) == [0, 1, 2]})

# %% [markdown]
# There is a second way, older and often regretted: with `auto.create.topics.enable=true` — Kafka's default,
# on ZooKeeper-era brokers and in KRaft mode alike (a KRaft broker forwards the creation to the controller as
# a CreateTopics request) — a Metadata request that names an unknown topic and sets `allow_auto_topic_creation`
# **creates** it, with `num.partitions` partitions (2 on our brokers) and `default.replication.factor` replicas.
# A typo in a producer's topic name becomes a new topic. The first answer may say `LEADER_NOT_AVAILABLE`
# while the new partitions get their leaders; clients simply ask again.

# %%
before = lab04.metadata_request(first_address, ["typo-topic"], allow_auto_topic_creation=False)
print("allow_auto_topic_creation=False ->", lab04.error_name(before.topics[0].error_code))
lab04.metadata_request(first_address, ["typo-topic"], allow_auto_topic_creation=True)
cluster.wait_until(lambda: cluster.broker(0).metadata_cache.partition_count("typo-topic") == 2)
after = lab04.metadata_request(first_address, ["typo-topic"])
print("allow_auto_topic_creation=True  -> the topic now exists with",
      len(after.topics[0].partitions), "partitions, error", lab04.error_name(after.topics[0].error_code))
print("auto.create.topics.enable on broker 0:", cluster.broker(0).config["auto.create.topics.enable"],
      "(not set by this lab: the default)")

# %% [markdown]
# ## 4 · The admin client: more than creating topics
#
# `kafka-topics.sh`, `kafka-configs.sh`, `kafka-delete-records.sh` and `kafka-consumer-groups.sh` are thin
# shells around one **admin client** (Java's `Admin`; `kafkalab.clients.Admin` here), and every one of its
# operations is one kind of request. The interesting part is *where* each request goes: some go to any broker,
# some must reach the controller, the leader of a partition or a group's coordinator. One admin client, with
# `trace=True`, doing seven things:

# %%
from kafkalab.clients import ConfigResource, TopicPartition

with Producer({"bootstrap.servers": first_address, "client.id": "lab04-loader", "enable.idempotence": False}) as loader:
    for i in range(10):                                      # ten records in clicks-0, for DeleteRecords
        loader.send("clicks", b"click %d" % i, partition=0)
    loader.flush(10)

clicks_config = ConfigResource("topic", "clicks")
with Admin({"bootstrap.servers": first_address, "client.id": "lab04-admin"}, trace=True) as admin:
    described = admin.describe_cluster()                                         # DescribeCluster
    before_configs = admin.describe_configs([clicks_config])[clicks_config]      # DescribeConfigs
    admin.incremental_alter_configs({clicks_config: {"retention.ms": "3600000"}})  # IncrementalAlterConfigs
    after_configs = admin.describe_configs([clicks_config])[clicks_config]
    admin.create_partitions({"clicks": 8})                                       # CreatePartitions
    low_watermarks = admin.delete_records({TopicPartition("clicks", 0): 4})       # DeleteRecords
    admin.alter_consumer_group_offsets("lab04-readers", {TopicPartition("clicks", 0): 6})  # OffsetCommit
    groups = admin.list_consumer_groups()                                        # ListGroups
    admin_events = list(admin.trace.events)

print("DescribeCluster: controller", described.controller_id, "| brokers", sorted(described.brokers),
      "| cluster id set:", described.cluster_id is not None)
display(pd.DataFrame(lab04.config_rows(before_configs, ["retention.ms", "cleanup.policy"]) +
                     lab04.config_rows(after_configs, ["retention.ms"]),
                     index=["before", "before", "after IncrementalAlterConfigs"]))
cluster.wait_until(lambda: cluster.broker(0).metadata_cache.partition_count("clicks") == 8)
print("CreatePartitions: clicks has", cluster.broker(0).metadata_cache.partition_count("clicks"), "partitions")
print("DeleteRecords: clicks-0 now starts at offset", low_watermarks[TopicPartition("clicks", 0)])
print("ListGroups:", [(g.group_id, g.state) for g in groups])

# %% [markdown]
# The same operations on the wire: each kind of request the admin client sent (leaving out ApiVersions and
# Metadata), where it has to go, and whether every one of them went there. (The leader of `clicks-0` and the
# group's coordinator are placed at random, so the table names roles, not broker ids.)

# %%
leader_of_clicks_0 = cluster.partition_state("clicks", 0)["leader"]
pd.DataFrame(lab04.requests_rows(admin_events, {
    "CreatePartitions": ("the controller", [described.controller_id]),
    "DeleteRecords": ("the leader of clicks-0", [leader_of_clicks_0]),
    "OffsetCommit": ("the coordinator of lab04-readers", [lab04.coordinator_of(cluster, "lab04-readers")]),
    "ListGroups": ("every broker", None),
}, brokers=sorted(cluster.brokers))).set_index("request")

# %% [markdown]
# * **DescribeCluster**, **DescribeConfigs** of a topic and **IncrementalAlterConfigs** go to any broker (the
#   least loaded one it knows): every broker can answer them and pass a topic's config change on through the
#   coordination store. The config's *source* changed from `DEFAULT_CONFIG` to `DYNAMIC_TOPIC_CONFIG`.
# * **CreatePartitions** (like CreateTopics and DeleteTopics) must reach the **controller**: the admin client
#   asks Metadata for its id first. A topic's partition count only grows; records already written keep their
#   partition, but new keys may hash to other partitions from now on.
# * **DeleteRecords** goes to the partition's **leader**, which moves the log start offset (the *low
#   watermark*) to 4: offsets 0-3 can no longer be read, and the segments below it go at the next retention
#   pass.
# * Committing offsets for a group goes to the group's **coordinator**, found with **FindCoordinator**;
#   **ListGroups** goes to *every* broker, since each coordinates its own share of the groups.

# %% [markdown]
# ## 5 · The client's cache and its routing table
#
# A producer does what sections 1 and 2 did by hand on its own: it bootstraps, asks for Metadata, and
# `kafkalab.clients.Producer` keeps the answer in a `Metadata` object (`kafkalab/clients/metadata.py`) and
# exposes the current snapshot as `producer.metadata`. `trace=True` keeps every request it sends.

# %%
producer = Producer({"bootstrap.servers": first_address, "client.id": "lab04-producer", "acks": "all",
                     "enable.idempotence": False, "metadata.max.age.ms": 300_000}, trace=True)
producer.partitions_for(TOPIC)                       # forces the first Metadata request
view = producer.metadata
print("brokers the producer knows:", sorted(view.brokers), "| controller:", view.controller_id)
pd.DataFrame(lab04.routing_table(view, TOPIC)).set_index("partition")

# %% [markdown]
# That table is the **routing table**: the producer's sender groups the records waiting in its accumulator by
# the leader of their partition and sends *one* Produce per broker. Nothing is proxied: a broker that
# receives a record for a partition it does not lead refuses it. The picture:

# %% tags=["figure:view_before"]
lab04.cluster_diagram(view, TOPIC, title="The producer's view: before")

# %% [markdown]
# The cache is refreshed in three situations: every `metadata.max.age.ms` (5 minutes by default) even when
# all is well; when the application sends to a topic the cache does not have yet; and — the interesting
# one — when a broker's answer says the cache is wrong. The first one first.
#
# ## 6 · Refreshing by age: `metadata.max.age.ms`
#
# Why refresh when nothing is wrong? Because not every change shows up as an error: a topic that got more
# partitions, a new broker, leadership that moved back to the preferred replica. So a client asks again every
# `metadata.max.age.ms`, counted from its last successful refresh, whatever caused that one.
#
# Five minutes is long to wait in a notebook, so this producer gets `metadata.max.age.ms` = 60 000 and a
# **mock clock**: kafkalab's clients decide every timeout on an injected clock, and a `MockTime` moves only
# when we advance it. The producer sends one record, then we advance its clock to 1 ms before the refresh is
# due, wait a little real time, and then the last millisecond:

# %%
from kafkalab.common import MockTime

clock = MockTime()
aging = Producer({"bootstrap.servers": first_address, "client.id": "lab04-aging", "metadata.max.age.ms": 60_000,
                  "enable.idempotence": False, "linger.ms": 0}, trace=True, time=clock)
aging.send(TOPIC, b"one record", partition=2).result(timeout=10)
aging.trace.clear()
clock.advance(59_999)
early = lab04.wait_for_request(aging.trace, "Metadata", timeout_s=0.5)
clock.advance(1)
due = lab04.wait_for_request(aging.trace, "Metadata", timeout_s=10)
refresh = [e for e in aging.trace.events if e.api_name == "Metadata"]
aging.close()
display(evidence("Refresh by age", {
    "no Metadata request at 59 999 ms": not early,
    "a Metadata request at 60 000 ms, with no error anywhere": due,
    "it asked for the topics the producer uses": [t.name for t in refresh[0].request.body.topics] == [TOPIC]}))
pd.DataFrame(lab04.trace_rows(refresh[:1])).set_index("request")[["outcome"]]

# %% [markdown]
# Nothing failed; the producer simply asked again, for the topics it is using, and got the same map. (Java's
# producer also forgets a topic it has not used for `metadata.max.idle.ms`, 5 minutes by default; a consumer
# asks for the topics it subscribed to.)
#
# ## 7 · Leadership moves: NOT_LEADER_OR_FOLLOWER, refresh, retry
#
# Broker 1 leads `orders-0`. We kill it. Its session in the coordination store ends, the controller notices
# and picks a new leader from the ISR; then we restart broker 1, which comes back as a *follower* and rejoins
# the ISR once it has caught up. The producer has not sent anything in the meantime, so its cache still says
# "broker 1".
#
# The dashboard again (the same live view as in section 1): run the next cell and watch broker 1 go down,
# `orders-0` get a new leader with a higher leader epoch, broker 1 leave every ISR, come back, and rejoin.
# (The producer of section 5 has `metadata.max.age.ms` = 300 000 on the real clock: it will not refresh by age
# during this section.)

# %%
dashboard

# %%
old = cluster.partition_state(TOPIC, 0)
cluster.kill(old["leader"])
cluster.wait_until(lambda: cluster.controller_id >= 0 and
                   cluster.partition_state(TOPIC, 0)["leader"] not in (-1, old["leader"]), 15, "no new leader")
cluster.restart(old["leader"])
cluster.wait_until(lambda: all(lab04.cached_leader(b, TOPIC, 0) not in (None, -1, old["leader"])
                               for b in cluster.brokers.values() if b.is_running), 15, "caches not updated")
cluster.wait_until(lambda: all(lab04.cached_isr_size(b, TOPIC, p) == 3 for p in lab04.ASSIGNMENT
                               for b in cluster.brokers.values()), 15, "broker 1 did not rejoin the ISR")
new = cluster.partition_state(TOPIC, 0)
print(f"orders-0 leader: {old['leader']} -> {new['leader']}, leader epoch {old['leader_epoch']} -> {new['leader_epoch']}")
display(evidence("A clean failover", {
    "the new leader was in the old ISR": new["leader"] in old["isr"],
    "the restarted broker is back in the ISR (it had nothing to catch up on)": old["leader"] in new["isr"]}))
print("the producer's cache still says:", producer.metadata.leader_for(TOPIC, 0))

# %% [markdown]
# Now send one record to partition 0 and read the trace from the moment we cleared it:

# %%
producer.trace.clear()
sent = producer.send(TOPIC, b"after the failover", partition=0).result(timeout=15)
print("delivered:", sent.topic, sent.partition, "offset", sent.offset)
pd.DataFrame(lab04.trace_rows(producer.trace.events)).set_index("step")

# %% [markdown]
# Step by step:
#
# 1. The Produce goes where the cache says, to the old leader. That broker is alive and holds a replica, but
#    it is a follower now: it answers **NOT_LEADER_OR_FOLLOWER (6)** and appends nothing.
# 2. Error 6 is one of the "your metadata is stale" errors (`STALE_METADATA_ERRORS` in
#    `kafkalab/clients/metadata.py`). The client asks for an update and, after at least `retry.backoff.ms`,
#    sends a Metadata request to the least loaded broker it has a connection to — here the only one, the old
#    leader, which answers from its own (up-to-date) metadata cache.
# 3. The new answer names the new leader with a higher leader epoch; the producer opens a connection to it
#    (ApiVersions first, as always) and retries the batch (`retries`, bounded by `delivery.timeout.ms`). The
#    application saw none of this, only a successful send.

# %% tags=["figure:view_after"]
lab04.cluster_diagram(producer.metadata, TOPIC, title="The producer's view: after")

# %% [markdown]
# Broker 1 is back and in the ISR, but it no longer leads `orders-0`: leadership moves back only with a
# preferred-leader election. Kafka's controller runs one by itself every `leader.imbalance.check.interval.seconds`
# (300) while `auto.leader.rebalance.enable` is on (the default); kafkalab leaves it to you (`kafkalab
# leader-election --election-type preferred`, the ElectLeaders request of `kafka-leader-election.sh`). Every
# leader epoch went up by one: on a broker failure the controller rewrites the state of each partition the dead
# broker was part of, and in the ZooKeeper-era controller even taking a follower out of the ISR bumps the epoch.
# Clients do not care either way: they follow the metadata.

# %%
producer.close()
cluster.stop()
dashboard.stop()                            # it stops with the cluster; this waits until its thread has ended

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
# ### Exercise 1 · Build a routing table
#
# A client received this (abridged) Metadata response. For each partition, give the `host:port` its
# producer must send a Produce to.

# %%
ex1_brokers = {10: "kafka-a:9092", 11: "kafka-b:9092", 12: "kafka-c:9092"}
ex1_partitions = {
    0: {"leader": 12, "replicas": [12, 10, 11], "isr": [12, 10, 11]},
    1: {"leader": 10, "replicas": [11, 10, 12], "isr": [10, 12]},
    2: {"leader": 11, "replicas": [10, 11, 12], "isr": [11, 12, 10]},
}

# %% tags=["solution"]
ex1_routing = {0: "kafka-c:9092", 1: "kafka-a:9092", 2: "kafka-b:9092"}

# %%
lab04.check_routing(ex1_routing, ex1_partitions, ex1_brokers)

# %% [markdown]
# ### Exercise 2 · Which errors send the client back for metadata?
#
# From these error names, give the set after which a client refreshes its metadata before retrying (the
# others are retried as they are, or not at all). `kafkalab.protocol.ErrorCode` has them all.

# %%
ex2_candidates = ["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE",
                  "MESSAGE_TOO_LARGE", "CORRUPT_MESSAGE", "FENCED_LEADER_EPOCH", "INVALID_REQUIRED_ACKS"]

# %% tags=["solution"]
ex2_refresh = {"NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "FENCED_LEADER_EPOCH"}

# %%
lab04.check_refresh_errors(ex2_refresh, ex2_candidates)

# %% [markdown]
# ### Exercise 3 · Predict the trace
#
# A producer's cache says broker 2 leads `payments-4`; since it last refreshed, broker 2 was killed and
# restarted and broker 0 took over. The producer's only open connection is the one to broker 2 (a Metadata
# request goes to the least loaded broker it has a ready connection to). List the requests it sends for one
# record to `payments-4`, as `(api name, broker id)` pairs, in order; leave out ApiVersions.

# %% tags=["solution"]
ex3_requests = [("Produce", 2), ("Metadata", 2), ("Produce", 0)]

# %%
lab04.check_retry_sequence(ex3_requests, cached_leader=2, new_leader=0)

# %% [markdown]
# ### Exercise 4 · When does it ask again?
#
# A consumer has `metadata.max.age.ms` = 60 000 and fetched its first metadata at t = 0 s. At t = 25 s a
# Fetch is answered NOT_LEADER_OR_FOLLOWER. Nothing else goes wrong. At which times (in seconds, from 0 to
# 150) does it send a Metadata request? Give a list in `ex4_times`, starting with 0. (Ignore `retry.backoff.ms`.)

# %% tags=["solution"]
ex4_times = [0, 25, 85, 145]

# %%
lab04.check_refresh_times(ex4_times, max_age_s=60, stale_at_s=[25], until_s=150)

# %% [markdown]
# ## Recap
#
# * `bootstrap.servers` is where to *ask*, not the cluster: one reachable broker returns every broker's
#   address (C6).
# * The Metadata response names the brokers, the controller and, per partition, leader, leader epoch,
#   replicas and ISR. Any broker can answer it from its metadata cache (C41).
# * Topics come from CreateTopics (the admin client, C35) — or from a Metadata request when
#   `auto.create.topics.enable` lets it, which it does by default, in KRaft too (C23).
# * The admin client does more (C35): DescribeCluster and Describe/IncrementalAlterConfigs to any broker,
#   CreatePartitions to the controller, DeleteRecords to the leader, offsets to the group coordinator,
#   ListGroups to every broker.
# * Clients refresh their metadata every `metadata.max.age.ms` (5 minutes) after the last refresh, even when
#   nothing is wrong, so they see new partitions and brokers (C6, C41).
# * Clients route each Produce to the partition's leader from their cached copy. A stale copy earns
#   NOT_LEADER_OR_FOLLOWER (6): the client refreshes and retries, and the application never knows (C40).
# * Next: lab 05 follows a record through the producer; lab 09 shows who decides leaders and how every
#   broker's cache learns about them.
