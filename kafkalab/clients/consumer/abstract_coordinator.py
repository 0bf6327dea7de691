"""The member's side of the classic group protocol: find the coordinator, join, sync, heartbeat, leave.

Theory of operation
-------------------
A group lives on one broker, its **coordinator** (the leader of the ``__consumer_offsets`` partition the group
id hashes to). A member finds it with ``FindCoordinator`` (key = ``group.id``, key_type 0) and talks to it over
a connection of its own, so that group requests never wait behind a long-polling fetch (Java gives that
connection the node id ``Integer.MAX_VALUE - broker id``; so do we).

Joining is two round trips, and every member makes both::

    JoinGroup(member_id="", protocols=[(name, metadata)...])
        <- MEMBER_ID_REQUIRED, member_id="consumer-1-4f2c..."     (v4+: a first join only gets an id)
    JoinGroup(member_id="consumer-1-4f2c...", ...)                  (waits until everyone has (re)joined)
        <- generation_id=7, protocol_name="range", leader=..., members=[...] (the list only for the leader)
    SyncGroup(generation_id=7, assignments=[...] if leader else [])  (waits for the leader's assignments)
        <- assignment=<this member's bytes>

The broker only moves bytes; what the bytes mean (``protocol_type`` "consumer": subscriptions in, partition
assignments out) belongs to the subclass, :mod:`.consumer_coordinator`. The JoinGroup carries
``session_timeout_ms`` (how long the coordinator waits for a heartbeat before evicting us) and
``rebalance_timeout_ms`` (``max.poll.interval.ms``: how long a rebalance waits for us to rejoin), and, for a
*static member* (KIP-345), the ``group.instance.id`` that lets a restarted consumer take its old place without a
rebalance.

Once in the group (state STABLE) a background task sends a **Heartbeat** every ``heartbeat.interval.ms``. Its
answer is how a member learns that the group is rebalancing (``REBALANCE_IN_PROGRESS``: rejoin at the next
``poll()``), that it was thrown out (``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``: its partitions are *lost*,
rejoin from scratch), or that the coordinator moved (``NOT_COORDINATOR``: find it again). The same task
enforces ``max.poll.interval.ms``: an application that stops calling ``poll()`` is presumed stuck, and the
member leaves the group (LeaveGroup) so its partitions go to someone who is working. ``close()`` leaves
too, so the group need not wait ``session.timeout.ms`` to notice; static members do not leave (they are
expected back).

Member states: UNJOINED -> PREPARING_REBALANCE (JoinGroup sent) -> COMPLETING_REBALANCE (SyncGroup sent) ->
STABLE. Everything runs on the consumer's I/O loop; the rebalance listener callbacks that sit around a
rebalance are called by :class:`~.consumer.Consumer` on the application's thread.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/{AbstractCoordinator,
Heartbeat}.java``.
"""
from __future__ import annotations

import asyncio
import enum
from typing import NamedTuple, Optional

from kafkalab.clients.errors import KafkaTimeoutError, NetworkException
from kafkalab.clients.versioned import fit
from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class

__all__ = ["AbstractCoordinator", "Generation", "NO_GENERATION", "MemberState", "RebalanceNeeded",
           "COORDINATOR_NODE_BASE"]

COORDINATOR_NODE_BASE = 2**31 - 1
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
#: the LeaveGroup reason (KIP-800) when the application did not call poll() within max.poll.interval.ms, as
#: Java's AbstractCoordinator.maybeLeaveGroup sends it
POLL_TIMEOUT_EXPIRED = "consumer poll timeout has expired."


class Generation(NamedTuple):
    generation_id: int
    member_id: str
    protocol_name: Optional[str]


NO_GENERATION = Generation(-1, "", None)


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"


class RebalanceNeeded(Exception):
    """A join or sync round failed in a way that only needs another try (after a backoff)."""


_COORDINATOR_ERRORS = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


class AbstractCoordinator:
    protocol_type = "consumer"

    def __init__(self, client, config):
        self.client = client
        self.group_id: str = config["group.id"]
        self.group_instance_id: Optional[str] = config["group.instance.id"]
        self.session_timeout_ms = config["session.timeout.ms"]
        self.rebalance_timeout_ms = config["max.poll.interval.ms"]
        self.heartbeat_interval_ms = config["heartbeat.interval.ms"]
        self.max_poll_interval_ms = config["max.poll.interval.ms"]
        self.retry_backoff_s = config["retry.backoff.ms"] / 1000
        self.request_timeout_ms = config["request.timeout.ms"]
        #: the FindCoordinator in flight (Java's ``findCoordinatorFuture``): outlives a call that ran out of time
        self._find_coordinator_future: Optional[asyncio.Future] = None
        self.coordinator: Optional[int] = None          # the broker's id
        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.last_poll_ms = client.now_ms()
        self.last_heartbeat_ok_ms = client.now_ms()
        self.poll_timeout_expired = False
        self.wakeup: Optional[asyncio.Event] = None     # set when poll() should attend to the group
        self._heartbeat_task: Optional[asyncio.Task] = None
        self.heartbeats_sent = 0

    # -- hooks for the subclass ------------------------------------------------------------------------------
    def join_metadata(self) -> list:
        """[(protocol name, metadata bytes)] for JoinGroup, preferred first."""
        raise NotImplementedError

    async def perform_assignment(self, leader_id: str, protocol: str, members: list) -> dict:
        """The leader's job: {member_id: assignment bytes}."""
        raise NotImplementedError

    # -- the coordinator -------------------------------------------------------------------------------------
    @property
    def coordinator_node(self) -> Optional[int]:
        """The node id of our own connection to the coordinator (not the broker's id)."""
        return None if self.coordinator is None else COORDINATOR_NODE_BASE - self.coordinator

    def coordinator_unknown(self) -> bool:
        return self.coordinator is None

    def mark_coordinator_unknown(self, reason: str = "") -> None:
        if self.coordinator is not None:
            conn = self.client.connections.get(self.coordinator_node)
            if conn is not None:
                conn.close(f"coordinator unknown: {reason}")
        self.coordinator = None

    async def ensure_coordinator_ready(self, timeout_ms: float) -> None:
        """Find the group's coordinator within ``timeout_ms`` (on the client's clock), else KafkaTimeoutError. As
        Java's ``ensureCoordinatorReady(timer)``, a FindCoordinator still in flight when the time is up stays in
        flight, and the next call waits on that same request: ``poll(0.2)`` returns after 0.2 s even when the
        broker it asked never answers (a broker that is stopping), instead of waiting out the request timeout."""
        deadline = self.client.now_ms() + timeout_ms
        while self.coordinator is None:
            if self._find_coordinator_future is None:
                self._find_coordinator_future = asyncio.ensure_future(self._find_coordinator())
                # its failure is read below, or never if the consumer closes first: then it is not an error to log
                self._find_coordinator_future.add_done_callback(lambda f: f.cancelled() or f.exception())
            pending = self._find_coordinator_future
            if not await self.client.waits.done(pending, max(0.0, deadline - self.client.now_ms())):
                raise KafkaTimeoutError(f"Timeout while finding the coordinator of group {self.group_id!r}")
            self._find_coordinator_future = None
            try:
                pending.result()
                return
            except (NetworkException, KafkaProtocolError) as e:
                if isinstance(e, KafkaProtocolError) and not e.retriable and \
                        e.error_code not in _COORDINATOR_ERRORS:
                    raise
                if self.client.now_ms() >= deadline:
                    raise KafkaTimeoutError(f"Timeout while finding the coordinator of group {self.group_id!r}: "
                                            f"{e}") from None
                await self.client.waits.sleep(self.retry_backoff_s * 1000)

    async def _find_coordinator(self) -> None:
        cls = request_class(ApiKey.FIND_COORDINATOR)
        node = self.client.least_loaded_node()
        conn = await self.client.connection(node)
        version = conn.version_for(ApiKey.FIND_COORDINATOR)
        body = cls(key_type=0, coordinator_keys=(self.group_id,)) if version >= 4 else \
            cls(key=self.group_id, key_type=0)
        resp = await conn.send(fit(body, version), version)
        b = resp.body
        if version >= 4:
            c = b.coordinators[0]
            code, node_id, host, port = c.error_code, c.node_id, c.host, c.port
        else:
            code, node_id, host, port = b.error_code, b.node_id, b.host, b.port
        if code:
            raise KafkaProtocolError(code, f"FindCoordinator for group {self.group_id!r}")
        self.client.extra_nodes[COORDINATOR_NODE_BASE - node_id] = (host, port)
        self.coordinator = node_id

    async def send_to_coordinator(self, body, api_version: Optional[int] = None, timeout_ms: Optional[float] = None):
        node = self.coordinator_node
        if node is None:
            raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not known")
        try:
            conn = await self.client.connection(node)
            if api_version is None:
                api_version = conn.version_for(body.API_KEY)
            return await conn.send(fit(body, api_version), api_version, timeout_ms=timeout_ms)
        except NetworkException as e:
            self.mark_coordinator_unknown(str(e))
            raise

    async def api_version(self, api_key: int) -> int:
        conn = await self.client.connection(self.coordinator_node)
        return conn.version_for(api_key)

    # -- joining ---------------------------------------------------------------------------------------------
    def request_rejoin(self, reason: str) -> None:
        self.rejoin_needed = True
        self.rejoin_reason = reason
        if self.wakeup is not None:
            self.wakeup.set()

    def reset_generation(self, reason: str) -> None:
        """Forget who we were: the next join starts without a member id (partitions are lost)."""
        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self.request_rejoin(reason)

    def needs_rejoin(self) -> bool:
        return self.rejoin_needed

    async def join_group(self, timeout_ms: float):
        """One JoinGroup + SyncGroup round. Returns (generation, protocol, assignment bytes); raises
        :class:`RebalanceNeeded` when it must simply be tried again."""
        await self.ensure_coordinator_ready(timeout_ms)
        self.stop_heartbeats()
        self.state = MemberState.PREPARING_REBALANCE
        join = await self._send_join_group()
        b = join.body
        self.generation = Generation(b.generation_id, b.member_id, b.protocol_name)
        if b.leader == b.member_id and not getattr(b, "skip_assignment", False):
            assignments = await self.perform_assignment(b.leader, b.protocol_name, list(b.members))
        else:
            assignments = {}
        self.state = MemberState.COMPLETING_REBALANCE
        assignment = await self._send_sync_group(assignments)
        self.state = MemberState.STABLE
        self.rejoin_needed = False
        self.last_heartbeat_ok_ms = self.client.now_ms()
        self.start_heartbeats()
        return self.generation, b.protocol_name, assignment

    async def _send_join_group(self):
        cls = request_class(ApiKey.JOIN_GROUP)
        for _ in range(3):                               # MEMBER_ID_REQUIRED asks for exactly one more round
            body = cls(group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                       rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.generation.member_id,
                       group_instance_id=self.group_instance_id, protocol_type=self.protocol_type,
                       protocols=tuple(cls.JoinGroupRequestProtocol(name=n, metadata=m)
                                       for n, m in self.join_metadata()),
                       reason=self.rejoin_reason)
            timeout = max(self.request_timeout_ms, self.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
            resp = await self.send_to_coordinator(body, timeout_ms=timeout)
            code = resp.body.error_code
            if code == ErrorCode.NONE:
                return resp
            if code == ErrorCode.MEMBER_ID_REQUIRED:          # KIP-394: rejoin with the id we were given
                self.generation = Generation(-1, resp.body.member_id, None)
                continue
            self._join_error(code, "JoinGroup")
        raise RebalanceNeeded("JoinGroup kept asking for a member id")

    async def _send_sync_group(self, assignments: dict) -> bytes:
        cls = request_class(ApiKey.SYNC_GROUP)
        g = self.generation
        body = cls(group_id=self.group_id, generation_id=g.generation_id, member_id=g.member_id,
                   group_instance_id=self.group_instance_id, protocol_type=self.protocol_type,
                   protocol_name=g.protocol_name,
                   assignments=tuple(cls.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                     for m, a in assignments.items()))
        resp = await self.send_to_coordinator(body, timeout_ms=max(self.request_timeout_ms,
                                                                   self.rebalance_timeout_ms))
        code = resp.body.error_code
        if code:
            self._join_error(code, "SyncGroup")
        return bytes(resp.body.assignment or b"")

    def _join_error(self, code: int, what: str) -> None:
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset_generation(f"{what}: {ErrorCode(code).name}")
        elif code in _COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(f"{what}: {ErrorCode(code).name}")
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.request_rejoin(f"{what}: the group is rebalancing again")
        elif code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,):
            self.state = MemberState.UNJOINED
            raise KafkaProtocolError(code, f"{what} of group {self.group_id!r} failed")
        self.state = MemberState.UNJOINED
        raise RebalanceNeeded(f"{what}: {ErrorCode(code).name}")

    # -- heartbeats ------------------------------------------------------------------------------------------
    def start_heartbeats(self) -> None:
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    def stop_heartbeats(self) -> None:
        if self._heartbeat_task is not None and self._heartbeat_task is not asyncio.current_task():
            self._heartbeat_task.cancel()
        self._heartbeat_task = None

    def record_poll(self) -> None:
        self.last_poll_ms = self.client.now_ms()

    async def _heartbeat_loop(self) -> None:
        cls = request_class(ApiKey.HEARTBEAT)
        while self.state is MemberState.STABLE:
            await self.client.waits.sleep(self.heartbeat_interval_ms)      # on the client's Time
            if self.state is not MemberState.STABLE:
                return
            now = self.client.now_ms()
            if now - self.last_poll_ms > self.max_poll_interval_ms:
                self.poll_timeout_expired = True
                await self.maybe_leave_group(POLL_TIMEOUT_EXPIRED)
                return
            if now - self.last_heartbeat_ok_ms > self.session_timeout_ms:
                self.mark_coordinator_unknown("session timed out without a successful heartbeat")
                self.request_rejoin("session timed out")
                return
            g = self.generation
            try:
                self.heartbeats_sent += 1
                resp = await self.send_to_coordinator(cls(group_id=self.group_id, generation_id=g.generation_id,
                                                          member_id=g.member_id,
                                                          group_instance_id=self.group_instance_id))
            except (NetworkException, KafkaProtocolError):
                self.request_rejoin("heartbeat failed: coordinator lost")
                return
            code = resp.body.error_code
            if code == ErrorCode.NONE:
                self.last_heartbeat_ok_ms = self.client.now_ms()
            elif code == ErrorCode.REBALANCE_IN_PROGRESS:
                self.request_rejoin("group is rebalancing (heartbeat)")
                return
            elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID):
                self.reset_generation(f"heartbeat: {ErrorCode(code).name}")
                return
            elif code in _COORDINATOR_ERRORS:
                self.mark_coordinator_unknown("heartbeat: " + ErrorCode(code).name)
                self.request_rejoin("coordinator moved")
                return

    # -- leaving ---------------------------------------------------------------------------------------------
    async def maybe_leave_group(self, reason: str) -> None:
        """LeaveGroup (dynamic members only), then forget the generation."""
        g = self.generation
        if self.group_instance_id is None and g.member_id and self.coordinator is not None:
            cls = request_class(ApiKey.LEAVE_GROUP)
            body = cls(group_id=self.group_id, member_id=g.member_id,
                       members=(cls.MemberIdentity(member_id=g.member_id, group_instance_id=None, reason=reason),))
            try:
                await self.send_to_coordinator(body)
            except (NetworkException, KafkaProtocolError):
                pass
        self.stop_heartbeats()
        self.reset_generation(reason)

    async def close(self, leave: bool = True) -> None:
        self.stop_heartbeats()
        if self._find_coordinator_future is not None:
            self._find_coordinator_future.cancel()
        if leave:
            await self.maybe_leave_group("the consumer is being closed")
