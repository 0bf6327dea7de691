"""``df.writeStream.format("kafkalab")`` (and ``df.write``): a sink that produces a DataFrame's rows to the lab broker.

Theory of operation
-------------------
The DataFrame decides what is written, column by column, as with Spark's Kafka sink:

============  ==================================  =====================================================
column        type                                meaning
============  ==================================  =====================================================
``value``     string or binary (required)         the record's value (strings are UTF-8 encoded)
``key``       string or binary, optional          the record key (null: no key)
``headers``   array<struct<key string,            record headers
              value binary>>, optional
``topic``     string, optional                    the topic of this row -- unless the option ``topic``
                                                  is set, which wins; one of the two is required
``partition`` int, optional                       an explicit partition (null: the partitioner picks)
============  ==================================  =====================================================

Each Spark task (one per DataFrame partition) runs :meth:`KafkalabStreamWriter.write` on an executor: it opens
a kafkalab :class:`~kafkalab.clients.Producer` with ``enable.idempotence=true`` and ``acks=all`` (retries of a
batch cannot duplicate it inside the log), sends every row, then **flushes and waits for every
acknowledgement** before returning a commit message -- a task succeeds only when all its records are in the
in-sync replicas. Any failed send fails the task, and Spark retries the task or the micro-batch. A retried task
sends its rows again, so the sink is *at least once* end to end (Kafka transactions would make it exactly
once; Spark's Kafka sink is at least once too). ``commit`` / ``abort`` run on the driver with the tasks'
messages; there is nothing left to do there but report.

``kafka.*`` options go to the producer with the prefix stripped (``kafka.linger.ms``, ``kafka.compression.type``
...), ``kafka.bootstrap.servers`` is required.

Mirrors Spark's ``KafkaWriter`` (schema validation), ``KafkaWriteTask`` and ``KafkaStreamingWrite`` /
``KafkaBatchWrite`` in ``connector/kafka-0-10-sql``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, List, Optional

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from kafkalab.spark.offsets import SourceOptionError, parse_sink_options

__all__ = ["KafkalabStreamWriter", "KafkalabBatchWriter", "SinkCommitMessage", "check_sink_schema", "write_rows"]

log = logging.getLogger("kafkalab.spark")


#: Settings of every sink producer: an acknowledged record is in all in-sync replicas, and a retried batch is
#: written once (Spark's Kafka sink leaves these to the user; kafkalab's sink fixes them).
PRODUCER_OVERRIDES = {"enable.idempotence": True, "acks": "all"}


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    records: int
    partitions: dict                 # "topic-partition" -> records written by this task


def check_sink_schema(schema: StructType, topic_option: Optional[str]) -> None:
    """The Kafka sink's column rules (``KafkaWriter.validateQuery``); a clear error names the column."""
    types = {f.name.lower(): f.dataType for f in schema.fields}

    def check(name, allowed, what):
        t = types.get(name)
        if t is not None and not isinstance(t, allowed):
            raise SourceOptionError(f"{name} attribute type must be {what}, not {t.simpleString()}")
    if "value" not in types:
        raise SourceOptionError("Required attribute 'value' not found: the DataFrame written to format('kafkalab') "
                                "needs a value column (string or binary)")
    check("value", (StringType, BinaryType), "a string or binary")
    check("key", (StringType, BinaryType), "a string or binary")
    check("topic", (StringType,), "a string")
    check("partition", (IntegerType,), "an int")
    h = types.get("headers")
    if h is not None:
        ok = isinstance(h, ArrayType) and isinstance(h.elementType, StructType) and \
            [f.name for f in h.elementType.fields] == ["key", "value"] and \
            isinstance(h.elementType.fields[0].dataType, StringType) and \
            isinstance(h.elementType.fields[1].dataType, BinaryType)
        if not ok:
            raise SourceOptionError(f"headers attribute type must be array<struct<key:string,value:binary>>, "
                                    f"not {h.simpleString()}")
    if topic_option is None and "topic" not in types:
        raise SourceOptionError("topic option required when no 'topic' attribute is present: set "
                                ".option('topic', ...) or add a topic column")


def _get(row, name):
    try:
        return row[name]
    except (KeyError, ValueError):
        return None


def write_rows(config: dict, default_topic: Optional[str], rows: Iterator) -> SinkCommitMessage:
    """Produce ``rows`` with an idempotent producer, flush, and fail if any record failed (executor side)."""
    from kafkalab.clients import Producer

    cfg = dict(config)
    cfg.update(PRODUCER_OVERRIDES)
    cfg.setdefault("client.id", "kafkalab-spark-sink")
    futures = []
    with Producer(cfg) as producer:
        for row in rows:
            topic = default_topic or _get(row, "topic")
            if not topic:
                raise ValueError("null topic present in the data: set .option('topic', ...) or fill the "
                                 "topic column")
            headers = _get(row, "headers")
            futures.append(producer.send(
                topic, _get(row, "value"), key=_get(row, "key"),
                headers=[(h["key"], h["value"]) for h in headers] if headers else None,
                partition=_get(row, "partition")))
        producer.flush()
    counts: dict = {}
    for f in futures:
        md = f.result()                  # raises the first failure: the task fails, Spark retries it
        name = f"{md.topic}-{md.partition}"
        counts[name] = counts.get(name, 0) + 1
    return SinkCommitMessage(len(futures), counts)


class _Writer:
    def __init__(self, options, schema: StructType):
        from kafkalab.clients.config import ConfigException, producer_config
        self.config, self.topic = parse_sink_options(options)
        check_sink_schema(schema, self.topic)
        try:
            producer_config({**self.config, **PRODUCER_OVERRIDES})     # fail when planned, not in a task
        except ConfigException as e:
            raise SourceOptionError(f"Invalid kafka.* option for the sink's producer: {e}") from None

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return write_rows(self.config, self.topic, iterator)

    @staticmethod
    def _total(messages) -> int:
        return sum(m.records for m in messages if isinstance(m, SinkCommitMessage))


class KafkalabStreamWriter(_Writer, DataSourceStreamWriter):
    """``writeStream.format("kafkalab")``: every task flushes its producer before it reports success."""

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        log.info("kafkalab sink: micro-batch %s wrote %d records", batchId, self._total(messages))

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        log.warning("kafkalab sink: micro-batch %s aborted after %d records were written (at least once: they "
                    "stay in the log and the batch is written again)", batchId, self._total(messages))


class KafkalabBatchWriter(_Writer, DataSourceWriter):
    """``df.write.format("kafkalab")``: the same, once."""

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        log.info("kafkalab sink: wrote %d records", self._total(messages))

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        log.warning("kafkalab sink: write aborted after %d records were written", self._total(messages))
