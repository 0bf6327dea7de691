# Source of labs/06_the_log.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 06
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 06 · The log on disk
#
# A Produce request ends in a file. Which file, in which directory, holding which bytes? This lab starts a
# broker, produces to it, and then opens its log directory like you would on a real Kafka machine: you list
# the files, compare the bytes a client sent with the bytes on disk, watch segments roll, follow an offset
# through the index, and read everything back from any offset, as often as you like. Then you drive the
# storage layer by hand, with a clock you control, to see retention delete old segments, compaction keep the
# latest value per key, and recovery cut a half-written batch after a crash. Last, the bytes between the log
# and the wire: the older message formats (v0, v1), which the broker converts both ways for old clients, and
# zero-copy, a Fetch's records sent from the page cache with `sendfile`, or copied when the listener is TLS.
#
# **By the end of this lab you can**
#
# 1. name every file in a partition directory and in a log dir, and say what it is for;
# 2. show that the broker stores a batch **as the client sent it**, except two fields it patches;
# 3. predict when a segment rolls and which `.log` file holds a given offset;
# 4. walk a lookup: segment, sparse offset index, batch headers;
# 5. read a segment with `kafkalab dump-log` (Kafka's `kafka-dump-log.sh`);
# 6. re-read a partition from any offset, and find the offset for a point in time;
# 7. explain retention by time and by size, compaction and tombstones, and crash recovery;
# 8. say when recovery checks a segment and when a corrupted one is served as it is;
# 9. read a v0/v1 message set byte by byte and say what a Kafka 3 broker does with one (and for old consumers);
# 10. show a Fetch's records going out with `sendfile` (zero-copy) in the clear, and copied through TLS.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C18** the broker stores records as received, without transforming them, and serves them with zero-copy | client bytes vs `.log` bytes: only `base_offset` and `partition_leader_epoch` differ, the CRC still holds; one Fetch's bytes sent with `sendfile` vs copied through TLS | 2, 12 |
# | **C24** a partition is an append-only array: append at the end, read from any offset | segments, offsets, the index lookup | 3-5 |
# | **C19** records stay after being read; retention by time and size deletes old data | read twice from offset 10; `retention.ms`, `retention.bytes` with a mock clock | 6, 8 |
# | **C31** (seek, timestamp → offset) | `assign` + `seek`, `offsets_for_times`, ListOffsets earliest / latest / max timestamp | 6 |
# | **C27** compaction keeps the latest record per key; tombstones delete keys | a compacted topic before and after the cleaner | 9 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | segments, indexes, roll | `kafkalab/storage/segment.py`, `offset_index.py`, `local_log.py` | `storage/.../internals/log/LogSegment.java`, `OffsetIndex.java`, `core/.../log/LocalLog.scala` |
# | the log of a partition, reads, ListOffsets | `kafkalab/storage/log.py` | `core/src/main/scala/kafka/log/UnifiedLog.scala` |
# | retention | `kafkalab/storage/retention.py` | `UnifiedLog.deleteOldSegments` |
# | compaction | `kafkalab/storage/cleaner.py` | `core/src/main/scala/kafka/log/LogCleaner.scala` |
# | recovery | `kafkalab/storage/log_loader.py` | `storage/.../internals/log/LogLoader.java` |
# | the dump tool | `kafkalab/tools/dump_log.py` | `core/src/main/scala/kafka/tools/DumpLogSegments.scala` |
# | message formats v0/v1, conversion | `kafkalab/records/legacy.py`, `conversion.py`, `storage/legacy_validator.py` | `clients/.../record/LegacyRecord.java`, `RecordsUtil.java`, `LogValidator.java` |
# | zero-copy: `sendfile`, and TLS copies | `kafkalab/network/response_send.py` | `FileRecords.writeTo`, `PlaintextTransportLayer` / `SslTransportLayer.transferFrom` |
# | reading the files, raw Produce/Fetch/ListOffsets, pictures, checks | `kafkalab/labs/lab06/` (`files.py`, `wire.py`, `zero_copy.py`) | — |

# %%
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from confluent_kafka import Consumer, TopicPartition
from IPython.display import HTML

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.common.time import MockTime
from kafkalab.labs import evidence, lab06
from kafkalab.records import SimpleRecord, build_batch, crc_is_valid, decode_batch, decode_batches
from kafkalab.records.legacy import iter_records, read_message_set
from kafkalab.storage import LogConfig, LogManager, UnifiedLog

pd.set_option("display.max_colwidth", 100)
broker_log = BrokerLog().install()            # the broker's warnings: kept in a list, shown when we ask
workdir = tempfile.TemporaryDirectory(prefix="kafkalab-lab06-")   # everything this lab writes; printed relative
BASE = Path(workdir.name)

cluster = Cluster(brokers=1, log_dirs=str(BASE / "cluster")).start()
LOG_DIR = BASE / "cluster" / "broker-0"                # the broker's log.dirs
PARTITION = LOG_DIR / f"{lab06.TOPIC}-0"               # <log.dirs>/<topic>-<partition>
cluster.create_topic(lab06.TOPIC, partitions=1, config={
    "segment.bytes": 1024,          # tiny segments, so that we see several (the default is 1 GiB)
    "index.interval.bytes": 256,    # an index entry every 256 bytes of batches (default 4096)
    "retention.ms": -1})            # keep forever: our records carry timestamps from 2023 (section 8 shows why)
print(f"topic {lab06.TOPIC!r} created; its replica lives in <log.dirs>/{PARTITION.name}")

# %% [markdown]
# ## 1 · What a Produce leaves behind
#
# We produce on a bare connection (lab 02's `RawConnection`), so that we know every byte we sent. Each record
# is a sensor reading with a **fixed** timestamp: record *i* is stamped `T0 + i` seconds (`T0` is
# 2023-11-14 22:13:20 UTC). The first batch holds three records.

# %%
def reading(i):
    """Record i: key sensor-0..2, a small JSON value, timestamp T0 + i seconds."""
    return SimpleRecord(f"sensor-{i % 3}".encode(), f'{{"celsius": {18 + i % 7}.{i % 10}}}'.encode(), (),
                        lab06.T0 + 1000 * i)


first = build_batch([reading(i) for i in range(3)])
print("base offsets assigned:", lab06.produce_batches(cluster.bootstrap_servers, lab06.TOPIC, [first]))
pd.DataFrame(lab06.file_tree(LOG_DIR)).set_index("file")

# %% [markdown]
# One directory per partition replica, named `<topic>-<partition>`, and in it one **segment**: a `.log` file
# with the batch (159 bytes, exactly the size of what we sent) and two index files. Every segment file is named
# after the first offset it holds, zero-padded to 20 digits. The index files are **preallocated** to
# `segment.index.bytes` (10 MiB) while the segment is active, and trimmed when it is closed.
#
# Beside the partition, the log dir holds `.lock` and four **checkpoint** files, which the broker created empty
# when it started, as Kafka 3.9 does, and fills later: `recovery-point-offset-checkpoint` and
# `log-start-offset-checkpoint` from `log.initial.task.delay.ms` (30 s) after start, `cleaner-offset-checkpoint`
# once the log cleaner has cleaned a compacted partition, and `replication-offset-checkpoint`, the high
# watermarks, from the broker's first LeaderAndIsr on (here: the one that made it leader of `readings-0`), then
# every `replica.high.watermark.checkpoint.interval.ms` (5 s). Section 6 reads them.
#
# Three small text files say whom the data belongs to. The values that are random per run are replaced here by
# a description; on your disk you see the real ones.

# %%
for name in ["meta.properties", f"{PARTITION.name}/partition.metadata", f"{PARTITION.name}/leader-epoch-checkpoint"]:
    print(f"--- {name}\n{lab06.read_masked(LOG_DIR / name)}")

# %% [markdown]
# `leader-epoch-checkpoint` is a version (`0`), a count (`1`) and one line per leader epoch: *epoch 0 started at
# offset 0*. A broker uses it after a leader change to find out how far its log agrees with the new leader's
# (lab 08).
#
# ## 2 · Stored as sent
#
# Send a second batch and put the bytes we sent next to the bytes now in the `.log` file, right after the
# first batch.

# %%
second = build_batch([reading(i) for i in range(3, 6)])
print("base offsets assigned:", lab06.produce_batches(cluster.bootstrap_servers, lab06.TOPIC, [second]))
on_disk = (PARTITION / "00000000000000000000.log").read_bytes()
stored = on_disk[len(first):len(first) + len(second)]
diff = lab06.ByteDiff(second, stored)
diff

# %% [markdown]
# Two fields differ, both in the first 21 bytes: the **base offset** (the producer sends 0, the leader writes
# the offset it assigned: 3) and the **partition leader epoch** (the producer sends -1, the leader writes its
# epoch: 0). Everything else — the CRC, the timestamps, the producer fields and every record byte — is what the
# client sent. The CRC-32C covers the bytes from offset 21 on, `attributes` onwards (lab 01 §6 took such a batch
# apart), which is exactly why the broker may patch those two fields without recomputing it, and why a consumer
# can still verify the batch:

# %%
print(repr(diff))
print("CRC valid as sent:", crc_is_valid(second), "| CRC valid on disk:", crc_is_valid(stored))
print("same records:", decode_batch(second).records == tuple(r._replace(offset=r.offset - 3)
                                                           for r in decode_batch(stored).records))

# %% [markdown]
# No decompression and no re-encoding: the broker checks the header and the CRC, walks the records only to
# check them (without building any), assigns offsets by writing 12 bytes into the request's own buffer, and
# appends. A consumer gets these same bytes back, and the broker can send them from the
# file to the socket with `sendfile` (zero-copy). That is a large part of why one broker can move hundreds of
# megabytes per second.
#
# ## 3 · Segments roll
#
# The topic has `segment.bytes = 1024`. Produce 30 more batches of three records (offsets 6 to 95):

# %%
more = [build_batch([reading(i) for i in range(n, n + 3)]) for n in range(6, 96, 3)]
offsets = lab06.produce_batches(cluster.bootstrap_servers, lab06.TOPIC, more)
print(f"{len(offsets)} batches at base offsets {offsets[0]}..{offsets[-1]}")
segs = lab06.segments(PARTITION)
pd.DataFrame([{"segment": s.name, "bytes": s.log_bytes, "batches": len(s.batches), "offsets":
               f"{s.base_offset}-{s.next_offset - 1}", "index entries": len(s.index)} for s in segs]).set_index("segment")

# %% [markdown]
# Each batch is 159 bytes; six of them make 954 bytes, and a seventh would push the segment past 1024, so
# before appending it the broker **rolls**: it closes the active segment (trimming its indexes to their used
# size) and starts a new one named after the next offset. Only the last segment, the *active* one, is ever
# appended to; the others are immutable until retention or compaction replace them. (Segments also roll by age,
# `segment.ms`, and when an index is full.)
#
# The picture: one bar per segment, one block per batch (its base offset on it), and under each bar the
# entries of that segment's offset index, `offset→position`, with an arrow to the byte they point at.

# %% tags=["figure:segments"]
lab06.SegmentMap(segs, segment_bytes=1024, title=f"{PARTITION.name}: {len(segs)} segments")

# %%
pd.DataFrame(lab06.file_tree(PARTITION)).set_index("file")

# %% [markdown]
# Each segment after the first also has a `.snapshot`: at every roll the broker writes down its **producer
# state** (for each idempotent producer id, its epoch and last sequence numbers: lab 05 §7) as of the new
# segment's base offset, so that a restart does not have to re-read the whole log to rebuild it. Ours are 10
# bytes, a header and an empty list: no producer here is idempotent.

# %% [markdown]
# ## 4 · The sparse index
#
# A segment's `.index` does not list every offset. The broker adds an entry only after more than
# `index.interval.bytes` (here 256) bytes of batches since the previous one: with 159-byte batches, every
# second batch. Each entry is 8 bytes: an offset *relative to the segment's base offset* (4 bytes, so the file
# stays small; Kafka writes the last offset of the batch) and the byte position where that batch starts in
# the `.log`.

# %%
seg = segs[2]
raw = (PARTITION / f"{seg.base_offset:020d}.index").read_bytes()
print(f"{seg.base_offset:020d}.index: {len(raw)} bytes = {len(raw) // 8} entries")
for n in range(len(raw) // 8):
    chunk = raw[8 * n:8 * n + 8]
    rel, pos = int.from_bytes(chunk[:4], "big"), int.from_bytes(chunk[4:], "big")
    print(f"  {chunk[:4].hex()} {chunk[4:].hex()}  relative offset {rel} (= {seg.base_offset + rel}), position {pos}")

# %% [markdown]
# To serve a Fetch at offset 47, the broker (1) picks the segment with the largest base offset ≤ 47, (2)
# binary-searches its index for the last entry ≤ 47, and (3) reads batch headers from that position on, jumping
# `batch_length` bytes at a time, until a batch holds offset 47. It never reads a record to get there.

# %%
pd.DataFrame(lab06.lookup_walk(PARTITION, 47)).set_index("step")

# %% tags=["figure:offset_lookup"]
lab06.SegmentMap(segs, segment_bytes=1024, highlight=47, title="looking up offset 47")

# %% [markdown]
# A sparse index is the trade-off: the index stays tiny (it can be kept in memory for every segment) and a
# lookup reads at most `index.interval.bytes` plus one batch too much. The `.timeindex` works the same way for
# time, with 12-byte entries (timestamp, relative offset); section 6 uses it.

# %% [markdown]
# ## 5 · `kafkalab dump-log`
#
# Kafka ships `kafka-dump-log.sh` to look inside these files without a broker; `kafkalab dump-log` takes the
# same flags and prints the same shape. Here is the first segment, batch by batch, with `--print-data-log`
# adding every record (run in the partition directory, so file names print short):

# %%
result = subprocess.run([sys.executable, "-m", "kafkalab.cli", "dump-log", "--files", "00000000000000000000.log",
                         "--print-data-log"], cwd=PARTITION, capture_output=True, text=True, check=True)
print(result.stdout)

# %% [markdown]
# `baseOffset`, `lastOffset`, `count`, `partitionLeaderEpoch`, `CreateTime`, `crc` and `isvalid` are the batch
# header of section 2, read from disk; `position` is where the batch starts in the file, the number the index
# stores. The same tool reads the indexes and, a kafkalab extension that Kafka's tool does not have, the
# `leader-epoch-checkpoint` (`lab06.dump_log` calls it from Python):

# %%
print(lab06.dump_log(PARTITION, [f"{seg.base_offset:020d}.index", f"{seg.base_offset:020d}.timeindex",
                                 "leader-epoch-checkpoint"]))

# %% [markdown]
# ## 6 · Read from anywhere, again and again
#
# Reading does not remove anything. A consumer says where to start: confluent-kafka's `assign` with an offset,
# and `seek` to go somewhere else. Read four records from offset 10, then seek back to 10 and read them again.
# (`assign`, not `subscribe`: the consumer joins no group and commits nothing; confluent-kafka still wants a
# `group.id` in its configuration.)

# %%
consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "kafkalab-lab06", "group.id": "lab06",
                     "enable.auto.commit": False, "client.software.name": "kafkalab-lab",
                     "client.software.version": "1.0"})


def read(n):
    out = []
    while len(out) < n:
        for m in consumer.consume(n - len(out), timeout=5.0):
            if m.error() is None:
                out.append((m.offset(), m.key().decode(), m.value().decode(), m.timestamp()[1]))
    return out


consumer.assign([TopicPartition(lab06.TOPIC, 0, 10)])
first_read = read(4)
consumer.seek(TopicPartition(lab06.TOPIC, 0, 10))
second_read = read(4)
print("same records both times:", first_read == second_read)
pd.DataFrame(first_read, columns=["offset", "key", "value", "timestamp"]).set_index("offset")

# %% [markdown]
# And the other direction: *which offset belongs to a point in time?* `offsets_for_times` sends ListOffsets
# with a timestamp; the broker finds the first record stamped at or after it, using each segment's largest
# timestamp and its `.timeindex`. Our record *i* has timestamp `T0 + i` s, so the answer for `T0 + 42.5 s` is
# offset 43.

# %%
wanted = {"T0 + 42.5 s": lab06.T0 + 42_500, "T0 (the first record)": lab06.T0, "T0 + 1 hour (future)": lab06.T0 + 3_600_000}
found = {label: consumer.offsets_for_times([TopicPartition(lab06.TOPIC, 0, ts)], timeout=10)[0].offset
         for label, ts in wanted.items()}                # one call per timestamp: see below
pd.DataFrame({"timestamp": list(wanted.values()), "offset": list(found.values())}, index=list(wanted))

# %% [markdown]
# "No such record" comes back as offset -1 (the client then applies `auto.offset.reset`). Why one call per
# timestamp? A ListOffsets request carries *one* timestamp per partition; ask for the same partition three times
# in one call and librdkafka sends only one of them. ListOffsets also takes
# special timestamps: **-2** earliest (the log start offset), **-1** latest (the log end offset, the next offset
# to be written), **-3** the record with the largest timestamp (KIP-734). Asked on a bare connection:

# %%
special = {-2: "earliest", -1: "latest", -3: "max timestamp"}
answers = lab06.list_offsets(cluster.bootstrap_servers, lab06.TOPIC, list(special))
pd.DataFrame([{"timestamp sent": ts, "meaning": special[ts], "answer: timestamp": t, "answer: offset": o}
              for ts, (t, o) in zip(special, answers)]).set_index("timestamp sent")

# %%
consumer.close()
cluster.stop_broker(0)
print("broker stopped cleanly; the log dir now holds:")
pd.DataFrame([r for r in lab06.file_tree(LOG_DIR) if "/" not in r["file"]]).set_index("file")[["what"]]

# %% [markdown]
# On a clean shutdown the broker writes its **checkpoints**: per partition the recovery point (everything below
# it is known to be on disk), the high watermark (`replication-offset-checkpoint`) and, when it is above the
# first segment, the log start offset; and `.kafka_cleanshutdown`, which tells the next start that no recovery
# is needed. `cleaner-offset-checkpoint` is still empty: nothing was compacted yet (section 9 runs the cleaner). Each checkpoint is a version, a count, then one `topic partition offset` line per partition. (They
# also list `__consumer_offsets`, which the broker creates when a client first asks for a group
# coordinator, as confluent-kafka did; we print only our partition's line.)

# %%
for name in ["recovery-point-offset-checkpoint", "replication-offset-checkpoint"]:
    version, count, *entries = lab06.read_masked(LOG_DIR / name).splitlines()
    ours = [e for e in entries if e.startswith(lab06.TOPIC + " ")]
    print(f"--- {name}: version {version}; our partition: {ours}")
cluster.stop()

# %% [markdown]
# ## 7 · The storage layer by hand, with a clock we control
#
# Retention and compaction are decided by the clock: *is this segment older than `retention.ms`?* Waiting a
# week is not an option, so from here on we drive kafkalab's storage layer directly — `UnifiedLog`, the class
# the broker calls for each partition (Kafka's class of the same name) — with a `MockTime` clock that moves only
# when we say so. The broker's own code path is the same one we used above.

# %%
clock = MockTime(start_ms=lab06.T0)
retention_dir = BASE / "by-hand" / "metrics-0"
metrics = UnifiedLog(retention_dir, LogConfig({"segment.bytes": 600, "retention.ms": 7_200_000}), time=clock)
for i in range(30):                                  # one batch every 10 minutes, stamped with the clock's time
    metrics.append_as_leader(build_batch([SimpleRecord(b"host-1", b"cpu=%d" % (40 + i), (), clock.milliseconds())]),
                             leader_epoch=0)
    clock.advance(600_000)
metrics.update_high_watermark(metrics.log_end_offset)


def segment_table(log):
    now = clock.milliseconds()
    return pd.DataFrame([{"segment": f"{s.base_offset:020d}.log", "bytes": s.size,
                          "newest record": "—" if s.size == 0 else f"T0 + {(s.largest_timestamp() - lab06.T0) // 60_000} min",
                          "age of newest (min)": "—" if s.size == 0 else (now - s.largest_timestamp()) // 60_000}
                         for s in log.segments]).set_index("segment")


print(f"now: T0 + {(clock.milliseconds() - lab06.T0) // 60_000} min; log start offset {metrics.log_start_offset}, "
      f"log end offset {metrics.log_end_offset}")
segment_table(metrics)

# %% [markdown]
# ## 8 · Retention: deleting whole segments
#
# `retention.ms = 7 200 000` (two hours). Retention never deletes single records: it deletes **whole segments,
# oldest first**, each one once its *newest* record is older than `retention.ms`. The broker runs this check
# every `log.retention.check.interval.ms` (5 minutes); here we call it:

# %%
deleted = metrics.delete_old_segments()
print(f"deleted {deleted} segment(s); log start offset is now {metrics.log_start_offset}")
segment_table(metrics)

# %% [markdown]
# The newest records of segments 0 and 7 were 240 and 170 minutes old: both segments go, with every record in
# them, including the ones only a little over two hours old. Segment 14 (100 minutes) stays, and so does
# everything after it: the check walks from the oldest segment and stops at the first one it must keep. The
# **log start offset** moves to the first remaining offset: a consumer asking for offset 3 now gets
# `OFFSET_OUT_OF_RANGE` and resets (`auto.offset.reset`).
#
# This is also why the broker topic in section 1 had `retention.ms = -1`: our records are stamped in 2023, and
# with the default of seven days the broker would have deleted them at its first retention check.
#
# Retention by size, `retention.bytes`, is a limit *per partition*: delete the oldest segment as long as the
# log without it is still at least `retention.bytes`. Whole segments again, so the log may stay a little above
# the limit.

# %%
metrics.update_config(LogConfig({"segment.bytes": 600, "retention.ms": -1, "retention.bytes": 700}))
print(f"before: {metrics.size_in_bytes} bytes in {metrics.number_of_segments} segments")
deleted = metrics.delete_old_segments()
print(f"retention.bytes = 700: deleted {deleted} segment(s); {metrics.size_in_bytes} bytes left, "
      f"log start offset {metrics.log_start_offset}")
segment_table(metrics)

# %% [markdown]
# And the active segment, the one being written? It is not spared: once *its* newest record is older than
# `retention.ms` it goes too, and since a log always keeps one segment, the broker first rolls a new, empty one
# at the log end offset. Set `retention.ms` back to two hours and let three hours pass without a write:

# %%
metrics.update_config(LogConfig({"segment.bytes": 600, "retention.ms": 7_200_000}))
clock.advance(3 * 3_600_000)
active_before = metrics.segments[-1].base_offset
deleted = metrics.delete_old_segments()
print(f"deleted {deleted} segment(s), the active one ({active_before:020d}.log) too; log start offset "
      f"{metrics.log_start_offset} = log end offset {metrics.log_end_offset}")
segment_table(metrics)

# %% [markdown]
# The partition is empty, but its offsets go on: the next record gets offset 30, and a consumer that had read
# everything simply waits for it. A quiet topic therefore loses all its data after `retention.ms`.

# %% [markdown]
# ## 9 · Compaction: the latest value per key
#
# A topic with `cleanup.policy = compact` is not trimmed by age but **by key**: the cleaner keeps the latest
# record of each key and drops the older ones. A record with a key and a *null* value, a **tombstone**, says
# "this key is deleted". We use a `LogManager` (the broker's owner of all logs, and of the cleaner) and ask its
# cleaner to run now.

# %%
metrics.close()
manager = LogManager(BASE / "by-hand" / "compacted", LogConfig({}), time=clock, cleaner_enable=True)
manager.startup()
prices = manager.get_or_create_log("prices", 0, LogConfig({"cleanup.policy": "compact", "segment.bytes": 400,
                                                           "min.cleanable.dirty.ratio": 0.01}))
UPDATES = [("AAPL", "190"), ("MSFT", "370"), ("AAPL", "191"), ("GOOG", "130"), ("MSFT", "371"), ("GOOG", None),
           ("AAPL", "192"), ("TSLA", "240"), ("MSFT", "372"), ("AMZN", "145"), ("TSLA", "238"), ("AAPL", "193")]
for key, value in UPDATES:
    prices.append_as_leader(build_batch([SimpleRecord(key.encode(), None if value is None else value.encode(), (),
                                                      clock.milliseconds())]), leader_epoch=0)
prices.roll()                                       # the active segment is never cleaned: close it
prices.update_high_watermark(prices.log_end_offset)


def records_of(log):
    rows = []
    for s in log.segments:
        for b in decode_batches(s.log.read(0, s.size)):
            rows += [{"offset": r.offset, "segment": f"{s.base_offset:020d}.log", "key": r.key.decode(),
                      "value": "∅ (tombstone)" if r.value is None else r.value.decode()} for r in b.records]
    return pd.DataFrame(rows).set_index("offset")


before = records_of(prices)
result = manager.cleaner.clean_now(prices)
after = records_of(prices)
print(f"cleaned offsets {result.first_dirty_offset}-{result.end_offset - 1}: read {result.stats.messages_read} "
      f"records, kept {result.stats.messages_written}")
HTML('<div style="display:flex;gap:32px;align-items:flex-start"><div><b>before</b>' + before.to_html()
     + '</div><div><b>after</b>' + after.to_html() + "</div></div>")

# %% [markdown]
# Each key kept its latest record, **at its original offset**: compaction leaves gaps, it never renumbers
# (a consumer at offset 5 simply gets the next record that still exists). GOOG's tombstone stays, so that
# consumers reading later learn that GOOG was deleted; the cleaner removes it only once it has been in the
# cleaned part of the log for `delete.retention.ms` (one day by default). Compaction runs in the background,
# segment by segment and never on the active segment, so a consumer may still see older values per key.
#
# ## 10 · A crash in the middle of a write
#
# What if the power fails while a batch is half written? Write five batches, close the log, then tear the end
# of the file in two ways: append the first 30 bytes of another batch (an incomplete write), then flip the last
# 5 bytes of the last batch (a corrupted one). Each time, reopen the directory *as after an unclean shutdown*,
# which makes the loader scan the segment batch by batch and check each CRC.

# %%
orders_dir = BASE / "by-hand" / "orders-0"
orders = UnifiedLog(orders_dir, LogConfig({}), time=clock)
for n in range(5):
    orders.append_as_leader(build_batch([SimpleRecord(b"order-%d" % (2 * n + j), b"paid", (), lab06.T0)
                                         for j in range(2)]), leader_epoch=0)
orders.flush()
orders.close()
segment = orders_dir / "00000000000000000000.log"
print(f"{segment.name}: {segment.stat().st_size} bytes, offsets 0-9")

torn = build_batch([SimpleRecord(b"order-10", b"paid", (), lab06.T0)])
with open(segment, "ab") as f:
    f.write(torn[:30])                                  # the power fails 30 bytes into the next batch
broker_log.clear()
reopened = UnifiedLog(orders_dir, LogConfig({}), time=clock, had_clean_shutdown=False)
print(reopened.recovery_report.summary().replace("; ", "\n  "))
reopened.close()

# %%
size = segment.stat().st_size
with open(segment, "r+b") as f:
    f.seek(size - 5)
    f.write(b"\xff" * 5)                               # the last batch's bytes are no longer what was written
reopened = UnifiedLog(orders_dir, LogConfig({}), time=clock, had_clean_shutdown=False)
print(reopened.recovery_report.summary().replace("; ", "\n  "))
print("what survives:", [(r.offset, r.key.decode()) for b in decode_batches(segment.read_bytes()) for r in b.records])
reopened.close()

# %% [markdown]
# Recovery keeps every batch that is complete *and* CRC-valid, and cuts the file at the first one that is not,
# together with everything after it (a log is only useful without holes). The torn write loses only the half
# batch, whose append never finished, so no producer was told it succeeded. The corrupted batch costs offsets
# 8-9, which a follower gets back from its leader (lab 08). The loader also rebuilds the indexes of the segments it
# scanned. A broker writes the recovery point at each checkpoint, so after a crash it only scans the segments
# after it, not the whole log.

# %% [markdown]
# ## 11 · Before RecordBatch v2: message formats v0 and v1
#
# RecordBatch v2 (magic 2) arrived with Kafka 0.11 in 2017. Before it there were no batches: a **message set**
# is a plain list of messages, each with its own offset, size and CRC. Kafka 0.8 wrote magic 0; Kafka 0.10 added
# a timestamp (magic 1, KIP-32). Clients of that era are still around (Debian ships Sarama 1.22, which speaks
# 0.10.1), and a Kafka 3 broker serves them: Produce v0-2 carry message sets, Fetch v0-1 can only read magic 0
# and v2-3 only magic 1. Here are the first three readings of section 1 in all three formats.

# %%
formats = lab06.message_formats([reading(i) for i in range(3)])
pd.DataFrame(lab06.format_table(formats, 3)).set_index("format")

# %% [markdown]
# Per record, v2 spends a few bytes of varints (length, attributes, timestamp and offset *deltas*, key and value
# lengths, header count) and shares one 61-byte header among all records of the batch; v0 and v1 repeat a
# 12-byte offset and size, a 4-byte CRC, magic, attributes and two 4-byte lengths in every message (and v1 an
# 8-byte timestamp). With three records v2 is already smaller than v1, which carries less (no headers, no
# producer id); only v0, which has no timestamps at all, is smaller still, and from four records on v2 is the
# smallest. The first message of the v1 set, field by field, next to the v2 batch:

# %%
pd.DataFrame(lab06.field_bytes(formats["v1"])).set_index("field")

# %%
pd.DataFrame(lab06.field_bytes(formats["v2"])).set_index("field")

# %% [markdown]
# The v1 message puts the CRC *before* the magic byte, and its CRC is the classic CRC-32 (zlib's) over
# everything after it; v2 has CRC-32C over everything after its own `crc` field (from `attributes` on), so the
# broker can patch `base_offset` and `partition_leader_epoch` without touching it. A v0 message is the same
# without `timestamp`. Compression in v0/v1 needs a **wrapper**: one message whose value is the compressed bytes
# of an inner message set (inner offsets absolute in v0, relative in v1, the wrapper at the last inner offset).
#
# Now send the v0 set as an old producer would, with Produce **v1**, and look at what the broker stored.

# %%
old_cluster = Cluster(brokers=1, log_dirs=str(BASE / "old-clients")).start()     # a fresh broker for this section
old_cluster.create_topic("old-clients", partitions=1)
segment_file = BASE / "old-clients" / "broker-0" / "old-clients-0" / "00000000000000000000.log"
before = old_cluster.broker(0).metrics()
[base] = lab06.produce_batches(old_cluster.bootstrap_servers, "old-clients", [formats["v0"]], version=1)
stored = decode_batches(segment_file.read_bytes())
print(f"base offset {base}; on disk: {len(stored)} batch, magic {stored[0].magic}, "
      f"timestamps {[r.timestamp for r in stored[0].records]}")
old_fetch = lab06.fetch_records(old_cluster.bootstrap_servers, "old-clients", 0, version=3)
new_fetch = lab06.fetch_records(old_cluster.bootstrap_servers, "old-clients", 0, version=4)
after = old_cluster.broker(0).metrics()
old_cluster.stop()
conversions = {name: after[name] - before[name]
               for name in ("ProduceMessageConversionsPerSec", "FetchMessageConversionsPerSec")}
pd.DataFrame([{"read with": "Fetch v3 (a 0.10.1 consumer)", "magic": old_fetch[16], "bytes": len(old_fetch)},
              {"read with": "Fetch v4 (0.11 and later)", "magic": new_fetch[16], "bytes": len(new_fetch)}])

# %%
evidence("The broker converts old formats both ways", {
    "the v0 message set was stored as one v2 batch (magic 2)": [b.magic for b in stored] == [2],
    "v0 carries no timestamp: the stored records have -1 (NO_TIMESTAMP)":
        {r.timestamp for r in stored[0].records} == {-1},
    "Fetch v3 got a v1 message set (magic 1) with the same keys and values":
        {m.magic for m in read_message_set(old_fetch)} == {1}
        and [(r.key, r.value) for r in iter_records(old_fetch)] == [(r.key, r.value) for r in stored[0].records],
    "Fetch v4 got the stored batch byte for byte": new_fetch == segment_file.read_bytes(),
    "3 records were up-converted and 3 down-converted (BrokerTopicMetrics)":
        conversions == {"ProduceMessageConversionsPerSec": 3, "FetchMessageConversionsPerSec": 3},
})

# %% [markdown]
# Conversion is what a v2 broker avoids for everyone else: the stored bytes leave the page cache, are decoded and
# rebuilt (and recompressed) in memory, and cannot go out with `sendfile`. Kafka counts it in
# `ProduceMessageConversionsPerSec` / `FetchMessageConversionsPerSec` and in the request metrics
# `MessageConversionsTimeMs` and `TemporaryMemoryBytes`, and lets an operator refuse it per topic with
# `message.downconversion.enable=false` (the old consumer then gets UNSUPPORTED_VERSION). Kafka 4 removed
# Produce v0-2 and Fetch v0-3 altogether (KIP-896).

# %% [markdown]
# ## 12 · Zero-copy: `sendfile`, and why TLS copies
#
# Section 2 showed that the broker keeps a batch as the client sent it. That is what lets it *serve* the batch
# without looking at it: the answer to a Fetch is a few dozen bytes of fields around a slice of a `.log` file,
# and the broker asks the kernel to send that slice from the page cache straight to the socket (`sendfile`; in
# Kafka `FileRecords.writeTo` → `PlaintextTransportLayer.transferFrom` → Java's `FileChannel.transferTo`). The
# bytes never enter the broker process: no read into a buffer, no copy back into the kernel. Over TLS that is
# impossible: the bytes must be encrypted on their way, and encryption happens in the process, so Kafka's
# `SslTransportLayer.transferFrom` reads the file in 32 KiB chunks and writes them through the TLS engine.
# kafkalab does the same (in 256 KiB chunks).
#
# Kafka has no metric that tells the two paths apart. kafkalab's broker counts them per listener, in
# `broker.metrics()`: `sendfile-bytes-total` and `sendfile-sends-total` (file slices sent with `sendfile`),
# `copied-bytes-total` and `copied-sends-total` (bytes written from the process's memory) and, of those,
# `copied-file-bytes-total` (log slices read into the process because they could not be sent with `sendfile`).
#
# A fresh broker with two listeners for clients, `PLAINTEXT` and `SSL` (its own connections use a third,
# `REPLICATION`, so that nothing else is counted on the two we measure), gets 8 batches of random, incompressible
# bytes, about 4 MiB. Then one Fetch on each listener reads the whole segment.

# %%
zc_dir = BASE / "zero-copy"
zc_overrides, zc_ca_file = lab06.two_listener_overrides(zc_dir / "tls")
zc_cluster = Cluster(brokers=1, log_dirs=str(zc_dir / "cluster"), overrides=zc_overrides).start()
zc_cluster.create_topic("big-records", partitions=1)
zc_broker = zc_cluster.broker(0)
rnd = random.Random(6)
big_batches = [build_batch([(b"photo-%d" % i, rnd.randbytes(512 * 1024), [], lab06.T0 + i)]) for i in range(8)]
lab06.produce_batches(lab06.listener_address(zc_broker, "PLAINTEXT"), "big-records", big_batches)
zc_segment = zc_dir / "cluster" / "broker-0" / "big-records-0" / "00000000000000000000.log"
print(f"{zc_segment.name}: {zc_segment.stat().st_size:,} bytes")

# %%
clear = lab06.measure_fetch(zc_broker, "PLAINTEXT", "big-records")
tls = lab06.measure_fetch(zc_broker, "SSL", "big-records", ca_file=zc_ca_file)
zc_cluster.stop()
pd.DataFrame([lab06.zero_copy_row(m) for m in (clear, tls)]).set_index("listener").T

# %%
evidence("One Fetch: zero-copy in the clear, every byte copied under TLS", {
    "both answers carry the whole segment, byte for byte":
        clear["records"] == tls["records"] == zc_segment.read_bytes(),
    "PLAINTEXT: the records went out with sendfile, in one send":
        clear["sendfile-bytes-total"] == clear["records bytes"] and clear["sendfile-sends-total"] == 1,
    "PLAINTEXT: the broker copied only the size, header and fields (under 1 KiB)":
        clear["copied-bytes-total"] == clear["response bytes"] - clear["records bytes"] < 1024,
    "PLAINTEXT: not one byte of the log entered the broker process": clear["copied-file-bytes-total"] == 0,
    "SSL: nothing went out with sendfile": tls["sendfile-bytes-total"] == 0 and tls["sendfile-sends-total"] == 0,
    "SSL: the whole response was copied, the records read from the log first":
        tls["copied-bytes-total"] == tls["response bytes"] and tls["copied-file-bytes-total"] == tls["records bytes"],
})

# %% [markdown]
# The same 4 MiB answer costs the PLAINTEXT listener two small writes (the bytes before and after the records)
# and one `sendfile`; on the SSL listener every byte is read from the file, copied, encrypted and written, in
# chunks. That is why TLS costs a Kafka broker CPU beyond the encryption itself, and why a broker that serves
# many consumers of the same data in the clear can move hundreds of megabytes per second while barely touching
# them. Two other things stop zero-copy: down-conversion for old clients (section 11: the bytes are rebuilt in
# memory), and, in kafkalab, slices under 64 KiB, for which one read is cheaper than a system call of their own.

# %% [markdown]
# ## 13 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the data in the task, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Which file?
#
# A partition directory holds the segments below. Which `.log` file holds offset `OFFSET`? Give its file name.

# %%
BASE_OFFSETS = [0, 1187, 2391, 3580, 4766]
OFFSET = 3579
print([f"{b:020d}.log" for b in BASE_OFFSETS])

# %% tags=["solution"]
segment_file = f"{max(b for b in BASE_OFFSETS if b <= OFFSET):020d}.log"

# %%
lab06.check_segment_file(segment_file, BASE_OFFSETS, OFFSET)

# %% [markdown]
# ### Exercise 2 · Where does the scan start?
#
# The offset index of segment `00000000000000002391.log` has the entries below (`offset, position`, offsets
# already absolute). At which byte position does the broker start reading batch headers to find `TARGET`?

# %%
ENTRIES = [(2403, 4215), (2417, 8437), (2430, 12660), (2446, 16874), (2459, 21099)]
TARGET = 2445

# %% tags=["solution"]
start_position = [p for o, p in ENTRIES if o <= TARGET][-1]

# %%
lab06.check_index_position(start_position, ENTRIES, TARGET, base_offset=2391)

# %% [markdown]
# ### Exercise 3 · Retention by time
#
# A partition has the segments below, `(base offset, largest timestamp)`, the last one active. It is now `NOW`
# and `retention.ms` is `RETENTION_MS` (two days). Which segments does the next retention check delete, and
# what is the log start offset afterwards? Answer with a dict `{"deleted": [...], "log_start_offset": ...}`.

# %%
HOUR = 3_600_000
NOW = lab06.T0 + 100 * HOUR
RETENTION_MS = 48 * HOUR
SEGMENTS = [(0, lab06.T0 + 20 * HOUR), (310, lab06.T0 + 45 * HOUR), (702, lab06.T0 + 58 * HOUR),
            (1090, lab06.T0 + 51 * HOUR), (1475, lab06.T0 + 99 * HOUR)]
pd.DataFrame([{"base offset": b, "newest record: hours before NOW": (NOW - ts) // HOUR} for b, ts in SEGMENTS])

# %% tags=["solution"]
expired = []
for base, largest in SEGMENTS:
    if NOW - largest <= RETENTION_MS:
        break
    expired.append(base)
retention_answer = {"deleted": expired, "log_start_offset": SEGMENTS[len(expired)][0]}

# %%
lab06.check_retention(retention_answer, SEGMENTS, NOW, RETENTION_MS)

# %% [markdown] tags=["solution"]
# (Segment 1090's newest record is 49 hours old, yet it stays: the segment before it is still young enough, and
# retention deletes from the oldest end only.)

# %% [markdown]
# ### Exercise 4 · What does compaction keep?
#
# A compacted topic holds these records (offset = position in the list; `None` is a tombstone). Which offsets
# remain after the cleaner has run (before `delete.retention.ms` has passed)? Give a list of offsets.

# %%
LOG = [("user-1", "alice"), ("user-2", "bob"), ("user-1", "alice@new"), ("user-3", "carol"), ("user-2", None),
       ("user-4", "dave"), ("user-3", "carol@new"), ("user-1", None)]
pd.DataFrame([{"key": k, "value": "None (tombstone)" if v is None else v} for k, v in LOG]).rename_axis("offset")

# %% tags=["solution"]
kept = sorted({key: offset for offset, (key, value) in enumerate(LOG)}.values())

# %%
lab06.check_compaction(kept, LOG)

# %% [markdown]
# ### Exercise 5 · A bad byte after a clean shutdown
#
# Section 10's recovery runs only after an **unclean** shutdown. After a clean one, `.kafka_cleanshutdown` is
# there, and the broker opens its segments without reading a single batch: with 1 GiB segments and thousands of
# partitions, checking everything at every start would take hours. So what becomes of a byte that goes bad on
# disk *while the broker is stopped* (a failing disk, a stray write)? Start a broker, produce six one-record
# batches of payments, stop it cleanly, flip one bit in the value at offset 3, and start it again:

# %%
EX_DIR = BASE / "exercise-5"
cluster = Cluster(brokers=1, log_dirs=str(EX_DIR)).start()
cluster.create_topic("payments", partitions=1, config={"retention.ms": -1})
payments = [build_batch([SimpleRecord(b"payment-%d" % i, b'{"eur": %d}' % (10 * i + 5), (), lab06.T0 + 1000 * i)])
            for i in range(6)]
print("base offsets assigned:", lab06.produce_batches(cluster.bootstrap_servers, "payments", payments))
cluster.stop_broker(0)                                 # clean: flush, checkpoints, then .kafka_cleanshutdown
EX_SEGMENT = EX_DIR / "broker-0" / "payments-0" / "00000000000000000000.log"
data = bytearray(EX_SEGMENT.read_bytes())
data[data.index(b'{"eur": 35}') + 8] ^= 0x01           # one bit: "35" becomes "25"
EX_SEGMENT.write_bytes(bytes(data))
cluster.start_broker(0)
print(cluster.broker(0).log_manager.get_log("payments", 0).recovery_report.summary())

# %% [markdown]
# The broker serves the segment as it is: it never looks inside the batches it sends (section 2, `sendfile`).
# Only a **consumer** can notice: with `check.crcs` (off by default in librdkafka, on in Kafka's Java client) it
# recomputes each batch's CRC-32C, reports the bad batch and cannot get past it. Without the check, the
# application gets a wrong payment and nobody is told:

# %%
def read_payments(check_crcs, count):
    """Read ``count`` records of payments-0 from offset 0; stop at the first error."""
    reader = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "lab06-payments",
                       "enable.auto.commit": False, "check.crcs": check_crcs,
                       "client.software.name": "kafkalab-lab", "client.software.version": "1.0"})
    reader.assign([TopicPartition("payments", 0, 0)])
    seen, deadline = [], time.monotonic() + 15
    while len(seen) < count and time.monotonic() < deadline:
        for m in reader.consume(count - len(seen), timeout=1.0):
            if m.error():                              # the consumer stays stuck here: report it once
                reader.close()
                return seen + [f"error: {m.error().str()}"]
            seen.append(f"offset {m.offset()}: {m.value().decode()}")
    reader.close()
    return seen


print("check.crcs=true: ", *read_payments(True, 6), sep="\n  ")
print("check.crcs=false:", *read_payments(False, 6), sep="\n  ")

# %% [markdown]
# `kafkalab dump-log --deep-iteration` finds the batch without a broker: its line says `isvalid: false`, and the
# tool lists every such batch again at the end (on stderr), with the CRC stored in the batch and the one
# computed from its bytes:

# %%
dumped = lab06.dump_log(EX_SEGMENT.parent, [EX_SEGMENT.name], "--deep-iteration")
print(dumped.replace(str(EX_SEGMENT.parent.resolve()) + os.sep, ""))

# %% [markdown]
# Kafka's answer is **recovery**, and it runs only when the marker is missing. Delete `.kafka_cleanshutdown` and
# start the broker: it takes this start for one after a crash, re-reads every segment from the one holding the
# recovery point (here the only segment) batch by batch, checks each batch's size and CRC, and cuts the log at
# the first batch that fails (section 10).
#
# **What is the log end offset of `payments-0` after that recovery?** Work it out from the dump above.

# %% tags=["solution"]
recovered_leo = next(b.base_offset for b in lab06.batches_of(EX_SEGMENT) if not b.crc_valid)

# %%
lab06.check_recovery(recovered_leo, EX_SEGMENT)

# %% [markdown]
# Now let the broker do it:

# %%
cluster.stop_broker(0)
(EX_DIR / "broker-0" / ".kafka_cleanshutdown").unlink()    # as if the broker had crashed
cluster.start_broker(0)
recovered = cluster.broker(0).log_manager.get_log("payments", 0)
print(recovered.recovery_report.summary().replace("; ", "\n  "))
print("check.crcs=true:", *read_payments(True, recovered.log_end_offset), sep="\n  ")
cluster.stop()

# %% [markdown]
# The bad batch is gone, and with it every batch after it (a log has no holes), though all of them were
# acknowledged. On a real cluster that is where replication earns its keep: the broker follows the leader again,
# and fetches offsets 3-5 back from a replica whose disk was fine (lab 08). On a single broker they are lost.
# So after a clean shutdown Kafka trusts the disk; the checks are the consumers' CRCs and, when they complain,
# an operator with `kafka-dump-log.sh --deep-iteration`, who removes the bad replica's directory (or its
# clean-shutdown marker) and lets replication or recovery do the rest.

# %% [markdown]
# ## 14 · Recap
#
# * **A partition is a directory** `<log.dirs>/<topic>-<partition>` of segments; each segment is a `.log`, an
#   `.index` and a `.timeindex`, named after its first offset (20 digits). Around them: `partition.metadata`
#   (topic id), `leader-epoch-checkpoint`, and per log dir `meta.properties` and the checkpoint files.
# * **Stored as sent (C18).** The leader rewrites only `base_offset` and `partition_leader_epoch`, before the
#   CRC range; the records are never re-encoded, so the CRC still holds and the bytes can go out with `sendfile`.
# * **Append-only, read anywhere (C24).** Segments roll at `segment.bytes` (or `segment.ms`); only the active one
#   is written. A lookup picks the segment, binary-searches the sparse index (one entry per
#   `index.interval.bytes`), then walks batch headers.
# * **Records stay after being read (C19).** Read from offset 10 twice, same records. Time → offset with
#   ListOffsets / `offsets_for_times`; -2, -1, -3 for earliest, latest, max timestamp (C31).
# * **Retention** deletes whole segments, oldest first, by `retention.ms` (newest record's age) or
#   `retention.bytes` (per partition); an expired active segment goes too, after a roll to a new empty one.
#   The log start offset moves up.
# * **Compaction (C27)** keeps the latest record per key at its original offset; tombstones stay for
#   `delete.retention.ms`; the active segment is never cleaned.
# * **Recovery** after an unclean shutdown scans from the recovery point, keeps every complete CRC-valid batch
#   and cuts the rest. After a clean shutdown (`.kafka_cleanshutdown`) nothing is checked: a segment corrupted on
#   disk is served as it is, and only a consumer's `check.crcs` (or `dump-log --deep-iteration`) notices.
# * **Message formats v0 and v1** (before 0.11): a message set, each message with its own offset, size and CRC-32;
#   compression through a wrapper message. A Kafka 3 broker stores v2 only: it converts what Produce v0-2 send
#   and what Fetch v0-3 receive, at a cost it counts (`*MessageConversionsPerSec`).
# * **Zero-copy (C18).** In the clear a Fetch's log slice goes from the page cache to the socket with `sendfile`,
#   never through the broker process; over TLS it is read and copied through the encryption (Kafka's
#   `SslTransportLayer`), as the broker's `sendfile-bytes-total` / `copied-file-bytes-total` counters show.
#
# **Next:** lab 07, *Fetching, the high watermark and purgatory*: the bytes go the other way, from the `.log`
# to the consumer.

# %%
workdir.cleanup()
print("lab files removed")
