"""The network metrics every Kafka client keeps: connections, requests, bytes in and out, overall and per broker.

Theory of operation
-------------------
In the Java clients these numbers are kept by the ``Selector``, the layer that owns the sockets, so a producer,
a consumer and an admin client all have them, under the group ``<prefix>-metrics`` (``producer-metrics``,
``consumer-metrics``, ``admin-client-metrics``) and, per broker connection, ``<prefix>-node-metrics`` with the
tag ``node-id`` = ``node-<id>`` (``node--1`` for the first bootstrap address, whose real id is not known yet).
A broker's socket server keeps the same set (group ``socket-server-metrics``), which is why the names match.

The network client reports four kinds of event, with the client's injected time:

* a connection opened or closed -> ``connection-creation-rate/-total``, ``connection-close-rate/-total``; the
  open ones are ``connection-count``;
* a request written (its size on the wire, the 4-byte size prefix included) -> ``request-rate/-total``
  (requests), ``request-size-avg/-max``, ``outgoing-byte-rate/-total`` (bytes);
* a response read (likewise) -> ``response-rate/-total``, ``incoming-byte-rate/-total``;
* every write and read also counts as one ``network-io`` operation (one per frame here; Java counts each
  socket read or write).

Rates are per second over ``metrics.sample.window.ms`` x ``metrics.num.samples`` (:mod:`kafkalab.common.metrics`).

Mirrors ``clients/src/main/java/org/apache/kafka/common/network/Selector.java`` (``SelectorMetrics``).
"""
from __future__ import annotations

from typing import Callable

from kafkalab.common.metrics import Avg, Max, Meter, MetricName, Metrics

__all__ = ["SelectorMetrics", "node_tag"]


def node_tag(node_id: int) -> tuple:
    """The per-connection tag Kafka uses: ``(("node-id", "node-0"),)``."""
    return (("node-id", f"node-{node_id}"),)


class SelectorMetrics:
    """The sensors of one client's connections, registered in ``metrics`` under ``<prefix>-metrics``."""

    def __init__(self, metrics: Metrics, prefix: str, open_connections: Callable[[], int]):
        self.metrics = metrics
        self.group = f"{prefix}-metrics"
        self.node_group = f"{prefix}-node-metrics"
        g = self.group
        self.connection_closed = metrics.sensor("connections-closed").add_meter(self._meter(g, "connection-close"))
        self.connection_created = metrics.sensor("connections-created").add_meter(
            self._meter(g, "connection-creation"))
        network_io = metrics.sensor("bytes-sent-received").add_meter(self._meter(g, "network-io", count=True))
        self.bytes_sent = metrics.sensor("bytes-sent", [network_io]).add_meter(self._meter(g, "outgoing-byte"))
        self.requests_sent = self._size_sensor("requests-sent", g, (), "request")
        self.bytes_received = metrics.sensor("bytes-received", [network_io]).add_meter(
            self._meter(g, "incoming-byte"))
        self.responses_received = metrics.sensor("responses-received").add_meter(
            self._meter(g, "response", count=True))
        metrics.add_gauge(MetricName("connection-count", g), open_connections)

    @staticmethod
    def _meter(group: str, base: str, tags: tuple = (), count: bool = False) -> Meter:
        return Meter(MetricName(f"{base}-rate", group, tags), MetricName(f"{base}-total", group, tags), count=count)

    def _size_sensor(self, sensor_name: str, group: str, tags: tuple, base: str):
        sensor = self.metrics.sensor(sensor_name).add_meter(self._meter(group, base, tags, count=True))
        sensor.add(MetricName("request-size-avg", group, tags), Avg())
        return sensor.add(MetricName("request-size-max", group, tags), Max())

    def _node_sensors(self, node_id: int):
        """The per-node sensors, registered on the node's first connection (Java's
        ``maybeRegisterConnectionMetrics``)."""
        prefix = f"node-{node_id}."
        if self.metrics.get_sensor(prefix + "requests-sent") is None:
            tags, g = node_tag(node_id), self.node_group
            self._size_sensor(prefix + "requests-sent", g, tags, "request")
            self.metrics.sensor(prefix + "bytes-sent").add_meter(self._meter(g, "outgoing-byte", tags))
            self.metrics.sensor(prefix + "responses-received").add_meter(self._meter(g, "response", tags, True))
            self.metrics.sensor(prefix + "bytes-received").add_meter(self._meter(g, "incoming-byte", tags))
        get = self.metrics.get_sensor
        return (get(prefix + "requests-sent"), get(prefix + "bytes-sent"), get(prefix + "responses-received"),
                get(prefix + "bytes-received"))

    # -- what the network client reports ----------------------------------------------------------------------
    def record_connection_created(self, node_id: int) -> None:
        self.connection_created.record()
        self._node_sensors(node_id)

    def record_connection_closed(self, node_id: int) -> None:
        self.connection_closed.record()

    def record_request_sent(self, node_id: int, size_on_wire: int) -> None:
        node_requests, node_bytes, _, _ = self._node_sensors(node_id)
        now = self.metrics.time.milliseconds()
        self.bytes_sent.record(size_on_wire, now)
        node_bytes.record(size_on_wire, now)
        self.requests_sent.record(size_on_wire, now)
        node_requests.record(size_on_wire, now)

    def record_response_received(self, node_id: int, size_on_wire: int) -> None:
        _, _, node_responses, node_bytes = self._node_sensors(node_id)
        now = self.metrics.time.milliseconds()
        self.bytes_received.record(size_on_wire, now)
        node_bytes.record(size_on_wire, now)
        self.responses_received.record(size_on_wire, now)
        node_responses.record(size_on_wire, now)
