"""ListOffsets v0's answer: up to N segment boundaries at or before a time, newest first.

Theory of operation
-------------------
Before Kafka 0.10.1 records carried no timestamps and there was no time index. ListOffsets v0 ("give me up to
``max_num_offsets`` offsets before time T") was answered from the only times the broker had: each segment
file's **last-modified time**. The candidates are every segment's base offset (never below the log start
offset) with its file's mtime, plus -- when the active segment holds data -- the log end offset stamped "now".
-1 (LATEST) starts from the last candidate, -2 (EARLIEST) from the first, any other T from the newest
candidate whose time is <= T; from there up to ``max_num_offsets`` offsets are returned going back in time,
largest first. So the answer is coarse (segment granularity) and depends on when files were last written:
a segment rolled a minute ago has a recent mtime even if its records are old. Kafka 3.9 still answers it
this way; Kafka 4.0 removed the version (KIP-896).

Mirrors: ``UnifiedLog.legacyFetchOffsetsBefore`` (Kafka 3.9).
"""
from __future__ import annotations

__all__ = ["legacy_fetch_offsets_before"]

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


def legacy_fetch_offsets_before(segments: list, log_start_offset: int, log_end_offset: int, now_ms: int,
                                timestamp: int, max_num_offsets: int) -> list[int]:
    """``segments``: the log's segments in offset order (``base_offset``, ``size``, ``last_modified()``)."""
    candidates = [(max(s.base_offset, log_start_offset), s.last_modified()) for s in segments]
    if segments and segments[-1].size > 0:
        candidates.append((log_end_offset, now_ms))
    if timestamp == LATEST_TIMESTAMP:
        start = len(candidates) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = len(candidates) - 1
        while start >= 0 and candidates[start][1] > timestamp:
            start -= 1
    count = max(0, min(max_num_offsets, start + 1))
    return sorted((candidates[start - j][0] for j in range(count)), reverse=True)
