"""Connection quotas: how many connections a broker accepts, from whom, and how fast.

Theory of operation
-------------------
Every accepted connection is counted three ways -- per client IP address, per listener and for the whole broker
-- before its processor starts, and uncounted when it closes. The limits, Kafka's keys:

* ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``, ``host:count,host:count``): the
  connection one over an address's limit is accepted, counted, and closed at once ("Rejected connection from
  ..."). 0 is allowed only with overrides: then only the listed hosts may connect at all.
* ``max.connections`` (broker-wide; per listener ``listener.name.<listener>.max.connections``, which defaults to
  the broker-wide value): when a listener or the broker is full, its acceptor *waits* for a slot, holding the one
  connection it accepted; later ones wait in the kernel's backlog. The inter-broker listener is protected when
  there are several listeners: only its own listener limit applies, and when it pushes the broker over
  ``max.connections`` the least recently active connection on another listener is closed instead.
* ``max.connection.creation.rate`` (and ``listener.name.<listener>.max.connection.creation.rate``): accepting is
  delayed so that the rate of new connections, measured over Kafka's quota window (11 samples of 1 s, at least
  10 s counted), stays at the limit; one delay is at most one window (1 s). The inter-broker listener (when
  protected) is held only to its own listener rate.

The counting and the delay arithmetic here are synchronous (:class:`ConnectionQuotas`, :class:`RateSensor`); the
acceptor awaits :meth:`ConnectionQuotas.wait_for_connection_slot`.

Mirrors: ``core/src/main/scala/kafka/network/SocketServer.scala`` (``ConnectionQuotas``,
``ListenerConnectionQuota``), ``server/.../network/TooManyConnectionsException.java``,
``clients/.../metrics/stats/Rate.java`` + ``SampledStat.java`` and ``server-common/.../quota/QuotaUtils.java``.
"""
from __future__ import annotations

import asyncio
import collections
import re
import socket
from typing import Callable, Mapping, Optional

from kafkalab.common.config import ConfigException
from kafkalab.common.time import SYSTEM, Time

__all__ = ["ConnectionQuotas", "TooManyConnectionsException", "RateSensor", "parse_max_connections_per_ip_overrides",
           "QUOTA_WINDOW_NUM", "QUOTA_WINDOW_SIZE_MS"]

INT_MAX = 2147483647
#: Kafka's ``quota.window.num`` and ``quota.window.size.seconds`` defaults (kafkalab does not take the keys: they
#: also size client quotas, which it does not implement).
QUOTA_WINDOW_NUM = 11
QUOTA_WINDOW_SIZE_MS = 1000
_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")


class TooManyConnectionsException(Exception):
    """The connection one over ``max.connections.per.ip`` (or its override) for its address."""

    def __init__(self, ip: str, count: int):
        super().__init__(f"Too many connections from {ip} (maximum = {count})")
        self.ip, self.count = ip, count


def parse_max_connections_per_ip_overrides(text: str) -> dict[str, int]:
    """``"hostName:100,127.0.0.1:200"`` -> ``{"hostName": 100, "127.0.0.1": 200}`` (the last ``:`` splits, so
    IPv6 addresses work), with Kafka's start-up refusals."""
    result: dict[str, int] = {}
    name = "max.connections.per.ip.overrides"
    if not text:
        return result
    for item in re.split(r"\s*,\s*", text):
        host, sep, count = item.rpartition(":")
        if not sep:
            raise ConfigException(f"Error parsing configuration property '{name}': entry '{item}' has no "
                                  f"':' between host and count")
        try:
            result[host.strip()] = int(count.strip())
        except ValueError:
            raise ConfigException(f'For input string: "{count.strip()}"') from None
    invalid = [h for h in result if not _VALID_HOST.fullmatch(h)]
    if invalid:
        raise ConfigException(f"{name} contains invalid addresses : {','.join(invalid)}")
    return result


class RateSensor:
    """Kafka's ``Rate`` over a ``WindowedSum`` with an upper quota: :meth:`record` adds events and returns how
    long (ms) to wait to bring the rate back to the quota (0 if within it), at most ``max_throttle_ms``."""

    def __init__(self, quota: float, samples: int = QUOTA_WINDOW_NUM, window_ms: int = QUOTA_WINDOW_SIZE_MS):
        self.quota, self.samples, self.window_ms = quota, samples, window_ms
        self._samples: list = []       # [start_ms, last_event_ms, value]
        self._current = 0

    def _purge(self, now: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now - s[1] >= expire:
                s[0], s[1], s[2] = now, now, 0.0

    def record(self, value: float, now: int, check_quota: bool = True) -> int:
        if not self._samples:
            self._samples.append([now, now, 0.0])
        sample = self._samples[self._current]
        if now - sample[0] >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                self._samples.append([now, now, 0.0])
            else:
                self._samples[self._current][:] = [now, now, 0.0]
            sample = self._samples[self._current]
        sample[2] += value
        sample[1] = now
        if not check_quota or self.quota >= INT_MAX:
            return 0
        rate = self.measure(now)
        if rate <= self.quota:
            return 0
        return round((rate - self.quota) / self.quota * self.window_size(now))

    def window_size(self, now: int) -> int:
        self._purge(now)
        elapsed = now - min(s[0] for s in self._samples) if self._samples else 0
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now: int) -> float:
        self._purge(now)
        return sum(s[2] for s in self._samples) / (self.window_size(now) / 1000.0)


class ConnectionQuotas:
    """Connection counts per IP, per listener and per broker, and the limits on them.

    ``listener_limits`` maps each listener name to its ``(max.connections, max.connection.creation.rate)`` (the
    ``listener.name.<listener>.`` override, else the broker-wide value)."""

    def __init__(self, *, max_connections: int, max_connections_per_ip: int, per_ip_overrides: Mapping[str, int],
                 max_connection_creation_rate: int, listener_limits: Mapping[str, tuple[int, int]],
                 inter_broker_listener: Optional[str], time: Time = SYSTEM,
                 resolve: Callable[[str], str] = lambda host: socket.getaddrinfo(host, None)[0][4][0]):
        self.broker_max_connections = max_connections
        self.default_max_connections_per_ip = max_connections_per_ip
        self.per_ip_overrides = {resolve(host): count for host, count in per_ip_overrides.items()}
        self.inter_broker_listener = inter_broker_listener
        self.time = time
        self.max_throttle_ms = QUOTA_WINDOW_SIZE_MS
        self.broker_rate = RateSensor(max_connection_creation_rate)
        self.listener_max = {name: limits[0] for name, limits in listener_limits.items()}
        self.listener_rate = {name: RateSensor(limits[1]) for name, limits in listener_limits.items()}
        self.listener_counts: dict[str, int] = {name: 0 for name in listener_limits}
        self.counts: collections.Counter = collections.Counter()   # ip -> connections
        self.total_count = 0
        self.acceptor_blocked_ms = 0.0
        self._changed: Optional[asyncio.Event] = None

    # ---------------------------------------------------------------------------------------- decisions
    def protected_listener(self, listener: str) -> bool:
        return listener == self.inter_broker_listener and len(self.listener_counts) > 1

    def connection_slot_available(self, listener: str) -> bool:
        if self.listener_counts.get(listener, 0) >= self.listener_max.get(listener, INT_MAX):
            return False
        return self.protected_listener(listener) or self.total_count < self.broker_max_connections

    def max_connections_exceeded(self, listener: str) -> bool:
        """More connections than ``max.connections`` (after an inter-broker one): close one on ``listener``."""
        return self.total_count > self.broker_max_connections and not self.protected_listener(listener)

    def record_connection_and_get_throttle_ms(self, listener: str, now: int) -> int:
        """The delay before accepting one more connection on ``listener`` (the longer of the broker's and the
        listener's, capped at one quota window)."""
        broker = 0 if self.protected_listener(listener) else self.broker_rate.record(1.0, now)
        sensor = self.listener_rate.get(listener)
        own = sensor.record(1.0, now) if sensor is not None else 0
        return min(max(broker, own), self.max_throttle_ms)

    def max_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.default_max_connections_per_ip)

    # ---------------------------------------------------------------------------------------- counting
    def inc_counts(self, listener: str, ip: str) -> None:
        """Count a connection; raises TooManyConnectionsException (it stays counted until :meth:`dec`) when its
        address already had its maximum."""
        count = self.counts[ip]
        self.counts[ip] = count + 1
        self.total_count += 1
        if listener in self.listener_counts:
            self.listener_counts[listener] += 1
        limit = self.max_for(ip)
        if count >= limit:
            raise TooManyConnectionsException(ip, limit)

    def dec(self, listener: str, ip: str) -> None:
        count = self.counts.get(ip, 0)
        if count <= 1:
            self.counts.pop(ip, None)
        else:
            self.counts[ip] = count - 1
        self.total_count = max(0, self.total_count - 1)
        if self.listener_counts.get(listener, 0) > 0:
            self.listener_counts[listener] -= 1
        if self._changed is not None:
            self._changed.set()

    def get(self, ip: str) -> int:
        return self.counts.get(ip, 0)

    async def wait_for_connection_slot(self, listener: str) -> None:
        """Kafka's ``waitForConnectionSlot``: sit out the creation-rate delay, then wait until the listener and
        the broker have room (woken by every closed connection)."""
        start = self.time.milliseconds()
        throttle = max(self.record_connection_and_get_throttle_ms(listener, start), 0)
        if throttle <= 0 and self.connection_slot_available(listener):
            return
        end = start + throttle
        loop_start = self.time.milliseconds()
        if self._changed is None:
            self._changed = asyncio.Event()
        while True:
            remaining = max(end - self.time.milliseconds(), 0)
            if remaining <= 0 and self.connection_slot_available(listener):
                break
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining / 1000.0 if remaining > 0 else None)
            except asyncio.TimeoutError:
                pass
        self.acceptor_blocked_ms += self.time.milliseconds() - loop_start
