"""Persistence: the store's snapshot file, written atomically after every change.

Theory of operation
-------------------
A real ZooKeeper server makes a write durable by appending it to a transaction log and fsyncing before it
acknowledges, and now and then writes a fuzzy snapshot of the whole tree (``dataDir/version-2/log.<zxid>``,
``snapshot.<zxid>``). Our tree is small (a lab cluster has a few hundred znodes), so we keep one file and
rewrite it whole on every committed change, before the change is acknowledged: write ``zk-snapshot.json.tmp``,
fsync it, rename it over ``zk-snapshot.json`` (atomic on POSIX and Windows), fsync the directory. A topic of
thousands of partitions would make that one snapshot per znode; the controller therefore writes such znodes in
batches of one ``multi`` each (:mod:`kafkalab.zk.fenced_writes`), so the file is rewritten once per batch. A crash
leaves either the old snapshot or the new one, never half of one, and a write that returned is on disk.

Only **persistent** znodes are written. Ephemeral znodes live and die with their session, and no session
survives a restart of the embedded store, so after a restart ``/brokers/ids/*`` and ``/controller`` are gone and
the brokers must register (and elect) again -- which is what a Kafka cluster sees when its sessions expire.

Format (UTF-8 JSON, one znode per line so ``cat`` and ``git diff`` are readable)::

    {"format": "kafkalab-zk-snapshot", "format_version": 1, "last_zxid": 42,
     "nodes": [
      {"path": "/", "data": null, "czxid": 0, "mzxid": 0, "pzxid": 40, "ctime": 0, "mtime": 0, "version": 0,
       "cversion": 9},
      {"path": "/brokers/topics/orders", "data": "{\\"version\\":3,...}", "czxid": 31, ...},
      {"path": "/blob", "data_base64": "AAEC", ...}
     ]}

``data`` is the znode's bytes as text when they are valid UTF-8, ``data_base64`` otherwise, ``null`` for a znode
created without data. Parents come before children. ``last_zxid`` lets zxids keep growing after a restart;
``cversion`` lets sequential names (``isr_change_0000000007``) continue where they stopped.

Mirrors (and replaces): ZooKeeper's ``server/persistence/FileTxnSnapLog.java``, ``FileSnap.java``,
``FileTxnLog.java``.
"""
from __future__ import annotations

import base64
import json
import os
from typing import Optional

__all__ = ["SNAPSHOT_FILE", "FORMAT", "FORMAT_VERSION", "encode_data", "decode_data", "encode_node",
           "write_snapshot", "write_snapshot_lines", "read_snapshot"]

SNAPSHOT_FILE = "zk-snapshot.json"
FORMAT = "kafkalab-zk-snapshot"
FORMAT_VERSION = 1


def encode_data(data: Optional[bytes]) -> dict:
    if data is None:
        return {"data": None}
    try:
        return {"data": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"data_base64": base64.b64encode(data).decode("ascii")}


def decode_data(record: dict) -> Optional[bytes]:
    if "data_base64" in record:
        return base64.b64decode(record["data_base64"], validate=True)
    text = record.get("data")
    return None if text is None else text.encode("utf-8")


def encode_node(record: dict) -> str:
    """One znode record as its line of the snapshot (the store keeps these per znode and re-encodes only the
    znodes a write changed, so a snapshot costs one join, not one ``json.dumps`` per znode per write)."""
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": "))


def write_snapshot(data_dir: str, last_zxid: int, nodes: list[dict], *, fsync: bool = True) -> None:
    """Atomically replace the snapshot in ``data_dir`` with ``nodes`` (dicts in the format above)."""
    write_snapshot_lines(data_dir, last_zxid, [encode_node(n) for n in nodes], fsync=fsync)


def write_snapshot_lines(data_dir: str, last_zxid: int, lines: list[str], *, fsync: bool = True) -> None:
    """:func:`write_snapshot` for znodes already encoded by :func:`encode_node`, parents before children."""
    os.makedirs(data_dir, exist_ok=True)
    final = os.path.join(data_dir, SNAPSHOT_FILE)
    tmp = final + ".tmp"
    text = ('{"format": "%s", "format_version": %d, "last_zxid": %d,\n "nodes": [\n  %s\n ]}\n'
            % (FORMAT, FORMAT_VERSION, last_zxid, ",\n  ".join(lines)))
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, final)
    if fsync and hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        fd = os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_snapshot(data_dir: str) -> Optional[tuple[int, list[dict]]]:
    """(last_zxid, node records) from ``data_dir``, or None when there is no snapshot yet.

    A leftover ``.tmp`` file is a write that crashed before its rename: it was never acknowledged, so it is
    ignored (and removed)."""
    final = os.path.join(data_dir, SNAPSHOT_FILE)
    tmp = final + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    if not os.path.exists(final):
        return None
    with open(final, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{final}: not a {FORMAT} v{FORMAT_VERSION} file")
    return int(doc["last_zxid"]), list(doc["nodes"])
