"""The data directory: persistent znodes survive a restart, ephemeral ones do not; the files are readable; a
commit appends what it changed to the transaction log (never the whole tree), snapshots compact the log, and a
torn log tail is ignored."""
import json
import os

import pytest

from kafkalab.zk import CreateOp, DeleteOp, ZkStore
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
    store.take_snapshot()
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
    monkeypatch.setattr(persistence, "append_log_record", disk_full)
    with pytest.raises(OSError):
        store.set("/a", b"2")
    with pytest.raises(OSError):
        store.create("/b")
    assert store.dump() == before and store.last_zxid == zxid
    monkeypatch.undo()
    store.set("/a", b"3")      # the failed write's zxid and version again, with other data: no stale line
    assert _restart(tmp_path, time).get("/a")[0] == b"3"


def test_a_half_written_log_record_is_cut_back_and_the_next_write_is_a_snapshot(tmp_path, time, monkeypatch):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/a", b"1")
    log_file = tmp_path / persistence.TXN_LOG_FILE
    size = log_file.stat().st_size
    real_fsync = os.fsync

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        store.set("/a", b"2")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert log_file.stat().st_size == size, "the record that failed was cut off again"
    snapshots = store.disk_stats()["snapshots"]
    store.set("/a", b"3")
    assert store.disk_stats()["snapshots"] == snapshots + 1 and log_file.stat().st_size == 0
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
    assert _tree(_restart(tmp_path, time)) == _tree(store), "replayed from the log"
    store.take_snapshot()
    incremental = snapshot.read_text(encoding="utf-8")
    store._disk._lines.clear()
    store.take_snapshot()                        # the same tree, every znode encoded again
    assert snapshot.read_text(encoding="utf-8") == incremental
    assert {d["path"] for d in _restart(tmp_path, time).dump()} >= {"/a", "/a/b", "/c"}


def _tree(store):
    return {d["path"]: d for d in store.dump()}


def test_a_commit_writes_what_it_changed_not_the_tree(tmp_path, time):
    """5,000 znodes, then 100 small writes: each appends a record of a few hundred bytes to the log. Rewriting
    the whole tree per commit (as the store once did) wrote about 100 x 900 KB here."""
    store = ZkStore(str(tmp_path), time=time)
    store.multi([CreateOp(f"/t/n{i:05d}", b"x" * 100, make_parents=True) for i in range(5000)])
    store.take_snapshot()
    before = store.disk_stats()
    for i in range(100):
        store.set(f"/t/n{i * 7:05d}", b"y" * 100)
    after = store.disk_stats()
    assert after["log_records"] - before["log_records"] == 100 and after["snapshots"] == before["snapshots"]
    assert after["bytes_written"] - before["bytes_written"] < 100 * 1000
    again = _restart(tmp_path, time)
    assert again.get("/t/n00007")[0] == b"y" * 100 and again.get("/t/n00008")[0] == b"x" * 100
    assert _tree(again) == _tree(store)


def test_the_log_is_compacted_into_a_snapshot_once_it_outgrows_it(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time, snapshot_min_log_bytes=0)
    for i in range(200):
        store.create(f"/n{i}", str(i).encode())
        if i % 3 == 0:
            store.delete(f"/n{i}")
    stats = store.disk_stats()
    # each snapshot is paid for by at least its own size in log records: bytes stay linear in the writes
    assert 1 < stats["snapshots"] < 20, stats
    assert (tmp_path / persistence.TXN_LOG_FILE).stat().st_size <= (tmp_path / persistence.SNAPSHOT_FILE).stat().st_size
    again = _restart(tmp_path, time)
    assert _tree(again) == _tree(store) and again.last_zxid == store.last_zxid


def test_replay_applies_deletes_recreates_and_sequential_counters(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/a/b/c", b"1", make_parents=True)
    store.take_snapshot()
    store.multi([DeleteOp("/a/b/c"), DeleteOp("/a/b"), CreateOp("/a/b", b"again"), CreateOp("/a/d", b"2")])
    store.create("/a/seq-", sequential=True)
    store.delete(store.create("/a/seq-", sequential=True))
    s = store.open_session(6000)
    store.create("/a/eph", ephemeral=True, session=s)
    again = _restart(tmp_path, time)
    expected = _tree(store)
    del expected["/a/eph"]                  # ephemeral: never written
    expected["/a"]["num_children"] -= 1
    assert _tree(again) == expected
    assert again.get_children("/a/b") == [] and again.get("/a/b")[0] == b"again"
    # /a had 6 children created (b twice, d, two seq-, eph): the counter goes on from there
    assert again.create("/a/seq-", sequential=True).endswith("0000000006")


def test_a_torn_log_tail_is_ignored_and_cut_off(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/kept", b"1")
    store.set("/kept", b"2")
    log_file = tmp_path / persistence.TXN_LOG_FILE
    good = log_file.read_bytes()
    record = persistence.encode_log_record(store.last_zxid + 1, [], ["/kept"])
    for torn in (record[:len(record) // 2],                 # the crash came in the middle of the append
                 b"\0" * 64,                                # a page the file system extended but never wrote
                 record[:-12] + b"garbage!!!\"\n"):          # a whole line whose checksum fails
        log_file.write_bytes(good + torn)
        again = _restart(tmp_path, time)
        assert again.get("/kept")[0] == b"2" and again.last_zxid == store.last_zxid
        assert log_file.read_bytes() == good, "the torn tail is cut off, so later records follow good ones"
    again.set("/kept", b"3")
    assert _restart(tmp_path, time).get("/kept")[0] == b"3"


def test_a_damaged_record_in_the_middle_of_the_log_refuses_to_load(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    for i in range(3):
        store.create(f"/n{i}", b"data")
    log_file = tmp_path / persistence.TXN_LOG_FILE
    raw = log_file.read_bytes()
    log_file.write_bytes(raw.replace(b"/n1", b"/m1", 1))    # bit rot in an acknowledged record, others after it
    with pytest.raises(ValueError, match="record 2 at byte .* is damaged"):
        _restart(tmp_path, time)


def test_a_crash_between_snapshot_and_emptying_the_log_replays_nothing_twice(tmp_path, time):
    store = ZkStore(str(tmp_path), time=time)
    store.create("/a", b"1")
    store.create("/a/b", b"2")
    stale_log = (tmp_path / persistence.TXN_LOG_FILE).read_bytes()
    store.delete("/a/b")
    store.take_snapshot()
    (tmp_path / persistence.TXN_LOG_FILE).write_bytes(stale_log)   # as if the log was never emptied
    again = _restart(tmp_path, time)
    assert again.exists("/a/b") is None and _tree(again) == _tree(store)
