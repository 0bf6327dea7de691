"""Where the controller's channels connect: each broker's control-plane endpoint when
control.plane.listener.name is set, else its inter-broker endpoint, as found in its registration
(Kafka's ``ControllerChannelManager.addNewBroker`` and ``Broker.node(listenerName)``)."""
from __future__ import annotations

import asyncio
import logging

import pytest

from kafkalab.common import MockTime
from kafkalab.controller.controller import KafkaController
from kafkalab.zk import KafkaZkClient, ZkStore
from kafkalab.zk.paths import BrokerInfo, EndPoint


class RecordingChannel:
    """The channel manager's interface, recording where it is asked to connect."""

    def __init__(self):
        self.added: dict[int, tuple[str, int]] = {}

    def add_broker(self, broker_id, host, port):
        self.added[broker_id] = (host, port)

    def remove_broker(self, broker_id):
        self.added.pop(broker_id, None)

    def enqueue(self, *args, **kwargs):
        return None

    def shutdown(self):
        self.added.clear()


def _info(broker_id: int, control: bool) -> BrokerInfo:
    endpoints = [EndPoint("127.0.0.1", 9000 + broker_id, "PLAINTEXT", "PLAINTEXT")]
    if control:
        endpoints.append(EndPoint("127.0.0.1", 9100 + broker_id, "CONTROL", "PLAINTEXT"))
    return BrokerInfo(broker_id, tuple(endpoints))


@pytest.mark.parametrize("controller_to_broker, expected", [
    ("CONTROL", {0: ("127.0.0.1", 9100)}),                         # broker 1 has no CONTROL endpoint
    (None, {0: ("127.0.0.1", 9000), 1: ("127.0.0.1", 9001)}),      # unset: the inter-broker listener
])
def test_channels_connect_to_the_controller_to_broker_listener(controller_to_broker, expected, caplog):
    async def run():
        store = ZkStore(time=MockTime())
        sessions = [KafkaZkClient.connect(store, 6000) for _ in range(2)]
        sessions[0].create_top_level_paths()
        for broker_id, zk in enumerate(sessions):
            zk.register_broker(_info(broker_id, control=broker_id == 0))
        channel = RecordingChannel()
        controller = KafkaController(0, sessions[0], channel, inter_broker_listener="PLAINTEXT",
                                     controller_to_broker_listener=controller_to_broker)
        await controller.startup()
        for _ in range(200):
            if controller.is_active and len(channel.added) == len(expected):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        added = dict(channel.added)
        await controller.shutdown()
        return added

    caplog.set_level(logging.ERROR, logger="kafkalab.controller.KafkaController")
    assert asyncio.run(run()) == expected
    missing = [r.getMessage() for r in caplog.records if "not found for broker" in r.getMessage()]
    assert missing == (["Controller id=0: End point with listener name CONTROL not found for broker 1"]
                       if controller_to_broker else [])
