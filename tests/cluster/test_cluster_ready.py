"""A started cluster is ready: every broker already answers Metadata with every broker."""
from __future__ import annotations

import asyncio

from kafkalab import Cluster
from kafkalab.controller.controller import KafkaController
from kafkalab.protocol import ApiKey, request_class
from tests.broker._raw_wire import Conn


def test_metadata_lists_every_broker_as_soon_as_start_returns(monkeypatch):
    send = KafkaController.send

    async def slow_send(self, batch):   # a loaded machine: the controller's UpdateMetadata comes late
        await asyncio.sleep(0.5)
        await send(self, batch)

    monkeypatch.setattr(KafkaController, "send", slow_send)
    with Cluster(brokers=3) as cluster:
        for broker_id in sorted(cluster.brokers):
            port = cluster.broker(broker_id).socket_server.bound_port("PLAINTEXT")
            with Conn(port) as wire:
                answer = wire.call(request_class(ApiKey.METADATA)(topics=None, allow_auto_topic_creation=False), 12)
            assert sorted(b.node_id for b in answer.brokers) == [0, 1, 2], broker_id
