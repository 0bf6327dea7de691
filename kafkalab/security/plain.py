"""SASL/PLAIN (RFC 4616): one message, ``[authzid] NUL authcid NUL passwd``, and an empty answer.

Theory of operation
-------------------
The client sends its user name and password in the clear (so PLAIN belongs on TLS: "SASL/PLAIN should be
used only with SSL"), in one token of three UTF-8 fields separated by NUL bytes::

    b"\\x00alice\\x00alice-secret"         authzid "" (act as myself), authcid "alice", password

The server splits it into exactly three tokens ("Invalid SASL/PLAIN response: expected 3 tokens, got N"),
refuses an empty user name or password, compares the password with the one configured for the user in
constant time (``hmac.compare_digest``), refuses an authzid other than the user name, and answers with an
empty token. A wrong password and an unknown user get the same message and take the same time: an unknown
user's password is compared against a dummy of the same length.

The broker's users come from the listener's JAAS line (``user_<name>="<password>"`` options, see
:mod:`.jaas`); :class:`PlainSaslServer` only needs a ``lookup(name) -> password or None``.

Mirrors: ``clients/.../security/plain/internals/PlainSaslServer.java`` and ``PlainServerCallbackHandler.java``.
"""
from __future__ import annotations

import hmac
from typing import Callable, Optional

from kafkalab.security.errors import SaslAuthenticationException

__all__ = ["PlainSaslServer", "plain_client_token", "MECHANISM"]

MECHANISM = "PLAIN"


def plain_client_token(username: str, password: str, authorization_id: str = "") -> bytes:
    """The client's one message: ``authzid NUL username NUL password`` in UTF-8."""
    return f"{authorization_id}\0{username}\0{password}".encode("utf-8")


class PlainSaslServer:
    """The broker half of PLAIN, fed the client's token by :meth:`evaluate_response`."""

    mechanism = MECHANISM

    def __init__(self, lookup: Callable[[str], Optional[str]]):
        self._lookup = lookup
        self.complete = False
        self.authorization_id: Optional[str] = None

    def evaluate_response(self, response: bytes) -> bytes:
        """Check the token; return the (empty) answer or raise :class:`SaslAuthenticationException`."""
        try:
            text = bytes(response).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationException("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationException(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationException("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationException("Authentication failed: password not specified")
        expected = self._lookup(username)
        candidate = password.encode("utf-8")
        # An unknown user is compared against a stand-in, so both failures cost the same.
        ok = hmac.compare_digest(candidate, expected.encode("utf-8") if expected is not None else bytes(len(candidate)))
        if not ok or expected is None:
            raise SaslAuthenticationException("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that is "
                                              "different from username")
        self.authorization_id = username
        self.complete = True
        return b""
