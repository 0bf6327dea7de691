"""``ClusterControls(cluster)``: buttons that break and drive a running cluster, each showing its outcome.

Theory of operation
-------------------
A panel of ipywidgets rows, one per kind of action; each row's button reads the inputs next to it, calls
:class:`~kafkalab.viz.live.actions.ClusterActions` (which does the work through the cluster's fault methods and
kafkalab's own clients) and writes the returned outcome into the ``HTML`` at the end of its row: green for what
happened, red with Kafka's error name for what failed. The effect itself shows on a
:class:`~kafkalab.viz.live.dashboard.ClusterDashboard` of the same cluster.

Rows: **broker** (a broker picker; kill, restart, pause, resume, isolate, heal), **produce** (topic, number of
records, ``acks``, key spread), **consumer** (group, topic; start, stop), **topic config** (topic, config name,
value; set). Clicks run on the kernel's main thread, after the cell that is running finishes (ipywidgets
delivers front-end messages then), and only there: the control panel's widgets have one writer.

Static rendering: ``snapshot()`` shows the last outcome of each row; ``repr`` is a fixed string.
``close()`` stops the consumers it started and closes its widgets; a new panel on the same cluster (a re-run
cell) closes the previous one.

Mirrors no Kafka class.
"""
from __future__ import annotations

import html
import threading
import weakref

import ipywidgets

from kafkalab.viz.live.actions import ACKS_CHOICES, BROKER_ACTIONS, ClusterActions, Outcome
from kafkalab.viz.live.dashboard import _weakrefable
from kafkalab.viz.live.static import Snapshot, stored_fallback

__all__ = ["ClusterControls"]

_OK, _FAILED = "#2e7d32", "#c62828"
_ROWS = ("broker", "produce", "consumer", "config")
_panels: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # cluster -> its control panel
_panels_lock = threading.Lock()


def _outcome_html(outcome: Outcome) -> str:
    colour = _OK if outcome.ok else _FAILED
    return (f'<span class="kl-outcome" data-ok="{str(outcome.ok).lower()}" style="color:{colour}">'
            f'{html.escape(outcome.text)}</span>')


class ClusterControls(ipywidgets.VBox):
    """Kill, restart, pause, resume, isolate and heal brokers; produce; run a consumer; change a topic config.

    ``topic``: the topic the produce, consumer and config rows start with; ``group``: the consumer row's group.
    """

    def __init__(self, cluster, *, topic: str = "", group: str = "dashboard-demo"):
        self.cluster = cluster
        self.actions = ClusterActions(cluster)
        with _panels_lock:                       # a re-run cell replaces the panel (and stops its consumers)
            previous = _panels.get(cluster) if _weakrefable(cluster) else None
            if _weakrefable(cluster):
                _panels[cluster] = self
        if previous is not None and previous is not self:
            previous.close()
        self.outcomes: dict[str, Outcome] = {}
        layout = ipywidgets.Layout(width="auto")
        brokers = sorted(cluster.brokers)
        self.broker = ipywidgets.Dropdown(options=[(f"broker {b}", b) for b in brokers],
                                          value=brokers[0] if brokers else None, description="broker")
        self.broker_buttons = {name: ipywidgets.Button(description=name, layout=layout) for name in BROKER_ACTIONS}
        for name, button in self.broker_buttons.items():
            button.on_click(lambda _b, name=name: self.do_broker_action(name))
        self.produce_topic = ipywidgets.Text(value=topic, description="topic")
        self.produce_count = ipywidgets.BoundedIntText(value=100, min=1, max=1_000_000, description="records")
        self.acks = ipywidgets.Dropdown(options=list(ACKS_CHOICES), value="all", description="acks")
        self.key_spread = ipywidgets.BoundedIntText(value=0, min=0, max=10_000, description="keys",
                                                    tooltip="distinct keys (0: no key)")
        self.produce_button = ipywidgets.Button(description="produce", button_style="primary", layout=layout)
        self.produce_button.on_click(lambda _b: self.do_produce())
        self.group = ipywidgets.Text(value=group, description="group")
        self.consumer_topic = ipywidgets.Text(value=topic, description="topic")
        self.start_consumer_button = ipywidgets.Button(description="start consumer", layout=layout)
        self.stop_consumer_button = ipywidgets.Button(description="stop consumer", layout=layout)
        self.start_consumer_button.on_click(lambda _b: self.do_start_consumer())
        self.stop_consumer_button.on_click(lambda _b: self.do_stop_consumer())
        self.config_topic = ipywidgets.Text(value=topic, description="topic")
        self.config_name = ipywidgets.Text(value="min.insync.replicas", description="config")
        self.config_value = ipywidgets.Text(value="2", description="value")
        self.config_button = ipywidgets.Button(description="set", layout=layout)
        self.config_button.on_click(lambda _b: self.do_alter_config())
        self.outcome_views = {row: ipywidgets.HTML(value="") for row in _ROWS}
        box = ipywidgets.HBox
        super().__init__(children=[
            box([self.broker, *self.broker_buttons.values(), self.outcome_views["broker"]]),
            box([self.produce_topic, self.produce_count, self.acks, self.key_spread, self.produce_button,
                 self.outcome_views["produce"]]),
            box([self.group, self.consumer_topic, self.start_consumer_button, self.stop_consumer_button,
                 self.outcome_views["consumer"]]),
            box([self.config_topic, self.config_name, self.config_value, self.config_button,
                 self.outcome_views["config"]]),
        ])

    # ------------------------------------------------------------------------------------------ actions
    def _show(self, row: str, outcome: Outcome) -> Outcome:
        self.outcomes[row] = outcome
        view = self.outcome_views[row]
        if view.comm is not None:
            view.value = _outcome_html(outcome)
        return outcome

    def do_broker_action(self, action: str) -> Outcome:
        """Apply ``action`` to the broker picked in the dropdown (what its button does)."""
        return self._show("broker", self.actions.broker_action(action, self.broker.value))

    def do_produce(self) -> Outcome:
        return self._show("produce", self.actions.produce(self.produce_topic.value.strip(), self.produce_count.value,
                                                          self.acks.value, self.key_spread.value))

    def do_start_consumer(self) -> Outcome:
        return self._show("consumer", self.actions.start_consumer(self.group.value.strip(),
                                                                  self.consumer_topic.value.strip()))

    def do_stop_consumer(self) -> Outcome:
        return self._show("consumer", self.actions.stop_consumer(self.group.value.strip()))

    def do_alter_config(self) -> Outcome:
        return self._show("config", self.actions.alter_topic_config(
            self.config_topic.value.strip(), self.config_name.value.strip(), self.config_value.value.strip()))

    # ------------------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Stop the consumers started here and close every widget of the panel."""
        actions = getattr(self, "actions", None)
        if actions is not None:
            actions.close()
        with _panels_lock:
            cluster = getattr(self, "cluster", None)
            if cluster is not None and _weakrefable(cluster) and _panels.get(cluster) is self:
                del _panels[cluster]
        for child in list(self.children):
            for widget in getattr(child, "children", ()):
                widget.close()
            child.close()
        super().close()

    # ------------------------------------------------------------------------------------------ static
    def snapshot(self) -> Snapshot:
        """The last outcome of each row, as static HTML."""
        rows = "".join(f"<tr><td style=\"padding:2px 8px\">{row}</td><td style=\"padding:2px 8px\">"
                       f"{_outcome_html(self.outcomes[row]) if row in self.outcomes else '—'}</td></tr>"
                       for row in _ROWS)
        return Snapshot(f'<table class="kl-controls">{rows}</table>',
                        f"ClusterControls snapshot: {len(self.outcomes)} action(s) shown")

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):
            data = data[0]
        data = dict(data or {})
        data["text/html"] = stored_fallback("ClusterControls", "buttons to kill, restart, pause, isolate and heal "
                                            "brokers, produce, consume and change topic configs", "kl-controls")
        data["text/plain"] = repr(self)
        return data

    def __repr__(self) -> str:
        return "ClusterControls()"
