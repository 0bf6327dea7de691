"""kafkalab's schemas agree with Kafka's JSON message definitions, field by field and version by version.

The JSON is parsed here (see ``specs.py``), never through ``scripts/generate_schemas.py``, so a bug in the
generator (a dropped attribute, a mis-parsed default, a missed zk-era file) shows up as a difference.
"""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from kafkalab.protocol import api_keys
from kafkalab.protocol.messages import coordinator_records as coordinator_records_module
from kafkalab.protocol.messages import data as data_module
from kafkalab.protocol.messages import headers as headers_module
from kafkalab.protocol.schema import Message

from . import specs as S

PROBE_VERSIONS = range(0, 40)


def _schema_for(spec: dict) -> Message:
    kind = spec["type"]
    if kind == "request":
        return api_keys.request_schema(spec["apiKey"])
    if kind == "response":
        return api_keys.response_schema(spec["apiKey"])
    module = headers_module if kind == "header" else data_module
    found = [m for m in vars(module).values() if isinstance(m, Message) and m.name == spec["name"]]
    assert len(found) == 1, f"{spec['name']}: expected one schema in {module.__name__}, found {len(found)}"
    return found[0]


def _same_range(kl_range, text) -> bool:
    """kafkalab's parsed range holds exactly the versions the JSON text names."""
    if not all((v in kl_range) == S.vin(v, text) for v in PROBE_VERSIONS):
        return False
    lo, hi = S.vrange(text)
    return kl_range.empty if hi < lo else (kl_range.lo, kl_range.hi) == (lo, hi)


def _typed(value):
    """Value with its type, so that False != 0 and 0 != 0.0."""
    return type(value), value


def compare_fields(message: Message, spec: dict, kl_fields, js_fields, path: str, problems: list) -> None:
    if [f.name for f in kl_fields] != [j["name"] for j in js_fields]:
        problems.append(f"{path}: fields {[f.name for f in kl_fields]} != JSON {[j['name'] for j in js_fields]}")
        return
    for f, j in zip(kl_fields, js_fields):
        where = f"{path}.{j['name']}"

        def check(what, ours, theirs, where=where):
            if ours != theirs:
                problems.append(f"{where}: {what} is {ours!r}, JSON says {theirs!r}")

        check("type", f.type, j["type"])
        check("versions", f.versions, j["versions"])
        check("nullableVersions", f.nullable, j.get("nullableVersions", "none"))
        check("tag", f.tag, j.get("tag"))
        check("taggedVersions", f.tagged, j.get("taggedVersions", "none"))
        check("flexibleVersions override", f.flexible, j.get("flexibleVersions"))
        check("mapKey", f.map_key, bool(j.get("mapKey", False)))
        check("ignorable", f.ignorable, bool(j.get("ignorable", False)))
        check("entityType", f.entity, j.get("entityType"))
        if not _same_range(f.version_range, j["versions"]):
            problems.append(f"{where}: versions {j['versions']!r} parsed as {f.version_range.lo}-{f.version_range.hi}")
        if not _same_range(f.nullable_range, j.get("nullableVersions")):
            problems.append(f"{where}: nullableVersions parsed wrongly")
        if not _same_range(f.tagged_range, j.get("taggedVersions")):
            problems.append(f"{where}: taggedVersions parsed wrongly")
        if "tag" in j:
            check("tag is an int", type(f.tag), int)
        expected = S.parse_default(j)
        actual = message.default_value(f)
        if expected is S.STRUCT_DEFAULT:
            cls = message.struct_class(f)
            check("default struct class", type(actual).__name__, j["type"])
            check("default struct", actual, cls())
        elif isinstance(expected, tuple):
            check("default (empty array)", _typed(actual), _typed(expected))
        else:
            check("default", _typed(actual), _typed(expected))
        check("is_struct", f.is_struct, S.is_struct_type(j["type"]))
        if "fields" in j:
            compare_fields(message, spec, f.fields, j["fields"], where, problems)
        else:
            check("inline fields", f.fields, ())
            if S.is_struct_type(j["type"]):
                common = {cs["name"] for cs in spec.get("commonStructs", [])}
                check("struct from commonStructs", j["type"].removeprefix("[]") in common, True)


def compare_message(message: Message, spec: dict) -> list[str]:
    problems: list[str] = []
    name = spec["name"]

    def check(what, ours, theirs):
        if ours != theirs:
            problems.append(f"{name}: {what} is {ours!r}, JSON says {theirs!r}")

    check("name", message.name, spec["name"])
    check("kind", message.kind, spec["type"])
    check("apiKey", message.api_key, spec.get("apiKey"))
    check("validVersions", message.valid_versions.text, spec["validVersions"])
    check("flexibleVersions", message.flexible_versions.text, spec.get("flexibleVersions", "none"))
    if not _same_range(message.valid_versions, spec["validVersions"]):
        problems.append(f"{name}: validVersions parsed wrongly")
    if not _same_range(message.flexible_versions, spec.get("flexibleVersions", "none")):
        problems.append(f"{name}: flexibleVersions parsed wrongly")
    check("latestVersionUnstable", message.latest_unstable, bool(spec.get("latestVersionUnstable", False)))
    check("listeners", tuple(message.listeners), tuple(spec.get("listeners", ())))
    compare_fields(message, spec, message.fields, spec.get("fields", []), name, problems)
    js_common = spec.get("commonStructs", [])
    check("commonStructs", list(message.common_structs), [cs["name"] for cs in js_common])
    for cs in js_common:
        ours = message.common_structs.get(cs["name"])
        if ours is None:
            continue
        check(f"commonStruct {cs['name']} versions", ours.versions, cs["versions"])
        compare_fields(message, spec, ours.fields, cs["fields"], f"{name}.<{cs['name']}>", problems)
    return problems


def _spec_params():
    if not S.HAVE_SPECS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=S.SKIP_REASON))]
    return sorted(S.effective())


@pytest.mark.parametrize("stem", _spec_params())
def test_schema_matches_json(stem):
    spec = S.effective()[stem]
    problems = compare_message(_schema_for(spec), spec)
    assert not problems, "\n".join(problems)


@S.needs_specs
def test_every_api_key_has_request_and_response():
    pairs = S.api_pairs()
    assert sorted(pairs) == list(range(0, 93))
    assert api_keys.ALL_API_KEYS == tuple(range(0, 93))
    for key in range(0, 93):
        req, resp = api_keys.messages_for(key)
        assert (req.kind, resp.kind) == ("request", "response")
        assert (req.api_key, resp.api_key) == (key, key)
        assert req.name == pairs[key][0]["name"] and resp.name == pairs[key][1]["name"]
        assert req.name.removesuffix("Request") == resp.name.removesuffix("Response")


@S.needs_specs
def test_zk_era_replaces_the_removed_keys():
    top = {s["apiKey"]: s for s in S.top_level().values() if s["type"] == "request"}
    zk = {s["apiKey"]: s for s in S.zk_era().values()}
    assert sorted(zk) == [4, 5, 6, 7]
    for key in (4, 5, 6, 7):
        assert top[key]["validVersions"] == "none", "Kafka 4.x keeps keys 4-7 with no valid versions"
        req = api_keys.request_schema(key)
        assert req.valid_versions.text == zk[key]["validVersions"] != "none"
        assert not req.valid_versions.empty


@S.needs_specs
def test_every_header_and_data_spec_has_a_schema():
    for kind, module in (("header", headers_module), ("data", data_module)):
        ours = sorted(m.name for m in vars(module).values() if isinstance(m, Message))
        assert ours == sorted(S.specs_of_type(kind))


def _with_field_versions(fields: list) -> list:
    """Kafka's FieldSpec: a tagged-only field without "versions" exists in its tagged versions."""
    out = []
    for j in fields:
        j = dict(j)
        j.setdefault("versions", j.get("taggedVersions"))
        if "fields" in j:
            j["fields"] = _with_field_versions(j["fields"])
        out.append(j)
    return out


def _coordinator_record_params():
    if not S.HAVE_SPECS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=S.SKIP_REASON))]
    return sorted(p.stem for p in (S.SPECS_DIR / "coordinator-records").glob("*.json"))


@pytest.mark.parametrize("stem", _coordinator_record_params())
def test_coordinator_record_schema_matches_json(stem):
    spec = S.load(S.SPECS_DIR / "coordinator-records" / f"{stem}.json")
    spec = {**spec, "fields": _with_field_versions(spec["fields"])}
    ours = {m.name: m for m in vars(coordinator_records_module).values() if isinstance(m, Message)}
    problems = compare_message(ours[spec["name"]], spec)
    assert not problems, "\n".join(problems)


@S.needs_specs
def test_comment_stripping_keeps_slashes_inside_strings():
    # Kafka's specs put URLs and regexes in "about" strings; a naive stripper would cut them.
    import json

    text = '{"a": "http://x//y", // comment\n "b": "q\\"//r" // more\n}'
    assert json.loads(S.strip_comments(text)) == {"a": "http://x//y", "b": 'q"//r'}


@S.needs_specs
def test_defaults_of_every_type_are_parsed():
    # Independent spot checks on values the JSON writes in unusual ways (hex, bare numbers, "null").
    from kafkalab.protocol.messages import api_versions, fetch
    req = fetch.REQUEST
    f = {x.name: x for x in req.fields}
    assert req.default_value(f["ReplicaId"]) == -1
    assert req.default_value(f["ClusterId"]) is None
    resp = api_versions.RESPONSE
    g = {x.name: x for x in resp.fields}
    assert resp.default_value(g["FinalizedFeaturesEpoch"]) == -1
    assert resp.default_value(g["ZkMigrationReady"]) is False
    hexes = []

    def walk(spec, fields):
        for j in fields:
            if isinstance(j.get("default"), str) and j["default"].lower().startswith(("0x", "-0x")):
                hexes.append((spec["name"], j))
            walk(spec, j.get("fields", []))

    for spec in S.effective().values():
        walk(spec, spec.get("fields", []))
        for cs in spec.get("commonStructs", []):
            walk(spec, cs["fields"])
    assert hexes, "the specs are expected to contain hex defaults such as 0x7fffffff"
    for _, j in hexes:
        assert S.parse_default(j) == int(j["default"], 16)


@S.needs_specs
def test_generator_check_passes():
    script = S.REPO / "scripts" / "generate_schemas.py"
    proc = subprocess.run([sys.executable, str(script), "--check", "--specs", str(S.SPECS_DIR)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in proc.stdout


def test_uuid_default_is_zero():
    from kafkalab.protocol.schema import ZERO_UUID
    assert ZERO_UUID == uuid.UUID("00000000-0000-0000-0000-000000000000")
