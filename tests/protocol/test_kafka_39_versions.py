"""The versions Kafka 4.0 removed (KIP-896) that kafkalab serves as a Kafka 3.9 broker: the facts kept in
``scripts/kafka-3.9-versions.json`` agree with Kafka 3.9's own specs, and the codec speaks them.

The comparison with the 3.9 specs needs a clone of apache/kafka with its ``3.9`` branch (``KAFKALAB_KAFKA_SRC``,
else ``../kafka`` beside the repository); without one it is skipped (CI has no network). The codec checks run
everywhere.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kafkalab.protocol import ApiKey, decode_request, encode_request, make_request, request_class

from . import specs as S

KAFKA_SRC = Path(os.environ.get("KAFKALAB_KAFKA_SRC") or S.REPO.parent / "kafka")
MESSAGES = "clients/src/main/resources/common/message"


def _kafka_39_spec(stem: str):
    proc = subprocess.run(["git", "-C", str(KAFKA_SRC), "show", f"3.9:{MESSAGES}/{stem}.json"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"no apache/kafka clone with a 3.9 branch at {KAFKA_SRC} (set KAFKALAB_KAFKA_SRC)")
    return json.loads(S.strip_comments(proc.stdout))


def _layout(fields: list, version: int) -> list:
    """What goes on the wire at ``version``: names and types, nested."""
    return [(f["name"], f["type"], S.vin(version, f.get("nullableVersions")),
             _layout(f.get("fields", []), version))
            for f in fields if S.vin(version, f.get("versions"))]


@S.needs_specs
@pytest.mark.parametrize("stem", sorted(S.kafka_39_extensions()) if S.KAFKA_39.exists() else [])
def test_kafka_39_versions_match_kafka_39_specs(stem):
    old = _kafka_39_spec(stem)
    merged = S.effective()[stem]
    assert S.vrange(merged["validVersions"])[0] == S.vrange(old["validVersions"])[0]
    first_4x = S.vrange(S.top_level()[stem]["validVersions"])[0]
    for version in range(S.vrange(old["validVersions"])[0], first_4x):
        assert _layout(merged.get("fields", []), version) == _layout(old.get("fields", []), version), version


@pytest.mark.parametrize("api_key,version", [
    (ApiKey.LIST_OFFSETS, 0), (ApiKey.OFFSET_COMMIT, 0), (ApiKey.OFFSET_COMMIT, 1), (ApiKey.OFFSET_FETCH, 0),
    (ApiKey.CREATE_TOPICS, 0), (ApiKey.CREATE_TOPICS, 1), (ApiKey.DELETE_TOPICS, 0),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 0), (ApiKey.OFFSET_FOR_LEADER_EPOCH, 1), (ApiKey.WRITE_TXN_MARKERS, 0),
    (ApiKey.DESCRIBE_ACLS, 0), (ApiKey.CREATE_ACLS, 0), (ApiKey.DELETE_ACLS, 0), (ApiKey.DESCRIBE_CONFIGS, 0),
    (ApiKey.DESCRIBE_LOG_DIRS, 0),
])
def test_the_codec_speaks_kafka_39_versions(api_key, version):
    frame = encode_request(make_request(request_class(api_key)(), api_version=version, api_key=api_key))
    decoded = decode_request(frame)
    assert (decoded.api_key, decoded.api_version) == (api_key, version)
