"""SimpleMemoryPool: Kafka's non-strict accounting (any memory left lets one more request in) and its refusals."""
from __future__ import annotations

import pytest

from kafkalab.common.memory_pool import MemoryPool, SimpleMemoryPool


def test_a_non_strict_pool_lends_while_anything_is_left_and_may_overshoot_by_one_request():
    pool = SimpleMemoryPool(100, 60)
    assert pool.try_allocate(60) and pool.available_memory() == 40
    assert pool.try_allocate(60) and pool.available_memory() == -20      # over by at most one request
    assert pool.is_out_of_memory() and not pool.try_allocate(1)
    pool.release(60)
    assert pool.available_memory() == 40 and pool.try_allocate(10)


def test_a_strict_pool_lends_only_what_it_has():
    pool = SimpleMemoryPool(100, 100, strict=True)
    assert pool.try_allocate(70) and not pool.try_allocate(40) and pool.try_allocate(30)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="must provide a positive size and max single allocation size"):
        SimpleMemoryPool(10, 20)
    pool = SimpleMemoryPool(100, 50)
    with pytest.raises(ValueError, match="requested size 51 is larger than maxSingleAllocationSize 50"):
        pool.try_allocate(51)
    with pytest.raises(ValueError, match="requested size 0<=0"):
        pool.try_allocate(0)


def test_the_unbounded_pool_always_lends():
    assert MemoryPool.NONE.try_allocate(1 << 40) and not MemoryPool.NONE.is_out_of_memory()
    assert MemoryPool.NONE.size() - MemoryPool.NONE.available_memory() == 0
