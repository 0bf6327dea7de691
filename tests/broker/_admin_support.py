"""Helpers for the admin-API tests: a raw one-request wire client, an API-version spy, client result unpacking."""
from __future__ import annotations

import itertools
import os
import re
import socket
import struct
from pathlib import Path

from kafkalab.protocol import ApiKey, api_name, decode_response, encode_request, make_request, request_class
from kafkalab.server.apis.base import REGISTRY

_correlation = itertools.count(1)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError(f"connection closed with {left} of {n} bytes missing")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def wire(broker, body, version: int, *, timeout: float = 5.0):
    """Send one request to ``broker`` (a running KafkaServer) on a fresh connection; return the response body."""
    ep = broker.bound_endpoints[0]
    cid = next(_correlation)
    frame = encode_request(make_request(body, api_version=version, correlation_id=cid, client_id="admin-tests"),
                           size_prefix=True)
    with socket.create_connection((ep.host, ep.port), timeout=timeout) as s:
        s.sendall(frame)
        size = struct.unpack(">i", _recv_exactly(s, 4))[0]
        response = decode_response(_recv_exactly(s, size), body.API_KEY, version)
    assert response.header.correlation_id == cid
    return response.body


def req(api_key: int):
    """The request class of ``api_key`` (nested structs are attributes: ``req(19).CreatableTopic``)."""
    return request_class(api_key)


class ApiSpy:
    """Records (API name, version) of every request the brokers handle while installed (via monkeypatch)."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[str, int]] = []
        for key, handler in list(REGISTRY.items()):
            monkeypatch.setitem(REGISTRY, key, handler._replace(func=self._wrap(key, handler.func)))

    def _wrap(self, key, func):
        def spied(broker, request):
            self.calls.append((api_name(key), request.context.api_version))
            return func(broker, request)
        return spied

    def versions(self, api: str) -> set[int]:
        return {v for name, v in self.calls if name == api}


def confluent_results(futures: dict) -> dict:
    """{resource name: None (success) or (error code, message)} of a confluent-kafka admin call."""
    from confluent_kafka import KafkaException

    out = {}
    for key, future in futures.items():
        name = getattr(key, "name", key)
        try:
            out[name] = future.result()
            if out[name] is not None and not isinstance(out[name], dict):
                out[name] = None
        except KafkaException as e:
            out[name] = (e.args[0].code(), e.args[0].str())
    return out


def describe_results(futures: dict) -> dict:
    """{resource name: {config name: ConfigEntry}} of confluent-kafka's describe_configs."""
    return {key.name: future.result() for key, future in futures.items()}


def log_dir(broker) -> Path:
    return Path(os.path.abspath(str(broker.config.log_dirs[0])))


def partition_dirs(broker, topic: str) -> list[str]:
    """Directories of ``topic`` in the broker's first log dir: ``<topic>-<p>`` and ``<topic>-<p>.<id>-delete``."""
    pattern = re.compile(rf"^{re.escape(topic)}-\d+(\.[0-9a-f]+-delete)?$")
    return sorted(e for e in os.listdir(log_dir(broker)) if pattern.match(e))


__all__ = ["wire", "req", "ApiSpy", "confluent_results", "describe_results", "partition_dirs", "log_dir", "ApiKey"]
