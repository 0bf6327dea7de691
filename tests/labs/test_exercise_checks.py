"""The exercise checks of labs 02, 03 and 06: the right answer passes, wrong answers fail with a useful hint,
``...`` is "not answered yet". Fast: no client or broker is started (lab 06's file readers get files written
here by the storage layer itself)."""
from __future__ import annotations

import struct
from collections import namedtuple

import pytest

from kafkalab.common.time import MockTime
from kafkalab.labs import lab02, lab03, lab06
from kafkalab.protocol import ApiKey
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.storage import LogConfig, UnifiedLog

K = ApiKey


# -- lab 02 ----------------------------------------------------------------------------------------------------------------
ADVERTISEMENT = {K.PRODUCE: (0, 9), K.METADATA: (0, 11), K.API_VERSIONS: (0, 3), K.INIT_PRODUCER_ID: (0, 4),
                 K.FETCH: (0, 12)}


def test_lab02_versions_for_right_wrong_and_todo():
    right = {"Metadata": 11, "Produce": 9, "InitProducerId": 4}
    assert lab02.check_versions_for(right, "confluent-kafka", ADVERTISEMENT).passed
    wrong = lab02.check_versions_for({**right, "Produce": 0}, "confluent-kafka", ADVERTISEMENT)
    assert wrong.status == "fail"
    assert "highest" in [p for p in wrong.parts if p.label == "Produce"][0].note
    assert lab02.check_versions_for({**right, "Metadata": ...}, "confluent-kafka", ADVERTISEMENT).status == "todo"


def test_lab02_versions_for_follows_the_data():
    older = {**ADVERTISEMENT, K.METADATA: (0, 7)}
    assert lab02.check_versions_for({"Metadata": 7}, "confluent-kafka", older).passed
    assert not lab02.check_versions_for({"Metadata": 11}, "confluent-kafka", older).passed


def test_lab02_negotiate_check():
    assert lab02.check_negotiate(lab02.negotiate).passed
    lowest = lab02.check_negotiate(lambda c, b: None if b is None else max(c[0], b[0]))
    assert not lowest.passed and "cases right" in lowest.message
    crashing = lab02.check_negotiate(lambda c, b: min(c[1], b[1]))       # forgets broker_range None
    assert not crashing.passed and any("raised TypeError" in p.note for p in crashing.parts)
    assert lab02.check_negotiate(...).status == "todo"
    assert not lab02.check_negotiate(42).passed


REFUSAL = bytes.fromhex("0000000a 0023 00000001 0012 0000 0003")


def test_lab02_retry_version_check():
    assert lab02.check_retry_version(3, REFUSAL).passed
    assert "error code" in lab02.check_retry_version(35, REFUSAL).hint
    assert "librdkafka" in lab02.check_retry_version(0, REFUSAL).hint
    other = REFUSAL[:14] + struct.pack(">h", 2)
    assert lab02.check_retry_version(2, other).passed and not lab02.check_retry_version(3, other).passed


def test_lab02_no_common_version_check():
    expected = {name for name in ("Produce", "Fetch", "ListOffsets", "OffsetCommit", "OffsetFetch")
                if lab02.negotiate(lab02.KAFKA_0_10_CLIENT[getattr(K, _const(name))],
                                   lab02.KAFKA_4_0[getattr(K, _const(name))]) is None}
    assert lab02.check_no_common_version(expected, lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0).passed
    partial = lab02.check_no_common_version(set(sorted(expected)[:1]), lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0)
    assert not partial.passed and "missing" in partial.hint
    wrong = lab02.check_no_common_version(expected | {"Metadata"}, lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0)
    assert not wrong.passed and any(p.label == "Metadata" and "share" in p.note for p in wrong.parts)
    assert not lab02.check_no_common_version({"Nope"}, lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0).passed
    assert lab02.check_no_common_version(..., lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0).status == "todo"


def _const(name: str) -> str:
    return {"Produce": "PRODUCE", "Fetch": "FETCH", "ListOffsets": "LIST_OFFSETS", "OffsetCommit": "OFFSET_COMMIT",
            "OffsetFetch": "OFFSET_FETCH"}[name]


# -- lab 03 ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [4096, 100, 104857600])
def test_lab03_max_request_size(limit):
    assert lab03.check_max_request_size(limit + 4, limit).passed
    assert "after the 4-byte size prefix" in lab03.check_max_request_size(limit, limit).hint
    assert "the other way round" in lab03.check_max_request_size(limit - 4, limit).hint
    assert "off by one" in lab03.check_max_request_size(limit + 5, limit).hint


SCENARIO = {"A": [("A1 Fetch", 500), ("A2 Metadata", 1)],
            "B": [("B1 Produce", 5), ("B2 Fetch", 200), ("B3 ApiVersions", 1)],
            "C": [("C1 Metadata", 2)]}


def test_lab03_response_order():
    right = ["C1 Metadata", "B1 Produce", "B2 Fetch", "B3 ApiVersions", "A1 Fetch", "A2 Metadata"]
    assert lab03.response_order(SCENARIO) == right
    assert lab03.check_response_order(right, SCENARIO).passed
    by_time_alone = ["A2 Metadata", "B3 ApiVersions", "C1 Metadata", "B1 Produce", "B2 Fetch", "A1 Fetch"]
    r = lab03.check_response_order(by_time_alone, SCENARIO)
    assert not r.passed and any(p.label == "connection A" and p.status == "fail" for p in r.parts)
    assert not lab03.check_response_order(right[:-1], SCENARIO).passed
    assert lab03.check_response_order(..., SCENARIO).status == "todo"


def test_lab03_match_responses():
    in_flight = {19: ("ListOffsets", 7), 17: ("Metadata", 12), 20: ("ApiVersions", 3), 18: ("Produce", 9)}
    frames = lab03.response_frames(in_flight)
    right = [in_flight[struct.unpack_from(">i", f, 4)[0]][0] for f in frames]
    assert right == ["Metadata", "Produce", "ListOffsets", "ApiVersions"]
    assert lab03.check_match_responses(right, in_flight, frames).passed
    assert lab03.check_match_responses(tuple(right), in_flight, frames).passed
    dict_order = lab03.check_match_responses([v[0] for v in in_flight.values()], in_flight, frames)
    assert not dict_order.passed and "order of the dict" in dict_order.hint
    assert not lab03.check_match_responses(right[:2], in_flight, frames).passed


Record = namedtuple("Record", "client_id connection_id")


def test_lab03_connections_per_broker():
    records = [(0, Record("me", "c1")), (0, Record("me", "c1")), (0, Record("me", "c2")), (1, Record("me", "c3")),
               (1, Record("other", "c4")), (2, Record("other", "c5"))]
    assert lab03.check_connections_per_broker({0: 2, 1: 1}, records, "me").passed
    one_each = lab03.check_connections_per_broker({0: 1, 1: 1}, records, "me")
    assert not one_each.passed and "bootstrap" in one_each.hint
    assert "one entry per broker" in lab03.check_connections_per_broker({0: 2, 1: 1, 2: 1}, records, "me").hint


def test_lab03_produce_rates():
    row = {"api_name": "Produce", "requests": 4, "request_bytes": 1000, "response_bytes": 240}
    right = {"avg_request_bytes": 250.0, "request_bytes_per_sec": 100.0}
    assert lab03.check_produce_rates(right, row, 10.0).passed
    r = lab03.check_produce_rates({"avg_request_bytes": 250, "request_bytes_per_sec": 24.0}, row, 10.0)
    assert not r.passed and "response bytes" in [p for p in r.parts if p.label == "request_bytes_per_sec"][0].note
    r = lab03.check_produce_rates({"avg_request_bytes": 250, "request_bytes_per_sec": 25.0}, row, 10.0)
    assert "per request per second" in [p for p in r.parts if p.label == "request_bytes_per_sec"][0].note
    assert lab03.check_produce_rates(..., row, 10.0).status == "todo"


def test_lab03_kafka_rate_is_what_kafkas_rate_stat_measures():
    from kafkalab.common import MockTime
    from kafkalab.common.metrics import Meter, MetricConfig, MetricName, Metrics
    for elapsed_ms in (0, 1, 15_000, 29_999, 30_000, 45_000, 59_999, 60_000, 90_000):
        time = MockTime()
        metrics = Metrics(MetricConfig(), time)
        sensor = metrics.sensor("s").add_meter(Meter(MetricName("request-rate", "g"), MetricName("request-total", "g"),
                                                     count=True))
        for _ in range(90):
            sensor.record()
        time.advance(elapsed_ms)
        assert lab03.kafka_rate(90, elapsed_ms) == pytest.approx(metrics.value("request-rate", "g")), elapsed_ms


def test_lab03_client_rates():
    right = {20: 1.8, 40: 2.25, 70: 0.0}
    assert lab03.check_client_rates(right, 90, (20, 40, 70)).passed
    r = lab03.check_client_rates({20: 4.5, 40: 90 / 70, 70: 1.0}, 90, (20, 40, 70))
    notes = {p.label: p.note for p in r.parts}
    assert not r.passed and "add a window" in notes["+20 s"] and "not topped up" in notes["+40 s"]
    assert "dropped" in notes["+70 s"]
    assert lab03.check_client_rates(..., 90, (20, 40, 70)).status == "todo"
    assert not lab03.check_client_rates([1.8], 90, (20,)).passed


# -- lab 06 ----------------------------------------------------------------------------------------------------------------
BASES = [0, 1187, 2391, 3580, 4766]


@pytest.mark.parametrize("offset, name", [(3579, 2391), (3580, 3580), (0, 0), (9999, 4766)])
def test_lab06_segment_file(offset, name):
    assert lab06.check_segment_file(f"{name:020d}.log", BASES, offset).passed


def test_lab06_segment_file_hints():
    assert "largest" in lab06.check_segment_file(f"{0:020d}.log", BASES, 3579).hint
    assert "*first* offset" in lab06.check_segment_file(f"{3580:020d}.log", BASES, 3579).hint
    assert "20 digits" in lab06.check_segment_file("2391.log", BASES, 3579).hint
    assert "no segment" in lab06.check_segment_file(f"{2000:020d}.log", BASES, 3579).hint
    assert lab06.check_segment_file(..., BASES, 3579).status == "todo"


ENTRIES = [(2403, 4215), (2417, 8437), (2430, 12660), (2446, 16874), (2459, 21099)]


def test_lab06_index_position():
    assert lab06.check_index_position(12660, ENTRIES, 2445).passed
    assert lab06.check_index_position(16874, ENTRIES, 2446).passed
    assert lab06.check_index_position(0, ENTRIES, 2400).passed               # before the first entry
    assert "*above*" in lab06.check_index_position(16874, ENTRIES, 2445).hint
    assert "an offset from the index" in lab06.check_index_position(2430, ENTRIES, 2445).hint
    assert "largest offset" in lab06.check_index_position(4215, ENTRIES, 2445).hint


HOUR = 3_600_000
SEGS = [(0, 20 * HOUR), (310, 45 * HOUR), (702, 58 * HOUR), (1090, 51 * HOUR), (1475, 99 * HOUR)]


def test_lab06_retention():
    assert lab06.deletable_by_time(SEGS, 100 * HOUR, 48 * HOUR) == [0, 310]
    assert lab06.check_retention({"deleted": [0, 310], "log_start_offset": 702}, SEGS, 100 * HOUR, 48 * HOUR).passed
    gap = lab06.check_retention({"deleted": [0, 310, 1090], "log_start_offset": 702}, SEGS, 100 * HOUR, 48 * HOUR)
    assert not gap.passed and "*newest*" in gap.parts[0].note
    young = lab06.check_retention({"deleted": [0, 310, 702, 1090, 1475], "log_start_offset": 1475}, SEGS,
                                  100 * HOUR, 48 * HOUR)
    assert not young.passed and "*newest*" in young.parts[0].note
    # every segment expired, the active one too (Kafka rolls a new, empty segment at the log end offset first)
    assert lab06.deletable_by_time(SEGS, 200 * HOUR, 48 * HOUR) == [0, 310, 702, 1090, 1475]
    everything = {"deleted": [0, 310, 702, 1090, 1475], "log_start_offset": 1500}
    assert lab06.check_retention(everything, SEGS, 200 * HOUR, 48 * HOUR).passed
    stale = lab06.check_retention({**everything, "log_start_offset": 1475}, SEGS, 200 * HOUR, 48 * HOUR)
    assert not stale.passed and "log end offset" in stale.parts[1].note
    half = lab06.check_retention({"deleted": [0, 310], "log_start_offset": ...}, SEGS, 100 * HOUR, 48 * HOUR)
    assert half.status == "fail" and half.parts[1].status == "todo"
    assert lab06.check_retention(..., SEGS, 100 * HOUR, 48 * HOUR).status == "todo"


def test_lab06_retention_matches_the_storage_layer(tmp_path):
    """The rule the check uses is the one UnifiedLog applies."""
    clock = MockTime(start_ms=lab06.T0)
    log = UnifiedLog(tmp_path / "t-0", LogConfig({"segment.bytes": 300, "retention.ms": 50 * 60_000}), time=clock)
    for _i in range(12):
        log.append_as_leader(build_batch([SimpleRecord(b"k", b"v" * 10, (), clock.milliseconds())]), leader_epoch=0)
        clock.advance(10 * 60_000)
    log.update_high_watermark(log.log_end_offset)
    segs = [(s.base_offset, s.largest_timestamp()) for s in log.segments]
    expected = lab06.deletable_by_time(segs, clock.milliseconds(), 50 * 60_000)
    assert expected and log.delete_old_segments() == len(expected)
    assert log.log_start_offset == segs[len(expected)][0]
    # quiet for a while: every segment expires, the active one too, and the log rolls a new, empty one
    clock.advance(60 * 60_000)
    segs = [(s.base_offset, s.largest_timestamp()) for s in log.segments]
    expected = lab06.deletable_by_time(segs, clock.milliseconds(), 50 * 60_000)
    assert expected == [base for base, _ in segs] and log.delete_old_segments() == len(expected)
    assert log.log_start_offset == log.log_end_offset == 12 and log.segments[-1].size == 0
    log.close()


LOG = [("user-1", "alice"), ("user-2", "bob"), ("user-1", "alice@new"), ("user-3", "carol"), ("user-2", None),
       ("user-4", "dave"), ("user-3", "carol@new"), ("user-1", None)]


def test_lab06_compaction():
    assert sorted(lab06.compacted(LOG)) == [4, 5, 6, 7]
    assert lab06.check_compaction([4, 5, 6, 7], LOG).passed
    assert lab06.check_compaction({7, 6, 5, 4}, LOG).passed
    assert "tombstone stays" in lab06.check_compaction([5, 6], LOG).hint
    assert "*latest*" in lab06.check_compaction([0, 1, 3, 5], LOG).hint
    assert not lab06.check_compaction(list(range(8)), LOG).passed
    assert not lab06.check_compaction(["4"], LOG).passed
    assert lab06.check_compaction(..., LOG).status == "todo"


def test_lab06_reads_segments_and_indexes_from_disk(tmp_path):
    log = UnifiedLog(tmp_path / "r-0", LogConfig({"segment.bytes": 500, "index.interval.bytes": 100}),
                     time=MockTime(start_ms=lab06.T0))
    for i in range(10):
        log.append_as_leader(build_batch([SimpleRecord(b"k%d" % i, b"x" * 30, (), lab06.T0 + i)]), leader_epoch=0)
    log.flush()
    segs = lab06.segments(log.dir)
    assert [s.base_offset for s in segs] == [s.base_offset for s in log.segments]
    for mine, theirs in zip(segs, log.segments):
        assert mine.log_bytes == theirs.size
        assert [tuple(e) for e in mine.index] == [tuple(e) for e in theirs.offset_index.entry_list()]
        assert all(b.crc_valid and b.partition_leader_epoch == 0 for b in mine.batches)
    walk = lab06.lookup_walk(log.dir, 7)
    assert walk[-1]["what"].endswith("holds it: serve from here")
    assert lab06.SegmentMap(segs, highlight=7)._repr_html_() == lab06.SegmentMap(segs, highlight=7)._repr_html_()
    log.close()


def test_lab06_byte_diff_names_the_patched_fields():
    sent = build_batch([SimpleRecord(b"k", b"v", (), lab06.T0)])
    stored = bytearray(sent)
    stored[0:8] = struct.pack(">q", 42)
    stored[12:16] = struct.pack(">i", 3)
    assert [d[2] for d in lab06.ByteDiff(sent, bytes(stored)).differences()] == ["base_offset",
                                                                                 "partition_leader_epoch"]
    with pytest.raises(ValueError):
        lab06.ByteDiff(sent, sent[:-1])


def test_lab06_read_masked_hides_random_ids(tmp_path):
    p = tmp_path / "meta.properties"
    p.write_text("#\n#Sat Nov 21 21:11:07 UTC 2026\ncluster.id=cKstcqjBpJqIagI5MWCBVw\nversion=0\nbroker.id=0\n")
    text = lab06.read_masked(p)
    assert "cKstcq" not in text and "2026" not in text and "broker.id=0" in text


def test_lab06_recovery_after_a_corrupted_byte(tmp_path):
    log = UnifiedLog(tmp_path / "payments-0", LogConfig({}), time=MockTime(start_ms=lab06.T0))
    for i in range(6):
        log.append_as_leader(build_batch([SimpleRecord(b"p%d" % i, b'{"eur": %d}' % (10 * i + 5), (), lab06.T0)]),
                             leader_epoch=0)
    log.close()
    segment = tmp_path / "payments-0" / "00000000000000000000.log"
    assert lab06.recovered_log_end_offset(segment) == 6                    # nothing bad yet
    data = bytearray(segment.read_bytes())
    data[data.index(b'{"eur": 35}') + 8] ^= 0x01
    segment.write_bytes(bytes(data))
    assert lab06.check_recovery(3, segment).passed
    assert "does scan this segment" in lab06.check_recovery(6, segment).hint
    assert "does not skip a bad batch" in lab06.check_recovery(5, segment).hint
    assert "*next* offset" in lab06.check_recovery(2, segment).hint
    assert not lab06.check_recovery("3", segment).passed
    assert lab06.check_recovery(..., segment).status == "todo"
    recovered = UnifiedLog(tmp_path / "payments-0", LogConfig({}), time=MockTime(start_ms=lab06.T0),
                           had_clean_shutdown=False)
    assert recovered.log_end_offset == 3                                   # the storage layer agrees
    recovered.close()
