"""Persistence: the store's files -- a snapshot of the tree, and a log of the transactions since.

Theory of operation
-------------------
A real ZooKeeper server makes a write durable by appending it to a transaction log and fsyncing before it
acknowledges, and now and then writes a snapshot of the whole tree (``dataDir/version-2/log.<zxid>``,
``snapshot.<zxid>``). The store does the same with two files in its data directory:

* ``zk-txn.log`` -- one line per committed transaction, appended and fsynced before the write returns: the
  zxid, the znodes the transaction left behind (each as it now is, with its stat) and the paths it deleted.
  Cost of a commit: what it changed, never the size of the tree.
* ``zk-snapshot.json`` -- the whole tree, written atomically (``.tmp``, fsync, rename, fsync of the directory)
  when the log has grown as large as the last snapshot (and at least ``snapshot_min_log_bytes``), after which
  the log starts empty again. So a snapshot is paid for by at least as many bytes of log, and the bytes
  written stay proportional to the bytes changed (:mod:`kafkalab.zk.txn_snap_log` decides when).

Loading reads the snapshot, then replays the log's transactions with a zxid above the snapshot's (a crash
between writing a snapshot and emptying the log leaves transactions the snapshot already holds: they are
skipped). **Crash safety**: a crash while appending leaves a *torn tail* -- a last line cut short (no newline)
or failing its checksum. It was never acknowledged, so it is ignored on load and cut off the file. A damaged
line that *other lines follow* is not a torn append but corruption of acknowledged writes: loading refuses
(``ValueError``) rather than silently dropping what comes after it. A snapshot's leftover ``.tmp`` is a write
that crashed before its rename: ignored and removed.

Only **persistent** znodes are written. Ephemeral znodes live and die with their session, and no session
survives a restart of the embedded store, so after a restart ``/brokers/ids/*`` and ``/controller`` are gone and
the brokers must register (and elect) again -- which is what a Kafka cluster sees when its sessions expire.

Snapshot format (UTF-8 JSON, one znode per line so ``cat`` and ``git diff`` are readable)::

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

Log format: one transaction per line, its CRC-32 (8 hex digits) of the JSON that follows, a space, the JSON::

    1c2f9e07 {"zxid": 43, "nodes": [{"path": "/kafka-acl/Topic", ...}, {"path": "/kafka-acl/Topic/orders",
              "data": "{\\"version\\":1,...}", ...}], "deleted": []}

``nodes`` are snapshot records (parents before children), ``deleted`` the paths the transaction removed.

Mirrors (and replaces): ZooKeeper's ``server/persistence/FileTxnSnapLog.java``, ``FileSnap.java``,
``FileTxnLog.java`` (whose records also carry a checksum, and whose reader also takes an incomplete last
record for the end of the log).
"""
from __future__ import annotations

import base64
import json
import os
import zlib
from typing import Optional

__all__ = ["SNAPSHOT_FILE", "TXN_LOG_FILE", "FORMAT", "FORMAT_VERSION", "encode_data", "decode_data", "encode_node",
           "write_snapshot", "write_snapshot_lines", "read_snapshot", "encode_log_record", "append_log_record",
           "truncate_log", "read_log"]

SNAPSHOT_FILE = "zk-snapshot.json"
TXN_LOG_FILE = "zk-txn.log"
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


def write_snapshot_lines(data_dir: str, last_zxid: int, lines: list[str], *, fsync: bool = True) -> int:
    """:func:`write_snapshot` for znodes already encoded by :func:`encode_node`, parents before children.
    Returns the size of the snapshot in bytes."""
    os.makedirs(data_dir, exist_ok=True)
    final = os.path.join(data_dir, SNAPSHOT_FILE)
    tmp = final + ".tmp"
    text = ('{"format": "%s", "format_version": %d, "last_zxid": %d,\n "nodes": [\n  %s\n ]}\n'
            % (FORMAT, FORMAT_VERSION, last_zxid, ",\n  ".join(lines)))
    raw = text.encode("utf-8")
    with open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, final)
    if fsync:
        _fsync_dir(data_dir)
    return len(raw)


def _fsync_dir(data_dir: str) -> None:
    if hasattr(os, "O_DIRECTORY"):  # make a rename or a new file itself durable (POSIX)
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


# ------------------------------------------------------------------------------------------------ the log
def encode_log_record(zxid: int, node_lines: list[str], deleted: list[str]) -> bytes:
    """One transaction as its log line: ``node_lines`` from :func:`encode_node` (parents first), ``deleted``
    the paths it removed."""
    payload = ('{"zxid": %d, "nodes": [%s], "deleted": %s}'
               % (zxid, ", ".join(node_lines), json.dumps(deleted, ensure_ascii=False))).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def append_log_record(data_dir: str, record: bytes, *, fsync: bool = True) -> int:
    """Append one record to the log and make it durable; returns the log's new size. On failure the file is
    cut back to its size before the append (as far as the failure allows) and the error raised."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, TXN_LOG_FILE)
    created = not os.path.exists(path)
    with open(path, "ab") as f:
        start = f.seek(0, os.SEEK_END)
        try:
            f.write(record)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        except BaseException:
            try:
                f.truncate(start)
            except OSError:
                pass
            raise
        end = f.tell()
    if created and fsync:
        _fsync_dir(data_dir)
    return end


def truncate_log(data_dir: str, size: int = 0, *, fsync: bool = True) -> None:
    """Cut the log to ``size`` bytes (0: empty it after a snapshot; else: drop a torn tail)."""
    path = os.path.join(data_dir, TXN_LOG_FILE)
    if not os.path.exists(path):
        return
    with open(path, "r+b") as f:
        f.truncate(size)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def _parse_log_line(line: bytes) -> dict:
    crc, sep, payload = line.partition(b" ")
    if not sep or len(crc) != 8 or int(crc, 16) != zlib.crc32(payload):
        raise ValueError("checksum mismatch")
    record = json.loads(payload)
    if not (isinstance(record, dict) and isinstance(record.get("zxid"), int)
            and isinstance(record.get("nodes"), list) and isinstance(record.get("deleted"), list)):
        raise ValueError("not a transaction record")
    return record


def read_log(data_dir: str) -> tuple[list[dict], int, int]:
    """(records, length of the good part, length of the file). A torn tail -- an unfinished last line, or a
    last line that fails its checksum -- is left out of the good part; a bad line with more lines after it
    raises ValueError (corruption, not a torn append)."""
    path = os.path.join(data_dir, TXN_LOG_FILE)
    if not os.path.exists(path):
        return [], 0, 0
    with open(path, "rb") as f:
        raw = f.read()
    records: list[dict] = []
    good = 0
    while good < len(raw):
        end = raw.find(b"\n", good)
        if end < 0:
            break                         # unfinished last line: a torn append
        try:
            record = _parse_log_line(raw[good:end])
            if records and record["zxid"] <= records[-1]["zxid"]:
                raise ValueError(f"zxid {record['zxid']} after {records[-1]['zxid']}")
        except (ValueError, UnicodeDecodeError) as e:
            if raw.find(b"\n", end + 1) < 0 and not raw[end + 1:].strip(b"\0"):
                break                     # the last line: a torn append
            raise ValueError(f"{path}: transaction record {len(records) + 1} at byte {good} is damaged ({e}) "
                             f"and {len(raw) - end - 1} bytes follow it: the log is corrupt") from e
        records.append(record)
        good = end + 1
    return records, good, len(raw)
