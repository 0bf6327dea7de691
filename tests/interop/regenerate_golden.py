"""Regenerate the golden frames in tests/golden/ from the real clients installed here.

    .venv/bin/python tests/interop/regenerate_golden.py            # rewrite tests/golden/
    .venv/bin/python tests/interop/regenerate_golden.py --check    # capture again, compare shapes, write nothing

Each capture runs one client against kafkalab's scripted listener (kafkalab.trace.capture) and keeps the first
frame of every (client, API, version, variant). The expectations written to ``manifest.json`` do not come from
kafkalab's decoder: the header fields are read here by hand with ``struct``, the body facts come from what the
client was told to do (topic, acks, records) and from the client's documented identity (software name and
version). The script then checks that kafkalab's decoder agrees and stops if it does not.

Produce frames contain timestamps and (for kcat) the capture time, so re-running changes those bytes; that is
expected. Commit the regenerated files only when a client version changes or a capture is added.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kafkalab.protocol import ApiKey, api_name, decode_request, request_header_version  # noqa: E402
from kafkalab.trace import capture, drivers  # noqa: E402
from tests.interop._support import software  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
TOPIC = "kafkalab"

#: (client, action, capture options, what the capture is for). Earlier captures win a file name.
CAPTURES = [
    ("kcat", "produce", {"idempotent": True}, "bootstrap, metadata, idempotent produce (acks=all)"),
    ("confluent-kafka", "metadata", {}, "bootstrap and metadata for one topic"),
    ("confluent-kafka", "produce", {"idempotent": True}, "idempotent produce (acks=all) with keys and headers"),
    *[("confluent-kafka", "produce", {"compression": c}, f"{c}-compressed produce")
      for c in ("gzip", "snappy", "lz4", "zstd")],
    ("kafka-python", "produce", {}, "ApiVersions v4 then the fallback; idempotent by default"),
    ("aiokafka", "produce", {}, "ApiVersions v0; not idempotent by default"),
]


def parse_header(frame: bytes) -> dict:
    """The request header, read by hand: api key, version, correlation id, client id (int16-length string)."""
    api_key, api_version, correlation_id, n = struct.unpack_from(">hhih", frame, 0)
    client_id = None if n < 0 else frame[10:10 + n].decode("utf-8")
    return {"api_key": api_key, "api_version": api_version, "correlation_id": correlation_id,
            "client_id": client_id}


def variant_of(req) -> str:
    if req.api_key == ApiKey.METADATA:
        topics = req.body.topics
        return "all-topics" if topics is None else ("no-topics" if not topics else "")
    return ""


def expected_body(client: str, action: str, opts: dict, req) -> dict:
    key, v = req.api_key, req.api_version
    if key == ApiKey.API_VERSIONS:
        if v < 3:
            return {}
        name, version = software(client)
        return {"client_software_name": name, "client_software_version": version}
    if key == ApiKey.METADATA:
        topics = req.body.topics
        return {"topics": None if topics is None else ([TOPIC] if topics else [])}
    if key == ApiKey.INIT_PRODUCER_ID:
        return {"transactional_id": None}
    if key == ApiKey.PRODUCE:
        codec = opts.get("compression") or "none"
        idempotent = req.api_key == ApiKey.PRODUCE and opts.get("idempotent", client == "kafka-python")
        return {
            "transactional_id": None, "acks": -1, "topics": {TOPIC: [0]},
            "records": {
                "codec": codec,
                "producer_id": 1000 if idempotent else -1,
                "producer_epoch": 0 if idempotent else -1,
                "records": [{"key": r["key"], "value": r["value"], "headers": r["headers"],
                             "timestamp": None if client == "kcat" else r["timestamp"]}
                            for r in drivers.DEFAULT_RECORDS],
            },
        }
    raise AssertionError(f"no expectations written for {api_name(key)}")


def check_decoded(entry: dict, req) -> None:
    """kafkalab's decoder must agree with the hand-read header and the spec-derived body facts."""
    e, h = entry["expected"], req.header
    assert (h.correlation_id, h.client_id) == (e["correlation_id"], e["client_id"]), entry["file"]
    b = req.body
    for field in ("client_software_name", "client_software_version", "transactional_id", "acks"):
        if field in e:
            assert getattr(b, field) == e[field], (entry["file"], field, getattr(b, field), e[field])
    if req.api_key == ApiKey.METADATA:
        names = None if b.topics is None else [t.name for t in b.topics]
        assert names == e["topics"], (entry["file"], names)
    if req.api_key == ApiKey.PRODUCE:
        got = {t.name: [p.index for p in t.partition_data] for t in b.topic_data}
        assert got == e["topics"], (entry["file"], got)


def collect() -> tuple[list[dict], dict[str, bytes]]:
    entries, frames = [], {}
    for client, action, opts, purpose in CAPTURES:
        if not drivers.is_available(client):
            raise SystemExit(f"{client} is not installed: {drivers.install_hint(client)}")
        res = capture(client, action, topic=TOPIC, **opts)
        if res.report and any(d[2] for d in res.report.get("delivered", [])):
            raise SystemExit(f"{client} {action} {opts}: delivery failed: {res.report}")
        for r in res:
            if r.request is None:
                raise SystemExit(f"{client}: frame #{r.index} did not decode: {r.error}")
            req = r.request
            parts = [client, api_name(req.api_key), f"v{req.api_version}"]
            variant = variant_of(req) or (opts.get("compression") if req.api_key == ApiKey.PRODUCE else "")
            if variant:
                parts.append(variant)
            name = "-".join(parts) + ".bin"
            if name in frames or (opts.get("compression") and req.api_key != ApiKey.PRODUCE):
                continue
            frames[name] = r.frame
            header = parse_header(r.frame)
            entry = {
                "file": name, "client": client, "client_version": res.client_version,
                "capture": {"action": action, **opts, "purpose": purpose},
                "api": api_name(header["api_key"]), "api_key": header["api_key"],
                "api_version": header["api_version"],
                "header_version": request_header_version(header["api_key"], header["api_version"]),
                "connection": r.connection, "size": len(r.frame),
                "expected": {"correlation_id": header["correlation_id"], "client_id": header["client_id"],
                             **expected_body(client, action, opts, req)},
            }
            check_decoded(entry, decode_request(r.frame))
            entries.append(entry)
    return entries, frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="capture and compare with the manifest; write nothing")
    args = ap.parse_args()
    entries, frames = collect()
    if args.check:
        # Produce frames carry timestamps, and librdkafka's extra Metadata requests depend on timing, so
        # compare what must not change: every stored file is captured again, same version, same size
        # (Produce excepted: kcat's timestamps differ in length as varints).
        old = {e["file"]: e for e in json.loads((GOLDEN / "manifest.json").read_text())["frames"]}
        new = {e["file"]: e for e in entries}
        problems = [f"{f}: not captured" for f in old if f not in new]
        problems += [f"{f}: size {old[f]['size']} -> {new[f]['size']}" for f in old
                     if f in new and old[f]["api"] != "Produce" and old[f]["size"] != new[f]["size"]]
        for f in sorted(set(new) - set(old)):
            print(f"note: {f} captured this time but not stored")
        if problems:
            raise SystemExit("golden frames differ:\n" + "\n".join(problems))
        print(f"{len(old)} stored frames captured again with the same versions and sizes")
        return
    GOLDEN.mkdir(exist_ok=True)
    for stale in GOLDEN.glob("*.bin"):
        stale.unlink()
    for name, frame in frames.items():
        (GOLDEN / name).write_bytes(frame)
    manifest = {
        "about": "Request frames captured from real Kafka clients by kafkalab.trace.capture (each .bin is one "
                 "frame WITHOUT its 4-byte size prefix). Regenerate: tests/interop/regenerate_golden.py. "
                 "Expected values: headers read by hand, bodies from what each client was asked to do.",
        "topic": TOPIC,
        "frames": entries,
    }
    (GOLDEN / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(frames)} frames ({sum(map(len, frames.values()))} bytes) to {GOLDEN}")


if __name__ == "__main__":
    main()
