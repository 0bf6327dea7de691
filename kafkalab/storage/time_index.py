"""The time index: a sparse map from timestamp to offset, for ListOffsets by time and for retention.

Theory of operation
-------------------
Consumers may ask "which offset was written at time T?" (``offsetsForTimes``, ListOffsets with a timestamp).
Each segment keeps a second sparse index, written at the same moments as the offset index::

    entry (12 bytes)  timestamp        int64   the largest timestamp seen in the segment so far
                      relative_offset  int32   last offset of the batch that carried it

Entries only ever grow in timestamp: a batch whose timestamp is not larger than the last entry's adds
nothing. ``lookup(T)`` returns the entry with the largest timestamp <= T; the search then continues in the log
from that offset, decoding records, until a record with timestamp >= T appears.

When a segment rolls, its largest timestamp is appended one last time (the slot reserved by
:meth:`TimeIndex.is_full`), so the last entry of an inactive segment's time index is its largest timestamp:
time-based retention (``retention.ms``) reads it to decide whether the segment has expired.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/TimeIndex.java``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kafkalab.storage.abstract_index import KEY, VALUE, AbstractIndex
from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError

__all__ = ["TimeIndex", "TimestampOffset"]

NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    ENTRY_SIZE = 12
    _STRUCT = struct.Struct(">qi")
    KIND = "time index"

    def _key(self, n: int) -> int:
        return self._STRUCT.unpack_from(self._data, n * 12)[0]

    def _value(self, n: int) -> int:
        return self.base_offset + self._STRUCT.unpack_from(self._data, n * 12)[1]

    def entry(self, n: int) -> TimestampOffset:
        if n >= self.entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from time index {self.path} which has size "
                             f"{self.entries}")
        ts, rel = self._raw(n)
        return TimestampOffset(ts, self.base_offset + rel)

    def is_full(self) -> bool:
        """One slot stays free for the final entry written when the segment rolls."""
        return self.entries >= self.max_entries - 1

    def last_entry(self) -> TimestampOffset:
        return self.entry(self.entries - 1) if self.entries else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``target_timestamp``; ``(-1, base_offset)`` if none."""
        slot = self.largest_lower_bound_slot(target_timestamp, KEY)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot == -1 else self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append ``(timestamp, offset)`` if ``timestamp`` is larger than the last entry's."""
        if not skip_full_check and self.is_full():
            raise KafkaStorageError(f"Attempt to append to a full time index (size = {self.entries}).")
        last = self.last_entry()
        if self.entries and offset < last.offset:
            raise KafkaStorageError(f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than "
                                    f"the last offset appended ({last.offset}) to {self.path}")
        if self.entries and timestamp < last.timestamp:
            raise KafkaStorageError(f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger "
                                    f"than the last timestamp appended ({last.timestamp}) to {self.path}")
        if timestamp > last.timestamp:
            self._append_raw(timestamp, self.relative_offset(offset))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset``."""
        slot = self.largest_lower_bound_slot(offset, VALUE)
        if slot < 0:
            keep = 0
        elif self._value(slot) == offset:
            keep = slot
        else:
            keep = slot + 1
        self.truncate_to_entries(keep)

    def _sanity_check_entries(self, strict: bool) -> None:
        if self.entries:
            last = self.last_entry()
            if last.timestamp < self._key(0):
                raise CorruptIndexError(f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                                        f"but the last timestamp is {last.timestamp} which is less than the first "
                                        f"timestamp {self._key(0)}")
            if last.offset < self.base_offset:
                raise CorruptIndexError(f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                                        f"but the last offset is {last.offset} which is less than the first offset "
                                        f"{self.base_offset}")
        bad = self._first_bad_order(strict_key=True) if strict else None
        if bad is not None:
            raise CorruptIndexError(f"Corrupt time index found, time index file ({self.path}) has entry {bad} "
                                    f"{tuple(self.entry(bad))} out of order after {tuple(self.entry(bad - 1))}")
