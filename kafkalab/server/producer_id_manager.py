"""Producer ids: unique 64-bit numbers handed to idempotent producers, allocated in blocks through ZooKeeper.

Theory of operation
-------------------
An idempotent producer asks any broker for an id (InitProducerId) and then numbers each batch it sends per
partition (0, 1, 2, ...). The broker remembers, per producer id, the last sequence numbers it appended, so a
retried batch is recognised and not written twice. Ids must be unique across the whole cluster, and brokers
must not coordinate on every request, so each broker reserves a **block** of 1000 ids at a time with a
conditional write to ``/latest_producer_id_block`` and hands them out from memory.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/ProducerIdManager.scala`` (ZkProducerIdManager).
"""
from __future__ import annotations

import threading

__all__ = ["ProducerIdManager"]


class ProducerIdManager:
    def __init__(self, broker_id: int, zk, block_size: int = 1000):
        self.broker_id = broker_id
        self.zk = zk
        self.block_size = block_size
        self._next = 0
        self._end = -1
        self._lock = threading.Lock()

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                block = self.zk.allocate_producer_id_block(self.broker_id, self.block_size)
                self._next = block.first_producer_id
                self._end = block.first_producer_id + block.size - 1
            pid = self._next
            self._next += 1
            return pid
