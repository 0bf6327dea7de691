"""The segments of one log, kept sorted by base offset, with the range queries the log needs.

Theory of operation
-------------------
Most questions the log asks of its segments are "which segment holds offset N?" (the *floor*: the segment
with the largest base offset <= N), "which segments overlap offsets [a, b)?" and "what comes after this one?".
Kafka keeps them in a ``ConcurrentSkipListMap``; a sorted list of base offsets and ``bisect`` does the same
here. The last segment is the *active* one.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegments.java``.
"""
from __future__ import annotations

import bisect
from typing import Iterator, Optional

__all__ = ["LogSegments"]


class LogSegments:
    def __init__(self):
        self._keys: list = []
        self._segments: dict = {}

    def add(self, segment):
        base = segment.base_offset
        if base not in self._segments:
            bisect.insort(self._keys, base)
        self._segments[base] = segment
        return segment

    def remove(self, base_offset: int) -> None:
        if base_offset in self._segments:
            del self._segments[base_offset]
            self._keys.remove(base_offset)

    def clear(self) -> None:
        self._keys.clear()
        self._segments.clear()

    def contains(self, base_offset: int) -> bool:
        return base_offset in self._segments

    def get(self, base_offset: int):
        return self._segments.get(base_offset)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator:
        return iter([self._segments[k] for k in self._keys])

    def __bool__(self) -> bool:
        return bool(self._keys)

    @property
    def number_of_segments(self) -> int:
        return len(self._keys)

    def values(self, start: Optional[int] = None, end: Optional[int] = None) -> list:
        """All segments, or those overlapping offsets ``[start, end)``: from the floor segment of ``start`` up
        to (excluding) the first segment whose base offset is >= ``end``."""
        if start is None:
            return [self._segments[k] for k in self._keys]
        if start == end:
            return []
        if end is not None and end < start:
            raise ValueError(f"Invalid log segment range: requested segments from offset {start} which is greater "
                             f"than limit offset {end}")
        i = bisect.bisect_right(self._keys, start) - 1
        i = max(i, 0)
        j = len(self._keys) if end is None else bisect.bisect_left(self._keys, end)
        return [self._segments[k] for k in self._keys[i:j]]

    def base_offsets(self) -> list:
        return list(self._keys)

    @property
    def active_segment(self):
        return self._segments[self._keys[-1]] if self._keys else None

    last_segment = active_segment

    @property
    def first_segment(self):
        return self._segments[self._keys[0]] if self._keys else None

    def first_segment_base_offset(self) -> Optional[int]:
        return self._keys[0] if self._keys else None

    def floor_segment(self, offset: int):
        i = bisect.bisect_right(self._keys, offset) - 1
        return self._segments[self._keys[i]] if i >= 0 else None

    def lower_segment(self, offset: int):
        i = bisect.bisect_left(self._keys, offset) - 1
        return self._segments[self._keys[i]] if i >= 0 else None

    def higher_segment(self, offset: int):
        i = bisect.bisect_right(self._keys, offset)
        return self._segments[self._keys[i]] if i < len(self._keys) else None

    def higher_segments(self, offset: int) -> list:
        i = bisect.bisect_right(self._keys, offset)
        return [self._segments[k] for k in self._keys[i:]]

    def non_active_segments_from(self, offset: int) -> list:
        active = self.active_segment
        if active is None or offset > active.base_offset:
            return []
        return self.values(offset, active.base_offset)

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments.values())

    def close(self) -> None:
        for segment in self._segments.values():
            segment.close()
