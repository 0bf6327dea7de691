"""A scripted broker for network-client tests: ``handler(request) -> response body | bytes | None (silence)``."""
from __future__ import annotations

import asyncio
import struct

from kafkalab.common.loop_thread import LoopThread
from kafkalab.protocol import decode_request, encode_response, make_response

_SIZE = struct.Struct(">i")


class FakeBroker:
    def __init__(self, handler):
        self.handler = handler
        self.requests = []
        self._io = None

    def __enter__(self):
        self._io = LoopThread("fake-broker")
        self.server = self._io.run(asyncio.start_server(self._serve, "127.0.0.1", 0), 5)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        self._io.call(self.server.close, timeout=5)
        self._io.stop(5)           # cancels the connections still being served

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
