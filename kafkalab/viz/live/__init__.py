"""kafkalab.viz.live -- widgets that move while the cluster works (ipywidgets 8, JupyterLab 4).

Theory of operation
-------------------
Every live widget here is painted by one :class:`~kafkalab.viz.live.refresh.Refresher` thread (the only writer
of its widgets; it never prints and stops when the widget is closed), reads the brokers' own state, and offers
``.snapshot()``: its current state as static HTML, for outputs nbval compares and pages without a kernel.

* :class:`LiveRequestLog` -- each request as the brokers complete it (Kafka's request logger), with filters and
  a pause button;
* :func:`progress` -- a bar with a count and a rate for long steps (replays, topic fills, Spark queries).
"""
from kafkalab.viz.live.progress import Progress, progress
from kafkalab.viz.live.refresh import Refresher
from kafkalab.viz.live.request_log import LiveRequestLog

__all__ = ["LiveRequestLog", "Progress", "progress", "Refresher"]
