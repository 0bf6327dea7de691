"""__transaction_state key/value formats: hand-assembled bytes, round trips, and Kafka's JSON specs."""
import struct

import pytest

from kafkalab.coordinator.transaction.state import TransactionState as S
from kafkalab.coordinator.transaction.transaction_log import (TransactionLogValue, encode_value, key_to_bytes,
                                                              load_transactions, read_txn_record_key,
                                                              read_txn_record_value, value_to_bytes)
from kafkalab.coordinator.transaction.transaction_metadata import TxnTransitMetadata
from kafkalab.protocol import DecodeError
from kafkalab.records import SimpleRecord, build_batch, decode_batches
from tests.protocol import specs
from tests.protocol import wire


def s16(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def transit(state, partitions=(), start=1000, pid=7, epoch=3):
    return TxnTransitMetadata(pid, -1, epoch, -1, 60000, state, frozenset(partitions), start, 2000)


def test_key_v0():
    assert key_to_bytes("txn-1") == b"\x00\x00" + s16("txn-1")
    assert read_txn_record_key(key_to_bytes("txn-1")) == "txn-1"


def test_key_of_unknown_version_is_skipped():
    assert read_txn_record_key(b"\x00\x01" + s16("x")) is None


def test_value_v0_ongoing_groups_partitions_by_topic():
    value = value_to_bytes(transit(S.ONGOING, {("b", 1), ("a", 2), ("a", 0)}))
    expected = (b"\x00\x00" + struct.pack(">qhib", 7, 3, 60000, 1) + struct.pack(">i", 2)
                + s16("a") + struct.pack(">iii", 2, 0, 2) + s16("b") + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 2000, 1000))
    assert value == expected
    decoded = read_txn_record_value(value)
    assert decoded.transaction_partitions == (("a", (0, 2)), ("b", (1,)))
    assert decoded.transaction_status == S.ONGOING.id == 1


def test_value_v0_partitions_null_in_empty_and_empty_in_complete():
    empty = value_to_bytes(transit(S.EMPTY, start=-1))
    assert empty[2 + 8 + 2 + 4 + 1:][:4] == b"\xff\xff\xff\xff"
    assert read_txn_record_value(empty).transaction_partitions is None
    complete = value_to_bytes(transit(S.COMPLETE_COMMIT))
    assert complete[2 + 8 + 2 + 4 + 1:][:4] == b"\x00\x00\x00\x00"
    assert read_txn_record_value(complete).transaction_partitions == ()


def test_never_persisted_states_are_refused():
    for state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        with pytest.raises(ValueError):
            value_to_bytes(transit(state))
    with pytest.raises(ValueError):
        value_to_bytes(transit(S.EMPTY, {("a", 0)}, start=-1))


def test_tombstone_and_bad_values():
    assert read_txn_record_value(None) is None
    with pytest.raises(DecodeError):
        read_txn_record_value(b"\x00\x05" + b"\x00" * 30)
    with pytest.raises(DecodeError):
        read_txn_record_value(value_to_bytes(transit(S.ONGOING, {("a", 0)}))[:-3])
    # an array count larger than the bytes left is refused before anything is allocated
    with pytest.raises(DecodeError):
        read_txn_record_value(b"\x00\x00" + struct.pack(">qhib", 1, 0, 1, 1) + struct.pack(">i", 1 << 30))


def test_v1_flexible_round_trip_with_tagged_fields():
    v = TransactionLogValue(9, 1, 5000, 2, (("t", (0, 1)),), 10, 5, previous_producer_id=8, next_producer_id=-1,
                            client_transaction_version=2)
    assert read_txn_record_value(encode_value(v, 1)) == v


def _load(records):
    return load_transactions(decode_batches(build_batch([SimpleRecord(k, v, (), 0) for k, v in records])))


def test_load_last_value_wins_and_tombstone_removes():
    loaded = _load([(key_to_bytes("a"), value_to_bytes(transit(S.EMPTY, start=-1))),
                    (key_to_bytes("a"), value_to_bytes(transit(S.ONGOING, {("t", 0)}))),
                    (key_to_bytes("b"), value_to_bytes(transit(S.EMPTY, start=-1))),
                    (key_to_bytes("b"), None),
                    (b"\x00\x07junk", b"ignored")])
    assert set(loaded) == {"a"}
    a = loaded["a"]
    assert a.state == S.ONGOING and a.topic_partitions == {("t", 0)}
    assert (a.producer_id, a.producer_epoch, a.txn_start_timestamp) == (7, 3, 1000)
    assert (a.last_producer_id, a.last_producer_epoch) == (-1, -1)   # not persisted in v0


def test_load_skips_unreadable_values():
    loaded = _load([(key_to_bytes("a"), b"\x00\x09"), (key_to_bytes("b"), value_to_bytes(transit(S.EMPTY, start=-1)))])
    assert set(loaded) == {"b"}


# ---------------------------------------------------------------------------------------------- Kafka's specs
def _spec(name):
    """A record spec; a tagged-only field's ``versions`` is its ``taggedVersions`` (the README's rule)."""
    specs.require_specs()
    spec = specs.load(specs.SPECS_DIR / "coordinator-records" / f"{name}.json")
    for field in spec["fields"]:
        field.setdefault("versions", field.get("taggedVersions", "0+"))
    return spec


def test_key_matches_the_spec():
    spec = _spec("TransactionLogKey")
    assert specs.valid_versions(spec) == [0]
    body = wire.encode_struct(spec, spec["fields"], 0, {"transactional_id": "my-txn"})
    assert key_to_bytes("my-txn") == b"\x00\x00" + body


@pytest.mark.parametrize("version", [0, 1])
def test_value_matches_the_spec(version):
    spec = _spec("TransactionLogValue")
    assert version in specs.valid_versions(spec)
    plain = {"producer_id": 1234, "previous_producer_id": 77, "next_producer_id": -1, "producer_epoch": 5,
             "transaction_timeout_ms": 60000, "transaction_status": 2,
             "transaction_partitions": ({"topic": "a", "partition_ids": (0, 3), "unknown_tagged_fields": ()},
                                        {"topic": "b", "partition_ids": (1,), "unknown_tagged_fields": ()}),
             "transaction_last_update_timestamp_ms": 1_700_000_000_123, "transaction_start_timestamp_ms": 1_700_000_000_000,
             "client_transaction_version": 0, "unknown_tagged_fields": ()}
    expected = struct.pack(">h", version) + wire.encode_struct(spec, spec["fields"], version, plain)
    ours = TransactionLogValue(1234, 5, 60000, 2, (("a", (0, 3)), ("b", (1,))), 1_700_000_000_123,
                               1_700_000_000_000, previous_producer_id=77 if version >= 1 else -1)
    assert encode_value(ours, version) == expected
    assert read_txn_record_value(expected) == ours
    if version == 0:
        assert value_to_bytes(TxnTransitMetadata(1234, -1, 5, -1, 60000, S.PREPARE_COMMIT,
                                                 frozenset({("a", 0), ("a", 3), ("b", 1)}), 1_700_000_000_000,
                                                 1_700_000_000_123)) == expected
    null = dict(plain, transaction_partitions=None, transaction_status=0)
    expected_null = struct.pack(">h", version) + wire.encode_struct(spec, spec["fields"], version, null)
    assert read_txn_record_value(expected_null).transaction_partitions is None
