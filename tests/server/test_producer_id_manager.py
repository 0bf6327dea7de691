"""Producer ids come from blocks claimed in the coordination store with a conditional write."""
from __future__ import annotations

import threading

from kafkalab.common import MockTime
from kafkalab.server.producer_id_manager import ProducerIdManager
from kafkalab.zk import KafkaZkClient, ZkStore


def zk_client():
    return KafkaZkClient(ZkStore(time=MockTime()))


def test_ids_come_in_blocks_of_1000():
    zk = zk_client()
    m = ProducerIdManager(0, zk)
    assert [m.generate_producer_id() for _ in range(3)] == [0, 1, 2]
    for _ in range(997):
        m.generate_producer_id()
    assert m.generate_producer_id() == 1000     # the first block is used up: a second one is claimed
    data, _ = zk.get_data_and_version("/latest_producer_id_block")
    assert data == b'{"version":1,"broker":0,"block_start":"1000","block_end":"1999"}'


def test_two_brokers_get_disjoint_blocks():
    zk = zk_client()
    a, b = ProducerIdManager(0, zk, block_size=10), ProducerIdManager(1, zk, block_size=10)
    ids_a, ids_b = [], []
    for _ in range(15):                                   # interleaved: each claims its next block in turn
        ids_a.append(a.generate_producer_id())
        ids_b.append(b.generate_producer_id())
    assert ids_a == list(range(10)) + list(range(20, 25))
    assert ids_b == list(range(10, 20)) + list(range(30, 35))


def test_a_restarted_broker_never_reuses_ids():
    zk = zk_client()
    first = ProducerIdManager(0, zk, block_size=5)
    used = {first.generate_producer_id() for _ in range(3)}
    again = ProducerIdManager(0, zk, block_size=5)      # its memory is gone; the store remembers the block
    assert again.generate_producer_id() == 5 and not used & {5}


def test_ids_are_unique_under_concurrency():
    zk = zk_client()
    managers = [ProducerIdManager(b, zk, block_size=7) for b in range(3)]
    got, lock = [], threading.Lock()

    def work(m):
        mine = [m.generate_producer_id() for _ in range(50)]
        with lock:
            got.extend(mine)
    threads = [threading.Thread(target=work, args=(m,)) for m in managers for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == len(set(got)) == 300
