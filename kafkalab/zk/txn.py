"""Transactions on the znode tree: every write, from one ``set`` to a ``multi``, is applied all-or-nothing.

Theory of operation
-------------------
ZooKeeper turns each write request into one transaction with the next zxid. A ``multi`` is a list of ops
(check, create, set, delete); either all of them take effect under that one zxid, or none does. The store
achieves this the simple way: :class:`TxnProcessor` applies the ops one by one straight to the tree, and for
each change it makes it remembers how to undo it. The first op that fails (``NoNode``, ``NodeExists``,
``BadVersion``, ``NotEmpty``, ...) raises, and the store rolls back every change already made, newest first --
so a reader never sees half a transaction (the store's lock is held throughout) and no zxid is consumed.

Besides its undo list, a :class:`Txn` collects what the store publishes only once it commits: the watch
triggers (NodeCreated, NodeDataChanged, NodeDeleted, NodeChildrenChanged of the parent) and the event-log
entries. The per-op rules live here too: reserved paths (``/`` and ``/zookeeper``) refuse writes, data is
limited to ``MAX_DATA_LENGTH``, an ephemeral znode needs a session and may have no children, a sequential
znode takes its parent's ``cversion`` as a ten-digit suffix, and only an empty znode can be deleted.

**Who does what.** :class:`TxnProcessor` is owned by the :class:`~kafkalab.zk.store.ZkStore` and is handed the
two tables it changes: the znodes by path and the ephemeral paths by owning session. The store keeps the lock,
the zxid counter, persistence and publishing (``ZkStore._commit``), and asks the processor to ``apply`` each
op, ``remove`` an ended session's ephemerals and ``rollback`` a failed transaction.

Mirrors ZooKeeper's ``PrepRequestProcessor`` (checking each op against the tree, a failed multi rolled back)
and ``DataTree.createNode`` / ``deleteNode`` / ``setData``.
"""
from __future__ import annotations

from typing import Callable, Optional

from kafkalab.zk.errors import (BadArgumentsException, BadVersionException, NoChildrenForEphemeralsException,
                                NodeExistsException, NoNodeException, NotEmptyException)
from kafkalab.zk.session import Session
from kafkalab.zk.watches import EventType
from kafkalab.zk.znode import (MATCH_ANY_VERSION, MAX_DATA_LENGTH, SYSTEM_PATHS, CheckOp, CreateOp, DeleteOp, Op,
                               SetDataOp, ZNode, as_bytes, parent_path, validate_path)

__all__ = ["Txn", "TxnProcessor"]


class Txn:
    """One transaction in progress: its zxid and time, how to undo it, and what to publish on commit."""
    __slots__ = ("zxid", "now", "session_id", "undo", "triggers", "entries")

    def __init__(self, zxid: int, now: int, session_id: int = 0):
        self.zxid, self.now, self.session_id = zxid, now, session_id
        self.undo: list[Callable[[], None]] = []
        self.triggers: list[tuple[str, EventType]] = []
        self.entries: list[dict] = []

    def entry(self, event: str, path: Optional[str], owner: Optional[int], version: Optional[int],
              detail: str = "") -> dict:
        """An event-log entry of this transaction (the store's ``event_log`` format)."""
        return {"zxid": self.zxid, "time_ms": self.now, "event": event, "path": path,
                "session": f"0x{owner:x}" if owner else None, "version": version, "detail": detail}


class TxnProcessor:
    """Applies ops to a znode tree with undo. ``nodes``: path -> :class:`ZNode` (the store's tree);
    ``ephemerals``: session id -> paths of its ephemeral znodes. Both are the store's own tables, changed here."""

    def __init__(self, nodes: dict[str, ZNode], ephemerals: dict[int, set[str]]):
        self._nodes = nodes
        self._ephemerals = ephemerals

    def apply(self, op: Op, txn: Txn, session: Optional[Session]):
        """Apply one op of ``txn`` (recording its undo, watch triggers and log entries); its result (created
        path, Stat or None), or a ``KeeperException`` with nothing of this op applied."""
        if isinstance(op, CreateOp):
            return self._create(op, txn, session)
        if isinstance(op, CheckOp):
            self._node_at_version(op.path, op.version)
            return None
        self._refuse_system_path(op.path)
        node = self._node_at_version(op.path, op.version)
        if isinstance(op, SetDataOp):
            data = self._checked_data(op.path, op.data)
            saved = (node.data, node.version, node.mzxid, node.mtime)
            node.data, node.version, node.mzxid, node.mtime = data, node.version + 1, txn.zxid, txn.now
            txn.undo.append(lambda: self._restore(node, saved))
            txn.triggers.append((op.path, EventType.NodeDataChanged))
            txn.entries.append(txn.entry("set", op.path, txn.session_id, node.version))
            return node.stat()
        if isinstance(op, DeleteOp):
            if node.children:
                raise NotEmptyException(op.path)
            self.remove(op.path, txn)
            return None
        raise TypeError(f"not a multi op: {op!r}")

    @staticmethod
    def _restore(node: ZNode, saved: tuple) -> None:
        node.data, node.version, node.mzxid, node.mtime = saved

    def _node_at_version(self, path: str, version: int) -> ZNode:
        validate_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeException(path)
        if version != MATCH_ANY_VERSION and node.version != version:
            raise BadVersionException(path, f"expected version {version}, znode is at {node.version}")
        return node

    @staticmethod
    def _checked_data(path: str, data) -> Optional[bytes]:
        data = as_bytes(data)
        if data is not None and len(data) > MAX_DATA_LENGTH:
            raise BadArgumentsException(path, f"{len(data)} bytes is over the {MAX_DATA_LENGTH}-byte limit")
        return data

    @staticmethod
    def _refuse_system_path(path: str) -> None:
        if path == "/" or path in SYSTEM_PATHS:
            raise BadArgumentsException(path, "reserved znode")

    def _create(self, op: CreateOp, txn: Txn, session: Optional[Session]) -> str:
        validate_path(op.path, op.sequential)
        self._refuse_system_path(op.path)
        data = self._checked_data(op.path, op.data)
        if op.ephemeral and session is None:
            raise BadArgumentsException(op.path, "an ephemeral znode needs a session")
        ppath = parent_path(op.path)
        if op.make_parents and ppath not in self._nodes:
            self._create(CreateOp(ppath, None, make_parents=True), txn, None)
        parent = self._nodes.get(ppath)
        if parent is None:
            raise NoNodeException(op.path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsException(op.path)
        path = op.path + (f"{parent.cversion:010d}" if op.sequential else "")
        if path in self._nodes:
            raise NodeExistsException(path)
        owner = session.session_id if op.ephemeral else 0
        name = path.rsplit("/", 1)[1]
        saved = (parent.cversion, parent.pzxid)
        self._nodes[path] = ZNode(data, txn.zxid, txn.now, owner)
        parent.children.add(name)
        parent.cversion, parent.pzxid = parent.cversion + 1, txn.zxid
        if owner:
            self._ephemerals[owner].add(path)

        def undo() -> None:
            del self._nodes[path]
            parent.children.discard(name)
            parent.cversion, parent.pzxid = saved
            if owner:
                self._ephemerals.get(owner, set()).discard(path)
        txn.undo.append(undo)
        txn.triggers += [(path, EventType.NodeCreated), (ppath, EventType.NodeChildrenChanged)]
        txn.entries.append(txn.entry("create", path, txn.session_id, 0, "ephemeral" if owner else ""))
        return path

    def remove(self, path: str, txn: Txn, event: str = "delete") -> None:
        """Remove the znode at ``path`` within ``txn`` (also how an ended session's ephemerals go)."""
        node = self._nodes.pop(path)
        parent = self._nodes[parent_path(path)]
        name = path.rsplit("/", 1)[1]
        saved_pzxid = parent.pzxid
        parent.children.discard(name)
        parent.pzxid = txn.zxid
        owner = node.ephemeral_owner
        if owner and owner in self._ephemerals:
            self._ephemerals[owner].discard(path)

        def undo() -> None:
            self._nodes[path] = node
            parent.children.add(name)
            parent.pzxid = saved_pzxid
            if owner and owner in self._ephemerals:
                self._ephemerals[owner].add(path)
        txn.undo.append(undo)
        txn.triggers += [(path, EventType.NodeDeleted), (parent_path(path), EventType.NodeChildrenChanged)]
        txn.entries.append(txn.entry(event, path, owner if event == "delete_ephemeral" else txn.session_id,
                                       node.version))

    @staticmethod
    def rollback(txn: Txn) -> None:
        """Undo every op of ``txn`` applied so far, newest first."""
        for undo in reversed(txn.undo):
            undo()
        txn.undo.clear()
