"""An in-process Kafka cluster for notebooks and tests: brokers and a coordination store on a background loop.

Theory of operation
-------------------
A notebook cannot block on a server, and a Jupyter kernel already runs an asyncio event loop of its own, so
``asyncio.run`` is off limits there. ``Cluster`` therefore starts **one background thread with its own event
loop** (a :class:`~kafkalab.common.loop_thread.LoopThread`, the same kind each client runs on) and runs every
broker of the cluster on it (plus the embedded coordination store they share). The notebook's code talks to
that loop through ``asyncio.run_coroutine_threadsafe``: every public method here is an ordinary blocking call
that works the same in a script, under pytest and inside a kernel.

The internal topics' replication settings (``offsets.topic.replication.factor``,
``transaction.state.log.replication.factor`` and ``transaction.state.log.min.isr``) are capped at the number of
brokers unless overridden, so that groups and transactions work on a cluster of one or two.

Brokers listen on free ports of 127.0.0.1 by default (``listeners=PLAINTEXT://127.0.0.1:0``); a restarted
broker gets its old port back, so clients keep their bootstrap list. Data lives in a temporary directory that
is removed on ``stop()`` unless ``log_dirs`` was given.

The store expires sessions that stopped pinging (a killed broker's, an isolated or paused one's) as ZooKeeper
does: in ``zk_tick_time_ms`` buckets, its expirer sleeping until the next one is due (a ``ThreadScheduler`` on
the wall clock that runs the expiry on the cluster's loop); with a ``MockTime`` call
``zk_store.expire_sessions()`` yourself.
Faults -- ``kill``, ``pause``/``resume``, ``isolate``/``partition``/``heal`` -- are described in
:mod:`kafkalab.cluster.faults`.

::

    with Cluster(brokers=1) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})

Mirrors the role of Kafka's ``KafkaClusterTestKit`` / ``EmbeddedKafkaCluster`` test harnesses.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from kafkalab.common.loop_thread import LoopThread
from kafkalab.common.scheduler import ThreadScheduler
from kafkalab.common.time import SYSTEM, MockTime, Time
from kafkalab.server.broker import KafkaServer
from kafkalab.cluster.faults import FaultInjection, LinkTable
from kafkalab.cluster.waiting import poll_until, raise_if_unmet
from kafkalab.zk import ZkStore

__all__ = ["Cluster"]


class Cluster:
    """``brokers`` brokers (ids 0..n-1) sharing one embedded coordination store, on a background event loop.

    ``overrides`` are broker configs (Kafka's names) applied to every broker; ``log_dirs`` a base directory
    (each broker uses ``<log_dirs>/broker-<id>``); ``time`` an injectable clock (``MockTime``) for
    deterministic labs; ``zk_tick_time_ms`` the store's tick (session timeouts are clamped to [2, 20] ticks, as
    ZooKeeper negotiates them: lower it for short ``zookeeper.session.timeout.ms`` overrides); ``base_port``
    makes broker ``i`` listen on ``base_port + i`` (default: free ports).
    """

    def __init__(self, brokers: int = 1, overrides: Optional[Mapping[str, Any]] = None,
                 log_dirs: Optional[str] = None, *, time: Time = SYSTEM, host: str = "127.0.0.1",
                 zk_tick_time_ms: int = 2000, base_port: int = 0, wait_for_metadata: bool = True):
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.num_brokers = brokers
        self.overrides = dict(overrides or {})
        self.time = time
        self.host = host
        self.wait_for_metadata = wait_for_metadata
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self.base_dir = Path(log_dirs) if log_dirs else None
        self.brokers: dict[int, KafkaServer] = {}
        self._ports: dict[int, int] = {i: base_port + i for i in range(brokers)} if base_port else {}
        self.zk_store: Optional[ZkStore] = None
        self._loop: Optional[LoopThread] = None
        self.zk_tick_time_ms = zk_tick_time_ms
        self._zk_scheduler: Optional[ThreadScheduler] = None
        #: links, pauses and session faults (:mod:`.faults`); ``partition``/``isolate``/``heal``/``pause``/
        #: ``resume`` below forward to it
        self.faults = FaultInjection(self.brokers, lambda: self.zk_store, self.call)

    # ------------------------------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "Cluster":
        """Start the coordination store and the brokers; wait for a controller and, unless the cluster was made
        with ``wait_for_metadata=False``, until every broker knows every broker (:meth:`wait_for_broker_metadata`)."""
        if self._loop is not None:
            return self
        if self.base_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kafkalab-")
            self.base_dir = Path(self._tmp.name)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._loop = LoopThread("kafkalab-cluster")
        if not isinstance(self.time, MockTime):
            self._zk_scheduler = ThreadScheduler(self.time, executor=self._loop.loop.call_soon_threadsafe,
                                                 name="zk-session-expiry")
        self.zk_store = self.call(lambda: ZkStore(str(self.base_dir / "zookeeper"), time=self.time,
                                                  scheduler=self._zk_scheduler, tick_time_ms=self.zk_tick_time_ms))
        try:
            for broker_id in range(self.num_brokers):
                self.start_broker(broker_id)
            self.wait_for_controller()
            if self.wait_for_metadata:
                self.wait_for_broker_metadata()
        except BaseException:   # a broker refused its configuration: release the loop and the store, then say why
            self.stop()
            raise
        return self

    def _broker_config(self, broker_id: int) -> dict:
        port = self._ports.get(broker_id, 0)
        config = {
            "broker.id": broker_id,
            "listeners": f"PLAINTEXT://{self.host}:{port}",
            "log.dirs": str(self.base_dir / f"broker-{broker_id}"),
            # the internal topics' defaults want three brokers (and two in sync for __transaction_state):
            # a smaller cluster gets what it can hold, as Kafka's test harnesses set them
            "offsets.topic.replication.factor": min(3, self.num_brokers),
            "transaction.state.log.replication.factor": min(3, self.num_brokers),
            "transaction.state.log.min.isr": min(2, self.num_brokers),
        }
        config.update({k: v for k, v in self.overrides.items()})
        return config

    def start_broker(self, broker_id: int) -> KafkaServer:
        server = KafkaServer(self._broker_config(broker_id), zk_store=self.zk_store, time=self.time)
        self.faults.install_link_filter(server, broker_id)
        self.faults.forget(broker_id)
        self.brokers[broker_id] = server
        self.run(server.startup())
        if server.bound_endpoints:
            self._ports.setdefault(broker_id, server.bound_endpoints[0].port)
        self.call(self.faults.apply_session_faults)   # a restarted broker is still behind any cut link
        return server

    def stop_broker(self, broker_id: int, *, controlled: Optional[bool] = None) -> None:
        """Stop a broker cleanly, as SIGTERM does: by default (``controlled.shutdown.enable``) it first asks the
        controller to move its leaderships away (ControlledShutdown), then flushes and leaves."""
        server = self.brokers.get(broker_id)
        if server is not None:
            self.run(server.shutdown(controlled=controlled))

    def kill(self, broker_id: int, *, expire_session: bool = True, lose_unflushed: bool = False) -> None:
        """Kill a broker abruptly: its sockets drop, nothing is flushed or checkpointed (the OS page cache
        survives, as for ``kill -9``; ``lose_unflushed=True`` models a machine crash instead: every log loses
        the bytes written since its last flush). With ``expire_session`` its coordination session expires at once (the
        controller sees it gone); without, the session lingers (call ``zk_store.expire_sessions()`` once its
        timeout has passed) and only the leaders notice, after ``replica.lag.time.max.ms``."""
        server = self.brokers.get(broker_id)
        if server is not None:
            self.run(server.kill(expire_session=expire_session, lose_unflushed=lose_unflushed))
        self.faults.forget(broker_id)

    def restart(self, broker_id: int) -> KafkaServer:
        """Stop a broker cleanly (if running; a killed one just starts) and start it again on the same port and
        log directory."""
        self.stop_broker(broker_id)
        old = self.brokers.get(broker_id)
        if old is not None and old.zk is not None:  # a killed broker's lingering session ends as it comes back
            self.call(self.zk_store.expire_session, old.zk.session)
        return self.start_broker(broker_id)

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            # The whole cluster goes: moving leaderships from broker to broker would only delay the end (and
            # the last brokers have nowhere to move them), so brokers stop without ControlledShutdown.
            for broker_id in sorted(self.brokers, reverse=True):
                try:
                    self.run(self.brokers[broker_id].shutdown(controlled=False))
                except Exception:
                    pass
            if self.zk_store is not None:
                self.call(self.zk_store.close)
            if self._zk_scheduler is not None:
                self._zk_scheduler.shutdown()
                self._zk_scheduler = None
        finally:
            self._loop.stop()
            self._loop = None
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
                self.base_dir = None

    # ------------------------------------------------------------------------------------------ faults
    @property
    def links(self) -> LinkTable:
        """The cut links (see :class:`~kafkalab.cluster.faults.LinkTable`)."""
        return self.faults.links

    @property
    def paused(self) -> set:
        """The ids of the paused brokers."""
        return self.faults.paused

    def partition(self, a, b) -> None:
        """Cut the link between ``a`` and ``b`` (broker ids, or ``"zk"`` for the coordination store)."""
        self.faults.partition(a, b)

    def isolate(self, broker_id: int, *, from_zk: bool = True) -> None:
        """Cut every link of ``broker_id``: to each other broker and (``from_zk``) to the store."""
        self.faults.isolate(broker_id, from_zk=from_zk)

    def heal(self, links: Optional[Iterable[tuple]] = None) -> None:
        """Restore ``links`` (pairs), or every cut link."""
        self.faults.heal(links)

    def pause(self, broker_id: int) -> None:
        """Freeze ``broker_id`` (``kill -STOP``): no socket is read, nothing is sent, its session stops
        pinging and expires after ``zookeeper.session.timeout.ms``."""
        self.faults.pause(broker_id)

    def resume(self, broker_id: int) -> bool:
        """Let a paused broker go on. Returns whether its session survived the pause (if not, the broker
        learns of the expiry now, opens a new session and registers again, as Kafka's does)."""
        return self.faults.resume(broker_id)

    # ------------------------------------------------------------------------------------------ views
    @property
    def is_running(self) -> bool:
        """Whether the cluster is started (between ``start()`` and ``stop()``); live dashboards stop with it."""
        return self._loop is not None

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for _, b in sorted(self.brokers.items()) if b.is_running)

    @property
    def controller_id(self) -> int:
        """The broker that owns ``/controller`` and knows it. A deposed controller that has not yet heard its
        session expired (paused, cut off from the store) still believes it is active: the znode decides."""
        def read():
            try:
                data, _ = self.zk_store.get("/controller")
            except Exception:  # no controller znode (an election is under way)
                return -1
            owner = json.loads(data).get("brokerid", -1)
            b = self.brokers.get(owner)
            return owner if b is not None and b.is_running and b.controller is not None and b.controller.is_active \
                else -1
        return self.call(read) if self._loop is not None else -1

    def broker(self, broker_id: int) -> KafkaServer:
        return self.brokers[broker_id]

    def call(self, fn, *args, timeout: float = 30.0):
        """Run ``fn(*args)`` on the cluster's event loop (where broker state may be touched safely)."""
        return self._loop.call(fn, *args, timeout=timeout)

    def run(self, coro, timeout: float = 60.0):
        """Run ``coro`` on the cluster's event loop and wait for its result (its exception is raised here)."""
        return self._loop.run(coro, timeout)

    def wait_for_controller(self, timeout: float = 10.0) -> int:
        return self.wait_until(lambda: self.controller_id >= 0, timeout, "no controller was elected") and \
            self.controller_id

    def wait_for_broker_metadata(self, timeout: float = 10.0) -> None:
        """Wait until every running broker's metadata cache lists every running broker (the controller's first
        UpdateMetadata has arrived everywhere). Until then a broker answers Metadata with no brokers, as Kafka does;
        Kafka's test harness waits the same way (``TestUtils.waitUntilBrokerMetadataIsPropagated``)."""
        def propagated() -> bool:
            running = {b for b, server in self.brokers.items() if server.is_running}
            return all(set(self.brokers[b].metadata_cache.alive_broker_ids()) >= running for b in running)
        self.wait_until(propagated, timeout, "the brokers did not all learn the cluster's brokers")

    def wait_until(self, condition, timeout: float = 10.0, message: Optional[str] = None) -> bool:
        """Poll ``condition()`` (evaluated on the cluster loop) until true; after ``timeout`` seconds raise
        :class:`~kafkalab.cluster.waiting.ConditionNotMet` (a ``TimeoutError``) in the caller's thread, saying
        ``message`` (default: "the condition was not met"), the condition, and what to do in a notebook."""
        return raise_if_unmet(self.run(poll_until(condition, timeout), timeout + 5), condition, timeout, message)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Optional[dict] = None, timeout: float = 10.0, *,
                     assignment: Optional[dict] = None) -> None:
        """Create a topic through a broker's admin path and wait until every running broker knows its leaders.

        ``assignment`` (``{partition: [broker ids, preferred leader first]}``) places the replicas explicitly,
        as ``kafka-topics --replica-assignment`` does; ``partitions`` and ``replication_factor`` then follow it."""
        controller = self.brokers[self.controller_id if self.controller_id >= 0 else 0]
        replicas = None
        if assignment is not None:
            replicas = {int(p): [int(b) for b in r] for p, r in assignment.items()}
            partitions, replication_factor = len(replicas), -1
        self.call(controller.admin.create_topic, name, partitions if replicas is None else -1, replication_factor, replicas,
                  {k: str(v) for k, v in (config or {}).items()})
        self.wait_until(lambda: all(
            b.metadata_cache.partition_count(name) == partitions and
            all(p.leader >= 0 for p in b.metadata_cache.partitions(name))
            for b in self.brokers.values() if b.is_running), timeout, f"topic {name} did not come online")

    def partition_state(self, topic: str, partition: int) -> dict:
        """Leader, leader epoch, ISR and replicas as the controller sees them, plus each replica's LEO and HW."""
        def read():
            cid = self.controller_id
            state = self.brokers[cid].metadata_cache.partition_state(topic, partition) if cid >= 0 else None
            replicas = {}
            for broker_id, b in self.brokers.items():
                p = b.replica_manager.get_partition(topic, partition) if b.is_running and b.replica_manager else None
                if p is not None and p.log is not None:
                    replicas[broker_id] = {"log_end_offset": p.log.log_end_offset,
                                           "high_watermark": p.log.high_watermark}
            return {"leader": state.leader if state else -1, "leader_epoch": state.leader_epoch if state else -1,
                    "isr": list(state.isr) if state else [], "replicas": list(state.replicas) if state else [],
                    "logs": replicas}
        return self.call(read)

    def __repr__(self) -> str:
        running = sorted(b for b, s in self.brokers.items() if s.is_running)
        return f"Cluster(brokers={running}, controller={self.controller_id}, bootstrap={self.bootstrap_servers!r})"
