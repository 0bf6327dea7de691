"""ZooKeeper's result codes and the exceptions the coordination store raises.

Theory of operation
-------------------
Every ZooKeeper request answers with a result code. ``0`` (OK) is success; the rest name what went wrong,
and Kafka's ZooKeeper client switches on exactly these codes: ``NODEEXISTS`` when a second broker tries to
create ``/controller`` ("somebody else won the election"), ``BADVERSION`` when a conditional write lost a race
("somebody changed the znode since you read it"), ``NONODE`` when a znode is gone, ``SESSIONEXPIRED`` when the
ensemble has given up on a client. The store raises one exception class per code, all subclasses of
:class:`KeeperException`, carrying ``code`` and ``path`` -- the same shape as ZooKeeper's Java
``KeeperException.NoNodeException`` and friends, so Kafka's logic reads the same here.

A failed ``multi`` raises the exception of the first failing operation; its ``results`` list holds one code per
operation (``OK`` for the ones before it, the error, then ``RUNTIMEINCONSISTENCY`` for the rest), as ZooKeeper's
``ErrorResult`` list does.

Mirrors: ``zookeeper-server/src/main/java/org/apache/zookeeper/KeeperException.java`` (ZooKeeper 3.x).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Optional

__all__ = [
    "Code", "KeeperException", "SystemErrorException", "RuntimeInconsistencyException",
    "ConnectionLossException", "BadArgumentsException", "NoNodeException", "BadVersionException",
    "NoChildrenForEphemeralsException", "NodeExistsException", "NotEmptyException", "SessionExpiredException",
]


class Code(IntEnum):
    """ZooKeeper's ``KeeperException.Code`` values (the numbers on the wire)."""
    OK = 0
    SYSTEMERROR = -1
    RUNTIMEINCONSISTENCY = -2
    DATAINCONSISTENCY = -3
    CONNECTIONLOSS = -4
    MARSHALLINGERROR = -5
    UNIMPLEMENTED = -6
    OPERATIONTIMEOUT = -7
    BADARGUMENTS = -8
    UNKNOWNSESSION = -12
    APIERROR = -100
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112
    INVALIDCALLBACK = -113
    INVALIDACL = -114
    AUTHFAILED = -115
    SESSIONMOVED = -118


# ZooKeeper's own spelling of each code in messages ("KeeperErrorCode = NoNode for /a")
_NAMES = {
    Code.SYSTEMERROR: "SystemError", Code.RUNTIMEINCONSISTENCY: "RuntimeInconsistency",
    Code.CONNECTIONLOSS: "ConnectionLoss", Code.BADARGUMENTS: "BadArguments", Code.NONODE: "NoNode",
    Code.BADVERSION: "BadVersion", Code.NOCHILDRENFOREPHEMERALS: "NoChildrenForEphemerals",
    Code.NODEEXISTS: "NodeExists", Code.NOTEMPTY: "Directory not empty", Code.SESSIONEXPIRED: "Session expired",
}


class KeeperException(Exception):
    """Base class: ``code`` (a :class:`Code`), ``path`` (may be None) and, for multi, ``results``."""

    code: Code = Code.SYSTEMERROR

    def __init__(self, path: Optional[str] = None, message: Optional[str] = None):
        self.path = path
        self.results: list[Code] = []
        self.op_index: Optional[int] = None
        text = f"KeeperErrorCode = {_NAMES.get(self.code, self.code.name)}"
        if path is not None:
            text += f" for {path}"
        if message:
            text += f" ({message})"
        super().__init__(text)


class SystemErrorException(KeeperException):
    code = Code.SYSTEMERROR


class RuntimeInconsistencyException(KeeperException):
    code = Code.RUNTIMEINCONSISTENCY


class ConnectionLossException(KeeperException):
    """The request did not reach the ensemble (here: the session is isolated by fault injection)."""
    code = Code.CONNECTIONLOSS


class BadArgumentsException(KeeperException, ValueError):
    """Invalid path or data (ZooKeeper rejects e.g. ``/a//b``, ``/a/``, ``/a/.``, data over 1 MiB)."""
    code = Code.BADARGUMENTS


class NoNodeException(KeeperException):
    code = Code.NONODE


class BadVersionException(KeeperException):
    code = Code.BADVERSION


class NoChildrenForEphemeralsException(KeeperException):
    code = Code.NOCHILDRENFOREPHEMERALS


class NodeExistsException(KeeperException):
    code = Code.NODEEXISTS


class NotEmptyException(KeeperException):
    code = Code.NOTEMPTY


class SessionExpiredException(KeeperException):
    code = Code.SESSIONEXPIRED
