"""Well-formed requests with extreme field values, for every API and version the broker advertises.

security.md §7's invariant, for input that *parses*: a broker process (the ``kafkalab broker`` command, under a
memory cap) gets, for each (API key, version) of its ApiVersions answer, requests built from the generated
schemas whose fields take extreme values -- int32/int64 max and min and -1 for counts, ids, epochs, timeouts,
partition counts and replication factors; arrays of thousands of elements (within the frame limit); empty,
249-, 250- and 32767-character names and names with a NUL byte; null wherever the field is nullable. Two
requests in three keep every other field plausible (a legal name, a replication factor of 1, empty arrays), so
that one extreme value gets past the checks of the rest; the third has several at once. Each request goes out
on a fresh connection, and:

* the broker never dies and never takes the "unexpected error" path (nothing in its log says so);
* every request is answered with a well-formed response of its version (every byte consumed, the right
  correlation id), or the connection is closed where Kafka closes it (Produce v0-2, a failed ``acks=0``
  Produce), or -- for the requests that may wait (Fetch, JoinGroup, SyncGroup) -- it is still waiting;
* a second connection's ApiVersions and Metadata keep being answered within ``LATENCY_BOUND`` throughout.

The transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers) take the
live producer id and epoch of the transactional id ``fuzz`` as their plausible values, so that their extreme
fields reach the coordinator's state machine and the leaders' markers.

Two tests: a deterministic sweep (each API's newest version, every field alone at each of its extremes, the
others plausible: about 800 requests) and a random search (Hypothesis with a fixed seed, ``derandomize``) over
every advertised version, ``KAFKALAB_FUZZ_EXAMPLES`` requests each (default 1; about 60 s for both in CI).
Set it higher to search longer locally.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import Optional

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from kafkalab.protocol import (RESPONSE_HEADER, ApiKey, api_name, codec, encode_request, make_request,
                               request_class, request_header_version, request_schema, response_header_version,
                               response_schema)
from kafkalab.protocol.schema import ZERO_UUID, Field
from kafkalab.records import build_batch
from kafkalab.server.apis import enabled_apis
from tests.protocol.strategies import Builder

from ._fuzz_broker import LATENCY_BOUND, TOPIC, BrokerProcess, LatencyProbe
from ._raw_wire import Conn

EXAMPLES = int(os.environ.get("KAFKALAB_FUZZ_EXAMPLES", "1"))
ANSWER_TIMEOUT = 10.0                # seconds: a request that has no reason to wait
WAIT_GRACE = 2.0                     # seconds: how long a request that may wait is given before it counts as waiting
MAX_FRAME = 4 << 20                  # the largest request built (socket.request.max.bytes is 100 MiB; time is short)
HUGE_ARRAY = 30_000                  # elements of the largest arrays (see array_of)

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
UINT_BITS = {"uint16": 16, "uint32": 32}
NAMES = ("", TOPIC, "a" * 249, "b" * 250, "nul\x00name", "\x00", "__consumer_offsets", ".", "..", "x" * 32767,
         "caf\u00e9-\U0001f600")
WAITING_APIS = {ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP}

ApiVersions = request_class(ApiKey.API_VERSIONS)


# -- strategies -----------------------------------------------------------------------------------------------------
def extreme_int(type_name: str) -> st.SearchStrategy:
    if type_name in INT_BITS:
        bits = INT_BITS[type_name]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << UINT_BITS[type_name]) - 1
    edges = sorted({lo, hi, lo + 1, hi - 1, -1 if lo < 0 else 0, 0, 1, 2} | ({-2} if lo < 0 else set()))
    edge = st.sampled_from(edges)
    return st.one_of(edge, edge, edge, st.integers(lo, hi))


def records_values() -> st.SearchStrategy:
    stamp = 1_700_000_000_000
    return st.sampled_from((
        b"",
        b"\x00" * 61,                                                   # a batch header of zeros
        build_batch([(b"k", b"v", [], stamp)]),
        build_batch([(None, b"x" * 10, [], stamp + i) for i in range(5000)]),
        build_batch([(b"k", b"v" * 100_000, [], stamp)]),
        build_batch([(b"k", b"v", [], 2**63 - 1)], producer_id=2**63 - 1, producer_epoch=32767,
                    base_sequence=2**31 - 1, partition_leader_epoch=2**31 - 1),
        build_batch([(b"k", b"v", [], -1)], producer_id=0, producer_epoch=0, base_sequence=0, transactional=True),
    ))


def extreme_primitive(type_name: str) -> st.SearchStrategy:
    if type_name in INT_BITS or type_name in UINT_BITS:
        return extreme_int(type_name)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.sampled_from((0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e308))
    if type_name == "string":
        return st.sampled_from(NAMES) | st.text(max_size=5)
    if type_name == "bytes":
        return st.sampled_from((b"", b"\x00", b"\xff" * 7, bytes(100_000)))
    if type_name == "records":
        return records_values()
    if type_name == "uuid":
        return st.sampled_from((ZERO_UUID, uuid.UUID(int=2**128 - 1), uuid.UUID(int=1))) | st.uuids()
    raise AssertionError(type_name)


def array_of(elem: st.SearchStrategy) -> st.SearchStrategy:
    """Few distinct elements, or one element repeated thousands of times (cheap to build and to encode).

    Not more than ``HUGE_ARRAY``: every request is decoded, handled and answered on the broker's one event loop,
    at about 10 us an element, so 200,000 elements hold the other connections for 2-3 s -- work in proportion
    to the request, not the freeze this test looks for."""
    few = st.lists(elem, max_size=3).map(tuple)
    many = st.builds(lambda e, n: (e,) * n, elem, st.sampled_from((1000, HUGE_ARRAY)))
    return st.one_of(few, few, few, many)


# A plausible value per field, so that a request with one or two extreme fields gets past the checks of the others
# and reaches the code behind them (a CreateTopics with a huge partition count needs a valid name and replication
# factor to reach the assignment). Fields not named here: 0, a legal name, b"", a zero uuid; arrays: none or one.
SANE_INTS = {"replication_factor": 1, "num_partitions": 1, "count": 3, "timeout_ms": 100, "max_wait_ms": 100,
             "replica_id": -1, "acks": 1, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
             "producer_id": -1, "producer_epoch": -1, "leader_epoch": -1, "current_leader_epoch": -1,
             "generation_id": -1, "generation_id_or_member_epoch": -1, "min_bytes": 1, "max_bytes": 1 << 20,
             "partition_max_bytes": 1 << 20, "session_epoch": -1, "transaction_timeout_ms": 60_000,
             "timestamp": -1, "max_num_offsets": 1, "response_partition_limit": 2000}


# The transaction APIs get the live producer id and epoch of the transactional id TOPIC (made by InitProducerId
# before each of their tests), so that one extreme field at a time reaches the coordinator's state machine, the
# partition leaders' markers and the group's pending offsets instead of stopping at INVALID_PRODUCER_ID_MAPPING.
TRANSACTIONAL_APIS = {ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                      ApiKey.TXN_OFFSET_COMMIT, ApiKey.WRITE_TXN_MARKERS}
LIVE_PRODUCER: dict = {}


def sane_int(api_key: int, attr: str) -> int:
    if api_key in TRANSACTIONAL_APIS and attr in LIVE_PRODUCER:
        return LIVE_PRODUCER[attr]
    return SANE_INTS.get(attr, 0)


def sane_primitive(f: Field, api_key: int) -> st.SearchStrategy:
    if f.type in INT_BITS or f.type in UINT_BITS:
        return st.just(sane_int(api_key, f.attr))
    if f.type == "string":                # the topic that exists, or a legal name that may not exist yet
        legal = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=12)
        return st.one_of(st.just(TOPIC), legal, legal)
    if f.type == "records":
        return st.just(build_batch([(b"k", b"v", [], 1_700_000_000_000)]))
    if f.type == "uuid":
        return st.just(ZERO_UUID)
    return extreme_primitive(f.type)


class ExtremeBuilder(Builder):
    """The round-trip tests' schema walker, in one of two modes.

    ``focus`` (a field path such as ``("topics", "num_partitions")``): every field plausible, arrays on the way to
    the focused field with one element and the others empty, and the focused field extreme. Without: each field
    plausible twice as often as extreme, independently (several odd fields at once)."""

    def __init__(self, api_key: int, version: int, focus: Optional[tuple] = None):
        super().__init__(request_schema(api_key), version, unknown=False)
        self.api_key = api_key
        self.focus = focus
        self.path: list[str] = []

    def struct(self, type_name: str, fields, depth: int = 0) -> st.SearchStrategy:
        cls = self.message.class_for(type_name, fields)
        kwargs = {}
        for f in fields:
            if f.present_in(self.version):
                self.path.append(f.attr)
                kwargs[f.attr] = self.value(f, depth)
                self.path.pop()
        return st.fixed_dictionaries(kwargs).map(lambda kw: cls(**kw))

    def _role(self) -> str:
        if self.focus is None:
            return "mixed"
        path = tuple(self.path)
        if path == self.focus:
            return "extreme"
        return "on the way" if self.focus[:len(path)] == path else "plausible"

    def value(self, f: Field, depth: int, element: bool = False) -> st.SearchStrategy:
        role = "plausible" if element and self.focus is not None else self._role()
        nullable = not element and f.nullable_in(self.version)
        if f.is_array:
            if f.is_struct:
                elem = self.struct(f.element_type, self.message.struct_fields(f), depth + 1)
            else:
                elem = self.value(Field(f.name, f.element_type, "0+"), depth, element=True)
            one = st.builds(lambda e: (e,), elem)
            s = {"extreme": array_of(elem), "on the way": one, "plausible": st.just(()),
                 "mixed": st.one_of(st.just(()), one, array_of(elem))}[role]
        elif f.is_struct:
            s = self.struct(f.element_type, self.message.struct_fields(f), depth + 1)
        else:
            sane = sane_primitive(f, self.api_key)
            s = {"extreme": extreme_primitive(f.type), "mixed": st.one_of(sane, sane, extreme_primitive(f.type))
                 }.get(role, sane)
        if nullable and role in ("extreme", "mixed"):
            return st.one_of(s, s, s, st.none())
        return s


def field_paths(message, fields, version: int, prefix: tuple = ()):
    """Every field of a request version as a path of attribute names (arrays and primitives, not plain structs)."""
    for f in fields:
        if not f.present_in(version):
            continue
        path = prefix + (f.attr,)
        if f.is_array or not f.is_struct:
            yield path
        if f.is_struct:
            yield from field_paths(message, message.struct_fields(f), version, path)


class Drawn:
    """A generated body, shown shortened in Hypothesis' report (one repeated element can make megabytes)."""

    def __init__(self, body):
        self.body = body

    def __repr__(self) -> str:
        text = repr(self.body)
        return text if len(text) < 2000 else text[:1000] + f" ... ({len(text)} characters) ... " + text[-500:]


def request_bodies(api_key: int, version: int) -> st.SearchStrategy:
    """Two requests in three have one extreme field (the others plausible); the third has several."""
    schema = request_schema(api_key)
    paths = list(field_paths(schema, schema.fields, version))
    mixed = ExtremeBuilder(api_key, version).struct(schema.name, schema.fields)
    if not paths:
        return mixed.map(Drawn)
    builders = {path: ExtremeBuilder(api_key, version, path).struct(schema.name, schema.fields) for path in paths}
    focused = st.sampled_from(paths).flatmap(builders.__getitem__)
    return st.one_of(focused, focused, mixed).map(Drawn)


def wire_size(value, memo: dict) -> int:
    """About how many bytes ``value`` takes on the wire, without encoding it (shared elements counted once)."""
    key = id(value)
    if key in memo:
        return memo[key]
    if isinstance(value, tuple):
        size = 4 + sum(wire_size(v, memo) for v in value) if len(set(map(id, value))) > 1 or len(value) < 2 \
            else 4 + len(value) * wire_size(value[0], memo)
    elif isinstance(value, str):
        size = 2 + len(value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        size = 4 + len(value)
    else:
        size = 16
    memo[key] = size
    return size


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("extreme-values"))
    b.start()
    yield b
    b.stop()


@pytest.fixture
def probe(broker, request):
    """Restarts a broker that an earlier test killed (that test failed already), then probes it. A transaction
    API's test first gets a live producer id and epoch for its plausible values (see TRANSACTIONAL_APIS)."""
    if not broker.alive():
        broker.stop()
        broker.start()
    LIVE_PRODUCER.clear()
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("api_key") in TRANSACTIONAL_APIS:
        LIVE_PRODUCER.update(broker.init_transactional_id())
    broker.new_log()       # what a failed test left behind (a MemoryError logged after its timeout) is its own
    p = LatencyProbe(broker.port)
    p.start()
    yield p
    p.stopping.set()
    p.join(LATENCY_BOUND * 6)


def test_the_broker_advertises_the_registry(broker):
    with Conn(broker.port) as c:
        body = c.call(ApiVersions(client_software_name="fuzz", client_software_version="1"), 3)
    assert {a.api_key: (a.min_version, a.max_version) for a in body.api_keys} == enabled_apis()


def test_plausible_transaction_requests_get_past_the_checks(broker):
    """The live producer makes the transaction APIs' plausible values a transaction the coordinator accepts."""
    live = broker.init_transactional_id()
    AddPartitionsToTxn = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
    EndTxn = request_class(ApiKey.END_TXN)
    with Conn(broker.port) as c:
        added = c.call(AddPartitionsToTxn(v3_and_below_transactional_id=TOPIC,
                                          v3_and_below_producer_id=live["producer_id"],
                                          v3_and_below_producer_epoch=live["producer_epoch"],
                                          v3_and_below_topics=(AddPartitionsToTxn.AddPartitionsToTxnTopic(
                                              name=TOPIC, partitions=(0,)),)), 3)
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert c.call(EndTxn(transactional_id=TOPIC, producer_id=live["producer_id"],
                             producer_epoch=live["producer_epoch"], committed=False), 4).error_code == 0


# -- one request ----------------------------------------------------------------------------------------------------
def may_close(api_key: int, version: int, body) -> bool:
    """Where Kafka closes the connection instead of answering a request that parsed: Produce v0-2 (gone since
    Kafka 4, still advertised for old clients' version checks) and a failed ``acks=0`` Produce."""
    return api_key == ApiKey.PRODUCE and (version < 3 or body.acks == 0)


def check_response(frame: bytes, api_key: int, version: int, correlation_id: int) -> None:
    """A whole response of ``version``: the header echoes the correlation id and the body uses every byte."""
    header, pos = codec.decode(RESPONSE_HEADER, response_header_version(api_key, version), frame, 0, path="header")
    assert header.correlation_id == correlation_id, "answered with another correlation id"
    _, end = codec.decode(response_schema(api_key), version, frame, pos, path="body")
    assert end == len(frame), f"{len(frame) - end} bytes after the v{version} response body"


def exchange(port: int, api_key: int, version: int, body, client_id) -> str:
    """Send one request on a fresh connection; returns what happened: answered, closed, silent or waiting."""
    if request_header_version(api_key, version) == 0:
        client_id = ""                       # header v0 (ControlledShutdown v0) has no client id
    frame = encode_request(make_request(body, api_version=version, correlation_id=7, client_id=client_id),
                           size_prefix=True)
    timeout = WAIT_GRACE if api_key in WAITING_APIS else ANSWER_TIMEOUT
    with Conn(port, timeout=timeout) as c:
        if api_key == ApiKey.PRODUCE and body.acks == 0:
            # nothing answers an acks=0 produce: a pipelined ApiVersions tells "accepted" from "still working"
            frame += encode_request(make_request(ApiVersions(), api_version=0, correlation_id=8), size_prefix=True)
        c.send(frame)
        try:
            reply = c.recv_frame()
        except TimeoutError:
            assert api_key in WAITING_APIS, f"no answer within {timeout} s"
            c.assert_open(0.01)
            return "waiting"
        if reply is None:
            assert may_close(api_key, version, body), "the broker closed the connection instead of answering"
            return "closed"
        if api_key == ApiKey.PRODUCE and body.acks == 0:
            check_response(reply, ApiKey.API_VERSIONS, 0, 8)
            return "silent"
        check_response(reply, api_key, version, 7)
        return "answered"


# What the controller sends a broker. The broker trusts a request whose controller epoch is not older than the one
# it knows (Kafka's ZooKeeper-mode rule), so int32-max epochs make it a follower of brokers that do not exist and
# name topics no client could create: these go last, after the client APIs have been tried on a sound broker.
FROM_THE_CONTROLLER = (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN)
ADVERTISED = sorted(((key, v) for key, (lo, hi) in enabled_apis().items() for v in range(lo, hi + 1)
                     if v in request_schema(key).valid_versions), key=lambda kv: (kv[0] in FROM_THE_CONTROLLER, kv))


def test_every_advertised_version_has_a_schema():
    """Produce v0-2 and Fetch v0-3 are served as Kafka 3.9 serves them: nothing the broker advertises lacks a
    layout to decode."""
    gone = [(key, v) for key, (lo, hi) in enabled_apis().items() for v in range(lo, hi + 1)
            if v not in request_schema(key).valid_versions]
    assert gone == []
    assert (ApiKey.PRODUCE, 0) in ADVERTISED and (ApiKey.FETCH, 3) in ADVERTISED


CLIENT_IDS = st.sampled_from((None, "", "fuzz", "c" * 32767, "nul\x00id"))


def check_the_broker(broker, probe) -> None:
    """After one exchange: alive, answering the second connection in time, nothing unexpected in its log."""
    assert broker.alive(), f"the broker died (exit {broker.proc.returncode}):\n{broker.new_log()[-3000:]}"
    assert probe.answered_since(time.monotonic(), LATENCY_BOUND + 0.2), \
        f"the second connection got no answer within {LATENCY_BOUND} s after the response"
    slowest, failures, _ = probe.take()
    assert not failures, f"the second connection failed: {failures}"
    assert slowest <= LATENCY_BOUND, f"the second connection waited {slowest:.1f} s for an answer"
    log = broker.new_log()
    assert "Traceback" not in log and "error handling" not in log and "unexpected error" not in log, log[-3000:]


@pytest.mark.parametrize("api_key,version", ADVERTISED, ids=[f"{api_name(k)}-v{v}" for k, v in ADVERTISED])
def test_extreme_values_are_answered_and_the_broker_stays_responsive(broker, probe, api_key, version):
    outcomes: dict[str, int] = {}

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(drawn=request_bodies(api_key, version), client_id=CLIENT_IDS)
    def one_request(drawn, client_id):
        body = drawn.body
        assume(wire_size(body, {}) <= MAX_FRAME)
        outcome = exchange(broker.port, api_key, version, body, client_id)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        check_the_broker(broker, probe)

    one_request()
    assert sum(outcomes.values()) >= 1


# -- every field alone at its extreme, at each API's newest version --------------------------------------------------
def extremes_of(f: Field, version: int, element) -> list:
    """The values one field takes in the sweep: the ends of its integer type, a NUL name and a 32,767-character
    one, a huge array of plausible elements, null when nullable."""
    if f.is_array:
        values = [lambda: (element(),) * HUGE_ARRAY]
    elif f.type in INT_BITS or f.type in UINT_BITS:
        bits = INT_BITS.get(f.type) or UINT_BITS[f.type]
        values = ([lambda: (1 << (bits - 1)) - 1, lambda: -(1 << (bits - 1))] if f.type in INT_BITS
                  else [lambda: (1 << bits) - 1])
    elif f.type == "string":
        values = [lambda: "nul\x00name", lambda: "x" * 32767]
    elif f.type == "bool":
        values = [lambda: True]
    elif f.type == "uuid":
        values = [lambda: uuid.UUID(int=2**128 - 1)]
    elif f.type in ("bytes", "records"):
        values = [lambda: b"\x00" * 61]
    else:
        values = []
    return values + ([lambda: None] if f.nullable_in(version) else [])


class Sweep:
    """Builds, deterministically, the request of one version with every field plausible but one."""

    def __init__(self, api_key: int, version: int):
        self.api_key, self.version = api_key, version
        self.message = request_schema(api_key)
        self.names = (f"sweep-{i}" for i in range(1_000_000))

    def sane(self, f: Field):
        if f.type == "string":   # CreateTopics needs a new name to get past TOPIC_ALREADY_EXISTS
            return next(self.names) if self.api_key == ApiKey.CREATE_TOPICS else TOPIC
        if f.type == "records":
            return build_batch([(b"k", b"v", [], 1_700_000_000_000)])
        if f.type in INT_BITS or f.type in UINT_BITS:
            return sane_int(self.api_key, f.attr)
        return {"bool": False, "uuid": ZERO_UUID, "bytes": b"", "float64": 0.0}[f.type]

    def element(self, f: Field, path: tuple, focus: tuple, value):
        if f.is_struct:
            return self.struct(f.element_type, self.message.struct_fields(f), path, focus, value)
        return self.sane(Field(f.name, f.element_type, "0+"))

    def struct(self, type_name: str, fields, prefix: tuple, focus: tuple, value):
        kwargs = {}
        for f in fields:
            if not f.present_in(self.version):
                continue
            path = prefix + (f.attr,)
            if path == focus:
                kwargs[f.attr] = value()
            elif f.is_array:
                on_the_way = focus[:len(path)] == path
                kwargs[f.attr] = (self.element(f, path, focus, value),) if on_the_way else ()
            elif f.is_struct:
                kwargs[f.attr] = self.struct(f.element_type, self.message.struct_fields(f), path, focus, value)
            else:
                kwargs[f.attr] = self.sane(f)
        return self.message.class_for(type_name, fields)(**kwargs)

    def field(self, path: tuple) -> Field:
        fields = self.message.fields
        for name in path:
            f = next(f for f in fields if f.attr == name and f.present_in(self.version))
            fields = self.message.struct_fields(f) if f.is_struct else ()
        return f

    def cases(self):
        """(path, value, body) for every field and each of its extremes."""
        for path in field_paths(self.message, self.message.fields, self.version):
            f = self.field(path)
            plausible_element = lambda f=f, path=path: self.element(f, path, (), None)  # noqa: E731
            for make in extremes_of(f, self.version, plausible_element):
                value = make()
                yield path, value, self.struct(self.message.name, self.message.fields, (), path, lambda v=value: v)


NEWEST = sorted(((key, max(v for v in range(lo, hi + 1) if v in request_schema(key).valid_versions))
                 for key, (lo, hi) in enabled_apis().items() if any(v in request_schema(key).valid_versions
                                                                   for v in range(lo, hi + 1))),
                key=lambda kv: (kv[0] in FROM_THE_CONTROLLER, kv))


@pytest.mark.parametrize("api_key,version", NEWEST, ids=[f"{api_name(k)}-v{v}" for k, v in NEWEST])
def test_each_field_alone_at_its_extreme(broker, probe, api_key, version):
    sweep = Sweep(api_key, version)
    sent = 0
    for path, value, body in sweep.cases():
        what = f"{api_name(api_key)} v{version} {'.'.join(path)} = {Drawn(value)!r:.120}"
        try:
            exchange(broker.port, api_key, version, body, TOPIC)
            check_the_broker(broker, probe)
        except AssertionError as e:
            raise AssertionError(f"{what}: {e}") from None
        sent += 1
    assert sent
