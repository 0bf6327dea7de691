"""The store's data directory: each commit appended to the transaction log, the tree snapshotted now and then.

Theory of operation
-------------------
:class:`FileTxnSnapLog` is owned by the :class:`~kafkalab.zk.store.ZkStore` (when it has a data directory) and
handed its znode table, which it reads when writing and fills when loading. The store calls :meth:`commit` with
each transaction's zxid and the paths it touched (the paths its watch triggers name: the znodes created,
changed or deleted, and the parents whose children changed), under the store's lock and before the write is
acknowledged; an ``OSError`` from it fails the write, which the store then rolls back.

A commit writes one log record (:mod:`kafkalab.zk.persistence`) holding what the touched persistent znodes are
now and which of them are gone: its cost is the size of the change. Creating 10,000 ACLs in one ``multi`` is
one record; rewriting the whole tree on every commit, as the store once did, made every write cost the size of
the tree, and so creating ACLs one request at a time quadratic.

**Compaction.** Once the log has grown to the size of the last snapshot (and to ``snapshot_min_log_bytes``),
the next commit writes a new snapshot instead of a record (the snapshot holds that transaction too) and empties
the log. Every snapshot is thus paid for by at least as many bytes of log: the bytes written stay within a small
multiple of the bytes changed, and loading replays at most about one snapshot's worth of log. When an append
fails half-way and the file cannot be cut back, or the log cannot be emptied after a snapshot, the next commit
is a snapshot again (so nothing is ever appended after a damaged or stale tail).

Each znode's encoded line is kept with the stat it was encoded at, and re-encoded only when the stat moves
(data and version move ``mzxid``, children ``pzxid``/``cversion``): a snapshot costs one join, not one
``json.dumps`` per znode. The kept lines are also the record of *what is on disk*: a touched path with a kept
line and no persistent znode any more goes into the record's ``deleted``.

Mirrors ZooKeeper's ``FileTxnSnapLog`` (``save``, ``restore``/``fastForwardFromEdits``) and the
``SyncRequestProcessor``'s rule of taking a snapshot after a number of logged transactions (``snapCount``;
here: bytes of log, against the snapshot's size).
"""
from __future__ import annotations

import logging
import os
from typing import Iterable, Optional

from kafkalab.zk import persistence
from kafkalab.zk.znode import SYSTEM_PATHS, ZNode, parent_path

__all__ = ["FileTxnSnapLog", "SNAPSHOT_MIN_LOG_BYTES"]

log = logging.getLogger(__name__)

#: the log is not compacted before it holds this many bytes, however small the snapshot
SNAPSHOT_MIN_LOG_BYTES = 1 << 20


def _depth(path: str) -> tuple:
    return (path.count("/") if path != "/" else 0, path)


class FileTxnSnapLog:
    """The snapshot and the transaction log of one store: ``nodes`` is the store's own table (path -> ZNode)."""

    def __init__(self, data_dir: str, nodes: dict[str, ZNode], *, fsync: bool = True,
                 snapshot_min_log_bytes: int = SNAPSHOT_MIN_LOG_BYTES):
        self.data_dir = data_dir
        self._nodes = nodes
        self._fsync = fsync
        self.snapshot_min_log_bytes = snapshot_min_log_bytes
        self._lines: dict[str, tuple] = {}   # path -> (stat it was encoded at, its line): what is on disk
        self._snapshot_bytes = 0
        self._log_bytes = 0
        self._snapshot_next = False
        #: what went to disk since this store was made: {"log_records", "snapshots", "bytes_written"}
        self.stats = {"log_records": 0, "snapshots": 0, "bytes_written": 0}

    # -- writing -------------------------------------------------------------------------------------------
    def commit(self, zxid: int, touched: Iterable[str]) -> None:
        """Make transaction ``zxid`` durable (its touched paths as they now are); OSError if it could not be."""
        if self._snapshot_next or self._log_bytes >= max(self._snapshot_bytes, self.snapshot_min_log_bytes):
            self.snapshot(zxid)
            return
        lines, encoded, deleted = [], {}, []
        for path in sorted(set(touched), key=_depth):
            node = self._nodes.get(path)
            if node is not None and self._persistent(path, node):
                encoded[path] = self._encode(path, node)
                lines.append(encoded[path][1])
            elif path in self._lines:
                deleted.append(path)
        record = persistence.encode_log_record(zxid, lines, deleted)
        try:
            self._log_bytes = persistence.append_log_record(self.data_dir, record, fsync=self._fsync)
        except BaseException:
            self._snapshot_next = True     # the tail may be damaged: never append after it
            raise
        # only once the record is on disk: a failed write is undone and its zxid used again by the next write,
        # so a stat seen here may come back with other data
        self._lines.update(encoded)
        for path in deleted:
            del self._lines[path]
        self.stats["log_records"] += 1
        self.stats["bytes_written"] += len(record)

    def snapshot(self, zxid: int) -> None:
        """Write the whole tree as of ``zxid`` (atomically), then empty the log."""
        lines, encoded = [], {}
        for path in sorted(self._nodes, key=_depth):
            node = self._nodes[path]
            if self._persistent(path, node):
                encoded[path] = self._encode(path, node)
                lines.append(encoded[path][1])
        size = persistence.write_snapshot_lines(self.data_dir, zxid, lines, fsync=self._fsync)
        self._lines = encoded              # znodes deleted since drop out here
        self._snapshot_bytes = size
        self.stats["snapshots"] += 1
        self.stats["bytes_written"] += size
        try:
            persistence.truncate_log(self.data_dir, 0, fsync=self._fsync)
            self._log_bytes, self._snapshot_next = 0, False
        except OSError:   # the snapshot holds everything; the log's records are all older than it
            log.warning("could not empty %s after a snapshot; snapshotting again at the next write",
                        persistence.TXN_LOG_FILE, exc_info=True)
            self._snapshot_next = True

    @staticmethod
    def _persistent(path: str, node: ZNode) -> bool:
        return not node.ephemeral_owner and path not in SYSTEM_PATHS

    def _encode(self, path: str, node: ZNode) -> tuple:
        stat = (node.czxid, node.mzxid, node.pzxid, node.version, node.cversion)
        cached = self._lines.get(path)
        if cached is None or cached[0] != stat:
            cached = (stat, persistence.encode_node(
                {"path": path, **persistence.encode_data(node.data), "czxid": node.czxid, "mzxid": node.mzxid,
                 "pzxid": node.pzxid, "ctime": node.ctime, "mtime": node.mtime, "version": node.version,
                 "cversion": node.cversion}))
        return cached

    # -- loading -------------------------------------------------------------------------------------------
    def load(self) -> int:
        """Fill the store's table from the snapshot and the log; returns the last zxid (0 for a new store)."""
        last_zxid = 0
        loaded = persistence.read_snapshot(self.data_dir)
        if loaded is not None:
            last_zxid, records = loaded
            for record in records:
                self._apply(record)
            self._snapshot_bytes = os.path.getsize(os.path.join(self.data_dir, persistence.SNAPSHOT_FILE))
        records, good, size = persistence.read_log(self.data_dir)
        if good < size:
            log.warning("%s: ignoring a torn tail of %d bytes (a write that never completed)",
                        os.path.join(self.data_dir, persistence.TXN_LOG_FILE), size - good)
            persistence.truncate_log(self.data_dir, good, fsync=self._fsync)
        for txn in records:
            if txn["zxid"] <= last_zxid:   # already in the snapshot (a crash before the log was emptied)
                continue
            for path in sorted(txn["deleted"], key=_depth, reverse=True):
                self._remove(path)
            for record in txn["nodes"]:
                self._apply(record)
            last_zxid = txn["zxid"]
        self._log_bytes = good
        self._lines = {path: self._encode(path, node) for path, node in self._nodes.items()
                       if self._persistent(path, node)}
        return last_zxid

    def _apply(self, record: dict) -> None:
        path = record["path"]
        node = self._nodes.get(path) or ZNode(None, 0, 0)
        node.data = persistence.decode_data(record)
        node.czxid, node.mzxid, node.pzxid = record["czxid"], record["mzxid"], record["pzxid"]
        node.ctime, node.mtime = record["ctime"], record["mtime"]
        node.version, node.cversion = record["version"], record["cversion"]
        if path != "/":
            parent: Optional[ZNode] = self._nodes.get(parent_path(path))
            if parent is None:
                raise ValueError(f"{self.data_dir}: znode {path} comes before its parent")
            parent.children.add(path.rsplit("/", 1)[1])
        self._nodes[path] = node

    def _remove(self, path: str) -> None:
        if self._nodes.pop(path, None) is not None and path != "/":
            parent = self._nodes.get(parent_path(path))
            if parent is not None:
                parent.children.discard(path.rsplit("/", 1)[1])
