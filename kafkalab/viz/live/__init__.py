"""kafkalab.viz.live -- live widgets on a running cluster: a dashboard, controls, and the refresher they share.

Theory of operation
-------------------
Everything here is ipywidgets 8 in JupyterLab 4, driven from a background thread so that views move while a
cell blocks: :mod:`.refresh` (the :class:`Refresher` every live widget uses), :mod:`.state` (the brokers' state
read in one pass on the cluster's loop), :mod:`.render` (deterministic HTML of that state), :mod:`.dashboard`
(:class:`ClusterDashboard`), :mod:`.actions` (what the controls do, no widgets) and :mod:`.controls`
(:class:`ClusterControls`), :mod:`.request_log` (:class:`LiveRequestLog`: each request as the brokers
complete it, with filters and a pause button) and :mod:`.progress` (:func:`progress`: a bar with a count and a rate
for long steps). Every live widget implements the static-rendering protocol of :mod:`.static`:
``snapshot()`` returns a frozen HTML picture, and its own stored ``text/html``/``text/plain`` are fixed strings,
so nbval and nbconvert see stable outputs.

The cluster is duck-typed: viz sits below :mod:`kafkalab.cluster` and never imports it.

Usage::

    from kafkalab.cluster import Cluster
    from kafkalab.viz import ClusterDashboard, ClusterControls
    cluster = Cluster(brokers=3).start()
    cluster.create_topic("events", partitions=3, replication_factor=3)
    ClusterDashboard(cluster)              # moves while producers write
    ClusterControls(cluster, topic="events")
"""
from kafkalab.viz.live.actions import ClusterActions, Outcome
from kafkalab.viz.live.controls import ClusterControls
from kafkalab.viz.live.dashboard import ClusterDashboard
from kafkalab.viz.live.progress import Progress, progress
from kafkalab.viz.live.refresh import Refresher, active_refreshers
from kafkalab.viz.live.request_log import LiveRequestLog
from kafkalab.viz.live.render import SECTIONS, STABLE_SECTIONS, render_dashboard
from kafkalab.viz.live.state import ClusterState, read_cluster_state
from kafkalab.viz.live.static import Snapshot

__all__ = ["ClusterDashboard", "ClusterControls", "ClusterActions", "Outcome", "Refresher", "active_refreshers",
           "render_dashboard", "SECTIONS", "STABLE_SECTIONS", "ClusterState", "read_cluster_state", "Snapshot",
           "LiveRequestLog", "Progress", "progress"]
