"""What the control panel's buttons do, without any widget: each action drives the cluster and returns an
:class:`Outcome` (what happened, in Kafka's words).

Theory of operation
-------------------
:class:`ClusterActions` is the sans-widget core of :class:`~kafkalab.viz.live.controls.ClusterControls`: the
buttons only read their inputs and call a method here, then show the returned :class:`Outcome` next to the
button. Everything goes through the machinery the tests use:

* broker faults -- ``cluster.kill``, ``restart``, ``pause``, ``resume``, ``isolate`` and ``heal``
  (:mod:`kafkalab.cluster.faults`);
* ``produce`` -- kafkalab's own :class:`~kafkalab.clients.Producer` with the chosen ``acks``, ``n`` records
  whose keys cycle over ``key_spread`` distinct keys (0: no key, so the sticky partitioner fills one batch at a
  time); the outcome lists the acknowledged offsets per partition and the errors by Kafka's names. The
  producer is new for each click (so its metadata is fresh) and does not retry (``retries=0``, hence no
  idempotence): the outcome is the brokers' own first answer -- ``NOT_ENOUGH_REPLICAS`` for ``acks=all`` below
  ``min.insync.replicas`` -- not a delivery timeout after two minutes of retries;
* ``start_consumer``/``stop_consumer`` -- a :class:`~kafkalab.clients.Consumer` in a group, polling on a
  daemon thread of its own and committing as it goes (``enable.auto.commit``), so the dashboard shows the group,
  its member and its lag; its thread ends by itself when the cluster stops;
* ``alter_topic_config`` -- an ``IncrementalAlterConfigs`` SET through :class:`~kafkalab.clients.Admin`.

A failure never escapes as a traceback: it becomes an outcome with ``ok=False`` naming the error (an
``ApiException``'s Kafka error name, else the exception's type) -- a button must not print into a cell.

Mirrors no Kafka class: it plays the operator and the client applications of a demo.
"""
from __future__ import annotations

import collections
import threading
from typing import NamedTuple, Optional

from kafkalab.clients import Admin, ConfigResource, Consumer, Producer
from kafkalab.viz.live.state import cluster_is_running

__all__ = ["Outcome", "ClusterActions", "error_name", "ACKS_CHOICES", "BROKER_ACTIONS"]

ACKS_CHOICES = ("0", "1", "all")
BROKER_ACTIONS = ("kill", "restart", "pause", "resume", "isolate", "heal")
#: how long a control's produce waits for acknowledgements before reporting what failed (the producer's
#: ``delivery.timeout.ms``): shorter than the default two minutes, so a demo does not hang on a stalled cluster
PRODUCE_DELIVERY_TIMEOUT_MS = 15_000
PRODUCE_REQUEST_TIMEOUT_MS = 5_000


class Outcome(NamedTuple):
    ok: bool
    text: str
    detail: tuple = ()


def error_name(exc: BaseException) -> str:
    """Kafka's error name for an ``ApiException`` (``NOT_ENOUGH_REPLICAS``), else the exception's type name."""
    info = getattr(exc, "info", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) and name else type(exc).__name__


class _GroupConsumer:
    """One consumer of a group polling on its own daemon thread until stopped."""

    def __init__(self, cluster, group: str, topic: str):
        self.cluster = cluster
        bootstrap = cluster.bootstrap_servers
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "auto.offset.reset": "earliest", "client.id": f"kafkalab-controls-{group}"})
        self.consumer.subscribe([topic])
        self.records = 0
        self.error: Optional[BaseException] = None
        self._stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"kafkalab-controls-consumer-{group}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                if not cluster_is_running(self.cluster):    # the cluster stopped: nothing left to read
                    self._stopping.set()
                    self._close(1.0)
                    return
                self.records += len(self.consumer.poll(0.2))
        except Exception as exc:          # shown by the control, never printed
            self.error = exc

    def _close(self, timeout: float) -> None:
        try:
            self.consumer.close(timeout)
        except Exception:
            pass

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        self.thread.join(timeout)
        self._close(timeout)          # commits (enable.auto.commit) and leaves the group


class ClusterActions:
    """The control panel's actions on ``cluster`` (duck-typed: Kafka's harness methods), each returning an
    :class:`Outcome`."""

    def __init__(self, cluster, *, delivery_timeout_ms: int = PRODUCE_DELIVERY_TIMEOUT_MS):
        self.cluster = cluster
        self.delivery_timeout_ms = delivery_timeout_ms
        self.consumers: dict[str, _GroupConsumer] = {}

    # ------------------------------------------------------------------------------------------ brokers
    def broker_action(self, action: str, broker_id: int) -> Outcome:
        """``kill``, ``restart``, ``pause``, ``resume``, ``isolate`` or ``heal`` (every cut link) ``broker_id``."""
        if action not in BROKER_ACTIONS:
            return Outcome(False, f"unknown action {action!r}; choose from {', '.join(BROKER_ACTIONS)}")
        if action != "heal" and broker_id not in self.cluster.brokers:
            return Outcome(False, f"no broker {broker_id!r} in this cluster")
        try:
            if action == "kill":
                self.cluster.kill(broker_id)
                return Outcome(True, f"broker {broker_id} killed (kill -9): {self._controller_text()}")
            if action == "restart":
                self.cluster.restart(broker_id)
                return Outcome(True, f"broker {broker_id} restarted: {self._controller_text()}")
            if action == "pause":
                self.cluster.pause(broker_id)
                return Outcome(True, f"broker {broker_id} paused (kill -STOP)")
            if action == "resume":
                survived = self.cluster.resume(broker_id)
                return Outcome(True, f"broker {broker_id} resumed; its session "
                                     f"{'survived' if survived else 'had expired: it registered again'}")
            if action == "isolate":
                self.cluster.isolate(broker_id)
                return Outcome(True, f"broker {broker_id} isolated from the other brokers and from ZooKeeper")
            links = list(self.cluster.links.cut_links)
            self.cluster.heal()
            return Outcome(True, f"healed {len(links)} cut link(s)" if links else "no link was cut")
        except Exception as exc:
            return Outcome(False, f"{action} broker {broker_id} failed: {error_name(exc)}: {exc}")

    def _controller_text(self) -> str:
        controller = self.cluster.controller_id
        return f"controller is broker {controller}" if controller >= 0 else "no controller yet (election under way)"

    # ------------------------------------------------------------------------------------------ produce
    def produce(self, topic: str, n: int, acks: str = "all", key_spread: int = 0) -> Outcome:
        """Send ``n`` records to ``topic`` with ``acks`` and keys cycling over ``key_spread`` keys; wait for
        every acknowledgement (or failure)."""
        if acks not in ACKS_CHOICES:
            return Outcome(False, f"acks must be one of {', '.join(ACKS_CHOICES)}, not {acks!r}")
        if not isinstance(n, int) or n < 1 or not isinstance(key_spread, int) or key_spread < 0:
            return Outcome(False, "n must be a positive number of records and key spread a count of keys ≥ 0")
        if not topic:
            return Outcome(False, "name a topic")
        try:
            producer = Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "acks": acks,
                                 "client.id": "kafkalab-controls", "retries": 0, "enable.idempotence": False,
                                 "request.timeout.ms": min(PRODUCE_REQUEST_TIMEOUT_MS, self.delivery_timeout_ms // 2),
                                 "delivery.timeout.ms": self.delivery_timeout_ms})
        except Exception as exc:
            return Outcome(False, f"producer failed to start: {error_name(exc)}: {exc}")
        try:
            futures = [producer.send(topic, f"record-{i}".encode(),
                                     key=f"key-{i % key_spread}".encode() if key_spread else None)
                       for i in range(n)]
            producer.flush(self.delivery_timeout_ms / 1000 + 5)
            offsets: dict = collections.defaultdict(list)
            errors: collections.Counter = collections.Counter()
            for f in futures:
                try:
                    md = f.result(0)
                    offsets[md.partition].append(md.offset)
                except Exception as exc:
                    errors[error_name(exc)] += 1
        except Exception as exc:
            return Outcome(False, f"produce failed: {error_name(exc)}: {exc}")
        finally:
            producer.close(5)
        acked = sum(len(v) for v in offsets.values())
        parts = []
        for partition, offs in sorted(offsets.items()):
            known = [o for o in offs if o >= 0]
            where = f"offsets {min(known)}..{max(known)}" if known else "offsets unknown (acks=0)"
            parts.append(f"{topic}-{partition}: {len(offs)} ({where})")
        text = f"acks={acks}: {acked} of {n} acknowledged" + (" — " + "; ".join(parts) if parts else "")
        if errors:
            text += " — errors: " + ", ".join(f"{name} × {count}" for name, count in sorted(errors.items()))
        return Outcome(not errors, text, tuple(sorted((p, tuple(o)) for p, o in offsets.items())))

    # ------------------------------------------------------------------------------------------ consumers
    def start_consumer(self, group: str, topic: str) -> Outcome:
        """Start a consumer in ``group`` subscribed to ``topic`` (one per group from these controls)."""
        if not group or not topic:
            return Outcome(False, "name a group and a topic")
        if group in self.consumers:
            return Outcome(False, f"a consumer of group {group} is already running; stop it first")
        try:
            self.consumers[group] = _GroupConsumer(self.cluster, group, topic)
        except Exception as exc:
            return Outcome(False, f"consumer failed to start: {error_name(exc)}: {exc}")
        return Outcome(True, f"consumer started in group {group} on topic {topic}")

    def stop_consumer(self, group: str) -> Outcome:
        """Stop (and close: it leaves the group) the consumer of ``group`` started here."""
        running = self.consumers.pop(group, None)
        if running is None:
            return Outcome(False, f"no consumer of group {group!r} was started here")
        running.stop()
        text = f"consumer of group {group} stopped after {running.records} record(s)"
        if running.error is not None:
            return Outcome(False, f"{text}; it had failed: {error_name(running.error)}: {running.error}")
        return Outcome(True, text)

    # ------------------------------------------------------------------------------------------ configs
    def alter_topic_config(self, topic: str, name: str, value: Optional[str]) -> Outcome:
        """Set topic config ``name`` to ``value`` (None or "" deletes it: back to the broker's default)."""
        if not topic or not name:
            return Outcome(False, "name a topic and a config")
        value = None if value in (None, "") else str(value)
        try:
            with Admin({"bootstrap.servers": self.cluster.bootstrap_servers,
                        "client.id": "kafkalab-controls"}) as admin:
                admin.incremental_alter_configs({ConfigResource("topic", topic): {name: value}})
        except Exception as exc:
            cause = getattr(exc, "errors", None)
            if isinstance(cause, dict) and cause:
                exc = next(iter(cause.values()))
            return Outcome(False, f"{name} on {topic} not changed: {error_name(exc)}: {exc}")
        shown = "deleted (back to the default)" if value is None else f"= {value}"
        return Outcome(True, f"{name} {shown} on topic {topic}")

    # ------------------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Stop every consumer started here."""
        for group in list(self.consumers):
            self.stop_consumer(group)
