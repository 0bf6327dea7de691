"""The client's side of a SASL login: ``SaslClientAuthenticator``, sans-IO, for kafkalab's clients and for
brokers talking to brokers.

Theory of operation
-------------------
After ApiVersions (which the connection sends anyway) the client sends **SaslHandshake v1** naming its
mechanism, then one **SaslAuthenticate** per token of the mechanism's client half (PLAIN: one; SCRAM: two)
until the mechanism is complete. The authenticator only builds request bodies and reads response bodies;
:func:`authenticate` drives it over any ``send(api_key, api_version, body) -> response body`` coroutine, so
the same code serves a client's connection and a broker's inter-broker connection.

Errors are raised as Kafka's clients raise them: UNSUPPORTED_SASL_MECHANISM (33) from the handshake as
:class:`~.errors.UnsupportedSaslMechanismException` ("Client SASL mechanism 'X' not enabled in the server,
enabled mechanisms are [..]"), a SaslAuthenticate error as :class:`~.errors.SaslAuthenticationException`
with the broker's message. The final response's ``session_lifetime_ms`` (KIP-368) says when the client must
log in again on the same connection: Kafka's clients pick a moment between 85% and 95% of it
(:meth:`SaslClientAuthenticator.reauthentication_delay_ms`).

Mirrors: ``clients/.../security/authenticator/SaslClientAuthenticator.java``.
"""
from __future__ import annotations

import random
from typing import Awaitable, Callable, NamedTuple, Optional

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, request_class
from kafkalab.security.errors import (IllegalSaslStateException, SaslAuthenticationException,
                                      UnsupportedSaslMechanismException)
from kafkalab.security.scram_sasl import new_sasl_client

__all__ = ["SaslClientAuthenticator", "SaslLogin", "authenticate", "SUPPORTED_MECHANISMS"]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SaslLogin(NamedTuple):
    """What a client logs in with: a client's ``sasl.jaas.config``, or a broker's on the inter-broker listener."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:   # never print the password
        return f"SaslLogin({self.mechanism}, {self.username})"


class SaslClientAuthenticator:
    def __init__(self, mechanism: str, username: str, password: str, *, authenticate_version: int = 2):
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ValueError(f"Unsupported SASL mechanism {mechanism}; kafkalab's clients support "
                             f"{', '.join(SUPPORTED_MECHANISMS)}")
        self.mechanism = mechanism
        self.authenticate_version = authenticate_version
        self._client = new_sasl_client(mechanism, username, password)
        self._next_token: Optional[bytes] = None
        self.session_lifetime_ms = 0

    @property
    def complete(self) -> bool:
        return self._client.complete

    def handshake_request(self):
        return ApiKey.SASL_HANDSHAKE, 1, request_class(ApiKey.SASL_HANDSHAKE)(mechanism=self.mechanism)

    def on_handshake_response(self, body) -> None:
        if body.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise UnsupportedSaslMechanismException(
                f"Client SASL mechanism '{self.mechanism}' not enabled in the server, enabled mechanisms are "
                f"[{', '.join(body.mechanisms or ())}]")
        if body.error_code == ErrorCode.ILLEGAL_SASL_STATE:
            raise IllegalSaslStateException("Unexpected handshake request with client mechanism "
                                            f"{self.mechanism}, enabled mechanisms are "
                                            f"[{', '.join(body.mechanisms or ())}]")
        if body.error_code != ErrorCode.NONE:
            raise ApiException(body.error_code)
        self._next_token = self._client.initial_response()

    def next_request(self):
        """The next SaslAuthenticate request, or None when the exchange is over."""
        if self._next_token is None:
            return None
        token, self._next_token = self._next_token, None
        return (ApiKey.SASL_AUTHENTICATE, self.authenticate_version,
                request_class(ApiKey.SASL_AUTHENTICATE)(auth_bytes=token))

    def on_authenticate_response(self, body) -> None:
        if body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED:
            raise SaslAuthenticationException(body.error_message)
        if body.error_code != ErrorCode.NONE:
            raise ApiException(body.error_code, body.error_message)
        answer = self._client.evaluate_challenge(bytes(body.auth_bytes or b""))
        if answer is not None:
            self._next_token = answer
        elif not self._client.complete:
            raise SaslAuthenticationException("SASL exchange ended before the mechanism completed")
        if self._client.complete:
            self.session_lifetime_ms = getattr(body, "session_lifetime_ms", 0) or 0

    def reauthentication_delay_ms(self, rng: Callable[[], float] = random.random) -> Optional[int]:
        """When to log in again (KIP-368): 85-95% of the session lifetime, None if the session never ends."""
        if not self.session_lifetime_ms:
            return None
        return int(self.session_lifetime_ms * (0.85 + 0.10 * rng()))


async def authenticate(send: Callable[[int, int, object], Awaitable[object]], mechanism: str, username: str,
                       password: str) -> SaslClientAuthenticator:
    """Log in over ``send``; returns the finished authenticator (``session_lifetime_ms``) or raises."""
    auth = SaslClientAuthenticator(mechanism, username, password)
    key, version, body = auth.handshake_request()
    auth.on_handshake_response(await send(key, version, body))
    while (request := auth.next_request()) is not None:
        key, version, body = request
        auth.on_authenticate_response(await send(key, version, body))
    if not auth.complete:
        raise SaslAuthenticationException("SASL exchange ended before the mechanism completed")
    return auth
