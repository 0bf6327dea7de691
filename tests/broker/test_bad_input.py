"""Bad input on a raw socket: the broker answers as Kafka 4.x does, and never dies.

protocol-compat.md §6 and security.md §6-7: what cannot be parsed -- a size prefix below 0 or above
``socket.request.max.bytes``, an unknown API key, an API that is not served, a version outside the advertised
range, a body that runs short, an array count larger than the bytes left (CVE-2022-34917) -- closes the
connection **without a response**. ApiVersions is the exception: a too-new version gets the v0-format
UNSUPPORTED_VERSION reply and the connection stays usable. A request that parses but is wrong gets an error
code in its response (per partition for Produce), except ``acks=0`` produces, which cannot be answered: the
connection is closed instead. After every test a fresh connection must still be served (an autouse check), and
no bad input may reach the "unexpected error" path of the network layer or the UNKNOWN_SERVER_ERROR path of
the handlers.
"""
from __future__ import annotations

import logging
import random
import struct
import time
import tracemalloc
import uuid

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ALL_API_KEYS, ApiException, ApiKey, ErrorCode, decode_response, request_class
from kafkalab.records import build_batch, crc32c
from kafkalab.server.apis import enabled_apis
from kafkalab.storage import CorruptRecordError, StorageError

from ._raw_wire import Conn, frame_of, header_v1, header_v2, request_frame, uvarint

MAX_INT = 2**31 - 1
SMALL_MAX_MESSAGE = 10_000
ApiVersions = request_class(ApiKey.API_VERSIONS)
Metadata = request_class(ApiKey.METADATA)
Produce = request_class(ApiKey.PRODUCE)
ListOffsets = request_class(ApiKey.LIST_OFFSETS)


# -- fixtures -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": "false"}) as c:
        c.create_topic("bad-input", 2)
        c.create_topic("small-messages", 1, config={"max.message.bytes": SMALL_MAX_MESSAGE})
        yield c


@pytest.fixture
def port(cluster):
    return cluster.broker(0).bound_endpoints[0].port


@pytest.fixture(autouse=True)
def broker_survives(cluster, caplog):
    """After each test: a fresh connection is served, and no request took an unexpected-exception path."""
    with caplog.at_level(logging.WARNING, logger="kafkalab"):
        yield
    port = cluster.broker(0).bound_endpoints[0].port
    with Conn(port) as c:
        body = c.call(ApiVersions(client_software_name="after-test", client_software_version="1"), 3, 4242)
        assert body.error_code == 0 and body.api_keys
        md = c.call(Metadata(topics=None), 12, 4243)
        assert "bad-input" in {t.name for t in md.topics}
    unexpected = [r.getMessage() for r in caplog.records
                  if "unexpected error" in r.getMessage() or "error handling" in r.getMessage()]
    assert not unexpected, unexpected


# -- helpers --------------------------------------------------------------------------------------------------------
def batch(*values: bytes, **kw) -> bytes:
    return build_batch([(b"k", v, [], 1_700_000_000_000 + i) for i, v in enumerate(values)], **kw)


def fix_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def produce_body(partitions: dict, *, acks: int = -1, topic: str = "bad-input"):
    return Produce(transactional_id=None, acks=acks, timeout_ms=5000, topic_data=(Produce.TopicProduceData(
        name=topic, partition_data=tuple(Produce.PartitionProduceData(index=p, records=r)
                                         for p, r in partitions.items())),))


def produce(port: int, partitions: dict, *, acks: int = -1, topic: str = "bad-input", version: int = 9) -> dict:
    """One Produce on a fresh connection; returns {partition: (error_code, base_offset)}."""
    with Conn(port) as c:
        body = c.call(produce_body(partitions, acks=acks, topic=topic), version)
    [t] = body.responses
    assert t.name == topic
    return {p.index: (p.error_code, p.base_offset) for p in t.partition_responses}


def end_offset(port: int, partition: int, topic: str = "bad-input") -> int:
    with Conn(port) as c:
        body = c.call(ListOffsets(replica_id=-1, topics=(ListOffsets.ListOffsetsTopic(name=topic, partitions=(
            ListOffsets.ListOffsetsPartition(partition_index=partition, timestamp=-1),)),)), 7)
    [p] = body.topics[0].partitions
    assert p.error_code == 0
    return p.offset


def closes_without_response(port: int, data: bytes) -> None:
    with Conn(port) as c:
        c.send(data)
        c.assert_closed_without_response()


def not_served_keys() -> list[int]:
    served = enabled_apis()
    return [k for k in (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                        ApiKey.CONTROLLED_SHUTDOWN, 57, 60, 67) if k in ALL_API_KEYS and k not in served][:3]


# -- framing --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [-1, -(2**31), 104857601, MAX_INT], ids=["minus-1", "int-min", "max-plus-1",
                                                                          "int-max"])
def test_bad_size_prefix_closes_without_response(port, size):
    closes_without_response(port, struct.pack(">i", size))


def test_bad_size_prefix_after_a_good_request(port):
    """A complete request before the bad size is still answered (Kafka reads it first), then the close."""
    with Conn(port) as c:
        c.send(request_frame(Metadata(topics=None), 12, 7) + struct.pack(">i", -1))
        response = decode_response(c.recv_frame(), ApiKey.METADATA, 12)
        assert response.correlation_id == 7
        c.assert_closed_without_response()


def test_empty_and_tiny_frames_close(port):
    closes_without_response(port, frame_of(b""))
    closes_without_response(port, frame_of(b"\x00\x03"))


# -- header ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("api_key", [99, 1000, 32767, -1])
def test_unknown_api_key_closes(port, api_key):
    closes_without_response(port, frame_of(header_v1(api_key, 0, 1) + b"\x00" * 8))


def test_api_not_served_closes(port):
    keys = not_served_keys()
    assert keys, "every candidate key is served"
    for key in keys:
        closes_without_response(port, frame_of(header_v1(key, 0, 1) + b"\x00" * 16))


@pytest.mark.parametrize("api_key,version", [
    (ApiKey.METADATA, 14),       # above anything kafkalab serves (13)
    (ApiKey.METADATA, 13),       # served with kafkalab.api.version.floors=4.0, above Kafka 3.9's maximum (12)
    (ApiKey.FETCH, 18),          # above Kafka 3.9's 17
    (ApiKey.METADATA, 32767),
    (ApiKey.PRODUCE, -1),
])
def test_unsupported_version_closes_without_response(port, api_key, version):
    lo, hi = enabled_apis()[api_key]
    assert not lo <= version <= hi
    header = header_v2 if version > hi else header_v1
    closes_without_response(port, frame_of(header(api_key, version, 5) + b"\x00" * 16))


@pytest.mark.parametrize("body", [b"", b"\x00", bytes(range(200))], ids=["empty", "one-byte", "garbage"])
def test_api_versions_too_new_gets_the_v0_format_error_and_the_connection_stays(port, body):
    hi = enabled_apis()[ApiKey.API_VERSIONS][1]
    with Conn(port) as c:
        c.send(frame_of(header_v2(ApiKey.API_VERSIONS, 9, 0x01020304) + body))
        raw = c.recv_frame()
        expected = (b"\x01\x02\x03\x04"                  # correlation id (response header v0, never flexible)
                    + b"\x00\x23"                        # error_code 35 UNSUPPORTED_VERSION
                    + b"\x00\x00\x00\x01"                # api_keys: int32 count 1 (the v0 format)
                    + struct.pack(">hhh", 18, 0, hi))    # {ApiVersions, min 0, max}
        assert raw == expected, raw.hex(" ")
        assert len(raw) == 0x10
        reply = decode_response(raw, ApiKey.API_VERSIONS, 0).body
        assert (reply.error_code, [(a.api_key, a.min_version, a.max_version) for a in reply.api_keys]) == \
            (35, [(18, 0, hi)])
        # the client retries with the advertised maximum, on the same connection
        body = c.call(ApiVersions(client_software_name="kafkalab-test", client_software_version="1.0"), hi, 2)
        assert body.error_code == 0
        assert {a.api_key for a in body.api_keys} == set(enabled_apis())


@pytest.mark.parametrize("name,version", [("-starts-with-dash", "1.0"), ("ends-with-dot.", "1.0"),
                                          ("has space", "1.0"), ("", "1.0"), ("ok", "1.0 beta"), ("ok", "")])
def test_api_versions_v3_invalid_software_name_is_invalid_request(port, name, version):
    with Conn(port) as c:
        body = c.call(ApiVersions(client_software_name=name, client_software_version=version), 3, 11)
        assert body.error_code == ErrorCode.INVALID_REQUEST
        assert body.api_keys == ()
        # answered, not closed: the connection is still usable
        assert c.call(ApiVersions(client_software_name="good-name", client_software_version="1.0.0"), 3, 12) \
            .error_code == 0


def test_trailing_bytes_after_a_valid_body_are_ignored(port):
    payload = request_frame(Metadata(topics=None), 12, 9)[4:] + b"\xde\xad\xbe\xef" * 8
    with Conn(port) as c:
        c.send(frame_of(payload))
        response = decode_response(c.recv_frame(), ApiKey.METADATA, 12)
        assert response.correlation_id == 9 and "bad-input" in {t.name for t in response.body.topics}


# -- body -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cut", [1, 5, 20, 60])
def test_truncated_body_closes(port, cut):
    full = request_frame(produce_body({0: batch(b"v")}), 9, 3)[4:]
    closes_without_response(port, frame_of(full[:-cut]))


def test_truncated_metadata_array_closes(port):
    closes_without_response(port, frame_of(header_v1(ApiKey.METADATA, 1, 1) + struct.pack(">i", 1)))


def _peak_kib_while(fn) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("count", [MAX_INT, (MAX_INT - 1) // 2, 1 << 24])
def test_produce_v5_huge_topics_count_closes_without_allocating(port, count):
    """CVE-2022-34917: an int32 array count is checked against the bytes left before anything is allocated."""
    payload = (header_v1(ApiKey.PRODUCE, 5, 1) + struct.pack(">hhi", -1, 1, 1000)   # txn id null, acks, timeout
               + struct.pack(">i", count) + b"\x00" * 8)                            # topic_data count, 8 bytes
    peak = _peak_kib_while(lambda: closes_without_response(port, frame_of(payload)))
    assert peak < 4096, f"{peak:.0f} KiB allocated while refusing the request"


@pytest.mark.parametrize("n", [1 << 31, (1 << 32) - 1, 1 << 40])
def test_compact_array_huge_count_closes_without_allocating(port, n):
    """The flexible (compact) form: an unsigned varint N+1."""
    payload = (header_v2(ApiKey.PRODUCE, 9, 1) + b"\x00"                   # transactional_id: compact null
               + struct.pack(">hi", 1, 1000) + uvarint(n) + b"\x00" * 8)
    peak = _peak_kib_while(lambda: closes_without_response(port, frame_of(payload)))
    assert peak < 4096, f"{peak:.0f} KiB allocated while refusing the request"


def test_huge_records_length_closes_without_allocating(port):
    """A records field claiming 2 GiB inside a small request."""
    payload = (header_v1(ApiKey.PRODUCE, 5, 1) + struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1)
               + struct.pack(">h", 9) + b"bad-input" + struct.pack(">i", 1) + struct.pack(">i", 0)
               + struct.pack(">i", MAX_INT) + b"\x00" * 8)
    peak = _peak_kib_while(lambda: closes_without_response(port, frame_of(payload)))
    assert peak < 4096, f"{peak:.0f} KiB allocated while refusing the request"


# -- produce: errors in the response --------------------------------------------------------------------------------
def test_corrupted_crc_is_corrupt_message_for_that_partition_only(port):
    good = batch(b"good")
    bad = bytearray(batch(b"bad"))
    bad[-1] ^= 0x01                                    # a record byte: the CRC no longer matches
    before = end_offset(port, 1)
    result = produce(port, {0: good, 1: bytes(bad)})
    assert result[0][0] == ErrorCode.NONE
    assert result[1] == (ErrorCode.CORRUPT_MESSAGE, -1)
    assert end_offset(port, 1) == before               # nothing appended


def test_a_storage_error_is_an_api_exception_whose_code_is_the_answer(cluster, port):
    """The type path behind the CRC test above: the log raises CorruptRecordError (a StorageError, so an
    ApiException), the replica manager keeps it as the partition's result, the handler answers its code."""
    bad = bytearray(batch(b"bad"))
    bad[-1] ^= 0x01
    rm = cluster.broker(0).replica_manager
    result = cluster.call(lambda: rm.append_records({("bad-input", 1): bytes(bad)}, required_acks=1))
    error = result[("bad-input", 1)]
    assert isinstance(error, CorruptRecordError) and isinstance(error, StorageError)
    assert isinstance(error, ApiException) and error.error_code == ErrorCode.CORRUPT_MESSAGE
    assert produce(port, {1: bytes(bad)}) == {1: (error.error_code, -1)}


def test_invalid_acks_is_invalid_required_acks_for_every_partition(port):
    result = produce(port, {0: batch(b"a"), 1: batch(b"b")}, acks=2)
    assert result == {0: (ErrorCode.INVALID_REQUIRED_ACKS, -1), 1: (ErrorCode.INVALID_REQUIRED_ACKS, -1)}


def test_batch_larger_than_max_message_bytes(port):
    result = produce(port, {0: batch(b"x" * (SMALL_MAX_MESSAGE + 100))}, topic="small-messages")
    assert result == {0: (ErrorCode.MESSAGE_TOO_LARGE, -1)}
    assert produce(port, {0: batch(b"x" * 100)}, topic="small-messages")[0][0] == ErrorCode.NONE


def test_batch_larger_than_the_broker_default_max_message_bytes(port):
    result = produce(port, {0: batch(random.Random(1).randbytes(1_048_588))})
    assert result == {0: (ErrorCode.MESSAGE_TOO_LARGE, -1)}


def test_two_batches_in_one_partition_is_invalid_record(port):
    assert produce(port, {0: batch(b"one") + batch(b"two")}) == {0: (ErrorCode.INVALID_RECORD, -1)}


@pytest.mark.parametrize("case", ["base-offset-5", "empty-records", "magic-1", "control-batch", "count-mismatch",
                                  "pid-without-sequence", "short-batch"])
def test_other_invalid_batches_are_invalid_record(port, case):
    data = bytearray(batch(b"v"))
    if case == "base-offset-5":
        struct.pack_into(">q", data, 0, 5)
    elif case == "empty-records":
        data = bytearray()
    elif case == "magic-1":
        data[16] = 1
    elif case == "control-batch":      # not flagged transactional: that would need a transactional id first (53)
        data = bytearray(build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], control=True,
                                     producer_id=1, producer_epoch=0))
    elif case == "count-mismatch":
        struct.pack_into(">i", data, 57, 3)
        data = bytearray(fix_crc(data))
    elif case == "pid-without-sequence":
        data = bytearray(batch(b"v", producer_id=7, producer_epoch=0, base_sequence=0))
        struct.pack_into(">i", data, 53, -1)
        data = bytearray(fix_crc(data))
    elif case == "short-batch":
        data = data[:40]
    assert produce(port, {0: bytes(data)}) == {0: (ErrorCode.INVALID_RECORD, -1)}


def test_zstd_before_produce_v7_is_unsupported_compression_type(port):
    """KIP-110: zstd batches need Produce v7+ (``ProduceRequest.validateRecords``)."""
    assert produce(port, {0: batch(b"z", compression="zstd")}, version=5) == \
        {0: (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1)}
    assert produce(port, {0: batch(b"z", compression="zstd")}, version=7)[0][0] == ErrorCode.NONE


def test_unknown_topic_without_auto_create(cluster, port):
    assert produce(port, {0: batch(b"v")}, topic="no-such-topic") == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert produce(port, {9: batch(b"v")}) == {9: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    time.sleep(0.1)
    assert not cluster.broker(0).metadata_cache.contains_topic("no-such-topic")


def test_acks_0_error_closes_the_connection(port):
    bad = bytearray(batch(b"bad"))
    bad[-1] ^= 0x01
    before = end_offset(port, 0)
    with Conn(port) as c:
        c.send(request_frame(produce_body({0: bytes(bad)}, acks=0), 9, 1))
        c.assert_closed_without_response()
    with Conn(port) as c:
        c.send(request_frame(produce_body({0: batch(b"v")}, acks=0, topic="no-such-topic"), 9, 1))
        c.assert_closed_without_response()
    assert end_offset(port, 0) == before


def test_acks_0_success_is_not_answered_and_the_connection_stays(port):
    before = end_offset(port, 0)
    with Conn(port) as c:
        c.send(request_frame(produce_body({0: batch(b"fire", b"and", b"forget")}, acks=0), 9, 1))
        c.assert_open()
        md = c.call(Metadata(topics=None), 12, 2)      # the next answer is the Metadata one
        assert md.topics
    assert end_offset(port, 0) == before + 3


# -- the stream -----------------------------------------------------------------------------------------------------
def test_pipelined_requests_are_answered_in_order(port):
    requests = []
    for i in range(10):
        cid = 1000 + i
        if i % 4 == 0:
            requests.append((ApiKey.API_VERSIONS, 3, cid, ApiVersions(client_software_name="pipe",
                                                                      client_software_version="1")))
        elif i % 4 == 1:
            requests.append((ApiKey.METADATA, 12, cid, Metadata(topics=None)))
        elif i % 4 == 2:
            requests.append((ApiKey.PRODUCE, 9, cid, produce_body({i % 2: batch(f"pipelined {i}".encode())},
                                                                  acks=1)))
        else:
            requests.append((ApiKey.LIST_OFFSETS, 7, cid, ListOffsets(replica_id=-1, topics=(
                ListOffsets.ListOffsetsTopic(name="bad-input", partitions=(
                    ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=-1),)),))))
    with Conn(port) as c:
        c.send(b"".join(request_frame(body, v, cid) for _, v, cid, body in requests))
        for key, v, cid, _ in requests:
            response = decode_response(c.recv_frame(), key, v)
            assert response.correlation_id == cid
            errors = [p.error_code for t in getattr(response.body, "responses", ()) for p in t.partition_responses]
            assert not any(errors), errors


def test_a_waiting_fetch_holds_back_the_next_response(port):
    """One request in flight per connection: a Fetch waiting for data (min_bytes not reached) is answered
    after max_wait_ms, and the Metadata pipelined behind it only after that, in order."""
    Fetch = request_class(ApiKey.FETCH)
    fetch = Fetch(replica_id=-1, max_wait_ms=300, min_bytes=10_000_000, max_bytes=1_000_000, isolation_level=0,
                  session_id=0, session_epoch=-1, topics=(Fetch.FetchTopic(topic="bad-input", partitions=(
                      Fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1_000_000),)),))
    with Conn(port) as c:
        start = time.monotonic()
        c.send(request_frame(fetch, 11, 21) + request_frame(Metadata(topics=None), 12, 22))
        first = decode_response(c.recv_frame(), ApiKey.FETCH, 11)
        waited = time.monotonic() - start
        second = decode_response(c.recv_frame(), ApiKey.METADATA, 12)
    assert (first.correlation_id, second.correlation_id) == (21, 22)
    assert first.body.error_code == 0 and waited >= 0.25, waited


def test_request_arriving_byte_by_byte(port):
    data = request_frame(Metadata(topics=None), 12, 77) + request_frame(produce_body({1: batch(b"slow")}), 9, 78)
    with Conn(port) as c:
        for i in range(len(data)):
            c.send(data[i:i + 1])
            if i % 16 == 0:
                time.sleep(0.001)
        assert decode_response(c.recv_frame(), ApiKey.METADATA, 12).correlation_id == 77
        response = decode_response(c.recv_frame(), ApiKey.PRODUCE, 9)
        assert response.correlation_id == 78
        assert response.body.responses[0].partition_responses[0].error_code == 0


def test_bad_input_byte_by_byte_still_closes(port):
    payload = header_v1(ApiKey.PRODUCE, 5, 1) + struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", MAX_INT)
    data = frame_of(payload + b"\x00" * 8)
    with Conn(port) as c:
        for i in range(len(data)):
            c.send(data[i:i + 1])
        c.assert_closed_without_response()


def test_mutated_frames_are_answered_or_closed_never_crash(port):
    """A small seeded fuzz (security.md §7's invariant): flip, cut and splice valid frames; each one on a fresh
    connection is either answered with its correlation id or closed without an answer (or, for a Produce whose
    acks became 0, accepted in silence)."""
    rnd = random.Random(20240611)
    seeds = [request_frame(Metadata(topics=(Metadata.MetadataRequestTopic(name="bad-input"),)), 12, 1)[4:],
             request_frame(Metadata(topics=None), 4, 1)[4:],
             request_frame(produce_body({0: batch(b"fuzz", b"me")}), 9, 1)[4:],
             request_frame(produce_body({1: batch(b"fuzz", compression="gzip")}), 7, 1)[4:],
             request_frame(ApiVersions(client_software_name="f", client_software_version="1"), 3, 1)[4:],
             request_frame(ListOffsets(replica_id=-1, topics=(ListOffsets.ListOffsetsTopic(name="bad-input",
                           partitions=(ListOffsets.ListOffsetsPartition(partition_index=0, timestamp=-2),)),)),
                           7, 1)[4:]]
    answered = closed = silent = 0
    for _ in range(150):
        data = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 4)):
            op = rnd.random()
            pos = rnd.randrange(8, len(data))          # keep api key, version and correlation id
            if op < 0.5:
                data[pos] = rnd.randrange(256)
            elif op < 0.7:
                del data[pos:pos + rnd.randint(1, 8)]
            elif op < 0.85:
                data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
            else:
                data[pos:pos + 4] = rnd.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"])
        with Conn(port, timeout=2) as c:
            c.send(frame_of(bytes(data)))
            try:
                frame = c.recv_frame()
            except TimeoutError:
                assert data[:2] == b"\x00\x00", "only an acks=0 Produce may go unanswered"
                silent += 1
                continue
            if frame is None:
                closed += 1
            else:
                assert frame[:4] == data[4:8], "answered with another correlation id"
                answered += 1
    assert answered and closed


# -- extreme but well-formed (findings of test_extreme_values.py) -------------------------------------------------
@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_refuse_topic_ids_with_invalid_request(port, version):
    """v10 and v11 have the topic id field but cannot use it: a null name or a non-zero id is INVALID_REQUEST
    for every topic, and a null name is answered as "" (the response's name is not nullable before v12)."""
    topic_id = uuid.UUID(int=2**128 - 1)
    for topics in ((Metadata.MetadataRequestTopic(name=None, topic_id=topic_id),),
                   (Metadata.MetadataRequestTopic(name="bad-input", topic_id=topic_id),
                    Metadata.MetadataRequestTopic(name=None))):
        with Conn(port) as c:
            body = c.call(Metadata(topics=topics), version)
        assert [(t.error_code, t.name, t.topic_id) for t in body.topics] == [
            (ErrorCode.INVALID_REQUEST, "" if t.name is None else t.name, t.topic_id) for t in topics]


def test_metadata_answers_a_topic_named_many_times_once(port):
    """Kafka reads the requested topics as a set; answering each copy made the response grow with the request
    times the topic's partitions (30,000 copies of ``__consumer_offsets`` exhausted the broker's memory)."""
    with Conn(port) as c:
        body = c.call(Metadata(topics=(Metadata.MetadataRequestTopic(name="bad-input"),) * 30_000), 12)
    assert [(t.name, t.error_code, len(t.partitions)) for t in body.topics] == [("bad-input", 0, 2)]


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_names_no_topic_can_have_are_unknown_topics(cluster, port, name):
    """CreatePartitions looked for a deletion marker znode before anything else, and "", "." and ".." are no znode
    names: the whole request failed with UNKNOWN_SERVER_ERROR. A name that fails Topic.validate names no topic."""
    CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
    body = CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name=name, count=3, assignments=None),),
                            timeout_ms=1000)
    with Conn(port) as c:
        [result] = c.call(body, 3).results
    assert (result.name, result.error_code) == (name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    admin = cluster.broker(0).admin
    assert cluster.call(lambda: admin.is_topic_queued_for_deletion(name)) is False
    with pytest.raises(ApiException) as refused:
        cluster.call(lambda: admin.delete_topic(name))
    assert refused.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_an_error_quoting_a_32767_character_name_is_answered(port):
    """The longest name a request can carry, quoted in an error message, still fits the response: it was closed."""
    CreatePartitions = request_class(ApiKey.CREATE_PARTITIONS)
    name = "x" * 32767
    body = CreatePartitions(topics=(CreatePartitions.CreatePartitionsTopic(name=name, count=3, assignments=None),),
                            timeout_ms=1000)
    with Conn(port) as c:
        [result] = c.call(body, 1).results
    assert (result.name, result.error_code) == (name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert result.error_message.startswith("The topic 'xxx") and result.error_message.endswith("...")
