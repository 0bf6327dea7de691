# Source of labs/11_transactions.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 11
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 11 · Idempotence and transactions
#
# The idempotent producer of lab 05 makes a *retry* harmless: the leader recognises a batch it already has.
# It does nothing for an application that writes to two partitions and dies in between, or that reads a
# record, writes a result and crashes before committing its offset: after a restart, the record is processed
# again and the result written twice. **Transactions** close that gap. A producer with a `transactional.id`
# writes to several partitions, and commits a consumer group's offsets, as one unit: all of it becomes visible
# to `read_committed` consumers, or none of it. This lab takes a transaction apart — on the wire, inside the
# coordinator that runs it, and in the log — and then crashes a consume-process-produce loop and counts.
#
# **By the end of this lab you can**
#
# 1. say what the idempotent producer guarantees and where it stops;
# 2. name the requests of a transaction in order, and which broker each goes to;
# 3. walk the transaction coordinator's state machine and read the records it writes to `__transaction_state`;
# 4. find the COMMIT/ABORT markers and the `.txnindex` in a partition's log;
# 5. tell the last stable offset (LSO) from the high watermark, and predict what `read_committed` returns;
# 6. explain how an epoch fences a zombie producer;
# 7. show, by counting, that consume-process-produce with transactions survives a crash with exactly one
#    output per input.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C30** the idempotent producer: producer id and sequence numbers | the batch headers; a restart that writes twice | 1 |
# | **C34** transactions: atomic writes, offsets in the transaction, read_committed | the requests, the coordinator, markers, LSO, a fenced zombie | 2-6 |
# | **C33** exactly-once needs the offsets stored with the results | a consume-process-produce loop crashed and counted | 7 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka, 3.9) |
# |---|---|---|
# | the state machine | `kafkalab/coordinator/transaction/state.py` | `core/.../coordinator/transaction/TransactionMetadata.scala` (`TransactionState`) |
# | InitProducerId, AddPartitionsToTxn, EndTxn, fencing | `kafkalab/coordinator/transaction/coordinator.py` | `TransactionCoordinator.scala` |
# | the records of `__transaction_state` | `kafkalab/coordinator/transaction/transaction_log.py` | `TransactionLog.scala` |
# | WriteTxnMarkers, sent by the coordinator | `kafkalab/coordinator/transaction/marker_channel.py` | `TransactionMarkerChannelManager.scala` |
# | markers, LSO, `.txnindex` on the leader | `kafkalab/storage/log.py`, `producer_state.py`, `transaction_index.py` | `UnifiedLog.scala`, `ProducerStateManager.java`, `TransactionIndex.java` |
# | the producer's side | `kafkalab/clients/producer/transaction_manager.py` | `clients/.../producer/internals/TransactionManager.java` |
# | pictures, the step-by-step coordinator, checks | `kafkalab/labs/lab11/` | — |

# %%
import logging
import time

import pandas as pd
from confluent_kafka import Consumer as LibrdkafkaConsumer
from confluent_kafka import TopicPartition

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog, History
from kafkalab.clients import Admin, Consumer, Producer
from kafkalab.clients.consumer import ConsumerGroupMetadata
from kafkalab.clients.producer.transaction_state import ProducerFencedError
from kafkalab.coordinator.transaction import VALID_PREVIOUS_STATES, TransactionState
from kafkalab.coordinator.transaction.transaction_log import read_txn_record_key, read_txn_record_value
from kafkalab.labs import lab11
from kafkalab.protocol import ErrorCode
from kafkalab.records import decode_batches

pd.set_option("display.max_colwidth", 120)
broker_log = BrokerLog().install()                       # the brokers' warnings: kept in a list, not on stderr
librdkafka_log = logging.getLogger("kafkalab.lab11.librdkafka")   # confluent-kafka logs go here, not to stderr
librdkafka_log.addHandler(logging.NullHandler())
librdkafka_log.propagate = False
T0, TXN_ID, GROUP, OUTPUT, INPUT = lab11.T0, lab11.TXN_ID, lab11.GROUP, lab11.OUTPUT, lab11.INPUT


def batches(partition_dir):
    """Every batch in a partition directory's .log files."""
    return [b for f in sorted(partition_dir.glob("*.log")) for b in decode_batches(f.read_bytes(), allow_partial=True)]

# %% [markdown]
# ## 1 · Where idempotence stops
#
# A recap of lab 05 on one broker. An idempotent producer (the default) first asks for a **producer id**
# (InitProducerId, without a transactional id), and stamps every batch with it, an **epoch** and a **base
# sequence** per partition. The leader keeps the last five batches of each producer and answers a retry it
# already has with the original offset instead of appending it again.
#
# Producer `till-1` sends three payments. Then the application restarts (a new producer) and, not knowing
# whether the last one arrived, sends it again:

# %%
solo = Cluster(brokers=1, overrides=lab11.OVERRIDES).start()
solo.create_topic("ledger", partitions=1)
with Producer({"bootstrap.servers": solo.bootstrap_servers, "client.id": "till-1", "linger.ms": 0}) as till:
    for i in range(3):
        till.send("ledger", b"payment-%d" % i, partition=0, timestamp=T0 + i).result(10)
with Producer({"bootstrap.servers": solo.bootstrap_servers, "client.id": "till-1", "linger.ms": 0}) as restarted:
    restarted.send("ledger", b"payment-2", partition=0, timestamp=T0 + 2).result(10)
pd.DataFrame([{"offset": b.base_offset + r.offset_delta, "value": r.value.decode(), "producerId": b.producer_id,
               "producerEpoch": b.producer_epoch, "sequence": b.base_sequence + r.offset_delta,
               "isTransactional": b.is_transactional}
              for b in batches(solo.base_dir / "broker-0" / "ledger-0") for r in b.records]).set_index("offset")

# %%
solo.stop()

# %% [markdown]
# `payment-2` is in the log twice. The leader could not tell: the second copy came from **another producer
# id** (1), with sequence 0. Idempotence is a promise about one producer *session* and one partition:
#
# * a retry of the same batch by the same producer is harmless (lab 05, lab 13);
# * a restarted producer gets a new producer id, and the application sending again is not a retry;
# * two partitions are two sequences: a producer that dies after writing to one and before the other leaves
#   half its work behind.
#
# The fix for all three is to give the producer an identity that outlives it — a **`transactional.id`** — and
# to make several writes (and the consumer's offsets) succeed or fail together.

# %% [markdown]
# ## 2 · A transaction on the wire
#
# Four brokers, each with one role in our transaction:
#
# * the **transaction coordinator** of `transactional.id` `checkout` is the leader of partition
#   `abs(hashCode("checkout")) % 50` of the internal topic **`__transaction_state`** — the same rule as for
#   groups and `__consumer_offsets` (lab 10);
# * the leaders of the two partitions of `receipts` we write to;
# * the **group coordinator** of group `billing`, whose offsets the transaction commits.
#
# A broker creates the two internal topics on first use and places their leaders wherever its (random)
# assignment lands. To have each role on its own broker in every run, we create them ourselves, with
# `lab11.place_internal_topics`: partition `p` led by broker `p % 4`, except the two partitions that matter.

# %%
cluster = Cluster(brokers=4, overrides=lab11.OVERRIDES).start()
placed = lab11.place_internal_topics(cluster, transaction_coordinator=0, group_coordinator=3)
# segment.ms: our records carry 2023 timestamps; a marker stamped with today's time would otherwise start a new
# segment (Kafka rolls when a batch's timestamp is segment.ms past the segment's first), and section 4 wants one
cluster.create_topic(OUTPUT, assignment={0: [1], 1: [2]}, config={"segment.ms": 100 * 365 * 24 * 3600 * 1000})
cluster.create_topic(INPUT, assignment={0: [1]})
print(f"transactional.id {TXN_ID!r} -> __transaction_state-{placed['__transaction_state']}, leader "
      f"{cluster.partition_state('__transaction_state', placed['__transaction_state'])['leader']}")
print(f"group {GROUP!r} -> __consumer_offsets-{placed['__consumer_offsets']}, leader "
      f"{cluster.partition_state('__consumer_offsets', placed['__consumer_offsets'])['leader']}")

with Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "cashier", "linger.ms": 0,
               "enable.idempotence": False, "acks": "all"}) as cashier:     # the input: 12 payments, no transaction
    for i in range(12):
        cashier.send(INPUT, b"payment-%d" % i, partition=0, timestamp=T0 + i)

# %% [markdown]
# A `WireTap` keeps every request the four brokers take from their request channels, in the one order the
# cluster's event loop handled them. Then the producer `checkout-1` runs one transaction: it has processed
# payments 0 and 1 (pretend), writes a receipt for each to a different partition, and commits the group's
# position on the input, offset 2, **inside the transaction**.

# %% tags=["figure:txn_on_the_wire"]
tap = lab11.WireTap(cluster).install()
producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "checkout-1",
                     "transactional.id": TXN_ID, "linger.ms": 0})
producer.init_transactions()
producer.begin_transaction()
producer.send(OUTPUT, b"receipt-0", partition=0, timestamp=T0).result(10)
producer.send(OUTPUT, b"receipt-1", partition=1, timestamp=T0 + 1).result(10)
producer.send_offsets_to_transaction({(INPUT, 0): 2}, ConsumerGroupMetadata(GROUP))
producer.commit_transaction()


def txn_state(transactional_id, broker_id=0):
    entry = cluster.brokers[broker_id].transaction_coordinator.state_manager.get_transaction_state_or_none(
        transactional_id)
    return str(entry.transaction_metadata.state) if entry else None


cluster.wait_until(lambda: txn_state(TXN_ID) == "CompleteCommit", 10, "the markers were not written")
roles = {0: "transaction coordinator", 1: f"leader of {OUTPUT}-0", 2: f"leader of {OUTPUT}-1",
         3: "group coordinator"}
diagram = lab11.sequence_diagram(tap, "checkout-1", roles, title="One transaction, as the brokers received it")
tap.remove()
diagram

# %% [markdown]
# (ApiVersions and Metadata are left out.) Read it from the top:
#
# 1. **FindCoordinator** with key type 1 (a transactional id): any broker computes the partition and answers
#    with its leader.
# 2. **InitProducerId** with the transactional id: the coordinator gives the producer id and an epoch, and
#    writes them to `__transaction_state`. (It would also fence and abort an older producer with this id:
#    section 6.)
# 3. **AddPartitionsToTxn** before the *first* batch to each partition: the coordinator must know every
#    partition that will need a marker, before data can land there.
# 4. **Produce** to each leader, as always, but the batches carry the transactional flag.
# 5. **AddOffsetsToTxn** (the group): the coordinator adds the group's `__consumer_offsets` partition.
# 6. **TxnOffsetCommit** to the *group coordinator* (found with FindCoordinator, key type 0): the offsets are
#    written, but kept **pending**: OffsetFetch does not return them yet.
# 7. **EndTxn(COMMIT)**: the coordinator writes PrepareCommit and answers. From here the transaction *will*
#    commit, whatever fails.
# 8. **WriteTxnMarkers**, from the coordinator to every leader involved — including the group coordinator's
#    `__consumer_offsets` partition, where the marker makes the pending offsets real. Each leader appends a
#    COMMIT marker. The coordinator sends them on the inter-broker listener, as a client with Kafka's client
#    id `broker-0-txn-marker-sender`.
#
# That is the protocol of Kafka 3.x clients, which is what every client of this course speaks. Two later
# changes (KIP-890) do not show here. Since Kafka 3.6 a leader that gets the first transactional batch of a
# producer asks the coordinator (AddPartitionsToTxn v4, `verify_only`) whether the partition is really in the
# transaction (`transaction.partition.verification.enable`, default true; kafkalab's leaders do not ask). With
# Kafka 4's transaction version 2 and a 4.x Java producer, steps 3 and 5 move to the brokers (a Produce v12 or
# a TxnOffsetCommit v5 implies them), and EndTxn v5 bumps the producer epoch at every commit or abort.
#
# What the coordinator wrote to `__transaction_state` along the way, read from broker 0's disk:

# %%
txn_dir = cluster.base_dir / "broker-0" / f"__transaction_state-{placed['__transaction_state']}"
rows = []
for b in batches(txn_dir):
    for r in b.records:
        v = read_txn_record_value(r.value)
        rows.append({"offset": b.base_offset + r.offset_delta, "key": read_txn_record_key(r.key),
                     "state": str(TransactionState.from_id(v.transaction_status)), "producerId": v.producer_id,
                     "producerEpoch": v.producer_epoch, "timeout (ms)": v.transaction_timeout_ms,
                     "partitions": ", ".join(f"{t}-{p}" for t, ps in (v.transaction_partitions or ()) for p in ps)})
pd.DataFrame(rows).set_index("offset")

# %% [markdown]
# Every change of the transaction's metadata is a record, appended (with `acks=all` to the partition's ISR)
# *before* the coordinator answers: a coordinator that dies is replaced by the new leader of the partition,
# which reads it back and carries on — including sending the markers of a transaction it finds in
# PrepareCommit. The timeout is the producer's `transaction.timeout.ms` (60 s by default).

# %% [markdown]
# ## 3 · The coordinator, step by step
#
# The broker above ran kafkalab's `TransactionCoordinator`: a sans-IO class that gets requests through method
# calls, appends through a callback, and reads time from an injected clock. `lab11.LabCoordinator` drives the
# same class with a `MockTime` and an in-memory `__transaction_state`, and plays the partition leaders: their
# markers are written only when we say so. The same transaction, one request at a time (producer ids start at
# 4000 here):

# %%
lab = lab11.LabCoordinator(leaders={(OUTPUT, 0): 1, (OUTPUT, 1): 2, ("__consumer_offsets", placed["__consumer_offsets"]): 3})
r = lab.init_producer_id(TXN_ID)
pid, epoch = r.producer_id, r.producer_epoch
lab.add_partitions(TXN_ID, pid, epoch, [(OUTPUT, 0)])
lab.add_partitions(TXN_ID, pid, epoch, [(OUTPUT, 1)])
lab.add_partitions(TXN_ID, pid, epoch, [(OUTPUT, 1)])             # a retry: nothing new
lab.add_offsets(TXN_ID, pid, epoch, GROUP)
lab.advance(1_000)
lab.end_txn(TXN_ID, pid, epoch, commit=True)
lab.advance(1_000)
lab.init_producer_id(TXN_ID)                                      # too early: the markers are not written yet
pd.DataFrame(lab.steps)

# %% [markdown]
# * **Empty** after InitProducerId: an id with a producer id and epoch, no transaction.
# * **Ongoing** from the first AddPartitionsToTxn. Adding a partition that is already in the transaction
#   changes nothing and is answered at once.
# * **PrepareCommit** after EndTxn — and the answer NONE comes now, before any marker is written. The
#   coordinator has already prepared the next step, CompleteCommit (`pending`), for when the markers are done.
# * Meanwhile any request for this id gets **CONCURRENT_TRANSACTIONS** (51): the client retries.
#
# Now the three leaders write their markers:

# %%
pd.DataFrame(lab.write_markers(TXN_ID))

# %%
lab.init_producer_id(TXN_ID)
pd.DataFrame(lab.steps[-2:])

# %% [markdown]
# The coordinator checks every transition against one table, `VALID_PREVIOUS_STATES` (Kafka's
# `validPreviousStates`): for each state, the states it may be entered *from*. The id is the byte written as
# the state in `__transaction_state`.

# %%
pd.DataFrame([{"state": str(state), "id": state.id, "may be entered from": ", ".join(sorted(str(p) for p in previous))}
              for state, previous in VALID_PREVIOUS_STATES.items()]).set_index("state")

# %% [markdown]
# The same table as a picture, with the reason for each edge (`kafkalab.coordinator.transaction.state.TRANSITIONS`)
# and the path this id took in blue:

# %% tags=["figure:txn_states"]
lab.state_machine(TXN_ID)

# %% [markdown]
# Why may PrepareCommit never go back to Ongoing? Because the decision is durable and some leaders may already
# have their marker: the only way out is forward. PrepareAbort is reached from Ongoing (EndTxn(ABORT), or a
# timeout) and from **PrepareEpochFence**, a state only ever *pending*: a new producer with the same id, or
# the timeout scanner, is bumping the epoch of an Ongoing transaction before aborting it (section 6).
#
# And the records, decoded from the in-memory `__transaction_state` (times in seconds since the clock started):

# %%
pd.DataFrame(lab.records(TXN_ID)).set_index("offset")

# %% [markdown]
# ## 4 · Markers in the log
#
# A marker is a **control batch**: one record whose key says COMMIT (1) or ABORT (0) and whose value holds
# the coordinator's epoch, stamped with the producer id and epoch of the transaction it ends. It takes an
# offset like any record. Here is `receipts-0` on broker 1, with `kafkalab dump-log` (Kafka's
# `kafka-dump-log.sh`):

# %%
receipts0 = cluster.base_dir / "broker-1" / f"{OUTPUT}-0"
print(lab11.dump_log(receipts0, ["00000000000000000000.log"], "--deep-iteration", "--print-data-log"))

# %% [markdown]
# Offset 0 is the receipt (`isTransactional: true`), offset 1 the COMMIT marker (`isControl: true`, no
# sequence; the broker stamps it with its own clock, which `lab11.dump_log` prints as `<broker time>`, and
# `<crc>` for the checksum that covers it). A
# consumer reads the marker but never returns it: the offsets of a transactional topic have **gaps**, and
# "the next offset" is not "the last offset + 1".
#
# Now a transaction that aborts. The leader also notes each aborted transaction in the segment's
# **transaction index** (`.txnindex`): producer id, first and last offset, and the LSO at the time. A
# read_committed Fetch gets the aborted transactions in its range from there, so the consumer can drop their
# batches without looking at every marker.

# %%
producer.begin_transaction()
producer.send(OUTPUT, b"receipt-void", partition=0, timestamp=T0 + 2).result(10)
producer.abort_transaction()
cluster.wait_until(lambda: txn_state(TXN_ID) == "CompleteAbort", 10, "the abort markers were not written")
print(lab11.dump_log(receipts0, ["00000000000000000000.log"], "--deep-iteration", "--print-data-log"))
print(lab11.dump_log(receipts0, ["00000000000000000000.txnindex"]))

# %% [markdown]
# The aborted record is still in the log (offset 2), followed by its ABORT marker (offset 3); the
# `.txnindex` says offsets 2 to 3 of producer 0 were aborted. Nothing is ever removed: transactions are
# decided by markers, and it is the *reader* that skips.

# %% [markdown]
# ## 5 · The last stable offset
#
# A consumer with `isolation.level=read_committed` must not return a record of a transaction that is still
# open: it might abort. So the leader keeps, next to the high watermark, the **last stable offset**: the first
# offset of the earliest transaction not yet decided (or the high watermark, if there is none). read_committed
# fetches stop there — for *all* records after it, transactional or not, because records are returned in
# offset order.
#
# The producer opens a transaction and writes to `receipts-0`; then a plain producer (`clerk`, no
# transaction) writes a note after it:

# %% tags=["figure:log_open_txn"]
producer.begin_transaction()
producer.send(OUTPUT, b"receipt-open", partition=0, timestamp=T0 + 3).result(10)
with Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "clerk", "linger.ms": 0,
               "enable.idempotence": False, "acks": "all"}) as clerk:
    clerk.send(OUTPUT, b"note", partition=0, timestamp=T0 + 4).result(10)


def offsets(topic, partition, broker_id):
    def read():
        log = cluster.brokers[broker_id].replica_manager.get_partition(topic, partition).log
        return {"LEO": log.log_end_offset, "HW": log.high_watermark, "LSO": log.last_stable_offset}
    return cluster.call(read)


marks = offsets(OUTPUT, 0, 1)
with Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab11-admin"}) as admin:
    latest = {level: admin.list_offsets({(OUTPUT, 0): "latest"}, isolation_level=level)
              for level in ("read_uncommitted", "read_committed")}
print("on the leader:", marks)
print("ListOffsets(latest):", {level: next(iter(r.values())).offset for level, r in latest.items()})
lab11.LogStrip(lab11.log_entries(receipts0), marks["HW"], last_stable_offset=marks["LSO"],
               log_end_offset=marks["LEO"], title=f"{OUTPUT}-0 with a transaction open")

# %% [markdown]
# ListOffsets with `isolation_level` 1 (read_committed) answers "latest" with the LSO, not the high
# watermark. Two consumers read `receipts-0` from the beginning, ours with each isolation level; each polls
# until its position stops moving:

# %%
def read_from_start(isolation, client_id):
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id,
                   "isolation.level": isolation, "auto.offset.reset": "earliest"}) as c:
        c.assign([(OUTPUT, 0)])
        values, deadline, last = [], time.monotonic() + 10, None
        while time.monotonic() < deadline:
            values += [(r.offset, r.value.decode()) for r in c.poll(0.3)]
            position = c.position((OUTPUT, 0))
            if position == last and position >= (marks["LSO"] if isolation == "read_committed" else marks["HW"]):
                return values, position
            last = position
    raise RuntimeError(f"{client_id} did not get to the end")


seen = {level: read_from_start(level, f"reader-{level}") for level in ("read_uncommitted", "read_committed")}
pd.DataFrame([{"isolation.level": level, "records returned": values, "position": position}
              for level, (values, position) in seen.items()]).set_index("isolation.level")

# %% [markdown]
# * **read_uncommitted** returns everything below the high watermark: the aborted receipt, the open one, the
#   note. It skips only the markers (which it reads: its position is past them).
# * **read_committed** stops at the LSO, 4: it returns `receipt-0` only. The aborted receipt was dropped
#   (the Fetch answer listed its transaction as aborted), and the `note` — although it belongs to no
#   transaction — waits behind the open one.
#
# Real clients agree. librdkafka (confluent-kafka) is `read_committed` by default — as are kcat and kafkajs;
# the Java client, kafka-python and aiokafka default to read_uncommitted:

# %%
real = LibrdkafkaConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "audit",
                           "client.id": "audit-librdkafka", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "logger": librdkafka_log,
                           "client.software.name": "kafkalab-lab", "client.software.version": "1.0"})
real.assign([TopicPartition(OUTPUT, 0, 0)])


def librdkafka_read(until_position, timeout=15):
    got, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = real.poll(0.2)
        if m is not None and m.error() is None:
            got.append((m.offset(), m.value().decode()))
        if real.position([TopicPartition(OUTPUT, 0)])[0].offset >= until_position and m is None:
            return got
    raise RuntimeError(f"librdkafka read only {got}")


print("confluent-kafka, default isolation.level:", librdkafka_read(marks["LSO"]))

# %% [markdown]
# Now the producer commits. The marker lands at offset 6, the LSO jumps to the high watermark, and the
# consumer that was held back gets the open receipt and the note:

# %% tags=["figure:log_committed"]
producer.commit_transaction()
cluster.wait_until(lambda: txn_state(TXN_ID) == "CompleteCommit", 10, "the markers were not written")
marks = offsets(OUTPUT, 0, 1)
print("on the leader:", marks)
print("confluent-kafka goes on:", librdkafka_read(marks["LSO"]))
real.close()
lab11.LogStrip(lab11.log_entries(receipts0), marks["HW"], last_stable_offset=marks["LSO"],
               log_end_offset=marks["LEO"], title=f"{OUTPUT}-0 after the commit")

# %% [markdown]
# A transaction that stays open holds every read_committed consumer of its partitions back. That is why a
# transaction has a timeout (`transaction.timeout.ms`, at most the broker's `transaction.max.timeout.ms`,
# 15 minutes): the coordinator aborts one that runs longer, so that a producer which hung does not stop its
# readers for good.
#
# Waiting a minute in a notebook is dull; the step-by-step coordinator of section 3 has a clock we move by
# hand. A producer `stuck` begins a transaction with the default 60 s timeout and never ends it. Every
# `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s) the coordinator looks for transactions
# older than their timeout:

# %%
clock = lab11.LabCoordinator()
r = clock.init_producer_id("stuck", timeout_ms=60_000)
clock.add_partitions("stuck", r.producer_id, r.producer_epoch, [(OUTPUT, 0)])
for _ in range(5):
    clock.advance(15_000)
    m = clock.metadata("stuck")
    print(f"t={clock.now:g} s  state {m.state}, epoch {m.producer_epoch}")
clock.write_markers()
late = clock.add_partitions("stuck", r.producer_id, r.producer_epoch, [(OUTPUT, 0)])
print("the stuck producer's next request is answered", ErrorCode(late).name)
pd.DataFrame(clock.records("stuck")).set_index("offset")

# %% [markdown]
# The first scan after the 60 s was due at 70 s; our clock jumps 15 s at a time, so it ran at 75 s. The
# coordinator bumped the epoch and aborted, exactly as
# it fences a zombie (section 6): the ABORT markers carry epoch 1, and the producer that hung is fenced if it
# ever wakes up.

# %% [markdown]
# ## 6 · A zombie is fenced
#
# `checkout-1` is still alive. Say its process freezes in the middle of a transaction (a long GC pause, a
# network partition), and the application's supervisor starts a replacement, `checkout-2`, with the **same**
# `transactional.id`. The old one wakes up later and tries to commit:

# %%
producer.begin_transaction()
producer.send(OUTPUT, b"receipt-zombie", partition=1, timestamp=T0 + 5).result(10)
with Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab11-admin"}) as admin:
    before = admin.describe_transactions([TXN_ID])[TXN_ID]
successor = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "checkout-2",
                      "transactional.id": TXN_ID, "linger.ms": 0})
successor.init_transactions()              # fences checkout-1 and aborts its transaction
with Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "lab11-admin"}) as admin:
    after = admin.describe_transactions([TXN_ID])[TXN_ID]
try:
    producer.commit_transaction(timeout=10)
except ProducerFencedError as e:
    print("checkout-1 commit_transaction():", type(e).__name__, "-", e)
pd.DataFrame([{"when": w, "state": d.state, "producerId": d.producer_id, "producerEpoch": d.producer_epoch,
               "partitions": ", ".join(f"{t}-{p}" for t, p in sorted(d.topic_partitions))}
              for w, d in [("checkout-1's transaction open", before), ("after checkout-2's InitProducerId", after)]]
             ).set_index("when")

# %% [markdown]
# `checkout-2`'s InitProducerId found the id's transaction Ongoing. The coordinator then:
#
# 1. **fenced** it: bumped the epoch (0 → 1) and wrote PrepareAbort with it (through the pending
#    PrepareEpochFence);
# 2. wrote ABORT markers to the transaction's partitions with the new epoch — a leader now refuses anything
#    from this producer id with an older epoch;
# 3. answered CONCURRENT_TRANSACTIONS; `checkout-2` retried, and got epoch **2**.
#
# `checkout-1`, still at epoch 0, is told **PRODUCER_FENCED** (90) by the coordinator (a leader would say
# INVALID_PRODUCER_EPOCH, 47). It is fatal: the producer can only be closed. In the log of `receipts-1`:

# %%
pd.DataFrame([{"offset": b.base_offset, "what": "marker" if b.is_control_batch else r.value.decode(),
               "producerId": b.producer_id, "producerEpoch": b.producer_epoch}
              for b in batches(cluster.base_dir / "broker-2" / f"{OUTPUT}-1") for r in b.records]).set_index("offset")

# %% [markdown]
# The zombie's receipt (epoch 0) is followed by an ABORT marker with epoch 1. That is the point of a
# *stable* `transactional.id`: the restarted instance of the same logical producer must use the same id, so
# that its InitProducerId finishes (aborts) whatever its predecessor left open and shuts the predecessor out.

# %%
producer.close(0)
successor.close()

# %% [markdown]
# ## 7 · Exactly once: consume, process, produce — and crash
#
# The `payments` topic holds 12 payments; group `billing` committed offset 2 in section 2, with receipts 0 and
# 1. A processor reads payments with a read_committed consumer (no group membership: `assign()`, lab 10), and
# for every 3 payments runs one transaction: a receipt per payment (to partition `n % 2`), plus the input
# offset after the last one, sent with `send_offsets_to_transaction(..., consumer.group_metadata())`.
#
# The first instance commits one transaction, then **crashes** in the second one: it has written the receipts
# and sent the offsets, but never commits. (It just stops; nothing is closed.) A second instance starts with the
# same `transactional.id`, and the same group. A `History` (the checker of lab 13) records what each
# instance sent, and which transaction each receipt belonged to.

# %%
history = History()
PROCESSOR_ID = "payments-processor"
sent = set()                                      # every receipt value the processors sent (unique per send)


def processor(name, crash_in_transaction=None):
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": f"{name}-in",
                         "group.id": GROUP, "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    out = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": name,
                    "transactional.id": PROCESSOR_ID, "linger.ms": 0})
    out.init_transactions()                       # fences the previous instance, aborting what it left open
    consumer.assign([(INPUT, 0)])
    start = consumer.position((INPUT, 0))
    pending, done, deadline = [], 0, time.monotonic() + 30
    while time.monotonic() < deadline:
        pending += consumer.poll(0.3)
        if not pending:
            if consumer.position((INPUT, 0)) == 12:
                break
            continue
        chunk, pending = pending[:3], pending[3:]
        txn = history.transaction(process=name)
        out.begin_transaction()
        for record in chunk:
            n = int(record.value.split(b"-")[1])
            receipt = b"receipt-%d/%s" % (n, name.encode())      # which instance wrote it: values stay unique
            sent.add(receipt.decode())
            op = txn.send(receipt.decode(), source=record.value.decode())
            meta = out.send(OUTPUT, receipt, partition=n % 2, timestamp=T0 + 100 + n).result(10)
            op.ok(meta.partition, meta.offset)
        out.send_offsets_to_transaction({(INPUT, 0): chunk[-1].offset + 1}, consumer.group_metadata())
        done += 1
        if done == crash_in_transaction:
            txn.info("crashed before commit_transaction()")
            consumer.close()
            return start, [r.offset for r in chunk], out          # the zombie: never committed, never closed
        out.commit_transaction()
        txn.commit()
    consumer.close()
    out.close()
    return start, None, None


first = processor("processor-1", crash_in_transaction=2)
print(f"processor-1 started at offset {first[0]} and crashed while processing offsets {first[1]}")
second = processor("processor-2")
print(f"processor-2 started at offset {second[0]} (the committed offset) and read to the end")
first[2].close(0)                                 # the zombie's threads; anything it tries now is fenced

# %% [markdown]
# processor-2 started at 5: the offset committed with the *first* transaction. The second transaction's
# offset (8) was never committed — its receipts for payments 5, 6 and 7 are in the log, but aborted (by the
# fence, when processor-2 called `init_transactions()`), so processor-2 processed those payments again.
#
# Count the receipts, with each isolation level:

# %%
def read_receipts(isolation):
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": f"count-{isolation}",
                   "isolation.level": isolation, "auto.offset.reset": "earliest"}) as c:
        c.assign([(OUTPUT, 0), (OUTPUT, 1)])
        got, deadline = [], time.monotonic() + 15
        ends = {p: offsets(OUTPUT, p, 1 + p)["LSO"] for p in (0, 1)}
        while time.monotonic() < deadline and any(c.position((OUTPUT, p)) < ends[p] for p in (0, 1)):
            got += c.poll(0.3)
    history.poll([(r.partition, r.offset, r.value.decode()) for r in got if r.value.decode() in sent],
                 process=f"count-{isolation}", read_committed=isolation == "read_committed")
    return [r.value.decode() for r in got]


counts = {}
for isolation in ("read_uncommitted", "read_committed"):
    payments = [v.split("/")[0] for v in read_receipts(isolation)]
    counts[isolation] = [payments.count(f"receipt-{n}") for n in range(12)]
pd.DataFrame(counts, index=[f"payment-{n}" for n in range(12)]).T

# %% [markdown]
# read_uncommitted counts receipts 5, 6 and 7 twice: once from the crashed transaction, once from the redo.
# **read_committed counts exactly one receipt per payment.** The crash cost some work, which was done again,
# but nothing done twice is visible: the first attempt's receipts and its offset commit were one transaction,
# and it aborted as a whole. Compare lab 10's at-least-once, where the redo and the original were both
# visible.
#
# The history checker agrees (receipts 2 to 11, which the processors sent; its `duplicate-output` anomaly
# would be two visible outputs from the same input):

# %%
verdict = history.check()
print("valid:", verdict.valid, "| anomalies:", {k: len(v) for k, v in verdict.anomalies.items() if v})
verdict

# %%
cluster.stop()

# %% [markdown]
# Exactly-once here means: *the effects visible to read_committed consumers* are those of exactly one
# processing of each input. It holds from Kafka to Kafka. A side effect outside Kafka (an e-mail, a call to a
# payment service) made by the crashed attempt happened all the same; for those you still need idempotent
# receivers.

# %% [markdown]
# ## 8 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task — exercises 3 and 4 replay it on a `LabCoordinator` — so you can change the data
# and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Find the transaction coordinator
#
# A cluster keeps the default 50 partitions of `__transaction_state`. Which partition holds the
# transactional id `TRANSACTIONAL_ID`? (Compute Java's `hashCode` yourself, as in lab 10.)

# %%
TRANSACTIONAL_ID = "refund-writer"
NUM_PARTITIONS = 50

# %% tags=["solution"]
h = 0
for ch in TRANSACTIONAL_ID:
    h = (31 * h + ord(ch)) & 0xFFFFFFFF
h = h - (1 << 32) if h >= 1 << 31 else h
txn_partition = abs(h) % NUM_PARTITIONS

# %%
lab11.check_txn_partition(txn_partition, TRANSACTIONAL_ID, NUM_PARTITIONS)

# %% [markdown]
# ### Exercise 2 · What does read_committed return?
#
# A partition's log, one entry per offset (offset = position): `(producer id or None, kind)`, where kind is
# `"data"`, or a marker `"COMMIT"` / `"ABORT"` of that producer's transaction. No producer id means a plain
# record, written without a transaction. The high watermark is `HW`. Which offsets does a read_committed
# consumer return, reading from offset 0? (`lab11.LogStrip(LOG, HW)` draws it — but it also shows the LSO.)

# %%
LOG = [(7, "data"), (None, "data"), (7, "data"), (8, "data"), (7, "COMMIT"), (9, "data"), (None, "data"),
       (8, "ABORT"), (9, "data"), (None, "data"), (10, "data"), (9, "COMMIT")]
HW = 11

# %% tags=["solution"]
read_committed_offsets = [0, 1, 2]

# %%
lab11.check_read_committed(read_committed_offsets, LOG, HW)

# %% [markdown] tags=["solution"]
# (The trap is offset 11: producer 9's COMMIT is in the leader's log but not below the high watermark, so not
# yet replicated. Until it is, the leader treats that transaction as undecided — a new leader might not have
# the marker — and the LSO stays at its first offset, 5. Draw it: `lab11.LogStrip(LOG, HW)`.)

# %% [markdown]
# ### Exercise 3 · Epochs after a fence
#
# Three producers use the same `transactional.id` one after the other, in this order. At the end, which epoch
# does each hold (the epoch of its last successful InitProducerId), and which epoch is written on the ABORT
# marker that ends B's transaction? Give `{"A": ..., "B": ..., "C": ..., "ABORT marker": ...}`. (Kafka 3.x's
# rules, as in section 6.)

# %%
EVENTS = ["A: init", "A: begin + send", "A: commit", "B: init", "B: begin + send", "C: init"]

# %% tags=["solution"]
fence_epochs = {"A": 0, "B": 1, "C": 3, "ABORT marker": 2}

# %%
lab11.check_fence_epochs(fence_epochs, EVENTS)

# %% [markdown]
# ### Exercise 4 · Predict the records
#
# A producer sends these requests for one transactional id (`markers written` means: every leader has
# answered WriteTxnMarkers). Which states does the coordinator write to `__transaction_state`, in order? Give a
# list of Kafka's state names.

# %%
STEPS = ["InitProducerId", "AddPartitionsToTxn orders-0", "AddPartitionsToTxn orders-0 orders-1",
         "AddPartitionsToTxn orders-1", "AddOffsetsToTxn billing", "EndTxn ABORT", "markers written",
         "InitProducerId"]

# %% tags=["solution"]
states_written = ["Empty", "Ongoing", "Ongoing", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]

# %%
lab11.check_state_sequence(states_written, STEPS)

# %% [markdown]
# ## 9 · Recap
#
# * **Idempotence (C30)**: a producer id, an epoch and per-partition sequence numbers make retries harmless —
#   within one producer session and one partition. A restart or an application resend is not covered.
# * **Transactions (C34)**: a `transactional.id` picks a partition of `__transaction_state`, whose leader is
#   the **transaction coordinator**. InitProducerId, AddPartitionsToTxn (before the first batch to each
#   partition), Produce, AddOffsetsToTxn + TxnOffsetCommit, EndTxn — and then the coordinator's
#   WriteTxnMarkers to every leader, `__consumer_offsets` included.
# * **The coordinator is a state machine** written to its log before it answers: Empty → Ongoing →
#   PrepareCommit → CompleteCommit (or PrepareAbort → CompleteAbort). Once Prepare* is durable the outcome is
#   decided; CONCURRENT_TRANSACTIONS until the markers are in.
# * **In the log**: data batches flagged transactional, a control batch (COMMIT/ABORT) per partition taking an
#   offset, aborted ranges in the `.txnindex`. Nothing is removed; readers skip.
# * **LSO ≤ HW**: read_committed reads up to the first offset of the earliest open transaction, so one open
#   transaction holds back every record after it; `transaction.timeout.ms` bounds how long.
# * **Epochs fence zombies**: InitProducerId bumps the epoch, aborts what the old producer left open, and the
#   old one gets PRODUCER_FENCED.
# * **Exactly-once from Kafka to Kafka (C33)**: the input offsets are committed *inside* the transaction that
#   writes the outputs, so a crash loses both or neither; read_committed consumers see one output per input.
#
# **Next:** lab 12, *Listeners, SASL and ACLs*: who may talk to the brokers, and what they may do.
