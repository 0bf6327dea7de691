"""Lab 03 (``labs/03_correlation_ids.ipynb``): connections, pipelining and order, the request path, metrics, checks.

Theory of operation
-------------------
Lab 03 watches what happens *on* a connection: how many a client opens (one per broker it needs), how several
requests travel on one of them at once (pipelining) and come back in order, what the broker does with a
request that is too big, and how the broker measures all of it. The lab reads the broker's own records --
the request log (:class:`~kafkalab.network.RequestRecord`) and the per-API metrics -- so what it shows is
what happened, not a simulation. This module holds what keeps those outputs reproducible and the pictures:

* :func:`create_topic_with_leaders` places each partition's leader on a chosen broker (Kafka's placement
  starts at a random broker), so "partition 1 lives on broker 1" holds on every run;
* :func:`client_connections` reads a client's connections out of every broker's request log, numbered in the
  order they appeared, without the ports that name them; :func:`wait_for_connections` waits until the brokers
  have seen the client close what it will close, :func:`wait_for_requests` until broker 0 has logged a client's
  requests;
* :func:`coarse` turns a duration into a coarse, stable label: the lab never prints a raw timing;
* :func:`produce_frame` builds a Produce request of an exact size (to probe ``socket.request.max.bytes``);
* :func:`response_order` is the model of the broker's ordering rule that an exercise checks against;
* pictures: :func:`connections_diagram` and :func:`request_path_diagram` (Graphviz, via
  :class:`kafkalab.viz.Diagram`), :class:`MetricsBars` (HTML); sequence diagrams use
  :class:`kafkalab.viz.SequenceDiagram`;
* :func:`client_metrics` picks one group of a client's ``metrics()`` (Kafka's names: ``request-rate``...);
  :func:`kafka_rate` is the rule Kafka's clients compute a rate with, as the exercise states it;
* the checks ``check_*``.
"""
from __future__ import annotations

import collections
import html
import math
import struct
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence

from kafkalab.labs import CheckResult, Part, check, check_equal, is_unanswered
from kafkalab.viz.textfit import GRAPHVIZ_FONT
from kafkalab.protocol import (ApiKey, FrameReader, InvalidReceiveError, api_name, encode_request, encode_response,
                               make_request, make_response, request_class, response_class, size_prefixed)
from kafkalab.records import SimpleRecord, build_batch

__all__ = ["CLIENT_ID", "LIBRDKAFKA_SOFTWARE", "TOPIC", "TIMESTAMP", "create_topic_with_leaders", "Connection",
           "client_connections", "wait_for_connections", "coarse", "produce_frame", "response_order",
           "connections_diagram", "request_path_diagram", "MetricsBars", "response_frames", "check_max_request_size",
           "check_response_order", "check_match_responses", "check_connections_per_broker", "check_produce_rates",
           "client_metrics", "kafka_rate", "check_client_rates", "wait_for_requests"]

CLIENT_ID = "kafkalab-lab03"
LIBRDKAFKA_SOFTWARE = {"client.software.name": "kafkalab-lab", "client.software.version": "1.0"}
TOPIC = "orders"
#: Every record the lab produces carries this timestamp (ms since the epoch), so batches and their CRCs repeat.
TIMESTAMP = 1700000000000
_e = html.escape


# -- cluster helpers ------------------------------------------------------------------------------------------------
def create_topic_with_leaders(cluster, name: str, leaders: Sequence[int], timeout: float = 10.0) -> None:
    """Create ``name`` with one partition per entry of ``leaders``, partition ``p`` on broker ``leaders[p]``
    (replication factor 1), and wait until every broker knows the leaders."""
    cluster.create_topic(name, timeout=timeout, assignment={p: [int(b)] for p, b in enumerate(leaders)})


class Connection(NamedTuple):
    """One connection a client opened: the broker, its number (0, 1, ... in order of first request), the APIs
    sent on it (name -> count, in order of first use), and whether it is still open."""

    broker: int
    number: int
    apis: dict
    open: bool


def client_connections(cluster, client_id: str) -> list[Connection]:
    """Every connection ``client_id`` used, from the brokers' request logs (ports never leave this function)."""
    first: dict = {}
    for broker_id, broker in sorted(cluster.brokers.items()):
        for r in broker.channel.request_log.records:
            if r.client_id != client_id:
                continue
            key = (broker_id, r.connection_id)
            entry = first.setdefault(key, (r.received_ms, len(first), collections.Counter()))
            entry[2][r.api_name] += 1
    ordered = sorted(first.items(), key=lambda kv: (kv[0][0], kv[1][0], kv[1][1]))   # broker, then time
    out = []
    for number, ((broker_id, conn_id), (_, _, apis)) in enumerate(ordered):
        live = conn_id in cluster.broker(broker_id).socket_server.connection_ids
        out.append(Connection(broker_id, number, dict(apis), live))
    return out


def wait_for_connections(cluster, counts: Mapping[int, int], timeout: float = 5.0) -> bool:
    """Wait until broker ``b`` has exactly ``counts[b]`` open connections (a client closing its bootstrap
    connection does so in the background). Returns False on timeout instead of raising."""
    try:
        cluster.wait_until(lambda: all(len(cluster.broker(b).socket_server.connection_ids) == n
                                       for b, n in counts.items()), timeout)
        return True
    except TimeoutError:
        return False


def wait_for_requests(cluster, client_id: str, count: int, *, api: Optional[str] = None,
                      timeout: float = 5.0) -> None:
    """Wait until broker 0's request log holds ``count`` requests (of ``api``, if given) from ``client_id``: a
    broker logs a request once its answer is written, so the client may have the answer a moment earlier."""
    def logged() -> int:
        return sum(1 for r in cluster.broker(0).channel.request_log.records
                   if r.client_id == client_id and (api is None or r.api_name == api))
    cluster.wait_until(lambda: logged() >= count, timeout, f"broker 0 did not log {count} requests of {client_id}")


def coarse(ms: float, long_ms: float = 400.0) -> str:
    """A duration as a label that does not change from run to run: ``"short"`` below 100 ms, ``"long"`` from
    ``long_ms`` on, ``"in between"`` otherwise (which a lab's design should never produce)."""
    if ms < 100.0:
        return "short (< 0.1 s)"
    if ms >= long_ms:
        return f"long (≥ {long_ms / 1000:g} s)"
    return "in between"


# -- frames -------------------------------------------------------------------------------------------------------------
def produce_frame(size: int, *, topic: str = TOPIC, partition: int = 0, version: int = 9, correlation_id: int = 1,
                  client_id: str = CLIENT_ID, exact: bool = True) -> bytes:
    """A Produce request (acks=all, one record of ``x`` bytes) whose frame -- without the 4-byte size prefix --
    is ``size`` bytes long (or as close as one record allows when ``exact`` is False)."""
    Produce = request_class(ApiKey.PRODUCE)

    def build(n: int) -> bytes:
        batch = build_batch([SimpleRecord(b"k", b"x" * n, (), TIMESTAMP)])
        body = Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
            name=topic, partition_data=(Produce.TopicProduceData.PartitionProduceData(index=partition,
                                                                                      records=batch),)),))
        return encode_request(make_request(body, api_version=version, correlation_id=correlation_id,
                                           client_id=client_id))

    n = max(0, size - len(build(0)))
    for _ in range(8):                      # varint lengths grow at a few boundaries: converge in a few steps
        frame = build(n)
        if len(frame) == size or n == 0 and len(frame) > size:
            return frame
        n = max(0, n + size - len(frame))
    if exact:
        raise ValueError(f"cannot build a Produce frame of exactly {size} bytes")
    return build(n)


def response_frames(in_flight: Mapping[int, tuple[str, int]]) -> list[bytes]:
    """Size-prefixed responses (default bodies) to the requests ``in_flight`` (correlation id -> (API name,
    version)), in the order a broker sends them: by correlation id, the order a client numbers its requests."""
    keys = {api_name(k): int(k) for k in ApiKey}
    return [size_prefixed(encode_response(make_response(response_class(keys[name])(), api_version=version,
                                                        correlation_id=corr)))
            for corr, (name, version) in sorted(in_flight.items())]


# -- the ordering rule --------------------------------------------------------------------------------------------------
def response_order(scenario: Mapping[str, Sequence[tuple[str, float]]]) -> list[str]:
    """When each response leaves the broker, for requests all sent at time 0.

    ``scenario``: connection -> ``[(label, time the request needs, ms), ...]`` in the order sent. One request at a
    time per connection (the next is read only after the previous one was answered), connections in parallel.
    Returns the labels in the order the responses are sent (ties: in the order of ``scenario``)."""
    done = []
    for i, (_conn, requests) in enumerate(scenario.items()):
        t = 0.0
        for j, (label, need) in enumerate(requests):
            t += need
            done.append((t, i, j, label))
    return [label for *_, label in sorted(done)]


# -- pictures -------------------------------------------------------------------------------------------------------------
def connections_diagram(connections: Iterable[Connection], client: str, brokers: Iterable[int],
                        leaders: Mapping[int, int] = ()):
    """Graphviz: the client on the left, one box per broker, one edge per connection (dashed once closed)."""
    import graphviz

    from kafkalab.viz import Diagram

    g = graphviz.Digraph("connections", graph_attr={"rankdir": "LR", "bgcolor": "transparent", "nodesep": "0.35",
                                                     "ranksep": "2.2", "fontname": GRAPHVIZ_FONT},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "shape": "box", "style": "rounded,filled",
                                    "fillcolor": "#f8f9fa", "color": "#868e96"},
                         edge_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "10", "color": "#495057",
                                    "arrowsize": "0.6"})
    g.node("client", f"{client}\n(one process)", fillcolor="#e7f5ff", color="#1971c2")
    led = collections.defaultdict(list)
    for p, b in dict(leaders).items():
        led[b].append(p)
    for b in brokers:
        extra = f"\nleader of partition {', '.join(map(str, sorted(led[b])))}" if led.get(b) else ""
        g.node(f"b{b}", f"broker {b}{extra}")
    for c in connections:
        label = f"connection {c.number}\n" + ", ".join(
            f"{api} ×{n}" if n > 1 else api for api, n in c.apis.items())
        style = {} if c.open else {"style": "dashed", "color": "#adb5bd", "fontcolor": "#868e96"}
        g.edge("client", f"b{c.broker}", label=label + ("" if c.open else "\n(closed)"), **style)
    return Diagram(g, caption="Each edge is one TCP connection; a dashed one was closed once the client knew the "
                              "brokers by id.")


def request_path_diagram(num_io_threads: int = 8, queued_max_requests: int = 500):
    """Graphviz: a request's path through a broker, with the settings that size each stage.

    Drawn as a loop of two rows (the way in along the top, the way back along the bottom), so that it is narrow
    enough to show its text at 11 px or more in a notebook beside JupyterLab's file browser on a 1280 px screen
    (one row was 1,665 px wide and shrank its text to about 6 px there)."""
    import graphviz

    from kafkalab.viz import Diagram

    g = graphviz.Digraph("path", graph_attr={"rankdir": "TB", "bgcolor": "transparent", "nodesep": "0.5",
                                              "ranksep": "0.45", "fontname": GRAPHVIZ_FONT},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "shape": "box",
                                    "style": "rounded,filled", "fillcolor": "#f8f9fa", "color": "#868e96"},
                         edge_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "color": "#495057",
                                    "arrowsize": "0.6"})
    g.node("sock", "socket\n(one per connection)", fillcolor="#e7f5ff")
    g.node("proc", "network thread\nreads a frame, parses it,\nthen mutes the connection", fillcolor="#fff4e6")
    g.node("queue", f"request queue\nqueued.max.requests = {queued_max_requests}", shape="box3d",
           fillcolor="#fff9db")
    g.node("io", f"I/O threads\nnum.io.threads = {num_io_threads}\n(KafkaApis: the work)", fillcolor="#ebfbee")
    g.node("purg", "purgatory\n(waits: Fetch max_wait_ms,\nProduce acks=all)", fillcolor="#f3f0ff")
    g.node("resp", "response\n(network thread writes it,\nthen unmutes)", fillcolor="#fff4e6")
    for row in (("sock", "proc", "queue"), ("resp", "purg", "io")):
        with g.subgraph() as same:
            same.attr(rank="same")
            for name in row:
                same.node(name)
    g.edge("sock", "proc", label="bytes")
    g.edge("proc", "queue", label="request")
    g.edge("queue", "io", label="request_queue_time")
    # the way back runs right to left: each edge is written left to right and drawn pointing back (dir=back),
    # which keeps the bottom row in the order response, purgatory, I/O threads
    g.edge("purg", "io", style="dashed", dir="back")
    g.edge("resp", "purg", label="remote_time", style="dashed", dir="back")
    g.edge("resp", "io", label="local_time", dir="back")
    g.edge("sock", "resp", label="response_send_time", dir="back")
    return Diagram(g, caption="One request's path through a broker, with the request log's names for the time "
                              "spent in each stage.")


class MetricsBars:
    """Per-API bars from ``RequestMetrics.snapshot()`` rows: requests, bytes in (requests) and bytes out
    (responses). Deterministic HTML: only counts and sizes, which repeat when the workload does."""

    def __init__(self, rows: Iterable[Mapping[str, Any]], title: str = ""):
        self.rows = list(rows)
        self.title = title

    def _repr_html_(self) -> str:
        biggest = max([max(r["request_bytes"], r["response_bytes"]) for r in self.rows] + [1])
        most = max([r["requests"] for r in self.rows] + [1])

        def bar(value, scale, colour, width=260):
            w = 0 if value == 0 else max(2, round(width * value / scale))
            return (f'<div style="display:flex;align-items:center;gap:6px"><div style="height:11px;width:{w}px;'
                    f'background:{colour};border-radius:2px"></div><span style="font:11.5px ui-monospace,Menlo,'
                    f'Consolas,monospace;color:#495057">{value:,}</span></div>')

        rows = []
        for r in sorted(self.rows, key=lambda r: -r["request_bytes"] - r["response_bytes"]):
            rows.append(f'<tr><td style="padding:3px 10px 3px 0;white-space:nowrap"><b>{_e(r["api_name"])}</b></td>'
                        f'<td style="padding:3px 10px">{bar(r["requests"], most, "#868e96", 120)}</td>'
                        f'<td style="padding:3px 10px">{bar(r["request_bytes"], biggest, "#1971c2")}</td>'
                        f'<td style="padding:3px 10px">{bar(r["response_bytes"], biggest, "#e8590c")}</td></tr>')
        head = ('<tr style="color:#656d76;font-size:12px;text-align:left"><th></th><th style="padding:0 10px">'
                'requests</th><th style="padding:0 10px">bytes in (requests)</th><th style="padding:0 10px">'
                'bytes out (responses)</th></tr>')
        title = f'<div style="font-weight:600;margin-bottom:4px">{_e(self.title)}</div>' if self.title else ""
        return (f'<div style="font:13px/1.4 system-ui,-apple-system,&quot;Segoe UI&quot;,Roboto,sans-serif;'
                f'color:#1f2328">{title}<table style="border-collapse:collapse">{head}{"".join(rows)}</table></div>')

    def __repr__(self) -> str:
        return "\n".join(f"{r['api_name']:<16} {r['requests']:>5} requests {r['request_bytes']:>8} B in "
                         f"{r['response_bytes']:>8} B out" for r in self.rows)


def client_metrics(metrics: Mapping, group: str) -> dict[str, float]:
    """``{name: value}`` of one group of a client's ``metrics()`` (``{MetricName: value}``), untagged ones only:
    ``producer-metrics`` holds the client's totals, ``producer-node-metrics`` the same per broker."""
    return {m.name: v for m, v in metrics.items() if m.group == group and not m.tags}


def kafka_rate(total: float, elapsed_ms: int, window_ms: int = 30_000, samples: int = 2) -> float:
    """What a Java client's ``*-rate`` reads ``elapsed_ms`` after ``total`` was recorded at one instant: the
    total over the elapsed time, topped up to ``samples - 1`` full windows; 0 once ``samples`` windows passed."""
    if elapsed_ms >= samples * window_ms:
        return 0.0
    full = elapsed_ms // window_ms
    span = elapsed_ms + max(0, samples - 1 - full) * window_ms
    return total / (max(span, 1) / 1000)


# -- checks ----------------------------------------------------------------------------------------------------------------
def check_max_request_size(answer: Any, max_bytes: int) -> CheckResult:
    """Exercise: the largest request, on the wire with its 4-byte size prefix, a broker with
    ``socket.request.max.bytes = max_bytes`` accepts."""
    reader_ok = None
    for total in range(max_bytes + 8, 3, -1):          # ask the reader itself, not a formula
        try:
            FrameReader(max_bytes).feed(struct.pack(">i", total - 4))
            reader_ok = total
            break
        except InvalidReceiveError:
            continue

    def diagnose(a):
        if not isinstance(a, int):
            return "give an int (a number of bytes)"
        if a == max_bytes:
            return "the limit applies to the size field's value, i.e. to the bytes after the 4-byte size prefix"
        if a == max_bytes - 4:
            return "the other way round: the size prefix comes on top of the limit"
        if a in (max_bytes + 3, max_bytes + 5):
            return "off by one: a size equal to the limit is still accepted; one more byte is not"
        return None
    return check_equal(f"Exercise 1 · the largest request (socket.request.max.bytes = {max_bytes})", answer,
                       reader_ok, diagnose=diagnose,
                       hint="the broker reads the int32 size first and compares that number with the limit")


def check_response_order(answer: Any, scenario: Mapping[str, Sequence[tuple[str, float]]]) -> CheckResult:
    """Exercise: the order in which the broker sends the responses of ``scenario`` (see :func:`response_order`)."""
    expected = response_order(scenario)
    title = "Exercise 2 · the order of the responses"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple)) or sorted(map(str, answer)) != sorted(expected):
        return check(title, False, "give every label of the scenario exactly once, as a list",
                     hint="a list of the labels, e.g. [\"C1 Metadata\", ...]")
    answer = list(answer)
    parts, ok = [], answer == expected
    if not ok:
        position = {label: i for i, label in enumerate(answer)}
        for conn, requests in scenario.items():
            labels = [label for label, _ in requests]
            if [position[x] for x in labels] != sorted(position[x] for x in labels):
                parts.append(Part(f"connection {conn}", "fail", "its responses must leave in the order its requests "
                                                                 "were sent"))
            else:
                parts.append(Part(f"connection {conn}", "pass", "in order"))
    hint = ("one request at a time per connection: a request waits until the one before it on its connection "
            "is answered; connections do not wait for each other")
    return check(title, ok, "right" if ok else "not the order the broker sends them in", parts=parts, hint=hint)


def check_match_responses(answer: Any, in_flight: Mapping[int, tuple[str, int]],
                          responses: Sequence[bytes]) -> CheckResult:
    """Exercise: for each response frame (size prefix included), the API name of the request it answers."""
    expected = [in_flight[struct.unpack_from(">i", f, 4)[0]][0] for f in responses]

    def diagnose(a):
        if not isinstance(a, (list, tuple)) or len(a) != len(responses):
            return f"give a list of {len(responses)} API names, one per response frame"
        if list(a) == [v[0] for v in in_flight.values()] and list(a) != expected:
            return "that is the order of the dict; read each frame's correlation id instead"
        firsts = [in_flight.get(struct.unpack_from(">i", f, 0)[0]) for f in responses]
        if any(x is None for x in firsts):
            return "bytes 0-3 are the size prefix; the correlation id follows it"
        return None
    return check_equal("Exercise 3 · which response answers which request", list(answer) if isinstance(
        answer, tuple) else answer, expected, diagnose=diagnose,
        hint="a response starts with int32 size, then int32 correlation_id; look that id up in in_flight")


def check_connections_per_broker(answer: Any, records: Iterable[tuple[int, Any]], client_id: str) -> CheckResult:
    """Exercise: how many connections ``client_id`` opened to each broker, from ``(broker, RequestRecord)``
    pairs."""
    seen = collections.defaultdict(set)
    for broker, r in records:
        if r.client_id == client_id:
            seen[broker].add(r.connection_id)
    expected = {b: len(ids) for b, ids in sorted(seen.items())}

    def diagnose(a):
        if not isinstance(a, Mapping):
            return "give a dict {broker id: number of connections}"
        if set(a) != set(expected):
            return f"one entry per broker the client talked to ({len(expected)} of them)"
        if all(v == 1 for v in a.values()):
            return "one broker got two: count the bootstrap connection too"
        return None
    return check_equal("Exercise 4 · connections per broker", dict(answer) if isinstance(answer, Mapping) else answer,
                       expected, diagnose=diagnose,
                       hint="count the distinct connection_id values per broker, for this client id only")


def check_produce_rates(answer: Any, row: Mapping[str, Any], window_s: float) -> CheckResult:
    """Exercise: ``{"avg_request_bytes": ..., "request_bytes_per_sec": ...}`` for the snapshot ``row`` of one API,
    with a rate window of ``window_s`` seconds (all requests inside it)."""
    title = f"Exercise 5 · {row['api_name']} size and rate"
    expected = {"avg_request_bytes": row["request_bytes"] / row["requests"],
                "request_bytes_per_sec": row["request_bytes"] / window_s}
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict with the two keys asked for")
    parts, right = [], 0
    for key, want in expected.items():
        got = answer.get(key, ...)
        if is_unanswered(got):
            parts.append(Part(key, "todo", "not answered yet"))
        elif isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-3):
            right += 1
            parts.append(Part(key, "pass", f"{got:g}"))
        else:
            why = ""
            if isinstance(got, (int, float)) and math.isclose(got, row["request_bytes"] / row["requests"] / window_s,
                                                                rel_tol=1e-3):
                why = "that is bytes per request per second; a rate divides the total by the window"
            elif isinstance(got, (int, float)) and math.isclose(got, row["response_bytes"] / window_s, rel_tol=1e-3):
                why = "that is the response bytes; the question is about the requests"
            parts.append(Part(key, "fail", why or f"{got!r} is not right"))
    ok = right == len(expected)
    return check(title, ok, f"{right} of {len(expected)} correct", parts=parts,
                 hint="" if ok else "request_bytes / requests, and request_bytes / the window in seconds")


def check_client_rates(answer: Any, total: int, times_s: Sequence[int]) -> CheckResult:
    """Exercise: ``{seconds: request-rate}`` read ``seconds`` after ``total`` requests recorded at one instant,
    with Kafka's defaults (2 samples of 30 s)."""
    title = "Exercise 6 · A client's request-rate"
    expected = {t: kafka_rate(total, t * 1000) for t in times_s}
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict {seconds: rate}")
    parts, right = [], 0
    for t, want in expected.items():
        got = answer.get(t, ...)
        if is_unanswered(got):
            parts.append(Part(f"+{t} s", "todo", "not answered yet"))
        elif isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, abs_tol=1e-3):
            right += 1
            parts.append(Part(f"+{t} s", "pass", f"{got:g}"))
        else:
            why = ""
            if isinstance(got, (int, float)) and t and math.isclose(got, total / t, rel_tol=1e-3):
                why = "that is the total over the elapsed time alone; under one full window, add a window"
            elif isinstance(got, (int, float)) and t < 60 and math.isclose(got, total / (t + 30), rel_tol=1e-3):
                why = "a full window has passed: the elapsed time is not topped up any more"
            elif t >= 60 and got != 0:
                why = "every sample is dropped 2 x 30 s after its last event"
            parts.append(Part(f"+{t} s", "fail", why or f"{got!r} is not right"))
    ok = right == len(expected)
    return check(title, ok, f"{right} of {len(expected)} correct", parts=parts,
                 hint="" if ok else "total / (elapsed + one 30 s window while elapsed < 30 s); 0 from 60 s on")
