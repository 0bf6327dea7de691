"""Shared checks for the interop tests: byte coverage of an annotation, records inside Produce frames."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafkalab.protocol import ApiKey, Annotation, encode_request

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def manifest() -> dict:
    return json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))


def require_client(client: str) -> None:
    """Skip when ``client`` is not installed -- except kcat when KAFKALAB_REQUIRE_KCAT=1 (CI installs it)."""
    from kafkalab.trace import drivers
    if drivers.is_available(client):
        return
    if client == "kcat" and os.environ.get("KAFKALAB_REQUIRE_KCAT") == "1":
        pytest.fail("kcat is required (KAFKALAB_REQUIRE_KCAT=1) but not on PATH: apt-get install -y kcat")
    pytest.skip(f"{client} is not installed ({drivers.install_hint(client)})")


def software(client: str) -> tuple[str, str]:
    """What ``client`` names itself in ApiVersions v3+ (KIP-511 ClientSoftwareName/Version), from its version."""
    from kafkalab.trace import client_version
    version = client_version(client)
    if client == "kcat":                       # "1.7.1 (librdkafka 2.0.2)": kcat lets librdkafka name itself
        return "librdkafka", version.split("librdkafka ")[1].rstrip(")")
    if client == "confluent-kafka":            # "2.16.1 (librdkafka 2.16.0)"
        py, lib = version.split(" (librdkafka ")
        return "confluent-kafka-python", f"{py}-rdkafka-{lib.rstrip(')')}"
    return client, version                     # kafka-python names itself; aiokafka never sends v3+


# -- annotation coverage ---------------------------------------------------------------------------------------------
def _uvarint_len(n: int) -> int:
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def own_bytes(ann: Annotation) -> list[tuple]:
    """Check that the rows of ``ann`` explain every byte of its frame exactly once; return the container prefixes.

    Rows form a tree (pre-order, by depth). The depth-0 rows (header, body[, trailing_bytes]) tile the frame; a
    child lies inside its parent; siblings are ordered and disjoint. A byte inside a row but outside all of its
    children is that row's *own* byte, and only these are allowed: an array's count (int32, or the unsigned
    varint N+1 when compact) before its first element (a record batch's ``records`` has its count in the batch
    header and owns nothing); a tagged-field section's count and each field's tag and
    size varints; a nullable struct's presence byte; a records field's length. So each byte belongs to exactly
    one leaf or one such prefix. Returns ``[(path, start, end), ...]`` of the prefixes found.
    """
    rows, data = ann.rows, ann.data
    n = len(data)
    top = [r for r in rows if r.depth == 0]
    assert top and top[0].start == 0 and top[-1].end == n, [(r.path, r.start, r.end) for r in top]
    for a, b in zip(top, top[1:]):
        assert a.end == b.start, f"gap/overlap between {a.path} and {b.path}"
    children: dict[int, list[int]] = {i: [] for i in range(len(rows))}
    stack: list[int] = []
    for i, r in enumerate(rows):
        assert 0 <= r.start <= r.end <= n, r
        while stack and rows[stack[-1]].depth >= r.depth:
            stack.pop()
        if stack:
            parent = rows[stack[-1]]
            assert parent.start <= r.start and r.end <= parent.end, f"{r.path} sticks out of {parent.path}"
            children[stack[-1]].append(i)
        else:
            assert r.depth == 0, f"{r.path} has depth {r.depth} but no parent"
        stack.append(i)
    owned = bytearray(n)
    prefixes = []
    for i, r in enumerate(rows):
        kids = [rows[k] for k in children[i]]
        if not kids:
            for b in range(r.start, r.end):
                owned[b] += 1
            continue
        gaps, pos = [], r.start
        for k in kids:
            assert k.start >= pos, f"{k.path} overlaps its previous sibling"
            if k.start > pos:
                gaps.append((pos, k.start))
            pos = k.end
        assert pos == r.end, f"{r.path}: bytes {pos}..{r.end} after its last child belong to no row"
        wt = r.wire_type
        if wt.endswith("ARRAY"):   # a protocol array owns its count; a batch's records array owns nothing
            width = _uvarint_len(r.value + 1) if wt.startswith("COMPACT") else 4
            assert gaps in ([], [(r.start, r.start + width)]), f"{r.path}: own bytes {gaps}, expected the count"
        elif wt == "TAG_BUFFER":
            assert gaps and gaps[0][0] == r.start and len(gaps) == len(kids), f"{r.path}: own bytes {gaps}"
        elif wt == "NULLABLE_STRUCT":
            assert gaps == [(r.start, r.start + 1)], f"{r.path}: own bytes {gaps}"
        elif wt.endswith("RECORDS"):
            assert len(gaps) == 1 and gaps[0][0] == r.start, f"{r.path}: own bytes {gaps}"
        else:
            assert not gaps, f"{r.path} ({wt}) has bytes {gaps} that no field explains"
        for a, b in gaps:
            prefixes.append((r.path, a, b))
            for x in range(a, b):
                owned[x] += 1
    bad = [i for i, c in enumerate(owned) if c != 1]
    assert not bad, f"bytes explained {[owned[i] for i in bad[:5]]} times at offsets {bad[:5]}"
    return prefixes


def check_frame(frame: bytes, request, annotation: Annotation) -> None:
    """Decode agrees with the annotation, re-encoding is byte-identical, every byte is explained."""
    assert encode_request(request) == frame
    assert annotation.message == request
    assert annotation.error is None
    own_bytes(annotation)


# -- records inside Produce ------------------------------------------------------------------------------------------
def produce_blobs(request) -> list[bytes]:
    assert request.api_key == ApiKey.PRODUCE
    return [p.records for t in request.body.topic_data for p in t.partition_data if p.records]


def _text(b):
    return None if b is None else bytes(b).decode("utf-8")


def normalize_batch(codec: int, producer_id: int, producer_epoch: int, records) -> dict:
    """One batch in the manifest's vocabulary, from any decoder's objects (``key``/``value``/``headers``)."""
    out = []
    for r in records:
        headers = []
        for h in r.headers or ():
            name, value = (h.key, h.value) if hasattr(h, "key") else h
            headers.append([name if isinstance(name, str) else _text(name), _text(value)])
        out.append({"key": _text(r.key), "value": _text(r.value), "headers": headers,
                    "timestamp": getattr(r, "timestamp", None)})
    return {"codec": CODECS[codec], "producer_id": producer_id, "producer_epoch": producer_epoch, "records": out}


def batches_by_aiokafka(blob: bytes) -> list[dict]:
    """The oracle: aiokafka's own RecordBatch v2 reader (it checks the CRC and decompresses all four codecs)."""
    from aiokafka.record.memory_records import MemoryRecords
    mr, batches = MemoryRecords(bytes(blob)), []
    while (batch := mr.next_batch()) is not None:
        assert batch.validate_crc(), "CRC-32C mismatch"
        batches.append(normalize_batch(batch.compression_type, batch.producer_id, batch.producer_epoch,
                                       list(batch)))
    return batches


def matches_expected(batch: dict, expected: dict) -> bool:
    """Compare a normalized batch with the manifest; ``timestamp: null`` in the manifest means "any"."""
    if {k: batch[k] for k in ("codec", "producer_id", "producer_epoch")} != \
            {k: expected[k] for k in ("codec", "producer_id", "producer_epoch")}:
        return False
    got = [dict(r, timestamp=None) if e["timestamp"] is None else r
           for r, e in zip(batch["records"], expected["records"])]
    return len(batch["records"]) == len(expected["records"]) and got == expected["records"]
