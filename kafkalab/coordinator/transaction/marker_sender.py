"""Sending the markers: one connection and one WriteTxnMarkers in flight per partition leader.

Theory of operation
-------------------
The sans-IO :class:`~.marker_channel.TransactionMarkerChannelManager` decides *what* each leader must write; this
is the part that talks. For every destination broker it keeps a sender task (Kafka's
``TransactionMarkerChannelManager`` is an ``InterBrokerSendThread``) with **one connection** to the broker's
inter-broker listener, the same discipline as the controller's channels: the task waits until the broker's queue
has work, drains it into one WriteTxnMarkers request (the markers of every transaction waiting for that broker),
sends it, waits for the answer and hands it to the channel manager, which completes partitions, queues retries
or appends CompleteCommit/CompleteAbort. A connection that fails is closed; the drained entries are handed back
as a disconnect (queued again, leaders looked up again) and the task backs off before the next attempt.

The connection comes from a factory (``connect(host, port, client_id)`` returning an object with
``async send(api_key, version, body)`` and ``close()``); the broker passes
:class:`kafkalab.network.inter_broker_client.InterBrokerConnection`, so this room never imports the network.

Mirrors: ``core/src/main/scala/kafka/coordinator/transaction/TransactionMarkerChannelManager.scala``
(``generateRequests``, the send thread) and ``core/.../common/InterBrokerSendThread.scala``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Optional

from kafkalab.protocol import ApiKey

from .marker_channel import WRITE_TXN_MARKERS_VERSION, TransactionMarkerChannelManager

__all__ = ["TransactionMarkerSender"]

log = logging.getLogger("kafkalab.coordinator.transaction.TransactionMarkerChannelManager")


class _BrokerSender:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.work = asyncio.Event()
        self.connection = None
        self.address: Optional[tuple] = None
        self.task: Optional[asyncio.Task] = None
        self.sent = 0
        self.failures = 0


class TransactionMarkerSender:
    """``broker_endpoint(broker_id)`` -> (host, port) on the inter-broker listener, or None if not alive."""

    def __init__(self, channel: TransactionMarkerChannelManager, broker_endpoint: Callable[[int], Optional[tuple]],
                 connect: Callable, client_id: str, *, retry_backoff_ms: int = 100,
                 loop: Optional[asyncio.AbstractEventLoop] = None):
        self.channel = channel
        self.broker_endpoint = broker_endpoint
        self.connect = connect
        self.client_id = client_id
        self.retry_backoff_ms = retry_backoff_ms
        self.loop = loop or asyncio.get_running_loop()
        self.senders: dict[int, _BrokerSender] = {}
        self.closed = False
        channel.wakeup = self.wakeup

    def wakeup(self, broker_id: int) -> None:
        """The channel queued markers for ``broker_id`` (safe from any thread)."""
        if not self.closed:
            self.loop.call_soon_threadsafe(self._wake, broker_id)

    def _wake(self, broker_id: int) -> None:
        if self.closed:
            return
        sender = self.senders.get(broker_id)
        if sender is None:
            sender = self.senders[broker_id] = _BrokerSender(broker_id)
            sender.task = self.loop.create_task(self._run(sender),
                                                name=f"TxnMarkerSenderThread-{self.client_id}-to-{broker_id}")
        sender.work.set()

    async def _run(self, sender: _BrokerSender) -> None:
        while not self.closed:
            await sender.work.wait()
            sender.work.clear()
            items = self.channel.drain(sender.broker_id)
            if not items:
                continue
            ok = await self._send(sender, items)
            if not ok:
                await asyncio.sleep(self.retry_backoff_ms / 1000.0)
            if self.channel.queues.get(sender.broker_id) or self.channel.unknown_broker_queue:
                sender.work.set()

    async def _send(self, sender: _BrokerSender, items) -> bool:
        """False when the sender should back off: no answer, or some partition must be retried."""
        endpoint = self.broker_endpoint(sender.broker_id)
        if endpoint is None:
            self.channel.on_disconnect(sender.broker_id, items)
            return False
        if sender.connection is None or sender.address != endpoint:
            self._close_connection(sender)
            sender.connection = self.connect(endpoint[0], endpoint[1], self.client_id)
            sender.address = endpoint
        request = self.channel.build_request(items)
        try:
            response = await sender.connection.send(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, request)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a dead or unreachable broker: the markers are queued again
            sender.failures += 1
            log.debug("WriteTxnMarkers to broker %d failed (%s); queueing its markers again", sender.broker_id, e)
            self._close_connection(sender)
            self.channel.on_disconnect(sender.broker_id, items)
            return False
        sender.sent += 1
        return not self.channel.on_response(sender.broker_id, items, response)

    @staticmethod
    def _close_connection(sender: _BrokerSender) -> None:
        if sender.connection is not None:
            try:
                sender.connection.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            sender.connection = None

    def shutdown(self) -> None:
        self.closed = True
        for sender in self.senders.values():
            if sender.task is not None:
                sender.task.cancel()
            self._close_connection(sender)
        self.senders.clear()
