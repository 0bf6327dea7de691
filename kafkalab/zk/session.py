"""Sessions: how ZooKeeper knows a client is alive, and what happens when it stops hearing from it.

Theory of operation
-------------------
A client opens a session with a timeout (Kafka: ``zookeeper.session.timeout.ms``, default 18 s; the server
clamps it to [2, 20] x ``tickTime``) and then pings at least every third of it. The session -- not the TCP
connection -- owns the client's ephemeral znodes and watches: a client may lose its connection and reconnect
(to the same session) without losing anything, as long as it is back within the timeout. When the server has
not heard from a session for the whole timeout it **expires** it: its ephemeral znodes are deleted (firing
watches on other clients), its watches are dropped. The client itself learns of the expiry only when it talks
to the server again -- until then it may believe it is still a registered broker, or the controller.

:class:`Session` is the handle a client holds. The store does the bookkeeping (see
:meth:`kafkalab.zk.store.ZkStore.open_session`, ``expire_sessions``, ``isolate``, ``heal``).

Mirrors: ZooKeeper's ``server/SessionTrackerImpl.java`` and the client's ``ClientCnxn`` ping loop.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Optional

from kafkalab.zk.watches import Dispatcher, WatchedEvent, Watcher

if TYPE_CHECKING:
    from kafkalab.zk.store import ZkStore

__all__ = ["SessionState", "Session"]


class SessionState(Enum):
    """The store's view of a session. ISOLATED: alive on the server, but nothing gets through (fault
    injection); it keeps its ephemeral znodes until it times out."""
    CONNECTED = "CONNECTED"
    ISOLATED = "ISOLATED"
    EXPIRED = "EXPIRED"
    CLOSED = "CLOSED"


class Session:
    """A client's session: an id, a negotiated timeout, ephemeral znodes, watches and state listeners.

    ``auto_heartbeat=True`` models a ZooKeeper client's background ping thread: the session is heard from every
    :attr:`ping_interval_ms` as long as it is not isolated (the store works the last ping out when it needs it).
    Otherwise call :meth:`heartbeat` yourself."""

    def __init__(self, store: "ZkStore", session_id: int, timeout_ms: int, now_ms: int, auto_heartbeat: bool,
                 dispatcher: Optional[Dispatcher]):
        self.store = store
        self.session_id = session_id
        self.timeout_ms = timeout_ms
        self.last_heard_ms = now_ms
        self._auto_heartbeat = auto_heartbeat
        self.dispatcher = dispatcher
        self.state = SessionState.CONNECTED
        self._listeners: list[Watcher] = []
        self._held: list[tuple[Watcher, WatchedEvent]] = []  # watch events held while isolated
        self._expiry_unseen = False  # expired while isolated: the client hears of it on heal

    @property
    def hex_id(self) -> str:
        return f"0x{self.session_id:x}"

    @property
    def auto_heartbeat(self) -> bool:
        return self._auto_heartbeat

    @auto_heartbeat.setter
    def auto_heartbeat(self, on: bool) -> None:
        """Turning the ping thread off (a killed process) leaves the session as last pinged: from then on it
        counts down to its expiry bucket."""
        if bool(on) != self._auto_heartbeat:
            self.store._set_auto_heartbeat(self, bool(on))

    @property
    def ping_interval_ms(self) -> int:
        """How often an idle ZooKeeper client pings (``ClientCnxn``): when nothing was sent for half its read
        timeout (2/3 of the session timeout) less a second, and at least every 10 s."""
        third = self.timeout_ms // 3
        return max(1, third if third <= 1000 else min(10_000, max(third - 1000, 1000)))

    @property
    def alive(self) -> bool:
        return self.state in (SessionState.CONNECTED, SessionState.ISOLATED)

    def heartbeat(self) -> bool:
        """What a connected client's ping does. False if it did not reach the store (isolated or ended)."""
        return self.store.heartbeat(self)

    def close(self) -> None:
        self.store.close_session(self)

    def add_state_listener(self, watcher: Watcher) -> None:
        """Hear session events: Disconnected, SyncConnected, Expired, Closed (type NONE, path None)."""
        self._listeners.append(watcher)

    def remove_state_listener(self, watcher: Watcher) -> None:
        self._listeners.remove(watcher)

    def __repr__(self) -> str:
        return f"Session({self.hex_id}, timeout={self.timeout_ms}ms, {self.state.value})"

