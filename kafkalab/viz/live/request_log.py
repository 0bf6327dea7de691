"""The live request log: every request the brokers handle, as it completes, in a notebook table.

Theory of operation
-------------------
Each broker keeps a request log (:class:`kafkalab.network.request_channel.RequestLog`): one
:class:`~kafkalab.network.request_channel.RequestRecord` per completed request, with the times Kafka's request
metrics name -- ``RequestQueueTimeMs`` (waiting for a handler), ``LocalTimeMs`` (the handler's own work),
``RemoteTimeMs`` (parked in a purgatory: an ``acks=all`` Produce waiting for the followers, a Fetch waiting for
``fetch.min.bytes``), ``ResponseSendTimeMs`` -- which is what Kafka's ``kafka.request.logger`` writes at DEBUG
(``RequestChannel.updateRequestMetrics`` and its "Completed request" line). :class:`LiveRequestLog` shows them
as they happen.

* **Subscribing.** The widget subscribes to each broker's log; the callback runs on the broker's loop and only
  appends ``(broker id, record)`` to a deque, so watching costs the broker almost nothing. A broker restarted by
  the cluster has a new log: each refresh re-subscribes where the log object changed.
* **Painting.** One :class:`~kafkalab.viz.live.refresh.Refresher` moves the new records into a bounded history
  and repaints one ``HTML`` widget, only when something changed. A request with remote time is highlighted: it
  waited in a purgatory.
* **Filters and pause.** A client-id filter (substring) and an API filter (names, comma separated) choose the
  rows, newest first; filters apply to the whole history, so narrowing shows earlier requests too. Pause freezes
  the table; records keep being collected and appear on resume.
* **Closing.** :meth:`LiveRequestLog.close` unsubscribes from every broker, stops the refresher and closes the
  widgets; the refresher also stops by itself when the widget is closed or the cluster is stopped. There is
  one live log per cluster or broker: a new one (a cell run again) closes the one before it, which would
  otherwise keep its thread and subscriptions with nothing left on the page to show them.
* **Static rendering.** :meth:`LiveRequestLog.snapshot` returns the current table as HTML, for outputs that
  must stay stable (nbval) or readable without a kernel (nbconvert).
"""
from __future__ import annotations

import collections
import html
import time as _time
from typing import Iterable, Optional

import ipywidgets as widgets
from IPython.display import HTML

from kafkalab.viz.live.refresh import Refresher
from kafkalab.viz.live.state import cluster_is_running
from kafkalab.viz.live.static import stored_fallback

_COLUMNS = ("time", "broker", "api", "v", "corr id", "client id", "listener", "queue ms", "local ms", "remote ms",
            "send ms", "total ms")
_CELL = "padding:1px 6px;text-align:right;white-space:nowrap"
_PARKED = "background-color:#fff3cd"      # a request that waited in a purgatory (remote time > 0)


def _request_logs(source) -> dict:
    """``{broker id: RequestLog}`` of a ``Cluster`` (its brokers that have started), of one ``KafkaServer``, or of
    anything with ``request_logs()`` (:class:`kafkalab.trace.views.TapRequestLogs`: what a tap relayed)."""
    if hasattr(source, "request_logs"):
        return source.request_logs()
    brokers = source.brokers.items() if hasattr(source, "brokers") else [(source.broker_id, source)]
    return {broker_id: b.channel.request_log for broker_id, b in brokers if getattr(b, "channel", None) is not None}


def _cluster_stopped(source) -> bool:
    """A ``Cluster`` that :meth:`stop` ended (``Cluster.is_running`` is false); a single broker never counts."""
    return hasattr(source, "brokers") and not cluster_is_running(source)


def _ms(value: Optional[float]) -> str:
    """A time in ms, or "—" where the source does not know it (a tap sees round trips, not the broker's parts)."""
    return "—" if value is None else f"{value:.1f}"


def _names(text: str) -> set:
    return {part.strip().lower() for part in text.split(",") if part.strip()}


class LiveRequestLog(widgets.VBox):
    """Every request a cluster's brokers (or one broker) handle, live: ``LiveRequestLog(cluster)`` in a cell."""

    _open: dict = {}     # id(source) -> the live log watching it (a cell run again replaces it)

    def __init__(self, source, *, max_rows: int = 50, history: int = 2_000, interval_s: float = 0.25,
                 client: str = "", api: str = "", start: bool = True):
        if max_rows < 1 or history < max_rows:
            raise ValueError(f"need 1 <= max_rows <= history, not max_rows={max_rows!r} history={history!r}")
        self.source = source
        self.max_rows = max_rows
        self._incoming: collections.deque = collections.deque(maxlen=history)  # appended on broker loops
        self._history: collections.deque = collections.deque(maxlen=history)   # the refresher's alone
        self._subscriptions: dict = {}       # broker id -> (RequestLog, unsubscribe)
        self.seen = 0                        # records taken from the brokers since creation
        self._dirty = True
        self.client_filter = widgets.Text(value=client, description="client id", placeholder="any (substring)")
        self.api_filter = widgets.Text(value=api, description="API", placeholder="any, e.g. Produce, Fetch")
        self.pause_button = widgets.ToggleButton(value=False, description="pause", icon="pause",
                                                 tooltip="freeze the table; requests keep being collected")
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        for control in (self.client_filter, self.api_filter, self.pause_button):
            control.observe(self._controls_changed, names="value")
        super().__init__([widgets.HBox([self.client_filter, self.api_filter, self.pause_button]),
                          self.status, self.table])
        self._refresher = Refresher(self.refresh, interval_s, stop_when=self._gone, name="request-log",
                                    stop_on_error=False)
        self.refresh()
        previous = LiveRequestLog._open.get(id(source))
        if previous is not None and previous.source is source:
            previous.close()
        LiveRequestLog._open[id(source)] = self
        if start:
            self._refresher.start()

    # -- what users call ----------------------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self.pause_button.value

    def pause(self) -> None:
        self.pause_button.value = True

    def resume(self) -> None:
        self.pause_button.value = False

    def set_filter(self, *, client: Optional[str] = None, api: Optional[str] = None) -> None:
        """Show only requests whose client id contains ``client`` and whose API is one of ``api`` ("Produce,
        Fetch"); an empty string shows all."""
        if client is not None:
            self.client_filter.value = client
        if api is not None:
            self.api_filter.value = api

    def rows(self) -> list:
        """The ``(broker id, RequestRecord)`` pairs the table shows now, newest first."""
        return self._visible(list(self._history))

    def snapshot(self) -> HTML:
        """The current table as static HTML (no widget), for outputs that must stay stable."""
        return HTML(self._render(self.rows()))

    def close(self) -> None:
        if not hasattr(self, "_refresher"):     # refused in __init__: ipywidgets' __del__ still closes
            return super().close()
        self._refresher.stop()
        if LiveRequestLog._open.get(id(self.source)) is self:
            del LiveRequestLog._open[id(self.source)]
        for _, unsubscribe in self._subscriptions.values():
            unsubscribe()
        self._subscriptions.clear()
        for w in (self.client_filter, self.api_filter, self.pause_button, self.status, self.table,
                  *self.children):
            w.close()
        super().close()

    @property
    def subscribed_brokers(self) -> list:
        return sorted(self._subscriptions)

    def __repr__(self) -> str:       # stable: ipywidgets' own repr lists every trait value
        return f"LiveRequestLog(brokers {', '.join(map(str, sorted(_request_logs(self.source)))) or 'none'})"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        # a stored output's fallback (nbconvert, a notebook opened without its kernel): nothing that varies
        bundle["text/html"] = stored_fallback(repr(self), "the live request log, each request as the brokers "
                                              "handle it (<code>.snapshot()</code> shows a table)")
        return bundle

    # -- the refresher's side -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """One frame: follow restarted brokers, take the new records, repaint if anything changed."""
        self._sync_subscriptions()
        while self._incoming and not self.paused:
            self._history.append(self._incoming.popleft())
            self.seen += 1
            self._dirty = True
        waiting = len(self._incoming)
        status = (f"{len(self.rows())} shown of {self.seen} requests"
                  + (f" · <b>paused</b>, {waiting} waiting" if self.paused else "")
                  + f" · brokers {', '.join(map(str, self.subscribed_brokers)) or 'none'}"
                  + f" · last update {_time.strftime('%H:%M:%S')}")
        if self._dirty:
            self._dirty = False
            self.table.value = self._render(self.rows())
        self.status.value = status

    def _sync_subscriptions(self) -> None:
        logs = _request_logs(self.source)
        for broker_id in list(self._subscriptions):
            log, unsubscribe = self._subscriptions[broker_id]
            if logs.get(broker_id) is not log:
                unsubscribe()
                del self._subscriptions[broker_id]
        for broker_id, log in logs.items():
            if broker_id not in self._subscriptions:
                self._subscriptions[broker_id] = (log, log.subscribe(self._receiver(broker_id)))

    def _receiver(self, broker_id: int):
        incoming = self._incoming

        def receive(record) -> None:          # on the broker's loop: keep it to one deque append
            incoming.append((broker_id, record))
        return receive

    def _gone(self) -> bool:
        return self.comm is None or _cluster_stopped(self.source)

    def _controls_changed(self, _change) -> None:
        self._dirty = True

    def _visible(self, history: Iterable) -> list:
        client, apis = self.client_filter.value.strip().lower(), _names(self.api_filter.value)
        shown = []
        for broker_id, r in reversed(list(history)):
            if client and client not in (r.client_id or "").lower():
                continue
            if apis and r.api_name.lower() not in apis:
                continue
            shown.append((broker_id, r))
            if len(shown) == self.max_rows:
                break
        return shown

    @staticmethod
    def _render(rows: list) -> str:
        head = "".join(f'<th style="{_CELL}">{c}</th>' for c in _COLUMNS)
        body = []
        for broker_id, r in rows:
            stamp = _time.strftime("%H:%M:%S", _time.localtime(r.received_ms / 1000)) + f".{r.received_ms % 1000:03d}"
            cells = (stamp, broker_id, r.api_name, r.api_version, r.correlation_id, r.client_id or "",
                     r.listener_name, _ms(r.request_queue_time_ms), _ms(r.local_time_ms), _ms(r.remote_time_ms),
                     _ms(r.response_send_time_ms), _ms(r.total_time_ms))
            style = f' style="{_PARKED}"' if (r.remote_time_ms or 0) > 0 else ""
            body.append(f"<tr{style}>" + "".join(f'<td style="{_CELL}">{html.escape(str(c))}</td>' for c in cells)
                        + "</tr>")
        if not body:
            body.append(f'<tr><td colspan="{len(_COLUMNS)}" style="{_CELL};text-align:left">'
                        "no requests yet</td></tr>")
        return ('<table class="kafkalab-request-log" style="border-collapse:collapse;font-family:monospace">'
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
