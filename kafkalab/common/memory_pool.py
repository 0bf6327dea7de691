"""Memory pools: a bound on the bytes of requests a broker holds at once (``queued.max.request.bytes``).

Theory of operation
-------------------
A request's size prefix says how many bytes follow; before reading them the broker asks its memory pool for that
many. The pool only counts: :meth:`SimpleMemoryPool.try_allocate` subtracts the size from what is available and
says yes, or says no when nothing is left; :meth:`release` gives the bytes back once the request is done with.
A connection that was told no stops reading (it is *muted*) and tries again when memory has been released, so a
flood of large requests waits in the clients' socket buffers instead of in the broker's memory.

Kafka's broker pool is not strict: it hands out a buffer whenever *any* memory is available, so the bytes in use
can go above the pool's size by at most one request (``socket.request.max.bytes``) -- a request larger than
what is left is served before smaller ones behind it, and never starves. With ``queued.max.request.bytes`` at
its default -1 the broker uses :data:`MemoryPool.NONE`, which always says yes.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/memory/MemoryPool.java`` and ``SimpleMemoryPool.java``.
"""
from __future__ import annotations

import threading

__all__ = ["MemoryPool", "SimpleMemoryPool"]

_UNBOUNDED = (1 << 63) - 1   # Java's Long.MAX_VALUE: what the unbounded pool reports as its size and as available


class MemoryPool:
    """The unbounded pool (Kafka's ``MemoryPool.NONE``): every allocation succeeds, nothing is counted."""

    NONE: "MemoryPool"

    def try_allocate(self, size_bytes: int) -> bool:
        if size_bytes < 1:
            raise ValueError(f"requested size {size_bytes}<=0")
        return True

    def release(self, size_bytes: int) -> None:
        pass

    def size(self) -> int:
        return _UNBOUNDED

    def available_memory(self) -> int:
        return _UNBOUNDED

    def is_out_of_memory(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MemoryPool.NONE"


MemoryPool.NONE = MemoryPool()


class SimpleMemoryPool(MemoryPool):
    """``size_bytes`` to hand out, at most ``max_single_allocation_bytes`` at a time; ``strict`` allocates only
    when the whole size is available, otherwise (the broker's choice) whenever anything is."""

    def __init__(self, size_bytes: int, max_single_allocation_bytes: int, strict: bool = False):
        if size_bytes <= 0 or max_single_allocation_bytes <= 0 or max_single_allocation_bytes > size_bytes:
            raise ValueError(f"must provide a positive size and max single allocation size smaller than size. "
                             f"provided {size_bytes} and {max_single_allocation_bytes} respectively")
        self.size_bytes = size_bytes
        self.max_single_allocation_bytes = max_single_allocation_bytes
        self.strict = strict
        self._available = size_bytes
        self._lock = threading.Lock()

    def try_allocate(self, size_bytes: int) -> bool:
        if size_bytes < 1:
            raise ValueError(f"requested size {size_bytes}<=0")
        if size_bytes > self.max_single_allocation_bytes:
            raise ValueError(f"requested size {size_bytes} is larger than maxSingleAllocationSize "
                             f"{self.max_single_allocation_bytes}")
        threshold = size_bytes if self.strict else 1
        with self._lock:
            if self._available < threshold:
                return False
            self._available -= size_bytes
            return True

    def release(self, size_bytes: int) -> None:
        if size_bytes > 0:
            with self._lock:
                self._available += size_bytes

    def size(self) -> int:
        return self.size_bytes

    def available_memory(self) -> int:
        return self._available

    def is_out_of_memory(self) -> bool:
        return self._available <= 0

    def __repr__(self) -> str:
        return f"SimpleMemoryPool({self.size_bytes - self._available}/{self.size_bytes} bytes used)"
