"""One partition's answer to a FetchRequest, turned into the records the application may see.

Theory of operation
-------------------
A Fetch response carries, per partition, raw ``records`` bytes: whole record batches exactly as the producer
built them (the broker never re-encodes), possibly ending in a partial batch when the size limit cut it. The
consumer, not the broker, finishes the job:

1. **Decode and check** each complete batch (CRC-32C, then inflate a compressed batch as one block). A partial
   batch at the end is dropped; the next fetch asks for it again from its first offset.
2. **Skip records before the fetch offset.** The broker answers with whole batches, so when the consumer asked
   for offset 7 and offsets 5-9 were compressed together, the batch starts at 5; records 5 and 6 were already
   returned (or skipped by a ``seek``) and are dropped here.
3. **Skip control batches** -- transaction markers (COMMIT/ABORT) take an offset in the log but are never
   records for the application.
4. **read_committed.** With ``isolation.level=read_committed`` the broker only answers up to the *last stable
   offset*, but it still sends the records of transactions that were *aborted*, together with a list
   ``aborted_transactions`` of ``(producer_id, first_offset)``. Walking the batches in order, a transaction
   becomes "aborted" once we reach its ``first_offset``; its transactional batches are skipped until that
   producer's ABORT marker is met. ``read_uncommitted`` ignores all of this and returns everything.
5. **Hand out** at most ``max.poll.records`` at a time; what is left stays here for the next ``poll()``.

``next_fetch_offset`` follows along: past each returned record, past each skipped batch, and after the last
batch to its ``last_offset + 1`` (compaction may have removed the batch's last records, but the batch header
still says where it ended), so the next fetch never asks for the same bytes twice.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/CompletedFetch.java`` and
``ConsumerRecord.java``.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple, Optional

from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.records import decode_batches
from kafkalab.records.record import gc_paused
from kafkalab.records.control import ControlRecordType, parse_control_record_key

__all__ = ["ConsumerRecord", "CompletedFetch", "READ_UNCOMMITTED", "READ_COMMITTED"]

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list                   # [(str, bytes | None)]
    timestamp: int
    timestamp_type: int             # 0 CreateTime, 1 LogAppendTime (TimestampType)
    leader_epoch: Optional[int] = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class CompletedFetch:
    """The decoded answer of one partition; :meth:`drain` hands out its records a slice at a time."""

    def __init__(self, tp, fetch_offset: int, records_bytes, *, isolation_level: int = READ_UNCOMMITTED,
                 aborted_transactions=(), high_watermark: int = -1, last_stable_offset: int = -1,
                 log_start_offset: int = -1, check_crcs: bool = True, error_code: int = 0):
        self.tp = TopicPartition(*tp)
        self.fetch_offset = fetch_offset
        self.next_fetch_offset = fetch_offset
        self.error_code = error_code
        self.high_watermark, self.last_stable_offset = high_watermark, last_stable_offset
        self.log_start_offset = log_start_offset
        self.isolation_level = isolation_level
        data = bytes(records_bytes or b"")
        self.size_in_bytes = len(data)
        self.batches = decode_batches(data, verify=check_crcs, allow_partial=True) if data else []
        self._aborted = [(a.first_offset, a.producer_id) for a in (aborted_transactions or ())]
        heapq.heapify(self._aborted)
        self._aborted_producers: set[int] = set()
        self._batch_index = 0
        self._record_index = 0
        self.last_epoch: Optional[int] = None
        self.consumed = False
        self.initialized = False

    @property
    def has_records(self) -> bool:
        return any(b.records for b in self.batches)

    def _skip_batch(self, batch) -> bool:
        """Control batches always; aborted transactional batches under read_committed."""
        if self.isolation_level == READ_COMMITTED and batch.producer_id >= 0:
            while self._aborted and self._aborted[0][0] <= batch.base_offset + batch.last_offset_delta:
                self._aborted_producers.add(heapq.heappop(self._aborted)[1])
            if batch.is_control_batch:
                for r in batch.records:
                    if parse_control_record_key(r.key) == ControlRecordType.ABORT:
                        self._aborted_producers.discard(batch.producer_id)
                return True
            if batch.is_transactional and batch.producer_id in self._aborted_producers:
                return True
        return batch.is_control_batch

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records for the application; advances :attr:`next_fetch_offset`."""
        new = tuple.__new__
        out: list[ConsumerRecord] = []
        topic, partition = self.tp
        while self._batch_index < len(self.batches) and len(out) < max_records:
            batch = self.batches[self._batch_index]
            if self._record_index == 0 and (batch.next_offset <= self.next_fetch_offset or self._skip_batch(batch)):
                self.next_fetch_offset = max(self.next_fetch_offset, batch.next_offset)
                self._batch_index += 1
                continue
            records = batch.records
            epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
            i, n = self._record_index, len(records)
            while i < n and records[i].offset < self.next_fetch_offset:
                i += 1                           # before the fetch offset: the batch started earlier
            take = min(n - i, max_records - len(out))
            if take > 0:
                # One comprehension per batch (offsets only grow within a batch); tuple.__new__ skips the
                # NamedTuple's Python-level __new__, a measurable cost at a million records.
                timestamp_type = int(records[i].timestamp_type)
                with gc_paused(take):
                    out += [new(ConsumerRecord, (topic, partition, r.offset, r.key, r.value, list(r.headers),
                                                 r.timestamp, timestamp_type, epoch)) for r in records[i:i + take]]
                i += take
                self.next_fetch_offset = records[i - 1].offset + 1
                self.last_epoch = epoch
            self._record_index = i
            if self._record_index >= len(records):
                self.next_fetch_offset = max(self.next_fetch_offset, batch.next_offset)
                self._batch_index += 1
                self._record_index = 0
        if self._batch_index >= len(self.batches):
            self.consumed = True
        return out

    def __repr__(self) -> str:
        return (f"CompletedFetch({self.tp}, fetch_offset={self.fetch_offset}, next={self.next_fetch_offset}, "
                f"batches={len(self.batches)}, error={self.error_code})")
