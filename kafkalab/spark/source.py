"""``spark.readStream.format("kafkalab")``: a Structured Streaming (and batch) source for the lab broker.

Theory of operation
-------------------
PySpark's Python Data Source API lets a Python class play the part that ``KafkaSourceProvider`` and
``KafkaMicroBatchStream`` play for Spark's own Kafka connector. Three kinds of process take part:

* the **planner** (on the driver, at ``.load()``) builds :class:`KafkalabDataSource` and asks its
  :meth:`~KafkalabDataSource.schema` -- the Kafka source's columns: ``key`` and ``value`` as binary,
  ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType`` and, with ``includeHeaders=true``,
  ``headers`` as ``array<struct<key: string, value: binary>>``;
* the **source runner** (one long-lived Python process per streaming query, on the driver) holds a
  :class:`KafkalabStreamReader` and answers, every micro-batch: ``latestOffset(start, limit)`` -- what is in
  the log now, capped by admission control (``maxOffsetsPerTrigger`` -> ``ReadMaxRows``, prorated over the
  partitions by :func:`.offsets.rate_limit`) and, under ``trigger(availableNow=True)``, never past the end
  offsets recorded by ``prepareForTriggerAvailableNow``; then ``partitions(start, end)`` -- one task per
  topic-partition with something to read. It talks to the cluster with a kafkalab
  :class:`~kafkalab.clients.Admin` (Metadata + ListOffsets), created on first use;
* the **executors** run :func:`read_range` for each task: a fresh kafkalab
  :class:`~kafkalab.clients.Consumer` without a group, ``assign`` + ``seek`` to the start, ``poll`` until the
  position reaches the end. Everything a task needs travels inside its :class:`KafkaInputPartition`
  (picklable), because the executor's copy of the reader never saw the runner's state.

Spark stores the end offsets of each micro-batch in the checkpoint before running it, so a restarted query
asks for exactly the ranges it has not finished -- the source keeps no progress of its own and commits
nothing to Kafka (``commit()`` is a no-op, as in Spark's Kafka source). Fetches return whole record batches
and may stop short, so :func:`read_range` drops offsets below the start, loops until the end, and follows the
consumer's position across gaps (compacted records, transaction markers). Rows leave the executor as Arrow
``RecordBatch``es whose schema is exactly Spark's ``to_arrow_schema`` of the source schema.

Mirrors Spark's ``KafkaSourceProvider``, ``KafkaMicroBatchStream``, ``KafkaBatch`` / ``KafkaRelation``,
``KafkaOffsetReaderAdmin``, ``KafkaBatchPartitionReader`` and ``KafkaRecordToRowConverter``
(``connector/kafka-0-10-sql``); Spark's own ``format("kafka")`` takes the same options.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator, Optional

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from kafkalab.spark.offsets import (SourceOptionError, SourceOptions, clamp_to_log, flatten, nest, normalize,
                                    parse_options, plan_ranges, rate_limit, report_data_loss, resolve_offsets,
                                    split_ranges)

try:            # admission control arrived in Spark 4.2 (SPARK-55304)
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
except ImportError as e:  # pragma: no cover - only with pyspark < 4.2
    raise ImportError("kafkalab.spark needs pyspark >= 4.2 (admission control for Python data sources); "
                      "install it with: pip install 'kafkalab[spark]'") from e

__all__ = ["KafkalabDataSource", "KafkalabStreamReader", "KafkalabBatchReader", "KafkaInputPartition",
           "source_schema", "read_range"]

log = logging.getLogger("kafkalab.spark")

#: Rows per Arrow batch handed to Spark.
ARROW_BATCH_ROWS = 8192


def source_schema(include_headers: bool = False) -> StructType:
    """The Kafka source's row schema (``KafkaRecordToRowConverter``)."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType(
            [StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


@dataclass
class KafkaInputPartition(InputPartition):
    """One task: read ``topic``-``partition`` offsets ``[start, end)``. Carries all the executor needs."""

    bootstrap_servers: str
    client_config: dict            # kafka.* options, prefix stripped
    topic: str
    partition: int
    start: int
    end: int                       # exclusive
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000


# -- the runner's view of the cluster -------------------------------------------------------------------------
class OffsetReader:
    """Partitions and their earliest/latest offsets via a lazily created kafkalab Admin (the role of Spark's
    ``KafkaOffsetReaderAdmin``). Runs on the driver only."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self._admin = None

    def _client(self):
        if self._admin is None:
            from kafkalab.clients import Admin
            from kafkalab.clients.config import ADMIN_CONFIGS
            cfg = {k: v for k, v in self.options.client_config.items() if k in ADMIN_CONFIGS}
            cfg.setdefault("client.id", "kafkalab-spark-offsets")
            self._admin = Admin(cfg)
        return self._admin

    def _call(self, fn):
        try:
            return fn(self._client())
        except Exception:
            self.close()                    # a fresh client next time (a killed broker, a timeout...)
            raise

    def partitions(self) -> list[tuple]:
        sub = self.options.subscription
        if sub.kind == "assign":
            return sub.select({})

        def go(admin):
            names = sub.wanted_topics(admin.list_topics())
            described = admin.describe_topics(names) if names else {}
            counts = {n: len(info.partitions) for n, info in described.items()
                      if not (sub.kind == "subscribePattern" and info.is_internal)}
            return sub.select(counts)
        return self._call(go)

    def _list(self, tps, spec: str) -> dict:
        if not tps:
            return {}
        from kafkalab.clients import TopicPartition
        level = str(self.options.client_config.get("isolation.level", "read_uncommitted")).lower()
        found = self._call(lambda admin: admin.list_offsets({TopicPartition(t, p): spec for t, p in tps},
                                                            isolation_level=level))
        return {(tp.topic, tp.partition): r.offset for tp, r in found.items()}

    def earliest(self, tps) -> dict:
        return self._list(list(tps), "earliest")

    def latest(self, tps) -> dict:
        return self._list(list(tps), "latest")

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            try:
                admin.close()
            except Exception:  # noqa: BLE001 - closing a broken client must not hide the real error
                pass


#: Settings every executor consumer gets, whatever the options say (the source owns positions and offsets).
CONSUMER_OVERRIDES = {"enable.auto.commit": False, "auto.offset.reset": "none",
                      "allow.auto.create.topics": False}


def check_client_config(options: SourceOptions) -> None:
    """Fail at planning time, not in a task, when a ``kafka.*`` option is not a consumer setting (kafkalab's
    clients reject unknown names and suggest the closest one)."""
    from kafkalab.clients.config import ConfigException, consumer_config
    try:
        consumer_config({**options.client_config, **CONSUMER_OVERRIDES})
    except ConfigException as e:
        raise SourceOptionError(f"Invalid kafka.* option for the source's consumer: {e}") from None


def _input_partitions(options: SourceOptions, ranges) -> list[KafkaInputPartition]:
    return [KafkaInputPartition(options.bootstrap_servers, dict(options.client_config), t, p, lo, hi,
                                options.fail_on_data_loss, options.include_headers, options.poll_timeout_ms)
            for t, p, lo, hi in split_ranges(ranges, options.min_partitions)]


# -- streaming ------------------------------------------------------------------------------------------------
class KafkalabStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reading with admission control and ``Trigger.AvailableNow`` (``KafkaMicroBatchStream``)."""

    def __init__(self, options: SourceOptions):      # the planner and the runner: no sockets here
        self.options = options
        self.offsets = OffsetReader(options)
        self._initial: Optional[dict] = None
        self._target: Optional[dict] = None          # AvailableNow: never read past this
        self._latest: Optional[dict] = None          # for reportLatestOffset

    def initialOffset(self) -> dict:
        # Spark asks twice for the first batch: answer the same both times.
        if self._initial is None:
            self._initial = resolve_offsets("startingOffsets", self.options.starting, self.offsets.partitions(),
                                            self.offsets.earliest, self.offsets.latest)
        return self._initial

    def getDefaultReadLimit(self):
        n = self.options.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = nest(self.offsets.latest(self.offsets.partitions()))

    def latestOffset(self, start: dict, limit) -> dict:
        start = normalize(start)
        latest = self._target if self._target is not None else \
            nest(self.offsets.latest(self.offsets.partitions()))
        self._latest = latest
        max_rows = getattr(limit, "max_rows", None) if isinstance(limit, ReadMaxRows) else None
        if max_rows is None:
            end = latest
        else:
            known = flatten(start)
            new = [tp for tp in flatten(latest) if tp not in known]
            end = rate_limit(start, latest, max_rows, nest(self.offsets.earliest(new)) if new else None)
        return start if end == start else end

    def reportLatestOffset(self) -> Optional[dict]:
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[KafkaInputPartition]:
        start, end = normalize(start), normalize(end)
        if start == end:
            return []
        known = flatten(start)
        new = [tp for tp in flatten(end) if tp not in known]
        earliest_new = nest(self.offsets.earliest(new)) if new else {}
        return _input_partitions(self.options, plan_ranges(start, end, earliest_new,
                                                           self.options.fail_on_data_loss))

    def read(self, partition: KafkaInputPartition):
        return read_range(partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: progress lives in Spark's checkpoint (and this call lags one batch behind)."""

    def stop(self) -> None:
        self.offsets.close()


# -- batch ----------------------------------------------------------------------------------------------------
class KafkalabBatchReader(DataSourceReader):
    """``spark.read.format("kafkalab")``: offsets ``startingOffsets`` (default earliest) to ``endingOffsets``
    (default latest), resolved once when the query is planned (``KafkaRelation``)."""

    def __init__(self, options: SourceOptions):
        self.options = options

    def partitions(self) -> list[KafkaInputPartition]:
        reader = OffsetReader(self.options)
        try:
            tps = reader.partitions()
            start = resolve_offsets("startingOffsets", self.options.starting, tps, reader.earliest, reader.latest)
            end = resolve_offsets("endingOffsets", self.options.ending, tps, reader.earliest, reader.latest)
        finally:
            reader.close()
        return _input_partitions(self.options, plan_ranges(start, end, {}, self.options.fail_on_data_loss))

    def read(self, partition: KafkaInputPartition):
        return read_range(partition)


class KafkalabDataSource(DataSource):
    """``format("kafkalab")`` with the options of Spark's Kafka source (``kafka`` itself is taken by Spark)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalab"

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", "false")).strip().lower() == "true"

    def schema(self) -> StructType:
        return source_schema(self._include_headers())

    def reader(self, schema: StructType) -> KafkalabBatchReader:
        options = parse_options(self.options, streaming=False)
        check_client_config(options)
        return KafkalabBatchReader(options)

    def streamReader(self, schema: StructType) -> KafkalabStreamReader:
        options = parse_options(self.options, streaming=True)
        check_client_config(options)
        return KafkalabStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool):
        from kafkalab.spark.sink import KafkalabBatchWriter
        return KafkalabBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from kafkalab.spark.sink import KafkalabStreamWriter
        return KafkalabStreamWriter(self.options, schema)


# -- the executor side ----------------------------------------------------------------------------------------
class _Columns:
    """Rows gathered column by column, turned into one Arrow RecordBatch at a time."""

    def __init__(self, topic: str, partition: int, include_headers: bool):
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        self.pa = pa
        self.schema = to_arrow_schema(source_schema(include_headers), timezone="UTC")
        self.topic, self.partition, self.include_headers = topic, partition, include_headers
        self.clear()

    def clear(self) -> None:
        self.keys, self.values, self.offsets, self.timestamps, self.types, self.headers = [], [], [], [], [], []

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, records) -> None:
        """Append a poll's records, one column at a time (one pass per column, no call per record)."""
        self.keys += [r.key for r in records]
        self.values += [r.value for r in records]
        self.offsets += [r.offset for r in records]
        self.timestamps += [r.timestamp * 1000 for r in records]     # ms -> us
        self.types += [r.timestamp_type for r in records]
        if self.include_headers:
            self.headers += [[{"key": k, "value": v} for k, v in r.headers] or None for r in records]

    def batch(self):
        pa, s, n = self.pa, self.schema, len(self.offsets)
        arrays = [pa.array(self.keys, s.field("key").type), pa.array(self.values, s.field("value").type),
                  pa.array([self.topic] * n, s.field("topic").type),
                  pa.array([self.partition] * n, s.field("partition").type),
                  pa.array(self.offsets, s.field("offset").type),
                  pa.array(self.timestamps, s.field("timestamp").type),
                  pa.array(self.types, s.field("timestampType").type)]
        if self.include_headers:
            arrays.append(pa.array(self.headers, s.field("headers").type))
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=s)


def read_range(p: KafkaInputPartition) -> Iterator:
    """Yield the records ``[p.start, p.end)`` of one partition as Arrow RecordBatches (runs on an executor)."""
    from kafkalab.clients import Consumer
    from kafkalab.clients.consumer import OffsetOutOfRangeError

    if p.end <= p.start:
        return
    config = dict(p.client_config)
    config.update({"bootstrap.servers": p.bootstrap_servers, **CONSUMER_OVERRIDES})
    config.setdefault("client.id", f"kafkalab-spark-{p.topic}-{p.partition}")
    tp = (p.topic, p.partition)
    columns = _Columns(p.topic, p.partition, p.include_headers)
    consumer = Consumer(config)
    try:
        consumer.assign([tp])
        consumer.seek(tp, p.start)
        position = p.start
        last_progress = time.monotonic()
        while position < p.end:
            try:
                records = consumer.poll(timeout=0.5)
            except OffsetOutOfRangeError as e:
                low = consumer.beginning_offsets([tp])
                high = consumer.end_offsets([tp])
                log_start, log_end = next(iter(low.values())), next(iter(high.values()))
                moved = clamp_to_log(p.topic, p.partition, position, p.end, log_start, log_end,
                                     p.fail_on_data_loss)
                if moved is None:
                    break
                if moved != position:
                    position = moved
                    last_progress = time.monotonic()
                elif (time.monotonic() - last_progress) * 1000 > p.poll_timeout_ms:
                    raise TimeoutError(f"{p.topic}-{p.partition} offset {position} stays out of range although "
                                       f"the log holds [{log_start}, {log_end})") from e
                else:                         # in range after all (a leader change): look again
                    time.sleep(0.1)
                consumer.seek(tp, position)
                continue
            if records:
                after = records[-1].offset + 1
                if records[0].offset < position or after > p.end:   # whole batches: trim to [position, end)
                    records = [r for r in records if position <= r.offset < p.end]
                columns.extend(records)
                if len(columns) >= ARROW_BATCH_ROWS:
                    yield columns.batch()
                position = max(position, after)
                last_progress = time.monotonic()
                continue
            now_at = consumer.position(tp)       # nothing returned: past a gap (compaction, transaction markers)?
            if now_at > position:
                position = now_at
                last_progress = time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > p.poll_timeout_ms:
                log_end = next(iter(consumer.end_offsets([tp]).values()))
                if log_end < p.end:
                    report_data_loss(f"Cannot fetch {p.topic}-{p.partition} offsets [{position}, {p.end}): the log "
                                     f"ends at {log_end}", p.fail_on_data_loss)
                    break
                raise TimeoutError(f"No records of {p.topic}-{p.partition} at offset {position} within "
                                   f"{p.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs), although the log "
                                   f"ends at {log_end}")
        if len(columns):
            yield columns.batch()
    finally:
        consumer.close()
