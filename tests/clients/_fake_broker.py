"""A scripted broker for network-client tests: ``handler(request) -> response body | bytes | None (silence)``."""
from __future__ import annotations

import asyncio
import struct
import threading

from kafkalab.protocol import decode_request, encode_response, make_response

_SIZE = struct.Struct(">i")


class FakeBroker:
    def __init__(self, handler):
        self.handler = handler
        self.requests = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self.loop).result(5)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        async def stop():
            self.server.close()
            for t in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                t.cancel()
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _serve(self, reader, writer):
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, api_version, corr = struct.unpack_from(">hhi", frame)
                try:
                    request = decode_request(frame)
                except Exception:      # noqa: BLE001 -- a version we refuse: the handler sees None
                    request = None
                self.requests.append((api_key, api_version, corr))
                answer = self.handler(api_key, api_version, request)
                if answer is None:
                    continue
                if not isinstance(answer, (bytes, bytearray)):
                    answer = encode_response(make_response(answer, api_version=api_version, correlation_id=corr))
                writer.write(_SIZE.pack(len(answer)) + bytes(answer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
