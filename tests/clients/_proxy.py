"""A fault-injecting Kafka proxy for client tests: sits between a client and one broker, forwards frames,
rewrites Metadata answers so the client keeps talking through the proxy, and lets a test tamper with answers.

``policy(api_key, api_version, response_frame, n)`` is called for every response (``n`` counts responses of that
API so far, from 1) and returns ``None`` (forward unchanged), ``"drop"`` (swallow the answer and cut the client's
connection, as if the network failed after the broker did the work) or replacement bytes.
"""
from __future__ import annotations

import asyncio
import collections
import struct

from kafkalab.common.loop_thread import LoopThread
from kafkalab.protocol import ApiKey, decode_response, encode_response

_SIZE = struct.Struct(">i")


async def _frames(reader):
    while True:
        head = await reader.readexactly(4)
        yield await reader.readexactly(_SIZE.unpack(head)[0])


class KafkaProxy:
    def __init__(self, upstream: str, policy=None):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.policy = policy or (lambda *a: None)
        self.counts: collections.Counter = collections.Counter()
        self.requests: list[tuple[int, int]] = []       # (api_key, api_version) in arrival order
        self._io = None
        self.port = None

    def __enter__(self):
        self._io = LoopThread("kafka-proxy")
        self.server = self._io.run(asyncio.start_server(self._serve, "127.0.0.1", 0), 5)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        self._io.call(self.server.close, timeout=5)
        self._io.stop(5)           # cancels the connections still being proxied

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _serve(self, creader, cwriter):
        ureader, uwriter = await asyncio.open_connection(*self.upstream)
        pending: collections.deque = collections.deque()

        async def upstream_to_client():
            try:
                async for frame in _frames(ureader):
                    api_key, api_version = pending.popleft()
                    self.counts[api_key] += 1
                    if api_key == ApiKey.METADATA:
                        frame = self._rewrite_metadata(frame, api_version)
                    action = self.policy(api_key, api_version, frame, self.counts[api_key])
                    if action == "drop":
                        cwriter.close()
                        return
                    if isinstance(action, (bytes, bytearray)):
                        frame = bytes(action)
                    cwriter.write(_SIZE.pack(len(frame)) + frame)
            except (asyncio.IncompleteReadError, ConnectionError):
                cwriter.close()

        task = asyncio.ensure_future(upstream_to_client())
        try:
            async for frame in _frames(creader):
                api_key, api_version, _corr = struct.unpack_from(">hhi", frame)
                self.requests.append((api_key, api_version))
                if not (api_key == ApiKey.PRODUCE and self._acks0(frame, api_version)):
                    pending.append((api_key, api_version))
                uwriter.write(_SIZE.pack(len(frame)) + frame)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            uwriter.close()
            task.cancel()

    @staticmethod
    def _acks0(frame, api_version) -> bool:
        from kafkalab.protocol import decode_request
        return decode_request(frame).body.acks == 0

    def _rewrite_metadata(self, frame: bytes, api_version: int) -> bytes:
        resp = decode_response(frame, ApiKey.METADATA, api_version)
        brokers = tuple(b._replace(host="127.0.0.1", port=self.port) for b in resp.body.brokers)
        body = resp.body._replace(brokers=brokers)
        return encode_response(type(resp)(resp.header, body, resp.api_key, resp.api_version))
