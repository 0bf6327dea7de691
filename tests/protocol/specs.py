"""Kafka's JSON message specs, read independently of kafkalab (the tests' source of truth).

Nothing here imports ``kafkalab`` or ``scripts/generate_schemas.py``: the comment stripper, the version
parser, the naming rule and the wire-layout rules below are written from Kafka's message README, so the
tests compare kafkalab against the JSON, not against itself.
"""
from __future__ import annotations

import functools
import json
import os
import re
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPECS_DIR = Path(os.environ.get("KAFKALAB_SPECS_DIR") or REPO.parent / "shared" / "kafka-message-specs")
HAVE_SPECS = SPECS_DIR.is_dir() and any(SPECS_DIR.glob("*Request.json"))
SKIP_REASON = (f"Kafka's JSON message specs not found at {SPECS_DIR} (set KAFKALAB_SPECS_DIR, or check out "
               f"../shared/kafka-message-specs beside the repository)")
#: CI sets KAFKALAB_REQUIRE_SPECS=1: there, missing specs fail every module that reads them instead of skipping.
REQUIRE_SPECS = os.environ.get("KAFKALAB_REQUIRE_SPECS") == "1"
if REQUIRE_SPECS and not HAVE_SPECS:
    raise RuntimeError(f"KAFKALAB_REQUIRE_SPECS=1, but {SKIP_REASON}")
needs_specs = pytest.mark.skipif(not HAVE_SPECS, reason=SKIP_REASON)

MAX = 0x7FFF
INTS = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
        "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
PRIMS = set(INTS) | {"bool", "float64", "string", "bytes", "records", "uuid"}


def require_specs() -> None:
    if not HAVE_SPECS:
        pytest.skip(SKIP_REASON)


# ---------------------------------------------------------------------------------------------- parsing
def strip_comments(text: str) -> str:
    """Remove ``//`` comments that are outside JSON strings (string-aware, escape-aware)."""
    out = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text(encoding="utf-8")))


@functools.cache
def top_level() -> dict[str, dict]:
    return {p.stem: load(p) for p in sorted(SPECS_DIR.glob("*.json"))}


@functools.cache
def zk_era() -> dict[str, dict]:
    return {p.stem: load(p) for p in sorted((SPECS_DIR / "zk-era").glob("*.json"))}


#: The versions Kafka 4.0 removed that a Kafka 3.9 broker serves: facts from the 3.9 specs, kept in the repository
#: (the shared folder holds the 4.x specs only); see ``test_kafka_39_versions_match_kafka_39_specs``.
KAFKA_39 = REPO / "scripts" / "kafka-3.9-versions.json"


def kafka_39_extensions() -> dict[str, dict]:
    return json.loads(KAFKA_39.read_text(encoding="utf-8"))["messages"]


def _extended(spec: dict, extension: dict) -> dict:
    """The 4.x ``spec`` from 3.9's lowest version up, the 3.9-only fields back in their place."""
    spec = json.loads(json.dumps(spec))
    spec["validVersions"] = f"{extension['lowest']}-{vrange(spec['validVersions'])[1]}"
    for extra in extension.get("fields", ()):
        parent = spec
        for name in extra["in"]:
            parent = next(f for f in parent["fields"] if f["name"] == name)
        names = [f["name"] for f in parent["fields"]]
        parent["fields"].insert(names.index(extra["after"]) + 1, dict(extra["field"]))
    return spec


@functools.cache
def effective() -> dict[str, dict]:
    """Every spec by file stem, with the zk-era files replacing the top-level keys 4-7, and the messages whose
    old versions Kafka 4.0 removed reaching down to Kafka 3.9's lowest version."""
    specs = dict(top_level())
    specs.update(zk_era())
    for stem, extension in kafka_39_extensions().items():
        specs[stem] = _extended(specs[stem], extension)
    return specs


@functools.cache
def api_pairs() -> dict[int, tuple[dict, dict]]:
    """{api_key: (request spec, response spec)}."""
    req, resp = {}, {}
    for spec in effective().values():
        if spec["type"] == "request":
            req[spec["apiKey"]] = spec
        elif spec["type"] == "response":
            resp[spec["apiKey"]] = spec
    return {k: (req[k], resp[k]) for k in sorted(req) if k in resp}


def specs_of_type(kind: str) -> dict[str, dict]:
    return {s["name"]: s for s in effective().values() if s["type"] == kind}


def vrange(text: str | None) -> tuple[int, int]:
    """Kafka's version notation as an inclusive (lo, hi); "none" is (0, -1)."""
    if text is None or text.strip() == "none":
        return 0, -1
    text = text.strip()
    if text.endswith("+"):
        return int(text[:-1]), MAX
    if "-" in text:
        a, b = text.split("-")
        return int(a), int(b)
    return int(text), int(text)


def vin(version: int, text: str | None) -> bool:
    lo, hi = vrange(text)
    return lo <= version <= hi


def valid_versions(spec: dict) -> list[int]:
    lo, hi = vrange(spec["validVersions"])
    return list(range(lo, hi + 1))


def parse_default(field: dict):
    """The ``default`` of a field as a Python value (Kafka's rules), or the type's implicit default."""
    t = field["type"]
    if "default" in field:
        raw = field["default"]
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw) if t == "float64" else int(raw)
        if raw == "null":
            return None
        if t in INTS:
            neg = raw.startswith("-")
            body = raw[1:] if neg else raw
            value = int(body[2:], 16) if body.lower().startswith("0x") else int(body, 10)
            return -value if neg else value
        if t == "bool":
            return {"true": True, "false": False}[raw]
        if t == "float64":
            return float(raw)
        if t == "string":
            return raw
        raise AssertionError(f"unexpected default {raw!r} for {field['name']} ({t})")
    if t.startswith("[]"):
        return ()
    if t in INTS:
        return 0
    if t == "uuid":
        return uuid.UUID(int=0)
    return {"bool": False, "float64": 0.0, "string": "", "bytes": b"", "records": None}.get(t, _STRUCT_DEFAULT)


_STRUCT_DEFAULT = object()  # a non-nullable struct defaults to an instance with every field at its default
STRUCT_DEFAULT = _STRUCT_DEFAULT


def snake(name: str) -> str:
    """Kafka CamelCase -> snake_case, written independently of kafkalab.schema.snake_case.

    Acronym runs stay together (``ISRState`` -> ``isr_state``), digits stick to the word before them
    (``V0Host`` -> ``v0_host``), and ``KRaft`` is one word (``KRaftVersion`` -> ``kraft_version``).
    """
    name = name.replace("KRaft", "Kraft")
    # an acronym run (not followed by a lower-case letter or digit), or a word with an optional capital
    words = re.findall(r"[A-Z]+(?![a-z0-9])|[A-Z]?[a-z0-9]+", name)
    assert "".join(words) == name, name
    return "_".join(w.lower() for w in words)


# ---------------------------------------------------------------------------------------------- structs
def struct_fields(spec: dict, field: dict) -> list:
    """The fields of a struct-typed field: inline, or the commonStruct of that name."""
    if "fields" in field:
        return field["fields"]
    name = field["type"].removeprefix("[]")
    for cs in spec.get("commonStructs", []):
        if cs["name"] == name:
            return cs["fields"]
    raise AssertionError(f"{spec['name']}: no struct {name}")


def is_struct_type(t: str) -> bool:
    return t.removeprefix("[]") not in PRIMS


def flexible(spec: dict, version: int) -> bool:
    return vin(version, spec.get("flexibleVersions", "none"))


def compact(spec: dict, field: dict, version: int) -> bool:
    """A field uses compact encodings when the message version is flexible, unless the field overrides it."""
    if not flexible(spec, version):
        return False
    return vin(version, field["flexibleVersions"]) if "flexibleVersions" in field else True


def is_tagged(spec: dict, field: dict, version: int) -> bool:
    return "tag" in field and flexible(spec, version) and vin(version, field.get("taggedVersions"))


def request_header_version(api_key: int, version: int) -> int:
    """Independent statement of Kafka's rule (protocol-compat.md §1)."""
    if api_key == 7 and version == 0:
        return 0
    return 2 if flexible(api_pairs()[api_key][0], version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == 18:
        return 0
    return 1 if flexible(api_pairs()[api_key][1], version) else 0
