"""Kafka's windowed metrics (kafkalab.common.metrics) on a MockTime: the numbers Java's stats give."""
import math

import pytest

from kafkalab.common import MockTime
from kafkalab.common.metrics import Avg, Max, Meter, MetricConfig, MetricName, Metrics

G = "test-metrics"


def registry(window_ms=30_000, samples=2):
    time = MockTime()
    return Metrics(MetricConfig(window_ms, samples), time), time


def value(metrics, name):
    return metrics.metrics()[MetricName(name, G)]


def meter(metrics, sensor_name, base, count=False):
    return metrics.sensor(sensor_name).add_meter(
        Meter(MetricName(f"{base}-rate", G), MetricName(f"{base}-total", G), count=count))


def test_a_burst_is_spread_over_samples_minus_one_full_windows():
    metrics, time = registry()
    requests = meter(metrics, "requests-sent", "request", count=True)
    for _ in range(20):                     # 20 requests within one second
        requests.record(512)
        time.advance(50)
    # one second has passed, but the rate counts at least (2 - 1) full 30 s windows: 20 / 31 s
    assert value(metrics, "request-rate") == pytest.approx(20 / 31.0)
    assert value(metrics, "request-total") == 20        # a count meter counts events, not their values
    time.advance(44_000)                    # 45 s after the first event: more than one full window
    assert value(metrics, "request-rate") == pytest.approx(20 / 45.0)


def test_samples_without_events_for_samples_times_window_are_retired():
    metrics, time = registry()
    sent = meter(metrics, "bytes-sent", "outgoing-byte")
    sent.record(1000)
    time.advance(59_999)
    assert value(metrics, "outgoing-byte-rate") == pytest.approx(1000 / 59.999)
    time.advance(1)                         # 60 s = 2 samples x 30 s after the only event
    assert value(metrics, "outgoing-byte-rate") == 0.0
    assert value(metrics, "outgoing-byte-total") == 1000     # the total never forgets


def test_a_new_sample_starts_when_the_window_is_full_and_the_oldest_is_reused():
    metrics, time = registry(window_ms=1000, samples=2)
    sent = meter(metrics, "bytes-sent", "outgoing-byte")
    for _ in range(5):                      # one 100-byte write per second for 5 s
        sent.record(100)
        time.advance(1000)
    # at 5 s only the sample of the write at 4 s is younger than 2 samples x 1 s; it spans one full window
    assert value(metrics, "outgoing-byte-total") == 500
    assert value(metrics, "outgoing-byte-rate") == pytest.approx(100 / 1.0)


def test_avg_and_max_are_nan_until_something_is_recorded_and_after_it_expires():
    metrics, time = registry()
    sizes = metrics.sensor("requests-sent")
    sizes.add(MetricName("request-size-avg", G), Avg()).add(MetricName("request-size-max", G), Max())
    assert math.isnan(value(metrics, "request-size-avg")) and math.isnan(value(metrics, "request-size-max"))
    for size in (100, 300, 200):
        sizes.record(size)
    assert value(metrics, "request-size-avg") == 200 and value(metrics, "request-size-max") == 300
    time.advance(60_000)
    assert math.isnan(value(metrics, "request-size-avg")) and math.isnan(value(metrics, "request-size-max"))


def test_a_sensor_records_into_its_parents_and_names_are_unique():
    metrics, _ = registry()
    io_ops = meter(metrics, "bytes-sent-received", "network-io", count=True)
    sent = metrics.sensor("bytes-sent", [io_ops])
    sent.add_meter(Meter(MetricName("outgoing-byte-rate", G), MetricName("outgoing-byte-total", G)))
    sent.record(70)
    sent.record(30)
    assert value(metrics, "outgoing-byte-total") == 100 and value(metrics, "network-io-total") == 2
    with pytest.raises(ValueError, match="already registered"):
        meter(metrics, "other", "outgoing-byte")
    metrics.add_gauge(MetricName("connection-count", G), lambda: 3)
    assert metrics.value("connection-count", G) == 3.0
    with pytest.raises(KeyError):
        metrics.value("no-such-metric", G)


def test_a_zero_sample_window_measures_without_dividing_by_zero():
    metrics, time = registry(window_ms=0, samples=1)
    requests = meter(metrics, "requests-sent", "request", count=True)
    requests.record()
    time.advance(10)
    assert value(metrics, "request-rate") >= 0
