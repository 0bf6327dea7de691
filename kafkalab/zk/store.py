"""The coordination store: an in-process stand-in for a ZooKeeper ensemble, with ZooKeeper's semantics.

Theory of operation
-------------------
Until KRaft, every Kafka cluster leaned on ZooKeeper for the few facts that must be agreed on: which brokers
are alive, which one is the controller, which replicas a partition has and who leads it. ZooKeeper offers a
tree of **znodes** (``/brokers/ids/0``), each holding a small byte payload and a :class:`Stat`, and a handful of
guarantees that Kafka builds everything else on. This module keeps exactly those guarantees:

* **One global order of writes.** Every committed change gets the next *zxid* (transaction id). A znode
  remembers the zxid that created it (``czxid``: Kafka uses the czxid of ``/brokers/ids/<id>`` as the
  **broker epoch**) and the one that last changed it (``mzxid``).
* **Versions and conditional writes.** Each ``set`` bumps the znode's ``version``; ``set``/``delete``/
  ``CheckOp`` may demand an expected version and fail with ``BADVERSION`` otherwise (``-1`` = any). This is
  compare-and-set, and Kafka's ISR updates, controller-epoch fencing and producer-id blocks all rely on it.
* **Atomic multi.** :meth:`ZkStore.multi` applies a list of check/create/set/delete operations all-or-nothing
  under one zxid (the ops themselves, with their undo, are applied by :class:`~kafkalab.zk.txn.TxnProcessor`). Kafka wraps the controller's writes in ``multi([CheckOp("/controller_epoch", v), write])`` so
  a deposed controller's writes fail (``ControllerMovedException``).
* **Sessions and ephemeral znodes.** A client opens a session with a timeout and must be heard from
  (:meth:`Session.heartbeat`) within it. An ephemeral znode belongs to a session and disappears when the
  session is closed or **expires** -- that is how a dead broker leaves ``/brokers/ids`` and a dead controller
  frees ``/controller``. :meth:`ZkStore.isolate` cuts a session off (its heartbeats and requests no longer
  arrive): its session expires while the process keeps running, a *zombie* that only learns it has been
  replaced when it reconnects (:meth:`ZkStore.heal` delivers ``Expired`` then).
* **Sequential znodes.** ``create(..., sequential=True)`` appends the parent's child counter (its
  ``cversion``, incremented by each child creation, never by deletion) as ten digits:
  ``/isr_change_notification/isr_change_0000000003``.
* **Expiry buckets.** As ZooKeeper's ``SessionTracker`` (``ExpiryQueue``) does, a session heard from at time
  ``t`` is due at ``t + timeout`` rounded *up to the next multiple* of ``tickTime`` (always strictly later, so
  between ``timeout`` and ``timeout + tickTime`` after the last ping). With a scheduler, one expirer task
  sleeps until the earliest such bucket and expires every session in it (:meth:`ZkStore.expire_sessions`);
  without one, tests and labs call that method themselves.
* **One-shot watches** (see :mod:`kafkalab.zk.watches`), delivered after the lock is released.

Simplifications (a single server, not an ensemble): no quorum or leader election among servers, no ACLs,
no chroot, no TTL/container nodes, failed writes consume no zxid, sessions do not survive a restart.
Persistence: a transaction log and snapshots in the data directory (:mod:`kafkalab.zk.txn_snap_log`, file
formats in :mod:`kafkalab.zk.persistence`): a commit costs what it changed, not the size of the tree.

Mirrors: ZooKeeper's ``DataTree``, ``PrepRequestProcessor``, ``SessionTrackerImpl`` and ``data/Stat``;
Kafka's view of it is ``core/src/main/scala/kafka/zookeeper/ZooKeeperClient.scala``.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from functools import partial
from typing import Callable, Optional, Sequence

from kafkalab.common import Scheduler, Time
from kafkalab.common.time import SYSTEM
from kafkalab.zk.errors import (Code, ConnectionLossException,
                                KeeperException, NoNodeException, SessionExpiredException)
from kafkalab.zk.session import Session, SessionState
from kafkalab.zk.txn import Txn, TxnProcessor
from kafkalab.zk.txn_snap_log import SNAPSHOT_MIN_LOG_BYTES, FileTxnSnapLog
from kafkalab.zk.watches import (Dispatcher, EventType, KeeperState, Outbox, WatchedEvent, Watcher, WatchManager,
                                 call_now)
from kafkalab.zk.znode import (MATCH_ANY_VERSION, MAX_DATA_LENGTH, SYSTEM_PATHS, CheckOp, CreateOp, DeleteOp, Op,
                               SetDataOp, Stat, ZNode, data_as_text, parent_path, validate_path)

__all__ = ["ZkStore", "Session", "SessionState", "Stat", "CreateOp", "SetDataOp", "DeleteOp", "CheckOp", "Op",
           "MATCH_ANY_VERSION", "MAX_DATA_LENGTH"]

log = logging.getLogger(__name__)

_MASK64 = (1 << 64) - 1


class ZkStore:
    """A thread-safe, in-process ZooKeeper: see the module docstring. ``data_dir=None`` keeps it in memory."""

    def __init__(self, data_dir: Optional[str] = None, *, time: Time = SYSTEM, scheduler: Optional[Scheduler] = None,
                 tick_time_ms: int = 2000, min_session_timeout_ms: Optional[int] = None,
                 max_session_timeout_ms: Optional[int] = None, dispatcher: Dispatcher = call_now,
                 server_id: int = 1, fsync: bool = True, event_log_size: int = 10_000,
                 snapshot_min_log_bytes: int = SNAPSHOT_MIN_LOG_BYTES):
        self.data_dir = data_dir
        self.time = time
        self.tick_time_ms = tick_time_ms
        # ZooKeeper's defaults: a session timeout is clamped to [2, 20] ticks
        self.min_session_timeout_ms = 2 * tick_time_ms if min_session_timeout_ms is None else min_session_timeout_ms
        self.max_session_timeout_ms = 20 * tick_time_ms if max_session_timeout_ms is None else max_session_timeout_ms
        self._dispatcher = dispatcher
        self._lock = threading.RLock()
        self._nodes: dict[str, ZNode] = {}
        self._last_zxid = 0
        self._sessions: dict[int, Session] = {}
        self._ephemerals: dict[int, set[str]] = {}
        #: applies each write's ops to the tree with undo (:mod:`.txn`): shares the two tables above
        self._txns = TxnProcessor(self._nodes, self._ephemerals)
        self._watches = WatchManager()
        self._outbox = Outbox()
        self._log: deque[dict] = deque(maxlen=event_log_size)
        self._listeners: list[Callable[[dict], None]] = []
        # ZooKeeper's SessionTrackerImpl.initializeNextSessionId: server id in the top byte, then time
        self._next_session_id = (((time.milliseconds() << 24) & _MASK64) >> 8) | ((server_id & 0xFF) << 56)
        self._nodes["/"] = ZNode(None, 0, 0)
        for path in SYSTEM_PATHS:
            self._nodes[path] = ZNode(None, 0, 0)
            self._nodes[parent_path(path)].children.add(path.rsplit("/", 1)[1])
        #: the data directory's snapshot and transaction log (None: in memory only)
        self._disk = (FileTxnSnapLog(data_dir, self._nodes, fsync=fsync, snapshot_min_log_bytes=snapshot_min_log_bytes)
                      if data_dir is not None else None)
        if self._disk is not None:
            self._last_zxid = self._disk.load()
        self._scheduler = scheduler
        self._expiry_task = None
        self._expiry_due: Optional[int] = None     # the bucket the expirer task sleeps until
        self._closed = False

    # -- reads ---------------------------------------------------------------------------------------------
    def get(self, path: str, watch: Optional[Watcher] = None, *, session: Optional[Session] = None
            ) -> tuple[Optional[bytes], Stat]:
        """(data, stat); NoNodeException if absent (and then no watch is left, as in ZooKeeper)."""
        with self._lock:
            node = self._read(path, session)
            if node is None:
                raise NoNodeException(path)
            if watch is not None:
                self._watches.add("data", path, watch, session)
            return node.data, node.stat()

    def exists(self, path: str, watch: Optional[Watcher] = None, *, session: Optional[Session] = None
               ) -> Optional[Stat]:
        """The znode's Stat or None. A watch is left either way: it fires on create, set or delete."""
        with self._lock:
            node = self._read(path, session)
            if watch is not None:
                self._watches.add("data", path, watch, session)
            return None if node is None else node.stat()

    def get_children(self, path: str, watch: Optional[Watcher] = None, *, session: Optional[Session] = None
                     ) -> list[str]:
        """Sorted child names (ZooKeeper itself returns them unordered)."""
        with self._lock:
            node = self._read(path, session)
            if node is None:
                raise NoNodeException(path)
            if watch is not None:
                self._watches.add("child", path, watch, session)
            return sorted(node.children)

    def _read(self, path: str, session: Optional[Session]) -> Optional[ZNode]:
        validate_path(path)
        self._check_session(session)
        return self._nodes.get(path)

    # -- writes --------------------------------------------------------------------------------------------
    def create(self, path: str, data: Optional[bytes] = None, *, ephemeral: bool = False, sequential: bool = False,
               session: Optional[Session] = None, make_parents: bool = False) -> str:
        """Create a znode; returns its actual path (with the sequence suffix if ``sequential``)."""
        return self._commit([CreateOp(path, data, ephemeral, sequential, make_parents)], session)[0]

    def set(self, path: str, data: Optional[bytes], version: int = MATCH_ANY_VERSION, *,
            session: Optional[Session] = None) -> Stat:
        """Replace the data if the version matches (-1: any); returns the new Stat (version + 1)."""
        return self._commit([SetDataOp(path, data, version)], session)[0]

    def delete(self, path: str, version: int = MATCH_ANY_VERSION, *, session: Optional[Session] = None) -> None:
        self._commit([DeleteOp(path, version)], session)

    def multi(self, ops: Sequence[Op], *, session: Optional[Session] = None) -> list:
        """Apply all ops atomically under one zxid. Results per op: created path, Stat, or None. On failure
        nothing is applied and the first failing op's exception is raised (``.op_index``, ``.results``)."""
        return self._commit(list(ops), session)

    def _commit(self, ops: list, session: Optional[Session]) -> list:
        with self._lock:
            self._check_session(session)
            txn = Txn(self._last_zxid + 1, self.time.milliseconds(), session.session_id if session else 0)
            results = []
            for i, op in enumerate(ops):
                try:
                    results.append(self._txns.apply(op, txn, session))
                except KeeperException as e:
                    self._txns.rollback(txn)
                    e.op_index = i
                    e.results = [Code.OK] * i + [e.code] + [Code.RUNTIMEINCONSISTENCY] * (len(ops) - i - 1)
                    raise
                except BaseException:
                    self._txns.rollback(txn)
                    raise
            self._last_zxid = txn.zxid
            try:
                self._persist(txn)
            except BaseException:
                self._txns.rollback(txn)
                self._last_zxid = txn.zxid - 1
                raise
            self._publish(txn)
        self._outbox.flush()
        return results

    # -- sessions ------------------------------------------------------------------------------------------
    def open_session(self, timeout_ms: int = 18_000, *, auto_heartbeat: bool = False,
                     dispatcher: Optional[Dispatcher] = None) -> Session:
        """Open a session; its timeout is clamped to [min, max]_session_timeout_ms as ZooKeeper negotiates it.
        ``dispatcher`` routes this session's watch and state events (e.g. onto a broker's event loop)."""
        with self._lock:
            timeout = max(self.min_session_timeout_ms, min(self.max_session_timeout_ms, int(timeout_ms)))
            session_id = self._next_session_id
            self._next_session_id += 1
            self._last_zxid += 1  # createSession is a transaction too
            now = self.time.milliseconds()
            session = Session(self, session_id, timeout, now, auto_heartbeat, dispatcher)
            self._sessions[session_id] = session
            self._ephemerals[session_id] = set()
            self._schedule_expirer()
            self._record({"zxid": self._last_zxid, "time_ms": now, "event": "open_session", "path": None,
                          "session": session.hex_id, "version": None, "detail": f"timeout={timeout}ms"})
        self._outbox.flush()
        return session

    def close_session(self, session: Session) -> None:
        """The client says goodbye: its ephemeral znodes are deleted at once (watchers hear NodeDeleted)."""
        with self._lock:
            if session.alive:
                self._end_session(session, SessionState.CLOSED)
        self._outbox.flush()

    def expire_sessions(self) -> list[int]:
        """Expire every session whose expiry bucket has come (see :meth:`expiration_ms`); returns their ids.
        A scheduler given to the constructor calls this when the earliest bucket is due; without one, tests and
        labs call it."""
        expired = []
        with self._lock:
            now = self.time.milliseconds()
            for session in list(self._sessions.values()):
                if session.auto_heartbeat and session.state is SessionState.CONNECTED:
                    session.last_heard_ms = self._last_ping_ms(session, now)
                    continue
                if now >= self.expiration_ms(session):
                    self._end_session(session, SessionState.EXPIRED)
                    expired.append(session.session_id)
            self._schedule_expirer()
        self._outbox.flush()
        return expired

    def round_to_next_tick(self, time_ms: int) -> int:
        """ZooKeeper's ``ExpiryQueue.roundToNextInterval``: the next multiple of ``tick_time_ms`` after ``time_ms``
        (strictly after: a multiple itself goes to the next one)."""
        return (time_ms // self.tick_time_ms + 1) * self.tick_time_ms

    def expiration_ms(self, session: Session) -> Optional[int]:
        """When ``session`` expires unless heard from again: the bucket of ``last heard + timeout``. None while a
        pinging client keeps it alive (auto heartbeat, not isolated)."""
        if session.auto_heartbeat and session.state is SessionState.CONNECTED:
            return None
        return self.round_to_next_tick(session.last_heard_ms + session.timeout_ms)

    def next_expiration_ms(self) -> Optional[int]:
        """The earliest expiry bucket among the live sessions (None: nothing can expire)."""
        with self._lock:
            due = [d for d in map(self.expiration_ms, self._sessions.values()) if d is not None]
            return min(due) if due else None

    def _last_ping_ms(self, session: Session, now: int) -> int:
        """The last ping a pinging client sent by ``now``: one every ``ping_interval_ms`` since it was last
        heard (the ping thread's phase is the session's)."""
        interval = session.ping_interval_ms
        return session.last_heard_ms + max(0, now - session.last_heard_ms) // interval * interval

    def _set_auto_heartbeat(self, session: Session, on: bool) -> None:
        with self._lock:
            if session.state is SessionState.CONNECTED:
                now = self.time.milliseconds()
                # the ping thread stops (or starts) now: its last ping is the last one heard
                session.last_heard_ms = self._last_ping_ms(session, now) if session._auto_heartbeat else now
            session._auto_heartbeat = on
            self._schedule_expirer()

    def _schedule_expirer(self) -> None:
        """Keep one expirer task due at the earliest bucket (ZooKeeper's SessionTrackerImpl thread sleeps until
        ``nextExpirationTime``). A session heard from again only moves to a later bucket: the task may then
        wake to find nothing due, and goes back to sleep until the next one."""
        if self._scheduler is None or self._closed:
            return
        due = self.next_expiration_ms()
        if due == self._expiry_due and self._expiry_task is not None:
            return
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            self._expiry_task = None
        self._expiry_due = due
        if due is not None:
            self._expiry_task = self._scheduler.schedule("zk-session-expiry", self._run_expirer,
                                                         max(0, due - self.time.milliseconds()))

    def _run_expirer(self) -> None:
        with self._lock:
            self._expiry_task, self._expiry_due = None, None
            if self._closed:
                return
        self.expire_sessions()

    def expire_session(self, session: Session) -> None:
        """Fault injection: expire ``session`` now, as if its timeout had passed (a killed broker)."""
        with self._lock:
            if session.state is not SessionState.EXPIRED and session.session_id in self._sessions:
                self._end_session(session, SessionState.EXPIRED)
        self._outbox.flush()

    def isolate(self, session: Session) -> None:
        """Fault injection: partition the session away. Its pings and requests no longer arrive (requests
        raise ConnectionLossException), its watch events are held, its client hears ``Disconnected``. On the
        server the session lives on -- with its ephemeral znodes -- until it times out."""
        with self._lock:
            if session.state is not SessionState.CONNECTED:
                return
            if session.auto_heartbeat:  # its pings stop arriving: the last one that did counts
                session.last_heard_ms = self._last_ping_ms(session, self.time.milliseconds())
            session.state = SessionState.ISOLATED
            self._schedule_expirer()
            self._record(self._entry(None, "isolate", None, session.session_id, None))
            self._notify(session, KeeperState.Disconnected)
        self._outbox.flush()

    def heal(self, session: Session) -> None:
        """End the partition. A session still alive reconnects (``SyncConnected``, then the held watch
        events); one that expired meanwhile finally hears ``Expired`` -- only now does the zombie know."""
        with self._lock:
            if session.state is SessionState.ISOLATED:
                session.state = SessionState.CONNECTED
                session.last_heard_ms = self.time.milliseconds()
                self._record(self._entry(None, "heal", None, session.session_id, None))
                self._notify(session, KeeperState.SyncConnected)
                held, session._held = session._held, []
                for watcher, event in held:
                    self._outbox.put(session.dispatcher or self._dispatcher, partial(watcher, event))
            elif session._expiry_unseen:
                session._expiry_unseen = False
                self._record(self._entry(None, "heal", None, session.session_id, None, "session had expired"))
                self._notify(session, KeeperState.Expired)
        self._outbox.flush()

    def session(self, session_id: int) -> Optional[Session]:
        with self._lock:
            return self._sessions.get(session_id)

    def heartbeat(self, session: Session) -> bool:
        """A ping from ``session`` (what :meth:`Session.heartbeat` does). False if it did not arrive."""
        with self._lock:
            if session.state is SessionState.CONNECTED and session.session_id in self._sessions:
                session.last_heard_ms = self.time.milliseconds()
                return True
            return False

    def _check_session(self, session: Optional[Session]) -> None:
        if session is None:
            return
        if session.state is SessionState.ISOLATED:
            raise ConnectionLossException(None, f"session {session.hex_id} is isolated")
        if session.session_id not in self._sessions:
            raise SessionExpiredException(None, f"session {session.hex_id} is {session.state.value}")
        session.last_heard_ms = self.time.milliseconds()  # every request counts as being heard from

    def _end_session(self, session: Session, final: SessionState) -> None:
        was_isolated = session.state is SessionState.ISOLATED
        session.state = final
        del self._sessions[session.session_id]
        self._watches.remove_session(session.session_id)  # its own watches die with it
        txn = Txn(self._last_zxid + 1, self.time.milliseconds())
        event = "expire_session" if final is SessionState.EXPIRED else "close_session"
        txn.entries.append(self._entry(txn, event, None, session.session_id, None,
                                       f"after {txn.now - session.last_heard_ms}ms without heartbeat"
                                       if final is SessionState.EXPIRED else ""))
        for path in sorted(self._ephemerals.pop(session.session_id, ()), reverse=True):
            self._txns.remove(path, txn, "delete_ephemeral")
        self._last_zxid = txn.zxid
        try:
            self._persist(txn)
        except OSError:  # the session is gone regardless; the next successful write persists the tree
            log.exception("could not persist the end of session %s", session.hex_id)
        self._publish(txn)
        session._held.clear()
        if final is SessionState.EXPIRED and was_isolated:
            session._expiry_unseen = True
        else:
            self._notify(session, KeeperState.Expired if final is SessionState.EXPIRED else KeeperState.Closed)

    def _notify(self, session: Session, state: KeeperState) -> None:
        event = WatchedEvent(EventType.NONE, state, None)
        for listener in list(session._listeners):
            self._outbox.put(session.dispatcher or self._dispatcher, partial(listener, event))

    # -- publishing: event log, listeners, watches -----------------------------------------------------------
    def _entry(self, txn: Optional[Txn], event: str, path: Optional[str], owner: Optional[int],
               version: Optional[int], detail: str = "") -> dict:
        return {"zxid": txn.zxid if txn else self._last_zxid,
                "time_ms": txn.now if txn else self.time.milliseconds(), "event": event, "path": path,
                "session": f"0x{owner:x}" if owner else None, "version": version, "detail": detail}

    def _record(self, entry: dict) -> None:
        self._log.append(entry)
        for listener in self._listeners:
            self._outbox.put(self._dispatcher, partial(listener, dict(entry)))

    def _publish(self, txn: Txn) -> None:
        for entry in txn.entries:
            self._record(entry)
        for path, event_type in txn.triggers:
            for watcher, session in self._watches.trigger(path, event_type):
                event = WatchedEvent(event_type, KeeperState.SyncConnected, path)
                self._record(self._entry(txn, "watch", path, session.session_id if session else None, None,
                                         event_type.name + (" (held: session isolated)"
                                                            if session and session.state is SessionState.ISOLATED
                                                            else "")))
                if session is not None and session.state is SessionState.ISOLATED:
                    session._held.append((watcher, event))
                else:
                    dispatch = (session.dispatcher if session else None) or self._dispatcher
                    self._outbox.put(dispatch, partial(watcher, event))

    def add_listener(self, listener: Callable[[dict], None]) -> None:
        """Call ``listener(entry)`` for every event-log entry from now on (through the dispatcher)."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[dict], None]) -> None:
        with self._lock:
            self._listeners.remove(listener)

    # -- persistence ---------------------------------------------------------------------------------------
    def _persist(self, txn: Txn) -> None:
        """Make ``txn`` durable before it is acknowledged (nothing to do in memory)."""
        if self._disk is not None:
            self._disk.commit(txn.zxid, (path for path, _ in txn.triggers))

    def take_snapshot(self) -> None:
        """Write the whole tree to the data directory now and start an empty transaction log (the store does
        this by itself when the log has grown as large as the last snapshot)."""
        with self._lock:
            if self._disk is not None:
                self._disk.snapshot(self._last_zxid)

    def disk_stats(self) -> dict:
        """What this store wrote to its data directory: ``log_records``, ``snapshots``, ``bytes_written``
        (all 0 in memory)."""
        with self._lock:
            return dict(self._disk.stats) if self._disk is not None else {"log_records": 0, "snapshots": 0,
                                                                           "bytes_written": 0}

    # -- observability -------------------------------------------------------------------------------------
    @property
    def last_zxid(self) -> int:
        return self._last_zxid

    def event_log(self, since_zxid: Optional[int] = None) -> list[dict]:
        """Entries {zxid, time_ms, event, path, session, version, detail}, oldest first (``pandas.DataFrame``
        ready). Events: create, set, delete, delete_ephemeral, open_session, close_session, expire_session,
        isolate, heal, watch. ``session``: who asked (the owner for delete_ephemeral, the watcher's session for
        watch); ``detail``: e.g. the event type a watch fired with."""
        with self._lock:
            return [dict(e) for e in self._log if since_zxid is None or e["zxid"] > since_zxid]

    def dump(self, path: str = "/", *, show_system: bool = False) -> list[dict]:
        """Every znode under ``path`` (depth first, sorted) as a dict: path, data (text), version, cversion,
        czxid, mzxid, pzxid, ctime, mtime, ephemeral_owner, num_children, data_length."""
        with self._lock:
            out = []
            for p in self._walk(path, show_system):
                node = self._nodes[p]
                out.append({"path": p, "data": data_as_text(node.data), "version": node.version,
                            "cversion": node.cversion,
                            "czxid": node.czxid, "mzxid": node.mzxid, "pzxid": node.pzxid, "ctime": node.ctime,
                            "mtime": node.mtime, "ephemeral_owner": node.ephemeral_owner,
                            "num_children": len(node.children), "data_length": len(node.data or b"")})
            return out

    def tree(self, path: str = "/", *, width: int = 100, show_system: bool = False) -> str:
        """A printable tree: each znode with its data as text, its version and, if ephemeral, its owner."""
        with self._lock:
            if path not in self._nodes:
                raise NoNodeException(path)
            lines: list[str] = []

            def visit(p: str, prefix: str, last: bool, top: bool) -> None:
                node = self._nodes[p]
                label = p if top else p.rsplit("/", 1)[1]
                meta = f"v{node.version}" + (f", ephemeral {node.ephemeral_owner:#x}" if node.ephemeral_owner else "")
                text = data_as_text(node.data)
                shown = "" if not text else "  " + (text if len(text) <= width else text[:width - 1] + "…")
                branch = "" if top else prefix + ("└── " if last else "├── ")
                lines.append(f"{branch}{label}{shown}  ({meta})")
                kids = [c for c in sorted(node.children)
                        if show_system or (p.rstrip("/") + "/" + c) not in SYSTEM_PATHS]
                for i, child in enumerate(kids):
                    visit(p.rstrip("/") + "/" + child, "" if top else prefix + ("    " if last else "│   "),
                          i == len(kids) - 1, False)
            visit(path, "", True, True)
            return "\n".join(lines)

    def _walk(self, path: str, show_system: bool):
        if path not in self._nodes:
            raise NoNodeException(path)
        stack = [path]
        while stack:
            p = stack.pop()
            if not show_system and p in SYSTEM_PATHS:
                continue
            yield p
            stack.extend(p.rstrip("/") + "/" + c for c in sorted(self._nodes[p].children, reverse=True))

    def sessions(self) -> list[dict]:
        """Live sessions: id, state, timeout_ms, last_heard_ms, ephemerals (paths)."""
        with self._lock:
            return [{"session": s.hex_id, "state": s.state.value, "timeout_ms": s.timeout_ms,
                     "last_heard_ms": s.last_heard_ms, "ephemerals": sorted(self._ephemerals.get(sid, ()))}
                    for sid, s in self._sessions.items()]

    def watches(self) -> dict[str, list[str]]:
        with self._lock:
            return self._watches.summary()

    def close(self) -> None:
        """Stop the expiry task. Sessions are not closed: a stopped server simply stops answering."""
        self._closed = True
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            self._expiry_task = None

