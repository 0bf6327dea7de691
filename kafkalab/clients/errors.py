"""Errors the clients raise: broker error codes as exceptions, plus the client's own timeouts.

Theory of operation
-------------------
A broker answers with an ``int16`` error code, and the client decides what it means: *retriable* codes
(``NOT_LEADER_OR_FOLLOWER``, ``REQUEST_TIMED_OUT``...) are retried, the others fail the operation. kafkalab's
clients raise every broker error as :class:`~kafkalab.protocol.KafkaProtocolError` (an
:class:`~kafkalab.protocol.ApiException`, like the broker's own errors), which carries ``error_code``, ``info``
(name, default message) and ``retriable`` straight from Kafka's error table. Failures that happen on
the client's side of the wire are mapped to the codes Java maps them to, so one retry rule covers both:
a lost connection is ``NETWORK_EXCEPTION`` (Java's ``NetworkException``), a request that got no answer within
``request.timeout.ms`` is ``REQUEST_TIMED_OUT``, and a record that could not be delivered within
``delivery.timeout.ms`` (or metadata that did not come within ``max.block.ms``) is a :class:`KafkaTimeoutError`
(Java's ``TimeoutException``), which is final.

Mirrors ``clients/src/main/java/org/apache/kafka/common/errors/`` (``RetriableException``,
``NetworkException``, ``TimeoutException``) and ``common/protocol/Errors.java``.
"""
from __future__ import annotations

from kafkalab.protocol import ErrorCode, KafkaProtocolError

__all__ = ["KafkaProtocolError", "NetworkException", "SslAuthenticationException", "RequestTimedOut",
           "KafkaTimeoutError", "ClientClosedError",
           "raise_for"]


class NetworkException(KafkaProtocolError):
    """The connection broke before the response arrived (retriable)."""

    error_code = ErrorCode.NETWORK_EXCEPTION

    def __init__(self, message: str):
        super().__init__(self.error_code, message)


class SslAuthenticationException(NetworkException):
    """The TLS handshake failed: the broker's certificate is not trusted or does not name the host, or the
    broker refused ours. Retrying cannot help, so it is not retried: the operation fails with the reason
    (Java's ``SslAuthenticationException``, raised from the metadata wait and admin calls)."""

    retriable = False


class RequestTimedOut(KafkaProtocolError):
    """No response within ``request.timeout.ms``; the connection is closed (retriable)."""

    error_code = ErrorCode.REQUEST_TIMED_OUT

    def __init__(self, message: str):
        super().__init__(self.error_code, message)


class KafkaTimeoutError(KafkaProtocolError):
    """A client-side deadline passed (``delivery.timeout.ms``, ``max.block.ms``); not retried."""

    error_code = ErrorCode.REQUEST_TIMED_OUT
    retriable = False  # final, unlike the REQUEST_TIMED_OUT a broker answers

    def __init__(self, message: str):
        super().__init__(self.error_code, message)


class ClientClosedError(RuntimeError):
    """The client was closed."""


def raise_for(code: int, message=None) -> None:
    """Raise :class:`KafkaProtocolError` unless ``code`` is 0 (NONE)."""
    if code:
        raise KafkaProtocolError(code, message or None)
