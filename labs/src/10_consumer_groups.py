# Source of labs/10_consumer_groups.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 10
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 10 · Consumer groups and committed offsets
#
# Start three copies of a consumer with the same `group.id`, and the topic's partitions are shared out among
# them: each partition is read by exactly one of them. Stop one, and within seconds its partitions move to the
# others. Restart it next week, and it carries on where the group stopped. None of this happens inside the
# consumers alone: one broker, the group's **coordinator**, keeps the members' list, notices the ones that
# die, and stores the positions the group has reached. This lab takes that conversation apart, one request at
# a time, on a coordinator whose clock only moves when you say so; then it shows the same thing with real
# confluent-kafka consumers against a broker.
#
# **By the end of this lab you can**
#
# 1. compute which partition of `__consumer_offsets`, and so which broker, coordinates a group;
# 2. walk a rebalance: JoinGroup (member id, leader, the subscription each member sends), SyncGroup (the
#    assignment the *leader's client* computed), and the group states in between;
# 3. explain how heartbeats and `session.timeout.ms` detect a dead member, and what the rebalance after it does;
# 4. read committed offsets (and the group itself) from `__consumer_offsets`, record by record;
# 5. predict what a crash costs when offsets are committed before or after processing (at-most-once,
#    at-least-once);
# 6. say what `assign()` gives up compared with `subscribe()`, and what it keeps;
# 7. predict where a consumer starts (`auto.offset.reset` and the committed offset), what
#    `max.poll.interval.ms` does to a consumer whose loop is too slow, and which records auto-commit hands out
#    twice after a crash.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C31** `assign` or `subscribe` with `group.id`, `auto.offset.reset` | a consumer that joins no group but still commits; three new groups with `latest`, `earliest`, `none` | 9, 10 |
# | **C32** partitions spread over members, heartbeats, rebalances, the assignor runs in a member, `max.poll.interval.ms` | JoinGroup / SyncGroup step by step, a member dying, three real consumers sharing six partitions, a slow member leaving and its late commit failing | 2-5, 7, 11 |
# | **C33** committed offsets in `__consumer_offsets`; commit timing decides the delivery semantics; `enable.auto.commit`, `auto.commit.interval.ms` | the offsets topic decoded; a crash before and after the commit; auto-commits counted on a mock clock, and what a crash repeats | 1, 6, 8, 12 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | the state machine | `kafkalab/coordinator/group/state.py` | `core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala` (`GroupState`) |
# | JoinGroup, SyncGroup, Heartbeat, timers | `kafkalab/coordinator/group/coordinator.py` | `GroupCoordinator.scala`, `DelayedJoin.scala`, `DelayedHeartbeat.scala` |
# | which partition, loading, appends | `kafkalab/coordinator/group/group_metadata_manager.py` | `GroupMetadataManager.scala` |
# | the records of `__consumer_offsets` | `kafkalab/coordinator/group/records.py` | `GroupMetadataManager.scala` (`offsetCommitKey`, `groupMetadataValue`...) |
# | the wire | `kafkalab/server/apis/groups.py`, `coordinators.py` | `KafkaApis.handleJoinGroupRequest` ... |
# | the subscription and assignment bytes | `kafkalab/protocol/consumer_protocol.py` | `clients/.../consumer/internals/ConsumerProtocol.java` |
# | the range assignor (it runs in the leader's client) | `kafkalab/clients/consumer/assignors/range.py` | `clients/.../consumer/RangeAssignor.java` |
# | where a consumer starts, the poll loop, auto-commit | `kafkalab/clients/consumer/consumer.py`, `consumer_coordinator.py`, `abstract_coordinator.py` | `clients/.../consumer/KafkaConsumer.java`, `internals/ConsumerCoordinator.java`, `internals/AbstractCoordinator.java` |
# | pictures, checks | `kafkalab/labs/lab10/` | |

# %%
import logging
import time

import pandas as pd
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalab import Cluster
from kafkalab.clients import Consumer as KafkalabConsumer
from kafkalab.clients import NoOffsetForPartitionError
from kafkalab.clients import Producer as KafkalabProducer
from kafkalab.cluster import BrokerLog
from kafkalab.common import MockTime
from kafkalab.coordinator.group.group_metadata_manager import java_string_hash
from kafkalab.coordinator.group.records import GroupMetadataKey, read_group_value, read_message_key, read_offset_value
from kafkalab.labs import evidence, lab10
from kafkalab.protocol import ApiKey, ErrorCode, decode_response, encode_request, make_request, request_class
from kafkalab.records import decode_batches
from kafkalab.trace import RawConnection

pd.set_option("display.max_colwidth", 120)
broker_log = BrokerLog().install()                       # the broker's warnings: kept in a list, not on stderr
librdkafka_log = logging.getLogger("kafkalab.lab10.librdkafka")   # confluent-kafka logs go here, not to stderr
librdkafka_log.addHandler(logging.NullHandler())
librdkafka_log.propagate = False
GROUP, TOPIC = lab10.GROUP, lab10.TOPIC

# %% [markdown]
# ## 1 · Which broker coordinates a group?
#
# Any broker can be a group's coordinator, and every client must find the same one without asking anybody but
# a broker. Kafka's answer needs no lookup table: the group's state lives in the internal topic
# `__consumer_offsets` (`offsets.topic.num.partitions`, 50 by default), the group id picks one partition of it,
# and **the leader of that partition is the coordinator**. The pick is
#
# `partition = abs(group_id.hashCode()) % offsets.topic.num.partitions`
#
# with Java's `String.hashCode`: start at 0, and for each character `h = 31 * h + c`, kept to a *signed 32-bit*
# integer (it wraps around). By hand, for our group `billing`:

# %%
steps = lab10.hash_steps(GROUP)
pd.DataFrame(steps).set_index("char")

# %%
h = steps[-1]["h (int32)"]
print(f"hashCode({GROUP!r}) = {h}  (kafkalab's java_string_hash says {java_string_hash(GROUP)})")
print(f"abs(h) % 50 = {abs(h)} % 50 = {abs(h) % 50}")
print("the coordinator's partition:", lab10.coordinator_partition(GROUP, 50))

# %% [markdown]
# The last two steps overflow: `31 · h + c` no longer fits in 32 bits, and the value wraps around to a negative
# number. That is why Python's big integers (or Python's own `hash()`, which is random per process) give a
# different answer, and why Kafka takes `abs` before the `%`.
#
# Now ask a real broker. A client sends **FindCoordinator** with the group id as its key (since v4 several keys
# in one request); the broker computes the same partition and answers with the leader's node id, host and port.
# The first request for any group also makes the broker create `__consumer_offsets`, so the first answer may
# well be `COORDINATOR_NOT_AVAILABLE`: clients retry, and so do we.

# %%
cluster = Cluster(brokers=1, overrides={
    "group.initial.rebalance.delay.ms": 300,    # default 3000: how long a new group waits for more members
}).start()
FindCoordinator = request_class(ApiKey.FIND_COORDINATOR)


def find_coordinator(group_id, version=4):
    with RawConnection(cluster.bootstrap_servers) as conn:
        for attempt in range(50):
            conn.send(encode_request(make_request(FindCoordinator(key_type=0, coordinator_keys=(group_id,)),
                                                  api_version=version, correlation_id=attempt,
                                                  client_id="kafkalab-lab10")))
            answer = decode_response(conn.receive(), ApiKey.FIND_COORDINATOR, version).body.coordinators[0]
            if answer.error_code == ErrorCode.NONE:
                return answer
            time.sleep(0.1)
    raise RuntimeError(f"no coordinator: {ErrorCode(answer.error_code).name}")


answer = find_coordinator(GROUP)
coordinator = cluster.broker(answer.node_id).group_coordinator
print(f"FindCoordinator(key={answer.key!r}) -> node_id {answer.node_id}, error {ErrorCode(answer.error_code).name}")
print(f"the broker's coordinator puts {GROUP!r} in partition {coordinator.partition_for(GROUP)} of __consumer_offsets")
print("partition leader:", cluster.partition_state("__consumer_offsets", coordinator.partition_for(GROUP))["leader"])

# %% [markdown]
# One broker here, so it leads all 50 partitions; on a real cluster the partitions, and so the groups, are
# spread over the brokers. When a broker dies, another becomes leader of its `__consumer_offsets`
# partitions, **reads them back** from the start, and coordinates those groups from then on: everything a
# coordinator knows is in that topic (section 6).

# %% [markdown]
# ## 2 · JoinGroup, step by step
#
# From here to section 6 there is no network: we drive kafkalab's `GroupCoordinator` — the very class the
# broker above runs — directly, with a `MockTime` clock. Timers (session timeouts, the initial rebalance delay)
# fire only when we advance the clock, so every run prints the same. `lab10.LabGroup` plays the members: two
# consumers with client ids `alice` and `bob`, both subscribing to topic `orders` (6 partitions), with
# `session.timeout.ms` = 10 s and `heartbeat.interval.ms` = 3 s. Times are seconds since the clock started.
#
# A new consumer sends JoinGroup **without a member id**. Since JoinGroup v4 the coordinator does not register
# it yet: it makes up an id (`<client.id>-<uuid>`) and answers `MEMBER_ID_REQUIRED` with it (KIP-394), so that a
# client whose first request timed out leaves no ghost member behind.

# %%
lab = lab10.LabGroup(GROUP)
first = lab.join("alice")
print(f"t={lab.now:g} s  alice JoinGroup(member_id='') -> {first.outcome}, member_id={first.result.member_id!r}")
second = lab.join("alice")
print(f"t={lab.now:g} s  alice JoinGroup(member_id=...{first.result.member_id[-4:]}) -> "
      f"{'no answer yet (parked)' if second.parked else second.outcome}; group state: {lab.state}")

# %% [markdown]
# The second JoinGroup is **parked**: the coordinator holds it without answering. The group went from Empty to
# PreparingRebalance, and a group that was empty waits `group.initial.rebalance.delay.ms` (3 s by default)
# before it completes the round, so that consumers started together end up in one generation instead of one
# rebalance each. The state machine, drawn from the table the coordinator itself checks every transition
# against (`kafkalab.coordinator.group.state.TRANSITIONS`):

# %% tags=["figure:group_states"]
lab.state_machine()

# %% [markdown]
# One second later `bob` arrives. A new member during the initial delay extends it by another delay (up to
# the rebalance timeout). At t = 6 s both parked JoinGroups are answered at once:

# %%
lab.advance(1_000)
lab.join("bob")                          # MEMBER_ID_REQUIRED
bob_join = lab.join("bob")               # parked as well
lab.advance(2_000)
print(f"t={lab.now:g} s: alice parked: {second.parked}, bob parked: {bob_join.parked}   (the delay was extended)")
lab.advance(3_000)
print(f"t={lab.now:g} s: state {lab.state}")
pd.DataFrame([{"client": c, "answered at (s)": (call.answered_ms - lab10.T0) / 1000,
               "generation_id": call.result.generation_id, "protocol_name": call.result.protocol_name,
               "leader": lab.client_of(call.result.leader_id), "members listed": len(call.result.members)}
              for c, call in [("alice", second), ("bob", bob_join)]]).set_index("client")

# %% [markdown]
# * Both get **generation 1**: every completed round bumps it, and every later request carries it, so that a
#   member that slept through a rebalance is recognised (ILLEGAL_GENERATION).
# * The **leader** is the first member that joined, `alice`. Only her answer lists the members — with what each
#   of them sent.
# * The **protocol** is `range`: each member offered `range` and `roundrobin` (its
#   `partition.assignment.strategy`, in order of preference), and the coordinator picked the one all members
#   support that most of them prefer. It does not know what `range` means.
#
# What a member sends with each protocol is opaque to the broker: the **consumer protocol's subscription**,
# bytes defined by the *clients*. Here is the one `bob` sent, as `alice` received it (kafkalab's members send
# version 0; section 7 shows confluent-kafka's version 3):

# %%
members = {member_id: metadata for member_id, _, metadata in second.result.members}
bob_id = lab.member_ids["bob"]
print("bytes:", members[bob_id].hex(" "))
pd.DataFrame(lab10.subscription_fields(members[bob_id])).set_index("field")

# %% [markdown]
# ## 3 · SyncGroup: the assignment comes from the leader
#
# The coordinator now waits for a **SyncGroup** from every member. The followers send an empty one and are
# parked; the leader's *client* runs the assignor on the subscriptions it received (plus the partition counts
# it knows from Metadata) and sends the result for everybody. The **range** assignor, per topic: sort the
# members by member id, give each `partitions // members` consecutive partitions, and the first
# `partitions % members` of them one more. `lab10.range_assign` runs kafkalab's own client-side `RangeAssignor`
# (the one `kafkalab.clients.Consumer` uses) and shows its answer as plain dicts.

# %%
subscriptions = {m: lab10.decode_subscription(md)["topics"] for m, md in members.items()}
plan = lab10.range_assign(subscriptions, {TOPIC: 6})            # runs in alice's process, not in the broker
for member_id, assignment in plan.items():
    print(f"{lab.client_of(member_id):6} {member_id}: {assignment}")

bob_sync = lab.sync("bob")
print(f"\nt={lab.now:g} s  bob SyncGroup(assignments={{}}) -> "
      f"{'no answer yet (parked)' if bob_sync.parked else bob_sync.outcome}")
alice_sync = lab.sync("alice", plan)
print(f"t={lab.now:g} s  alice SyncGroup(assignments for 2 members) -> {alice_sync.outcome}")
print(f"t={lab.now:g} s  bob's parked SyncGroup answered: {bob_sync.outcome}; group state: {lab.state}")

# %% [markdown]
# The broker stores the leader's assignment (in `__consumer_offsets`, section 6) and relays each member its
# part — it never computes one, never checks that it is fair, never looks inside. That is why a new assignor
# (sticky, cooperative, rack-aware) needs no broker upgrade, and why all members of a group must support a
# common one. The assignment bytes `bob` received:

# %%
print("bytes:", bob_sync.result.assignment.hex(" "))
print("ConsumerProtocolAssignment: version", int.from_bytes(bob_sync.result.assignment[:2], "big"),
      "| partitions", lab10.decode_assignment(bob_sync.result.assignment))
lab.state_machine()

# %% [markdown]
# Extra members stay idle: the range assignor with more members than partitions leaves the last ones empty
# (one partition is never read by two members of a group). Seven members, six partitions:

# %%
seven = {f"consumer-{i}": [TOPIC] for i in range(7)}
{m: a.get(TOPIC, "— idle —") for m, a in lab10.range_assign(seven, {TOPIC: 6}).items()}

# %% [markdown]
# ## 4 · Heartbeats
#
# A Stable group is quiet, except for **Heartbeat** requests: every `heartbeat.interval.ms` each member says
# "still here" (its member id and generation). Each heartbeat restarts the member's session timer: if none
# comes for `session.timeout.ms`, the coordinator declares the member dead. (Separately, the *client* leaves the
# group when the application does not call `poll()` for `max.poll.interval.ms`: a consumer stuck in processing
# is as useless as a dead one.)
#
# Nine seconds of heartbeats from both members; `alice` also commits where she got to in two of her partitions
# (**OffsetCommit**, with her generation: only members of the current generation may commit).

# %%
lab.advance(9_000, heartbeats=["alice", "bob"])
print(f"t={lab.now:g} s  alice OffsetCommit -> {lab.commit('alice', {(TOPIC, 0): 42, (TOPIC, 1): 17})}")
pd.DataFrame(lab.members()).set_index("client")

# %% [markdown]
# ## 5 · A member dies
#
# Now `bob`'s process freezes: no more heartbeats. Nothing tells the coordinator, and `alice` keeps
# heartbeating. We advance 12 seconds:

# %%
lab.advance(12_000, heartbeats=["alice"])
happened = [(t, f"coordinator: {text}") for t, text in lab.events()] + [
    ((c.sent_ms - lab10.T0) / 1000, f"{c.client} {c.api} -> {c.outcome}") for c in lab.calls]
for t, what in sorted(happened, key=lambda x: x[0]):     # stable sort: same-time lines keep their order
    if t > 15:
        print(f"t={t:g} s  {what}")

# %% [markdown]
# At t = 25 s, exactly `session.timeout.ms` after bob's last heartbeat (15 s), the coordinator removes him and
# starts a rebalance. It cannot tell `alice` directly — a broker never speaks first — so it answers her next
# heartbeat with **REBALANCE_IN_PROGRESS**, and she rejoins. She is the only member left, so the round
# completes at once: generation 2, she leads, and she assigns herself all six partitions.

# %% tags=["figure:rebalance_timeline"]
rejoin = lab.join("alice")
print(f"t={lab.now:g} s  alice JoinGroup -> {rejoin.outcome}, leader {lab.client_of(rejoin.result.leader_id)}, "
      f"{len(rejoin.result.members)} member(s)")
subscriptions = {m: lab10.decode_subscription(md)["topics"] for m, _, md in rejoin.result.members}
resync = lab.sync("alice", lab10.range_assign(subscriptions, {TOPIC: 6}))
print(f"t={lab.now:g} s  alice SyncGroup -> {resync.outcome}; state {lab.state}")
lab.advance(6_000, heartbeats=["alice"])
lab.timeline(f"group {GROUP!r}: two members join, bob dies, alice takes over")

# %% [markdown]
# Read the timeline left to right: the pale bars are JoinGroup and SyncGroup requests the coordinator held
# (alice's JoinGroup with her member id waited 6 s, bob's SyncGroup waited for the leader's). The grey ticks are heartbeats;
# bob's stop at 15 s, and 10 s later the coordinator crosses him out. Alice's next heartbeats come back orange,
# REBALANCE_IN_PROGRESS, and she rejoins. While the group was rebalancing, **nobody** in it was consuming the
# partitions being moved: rebalances are pauses, which is why `session.timeout.ms` is a trade-off between
# noticing a dead consumer quickly and not rebalancing at every long GC pause. The path through the state
# machine:

# %%
lab.state_machine()

# %% [markdown]
# ## 6 · Committed offsets in `__consumer_offsets`
#
# Everything the coordinator has to remember went to the group's partition of `__consumer_offsets` as ordinary
# records (here the in-memory stand-in for partition 9 of that topic). Two kinds share the partition, told apart by the
# **key's version**: 0/1 = an offset commit, key (group, topic, partition); 2 = the group itself, key (group).
# Every value starts with its own version too.

# %%
pd.DataFrame(lab.offsets_records()).set_index("offset")

# %% [markdown]
# * The **group record** is written when the leader's assignment is stored (generation 1 at offset 0,
#   generation 2 at offset 3): protocol, leader, every member with its subscription and assignment. That is
#   what a new coordinator reads back to know who was in the group.
# * An **offset record** is the tuple (group, topic, partition) → offset: "the group has processed everything
#   before offset 42 of `orders-0`". The *next* record to read, not the last one read. It also carries the
#   leader epoch of the record before it (KIP-320: a consumer resuming there can tell whether a leader change
#   truncated the log meanwhile; -1 here, where the lab sent none), optional metadata, and the commit time.
# * The topic is **compacted** (`cleanup.policy=compact`): only the latest record per key has to survive, so a
#   group committing every second for a year still needs one record per partition. A **tombstone** (null
#   value) forgets a key: when offsets expire (`offsets.retention.minutes` after the group became empty) or the
#   group is deleted.
#
# One offset record byte by byte:

# %%
rec = [r for b in lab.log.read(lab.partition) for r in b.records][1]
print("key:  ", rec.key.hex(" "), "\n       int16 version 1 | string group | string topic | int32 partition")
print("value:", rec.value.hex(" "), "\n       int16 version 3 | int64 offset | int32 leader_epoch | string metadata"
      " | int64 commit_timestamp")

# %% [markdown]
# ## 7 · For real: three confluent-kafka consumers
#
# Back to the broker of section 1. Produce 30 records to a six-partition topic `orders`, then start three
# confluent-kafka consumers in group `billing` (client ids `member-0` to `member-2`) and poll until each has
# partitions. librdkafka's own assignor, in the leader's process, decides who gets what.

# %%
cluster.create_topic(TOPIC, partitions=6)
producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "logger": librdkafka_log,
                     **lab10.LIBRDKAFKA_SOFTWARE})
for i in range(30):
    producer.produce(TOPIC, key=b"order-%d" % i, value=b"%d" % i, partition=i % 6, timestamp=lab10.T0)
producer.flush(10)


def consumer(client_id, group=GROUP, **extra):
    return Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": client_id,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 200, "logger": librdkafka_log, **lab10.LIBRDKAFKA_SOFTWARE, **extra})


def owned(c):
    return sorted(tp.partition for tp in c.assignment())


def poll_until(consumers, condition, timeout=20.0, on_message=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and m.error() is None and on_message is not None:
                on_message(c, m)
        if condition():
            return
    raise TimeoutError("the group did not settle in time")


members = {f"member-{i}": consumer(f"member-{i}") for i in range(3)}
for c in members.values():
    c.subscribe([TOPIC])
poll_until(members.values(), lambda: sorted(p for c in members.values() for p in owned(c)) == list(range(6))
           and all(owned(c) for c in members.values()))
{name: owned(c) for name, c in members.items()}

# %% [markdown]
# Each partition has exactly one owner. (librdkafka's range assignor sorts members by member id, and a member id
# starts with the client id, so `member-0` gets the first two.) What did the coordinator see? Its group, read on
# the broker's own thread — the random part of the member ids masked:

# %%
def group_view(group_id):
    g = coordinator.manager.get_group(group_id)
    return g.state.value, g.protocol_type, g.protocol_name, [
        (m.client_id, lab10.mask_ids(m.member_id), [name for name, _ in m.supported_protocols],
         m.metadata(g.protocol_name), lab10.decode_assignment(m.assignment)) for m in g.members.values()]


state, protocol_type, protocol, rows = cluster.call(group_view, GROUP)
print(f"state {state}, protocol_type {protocol_type!r}, protocol {protocol!r}")
pd.DataFrame([{"client": c, "member_id": m, "offered": ", ".join(p), "assignment": a} for c, m, p, _, a in rows]
             ).sort_values("client").set_index("client")

# %% [markdown]
# librdkafka offers `range` and `roundrobin`, like our LabGroup members. Its subscription is version 3: after
# the topics it adds the partitions the member owned before (KIP-429, for cooperative rebalancing), the
# generation they were owned in, and the rack (for rack-aware assignment):

# %%
pd.DataFrame(lab10.subscription_fields(sorted(rows)[0][3])).set_index("field")

# %% [markdown]
# Now `member-0` shuts down. `close()` sends **LeaveGroup**, so the coordinator does not wait for its session to
# expire: the others learn of the rebalance from their next heartbeat, rejoin, and the leader assigns again.

# %%
members.pop("member-0").close()
poll_until(members.values(), lambda: sorted(p for c in members.values() for p in owned(c)) == list(range(6)))
{name: owned(c) for name, c in members.items()}

# %% [markdown]
# The two survivors read everything in their partitions and commit after each record; then they shut down
# too. What is left in `billing`'s partition of `__consumer_offsets`, read from the broker's log directory?
# Each key's latest record (what compaction keeps):

# %%
done = []


def process_and_commit(c, m):
    done.append(m.offset())
    c.commit(message=m, asynchronous=False)


def committed(group_id):
    g = coordinator.manager.get_group(group_id)
    return {tp: r.value.offset for tp, r in g.offsets.items()}, g.state.value


poll_until(members.values(), lambda: cluster.call(committed, GROUP)[0] == {(TOPIC, p): 5 for p in range(6)},
           on_message=process_and_commit)
for c in members.values():
    c.close()
cluster.wait_until(lambda: committed(GROUP)[1] == "Empty", 10, "the group did not become empty")
partition_dir = cluster.base_dir / "broker-0" / f"__consumer_offsets-{coordinator.partition_for(GROUP)}"
records = [r for f in sorted(partition_dir.glob("*.log"))
           for b in decode_batches(f.read_bytes(), allow_partial=True) for r in b.records]
latest = {}                                               # key -> the latest value
for r in records:
    latest[read_message_key(bytes(r.key))] = r.value
print(f"{partition_dir.name}: {len(latest)} keys")
for key in sorted(latest, key=lambda k: (k.version, getattr(k, "partition", -1))):
    value = latest[key]
    if isinstance(key, GroupMetadataKey):
        g = read_group_value(bytes(value))
        print(f"  group {key.group!r}: protocol_type {g.protocol_type!r}, protocol {g.protocol}, "
              f"{len(g.members)} members")
    else:
        print(f"  offset {key.group!r} {key.topic}-{key.partition}: {read_offset_value(bytes(value)).offset}")

# %% [markdown]
# Six offset records, one per partition, each saying 5: the 30 records went round-robin over six partitions, so
# the next offset to read in each is 5. A consumer of this group started tomorrow asks **OffsetFetch** and
# continues from there; `auto.offset.reset` only matters for partitions without a committed offset. The group
# record is the latest one, written when the last member left: Empty, no protocol, no members. The offsets
# outlive the members: they expire `offsets.retention.minutes` (7 days) after the group became empty.

# %% [markdown]
# ## 8 · Commit timing decides the delivery semantics
#
# The committed offset is a promise the consumer makes about *itself*: "everything before this offset is done".
# The broker stores whatever it is told. So the order of *process* and *commit* decides what a crash costs.
#
# A topic `payments` with one partition and ten records. Each run below has a consumer that handles records one
# by one and **crashes** (it is closed without committing anything more) in the middle of record 4; then a new
# consumer in the same group starts from the committed offset.
#
# * **at-least-once**: process, *then* commit. The crash comes after processing 4, before its commit.
# * **at-most-once**: commit, *then* process. The crash comes after committing 4, before processing it.

# %%
cluster.create_topic("payments", partitions=1)
for i in range(10):
    producer.produce("payments", value=b"payment-%d" % i, partition=0, timestamp=lab10.T0)
producer.flush(10)


def run(strategy, crash_at=4):
    group = f"payments-{strategy}"
    handled = []                                      # (run, offset): what the application really processed
    state = {"crashed": False}

    def handle(c, m):
        if state["crashed"]:
            return
        if strategy == "at-most-once":
            c.commit(message=m, asynchronous=False)   # commit first (offset + 1)...
            if m.offset() == crash_at:
                state["crashed"] = True               # ...and die before processing
                return
            handled.append((1, m.offset()))
        else:
            handled.append((1, m.offset()))           # process first...
            if m.offset() == crash_at:
                state["crashed"] = True               # ...and die before committing
                return
            c.commit(message=m, asynchronous=False)

    first = consumer(f"{strategy}-1", group=group)
    first.subscribe(["payments"])
    poll_until([first], lambda: state["crashed"], on_message=handle)
    first.close()                                     # the "crash": nothing more is committed
    second = consumer(f"{strategy}-2", group=group)
    second.subscribe(["payments"])
    poll_until([second], lambda: any(o == 9 for r, o in handled if r == 2),
               on_message=lambda c, m: handled.append((2, m.offset())))
    second.close()
    return handled


table = {}
for strategy in ["at-least-once", "at-most-once"]:
    handled = run(strategy)
    table[strategy] = {offset: " + ".join(f"run {r}" for r, o in handled if o == offset) or "LOST"
                       for offset in range(10)}
pd.DataFrame(table).rename_axis("offset")

# %% [markdown]
# * **At-least-once**: record 4 was processed by both runs: the second consumer resumed at the last committed
#   offset, 4. Nothing is lost; what was processed since the last commit is processed again. This is the usual
#   choice, with processing made idempotent (or duplicates tolerated).
# * **At-most-once**: record 4 was never processed: the commit already said "everything before 5 is done".
#   Nothing twice; a crash loses what was between the commit and the processing.
# * `enable.auto.commit=true` (the default) commits the positions `poll()` returned every
#   `auto.commit.interval.ms` (5 s): a crash re-delivers up to five seconds of records, and a record can be
#   "committed" before the application finished with it if processing is asynchronous (section 12 counts them).
# * **Exactly-once** needs the offset stored *atomically with the result*: in the same database transaction as
#   the result, or — when the results go to Kafka — in a Kafka transaction (lab 11).
#
# Committing after every record, as here, costs one OffsetCommit round trip per record; real consumers commit
# every N records or every few seconds, and a crash then repeats (or loses) up to N. Exercise 4 is about that.

# %% [markdown]
# ## 9 · `assign()` instead of `subscribe()`
#
# A consumer can also pick its partitions itself with `assign()`. It then joins **no group**: no JoinGroup, no
# SyncGroup, no heartbeats, no rebalance — if it dies, nobody takes over its partitions. But with a `group.id`
# it can still use the group's *offset storage*: it commits with generation -1 and no member id, which the
# coordinator accepts as long as the group has no members. (Where it starts without a committed offset is
# `auto.offset.reset`'s business: section 10.)

# %%
reporter = consumer("reporter", group="reports")
reporter.assign([TopicPartition("payments", 0)])
seen = []
poll_until([reporter], lambda: len(seen) >= 6, on_message=lambda c, m: seen.append(m.offset()))
reporter.commit(offsets=[TopicPartition("payments", 0, seen[5] + 1)], asynchronous=False)


def reports_view():
    g = coordinator.manager.get_group("reports")
    return g.state.value, g.protocol_type, len(g.members), {tp: r.value.offset for tp, r in g.offsets.items()}


print("group 'reports' on the coordinator: state %s, protocol_type %r, %d members, committed %s" %
      cluster.call(reports_view))
used = {r.api_name for r in cluster.broker(0).channel.request_log.records if r.client_id == "reporter"}
for api in ["FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit"]:
    print(f"  reporter sent {api:16} {'yes' if api in used else 'never'}")
reporter.close()
producer.flush(5)
del producer

# %% [markdown]
# `assign()` suits a consumer that must read *specific* partitions (a replay tool, a stream processor that
# manages its own tasks) and applications that store offsets elsewhere. Mixing the two styles in one group id
# does not work: once the group has members, a commit without a member id is refused — try it on the Stable
# group of sections 2-5:

# %%
print("OffsetCommit with no member id, generation -1, while alice is a member ->",
      lab.commit(None, {(TOPIC, 0): 99}))

# %% [markdown]
# ## 10 · Where does a new group start? `auto.offset.reset`
#
# Sections 7-9 used confluent-kafka; the next three use **kafkalab's own consumer**
# (`kafkalab.clients.Consumer`, the same configuration keys, modelled on Java's `KafkaConsumer`), because it can
# run on a clock the lab moves (section 12).
#
# When a consumer gets a partition it needs a *position*: the offset of the next record to fetch. It asks the
# coordinator first (OffsetFetch). If the group has committed an offset for that partition, that is the
# position, whatever else is configured. Only when there is **no committed offset** -- a new group, or offsets
# that expired -- does `auto.offset.reset` decide:
#
# | `auto.offset.reset` | a partition without a committed offset starts at |
# |---|---|
# | `latest` (Java's default) | the log end offset: only records written from now on |
# | `earliest` | the log start offset: everything the log still holds |
# | `none` | nowhere: `poll()` throws `NoOffsetForPartitionException` |
#
# The same policy applies when the position is no longer in the log: a fetch answered `OFFSET_OUT_OF_RANGE`
# (the records were deleted by retention, say) resets the position by it, and with `none` the consumer throws
# `OffsetOutOfRangeException`. librdkafka calls `none` `error`; there are aliases too (`smallest`,
# `beginning`, `largest`, `end`). Kafka 4.0's Java consumer adds a fourth policy, `by_duration:<duration>`
# (KIP-1106, an ISO-8601 duration such as `PT1H`): start at the first record no older than that, found with
# a ListOffsets by timestamp as in lab 06 §6. Kafka 3.9's consumer, librdkafka and kafkalab know the three
# above.
#
# A topic `events` with five records, and three brand-new groups, one per policy. Each consumer joins its group
# and we ask for its position; then two more records arrive, and each reads what it can.

# %%
cluster.create_topic("events", partitions=1)
EVENTS_0 = ("events", 0)
kproducer = KafkalabProducer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab10-producer"})


def send(topic, values, partition=0):
    for value in values:
        kproducer.send(topic, value, partition=partition)
    kproducer.flush(10)


def kconsumer(client_id, group, **extra):
    return KafkalabConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                             "client.id": client_id, "enable.auto.commit": False, **extra})


send("events", [b"old-%d" % i for i in range(5)])
starts, readers = {}, {}
for policy in ["latest", "earliest", "none"]:
    c = kconsumer(f"new-{policy}", f"new-group-{policy}", **{"auto.offset.reset": policy})
    c.subscribe(["events"])
    try:
        while not c.assignment():                 # join the group (JoinGroup, SyncGroup) inside poll()
            c.poll(0.1)
        starts[policy] = c.position(EVENTS_0)     # OffsetFetch: nothing committed -> the policy decides
        readers[policy] = c
    except NoOffsetForPartitionError as e:
        starts[policy] = f"{type(e).__name__}: {e}"
        c.close()
for policy, start in starts.items():
    print(f"auto.offset.reset={policy:8} -> position {start}")

# %% [markdown]
# Kafkalab's `NoOffsetForPartitionError` is Java's `NoOffsetForPartitionException`, with its message. Two new
# records arrive; the two consumers that started read on, and commit:

# %%
send("events", [b"new-5", b"new-6"])
rows = []
for policy, c in readers.items():
    got = []
    while not got or got[-1] < 6:
        got += [r.offset for r in c.poll(0.5)]
    c.commit()                                    # every position: the next offset to read, 7
    rows.append({"auto.offset.reset": policy, "first position": starts[policy], "offsets read": got,
                 "committed": c.committed([EVENTS_0])[EVENTS_0].offset})
    c.close()
pd.DataFrame(rows).set_index("auto.offset.reset")

# %% [markdown]
# Now both groups have a committed offset, 7, and the policy no longer matters to them: a consumer of
# `new-group-latest` configured with `earliest` this time still starts at 7.

# %%
again = kconsumer("new-latest-again", "new-group-latest", **{"auto.offset.reset": "earliest"})
again.subscribe(["events"])
while not again.assignment():
    again.poll(0.1)
print("new-group-latest, now with auto.offset.reset=earliest -> position", again.position(EVENTS_0))
again.close()

# %% [markdown]
# confluent-kafka says the same in its own way: with `auto.offset.reset=error` the consumer does not throw,
# `poll()` hands back an *error event* for the partition.

# %%
strict = consumer("strict", group="new-group-error", **{"auto.offset.reset": "error"})
strict.subscribe(["events"])
end = time.monotonic() + 20
event = None
while event is None and time.monotonic() < end:
    m = strict.poll(0.1)
    if m is not None and m.error() is not None:
        event = m
strict.close()
print(f"librdkafka: {event.error().name()} on {event.topic()}-{event.partition()}: {event.error().str()}")

# %% [markdown]
# `latest` is the default in Java, librdkafka and kafkalab, and it is the one that surprises: a new group
# started *after* the producer misses everything already written, silently. Use `earliest` when a new group
# must see the whole topic, and `none` when a missing offset is a bug you want to hear about (say, a group id
# mistyped in production).
#
# ## 11 · A poll loop that is too slow: `max.poll.interval.ms`
#
# Heartbeats come from a background thread (kafkalab: the consumer's I/O thread), so a consumer whose
# application is stuck -- an endless loop, a call that never returns, a record that takes an hour -- would
# heartbeat forever and keep its partitions while nobody reads them. So the consumer also watches the
# *application*: if `poll()` is not called again within `max.poll.interval.ms` (default 300 000 ms, five
# minutes), the heartbeat thread gives up the membership itself. It sends **LeaveGroup** (reason: "consumer
# poll timeout has expired."), the group rebalances, and the partitions go to members that are working. The
# same value is the **rebalance timeout** in JoinGroup: how long the coordinator waits for a member to rejoin
# before it removes it.
#
# Group `workers`, topic `jobs` with two partitions, two kafkalab consumers on their own threads (as an
# application runs them): `fast` and `slow`, `max.poll.interval.ms` = 3 s, heartbeats every 250 ms. Each
# polls, handles its records, and commits each one after handling it. `slow` takes 5 s over its job.

# %%
MAX_POLL_INTERVAL_MS = 3_000
cluster.create_topic("jobs", partitions=2)


def worker(name):
    return kconsumer(name, "workers", **{"auto.offset.reset": "earliest", "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                                         "session.timeout.ms": 6_000, "heartbeat.interval.ms": 250})


def group_members(group_id):
    g = coordinator.manager.get_group(group_id)
    return sorted(m.client_id for m in g.members.values())


def handle(loop, record):
    job = f"{record.topic}-{record.partition} offset {record.offset} ({record.value.decode()})"
    if loop.name == "slow":
        loop.events.append(f"handling {job}: takes 5 s, no poll() meanwhile")
        time.sleep(5)
        loop.events.append(f"done; the coordinator's members now: {cluster.call(group_members, 'workers')}")
    else:
        loop.events.append(f"handled {job}")
    loop.commit(record)                           # commit after handling: at-least-once


fast = lab10.PollLoop(worker("fast"), "fast", ["jobs"], handle)
slow = lab10.PollLoop(worker("slow"), "slow", ["jobs"], handle)
cluster.wait_until(lambda: fast.owned == [("jobs", 0)] and slow.owned == [("jobs", 1)], 30, "the group did not settle")
print("before:", {m.name: m.owned for m in (fast, slow)})
before = {m.name: len(m.events) for m in (fast, slow)}
send("jobs", [b"job-a", b"job-b"], partition=0)
send("jobs", [b"big-job"], partition=1)
cluster.wait_until(lambda: slow.assignments >= 2 and fast.owned == [("jobs", 0)] and slow.owned == [("jobs", 1)],
                   40, "slow did not get its partition back")
stories = {m.name: m.events[before[m.name]:] for m in (fast, slow)}
fast.stop()
slow.stop()
for name, story in stories.items():
    print(f"\n{name}:")
    for line in story:
        print("   ", line)

# %% [markdown]
# Read `slow`'s story first. Three seconds into its job its heartbeat thread found that `poll()` had not been
# called for `max.poll.interval.ms`, and left the group: when the job was done, the coordinator's group had one
# member, `fast`. Its commit then failed with Kafka's **`CommitFailedException`**: the consumer knows it is no
# longer a member, so it does not even send the OffsetCommit (a commit from a member the coordinator had
# already removed would come back `UNKNOWN_MEMBER_ID` or `ILLEGAL_GENERATION`, and fail the same way). Its next
# `poll()` told the listener the partition was **lost** (not revoked: there is nothing to commit for it any
# more) and rejoined as a new member.
#
# `fast`'s story is the other side: the rebalance gave it both partitions, it found no committed offset for
# `jobs-1`, started there at `auto.offset.reset=earliest`, and **handled `big-job` again**. At-least-once did
# its job; the price of a stuck consumer is the work it did without committing. When `slow` came back, a
# third rebalance (eager: `fast` gives everything up, then gets `jobs-0` back) restored the first layout.

# %%
log = cluster.broker(0).channel.request_log.records
slow_apis = [r.api_name for r in log if r.client_id == "slow"]
evidence("max.poll.interval.ms expired a member that was still alive", {
    "slow was removed from the group while it was still handling its job":
        any("members now: ['fast']" in e for e in stories["slow"]),
    "the group rebalanced: fast owned both partitions meanwhile":
        "assigned [jobs-0, jobs-1]" in stories["fast"],
    "slow's late commit failed with CommitFailedException, and no OffsetCommit left it":
        any("FAILED: CommitFailedException" in e for e in stories["slow"]) and "OffsetCommit" not in slow_apis,
    "big-job was handled twice (by slow, then by fast)":
        sum("big-job" in e and e.startswith("hand") for s in stories.values() for e in s) == 2,
    "slow's next poll() reported the partition lost and rejoined": "lost [jobs-1]" in stories["slow"],
})

# %% [markdown]
# What to do about a slow loop: make each `poll()`'s work smaller (`max.poll.records`, 500 by default), raise
# `max.poll.interval.ms` to what one batch can really take, or hand the work to other threads and `pause()` the
# partitions meanwhile (calling `poll()` while paused keeps the member alive). librdkafka enforces the same
# limit and tells the application at its next poll with an error event `_MAX_POLL_EXCEEDED`.
#
# ## 12 · Auto-commit and its interval
#
# With `enable.auto.commit=true` (the default) nobody calls `commit()`. Instead, at the start of every
# `poll()`, the consumer checks whether `auto.commit.interval.ms` (default 5000) has passed since its last
# auto-commit; if so, it commits -- asynchronously -- the positions it has, that is everything the *earlier*
# polls returned. (It also commits before a rebalance takes partitions away, and in `close()`.) So the commit
# follows the records by up to one interval, and a crash in between hands those records out again.
#
# To see the interval to the millisecond, this consumer runs on a `MockTime`: the clock moves only when we
# advance it, one second per step, and each step polls exactly one record (`max.poll.records=1`). The broker
# stays on real time; we count the OffsetCommit requests it received from the consumer and read the group's
# committed offset on the coordinator. The consumer uses `assign()` with a `group.id` (section 9), so no group
# membership gets in the way.

# %%
cluster.create_topic("clicks", partitions=1)
CLICKS_0 = ("clicks", 0)
send("clicks", [b"click-%d" % i for i in range(20)])
clock = MockTime()
auto = KafkalabConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "click-counter",
                         "client.id": "counter-1", "enable.auto.commit": True, "auto.offset.reset": "earliest",
                         "max.poll.records": 1}, time=clock)
print("enable.auto.commit", auto.config["enable.auto.commit"], "| auto.commit.interval.ms",
      auto.config["auto.commit.interval.ms"])
auto.assign([CLICKS_0])
created_ms = clock.milliseconds()


def committed_offset(group_id, tp):
    g = coordinator.manager.get_group(group_id)
    r = None if g is None else g.offsets.get(tp)
    return None if r is None else r.value.offset


def commits_received(client_id):
    return sum(1 for r in cluster.broker(0).channel.request_log.records
               if r.client_id == client_id and r.api_name == "OffsetCommit")


steps = []
for second in range(13):
    if second:
        clock.advance(1_000)
    [record] = lab10.poll_one(auto)               # poll(0) until the record is there; the clock stays put
    lab10.wait_for_commits(auto)                  # let an asynchronous auto-commit be answered
    now_committed = cluster.call(committed_offset, "click-counter", CLICKS_0)
    steps.append({"t (s)": (clock.milliseconds() - created_ms) // 1000, "poll() returned offset": record.offset,
                  "OffsetCommits received": commits_received("counter-1"),
                  "committed offset": "—" if now_committed is None else now_committed})
pd.DataFrame(steps).set_index("t (s)")

# %% [markdown]
# Two commits in twelve seconds, at 5 s and 10 s: each at the start of a `poll()`, each covering what the earlier
# polls returned (at 5 s: offsets 0-4, so "next is 5"), never the record that poll hands out. Now the process
# dies right after handling offset 12 -- `lab10.crash` drops its connections and stops it, as `kill -9` would:
# no `close()`, so no last commit. A new consumer in the same group starts from the committed offset:

# %%
lab10.crash(auto)
successor = kconsumer("counter-2", "click-counter", **{"auto.offset.reset": "earliest"})
successor.assign([CLICKS_0])
resumed = []
while not resumed or resumed[-1] < 19:
    resumed += [r.offset for r in successor.poll(0.5)]
successor.close()
twice = sorted(set(resumed) & set(range(13)))
commit_times = [now["t (s)"] for before, now in zip([None, *steps], steps)
                if now["OffsetCommits received"] > (before["OffsetCommits received"] if before else 0)]
print("the successor read offsets", resumed[0], "to", resumed[-1], "| handled twice:", twice)
seen = evidence("auto-commit commits on its interval, and a crash repeats what came after the last commit", {
    "an OffsetCommit every auto.commit.interval.ms (5 s), at the start of a poll()": commit_times == [5, 10],
    "the successor started at the last committed offset, 10": resumed[0] == 10,
    "offsets 10-12 were handled twice": twice == [10, 11, 12],
    "the same as lab10.auto_commit_plan computes": lab10.auto_commit_plan(
        [s["t (s)"] * 1000 for s in steps], 5_000, 12)["redelivered"] == twice,
})
kproducer.close()
cluster.stop()
seen

# %% [markdown]
# Auto-commit is at-least-once as long as the application has finished with every record a `poll()` returned
# before it calls `poll()` again (the commit covers only what earlier polls returned). The duplicate window
# after a crash is up to `auto.commit.interval.ms` of records; a shorter interval means fewer duplicates and more
# OffsetCommit requests. Handing records to other threads breaks the promise: the next `poll()` may commit a
# record nobody has finished, and a crash then loses it. Such applications turn auto-commit off and commit
# themselves (section 8).

# %% [markdown]
# ## 13 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task — exercise 3 even replays it on a coordinator — so you can change the data and try
# again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Find the coordinator
#
# A cluster keeps the default 50 partitions of `__consumer_offsets`. Which partition holds group `GROUP_ID`?
# (Compute the hash yourself; `lab10.coordinator_partition` would be cheating.)

# %%
GROUP_ID = "payments-eu"
NUM_PARTITIONS = 50

# %% tags=["solution"]
h = 0
for ch in GROUP_ID:
    h = (31 * h + ord(ch)) & 0xFFFFFFFF                # keep 32 bits...
h = h - (1 << 32) if h >= 1 << 31 else h               # ...read them as a signed int
offsets_partition = abs(h) % NUM_PARTITIONS

# %%
lab10.check_coordinator_partition(offsets_partition, GROUP_ID, NUM_PARTITIONS)

# %% [markdown]
# ### Exercise 2 · Be the leader
#
# You are the leader of a group with the members below (member ids as the coordinator made them, and what each
# subscribed to). Run the **range** assignor by hand: give `{member id: {topic: [partitions]}}`.

# %%
SUBSCRIPTIONS = {"web-3-9c1d": ["clicks"], "web-1-4f2a": ["clicks", "views"], "web-2-77e0": ["clicks", "views"]}
PARTITIONS = {"clicks": 7, "views": 2}

# %% tags=["solution"]
range_answer = {
    "web-1-4f2a": {"clicks": [0, 1, 2], "views": [0]},
    "web-2-77e0": {"clicks": [3, 4], "views": [1]},
    "web-3-9c1d": {"clicks": [5, 6]},
}

# %%
lab10.check_range_assignment(range_answer, SUBSCRIPTIONS, PARTITIONS)

# %% [markdown]
# ### Exercise 3 · Who is removed, and when?
#
# A group with `session.timeout.ms` = `SESSION_MS` became Stable at t = 0. These are the times (in seconds) at
# which each member's heartbeats reach the coordinator, up to t = `UNTIL`. Which members does the coordinator
# remove, and when? Give `{member: time in seconds, or None if it is still a member at UNTIL}`.

# %%
SESSION_MS = 10_000
UNTIL = 30
HEARTBEATS = {"ana": [3, 6, 9, 12, 15, 18, 21, 24, 27, 30], "ben": [3, 6, 9, 12, 15],
              "cai": [3, 6, 14, 17, 20, 23, 26, 29], "dee": [3, 16, 19, 22]}

# %% tags=["solution"]
removed_at = {}
for member, beats in HEARTBEATS.items():
    removed_at[member] = None
    for previous, following in zip([0] + beats, beats + [None]):
        deadline = previous + SESSION_MS / 1000
        if (following is None or following > deadline) and deadline <= UNTIL:
            removed_at[member] = deadline
            break

# %%
lab10.check_session_expiry(removed_at, HEARTBEATS, SESSION_MS, UNTIL)

# %% [markdown] tags=["solution"]
# (`dee`'s heartbeat at 16 s comes too late: she was removed at 13 s, and the coordinator answers it with
# `UNKNOWN_MEMBER_ID`; her client then rejoins as a new member.)

# %% [markdown]
# ### Exercise 4 · What a crash costs
#
# A consumer reads records 0 to `N - 1` of one partition and commits once every `EVERY` records: with
# at-least-once it commits after processing each chunk of `EVERY` records; with at-most-once it commits the
# end of the chunk before processing it. The process crashes right after processing record `CRASH_AFTER`, and a
# new consumer resumes from the committed offset. For each style, which records are processed twice, and which
# never? Give `{"at-least-once": {"reprocessed": [...], "lost": [...]}, "at-most-once": {...}}`.

# %%
N, EVERY, CRASH_AFTER = 10, 3, 7

# %% tags=["solution"]
chunk_start = CRASH_AFTER // EVERY * EVERY              # the chunk the crash happens in: 6, 7, 8
chunk_end = min(chunk_start + EVERY, N)
delivery = {
    "at-least-once": {"reprocessed": list(range(chunk_start, CRASH_AFTER + 1)), "lost": []},
    "at-most-once": {"reprocessed": [], "lost": list(range(CRASH_AFTER + 1, chunk_end))},
}

# %%
lab10.check_delivery(delivery, N, EVERY, CRASH_AFTER)

# %% [markdown]
# ### Exercise 5 · Where does each consumer start?
#
# A partition's log holds offsets `LOG_START` to `LOG_END - 1` (retention deleted everything before
# `LOG_START`). Five consumers, each in its own group, are assigned the partition; `CASES` gives each one's
# `auto.offset.reset` and the offset its group has committed (`None`: nothing committed). Which offset does each
# fetch first? Where Java's consumer throws instead, give the exception's name (`"NoOffsetForPartitionException"`
# or `"OffsetOutOfRangeException"`).

# %%
LOG_START, LOG_END = 100, 250
CASES = {"reports": ("latest", 180), "audit": ("earliest", None), "alerts": ("latest", None),
         "archive": ("earliest", 40), "billing": ("none", None)}

# %% tags=["solution"]
first_offsets = {"reports": 180, "audit": 100, "alerts": 250, "archive": 100,
                 "billing": "NoOffsetForPartitionException"}

# %%
lab10.check_start_offsets(first_offsets, LOG_START, LOG_END, CASES)

# %% [markdown] tags=["solution"]
# (`reports` has a committed offset inside the log: the policy is not asked. `archive` committed 40, which
# retention has deleted since: the fetch at 40 answers `OFFSET_OUT_OF_RANGE`, and `earliest` moves it to 100.
# `alerts` starts at 250, the log end: it reads only what is written from now on. With `none`, `billing` with
# a committed offset of 40 would have thrown `OffsetOutOfRangeException` instead.)

# %% [markdown]
# ### Exercise 6 · Auto-commit and a crash
#
# A consumer with `enable.auto.commit=true` and `auto.commit.interval.ms` = `INTERVAL_MS` is created at t = 0.
# Its `poll()` number `k` (counting from 0) happens at `POLL_TIMES_MS[k]` and returns record `k`, which the
# application handles before polling again. The process is killed right after handling record `CRASH_AFTER`.
# Which records does its successor in the group hand out a second time? Give their offsets as a list.

# %%
INTERVAL_MS = 2_000
POLL_TIMES_MS = [0, 700, 1_400, 2_100, 2_800, 3_500, 4_200, 4_900, 5_600, 6_300]
CRASH_AFTER = 8

# %% tags=["solution"]
next_commit, last_commit = INTERVAL_MS, 0
for k, t in enumerate(POLL_TIMES_MS[:CRASH_AFTER + 1]):
    if t >= next_commit:                          # at the start of poll k: commit what polls 0..k-1 returned
        next_commit, last_commit = t + INTERVAL_MS, k
handled_twice = list(range(last_commit, CRASH_AFTER + 1))

# %%
lab10.check_auto_commit_duplicates(handled_twice, POLL_TIMES_MS, INTERVAL_MS, CRASH_AFTER)

# %% [markdown] tags=["solution"]
# (The auto-commits come at the polls at 2.1 s (offset 3) and 4.2 s (offset 6); the next would be due at
# 6.2 s, and the crash comes before that poll. The successor starts at 6: records 6, 7 and 8 are handled twice.)

# %% [markdown]
# ## 14 · Recap
#
# * **The coordinator** of a group is the leader of partition `abs(hashCode(group.id)) % 50` of
#   `__consumer_offsets`; clients find it with FindCoordinator. Its whole memory is that partition.
# * **A rebalance is two rounds.** JoinGroup: parked until every member rejoined (or the rebalance timeout);
#   then a new generation, a chosen protocol, a leader, and the members' subscriptions — to the leader only.
#   SyncGroup: the leader's client computes the assignment; the broker stores it and relays each member's part.
#   States: Empty → PreparingRebalance → CompletingRebalance → Stable (→ Dead).
# * **Liveness (C32).** Heartbeats every `heartbeat.interval.ms`; none for `session.timeout.ms` and the member is
#   removed; the others hear REBALANCE_IN_PROGRESS in their heartbeat answers and rejoin. `max.poll.interval.ms`
#   catches a live process that stopped polling. A member that leaves cleanly sends LeaveGroup.
# * **Partitions are spread over members**, one owner each; extra members stay idle; the assignor runs in a
#   member, not in the broker.
# * **Committed offsets (C33)** are records (group, topic, partition) → next offset in the compacted
#   `__consumer_offsets`, next to a group record per generation. Commit after processing = at-least-once,
#   before = at-most-once; exactly-once needs the offset stored with the results (or a transaction).
# * **`assign()`** (C31) joins no group and gets no rebalancing, but may still commit to the group's offsets
#   while the group has no members.
# * **Where a consumer starts (C31):** the group's committed offset; without one (or when it is out of range),
#   `auto.offset.reset`: `latest` (the default: only new records), `earliest`, or `none`
#   (`NoOffsetForPartitionException`).
# * **The poll loop is watched (C32):** no `poll()` for `max.poll.interval.ms` and the consumer leaves the group
#   itself; its partitions move, its late commit fails with `CommitFailedException`, and the records it handled
#   without committing are handled again by the new owner.
# * **Auto-commit (C33)** commits, at the start of a `poll()` once `auto.commit.interval.ms` has passed, what the
#   earlier polls returned: at-least-once if each batch is finished before the next `poll()`, with up to one
#   interval of duplicates after a crash.
#
# **Next:** lab 11, *Idempotence and transactions*: committing offsets inside a transaction, for exactly-once
# from Kafka to Kafka.
