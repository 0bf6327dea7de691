"""Request handlers: the workers that take requests from the request queue and run them.

Theory of operation
-------------------
Kafka runs ``num.io.threads`` request-handler threads (8 by default). Each loops forever: take the next
request from the request channel, hand it to ``KafkaApis``, which produces a response (or parks the request
in a purgatory to be answered later), take the next. Because handlers are separate from the network
threads, a slow request (a large fetch, a flush) delays only the handler that runs it.

kafkalab runs the same pool as ``num.io.threads`` coroutines on the broker's event loop. A handler that
would wait (a fetch waiting for data) does not hold its worker: ``KafkaApis`` turns the wait into a separate
task and the worker moves on, as Kafka's purgatory frees its thread.

Mirrors: ``core/src/main/scala/kafka/server/KafkaRequestHandler.scala``.
"""
from __future__ import annotations

import asyncio
import logging

from kafkalab.network.request_channel import RequestChannel

__all__ = ["KafkaRequestHandlerPool"]

log = logging.getLogger("kafkalab.server.KafkaRequestHandler")


class KafkaRequestHandlerPool:
    def __init__(self, channel: RequestChannel, apis, num_threads: int, name: str = "broker"):
        self.channel = channel
        self.apis = apis
        self.num_threads = num_threads
        self.name = name
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(i), name=f"{self.name}-kafka-request-handler-{i}")
                       for i in range(self.num_threads)]

    async def _run(self, index: int) -> None:
        while True:
            request = await self.channel.receive_request()
            try:
                await self.apis.handle(request)
            except asyncio.CancelledError:
                raise
            except Exception:  # KafkaApis answers errors itself; anything here is a bug, not a crash
                log.exception("%s: handler %d failed on %r", self.name, index, request)
            finally:
                request.release_buffer()   # its bytes go back to the memory pool (queued.max.request.bytes)
            # Let go of it before waiting for the next one: a handled Produce request still refers to the
            # buffer it was received into, which its connection reuses once nothing does (Kafka clears a
            # produce request's records after the append for the same reason: clearPartitionRecords).
            request = None

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
