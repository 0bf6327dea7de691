"""Lab 02 (``labs/02_api_versions.ipynb``): version ranges, the negotiation rule, real clients, checks.

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
* the checks ``check_*``, which compute the right answer from the data the learner was given.

The lab's pictures are shared with other labs and live in :mod:`kafkalab.viz` (:class:`~kafkalab.viz.RangeChart`,
:class:`~kafkalab.viz.CompatGrid`, :class:`~kafkalab.viz.ApiFamilies`, :class:`~kafkalab.viz.SequenceDiagram`),
the bare connection in :mod:`kafkalab.trace` (:class:`~kafkalab.trace.RawConnection`) and the broker's log
handler in :mod:`kafkalab.cluster` (:class:`~kafkalab.cluster.BrokerLog`).

Everything printed is deterministic: client ids and librdkafka's software name are fixed, conversations are
shown as versions (not timings), and repeats that a client may or may not send (librdkafka sometimes asks for
Metadata twice) are folded.
"""
from __future__ import annotations

import os
import struct
import subprocess
from typing import Any, Iterable, Mapping, NamedTuple, Optional

from kafkalab.labs import CheckResult, Part, check, check_equal, check_parts, is_unanswered
from kafkalab.clients.api_versions import latest_common_version, version_span
from kafkalab.protocol import ApiKey, api_name
from kafkalab.trace import ClientNotAvailable, ScriptedReplies, capture, client_version
from kafkalab.trace import drivers

__all__ = ["CLIENT_ID", "LIBRDKAFKA_SOFTWARE", "TOPIC", "CLIENTS", "CLIENT_LABELS", "CLIENT_RANGES", "KAFKA_2_0",
           "KAFKA_4_0", "KAFKA_0_10_CLIENT", "KCAT_RECORDED", "SOURCES", "Step", "NoCommonVersion", "negotiate",
           "pick_versions", "versions_used", "run_client", "capture_conversation", "check_versions_for",
           "check_negotiate", "check_retry_version", "check_no_common_version", "FLOORS", "OLD_CLIENT_ID",
           "OldClientAnswer", "old_client_end_offsets"]

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
        theirs = "does not serve it at all" if broker_range is None else f"serves v{version_span(broker_range)}"
        super().__init__(f"no version of {api_name(api_key)} that both sides support: the client sends "
                         f"v{version_span(client_range)}, the broker {theirs}")


#: The rule itself (``NodeApiVersions.latestUsableVersion``), as kafkalab's clients apply it.
negotiate = latest_common_version


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
            return f"that is the broker's highest; can {client} send it? (its range: v{version_span(c)})"
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
        label = f"client {version_span(c)}, broker {version_span(b) if b else 'none'}"
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


# -- section 5: one old client, a Kafka 3.9 and a Kafka 4.0 broker ------------------------------------------------------
#: ``kafkalab.api.version.floors``: the Kafka release each of the two brokers of section 5 plays.
FLOORS = ("3.9", "4.0")
OLD_CLIENT_ID = "kafkalab-lab02-old"


class OldClientAnswer(NamedTuple):
    answer: str                   # the end offset it learned, or the error it gave up with
    answered: tuple               # (API, version) the broker answered it, each once, in order


def old_client_end_offsets(cluster, topic: str, *, timeout_ms: int = 3000) -> OldClientAnswer:
    """kafka-python pinned to ``api_version=(0, 10, 0)`` (what a Kafka 0.10.0 client sends) asks for the end
    offset of partition 0 of ``topic``: ListOffsets **v0**. Its own log is silenced (it retries on every closed
    connection); what the broker answered comes from its request log (a request refused while it is read, before
    any handler, is not logged there, only in the broker's log)."""
    import logging

    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    kafka_logger = logging.getLogger("kafka")
    level, kafka_logger.level = kafka_logger.level, logging.CRITICAL
    consumer = None
    try:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, api_version=(0, 10, 0),
                                 client_id=OLD_CLIENT_ID, request_timeout_ms=timeout_ms)
        ends = consumer.end_offsets([TopicPartition(topic, 0)])
        answer = f"end offset {ends[TopicPartition(topic, 0)]}"
    except KafkaError as e:
        answer = f"gave up: {type(e).__name__}"
    finally:
        if consumer is not None:
            consumer.close()
        kafka_logger.setLevel(level)
    return OldClientAnswer(answer, _answered(cluster, OLD_CLIENT_ID))


def _answered(cluster, client_id: str, settle: float = 0.3, timeout: float = 3.0) -> tuple:
    """(API, version) the broker answered ``client_id``, each once, in order. A request is logged once its
    response is written, a moment after the client read it: wait until the log stops growing."""
    import time

    def seen() -> tuple:
        out: list = []
        for r in list(cluster.broker(0).channel.request_log.records):
            if r.client_id == client_id and (r.api_name, r.api_version) not in out:
                out.append((r.api_name, r.api_version))
        return tuple(out)
    last, deadline = seen(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(settle)
        now = seen()
        if now == last:
            break
        last = now
    return last
