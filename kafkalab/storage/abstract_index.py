"""What the offset index and the time index share: fixed-size entries, preallocation, binary search.

Theory of operation
-------------------
A segment's indexes are arrays of fixed-size entries sorted by their key, stored in a file next to the
``.log``. Kafka memory-maps them; kafkalab keeps the entries in a ``bytearray`` and writes each new entry to
the file as it is added, which is what the page cache would hold anyway.

* **Relative offsets.** An entry stores ``offset - base_offset`` as an int32, so one segment can span at most
  2**31 - 1 offsets (a segment whose offsets cannot be stored that way must roll).
* **Preallocation.** The active segment's index files are created at their full size
  (``segment.index.bytes``, 10 MiB by default, rounded down to whole entries) and cut back to the entries
  actually used when the segment rolls or the log closes. An index is *full* when its preallocated slots are
  used up -- one of the reasons a segment rolls.
* **No checksum.** After an unclean shutdown an index may hold zeros or garbage past its real entries; the
  loader runs :meth:`AbstractIndex.sanity_check` and rebuilds an index from the ``.log`` when it fails.
* **Lookup** is a binary search for the largest entry whose key is <= the target (``largest_lower_bound``).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/AbstractIndex.java`` (the
"warm section" cache-friendly search is left out: the entries are in memory here).
"""
from __future__ import annotations

import os
import struct
from typing import Optional

from kafkalab.storage import file_records
from kafkalab.storage.errors import CorruptIndexError, KafkaStorageError

__all__ = ["AbstractIndex", "round_down_to_exact_multiple", "KEY", "VALUE"]

KEY = 0
VALUE = 1
_INT_MAX = 2147483647


def round_down_to_exact_multiple(number: int, factor: int) -> int:
    return factor * (number // factor)


class AbstractIndex:
    """Base class: subclasses define ``ENTRY_SIZE``, ``_STRUCT`` and how keys/values sit in an entry."""

    ENTRY_SIZE = 8
    _STRUCT = struct.Struct(">ii")
    KIND = "index"

    def __init__(self, path: str, base_offset: int, max_index_size: int = -1, *, writable: bool = True):
        self.path = str(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        newly_created = not os.path.exists(self.path)
        if newly_created and not writable:
            raise FileNotFoundError(self.path)
        if newly_created:
            if max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"Invalid max index size: {max_index_size}")
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._length = round_down_to_exact_multiple(max_index_size, self.ENTRY_SIZE)
            os.ftruncate(self._fd, self._length)
            self._data = bytearray()
            self.durable = False
        else:
            self._fd = os.open(self.path, os.O_RDWR if writable else os.O_RDONLY)
            raw = file_records._pread_fully(self._fd, os.fstat(self._fd).st_size, 0)
            self._length = len(raw)
            # an existing file counts its whole length as entries (as Kafka does): zeros a crash left
            # behind are caught by sanity_check, not hidden here
            self._data = bytearray(raw[:round_down_to_exact_multiple(len(raw), self.ENTRY_SIZE)])
            self.durable = True
        self._flushed_entries = self.entries
        self._closed = False

    # ------------------------------------------------------------------------------------------- sizes
    @property
    def entries(self) -> int:
        return len(self._data) // self.ENTRY_SIZE

    @property
    def max_entries(self) -> int:
        return self._length // self.ENTRY_SIZE

    @property
    def length(self) -> int:
        """Size of the file (preallocated slots included)."""
        return self._length

    def size_in_bytes(self) -> int:
        """Bytes actually used by entries."""
        return len(self._data)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    # ------------------------------------------------------------------------------------ entry helpers
    def _raw(self, n: int) -> tuple:
        return self._STRUCT.unpack_from(self._data, n * self.ENTRY_SIZE)

    def relative_offset(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > _INT_MAX:
            raise KafkaStorageError(f"Integer overflow for offset: {offset} ({os.path.basename(self.path)})")
        return rel

    def can_append_offset(self, offset: int) -> bool:
        rel = offset - self.base_offset
        return 0 <= rel <= _INT_MAX

    def _key(self, n: int) -> int:      # overridden: what the entries are sorted by
        raise NotImplementedError

    def _value(self, n: int) -> int:
        raise NotImplementedError

    def largest_lower_bound_slot(self, target: int, search: int = KEY) -> int:
        """Slot of the largest entry whose key (or value) is <= ``target``; -1 if there is none."""
        get = self._key if search == KEY else self._value
        n = self.entries
        if n == 0 or get(0) > target:
            return -1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if get(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def smallest_upper_bound_slot(self, target: int, search: int = KEY) -> int:
        """Slot of the smallest entry whose key (or value) is >= ``target``; -1 if there is none."""
        get = self._key if search == KEY else self._value
        n = self.entries
        if n == 0 or get(n - 1) < target:
            return -1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if get(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    # -------------------------------------------------------------------------------------- mutations
    def _append_raw(self, *fields) -> None:
        self._check_writable()
        entry = self._STRUCT.pack(*fields)
        position = len(self._data)
        if position + self.ENTRY_SIZE > self._length:   # writing past preallocation grows the file
            self._length = position + self.ENTRY_SIZE
        os.pwrite(self._fd, entry, position)
        self._data += entry

    def truncate_to_entries(self, entries: int) -> None:
        self._check_writable()
        entries = max(0, min(entries, self.entries))
        old = len(self._data)
        del self._data[entries * self.ENTRY_SIZE:]
        if old > len(self._data):   # zero the dropped slots, as a fresh preallocated file would have them
            os.pwrite(self._fd, bytes(old - len(self._data)), len(self._data))
        self._flushed_entries = min(self._flushed_entries, self.entries)

    def truncate(self) -> None:
        self.truncate_to_entries(0)

    def reset(self) -> None:
        """Remove every entry and grow back to the maximum size (a segment about to be rebuilt or reused)."""
        self.truncate()
        self.resize(self.max_index_size)

    def resize(self, new_size: int) -> bool:
        """Set the file size to ``new_size`` rounded down to whole entries (never below the used entries)."""
        self._check_writable()
        rounded = max(round_down_to_exact_multiple(new_size, self.ENTRY_SIZE), len(self._data))
        if rounded == self._length:
            return False
        os.ftruncate(self._fd, rounded)
        self._length = rounded
        return True

    def trim_to_valid_size(self) -> None:
        """Drop the unused preallocated slots (on roll and on close)."""
        self.resize(len(self._data))

    def flush(self) -> None:
        if file_records.FSYNC and not self._closed:
            os.fsync(self._fd)
        self._flushed_entries = self.entries
        self.durable = True

    def sanity_check(self, strict: bool = True) -> None:
        """Raise CorruptIndexError if the file cannot be a valid index. Kafka checks the length and the last
        entry; ``strict`` (what kafkalab's loader uses) also requires the entries to be sorted, which catches
        the zeros or garbage a crash leaves in a preallocated file."""
        if self._length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(f"Index file {self.path} is corrupt, found {self._length} bytes which is "
                                    f"neither positive nor a multiple of {self.ENTRY_SIZE}")
        self._sanity_check_entries(strict)

    def _sanity_check_entries(self, strict: bool) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------ file life cycle
    def rename_to(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = str(path)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def __del__(self):
        if not getattr(self, "_closed", True):
            self._closed = True
            os.close(self._fd)

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def simulate_power_loss(self) -> None:
        """Entries never flushed read back as zeros after a crash; a never-flushed new file disappears."""
        if not self.durable:
            self.delete_if_exists()
            return
        if not self._closed and self._flushed_entries < self.entries:
            lost = len(self._data) - self._flushed_entries * self.ENTRY_SIZE
            os.pwrite(self._fd, bytes(lost), self._flushed_entries * self.ENTRY_SIZE)
        self.close()

    def _check_writable(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"The index {self.path} is already closed")
        if not self.writable:
            raise KafkaStorageError(f"The index {self.path} was opened read-only")

    def entry_list(self) -> list:
        """Every entry, for labs and the dump tool."""
        return [self.entry(i) for i in range(self.entries)]

    def entry(self, n: int):  # pragma: no cover - overridden
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({os.path.basename(self.path)}, entries={self.entries}/{self.max_entries})")

    def _first_bad_order(self, strict_key: bool) -> Optional[int]:
        """Index of the first entry whose key or value goes backwards (a crash's garbage), or None."""
        for i in range(1, self.entries):
            key, prev = self._key(i), self._key(i - 1)
            if key < prev or (strict_key and key == prev) or self._value(i) < self._value(i - 1):
                return i
        return None
