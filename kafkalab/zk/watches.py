"""Watches: one-shot notifications that a znode (or its list of children) changed.

Theory of operation
-------------------
A ZooKeeper client never polls. It reads a znode and, in the same request, leaves a *watch*: "tell me when this
changes". The ensemble answers once -- a watch is **one-shot** -- with a :class:`WatchedEvent` naming the path
and what happened, but not the new data: the client must read again (and, usually, leave a new watch in the
same read). Kafka's controller lives on this loop: it watches ``/controller`` (to run for election when it
disappears), ``/brokers/ids`` (brokers coming and going), ``/brokers/topics`` (new topics),
``/admin/delete_topics`` and ``/isr_change_notification``.

Which reads leave which watch, and which writes fire it (ZooKeeper's ``WatchManager`` and ``DataTree``):

==================  ===========================  =================================================
read                watch kind                   fired by
==================  ===========================  =================================================
``get(p)``          data watch on p              set p (NodeDataChanged), delete p (NodeDeleted)
``exists(p)``       data watch on p              as above, and create p (NodeCreated) if p is absent
``get_children(p)`` child watch on p             create/delete a child (NodeChildrenChanged),
                                                 delete p (NodeDeleted)
==================  ===========================  =================================================

A watcher registered twice for the same path and kind is notified once, and a watcher holding both a data and
a child watch on a deleted znode hears NodeDeleted once. Watches belong to the session that set them: when
the session ends they are dropped, and the client instead hears a session event (``state=Expired``,
``type=None``). Events are delivered in zxid order through a *dispatcher*; the default calls the watcher on the
thread that made the change, after the store's lock is released. Delivery is serialized through one queue
(:class:`Outbox`), so watchers never run concurrently with each other and always see events in order, even
when a watcher itself writes to the store.

Mirrors: ``org/apache/zookeeper/{WatchedEvent,Watcher}.java`` and
``zookeeper-server/.../server/watch/WatchManager.java``; Kafka's side is ``kafka/zookeeper/ZooKeeperClient.scala``.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Optional

__all__ = ["EventType", "KeeperState", "WatchedEvent", "Watcher", "Dispatcher", "WatchManager", "Outbox",
           "call_now"]

log = logging.getLogger(__name__)


class EventType(IntEnum):
    """ZooKeeper's ``Watcher.Event.EventType`` (``NONE`` is ZooKeeper's ``None``: a session-state event)."""
    NONE = -1
    NodeCreated = 1
    NodeDeleted = 2
    NodeDataChanged = 3
    NodeChildrenChanged = 4


class KeeperState(IntEnum):
    """ZooKeeper's ``Watcher.Event.KeeperState``: what the client knows about its connection and session."""
    Disconnected = 0
    SyncConnected = 3
    Closed = 7
    Expired = -112


@dataclass(frozen=True)
class WatchedEvent:
    type: EventType
    state: KeeperState
    path: Optional[str]

    def __str__(self) -> str:  # ZooKeeper's own toString shape
        return f"WatchedEvent state:{self.state.name} type:{self.type.name} path:{self.path}"


Watcher = Callable[[WatchedEvent], None]
Dispatcher = Callable[[Callable[[], None]], None]


def call_now(fn: Callable[[], None]) -> None:
    """The default dispatcher: run the callback right away (outside the store's lock)."""
    fn()


_DATA_EVENTS = (EventType.NodeCreated, EventType.NodeDataChanged, EventType.NodeDeleted)
_CHILD_EVENTS = (EventType.NodeChildrenChanged, EventType.NodeDeleted)


class WatchManager:
    """The store's two watch tables: path -> {(session id, watcher): session}. Not thread-safe by itself;
    the store calls it under its lock."""

    def __init__(self) -> None:
        self.data: dict[str, dict[tuple[int, Watcher], object]] = {}
        self.child: dict[str, dict[tuple[int, Watcher], object]] = {}

    def add(self, kind: str, path: str, watcher: Watcher, session) -> None:
        table = self.data if kind == "data" else self.child
        table.setdefault(path, {})[(session.session_id if session else 0, watcher)] = session

    def trigger(self, path: str, event_type: EventType) -> list[tuple[Watcher, object]]:
        """Remove and return the watchers fired by ``event_type`` on ``path`` (each watcher once)."""
        fired: list[tuple[Watcher, object]] = []
        seen: set = set()
        if event_type in _DATA_EVENTS:
            for key, session in self.data.pop(path, {}).items():
                seen.add(key)
                fired.append((key[1], session))
        if event_type in _CHILD_EVENTS:
            for key, session in self.child.pop(path, {}).items():
                if key not in seen:
                    fired.append((key[1], session))
        return fired

    def remove_session(self, session_id: int) -> int:
        """Drop every watch a session left (its session ended). Returns how many were dropped."""
        dropped = 0
        for table in (self.data, self.child):
            for path in list(table):
                regs = table[path]
                for key in [k for k in regs if k[0] == session_id]:
                    del regs[key]
                    dropped += 1
                if not regs:
                    del table[path]
        return dropped

    def summary(self) -> dict[str, list[str]]:
        """{"data": [paths...], "child": [paths...]} -- what is being watched right now."""
        return {"data": sorted(self.data), "child": sorted(self.child)}


class Outbox:
    """A serial delivery queue. Producers ``put`` under the store lock (so order = zxid order); whichever
    thread calls ``flush`` first drains it, outside the lock; a re-entrant or concurrent ``flush`` returns at
    once and leaves the work to the thread already draining."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Dispatcher, Callable[[], None]]] = deque()
        self._lock = threading.Lock()
        self._draining = False

    def put(self, dispatch: Dispatcher, fn: Callable[[], None]) -> None:
        with self._lock:
            self._queue.append((dispatch, fn))

    def flush(self) -> None:
        with self._lock:
            if self._draining:
                return
            self._draining = True
        try:
            while True:
                with self._lock:
                    if not self._queue:
                        self._draining = False
                        return
                    dispatch, fn = self._queue.popleft()
                try:
                    dispatch(fn)
                except Exception:  # a failing watcher must not stop the others (ZooKeeper's EventThread logs)
                    log.exception("watcher failed")
        except BaseException:
            with self._lock:
                self._draining = False
            raise
