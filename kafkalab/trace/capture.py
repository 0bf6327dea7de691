"""Capture what real Kafka clients put on the wire: a scripted listener that records every request.

Theory of operation
-------------------
The surest way to learn what a Kafka client sends is to be the other end of its socket. A
:class:`ScriptedListener` listens on ``127.0.0.1`` (a free port unless told otherwise), accepts the client's
connections, and cuts each byte stream into frames with :class:`~kafkalab.protocol.FrameReader` (every
request is an int32 size followed by that many bytes). For each frame it keeps a :class:`CapturedRequest`:

* the frame exactly as received (``frame``, without the size prefix; ``wire`` adds it back),
* which connection it came on (numbered 0, 1, 2... in the order the listener accepted them) and its position
  in the whole capture (``index``),
* the decoded :class:`~kafkalab.protocol.Request` -- or, if the bytes did not decode, the ``DecodeError``,
* what was answered (``reply``, the response frame) and the ``outcome``,
* and, kept apart from the content, *when* it arrived (``arrival``, seconds since the listener started).
  Timing never takes part in comparisons: two captures of the same client are equal if the bytes are.

A client only moves on when answered, so every frame is handed to a **reply policy**: a sans-IO function
from the captured request to a response body, ``None`` (stay silent) or :data:`CLOSE` (see
:mod:`kafkalab.trace.replies`). With :func:`first_request_only` nothing is answered and the capture shows what
a client says first; with :class:`ScriptedReplies` a client gets through bootstrap, metadata and produce.

This is a **recorder with scripted replies, not a broker**: it stores nothing, answers from a script, and
speaks for a single imaginary node 0 that lives at its own address. (kafkalab's real broker is a later room.)

Mechanics. The listener runs in one background daemon thread with a ``selectors`` loop over plain
non-blocking sockets; no asyncio loop is involved, so it works the same in a script, under pytest and inside a
Jupyter kernel (whose own event loop keeps running). Requests on one connection are answered in order, one at
a time, like Kafka does. Any exception inside the thread -- a reply policy that raises, a response that does
not encode -- is caught, recorded in :attr:`ScriptedListener.faults`, and the offending connection is closed;
:meth:`ScriptedListener.check` turns recorded faults into an error. :meth:`~ScriptedListener.stop` closes
everything and joins the thread.

:func:`capture` puts it together: it starts a listener, runs a real client (kcat, confluent-kafka,
kafka-python or aiokafka) against it in a subprocess with short timeouts (see :mod:`kafkalab.trace.drivers`),
and returns the captured requests::

    >>> from kafkalab.trace import capture, first_request_only
    >>> reqs = capture("kafka-python", "metadata", reply=first_request_only)   # doctest: +SKIP
    >>> [(r.api_name, r.api_version) for r in reqs]                            # doctest: +SKIP
    [('ApiVersions', 4)]

Mirrors (the receiving half of): ``core/src/main/scala/kafka/network/SocketServer.scala`` (acceptor and
processor) and ``clients/src/main/java/org/apache/kafka/common/network/NetworkReceive.java``.
"""
from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
import traceback
from typing import Any, Callable, Optional

from kafkalab.protocol import (DEFAULT_MAX_FRAME_BYTES, DecodeError, FrameReader, InvalidReceiveError, Request,
                               Response, api_name, decode_request, encode_response, make_response, size_prefixed)
from kafkalab.trace import drivers
from kafkalab.trace.replies import (CLOSE, DEFAULT_ADVERTISED, ScriptedReplies, count_records,
                                    first_request_only, topic_id_for)

__all__ = ["CapturedRequest", "ConnectionRecord", "Fault", "CaptureError", "ClientNotAvailable",
           "ScriptedListener", "CaptureResult", "capture", "CLIENTS", "available_clients", "client_version",
           "ScriptedReplies", "first_request_only", "CLOSE", "DEFAULT_ADVERTISED", "topic_id_for",
           "count_records"]

#: Clients :func:`capture` knows how to drive.
CLIENTS = drivers.CLIENTS

ReplyPolicy = Callable[["CapturedRequest"], Any]


# -- What is recorded -------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CapturedRequest:
    """One request frame as it arrived, what it decoded to, and what was answered.

    ``outcome`` is ``"replied"``, ``"unanswered"`` (the policy returned None) or ``"closed"`` (the listener
    closed the connection instead of answering). ``listener`` is the (host, port) the frame arrived at, which a
    Metadata reply advertises. ``arrival`` (timing) and ``listener`` (a free port) vary from run to run and are
    excluded from ``==``.
    """

    index: int
    connection: int
    frame: bytes
    request: Optional[Request]
    error: Optional[Exception]
    listener: tuple[str, int] = dataclasses.field(compare=False)
    reply: Optional[bytes] = None
    outcome: str = "unanswered"
    arrival: float = dataclasses.field(default=0.0, compare=False)

    @property
    def wire(self) -> bytes:
        """The frame with its int32 size prefix, as it travelled."""
        return size_prefixed(self.frame)

    @property
    def header(self):
        """The request header (also available when only the body failed to decode at a known version)."""
        if self.request is not None:
            return self.request.header
        return getattr(self.error, "header", None)

    @property
    def api_key(self) -> Optional[int]:
        return int.from_bytes(self.frame[0:2], "big", signed=True) if len(self.frame) >= 2 else None

    @property
    def api_version(self) -> Optional[int]:
        return int.from_bytes(self.frame[2:4], "big", signed=True) if len(self.frame) >= 4 else None

    @property
    def api_name(self) -> str:
        try:
            return api_name(self.api_key)
        except (KeyError, TypeError, ValueError):
            return f"Unknown({self.api_key})"

    @property
    def correlation_id(self) -> Optional[int]:
        h = self.header
        return None if h is None else h.correlation_id

    @property
    def client_id(self) -> Optional[str]:
        h = self.header
        return None if h is None else h.client_id

    def summary(self) -> str:
        """One line: ``#3 conn 1  Produce v9  corr=4  client_id='rdkafka'  -> replied``."""
        what = f"{self.api_name} v{self.api_version}"
        if self.error is not None:
            what += f"  !! {type(self.error).__name__}: {self.error}"
        return (f"#{self.index} conn {self.connection}  {what}  corr={self.correlation_id}  "
                f"client_id={self.client_id!r}  -> {self.outcome}")


@dataclasses.dataclass
class ConnectionRecord:
    """One accepted connection. ``peer`` and the times vary from run to run and are excluded from ``==``."""

    index: int
    peer: tuple = dataclasses.field(default=(), compare=False)
    opened: float = dataclasses.field(default=0.0, compare=False)
    closed: Optional[float] = dataclasses.field(default=None, compare=False)
    closed_by: Optional[str] = None      # "client", "listener" (policy/bad frame/fault) or "stop"
    error: Optional[str] = None          # why the listener closed it, if it did


@dataclasses.dataclass(frozen=True)
class Fault:
    """An exception caught inside the listener thread (a bug somewhere, never a client's fault)."""

    where: str
    error: BaseException
    traceback: str

    def __str__(self) -> str:
        return f"{self.where}: {type(self.error).__name__}: {self.error}"


class CaptureError(RuntimeError):
    """The listener recorded faults, or a capture did not complete."""


class ClientNotAvailable(RuntimeError):
    """The requested client (library or kcat binary) is not installed."""


# -- The listener -----------------------------------------------------------------------------------------------------
class _Conn:
    __slots__ = ("sock", "record", "reader", "out", "closing")

    def __init__(self, sock, record, max_frame_bytes):
        self.sock = sock
        self.record = record
        self.reader = FrameReader(max_frame_bytes)
        self.out = bytearray()
        self.closing = False


class ScriptedListener:
    """Listen on ``host:port`` (port 0 = a free one), record every request, answer with ``reply``.

    ``reply`` is a reply policy (default: a fresh :class:`ScriptedReplies`). Use as a context manager, or call
    :meth:`start` / :meth:`stop`. Reading :attr:`requests`, :attr:`connections` and :attr:`faults` is safe at any
    time from any thread; each returns a snapshot list.
    """

    def __init__(self, reply: Optional[ReplyPolicy] = None, *, host: str = "127.0.0.1", port: int = 0,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.reply = ScriptedReplies() if reply is None else reply
        self._bind = (host, port)
        self.max_frame_bytes = max_frame_bytes
        self._lock = threading.Condition()
        self._requests: list[CapturedRequest] = []
        self._connections: list[ConnectionRecord] = []
        self._faults: list[Fault] = []
        self._thread: Optional[threading.Thread] = None
        self._server: Optional[socket.socket] = None
        self._wake_r = self._wake_w = None
        self._stopping = False
        self._t0 = 0.0
        self.address: tuple[str, int] = (host, port)

    # -- public API ----------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``: what to give a client as ``bootstrap.servers``."""
        return f"{self.address[0]}:{self.address[1]}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def requests(self) -> list[CapturedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def connections(self) -> list[ConnectionRecord]:
        with self._lock:
            return [dataclasses.replace(c) for c in self._connections]

    @property
    def faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def start(self) -> "ScriptedListener":
        if self._thread is not None:
            raise RuntimeError("a ScriptedListener can be started once")
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(self._bind)
        server.listen(16)
        server.setblocking(False)
        self._server = server
        self.address = server.getsockname()[:2]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"kafkalab-capture:{self.address[1]}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and every connection, and join the thread. Safe to call twice."""
        if self._thread is None or self._stopping:
            if self._thread is not None:
                self._thread.join(timeout)
            return
        self._stopping = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._fault("stop", TimeoutError(f"listener thread still running after {timeout} s"))

    def __enter__(self) -> "ScriptedListener":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_for(self, predicate: Optional[Callable[[list], bool]] = None, *, count: Optional[int] = None,
                 timeout: float = 5.0) -> bool:
        """Block until ``predicate(requests)`` holds (or ``count`` requests arrived); False on timeout."""
        if predicate is None:
            want = 1 if count is None else count
            predicate = lambda reqs: len(reqs) >= want  # noqa: E731
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if predicate(list(self._requests)):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or (self._thread is not None and not self._thread.is_alive()):
                    return predicate(list(self._requests))
                self._lock.wait(min(left, 0.1))

    def wait_idle(self, timeout: float = 2.0) -> bool:
        """Block until every accepted connection is closed (e.g. after the client process exited, so that the
        last bytes it sent have been read); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(c.closed is None for c in self._connections):
                left = deadline - time.monotonic()
                if left <= 0 or not self.running:
                    return False
                self._lock.wait(min(left, 0.05))
            return True

    def check(self) -> None:
        """Raise :class:`CaptureError` if anything went wrong inside the listener thread."""
        faults = self.faults
        if faults:
            detail = "\n".join(f"{f}\n{f.traceback}" for f in faults)
            raise CaptureError(f"{len(faults)} fault(s) in the capture listener:\n{detail}")

    # -- the thread ----------------------------------------------------------------------------------------------
    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 6)

    def _fault(self, where: str, error: BaseException) -> None:
        tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        with self._lock:
            self._faults.append(Fault(where, error, tb))
            self._lock.notify_all()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        conns: dict[int, _Conn] = {}
        try:
            sel.register(self._server, selectors.EVENT_READ, "accept")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self._stopping:
                for key, events in sel.select(timeout=0.5):
                    if key.data == "accept":
                        self._accept(sel, conns)
                    elif key.data == "wake":
                        self._wake_r.recv(64)
                    else:
                        conn = key.data
                        try:
                            if events & selectors.EVENT_READ:
                                self._readable(sel, conn)
                            if events & selectors.EVENT_WRITE and conn.sock.fileno() >= 0:
                                self._flush(sel, conn)
                        except Exception as e:  # noqa: BLE001 -- record, close this connection, keep serving
                            self._fault(f"connection {conn.record.index}", e)
                            self._close(sel, conn, "listener", f"fault: {e!r}")
                for conn in [c for c in conns.values() if c.sock.fileno() < 0]:
                    conns.pop(id(conn), None)
        except BaseException as e:  # noqa: BLE001 -- the thread must never die silently
            self._fault("listener loop", e)
        finally:
            for conn in list(conns.values()):
                if conn.sock.fileno() >= 0:
                    self._close(sel, conn, "stop", None)
            for s in (self._server, self._wake_r, self._wake_w):
                try:
                    s.close()
                except OSError:
                    pass
            sel.close()
            with self._lock:
                self._lock.notify_all()

    def _accept(self, sel, conns) -> None:
        while True:
            try:
                sock, peer = self._server.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                record = ConnectionRecord(index=len(self._connections), peer=peer[:2], opened=self._now())
                self._connections.append(record)
            conn = _Conn(sock, record, self.max_frame_bytes)
            conns[id(conn)] = conn
            sel.register(sock, selectors.EVENT_READ, conn)

    def _readable(self, sel, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(sel, conn, "client", None)
            return
        try:
            frames = conn.reader.feed(data)
        except InvalidReceiveError as e:          # Kafka closes without answering
            self._close(sel, conn, "listener", str(e))
            return
        for frame in frames:
            if conn.closing:
                break
            self._handle(sel, conn, frame)

    def _handle(self, sel, conn: _Conn, frame: bytes) -> None:
        arrival = self._now()
        request, error = None, None
        try:
            request = decode_request(frame)
        except DecodeError as e:
            error = e
        except Exception as e:  # noqa: BLE001 -- a codec bug: keep the frame, record the fault
            error = e
            self._fault(f"decode_request (connection {conn.record.index})", e)
        with self._lock:
            index = len(self._requests)
        captured = CapturedRequest(index=index, connection=conn.record.index, frame=frame, request=request,
                                   error=error, listener=tuple(self.address), arrival=arrival)
        reply, outcome, note = None, "unanswered", None
        try:
            answer = self.reply(captured)
            if answer is CLOSE:
                outcome, note = "closed", "reply policy closed the connection"
            elif answer is not None:
                reply, outcome = self._encode(captured, answer), "replied"
        except Exception as e:  # noqa: BLE001
            self._fault(f"reply to #{index} {captured.api_name} v{captured.api_version}", e)
            outcome, note = "closed", f"fault: {e!r}"
        captured = dataclasses.replace(captured, reply=reply, outcome=outcome)
        with self._lock:
            self._requests.append(captured)
            self._lock.notify_all()
        if reply is not None:
            conn.out += size_prefixed(reply)
            self._flush(sel, conn)
        if outcome == "closed":
            conn.closing = True
            conn.record.error = note
            if not conn.out:
                self._close(sel, conn, "listener", note)

    @staticmethod
    def _encode(captured: CapturedRequest, answer) -> bytes:
        if isinstance(answer, (bytes, bytearray, memoryview)):
            return bytes(answer)
        if isinstance(answer, Response):
            return encode_response(answer)
        request = captured.request
        if request is None:
            raise TypeError("a bare response body needs a decoded request; return a Response or bytes instead")
        return encode_response(make_response(answer, api_version=request.api_version,
                                             correlation_id=request.correlation_id))

    def _flush(self, sel, conn: _Conn) -> None:
        while conn.out:
            try:
                sent = conn.sock.send(conn.out)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                conn.out.clear()
                self._close(sel, conn, "client", f"send failed: {e}")
                return
            del conn.out[:sent]
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        if conn.sock.fileno() >= 0:
            sel.modify(conn.sock, want, conn)
        if conn.closing and not conn.out:
            self._close(sel, conn, "listener", conn.record.error)

    def _close(self, sel, conn: _Conn, by: str, error: Optional[str]) -> None:
        if conn.sock.fileno() < 0:
            return
        try:
            sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
        with self._lock:
            conn.record.closed = self._now()
            conn.record.closed_by = by
            conn.record.error = error
            self._lock.notify_all()


# -- Running a real client against it ---------------------------------------------------------------------------------
class CaptureResult(list):
    """The captured requests (a list of :class:`CapturedRequest`), plus what happened around them.

    Attributes: ``client``, ``action``, ``client_version``, ``connections``, ``faults``, ``ended`` (``"exited"``,
    ``"stopped"`` when ``until`` held, or ``"timeout"``), ``returncode`` (None unless the client exited by
    itself), ``report`` (what the client said it did, a dict, or None), ``stdout``, ``stderr``, ``elapsed``.
    """

    client = action = client_version = ended = stdout = stderr = ""
    connections: list = ()
    faults: list = ()
    returncode: Optional[int] = None
    report: Optional[dict] = None
    elapsed: float = 0.0

    def sequence(self) -> list[tuple[int, str, int]]:
        """``[(connection, api_name, api_version), ...]`` in arrival order: the shape of a conversation."""
        return [(r.connection, r.api_name, r.api_version) for r in self]


def available_clients() -> list[str]:
    """The clients :func:`capture` can drive on this machine."""
    return [c for c in CLIENTS if drivers.is_available(c)]


def client_version(client: str) -> str:
    """The installed version of ``client`` (``"2.16.1 (librdkafka 2.16.0)"`` for confluent-kafka)."""
    return drivers.installed_version(client)


def capture(client: str, action: str = "metadata", *, reply: Optional[ReplyPolicy] = None, topic: str = "kafkalab",
            records: Optional[list] = None, compression: Optional[str] = None, acks: int = -1,
            idempotent: Optional[bool] = None, client_id: Optional[str] = None, config: Optional[dict] = None,
            until: Optional[Callable[[list], bool]] = None, timeout: float = 8.0, check: bool = True,
            ) -> CaptureResult:
    """Run ``client`` against a fresh :class:`ScriptedListener` and return what it sent.

    ``client``: one of :data:`CLIENTS` (``"kcat"``, ``"confluent-kafka"``, ``"kafka-python"``, ``"aiokafka"``).
    ``action``: ``"metadata"`` (bootstrap, then look up ``topic``) or ``"produce"`` (send ``records`` to
    ``topic`` partition 0 and wait for the acknowledgements). ``records``: dicts with ``key``, ``value`` (str or
    None), ``headers`` (list of ``[name, value]``) and ``timestamp`` (ms); default
    :data:`~kafkalab.trace.drivers.DEFAULT_RECORDS`. ``compression``: ``gzip``/``snappy``/``lz4``/``zstd`` or
    None; ``acks``: -1 (all), 1 or 0; ``idempotent``: None keeps the client's default; ``client_id``: None keeps
    the client's default id; ``config``: extra client settings in the client's own vocabulary.

    ``reply``: the reply policy (default a fresh :class:`ScriptedReplies`); with :func:`first_request_only` the
    capture ends as soon as the first request arrives. ``until``: end the capture as soon as
    ``until(requests)`` holds, instead of waiting for the client to finish. The client process is killed by
    the end, at the latest after ``timeout`` seconds. ``check``: raise :class:`CaptureError` if the listener
    recorded faults.
    """
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; choose one of {CLIENTS}")
    if not drivers.is_available(client):
        raise ClientNotAvailable(f"{client} is not installed ({drivers.install_hint(client)})")
    policy = ScriptedReplies() if reply is None else reply
    if until is None and policy is first_request_only:
        until = lambda reqs: len(reqs) >= 1  # noqa: E731
    started = time.monotonic()
    result = CaptureResult()
    result.client, result.action, result.client_version = client, action, client_version(client)
    with ScriptedListener(policy) as listener:
        spec = {"client": client, "action": action, "bootstrap": listener.bootstrap_servers, "topic": topic,
                "records": drivers.DEFAULT_RECORDS if records is None else records, "compression": compression,
                "acks": acks, "idempotent": idempotent, "client_id": client_id, "config": config or {},
                "timeout": max(1.0, timeout - 1.0)}
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.Popen(drivers.command(spec), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, text=True, start_new_session=True)
        try:
            result.ended, result.stdout, result.stderr = _run_until(
                proc, listener, until, drivers.stdin_for(spec), started + timeout)
        finally:
            _kill(proc)
        listener.wait_idle(2.0)       # the client is gone: let the listener read what it sent last
        result.returncode = proc.returncode if result.ended == "exited" else None
        result.report = drivers.parse_report(result.stdout)
    result.extend(listener.requests)
    result.connections, result.faults = listener.connections, listener.faults
    result.elapsed = round(time.monotonic() - started, 3)
    if check:
        listener.check()
    return result


def _kill(proc) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)       # the whole session, should a client spawn helpers
        except (AttributeError, OSError):             # Windows, or already gone
            proc.kill()
    proc.wait(5)


def _run_until(proc, listener, until, stdin_text, deadline) -> tuple[str, str, str]:
    """Feed the client its stdin, then wait for it to exit, for ``until`` to hold, or for the deadline.

    Returns ``(ended, stdout, stderr)``; a reader thread collects the output so that pipes never fill up."""
    box: dict = {}
    reader = threading.Thread(target=lambda: box.update(out=proc.communicate(stdin_text)), daemon=True)
    reader.start()
    ended = "exited"
    while reader.is_alive():
        if until is not None and until(listener.requests):
            ended = "stopped"
        elif time.monotonic() >= deadline:
            ended = "timeout"
        else:
            reader.join(0.05)
            continue
        _kill(proc)
        reader.join(5)
        break
    out, err = box.get("out", ("", ""))
    if ended == "timeout":
        err = (err or "") + "\n[kafkalab.trace] client killed at the capture timeout\n"
    return ended, out or "", err or ""
