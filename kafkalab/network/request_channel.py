"""The request channel: where decoded requests wait for a request-handler, and how every request is measured.

Theory of operation
-------------------
Kafka splits request processing between two kinds of threads. *Network threads* (processors) read bytes
from sockets, cut them into frames and parse the header and body; they put each request into one bounded
**request queue** (``queued.max.requests``, 500 by default). *Request handler threads* (``num.io.threads``)
take requests from that queue, do the work (append to a log, read a log, look up metadata) and hand back a
response, which the network thread writes to the socket. When the queue is full the network threads stop
reading: the back-pressure reaches the clients as full TCP windows.

kafkalab runs the same design on one asyncio event loop: processors and handlers are coroutines, the queue is
an ``asyncio.Queue``. A handler answers a request with a response *action*: send this body
(:class:`SendResponse`), send nothing but carry on (:class:`NoOpResponse`, for ``acks=0`` produces) or close
the connection (:class:`CloseConnectionResponse`).

Every request is timed the way Kafka's request metrics time it (``RequestChannel.updateRequestMetrics``)::

    received ─ queue ─> dequeued ─ local ─> handler done ─ remote ─> response ready ─ send ─> written
               requestQueueTimeMs  localTimeMs             remoteTimeMs (purgatory)    responseSendTimeMs

and recorded in a :class:`RequestLog` (a bounded history plus subscribers) and :class:`RequestMetrics`
(per-API counts, bytes and rates), which the labs plot.

Mirrors: ``core/src/main/scala/kafka/network/RequestChannel.scala``,
``core/src/main/scala/kafka/server/KafkaRequestHandler.scala``, ``core/src/main/scala/kafka/network/RequestMetrics``.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import threading
from typing import Any, Callable, NamedTuple, Optional

from kafkalab.common.time import SYSTEM, Time
from kafkalab.protocol import api_name

__all__ = ["RequestContext", "NetworkRequest", "SendResponse", "NoOpResponse", "CloseConnectionResponse",
           "RequestChannel", "RequestRecord", "RequestLog", "RequestMetrics", "ANONYMOUS"]

ANONYMOUS = "User:ANONYMOUS"


@dataclasses.dataclass(frozen=True)
class RequestContext:
    """Who sent a request and over which listener: what handlers need besides the body itself."""

    connection_id: str
    client_host: str
    client_port: int
    listener_name: str
    security_protocol: str
    principal: str
    header: Any
    client_software_name: Optional[str] = None
    client_software_version: Optional[str] = None

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def client_id(self) -> Optional[str]:
        return self.header.client_id


class SendResponse(NamedTuple):
    """Answer with this response body (encoded by the network layer at the request's version)."""

    body: Any


class NoOpResponse(NamedTuple):
    """Send nothing, unmute the connection (a produce with ``acks=0``)."""


class CloseConnectionResponse(NamedTuple):
    """Close the connection without answering (what Kafka does when an ``acks=0`` produce fails)."""

    reason: str = ""


class NetworkRequest:
    """A decoded request travelling from a processor to a handler and back, with its timestamps (ns)."""

    __slots__ = ("context", "body", "request_bytes", "start_ns", "received_ms", "dequeue_ns", "local_complete_ns",
                 "response_complete_ns", "response", "delayed", "error", "_release", "message_conversions_time_ns",
                 "temporary_memory_bytes")

    def __init__(self, context: RequestContext, body, request_bytes: int, start_ns: int, received_ms: int = 0):
        self.context = context
        self.body = body
        self.request_bytes = request_bytes
        self.start_ns = start_ns
        self.received_ms = received_ms
        self.dequeue_ns = start_ns
        self.local_complete_ns = 0
        self.response_complete_ns = 0
        self.response: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self.delayed = False       # completed later (waiting in purgatory): remote time > 0
        self.error: Optional[str] = None
        self._release: Optional[Callable[[], None]] = None
        #: set by the Produce and Fetch handlers when records changed format (Kafka's request fields of these names)
        self.message_conversions_time_ns = 0
        self.temporary_memory_bytes = 0

    def on_release(self, release: Callable[[], None]) -> None:
        """What :meth:`release_buffer` does: give the request's bytes back to the memory pool."""
        self._release = release

    def release_buffer(self) -> None:
        """The request's bytes go back to the memory pool (``queued.max.request.bytes``), once: Kafka's
        ``Request.releaseBuffer``, called by the request handler when ``KafkaApis`` is done with the request."""
        release, self._release = self._release, None
        if release is not None:
            release()

    @property
    def header(self):
        return self.context.header

    def __repr__(self) -> str:
        c = self.context
        return (f"<NetworkRequest {api_name(c.api_key)} v{c.api_version} correlation_id={c.correlation_id} "
                f"client_id={c.client_id!r} {c.connection_id}>")


class RequestRecord(NamedTuple):
    """One handled request, as the request log keeps it (times in ms, Kafka's metric names in snake_case)."""

    connection_id: str
    listener_name: str
    client_id: Optional[str]
    correlation_id: int
    api_key: int
    api_version: int
    api_name: str
    request_queue_time_ms: float
    local_time_ms: float
    remote_time_ms: float
    response_send_time_ms: float
    total_time_ms: float
    request_bytes: int
    response_bytes: int
    completed: str          # "response", "no-response" or "closed"
    received_ms: int        # wall clock (Time.milliseconds) when the request arrived
    principal: str = ANONYMOUS   # who sent it: "User:alice" after a SASL login
    #: Produce/Fetch only: time spent converting message formats (v0/v1 <-> v2), and the bytes it held in memory
    message_conversions_time_ms: float = 0.0
    temporary_memory_bytes: int = 0


class RequestLog:
    """The last ``capacity`` handled requests, and callbacks that see each one as it completes."""

    def __init__(self, capacity: int = 10_000):
        self._records: collections.deque = collections.deque(maxlen=capacity)
        self._subscribers: list[Callable[[RequestRecord], None]] = []
        self._lock = threading.Lock()

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(record)
            except Exception:  # an observer must never break the broker
                pass

    def subscribe(self, callback: Callable[[RequestRecord], None]) -> Callable[[], None]:
        """Call ``callback(record)`` for every completed request; returns a function that unsubscribes."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)
        return unsubscribe

    @property
    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)


class _ApiStats:
    __slots__ = ("requests", "request_bytes", "response_bytes", "total_time_ms", "recent")

    def __init__(self):
        self.requests = 0
        self.request_bytes = 0
        self.response_bytes = 0
        self.total_time_ms = 0.0
        self.recent: collections.deque = collections.deque()  # (ms, request_bytes, response_bytes)


class RequestMetrics:
    """Per-API request counts, request and response bytes, and rates over a sliding window, plus connection
    counts. Kafka's nearest metrics: the count of the ``RequestsPerSec`` meter (whose rates are 1/5/15-minute
    moving averages, not a window) and the ``RequestBytes`` histogram per API; responses are counted only per
    network thread (``socket-server-metrics``). ``request_bytes_per_sec``/``response_bytes_per_sec`` are whole
    request and response bytes, not Kafka's ``BytesInPerSec``/``BytesOutPerSec`` (record bytes per topic)."""

    def __init__(self, time: Time = SYSTEM, window_ms: int = 30_000):
        self.time = time
        self.window_ms = window_ms
        self._by_api: dict[int, _ApiStats] = collections.defaultdict(_ApiStats)
        self.connections_created = 0
        self.connections_closed = 0
        self._lock = threading.Lock()

    def record(self, rec: RequestRecord) -> None:
        now = self.time.milliseconds()
        with self._lock:
            s = self._by_api[rec.api_key]
            s.requests += 1
            s.request_bytes += rec.request_bytes
            s.response_bytes += rec.response_bytes
            s.total_time_ms += rec.total_time_ms
            s.recent.append((now, rec.request_bytes, rec.response_bytes))
            self._trim(s, now)

    def _trim(self, s: _ApiStats, now: int) -> None:
        while s.recent and s.recent[0][0] < now - self.window_ms:
            s.recent.popleft()

    def snapshot(self) -> list[dict]:
        """One row per API seen: totals and rates over the window."""
        now = self.time.milliseconds()
        rows = []
        with self._lock:
            for key, s in sorted(self._by_api.items()):
                self._trim(s, now)
                seconds = self.window_ms / 1000.0
                rows.append({
                    "api_key": key, "api_name": api_name(key), "requests": s.requests,
                    "request_bytes": s.request_bytes, "response_bytes": s.response_bytes,
                    "requests_per_sec": len(s.recent) / seconds,
                    "request_bytes_per_sec": sum(r[1] for r in s.recent) / seconds,
                    "response_bytes_per_sec": sum(r[2] for r in s.recent) / seconds,
                    "avg_total_time_ms": s.total_time_ms / s.requests if s.requests else 0.0,
                })
        return rows

    @property
    def connection_count(self) -> int:
        return self.connections_created - self.connections_closed


class RequestChannel:
    """The bounded queue between processors and request handlers, and the place requests are accounted."""

    def __init__(self, queue_size: int = 500, time: Time = SYSTEM, log_capacity: int = 10_000,
                 request_log: Optional[RequestLog] = None):
        self.time = time
        self._queue: "asyncio.Queue[NetworkRequest]" = asyncio.Queue(maxsize=queue_size)
        #: Kafka has one request log (``kafka.request.logger``) for every channel: pass the data plane's to share it
        self.request_log = request_log if request_log is not None else RequestLog(log_capacity)
        self.metrics = RequestMetrics(time)

    @property
    def queue_size(self) -> int:
        return self._queue.qsize()

    async def send_request(self, request: NetworkRequest) -> None:
        """Called by a processor; waits while the queue is full (back-pressure)."""
        await self._queue.put(request)

    async def receive_request(self) -> NetworkRequest:
        """Called by a request handler."""
        request = await self._queue.get()
        request.dequeue_ns = self.time.nanoseconds()
        return request

    def send_response(self, request: NetworkRequest, action) -> None:
        """A handler's answer (or a delayed operation's, later) goes back to the processor."""
        request.response_complete_ns = self.time.nanoseconds()
        if not request.local_complete_ns:
            request.local_complete_ns = request.response_complete_ns
        if not request.response.done():
            request.response.set_result(action)

    def complete(self, request: NetworkRequest, response_bytes: int, completed: str, end_ns: int) -> RequestRecord:
        """Called by the processor once the response is on the wire: record timings and metrics."""
        ms = 1e-6
        c = request.context
        local_done = request.local_complete_ns or end_ns
        response_done = request.response_complete_ns or end_ns
        record = RequestRecord(
            connection_id=c.connection_id, listener_name=c.listener_name, client_id=c.client_id,
            correlation_id=c.correlation_id, api_key=c.api_key, api_version=c.api_version,
            api_name=api_name(c.api_key),
            request_queue_time_ms=max(0, request.dequeue_ns - request.start_ns) * ms,
            local_time_ms=max(0, local_done - request.dequeue_ns) * ms,
            remote_time_ms=max(0, response_done - local_done) * ms,
            response_send_time_ms=max(0, end_ns - response_done) * ms,
            total_time_ms=max(0, end_ns - request.start_ns) * ms,
            request_bytes=request.request_bytes, response_bytes=response_bytes, completed=completed,
            received_ms=request.received_ms, principal=c.principal,
            message_conversions_time_ms=request.message_conversions_time_ns * ms,
            temporary_memory_bytes=request.temporary_memory_bytes)
        self.request_log.append(record)
        self.metrics.record(record)
        return record
