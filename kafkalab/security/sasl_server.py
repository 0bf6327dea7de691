"""The broker's side of a SASL login as a state table: ``SaslServerAuthenticator``, fed frames, answering
decisions.

Theory of operation
-------------------
On a SASL_PLAINTEXT or SASL_SSL listener nothing reaches the broker's request handlers until the client has
logged in. Each frame the client sends before that goes to :meth:`SaslServerAuthenticator.receive`, which
returns one :class:`Decision`: send this response (or raw token) and carry on, let the broker answer it as an
ordinary request (ApiVersions), the client is authenticated as this principal, fail (send the error response
after ``connection.failed.authentication.delay.ms``, then close), or close at once without a response. No
socket, no clock, no event loop in here: a lab feeds it bytes by hand.

The states and what moves them (:data:`TRANSITIONS`; Kafka's ``SaslState`` names)::

    INITIAL_REQUEST ──ApiVersions──> HANDSHAKE_REQUEST ──SaslHandshake──> AUTHENTICATE ──last token──> COMPLETE
          └──────────────SaslHandshake──────────────────────────^   │ (more tokens: stays)
                                                                    └──bad token──> FAILED
    COMPLETE ──SaslHandshake (re-authentication, KIP-368)──> REAUTH_PROCESS_HANDSHAKE ──> AUTHENTICATE ...

* Before authentication only **ApiVersions** and **SaslHandshake** are accepted. Anything else -- another
  API, bytes that are not a Kafka request (a client configured for the wrong protocol) -- closes the
  connection without a response ("Unexpected Kafka request of type X during SASL handshake.").
* **SaslHandshake** names the mechanism. One the listener does not enable gets UNSUPPORTED_SASL_MECHANISM
  (33) with the enabled list, then the close. **v0**: the tokens then travel as raw size-prefixed frames,
  without request headers (a failure can only close the connection). **v1** (KIP-152): every token comes in a
  **SaslAuthenticate** request (v0-2) and its answer, with error code and message, in the response. Any other
  request then fails the login with ILLEGAL_SASL_STATE (34), "Unexpected Kafka request of type METADATA during
  SASL authentication.": as Kafka's ``getErrorResponse`` of that request -- the request's own response with the
  error code in every place it has one (a Metadata response names each topic asked for with error 34, a
  Produce response each partition) -- sent after ``connection.failed.authentication.delay.ms``, then the
  close. The broker hands in its handlers' error responses (``error_response``); without them a response
  with a top-level ``error_code`` gets it there, and one without (nowhere to say it) only the close.
* A failed login gets SASL_AUTHENTICATION_FAILED (58). If the mechanism raised
  :class:`~.errors.SaslAuthenticationException`, its message is sent; for any other reason (unknown user,
  wrong proof, wrong nonce) the client gets Kafka's generic "Authentication failed during authentication due
  to invalid credentials with SASL mechanism SCRAM-SHA-256" and the reason is only logged at debug level.
* Frames before authentication are capped by ``sasl.server.max.receive.size`` (512 KiB): the socket server
  reads them with that limit (:attr:`max_receive_size`) and closes on a larger size prefix ("Failing SASL
  authentication due to invalid receive size").
* **Re-authentication** (KIP-368, on when ``connections.max.reauth.ms`` > 0): the final SaslAuthenticate
  response (v1+) carries ``session_lifetime_ms``; the client logs in again on the same connection before the
  session ends, with the same mechanism and as the same principal ("Cannot change principals during
  re-authentication"); a connection whose session has ended is closed at its next request
  (:meth:`session_expired`).

Worked example (PLAIN, handshake v1)::

    client: ApiVersions v3            -> FORWARD (the broker answers it)             state HANDSHAKE_REQUEST
    client: SaslHandshake v1 "PLAIN"  -> CONTINUE, response error 0, [PLAIN]          state AUTHENTICATE
    client: SaslAuthenticate v2 b"\\0alice\\0alice-secret"
                                      -> AUTHENTICATED User:alice, response error 0   state COMPLETE

Mirrors: ``clients/.../security/authenticator/SaslServerAuthenticator.java`` (``SaslState``,
``handleKafkaRequest``, ``handleSaslToken``, ``ReauthInfo``).
"""
from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Callable, Optional, Sequence

from kafkalab.protocol import (ApiKey, DecodeError, ErrorCode, Request, Response, api_name, decode_request,
                               make_response, response_class)
from kafkalab.security.errors import SaslAuthenticationException, SaslException
from kafkalab.security.principal import USER_TYPE, KafkaPrincipal

__all__ = ["SaslState", "Outcome", "Decision", "SaslServerAuthenticator", "TRANSITIONS", "generic_failure_message",
           "top_level_error_response", "kafka_api_name"]

log = logging.getLogger("kafkalab.security.SaslServerAuthenticator")


class SaslState(str, enum.Enum):
    INITIAL_REQUEST = "INITIAL_REQUEST"
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"
    REAUTH_PROCESS_HANDSHAKE = "REAUTH_PROCESS_HANDSHAKE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"

    def __str__(self) -> str:
        return self.value


S = SaslState

#: (state, what arrived) -> the next state. Anything not in the table fails the login.
TRANSITIONS: dict = {
    (S.INITIAL_REQUEST, "ApiVersions"): S.HANDSHAKE_REQUEST,
    (S.INITIAL_REQUEST, "ApiVersions (version too new)"): S.HANDSHAKE_OR_VERSIONS_REQUEST,
    (S.INITIAL_REQUEST, "SaslHandshake"): S.AUTHENTICATE,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, "ApiVersions"): S.HANDSHAKE_REQUEST,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, "ApiVersions (version too new)"): S.HANDSHAKE_OR_VERSIONS_REQUEST,
    (S.HANDSHAKE_OR_VERSIONS_REQUEST, "SaslHandshake"): S.AUTHENTICATE,
    (S.HANDSHAKE_REQUEST, "SaslHandshake"): S.AUTHENTICATE,
    (S.AUTHENTICATE, "token (more to come)"): S.AUTHENTICATE,
    (S.AUTHENTICATE, "token (last)"): S.COMPLETE,
    (S.COMPLETE, "SaslHandshake (re-authentication)"): S.REAUTH_PROCESS_HANDSHAKE,
    (S.REAUTH_PROCESS_HANDSHAKE, "SaslHandshake"): S.AUTHENTICATE,
    (S.REAUTH_PROCESS_HANDSHAKE, "SaslHandshake (other mechanism)"): S.REAUTH_BAD_MECHANISM,
}


class Outcome(str, enum.Enum):
    CONTINUE = "continue"             # send what there is; the login goes on
    FORWARD = "forward"               # an ordinary request (ApiVersions): the broker answers it
    AUTHENTICATED = "authenticated"   # send what there is; from now on requests flow as ``principal``
    FAIL = "fail"                     # wait connection.failed.authentication.delay.ms, send, close
    CLOSE = "close"                   # close now, no response


@dataclasses.dataclass(frozen=True)
class Decision:
    outcome: Outcome
    response: Optional[Response] = None   # a Kafka response (header + body) to send
    token: Optional[bytes] = None         # or a raw size-prefixed token (SaslHandshake v0)
    reason: str = ""                      # why a login failed or a connection closes (for the log, never secret)
    principal: Optional[KafkaPrincipal] = None
    session_lifetime_ms: int = 0


def kafka_api_name(api_key: int) -> str:
    """The API as Kafka's ``ApiKeys`` names it in messages: ``METADATA``, ``SASL_HANDSHAKE``."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return api_name(api_key)


def top_level_error_response(request: Request, error_code: int, message: Optional[str]):
    """The default ``error_response``: the request's response body with ``error_code`` (and ``error_message``)
    at the top level, or None when that response has no top-level error code."""
    cls = response_class(request.api_key)
    if "error_code" not in cls._fields:
        return None
    fields = {"error_code": error_code}
    if "error_message" in cls._fields:
        fields["error_message"] = message
    return cls(**fields)


def generic_failure_message(mechanism: str, reauthenticating: bool = False) -> str:
    what = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


class SaslServerAuthenticator:
    """One connection's login. ``server_factory(mechanism)`` makes the mechanism's server half (an object
    with ``evaluate_response(bytes) -> bytes``, ``complete`` and ``authorization_id``); ``supported_versions``
    is what the broker advertises (API key -> (min, max)); ``error_response(request, error_code, message)`` the
    body answering a request with an error, None when the request has no way to carry one (Kafka's
    ``AbstractRequest.getErrorResponse``)."""

    def __init__(self, enabled_mechanisms: Sequence[str], server_factory: Callable[[str], object],
                 supported_versions: dict, *, max_receive_size: int = 524288, connections_max_reauth_ms: int = 0,
                 listener: str = "", error_response: Callable = top_level_error_response):
        self.enabled_mechanisms = list(enabled_mechanisms)
        self._server_factory = server_factory
        self.supported_versions = supported_versions
        self.max_receive_size = max_receive_size
        self.connections_max_reauth_ms = connections_max_reauth_ms
        self.listener = listener
        self._error_response = error_response
        self.state = S.INITIAL_REQUEST
        self.mechanism: Optional[str] = None
        self.handshake_version = 1
        self.principal: Optional[KafkaPrincipal] = None
        self.session_expiration_ms: Optional[int] = None
        self._server = None
        self._reauthenticating = False
        self._bad_mechanism = ""
        self.history: list = []   # (state, event, next state): the path of this login, for labs

    # ------------------------------------------------------------------------------------------ queries
    @property
    def authenticated(self) -> bool:
        """True once logged in, and during a re-authentication (ordinary requests then wait their turn)."""
        return self.principal is not None and self.state is S.COMPLETE

    def session_expired(self, now_ms: int) -> bool:
        return self.session_expiration_ms is not None and now_ms > self.session_expiration_ms

    def begins_reauthentication(self, frame) -> bool:
        """A SaslHandshake on an authenticated connection whose session can end starts a re-authentication;
        without ``connections.max.reauth.ms`` it is an ordinary request (the broker answers ILLEGAL_SASL_STATE)."""
        if self.state is not S.COMPLETE or self.session_expiration_ms is None or len(frame) < 2:
            return False
        return int.from_bytes(bytes(frame[:2]), "big", signed=True) == ApiKey.SASL_HANDSHAKE

    # ------------------------------------------------------------------------------------------ input
    def receive(self, frame, now_ms: int) -> Decision:
        """Feed one frame (without its size prefix) that arrived before authentication completed."""
        if len(frame) > self.max_receive_size:
            return self._close("Failing SASL authentication due to invalid receive size")
        if self.state is S.COMPLETE and self.begins_reauthentication(frame):
            self._move("SaslHandshake (re-authentication)")
            self._reauthenticating = True
        if self.state in (S.INITIAL_REQUEST, S.HANDSHAKE_OR_VERSIONS_REQUEST, S.HANDSHAKE_REQUEST,
                          S.REAUTH_PROCESS_HANDSHAKE):
            return self._kafka_request(frame)
        if self.state is S.AUTHENTICATE:
            if self.handshake_version == 0:
                return self._raw_token(frame, now_ms)
            return self._authenticate_request(frame, now_ms)
        if self.state is S.REAUTH_BAD_MECHANISM:
            return self._close(self._bad_mechanism)
        return self._close(f"Unexpected frame in SASL state {self.state}")

    # ------------------------------------------------------------------------------------------ handshake
    def _kafka_request(self, frame) -> Decision:
        try:
            request = decode_request(frame)
        except DecodeError as e:
            if self.state is S.INITIAL_REQUEST:
                return self._close("Invalid request, potential reasons: kafka client configured with the wrong "
                                   "security protocol, it does not support KIP-43 or it is not a kafka client "
                                   f"({type(e).__name__})")
            return self._close(f"Invalid request during SASL handshake: {e}")
        key, version = request.api_key, request.api_version
        if key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE) or (
                key == ApiKey.API_VERSIONS and self.state not in (S.INITIAL_REQUEST, S.HANDSHAKE_OR_VERSIONS_REQUEST)):
            return self._close(f"Unexpected Kafka request of type {kafka_api_name(key)} during SASL handshake.")
        lo, hi = self.supported_versions.get(key, (0, -1))
        if key == ApiKey.API_VERSIONS:
            self._move("ApiVersions" if lo <= version <= hi else "ApiVersions (version too new)")
            return Decision(Outcome.FORWARD)
        if not lo <= version <= hi:
            return self._close(f"SaslHandshake v{version} is not supported")
        mechanism = request.body.mechanism
        mechanisms = tuple(self.enabled_mechanisms)
        body = response_class(ApiKey.SASL_HANDSHAKE)
        if mechanism not in self.enabled_mechanisms:
            self.state = S.FAILED
            response = make_response(body(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms),
                                     api_version=version, correlation_id=request.correlation_id)
            return Decision(Outcome.FAIL, response=response, reason=f"Unsupported SASL mechanism {mechanism}")
        response = make_response(body(error_code=ErrorCode.NONE, mechanisms=mechanisms), api_version=version,
                                 correlation_id=request.correlation_id)
        if self._reauthenticating and mechanism != self.mechanism:
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self.mechanism}' by {self.principal}")
            self._move("SaslHandshake (other mechanism)")
            return Decision(Outcome.CONTINUE, response=response)
        self.mechanism = mechanism
        self.handshake_version = version
        self._server = self._server_factory(mechanism)
        self._move("SaslHandshake")
        return Decision(Outcome.CONTINUE, response=response)

    # ------------------------------------------------------------------------------------------ tokens
    def _raw_token(self, frame, now_ms: int) -> Decision:
        """SaslHandshake v0: the frame is the token itself; a failure can only close the connection."""
        try:
            answer = self._server.evaluate_response(bytes(frame))
        except (SaslAuthenticationException, SaslException) as e:
            log.debug("SASL %s login failed on %s: %s", self.mechanism, self.listener, e)
            self.state = S.FAILED
            return Decision(Outcome.CLOSE, reason=generic_failure_message(self.mechanism, self._reauthenticating))
        if not self._server.complete:
            self._move("token (more to come)")
            return Decision(Outcome.CONTINUE, token=answer or b"")
        return self._completed(now_ms, token=answer or b"")

    def _authenticate_request(self, frame, now_ms: int) -> Decision:
        try:
            request = decode_request(frame)
        except DecodeError as e:
            return self._close(f"Invalid request during SASL authentication: {e}")
        key, version = request.api_key, request.api_version
        if key != ApiKey.SASL_AUTHENTICATE:
            return self._illegal_state(request)
        lo, hi = self.supported_versions.get(key, (0, -1))
        if not lo <= version <= hi:
            return self._close(f"Version {version} is not supported for apiKey SASL_AUTHENTICATE")
        body = response_class(ApiKey.SASL_AUTHENTICATE)

        def reply(**fields) -> Response:
            return make_response(body(**fields), api_version=version, correlation_id=request.correlation_id)
        try:
            answer = self._server.evaluate_response(bytes(request.body.auth_bytes or b""))
            if self._server.complete:
                self._check_principal_unchanged()
        except SaslAuthenticationException as e:
            self.state = S.FAILED
            message = str(e)
            return Decision(Outcome.FAIL, reason=message, response=reply(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b""))
        except SaslException as e:
            log.debug("SASL %s login failed on %s: %s", self.mechanism, self.listener, e)
            self.state = S.FAILED
            message = generic_failure_message(self.mechanism, self._reauthenticating)
            return Decision(Outcome.FAIL, reason=message, response=reply(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b""))
        if not self._server.complete:
            self._move("token (more to come)")
            return Decision(Outcome.CONTINUE, response=reply(error_code=ErrorCode.NONE, error_message=None,
                                                             auth_bytes=answer or b"", session_lifetime_ms=0))
        lifetime = self._session_lifetime_ms()
        return self._completed(now_ms, response=reply(error_code=ErrorCode.NONE, error_message=None,
                                                      auth_bytes=answer or b"", session_lifetime_ms=lifetime))

    def _illegal_state(self, request: Request) -> Decision:
        """Anything but SaslAuthenticate after SaslHandshake v1 (``IllegalSaslStateException``): the request's
        error response with ILLEGAL_SASL_STATE, then the close; only the close if it cannot carry the error."""
        self.state = S.FAILED
        reason = f"Unexpected Kafka request of type {kafka_api_name(request.api_key)} during SASL authentication."
        try:
            body = self._error_response(request, ErrorCode.ILLEGAL_SASL_STATE, reason)
        except Exception:   # a request the error builder cannot answer: the close says it all
            log.debug("no error response for %s", request.api_name(), exc_info=True)
            body = None
        if body is None:
            return Decision(Outcome.CLOSE, reason=reason)
        response = make_response(body, api_version=request.api_version, correlation_id=request.correlation_id)
        return Decision(Outcome.FAIL, response=response, reason=reason)

    def _check_principal_unchanged(self) -> None:
        new = KafkaPrincipal(USER_TYPE, self._server.authorization_id)
        if self._reauthenticating and new != self.principal:
            raise SaslAuthenticationException(f"Cannot change principals during re-authentication from "
                                              f"{self.principal}: {new}")

    def _session_lifetime_ms(self) -> int:
        return self.connections_max_reauth_ms if self.connections_max_reauth_ms > 0 else 0

    def _completed(self, now_ms: int, *, response: Optional[Response] = None, token: Optional[bytes] = None
                   ) -> Decision:
        self._move("token (last)")
        self.principal = KafkaPrincipal(USER_TYPE, self._server.authorization_id)
        lifetime = self._session_lifetime_ms()
        self.session_expiration_ms = now_ms + lifetime if lifetime else None
        self._reauthenticating = False
        self._server = None
        return Decision(Outcome.AUTHENTICATED, response=response, token=token, principal=self.principal,
                        session_lifetime_ms=lifetime)

    # ------------------------------------------------------------------------------------------ helpers
    def _move(self, event: str) -> None:
        target = TRANSITIONS.get((self.state, event))
        if target is None:  # a bug in this module, not bad input: every input path checks before moving
            raise RuntimeError(f"no transition from {self.state} on {event!r}")
        self.history.append((self.state, event, target))
        self.state = target

    def _close(self, reason: str) -> Decision:
        self.state = S.FAILED
        return Decision(Outcome.CLOSE, reason=reason)
