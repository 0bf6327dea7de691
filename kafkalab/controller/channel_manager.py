"""The controller's channels: one connection and one request queue per broker, itself included.

Theory of operation
-------------------
The controller does not call brokers; it *sends* them requests. For every live broker -- including the one
it runs on -- it keeps a :class:`BrokerChannel`: a queue of requests and a sender task (Kafka's
``RequestSendThread``, named ``Controller-<id>-to-broker-<id>-send-thread``) that owns **one connection** to
that broker's inter-broker listener -- or, with ``control.plane.listener.name`` (KIP-291), its control-plane
listener, found in the broker's registration (the controller picks the endpoint, see
``KafkaController._add_channel``). The sender takes the next request, sends it, waits for its response,
and only then takes the next: requests to one broker arrive in the order the controller decided them, while
brokers are served independently (a slow broker delays only its own queue).

Each connection numbers its requests with its own correlation ids (0, 1, 2, ...) and sends the controller's
broker id as ``clientId`` -- so the receiving broker's request log shows ``clientId=0, correlationId=0,
api=UPDATE_METADATA`` when broker 0 is the controller.

When a send fails (the broker is down, the connection broke) the sender closes the connection, backs off and
retries the *same* request, until the controller removes the broker (it saw its ``/brokers/ids`` znode go).
The controller never waits for responses in its event loop: ``enqueue`` returns at once, and a callback
receives the response.

The connection itself comes from a factory (``connect(host, port, client_id)``); the broker passes
:class:`kafkalab.network.inter_broker_client.InterBrokerConnection`, so this room never imports the network.

Mirrors: ``core/src/main/scala/kafka/controller/ControllerChannelManager.scala`` (``ControllerChannelManager``,
``RequestSendThread``, ``ControllerBrokerStateInfo``).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Optional

from kafkalab.protocol import api_name

__all__ = ["ControllerChannelManager", "BrokerChannel"]

log = logging.getLogger("kafkalab.controller.ControllerChannelManager")


class BrokerChannel:
    """The queue and sender task for one broker."""

    def __init__(self, controller_id: int, broker_id: int, host: str, port: int, connection, *,
                 retry_backoff_ms: int = 100):
        self.controller_id = controller_id
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.connection = connection
        self.retry_backoff_ms = retry_backoff_ms
        self.queue: asyncio.Queue = asyncio.Queue()
        self.sent = 0
        self.failures = 0
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"Controller-{controller_id}-to-broker-{broker_id}-send-thread")

    def __repr__(self) -> str:
        return (f"<BrokerChannel controller={self.controller_id} -> broker {self.broker_id} "
                f"({self.host}:{self.port}) queued={self.queue.qsize()} sent={self.sent}>")

    async def _run(self) -> None:
        while True:
            api_key, version, body, future = await self.queue.get()
            while True:
                try:
                    response = await self.connection.send(api_key, version, body)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - a dead or unreachable broker: retry until removed
                    self.failures += 1
                    log.debug("Controller %s: %s to broker %s failed (%s); retrying", self.controller_id,
                              api_name(api_key), self.broker_id, e)
                    await asyncio.sleep(self.retry_backoff_ms / 1000.0)
            self.sent += 1
            if future is not None and not future.done():
                future.set_result(response)

    def close(self) -> None:
        self.task.cancel()
        self.connection.close()
        while not self.queue.empty():
            *_, future = self.queue.get_nowait()
            if future is not None and not future.done():
                future.cancel()


class ControllerChannelManager:
    """``connect(host, port, client_id)`` returns a connection with ``async send(api_key, version, body)`` and
    ``close()``. Brokers are added and removed by the controller as it sees them in ``/brokers/ids``."""

    def __init__(self, controller_id: int, connect: Callable, *, retry_backoff_ms: int = 100):
        self.controller_id = controller_id
        self.connect = connect
        self.retry_backoff_ms = retry_backoff_ms
        self.brokers: dict[int, BrokerChannel] = {}

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        current = self.brokers.get(broker_id)
        if current is not None:
            if (current.host, current.port) == (host, port):
                return
            self.remove_broker(broker_id)
        connection = self.connect(host, port, str(self.controller_id))
        self.brokers[broker_id] = BrokerChannel(self.controller_id, broker_id, host, port, connection,
                                                retry_backoff_ms=self.retry_backoff_ms)

    def remove_broker(self, broker_id: int) -> None:
        channel = self.brokers.pop(broker_id, None)
        if channel is not None:
            channel.close()

    def enqueue(self, broker_id: int, api_key: int, api_version: int, body,
                callback: Optional[Callable] = None) -> Optional[asyncio.Future]:
        """Queue a request for ``broker_id``; returns a future of its response (None if the broker has no
        channel: the controller does not know it as live)."""
        channel = self.brokers.get(broker_id)
        if channel is None:
            log.info("Controller %s: no channel to broker %s; dropping %s", self.controller_id, broker_id,
                     api_name(api_key))
            return None
        future = asyncio.get_running_loop().create_future()
        if callback is not None:
            future.add_done_callback(lambda f: f.cancelled() or callback(broker_id, api_key, f.result()))
        channel.queue.put_nowait((api_key, api_version, body, future))
        return future

    async def send(self, broker_id: int, api_key: int, api_version: int, body):
        """Queue a request and wait for its response (tests and labs)."""
        future = self.enqueue(broker_id, api_key, api_version, body)
        if future is None:
            raise ConnectionError(f"broker {broker_id} is not known to the controller")
        return await future

    def shutdown(self) -> None:
        for broker_id in list(self.brokers):
            self.remove_broker(broker_id)
