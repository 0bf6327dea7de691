"""NetworkClient: ApiVersions negotiation, pipelining, correlation ids, timeouts, reconnect backoff, tracing."""
import asyncio
import socket
import struct
import time

import pytest

from kafkalab.clients import Admin, Producer
from kafkalab.clients.api_versions import NodeApiVersions, UnsupportedVersionError
from kafkalab.clients.config import admin_config
from kafkalab.clients.errors import NetworkException, RequestTimedOut
from kafkalab.clients.network_client import NetworkClient
from kafkalab.common.loop_thread import LoopThread
from kafkalab.protocol import ApiKey, ErrorCode, request_class, response_class

from ._fake_broker import FakeBroker

AV = response_class(ApiKey.API_VERSIONS)


def api_versions(ranges, error=0):
    return AV(error_code=error, api_keys=tuple(AV.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                               for k, (lo, hi) in ranges.items()))


def run_client(bootstrap, coro_fn, **config):
    """Run ``coro_fn(client)`` on a fresh NetworkClient's own I/O thread."""
    io = LoopThread("test-network-client")
    cfg = admin_config({"bootstrap.servers": bootstrap, "reconnect.backoff.ms": 50, **config})
    events = []

    async def main():
        client = NetworkClient(cfg, tracer=events.append)
        try:
            return await coro_fn(client)
        finally:
            await client.close()
    try:
        return io.run(main(), 20), events
    finally:
        io.stop()


def test_highest_common_version_and_a_clear_error_when_there_is_none():
    nav = NodeApiVersions({ApiKey.METADATA: (0, 9), ApiKey.PRODUCE: (0, 2)}, "broker 1 at h:1")
    assert nav.latest_usable_version(ApiKey.METADATA) == 9
    with pytest.raises(UnsupportedVersionError, match=r"supports Produce v0-2 but kafkalab's client needs Produce v3"):
        nav.latest_usable_version(ApiKey.PRODUCE)
    with pytest.raises(UnsupportedVersionError, match="does not support Fetch"):
        nav.latest_usable_version(ApiKey.FETCH)


def test_unsupported_api_versions_version_falls_back_to_what_the_broker_offers():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS and version > 2:
            # KIP-511: answer in the v0 body format, listing the ApiVersions range we do support
            body = struct.pack(">hih", ErrorCode.UNSUPPORTED_VERSION, 1, ApiKey.API_VERSIONS) + struct.pack(">h", 0) \
                + struct.pack(">h", 2)
            return _with_corr(body)
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 2), ApiKey.METADATA: (0, 9)})
        return None

    corr_box = {}

    def _with_corr(body):
        return struct.pack(">i", corr_box["corr"]) + body

    def wrapped(key, version, request):
        corr_box["corr"] = fb.requests[-1][2]
        return handler(key, version, request)

    with FakeBroker(wrapped) as fb:
        async def go(client):
            conn = await client.connection(-1)
            return conn.api_versions, conn.version_for(ApiKey.METADATA)
        (nav, metadata_version), events = run_client(fb.bootstrap_servers, go)
    assert [(k, v) for k, v, _ in fb.requests] == [(18, 4), (18, 2)]
    assert metadata_version == 9 and nav.supports(ApiKey.METADATA)
    assert [e.api_version for e in events] == [4, 2] and events[0].response.body.error_code == 35


def test_producer_names_the_api_without_a_common_version():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 3), ApiKey.PRODUCE: (0, 2), ApiKey.METADATA: (0, 9),
                                 ApiKey.INIT_PRODUCER_ID: (0, 4)})
        if key == ApiKey.METADATA:
            M = response_class(ApiKey.METADATA)
            return M(brokers=(M.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=fb.port),),
                     controller_id=0, topics=(M.MetadataResponseTopic(name="t", partitions=(
                         M.MetadataResponsePartition(partition_index=0, leader_id=0),)),))
        if key == ApiKey.INIT_PRODUCER_ID:
            return response_class(key)(producer_id=1, producer_epoch=0)
        return None
    with FakeBroker(handler) as fb:
        with Producer({"bootstrap.servers": fb.bootstrap_servers, "linger.ms": 0}) as p:
            fut = p.send("t", b"x")
            with pytest.raises(UnsupportedVersionError, match="Produce v0-2"):
                fut.result(10)


def test_request_timeout_fails_the_request_and_the_connection():
    def handler(key, version, request):
        if key == ApiKey.API_VERSIONS:
            return api_versions({ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9)})
        return None                            # never answer anything else
    with FakeBroker(handler) as fb:
        async def go(client):
            conn = await client.connection(-1)
            body = request_class(ApiKey.METADATA)(topics=None)
            first = asyncio.ensure_future(conn.send(body, 9, timeout_ms=200))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(conn.send(body, 9, timeout_ms=5000))
            results = await asyncio.gather(first, second, return_exceptions=True)
            return results, conn.closed
        (results, closed), events = run_client(fb.bootstrap_servers, go)
    assert isinstance(results[0], RequestTimedOut) and results[0].retriable
    assert isinstance(results[1], NetworkException) and results[1].error_code == ErrorCode.NETWORK_EXCEPTION
    assert closed
    assert [e.error is not None for e in events] == [False, True, True]


def test_pipelining_and_correlation_ids_per_connection(cluster):
    async def go(client):
        conn = await client.connection(-1)
        body = request_class(ApiKey.METADATA)(topics=None)
        peak = 0
        tasks = [asyncio.ensure_future(conn.send(body)) for _ in range(8)]
        for _ in range(200):
            peak = max(peak, len(conn.in_flight))
            if all(t.done() for t in tasks):
                break
            await asyncio.sleep(0)
        responses = await asyncio.gather(*tasks)
        await client.update_metadata([])
        node = next(iter(client.metadata.cluster.brokers))
        other = await client.connection(node)
        await other.send(body)
        return peak, [r.correlation_id for r in responses]
    (peak, corrs), events = run_client(cluster.bootstrap_servers, go, **{})
    assert corrs == list(range(1, 9))                      # 0 was ApiVersions
    assert 1 < peak <= 5                                   # real pipelining, capped by max in flight (5)
    by_node = {}
    for e in events:
        by_node.setdefault(e.node_id, []).append(e.correlation_id)
    assert all(ids == list(range(len(ids))) for ids in by_node.values())   # each connection counts from 0
    assert len(by_node) == 2


def test_reconnect_backoff_grows():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]               # nobody listens here

    async def go(client):
        times = []
        for _ in range(4):
            t = time.monotonic()
            with pytest.raises(NetworkException, match="cannot connect"):
                await client.connection(-1)
            times.append(time.monotonic() - t)
        return times
    times, _ = run_client(f"127.0.0.1:{port}", go, **{"reconnect.backoff.ms": 40, "reconnect.backoff.max.ms": 400})
    assert times[0] < 0.03                       # the first attempt does not wait
    assert times[1] >= 0.04 * 0.8 and times[2] >= 0.08 * 0.8 and times[3] >= 0.16 * 0.8


def test_blocking_methods_work_while_the_caller_runs_an_event_loop(cluster):
    """As in a Jupyter kernel: the notebook thread already runs a loop, the client uses its own thread."""
    async def notebook_cell():
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            return admin.describe_cluster().controller_id
    assert asyncio.run(notebook_cell()) == 0


def test_two_clients_trace_separately_and_viz_renders_the_frames(cluster):
    from kafkalab.viz import show_frame
    with Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "one"}, trace=True) as a, \
            Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "two"}, trace=True) as b:
        a.describe_cluster()
        b.describe_cluster()
        b.describe_cluster()
        assert {e.client_id for e in a.trace} == {"one"} and {e.client_id for e in b.trace} == {"two"}
        assert len(b.trace) > len(a.trace)
        ev = a.trace.of("DescribeCluster")[0]
        assert ev.request.header.correlation_id == ev.response.correlation_id
        assert ev.elapsed_ms is not None and ev.elapsed_ms >= 0
        req = show_frame(ev.request_frame)
        resp = show_frame(ev.response_frame, kind="response", api_key=ev.api_key, api_version=ev.api_version)
        assert req.ok and resp.ok and "DescribeCluster" in req.text()
        assert a.trace.table()[0]["api"] == "ApiVersions"
