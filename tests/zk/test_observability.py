"""What a notebook shows: the printable tree, dump(), the event log, the change listener."""
from kafkalab.zk import KafkaZkClient, ZkStore
from kafkalab.zk.paths import BrokerInfo, EndPoint


def test_printable_tree(store):
    s = store.open_session(6000)
    store.create("/brokers/ids/0", b'{"host":"h"}', ephemeral=True, session=s, make_parents=True)
    store.create("/brokers/topics/orders", b'{"version":3}', make_parents=True)
    store.create("/controller_epoch", b"1")
    store.set("/controller_epoch", b"2")
    store.create("/bin", b"\x00\xff")
    assert store.tree() == "\n".join([
        "/  (v0)",
        "├── bin  0x00ff  (v0)",
        "├── brokers  (v0)",
        "│   ├── ids  (v0)",
        f'│   │   └── 0  {{"host":"h"}}  (v0, ephemeral {s.hex_id})',
        "│   └── topics  (v0)",
        '│       └── orders  {"version":3}  (v0)',
        "└── controller_epoch  2  (v1)",
    ])
    assert store.tree("/brokers/topics") == '/brokers/topics  (v0)\n└── orders  {"version":3}  (v0)'
    assert "zookeeper" in store.tree(show_system=True)
    store.set("/bin", b"x" * 500)
    assert max(len(line) for line in store.tree(width=40).splitlines()) < 70


def test_dump_rows(store):
    store.create("/a", b"text")
    store.create("/a/b")
    rows = store.dump()
    assert [r["path"] for r in rows] == ["/", "/a", "/a/b"]
    a = rows[1]
    assert a["data"] == "text" and a["num_children"] == 1 and a["ephemeral_owner"] == 0 and a["data_length"] == 4
    assert set(a) == {"path", "data", "version", "cversion", "czxid", "mzxid", "pzxid", "ctime", "mtime",
                      "ephemeral_owner", "num_children", "data_length"}


def test_event_log_tells_the_story(time):
    store = ZkStore(time=time)
    zk = KafkaZkClient.connect(store, 6000)
    zk.create_top_level_paths()
    mark = store.last_zxid
    zk.register_broker(BrokerInfo(0, (EndPoint("h", 9092, "PLAINTEXT", "PLAINTEXT"),)))
    time.advance(6000 + 2000)   # timeout, rounded up to the next tick bucket
    store.expire_sessions()
    story = [(e["event"], e["path"]) for e in store.event_log(since_zxid=mark)]
    assert story == [("create", "/brokers/ids/0"), ("set", "/brokers/ids/0"),
                     ("expire_session", None), ("delete_ephemeral", "/brokers/ids/0")]
    entries = store.event_log(since_zxid=mark)
    assert entries[0]["zxid"] == entries[1]["zxid"] == mark + 1, "one multi, one zxid"
    assert entries[0]["session"] == zk.session.hex_id and entries[0]["detail"] == "ephemeral"
    assert entries[2]["time_ms"] == time.milliseconds()
    import pandas as pd
    assert list(pd.DataFrame(entries).columns) == ["zxid", "time_ms", "event", "path", "session", "version", "detail"]


def test_listener_hears_every_change(store):
    heard = []
    store.add_listener(heard.append)
    s = store.open_session(6000)
    store.create("/x", ephemeral=True, session=s)
    s.close()
    store.remove_listener(heard.append)
    store.create("/y")
    assert [h["event"] for h in heard] == ["open_session", "create", "close_session", "delete_ephemeral"]


def test_sessions_and_watches_views(store):
    s = store.open_session(6000)
    store.create("/e", ephemeral=True, session=s)
    store.exists("/e", lambda e: None)
    store.get_children("/", lambda e: None)
    assert store.sessions() == [{"session": s.hex_id, "state": "CONNECTED", "timeout_ms": 6000,
                                 "last_heard_ms": store.time.milliseconds(), "ephemerals": ["/e"]}]
    assert store.watches() == {"data": ["/e"], "child": ["/"]}
