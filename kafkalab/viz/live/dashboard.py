"""``ClusterDashboard(cluster)``: a live picture of a running cluster, refreshed several times a second.

Theory of operation
-------------------
The dashboard is one ``ipywidgets.HTML`` whose value is ``render_dashboard(read_cluster_state(cluster))``. A
:class:`~kafkalab.viz.live.refresh.Refresher` (its own daemon thread) reads the brokers' state on the cluster's
loop every ``interval_s`` seconds and assigns the new string only when it changed -- one widget, one message per
frame. It is the widget's only writer. Cells keep running while it refreshes: the state is read on the
cluster's loop in one short call, and the kernel's main thread is never involved.

It stops, leaving no thread behind, when the cluster stops (``cluster.is_running`` false), when the widget is
closed (``close()``; also when the same cluster gets a new dashboard -- re-running a cell) and at interpreter
exit (a kernel restart). A read that fails (the cluster's loop busy restarting a broker) shows the error in the
panel, never printed, and the next tick tries again. Each live frame ends
with "updated hh:mm:ss", so a view frozen by a dead kernel says how old it is.

Static rendering: ``snapshot()`` returns a :class:`~kafkalab.viz.live.static.Snapshot` of the current state
(``STABLE_SECTIONS`` by default, no clock), and the widget's own ``text/html`` fallback and ``repr`` are fixed
strings, so stored outputs stay the same from run to run.

Mirrors no Kafka class: it draws what ``kafka-topics --describe``, ``kafka-consumer-groups --describe`` and the
brokers' JMX metrics report.
"""
from __future__ import annotations

import html as html_module
import threading
import time
import weakref
from typing import Iterable, Optional

import ipywidgets

from kafkalab.viz.live.refresh import Refresher
from kafkalab.viz.live.render import SECTIONS, STABLE_SECTIONS, render_dashboard
from kafkalab.viz.live.state import ClusterState, cluster_is_running, read_cluster_state
from kafkalab.viz.live.static import Snapshot, stored_fallback

__all__ = ["ClusterDashboard", "DEFAULT_INTERVAL_S"]

#: four frames a second: LEO bars move smoothly enough, and the cost stays small (see benchmarks/live_widgets.py)
DEFAULT_INTERVAL_S = 0.25

_dashboards: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # cluster -> its live dashboard
_dashboards_lock = threading.Lock()


class ClusterDashboard(ipywidgets.HTML):
    """A live dashboard of ``cluster`` (brokers, partitions with LEO/HW bars, request rates, purgatories, groups).

    ``interval_s``: seconds between frames (at least 0.1); ``sections``: which parts to draw (see
    :data:`~kafkalab.viz.live.render.SECTIONS`); ``internal_topics``: also show ``__consumer_offsets`` and
    ``__transaction_state``; ``start=False`` leaves the refresher off (call :meth:`refresh` or :meth:`start`).
    """

    def __init__(self, cluster, *, interval_s: float = DEFAULT_INTERVAL_S, sections: Iterable[str] = SECTIONS,
                 internal_topics: bool = False, start: bool = True):
        self._sections = tuple(sections)
        render_dashboard(ClusterState((), -1, (), (), (), ()), self._sections)   # unknown sections fail here
        super().__init__(value=self._placeholder(cluster))
        self.cluster = cluster
        self.internal_topics = internal_topics
        self.state: Optional[ClusterState] = None
        self._last_frame = ""
        self.last_error: Optional[BaseException] = None
        self.refresher = Refresher(self._tick, interval_s, stop_when=self._gone, on_error=self._show_error,
                                   name=f"dashboard-{id(self):x}")
        with _dashboards_lock:
            previous = _dashboards.get(cluster) if _weakrefable(cluster) else None
            if _weakrefable(cluster):
                _dashboards[cluster] = self
        if previous is not None and previous is not self:
            previous.close()
        if start and cluster_is_running(cluster):
            self.refresher.start()

    # ------------------------------------------------------------------------------------------ frames
    def read_state(self) -> ClusterState:
        """The cluster's state now (read on its loop)."""
        return read_cluster_state(self.cluster, internal_topics=self.internal_topics)

    def refresh(self) -> ClusterState:
        """Read the state and show it (what the refresher does each tick); returns the state. While the refresher
        runs it is the widget's only writer: call this yourself only with ``start=False``."""
        state = self.read_state()
        self.state = state
        frame = render_dashboard(state, self._sections, footer=f"updated {time.strftime('%H:%M:%S')}")
        if frame != self._last_frame and self.comm is not None:
            self._last_frame = frame
            self.value = frame
        return state

    def _tick(self) -> None:
        """One refresher tick: a frame, or the error in the panel -- and the next tick tries again (a broker
        restarting can keep the cluster's loop busy for longer than a read may wait)."""
        try:
            self.refresh()
            self.last_error = None
        except Exception as exc:
            if self._gone():
                return                 # the cluster stopped under the read: the refresher ends by itself
            self.last_error = exc
            self._show_error(exc, final=False)
            self._last_frame = ""

    def _gone(self) -> bool:
        return self.comm is None or not cluster_is_running(self.cluster)

    def _show_error(self, exc: BaseException, final: bool = True) -> None:
        if self.comm is not None:
            what = "dashboard stopped" if final else "could not read the cluster (retrying)"
            self.value = (f'<div class="kl-dashboard-error" style="color:#c62828">{what}: '
                          f'{html_module.escape(type(exc).__name__)}: {html_module.escape(str(exc))}</div>')

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> "ClusterDashboard":
        """Start (or restart) refreshing."""
        self.refresher.start()
        return self

    def stop(self) -> None:
        """Stop refreshing; the view keeps its last frame."""
        self.refresher.stop()

    @property
    def running(self) -> bool:
        return self.refresher.running

    def close(self) -> None:
        """Stop refreshing, end the refresher's thread and close the widget (its view goes away)."""
        refresher = getattr(self, "refresher", None)
        if refresher is not None:
            refresher.stop()
        with _dashboards_lock:
            cluster = getattr(self, "cluster", None)
            if cluster is not None and _weakrefable(cluster) and _dashboards.get(cluster) is self:
                del _dashboards[cluster]
        super().close()

    # ------------------------------------------------------------------------------------------ static
    def snapshot(self, sections: Iterable[str] = STABLE_SECTIONS, *,
                 topics: Optional[Iterable[str]] = None) -> Snapshot:
        """A static picture of the cluster now (read afresh if it runs, else the last state read): deterministic
        for a fixed state. The default sections leave out request rates and purgatory sizes, which move even on
        an idle cluster; pass ``sections=SECTIONS`` for everything. ``topics`` keeps only those topics'
        partitions (a lab leaves out a topic whose placement the broker chose at random)."""
        state = self.read_state() if cluster_is_running(self.cluster) else self.state
        if state is None:
            return Snapshot(self._placeholder(self.cluster), "ClusterDashboard snapshot (no state)")
        if topics is not None:
            keep = set(topics)
            state = state._replace(partitions=tuple(p for p in state.partitions if p.topic in keep))
        up = sum(1 for b in state.brokers if b.status != "down")
        return Snapshot(render_dashboard(state, sections),
                        f"ClusterDashboard snapshot: {up}/{len(state.brokers)} brokers running, controller "
                        f"{state.controller}, {len(state.partitions)} partitions, {len(state.groups)} groups")

    @staticmethod
    def _placeholder(cluster) -> str:
        n = len(getattr(cluster, "brokers", {}) or {})
        return ('<div class="kl-dashboard" style="color:#555">ClusterDashboard: a live view of '
                f'{n} broker(s); it shows while the notebook runs (use <code>.snapshot()</code> for a stored '
                'picture).</div>')

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):      # (data, metadata)
            data = data[0]
        data = dict(data or {})
        n = len(getattr(self.cluster, "brokers", {}) or {})
        data["text/html"] = stored_fallback("ClusterDashboard", f"a live view of {n} broker(s), their partitions and "
                                            "groups (<code>.snapshot()</code> shows a picture that is stored)",
                                            "kl-dashboard")
        data["text/plain"] = repr(self)
        return data

    def __repr__(self) -> str:
        return "ClusterDashboard()"


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False
