"""Record request frames from the real clients installed here: the tests' golden frames and lab 01's fallbacks.

    .venv/bin/python scripts/record_frames.py golden            # rewrite tests/golden/
    .venv/bin/python scripts/record_frames.py golden --check    # capture again, compare shapes, write nothing
    .venv/bin/python scripts/record_frames.py lab01             # rewrite kafkalab/labs/frames/ (lab 01's fallbacks)

Both need every client (kcat, confluent-kafka, kafka-python, aiokafka); run them when a client version changes.

**golden** (``tests/golden/``, read by ``tests/interop/test_golden_frames.py`` and others). Each capture runs one client against kafkalab's scripted listener (kafkalab.trace.capture) and keeps the first
frame of every (client, API, version, variant). The expectations written to ``manifest.json`` do not come from
kafkalab's decoder: the header fields are read here by hand with ``struct``, the body facts come from what the
client was told to do (topic, acks, records) and from the client's documented identity (software name and
version). The script then checks that kafkalab's decoder agrees and stops if it does not.

Produce frames contain timestamps and (for kcat) the capture time, so re-running changes those bytes; that is
expected. Commit the regenerated files only when a client version changes or a capture is added.

**lab01** (``kafkalab/labs/frames/``, package data). The frames lab 01 prints when a client is not installed,
captured with the lab's fixed settings (``kafkalab.labs.lab01``: client id, librdkafka's software name, records
with fixed timestamps) by the lab's own capture functions, plus ``manifest.json`` with each file's SHA-256, which
``lab01.recorded()`` checks. Afterwards rebuild lab 01 (``scripts/build_labs.py 01``), run its nbval check and
review the diff of ``manifest.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalab.protocol import ApiKey, api_name, decode_request, request_header_version  # noqa: E402
from kafkalab.trace import available_clients, capture, client_version, drivers  # noqa: E402
from tests.interop._support import software  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
LAB01_FRAMES = ROOT / "kafkalab" / "labs" / "frames"
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


def golden(check: bool = False) -> None:
    entries, frames = collect()
    if check:
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
                 "frame WITHOUT its 4-byte size prefix). Regenerate: scripts/record_frames.py golden. "
                 "Expected values: headers read by hand, bodies from what each client was asked to do.",
        "topic": TOPIC,
        "frames": entries,
    }
    (GOLDEN / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(frames)} frames ({sum(map(len, frames.values()))} bytes) to {GOLDEN}")


# -- lab 01's fallbacks ------------------------------------------------------------------------------------------------
LAB01_CLIENTS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka")


def record_lab01(folder: Path = LAB01_FRAMES) -> list[dict]:
    """Capture lab 01's frames with every installed client and write them (and manifest.json) to ``folder``."""
    from kafkalab.labs import lab01

    missing = [c for c in LAB01_CLIENTS if c not in available_clients()]
    if missing:
        raise SystemExit(f"recording needs every client; missing: {', '.join(missing)}")
    folder.mkdir(parents=True, exist_ok=True)
    entries = []

    def add(client, conversation, index, fr, note):
        name = (f"{client}-{fr.api_name}-v{fr.api_version}.bin" if conversation == "first"
                else f"{client}-{conversation}-{index}-{fr.api_name}-v{fr.api_version}.bin")
        (folder / name).write_bytes(fr.frame)
        key = int(struct.unpack_from(">h", fr.frame, 0)[0])
        entries.append({"file": name, "client": client, "client_version": client_version(client),
                        "conversation": conversation, "index": index, "connection": fr.connection,
                        "api": fr.api_name, "api_key": key, "api_version": fr.api_version,
                        "header_version": request_header_version(key, fr.api_version), "size": len(fr.frame),
                        "sha256": hashlib.sha256(fr.frame).hexdigest(), "note": note})

    for client in LAB01_CLIENTS:
        frame = lab01.first_request(client)
        req = decode_request(frame)
        add(client, "first", 0, lab01.Frame(0, req.api_name, req.api_version, frame),
            "the first request of a metadata lookup, never answered")
    for i, fr in enumerate(lab01.produce_conversation()):
        add("confluent-kafka", "produce", i, fr, "produce RECORDS to partition 0 with HoldFirstReply")
    manifest = {
        "about": "Frames recorded by scripts/record_frames.py lab01 for labs/01_the_wire.ipynb, which uses "
                 "them when a client is not installed. Each .bin is one request frame WITHOUT its 4-byte size "
                 "prefix. Settings: see the 'settings' object.",
        "settings": {"client_id": lab01.CLIENT_ID, "librdkafka_software": lab01.LIBRDKAFKA_SOFTWARE,
                     "topic": lab01.TOPIC, "records": lab01.RECORDS},
        "frames": entries,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    g = sub.add_parser("golden", help="the golden frames in tests/golden/")
    g.add_argument("--check", action="store_true", help="capture and compare with the manifest; write nothing")
    lab = sub.add_parser("lab01", help="lab 01's recorded fallbacks in kafkalab/labs/frames/")
    lab.add_argument("--folder", type=Path, default=LAB01_FRAMES, help="where to write (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.what == "golden":
        golden(args.check)
        return 0
    for entry in record_lab01(args.folder):
        print(f"{entry['file']:<48} {entry['size']:>4} bytes  {entry['client_version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
