"""The broker: every room of a Kafka server wired together, started in Kafka's order and stopped in reverse.

Theory of operation
-------------------
``KafkaServer.startup`` brings a broker up in the order Kafka does (``KafkaServer.startup`` in the ZooKeeper
era), each step needing the previous ones:

1. connect to the coordination store (a ZooKeeper session) and read or create the cluster id;
2. open the log directories (``LogManager``): load every partition's segments, recovering any that were not
   closed cleanly (torn writes are truncated);
3. the metadata cache, the replica manager and the admin manager;
4. the request path: request channel, ``num.io.threads`` request handlers, and the socket server bound to
   every listener (port 0 means "any free port");
5. register in ZooKeeper: the ephemeral ``/brokers/ids/<id>`` znode with the advertised endpoints; it lives
   as long as this broker's session;
6. start the controller logic: run for election; whoever wins tells everyone (this broker included) what
   it leads, through LeaderAndIsr and UpdateMetadata -- real requests over each broker's inter-broker
   listener (:mod:`kafkalab.controller.channel_manager`), answered by :mod:`.apis.controller_requests`.

**The control plane** (KIP-291, ``control.plane.listener.name``): the named listener is served like any other
(its own server socket, in ``advertised.listeners`` and so in the broker's registration), but its requests go
to a request channel of their own (20 requests deep, as Kafka's) worked by one request handler of its own, with
a ``KafkaApis`` of its own -- Kafka's ``controlPlaneRequestChannelOpt``, ``controlPlaneRequestProcessor`` and
``controlPlaneRequestHandlerPool``. Every controller connects its channel to each broker's endpoint of that
name, so LeaderAndIsr, UpdateMetadata and StopReplica never wait behind clients' requests. Everything else
between brokers stays on the inter-broker listener: replica fetchers, and ControlledShutdown (the broker
connects to the controller's inter-broker endpoint, as Kafka's ``KafkaServer.controlledShutdown`` does). The
control-plane listener serves any request (Kafka does not restrict it); a Metadata request there is answered
with every broker's control-plane endpoint, the listener it came in on.

The replica manager owns the purgatories (their timers run on this broker's event loop with its ``Time``)
and the replica fetchers (:mod:`.replica_fetcher`), which also talk over the inter-broker listener.
:meth:`KafkaServer.metrics` exposes the broker's metrics by Kafka's names (the purgatories', the fetch session
cache's, the socket server's, the conversion meters and the controller's); :meth:`KafkaServer.kill` stops a
broker as a crash would.

A client can connect once step 4 is done, but the broker knows about topics only after the controller's
UpdateMetadata reached it.

**Clean shutdown** (``KafkaServer.shutdown``, SIGTERM) is *controlled* when ``controlled.shutdown.enable`` is
true (Kafka's default): before it stops serving, the broker sends ControlledShutdown (its id and broker epoch)
to the controller over the inter-broker listener; the controller moves every leadership it can to another ISR
member and takes it out of the other ISRs, then answers with the partitions it could not move. The broker
tries ``controlled.shutdown.max.retries`` times, ``controlled.shutdown.retry.backoff.ms`` apart, until none
remain, then stops anyway. Leadership thus moves while the broker still answers (clients get one
NOT_LEADER_OR_FOLLOWER and refresh), instead of after ``zookeeper.session.timeout.ms`` or a crash.

**Session expiry** while the broker runs (a long pause, a cut from ZooKeeper): the ephemeral
``/brokers/ids/<id>`` is gone and the controller has treated the broker as dead. When the broker hears
``Expired`` it does what Kafka's ``ZooKeeperClient.reinitialize`` and the controller's state-change handler
do: its controller module resigns, a new session is opened, the broker registers again -- a new znode, so a
new **broker epoch** -- and runs for controller again. The controller sees a new broker: LeaderAndIsr makes
it a follower of its partitions, it truncates and catches up, and the leaders put it back in the ISR.

**A failed disk** takes its log dir offline (:mod:`kafkalab.storage.log_dir_failure_channel`); when every log
dir failed the broker *halts*, as Kafka's ``Exit.halt(1)``: it stops as a crash would (:meth:`KafkaServer.kill`,
no clean shutdown, so its logs are recovered at the next start) and sets :attr:`KafkaServer.halted`;
``kafkalab broker`` then exits with status 1.

Mirrors: ``core/src/main/scala/kafka/server/KafkaServer.scala`` (``controlledShutdown``), and for the session:
``zookeeper/ZooKeeperClient.scala`` (``reinitialize``) with ``KafkaController``'s state-change handler.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Callable, Optional

from kafkalab.common.memory_pool import MemoryPool, SimpleMemoryPool
from kafkalab.common.scheduler import MockScheduler, ThreadScheduler
from kafkalab.common.time import SYSTEM, MockTime, Time
from kafkalab.controller.channel_manager import ControllerChannelManager
from kafkalab.controller.controller import KafkaController
from kafkalab.coordinator.group import GroupConfig, GroupCoordinator
from kafkalab.network import RequestChannel, SocketServer
from kafkalab.network.connection_quotas import ConnectionQuotas
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.security.ssl_factory import CLIENT, SERVER, SslFactory
from kafkalab.server.acl_authorizer import AclAuthorizer
from kafkalab.server.admin_manager import AdminManager
from kafkalab.server.apis import KafkaApis, api_versions_for
from kafkalab.server.broker_topic_stats import BrokerTopicStats
from kafkalab.server.apis.groups import BrokerOffsetsLog
from kafkalab.server.transaction_wiring import on_transaction_state_partitions, start_transaction_coordinator
from kafkalab.server.auth_helper import AuthHelper
from kafkalab.server.config import KafkaConfig
from kafkalab.server.fetch_session import FetchManager, FetchSessionCache
from kafkalab.server.metadata_cache import MetadataCache
from kafkalab.server.producer_id_manager import ProducerIdManager
from kafkalab.server.replica_fetcher import ReplicaFetcherManager
from kafkalab.server.replica_manager import ReplicaManager
from kafkalab.server.apis.scram_credentials import user_scram_config
from kafkalab.server.sasl_listeners import authenticator_factories, inter_broker_login, scram_credential_lookup
from kafkalab.server.request_handler import KafkaRequestHandlerPool
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_manager import LogManager
from kafkalab.zk import KafkaZkClient, KeeperException, ZkStore
from kafkalab.zk.session import SessionState
from kafkalab.zk.watches import KeeperState
from kafkalab.zk.paths import BrokerInfo, EndPoint as ZkEndPoint

__all__ = ["KafkaServer", "CONTROL_PLANE_QUEUE_SIZE"]

log = logging.getLogger("kafkalab.server.KafkaServer")

#: the control-plane request queue's capacity (Kafka's SocketServer hard-codes 20; not a configuration key)
CONTROL_PLANE_QUEUE_SIZE = 20


class KafkaServer:
    """One broker; brokers of one cluster share the coordination store ``zk_store``."""

    def __init__(self, config, *, zk_store: Optional[ZkStore] = None, time: Time = SYSTEM):
        self.config = config if isinstance(config, KafkaConfig) else KafkaConfig(config)
        self.broker_id = self.config.broker_id
        self.name = f"KafkaServer id={self.broker_id}"
        self.time = time
        self.zk_store = zk_store
        self._owns_store = zk_store is None
        self.is_running = False
        self.cluster_id: Optional[str] = None
        self.bound_endpoints = []
        self.zk = self.log_manager = self.replica_manager = self.admin = self.controller = None
        self.fetch_manager: Optional[FetchManager] = None   # fetch sessions (KIP-227), made at start-up
        self.socket_server = self.channel = self.apis = self.handlers = self.scheduler = None
        #: with control.plane.listener.name: its request channel, KafkaApis and one request handler (KIP-291)
        self.control_plane_channel = self.control_plane_apis = self.control_plane_handlers = None
        self.metadata_cache = MetadataCache(self.broker_id)
        #: conversion meters (ProduceMessageConversionsPerSec, FetchMessageConversionsPerSec), per topic
        self.broker_topic_stats = BrokerTopicStats()
        self.group_coordinator = None
        self.transaction_coordinator = None                # made at start-up (server.transaction_wiring)
        self.transaction_marker_sender = None
        self.authorizer: Optional[AclAuthorizer] = None    # authorizer.class.name; made at start-up
        self.auth = AuthHelper()                           # what handlers ask: everything allowed until then
        self.broker_epoch = -1
        self.controlled_shutdown_succeeded: Optional[bool] = None
        #: set once the broker halted itself because every log dir failed (made at start-up, on its loop)
        self.halted: Optional[asyncio.Event] = None
        # (host, port) -> is the network link to that broker up? Injected by fault-injection harnesses.
        self.link_filter: Optional[Callable[[str, int], bool]] = None
        #: listener name -> server-side SslFactory of each SSL / SASL_SSL listener, made first at start-up
        self.ssl_factories: dict[str, SslFactory] = {}
        #: the client side of TLS on the inter-broker listener (replica fetchers, ControlledShutdown)
        self.inter_broker_ssl_context = None
        #: ... and on the listener the controller's channel connects to (the control plane's, else the same)
        self.controller_channel_ssl_context = None
        # What the replica fetchers and the controller's channel log in with on a SASL listener.
        self.inter_broker_login = inter_broker_login(self.config)
        self.controller_channel_login = inter_broker_login(self.config,
                                                           self.config.controller_to_broker_listener_name)

    # ------------------------------------------------------------------------------------------ startup
    async def startup(self) -> "KafkaServer":
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._make_ssl_factories()      # 0. refuse a TLS listener that is not fully configured, before anything
        self.halted = asyncio.Event()
        if self.zk_store is None:
            data_dir = cfg["kafkalab.zookeeper.data.dir"] or str(Path(cfg.log_dirs[0]).resolve().parent / "zookeeper")
            self.zk_store = ZkStore(data_dir, time=self.time)
        if isinstance(self.time, MockTime):
            self.scheduler = MockScheduler(self.time)
        else:
            self.scheduler = ThreadScheduler(self.time, executor=loop.call_soon_threadsafe,
                                             name=f"kafka-scheduler-{self.broker_id}")
        # 1. coordination store
        self.zk = KafkaZkClient.connect(self.zk_store, cfg["zookeeper.session.timeout.ms"], auto_heartbeat=True,
                                        dispatcher=lambda fn: loop.call_soon_threadsafe(fn))
        self.zk.session.add_state_listener(self._on_session_event)
        self.zk.create_top_level_paths()
        self.cluster_id = self.zk.get_or_create_cluster_id()
        self.authorizer = AclAuthorizer.from_config(cfg, self.zk)
        if self.authorizer is not None:
            self.authorizer.startup()
            self.auth = AuthHelper(self.authorizer)
        # 2. logs
        self.log_manager = LogManager([str(d) for d in cfg.log_dirs], LogConfig.from_broker(cfg.originals),
                                      time=self.time, scheduler=self.scheduler, broker_id=self.broker_id,
                                      cluster_id=self.cluster_id, broker_props=cfg.originals, halt=self._halt)
        self.log_manager.startup(self._topic_configs())
        # 3. partitions and admin
        self.admin = AdminManager(self)
        self.producer_ids = ProducerIdManager(self.broker_id, self.zk)
        self.replica_manager = ReplicaManager(self.broker_id, self.log_manager, self.metadata_cache,
                                              topic_config_provider=self.admin.topic_config, time=self.time,
                                              config=cfg, zk=self.zk, scheduler=self.scheduler)
        self.replica_manager.replica_fetcher_manager = ReplicaFetcherManager(
            self.broker_id, self.replica_manager, cfg,
            connect=lambda host, port, client_id, timeout_ms: InterBrokerConnection(
                host, port, client_id=client_id, request_timeout_ms=timeout_ms, link_check=self._link_up,
                ssl_context=self.inter_broker_ssl_context,
                sasl_login=self.inter_broker_login))
        self.fetch_manager = FetchManager(FetchSessionCache(cfg["max.incremental.fetch.session.cache.slots"],
                                                            cfg["min.incremental.fetch.session.eviction.ms"]),
                                          self.time)
        await self.replica_manager.startup()
        self.group_coordinator = GroupCoordinator(GroupConfig.from_broker(cfg), self.time, self.scheduler,
                                                  BrokerOffsetsLog(self), broker_id=self.broker_id)
        self.group_coordinator.startup()
        self.transaction_coordinator, self.transaction_marker_sender = start_transaction_coordinator(self)
        # 4. request path
        self.channel = RequestChannel(cfg["queued.max.requests"], self.time)
        self.apis = KafkaApis(self, self.channel)
        self.handlers = KafkaRequestHandlerPool(self.channel, self.apis, cfg["num.io.threads"],
                                                name=f"broker-{self.broker_id}")
        self.handlers.start()
        self._start_control_plane()
        self.api_versions = api_versions_for(cfg["kafkalab.api.version.floors"])
        self.socket_server = SocketServer(cfg.listeners, self.channel, self.api_versions.accepted,
                                          advertised_apis=self.api_versions.advertised,
                                          max_request_bytes=cfg["socket.request.max.bytes"],
                                          memory_pool=_memory_pool(cfg),
                                          connection_quotas=_connection_quotas(cfg, self.time),
                                          connections_max_idle_ms=cfg["connections.max.idle.ms"], time=self.time,
                                          send_buffer_bytes=cfg["socket.send.buffer.bytes"],
                                          receive_buffer_bytes=cfg["socket.receive.buffer.bytes"],
                                          name=self.name, ssl_factories=self.ssl_factories,
                                          authenticators=authenticator_factories(
                                              cfg, scram_credential_lookup(lambda user: user_scram_config(
                                                  self.zk, user)), self.api_versions.accepted),
                                          failed_authentication_delay_ms=cfg[
                                              "connection.failed.authentication.delay.ms"],
                                          control_plane_listener=cfg.control_plane_listener_name,
                                          control_plane_channel=self.control_plane_channel)
        await self.socket_server.start()
        bound = {ep.listener_name: ep for ep in self.socket_server.bound_endpoints()}
        self.bound_endpoints = [ep._replace(port=bound[ep.listener_name].port if ep.port == 0 else ep.port)
                                for ep in cfg.advertised_listeners]
        self.is_running = True
        # 5. register
        self.broker_epoch = self.zk.register_broker(self._broker_info())
        self.admin.watch_config_changes(self._on_topic_config_change)
        # 6. controller
        timeout_ms = cfg["controller.socket.timeout.ms"]
        channel = ControllerChannelManager(self.broker_id, lambda host, port, client_id: InterBrokerConnection(
            host, port, client_id=client_id, request_timeout_ms=timeout_ms, link_check=self._link_up,
            ssl_context=self.controller_channel_ssl_context,
            sasl_login=self.controller_channel_login))
        self.controller = KafkaController(self.broker_id, self.zk, channel,
                                          inter_broker_listener=cfg.inter_broker_listener_name,
                                          controller_to_broker_listener=cfg.controller_to_broker_listener_name,
                                          unclean_election=self._unclean_election, name=f"Controller id={self.broker_id}",
                                          time=self.time)
        await self.controller.startup()
        # Kafka logs the endpoints it listens on (``listeners``, ports bound), not the advertised ones.
        log.info("[%s] started (listeners: %s)", self.name,
                 ", ".join(str(e) for e in self.socket_server.bound_endpoints()))
        return self

    def _make_ssl_factories(self) -> None:
        """An SslFactory per SSL / SASL_SSL listener (Kafka builds them with the channel builders when the
        socket server starts); a missing key store, an unreadable PEM file or a JKS store stops the broker here
        with a ConfigException. A TLS inter-broker listener also needs the client side."""
        cfg = self.config
        tls = ("SSL", "SASL_SSL")
        self.ssl_factories = {ep.listener_name: SslFactory(SERVER, cfg.listener_ssl_values(ep.listener_name),
                                                           listener_name=ep.listener_name)
                              for ep in cfg.listeners if ep.security_protocol in tls}
        def client_context(listener: str):
            if cfg.protocol_map.get(listener) not in tls:
                return None
            return SslFactory(CLIENT, cfg.listener_ssl_values(listener), listener_name=listener).context
        self.inter_broker_ssl_context = client_context(cfg.inter_broker_listener_name)
        self.controller_channel_ssl_context = client_context(cfg.controller_to_broker_listener_name)

    def _start_control_plane(self) -> None:
        """With ``control.plane.listener.name``: the control plane's own request channel (sharing the request
        log, as Kafka's one request logger), ``KafkaApis`` and one request handler (Kafka's
        ``KafkaServer.startup``)."""
        if self.config.control_plane_listener_name is None:
            return
        self.control_plane_channel = RequestChannel(CONTROL_PLANE_QUEUE_SIZE, self.time,
                                                    request_log=self.channel.request_log)
        self.control_plane_apis = KafkaApis(self, self.control_plane_channel)
        self.control_plane_handlers = KafkaRequestHandlerPool(self.control_plane_channel, self.control_plane_apis,
                                                              1, name=f"broker-{self.broker_id}-control-plane")
        self.control_plane_handlers.start()

    def _broker_info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, tuple(ZkEndPoint(ep.host, ep.port, ep.listener_name, ep.security_protocol)
                                                for ep in self.bound_endpoints), rack=self.config["broker.rack"])

    # ------------------------------------------------------------------------------------------ session expiry
    def _on_session_event(self, event) -> None:
        """A state event of our ZooKeeper session (on this broker's loop)."""
        if event.state is KeeperState.Expired and self.is_running and self.zk is not None \
                and not self.zk.session.alive:
            asyncio.get_running_loop().create_task(self._reinitialize_session(),
                                                   name=f"{self.name}-zk-reinitialize")

    async def _reinitialize_session(self) -> None:
        """New session, new registration (new broker epoch), new controller election."""
        if not self.is_running or self.zk.session.alive:
            return
        log.info("[%s] ZooKeeper session %s expired; creating a new session and registering again", self.name,
                 self.zk.session.hex_id)
        if self.controller is not None:
            self.controller.session_expired()
        try:
            session = self.zk.reinitialize()
            session.add_state_listener(self._on_session_event)
            self.broker_epoch = self.zk.register_broker(self._broker_info())
            self.admin.watch_config_changes(self._on_topic_config_change)
            if self.authorizer is not None:
                self.authorizer.watch_changes()
        except KeeperException as e:  # cut off again: the next Expired brings us back here
            log.warning("[%s] could not register again: %s", self.name, e)
            return
        log.info("[%s] registered again with broker epoch %d", self.name, self.broker_epoch)
        if self.controller is not None:
            self.controller.reelect()

    def _link_up(self, host: str, port: int) -> bool:
        return self.link_filter is None or self.link_filter(host, port)

    def _topic_configs(self) -> dict:
        """The config of every topic this broker may host, from ZooKeeper, before the logs are opened."""
        configs = {}
        for topic in self.zk.get_all_topics_in_cluster():
            try:
                configs[topic] = self.admin_topic_config(topic)
            except Exception:
                pass
        return configs

    def admin_topic_config(self, topic: str) -> LogConfig:
        from kafkalab.zk.paths import ConfigType

        return LogConfig.from_broker(self.config.originals, self.zk.get_entity_configs(ConfigType.TOPIC, topic))

    @property
    def bootstrap_servers(self) -> str:
        """Where clients connect: every advertised endpoint but the control plane's (that one is the
        controller's)."""
        control_plane = self.config.control_plane_listener_name
        return ",".join(f"{ep.host}:{ep.port}" for ep in self.bound_endpoints if ep.listener_name != control_plane)

    def _unclean_election(self, topic: str) -> bool:
        try:
            return bool(self.admin.topic_config(topic)["unclean.leader.election.enable"])
        except Exception:
            return False

    def _on_topic_config_change(self, topic: str) -> None:
        if self.replica_manager is not None and self.zk.topic_exists(topic):
            self.replica_manager.update_topic_config(topic, self.admin.topic_config(topic))

    def on_topic_deleted(self, topic: str) -> None:
        """UpdateMetadata said the topic is gone (the replicas were already stopped)."""
        log.info("[%s] topic %s deleted", self.name, topic)

    # ------------------------------------------------------------------------------------------ controller
    def on_offsets_partitions(self, leading: dict[int, int], not_leading: list[int]) -> None:
        """Partitions of ``__consumer_offsets`` this broker started leading ({partition: leader epoch}) or
        stopped leading: the group coordinator loads or unloads their groups (Kafka's ``onLeadershipChange``)."""
        gc = self.group_coordinator
        if gc is None:
            return
        for partition, epoch in leading.items():
            gc.on_election(partition, epoch)
        for partition in not_leading:
            gc.on_resignation(partition)

    def on_transaction_state_partitions(self, leading: dict[int, int], not_leading: dict) -> None:
        """Partitions of ``__transaction_state`` this broker started ({partition: leader epoch}) or stopped
        leading: the transaction coordinator loads or unloads them."""
        on_transaction_state_partitions(self, leading, not_leading)

    def _stop_transaction_coordinator(self) -> None:
        if self.transaction_marker_sender is not None:
            self.transaction_marker_sender.shutdown()
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.shutdown()

    def metrics(self) -> dict:
        """The broker's metrics by Kafka's names: the purgatories' ``PurgatorySize``, ``NumDelayedOperations``
        and ``ExpiresPerSec`` (a count) per ``delayedOperation`` (Produce, Fetch); the fetch session cache's
        ``NumIncrementalFetchSessions``, ``NumIncrementalFetchPartitionsCached`` and
        ``IncrementalFetchSessionEvictionsPerSec`` (a count; ``kafka.server:type=FetchSessionCache``); the socket
        server's ``MemoryPoolAvailable``, ``MemoryPoolUsed``, ``connection-count,listener=<listener>``,
        ``successful-authentication-total``, ``failed-authentication-total``,
        ``successful-reauthentication-total`` and ``expired-connections-killed-count``; kafkalab's own counters of
        zero-copy (Kafka has no metric for it): ``sendfile-bytes-total``/``sendfile-sends-total`` (log bytes sent
        with sendfile, never in the process), ``copied-bytes-total``/``copied-sends-total`` (written from memory)
        and ``copied-file-bytes-total`` (log slices read into memory instead of sendfile'd: all of them on TLS), also
        ``,listener=<listener>``; the conversion meters
        ``ProduceMessageConversionsPerSec`` and ``FetchMessageConversionsPerSec`` (counts, also ``,topic=<t>``); the
        controller's (every broker has them, only the active controller's move; :mod:`kafkalab.controller.
        controller_stats`): ``kafka.controller:type=KafkaController,name=`` ``ActiveControllerCount``,
        ``OfflinePartitionsCount``, ``PreferredReplicaImbalanceCount``, ``GlobalTopicCount``,
        ``GlobalPartitionCount``, ``ActiveBrokerCount`` (gauges), and ``kafka.controller:type=ControllerStats,name=``
        ``UncleanLeaderElectionsPerSec`` (a meter) and the event timers ``LeaderElectionRateAndTimeMs`` (broker
        changes), ``ControllerChangeRateAndTimeMs``, ``TopicChangeRateAndTimeMs``, ``TopicDeletionRateAndTimeMs``,
        ``ManualLeaderBalanceRateAndTimeMs``, ``ControlledShutdownRateAndTimeMs``, ``IsrChangeRateAndTimeMs``,
        ``LeaderAndIsrResponseReceivedRateAndTimeMs``, ``LogDirChangeRateAndTimeMs`` (counts)."""
        out = self.replica_manager.metrics() if self.replica_manager is not None else {}
        out.update(self.broker_topic_stats.metrics())
        if self.fetch_manager is not None:
            out.update(self.fetch_manager.cache.metrics())
        if self.socket_server is not None:
            out.update(self.socket_server.metrics())
            out.update(self.socket_server.authentication_metrics)
        if self.controller is not None:
            out.update(self.controller.metrics())
        return out

    # ------------------------------------------------------------------------------------------ shutdown
    def _halt(self) -> None:
        """Kafka's ``Exit.halt(1)`` after every log dir failed: stop at once, as a crash (on this broker's loop)."""
        async def halt():
            await self.kill(expire_session=True)
            self.halted.set()
        if self.is_running:
            asyncio.get_running_loop().create_task(halt(), name=f"{self.name}-halt")

    async def kill(self, *, expire_session: bool = True, lose_unflushed: bool = False) -> None:
        """An abrupt stop (a crash, ``kill -9``): sockets dropped, nothing flushed or checkpointed; with
        ``lose_unflushed`` also the OS page cache is lost (a machine crash: bytes never fsync'd vanish). With
        ``expire_session`` the coordination session expires at once (the controller reacts without waiting);
        without, it stays until ``zookeeper.session.timeout.ms`` passes unheard (``ZkStore.expire_sessions``),
        and meanwhile only the leaders notice, through ``replica.lag.time.max.ms``."""
        if not self.is_running:
            return
        self.is_running = False
        log.info("[%s] killed", self.name)
        if self.zk is not None:
            if expire_session:
                self.zk_store.expire_session(self.zk.session)
            else:
                self.zk.session.auto_heartbeat = False
        for stop in (self.socket_server and self.socket_server.stop, self.handlers and self.handlers.shutdown,
                     self.control_plane_handlers and self.control_plane_handlers.shutdown,
                     self.apis and self.apis.shutdown, self.control_plane_apis and self.control_plane_apis.shutdown,
                     self.controller and self.controller.shutdown):
            if stop:
                try:
                    await stop()
                except Exception:
                    log.exception("[%s] error while killing", self.name)
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        self._stop_transaction_coordinator()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
        if self.log_manager is not None:
            self.log_manager.simulate_crash(lose_unflushed=lose_unflushed)
        if self.scheduler is not None:
            self.scheduler.shutdown()
        if self.zk is not None and expire_session:
            self.zk.close()

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move this broker's leaderships away (ControlledShutdown, key 7); True once
        it answered with no partition left to move. Kafka's ``KafkaServer.controlledShutdown``."""
        cfg = self.config
        retries = max(1, cfg["controlled.shutdown.max.retries"])
        if self.zk is None or self.zk.session.state is not SessionState.CONNECTED:
            log.info("[%s] not registered in ZooKeeper: no controlled shutdown", self.name)
            return False
        request = request_class(ApiKey.CONTROLLED_SHUTDOWN)(broker_id=self.broker_id, broker_epoch=self.broker_epoch)
        for attempt in range(retries):
            endpoint = self._controller_endpoint()
            if endpoint is not None:
                connection = InterBrokerConnection(*endpoint, client_id=str(self.broker_id),
                                                   request_timeout_ms=cfg["controller.socket.timeout.ms"],
                                                   link_check=self._link_up, ssl_context=self.inter_broker_ssl_context,
                                                   sasl_login=self.inter_broker_login)
                try:
                    response = await connection.send(ApiKey.CONTROLLED_SHUTDOWN, 3, request)
                    if response.error_code != ErrorCode.NONE:
                        log.info("[%s] controlled shutdown: %s", self.name, ErrorCode(response.error_code).name)
                    elif not response.remaining_partitions:
                        log.info("[%s] controlled shutdown succeeded", self.name)
                        return True
                    else:
                        log.info("[%s] controlled shutdown: %d partitions remaining to move", self.name,
                                 len(response.remaining_partitions))
                except (OSError, ConnectionError, asyncio.TimeoutError) as e:
                    log.warning("[%s] error during controlled shutdown: %s", self.name, e)
                finally:
                    connection.close()
            if attempt + 1 < retries:
                await asyncio.sleep(cfg["controlled.shutdown.retry.backoff.ms"] / 1000.0)
                log.info("[%s] retrying controlled shutdown (%d retries remaining)", self.name, retries - attempt - 1)
        log.warning("[%s] proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
                    self.name)
        return False

    def _controller_endpoint(self) -> Optional[tuple[str, int]]:
        """The controller's inter-broker endpoint, from ZooKeeper."""
        try:
            controller_id = self.zk.get_controller_id()
            info = self.zk.get_broker(controller_id) if controller_id is not None else None
        except KeeperException:
            return None
        if info is None:
            return None
        listener = self.config.inter_broker_listener_name
        ep = next((e for e in info.endpoints if e.listener_name == listener), None)
        return (ep.host or "127.0.0.1", ep.port) if ep is not None else None

    async def shutdown(self, *, controlled: Optional[bool] = None) -> None:
        """A clean shutdown: move leaderships away (``controlled``, default ``controlled.shutdown.enable``),
        stop serving, flush and checkpoint every log, leave ZooKeeper."""
        if not self.is_running:
            return
        log.info("[%s] shutting down", self.name)
        if self.config["controlled.shutdown.enable"] if controlled is None else controlled:
            log.info("[%s] starting controlled shutdown", self.name)
            try:
                self.controlled_shutdown_succeeded = await self.controlled_shutdown()
            except Exception:
                log.exception("[%s] error during controlled shutdown", self.name)
        self.is_running = False
        if self.socket_server is not None:
            await self.socket_server.stop()
        for handlers in (self.handlers, self.control_plane_handlers):
            if handlers is not None:
                await handlers.shutdown()
        for apis in (self.apis, self.control_plane_apis):
            if apis is not None:
                await apis.shutdown()
        if self.controller is not None:
            await self.controller.shutdown()
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        self._stop_transaction_coordinator()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
            # Every log's high watermark, including partitions a StopReplica (controlled shutdown) released.
            self.log_manager.checkpoint_high_watermarks()
        if self.log_manager is not None:
            self.log_manager.shutdown()
        if self.scheduler is not None:
            self.scheduler.shutdown()
        if self.zk is not None:
            self.zk.close()
        if self._owns_store and self.zk_store is not None:
            self.zk_store.close()
        log.info("[%s] shut down completed", self.name)


def _memory_pool(cfg: KafkaConfig) -> MemoryPool:
    """``queued.max.request.bytes`` > 0: a pool of that many bytes, one request (``socket.request.max.bytes``) at
    most at a time, not strict -- Kafka's ``SimpleMemoryPool``; else no limit."""
    queued = cfg["queued.max.request.bytes"]
    return SimpleMemoryPool(queued, cfg["socket.request.max.bytes"], strict=False) if queued > 0 else MemoryPool.NONE


def _connection_quotas(cfg: KafkaConfig, time) -> ConnectionQuotas:
    return ConnectionQuotas(
        max_connections=cfg["max.connections"], max_connections_per_ip=cfg["max.connections.per.ip"],
        per_ip_overrides=cfg.max_connections_per_ip_overrides,
        max_connection_creation_rate=cfg["max.connection.creation.rate"],
        listener_limits={ep.listener_name: (cfg.listener_value(ep.listener_name, "max.connections"),
                                            cfg.listener_value(ep.listener_name, "max.connection.creation.rate"))
                         for ep in cfg.listeners},
        inter_broker_listener=cfg.inter_broker_listener_name, time=time)
