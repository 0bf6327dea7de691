"""The broker's per-topic meters of message-format conversions.

Theory of operation
-------------------
Kafka keeps a set of meters per topic and one for all topics together (``BrokerTopicStats``, JMX
``kafka.server:type=BrokerTopicMetrics,name=...[,topic=t]``). kafkalab keeps the two that tell what old clients
cost the broker: ``ProduceMessageConversionsPerSec`` (records a producer sent as magic 0/1 and the log rewrote
as v2, :mod:`kafkalab.storage.legacy_validator`) and ``FetchMessageConversionsPerSec`` (records rewritten from v2
for a Fetch v0-3, :mod:`kafkalab.records.conversion`). Like kafkalab's other meters, :meth:`metrics` reports
each one's count, by Kafka's name, with ``,topic=<t>`` for a topic's own.

Mirrors: ``BrokerTopicStats`` / ``BrokerTopicMetrics`` in ``core/src/main/scala/kafka/server/KafkaRequestHandler.scala``
and ``KafkaApis.updateRecordConversionStats``.
"""
from __future__ import annotations

import collections
import threading

__all__ = ["BrokerTopicStats", "PRODUCE_MESSAGE_CONVERSIONS", "FETCH_MESSAGE_CONVERSIONS"]

PRODUCE_MESSAGE_CONVERSIONS = "ProduceMessageConversionsPerSec"
FETCH_MESSAGE_CONVERSIONS = "FetchMessageConversionsPerSec"


class BrokerTopicStats:
    """Conversion counts per topic and for all topics."""

    def __init__(self):
        self._counts: dict = collections.Counter()
        self._lock = threading.Lock()

    def mark(self, name: str, topic: str, count: int) -> None:
        """Add ``count`` converted records of ``topic`` to meter ``name`` (and to the all-topics meter)."""
        if count <= 0:
            return
        with self._lock:
            self._counts[(name, None)] += count
            self._counts[(name, topic)] += count

    def metrics(self) -> dict:
        """``{"ProduceMessageConversionsPerSec": n, "ProduceMessageConversionsPerSec,topic=t": n, ...}``
        (counts; the all-topics meters are always present)."""
        with self._lock:
            out = {PRODUCE_MESSAGE_CONVERSIONS: self._counts[(PRODUCE_MESSAGE_CONVERSIONS, None)],
                   FETCH_MESSAGE_CONVERSIONS: self._counts[(FETCH_MESSAGE_CONVERSIONS, None)]}
            for (name, topic), count in sorted(self._counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
                if topic is not None:
                    out[f"{name},topic={topic}"] = count
        return out
