"""Who sent a request: Kafka's ``KafkaPrincipal``, a type and a name printed ``User:alice``.

Theory of operation
-------------------
Every connection has a principal. On a PLAINTEXT listener nobody has proved who they are, so the principal is
``User:ANONYMOUS``; after SASL it is ``User:<username>``; with TLS client certificates it is the certificate's
distinguished name. The authorizer only ever compares principals, and ACLs store them as the string
``<type>:<name>`` (``SecurityUtils.parseKafkaPrincipal`` splits at the first colon).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/security/auth/KafkaPrincipal.java``.
"""
from __future__ import annotations

import dataclasses

__all__ = ["KafkaPrincipal", "USER_TYPE", "ANONYMOUS_PRINCIPAL", "WILDCARD_PRINCIPAL", "parse_principal"]

USER_TYPE = "User"


@dataclasses.dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS_PRINCIPAL = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")


def parse_principal(text: str) -> KafkaPrincipal:
    """``"User:alice"`` -> ``KafkaPrincipal("User", "alice")``; ValueError with Kafka's message otherwise."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    principal_type, _, name = text.partition(":")
    if not principal_type or not name:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(principal_type, name)
