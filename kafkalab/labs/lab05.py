"""Lab 05 (``labs/05_producing.ipynb``): the producer's journey -- partitioner, batches, compression, acks,
idempotence.

Theory of operation
-------------------
A producer turns ``send()`` calls into a few Produce requests. Most of what decides *which* requests is
invisible from the outside: the partitioner (which partition), the accumulator (which batch), the sender (which
request, to which leader). kafkalab's producer records every request and response it exchanges
(``Producer(..., trace=True)``), so this module reads the story back **from the trace** and from the bytes:

* :func:`murmur2_steps` -- Kafka's murmur2 of a key, block by block, as a table a learner can follow by hand;
  :func:`partition_table` -- the same keys through Java's rule (``toPositive(murmur2) % n``) and librdkafka's
  ``consistent_random`` (``crc32 % n``) side by side;
* :func:`produce_requests` / :func:`batch_rows` -- the Produce requests in a trace and the batches inside them
  (node, topic, partition, records, bytes, codec, producer id and sequence), decoded from the frames, in the
  order each connection sent them (:func:`sent_order`); :func:`pid` prints a producer id;
* :func:`routing_diagram` -- records -> partitions -> leader brokers, drawn with Graphviz;
* :func:`order_events` -- a seeded, realistic payload (JSON order events), and :func:`compression_rows`, the
  size of one batch of them under each codec;
* :func:`plan_batches` (how the accumulator cuts records into batches of ``batch.size``),
  :func:`sequence_outcome` (what a broker does with an idempotent batch), :func:`log_rows` (what a partition's
  ``.log`` files hold) and :func:`resend` (replay a captured request frame on a bare socket);
* the checks ``check_*``, which compute the right answer from the data the learner was given.

Mirrors what ``clients/.../producer/internals/{BuiltInPartitioner,RecordAccumulator,Sender}.java`` and
``storage/.../internals/log/ProducerStateManager.java`` decide.
"""
from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.clients.producer.accumulator import RECORD_BATCH_OVERHEAD
from kafkalab.clients.producer.partitioner import murmur2, to_positive
from kafkalab.labs import CheckResult, check, check_equal, check_parts, is_unanswered
from kafkalab.viz.textfit import GRAPHVIZ_FONT

__all__ = ["TOPIC", "T0", "CLIENT_ID", "config", "murmur2_steps", "partition_table", "produce_requests",
           "batch_rows", "sent_order", "pid", "routing_diagram", "order_events", "compression_rows", "plan_batches", "sequence_outcome",
           "log_rows", "resend", "quiet_logger", "check_java_partition", "check_librdkafka_partition",
           "check_batches", "check_sequences"]

TOPIC = "orders"
#: Every record of the lab carries a fixed timestamp from here on (2023-11-14 22:13:20 UTC): batch sizes,
#: and therefore every number the lab prints, then stay the same from run to run.
T0 = 1_700_000_000_000
CLIENT_ID = "kafkalab-lab05"

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def config(bootstrap: str, **settings) -> dict:
    """A producer config with the lab's fixed client id; keyword names use ``_`` for Kafka's ``.``
    (``linger_ms=10`` -> ``"linger.ms": 10``)."""
    out = {"bootstrap.servers": bootstrap, "client.id": CLIENT_ID}
    out.update({k.replace("_", "."): v for k, v in settings.items()})
    return out


def quiet_logger():
    """A logger that swallows librdkafka's log lines (they go to stderr otherwise, e.g. "Disconnected" when the
    lab's brokers stop); pass it as confluent-kafka's ``logger``."""
    import logging

    logger = logging.getLogger("kafkalab.lab05.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


# -- partitioning --------------------------------------------------------------------------------------------------------
def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_steps(key: bytes) -> list[dict]:
    """Kafka's murmur2 of ``key``, one row per step: the 4-byte blocks (read little-endian), the tail, the final
    mix. The last row's ``h`` is ``Utils.murmur2(key)``; ``toPositive`` of it picks the partition."""
    rows = []
    h = (_SEED ^ len(key)) & _MASK
    rows.append({"step": "start", "input": f"seed 0x9747b28c ^ length {len(key)}", "h (hex)": f"{h:08x}"})
    blocks = len(key) // 4
    for i in range(blocks):
        chunk = key[4 * i:4 * i + 4]
        k = int.from_bytes(chunk, "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
        rows.append({"step": f"block {i}", "input": f"{chunk!r} = 0x{int.from_bytes(chunk, 'little'):08x} (LE)",
                     "h (hex)": f"{h:08x}"})
    tail = key[4 * blocks:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * _M) & _MASK
        rows.append({"step": "tail", "input": f"{tail!r}", "h (hex)": f"{h:08x}"})
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    rows.append({"step": "final mix", "input": "h ^= h>>>13; h *= m; h ^= h>>>15", "h (hex)": f"{h:08x}"})
    for r in rows:
        r["h (Java int)"] = _signed(int(r["h (hex)"], 16))
    return rows


def partition_table(keys: Iterable[str], partitions: int) -> list[dict]:
    """Each key through Java's default partitioner and librdkafka's ``consistent_random``."""
    rows = []
    for key in keys:
        data = key.encode()
        m = murmur2(data)
        crc = zlib.crc32(data)
        rows.append({"key": key, "murmur2": m, "toPositive": to_positive(m),
                     f"Java: % {partitions}": to_positive(m) % partitions, "crc32": crc,
                     f"librdkafka: % {partitions}": crc % partitions if data else "random"})
    return rows


# -- reading a producer's trace ------------------------------------------------------------------------------------------
def produce_requests(trace) -> list:
    """The Produce exchanges of a trace (a ``ClientTrace`` or a list of events), in the order they were sent."""
    events = trace.events if hasattr(trace, "events") else list(trace)
    return [e for e in events if e.api_key == 0]


def sent_order(events) -> list:
    """``events`` sorted by broker, then correlation id: the order each connection sent them in. (A trace
    records an exchange when it is *over*, so answers from several brokers arrive in any order.)"""
    return sorted(events, key=lambda e: (e.node_id, e.correlation_id))


def pid(producer_id: int) -> str:
    """A producer id as the lab prints it: ``pid 1004``, or ``-1 (none)``. Which broker hands out the id is the
    client's (random) choice and each broker draws its own block of ids, so the number differs from run to run;
    ``labs/sanitize.cfg`` masks it for nbval."""
    return "-1 (none)" if producer_id < 0 else f"pid {producer_id}"


def batch_rows(trace, *, sequences: bool = False) -> list[dict]:
    """One row per record batch sent in the trace's Produce requests: request number, broker, topic,
    partition, records, bytes, codec (decoded from the request frame, not from the producer's memory). Within a
    request, rows go by topic and partition (the order inside the request depends on which topic's metadata
    the producer had first)."""
    from kafkalab.records import decode_batch

    rows = []
    for n, ev in enumerate(sent_order(produce_requests(trace)), 1):
        for t in sorted(ev.request.body.topic_data, key=lambda t: t.name):
            for pd in sorted(t.partition_data, key=lambda pd: pd.index):
                b = decode_batch(pd.records)
                row = {"request": n, "broker": ev.node_id, "acks": ev.request.body.acks, "topic": t.name,
                       "partition": pd.index, "records": len(b.records), "batch bytes": len(pd.records),
                       "compression": b.compression_type.name.lower()}
                if sequences:
                    row.update({"producer_id": pid(b.producer_id), "producer_epoch": b.producer_epoch,
                                "base_sequence": b.base_sequence})
                rows.append(row)
    return rows


def routing_diagram(placements: Sequence[tuple[str, int]], leaders: Mapping[int, int], topic: str = TOPIC,
                    *, title: Optional[str] = None):
    """Records (by key) -> the partition the partitioner chose -> that partition's leader broker."""
    import graphviz

    from kafkalab.viz import Diagram

    colours = ["#d0ebff", "#d3f9d8", "#fff3bf", "#ffd8a8", "#e5dbff", "#ffc9c9"]
    g = graphviz.Digraph("routing", graph_attr={"rankdir": "LR", "bgcolor": "transparent", "ranksep": "1.2",
                                                "nodesep": "0.12", "fontname": GRAPHVIZ_FONT},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "shape": "box",
                                    "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#868e96"},
                         edge_attr={"color": "#868e96", "arrowsize": "0.6"})
    brokers = sorted(set(leaders.values()))
    with g.subgraph(name="cluster_records") as s:
        s.attr(label="send(key=...)", style="dashed", color="#adb5bd", fontsize="11")
        for i, (key, _) in enumerate(placements):
            s.node(f"r{i}", key)
    with g.subgraph(name="cluster_partitions") as s:
        s.attr(label=f"topic {topic}", style="dashed", color="#adb5bd", fontsize="11")
        for p in sorted(leaders):
            s.node(f"p{p}", f"{topic}-{p}", fillcolor=colours[leaders[p] % len(colours)])
    with g.subgraph(name="cluster_brokers") as s:
        s.attr(label="leaders", style="dashed", color="#adb5bd", fontsize="11")
        for b in brokers:
            s.node(f"b{b}", f"broker {b}", shape="box3d", fillcolor=colours[b % len(colours)])
    for i, (_, p) in enumerate(placements):
        g.edge(f"r{i}", f"p{p}")
    for p in sorted(leaders):
        g.edge(f"p{p}", f"b{leaders[p]}", color="#495057", penwidth="1.5")
    return Diagram(g, caption=title or "Each record goes to the partition its key hashes to; each partition's "
                                       "batches go to that partition's leader.")


# -- payloads and compression --------------------------------------------------------------------------------------------
_ITEMS = ["espresso beans 1kg", "oat milk 6x1l", "paper filters", "burr grinder", "ceramic mug", "kettle 1.2l",
          "descaler", "travel tumbler", "milk frother", "tea sampler"]
_CITIES = ["Lisbon", "Porto", "Braga", "Coimbra", "Faro", "Aveiro"]


def order_events(n: int, seed: int = 5) -> list[tuple[bytes, bytes]]:
    """``n`` (key, value) pairs that look like a shop's order events: a customer key and a JSON value. Seeded,
    so every run (and every machine) gets the same bytes."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        customer = f"customer-{rng.randrange(200):03d}"
        items = [{"sku": f"SKU-{rng.randrange(10_000):05d}", "name": rng.choice(_ITEMS), "qty": rng.randint(1, 4),
                  "unit_price": round(rng.uniform(2, 90), 2)} for _ in range(rng.randint(1, 3))]
        value = {"order_id": f"ord-{100_000 + i}", "customer": customer, "status": rng.choice(
                 ["created", "paid", "shipped"]), "city": rng.choice(_CITIES), "currency": "EUR", "items": items,
                 "ts": T0 + 1000 * i}
        out.append((customer.encode(), json.dumps(value, separators=(",", ":")).encode()))
    return out


def compression_rows(events: Sequence[tuple[bytes, bytes]], codecs: Sequence[str] = ("none", "gzip", "snappy", "lz4",
                                                                                         "zstd")) -> list[dict]:
    """One batch of ``events`` built with each codec: its size, and the ratio to the uncompressed batch; then the
    same records as one-record batches with that codec (each compressed alone), their bytes added up."""
    from kafkalab.records import SimpleRecord, build_batch

    records = [SimpleRecord(k, v, (), T0 + 1000 * i) for i, (k, v) in enumerate(events)]
    payload = sum(len(k) + len(v) for k, v in events)
    rows, plain = [], None
    for codec in codecs:
        compression = None if codec == "none" else codec
        size = len(build_batch(records, compression=compression))
        plain = plain or size
        alone = sum(len(build_batch([r], compression=compression)) for r in records)
        rows.append({"compression.type": codec, "batch bytes": size, "ratio": round(plain / size, 2),
                     "bytes per record": round(size / len(records), 1), "key+value bytes": payload,
                     f"{len(records)} one-record batches, bytes": alone})
    return rows


# -- the accumulator and the broker's sequence check, as plain rules -----------------------------------------------------
def plan_batches(sizes: Sequence[int], batch_size: int, overhead: int = RECORD_BATCH_OVERHEAD) -> list[int]:
    """How many records each batch of one partition gets: a record joins the open batch if the batch is empty
    or still fits ``batch.size`` with it (the batch header's ``overhead`` counts); otherwise a new batch opens."""
    batches: list[int] = []
    used = 0
    for s in sizes:
        if batches and used + s <= batch_size:
            batches[-1] += 1
            used += s
        else:
            batches.append(1)
            used = overhead + s
    return batches


def sequence_outcome(stored: Sequence[tuple[int, int]], base_sequence: int, count: int) -> str:
    """What a partition leader does with an idempotent batch ``(base_sequence, count)`` of a producer whose
    last batches there were ``stored`` ((base_sequence, count) each, oldest first; the broker keeps five):
    ``"duplicate"`` (already written: answer with the original offset, write nothing), ``"append"`` (the next
    sequence: write it) or ``"OUT_OF_ORDER_SEQUENCE_NUMBER"`` (a gap, or an old batch it no longer remembers)."""
    recent = list(stored)[-5:]
    if (base_sequence, count) in recent:
        return "duplicate"
    last = recent[-1][0] + recent[-1][1] - 1 if recent else -1
    return "append" if base_sequence == last + 1 else "OUT_OF_ORDER_SEQUENCE_NUMBER"


# -- looking at the broker -----------------------------------------------------------------------------------------------
def log_rows(partition_dir) -> list[dict]:
    """Every record in a partition directory's ``.log`` files, read from disk: offset, key, value, producer id
    and sequence of its batch."""
    from kafkalab.records import decode_batches

    rows = []
    for seg in sorted(Path(partition_dir).glob("*.log")):
        for b in decode_batches(seg.read_bytes()):
            for i, r in enumerate(b.records):
                rows.append({"offset": r.offset, "key": None if r.key is None else r.key.decode(),
                             "value": None if r.value is None else r.value.decode(), "producer_id": pid(b.producer_id),
                             "sequence": -1 if b.base_sequence < 0 else b.base_sequence + i})
    return rows


def resend(event, address: Optional[str] = None):
    """Send the request frame of a trace ``event`` again, byte for byte, on a new bare connection to the same
    broker, and return the decoded response (a retry that the producer never made, as if an answer was lost)."""
    from kafkalab.trace import RawConnection
    from kafkalab.protocol import decode_response

    with RawConnection(address or event.address) as conn:
        conn.send(event.request_frame)
        return decode_response(conn.receive(), event.api_key, event.api_version)


# -- checks --------------------------------------------------------------------------------------------------------------
def _is_int(a: Any) -> bool:
    return isinstance(a, int) and not isinstance(a, bool)


def check_java_partition(answer: Any, key: str, partitions: int) -> CheckResult:
    """Exercise: the partition Java's default partitioner picks for ``key``."""
    data = key.encode()
    m = murmur2(data)
    expected = to_positive(m) % partitions

    def diagnose(a):
        if not _is_int(a):
            return "give a partition number (an int)"
        if a == abs(m) % partitions and a != expected:
            return "abs() is not toPositive(): Kafka clears the sign bit (h & 0x7fffffff)"
        if a == zlib.crc32(data) % partitions:
            return "that is librdkafka's consistent_random (crc32); Java hashes with murmur2"
        if not 0 <= a < partitions:
            return f"a partition number is between 0 and {partitions - 1}"
        return None
    return check_equal(f"Exercise 1 · Java's partition for key {key!r}", answer, expected, diagnose=diagnose,
                       hint="toPositive(murmur2(key bytes)) % number of partitions")


def check_librdkafka_partition(answer: Any, key: str, partitions: int) -> CheckResult:
    """Exercise: the partition librdkafka's default ``consistent_random`` picks for ``key``."""
    data = key.encode()
    expected = zlib.crc32(data) % partitions

    def diagnose(a):
        if not _is_int(a):
            return "give a partition number (an int)"
        if a == to_positive(murmur2(data)) % partitions:
            return "that is Java's murmur2 rule; librdkafka's default hashes with CRC-32 (zlib.crc32)"
        return None
    return check_equal(f"Exercise 2 · librdkafka's partition for key {key!r}", answer, expected, diagnose=diagnose,
                       hint="zlib.crc32(key bytes) % number of partitions")


def check_batches(answer: Any, sizes: Sequence[int], batch_size: int) -> CheckResult:
    """Exercise: records per batch when records of ``sizes`` bytes go to one partition with ``batch_size``."""
    title = "Exercise 3 · cutting records into batches"
    expected = plan_batches(sizes, batch_size)
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple)) or not all(_is_int(a) for a in answer):
        return check(title, False, "give a list of ints: the number of records in each batch, in order")
    got = list(answer)
    if got == expected:
        return check(title, True, f"correct, {len(got)} batches: {got}")
    if sum(got) != len(sizes):
        hint = f"every one of the {len(sizes)} records goes into exactly one batch"
    elif got == plan_batches(sizes, batch_size, overhead=0):
        hint = f"the batch header counts too: a batch starts at {RECORD_BATCH_OVERHEAD} bytes before any record"
    else:
        hint = "add records to the open batch while header + records stay <= batch.size; then open a new batch"
    return check(title, False, f"{got} is not right", hint=hint)


def check_sequences(answers: Any, stored: Sequence[tuple[int, int]], incoming: Mapping[str, tuple[int, int]]
                    ) -> CheckResult:
    """Exercise: for each named incoming batch ``(base_sequence, count)``, what the broker does with it."""
    expected = {name: sequence_outcome(stored, base, count) for name, (base, count) in incoming.items()}

    def diagnose(name, got):
        valid = {"append", "duplicate", "OUT_OF_ORDER_SEQUENCE_NUMBER"}
        if got not in valid:
            return f"answer with one of {sorted(valid)}"
        return f"{got!r} is not right"
    return check_parts("Exercise 4 · what the broker does with each batch", answers, expected, diagnose=diagnose,
                       hint="same (base_sequence, count) as a remembered batch: duplicate; exactly last + 1: append; "
                            "anything else: out of order")
