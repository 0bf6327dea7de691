"""Appending as leader and follower: offsets and epochs patched in place, never a re-encode (unless Kafka does)."""
import os
import struct

import pytest

from kafkalab.records import (CompressionType, TimestampType, crc_is_valid, decode_batch, decode_batches,
                              read_batch_header)
from kafkalab.storage.errors import UnexpectedAppendOffsetError

from .helpers import T0, all_records, batch, kv


def test_leader_patches_offset_and_epoch_only(make_log):
    log = make_log()
    log.append_as_leader(batch(["a", "b"]), leader_epoch=0)
    produced = batch(["c", "d", "e"])
    info = log.append_as_leader(produced, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.num_messages, info.valid_bytes) == (2, 4, 3, len(produced))
    stored = open(os.path.join(log.dir, "00000000000000000000.log"), "rb").read()[-len(produced):]
    assert struct.unpack_from(">q", stored, 0)[0] == 2          # base_offset patched
    assert struct.unpack_from(">i", stored, 12)[0] == 7         # partition_leader_epoch patched
    assert stored[8:12] == produced[8:12] and stored[16:] == produced[16:]   # everything else identical, CRC too
    assert crc_is_valid(stored)
    assert kv(all_records(log)) == [(i, f"k{j}".encode(), v.encode())
                                    for i, (j, v) in enumerate([(0, "a"), (1, "b"), (0, "c"), (1, "d"), (2, "e")])]


def test_writable_buffer_is_patched_in_place(make_log):
    log = make_log()
    log.append_as_leader(batch(["x"]), leader_epoch=0)
    buf = bytearray(batch(["y"]))
    log.append_as_leader(memoryview(buf), leader_epoch=3)
    assert read_batch_header(buf).base_offset == 1 and read_batch_header(buf).partition_leader_epoch == 3


def test_log_append_time_sets_bit_and_recomputes_crc(make_log, clock):
    log = make_log({"message.timestamp.type": "LogAppendTime"})
    produced = batch(["a", "b"], ts=T0 - 5000)
    clock.advance(123)
    info = log.append_as_leader(produced, leader_epoch=0)
    assert info.log_append_time == T0 + 123 and info.max_timestamp == T0 + 123
    stored = log.read(0, 10000, isolation="log_end").records
    h = read_batch_header(stored)
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME and h.max_timestamp == T0 + 123
    assert crc_is_valid(stored) and h.crc != read_batch_header(produced).crc
    assert stored[61:] == produced[61:]                        # records untouched
    assert [r.timestamp for r in decode_batch(stored).records] == [T0 + 123] * 2


def test_create_time_corrects_a_wrong_max_timestamp(make_log):
    from .helpers import fix_crc
    log = make_log()
    produced = bytearray(batch(["a", "b"], timestamps=[T0, T0 + 10]))
    struct.pack_into(">q", produced, 35, T0 + 99)               # a producer lying about its max timestamp
    fix_crc(produced)
    info = log.append_as_leader(bytes(produced), leader_epoch=0)
    assert info.max_timestamp == T0 + 10
    assert read_batch_header(log.read(0, 1000, isolation="log_end").records).max_timestamp == T0 + 10


def test_compressed_batch_kept_as_is_with_compression_type_producer(make_log):
    log = make_log()
    produced = batch(["v" * 50] * 5, compression="gzip")
    log.append_as_leader(batch(["first"]), leader_epoch=0)
    info = log.append_as_leader(produced, leader_epoch=1)
    assert info.source_compression == CompressionType.GZIP and info.target_compression == CompressionType.GZIP
    stored = log.read(1, 10000, isolation="log_end").records
    assert stored[16:] == produced[16:]


def test_broker_recompresses_when_compression_type_differs(make_log):
    log = make_log({"compression.type": "lz4"})
    produced = batch(["v" * 50] * 5, compression="gzip")
    info = log.append_as_leader(produced, leader_epoch=1)
    stored = log.read(0, 10000, isolation="log_end").records
    h = read_batch_header(stored)
    assert h.compression_type == CompressionType.LZ4 and info.target_compression == CompressionType.LZ4
    assert [r.value for r in decode_batch(stored).records] == [b"v" * 50] * 5
    assert h.partition_leader_epoch == 1 and crc_is_valid(stored)


def test_uncompressed_topic_stores_uncompressed(make_log):
    log = make_log({"compression.type": "uncompressed"})
    log.append_as_leader(batch(["a"], compression="zstd"), leader_epoch=0)
    assert read_batch_header(log.read(0, 1000, isolation="log_end").records).compression_type == CompressionType.NONE


def test_offset_index_is_sparse(make_log):
    log = make_log({"index.interval.bytes": 200})
    sizes = []
    for i in range(20):
        sizes.append(len(batch([f"value-{i:03d}" * 3])))
        log.append_as_leader(batch([f"value-{i:03d}" * 3]), leader_epoch=0)
    entries = log.active_segment.offset_index.entry_list()
    assert 0 < len(entries) < 20
    positions = [sum(sizes[:o]) for o, _ in entries]          # each entry: a batch's last offset -> its position
    assert [p for _, p in entries] == positions
    gaps = [b - a for (_, a), (_, b) in zip(entries, entries[1:])]
    assert all(g > 200 for g in gaps)


def test_follower_keeps_offsets_and_epochs(make_log, tmp_path):
    leader = make_log(name="t-0")
    leader.append_as_leader(batch(["a", "b"]), leader_epoch=3)
    leader.append_as_leader(batch(["c"]), leader_epoch=5)
    fetched = leader.read(0, 100000, isolation="log_end").records
    follower = make_log(name="t-1")
    info = follower.append_as_follower(fetched)
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert follower.read(0, 100000, isolation="log_end").records == fetched
    assert follower.leader_epoch_cache.epoch_entries() == [(3, 0), (5, 2)]
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(fetched)
    gap = bytearray(batch(["z"]))
    struct.pack_into(">q", gap, 0, 10)                         # compacted leaders leave gaps: allowed
    follower.append_as_follower(bytes(gap))
    assert follower.log_end_offset == 11


def test_follower_rejects_out_of_order_offsets(make_log):
    from kafkalab.storage.errors import OffsetsOutOfOrderError
    b1, b2 = bytearray(batch(["a"])), bytearray(batch(["b"]))
    struct.pack_into(">q", b1, 0, 5)
    log = make_log()
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(bytes(b1) + bytes(b2))


def test_coordinator_origin_skips_client_checks(make_log):
    log = make_log()
    produced = bytearray(batch(["a"]))
    struct.pack_into(">q", produced, 0, 42)                    # a coordinator may hand over any base offset
    info = log.append_as_leader(bytes(produced), leader_epoch=0, origin="coordinator")
    assert info.first_offset == 0


def test_many_appends_then_read_everything(make_log):
    log = make_log({"segment.bytes": 1000})
    for i in range(100):
        log.append_as_leader(batch([f"m{i}", f"n{i}"]), leader_epoch=i // 40)
    assert log.log_end_offset == 200 and log.number_of_segments > 5
    got = [b for b in decode_batches(b"".join(log.read(s.base_offset, 10**6, isolation="log_end").records
                                                for s in log.segments))]
    assert [b.base_offset for b in got] == list(range(0, 200, 2))
    assert [b.partition_leader_epoch for b in got] == [i // 40 for i in range(100)]


def test_leader_never_re_encodes_when_the_codec_is_kept(make_log, monkeypatch):
    import kafkalab.storage.validator as validator

    def forbidden(*a, **kw):
        raise AssertionError("the batch was re-encoded")

    monkeypatch.setattr(validator, "build_batch", forbidden)
    log = make_log({"message.timestamp.type": "LogAppendTime"})
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        log.append_as_leader(batch(["a", "b", "c"], compression=codec), leader_epoch=0)
    assert log.log_end_offset == 15
