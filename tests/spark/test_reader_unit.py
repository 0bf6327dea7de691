"""The stream reader's answers to Spark, with a fake cluster view: no JVM, no broker (PySpark must be importable)."""
from __future__ import annotations

import json
import pickle

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("pyspark_only")]

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}


class FakeOffsets:
    """Stands in for source.OffsetReader: partitions and earliest/latest offsets from dicts."""

    def __init__(self, earliest, latest):
        self.early, self.late, self.calls = dict(earliest), dict(latest), []

    def partitions(self):
        return sorted(self.late)

    def earliest(self, tps):
        self.calls.append(("earliest", sorted(tps)))
        return {tp: self.early[tp] for tp in tps}

    def latest(self, tps):
        self.calls.append(("latest", sorted(tps)))
        return {tp: self.late[tp] for tp in tps}

    def close(self):
        pass


def stream_reader(**options):
    from kafkalab.spark.offsets import parse_options
    from kafkalab.spark.source import KafkalabStreamReader
    return KafkalabStreamReader(parse_options({**BOOT, **options}, streaming=True))


def test_constructing_a_reader_opens_no_connection():
    reader = stream_reader()
    assert reader.offsets._admin is None                       # created on first use, in the runner


def test_initial_offset_is_resolved_once():
    reader = stream_reader(startingOffsets="latest")
    reader.offsets = fake = FakeOffsets({("t", 0): 0}, {("t", 0): 5})
    assert reader.initialOffset() == {"t": {"0": 5}}
    fake.late[("t", 0)] = 9                                    # records arrive between Spark's two calls
    assert reader.initialOffset() == {"t": {"0": 5}}


def test_latest_offset_unchanged_is_the_identical_json():
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
    reader = stream_reader()
    reader.offsets = FakeOffsets({("t", 0): 0, ("t", 1): 0}, {("t", 1): 4, ("t", 0): 4})
    start = json.loads(json.dumps({"t": {"0": 4, "1": 4}}))
    for limit in (ReadAllAvailable(), ReadMaxRows(3)):
        assert json.dumps(reader.latestOffset(start, limit)) == json.dumps(start)
    assert reader.reportLatestOffset() == {"t": {"0": 4, "1": 4}}


def test_latest_offset_obeys_the_limit_and_the_available_now_target():
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
    reader = stream_reader(maxOffsetsPerTrigger="4")
    assert reader.getDefaultReadLimit() == ReadMaxRows(4)
    assert stream_reader().getDefaultReadLimit() == ReadAllAvailable()
    reader.offsets = fake = FakeOffsets({("t", 0): 0, ("t", 1): 0}, {("t", 0): 8, ("t", 1): 8})
    reader.prepareForTriggerAvailableNow()
    fake.late = {("t", 0): 100, ("t", 1): 100}                 # arrived after the AvailableNow target was set
    start = {"t": {"0": 0, "1": 0}}
    assert reader.latestOffset(start, ReadMaxRows(4)) == {"t": {"0": 2, "1": 2}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 8, "1": 8}}


def test_new_partitions_start_at_earliest_and_partitions_are_picklable():
    from pyspark.sql.streaming.datasource import ReadMaxRows
    from kafkalab.spark.source import KafkaInputPartition
    reader = stream_reader(**{"kafka.fetch.max.wait.ms": "50", "includeHeaders": "true"})
    reader.offsets = fake = FakeOffsets({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10, ("t", 1): 13})
    start = {"t": {"0": 6}}
    end = reader.latestOffset(start, ReadMaxRows(10))
    assert ("earliest", [("t", 1)]) in fake.calls
    assert end == {"t": {"0": 8, "1": 7}}                      # backlogs 4 and 13 share 10 rows: 2 and 7
    parts = reader.partitions(start, end)
    assert [(p.topic, p.partition, p.start, p.end) for p in parts] == [("t", 0, 6, 8), ("t", 1, 0, 7)]
    p = pickle.loads(pickle.dumps(parts[1]))
    assert isinstance(p, KafkaInputPartition) and p.include_headers and p.fail_on_data_loss
    assert p.client_config == {"bootstrap.servers": "127.0.0.1:1", "fetch.max.wait.ms": "50"}
    assert reader.partitions(end, end) == []


def test_arrow_batches_match_sparks_arrow_schema():
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from kafkalab.clients import ConsumerRecord
    from kafkalab.spark.source import _Columns, source_schema
    cols = _Columns("t", 2, include_headers=True)
    cols.extend([ConsumerRecord("t", 2, 7, b"k", b"v", [("h", b"x"), ("n", None)], 1_700_000_000_123, 1),
                 ConsumerRecord("t", 2, 9, None, None, [], 0, 0)])
    batch = cols.batch()
    assert batch.schema == to_arrow_schema(source_schema(True), timezone="UTC")
    rows = batch.to_pylist()
    assert rows[0]["timestamp"].isoformat() == "2023-11-14T22:13:20.123000+00:00"
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
    assert rows[1]["headers"] is None and rows[1]["key"] is None and rows[1]["partition"] == 2
    assert batch.schema.field("offset").type == pa.int64() and len(cols) == 0


def test_unknown_kafka_options_fail_when_planned():
    from kafkalab.spark.offsets import SourceOptionError, parse_options
    from kafkalab.spark.source import check_client_config
    with pytest.raises(SourceOptionError, match="Did you mean 'fetch.max.wait.ms'"):
        check_client_config(parse_options({**BOOT, "kafka.fetch.max.wait": "1"}, streaming=True))
    check_client_config(parse_options({**BOOT, "kafka.isolation.level": "read_committed"}, streaming=True))
