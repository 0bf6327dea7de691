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
# 6. say what `assign()` gives up compared with `subscribe()`, and what it keeps.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C31** `assign` or `subscribe` with `group.id`, `auto.offset.reset` | a consumer that joins no group but still commits | 9 |
# | **C32** partitions spread over members, heartbeats, rebalances, the assignor runs in a member | JoinGroup / SyncGroup step by step, a member dying, three real consumers sharing six partitions | 2-5, 7 |
# | **C33** committed offsets in `__consumer_offsets`; commit timing decides the delivery semantics | the offsets topic decoded; a crash before and after the commit | 1, 6, 8 |
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
# | pictures, checks | `kafkalab/labs/lab10.py` | |

# %%
import logging
import time

import pandas as pd
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.coordinator.group.group_metadata_manager import java_string_hash
from kafkalab.coordinator.group.records import GroupMetadataKey, read_group_value, read_message_key, read_offset_value
from kafkalab.labs import lab10
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

# %%
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

# %%
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
# (alice's first JoinGroup waited 6 s, bob's SyncGroup waited for the leader's). The grey ticks are heartbeats;
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
#   leader epoch (for fencing after a leader change), optional metadata, and the commit time.
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
#   `auto.commit.interval.ms` (5 s) in the background: a crash re-delivers up to five seconds of records, and a
#   record can be "committed" before the application finished with it if processing is asynchronous.
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
# `auto.offset.reset`: `earliest`, `latest`, or fail with `error`.)

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
cluster.stop()

# %% [markdown]
# `assign()` suits a consumer that must read *specific* partitions (a replay tool, a stream processor that
# manages its own tasks) and applications that store offsets elsewhere. Mixing the two styles in one group id
# does not work: once the group has members, a commit without a member id is refused — try it on the Stable
# group of sections 2-5:

# %%
print("OffsetCommit with no member id, generation -1, while alice is a member ->",
      lab.commit(None, {(TOPIC, 0): 99}))

# %% [markdown]
# ## 10 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task — exercise 3 even replays it on a coordinator — so you can change the data and try
# again.
#
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); `scripts/build_labs.py --student DIR` writes a copy where they are replaced by `...`.
#
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
# ## 11 · Recap
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
#
# **Next:** lab 11, *Idempotence and transactions*: committing offsets inside a transaction, for exactly-once
# from Kafka to Kafka.
