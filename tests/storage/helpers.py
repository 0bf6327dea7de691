"""Shared helpers for the storage tests: building batches as a producer would, opening logs, reading them back."""
from __future__ import annotations

import os
import struct

from kafkalab.records import SimpleRecord, build_batch, crc32c, decode_batches
from kafkalab.storage import LogConfig, UnifiedLog

T0 = 1_700_000_000_000


def batch(values, *, keys=None, ts=T0, pid=-1, epoch=-1, seq=-1, compression=None, headers=(),
          timestamps=None) -> bytes:
    """One producer batch of ``values`` (bytes or str; None = tombstone), keys default to k<i>."""
    recs = []
    for i, v in enumerate(values):
        key = keys[i] if keys is not None else f"k{i}".encode()
        value = v.encode() if isinstance(v, str) else v
        stamp = timestamps[i] if timestamps is not None else ts
        recs.append(SimpleRecord(key.encode() if isinstance(key, str) else key, value, headers, stamp))
    return build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, compression=compression)


def fix_crc(buf: bytearray, pos: int = 0) -> bytearray:
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:pos + 12 + length])))
    return buf


def open_log(path, config=None, *, time=None, scheduler=None, **kw) -> UnifiedLog:
    if config is None or isinstance(config, dict):
        config = LogConfig(config or {})
    return UnifiedLog(str(path), config, time=time, scheduler=scheduler, **kw)


def all_batches(log, isolation="log_end"):
    """Every batch from the log start, read the way a follower would (one read per segment)."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 30, isolation=isolation)
        batches = decode_batches(info.records)
        if not batches:
            break
        out.extend(batches)
        offset = batches[-1].last_offset + 1
    return out


def all_records(log):
    return [r for b in all_batches(log) for r in b.records]


def kv(records):
    return [(r.offset, r.key, r.value) for r in records]


def segment_files(log, suffix):
    return sorted(os.path.join(log.dir, f) for f in os.listdir(log.dir) if f.endswith(suffix))
