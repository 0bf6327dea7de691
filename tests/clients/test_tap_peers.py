"""confluent-kafka through the tap in front of each broker of tests/clients (kafkalab and the peers that are
installed): the tap works with any broker, not only kafkalab's."""
from __future__ import annotations

import pytest

from kafkalab.trace import Tap

from .conftest import unique

pytestmark = pytest.mark.interop


def test_confluent_kafka_through_the_tap(broker):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    with Tap(broker.bootstrap_servers) as tap:
        topic = unique("tap-peer")
        admin = AdminClient({"bootstrap.servers": tap.bootstrap_servers})
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
        producer = ck.Producer({"bootstrap.servers": tap.bootstrap_servers, "message.timeout.ms": 15000})
        for i in range(5):
            producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
        assert producer.flush(20) == 0
        consumer = ck.Consumer({"bootstrap.servers": tap.bootstrap_servers, "group.id": unique("tap-peer"),
                                "enable.auto.commit": False})
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        got = []
        for _ in range(40):
            got += [m.value() for m in consumer.consume(10, 0.5) if not m.error()]
            if len(got) >= 5:
                break
        consumer.close()
        assert got == [b"v%d" % i for i in range(5)]
        assert {c.tap for c in tap.connections} <= set(tap.broker_ports.values())
        assert tap.rewrites() and not [f for f in tap.responses() if f.error]
        assert {"Produce", "Fetch", "Metadata", "CreateTopics"} <= {f.api_name for f in tap.requests()}
