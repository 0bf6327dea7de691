"""Lab 14's helpers and exercise checks: predictions, records per partition, the pcap lines with and without tshark."""
from __future__ import annotations

import shutil
import time
import types

import pytest

from kafkalab.cluster import Cluster
from kafkalab.labs import lab14
from kafkalab.protocol import encode_request, make_request, request_class
from kafkalab.trace import RawConnection, Tap, VersionMatrix
from kafkalab.trace.views import ProduceRequestBatches


def test_predicted_requests_and_their_check():
    assert lab14.predicted_produce_requests(9, 3) == {"confluent-kafka": 9, "kafka-python": 3}
    assert lab14.predicted_produce_requests(2, 3) == {"confluent-kafka": 2, "kafka-python": 2}
    assert lab14.check_predicted_requests({"confluent-kafka": 9, "kafka-python": 3}, 9, 3).passed
    wrong = lab14.check_predicted_requests({"confluent-kafka": 3, "kafka-python": 3}, 9, 3)
    assert not wrong.passed and "does not combine partitions" in wrong.text()
    assert lab14.check_predicted_requests(..., 9, 3).status == "todo"


def test_records_per_partition_adds_up_one_client_batches():
    batching = [ProduceRequestBatches("confluent-kafka", 1, 2, (("t", 0, 80), ("t", 3, 20))),
                ProduceRequestBatches("kafka-python", 2, 2, (("t", 0, 500),)),
                ProduceRequestBatches("confluent-kafka", 3, 3, (("t", 0, 5),))]
    assert lab14.check_records_per_partition({0: 85, 3: 20}, batching, "confluent-kafka").passed
    assert not lab14.check_records_per_partition({0: 80, 3: 20}, batching, "confluent-kafka").passed


def test_only_some_reads_the_matrix_and_shows_a_set_in_a_fixed_order():
    matrix = VersionMatrix({"a": {"Produce": (9,), "CreateTopics": (7,)}, "b": {"Produce": (7,), "Zeta": (1,)}})
    result = lab14.check_only_some({"Zeta", "CreateTopics"}, matrix)
    assert result.passed and "CreateTopics, Zeta" in result.text()
    assert not lab14.check_only_some({"Produce"}, matrix).passed
    assert lab14.check_only_some(..., matrix).status == "todo"


def test_client_of_and_connection_counts():
    assert lab14.client_of("kcat") == "kcat" and lab14.client_of("rdkafka") is None
    S = types.SimpleNamespace
    summaries = [S(client="kcat", broker=0, requests={"Produce": 2}), S(client="kcat", broker=1,
                                                                         requests={"Fetch": 1, "JoinGroup": 1})]
    assert lab14.connection_counts(summaries) == {"kcat": {"connections": 2, "brokers": 2, "with Produce": 1,
                                                           "with Fetch": 1, "with JoinGroup": 1}}
    assert len(lab14.records()) == lab14.RECORD_COUNT and len({k for k, _ in lab14.records()}) == 50


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    with Cluster(brokers=1) as cluster, Tap(cluster.bootstrap_servers) as tap:
        with RawConnection(tap.bootstrap_servers) as conn:
            for cid, (key, version, body) in enumerate([(18, 3, dict(client_software_name="t",
                                                                       client_software_version="1")),
                                                        (3, 4, dict(topics=None, allow_auto_topic_creation=False))]):
                conn.send(encode_request(make_request(request_class(key)(**body), api_version=version,
                                                      correlation_id=cid + 1, client_id="kcat")))
                assert conn.receive() is not None
        end = time.monotonic() + 5
        while time.monotonic() < end and not any(e.kind == "closed" for e in tap.events):
            time.sleep(0.02)
        path = tmp_path_factory.mktemp("pcap") / "lab14.pcap"
        tap.write_pcap(path)
        yield tap, path


def test_pcap_lines_without_tshark(recorded, monkeypatch):
    tap, path = recorded
    monkeypatch.setattr(lab14.shutil, "which", lambda name: None)
    used, lines = lab14.tshark_summary(path, tap, tap.connections[0].number)
    assert not used
    assert lines == ["request  ApiVersions v3", "response ApiVersions v3", "request  Metadata v4",
                     "response Metadata v4"]


def test_pcap_lines_with_tshark_are_the_same(recorded):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install -y tshark)")
    tap, path = recorded
    used, lines = lab14.tshark_summary(path, tap, tap.connections[0].number)
    assert used and lines == lab14._pcap_lines(path, tap, tap.connections[0].number, 4)


def test_records_per_partition_shows_the_answer_in_partition_order():
    batching = [ProduceRequestBatches("c", 1, 2, (("t", 2, 7), ("t", 0, 5)))]
    assert "{0: 5, 2: 7}" in lab14.check_records_per_partition({2: 7, 0: 5}, batching, "c").text()
