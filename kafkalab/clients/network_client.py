"""The network client: one connection per broker, pipelined requests, ApiVersions, metadata. Asyncio inside.

Theory of operation
-------------------
Every kafkalab client (producer, consumer, admin) talks to the cluster through one :class:`NetworkClient`.
It keeps **one connection per broker** (a :class:`BrokerConnection`); there is no pool, because Kafka's
ordering guarantees are per connection: a broker answers the requests of one connection strictly in the order
they arrived.

Per connection (each a :class:`~.broker_connection.BrokerConnection`):

* **Correlation ids.** Each request carries an ``int32 correlation_id`` that counts up per connection; the
  response echoes it, and since answers come back in order, the client checks that each response answers the
  *oldest* request still in flight (Java fails the connection when they differ: the stream is out of step).
* **Pipelining.** Up to ``max.in.flight.requests.per.connection`` requests may be written before the first
  answer arrives; one reader task takes the answers off the socket as they come. A sender that finds the
  connection full waits for a slot.
* **ApiVersions first.** Right after connecting the client sends ``ApiVersionsRequest`` (see
  :mod:`.api_versions`) and from then on picks the highest common version for each request it builds; a broker
  that answers ``UNSUPPORTED_VERSION`` gets the request again at the version it says it supports, or v0.
* **SASL.** With ``security.protocol=SASL_PLAINTEXT`` the connection logs in after ApiVersions and before it
  is *ready* (:mod:`.sasl`); a failed login fails the connection with the broker's error
  (SASL_AUTHENTICATION_FAILED is not retried: the password will not get better). With a session lifetime
  (KIP-368) the next request after 85-95% of it re-authenticates first, alone on the connection.
* **Timeouts.** A request without an answer after ``request.timeout.ms`` fails with ``REQUEST_TIMED_OUT``, and
  the connection is closed -- answers are ordered, so a lost one would shift every later one. Every other
  in-flight request fails with ``NETWORK_EXCEPTION``; callers retry both.
* **Reconnect backoff.** After a failed connection the next attempt waits ``reconnect.backoff.ms``, doubling
  per consecutive failure up to ``reconnect.backoff.max.ms`` (with ±20 % jitter, as Java does).
* **TLS.** With ``security.protocol`` SSL (or SASL_SSL) every connection starts with a TLS handshake, on one
  context made from the ``ssl.*`` keys when the client is created (:mod:`kafkalab.security.ssl_factory`): the
  broker's chain is checked against ``ssl.truststore.*``, its name against the host connected to
  (``ssl.endpoint.identification.algorithm=https``), and ``ssl.keystore.*`` is the certificate the client
  presents when the broker asks for one. A failed handshake fails the connection with its reason.

Every one of these deadlines is decided by the client's injected ``Time`` (``NetworkClient(config,
time=MockTime())``) through a :class:`~.clock.ClientClock` (``client.waits``): with a mock clock a request
times out when the clock is advanced past ``request.timeout.ms``, not when the wall clock gets there.

Across connections, the client owns the :class:`~.metadata.Metadata` cache: it bootstraps from
``bootstrap.servers`` (bootstrap addresses get negative node ids, -1, -2..., until the real ids are known),
refreshes every ``metadata.max.age.ms``, whenever someone calls ``request_metadata_update()`` after a
stale-metadata error, and whenever a broker's connection is lost or cannot be made (the broker may have died and
its partitions moved: Java's ``handleServerDisconnect``), sending MetadataRequest to the least loaded broker.
``request_metadata_update()`` also wakes the background updater; ``metadata.request_update()`` alone only marks
the cache stale for whoever refreshes next.

Every finished exchange is offered to the client's trace hook (:mod:`.tracing`) with the raw frames, and
every connection opened or closed, request written and response read is counted in ``client.metrics``
(:mod:`.selector_metrics`: Kafka's ``request-rate``, ``outgoing-byte-rate``, ``connection-creation-rate``...).

Mirrors ``clients/src/main/java/org/apache/kafka/clients/{NetworkClient,InFlightRequests,
ClusterConnectionStates,DefaultMetadataUpdater}.java`` (the latter is inside NetworkClient).
"""
from __future__ import annotations

import asyncio
import random
from time import perf_counter
from typing import Callable, Optional

from kafkalab.clients.broker_connection import BrokerConnection
from kafkalab.clients.clock import ClientClock
from kafkalab.clients.errors import ClientClosedError, NetworkException
from kafkalab.clients.metadata import BrokerInfo, ClusterView, Metadata
from kafkalab.clients.sasl import client_login
from kafkalab.clients.selector_metrics import SelectorMetrics
from kafkalab.common.metrics import MetricConfig, Metrics
from kafkalab.clients.tracing import TraceEvent
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class
from kafkalab.security.ssl_factory import CLIENT, SslFactory

__all__ = ["NetworkClient", "BrokerConnection", "parse_bootstrap"]


def parse_bootstrap(servers) -> list[tuple[str, int]]:
    out = []
    for item in servers:
        host, sep, port = item.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap.servers entry {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    return out


def _consume_outcome(task: "asyncio.Future") -> None:
    """Mark a background task's exception as seen (its waiters report it; asyncio must not print
    "Task exception was never retrieved" when there are none left, e.g. after close())."""
    if not task.cancelled():
        task.exception()


class NetworkClient:
    """Connections, metadata and the trace hook of one client. All methods run on the client's event loop."""

    def __init__(self, config, *, tracer: Optional[Callable[[TraceEvent], None]] = None,
                 max_in_flight: Optional[int] = None, allow_auto_topic_creation: bool = True, time=None,
                 metric_group_prefix: str = "client"):
        self.config = config
        #: the injected clock (``SystemTime`` unless given) and the waits that obey it
        self.waits = ClientClock(time)
        self.time = self.waits.time
        self.client_id: str = config["client.id"]
        self.bootstrap = parse_bootstrap(config["bootstrap.servers"])
        self.max_in_flight = max_in_flight or config.get("max.in.flight.requests.per.connection", 5)
        self.request_timeout_ms = config["request.timeout.ms"]
        self.reconnect_backoff_ms = config["reconnect.backoff.ms"]
        self.reconnect_backoff_max_ms = config["reconnect.backoff.max.ms"]
        self.setup_timeout_ms = config["socket.connection.setup.timeout.ms"]
        #: TLS for security.protocol SSL / SASL_SSL: one context from the ssl.* keys, checked now
        self.ssl_context = (SslFactory(CLIENT, config).context
                            if str(config.get("security.protocol", "PLAINTEXT")).upper() in ("SSL", "SASL_SSL")
                            else None)
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.metadata = Metadata(metadata_max_age_ms=config["metadata.max.age.ms"],
                                 retry_backoff_ms=config["retry.backoff.ms"])
        self.connections: dict[int, BrokerConnection] = {}
        #: Kafka's client metrics (``metrics.sample.window.ms``, ``metrics.num.samples``), on the injected Time
        self.metrics = Metrics(MetricConfig(config["metrics.sample.window.ms"], config["metrics.num.samples"]),
                               self.time)
        self.selector_metrics = SelectorMetrics(self.metrics, metric_group_prefix,
                                                lambda: sum(not c.closed for c in self.connections.values()))
        self._connecting: dict[int, asyncio.Future] = {}
        self._failures: dict[int, tuple[int, float]] = {}     # node -> (consecutive failures, last failure ms)
        self._tracer = tracer
        self._t0 = perf_counter()
        self._metadata_task: Optional[asyncio.Future] = None
        self._metadata_wakeup: Optional[asyncio.Event] = None
        self.metadata.on_update_requested = self._wake_metadata_updater
        self._loop_task: Optional[asyncio.Task] = None
        self.on_connection_closed: list[Callable[[BrokerConnection], None]] = []
        #: node ids that are not brokers' ids: the consumer's separate coordinator connection (Java uses
        #: Integer.MAX_VALUE - broker id, so group traffic never queues behind a long-polling fetch)
        self.extra_nodes: dict[int, tuple[str, int]] = {}
        self.closed = False
        #: what connections log in with (security.protocol=SASL_*), or None
        self.login = client_login(config)

    # -- time and tracing -------------------------------------------------------------------------------------
    def clock(self) -> float:
        """Seconds since the client started, on the real clock: trace timings measure, they never decide."""
        return perf_counter() - self._t0

    def now_ms(self) -> float:
        """The injected Time, in ms: every deadline of the client is compared with this."""
        return self.time.milliseconds()

    def trace(self, event: TraceEvent) -> None:
        if self._tracer is None:
            return
        try:
            self._tracer(event)
        except Exception as e:  # noqa: BLE001 -- a broken hook never breaks the client
            errors = getattr(self._tracer, "errors", None)
            if isinstance(errors, list):
                errors.append(e)

    # -- nodes and connections --------------------------------------------------------------------------------
    def node_address(self, node_id: int) -> Optional[tuple[str, int]]:
        if node_id in self.extra_nodes:
            return self.extra_nodes[node_id]
        if node_id < 0:
            i = -node_id - 1
            return self.bootstrap[i] if i < len(self.bootstrap) else None
        b = self.metadata.cluster.brokers.get(node_id)
        return None if b is None else (b.host, b.port)

    def known_nodes(self) -> list[int]:
        brokers = list(self.metadata.cluster.brokers)
        return brokers if brokers else [-(i + 1) for i in range(len(self.bootstrap))]

    def backoff_remaining_ms(self, node_id: int) -> float:
        failures, last = self._failures.get(node_id, (0, 0.0))
        if not failures:
            return 0.0
        backoff = min(self.reconnect_backoff_ms * 2 ** (failures - 1), self.reconnect_backoff_max_ms)
        backoff *= random.uniform(0.8, 1.2)
        return max(0.0, last + backoff - self.now_ms())

    def is_ready(self, node_id: int) -> bool:
        conn = self.connections.get(node_id)
        return conn is not None and conn.ready

    def has_room(self, node_id: int) -> bool:
        conn = self.connections.get(node_id)
        return conn is not None and conn.has_room()

    def in_flight_count(self, node_id: Optional[int] = None) -> int:
        if node_id is not None:
            conn = self.connections.get(node_id)
            return len(conn.in_flight) if conn else 0
        return sum(len(c.in_flight) for c in self.connections.values())

    async def connection(self, node_id: int) -> BrokerConnection:
        """The ready connection to ``node_id``, connecting (after any reconnect backoff) when needed."""
        if self.closed:
            raise ClientClosedError("the client is closed")
        conn = self.connections.get(node_id)
        if conn is not None and conn.ready:
            return conn
        pending = self._connecting.get(node_id)
        if pending is None:
            pending = asyncio.ensure_future(self._connect(node_id))
            pending.add_done_callback(_consume_outcome)
            self._connecting[node_id] = pending
            pending.add_done_callback(lambda _f, n=node_id: self._connecting.pop(n, None))
        return await asyncio.shield(pending)

    def start_connecting(self, node_id: int, on_done: Optional[Callable[[], None]] = None) -> None:
        """Begin connecting in the background (a sender does not wait). ``on_done`` is called once the
        connection is ready or has failed, as Java's ``poll`` returns then: a waiting sender is woken."""
        if self.is_ready(node_id) or self.closed or (node_id in self._connecting and on_done is None):
            return
        task = asyncio.ensure_future(self.connection(node_id))
        task.add_done_callback(_consume_outcome)
        if on_done is not None:
            task.add_done_callback(lambda _task: on_done())

    async def _connect(self, node_id: int) -> BrokerConnection:
        wait = self.backoff_remaining_ms(node_id)
        if wait > 0:
            await self.waits.sleep(wait)
        address = self.node_address(node_id)
        if address is None:
            raise NetworkException(f"node {node_id} is not in the metadata")
        conn = BrokerConnection(self, node_id, *address)
        try:
            await conn.open(self.setup_timeout_ms)
        except Exception:
            conn.close("connection setup failed")
            failures, _ = self._failures.get(node_id, (0, 0.0))
            self._failures[node_id] = (failures + 1, self.now_ms())
            if node_id >= 0:                # the node may be gone for good: ask who leads now
                self.request_metadata_update()
            raise
        self._failures.pop(node_id, None)
        self.connections[node_id] = conn
        return conn

    def _connection_closed(self, conn: BrokerConnection) -> None:
        if self.connections.get(conn.node_id) is conn:
            del self.connections[conn.node_id]
        if not self.closed and conn.api_versions is not None:
            # A broker that hung up (EOF, reset, timeout) may have died: its leaderships move elsewhere. As Java's
            # handleServerDisconnect does, ask for fresh metadata -- and wake the updater, which otherwise sleeps
            # up to metadata.max.age.ms. (Failed setups are handled in _connect.)
            self.request_metadata_update()
        for callback in list(self.on_connection_closed):
            callback(conn)

    def least_loaded_node(self) -> Optional[int]:
        """The ready node with the fewest requests in flight; else a node we may connect to now."""
        nodes = self.known_nodes()
        random.shuffle(nodes)
        ready = [n for n in nodes if self.is_ready(n)]
        if ready:
            return min(ready, key=self.in_flight_count)
        free = [n for n in nodes if self.backoff_remaining_ms(n) == 0]
        return (free or nodes or [None])[0]

    async def send(self, node_id: int, body, api_version: Optional[int] = None, **kw):
        conn = await self.connection(node_id)
        return await conn.send(body, api_version, **kw)

    async def send_any(self, body, api_version: Optional[int] = None, *, attempts: Optional[int] = None, **kw):
        """Send to the least loaded node; on a connection failure try the next one."""
        last: Optional[Exception] = None
        for _ in range(attempts or max(2, len(self.known_nodes()) + 1)):
            node = self.least_loaded_node()
            if node is None:
                break
            try:
                return await self.send(node, body, api_version, **kw)
            except NetworkException as e:
                last = e
        raise last or NetworkException("no broker is reachable")

    # -- metadata ---------------------------------------------------------------------------------------------
    def metadata_request(self, version: int, topics: Optional[list[str]]):
        cls = request_class(ApiKey.METADATA)
        topic_cls = cls.MetadataRequestTopic
        body_topics = None if topics is None else tuple(topic_cls(name=t) for t in topics)
        return cls(topics=body_topics, allow_auto_topic_creation=self.allow_auto_topic_creation)

    async def update_metadata(self, topics: Optional[list[str]] = None) -> ClusterView:
        """Send one MetadataRequest (for ``topics``, or the topics of interest) and fold in the answer."""
        if topics is None and self._metadata_task is not None and not self._metadata_task.done():
            return await asyncio.shield(self._metadata_task)
        task = asyncio.ensure_future(self._update_metadata(topics))
        # shielded: if every waiter is cancelled (the client closing), nobody else reads its outcome
        task.add_done_callback(_consume_outcome)
        if topics is None:
            self._metadata_task = task
        return await asyncio.shield(task)

    async def _update_metadata(self, topics: Optional[list[str]]) -> ClusterView:
        named = topics if topics is not None else self.metadata.request_topics()
        self.metadata.attempt(self.now_ms())
        last: Optional[Exception] = None
        for _ in range(max(2, len(self.known_nodes()) + 1)):
            node = self.least_loaded_node()
            if node is None:
                break
            try:
                conn = await self.connection(node)
                version = conn.version_for(ApiKey.METADATA)
                resp = await conn.send(self.metadata_request(version, named), version)
            except NetworkException as e:
                last = e
                continue
            requested = None if named is None else set(named)
            return self.metadata.update(resp.body, self.now_ms(), requested_topics=requested)
        self.metadata.failed(self.now_ms())
        raise last or NetworkException("no broker is reachable for metadata")

    def request_metadata_update(self) -> None:
        self.metadata.request_update()
        self._wake_metadata_updater()

    def _wake_metadata_updater(self) -> None:
        if self._metadata_wakeup is not None:
            self._metadata_wakeup.set()

    def start_metadata_updater(self) -> None:
        """Keep the cache fresh in the background: by ``metadata.max.age.ms`` and on request."""
        if self._loop_task is None:
            self._metadata_wakeup = asyncio.Event()
            self._loop_task = asyncio.get_running_loop().create_task(self._metadata_loop())

    async def _metadata_loop(self) -> None:
        while not self.closed:
            wait = self.metadata.time_to_next_update(self.now_ms())
            if wait > 0:
                self._metadata_wakeup.clear()
                await self.waits.event(self._metadata_wakeup, wait)
                continue
            if not self.metadata.topics and not self.metadata.all_topics:
                self.metadata.last_refresh_ms = self.now_ms()
                self.metadata.need_update = False
                continue
            try:
                await self.update_metadata()
            except (KafkaProtocolError, OSError, ClientClosedError):
                pass

    async def wait_for_metadata(self, topic: str, timeout_ms: float) -> ClusterView:
        """Wait until ``topic`` has partitions in the cache (``max.block.ms`` in Java's ``waitOnMetadata``).
        A topic new to the cache is asked for at once; later attempts respect ``retry.backoff.ms``."""
        from kafkalab.clients.errors import KafkaTimeoutError
        self.metadata.add_topics(topic)
        deadline = self.now_ms() + timeout_ms
        first = True
        while True:
            cluster = self.metadata.cluster
            if cluster.partition_count(topic):
                return cluster
            err = cluster.topics.get(topic).error_code if topic in cluster.topics else 0
            if err and err not in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE):
                raise KafkaProtocolError(err, f"metadata for topic {topic!r}")
            remaining = deadline - self.now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(f"Topic {topic} not present in metadata after {timeout_ms:.0f} ms.")
            if not first:
                await self.waits.sleep(min(self.metadata.retry_backoff_ms, remaining))
            first = False
            try:
                await self.update_metadata(self.metadata.request_topics())
            except NetworkException as e:
                if not e.retriable:     # a failed TLS handshake: waiting longer cannot help
                    raise

    def broker(self, node_id: int) -> Optional[BrokerInfo]:
        return self.metadata.cluster.brokers.get(node_id)

    async def close(self) -> None:
        self.closed = True
        self.waits.close()
        if self._loop_task is not None:
            self._loop_task.cancel()
        for conn in list(self.connections.values()):
            conn.close("client closed")
        for pending in list(self._connecting.values()):
            pending.cancel()
