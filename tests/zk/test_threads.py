"""Thread-safety smoke test: many threads, one store, no lost or duplicated writes."""
import threading

from kafkalab.common import SystemTime
from kafkalab.zk import BadVersionException, KafkaZkClient, ZkStore


def run_threads(n, target):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # surface failures from worker threads
            errors.append(e)
    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def test_concurrent_compare_and_set_counter_sequential_creates_and_watches():
    store = ZkStore(time=SystemTime())
    store.create("/counter", b"0")
    store.create("/seq")
    fired = []
    lock = threading.Lock()

    def watcher(event):
        with lock:
            fired.append(event.type)
        store.get_children("/seq", watcher)  # re-register from inside the watcher, from any thread
    store.get_children("/seq", watcher)

    def worker(i):
        session = store.open_session(30_000)
        for _ in range(50):
            store.create("/seq/n-", sequential=True, session=session)
            while True:  # an increment by compare-and-set, as Kafka updates a partition state
                data, stat = store.get("/counter")
                try:
                    store.set("/counter", str(int(data) + 1).encode(), stat.version)
                    break
                except BadVersionException:
                    continue
        store.create(f"/e{i}", ephemeral=True, session=session)
        session.close()
    run_threads(8, worker)
    children = store.get_children("/seq")
    assert len(children) == len(set(children)) == 400
    assert children[-1] == "n-0000000399"
    data, stat = store.get("/counter")
    assert int(data) == 400 and stat.version == 400
    assert store.get_children("/") == ["counter", "seq", "zookeeper"], "ephemerals gone with their sessions"
    assert 1 <= len(fired) <= 400


def test_concurrent_producer_id_blocks_are_disjoint():
    store = ZkStore(time=SystemTime())
    blocks = []
    lock = threading.Lock()

    def worker(i):
        zk = KafkaZkClient.connect(store, 30_000)
        for _ in range(10):
            block = zk.allocate_producer_id_block(i, block_size=100)
            with lock:
                blocks.append(block)
    run_threads(6, worker)
    starts = sorted(b.first_producer_id for b in blocks)
    assert starts == list(range(0, 6000, 100))
