"""__consumer_offsets key/value formats, checked against hand-assembled bytes (Kafka's layouts)."""
import struct

import pytest

from kafkalab.coordinator.group.group_metadata import OffsetAndMetadata
from kafkalab.coordinator.group.records import (GroupMetadataKey, GroupMetadataValue, MemberRecord, OffsetKey,
                                                consumer_assignment, consumer_subscription, group_metadata_key,
                                                group_metadata_value, load_records, offset_commit_key,
                                                offset_commit_value, parse_consumer_assignment,
                                                parse_consumer_subscription_topics, read_group_value,
                                                read_message_key, read_offset_value)
from kafkalab.protocol import DecodeError
from kafkalab.protocol.consumer_protocol import (Assignment, Subscription, annotate_subscription, decode_subscription,
                                                 encode_assignment, encode_subscription)
from kafkalab.records import SimpleRecord, build_batch, decode_batches


def s16(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_offset_key_v1():
    key = offset_commit_key("grp", "t", 3)
    assert key == b"\x00\x01" + s16("grp") + s16("t") + b"\x00\x00\x00\x03"
    assert read_message_key(key) == OffsetKey(1, "grp", "t", 3)
    assert read_message_key(b"\x00\x00" + s16("grp") + s16("t") + b"\x00\x00\x00\x03") == OffsetKey(0, "grp", "t", 3)


def test_group_key_v2():
    key = group_metadata_key("grp")
    assert key == b"\x00\x02\x00\x03grp"
    assert read_message_key(key) == GroupMetadataKey(2, "grp")


def test_offset_value_v3():
    om = OffsetAndMetadata(42, 7, "meta", 1_700_000_000_000)
    value = offset_commit_value(om)
    assert value == (b"\x00\x03" + struct.pack(">q", 42) + struct.pack(">i", 7) + s16("meta") +
                     struct.pack(">q", 1_700_000_000_000))
    assert read_offset_value(value) == om


def test_offset_value_v1_when_an_expire_timestamp_is_given():
    om = OffsetAndMetadata(5, -1, "", 1000, 2000)
    value = offset_commit_value(om)
    assert value == b"\x00\x01" + struct.pack(">q", 5) + s16("") + struct.pack(">qq", 1000, 2000)
    assert read_offset_value(value) == om


def test_offset_value_v4_flexible_is_read():
    value = b"\x00\x04" + struct.pack(">qi", 9, 2) + b"\x03ab" + struct.pack(">q", 77) + b"\x00"
    assert read_offset_value(value) == OffsetAndMetadata(9, 2, "ab", 77, -1)


GROUP = GroupMetadataValue("consumer", 3, "range", "m-1", 1234, (
    MemberRecord("m-1", None, "client", "/127.0.0.1", 300000, 45000, b"\x00\x00sub", b"\x00\x00asg"),
    MemberRecord("m-2", "inst-2", "client", "/127.0.0.1", 300000, 45000, b"", b""),
))


def test_group_value_v3_bytes():
    value = group_metadata_value(GROUP)
    m1 = (s16("m-1") + b"\xff\xff" + s16("client") + s16("/127.0.0.1") + struct.pack(">ii", 300000, 45000) +
          struct.pack(">i", 5) + b"\x00\x00sub" + struct.pack(">i", 5) + b"\x00\x00asg")
    m2 = (s16("m-2") + s16("inst-2") + s16("client") + s16("/127.0.0.1") + struct.pack(">ii", 300000, 45000) +
          struct.pack(">ii", 0, 0))
    assert value == (b"\x00\x03" + s16("consumer") + struct.pack(">i", 3) + s16("range") + s16("m-1") +
                     struct.pack(">q", 1234) + struct.pack(">i", 2) + m1 + m2)
    assert read_group_value(value) == GROUP


def test_group_value_v4_round_trip():
    assert read_group_value(group_metadata_value(GROUP, version=4)) == GROUP


def test_group_value_v0_uses_session_timeout_as_rebalance_timeout():
    value = (b"\x00\x00" + s16("consumer") + struct.pack(">i", 1) + s16("range") + s16("m") + struct.pack(">i", 1) +
             s16("m") + s16("c") + s16("/h") + struct.pack(">i", 10000) + struct.pack(">ii", 0, 0))
    g = read_group_value(value)
    assert g.members[0].rebalance_timeout == g.members[0].session_timeout == 10000
    assert g.current_state_timestamp == -1


def test_truncated_value_is_a_decode_error():
    with pytest.raises(DecodeError):
        read_offset_value(offset_commit_value(OffsetAndMetadata(1, -1, "", 0))[:-3])


def test_load_keeps_the_latest_and_honours_tombstones():
    recs = [
        (offset_commit_key("g", "t", 0), offset_commit_value(OffsetAndMetadata(1, -1, "", 10))),
        (offset_commit_key("g", "t", 0), offset_commit_value(OffsetAndMetadata(5, -1, "", 20))),
        (offset_commit_key("g", "t", 1), offset_commit_value(OffsetAndMetadata(3, -1, "", 20))),
        (offset_commit_key("g", "t", 1), None),
        (group_metadata_key("g"), group_metadata_value(GROUP)),
        (group_metadata_key("gone"), group_metadata_value(GROUP)),
        (group_metadata_key("gone"), None),
    ]
    data = build_batch([SimpleRecord(k, v) for k, v in recs[:3]]) + build_batch(
        [SimpleRecord(k, v) for k, v in recs[3:]], base_offset=3)
    loaded = load_records(decode_batches(data))
    assert {tp: r.value.offset for tp, r in loaded.offsets["g"].items()} == {("t", 0): 5}
    assert loaded.groups == {"g": GROUP}
    assert loaded.removed_groups == {"gone"}


def test_consumer_protocol_helpers():
    sub = consumer_subscription(["a", "b"])
    assert parse_consumer_subscription_topics(sub) == {"a", "b"}
    asg = consumer_assignment({"a": [0, 2]})
    assert asg == b"\x00\x00" + struct.pack(">i", 1) + s16("a") + struct.pack(">iii", 2, 0, 2) + b"\xff\xff\xff\xff"
    assert parse_consumer_assignment(asg) == {"a": [0, 2]}
    assert parse_consumer_assignment(b"") == {}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_helpers_write_the_body_of_the_version_they_are_given(version):
    # the version prefix and the body must agree: v1+ carries owned_partitions, v2+ generation_id, v3+ rack_id
    sub = consumer_subscription(["a", "b"], b"u", version=version)
    assert sub == encode_subscription(Subscription(["a", "b"], b"u"), version)
    assert decode_subscription(sub) == Subscription(["a", "b"], b"u")
    _, _, end, _ = annotate_subscription(sub)
    assert end == len(sub)                                    # no bytes missing, none left over
    asg = consumer_assignment({"a": [0, 2]}, version=version)
    assert asg == encode_assignment(Assignment([("a", 0), ("a", 2)]), version)
    assert parse_consumer_assignment(asg) == {"a": [0, 2]}
