"""Kafka's client network metrics (``request-rate``, ``outgoing-byte-rate``, ``connection-creation-rate``...)
kept by kafkalab's clients, checked against what the broker's request log saw, on a MockTime."""
import pytest

from kafkalab import Cluster
from kafkalab.clients import Admin, Consumer, Producer
from kafkalab.common import MockTime
from kafkalab.common.metrics import MetricName

TOPIC = "metered"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(brokers=1).start()
    c.create_topic(TOPIC, partitions=1)
    yield c
    c.stop()


def by_name(metrics: dict, group: str, node=None) -> dict:
    tags = () if node is None else (("node-id", f"node-{node}"),)
    return {m.name: v for m, v in metrics.items() if m.group == group and m.tags == tags}


def test_producer_metrics_count_what_the_broker_saw(cluster):
    time = MockTime()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "metered-producer",
                         "linger.ms": 0, "enable.idempotence": False}, time=time)
    try:
        for i in range(20):
            producer.send(TOPIC, b"%02d" % i, partition=0).result(timeout=10)
        metrics = producer.metrics()
    finally:
        producer.close()
    seen = [r for r in cluster.broker(0).channel.request_log.records if r.client_id == "metered-producer"]
    overall = by_name(metrics, "producer-metrics")
    assert overall["request-total"] == len(seen)
    assert overall["response-total"] == len(seen)
    assert overall["outgoing-byte-total"] == sum(r.request_bytes for r in seen)    # size prefix included
    assert overall["incoming-byte-total"] == sum(r.response_bytes for r in seen)
    assert overall["request-size-max"] == max(r.request_bytes for r in seen)
    assert overall["network-io-total"] == 2 * len(seen)
    assert overall["connection-creation-total"] == len({r.connection_id for r in seen})
    # the client's clock stood still: every rate is its total over (samples - 1) = one 30 s window
    assert overall["request-rate"] == pytest.approx(len(seen) / 30.0)
    assert overall["outgoing-byte-rate"] == pytest.approx(overall["outgoing-byte-total"] / 30.0)
    time.advance(15_000)
    assert by_name(producer.metrics(), "producer-metrics")["request-rate"] == pytest.approx(len(seen) / 45.0)
    assert overall["connection-count"] == overall["connection-creation-total"] - overall["connection-close-total"]
    # per broker: the connection to broker 0 by its id carried the 20 Produce requests
    node0 = by_name(metrics, "producer-node-metrics", node=0)
    assert node0["request-total"] == sum(1 for r in seen if r.connection_id == seen[-1].connection_id)
    assert sum(1 for r in seen if r.api_name == "Produce") == 20
    # an hour of the client's clock later the windows are empty, the totals are not
    time.advance(3_600_000)
    later = by_name(producer.metrics(), "producer-metrics")
    assert later["request-rate"] == 0.0 and later["request-total"] == overall["request-total"]
    assert later["connection-count"] == 0 and later["connection-close-total"] == later["connection-creation-total"]


def test_admin_and_consumer_name_their_groups_as_java_does(cluster):
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.list_topics()
        names = set(admin.metrics())
    assert MetricName("connection-creation-rate", "admin-client-metrics") in names
    assert MetricName("request-rate", "admin-client-node-metrics", (("node-id", "node--1"),)) in names
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        consumer.assign([(TOPIC, 0)])
        consumer.poll(0.2)
        groups = {m.group for m in consumer.metrics()}
    finally:
        consumer.close()
    assert {"consumer-metrics", "consumer-node-metrics"} <= groups
