"""The two halves of a SCRAM exchange as small state machines: :class:`ScramSaslServer` and
:class:`ScramSaslClient` (plus :class:`PlainSaslClient`, the client half of PLAIN, for symmetry).

Theory of operation
-------------------
The server half has four states, fed one client token at a time by :meth:`ScramSaslServer.evaluate_response`:

================================  =============================================  ==============================
state                             client token                                   answer / next state
================================  =============================================  ==============================
RECEIVE_CLIENT_FIRST_MESSAGE      ``n,,n=alice,r=<cnonce>``                      server-first; RECEIVE_CLIENT_
                                                                                 FINAL_MESSAGE
RECEIVE_CLIENT_FINAL_MESSAGE      ``c=biws,r=<cnonce+snonce>,p=<proof>``         server-final ``v=..``; COMPLETE
(any)                             anything malformed or wrong                    FAILED (credential forgotten)
================================  =============================================  ==============================

Failures raise :class:`~.errors.SaslException` (the private reason: the broker logs it at debug level and
sends Kafka's generic message) or :class:`~.errors.SaslAuthenticationException` (its message may be shown).
An **unknown user** is not refused at the first message, as Kafka's server does: it gets a server-first with
a salt derived from its name (stable across attempts) and fails at the proof, exactly as a wrong password
does -- same error, same number of round trips, same work.

The client half checks what a server owes it: the combined nonce starts with its own nonce, the iteration
count is at least the mechanism's minimum (4096), and the server signature is right (a server that does not
know the password cannot produce it).

Mirrors: ``clients/.../security/scram/internals/ScramSaslServer.java`` and ``ScramSaslClient.java``.
"""
from __future__ import annotations

import enum
import hmac
import secrets
from typing import Callable, Optional

from kafkalab.security.errors import SaslAuthenticationException, SaslException
from kafkalab.security.plain import plain_client_token
from kafkalab.security.scram import (SCRAM_MECHANISMS, ClientFinalMessage, ClientFirstMessage, ScramCredential,
                                     ScramFormatter, ServerFinalMessage, ServerFirstMessage, secure_nonce)

__all__ = ["ScramSaslServer", "ScramSaslClient", "PlainSaslClient", "ScramServerState", "new_sasl_client"]

#: Per process: the stand-in salts of unknown users are derived from it (stable, not guessable from outside).
_UNKNOWN_USER_SECRET = secrets.token_bytes(32)


class ScramServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslServer:
    """The broker half: ``lookup(user) -> ScramCredential or None`` reads the stored credential."""

    def __init__(self, mechanism: str, lookup: Callable[[str], Optional[ScramCredential]], *,
                 nonce: Callable[[], str] = secure_nonce):
        self.mechanism = mechanism
        self.formatter = ScramFormatter(SCRAM_MECHANISMS[mechanism])
        self._lookup = lookup
        self._nonce = nonce
        self.state = ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self.authorization_id: Optional[str] = None
        self._credential: Optional[ScramCredential] = None
        self._known_user = False
        self._client_first: Optional[ClientFirstMessage] = None
        self._server_first: Optional[ServerFirstMessage] = None

    @property
    def complete(self) -> bool:
        return self.state is ScramServerState.COMPLETE

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self.state is ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                return self._client_first_message(bytes(response))
            if self.state is ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                return self._client_final_message(bytes(response))
            raise SaslException(f"Unexpected challenge in Sasl server state {self.state.value}")
        except BaseException:
            self._fail()
            raise

    def _client_first_message(self, data: bytes) -> bytes:
        first = ClientFirstMessage.parse(data)
        if "tokenauth=" in first.extensions:
            raise SaslException("Delegation token authentication is not supported")
        if first.authorization_id and first.authorization_id != first.username:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that "
                                              "is different from username")
        credential = self._lookup(first.username)
        self._known_user = credential is not None
        if credential is None:
            credential = self._stand_in(first.username)
        minimum = self.formatter.mechanism.min_iterations
        if credential.iterations < minimum:
            raise SaslException(f"Iterations {credential.iterations} is less than the minimum {minimum} for "
                                f"{self.mechanism}")
        self._credential, self._client_first = credential, first
        self._server_first = ServerFirstMessage(first.nonce + self._nonce(), credential.salt, credential.iterations)
        self.state = ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE
        return self._server_first.to_bytes()

    def _stand_in(self, username: str) -> ScramCredential:
        """A credential nobody knows the password of, with a salt that is the same at every attempt."""
        salt = hmac.new(_UNKNOWN_USER_SECRET, f"{self.mechanism}:{username}".encode(), "sha256").digest()
        return ScramCredential(salt, secrets.token_bytes(len(self.formatter.hash(b""))),
                               secrets.token_bytes(len(self.formatter.hash(b""))),
                               self.formatter.mechanism.min_iterations)

    def _client_final_message(self, data: bytes) -> bytes:
        final = ClientFinalMessage.parse(data)
        first, server_first, credential = self._client_first, self._server_first, self._credential
        # CVE-2024-56128: the client must send back the combined nonce. Kafka 3.8.1/3.9 check that the nonce
        # *ends with* it, because librdkafka before 2.6.1 (kcat 1.7 in Debian: 2.0.2) sends the client part
        # twice (librdkafka#4895); Kafka 4 demands equality and refuses those clients.
        if not final.nonce.endswith(server_first.nonce):
            raise SaslException("Invalid client nonce in the final client message.")
        if not hmac.compare_digest(final.channel_binding, first.gs2_header().encode("utf-8")):
            raise SaslException("Invalid channel binding in the final client message.")
        auth_message = ScramFormatter.auth_message(first, server_first, final)
        proof_ok = self.formatter.verify_client_proof(credential.stored_key, auth_message, final.proof)
        if not (proof_ok and self._known_user):
            raise SaslException("Invalid client credentials")
        signature = self.formatter.server_signature(credential.server_key, auth_message)
        self.authorization_id = first.username
        self.state = ScramServerState.COMPLETE
        self._credential = None
        return ServerFinalMessage(signature).to_bytes()

    def _fail(self) -> None:
        self.state = ScramServerState.FAILED
        self._credential = None


class ScramSaslClient:
    """The client half: :meth:`initial_response`, then :meth:`evaluate_challenge` for each server message
    (the server-first gets the client-final back; the server-final gets None and completes the exchange)."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: Optional[str] = None):
        self.mechanism = mechanism
        self.formatter = ScramFormatter(SCRAM_MECHANISMS[mechanism])
        self._password = password
        self._first = ClientFirstMessage(username, nonce or secure_nonce())
        self._auth_message: Optional[bytes] = None
        self._salted: Optional[bytes] = None
        self.complete = False

    def initial_response(self) -> bytes:
        return self._first.to_bytes()

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        if self._auth_message is None:
            return self._server_first(bytes(challenge))
        if not self.complete:
            return self._server_final(bytes(challenge))
        raise SaslAuthenticationException("Unexpected challenge after the SCRAM exchange completed")

    def _server_first(self, data: bytes) -> bytes:
        try:
            server_first = ServerFirstMessage.parse(data)
        except SaslException as e:
            raise SaslAuthenticationException(str(e)) from None
        if not server_first.nonce.startswith(self._first.nonce) or server_first.nonce == self._first.nonce:
            raise SaslAuthenticationException("Invalid server nonce: does not start with client nonce")
        minimum = self.formatter.mechanism.min_iterations
        if server_first.iterations < minimum:
            raise SaslAuthenticationException(f"Requested iterations {server_first.iterations} is less than the "
                                              f"minimum {minimum} for {self.mechanism}")
        self._salted = self.formatter.salted_password(self._password, server_first.salt, server_first.iterations)
        final = ClientFinalMessage(self._first.gs2_header().encode("utf-8"), server_first.nonce)
        self._auth_message = ScramFormatter.auth_message(self._first, server_first, final)
        proof = self.formatter.client_proof(self._salted, self._auth_message)
        return ClientFinalMessage(final.channel_binding, final.nonce, proof).to_bytes()

    def _server_final(self, data: bytes) -> None:
        try:
            server_final = ServerFinalMessage.parse(data)
        except SaslException as e:
            raise SaslAuthenticationException(str(e)) from None
        if server_final.error:
            raise SaslAuthenticationException(f"Sasl authentication using {self.mechanism} failed with error: "
                                              f"{server_final.error}")
        expected = self.formatter.server_signature(self.formatter.server_key(self._salted), self._auth_message)
        if not hmac.compare_digest(expected, server_final.server_signature):
            raise SaslAuthenticationException("Invalid server signature in server final message")
        self.complete = True
        self._password = self._salted = None
        return None


class PlainSaslClient:
    """The client half of PLAIN: one token, an empty answer."""

    mechanism = "PLAIN"

    def __init__(self, username: str, password: str):
        self._token = plain_client_token(username, password)
        self.complete = False

    def initial_response(self) -> bytes:
        return self._token

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        self.complete = True
        self._token = b""
        return None


def new_sasl_client(mechanism: str, username: str, password: str):
    """The client half of ``mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
    if mechanism == "PLAIN":
        return PlainSaslClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramSaslClient(mechanism, username, password)
    raise ValueError(f"Unsupported SASL mechanism {mechanism}")
