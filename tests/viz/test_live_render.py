"""The dashboard's static rendering: a pure function of a ClusterState (no cluster needed here)."""
from __future__ import annotations

import time

import pytest

from kafkalab.viz.live import ClusterDashboard, Snapshot
from kafkalab.viz.live.render import SECTIONS, STABLE_SECTIONS, render_dashboard
from kafkalab.viz.live.state import (ApiRate, BrokerState, ClusterState, GroupView, PartitionView, PurgatoryState,
                                     ReplicaState)


def _state(leo=(120, 120, 80)) -> ClusterState:
    brokers = (BrokerState(0, "up", True, ()), BrokerState(1, "paused", False, ()),
               BrokerState(2, "isolated", False, (0, 1, "zk")))
    logs = tuple(ReplicaState(b, e, 80) for b, e in zip((0, 1, 2), leo))
    partitions = (PartitionView("orders<&>", 0, 0, 3, (0, 1, 2), (0, 1), logs),)
    requests = (ApiRate("Produce", 42, 1.4, 2048.0, 512.0),)
    purgatories = (PurgatoryState(0, "Produce", 1, 1),)
    groups = (GroupView("billing", 0, "Stable", 2, (("m-1", "c-1"),), (("orders<&>", 0, 70, 80, 10),)),)
    return ClusterState(brokers, 0, partitions, requests, purgatories, groups)


def test_same_state_same_bytes():
    assert render_dashboard(_state()) == render_dashboard(_state())
    assert render_dashboard(_state()) != render_dashboard(_state(leo=(121, 120, 80)))


def test_shows_what_the_state_holds():
    page = render_dashboard(_state())
    for text in ("broker 0: up · controller", "broker 1: paused", "broker 2: isolated", "controller: broker 0",
                 "orders&lt;&amp;&gt;-0", "0 (epoch 3)", "[0, 1, 2]", "[0, 1]", "broker 2 (out of sync)",
                 "LEO 120", "HW 80", "Produce", "requests/s", "PurgatorySize", "billing", "Stable",
                 "orders&lt;&amp;&gt;-0: 10"):
        assert text in page, text
    assert "orders<&>" not in page          # names are escaped
    assert "<script" not in page


def test_a_replica_on_a_down_broker_says_so():
    state = _state()._replace(brokers=(BrokerState(0, "up", True, ()), BrokerState(1, "up", False, ()),
                                       BrokerState(2, "down", False, ())))
    assert "broker 2 (out of sync, down)" in render_dashboard(state, ["partitions"])
    assert "down)" not in render_dashboard(_state(), ["partitions"])


def test_stable_sections_leave_out_rates_and_purgatories():
    page = render_dashboard(_state(), STABLE_SECTIONS)
    assert "requests/s" not in page and "PurgatorySize" not in page and "LEO 120" in page
    assert set(STABLE_SECTIONS) < set(SECTIONS)


def test_unknown_section_is_refused():
    with pytest.raises(ValueError, match="unknown dashboard sections"):
        render_dashboard(_state(), ["brokers", "charts"])


def test_bars_scale_to_the_longest_log_and_split_at_the_high_watermark():
    page = render_dashboard(_state(leo=(200, 100, 80)), ["partitions"])      # HW 80 everywhere
    committed = "height:10px;background-color:#1565c0"
    written = "height:10px;background-color:#90caf9"
    assert f"width:88px;{committed}" in page and f"width:132px;{written}" in page      # 200: 80 + 120
    assert f"width:22px;{written}" in page and f"width:0px;{written}" in page           # 100 and 80
    assert "position:" not in page and "background:" not in page    # what the untrusted sanitiser keeps


def test_empty_cluster_reads_well():
    page = render_dashboard(ClusterState((), -1, (), (), (), ()))
    assert "no topics yet" in page and "no groups yet" in page and "election under way" in page


class _StoppedCluster:
    """Duck-typed: what the dashboard asks of a cluster that is not running."""
    brokers = {0: None, 1: None, 2: None}
    is_running = False


def test_widget_output_stored_in_a_notebook_is_fixed():
    d = ClusterDashboard(_StoppedCluster())
    try:
        assert not d.running                       # nothing to refresh from
        bundle = d._repr_mimebundle_()
        assert bundle["text/plain"] == repr(d) == "ClusterDashboard()"
        assert "live view of 3 broker(s)" in bundle["text/html"]
        assert 'class="kl-dashboard kl-widget-fallback"' in bundle["text/html"]     # what the browser test finds
        assert "Run the cell to see it live" in bundle["text/html"]
        assert "application/vnd.jupyter.widget-view+json" in bundle
        snap = d.snapshot()
        assert isinstance(snap, Snapshot) and repr(snap) == "ClusterDashboard snapshot (no state)"
        d.state = _state()                         # the last state read, as after the cluster stopped
        assert d.snapshot() == d.snapshot()
        assert d.snapshot()._repr_html_() == render_dashboard(_state(), STABLE_SECTIONS)
        assert repr(d.snapshot()).startswith("ClusterDashboard snapshot: 3/3 brokers running, controller 0")
    finally:
        d.close()


def test_widget_refuses_unknown_sections():
    with pytest.raises(ValueError):
        ClusterDashboard(_StoppedCluster(), sections=["nope"])


class _FlakyCluster:
    """Running, but its loop cannot be read (as while a broker restarts and holds it): every read fails."""
    brokers = {0: None}
    is_running = True

    def __init__(self):
        self.reads = 0

    def call(self, fn, timeout=None):
        self.reads += 1
        raise TimeoutError("the cluster's loop did not answer")


def test_a_failed_read_is_shown_in_the_panel_and_retried(capsys):
    cluster = _FlakyCluster()
    d = ClusterDashboard(cluster, interval_s=0.1)
    try:
        deadline = time.monotonic() + 5
        while cluster.reads < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert cluster.reads >= 3 and d.running                 # retried, still running
        assert "could not read the cluster (retrying): TimeoutError" in d.value
        assert isinstance(d.last_error, TimeoutError)
        cluster.is_running = False                              # the cluster stops: so does the refresher
        deadline = time.monotonic() + 5
        while d.running and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not d.running
    finally:
        d.close()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_isr_is_the_leaders_own_and_the_metadata_one_when_the_leader_is_down():
    from kafkalab.server.metadata_cache import PartitionState
    from kafkalab.viz.live.state import _partitions
    published = PartitionState("t", 0, 0, 4, (0, 1, 2), (0, 1, 2))    # the metadata has not heard yet
    cache = _Obj(topics=lambda: ["t"], partitions=lambda topic: [published])
    log = _Obj(log_end_offset=9, high_watermark=7)
    shrunk = _Obj(isr=(0, 1), log=log)                                 # the leader dropped broker 2
    leader = _Obj(metadata_cache=cache, replica_manager=_Obj(get_partition=lambda t, p: shrunk))
    (view,) = _partitions({0: leader}, {0: leader}, 0, False)
    assert view.isr == (0, 1) and view.logs[0] == (0, 9, 7) and view.logs[1] == (1, -1, -1)
    follower = _Obj(metadata_cache=cache, replica_manager=_Obj(get_partition=lambda t, p: None))
    (view,) = _partitions({0: leader, 1: follower}, {1: follower}, 1, False)     # leader 0 is down
    assert view.isr == (0, 1, 2)
