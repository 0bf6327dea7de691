"""The znode tree: versions, stats, errors, sequential names, multi."""
import pytest

from kafkalab.zk import (BadArgumentsException, BadVersionException, CheckOp, Code, CreateOp, DeleteOp,
                         NoChildrenForEphemeralsException, NodeExistsException, NoNodeException, NotEmptyException,
                         SetDataOp)
from kafkalab.zk.znode import MAX_DATA_LENGTH


def test_create_get_and_the_stat(store, time):
    zxid0 = store.last_zxid
    assert store.create("/a", b"one") == "/a"
    data, stat = store.get("/a")
    assert data == b"one"
    assert (stat.version, stat.cversion, stat.ephemeral_owner, stat.num_children) == (0, 0, 0, 0)
    assert stat.czxid == stat.mzxid == stat.pzxid == zxid0 + 1
    assert stat.ctime == stat.mtime == time.milliseconds()
    assert stat.data_length == 3


def test_set_bumps_version_and_mzxid_and_bad_version_is_refused(store, time):
    store.create("/a", b"v0")
    created = store.get("/a")[1]
    time.advance(5)
    stat = store.set("/a", b"v1", version=0)
    assert stat.version == 1 and stat.czxid == created.czxid and stat.mzxid > created.mzxid
    assert stat.mtime == created.ctime + 5 and stat.ctime == created.ctime
    with pytest.raises(BadVersionException) as e:
        store.set("/a", b"stale", version=0)
    assert e.value.code == Code.BADVERSION and e.value.path == "/a"
    assert store.get("/a")[0] == b"v1"
    assert store.set("/a", b"any", version=-1).version == 2  # -1 matches any version


def test_delete_with_version_and_not_empty(store):
    store.create("/a")
    store.create("/a/b")
    with pytest.raises(NotEmptyException):
        store.delete("/a")
    with pytest.raises(BadVersionException):
        store.delete("/a/b", version=3)
    store.delete("/a/b", version=0)
    store.delete("/a")
    assert store.exists("/a") is None
    with pytest.raises(NoNodeException):
        store.delete("/a")


def test_create_errors(store):
    with pytest.raises(NoNodeException):
        store.create("/missing/child")
    store.create("/a")
    with pytest.raises(NodeExistsException) as e:
        store.create("/a", b"again")
    assert e.value.code == Code.NODEEXISTS
    session = store.open_session(6000)
    store.create("/e", ephemeral=True, session=session)
    with pytest.raises(NoChildrenForEphemeralsException):
        store.create("/e/child")
    with pytest.raises(BadArgumentsException):
        store.create("/needs-session", ephemeral=True)
    with pytest.raises(BadArgumentsException):
        store.create("/big", b"x" * (MAX_DATA_LENGTH + 1))
    with pytest.raises(TypeError):
        store.create("/text", "not bytes")


@pytest.mark.parametrize("path", ["relative", "/a/", "/a//b", "/a/./b", "/a/..", "/nul\0", ""])
def test_invalid_paths(store, path):
    with pytest.raises(BadArgumentsException):
        store.create(path)


def test_system_znodes_exist_and_are_protected(store):
    assert store.get_children("/") == ["zookeeper"]
    for path in ("/", "/zookeeper", "/zookeeper/quota"):
        with pytest.raises(BadArgumentsException):
            store.delete(path)


def test_make_parents_creates_empty_persistent_ancestors(store):
    store.create("/x/y/z", b"leaf", make_parents=True)
    assert store.get("/x")[0] is None and store.get("/x/y")[0] is None
    assert store.get_children("/x/y") == ["z"]
    assert store.get("/x/y/z")[1].czxid == store.get("/x")[1].czxid  # one transaction


def test_children_are_sorted_and_parent_tracks_cversion_and_pzxid(store):
    store.create("/p")
    for name in ("c", "a", "b"):
        store.create(f"/p/{name}")
    assert store.get_children("/p") == ["a", "b", "c"]
    stat = store.get("/p")[1]
    assert (stat.cversion, stat.num_children, stat.version) == (3, 3, 0)
    store.delete("/p/a")
    after = store.get("/p")[1]
    assert after.cversion == 3, "ZooKeeper bumps cversion on child creation only"
    assert after.pzxid == store.last_zxid and after.num_children == 2


def test_sequential_names_use_the_parent_cversion_and_are_never_reused(store):
    store.create("/isr_change_notification")
    first = store.create("/isr_change_notification/isr_change_", b"x", sequential=True)
    second = store.create("/isr_change_notification/isr_change_", sequential=True)
    assert (first, second) == ("/isr_change_notification/isr_change_0000000000",
                               "/isr_change_notification/isr_change_0000000001")
    store.delete(second)
    store.create("/isr_change_notification/other")  # any child creation advances the counter
    third = store.create("/isr_change_notification/isr_change_", sequential=True)
    assert third.endswith("isr_change_0000000003")
    assert store.create("/isr_change_notification/", sequential=True) == "/isr_change_notification/0000000004"


def test_multi_is_all_or_nothing(store):
    store.create("/controller_epoch", b"1")
    store.create("/x", b"old")
    before, zxid = store.dump(), store.last_zxid
    with pytest.raises(BadVersionException) as e:
        store.multi([CreateOp("/new", b"n"), SetDataOp("/x", b"new"), DeleteOp("/x"),
                     CheckOp("/controller_epoch", 7), CreateOp("/after")])
    assert e.value.op_index == 3
    assert e.value.results == [Code.OK, Code.OK, Code.OK, Code.BADVERSION, Code.RUNTIMEINCONSISTENCY]
    assert store.dump() == before and store.last_zxid == zxid, "nothing applied, no zxid consumed"


def test_multi_success_is_one_transaction(store):
    store.create("/controller_epoch", b"1")
    session = store.open_session(6000)
    results = store.multi([CheckOp("/controller_epoch", 0), CreateOp("/controller", b"c", ephemeral=True),
                           SetDataOp("/controller_epoch", b"2", 0), CreateOp("/seq-", sequential=True)],
                          session=session)
    assert results[0] is None and results[1] == "/controller" and results[2].version == 1
    # root's cversion: /controller_epoch and /controller were created before (/zookeeper is built in, uncounted)
    assert results[3] == "/seq-0000000002"
    zxids = {store.get(p)[1].mzxid for p in ("/controller", "/controller_epoch", results[3])}
    assert zxids == {store.last_zxid}
    assert store.get("/controller")[1].ephemeral_owner == session.session_id


def test_multi_can_delete_and_recreate_within_one_transaction(store):
    store.create("/a", b"1")
    store.multi([DeleteOp("/a", 0), CreateOp("/a", b"2")])
    data, stat = store.get("/a")
    assert data == b"2" and stat.version == 0

