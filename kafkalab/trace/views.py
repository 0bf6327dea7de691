"""Views of a tap's recording for notebooks: connections, API versions, batching, a sequence diagram per connection.

Theory of operation
-------------------
A :class:`~kafkalab.trace.tap.Tap` keeps what went through it as :class:`~kafkalab.trace.tap.TapFrame` objects
(each with its connection, direction, API key and version, correlation id, client id and decoded body) and
:class:`~kafkalab.trace.tap.TapConnection` objects (client address, tap port, upstream broker). The views here
only *read* those lists -- anything with ``frames``, ``connections`` and ``rewrites()`` will do -- and answer
the questions one asks of a client's traffic:

* :func:`connection_summaries` / :class:`ConnectionsTable` -- per client, each connection it opened: which broker
  (the node id the tap learned when it rewrote that broker's address), which listener, how many requests of each
  API it carried. Kafka's clients keep one connection per broker they need (``NetworkClient``'s node
  connections), plus, for the Java and kafka-python consumers, a separate one to the group coordinator.
* :func:`versions_used` / :class:`VersionMatrix` -- clients down, APIs across, the version(s) each client sent
  (what it picked from the broker's ApiVersions answer); APIs only some of the clients used stand out.
* :func:`produce_batching` / :class:`BatchingTable` -- every Produce request taken apart: how many record
  batches it carried (one per partition) and how many records each batch held (``recordsCount`` of each
  ``DefaultRecordBatch`` header, read without decompressing).
* :class:`TapRequestLogs` -- the tap as a source for :class:`kafkalab.viz.live.LiveRequestLog`: one request log
  per broker the tap relays to, each answered request as one record (the round trip the tap measured as its
  total time; the broker's own parts -- queue, local, remote, send -- are not visible from outside and show "—");
* :func:`sequence_diagram` -- one connection as a :class:`~kafkalab.viz.sequence.SequenceDiagram`: requests
  solid, responses dashed, each labelled with its API, version and correlation id; a request sent while earlier
  ones are still unanswered says how many are in flight, which is pipelining made visible.

Everything is deterministic for the same recording (no clocks, no ports unless asked for): ports and timings
differ from run to run, so the views name brokers by node id and listeners by name where given, and sort rows by
client, broker and order of arrival. Mirrors no Kafka class; the counts are what Kafka's per-API request
metrics (``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=<API>``) count on the broker side.
"""
from __future__ import annotations

import collections
import dataclasses
import html
import struct
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional

if TYPE_CHECKING:
    from kafkalab.viz.sequence import SequenceDiagram

__all__ = ["BatchingTable", "ConnectionSummary", "ConnectionsTable", "ProduceRequestBatches", "TapRequestLogs",
           "VersionMatrix",
           "broker_ids", "connection_summaries", "produce_batching", "record_batch_counts", "sequence_diagram",
           "versions_used"]

_e = html.escape
_FONT = "font-family:DejaVu Sans,Verdana,Geneva,sans-serif;font-size:13px"
_CELL = "padding:2px 8px;border-bottom:1px solid #e9ecef"
_RIGHT = _CELL + ";text-align:right;font-variant-numeric:tabular-nums"
ClientOf = Callable[[Optional[str]], Optional[str]]

# A v2 record batch header (DefaultRecordBatch): baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
# magic int8, crc uint32, attributes int16, lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
# producerId int64, producerEpoch int16, baseSequence int32, recordsCount int32 -- 61 bytes.
_LOG_OVERHEAD = 12          # baseOffset + batchLength: what batchLength does not count
_MAGIC_OFFSET = 16
_RECORDS_COUNT_OFFSET = 57
_V2_HEADER = 61
# A v0/v1 message (LegacyRecord) counts as one record: offset int64, messageSize int32, then the message.


def _identity(client_id: Optional[str]) -> Optional[str]:
    return client_id


def _frames(tap) -> list:
    return list(tap.frames)


def broker_ids(tap) -> dict[tuple[str, int], int]:
    """``{upstream broker address: node id}`` from the addresses the tap rewrote (what the brokers advertised)."""
    return {change.upstream: change.node_id for change in tap.rewrites()}


# -- connections ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ConnectionSummary:
    """One client connection as the tap saw it: whose, to which broker and listener, what it carried."""

    connection: int
    client: Optional[str]
    broker: Optional[int]
    listener: str
    requests: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.requests.values())


def connection_summaries(tap, *, client_of: ClientOf = _identity,
                         listeners: Optional[Mapping[tuple[str, int], str]] = None) -> list[ConnectionSummary]:
    """Each connection that carried at least one request, sorted by client, broker and connection number.

    ``client_of`` maps a request's client id to the client it belongs to (default: the client id itself; the
    connection belongs to the client of its first request); ``listeners`` names the upstream addresses
    (``{(host, port): "PLAINTEXT"}``), else the listener is shown as ``host:port``."""
    nodes = broker_ids(tap)
    counts: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    owner: dict[int, Optional[str]] = {}
    for f in _frames(tap):
        if f.direction != "request":
            continue
        owner.setdefault(f.connection, client_of(f.client_id))
        counts[f.connection][f.api_name if f.api_key is not None else "?"] += 1
    out = []
    for conn in list(tap.connections):
        if conn.number not in counts:
            continue
        upstream = tuple(conn.upstream)
        listener = (listeners or {}).get(upstream, f"{upstream[0]}:{upstream[1]}")
        out.append(ConnectionSummary(conn.number, owner[conn.number], nodes.get(upstream), listener,
                                     dict(sorted(counts[conn.number].items()))))
    out.sort(key=lambda s: (str(s.client), -1 if s.broker is None else s.broker, s.connection))
    return out


class ConnectionsTable:
    """Per client, its connections: broker, listener, and the requests of each API on it (HTML and text).

    ``show_counts=False`` leaves the per-API numbers out (only which APIs travelled on each connection), for
    outputs that must read the same on every run while a client's heartbeats and fetches are timing-bound;
    ``ignore`` leaves those APIs out altogether (Heartbeat: whether one was sent at all depends on timing)."""

    def __init__(self, summaries: Iterable[ConnectionSummary], *, show_counts: bool = True,
                 ignore: Iterable[str] = ()):
        self.summaries = list(summaries)
        self.show_counts = show_counts
        self.ignore = frozenset(ignore)

    def _apis(self, s: ConnectionSummary) -> str:
        shown = {api: n for api, n in s.requests.items() if api not in self.ignore}
        if self.show_counts:
            return ", ".join(f"{api} ×{n}" for api, n in shown.items())
        return ", ".join(shown)

    def rows(self) -> list[tuple[str, str, str, str]]:
        """``(client, broker, listener, APIs)`` per connection, numbered per client from 1."""
        out, seen = [], collections.Counter()
        for s in self.summaries:
            seen[s.client] += 1
            broker = "?" if s.broker is None else f"broker {s.broker}"
            out.append((f"{s.client} #{seen[s.client]}", broker, s.listener, self._apis(s)))
        return out

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="{_CELL};text-align:left">{h}</th>'
                       for h in ("client · connection", "broker", "listener", "requests"))
        body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{_e(c)}</td>' for c in row) + "</tr>"
                       for row in self.rows())
        return f'<div style="{_FONT};overflow-x:auto"><table><tr>{head}</tr>{body}</table></div>'

    def __repr__(self) -> str:
        return "\n".join(" | ".join(row) for row in self.rows())


# -- versions -------------------------------------------------------------------------------------------------------
def versions_used(tap, *, client_of: ClientOf = _identity) -> dict[str, dict[str, tuple[int, ...]]]:
    """``{client: {API name: versions sent, ascending}}``, clients and APIs in order of first appearance."""
    used: dict[str, dict[str, set]] = {}
    for f in _frames(tap):
        if f.direction != "request" or f.api_key is None or f.error:
            continue
        client = client_of(f.client_id)
        if client is None:
            continue
        used.setdefault(client, {}).setdefault(f.api_name, set()).add(f.api_version)
    return {c: {api: tuple(sorted(v)) for api, v in apis.items()} for c, apis in used.items()}


class VersionMatrix:
    """Clients down, APIs across; each cell the version(s) the client sent. A column some clients never used is
    shaded, so that "which APIs did only some of them need" reads at a glance."""

    def __init__(self, used: Mapping[str, Mapping[str, Iterable[int]]], apis: Optional[Iterable[str]] = None):
        self.used = {c: {a: tuple(v) for a, v in apis_.items()} for c, apis_ in used.items()}
        if apis is None:
            order: dict[str, None] = {}
            for apis_ in self.used.values():
                order.update(dict.fromkeys(apis_))
            apis = order
        self.apis = list(apis)

    def partial_apis(self) -> list[str]:
        """APIs that some clients used and others did not."""
        return [a for a in self.apis if 0 < sum(a in u for u in self.used.values()) < len(self.used)]

    @staticmethod
    def _cell(versions: Optional[tuple]) -> str:
        return "—" if not versions else "/".join(f"v{v}" for v in versions)

    def _repr_html_(self) -> str:
        partial = set(self.partial_apis())
        head = "".join(f'<th style="{_CELL};writing-mode:vertical-rl;transform:rotate(180deg);text-align:left">'
                       f'{_e(a)}</th>' for a in self.apis)
        rows = []
        for client, apis in self.used.items():
            cells = []
            for a in self.apis:
                shade = "background:#fff4e6;" if a in partial else ""
                colour = "color:#adb5bd;" if a not in apis else ""
                cells.append(f'<td style="{_CELL};{shade}{colour}text-align:center;white-space:nowrap">'
                             f'{self._cell(apis.get(a))}</td>')
            rows.append(f'<tr><td style="{_CELL};white-space:nowrap">{_e(client)}</td>{"".join(cells)}</tr>')
        note = "cell: the version(s) each client sent; shaded: an API only some of the clients used"
        return (f'<div style="{_FONT};overflow-x:auto"><table><tr><th></th>{head}</tr>{"".join(rows)}</table>'
                f'<div style="color:#656d76;font-size:12px;margin-top:4px">{note}</div></div>')

    def __repr__(self) -> str:
        width = max([len(c) for c in self.used] + [6])
        lines = [" " * width + "".join(f" {a[:12]:>12}" for a in self.apis)]
        for client, apis in self.used.items():
            lines.append(f"{client:<{width}}" + "".join(f" {self._cell(apis.get(a)):>12}" for a in self.apis))
        return "\n".join(lines)


# -- batching -------------------------------------------------------------------------------------------------------
def record_batch_counts(records: Optional[bytes]) -> list[int]:
    """The record count of each batch in a Produce partition's ``records`` bytes.

    A v2 batch says it in its header (``recordsCount``), so compressed batches need no decompressing; a v0/v1
    message counts as one (its inner messages, when compressed, are not counted). A truncated tail is ignored:
    a length is checked against the bytes left before it is used."""
    out: list[int] = []
    data = memoryview(records or b"")
    pos = 0
    while len(data) - pos >= _LOG_OVERHEAD:
        length = struct.unpack_from(">i", data, pos + 8)[0]
        end = pos + _LOG_OVERHEAD + length
        if length < 0 or end > len(data) or length < _MAGIC_OFFSET - 8 + 1:
            break
        magic = data[pos + _MAGIC_OFFSET]
        if magic >= 2:
            if length + _LOG_OVERHEAD < _V2_HEADER:
                break
            out.append(struct.unpack_from(">i", data, pos + _RECORDS_COUNT_OFFSET)[0])
        else:
            out.append(1)
        pos = end
    return out


@dataclasses.dataclass(frozen=True)
class ProduceRequestBatches:
    """One Produce request: whose, on which connection, and the records of each batch per (topic, partition)."""

    client: Optional[str]
    connection: int
    correlation_id: Optional[int]
    batches: tuple[tuple[str, int, int], ...]      # (topic, partition, records) per batch

    @property
    def records(self) -> int:
        return sum(n for _, _, n in self.batches)


def _topic_name(topic: Any) -> str:
    return getattr(topic, "name", None) or str(getattr(topic, "topic_id", "?"))


def produce_batching(tap, *, client_of: ClientOf = _identity,
                     topics: Optional[Iterable[str]] = None) -> list[ProduceRequestBatches]:
    """Every decoded Produce request, in the order the tap saw them (``topics``: only batches for these)."""
    wanted = None if topics is None else set(topics)
    out = []
    for f in _frames(tap):
        if f.direction != "request" or f.api_key != 0 or f.decoded is None:
            continue
        batches = []
        for topic in f.decoded.body.topic_data:
            name = _topic_name(topic)
            if wanted is not None and name not in wanted:
                continue
            for partition in topic.partition_data:
                batches.extend((name, partition.index, n) for n in record_batch_counts(partition.records))
        if batches:
            out.append(ProduceRequestBatches(client_of(f.client_id), f.connection, f.correlation_id,
                                             tuple(batches)))
    return out


class BatchingTable:
    """Per client: Produce requests, batches, records; records per batch and batches per request (min-max)."""

    COLUMNS = ("client", "Produce requests", "batches", "records", "records per batch", "batches per request")

    def __init__(self, requests: Iterable[ProduceRequestBatches]):
        self.requests = list(requests)

    def rows(self) -> list[tuple]:
        by_client: dict = {}
        for r in self.requests:
            by_client.setdefault(r.client, []).append(r)
        out = []
        for client, reqs in by_client.items():
            per_batch = [n for r in reqs for _, _, n in r.batches]
            per_request = [len(r.batches) for r in reqs]
            out.append((str(client), len(reqs), len(per_batch), sum(per_batch),
                        _span(per_batch), _span(per_request)))
        return out

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="{_CELL};text-align:{"left" if i == 0 else "right"}">{h}</th>'
                       for i, h in enumerate(self.COLUMNS))
        body = "".join("<tr>" + "".join(f'<td style="{_CELL if i == 0 else _RIGHT}">{_e(str(c))}</td>'
                                        for i, c in enumerate(row)) + "</tr>" for row in self.rows())
        return f'<div style="{_FONT};overflow-x:auto"><table><tr>{head}</tr>{body}</table></div>'

    def __repr__(self) -> str:
        return "\n".join(" | ".join(str(c) for c in row) for row in [self.COLUMNS, *self.rows()])


def _span(values: list[int]) -> str:
    if not values:
        return "—"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high}"


# -- the tap as a live request log ---------------------------------------------------------------------------------
class _TapLog:
    """What :class:`~kafkalab.viz.live.LiveRequestLog` needs of a request log: ``subscribe(callback)``.

    A log appears when the tap first relays an answer from its broker, before anyone could subscribe to it: the
    records published until the first subscriber comes are kept (at most ``backlog``) and handed to it."""

    def __init__(self, backlog: int = 10_000) -> None:
        self._subscribers: list = []
        self._waiting: collections.deque = collections.deque(maxlen=backlog)
        self._lock = threading.Lock()

    def subscribe(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)
            waiting, self._waiting = list(self._waiting), collections.deque(maxlen=self._waiting.maxlen)
        for record in waiting:
            callback(record)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)
        return unsubscribe

    def publish(self, record: Any) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
            if not subscribers:
                self._waiting.append(record)
        for callback in subscribers:
            callback(record)


class TapRequestLogs:
    """A tap's answered requests as request logs, one per broker node id (``-1`` before the tap knows which broker
    a port stands for): ``LiveRequestLog(TapRequestLogs(tap))``. It chains itself into ``tap.on_frame`` (keeping
    an observer already there) and sees the frames recorded from then on."""

    UNKNOWN_BROKER = -1
    UNANSWERED_KEPT = 10_000

    def __init__(self, tap):
        from kafkalab.network.request_channel import RequestRecord   # here: the tap itself needs no broker code

        self._record_type = RequestRecord
        self.tap = tap
        self._lock = threading.Lock()
        self._logs: dict[int, _TapLog] = {}
        self._nodes: dict[tuple, int] = broker_ids(tap)
        self._request_bytes: dict[int, int] = {}
        previous = tap.on_frame

        def on_frame(frame) -> None:
            if previous is not None:
                previous(frame)
            self._frame(frame)
        tap.on_frame = on_frame

    def request_logs(self) -> dict:
        with self._lock:
            return dict(self._logs)

    def _log(self, node: int) -> _TapLog:
        with self._lock:
            return self._logs.setdefault(node, _TapLog())

    def _frame(self, f) -> None:
        for change in f.rewritten:
            self._nodes[tuple(change.upstream)] = change.node_id
        if f.direction == "request":
            self._request_bytes[f.index] = len(f.frame)
            if len(self._request_bytes) > self.UNANSWERED_KEPT:     # acks=0 Produce requests are never answered
                del self._request_bytes[next(iter(self._request_bytes))]
            return
        if f.request_index is None or f.latency is None:
            return
        connections = self.tap.connections          # numbered in the order they were accepted
        conn = connections[f.connection] if 0 <= f.connection < len(connections) else None
        node = self.UNKNOWN_BROKER if conn is None else self._nodes.get(tuple(conn.upstream), self.UNKNOWN_BROKER)
        sent = self.tap.started_at + f.time - f.latency
        record = self._record_type(
            connection_id=f"tap-{f.connection}", listener_name="tap", client_id=f.client_id,
            correlation_id=f.correlation_id, api_key=f.api_key, api_version=f.api_version, api_name=f.api_name,
            request_queue_time_ms=None, local_time_ms=None, remote_time_ms=None, response_send_time_ms=None,
            total_time_ms=f.latency * 1000, request_bytes=self._request_bytes.pop(f.request_index, 0),
            response_bytes=len(f.frame), completed="response", received_ms=int(sent * 1000))
        self._log(node).publish(record)


# -- one connection as a sequence diagram ---------------------------------------------------------------------------
def sequence_diagram(tap, connection: int, *, limit: int = 24, client_name: Optional[str] = None,
                     broker_name: Optional[str] = None, title: Optional[str] = None,
                     subtitle: Optional[str] = None, count_the_rest: bool = True) -> "SequenceDiagram":
    """The first ``limit`` frames of one connection, client on the left, broker on the right.

    The client's box says ``connection N`` unless ``subtitle`` says something else; with ``count_the_rest`` a
    last line says how many frames the picture left out (a number that varies with timing on a busy connection).

    A request's label is ``API vN #correlation id``; a response's is ``#correlation id`` with its API. A request
    that leaves while others on the connection are still unanswered carries the note "N in flight"."""
    from kafkalab.viz.sequence import API_COLOURS, SequenceDiagram   # here: importing the tap needs no widgets

    frames = [f for f in _frames(tap) if f.connection == connection]
    conn = next((c for c in list(tap.connections) if c.number == connection), None)
    if client_name is None:
        first = next((f for f in frames if f.direction == "request"), None)
        client_name = (first.client_id if first is not None else None) or "client"
    if broker_name is None:
        node = broker_ids(tap).get(tuple(conn.upstream)) if conn is not None else None
        broker_name = "broker" if node is None else f"broker {node}"
    diagram = SequenceDiagram([("client", client_name, subtitle or f"connection {connection}"),
                               ("broker", broker_name, "through the tap")], title=title)
    waiting: set = set()
    for f in frames[:limit]:
        what = f.api_name if f.api_key is not None else "?"
        colour = API_COLOURS.get(what, "#495057")
        if f.direction == "request":
            waiting.add(f.correlation_id)
            note = f"{len(waiting)} in flight" if len(waiting) > 1 else ""
            diagram.message("client", "broker", f"{what} v{f.api_version} #{f.correlation_id}", colour=colour,
                            note=note)
        else:
            waiting.discard(f.correlation_id)
            diagram.message("broker", "client", f"#{f.correlation_id} {what}", colour=colour, dashed=True)
    if count_the_rest and len(frames) > limit:
        diagram.note(f"{len(frames) - limit} more frame(s) on this connection")
    return diagram
