"""The SASL error codes as exceptions, one class per code as Kafka has them.

Theory of operation
-------------------
Three error codes belong to authentication: UNSUPPORTED_SASL_MECHANISM (33) answers a SaslHandshake naming a
mechanism the listener does not enable, ILLEGAL_SASL_STATE (34) a request that does not fit the exchange,
SASL_AUTHENTICATION_FAILED (58) a login that failed. Each is an :class:`~kafkalab.protocol.ApiException`, so
broker and clients catch them by type. :class:`SaslException` is the mechanism's *private* reason (an unknown
user, a wrong nonce): it is logged at debug level on the broker and never sent; the peer gets Kafka's generic
message instead, so a failed login does not tell an attacker which part was wrong.

Mirrors: ``clients/.../errors/{SaslAuthenticationException,IllegalSaslStateException,
UnsupportedSaslMechanismException}.java`` and ``javax.security.sasl.SaslException``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiException, ErrorCode

__all__ = ["SaslAuthenticationException", "IllegalSaslStateException", "UnsupportedSaslMechanismException",
           "SaslException"]


class _OneCode(ApiException):
    """An ApiException whose code is fixed by its class: constructed with just the message."""

    def __init__(self, message=None):
        super().__init__(None, message)


class SaslAuthenticationException(_OneCode):
    """SASL_AUTHENTICATION_FAILED (58): its message goes to the client as it is."""

    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class IllegalSaslStateException(_OneCode):
    """ILLEGAL_SASL_STATE (34)."""

    error_code = ErrorCode.ILLEGAL_SASL_STATE


class UnsupportedSaslMechanismException(_OneCode):
    """UNSUPPORTED_SASL_MECHANISM (33)."""

    error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class SaslException(Exception):
    """A mechanism's internal reason for failing; never shown to the peer (it may say whether a user exists)."""
