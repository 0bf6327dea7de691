"""Debian's Sarama 1.22 (Go) as a Kafka 0.10.1 client: Produce v2 with magic 1 message sets, Fetch v3 answered with
down-converted magic 1 sets, ListOffsets v1 and Metadata v1 -- the old Go clients classrooms still ship.

The program is ``tests/interop/go/sarama_old/main.go``, built here in GOPATH mode from Debian's
``golang-github-shopify-sarama-dev`` (no network). Skipped when ``go`` or Sarama's sources are missing, unless
``KAFKALAB_REQUIRE_GO=1`` (CI), which turns that into a failure.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkalab.protocol import ApiKey

from ._broker_support import requests, stored_batches

pytestmark = pytest.mark.interop

SOURCE = Path(__file__).resolve().parent / "go" / "sarama_old" / "main.go"
GOPATH_DEBIAN = Path("/usr/share/gocode")
SARAMA = GOPATH_DEBIAN / "src" / "github.com" / "Shopify" / "sarama"


@pytest.fixture(scope="module")
def sarama_old(tmp_path_factory) -> Path:
    go = shutil.which("go")
    if go is None or not SARAMA.is_dir():
        missing = "go (golang-go)" if go is None else f"Sarama's sources ({SARAMA})"
        if os.environ.get("KAFKALAB_REQUIRE_GO") == "1":
            pytest.fail(f"KAFKALAB_REQUIRE_GO=1 but {missing} is missing")
        pytest.skip(f"{missing} is not installed (Debian: golang-go golang-github-shopify-sarama-dev)")
    work = tmp_path_factory.mktemp("go")
    binary = work / "sarama_old"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{GOPATH_DEBIAN}:{work}", "GOFLAGS": "",
           "GOCACHE": str(work / "cache"), "CGO_CFLAGS": "-Wno-deprecated-declarations"}
    result = subprocess.run([go, "build", "-o", str(binary), SOURCE.name], cwd=SOURCE.parent, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return binary


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_sarama_v0_10_1_produces_and_consumes(cluster, topic, sarama_old, codec):
    before = cluster.broker(0).metrics()
    result = subprocess.run([str(sarama_old), "-brokers", cluster.bootstrap_servers, "-topic", topic, "-count", "6",
                             "-codec", codec], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-4000:]
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert got == [{"offset": i, "key": f"k{i}", "value": f"value-{i}", "timestamp_ms": 1_700_000_000_000 + i}
                   for i in range(6)]
    produce = {r.api_version for r in requests(cluster, client_id="sarama-old", api_key=ApiKey.PRODUCE)}
    fetch = {r.api_version for r in requests(cluster, client_id="sarama-old", api_key=ApiKey.FETCH)}
    assert produce == {2} and fetch == {3}
    codec_id = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}[codec]
    assert {(b.magic, b.compression_type) for b in stored_batches(cluster, topic, 0)} == {(2, codec_id)}
    after = cluster.broker(0).metrics()
    assert after["ProduceMessageConversionsPerSec"] - before["ProduceMessageConversionsPerSec"] == 6
    assert after["FetchMessageConversionsPerSec"] - before["FetchMessageConversionsPerSec"] >= 6
