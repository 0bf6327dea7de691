"""What the broker says about itself matches what it does: the README's API list, the versions quoted when a
request is refused, and the endpoints in its "started" line."""
from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey, api_name, request_class, request_schema
from kafkalab.server.apis import enabled_apis

from ._raw_wire import Conn, frame_of, header_v2, request_frame

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("generate_readme_apis", ROOT / "scripts" / "generate_readme_apis.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_lists_exactly_what_api_versions_advertises():
    gen = _generator()
    assert gen.main(["--check"]) == 0, "README.md is out of date: run scripts/generate_readme_apis.py"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(gen.BEGIN, 1)[1].split(gen.END, 1)[0]
    listed = {int(m.group(1)): (m.group(2), m.group(3))
              for m in re.finditer(r"^\| (\d+) \| (\w+) \| ([\d-]+) \|", block, re.M)}
    advertised = {key: (api_name(key), f"{lo}-{hi}" if lo != hi else f"{lo}") for key, (lo, hi) in
                  enabled_apis().items()}
    assert listed == advertised
    # the families that the hand-written list used to leave out
    assert {ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA} <= set(listed)


def test_check_fails_on_a_stale_list(tmp_path, monkeypatch):
    gen = _generator()
    stale = (ROOT / "README.md").read_text(encoding="utf-8").replace("| Fetch | 0-17 |", "| Fetch | 4-18 |")
    monkeypatch.setattr(gen, "README", tmp_path / "README.md")
    gen.README.write_text(stale, encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


@pytest.fixture(scope="module")
def cluster():
    # Listen on 127.0.0.1, advertise "localhost": the two differ, so the started line shows which one it logs.
    with Cluster(brokers=1, overrides={"advertised.listeners": "PLAINTEXT://localhost:0"}) as c:
        yield c


def test_started_line_names_the_bound_listeners(caplog):
    with caplog.at_level(logging.INFO, logger="kafkalab.server.KafkaServer"):
        with Cluster(brokers=1, overrides={"advertised.listeners": "PLAINTEXT://localhost:0"}) as c:
            server = c.broker(0)
            port = server.socket_server.bound_port("PLAINTEXT")
            assert [str(ep) for ep in server.bound_endpoints] == [f"PLAINTEXT://localhost:{port}"]   # advertised
    started = [r.getMessage() for r in caplog.records if "started (listeners:" in r.getMessage()]
    assert started == [f"[KafkaServer id=0] started (listeners: PLAINTEXT://127.0.0.1:{port})"]


@pytest.mark.parametrize("api_key,version", [
    (ApiKey.PRODUCE, 14),     # beyond what the schema (Kafka 4.3: 3-13) knows
    (ApiKey.PRODUCE, 12),     # known to the schema, beyond what the broker advertises
    (ApiKey.PRODUCE, -1),
    (ApiKey.FETCH, 19),       # beyond the schema's 0-18
    (ApiKey.FETCH, 18),       # known to the schema, beyond what the broker advertises (3.9's 0-17)
])
def test_refusals_quote_the_advertised_versions(cluster, caplog, api_key, version):
    lo, hi = enabled_apis()[api_key]
    schema = request_schema(api_key).valid_versions.text
    port = cluster.broker(0).socket_server.bound_port("PLAINTEXT")
    if version in request_schema(api_key).valid_versions:   # a well-formed request the broker does not serve
        data = request_frame(request_class(api_key)(), version, 5)
    else:                                                     # the codec refuses it before the body
        data = frame_of(header_v2(api_key, version, 5) + b"\x00" * 16)
    with caplog.at_level(logging.WARNING, logger="kafkalab"):
        with Conn(port) as c:
            c.send(data)
            c.assert_closed_without_response()
    refused = [r.getMessage() for r in caplog.records if f"{api_name(api_key)} v{version} is not supported" in
               r.getMessage()]
    assert refused, [r.getMessage() for r in caplog.records]
    for message in refused:
        assert f"advertised: {lo}-{hi}" in message, message
        assert schema not in message, message


def test_the_dispatch_docstring_names_every_handler_in_its_module():
    import kafkalab.server.apis as apis

    table = apis.__doc__.split("::", 1)[1].split("Mirrors:", 1)[0]
    documented, module = {}, None
    for line in table.splitlines():
        m = re.match(r"    (\w+)\s+(.*)", line)
        if m:
            module, line = m.group(1), m.group(2)
        for name in re.findall(r"\b([A-Z]\w+)\b", line.split("(")[0]):
            documented[name] = module
    registered = {api_name(key): h.func.__module__.rsplit(".", 1)[-1] for key, h in apis.REGISTRY.items()}
    assert documented == registered
