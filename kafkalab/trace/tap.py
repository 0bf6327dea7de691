"""The tap: a transparent, protocol-aware proxy between Kafka clients and a real cluster, recording every frame.

Theory of operation
-------------------
``Tap(bootstrap)`` listens on one address that stands for the bootstrap broker. For every client connection it
accepts it opens a connection to the broker behind that port and relays both ways:

* **requests** (client -> broker) are forwarded byte for byte as they arrive; a copy is cut into frames (by the
  framer of :mod:`.tap_framing`, the size rules of :class:`~kafkalab.protocol.FrameReader`) and each complete
  frame is recorded as a :class:`TapFrame` with its decoded header and body (or the decode error);
* **responses** (broker -> client) are forwarded as they arrive too (cut-through, :mod:`.tap_framing`: a
  1 MiB Fetch response is not held back until its last byte is in) while they are cut into frames; each
  complete frame is paired with its request by correlation id (the API key and version a response's bytes do
  not carry come from the request) and recorded before the bytes that complete it go on. Metadata, FindCoordinator and DescribeCluster
  responses are held until complete and re-encoded with every broker address replaced by a tap address
  (:mod:`.tap_rewrite`): the tap opens **one port per broker** the first time a broker is advertised, so a
  client keeps talking through the tap after bootstrap. Every other response is forwarded unchanged.

Bad input never stops the tap: a size prefix that is negative or over ``max_frame_bytes`` is recorded as a
:class:`TapEvent` and the rest of that direction is relayed raw (the broker decides what to do with it); a
close in the middle of a frame is recorded with the bytes left over; an unreachable broker closes the client's
connection and is recorded. What is kept is bounded (``max_frames`` frames and ``max_bytes`` bytes of them,
oldest dropped first, counted in ``dropped``); a slow client slows its broker connection down rather than
filling memory (each relay thread writes before it reads again).

Exports: :meth:`Tap.to_json_lines` (one JSON object per frame or event) and :meth:`Tap.write_pcap` (a libpcap
file tshark's Kafka dissector reads, see :mod:`.pcap`). Threads: one acceptor per tap port, two relays per
connection; all daemon threads, so it works the same in a script, under pytest and in a notebook.

Mirrors nothing in Kafka itself (Kafka has no proxy); the relaying is a ``SocketServer`` processor on the
client side and a ``NetworkClient`` on the broker side, the rewriting is ``advertised.listeners`` done outside.
"""
from __future__ import annotations

import collections
import dataclasses
import html
import json
import socket
import threading
import time
from typing import Any, Callable, Optional

from kafkalab.protocol import (DEFAULT_MAX_FRAME_BYTES, FrameReader, InvalidReceiveError, api_name, decode_request,
                               decode_response, encode_response, request_schema, response_schema, size_prefixed)
from kafkalab.protocol.json_converter import to_json, write
from kafkalab.trace.tap_framing import CutThroughFramer, Forward, Frame
from kafkalab.trace.tap_rewrite import REWRITTEN_APIS, AddressChange, rewrite_response

__all__ = ["Tap", "TapFrame", "TapEvent", "DEFAULT_MAX_FRAMES", "DEFAULT_MAX_BYTES"]

#: Frames a tap keeps before it drops the oldest.
DEFAULT_MAX_FRAMES = 100_000
#: Bytes of recorded frames a tap keeps before it drops the oldest frames.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_RECV_BYTES = 1024 * 1024   # one recv can take a whole 1 MiB Fetch response or Produce request


def _hold_nothing(correlation_id) -> bool:
    return False


def _parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.split(",")[0].strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


@dataclasses.dataclass
class TapFrame:
    """One frame that went through the tap.

    ``direction`` is ``"request"`` or ``"response"``; ``frame`` is what the sender sent (without the size
    prefix), ``forwarded`` what the receiver got when the tap rewrote it (else None). ``time`` is seconds since
    the tap started; ``request_index`` pairs a response with its request (``latency`` in seconds).
    """

    index: int
    connection: int
    direction: str
    time: float
    frame: bytes
    api_key: Optional[int] = None
    api_version: Optional[int] = None
    correlation_id: Optional[int] = None
    client_id: Optional[str] = None
    decoded: Any = None
    error: Optional[str] = None
    request_index: Optional[int] = None
    latency: Optional[float] = None
    forwarded: Optional[bytes] = None
    rewritten: list = dataclasses.field(default_factory=list)

    @property
    def api_name(self) -> str:
        try:
            return api_name(self.api_key)
        except (KeyError, TypeError):
            return f"Unknown({self.api_key})"

    @property
    def wire(self) -> bytes:
        """What the receiver got, with its size prefix."""
        return size_prefixed(self.forwarded if self.forwarded is not None else self.frame)

    def summary(self) -> str:
        """One line: when, which connection, which way, what."""
        arrow = "->" if self.direction == "request" else "<-"
        what = (f"{self.api_name} v{self.api_version}" if self.api_key is not None else "?")
        line = f"{self.time:9.3f} conn {self.connection} {arrow} {what} correlation_id={self.correlation_id} " \
               f"{len(self.frame)} bytes"
        if self.latency is not None:
            line += f" ({self.latency * 1000:.1f} ms)"
        for change in self.rewritten:
            line += f" [node {change.node_id} {change.upstream[0]}:{change.upstream[1]} -> " \
                    f"{change.tap[0]}:{change.tap[1]}]"
        if self.error:
            line += f" ! {self.error}"
        return line

    def body_json(self) -> Optional[str]:
        if self.decoded is None:
            return None
        schema = (request_schema if self.direction == "request" else response_schema)(self.api_key)
        return to_json(write(schema, self.decoded.body, self.api_version))

    def as_dict(self) -> dict:
        body = self.body_json()
        return {"type": "frame", "index": self.index, "connection": self.connection, "direction": self.direction,
                "time": round(self.time, 6), "size": len(self.frame), "api_key": self.api_key,
                "api_name": self.api_name if self.api_key is not None else None, "api_version": self.api_version,
                "correlation_id": self.correlation_id, "client_id": self.client_id,
                "request_index": self.request_index,
                "latency_ms": None if self.latency is None else round(self.latency * 1000, 3),
                "error": self.error, "rewritten": [c.as_dict() for c in self.rewritten],
                "body": None if body is None else json.loads(body), "bytes": self.frame.hex()}


@dataclasses.dataclass(frozen=True)
class TapEvent:
    """Something that happened on a connection besides a frame: opened, closed, bad size, unreachable broker."""

    connection: int
    time: float
    kind: str
    detail: str = ""

    def as_dict(self) -> dict:
        return {"type": "event", "connection": self.connection, "time": round(self.time, 6), "kind": self.kind,
                "detail": self.detail}


@dataclasses.dataclass
class TapConnection:
    """One client connection: who, through which tap port, to which broker."""

    number: int
    client: tuple[str, int]
    tap: tuple[str, int]
    upstream: tuple[str, int]
    closed: bool = False


class Tap:
    """A recording proxy in front of a Kafka cluster (see the module docstring).

    ``Tap("localhost:9092", listen="127.0.0.1:0").start()``; clients use :attr:`bootstrap_servers`;
    ``on_frame`` (optional) is called with each frame as it is recorded. With a
    fixed listen port P, the brokers get P+1, P+2, ... in the order they are first advertised; with port 0
    every tap port is a free one.
    """

    def __init__(self, bootstrap_server: str, listen: str = "127.0.0.1:0", *,
                 max_frames: int = DEFAULT_MAX_FRAMES, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 on_frame: Optional[Callable[[TapFrame], None]] = None):
        self.on_frame = on_frame   # called with each recorded frame, on the relaying thread
        self.upstream = _parse_address(bootstrap_server)
        self.listen_host, self._listen_port = _parse_address(listen)
        self.max_frame_bytes = max_frame_bytes
        self.max_bytes = max_bytes
        self._kept_bytes = 0
        self.frames: collections.deque[TapFrame] = collections.deque(maxlen=max_frames)
        self.events: collections.deque[TapEvent] = collections.deque(maxlen=max_frames)
        self.connections: list[TapConnection] = []
        self.dropped = 0
        self._lock = threading.RLock()
        self._next_index = 0
        self._ports: dict[tuple[str, int], tuple[str, int]] = {}   # upstream broker address -> tap address
        self._servers: list[socket.socket] = []
        self._sockets: set = set()
        self._stopped = threading.Event()
        self._t0 = time.monotonic()
        self.started_at = time.time()

    # -- life cycle -------------------------------------------------------------------------------------------------
    def start(self) -> "Tap":
        self._open_port(self.upstream, self._listen_port)
        return self

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            for s in self._servers + list(self._sockets):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def __enter__(self) -> "Tap":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        host, port = self._ports[self.upstream]
        return f"{host}:{port}"

    @property
    def broker_ports(self) -> dict[tuple[str, int], tuple[str, int]]:
        """Each upstream broker address and the tap address that stands for it."""
        with self._lock:
            return dict(self._ports)

    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _open_port(self, upstream: tuple[str, int], port: int) -> tuple[str, int]:
        server = socket.create_server((self.listen_host, port))
        address = (self.listen_host, server.getsockname()[1])
        self._servers.append(server)
        self._ports[upstream] = address
        threading.Thread(target=self._accept, args=(server, upstream, address), daemon=True,
                         name=f"kafkalab-tap-{address[1]}").start()
        return address

    def _resolve(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        with self._lock:
            if (host, port) not in self._ports:
                wanted = self._listen_port + len(self._ports) if self._listen_port else 0
                self._open_port((host, port), wanted)
            return self._ports[(host, port)]

    # -- recording --------------------------------------------------------------------------------------------------
    def _record(self, frame: TapFrame) -> TapFrame:
        with self._lock:
            frame.index = self._next_index
            self._next_index += 1
            self._kept_bytes += len(frame.frame) + len(frame.forwarded or b"")
            while self.frames and (len(self.frames) == self.frames.maxlen or self._kept_bytes > self.max_bytes):
                oldest = self.frames.popleft()
                self._kept_bytes -= len(oldest.frame) + len(oldest.forwarded or b"")
                self.dropped += 1
            self.frames.append(frame)
        if self.on_frame is not None:
            try:
                self.on_frame(frame)
            except Exception as e:   # noqa: BLE001 -- a failing observer must not stop the relay
                self._event(frame.connection, "observer-failed", f"{type(e).__name__}: {e}")
        return frame

    def _event(self, connection: int, kind: str, detail: str = "") -> None:
        with self._lock:
            self.events.append(TapEvent(connection, self._now(), kind, detail))

    # -- relaying ---------------------------------------------------------------------------------------------------
    def _accept(self, server: socket.socket, upstream: tuple[str, int], address: tuple[str, int]) -> None:
        while not self._stopped.is_set():
            try:
                client, peer = server.accept()
            except OSError:
                return
            with self._lock:
                conn = TapConnection(len(self.connections), peer[:2], address, upstream)
                self.connections.append(conn)
            threading.Thread(target=self._open, args=(conn, client), daemon=True).start()

    def _open(self, conn: TapConnection, client: socket.socket) -> None:
        try:
            broker = socket.create_connection(conn.upstream, timeout=10)
            broker.settimeout(None)
        except OSError as e:
            self._event(conn.number, "upstream-unreachable", f"{conn.upstream[0]}:{conn.upstream[1]}: {e}")
            client.close()
            return
        for s in (client, broker):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._sockets.update((client, broker))
        self._event(conn.number, "accepted", f"{conn.client[0]}:{conn.client[1]} -> "
                                             f"{conn.upstream[0]}:{conn.upstream[1]}")
        pending: dict[int, TapFrame] = {}
        threading.Thread(target=self._relay_requests, args=(conn, client, broker, pending), daemon=True).start()
        threading.Thread(target=self._relay_responses, args=(conn, broker, client, pending), daemon=True).start()

    def _close(self, conn: TapConnection, side: str, reader: FrameReader | CutThroughFramer,
               *sockets: socket.socket) -> None:
        """Close both sockets; only the first of the two relays to get here records why."""
        with self._lock:
            first, conn.closed = not conn.closed, True
        if not first:
            return
        if reader.buffered:
            size = f"{reader.expected_size}-byte" if reader.expected_size >= 0 else "unsized"
            self._event(conn.number, "closed-mid-frame",
                        f"{side} closed with {reader.buffered} byte(s) of an incomplete {size} frame")
        else:
            self._event(conn.number, "closed", f"{side} closed the connection")
        with self._lock:
            self._sockets.difference_update(sockets)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _relay_requests(self, conn, client, broker, pending) -> None:
        """Requests go on byte for byte as they arrive; the framer (holding nothing) only cuts the copy that is
        recorded, each frame before the bytes that complete it are passed on (so that its response finds it)."""
        reader: Optional[CutThroughFramer] = CutThroughFramer(_hold_nothing, self.max_frame_bytes)
        while True:
            try:
                data = client.recv(_RECV_BYTES)
            except OSError:
                data = b""
            if not data:
                return self._close(conn, "client", reader or FrameReader(), client, broker)
            if reader is not None:
                try:
                    steps = reader.feed(data)
                except InvalidReceiveError as e:
                    self._event(conn.number, "invalid-size", f"request: {e}; relayed unread from here on")
                    steps, reader = list(e.frames), None
                for step in steps:
                    if type(step) is Frame:
                        self._record_request(conn, step.frame, pending)
            try:
                broker.sendall(data)
            except OSError:
                return self._close(conn, "broker", FrameReader(), client, broker)

    def _relay_responses(self, conn, broker, client, pending) -> None:
        """Cut-through (:mod:`.tap_framing`): a response's bytes go on as they arrive, except the responses to
        rewrite, held until complete. Each frame is recorded before the received bytes that complete it go on,
        as a request is: its time is never later than the client could have seen it (and answered)."""
        def hold(correlation_id) -> bool:
            request = pending.get(correlation_id)
            return request is not None and request.api_key in REWRITTEN_APIS
        framer = CutThroughFramer(hold, self.max_frame_bytes)
        while True:
            try:
                data = broker.recv(_RECV_BYTES)
            except OSError:
                data = b""
            if not data:
                return self._close(conn, "broker", framer, client, broker)
            try:
                steps, bad = framer.feed(data), False
            except InvalidReceiveError as e:
                self._event(conn.number, "invalid-size", f"response: {e}; the connection is closed")
                steps, bad = list(e.frames), True
            out = []
            for step in steps:
                if type(step) is Forward:
                    out.append(step.data)
                else:
                    recorded = self._response(conn, step.frame, pending)
                    if step.held:                      # the rewritten bytes in the held frame's place
                        out.append(recorded.wire)
            if len(out) > 1 and sum(map(len, out)) <= _RECV_BYTES // 16:
                out = [b"".join(out)]      # small pieces in one write; large ones as they are, uncopied
            try:
                for piece in out:
                    client.sendall(piece)
            except OSError:
                return self._close(conn, "client", FrameReader(), client, broker)
            if bad:   # a broker that sent a bad size cannot be relayed frame by frame: hang up
                return self._close(conn, "tap", FrameReader(), client, broker)

    def _record_request(self, conn, frame: bytes, pending) -> None:
        rec = TapFrame(0, conn.number, "request", self._now(), frame)
        if len(frame) >= 8:
            rec.api_key = int.from_bytes(frame[0:2], "big", signed=True)
            rec.api_version = int.from_bytes(frame[2:4], "big", signed=True)
            rec.correlation_id = int.from_bytes(frame[4:8], "big", signed=True)
        try:
            rec.decoded = decode_request(frame)
            rec.client_id = rec.decoded.client_id
        except Exception as e:   # noqa: BLE001 -- any bad frame is recorded, never fatal
            rec.error = f"{type(e).__name__}: {e}"
            rec.client_id = getattr(getattr(e, "header", None), "client_id", None)
        self._record(rec)
        if rec.correlation_id is not None:
            pending[rec.correlation_id] = rec

    def _response(self, conn, frame: bytes, pending) -> TapFrame:
        """Record one response frame; its ``wire`` is what the client gets (rewritten or the same bytes)."""
        rec = TapFrame(0, conn.number, "response", self._now(), frame)
        if len(frame) >= 4:
            rec.correlation_id = int.from_bytes(frame[0:4], "big", signed=True)
        request = pending.pop(rec.correlation_id, None)
        if request is None:
            rec.error = f"no request with correlation id {rec.correlation_id} is waiting"
        else:
            rec.api_key, rec.api_version = request.api_key, request.api_version
            rec.request_index, rec.latency = request.index, rec.time - request.time
            rec.client_id = request.client_id
            try:
                rec.decoded = decode_response(frame, rec.api_key, rec.api_version)
            except Exception as e:   # noqa: BLE001
                rec.error = f"{type(e).__name__}: {e}"
        if rec.decoded is not None and rec.api_key in REWRITTEN_APIS:
            try:
                rewritten, changes = rewrite_response(rec.decoded, self._resolve)
                rec.forwarded = encode_response(rewritten)
                rec.rewritten = changes
            except Exception as e:   # noqa: BLE001 -- forward the original rather than drop it
                rec.error = f"not rewritten: {type(e).__name__}: {e}"
                rec.forwarded = None
        return self._record(rec)

    # -- views and exports ------------------------------------------------------------------------------------------
    def requests(self) -> list[TapFrame]:
        return [f for f in list(self.frames) if f.direction == "request"]

    def responses(self) -> list[TapFrame]:
        return [f for f in list(self.frames) if f.direction == "response"]

    def pairs(self) -> list[tuple[TapFrame, Optional[TapFrame]]]:
        """Each request with its response (None if none came back)."""
        frames = list(self.frames)
        answered = {f.request_index: f for f in frames if f.direction == "response" and f.request_index is not None}
        return [(f, answered.get(f.index)) for f in frames if f.direction == "request"]

    def rewrites(self) -> list[AddressChange]:
        """Every address the tap replaced, once each."""
        seen: dict = {}
        for f in list(self.frames):
            for c in f.rewritten:
                seen.setdefault((c.node_id, c.upstream, c.tap), c)
        return list(seen.values())

    def _repr_html_(self) -> str:
        """In a notebook: the tap's ports and its last 50 frames as a table (request, response, latency)."""
        ports = ", ".join(f"{html.escape(u[0])}:{u[1]} &rarr; {html.escape(t[0])}:{t[1]}"
                          for u, t in self.broker_ports.items())
        rows = []
        for f in list(self.frames)[-50:]:
            notes = "; ".join(f"node {c.node_id} -> {c.tap[0]}:{c.tap[1]}" for c in f.rewritten) or f.error or ""
            cells = [str(f.index), str(f.connection), f.api_name if f.api_key is not None else "?",
                     str(f.api_version), str(f.correlation_id), str(len(f.frame)),
                     "" if f.latency is None else f"{f.latency * 1000:.1f} ms", notes]
            arrow = "&rarr;" if f.direction == "request" else "&larr;"
            escaped = [html.escape(c) for c in cells]
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in escaped[:2] + [arrow] + escaped[2:]) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in ("#", "conn", "", "API", "v", "correlation id", "bytes", "latency",
                                                  "rewritten / error"))
        return (f"<div><b>Tap</b> {len(self.frames)} frame(s) on {len(self.connections)} connection(s), "
                f"{self.dropped} dropped; ports: {ports}<table><tr>{head}</tr>{''.join(rows)}</table></div>")

    def to_json_lines(self) -> str:
        """Every connection, frame and event as one JSON object per line, in time order."""
        items = [(e.time, e.as_dict()) for e in list(self.events)] + [(f.time, f.as_dict()) for f in list(self.frames)]
        items.sort(key=lambda item: item[0])
        return "".join(json.dumps(d, separators=(",", ":")) + "\n" for _, d in items)

    def write_json_lines(self, path) -> None:
        with open(path, "w", encoding="utf-8") as out:
            out.write(self.to_json_lines())

    def write_pcap(self, path) -> None:
        """A libpcap file of the recorded traffic (see :func:`kafkalab.trace.pcap.write_pcap`)."""
        from kafkalab.trace.pcap import write_pcap

        write_pcap(path, list(self.frames), list(self.connections), list(self.events), self.started_at)
