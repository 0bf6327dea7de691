"""Lab 02 (``labs/02_api_versions.ipynb``): version ranges, the negotiation rule, real clients, pictures, checks.

Theory of operation
-------------------
Since Kafka 0.10 a client opens every connection with ApiVersions; the broker lists each API it serves with
the lowest and highest version; the client then uses, per API, **the highest version both sides support**,
and reports an error naming the API when there is none (KIP-35). This module holds what the lab needs to show
that rule at work with real clients:

* the client-side version ranges of the four clients the labs use (:data:`CLIENT_RANGES`), taken from the
  clients' sources (kafkalab's protocol-compatibility notes), and two broker advertisements from Kafka's past
  and present (:data:`KAFKA_2_0`, :data:`KAFKA_4_0`);
* :func:`negotiate` / :func:`pick_versions`, the rule itself, and :class:`NoCommonVersion`, its failure;
* :func:`run_client` (a real client against the lab broker, read back from the broker's request log) and
  :func:`capture_conversation` (a real client against a :class:`~kafkalab.trace.ScriptedListener` with a chosen
  advertisement). kcat is optional: when it is missing, or is not the librdkafka 2.0.2 build the lab recorded,
  both return the conversation recorded in :data:`KCAT_RECORDED`, so the notebook prints the same either way;
* :class:`RawConnection` (a bare TCP connection: write frames, read frames, notice a close) and
  :class:`BrokerLog` (the broker's warnings, kept instead of printed, with connection ids blanked), which
  lab 03 uses too;
* the pictures: :class:`RangeChart` (two ranges and the chosen version, API by API), :class:`CompatGrid`
  (versions each client used against two brokers), :class:`ApiFamilies` (every API key by family) and
  :class:`SequenceDiagram` (a deterministic SVG sequence diagram, also lab 03's);
* the checks ``check_*``, which compute the right answer from the data the learner was given.

Everything printed is deterministic: client ids and librdkafka's software name are fixed, conversations are
shown as versions (not timings), and repeats that a client may or may not send (librdkafka sometimes asks for
Metadata twice) are folded.
"""
from __future__ import annotations

import html
import logging
import os
import re
import select
import socket
import struct
import subprocess
from typing import Any, Iterable, Mapping, NamedTuple, Optional

from kafkalab.exercises import CheckResult, Part, check, check_equal, check_parts, is_unanswered
from kafkalab.protocol import ApiKey, api_name, request_schema, size_prefixed
from kafkalab.trace import ClientNotAvailable, ScriptedReplies, capture, client_version
from kafkalab.trace import drivers

__all__ = ["CLIENT_ID", "LIBRDKAFKA_SOFTWARE", "TOPIC", "CLIENTS", "CLIENT_LABELS", "CLIENT_RANGES", "KAFKA_2_0",
           "KAFKA_4_0", "KAFKA_0_10_CLIENT", "KCAT_RECORDED", "SOURCES", "Step", "NoCommonVersion", "negotiate",
           "pick_versions", "versions_used", "run_client", "capture_conversation", "RawConnection", "BrokerLog",
           "RangeChart", "CompatGrid", "ApiFamilies", "FAMILIES", "SequenceDiagram", "API_COLOURS",
           "check_versions_for", "check_negotiate", "check_retry_version", "check_no_common_version"]

CLIENT_ID = "kafkalab-lab02"
#: librdkafka's KIP-511 self-description, fixed (as in lab 01) so that its bytes do not depend on the build.
LIBRDKAFKA_SOFTWARE = {"client.software.name": "kafkalab-lab", "client.software.version": "1.0"}
TOPIC = "sensor-readings"
CLIENTS = ("confluent-kafka", "kcat", "kafka-python", "aiokafka")
CLIENT_LABELS = {"confluent-kafka": "confluent-kafka 2.16 (librdkafka 2.16)", "kcat": "kcat 1.7.1 (librdkafka 2.0.2)",
                 "kafka-python": "kafka-python 3.0", "aiokafka": "aiokafka 0.14"}
K = ApiKey

#: What each client is able to send, API by API: (lowest, highest) version in its own code. The version it
#: *uses* is then clipped by the broker's advertisement. (librdkafka sends Produce 3+ once the broker has
#: Produce 3 and Fetch 4, which enables the v2 record format; aiokafka never sends a flexible version.)
CLIENT_RANGES: dict[str, dict[int, tuple[int, int]]] = {
    "confluent-kafka": {K.API_VERSIONS: (0, 3), K.METADATA: (0, 13), K.PRODUCE: (0, 10), K.FETCH: (0, 16),
                        K.LIST_OFFSETS: (0, 7), K.FIND_COORDINATOR: (0, 2), K.INIT_PRODUCER_ID: (0, 4),
                        K.DELETE_RECORDS: (0, 2), K.OFFSET_FOR_LEADER_EPOCH: (2, 2)},
    "kcat": {K.API_VERSIONS: (0, 3), K.METADATA: (0, 4), K.PRODUCE: (0, 7), K.FETCH: (0, 11),
             K.LIST_OFFSETS: (0, 2), K.FIND_COORDINATOR: (0, 2), K.INIT_PRODUCER_ID: (0, 4), K.DELETE_RECORDS: (0, 1)},
    "kafka-python": {K.API_VERSIONS: (0, 4), K.METADATA: (0, 13), K.PRODUCE: (0, 9), K.FETCH: (0, 12),
                     K.LIST_OFFSETS: (0, 11), K.FIND_COORDINATOR: (0, 6), K.INIT_PRODUCER_ID: (0, 4),
                     K.DELETE_RECORDS: (0, 2), K.OFFSET_FOR_LEADER_EPOCH: (0, 4)},
    "aiokafka": {K.API_VERSIONS: (0, 0), K.METADATA: (0, 5), K.PRODUCE: (0, 7), K.FETCH: (1, 11),
                 K.LIST_OFFSETS: (0, 3), K.FIND_COORDINATOR: (0, 1), K.INIT_PRODUCER_ID: (0, 0),
                 K.DELETE_RECORDS: (0, 2)},
}

#: A broker of the Kafka 2.0 line (2018), for the APIs a producer needs: what it advertises.
KAFKA_2_0: dict[int, tuple[int, int]] = {
    K.PRODUCE: (0, 6), K.FETCH: (0, 8), K.LIST_OFFSETS: (0, 3), K.METADATA: (0, 6), K.FIND_COORDINATOR: (0, 2),
    K.API_VERSIONS: (0, 2), K.DELETE_RECORDS: (0, 1), K.INIT_PRODUCER_ID: (0, 1), K.OFFSET_FOR_LEADER_EPOCH: (0, 1)}

#: The versions a Kafka 4.0 broker *accepts* (KIP-896 removed the oldest ones), for a consumer's APIs.
KAFKA_4_0: dict[int, tuple[int, int]] = {
    K.PRODUCE: (3, 12), K.FETCH: (4, 17), K.LIST_OFFSETS: (1, 10), K.METADATA: (0, 13), K.OFFSET_COMMIT: (2, 9),
    K.OFFSET_FETCH: (1, 9), K.FIND_COORDINATOR: (0, 6), K.JOIN_GROUP: (0, 9), K.HEARTBEAT: (0, 4),
    K.LEAVE_GROUP: (0, 5), K.SYNC_GROUP: (0, 5), K.API_VERSIONS: (0, 4)}

#: What a Java client of the Kafka 0.10.0 line (2016) could send, for the same APIs.
KAFKA_0_10_CLIENT: dict[int, tuple[int, int]] = {
    K.PRODUCE: (0, 2), K.FETCH: (0, 2), K.LIST_OFFSETS: (0, 0), K.METADATA: (0, 1), K.OFFSET_COMMIT: (0, 2),
    K.OFFSET_FETCH: (0, 1), K.FIND_COORDINATOR: (0, 0), K.JOIN_GROUP: (0, 0), K.HEARTBEAT: (0, 0),
    K.LEAVE_GROUP: (0, 0), K.SYNC_GROUP: (0, 0), K.API_VERSIONS: (0, 0)}

#: kcat 1.7.1 (librdkafka 2.0.2) producing three records, as recorded: (connection, API, version) in order.
#: ``"kafkalab"``: against the lab broker; ``"kafka-2.0"``: against a listener advertising :data:`KAFKA_2_0`.
KCAT_RECORDED = {
    "kafkalab": [(0, "ApiVersions", 3), (0, "Metadata", 4), (0, "Produce", 7)],
    "kafka-2.0": [(0, "ApiVersions", 3), (0, "ApiVersions", 0), (0, "Metadata", 4), (0, "Produce", 6)],
}
_KCAT_BUILD = "librdkafka 2.0.2"
#: Which source each conversation of this process used: ``{"kcat kafkalab": "live", ...}`` or ``"recorded"``.
SOURCES: dict[str, str] = {}


# -- conversations --------------------------------------------------------------------------------------------------
class Step(NamedTuple):
    """One request of a conversation: the client's connection (0, 1, ... in order of first use), API, version."""

    connection: int
    api_name: str
    api_version: int


def versions_used(steps: Iterable[Step]) -> dict[str, int]:
    """``{API name: highest version sent}`` over a conversation (ApiVersions: the *last* one, after fallbacks)."""
    out: dict[str, int] = {}
    for s in steps:
        if s.api_name == "ApiVersions":
            out[s.api_name] = s.api_version
        else:
            out[s.api_name] = max(out.get(s.api_name, -1), s.api_version)
    return out


def fold(steps: Iterable[Step]) -> list[Step]:
    """Drop a step that repeats the one before it on the same connection (a client may repeat a Metadata)."""
    out: list[Step] = []
    last: dict[int, Step] = {}
    for s in steps:
        if last.get(s.connection) != s:
            out.append(s)
        last[s.connection] = s
    return out


def _kcat_is_recorded_build() -> bool:
    try:
        return _KCAT_BUILD in client_version("kcat")
    except Exception:  # noqa: BLE001 -- kcat missing or unreadable: use the recording
        return False


def _spec(client: str, bootstrap: str, client_id: str, timeout: float) -> dict:
    config = dict(LIBRDKAFKA_SOFTWARE) if client in ("kcat", "confluent-kafka") else {}
    return {"client": client, "action": "produce", "bootstrap": bootstrap, "topic": TOPIC,
            "records": drivers.DEFAULT_RECORDS, "compression": None, "acks": -1, "idempotent": None,
            "client_id": client_id, "config": config, "timeout": max(1.0, timeout - 1.0)}


def run_client(client: str, cluster, *, timeout: float = 8.0) -> list[Step]:
    """Let ``client`` produce three records to :data:`TOPIC` on ``cluster`` (in a subprocess, as
    :func:`kafkalab.trace.capture` does) and return what the broker's request log saw from it, folded."""
    if client == "kcat" and not (drivers.is_available("kcat") and _kcat_is_recorded_build()):
        SOURCES["kcat kafkalab"] = "recorded"
        return [Step(*s) for s in KCAT_RECORDED["kafkalab"]]
    if not drivers.is_available(client):
        raise ClientNotAvailable(f"{client} is not installed ({drivers.install_hint(client)})")
    broker = cluster.broker(0)
    before = set(broker.socket_server.connection_ids)
    seen = len(broker.channel.request_log.records)
    client_id = f"{CLIENT_ID}-{client}"
    spec = _spec(client, cluster.bootstrap_servers, client_id, timeout)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(drivers.command(spec), input=drivers.stdin_for(spec), capture_output=True, text=True, env=env,
                   timeout=timeout + 5, start_new_session=True)
    # The client has exited; once the broker has closed its side of every connection, each request the client
    # sent has been answered and recorded (a connection is closed only after its last request completed).
    cluster.wait_until(lambda: set(broker.socket_server.connection_ids) <= before, 5.0, "connections still open")
    SOURCES[f"{client} kafkalab"] = "live"
    connections: dict[str, int] = {}
    steps = [Step(connections.setdefault(r.connection_id, len(connections)), r.api_name, r.api_version)
             for r in broker.channel.request_log.records[seen:] if r.client_id == client_id]
    return fold(steps)


def capture_conversation(client: str, advertised: Mapping[int, tuple[int, int]], *, label: str = "kafka-2.0",
                         timeout: float = 8.0):
    """Let ``client`` produce three records to a :class:`~kafkalab.trace.ScriptedListener` advertising
    ``advertised``. Returns ``(steps, capture_result or None)`` (None: kcat's recording was used)."""
    if client == "kcat" and not (drivers.is_available("kcat") and _kcat_is_recorded_build()):
        SOURCES[f"kcat {label}"] = "recorded"
        return [Step(*s) for s in KCAT_RECORDED[label]], None
    policy = ScriptedReplies([(k, lo, hi) for k, (lo, hi) in sorted(advertised.items())])
    spec = _spec(client, "", f"{CLIENT_ID}-{client}", timeout)
    result = capture(client, "produce", reply=policy, topic=TOPIC, client_id=spec["client_id"],
                     config=spec["config"], timeout=timeout)
    SOURCES[f"{client} {label}"] = "live"
    return fold(Step(r.connection, r.api_name, r.api_version) for r in result), result


# -- the rule -----------------------------------------------------------------------------------------------------------
class NoCommonVersion(Exception):
    """A client and a broker share no version of an API (Java: UnsupportedVersionException)."""

    def __init__(self, api_key: int, client_range: tuple[int, int], broker_range: Optional[tuple[int, int]]):
        self.api_key, self.client_range, self.broker_range = int(api_key), client_range, broker_range
        theirs = "does not serve it at all" if broker_range is None else f"serves v{_span(broker_range)}"
        super().__init__(f"no version of {api_name(api_key)} that both sides support: the client sends "
                         f"v{_span(client_range)}, the broker {theirs}")


def _span(r: tuple[int, int]) -> str:
    return f"{r[0]}" if r[0] == r[1] else f"{r[0]}-{r[1]}"


def negotiate(client_range: tuple[int, int], broker_range: Optional[tuple[int, int]]) -> Optional[int]:
    """The highest version inside both ranges, or None when they do not overlap (or the broker lacks the API)."""
    if broker_range is None:
        return None
    low, high = max(client_range[0], broker_range[0]), min(client_range[1], broker_range[1])
    return high if low <= high else None


def pick_versions(client: Mapping[int, tuple[int, int]], broker: Mapping[int, tuple[int, int]], *,
                  strict: bool = True) -> dict[int, Optional[int]]:
    """:func:`negotiate` for every API the client knows. ``strict``: raise :class:`NoCommonVersion` for the
    first API (in key order) without a common version; otherwise map it to None."""
    out: dict[int, Optional[int]] = {}
    for key in sorted(client):
        v = negotiate(client[key], broker.get(key))
        if v is None and strict:
            raise NoCommonVersion(key, client[key], broker.get(key))
        out[int(key)] = v
    return out


# -- a bare connection, and the broker's log -------------------------------------------------------------------------
class RawConnection:
    """A TCP connection to a broker with nothing on top: write frames, read frames, notice when it closes.

    ``send(*frames)`` writes size-prefixed frames in one go (so several requests can be in flight);
    ``receive(timeout)`` returns the next response frame (without its size), or None if the broker closed the
    connection (``closed`` is then True). A reset by the peer counts as a close.
    """

    def __init__(self, address, timeout: float = 5.0):
        if isinstance(address, str):
            host, port = address.split(",")[0].rsplit(":", 1)
            address = (host, int(port))
        self.sock = socket.create_connection(address, timeout=timeout)
        self.closed = False

    def send(self, *frames: bytes, prefixed: bool = False) -> None:
        data = b"".join(f if prefixed else size_prefixed(f) for f in frames)
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.closed = True

    def _exactly(self, n: int) -> Optional[bytes]:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            data += chunk
        return data

    def receive(self, timeout: float = 5.0) -> Optional[bytes]:
        self.sock.settimeout(timeout)
        head = self._exactly(4)
        return None if head is None else self._exactly(struct.unpack(">i", head)[0])

    def readable(self, timeout: float) -> bool:
        """Did anything (bytes or a close) arrive within ``timeout`` seconds?"""
        return bool(select.select([self.sock], [], [], timeout)[0])

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_CONN_ID = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}:\d+-\d{1,3}(?:\.\d{1,3}){3}:\d+-\d+")


class BrokerLog(logging.Handler):
    """Keeps the broker's log records (warnings and above) instead of letting them reach stderr.

    ``install()`` attaches it to the ``kafkalab`` logger; ``messages()`` returns the texts with connection ids
    (which contain ports) replaced by ``<connection>``; ``clear()`` forgets them.
    """

    def __init__(self, logger: str = "kafkalab", level: int = logging.WARNING):
        super().__init__(level)
        self.logger_name = logger
        self.records: list[logging.LogRecord] = []

    def install(self) -> "BrokerLog":
        logger = logging.getLogger(self.logger_name)
        for h in [h for h in logger.handlers if isinstance(h, BrokerLog)]:
            logger.removeHandler(h)
        logger.addHandler(self)
        return self

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [_CONN_ID.sub("<connection>", r.getMessage()) for r in list(self.records)]

    def clear(self) -> None:
        self.records.clear()


# -- pictures -----------------------------------------------------------------------------------------------------------
_FONT = "font:13px/1.4 system-ui,-apple-system,&quot;Segoe UI&quot;,Roboto,sans-serif;color:#1f2328"
_MONO = "font:12px/1.3 ui-monospace,Menlo,Consolas,monospace"
_e = html.escape


def _swatch(colour: str, border: str = "rgba(0,0,0,.15)") -> str:
    return (f'<span style="display:inline-block;width:.95em;height:.95em;border-radius:2px;vertical-align:-2px;'
            f'background:{colour};border:1px solid {border}"></span>')


class RangeChart:
    """API by API: the versions a client can send, the versions a broker serves, and the one they settle on.

    ``client`` and ``broker`` map API key -> (min, max). Columns are versions 0..n; a cell is green where both
    ranges hold the version (dark green: the chosen one), blue for the broker only, orange for the client only,
    grey where Kafka defines the version but neither side uses it.
    """

    COLOURS = {"both": "#b2f2bb", "chosen": "#2b8a3e", "broker": "#d0ebff", "client": "#ffe8cc", "none": "#f1f3f5"}

    def __init__(self, client: Mapping[int, tuple[int, int]], broker: Mapping[int, tuple[int, int]], *,
                 client_name: str = "client", broker_name: str = "broker", keys: Optional[Iterable[int]] = None):
        self.client, self.broker = dict(client), dict(broker)
        self.client_name, self.broker_name = client_name, broker_name
        self.keys = sorted(int(k) for k in (keys if keys is not None else set(client) | set(broker)))
        self.width = 1 + max(max(request_schema(k).valid_versions.hi, self.client.get(k, (0, 0))[1],
                                 self.broker.get(k, (0, 0))[1]) for k in self.keys)

    def rows(self) -> list[dict]:
        out = []
        for k in self.keys:
            c, b = self.client.get(k), self.broker.get(k)
            out.append({"api_key": k, "api": api_name(k), "client": _span(c) if c else "—",
                        "broker": _span(b) if b else "—", "chosen": negotiate(c, b) if c else None})
        return out

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="{_MONO};color:#656d76;font-weight:400;padding:0 2px;text-align:center">{v}</th>'
                       for v in range(self.width))
        body = []
        for row in self.rows():
            k = row["api_key"]
            c, b, chosen = self.client.get(k), self.broker.get(k), row["chosen"]
            schema = request_schema(k).valid_versions
            tds = []
            for v in range(self.width):
                in_c = c is not None and c[0] <= v <= c[1]
                in_b = b is not None and b[0] <= v <= b[1]
                kind = ("chosen" if v == chosen else "both" if in_c and in_b else "broker" if in_b
                        else "client" if in_c else "none" if v <= schema.hi else None)
                if kind is None:
                    tds.append('<td style="width:19px"></td>')
                    continue
                style = (f"background:{self.COLOURS[kind]};width:19px;height:19px;text-align:center;border-radius:3px;"
                         f"{_MONO};" + ("color:#fff;font-weight:700;" if kind == "chosen" else "color:#495057;"))
                text = str(v) if kind in ("chosen", "both") else ""
                tds.append(f'<td title="{_e(row["api"])} v{v}: {kind}" style="{style}">{text}</td>')
            verdict = (f'<b style="color:#2b8a3e">v{chosen}</b>' if chosen is not None else
                       '<b style="color:#c92a2a">✗ no common version</b>')
            body.append(f'<tr><td style="padding:0 8px 0 0;white-space:nowrap">{_e(row["api"])} '
                        f'<span style="color:#868e96">({k})</span></td>{"".join(tds)}'
                        f'<td style="padding:0 0 0 10px;white-space:nowrap">{verdict}</td></tr>')
        legend = (f'{_swatch(self.COLOURS["client"])} only {_e(self.client_name)} &nbsp; {_swatch(self.COLOURS["broker"])} '
                  f'only {_e(self.broker_name)} &nbsp; {_swatch(self.COLOURS["both"])} both &nbsp; '
                  f'{_swatch(self.COLOURS["chosen"])} the version used (the highest of both) &nbsp; '
                  f'{_swatch(self.COLOURS["none"])} defined by Kafka, used by neither')
        return (f'<div style="{_FONT};overflow-x:auto"><div style="margin-bottom:4px"><b>{_e(self.client_name)}</b> '
                f'↔ <b>{_e(self.broker_name)}</b></div><table style="border-collapse:separate;border-spacing:2px">'
                f'<tr><th></th>{head}<th></th></tr>{"".join(body)}</table>'
                f'<div style="margin-top:6px;color:#656d76;font-size:12px">{legend}</div></div>')

    def __repr__(self) -> str:
        return "\n".join(f"{r['api']:<22} client {r['client']:<6} broker {r['broker']:<6} -> "
                         + (f"v{r['chosen']}" if r["chosen"] is not None else "no common version")
                         for r in self.rows())


class CompatGrid:
    """Clients down, APIs across; each cell shows the version used against broker A, then against broker B."""

    def __init__(self, used: Mapping[str, tuple[Mapping[str, int], Mapping[str, int]]], apis: Iterable[str],
                 names: tuple[str, str] = ("new broker", "old broker"), labels: Optional[Mapping[str, str]] = None):
        self.used, self.apis, self.names = dict(used), list(apis), names
        self.labels = dict(labels or {})

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="padding:3px 8px">{_e(a)}</th>' for a in self.apis)
        rows = []
        for client, (a, b) in self.used.items():
            tds = []
            for api in self.apis:
                x, y = a.get(api), b.get(api)
                if x is None and y is None:
                    tds.append('<td style="text-align:center;color:#adb5bd">—</td>')
                    continue
                down = x is not None and y is not None and y < x
                colour = "#fff4e6" if down else "#f1f3f5"
                arrow = ' <span style="color:#e8590c">↘</span> ' if down else ' <span style="color:#adb5bd">→</span> '
                fx = "—" if x is None else f"v{x}"
                fy = "—" if y is None else f"v{y}"
                tds.append(f'<td style="text-align:center;background:{colour};border-radius:4px;padding:3px 8px;'
                           f'{_MONO}">{fx}{arrow}<b>{fy}</b></td>')
            rows.append(f'<tr><td style="padding:3px 8px;white-space:nowrap">{_e(self.labels.get(client, client))}</td>'
                        f'{"".join(tds)}</tr>')
        note = (f'cell: version used with the <b>{_e(self.names[0])}</b> → with the <b>{_e(self.names[1])}</b>; '
                f'orange: the client stepped down')
        return (f'<div style="{_FONT};overflow-x:auto"><table style="border-collapse:separate;border-spacing:3px">'
                f'<tr><th></th>{head}</tr>{"".join(rows)}</table>'
                f'<div style="margin-top:4px;color:#656d76;font-size:12px">{note}</div></div>')

    def __repr__(self) -> str:
        lines = [f"{'':<40}" + "".join(f"{a:>18}" for a in self.apis)]
        for client, (a, b) in self.used.items():
            cells = "".join(f"{('—' if a.get(api) is None else f'v{a[api]}') + ' -> ' + ('—' if b.get(api) is None else f'v{b[api]}'):>18}"
                            for api in self.apis)
            lines.append(f"{self.labels.get(client, client):<40}{cells}")
        return "\n".join(lines)


#: Every API key, grouped by what it is for (one family per key).
FAMILIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "data": ("Produce and consume records", (0, 1, 2, 21, 23, 61)),
    "discovery": ("Versions, metadata, coordinators", (18, 3, 10, 60, 75)),
    "groups": ("Consumer groups (classic protocol)", (8, 9, 11, 12, 13, 14, 15, 16, 42, 47)),
    "new-groups": ("Consumer, share and streams groups (KIP-848, KIP-932, KIP-1071)",
                   (68, 69, 76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92)),
    "txn": ("Idempotence and transactions", (22, 24, 25, 26, 27, 28, 65, 66)),
    "security": ("Authentication, ACLs, tokens, SCRAM", (17, 36, 29, 30, 31, 38, 39, 40, 41, 50, 51)),
    "admin": ("Administration: topics, configs, partitions, quotas, log dirs, features",
              (19, 20, 37, 32, 33, 44, 74, 34, 35, 43, 45, 46, 48, 49, 57, 64)),
    "telemetry": ("Client telemetry (KIP-714)", (71, 72)),
    "zk": ("Controller to brokers, ZooKeeper era (removed in Kafka 4.0)", (4, 5, 6, 7)),
    "kraft": ("KRaft: the controller quorum and broker lifecycle", (52, 53, 54, 55, 56, 58, 59, 62, 63, 67, 70, 73,
                                                                      80, 81, 82)),
}
_FAMILY_COLOURS = {"data": "#ffd8a8", "discovery": "#a5d8ff", "groups": "#b2f2bb", "new-groups": "#d8f5a2",
                   "txn": "#d0bfff", "security": "#ffc9c9", "admin": "#fff3bf", "telemetry": "#e9ecef",
                   "zk": "#dee2e6", "kraft": "#99e9f2"}


class ApiFamilies:
    """Every API key Kafka defines, as tiles grouped by family. ``served`` (key -> (min, max)) marks the APIs a
    broker serves with a dark border and its range; ``used`` (API names) gets a dot."""

    def __init__(self, served: Mapping[int, tuple[int, int]] = (), used: Iterable[str] = ()):
        self.served = dict(served)
        self.used = set(used)
        known = {k for _, keys in FAMILIES.values() for k in keys}
        missing = sorted(int(k) for k in ApiKey if int(k) not in known)
        if missing:
            raise ValueError(f"API keys without a family: {missing}")

    def counts(self) -> dict[str, int]:
        return {title: len(keys) for title, keys in FAMILIES.values()}

    def _repr_html_(self) -> str:
        cards = []
        for family, (title, keys) in FAMILIES.items():
            tiles = []
            for k in keys:
                name = api_name(k)
                spec = request_schema(k).valid_versions
                served = self.served.get(k)
                border = "2px solid #1f2328" if served else "1px solid rgba(0,0,0,.12)"
                versions = f"v{spec.text}" if spec.lo <= spec.hi else "no versions left"
                extra = f'<div style="font-weight:700">serves v{_span(served)}</div>' if served else ""
                dot = ('<span title="a client in this lab sent it" style="float:right;color:#e8590c">●</span>'
                       if name in self.used else "")
                tiles.append(f'<div title="{_e(name)} (key {k}), Kafka 4.3: {versions}" style="background:'
                             f'{_FAMILY_COLOURS[family]};border:{border};border-radius:5px;padding:3px 6px;'
                             f'min-width:124px;font-size:11.5px;line-height:1.3">{dot}<span style="{_MONO};'
                             f'color:#495057">{k}</span> <b>{_e(name)}</b>{extra}</div>')
            cards.append(f'<div style="margin:0 0 10px 0"><div style="font-weight:600;margin-bottom:3px">{_e(title)} '
                         f'<span style="color:#868e96;font-weight:400">· {len(keys)}</span></div>'
                         f'<div style="display:flex;flex-wrap:wrap;gap:4px">{"".join(tiles)}</div></div>')
        legend = ('<b style="border:2px solid #1f2328;border-radius:3px;padding:0 4px">bold border</b> served by the lab '
                  'broker (with its range) &nbsp; <span style="color:#e8590c">●</span> sent by a client in this lab')
        return (f'<div style="{_FONT}">{"".join(cards)}<div style="color:#656d76;font-size:12px">{legend}</div></div>')

    def __repr__(self) -> str:
        lines = []
        for title, keys in FAMILIES.values():
            names = [api_name(k) + ("*" if k in self.served else "") for k in keys]
            lines.append(f"{title} ({len(keys)}): {', '.join(names)}")
        return "\n".join(lines + ["(* served by the broker)"])


#: Colours of the request arrows, one per API (the others are grey).
API_COLOURS = {"ApiVersions": "#7048e8", "Metadata": "#1971c2", "Produce": "#e8590c", "Fetch": "#2f9e44",
               "InitProducerId": "#0c8599", "ListOffsets": "#ae3ec9", "FindCoordinator": "#c2255c"}


class SequenceDiagram:
    """A sequence diagram as deterministic SVG: lifelines across, time downwards, one row per message.

    ``lifelines``: ``[(key, title, subtitle), ...]``. Add rows in time order with :meth:`message` (an arrow,
    solid for a request and dashed for a response; ``lost=True`` ends it in a ✗ half-way), :meth:`note` (text
    across the whole width) and :meth:`span` (a bar on a lifeline from one row to another: "busy with this").
    """

    ROW = 30

    def __init__(self, lifelines: Iterable[tuple[str, str, str]], *, title: Optional[str] = None, column: int = 210):
        self.lifelines = list(lifelines)
        self.index = {key: i for i, (key, _, _) in enumerate(self.lifelines)}
        self.title = title
        self.column = column
        self.rows: list[tuple] = []
        self.spans: list[tuple] = []

    def message(self, src: str, dst: str, label: str, *, colour: str = "#495057", dashed: bool = False,
                lost: bool = False, note: str = "") -> int:
        self.rows.append(("msg", src, dst, label, colour, dashed, lost, note))
        return len(self.rows) - 1

    def note(self, text: str) -> int:
        self.rows.append(("note", text))
        return len(self.rows) - 1

    def span(self, lifeline: str, first_row: int, last_row: int, colour: str = "#e9ecef") -> None:
        self.spans.append((lifeline, first_row, last_row, colour))

    def _x(self, key: str) -> float:
        return 30 + self.column / 2 + self.index[key] * self.column

    @staticmethod
    def _text_width(text: str, size: float = 12.0, bold: bool = False) -> float:
        """A deterministic estimate of the rendered width (no font metrics: the same on every machine)."""
        return len(text) * size * (0.6 if bold else 0.56)

    def _fit_column(self) -> None:
        """Widen the columns until every label fits between its two lifelines and every title in its box."""
        need = self.column
        for _, title, subtitle in self.lifelines:
            need = max(need, self._text_width(title, 12, True) + 40, self._text_width(subtitle, 11) + 40)
        for row in self.rows:
            if row[0] == "msg":
                span = max(1, abs(self.index[row[2]] - self.index[row[1]]))
                need = max(need, (self._text_width(row[3], 12, not row[5]) + 36) / span)
        self.column = int(need + 0.999)

    def svg(self) -> str:
        self._fit_column()
        top = 34 if self.title else 8
        head = 46
        width = 60 + self.column * len(self.lifelines)
        y0 = top + head + 18
        height = y0 + self.ROW * len(self.rows) + 16
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" '
               f'font-size="12">',
               '<defs><marker id="kl-seq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>',
               f'<rect width="{width}" height="{height}" fill="#fff"/>']
        if self.title:
            out.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="600" '
                       f'fill="#1f2328">{_e(self.title)}</text>')
        for key, title, subtitle in self.lifelines:
            x = self._x(key)
            w = self.column - 24
            out.append(f'<line x1="{x}" y1="{top + head}" x2="{x}" y2="{height - 8}" stroke="#adb5bd" '
                       f'stroke-dasharray="4 4"/>')
            out.append(f'<rect x="{x - w / 2}" y="{top}" width="{w}" height="{head}" rx="6" fill="#f8f9fa" '
                       f'stroke="#868e96"/>')
            out.append(f'<text x="{x}" y="{top + 19}" text-anchor="middle" font-weight="600" fill="#1f2328">'
                       f'{_e(title)}</text>')
            if subtitle:
                out.append(f'<text x="{x}" y="{top + 36}" text-anchor="middle" font-size="11" fill="#656d76">'
                           f'{_e(subtitle)}</text>')
        for lifeline, a, b, colour in self.spans:
            x = self._x(lifeline)
            ya, yb = y0 + a * self.ROW - 4, y0 + b * self.ROW + 4
            out.append(f'<rect x="{x - 5}" y="{ya}" width="10" height="{yb - ya}" fill="{colour}" stroke="#868e96" '
                       f'stroke-width="0.8"/>')
        for i, row in enumerate(self.rows):
            y = y0 + i * self.ROW
            if row[0] == "note":
                out.append(f'<text x="{width / 2}" y="{y + 4}" text-anchor="middle" font-size="11.5" '
                           f'font-style="italic" fill="#656d76">{_e(row[1])}</text>')
                continue
            _, src, dst, label, colour, dashed, lost, note = row
            x1, x2 = self._x(src), self._x(dst)
            sign = 1 if x2 > x1 else -1
            x1 += 6 * sign
            end = (x1 + x2) / 2 if lost else x2 - 6 * sign
            dash = ' stroke-dasharray="6 4"' if dashed else ""
            marker = "" if lost else ' marker-end="url(#kl-seq-arrow)"'
            out.append(f'<line x1="{x1}" y1="{y}" x2="{end}" y2="{y}" stroke="{colour}" stroke-width="1.6"{dash}'
                       f'{marker}/>')
            if lost:
                out.append(f'<text x="{end}" y="{y + 5}" text-anchor="middle" font-size="15" font-weight="700" '
                           f'fill="#c92a2a">✗</text>')
            mid = (x1 + x2) / 2
            out.append(f'<text x="{mid}" y="{y - 5}" text-anchor="middle" fill="{colour}" '
                       f'font-weight="{600 if not dashed else 400}">{_e(label)}</text>')
            if note:
                anchor_x = max(x1, x2) + 12
                out.append(f'<text x="{anchor_x}" y="{y + 4}" font-size="11" fill="#656d76">{_e(note)}</text>')
        out.append("</svg>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return f'<div style="overflow-x:auto;max-width:100%">{self.svg()}</div>'

    def __repr__(self) -> str:
        lines = []
        for row in self.rows:
            if row[0] == "note":
                lines.append(f"   ... {row[1]}")
            else:
                arrow = "--x" if row[6] else ("-->" if row[5] else "->")
                lines.append(f"{row[1]} {arrow} {row[2]}: {row[3]}")
        return "\n".join(lines)


# -- checks ----------------------------------------------------------------------------------------------------------------
_KEYS_BY_NAME = {api_name(k): int(k) for k in ApiKey}


def check_versions_for(answers: Any, client: str, advertisement: Mapping[int, tuple[int, int]]) -> CheckResult:
    """Exercise: the version ``client`` uses for each API named in ``answers``' keys, against ``advertisement``."""
    ranges = CLIENT_RANGES[client]
    asked = list(answers) if isinstance(answers, Mapping) else []
    expected = {name: negotiate(ranges[_KEYS_BY_NAME[name]], advertisement.get(_KEYS_BY_NAME[name]))
                for name in asked if name in _KEYS_BY_NAME and _KEYS_BY_NAME[name] in ranges}

    def diagnose(name, got):
        key = _KEYS_BY_NAME[name]
        c, b = ranges[key], advertisement.get(key)
        if not isinstance(got, int):
            return "give an int (or None when there is no common version)"
        if b is not None and got == b[1] and got > c[1]:
            return f"that is the broker's highest; can {client} send it? (its range: v{_span(c)})"
        if got == c[1] and b is not None and got > b[1]:
            return "that is the client's highest; does the broker serve it?"
        if b is not None and got in (b[0], c[0]):
            return "clients use the *highest* version both sides support, not the lowest"
        return None
    return check_parts(f"Exercise 1 · versions {client} uses", answers, expected, diagnose=diagnose,
                       hint="per API: min(client's highest, broker's highest), if that is not below either lowest")


_NEGOTIATE_CASES = [((0, 13), (0, 13)), ((0, 13), (0, 9)), ((0, 5), (0, 13)), ((4, 16), (0, 11)), ((0, 2), (4, 16)),
                    ((3, 10), (0, 2)), ((2, 2), (2, 4)), ((1, 11), (3, 3)), ((0, 0), (1, 9)), ((0, 3), None),
                    ((5, 9), (9, 12))]


def check_negotiate(func: Any) -> CheckResult:
    """Exercise: ``func(client_range, broker_range)`` implements the rule (None when there is no overlap)."""
    title = "Exercise 2 · the negotiation rule"
    if is_unanswered(func):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not callable(func):
        return check(title, False, f"expected a function, got {type(func).__name__}")
    parts, right = [], 0
    for c, b in _NEGOTIATE_CASES:
        want = negotiate(c, b)
        label = f"client {_span(c)}, broker {_span(b) if b else 'none'}"
        try:
            got = func(c, b)
        except Exception as e:  # noqa: BLE001 -- a learner's bug is reported, not raised
            parts.append(Part(label, "fail", f"raised {type(e).__name__}: {e}"))
            continue
        if got == want and type(got) is type(want):
            right += 1
            parts.append(Part(label, "pass", repr(got)))
        else:
            why = ("there is a common version" if want is not None and got is None else
                   "these ranges do not overlap: return None" if want is None else
                   "not the highest version inside both ranges")
            parts.append(Part(label, "fail", f"{got!r}: {why}"))
    ok = right == len(_NEGOTIATE_CASES)
    return check(title, ok, f"{right} of {len(_NEGOTIATE_CASES)} cases right", parts=parts,
                 hint="the overlap is [max of the lows, min of the highs]; it is empty when that low > that high")


def check_retry_version(answer: Any, reply: bytes) -> CheckResult:
    """Exercise: the ApiVersions version kafka-python retries with after the v0-format ``reply`` (a response
    frame without its size prefix: correlation id, error code, then the int32-counted entries)."""
    count = struct.unpack_from(">i", reply, 6)[0]
    entries = {struct.unpack_from(">h", reply, 10 + 6 * i)[0]: struct.unpack_from(">hh", reply, 12 + 6 * i)
               for i in range(count)}
    expected = entries[K.API_VERSIONS][1]

    def diagnose(a):
        if not isinstance(a, int):
            return "give an int"
        if a == 35:
            return "35 is the error code (UNSUPPORTED_VERSION); the version is in the entry for API key 18"
        if a == 3:
            return "not one below the version it sent: the broker said which versions it has"
        if a == 0:
            return "v0 is librdkafka's way out (it misreads this reply); kafka-python reads the entry correctly"
        if a == entries[K.API_VERSIONS][0]:
            return "that is the lowest version the broker serves; the client takes the highest"
        return None
    return check_equal("Exercise 3 · kafka-python's retry", answer, expected, diagnose=diagnose,
                       hint="after the error code: an int32 count, then per entry api_key, min_version, "
                            "max_version (int16 each)")


def check_no_common_version(answer: Any, client: Mapping[int, tuple[int, int]],
                            broker: Mapping[int, tuple[int, int]]) -> CheckResult:
    """Exercise: the names of the APIs for which ``client`` and ``broker`` share no version."""
    expected = {api_name(k) for k, v in pick_versions(client, broker, strict=False).items() if v is None}
    title = "Exercise 4 · no common version"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(a, str) for a in answer):
        return check(title, False, "give a set of API names, e.g. {\"Produce\"}")
    got = set(answer)
    unknown = sorted(got - set(_KEYS_BY_NAME))
    if unknown:
        return check(title, False, f"not API names: {', '.join(unknown)}", hint="use Kafka's names: Fetch, ...")
    parts = []
    for name in sorted(got | expected, key=lambda n: _KEYS_BY_NAME[n]):
        if name in got and name in expected:
            parts.append(Part(name, "pass", "no common version"))
        elif name in got:
            k = _KEYS_BY_NAME[name]
            parts.append(Part(name, "fail", f"they share v{negotiate(client[k], broker.get(k))}"
                          if k in client else "the client does not use it"))
    missed = len(expected - got)
    ok = got == expected
    message = "right" if ok else f"{len(got & expected)} of {len(expected)} found" + (
        f", {len(got - expected)} wrong" if got - expected else "")
    return check(title, ok, message, parts=parts,
                 hint="" if ok else f"{missed} still missing; compare each pair of ranges: do they touch?")
