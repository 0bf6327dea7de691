"""Sessions: heartbeats, expiry, close, ephemeral znodes, isolation (the zombie), scheduler-driven checks."""
import pytest

from kafkalab.zk import (ConnectionLossException, EventType, KeeperState, SessionExpiredException, SessionState,
                         ZkStore)

from .conftest import EXPIRY_MS, TICK_MS, TIMEOUT_MS


def test_session_ids_look_like_zookeeper_ids(store):
    a, b = store.open_session(TIMEOUT_MS), store.open_session(TIMEOUT_MS)
    assert a.session_id >> 56 == 1, "server id in the top byte"
    assert b.session_id == a.session_id + 1 and 0 < a.session_id < 1 << 64
    assert a.hex_id == f"0x{a.session_id:x}"


def test_timeout_is_negotiated_into_zookeepers_window(store):
    assert store.open_session(1000).timeout_ms == 4000      # 2 x tickTime
    assert store.open_session(90_000).timeout_ms == 40_000  # 20 x tickTime
    assert store.open_session(18_000).timeout_ms == 18_000  # Kafka's zookeeper.session.timeout.ms default


def test_heartbeats_keep_a_session_and_its_ephemerals_alive(store, time):
    s = store.open_session(TIMEOUT_MS)
    store.create("/brokers", make_parents=False)
    store.create("/brokers/0", b"me", ephemeral=True, session=s)
    for _ in range(5):
        time.advance(TIMEOUT_MS - 1000)
        assert s.heartbeat()
        assert store.expire_sessions() == []
    assert store.exists("/brokers/0") is not None and s.state is SessionState.CONNECTED


def test_ephemeral_znodes_vanish_when_the_session_expires_and_watches_fire(store, time, recorder):
    s = store.open_session(TIMEOUT_MS)
    store.create("/brokers")
    store.create("/brokers/0", b"me", ephemeral=True, session=s)
    data_watch, child_watch, own = recorder(), recorder(), recorder()
    store.exists("/brokers/0", data_watch)
    store.get_children("/brokers", child_watch)
    store.get("/brokers", own, session=s)  # the expiring session's own watch dies with it
    s.add_state_listener(own)
    time.advance(EXPIRY_MS - 1)   # the timeout has passed, but the session's expiry bucket has not come
    assert store.expire_sessions() == []
    time.advance(1)
    assert store.expire_sessions() == [s.session_id]
    assert store.exists("/brokers/0") is None
    assert data_watch.types == ["NodeDeleted"] and child_watch.types == ["NodeChildrenChanged"]
    assert own.types == ["Expired"] and own.events[0].type is EventType.NONE
    assert s.state is SessionState.EXPIRED and not s.heartbeat()
    with pytest.raises(SessionExpiredException):
        store.create("/brokers/0", ephemeral=True, session=s)
    entry = [e for e in store.event_log() if e["event"] == "expire_session"][0]
    assert entry["session"] == s.hex_id and entry["time_ms"] == time.milliseconds()


def test_close_deletes_ephemerals_at_once(store, recorder):
    s = store.open_session(TIMEOUT_MS)
    store.create("/controller", b"0", ephemeral=True, session=s)
    w, states = recorder(), recorder()
    store.exists("/controller", w)
    s.add_state_listener(states)
    s.close()
    assert store.exists("/controller") is None and w.types == ["NodeDeleted"] and states.types == ["Closed"]
    assert s.state is SessionState.CLOSED and store.sessions() == []


def test_every_request_counts_as_a_heartbeat(store, time):
    s = store.open_session(TIMEOUT_MS)
    time.advance(TIMEOUT_MS - 1)
    store.exists("/", session=s)
    time.advance(TIMEOUT_MS - 1)
    assert store.expire_sessions() == []


def test_isolated_session_expires_while_still_heartbeating_and_learns_it_on_heal(store, time, recorder):
    zombie, other = store.open_session(TIMEOUT_MS), store.open_session(TIMEOUT_MS)
    store.create("/brokers")
    store.create("/brokers/0", b"zombie", ephemeral=True, session=zombie)
    states, watch = recorder(), recorder()
    zombie.add_state_listener(states)
    store.get_children("/brokers", watch, session=zombie)
    store.isolate(zombie)
    assert states.types == ["Disconnected"]
    assert zombie.state is SessionState.ISOLATED
    for _ in range(4):  # the broker keeps running and pinging; nothing arrives
        time.advance(2000)
        assert zombie.heartbeat() is False
        other.heartbeat()
        store.expire_sessions()
    assert zombie.state is SessionState.EXPIRED and other.state is SessionState.CONNECTED
    assert store.exists("/brokers/0") is None
    assert watch.events == [] and states.types == ["Disconnected"], "the zombie has heard nothing yet"
    with pytest.raises(SessionExpiredException):
        store.get("/brokers", session=zombie)
    store.heal(zombie)
    assert states.types == ["Disconnected", "Expired"] and watch.events == []


def test_requests_from_an_isolated_session_are_lost(store):
    s = store.open_session(TIMEOUT_MS)
    store.isolate(s)
    with pytest.raises(ConnectionLossException):
        store.create("/x", session=s)
    with pytest.raises(ConnectionLossException):
        store.get_children("/", session=s)
    assert store.exists("/x") is None


def test_short_isolation_reconnects_and_delivers_held_events(store, time, recorder):
    s = store.open_session(TIMEOUT_MS)
    store.create("/brokers")
    store.create("/brokers/0", ephemeral=True, session=s)
    states, watch = recorder(), recorder()
    s.add_state_listener(states)
    store.get_children("/brokers", watch, session=s)
    store.isolate(s)
    store.create("/brokers/1")
    assert watch.events == []
    time.advance(TIMEOUT_MS - 1000)
    store.heal(s)
    assert states.types == ["Disconnected", "SyncConnected"] and watch.types == ["NodeChildrenChanged"]
    time.advance(TIMEOUT_MS - 1000)
    assert store.expire_sessions() == [] and store.exists("/brokers/0") is not None


def test_scheduler_driven_expiry_and_auto_heartbeat(ticking_store, time):
    store = ticking_store
    manual = store.open_session(TIMEOUT_MS)
    pinging = store.open_session(TIMEOUT_MS, auto_heartbeat=True)
    for s, name in ((manual, "m"), (pinging, "p")):
        store.create(f"/{name}", ephemeral=True, session=s)
    time.advance(60_000)  # no explicit heartbeats at all
    assert manual.state is SessionState.EXPIRED and pinging.state is SessionState.CONNECTED
    assert store.exists("/m") is None and store.exists("/p") is not None
    store.isolate(pinging)  # a pinging client cut off from the ensemble still expires
    time.advance(EXPIRY_MS)
    assert pinging.state is SessionState.EXPIRED and store.exists("/p") is None


def test_expiry_is_rounded_up_to_the_next_tick_bucket(store, time):
    """ZooKeeper's ExpiryQueue: last heard + timeout, rounded up to the next multiple of tickTime."""
    assert time.milliseconds() % TICK_MS == 0
    time.advance(500)
    a = store.open_session(TIMEOUT_MS)                 # heard at 500: due 6500 -> bucket 8000
    time.advance(1000)
    b = store.open_session(TIMEOUT_MS)                 # heard at 1500: due 7500 -> the same bucket
    start = time.milliseconds() - 1500
    assert store.expiration_ms(a) == store.expiration_ms(b) == start + 8000
    assert store.round_to_next_tick(start + 6000) == start + 8000, "a multiple goes to the next bucket"
    time.advance(start + 7999 - time.milliseconds())
    assert store.expire_sessions() == [], "both timeouts have passed, their bucket has not come"
    time.advance(1)
    assert store.expire_sessions() == [a.session_id, b.session_id]


def test_the_expirer_sleeps_until_the_earliest_bucket(ticking_store, time):
    store = ticking_store
    start = time.milliseconds()
    time.advance(300)
    s = store.open_session(TIMEOUT_MS)                 # bucket start + 8000
    assert store.next_expiration_ms() == start + 8000
    assert store._expiry_task.due_ms == start + 8000, "one task, due at the bucket, not a periodic poll"
    time.advance(7699)
    assert s.state is SessionState.CONNECTED
    assert s.heartbeat()                               # heard at 7999: moves to bucket 14000
    time.advance(1)                                    # the expirer wakes at 8000, finds nothing due
    assert s.state is SessionState.CONNECTED and store._expiry_task.due_ms == start + 14000
    time.advance(5999)
    assert s.state is SessionState.CONNECTED
    time.advance(1)
    assert s.state is SessionState.EXPIRED and store._expiry_task is None


def test_a_killed_pinging_client_expires_from_its_last_ping(ticking_store, time):
    """A ZooKeeper client pings when idle for a third of its timeout less a second (1 s for 6 s): the session
    of a process killed 1.5 s after its last request expires from its last ping, in that ping's bucket."""
    store = ticking_store
    start = time.milliseconds()
    s = store.open_session(TIMEOUT_MS, auto_heartbeat=True)
    assert s.ping_interval_ms == 1000 and store.next_expiration_ms() is None
    time.advance(20_500)
    s.auto_heartbeat = False                           # kill -9: the last ping went out at 20000
    assert s.last_heard_ms == start + 20_000 and store.next_expiration_ms() == start + 28_000
    time.advance(7_499)
    assert s.state is SessionState.CONNECTED
    time.advance(1)
    assert s.state is SessionState.EXPIRED


def test_session_events_go_through_the_session_dispatcher(store, recorder):
    queue = []
    s = store.open_session(TIMEOUT_MS, dispatcher=queue.append)  # e.g. loop.call_soon_threadsafe
    w = recorder()
    store.exists("/a", w, session=s)
    store.create("/a")
    assert w.events == [] and len(queue) == 1
    queue.pop()()
    assert w.types == ["NodeCreated"] and w.events[0].state is KeeperState.SyncConnected


def test_close_of_a_closed_or_expired_session_is_harmless(store, time):
    s = store.open_session(TIMEOUT_MS)
    time.advance(EXPIRY_MS)
    store.expire_sessions()
    s.close()
    assert s.state is SessionState.EXPIRED


def test_store_close_stops_the_expiry_task(time):
    from kafkalab.common import MockScheduler
    store = ZkStore(time=time, scheduler=MockScheduler(time))
    s = store.open_session(TIMEOUT_MS)
    store.close()
    time.advance(60_000)
    assert s.state is SessionState.CONNECTED
