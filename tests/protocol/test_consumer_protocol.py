"""The consumer protocol's codec (JoinGroup metadata, SyncGroup assignments) against Kafka's JSON and its
reading rules: every version the JSON defines, none flexible, newer versions read as the newest known, every
byte accounted for by the annotated view. The byte-for-byte comparison with kafka-python's encoder is in
tests/clients/test_assignors.py."""
from __future__ import annotations

import pytest

from kafkalab.protocol import DecodeError
from kafkalab.protocol.consumer_protocol import (HIGHEST_VERSION, LOWEST_VERSION, Assignment, Subscription,
                                                 TopicPartition, annotate_assignment, annotate_subscription,
                                                 decode_assignment, decode_subscription, encode_assignment,
                                                 encode_subscription)
from tests.protocol import specs

SUB = Subscription(["t", "a"], b"ud", [TopicPartition("t", 1), TopicPartition("a", 0)], 7, "rack-1")
ASG = Assignment([TopicPartition("t", 1), TopicPartition("a", 0), TopicPartition("t", 0)], b"ud")


@specs.needs_specs
@pytest.mark.parametrize("name", ["ConsumerProtocolSubscription", "ConsumerProtocolAssignment"])
def test_versions_come_from_kafkas_json(name):
    spec = specs.top_level()[name]
    assert spec["type"] == "data" and spec["flexibleVersions"] == "none"
    assert specs.vrange(spec["validVersions"]) == (LOWEST_VERSION, HIGHEST_VERSION)


@pytest.mark.parametrize("version", range(LOWEST_VERSION, HIGHEST_VERSION + 1))
def test_every_version_round_trips_and_every_byte_has_a_field(version):
    data = encode_subscription(SUB, version)
    assert data[:2] == version.to_bytes(2, "big")
    back = decode_subscription(data)
    assert back.topics == ["a", "t"] and back.user_data == b"ud"
    assert back.owned_partitions == ([TopicPartition("a", 0), TopicPartition("t", 1)] if version >= 1 else [])
    assert back.generation_id == (7 if version >= 2 else -1) and back.rack_id == ("rack-1" if version >= 3 else None)
    written, body, end, rows = annotate_subscription(data)
    assert (written, end, body.topics) == (version, len(data), ("a", "t"))
    assert rows[0][:5] == ("version", 0, 2, "INT16", version)
    top = [r for r in rows if r.depth == 0]                  # the top-level rows tile the bytes exactly
    assert [(a.end, b.start) for a, b in zip(top, top[1:])] == [(a.end, a.end) for a in top[:-1]]
    assert top[-1].end == len(data)

    data = encode_assignment(ASG, version)
    assert decode_assignment(data) == Assignment([("t", 1), ("t", 0), ("a", 0)], b"ud")
    written, body, end, rows = annotate_assignment(data)
    assert (written, end, rows[0].path) == (version, len(data), "version")


def test_newer_versions_are_read_as_the_newest_known():
    future = HIGHEST_VERSION + 2
    data = future.to_bytes(2, "big") + encode_subscription(SUB, HIGHEST_VERSION)[2:] + b"\x00\x00\x00\x2a"
    assert decode_subscription(data) == decode_subscription(encode_subscription(SUB, HIGHEST_VERSION))
    written, _, end, rows = annotate_subscription(data)
    assert written == future and rows[-1][:5] == ("trailing_bytes", end, len(data), "IGNORED", 4)
    assert encode_subscription(SUB, future)[:2] == HIGHEST_VERSION.to_bytes(2, "big")


def test_bad_bytes_are_one_decode_error_with_a_path():
    with pytest.raises(DecodeError) as e:
        decode_subscription(b"\xff\xfe" + encode_subscription(SUB, 0)[2:])
    assert e.value.path == "version"
    with pytest.raises(DecodeError):
        decode_subscription(encode_subscription(SUB, 1)[:-3])        # owned_partitions cut short
    with pytest.raises(DecodeError):
        annotate_assignment(b"\x00")
