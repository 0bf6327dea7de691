"""Address rewriting for the tap: the broker addresses a response advertises, replaced by the tap's own.

Theory of operation
-------------------
A client learns where brokers are from three responses: Metadata (``brokers``), FindCoordinator (``host``/
``port`` up to v3, ``coordinators`` from v4) and DescribeCluster (``brokers``). A proxy that forwarded those
unchanged would be bypassed after bootstrap: the client would connect straight to the advertised brokers.
The tap therefore decodes exactly these three responses, asks ``resolve(node_id, host, port)`` for the tap
address that stands for each broker (the tap opens one port per broker), re-encodes the response and lists
what it changed. Every other response goes through untouched, byte for byte.

Sans-IO: :func:`rewrite_response` takes a decoded :class:`~kafkalab.protocol.Response` and returns a new one;
opening listeners is the caller's business. Mirrors what ``advertised.listeners`` does on a broker
(``KafkaConfig``/``EndPoint``), done from outside.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from kafkalab.protocol import Response

__all__ = ["REWRITTEN_APIS", "AddressChange", "rewrite_response"]

#: API keys whose responses carry broker addresses: Metadata, FindCoordinator, DescribeCluster.
REWRITTEN_APIS = frozenset({3, 10, 60})

Resolver = Callable[[int, str, int], tuple[str, int]]


@dataclasses.dataclass(frozen=True)
class AddressChange:
    """One advertised address replaced: broker ``node_id`` at ``upstream`` is shown to the client as ``tap``."""

    node_id: int
    upstream: tuple[str, int]
    tap: tuple[str, int]

    def as_dict(self) -> dict:
        return {"node_id": self.node_id, "upstream": f"{self.upstream[0]}:{self.upstream[1]}",
                "tap": f"{self.tap[0]}:{self.tap[1]}"}


def _swap(item, resolve: Resolver, changes: list):
    """``item`` (node_id -- broker_id in DescribeCluster --, host, port) pointing at the tap; unchanged if it names
    no broker (a coordinator not found: node_id -1, host "", port -1)."""
    node_id = item.broker_id if hasattr(item, "broker_id") else item.node_id
    if node_id < 0 or item.port < 0 or not item.host:
        return item
    host, port = resolve(node_id, item.host, item.port)
    changes.append(AddressChange(node_id, (item.host, item.port), (host, port)))
    return item._replace(host=host, port=port)


def rewrite_response(response: Response, resolve: Resolver) -> tuple[Response, list[AddressChange]]:
    """``response`` with every advertised broker address replaced by ``resolve``'s, and the list of changes."""
    changes: list[AddressChange] = []
    body = response.body
    if response.api_key in (3, 60):
        body = body._replace(brokers=tuple(_swap(b, resolve, changes) for b in body.brokers))
    elif response.api_key == 10:
        if response.api_version >= 4:
            body = body._replace(coordinators=tuple(_swap(c, resolve, changes) for c in body.coordinators))
        else:
            body = _swap(body, resolve, changes)
    return dataclasses.replace(response, body=body), changes
