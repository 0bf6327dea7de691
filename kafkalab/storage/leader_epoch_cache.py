"""The leader epoch cache: which leader epoch started at which offset, and where each epoch ended.

Theory of operation
-------------------
Every leader stamps its *leader epoch* into each batch it appends (``partition_leader_epoch``, bytes 12-15).
Each replica remembers, per epoch, the first offset written in it: the ``leader-epoch-checkpoint`` file::

    0               <- version
    3               <- number of entries
    0 0             <- epoch 0 started at offset 0
    2 120           <- epoch 2 started at offset 120 (epoch 1 never wrote anything)
    5 4096

With it, a follower coming back after a failure does not truncate to its high watermark -- which could throw
away acknowledged data (KIP-101) -- but asks the leader "where did my latest epoch end?" (OffsetForLeaderEpoch)
and truncates to that. :meth:`LeaderEpochFileCache.end_offset_for` answers the question the way KIP-279
requires: for a requested epoch it returns the *largest epoch <= the requested one* that the leader knows,
and the start offset of the next larger epoch as its end (the log end offset for the latest epoch). A follower
then truncates to min(that end offset, its own end offset for that epoch), which keeps logs identical even
after two quick leader changes.

The cache stays monotonic: assigning an epoch removes every entry with a larger-or-equal epoch or a
larger-or-equal start offset (those belonged to a diverged history). Truncating the log truncates the cache
(``truncate_from_end``); deleting from the start (retention, DeleteRecords) moves the earliest entry's start
offset forward (``truncate_from_start``).

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java`` and
``storage/.../checkpoint/LeaderEpochCheckpointFile.java``.
"""
from __future__ import annotations

import logging
import os
from typing import NamedTuple, Optional

from kafkalab.storage.checkpoints import LeaderEpochCheckpointFile

__all__ = ["LeaderEpochFileCache", "EpochEntry", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int

    def __repr__(self) -> str:
        return f"EpochEntry(epoch={self.epoch}, startOffset={self.start_offset})"


class LeaderEpochFileCache:
    """Epoch -> start offset, backed by ``leader-epoch-checkpoint`` (pass ``checkpoint=None`` for memory only)."""

    def __init__(self, topic_partition, checkpoint: Optional[LeaderEpochCheckpointFile] = None, scheduler=None):
        self.topic_partition = topic_partition
        self.checkpoint = checkpoint
        self.scheduler = scheduler
        self._entries: list = []
        if checkpoint is not None:
            for epoch, start in checkpoint.read():
                self._assign(EpochEntry(epoch, start))

    # ------------------------------------------------------------------------------------------ assign
    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` started at ``start_offset`` (no-op if already known; writes the file)."""
        if self._assign(EpochEntry(epoch, start_offset)):
            self._write()

    def _assign(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry {entry!r}")
        latest = self.latest_entry
        if latest is not None and latest.epoch == entry.epoch and entry.start_offset >= latest.start_offset:
            return False
        removed = []
        while self._entries and (self._entries[-1].epoch >= entry.epoch
                                 or self._entries[-1].start_offset >= entry.start_offset):
            removed.append(self._entries.pop())
        if len(removed) > 1 or (removed and removed[0].start_offset != entry.start_offset):
            log.warning("[LeaderEpochCache %s] New epoch entry %r caused truncation of conflicting entries %r. "
                        "Cache now contains %d entries.", self.topic_partition, entry, removed, len(self._entries))
        self._entries.append(entry)
        return True

    # ------------------------------------------------------------------------------------------ queries
    @property
    def latest_entry(self) -> Optional[EpochEntry]:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> Optional[int]:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> Optional[EpochEntry]:
        return self._entries[0] if self._entries else None

    @property
    def previous_epoch(self) -> Optional[int]:
        return self._entries[-2].epoch if len(self._entries) >= 2 else None

    def epoch_entries(self) -> list:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:  # a cache object is truthy even when empty
        return True

    def epoch_entry(self, epoch: int) -> Optional[EpochEntry]:
        for entry in self._entries:
            if entry.epoch == epoch:
                return entry
        return None

    def epoch_for_offset(self, offset: int) -> Optional[int]:
        """The epoch that wrote ``offset``: the last entry starting at or before it."""
        previous = None
        for entry in self._entries:
            if entry.start_offset == offset:
                return entry.epoch
            if entry.start_offset > offset:
                return previous
            previous = entry.epoch
        return previous

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple:
        """``(epoch, end_offset)`` for OffsetForLeaderEpoch, KIP-279 style:

        * requested == latest epoch -> (latest, log_end_offset);
        * otherwise the largest known epoch <= requested, ended by the start offset of the next larger epoch;
        * requested smaller than every known epoch -> (requested, start offset of the first epoch);
        * UNDEFINED_EPOCH, or larger than every known epoch -> (-1, -1).
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        latest = self.latest_epoch
        if latest is not None and latest == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for entry in self._entries:
            if entry.epoch <= requested_epoch:
                floor = entry
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    # ----------------------------------------------------------------------------------------- truncation
    def truncate_from_end(self, end_offset: int) -> None:
        """Remove every entry starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset >= 0 and self._entries and self._entries[-1].start_offset >= end_offset:
            while self._entries and self._entries[-1].start_offset >= end_offset:
                self._entries.pop()
            self._write_async()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget what lies before ``start_offset``: the epoch covering it now starts exactly there."""
        removed = []
        while self._entries and self._entries[0].start_offset <= start_offset:
            removed.append(self._entries.pop(0))
        if removed:
            self._entries.insert(0, EpochEntry(removed[-1].epoch, start_offset))
            self._write_async()

    def clear_and_flush(self) -> None:
        self._entries.clear()
        self._write()

    def clear(self) -> None:
        self._entries.clear()

    # --------------------------------------------------------------------------------------------- file
    def _write(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.write(self._entries)

    def _write_async(self) -> None:
        """Kafka flushes truncations in the background to keep fsync latency off the fetcher threads."""
        if self.checkpoint is None:
            return
        if self.scheduler is None:
            self._write_if_dir_exists()
        else:
            self.scheduler.schedule(f"leader-epoch-cache-flush-{self.topic_partition}", self._write_if_dir_exists)

    def _write_if_dir_exists(self) -> None:
        if self.checkpoint is not None and os.path.isdir(os.path.dirname(self.checkpoint.path)):
            self.checkpoint.write(self._entries)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.topic_partition}, {self._entries})"
