"""Metrics the way Kafka's Java code keeps them: sensors feeding windowed stats, read as named values.

Theory of operation
-------------------
A Kafka client does not keep a list of every request it made; it keeps a handful of numbers that summarise
them. Each thing that happens (a request written, a connection opened) is *recorded* on a **sensor** with a
value (its size in bytes, or 1) and the time. A sensor feeds one or more **stats**, and each stat is exposed
under a **metric name** (``request-rate`` in group ``producer-metrics``, tags ``{}``):

* ``CumulativeSum`` -- everything recorded since the start (the ``*-total`` metrics).
* ``Rate`` over a ``WindowedSum`` or ``WindowedCount`` -- recent values (or events) per second.
* ``Avg`` and ``Max`` -- over the same recent window (``request-size-avg``, ``request-size-max``).
* a ``Meter`` -- the pair Kafka registers most: ``<name>-rate`` and ``<name>-total``.

"Recent" is a set of ``metrics.num.samples`` samples (2 by default), each ``metrics.sample.window.ms`` long
(30 s). A sample is retired once nothing was recorded in it for ``samples x window``; a rate is the sum of the
kept samples divided by the time they span -- counted as at least ``samples - 1`` full windows, so a burst in
the first second of a client's life is spread over 30 s rather than reported as a huge rate. That is why a
client that sent 20 requests in one second shows ``request-rate`` 0.667 for a while, not 20.

Every value is measured on an injected ``Time`` (``MockTime`` in tests and labs), never the wall clock.

Mirrors ``clients/src/main/java/org/apache/kafka/common/metrics/`` (``Metrics``, ``Sensor``, ``MetricConfig``,
``MetricName``, ``stats/SampledStat``, ``Rate``, ``WindowedSum``, ``WindowedCount``, ``Avg``, ``Max``,
``CumulativeSum``, ``Meter``).
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, NamedTuple, Optional

from .time import SYSTEM, Time

__all__ = ["MetricConfig", "MetricName", "Metrics", "Sensor", "CumulativeSum", "WindowedSum", "WindowedCount",
           "Rate", "Avg", "Max", "Meter"]


class MetricConfig(NamedTuple):
    """``metrics.sample.window.ms`` and ``metrics.num.samples`` (Kafka's defaults: 30 s and 2)."""
    time_window_ms: int = 30_000
    samples: int = 2


class MetricName(NamedTuple):
    """A metric's identity: name, group and tags (``(("node-id", "node-0"),)``), hashable."""
    name: str
    group: str
    tags: tuple = ()

    @property
    def tag_dict(self) -> dict:
        return dict(self.tags)


class _Sample:
    __slots__ = ("value", "event_count", "start_ms", "last_event_ms")

    def __init__(self, initial: float, now_ms: int):
        self.reset(initial, now_ms)

    def reset(self, initial: float, now_ms: int) -> None:
        self.value, self.event_count, self.start_ms, self.last_event_ms = initial, 0, now_ms, now_ms

    def is_complete(self, now_ms: int, config: MetricConfig) -> bool:
        return now_ms - self.start_ms >= config.time_window_ms


class _SampledStat:
    """Values kept in ``samples + 1`` rotating samples (the extra one may overlap the window's start)."""
    initial = 0.0

    def __init__(self):
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if sample.is_complete(now_ms, config):
            sample = self._advance(config, now_ms)
        self._update(sample, value)
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(self.initial, now_ms))
        return self._samples[self._current]

    def _advance(self, config: MetricConfig, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (config.samples + 1)
        if self._current >= len(self._samples):
            self._samples.append(_Sample(self.initial, now_ms))
        else:
            self._samples[self._current].reset(self.initial, now_ms)
        return self._samples[self._current]

    def purge_obsolete(self, config: MetricConfig, now_ms: int) -> None:
        """Reset every sample with no event in the last ``samples x window`` ms."""
        expire_age = config.samples * config.time_window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(self.initial, now_ms)

    def oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(self.initial, now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        self.purge_obsolete(config, now_ms)
        return self._combine(self._samples)

    def _update(self, sample: _Sample, value: float) -> None:
        raise NotImplementedError

    def _combine(self, samples: list[_Sample]) -> float:
        raise NotImplementedError


class WindowedSum(_SampledStat):
    """The sum of the values recorded in the kept samples."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        return float(sum(s.value for s in samples))


class WindowedCount(WindowedSum):
    """The number of events recorded in the kept samples (each counts 1, whatever its value)."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += 1


class Avg(_SampledStat):
    """The mean of the values in the kept samples (NaN when there are none)."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, samples: list[_Sample]) -> float:
        count = sum(s.event_count for s in samples)
        return sum(s.value for s in samples) / count if count else math.nan


class Max(_SampledStat):
    """The largest value in the kept samples (NaN when there are none)."""
    initial = -math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value = max(sample.value, value)

    def _combine(self, samples: list[_Sample]) -> float:
        count = sum(s.event_count for s in samples)
        return max(s.value for s in samples) if count else math.nan


class CumulativeSum:
    """Everything recorded since the start; never forgets."""

    def __init__(self):
        self.total = 0.0

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        self.total += value

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        return self.total


class Rate:
    """A windowed stat per second: its value divided by the time its kept samples span, counted as at least
    ``samples - 1`` full windows (and at least 1 ms)."""

    def __init__(self, stat: Optional[_SampledStat] = None):
        self.stat = stat if stat is not None else WindowedSum()

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        self.stat.record(config, value, now_ms)

    def window_size_ms(self, config: MetricConfig, now_ms: int) -> int:
        self.stat.purge_obsolete(config, now_ms)
        elapsed = now_ms - self.stat.oldest(now_ms).start_ms
        least = config.samples - 1
        full_windows = elapsed // config.time_window_ms if config.time_window_ms else least
        if full_windows < least:
            elapsed += (least - full_windows) * config.time_window_ms
        return max(elapsed, 1)

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        value = self.stat.measure(config, now_ms)
        return value / (self.window_size_ms(config, now_ms) / 1000.0)


class Meter:
    """``<name>-rate`` and ``<name>-total`` from one recording. Over a ``WindowedCount`` the total counts
    events (1 each), as the rate does; over a ``WindowedSum`` both add the values."""

    def __init__(self, rate_name: MetricName, total_name: MetricName, *, count: bool = False):
        self.rate = Rate(WindowedCount() if count else WindowedSum())
        self.total = CumulativeSum()
        self.rate_name, self.total_name, self.counts_events = rate_name, total_name, count

    def named_stats(self) -> list[tuple[MetricName, object]]:
        return [(self.total_name, self.total), (self.rate_name, self.rate)]

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        self.rate.record(config, value, now_ms)
        self.total.record(config, 1.0 if self.counts_events else value, now_ms)


class Sensor:
    """A named recording point: each ``record`` goes to its stats, then to its parents' (Kafka's
    ``bytes-sent`` sensor has ``bytes-sent-received`` as parent: every byte counted is also a network op)."""

    def __init__(self, registry: "Metrics", name: str, parents: Iterable["Sensor"] = ()):
        self.registry, self.name, self.parents = registry, name, tuple(parents)
        self._stats: list = []

    def add(self, name: MetricName, stat) -> "Sensor":
        self._stats.append(stat)
        self.registry._register(name, lambda now_ms, s=stat: s.measure(self.registry.config, now_ms))
        return self

    def add_meter(self, meter: Meter) -> "Sensor":
        self._stats.append(meter)
        for name, stat in meter.named_stats():
            self.registry._register(name, lambda now_ms, s=stat: s.measure(self.registry.config, now_ms))
        return self

    def record(self, value: float = 1.0, now_ms: Optional[int] = None) -> None:
        now = self.registry.time.milliseconds() if now_ms is None else now_ms
        for stat in self._stats:
            stat.record(self.registry.config, value, now)
        for parent in self.parents:
            parent.record(value, now)


class Metrics:
    """The registry: sensors by name, and every metric by its ``MetricName``."""

    def __init__(self, config: Optional[MetricConfig] = None, time: Time = SYSTEM):
        self.config, self.time = config if config is not None else MetricConfig(), time
        self._sensors: dict[str, Sensor] = {}
        self._metrics: dict[MetricName, Callable[[int], float]] = {}

    def sensor(self, name: str, parents: Iterable[Sensor] = ()) -> Sensor:
        """The sensor of that name, created on first use."""
        if name not in self._sensors:
            self._sensors[name] = Sensor(self, name, parents)
        return self._sensors[name]

    def get_sensor(self, name: str) -> Optional[Sensor]:
        return self._sensors.get(name)

    def add_gauge(self, name: MetricName, read: Callable[[], float]) -> None:
        """A value read when asked (``connection-count``)."""
        self._register(name, lambda _now_ms: float(read()))

    def _register(self, name: MetricName, measure: Callable[[int], float]) -> None:
        if name in self._metrics:
            raise ValueError(f"a metric named {name} is already registered")
        self._metrics[name] = measure

    def metrics(self) -> dict[MetricName, float]:
        """Every metric's current value, measured now."""
        now = self.time.milliseconds()
        return {name: measure(now) for name, measure in self._metrics.items()}

    def value(self, name: str, group: str, **tags: str) -> float:
        """One metric's value now (tags as keyword arguments: ``node_id="node-0"`` for ``node-id``)."""
        key = MetricName(name, group, tuple((k.replace("_", "-"), v) for k, v in tags.items()))
        if key not in self._metrics:
            raise KeyError(f"no metric {key}")
        return self._metrics[key](self.time.milliseconds())
