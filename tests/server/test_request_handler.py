"""The request handler pool: ``num.io.threads`` workers take requests from the channel in turn."""
from __future__ import annotations

import asyncio
import logging

from kafkalab.common.time import MockTime
from kafkalab.network.request_channel import (ANONYMOUS, NetworkRequest, RequestChannel, RequestContext,
                                              SendResponse)
from kafkalab.protocol import ApiKey, make_request, request_class
from kafkalab.server.request_handler import KafkaRequestHandlerPool

Metadata = request_class(ApiKey.METADATA)


def new_request(channel, correlation_id):
    header = make_request(Metadata(topics=None), api_version=12, correlation_id=correlation_id, client_id="c").header
    ctx = RequestContext("conn", "127.0.0.1", 1, "PLAINTEXT", "PLAINTEXT", ANONYMOUS, header)
    return NetworkRequest(ctx, Metadata(topics=None), 10, channel.time.nanoseconds())


class Apis:
    def __init__(self, channel, gate=None, fail=()):
        self.channel, self.gate, self.fail = channel, gate, set(fail)
        self.running = 0
        self.max_running = 0

    async def handle(self, request):
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if request.context.correlation_id in self.fail:
                raise RuntimeError("a bug in a handler")
            self.channel.send_response(request, SendResponse(request.context.correlation_id))
        finally:
            self.running -= 1


def test_num_io_threads_workers_share_the_queue():
    async def main():
        channel = RequestChannel(time=MockTime())
        apis = Apis(channel, gate=asyncio.Event())
        pool = KafkaRequestHandlerPool(channel, apis, num_threads=3)
        pool.start()
        requests = [new_request(channel, i) for i in range(5)]
        for r in requests:
            await channel.send_request(r)
        for _ in range(10):
            await asyncio.sleep(0)
        assert apis.running == 3 and channel.queue_size == 2      # three workers busy, two requests wait
        apis.gate.set()
        results = [await asyncio.wait_for(r.response, 2) for r in requests]
        assert [a.body for a in results] == list(range(5)) and apis.max_running == 3
        await pool.shutdown()
        assert pool._tasks == []
    asyncio.run(main())


def test_a_failing_handler_is_logged_and_the_worker_carries_on(caplog):
    async def main():
        channel = RequestChannel(time=MockTime())
        pool = KafkaRequestHandlerPool(channel, Apis(channel, fail={1}), num_threads=1, name="broker-7")
        pool.start()
        bad, good = new_request(channel, 1), new_request(channel, 2)
        await channel.send_request(bad)
        await channel.send_request(good)
        assert (await asyncio.wait_for(good.response, 2)).body == 2
        await pool.shutdown()
    with caplog.at_level(logging.ERROR, logger="kafkalab.server.KafkaRequestHandler"):
        asyncio.run(main())
    assert any("broker-7: handler 0 failed" in r.getMessage() for r in caplog.records)
