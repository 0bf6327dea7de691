"""The tap's notebook views: connections per client, versions used, batching, one connection as a sequence."""
from __future__ import annotations

import time

import pytest

from kafkalab.cluster import Cluster
from kafkalab.protocol import encode_request, make_request, request_class
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.trace import RawConnection, Tap, TapRequestLogs
from kafkalab.trace.views import (BatchingTable, ConnectionsTable, VersionMatrix, connection_summaries,
                                  produce_batching, record_batch_counts, sequence_diagram, versions_used)
from kafkalab.viz.textfit import check_svg

TOPIC = "views"


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=2) as c:
        c.create_topic(TOPIC, assignment={0: [0], 1: [1]})
        yield c


@pytest.fixture
def tap(cluster):
    with Tap(cluster.broker(0).bound_endpoints[0].host + f":{cluster.broker(0).bound_endpoints[0].port}") as t:
        yield t


def _wait(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        time.sleep(0.02)
    return predicate()


def _request(api_key, version, cid, client_id, **fields):
    return encode_request(make_request(request_class(api_key)(**fields), api_version=version, correlation_id=cid,
                                       client_id=client_id))


def _api_versions(cid, client_id):
    return _request(18, 3, cid, client_id, client_software_name="t", client_software_version="1")


def _metadata(cid, client_id, version=9):
    return _request(3, version, cid, client_id, topics=None, allow_auto_topic_creation=False)


def _records(n, start=0):
    return build_batch([SimpleRecord(b"k%d" % i, b"v%d" % i, (), 1700000000000 + i) for i in range(start, start + n)])


def _produce(cid, client_id, batches: dict):
    P = request_class(0)
    data = tuple(P.TopicProduceData(name=TOPIC, partition_data=tuple(
        P.TopicProduceData.PartitionProduceData(index=p, records=b"".join(blobs)) for p, blobs in batches.items()))
        for _ in [0])
    return _request(0, 9, cid, client_id, transactional_id=None, acks=1, timeout_ms=5000, topic_data=data)


def _broker_tap_address(cluster, tap, node):
    ep = cluster.broker(node).bound_endpoints[0]
    return tap.broker_ports[(ep.host, ep.port)]


def test_record_batch_counts_reads_each_batch_header_and_stops_at_a_bad_length():
    two = _records(3) + _records(5, start=3)
    assert record_batch_counts(two) == [3, 5]
    assert record_batch_counts(two[:-1]) == [3]                   # a truncated batch is not counted
    assert record_batch_counts(b"") == [] and record_batch_counts(None) == []
    bad = two[:8] + (10**9).to_bytes(4, "big") + two[12:]
    assert record_batch_counts(bad) == []                         # a length past the end: nothing allocated
    assert record_batch_counts(two[:8] + (-1).to_bytes(4, "big", signed=True) + two[12:]) == []


def test_views_of_two_clients_on_two_brokers(cluster, tap):
    with RawConnection(tap.bootstrap_servers) as a:             # client "alpha": bootstrap, then metadata
        a.send(_api_versions(1, "alpha"), _metadata(2, "alpha"))
        a.receive(), a.receive()
        a.send(_produce(3, "alpha", {0: [_records(4), _records(2, 4)]}))
        assert a.receive() is not None
    with RawConnection(tap.bootstrap_servers) as b:             # client "beta": an older Metadata
        b.send(_metadata(1, "beta", version=4))
        assert b.receive() is not None
        with RawConnection("%s:%d" % _broker_tap_address(cluster, tap, 1)) as b1:   # ... and broker 1
            b1.send(_produce(2, "beta", {1: [_records(7)]}))
            assert b1.receive() is not None
    assert _wait(lambda: len(tap.responses()) == 5)

    listeners = {(e.host, e.port): e.listener_name for b in cluster.brokers.values() for e in b.bound_endpoints}
    summaries = connection_summaries(tap, listeners=listeners)
    assert [(s.client, s.broker, s.listener, s.requests) for s in summaries] == [
        ("alpha", 0, "PLAINTEXT", {"ApiVersions": 1, "Metadata": 1, "Produce": 1}),
        ("beta", 0, "PLAINTEXT", {"Metadata": 1}),
        ("beta", 1, "PLAINTEXT", {"Produce": 1})]
    table = ConnectionsTable(summaries)
    assert table.rows()[2] == ("beta #2", "broker 1", "PLAINTEXT", "Produce ×1")
    assert ConnectionsTable(summaries, show_counts=False).rows()[0][3] == "ApiVersions, Metadata, Produce"
    assert ConnectionsTable(summaries, ignore={"Metadata"}).rows()[0][3] == "ApiVersions ×1, Produce ×1"
    assert "beta #2" in table._repr_html_()

    used = versions_used(tap)
    assert used == {"alpha": {"ApiVersions": (3,), "Metadata": (9,), "Produce": (9,)},
                    "beta": {"Metadata": (4,), "Produce": (9,)}}
    matrix = VersionMatrix(used)
    assert matrix.apis == ["ApiVersions", "Metadata", "Produce"] and matrix.partial_apis() == ["ApiVersions"]
    assert repr(matrix).splitlines()[2].split() == ["beta", "—", "v4", "v9"]
    assert "background:#fff4e6" in matrix._repr_html_()

    batching = produce_batching(tap)
    assert [(r.client, r.batches, r.records) for r in batching] == [
        ("alpha", ((TOPIC, 0, 4), (TOPIC, 0, 2)), 6), ("beta", ((TOPIC, 1, 7),), 7)]
    assert BatchingTable(batching).rows() == [("alpha", 1, 2, 6, "2–4", "2"), ("beta", 1, 1, 7, "7", "1")]
    assert produce_batching(tap, topics=["other"]) == []


def test_client_of_groups_client_ids(tap):
    with RawConnection(tap.bootstrap_servers) as a:
        a.send(_metadata(1, "app-producer"), _metadata(2, "app-consumer"))
        a.receive(), a.receive()
    assert _wait(lambda: len(tap.responses()) == 2)
    assert versions_used(tap, client_of=lambda cid: cid.split("-")[0]) == {"app": {"Metadata": (9,)}}
    assert [s.client for s in connection_summaries(tap, client_of=lambda cid: cid.upper())] == ["APP-PRODUCER"]


def test_sequence_diagram_shows_pipelining_and_fits_its_text(tap):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(_api_versions(7, "pipeliner"))
        assert conn.receive() is not None
        conn.send(_metadata(8, "pipeliner"), _metadata(9, "pipeliner"), _metadata(10, "pipeliner"))
        for _ in range(3):
            assert conn.receive() is not None
    assert _wait(lambda: len(tap.responses()) == 4)
    diagram = sequence_diagram(tap, tap.connections[0].number)
    lines = repr(diagram).splitlines()
    assert lines[:2] == ["client -> broker: ApiVersions v3 #7", "broker --> client: #7 ApiVersions"]
    assert lines[2:5] == [f"client -> broker: Metadata v9 #{c}" for c in (8, 9, 10)]
    assert lines[5:] == [f"broker --> client: #{c} Metadata" for c in (8, 9, 10)]
    notes = [row[7] for row in diagram.rows]
    assert notes[2:5] == ["", "2 in flight", "3 in flight"] and notes[0] == ""
    svg = diagram.svg()
    assert "pipeliner" in svg and "broker 0" in svg and check_svg(svg) == []
    short = sequence_diagram(tap, tap.connections[0].number, limit=3)
    assert repr(short).splitlines()[-1] == "   ... 5 more frame(s) on this connection"
    assert check_svg(short.svg()) == []
    quiet = sequence_diagram(tap, tap.connections[0].number, limit=3, subtitle="first", count_the_rest=False)
    assert len(quiet.rows) == 3 and quiet.lifelines[0][2] == "first"


def test_the_tap_feeds_a_live_request_log(tap):
    from kafkalab.viz.live.request_log import LiveRequestLog

    seen = []
    tap.on_frame = seen.append                              # an observer already there keeps its frames
    logs = TapRequestLogs(tap)
    live = LiveRequestLog(logs, start=False)
    try:
        with RawConnection(tap.bootstrap_servers) as conn:
            conn.send(_api_versions(1, "watched"), _metadata(2, "watched"))
            conn.receive(), conn.receive()
        assert _wait(lambda: len(tap.responses()) == 2)
        live.refresh()                          # subscribes to the logs that appeared, which hand over their records
        rows = live.rows()
        assert [(broker, r.api_name, r.correlation_id, r.client_id, r.listener_name) for broker, r in rows] == [
            (0, "Metadata", 2, "watched", "tap"),          # its rewrite taught the tap which broker this is
            (TapRequestLogs.UNKNOWN_BROKER, "ApiVersions", 1, "watched", "tap")]
        assert all(r.total_time_ms >= 0 and r.request_bytes > 0 and r.local_time_ms is None for _, r in rows)
        assert "<td" in live.snapshot().data and "—" in live.snapshot().data
        assert len(seen) == 4
    finally:
        live.close()
