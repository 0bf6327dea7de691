"""Znodes: the data model -- paths, payloads, Stat, and the operations a transaction is made of.

Theory of operation
-------------------
A znode is addressed by an absolute, slash-separated path (``/brokers/topics/orders``) and holds a small byte
payload (under 1 MiB; Kafka's are a few hundred bytes of JSON) plus a :class:`Stat`:

* ``czxid`` / ``mzxid`` / ``pzxid`` -- the zxids (global transaction ids) that created it, last set its data, and
  last created or deleted one of its children;
* ``ctime`` / ``mtime`` -- when it was created and last set (ms);
* ``version`` -- how many times its data was set (the token for conditional writes); ``cversion`` -- how many
  children were created under it (the counter behind sequential names); ``aversion`` -- ACL changes (always 0:
  we have no ACLs);
* ``ephemeral_owner`` -- the id of the session that owns it, 0 for a persistent znode;
* ``data_length``, ``num_children``.

Writes are expressed as operations (:class:`CreateOp`, :class:`SetDataOp`, :class:`DeleteOp`, :class:`CheckOp`);
``create``/``set``/``delete`` are one-op transactions and ``multi`` runs several atomically.

Mirrors: ZooKeeper's ``data/Stat``, ``server/DataNode.java``, ``Op.java``, ``common/PathUtils.java``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from kafkalab.zk.errors import BadArgumentsException

__all__ = ["MATCH_ANY_VERSION", "MAX_DATA_LENGTH", "SYSTEM_PATHS", "Stat", "ZNode", "CreateOp", "SetDataOp",
           "DeleteOp", "CheckOp", "Op", "parent_path", "as_bytes", "validate_path", "data_as_text"]

MATCH_ANY_VERSION = -1
MAX_DATA_LENGTH = 0xFFFFF  # ZooKeeper's jute.maxbuffer default: payloads must stay under 1 MiB
SYSTEM_PATHS = ("/zookeeper", "/zookeeper/quota")  # ZooKeeper's own znodes, present on every server


@dataclass(frozen=True)
class Stat:
    """A znode's metadata, field for field ZooKeeper's ``Stat`` (times in ms from the injected Time)."""
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int


class ZNode:
    __slots__ = ("data", "czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "ephemeral_owner",
                 "children")

    def __init__(self, data: Optional[bytes], zxid: int, now: int, owner: int = 0):
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.ctime = self.mtime = now
        self.version = self.cversion = 0
        self.ephemeral_owner = owner
        self.children: set[str] = set()

    def stat(self) -> Stat:
        return Stat(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
                    self.ephemeral_owner, len(self.data or b""), len(self.children), self.pzxid)



# -- multi operations ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateOp:
    path: str
    data: Optional[bytes] = None
    ephemeral: bool = False
    sequential: bool = False
    make_parents: bool = False


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: Optional[bytes]
    version: int = MATCH_ANY_VERSION


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = MATCH_ANY_VERSION


@dataclass(frozen=True)
class CheckOp:
    path: str
    version: int = MATCH_ANY_VERSION


Op = Union[CreateOp, SetDataOp, DeleteOp, CheckOp]


def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def as_bytes(data) -> Optional[bytes]:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"znode data must be bytes or None, not {type(data).__name__}")


def validate_path(path: str, sequential: bool = False) -> None:
    """ZooKeeper's PathUtils.validatePath: absolute, no empty/'.'/'..' segments, no trailing '/' (except that
    a sequential create may end in '/': the sequence number is then the whole name)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise BadArgumentsException(str(path), "path must start with /")
    if "\0" in path:
        raise BadArgumentsException(path, "null character in path")
    if path == "/":
        return
    body = path[1:-1] if (sequential and path.endswith("/")) else path[1:]
    for segment in body.split("/"):
        if segment in ("", ".", ".."):
            raise BadArgumentsException(path, f"invalid segment {segment!r}")



def data_as_text(data: Optional[bytes]) -> str:
    if not data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()

