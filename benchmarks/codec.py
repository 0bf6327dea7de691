"""Codec speed: kafkalab against kafka-python (pure Python) and kio (native Rust parser), in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/codec.py                 # full run (about a minute on 2 cores)
    .venv/bin/python benchmarks/codec.py --quick         # smoke run, a few seconds
    .venv/bin/python benchmarks/codec.py --rows a,d      # only some rows
    .venv/bin/python benchmarks/codec.py --profile       # cProfile every kafkalab operation that misses

Rows (see benchmarks/README.md for the details and the targets):

    a  Metadata v12 response, 3 brokers, 100 topics x 10 partitions      encode + decode
    b  Produce v9 request carrying one 1 MiB record batch of 1 KiB records encode + decode
    c  Fetch v12 response, 10 partitions with a 64 KiB record batch each   encode + decode
    d  RecordBatch v2 of 10,000 records, every record's fields touched     decode

Every library gets the same data, built into its own objects. Before anything is timed the script checks
that each library round-trips its input (decode(encode(x)) == x) and that kafkalab writes exactly the
bytes kafka-python and kio write. This is a report, not a test: the exit status is 0 even when a target
is MISSED.
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import datetime
import gc
import io
import os
import pstats
import random
import statistics
import struct
import sys
import time
import tracemalloc
import uuid
from typing import Any, Callable, Optional

import harness  # noqa: F401  (makes this checkout's kafkalab importable without `pip install -e .`)

from kafkalab.protocol import codec, encode_request, make_request, request_schema, response_schema
from kafkalab.protocol import request_class, response_class
from kafkalab.protocol.annotate import annotate_message

try:
    import kafka
    from kafka.protocol.consumer import FetchResponse as KpFetch
    from kafka.protocol.metadata import MetadataResponse as KpMetadata
    from kafka.protocol.producer import ProduceRequest as KpProduce
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
except ImportError as e:  # pragma: no cover - kafka-python is a test dependency
    sys.exit(f"benchmarks/codec.py needs kafka-python (it also builds the record batches): {e}")

try:
    import kio
    from kio.records.readers import read_batch as kio_read_batch
    from kio.schema.errors import ErrorCode as KioErrorCode
    from kio.schema.fetch.v12 import response as kio_fetch
    from kio.schema.metadata.v12 import response as kio_metadata
    from kio.schema.produce.v9 import request as kio_produce
    from kio.serial import entity_reader, entity_writer
except ImportError:  # pragma: no cover
    kio = None

LIBS = ("kafkalab", "kafka-python", "kio")
TARGET_VS_KAFKA_PYTHON = 1.5
COPY_LIMIT = 2.2 * 1024 * 1024
BASE_TS = 1_700_000_000_000
TOPIC = "bench-topic"

#: Names looked up on ``kafkalab.records`` for the RecordBatch decoder of row d (the first callable wins).
#: Same order as tests/interop/test_golden_frames.py, plus the singular forms.
RECORDS_DECODER_NAMES = ("decode_batches", "read_batches", "decode", "iter_batches", "decode_batch", "read_batch")


# ------------------------------------------------------------------------------------------- the data

def build_batch(n_records: Optional[int], batch_size: int, make_record: Callable, base_offset: int = 0):
    """A RecordBatch v2 (uncompressed) written by kafka-python's builder, and the records it holds.

    Appends ``make_record(i) -> (key, value, headers)`` until ``n_records`` are in, or until the batch is
    full (``n_records=None``). ``base_offset`` is patched in afterwards; it is not covered by the CRC.
    """
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=batch_size)
    truth = []
    i = 0
    while n_records is None or i < n_records:
        key, value, headers = make_record(i)
        if builder.append(i, BASE_TS + i, key, value, headers) is None:
            break
        truth.append((base_offset + i, BASE_TS + i, key, value, tuple(headers)))
        i += 1
    blob = bytearray(builder.build())
    struct.pack_into(">q", blob, 0, base_offset)
    return bytes(blob), truth


def make_data() -> dict:
    rnd = random.Random(20240601)
    data: dict[str, Any] = {}
    # a: one broker list, 100 topics x 10 partitions, replicas/isr of 3
    data["brokers"] = [(i, f"broker-{i}.kafka.internal", 9092, f"rack-{i}") for i in range(3)]
    topics = []
    for t in range(100):
        parts = []
        for p in range(10):
            replicas = tuple((t + p + k) % 3 for k in range(3))
            parts.append((p, replicas[0], 7 + p % 3, replicas, replicas))
        topics.append((f"orders.region-{t:03d}", uuid.UUID(bytes=rnd.randbytes(16)), parts))
    data["topics"] = topics
    # b: one batch filled up to 1 MiB with 1 KiB values
    kib = [rnd.randbytes(1024) for _ in range(16)]
    data["produce_batch"], data["produce_truth"] = build_batch(
        None, 1024 * 1024, lambda i: (b"order-%06d" % i, kib[i % 16], []))
    # c: 10 partitions, each one batch of about 64 KiB (1 KiB values) at a realistic base offset
    data["fetch_parts"] = []
    for p in range(10):
        base = 1_000_000 * (p + 1)
        blob, _ = build_batch(None, 64 * 1024, lambda i, p=p: (b"k%05d" % i, kib[(i + p) % 16], []), base)
        data["fetch_parts"].append((p, base + 5000, base + 5000, base - 200_000, blob))
    # d: 10,000 records, 100-byte values, one header each
    values = [rnd.randbytes(100) for _ in range(64)]
    data["batch10k"], data["truth10k"] = build_batch(
        10_000, 1 << 30, lambda i: (b"key-%05d" % i, values[i % 64], [("trace-id", b"%016x" % i)]), 42_000)
    return data


# --------------------------------------------------------------------------- one message, three libraries

@dataclasses.dataclass
class Impl:
    """One library's version of one message: its object, its bytes, and how to encode/decode them."""

    obj: Any
    encode: Callable[[], Any]
    decode: Callable[[], Any]
    data: bytes = b""

    def __post_init__(self):
        self.data = bytes(self.encode())


def _kio_encoder(cls, obj):
    write = entity_writer(cls)

    def encode():
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()
    return encode


def _kio_decoder(cls, data_ref):
    read = entity_reader(cls)
    return lambda: read(data_ref[0], 0)[0]


def metadata_impls(d) -> tuple[dict, Any, int]:
    schema, version, out = response_schema(3), 12, {}
    M = response_class(3)
    lab = M(throttle_time_ms=0, cluster_id="bench-cluster", controller_id=1,
            brokers=tuple(M.MetadataResponseBroker(node_id=n, host=h, port=p, rack=r) for n, h, p, r in d["brokers"]),
            topics=tuple(M.MetadataResponseTopic(
                error_code=0, name=name, topic_id=tid, is_internal=False,
                partitions=tuple(M.MetadataResponsePartition(
                    error_code=0, partition_index=p, leader_id=leader, leader_epoch=epoch, replica_nodes=reps,
                    isr_nodes=isr, offline_replicas=()) for p, leader, epoch, reps, isr in parts))
                for name, tid, parts in d["topics"]))
    out["kafkalab"] = _lab_impl(schema, version, lab)
    KT = KpMetadata.MetadataResponseTopic
    kp = KpMetadata(version=12, throttle_time_ms=0, cluster_id="bench-cluster", controller_id=1,
                    brokers=[KpMetadata.MetadataResponseBroker(version=12, node_id=n, host=h, port=p, rack=r)
                             for n, h, p, r in d["brokers"]],
                    topics=[KT(version=12, error_code=0, name=name, topic_id=tid, is_internal=False,
                               partitions=[KT.MetadataResponsePartition(
                                   version=12, error_code=0, partition_index=p, leader_id=leader, leader_epoch=epoch,
                                   replica_nodes=list(reps), isr_nodes=list(isr), offline_replicas=[])
                                   for p, leader, epoch, reps, isr in parts])
                            for name, tid, parts in d["topics"]])
    out["kafka-python"] = _kp_impl(KpMetadata, version, kp)
    if kio:
        k = kio_metadata
        ko = k.MetadataResponse(
            throttle_time=datetime.timedelta(0), cluster_id="bench-cluster", controller_id=1,
            brokers=tuple(k.MetadataResponseBroker(node_id=n, host=h, port=p, rack=r) for n, h, p, r in d["brokers"]),
            topics=tuple(k.MetadataResponseTopic(
                error_code=KioErrorCode.none, name=name, topic_id=tid, is_internal=False,
                partitions=tuple(k.MetadataResponsePartition(
                    error_code=KioErrorCode.none, partition_index=p, leader_id=leader, leader_epoch=epoch,
                    replica_nodes=reps, isr_nodes=isr, offline_replicas=()) for p, leader, epoch, reps, isr in parts))
                for name, tid, parts in d["topics"]))
        out["kio"] = _kio_impl(k.MetadataResponse, ko)
    return out, schema, version


def produce_impls(d) -> tuple[dict, Any, int]:
    schema, version, out = request_schema(0), 9, {}
    batch = d["produce_batch"]
    P = request_class(0)
    lab = P(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=(P.TopicProduceData(
        name=TOPIC, partition_data=(P.PartitionProduceData(index=0, records=batch),)),))
    out["kafkalab"] = _lab_impl(schema, version, lab)
    T = KpProduce.TopicProduceData
    kp = KpProduce(version=9, transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[T(
        version=9, name=TOPIC, partition_data=[T.PartitionProduceData(version=9, index=0, records=batch)])])
    out["kafka-python"] = _kp_impl(KpProduce, version, kp)
    if kio:
        k = kio_produce
        ko = k.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(milliseconds=30_000),
                              topic_data=(k.TopicProduceData(name=TOPIC, partition_data=(
                                  k.PartitionProduceData(index=0, records=batch),)),))
        out["kio"] = _kio_impl(k.ProduceRequest, ko)
    return out, schema, version


def fetch_impls(d) -> tuple[dict, Any, int]:
    schema, version, out = response_schema(1), 12, {}
    F = response_class(1)
    parts = d["fetch_parts"]
    lab = F(throttle_time_ms=0, error_code=0, session_id=7, responses=(F.FetchableTopicResponse(
        topic=TOPIC, partitions=tuple(F.PartitionData(
            partition_index=p, error_code=0, high_watermark=hw, last_stable_offset=lso, log_start_offset=lstart,
            aborted_transactions=None, preferred_read_replica=-1, records=blob)
            for p, hw, lso, lstart, blob in parts)),))
    out["kafkalab"] = _lab_impl(schema, version, lab)
    T = KpFetch.FetchableTopicResponse
    kp = KpFetch(version=12, throttle_time_ms=0, error_code=0, session_id=7, responses=[T(
        version=12, topic=TOPIC, partitions=[T.PartitionData(
            version=12, partition_index=p, error_code=0, high_watermark=hw, last_stable_offset=lso,
            log_start_offset=lstart, aborted_transactions=None, preferred_read_replica=-1, records=blob)
            for p, hw, lso, lstart, blob in parts])])
    out["kafka-python"] = _kp_impl(KpFetch, version, kp)
    if kio:
        k = kio_fetch
        ko = k.FetchResponse(throttle_time=datetime.timedelta(0), error_code=KioErrorCode.none, session_id=7,
                             responses=(k.FetchableTopicResponse(topic=TOPIC, partitions=tuple(k.PartitionData(
                                 partition_index=p, error_code=KioErrorCode.none, high_watermark=hw,
                                 last_stable_offset=lso, log_start_offset=lstart, aborted_transactions=None,
                                 preferred_read_replica=-1, records=blob)
                                 for p, hw, lso, lstart, blob in parts)),))
        out["kio"] = _kio_impl(k.FetchResponse, ko)
    return out, schema, version


def _lab_impl(schema, version, obj) -> Impl:
    ref: list = [b""]
    impl = Impl(obj, lambda: codec.encode(schema, version, obj), lambda: codec.decode(schema, version, ref[0])[0])
    ref[0] = impl.data
    return impl


def _kp_impl(cls, version, obj) -> Impl:
    ref: list = [b""]
    impl = Impl(obj, lambda: obj.encode(version=version), lambda: cls.decode(ref[0], version=version))
    ref[0] = impl.data
    return impl


def _kio_impl(cls, obj) -> Impl:
    ref: list = [b""]
    impl = Impl(obj, _kio_encoder(cls, obj), _kio_decoder(cls, ref))
    ref[0] = impl.data
    return impl


# ---------------------------------------------------------------------------------- row d: record batches

def _touch(records) -> int:
    """Read every field a consumer reads; the same loop for every library."""
    n = 0
    for r in records:
        _ = (r.key, r.value, r.headers, r.offset, r.timestamp)
        n += 1
    return n


def find_lab_records_decoder() -> tuple[Optional[Callable], str]:
    """kafkalab.records' batch decoder, if it exists yet: (function, its name) or (None, why not)."""
    try:
        import kafkalab.records as records
    except Exception as e:  # being written right now: any failure means "not yet"
        return None, f"import kafkalab.records failed: {type(e).__name__}: {e}"
    for name in RECORDS_DECODER_NAMES:
        fn = getattr(records, name, None)
        if callable(fn):
            return fn, f"kafkalab.records.{name}"
    return None, "kafkalab.records exposes none of " + ", ".join(RECORDS_DECODER_NAMES)


def _lab_batches(result) -> list:
    """Whatever the decoder returned, as a list of batches: one batch, (batch, end), or an iterable."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], int):
        result = result[0]
    if hasattr(result, "records"):
        return [result]
    return list(result)


def _records_of(batch):
    recs = getattr(batch, "records", batch)
    return recs() if callable(recs) else recs


def record_decoders(d) -> tuple[dict, str]:
    """Row d: a decode function per library, returning the number of records touched."""
    blob = d["batch10k"]
    out: dict[str, Optional[Callable]] = {}
    fn, where = find_lab_records_decoder()
    if fn is not None:
        def lab():
            return sum(_touch(_records_of(b)) for b in _lab_batches(fn(blob)))
        out["kafkalab"] = lab
    else:
        out["kafkalab"] = None

    def kp():
        batch = DefaultRecordBatch(blob)
        if not batch.validate_crc():  # what KafkaConsumer does with check_crcs=True (its default)
            raise ValueError("CRC mismatch")
        return _touch(batch)
    out["kafka-python"] = kp
    if kio:
        def kio_dec():
            return _touch(kio_read_batch(blob, 0)[0].records)
        out["kio"] = kio_dec
    return out, where


def records_as_tuples(lib: str, d, fn) -> list:
    """The decoded records as (offset, timestamp_ms, key, value, headers) for comparing with the truth."""
    blob = d["batch10k"]
    if lib == "kafkalab":
        recs = [r for b in _lab_batches(fn(blob)) for r in _records_of(b)]
    elif lib == "kafka-python":
        recs = list(DefaultRecordBatch(blob))
    else:
        recs = list(kio_read_batch(blob, 0)[0].records)
    out = []
    for r in recs:
        ts = r.timestamp
        if isinstance(ts, datetime.datetime):
            ts = int(ts.timestamp() * 1000)
        headers = tuple((h.key, h.value) if hasattr(h, "key") else tuple(h) for h in r.headers)
        headers = tuple((k.decode() if isinstance(k, bytes) else k, v) for k, v in headers)
        out.append((r.offset, ts, r.key, r.value, headers))
    return out


# ------------------------------------------------------------------------------------------- checks

def first_difference(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def describe_mismatch(lab: bytes, other: bytes, schema, version) -> str:
    i = first_difference(lab, other)
    where = "?"
    try:
        rows = annotate_message(schema, version, lab, 0, path="body")[2]
        hits = [r for r in rows if r.start <= i < r.end]
        if hits:
            r = max(hits, key=lambda r: r.depth)
            where = f"{r.path} ({r.wire_type}, bytes {r.start}-{r.end})"
    except Exception as e:
        where = f"(annotation failed: {e})"
    return (f"lengths {len(lab)} vs {len(other)}; first difference at byte {i}, in {where}; "
            f"kafkalab {lab[max(0, i - 8):i + 8].hex(' ')} / other {other[max(0, i - 8):i + 8].hex(' ')}")


def verify_row(label: str, impls: dict, schema, version, problems: list) -> None:
    for lib, impl in impls.items():
        try:
            back = impl.decode()
            same = back == impl.obj
        except Exception as e:  # report, do not stop the benchmark
            same, back = False, e
        print(f"  {label:<24} {lib:<13} round-trip {'ok' if same else 'FAILED'}  ({len(impl.data):,} bytes)")
        if not same:
            problems.append(f"{label}: {lib} decode(encode(x)) != x ({str(back)[:200]})")
    lab = impls["kafkalab"].data
    for lib in ("kafka-python", "kio"):
        if lib in impls:
            other = impls[lib].data
            if other == lab:
                print(f"  {label:<24} kafkalab bytes == {lib} bytes")
            else:
                msg = describe_mismatch(lab, other, schema, version)
                print(f"  {label:<24} BYTE MISMATCH kafkalab vs {lib}: {msg}")
                problems.append(f"{label}: kafkalab vs {lib} bytes differ: {msg}")


def verify_records(d, decoders: dict, problems: list) -> None:
    truth = d["truth10k"]
    for lib, fn in decoders.items():
        if fn is None:
            continue
        try:
            got = records_as_tuples(lib, d, find_lab_records_decoder()[0])
            note = ""
            if lib == "kio":  # kio keeps timestamps as datetimes truncated to whole seconds
                got = [(o, t // 1000, k, v, h) for o, t, k, v, h in got]
                want = [(o, t // 1000, k, v, h) for o, t, k, v, h in truth]
                note = " (timestamps compared to the second: kio truncates them)"
            else:
                want = truth
            ok = got == want and fn() == len(truth)
        except Exception as e:
            ok, note = False, f" ({type(e).__name__}: {e})"
        print(f"  {'d RecordBatch 10k':<24} {lib:<13} decodes the {len(truth):,} records written: "
              f"{'ok' if ok else 'FAILED'}{note}")
        if not ok:
            problems.append(f"d: {lib} does not decode the records that were written{note}")
        crc = crc_checked(lib, d)
        print(f"  {'d RecordBatch 10k':<24} {lib:<13} rejects a corrupted record (CRC checked): {crc}")


def crc_checked(lib: str, d) -> str:
    """Flip one byte of the last record's value and see whether the decoder notices."""
    blob = bytearray(d["batch10k"])
    blob[-10] ^= 0xFF
    saved = d["batch10k"]
    d["batch10k"] = bytes(blob)
    try:
        fresh = record_decoders(d)[0][lib]
        fresh()
        return "no"
    except Exception:
        return "yes"
    finally:
        d["batch10k"] = saved


def copy_check(impls: dict, batch_len: int) -> tuple[list, bool]:
    """Peak traced allocation while encoding the Produce request (the 1 MiB batch is already built)."""
    lab = impls["kafkalab"].obj
    frame_req = make_request(lab, api_version=9, correlation_id=1, client_id="bench")
    cases = [("kafkalab codec.encode (body)", impls["kafkalab"].encode),
             ("kafkalab encode_request (frame)", lambda: encode_request(frame_req)),
             ("kafkalab encode_request(size_prefix=True)",
              lambda: encode_request(frame_req, size_prefix=True))]
    cases += [(f"{lib} (body)", impls[lib].encode) for lib in ("kafka-python", "kio") if lib in impls]
    rows = []
    for name, fn in cases:
        fn()  # warm: generated code, pooled buffers
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            result = fn()
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        del result
        rows.append((name, peak, peak / batch_len))
    # A structural check as well: the generated writer must hand the caller's records object itself to
    # the final join (no copy before it), so the join is the one and only copy.
    out: list = []
    codec.writer(request_schema(0), 9)(lab, out)
    passed_through = any(part is impls["kafkalab"].obj.topic_data[0].partition_data[0].records for part in out)
    return rows, passed_through


# ------------------------------------------------------------------------------------------- timing

@dataclasses.dataclass(frozen=True)
class Timing:
    """How long to measure: one run lasts about ``run`` seconds; as many rounds (one run of each library)
    as fit in ``budget`` seconds, but at least ``min_runs`` and at most ``max_runs``."""

    run: float
    budget: float
    min_runs: int
    max_runs: int


FULL = Timing(run=0.01, budget=6.0, min_runs=15, max_runs=201)
QUICK = Timing(run=0.005, budget=0.15, min_runs=3, max_runs=15)


def _calibrate(fn: Callable, target: float) -> tuple[int, float]:
    """(calls per run, seconds per run): enough calls for one run to last about ``target``, after a warm-up."""
    fn()  # warm-up: generated code compiled, caches and pooled buffers filled
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target * 0.5:
            return n, dt
        n = max(n * 2, int(n * target / max(dt, 1e-6)))


def measure_group(fns: dict, timing: Timing) -> dict:
    """Median seconds per call for each library, the libraries' runs interleaved.

    Each run calls one library's function n times in a row (n from :func:`_calibrate`); the libraries take
    turns, in a rotating order, run after short run, so that load from elsewhere on the machine hits all of
    them alike. The GC stays enabled. A full collection first, then the young generations are collected
    before each run, so that every run starts from the same state (a full collection before every run would
    cost more than the runs: ~1 us per live object).
    """
    gc.collect()
    libs = list(fns)
    cal = {lib: _calibrate(fns[lib], timing.run) for lib in libs}
    round_time = sum(dt for _, dt in cal.values())
    runs = max(timing.min_runs, min(timing.max_runs, int(timing.budget / max(round_time, 1e-6))))
    times: dict = {lib: [] for lib in libs}
    for r in range(runs):
        for lib in libs[r % len(libs):] + libs[:r % len(libs)]:
            fn, n = fns[lib], cal[lib][0]
            gc.collect(1)
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[lib].append((time.perf_counter() - t0) / n)
    return {lib: statistics.median(ts) for lib, ts in times.items()}


def fmt_ms(t: Optional[float]) -> str:
    if t is None:
        return "-"
    if t == "pending":
        return "pending"
    ms = t * 1e3
    return f"{ms:.4f} ms" if ms < 0.1 else f"{ms:.3f} ms" if ms < 10 else f"{ms:.1f} ms"


def ratio(other, lab) -> str:
    if isinstance(other, float) and isinstance(lab, float):
        return f"{other / lab:.2f}x"
    return "-"


def gc_collections(fn: Callable, calls: int = 6) -> list:
    """Collections per call of generations 0, 1 and 2 that ``fn`` triggers (average over ``calls`` calls)."""
    counts = [0, 0, 0]

    def count(phase, info):
        if phase == "start":
            counts[info["generation"]] += 1
    gc.collect()
    gc.callbacks.append(count)
    try:
        for _ in range(calls):
            fn()
    finally:
        gc.callbacks.remove(count)
    return [c / calls for c in counts]


def gc_report(fns: dict, timing: Timing) -> None:
    """How much of each library's time is the cyclic GC: collections per call, time with and without it."""
    for lib, fn in fns.items():
        if not callable(fn):
            continue
        counts = gc_collections(fn)
        if not any(counts):
            print(f"  {lib:<13} no collection during a call: the GC plays no part here")
            continue
        on = measure_group({lib: fn}, timing)[lib]
        gc.disable()
        try:
            off = measure_group({lib: fn}, timing)[lib]
        finally:
            gc.enable()
        print(f"  {lib:<13} collections per call (gen 0/1/2) {counts[0]:.3g}/{counts[1]:.3g}/{counts[2]:.3g};"
              f" {fmt_ms(on)} with the GC, {fmt_ms(off)} without"
              + (f" ({(on - off) / on:.0%} of the time is GC)" if on > 1.05 * off else " (GC cost not measurable)"))


def profile(fn: Callable, title: str, seconds: float) -> None:
    prof = cProfile.Profile()
    end = time.perf_counter() + seconds
    prof.enable()
    while time.perf_counter() < end:
        fn()
    prof.disable()
    print(f"\ncProfile of kafkalab {title} (top 12 by internal time):")
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(12)


# ------------------------------------------------------------------------------------------- main

FLOOR = "(copy floor)"


def busy_warning(when: str) -> None:
    """Timings are only as good as the machine is quiet: say so when other processes compete for the CPU."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return
    cores = os.cpu_count() or 1
    if load > 0.5 * cores:
        print(f"WARNING ({when} the run): load average {load:.2f} on {cores} cores -- other processes compete "
              f"for the CPU, timings are noisy; compare ratios (measured interleaved), not absolute times.")


ROWS = {"a": "Metadata v12 response", "b": "Produce v9 request", "c": "Fetch v12 response",
        "d": "RecordBatch 10k records"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: short timings, a few seconds in all")
    ap.add_argument("--rows", default="a,b,c,d", help="comma-separated subset of a,b,c,d")
    ap.add_argument("--profile", action="store_true", help="cProfile each kafkalab operation that misses")
    args = ap.parse_args(argv)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        ap.error(f"unknown row(s) {bad}; choose from a,b,c,d")
    timing = QUICK if args.quick else FULL

    print(f"Python {sys.version.split()[0]}  kafka-python {kafka.__version__}  "
          f"kio {kio.__version__ if kio else 'not installed'}  cores {os.cpu_count()}  "
          f"{'quick' if args.quick else 'full'} run: median of {timing.min_runs}-{timing.max_runs} interleaved runs "
          f"of ~{timing.run * 1e3:g} ms per library and operation, after warm-up, GC enabled")
    busy_warning("before")
    print()
    t_start = time.perf_counter()
    d = make_data()
    problems: list[str] = []
    print("Checks")
    ops, produce, records_where = checked_ops(d, rows, problems)
    results = time_ops(ops, timing)
    if "d" in rows:
        print_row_d(d, results, records_where)
    print_targets(results)
    if produce is not None:
        print_copies(d, produce)

    if problems:
        print("\nProblems found by the checks:")
        for p in problems:
            print(f"  - {p}")
    else:
        print("\nChecks: all passed (round-trips, kafkalab's bytes identical to the others', records decoded).")

    if args.profile:
        for _row, label, op, _t, verdict, fns in results:
            if verdict == "MISSED" and callable(fns.get("kafkalab")):
                profile(fns["kafkalab"], f"{label} {op}", 1.0 if args.quick else 3.0)
                print(f"Garbage collector during {label} {op}:")
                gc_report(fns, timing)
    busy_warning("after")
    print(f"(total {time.perf_counter() - t_start:.1f} s)")
    return 0


def checked_ops(d: dict, rows: list, problems: list):
    """Verify each chosen row (problems are appended) and list what to time: ``([(row, label, op, {lib: fn or
    None})], the Produce row's impls or None, where row d's kafkalab decoder comes from)``."""
    ops: list[tuple[str, str, str, dict]] = []
    produce = None
    for row, build in (("a", metadata_impls), ("b", produce_impls), ("c", fetch_impls)):
        if row not in rows:
            continue
        impls, schema, version = build(d)
        label = f"{row} {ROWS[row]}"
        verify_row(label, impls, schema, version, problems)
        ops.append((row, label, "encode", {lib: impls[lib].encode for lib in impls}))
        decoders = {lib: impls[lib].decode for lib in impls}
        if row in ("b", "c"):  # what copying the records out as bytes costs alone (interleaved, same runs)
            blobs = [d["produce_batch"]] if row == "b" else [part[-1] for part in d["fetch_parts"]]
            decoders[FLOOR] = lambda blobs=blobs: [bytes(memoryview(b)) for b in blobs]
        ops.append((row, label, "decode", decoders))
        if row == "b":
            produce = impls
    records_where = None
    if "d" in rows:
        decoders, records_where = record_decoders(d)
        verify_records(d, decoders, problems)
        ops.append(("d", f"d {ROWS['d']}", "decode", decoders))
    return ops, produce, records_where


def time_ops(ops: list, timing: Timing) -> list:
    """Time every operation (interleaved per row), print the table; ``[(row, label, op, times, verdict, fns)]``."""
    print("\nTimings (ms per operation; ratio = other's time / kafkalab's time, >1 = kafkalab faster)")
    head = (f"{'row':<28}{'op':<8}" + "".join(f"{lib:>14}" for lib in LIBS)
            + f"{'lab/kafka-py':>14}{'lab/kio':>10}  target >= {TARGET_VS_KAFKA_PYTHON}x kafka-python")
    print(head)
    print("-" * len(head))
    results = []
    floors = []
    for row, label, op, fns in ops:
        timed = measure_group({lib: fn for lib, fn in fns.items() if callable(fn)}, timing)
        floor = timed.pop(FLOOR, None)
        t = {lib: timed.get(lib, "pending" if lib in fns else None) for lib in LIBS}
        lab, kp, ki = t["kafkalab"], t["kafka-python"], t["kio"]
        if isinstance(lab, float) and isinstance(kp, float):
            verdict = "met" if kp / lab >= TARGET_VS_KAFKA_PYTHON else "MISSED"
        else:
            verdict = "pending" if lab == "pending" else "-"
        results.append((row, label, op, t, verdict, {k: v for k, v in fns.items() if k != FLOOR}))
        print(f"{label:<28}{op:<8}" + "".join(f"{fmt_ms(t[lib]):>14}" for lib in LIBS)
              + f"{ratio(kp, lab):>14}{ratio(ki, lab):>10}  {verdict}")
        if floor is not None:
            floors.append((label, floor, lab, kp))
    for label, floor, lab, kp in floors:
        print(f"  {label} decode: copying its records blobs out as bytes would alone take {fmt_ms(floor)}"
              + (f" ({floor / lab:.0%} of kafkalab's decode); kafkalab returns records as zero-copy views of the"
                 f" frame, a decoder that copies cannot beat kafka-python by more than {kp / floor:.2f}x here"
                 if isinstance(lab, float) and isinstance(kp, float) else ""))
    return results


def print_row_d(d: dict, results: list, records_where: Optional[str]) -> None:
    n = len(d["truth10k"])
    line = ", ".join(f"{lib} {n / t:,.0f}" if isinstance(t, float) else f"{lib} {t}"
                     for (row, _, _, tt, _, _) in results if row == "d" for lib, t in tt.items() if t)
    print(f"\nRow d throughput (records/s, all fields touched): {line}")
    if records_where and not callable(find_lab_records_decoder()[0]):
        print(f"  kafkalab: pending -- {records_where}.")
        print(f"  Looked for: {', '.join('kafkalab.records.' + x for x in RECORDS_DECODER_NAMES)}"
              " (first callable wins; it is called as f(batch_bytes) and may return a batch, (batch, end)"
              " or an iterable of batches, each with .records or itself iterable).")
    else:
        print(f"  kafkalab decoder used: {records_where}")
    d_fns = next(fns for (row, _, _, _, _, fns) in results if row == "d")
    print("  GC collections per decode (gen 0/1/2, mean of 6 calls): " + ", ".join(
        f"{lib} " + "/".join(f"{c:.3g}" for c in gc_collections(fn)) for lib, fn in d_fns.items() if callable(fn)))


def print_targets(results: list) -> None:
    print("\nTargets")
    met = [r for r in results if r[4] == "met"]
    missed = [r for r in results if r[4] == "MISSED"]
    pending = [r for r in results if r[4] == "pending"]
    print(f"  kafkalab >= {TARGET_VS_KAFKA_PYTHON}x kafka-python on every operation (pure Python vs pure Python): "
          f"{len(met)} met, {len(missed)} MISSED, {len(pending)} pending")
    for _row, label, op, t, _verdict, _ in missed:
        print(f"    MISSED: {label} {op}: {t['kafka-python'] / t['kafkalab']:.2f}x")
    for _row, label, op, _t, _verdict, _ in pending:
        print(f"    pending: {label} {op} (kafkalab.records has no batch decoder yet)")
    kio_r = [(label, op, t["kio"] / t["kafkalab"]) for _, label, op, t, _, _ in results
             if isinstance(t["kio"], float) and isinstance(t["kafkalab"], float)]
    if kio_r:
        print("  versus kio (native Rust parser; no target, reported as measured): "
              + "; ".join(f"{label.split()[0]} {op} {r:.2f}x" for label, op, r in kio_r))


def print_copies(d: dict, produce: dict) -> None:
    batch_len = len(d["produce_batch"])
    rows_c, passed = copy_check(produce, batch_len)
    print(f"\nCopies of the {batch_len:,}-byte batch while encoding the Produce v9 request "
          f"(tracemalloc peak during one encode; the batch itself already exists; limit "
          f"{COPY_LIMIT / 2**20:.1f} MiB)")
    for name, peak, copies in rows_c:
        print(f"  {name:<40} peak {peak / 2**20:6.2f} MiB = {copies:4.2f} x the batch")
    lab_body = rows_c[0]
    ok = lab_body[1] < COPY_LIMIT and round(lab_body[2]) <= 1 and passed
    print(f"  generated writer passes the caller's records object through to the final join: "
          f"{'yes' if passed else 'NO'}")
    print(f"  target 'encoding the Produce request copies the batch at most once' (kafkalab codec.encode): "
          f"{'met' if ok else 'MISSED'}")
    again = [name for name, peak, copies in rows_c[1:3] if round(copies) > 1]
    if again:
        print(f"  note: {' and '.join(again)} reach 2 batch-sized buffers: they copy the batch again after "
              f"codec.encode has joined it. tracemalloc only sees copies alive at the same time; a copy made "
              f"after the previous one was freed does not show in a peak.")


if __name__ == "__main__":
    sys.exit(main())
