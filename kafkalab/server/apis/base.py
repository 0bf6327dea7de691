"""How API handlers are declared: one decorator per API key, with the versions this broker serves.

Theory of operation
-------------------
Each handler module declares what it implements::

    @handles(ApiKey.METADATA, versions=(0, 13))
    def handle_metadata(broker, request): ...

The registry built from these declarations is the *only* source of what ApiVersions advertises, so the
broker can never advertise an API it does not implement; each range is then clipped to the Kafka release
``kafkalab.api.version.floors`` names (:mod:`kafkalab.server.api_version_floors`), so a handler declares every
version kafkalab can serve, and the broker advertises the part the release has. A handler receives the broker and the
:class:`~kafkalab.network.NetworkRequest` (``request.context`` has the header, listener and principal,
``request.body`` the decoded body) and returns the response body, a response action
(:class:`~kafkalab.network.NoOpResponse`, :class:`~kafkalab.network.CloseConnectionResponse`), or
:class:`Delayed` when the answer must wait (a fetch waiting for data).

When a handler raises, the request is answered the way Kafka answers it (``AbstractRequest.getErrorResponse``):
``error_response`` builds the same response with an error code in every place the API has one; when an API
has no way to report an error (a Produce with ``acks=0``), the connection is closed.
"""
from __future__ import annotations

import asyncio

from typing import Any, Awaitable, Callable, NamedTuple, Optional

from kafkalab.protocol import response_class

__all__ = ["Handler", "handles", "REGISTRY", "Delayed", "top_level_error", "callback_future"]


class Handler(NamedTuple):
    api_key: int
    min_version: int
    max_version: int
    func: Callable
    error_response: Optional[Callable]   # (request, error_code, message) -> response body or None (close)


REGISTRY: dict[int, Handler] = {}


def handles(api_key: int, versions: tuple[int, int], *, error_response: Optional[Callable] = None):
    """Register ``func`` as the handler of ``api_key`` for ``versions`` (inclusive)."""
    def register(func):
        REGISTRY[int(api_key)] = Handler(int(api_key), versions[0], versions[1], func, error_response)
        return func
    return register


class Delayed(NamedTuple):
    """A response that is produced later: the awaitable yields the body (or an action)."""

    awaitable: Awaitable[Any]


def top_level_error(api_key: int):
    """An ``error_response`` for APIs whose response has a top-level ``error_code`` (and maybe a message)."""
    def build(request, code: int, message: Optional[str]):
        cls = response_class(api_key)
        kwargs = {"error_code": code}
        if "error_message" in cls._fields:
            kwargs["error_message"] = message
        return cls(**kwargs)
    return build


def callback_future() -> tuple:
    """``(future, callback)``: a coordinator answers through ``callback(result)`` -- at once or later, from its
    own completion (an append reaching the in-sync replicas) -- and the handler awaits ``future``. A second call
    of the callback is ignored."""
    fut = asyncio.get_running_loop().create_future()

    def callback(result) -> None:
        if not fut.done():
            fut.set_result(result)
    return fut, callback
