"""The tap against one kafkalab broker with bare connections: pass-through, rewriting, bad input, exports."""
from __future__ import annotations

import json
import struct
import time

import pytest

from kafkalab.cluster import Cluster
from kafkalab.protocol import (DecodeError, decode_response, encode_request, make_request, make_response,
                               request_class, response_class)
from kafkalab.trace import RawConnection
from kafkalab.trace.pcap import read_pcap
from kafkalab.trace.tap import Tap
from kafkalab.trace.tap_rewrite import rewrite_response


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


@pytest.fixture
def tap(cluster):
    with Tap(cluster.bootstrap_servers) as t:
        yield t


def _wait(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _api_versions(cid=1):
    return encode_request(make_request(request_class(18)(client_software_name="t", client_software_version="1"),
                                       api_version=3, correlation_id=cid, client_id="tap-test"))


def _metadata(cid=2):
    return encode_request(make_request(request_class(3)(topics=None, allow_auto_topic_creation=False),
                                       api_version=9, correlation_id=cid, client_id="tap-test"))


def test_responses_pass_through_byte_for_byte_except_rewritten_addresses(cluster, tap):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(_api_versions(), _metadata())
        got = [conn.receive(), conn.receive()]
    assert _wait(lambda: len(tap.responses()) == 2)
    api_versions, metadata = tap.responses()
    assert got[0] == api_versions.frame and api_versions.forwarded is None and not api_versions.rewritten
    upstream = decode_response(metadata.frame, 3, 9).body
    seen = decode_response(got[1], 3, 9).body
    broker = cluster.broker(0).bound_endpoints[0]
    assert [(b.node_id, b.host, b.port) for b in upstream.brokers] == [(0, broker.host, broker.port)]
    assert [(b.node_id, b.host, b.port) for b in seen.brokers] == [(0, *tap.broker_ports[(broker.host, broker.port)])]
    assert seen._replace(brokers=upstream.brokers) == upstream          # nothing else changed
    assert [c.as_dict()["upstream"] for c in metadata.rewritten] == [f"{broker.host}:{broker.port}"]
    # pairing and timing
    requests = tap.requests()
    assert [(r.api_name, r.correlation_id, r.client_id) for r in requests] == [
        ("ApiVersions", 1, "tap-test"), ("Metadata", 2, "tap-test")]
    assert [p[1].request_index for p in tap.pairs()] == [r.index for r in requests]
    assert all(r.latency is not None and r.latency >= 0 for r in tap.responses())


def test_rewrite_find_coordinator_old_and_new_versions():
    cls = response_class(10)
    resolve = {("b", 9092): ("tap", 1)}.__getitem__
    old = make_response(cls(node_id=3, host="b", port=9092), api_version=3, correlation_id=1)
    new_old, changes = rewrite_response(old, lambda n, h, p: resolve((h, p)))
    assert (new_old.body.host, new_old.body.port) == ("tap", 1) and [c.node_id for c in changes] == [3]
    coord = cls.Coordinator(key="g", node_id=3, host="b", port=9092)
    missing = cls.Coordinator(key="h", node_id=-1, host="", port=-1, error_code=15)
    new = make_response(cls(coordinators=(coord, missing)), api_version=4, correlation_id=1)
    rewritten, changes = rewrite_response(new, lambda n, h, p: resolve((h, p)))
    assert [(c.host, c.port) for c in rewritten.body.coordinators] == [("tap", 1), ("", -1)]
    assert len(changes) == 1


@pytest.mark.parametrize("size", [-5, 200_000_000])
def test_a_bad_size_is_recorded_and_the_tap_goes_on(tap, size):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(struct.pack(">i", size) + b"garbage", prefixed=True)
        assert conn.receive(timeout=5) is None          # the broker hangs up, as Kafka does
    assert _wait(lambda: any(e.kind == "invalid-size" for e in tap.events))
    with RawConnection(tap.bootstrap_servers) as conn:      # still serving
        conn.send(_api_versions())
        assert conn.receive() is not None


def test_undecodable_frames_and_mid_frame_closes_are_recorded(tap):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(b"\x7f\x00\x00\x01\x00\x00\x00\x09garbage")   # unknown api key 32512
        assert conn.receive(timeout=5) is None
    assert _wait(lambda: len(tap.requests()) == 1)
    [bad] = tap.requests()
    assert bad.error and "unknown api key" in bad.error and bad.correlation_id == 9
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(struct.pack(">i", 100) + b"only part", prefixed=True)
    assert _wait(lambda: any(e.kind == "closed-mid-frame" for e in tap.events))
    [mid] = [e for e in tap.events if e.kind == "closed-mid-frame"]
    assert mid.detail == "client closed with 9 byte(s) of an incomplete 100-byte frame"


def test_what_is_kept_is_bounded(cluster):
    with Tap(cluster.bootstrap_servers, max_frames=3) as tap, RawConnection(tap.bootstrap_servers) as conn:
        for cid in range(4):
            conn.send(_api_versions(cid))
            assert conn.receive() is not None
        assert _wait(lambda: tap.dropped == 5)
        assert [f.index for f in tap.frames] == [5, 6, 7]
    request = len(_api_versions(0))
    with Tap(cluster.bootstrap_servers, max_bytes=2 * request) as tap, RawConnection(tap.bootstrap_servers) as conn:
        for cid in range(3):
            conn.send(_api_versions(cid))
            assert conn.receive() is not None
        assert _wait(lambda: tap.dropped == 5)      # a response is larger than a request: one frame fits
        assert [f.index for f in tap.frames] == [5]


def test_json_lines_and_pcap_read_back(tap, tmp_path):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(_api_versions(), _metadata())
        conn.receive(), conn.receive()
    assert _wait(lambda: len(tap.frames) == 4 and any(e.kind == "closed" for e in tap.events))
    lines = [json.loads(line) for line in tap.to_json_lines().splitlines()]
    frames = [d for d in lines if d["type"] == "frame"]
    assert [(d["direction"], d["api_name"]) for d in frames] == [
        ("request", "ApiVersions"), ("request", "Metadata"), ("response", "ApiVersions"), ("response", "Metadata")]
    [change] = frames[3]["rewritten"]
    assert frames[3]["body"]["brokers"][0]["port"] == int(change["upstream"].rsplit(":", 1)[1])  # as the broker sent it
    assert frames[0]["body"]["clientSoftwareName"] == "t" and bytes.fromhex(frames[0]["bytes"]) == tap.frames[0].frame
    assert [(d["kind"], d["detail"]) for d in lines if d["type"] == "event"][1:] == [
        ("closed", "client closed the connection")]      # once, by the side that closed first
    path = tmp_path / "tap.pcap"
    tap.write_pcap(path)
    back = read_pcap(path)
    assert [f.frame for f in back] == [f.forwarded or f.frame for f in tap.frames]
    client = tap.connections[0].client
    assert [f.source == client for f in back] == [True, True, False, False]


def test_read_pcap_refuses_bad_files(tmp_path):
    short = tmp_path / "short.pcap"
    short.write_bytes(b"\xd4\xc3\xb2\xa1")
    with pytest.raises(DecodeError, match="24-byte header"):
        read_pcap(short)
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 24)
    with pytest.raises(DecodeError, match="not a little-endian libpcap"):
        read_pcap(bad)
    truncated = tmp_path / "truncated.pcap"
    truncated.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + struct.pack("<IIII", 0, 0,
                                                                                                     999, 999))
    with pytest.raises(DecodeError, match="runs past the end"):
        read_pcap(truncated)


def test_the_tap_command_prints_frames_and_writes_both_files(cluster, tmp_path, capsys):
    import socket
    import threading

    from kafkalab.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jsonl, pcap = tmp_path / "tap.jsonl", tmp_path / "tap.pcap"
    result: list = []
    runner = threading.Thread(target=lambda: result.append(main([
        "tap", "--bootstrap-server", cluster.bootstrap_servers, "--listen", f"127.0.0.1:{port}", "--duration", "1.5",
        "--jsonl", str(jsonl), "--pcap", str(pcap)])))
    runner.start()
    for _ in range(100):
        try:
            conn = RawConnection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.02)
    with conn:
        conn.send(_metadata(7))
        assert decode_response(conn.receive(), 3, 9).body.brokers[0].port == port   # the bootstrap broker itself
    runner.join(10)
    assert result == [0]
    out = capsys.readouterr().out
    assert f"tap listening on 127.0.0.1:{port}" in out
    assert "conn 0 -> Metadata v9 correlation_id=7" in out and f"-> 127.0.0.1:{port}]" in out
    assert f"2 frame(s) on 1 connection(s), 0 dropped; tap ports: -d tcp.port=={port},kafka\n" in out
    assert len(jsonl.read_text().splitlines()) >= 3 and len(read_pcap(pcap)) == 2


def test_the_tap_command_refuses_a_bad_address(capsys):
    from kafkalab.cli import main

    assert main(["tap", "--bootstrap-server", "no-port", "--duration", "0"]) == 1
    assert "expected HOST:PORT, got 'no-port'" in capsys.readouterr().err


@pytest.mark.parametrize("api_key, version, body", [
    (10, 3, dict(key="tap-group", key_type=0)),
    (10, 4, dict(key_type=0, coordinator_keys=("tap-group", "other-group"))),
    (60, 0, dict(include_cluster_authorized_operations=False)),
])
def test_find_coordinator_and_describe_cluster_are_rewritten(cluster, tap, api_key, version, body):
    broker = cluster.broker(0).bound_endpoints[0]
    frame = encode_request(make_request(request_class(api_key)(**body), api_version=version, correlation_id=5,
                                        client_id="tap-test"))
    with RawConnection(tap.bootstrap_servers) as conn:
        for _ in range(50):    # the group coordinator may need a moment after startup
            conn.send(frame)
            got = decode_response(conn.receive(), api_key, version).body
            items = [got] if api_key == 10 and version < 4 else list(
                got.coordinators if api_key == 10 else got.brokers)
            if all(item.port >= 0 for item in items):
                break
            time.sleep(0.1)
    assert {(item.host, item.port) for item in items} == {tap.broker_ports[(broker.host, broker.port)]}
    assert _wait(lambda: tap.responses() and tap.responses()[-1].rewritten)
    assert {c.upstream for c in tap.responses()[-1].rewritten} == {(broker.host, broker.port)}


def test_the_notebook_view_lists_frames_and_ports(tap):
    with RawConnection(tap.bootstrap_servers) as conn:
        conn.send(_metadata(3))
        conn.receive()
    assert _wait(lambda: len(tap.frames) == 2)
    page = tap._repr_html_()
    (upstream, address), = tap.broker_ports.items()
    assert f"2 frame(s) on 1 connection(s), 0 dropped; ports: {upstream[0]}:{upstream[1]} &rarr; " \
           f"{address[0]}:{address[1]}" in page
    assert page.count("<td>Metadata</td>") == 2 and "<td>&larr;</td>" in page
    assert f"node 0 -&gt; {address[0]}:{address[1]}" in page


def test_read_pcap_keeps_the_frames_before_a_bad_size(tmp_path):
    from kafkalab.protocol import size_prefixed
    from kafkalab.trace import pcap

    flow = pcap._Flow(("127.0.0.1", 50000), ("127.0.0.1", 9092), 0)
    good = _api_versions(1)
    packets = [flow.packet("c", pcap._SYN), flow.packet("s", pcap._SYN | pcap._ACK),
               flow.packet("c", pcap._PSH | pcap._ACK, size_prefixed(good) + struct.pack(">i", -1)),
               flow.packet("c", pcap._PSH | pcap._ACK, size_prefixed(good))]
    path = tmp_path / "bad-size.pcap"
    path.write_bytes(pcap._GLOBAL.pack(pcap._MAGIC, 2, 4, 0, 0, 65535, 1)
                     + b"".join(pcap._record(1.0, p) for p in packets))
    assert [(f.source, f.frame) for f in read_pcap(path)] == [(("127.0.0.1", 50000), good)]
