"""ClusterDashboard and ClusterControls on a real three-broker cluster, without a browser: the widgets' values
are read in this process and compared with the brokers' own state."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafkalab.clients import Producer
from kafkalab.cluster import Cluster
from kafkalab.viz import ClusterControls, ClusterDashboard
from kafkalab.viz.live.refresh import THREAD_NAME_PREFIX, active_refreshers

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "replica.lag.time.max.ms": 1000,
             "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100, "zookeeper.session.timeout.ms": 2000,
             "auto.create.topics.enable": False}


def wait_for(condition, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout} s")


def dashboard_threads():
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME_PREFIX) and "-dashboard-" in t.name]


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=3, overrides=OVERRIDES, zk_tick_time_ms=500) as c:
        yield c


@pytest.fixture
def dashboard(cluster):
    d = ClusterDashboard(cluster, interval_s=0.1)
    wait_for(lambda: d.state is not None, what="the dashboard's first frame")
    yield d
    d.close()


@pytest.fixture
def controls(cluster):
    c = ClusterControls(cluster)
    c.actions.delivery_timeout_ms = 5000
    yield c
    c.close()


def shown(dashboard, topic, partition=0):
    state = dashboard.state
    return next((p for p in state.partitions if (p.topic, p.partition) == (topic, partition)), None) if state \
        else None


def matches_brokers(dashboard, cluster, topic):
    """The dashboard's last frame agrees with the brokers' own view of the partition."""
    view = shown(dashboard, topic)
    truth = cluster.partition_state(topic, 0)
    if view is None:
        return False
    logs = {r.broker_id: {"log_end_offset": r.log_end_offset, "high_watermark": r.high_watermark}
            for r in view.logs if r.log_end_offset >= 0}
    return (view.leader, list(view.isr), list(view.replicas), logs) == \
        (truth["leader"], truth["isr"], truth["replicas"], truth["logs"])


def test_produce_grows_the_shown_log_end_offsets(cluster, dashboard, controls):
    cluster.create_topic("grows", 1, 3)
    controls.produce_topic.value = "grows"
    controls.produce_count.value = 40
    controls.produce_button.click()
    outcome = controls.outcomes["produce"]
    assert outcome.ok and "acks=all: 40 of 40 acknowledged" in outcome.text and "offsets 0..39" in outcome.text
    assert "offsets 0..39" in controls.outcome_views["produce"].value     # shown next to the button
    wait_for(lambda: (v := shown(dashboard, "grows")) is not None and
             [r.log_end_offset for r in v.logs] == [40, 40, 40] and all(r.high_watermark == 40 for r in v.logs),
             what="LEO 40 and HW 40 on all three replicas")
    wait_for(lambda: matches_brokers(dashboard, cluster, "grows"), what="dashboard == brokers")
    assert "LEO 40" in dashboard.value and "broker 0: up" in dashboard.value


def test_kill_on_the_leader_moves_leadership_on_the_dashboard(cluster, dashboard, controls):
    cluster.create_topic("moves", 1, 3)
    wait_for(lambda: shown(dashboard, "moves") is not None, what="topic shown")
    old_leader = shown(dashboard, "moves").leader
    controls.broker.value = old_leader
    controls.broker_buttons["kill"].click()
    try:
        assert controls.outcomes["broker"].ok and f"broker {old_leader} killed" in controls.outcomes["broker"].text
        wait_for(lambda: shown(dashboard, "moves").leader not in (-1, old_leader) and
                 dashboard.state.brokers[old_leader].status == "down", what="a new leader")
        assert old_leader not in shown(dashboard, "moves").isr
        wait_for(lambda: matches_brokers(dashboard, cluster, "moves"), what="dashboard == brokers")
        assert f"broker {old_leader}: down" in dashboard.value
        assert dashboard.state.controller == cluster.controller_id
    finally:
        controls.broker_buttons["restart"].click()
    assert controls.outcomes["broker"].ok, controls.outcomes["broker"]
    wait_for(lambda: dashboard.state.brokers[old_leader].status == "up" and
             old_leader in shown(dashboard, "moves").isr, what="the broker back in the ISR")


def test_pause_isolate_and_heal_show_on_the_dashboard(cluster, dashboard, controls):
    controls.broker.value = 2
    controls.broker_buttons["isolate"].click()
    try:
        assert controls.outcomes["broker"].ok
        wait_for(lambda: dashboard.state.brokers[2].status == "isolated", what="isolated shown")
        assert dashboard.state.brokers[2].cut_links == (0, 1, "zk")
    finally:
        controls.broker_buttons["heal"].click()
    assert controls.outcomes["broker"].text == "healed 3 cut link(s)"
    wait_for(lambda: dashboard.state.brokers[2].status == "up", what="healed")
    controls.broker_buttons["pause"].click()
    try:
        wait_for(lambda: dashboard.state.brokers[2].status == "paused", what="paused shown")
    finally:
        controls.broker_buttons["resume"].click()
    assert controls.outcomes["broker"].ok and "resumed" in controls.outcomes["broker"].text
    wait_for(lambda: dashboard.state.brokers[2].status == "up", what="resumed")


def test_acks_all_below_min_insync_replicas_is_named(cluster, dashboard, controls):
    cluster.create_topic("strict", 1, 3)
    controls.config_topic.value = "strict"
    controls.config_name.value = "min.insync.replicas"
    controls.config_value.value = "3"
    controls.config_button.click()
    assert controls.outcomes["config"] == controls.actions.alter_topic_config("strict", "min.insync.replicas", "3")
    assert controls.outcomes["config"].text == "min.insync.replicas = 3 on topic strict"
    state = cluster.partition_state("strict", 0)
    follower = next(b for b in state["replicas"] if b != state["leader"])
    cluster.kill(follower)
    try:
        wait_for(lambda: len(cluster.partition_state("strict", 0)["isr"]) == 2, what="ISR shrank")
        controls.produce_topic.value = "strict"
        controls.produce_count.value = 5
        controls.acks.value = "all"
        controls.produce_button.click()
        outcome = controls.outcomes["produce"]
        assert not outcome.ok and "NOT_ENOUGH_REPLICAS × 5" in outcome.text
        assert "NOT_ENOUGH_REPLICAS" in controls.outcome_views["produce"].value
        controls.acks.value = "1"
        controls.produce_button.click()
        assert controls.outcomes["produce"].ok and "acks=1: 5 of 5 acknowledged" in controls.outcomes["produce"].text
    finally:
        cluster.restart(follower)


def test_bad_config_value_is_named_and_changes_nothing(cluster, controls):
    cluster.create_topic("configs", 1, 1)
    outcome = controls.actions.alter_topic_config("configs", "min.insync.replicas", "many")
    assert not outcome.ok and "INVALID_CONFIG" in outcome.text
    assert not controls.actions.alter_topic_config("configs", "no.such.config", "1").ok
    assert not controls.actions.broker_action("kill", 7).ok          # no such broker: nothing happens
    assert not controls.actions.produce("configs", 0).ok


def test_consumer_in_a_group_shows_with_its_lag(cluster, dashboard, controls):
    cluster.create_topic("consumed", 1, 3)
    assert controls.actions.produce("consumed", 30, "1").ok
    controls.group.value = "watchers"
    controls.consumer_topic.value = "consumed"
    controls.start_consumer_button.click()
    assert controls.outcomes["consumer"].ok
    controls.start_consumer_button.click()                            # one per group
    assert not controls.outcomes["consumer"].ok

    def group():
        return next((g for g in dashboard.state.groups if g.group_id == "watchers"), None)
    wait_for(lambda: group() is not None and group().state == "Stable" and len(group().members) == 1,
             what="the group with one member")
    wait_for(lambda: controls.actions.consumers["watchers"].records == 30, what="the consumer read all 30")
    controls.stop_consumer_button.click()
    assert controls.outcomes["consumer"].ok and "after 30 record(s)" in controls.outcomes["consumer"].text
    wait_for(lambda: group() is not None and group().lag == (("consumed", 0, 30, 30, 0),) and not group().members,
             what="committed at 30, lag 0, no member")
    assert "consumed-0: 0" in dashboard.value


def test_snapshot_is_static_and_deterministic_for_a_fixed_state(cluster, dashboard):
    cluster.create_topic("still", 2, 3)
    wait_for(lambda: shown(dashboard, "still", 1) is not None, what="topic shown")
    first = dashboard.snapshot()
    assert first == dashboard.snapshot()
    html = first._repr_html_()
    assert "still-0" in html and "still-1" in html and "updated" not in html and "requests/s" not in html
    assert repr(first).startswith("ClusterDashboard snapshot: 3/3 brokers running")
    assert "requests/s" in dashboard.snapshot(sections=("requests",))._repr_html_()
    cluster.create_topic("other", 1, 3)
    wait_for(lambda: shown(dashboard, "other") is not None, what="second topic shown")
    only_still = dashboard.snapshot(topics=["still"])
    assert "still-1" in only_still._repr_html_() and "other-0" not in only_still._repr_html_()
    assert "other-0" in dashboard.snapshot()._repr_html_()
    assert ", 2 partitions, " in repr(only_still)
    controls = ClusterControls(cluster)
    assert repr(dashboard) == "ClusterDashboard()" and repr(controls) == "ClusterControls()"
    assert controls.snapshot() == controls.snapshot() and "—" in controls.snapshot()._repr_html_()
    stored = controls._repr_mimebundle_()["text/html"]         # what a reopened notebook shows
    assert 'class="kl-controls kl-widget-fallback"' in stored and "Run the cell to see it live" in stored
    controls.close()


def test_a_trivial_operation_is_not_blocked_while_it_refreshes(cluster):
    cluster.create_topic("busy", 3, 3)
    board = ClusterDashboard(cluster, interval_s=0.1, internal_topics=True)     # 50 more partitions to read
    try:
        wait_for(lambda: board.refresher.ticks >= 3, what="refreshing")
        with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1"}) as producer:
            for _ in range(10):
                start = time.monotonic()
                sum(range(1000))                                      # a trivial cell
                cluster.call(lambda: None)                            # the cluster's loop answers
                producer.send("busy", b"x").result(2)                 # a Produce is answered
                assert time.monotonic() - start < 2.0
                time.sleep(0.05)
        assert board.running and board.refresher.error is None
    finally:
        board.close()


def test_closing_the_widget_stops_its_thread_and_a_new_dashboard_replaces_the_old(cluster):
    first = ClusterDashboard(cluster, interval_s=0.1)
    assert first.running and len(dashboard_threads()) == 1
    second = ClusterDashboard(cluster, interval_s=0.1)      # a re-run cell: the old one is closed
    assert not first.running and first.comm is None and second.running
    second.close()
    assert not second.running and second.comm is None
    assert not dashboard_threads() and not active_refreshers()


def test_a_new_control_panel_replaces_the_old_and_stops_its_consumers(cluster):
    cluster.create_topic("replaced", 1, 3)
    first = ClusterControls(cluster)
    assert first.actions.start_consumer("replacing", "replaced").ok
    thread = first.actions.consumers["replacing"].thread
    second = ClusterControls(cluster)                       # a re-run cell
    try:
        assert first.comm is None and not thread.is_alive() and not first.actions.consumers
        assert second.comm is not None
    finally:
        second.close()


def test_stopping_the_cluster_stops_the_refresher_and_the_consumers():
    with Cluster(brokers=1, overrides={"offsets.topic.replication.factor": 1,
                                       "group.initial.rebalance.delay.ms": 0}) as c:
        c.create_topic("ending", 1, 1)
        d = ClusterDashboard(c, interval_s=0.1)
        controls = ClusterControls(c)
        assert controls.actions.start_consumer("enders", "ending").ok
        consumer_thread = controls.actions.consumers["enders"].thread
        wait_for(lambda: d.refresher.ticks >= 1, what="a frame")
        assert d.running and consumer_thread.is_alive()
    wait_for(lambda: not d.running, timeout=5, what="the refresher's end")
    # (generous: its poll(0.2) returns on time even when a FindCoordinator to the stopping broker goes unanswered,
    # then it closes with a 1 s budget)
    wait_for(lambda: not consumer_thread.is_alive(), timeout=15, what="the consumer thread's end")
    controls.close()
    assert d.refresher.error is None                        # stopped, not failed
    assert not dashboard_threads()
    assert "broker 0:" in d.snapshot()._repr_html_()        # the last state read is still there
    d.close()


def test_a_kernel_restart_leaves_nothing_running(tmp_path):
    """A kernel restart ends the process without closing anything: it must exit at once, not hang on a thread."""
    script = tmp_path / "kernel.py"
    script.write_text(
        "from kafkalab.cluster import Cluster\n"
        "from kafkalab.viz import ClusterControls, ClusterDashboard\n"
        "c = Cluster(brokers=1, overrides={'offsets.topic.replication.factor': 1}).start()\n"
        "d = ClusterDashboard(c, interval_s=0.1)\n"
        "k = ClusterControls(c)\n"
        "print('running', d.running, flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert "running True" in out.stdout
