"""One-shot data and child watches, ZooKeeper's event types, delivery order and the lock."""
import threading

import pytest

from kafkalab.zk import CreateOp, EventType, KeeperState, NoNodeException, ZkStore


def test_data_watch_fires_once_and_must_be_left_again(store, recorder):
    store.create("/a", b"0")
    w = recorder()
    store.get("/a", w)
    store.set("/a", b"1")
    store.set("/a", b"2")
    assert w.types == ["NodeDataChanged"], "one-shot: the second change is not reported"
    assert w.events[0].path == "/a" and w.events[0].state is KeeperState.SyncConnected
    store.get("/a", w)  # read again, leave a new watch
    store.delete("/a")
    assert w.types == ["NodeDataChanged", "NodeDeleted"]


def test_exists_watch_on_an_absent_znode_fires_on_create(store, recorder):
    w = recorder()
    assert store.exists("/controller", w) is None
    store.create("/controller", b"1")
    assert w.types == ["NodeCreated"]


def test_get_on_a_missing_znode_leaves_no_watch(store, recorder):
    w = recorder()
    with pytest.raises(NoNodeException):
        store.get("/nope", w)
    store.create("/nope")
    assert w.events == [] and store.watches() == {"data": [], "child": []}


def test_child_watch_fires_on_child_create_and_delete_not_on_data(store, recorder):
    store.create("/brokers")
    w = recorder()
    store.get_children("/brokers", w)
    store.set("/brokers", b"data changes do not concern child watches")
    assert w.events == []
    store.create("/brokers/0")
    store.get_children("/brokers", w)
    store.delete("/brokers/0")
    assert w.types == ["NodeChildrenChanged", "NodeChildrenChanged"]
    assert all(e.path == "/brokers" for e in w.events)


def test_deleting_a_watched_parent_reports_node_deleted_once(store, recorder):
    store.create("/t")
    w = recorder()
    store.get("/t", w)
    store.get_children("/t", w)
    store.delete("/t")
    assert w.types == ["NodeDeleted"]


def test_same_watcher_registered_twice_hears_once(store, recorder):
    store.create("/a")
    w = recorder()
    store.get("/a", w)
    store.exists("/a", w)
    store.set("/a", b"x")
    assert w.types == ["NodeDataChanged"]


def test_a_failing_watcher_does_not_stop_the_others(store, recorder):
    store.create("/a")

    def broken(event):
        raise RuntimeError("boom")
    w = recorder()
    store.get("/a", broken)
    store.get("/a", w)
    store.set("/a", b"x")
    assert w.types == ["NodeDataChanged"]


def test_watchers_run_outside_the_lock(store):
    """A watcher may hand work to another thread that uses the store, and wait for it."""
    store.create("/a")
    done = []

    def watcher(event):
        t = threading.Thread(target=lambda: done.append(store.create("/from-other-thread")))
        t.start()
        t.join(timeout=5)
    store.get("/a", watcher)
    store.set("/a", b"x")
    assert done == ["/from-other-thread"]


def test_watcher_that_writes_sees_events_in_zxid_order(store):
    """A watcher that re-registers and writes (as Kafka's controller does) gets events in order."""
    seen = []

    def watcher(event):
        seen.append((event.type.name, event.path))
        if event.path == "/a" and event.type is EventType.NodeCreated:
            store.exists("/b", watcher)
            store.create("/b")   # fires from inside a watcher: queued behind the current delivery
    store.exists("/a", watcher)
    store.exists("/c", watcher)
    store.multi([CreateOp("/a"), CreateOp("/c")])
    assert seen == [("NodeCreated", "/a"), ("NodeCreated", "/c"), ("NodeCreated", "/b")]


def test_custom_store_dispatcher(time, recorder):
    pending = []
    store = ZkStore(time=time, dispatcher=pending.append)
    w = recorder()
    store.exists("/a", w)
    store.create("/a")
    assert w.events == []
    for fn in pending:
        fn()
    assert w.types == ["NodeCreated"]


def test_watch_firings_are_in_the_event_log(store, recorder):
    s = store.open_session(6000)
    store.create("/a")
    store.get("/a", recorder(), session=s)
    store.set("/a", b"x")
    fired = [e for e in store.event_log() if e["event"] == "watch"]
    assert fired == [{"zxid": store.last_zxid, "time_ms": store.time.milliseconds(), "event": "watch", "path": "/a",
                      "session": s.hex_id, "version": None, "detail": "NodeDataChanged"}]
