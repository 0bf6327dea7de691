"""Real consumers and fetch sessions (KIP-227): kafka-python 3 opens one and fetches incrementally;
librdkafka (confluent-kafka) fetches sessionless (epoch -1). Both read everything."""
from __future__ import annotations

import time

import pytest

from ._broker_support import kafka_python_consumer, unique


def _produce(cluster, topic: str, tag: str, n: int = 10) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for i in range(n):
        producer.send(topic, value=f"{tag}{i}".encode(), partition=i % 2)
    producer.flush()
    producer.close()


def _sessions_of(cluster, topic: str) -> list:
    return [s for s in cluster.broker(0).fetch_manager.cache.sessions.values()
            if any(tp[0] == topic for tp in s.partitions)]


def test_kafka_python_consumer_fetches_incrementally_and_reads_everything(cluster, topic):
    pytest.importorskip("kafka")
    from kafka import TopicPartition

    _produce(cluster, topic, "a")
    consumer = kafka_python_consumer(cluster.bootstrap_servers, client_id=unique("kp-sessions"),
                                     auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: list = []

        def poll_until(n: int) -> None:
            end = time.monotonic() + 15
            while len(got) < n and time.monotonic() < end:
                for records in consumer.poll(200).values():
                    got.extend(r.value for r in records)

        poll_until(10)
        [session] = _sessions_of(cluster, topic)
        assert not session.privileged and session.size == 2
        _produce(cluster, topic, "b")
        poll_until(20)
        assert sorted(got) == sorted([f"a{i}".encode() for i in range(10)] + [f"b{i}".encode() for i in range(10)])
        assert cluster.broker(0).fetch_manager.cache.get(session.id) is session and session.epoch >= 2
    finally:
        consumer.close()


def test_confluent_consumer_fetches_sessionless_and_reads_everything(cluster, topic):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    _produce(cluster, topic, "c")
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": unique("g"),
                                         "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in (0, 1)])
        got = []
        end = time.monotonic() + 15
        while len(got) < 10 and time.monotonic() < end:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        assert sorted(got) == sorted(f"c{i}".encode() for i in range(10))
        assert _sessions_of(cluster, topic) == []
    finally:
        consumer.close()
