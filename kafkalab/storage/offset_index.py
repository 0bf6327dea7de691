"""The offset index: a sparse map from offset to byte position in the segment's ``.log`` file.

Theory of operation
-------------------
To serve a fetch at offset N the broker must find where N's batch starts in a file of up to 1 GiB. Scanning
from the start would read every header; keeping a position for every batch would cost too much memory. Kafka
does neither: it adds an entry only after about ``index.interval.bytes`` (4096) bytes of batches have been
appended since the previous entry, so the index is *sparse*::

    entry (8 bytes)   relative_offset  int32   last offset of the batch - segment base offset
                      position         int32   byte position where that batch starts in the .log

``lookup(N)`` returns the entry with the largest offset <= N (or ``(base_offset, 0)``); the reader then walks
batch headers from that position until it meets the batch whose last offset is >= N. At most about
``index.interval.bytes`` are walked per lookup, whatever the segment size.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/OffsetIndex.java``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from kafkalab.storage.abstract_index import KEY, VALUE, AbstractIndex
from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError

__all__ = ["OffsetIndex", "OffsetPosition"]


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    ENTRY_SIZE = 8
    _STRUCT = struct.Struct(">ii")
    KIND = "offset index"

    def _key(self, n: int) -> int:
        return self.base_offset + self._STRUCT.unpack_from(self._data, n * 8)[0]

    def _value(self, n: int) -> int:
        return self._STRUCT.unpack_from(self._data, n * 8)[1]

    def entry(self, n: int) -> OffsetPosition:
        if n >= self.entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from index {self.path}, which has size {self.entries}")
        rel, position = self._raw(n)
        return OffsetPosition(self.base_offset + rel, position)

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when the index is empty."""
        return self._key(self.entries - 1) if self.entries else self.base_offset

    def last_entry(self) -> OffsetPosition:
        return self.entry(self.entries - 1) if self.entries else OffsetPosition(self.base_offset, 0)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``target_offset``; ``(base_offset, 0)`` if there is none."""
        slot = self.largest_lower_bound_slot(target_offset, KEY)
        return OffsetPosition(self.base_offset, 0) if slot == -1 else self.entry(slot)

    def fetch_upper_bound_offset(self, position: int, fetch_size: int):
        """An entry at or after byte ``position + fetch_size``, i.e. an offset surely past a fetch of that size."""
        slot = self.smallest_upper_bound_slot(position + fetch_size, VALUE)
        return None if slot == -1 else self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; its offset must be larger than every offset already in the index."""
        if self.is_full():
            raise KafkaStorageError(f"Attempt to append to a full index (size = {self.entries}).")
        if self.entries and offset <= self.last_offset:
            raise KafkaStorageError(f"Attempt to append an offset {offset} to position {self.entries} no larger than "
                                    f"the last offset appended ({self.last_offset}) to {self.path}")
        self._append_raw(self.relative_offset(offset), position)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset``."""
        slot = self.largest_lower_bound_slot(offset, KEY)
        if slot < 0:
            keep = 0
        elif self._key(slot) == offset:
            keep = slot
        else:
            keep = slot + 1
        self.truncate_to_entries(keep)

    def _sanity_check_entries(self, strict: bool) -> None:
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(f"Corrupt index found, index file {self.path} has non-zero size but the last "
                                    f"offset is {self.last_offset} which is less than the base offset "
                                    f"{self.base_offset}")
        bad = self._first_bad_order(strict_key=True) if strict else None
        if bad is not None:
            raise CorruptIndexError(f"Corrupt index found, index file {self.path} has entry {bad} "
                                    f"{tuple(self.entry(bad))} out of order after {tuple(self.entry(bad - 1))}")
