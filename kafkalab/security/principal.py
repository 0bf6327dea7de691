"""Who is on the other end of a connection: ``KafkaPrincipal``, printed ``User:alice``.

Theory of operation
-------------------
Every connection has a principal: ``User:ANONYMOUS`` on a PLAINTEXT listener, ``User:<name>`` once a SASL
login succeeded (the name the client authenticated as), the certificate's name on mutual TLS. The request
context of every request carries it; the authorizer's ACLs name principals the same way (``User:alice``).

Mirrors: ``clients/.../security/auth/KafkaPrincipal.java``.
"""
from __future__ import annotations

import dataclasses

__all__ = ["KafkaPrincipal", "USER_TYPE", "ANONYMOUS_PRINCIPAL"]

USER_TYPE = "User"


@dataclasses.dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def from_string(cls, text: str) -> "KafkaPrincipal":
        """``"User:alice"`` -> ``KafkaPrincipal("User", "alice")`` (``SecurityUtils.parseKafkaPrincipal``)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return cls(principal_type, name)


ANONYMOUS_PRINCIPAL = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
