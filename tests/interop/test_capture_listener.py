"""The scripted listener and its reply policies, driven over plain sockets (no real client needed)."""
from __future__ import annotations

import asyncio
import dataclasses
import socket
import struct
import uuid

import pytest

from kafkalab.protocol import (ApiKey, DecodeError, ErrorCode, decode_request, decode_response, encode_request,
                               make_request, request_class, response_class, size_prefixed)
from kafkalab.trace import (CLOSE, DEFAULT_ADVERTISED, CaptureError, ScriptedListener, ScriptedReplies, count_records,
                            first_request_only, topic_id_for)
from kafkalab.trace.capture import CapturedRequest

from ._support import GOLDEN

LISTENER = ("127.0.0.1", 9092)


def frame(body, version, corr=7, client_id="test"):
    return encode_request(make_request(body, api_version=version, correlation_id=corr, client_id=client_id))


def api_versions(version, corr=7, name="kafkalab-test", software_version="1.0"):
    cls = request_class(ApiKey.API_VERSIONS)
    return frame(cls(client_software_name=name, client_software_version=software_version), version, corr)


def metadata(version, topics, corr=7, auto=True):
    cls = request_class(ApiKey.METADATA)
    t = None if topics is None else tuple(cls.MetadataRequestTopic(name=n) for n in topics)
    return frame(cls(topics=t, allow_auto_topic_creation=auto), version, corr)


def recv_frame(sock, timeout=3.0) -> bytes:
    sock.settimeout(timeout)
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return data


def closed_by_peer(sock, timeout=3.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def captured(fr: bytes, listener=LISTENER) -> CapturedRequest:
    try:
        req, err = decode_request(fr), None
    except DecodeError as e:
        req, err = None, e
    return CapturedRequest(index=0, connection=0, frame=fr, request=req, error=err, listener=listener)


# -- the listener ----------------------------------------------------------------------------------------------------
def test_unsupported_api_versions_gets_the_v0_format_reply_byte_for_byte():
    """protocol-compat §5.1's example: correlation id 7, ApiVersions advertised up to v2."""
    with ScriptedListener(ScriptedReplies([(18, 0, 2)])) as lst, socket.create_connection(lst.address) as s:
        wire = size_prefixed(api_versions(4, corr=7))
        s.sendall(wire[:2])                      # split inside the size prefix: framing must cope
        s.sendall(wire[2:9])
        s.sendall(wire[9:])
        reply = recv_frame(s)
    assert size_prefixed(reply) == bytes.fromhex("00000010" "00000007" "0023" "00000001" "0012" "0000" "0002")
    (req,) = lst.requests
    assert (req.api_key, req.api_version, req.outcome, req.reply) == (18, 4, "replied", reply)
    assert req.wire == wire and req.frame == wire[4:]


def test_api_versions_newer_than_the_codec_still_gets_the_v0_format_reply():
    """A future client may send ApiVersions v5: the body cannot be decoded, the header can, and that is enough."""
    fr = bytearray(api_versions(4, corr=9))
    fr[2:4] = b"\x00\x05"
    with ScriptedListener() as lst, socket.create_connection(lst.address) as s:
        s.sendall(size_prefixed(bytes(fr)))
        reply = recv_frame(s)
    assert reply == bytes.fromhex("00000009" "0023" "00000001" "0012" "0000" "0003")
    (req,) = lst.requests
    assert req.request is None and req.error.api_version == 5 and req.correlation_id == 9


def test_api_versions_reply_has_no_tagged_fields():
    body = ScriptedReplies().api_versions(decode_request(api_versions(3)))
    r = response_class(ApiKey.API_VERSIONS)
    assert body.unknown_tagged_fields == () and body.supported_features == () and body.finalized_features == ()
    assert (body.finalized_features_epoch, body.zk_migration_ready) == (-1, False)
    with ScriptedListener() as lst, socket.create_connection(lst.address) as s:
        s.sendall(size_prefixed(api_versions(3, corr=1)))
        reply = recv_frame(s)
    assert reply[-1:] == b"\x00"                 # top-level tagged-field section: empty
    answer = decode_response(reply, ApiKey.API_VERSIONS, 3)
    assert answer.body == body and isinstance(answer.body, r)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == \
        sorted((int(k), lo, hi) for k, lo, hi in DEFAULT_ADVERTISED)


def test_first_request_only_records_and_never_answers():
    with ScriptedListener(first_request_only) as lst:
        with socket.create_connection(lst.address) as a, socket.create_connection(lst.address) as b:
            a.sendall(size_prefixed(api_versions(3, corr=1)))
            assert lst.wait_for(count=1)
            b.sendall(size_prefixed(api_versions(0, corr=9)))
            assert lst.wait_for(count=2)
            b.settimeout(0.2)
            with pytest.raises(socket.timeout):
                b.recv(1)
    reqs = lst.requests
    assert [(r.index, r.connection, r.correlation_id, r.outcome) for r in reqs] == \
        [(0, 0, 1, "unanswered"), (1, 1, 9, "unanswered")]
    assert all(r.reply is None and r.error is None for r in reqs)
    assert 0 < reqs[0].arrival <= reqs[1].arrival
    assert [c.index for c in lst.connections] == [0, 1]
    assert not lst.running


def test_timing_is_not_content():
    a = captured(api_versions(3))
    assert a == CapturedRequest(**{**a.__dict__, "arrival": 12.5})


def test_undecodable_frame_is_recorded_and_the_connection_closed():
    with ScriptedListener() as lst, socket.create_connection(lst.address) as s:
        s.sendall(size_prefixed(b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff"))     # API key 999
        assert closed_by_peer(s)
    (req,) = lst.requests
    assert req.request is None and isinstance(req.error, DecodeError)
    assert (req.api_key, req.outcome, req.api_name) == (999, "closed", "Unknown(999)")
    assert lst.connections[0].closed_by == "listener"
    lst.check()                                  # a client's bad bytes are not the listener's fault


def test_too_large_size_prefix_closes_without_answer():
    with ScriptedListener(max_frame_bytes=1000) as lst, socket.create_connection(lst.address) as s:
        s.sendall(struct.pack(">i", 5000) + b"x" * 10)
        assert closed_by_peer(s)
        assert lst.wait_for(lambda _: lst.connections[0].closed is not None, timeout=2)
    assert lst.requests == []
    assert "Invalid receive" in lst.connections[0].error


def test_a_failing_policy_is_recorded_not_fatal():
    def policy(req):
        if req.correlation_id == 666:
            raise RuntimeError("boom")
        return ScriptedReplies()(req)

    with ScriptedListener(policy) as lst:
        with socket.create_connection(lst.address) as s:
            s.sendall(size_prefixed(api_versions(3, corr=666)))
            assert closed_by_peer(s)
        with socket.create_connection(lst.address) as s:       # the listener still serves new connections
            s.sendall(size_prefixed(api_versions(3, corr=1)))
            assert decode_response(recv_frame(s), 18, 3).body.error_code == 0
        assert lst.running
    (fault,) = lst.faults
    assert "boom" in str(fault) and "RuntimeError" in fault.traceback
    assert lst.requests[0].outcome == "closed"
    with pytest.raises(CaptureError, match="boom"):
        lst.check()


def test_policy_may_answer_raw_bytes_or_close():
    answers = iter([b"\x00\x00\x00\x01raw", CLOSE])
    with ScriptedListener(lambda req: next(answers)) as lst, socket.create_connection(lst.address) as s:
        s.sendall(size_prefixed(api_versions(0, corr=1)) + size_prefixed(api_versions(0, corr=2)))
        assert recv_frame(s) == b"\x00\x00\x00\x01raw"
        assert closed_by_peer(s)
    assert [r.outcome for r in lst.requests] == ["replied", "closed"]


def test_stop_is_clean_and_idempotent():
    lst = ScriptedListener().start()
    port = lst.address[1]
    conn = socket.create_connection(lst.address)
    assert lst.wait_for(lambda _: len(lst.connections) == 1, timeout=2)    # accepted, not just queued
    lst.stop()
    lst.stop()
    assert not lst.running and lst.faults == []
    assert closed_by_peer(conn)
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert lst.connections[0].closed_by == "stop"


def test_works_while_an_event_loop_runs_in_the_calling_thread():
    """As in a Jupyter kernel: the listener is started and used from inside a running asyncio loop."""
    async def main():
        assert asyncio.get_running_loop().is_running()
        with ScriptedListener() as lst:
            reader, writer = await asyncio.open_connection(*lst.address)
            writer.write(size_prefixed(api_versions(3, corr=5)))
            await writer.drain()
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            body = await reader.readexactly(size)
            writer.close()
            await writer.wait_closed()
            return body, lst.requests

    body, reqs = asyncio.run(main())
    assert decode_response(body, 18, 3).correlation_id == 5
    assert reqs[0].outcome == "replied"


# -- the ScriptedReplies policy --------------------------------------------------------------------------------------
def test_metadata_points_at_the_listener_itself():
    policy = ScriptedReplies(topics={"orders": 3})
    body = policy(captured(metadata(12, ["orders"]), listener=("127.0.0.1", 40123)))
    (broker,) = body.brokers
    assert (broker.node_id, broker.host, broker.port) == (0, "127.0.0.1", 40123)
    assert body.controller_id == 0 and body.cluster_id == "kafkalab-capture"
    (topic,) = body.topics
    assert topic.topic_id == topic_id_for("orders") != uuid.UUID(int=0)
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in topic.partitions] == \
        [(i, 0, (0,), (0,)) for i in range(3)]


@pytest.mark.parametrize("version, topics, expected", [
    (0, [], ["a", "b"]),            # v0: an empty list means all topics
    (1, [], []),                    # v1+: empty means none ...
    (1, None, ["a", "b"]),          # ... and null means all
    (9, ["b"], ["b"]),
])
def test_metadata_topic_selection(version, topics, expected):
    body = ScriptedReplies(topics={"b": 1, "a": 1})(captured(metadata(version, topics)))
    assert [t.name for t in body.topics] == expected
    assert all(t.topic_id == uuid.UUID(int=0) for t in body.topics)      # topic ids only from v10


def test_metadata_auto_creation_and_unknown_topics():
    policy = ScriptedReplies(auto_create=False)
    (topic,) = policy(captured(metadata(12, ["nope"]))).topics
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    (topic,) = ScriptedReplies()(captured(metadata(12, ["nope"], auto=False))).topics
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    policy = ScriptedReplies(default_partitions=2)
    (topic,) = policy(captured(metadata(12, ["new"]))).topics
    assert topic.error_code == 0 and len(topic.partitions) == 2 and policy.topics == {"new": 2}


def test_produce_assigns_offsets_per_partition():
    fr = (GOLDEN / "kafka-python-Produce-v9.bin").read_bytes()
    policy = ScriptedReplies(topics={"kafkalab": 1})
    first = policy(captured(fr)).responses[0].partition_responses[0]
    second = policy(captured(fr)).responses[0].partition_responses[0]
    assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 3)
    req = decode_request(fr)
    zero = dataclasses.replace(req, body=req.body._replace(acks=0))
    assert policy(captured(encode_request(zero))) is None                      # acks=0: no reply


def test_count_records_reads_batch_headers_only():
    blob = decode_request((GOLDEN / "kafka-python-Produce-v9.bin").read_bytes()).body.topic_data[0] \
        .partition_data[0].records
    assert count_records(blob) == 3
    assert count_records(bytes(blob) * 2) == 6
    assert count_records(blob[:-1]) == 0 and count_records(None) == 0


def test_init_producer_id_and_find_coordinator():
    policy = ScriptedReplies()
    ipid = frame(request_class(ApiKey.INIT_PRODUCER_ID)(transactional_id=None, transaction_timeout_ms=-1), 4)
    assert [policy(captured(ipid)).producer_id for _ in range(2)] == [1000, 1001]
    fc = request_class(ApiKey.FIND_COORDINATOR)
    old = policy(captured(frame(fc(key="g"), 3), listener=("127.0.0.1", 1234)))
    assert (old.node_id, old.host, old.port) == (0, "127.0.0.1", 1234)
    new = policy(captured(frame(fc(coordinator_keys=("g", "h")), 4), listener=("127.0.0.1", 1234)))
    assert [(c.key, c.node_id, c.port) for c in new.coordinators] == [("g", 0, 1234), ("h", 0, 1234)]


def test_unadvertised_or_out_of_range_requests_are_closed():
    policy = ScriptedReplies([(18, 0, 3), (3, 0, 4)])
    assert policy(captured(metadata(5, ["x"]))) is CLOSE
    ipid = frame(request_class(ApiKey.INIT_PRODUCER_ID)(transactional_id=None, transaction_timeout_ms=-1), 0)
    assert policy(captured(ipid)) is CLOSE
    assert ScriptedReplies()(captured(frame(request_class(ApiKey.FETCH)(), 4))) is None   # advertised, unscripted


@pytest.mark.parametrize("name, version, ok", [
    ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0", True),
    ("kafka-python", "3.0.12", True),
    ("my client", "1.0", False),
    ("client-", "1.0", False),
    ("client", "", False),
])
def test_software_name_check(name, version, ok):
    body = ScriptedReplies()(captured(api_versions(3, name=name, software_version=version)))
    assert body.error_code == (0 if ok else ErrorCode.INVALID_REQUEST)
    assert ScriptedReplies(check_software_name=False)(
        captured(api_versions(3, name=name, software_version=version))).error_code == 0


def _requests_for_every_advertised_version():
    blob = decode_request((GOLDEN / "kafka-python-Produce-v9.bin").read_bytes()).body.topic_data[0] \
        .partition_data[0].records
    P, M = request_class(ApiKey.PRODUCE), request_class(ApiKey.METADATA)
    bodies = {
        ApiKey.API_VERSIONS: request_class(ApiKey.API_VERSIONS)(client_software_name="t", client_software_version="1"),
        ApiKey.METADATA: M(topics=(M.MetadataRequestTopic(name="kafkalab"),)),
        ApiKey.INIT_PRODUCER_ID: request_class(ApiKey.INIT_PRODUCER_ID)(transactional_id=None,
                                                                        transaction_timeout_ms=-1),
        ApiKey.FIND_COORDINATOR: request_class(ApiKey.FIND_COORDINATOR)(key="g"),
        ApiKey.PRODUCE: P(acks=-1, timeout_ms=1000, topic_data=(P.TopicProduceData(
            name="kafkalab", partition_data=(P.PartitionProduceData(index=0, records=blob),)),)),
    }
    for key, lo, hi in DEFAULT_ADVERTISED:
        if key in bodies:
            for v in range(max(lo, 3 if key == ApiKey.PRODUCE else 0), hi + 1):
                body = bodies[key]
                if key == ApiKey.FIND_COORDINATOR and v >= 4:      # batched lookups (KIP-699)
                    body = body._replace(key="", coordinator_keys=("g",))
                yield pytest.param(key, v, body, id=f"{key.name}-v{v}")


@pytest.mark.parametrize("key, version, body", list(_requests_for_every_advertised_version()))
def test_every_scripted_reply_encodes_at_every_advertised_version(key, version, body):
    """Each reply survives the codec at each version it may be asked for, and decodes back to itself."""
    fr = frame(body, version, corr=3)
    answer = ScriptedReplies(topics={"kafkalab": 1})(captured(fr, listener=("127.0.0.1", 9092)))
    assert answer is not None and answer is not CLOSE
    reply = ScriptedListener._encode(captured(fr), answer)
    back = decode_response(reply, key, version)
    assert back.correlation_id == 3
    assert getattr(back.body, "error_code", 0) == 0
    if key == ApiKey.METADATA:
        assert [(b.node_id, b.port) for b in back.body.brokers] == [(0, 9092)]
        assert [p.leader_id for p in back.body.topics[0].partitions] == [0]
        assert back.body.topics[0].topic_id == (topic_id_for("kafkalab") if version >= 10 else uuid.UUID(int=0))
    if key == ApiKey.PRODUCE:
        assert back.body.responses[0].partition_responses[0].base_offset == 0
    if key == ApiKey.API_VERSIONS:
        assert back.body.error_code == 0 and len(back.body.api_keys) == len(DEFAULT_ADVERTISED)
