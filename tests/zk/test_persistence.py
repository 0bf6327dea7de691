"""The data directory: persistent znodes survive a restart, ephemeral ones do not; the file is readable."""
import json
import os

import pytest

from kafkalab.zk import ZkStore
from kafkalab.zk import persistence


def _restart(path, time):
    return ZkStore(str(path), time=time)


def test_round_trip_keeps_persistent_znodes_and_their_stats(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    s = store.open_session(6000)
    store.create("/brokers/topics/orders", b'{"version":3}', make_parents=True)
    store.set("/brokers/topics/orders", b'{"version":3,"partitions":{}}')
    store.create("/brokers/ids/0", b"broker", ephemeral=True, session=s, make_parents=True)
    store.create("/blob", bytes(range(256)))
    store.create("/empty")
    before = {d["path"]: d for d in store.dump()}
    last = store.last_zxid

    again = _restart(tmp_path, time)
    after = {d["path"]: d for d in again.dump()}
    assert "/brokers/ids/0" not in after and again.get_children("/brokers/ids") == []
    for path in ("/brokers/topics/orders", "/blob", "/empty", "/brokers"):
        expected = dict(before[path])
        assert after[path] == expected, path
    assert again.get("/blob")[0] == bytes(range(256))
    assert again.get("/empty")[0] is None
    assert again.last_zxid == last, "zxids continue where they stopped"
    again.create("/next")
    assert again.get("/next")[1].czxid == last + 1


def test_sequential_counter_survives_a_restart(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/isr_change_notification")
    store.create("/isr_change_notification/isr_change_", sequential=True)
    store.delete(store.create("/isr_change_notification/isr_change_", sequential=True))
    again = _restart(tmp_path, time)
    assert again.create("/isr_change_notification/isr_change_", sequential=True).endswith("0000000002")


def test_every_acknowledged_write_is_on_disk(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    for i in range(5):
        store.create(f"/n{i}", str(i).encode())
        # no shutdown, no flush call: a new store reading the directory sees the write that just returned
        assert _restart(tmp_path, time).get(f"/n{i}")[0] == str(i).encode()


def test_snapshot_format_is_documented_json(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/cluster/id", b'{"version":"1","id":"abc"}', make_parents=True)
    store.create("/bin", b"\xff\x00")
    with open(tmp_path / persistence.SNAPSHOT_FILE, encoding="utf-8") as f:
        text = f.read()
    doc = json.loads(text)
    assert doc["format"] == "kafkalab-zk-snapshot" and doc["format_version"] == 1
    assert doc["last_zxid"] == store.last_zxid
    nodes = {n["path"]: n for n in doc["nodes"]}
    assert list(nodes)[0] == "/" and "/zookeeper" not in nodes
    assert nodes["/cluster/id"]["data"] == '{"version":"1","id":"abc"}'
    assert nodes["/bin"]["data_base64"] == "/wA="
    assert set(nodes["/cluster"]) == {"path", "data", "czxid", "mzxid", "pzxid", "ctime", "mtime", "version",
                                      "cversion"}
    assert text.count("\n") >= len(doc["nodes"]), "one znode per line"


def test_a_crashed_half_write_is_ignored(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/kept")
    (tmp_path / (persistence.SNAPSHOT_FILE + ".tmp")).write_text('{"format": "kafkalab-zk-snap')
    again = _restart(tmp_path, time)
    assert again.exists("/kept") is not None
    assert not os.path.exists(tmp_path / (persistence.SNAPSHOT_FILE + ".tmp"))


def test_a_failed_snapshot_write_fails_the_request_and_changes_nothing(tmp_path, time, monkeypatch):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/a", b"1")
    before, zxid = store.dump(), store.last_zxid

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(persistence, "write_snapshot_lines", disk_full)
    with pytest.raises(OSError):
        store.set("/a", b"2")
    with pytest.raises(OSError):
        store.create("/b")
    assert store.dump() == before and store.last_zxid == zxid
    monkeypatch.undo()
    store.set("/a", b"3")      # the failed write's zxid and version again, with other data: no stale line
    assert _restart(tmp_path, time).get("/a")[0] == b"3"


def test_in_memory_store_writes_nothing(tmp_path, time, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ZkStore(time=time).create("/a")
    assert os.listdir(tmp_path) == []


def test_a_snapshot_from_cached_lines_equals_one_written_from_scratch(tmp_path, time):
    """The store re-encodes only the znodes a write changed; the file must be exactly what encoding every znode
    again would give, after creates, updates, child changes, deletes and a re-create under the same path."""
    store = ZkStore(str(tmp_path), time=time)
    store.create("/a", b"1")
    store.create("/a/b", b"2")
    store.set("/a", b"one")                     # data: mzxid and version move
    store.create("/a/seq-", b"", sequential=True)   # children: pzxid and cversion of /a move
    store.delete("/a/b")
    store.create("/a/b", b"again")               # same path, new czxid
    store.create("/c", bytes(range(256)))        # not UTF-8: base64
    snapshot = tmp_path / persistence.SNAPSHOT_FILE
    incremental = snapshot.read_text(encoding="utf-8")
    store._snapshot_lines.clear()
    store._persist()                             # the same tree, every znode encoded again
    assert snapshot.read_text(encoding="utf-8") == incremental
    assert {d["path"] for d in _restart(tmp_path, time).dump()} >= {"/a", "/a/b", "/c"}
