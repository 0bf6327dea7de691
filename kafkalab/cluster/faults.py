"""Fault injection for the in-process cluster: paused brokers, cut network links, crashes with and without
the page cache.

Theory of operation
-------------------
Jepsen breaks distributed systems with a handful of faults; ``Cluster`` offers the same ones for its brokers.

**Links.** A :class:`LinkTable` holds the cut links, each an unordered pair of nodes: broker ids and
:data:`ZK` (the coordination store). Brokers talk to each other only through inter-broker connections -- the
controller's channel to every broker and the followers' replica fetchers -- and every such connection asks
the broker's injected ``link_filter(host, port)`` before connecting, before each request and when a response
arrives; the harness answers from the table. A cut link therefore looks like a refused (or dropped)
connection in both directions. Clients (producers, consumers, kcat) are not affected: Jepsen's 2013 Kafka
experiment also kept clients talking to the isolated leader. A cut link between a broker and :data:`ZK`
isolates its session (``ZkStore.isolate``): its pings stop arriving, its requests fail with
ConnectionLoss, and after ``zookeeper.session.timeout.ms`` the store expires the session -- its
``/brokers/ids/<id>`` vanishes and the controller treats it as dead while the process runs on (a zombie).

* ``partition(a, b)`` cuts one link (``b`` may be ``"zk"``), ``isolate(broker)`` cuts all of a broker's links,
  ``heal()`` restores every link (an expired session only now learns that it expired -- and, as Kafka's
  broker does, opens a new session and registers again with a new broker epoch).

**Pause** (``kill -STOP``, a long GC pause, a frozen VM): the process stops doing anything. Its sockets are
no longer read (the kernel still accepts connections and buffers bytes, so peers see requests time out, not
refused connections), it opens no connection and sends nothing, and -- as a stopped JVM's ZooKeeper client
stops pinging -- its session expires once ``zookeeper.session.timeout.ms`` passes. ``resume`` lets it go on; if
the session expired meanwhile, the broker learns it only now, and registers again on a new session: the
controller treats it as a newly started broker (LeaderAndIsr, it catches up and rejoins the ISRs). Limits of the model: requests already read keep
being served, and the broker's own timers keep firing (their ZooKeeper writes fail with ConnectionLoss).

**Kill and the page cache.** ``kill(broker)`` is ``kill -9``: the process dies but the operating system
keeps its page cache, so every byte the broker had *written* survives even though Kafka never fsyncs
(``log.flush.interval.messages`` is unbounded by default). ``kill(broker, lose_unflushed=True)`` is a machine
crash (power cut, kernel panic): bytes written but not yet flushed to disk are lost, and each log comes back
truncated to what was flushed -- recovery then rebuilds indexes, and replication re-copies the rest.

**Who does what.** :class:`FaultInjection` is a collaborator owned by ``Cluster`` (``cluster.faults``): it
keeps the link table and the paused set, and sees the cluster only through what it is built with -- the
brokers table, a getter for the store and ``call`` (run on the cluster's loop). ``Cluster``'s ``partition``,
``isolate``, ``heal``, ``pause`` and ``resume`` forward to it; ``kill`` and ``restart`` stay on ``Cluster``
and tell it of the broker's new life (:meth:`FaultInjection.forget`).

Mirrors the nemeses of Jepsen (``jepsen.nemesis``: partitions, pauses, kills) rather than a Kafka class.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Union

from kafkalab.zk.session import SessionState

if TYPE_CHECKING:
    from kafkalab.server.broker import KafkaServer
    from kafkalab.zk import ZkStore

__all__ = ["ZK", "LinkTable", "FaultInjection"]

ZK = "zk"
Node = Union[int, str]


class LinkTable:
    """Cut links between nodes (broker ids and ``"zk"``); links are symmetric, a node always reaches itself."""

    def __init__(self):
        self._cut: set[frozenset] = set()

    def cut(self, a: Node, b: Node) -> None:
        if a == b:
            raise ValueError("a node cannot be partitioned from itself")
        self._cut.add(frozenset((a, b)))

    def restore(self, a: Node, b: Node) -> None:
        self._cut.discard(frozenset((a, b)))

    def heal(self) -> None:
        self._cut.clear()

    def allowed(self, a: Node, b: Node) -> bool:
        return a == b or frozenset((a, b)) not in self._cut

    @property
    def cut_links(self) -> list[tuple]:
        return sorted((tuple(sorted(pair, key=str)) for pair in self._cut), key=str)

    def __repr__(self) -> str:
        return f"LinkTable(cut={self.cut_links})"


class FaultInjection:
    """The cluster's fault injector, owned by :class:`~kafkalab.cluster.cluster.Cluster` (``cluster.faults``),
    which forwards its public fault methods here.

    ``brokers`` the cluster's live ``{broker id: KafkaServer}`` table (read, never changed here); ``zk_store()``
    returns the coordination store (None before the cluster starts); ``call(fn)`` runs ``fn`` on the cluster's
    event loop and returns its result.
    """

    def __init__(self, brokers: Mapping[int, "KafkaServer"], zk_store: Callable[[], Optional["ZkStore"]],
                 call: Callable[..., Any]):
        self._brokers = brokers
        self._zk_store = zk_store
        self._call = call
        self.links = LinkTable()
        self.paused: set = set()

    # -- hooks the cluster calls ----------------------------------------------------------------------------
    def install_link_filter(self, server: "KafkaServer", broker_id: int) -> None:
        """Make ``server``'s inter-broker connections ask the link table (and whether it is paused)."""
        server.link_filter = lambda host, port: self._link_up(broker_id, port)

    def _broker_at_port(self, port: int) -> Optional[int]:
        for broker_id, server in self._brokers.items():
            if any(ep.port == port for ep in server.bound_endpoints):
                return broker_id
        return None

    def _link_up(self, src: int, port: int) -> bool:
        if src in self.paused:
            return False              # a paused process sends nothing
        dst = self._broker_at_port(port)
        return dst is None or self.links.allowed(src, dst)

    def apply_session_faults(self) -> None:
        """Isolate the session of every paused broker or broker cut off from the store; heal the others.
        Runs on the cluster's loop."""
        store = self._zk_store()
        for broker_id, server in self._brokers.items():
            if not server.is_running or server.zk is None:
                continue
            session = server.zk.session
            cut_off = broker_id in self.paused or not self.links.allowed(broker_id, ZK)
            if cut_off and session.state is SessionState.CONNECTED:
                store.isolate(session)
            elif not cut_off and (session.state is SessionState.ISOLATED or session._expiry_unseen):
                store.heal(session)

    def forget(self, broker_id: int) -> None:
        """A broker started again or was killed: it is no longer paused (cut links stay cut)."""
        self.paused.discard(broker_id)

    # -- links ---------------------------------------------------------------------------------------------
    def partition(self, a: Node, b: Node) -> None:
        """Cut the link between ``a`` and ``b`` (broker ids, or ``"zk"`` for the coordination store)."""
        self.links.cut(a, b)
        self._call(self.apply_session_faults)

    def isolate(self, broker_id: int, *, from_zk: bool = True) -> None:
        """Cut every link of ``broker_id``: to each other broker and (``from_zk``) to the store."""
        for other in self._brokers:
            if other != broker_id:
                self.links.cut(broker_id, other)
        if from_zk:
            self.links.cut(broker_id, ZK)
        self._call(self.apply_session_faults)

    def heal(self, links: Optional[Iterable[tuple]] = None) -> None:
        """Restore ``links`` (pairs), or every cut link."""
        if links is None:
            self.links.heal()
        else:
            for a, b in links:
                self.links.restore(a, b)
        self._call(self.apply_session_faults)

    # -- pause ---------------------------------------------------------------------------------------------
    def pause(self, broker_id: int) -> None:
        """Freeze ``broker_id`` (``kill -STOP``): no socket is read, nothing is sent, its session stops
        pinging and expires after ``zookeeper.session.timeout.ms``."""
        def do():
            self.paused.add(broker_id)
            server = self._brokers[broker_id]
            if server.socket_server is not None:
                server.socket_server.pause()
            self.apply_session_faults()
        self._call(do)

    def resume(self, broker_id: int) -> bool:
        """Let a paused broker go on. Returns whether its session survived the pause (if not, the broker
        learns of the expiry now, opens a new session and registers again, as Kafka's does)."""
        def do():
            self.paused.discard(broker_id)
            server = self._brokers[broker_id]
            if server.socket_server is not None:
                server.socket_server.resume()
            self.apply_session_faults()
            return server.zk is not None and server.zk.session.alive
        return self._call(do)
