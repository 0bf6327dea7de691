"""LiveRequestLog against real requests to an in-process broker, without a browser."""
import threading
import time

import pytest

from kafkalab.cluster import Cluster
from kafkalab.clients import Admin
from kafkalab.network.request_channel import RequestRecord
from kafkalab.viz import LiveRequestLog
from kafkalab.viz.live.refresh import THREAD_NAME_PREFIX


def refresher_threads():
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME_PREFIX) and t.is_alive()]


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def talk(cluster, client_id):
    with Admin({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id}) as admin:
        admin.list_topics()


def subscribers(request_log):
    return list(request_log._subscribers)


def test_rows_appear_for_real_requests_as_the_refresher_runs(cluster):
    log = LiveRequestLog(cluster, interval_s=0.05)
    try:
        talk(cluster, "live-rows")
        assert wait_for(lambda: any(r.client_id == "live-rows" and r.api_name == "Metadata" for _, r in log.rows()))
        assert wait_for(lambda: "live-rows" in log.table.value)
        broker_id, first = [(b, r) for b, r in log.rows() if r.client_id == "live-rows"][-1]
        assert broker_id == 0 and first.listener_name == "PLAINTEXT" and first.api_name == "ApiVersions"
        for column in ("queue ms", "local ms", "remote ms", "send ms", "corr id", "listener"):
            assert column in log.table.value
    finally:
        log.close()


def test_filters_by_client_and_api_over_the_whole_history(cluster):
    log = LiveRequestLog(cluster, start=False)
    try:
        talk(cluster, "filter-a")
        talk(cluster, "filter-b")
        # a record is logged once the response is on the wire, so the client may have it a moment before
        assert wait_for(lambda: (log.refresh(), {("filter-a", "Metadata"), ("filter-b", "Metadata")}
                                 <= {(r.client_id, r.api_name) for _, r in log.rows()})[1])
        log.set_filter(client="filter-a")
        log.refresh()
        assert {r.client_id for _, r in log.rows()} == {"filter-a"}
        assert "filter-b" not in log.table.value
        log.set_filter(api="apiversions, Metadata")
        log.refresh()
        assert {r.api_name for _, r in log.rows()} == {"ApiVersions", "Metadata"}
        log.set_filter(client="", api="Metadata")
        log.refresh()
        assert {r.client_id for _, r in log.rows()} >= {"filter-a", "filter-b"}
        assert {r.api_name for _, r in log.rows()} == {"Metadata"}
    finally:
        log.close()


def test_pause_freezes_the_table_and_resume_shows_what_came_meanwhile(cluster):
    log = LiveRequestLog(cluster, start=False)
    try:
        log.refresh()
        log.pause()
        talk(cluster, "while-paused")
        assert wait_for(lambda: any(r.client_id == "while-paused" for r in cluster.broker(0).channel.request_log.records))
        log.refresh()
        assert "while-paused" not in {r.client_id for _, r in log.rows()}
        assert "paused" in log.status.value and "waiting" in log.status.value
        log.resume()
        assert wait_for(lambda: (log.refresh(), "while-paused" in {r.client_id for _, r in log.rows()})[1])
    finally:
        log.close()


def test_close_unsubscribes_and_leaves_no_thread(cluster):
    request_log = cluster.broker(0).channel.request_log
    before = subscribers(request_log)
    log = LiveRequestLog(cluster, interval_s=0.05)
    assert log.subscribed_brokers == [0]
    assert len(subscribers(request_log)) == len(before) + 1
    assert any(t.name == log._refresher.name for t in refresher_threads())
    log.close()
    assert subscribers(request_log) == before
    assert not log._refresher.running
    assert refresher_threads() == []


def test_follows_a_restarted_broker_and_stops_when_the_cluster_stops():
    c = Cluster(brokers=1).start()
    try:
        log = LiveRequestLog(c, interval_s=0.05)
        old = c.broker(0).channel.request_log
        c.restart(0)
        new = c.broker(0).channel.request_log
        assert new is not old
        assert wait_for(lambda: log._subscriptions.get(0, (None,))[0] is new)
        assert subscribers(old) == []
        talk(c, "after-restart")
        assert wait_for(lambda: "after-restart" in {r.client_id for _, r in log.rows()})
    finally:
        c.stop()
    assert wait_for(lambda: not log._refresher.running)
    log.close()
    assert refresher_threads() == []


def record(**overrides):
    fields = dict(connection_id="c", listener_name="PLAINTEXT", client_id="<b>x</b>", correlation_id=7, api_key=0,
                  api_version=9, api_name="Produce", request_queue_time_ms=0.1, local_time_ms=0.5,
                  remote_time_ms=0.0, response_send_time_ms=0.1, total_time_ms=0.7, request_bytes=100,
                  response_bytes=50, completed="response", received_ms=1_700_000_000_123)
    fields.update(overrides)
    return RequestRecord(**fields)


def test_a_request_parked_in_purgatory_is_highlighted_and_client_ids_are_escaped():
    parked = LiveRequestLog._render([(1, record(remote_time_ms=250.0))])
    quick = LiveRequestLog._render([(1, record())])
    assert "#fff3cd" in parked and "#fff3cd" not in quick
    assert "&lt;b&gt;x&lt;/b&gt;" in parked and "<b>x</b>" not in parked
    assert ".123<" in parked      # milliseconds of the arrival time


def test_snapshot_and_stored_text_are_static(cluster):
    log = LiveRequestLog(cluster, start=False)
    try:
        snap = log.snapshot()
        assert "<table" in snap._repr_html_()
        bundle = log._repr_mimebundle_()
        assert bundle["text/plain"] == "LiveRequestLog(brokers 0)"
        talk(cluster, "between-two-displays")
        assert wait_for(lambda: (log.refresh(), "between-two-displays" in log.table.value)[1])
        assert log._repr_mimebundle_()["text/html"] == bundle["text/html"]
        assert "<table" not in bundle["text/html"]
        assert 'class="kl-widget-fallback"' in bundle["text/html"] and "Run the cell" in bundle["text/html"]
        assert "application/vnd.jupyter.widget-view+json" in bundle
    finally:
        log.close()


def test_rejects_bad_sizes(cluster):
    with pytest.raises(ValueError, match="max_rows"):
        LiveRequestLog(cluster, max_rows=0, start=False)


def test_a_new_log_on_the_same_cluster_replaces_the_old_one(cluster):
    request_log = cluster.broker(0).channel.request_log
    before = subscribers(request_log)
    first = LiveRequestLog(cluster, interval_s=0.05)
    second = LiveRequestLog(cluster, interval_s=0.05)      # the cell run again
    try:
        assert not first._refresher.running and first.comm is None
        assert second._refresher.running
        assert len(subscribers(request_log)) == len(before) + 1
    finally:
        second.close()
    assert refresher_threads() == [] and subscribers(request_log) == before
