"""Who is on the other end of a connection: Kafka's ``KafkaPrincipal``, printed ``User:alice``.

Theory of operation
-------------------
Every request a broker handles carries the principal of its connection, decided once when the connection
is authenticated: ``User:ANONYMOUS`` on PLAINTEXT (and on SSL without a client certificate), the SASL user
name on SASL listeners, the client certificate's distinguished name (after ``ssl.principal.mapping.rules``)
on SSL listeners with client authentication. ACLs and ``super.users`` name principals the same way.

A :class:`KafkaPrincipal` *is* its printed form (a ``str`` subclass), so it compares, hashes and logs as
``"User:alice"`` and goes wherever a principal string went before; ``principal_type`` and ``name`` take it
apart.

The authorizer only ever compares principals, and ACLs store them as the string ``<type>:<name>``
(``SecurityUtils.parseKafkaPrincipal`` splits at the first colon).

Mirrors: ``clients/src/main/java/org/apache/kafka/common/security/auth/KafkaPrincipal.java``.
"""
from __future__ import annotations

__all__ = ["KafkaPrincipal", "USER_TYPE", "ANONYMOUS", "ANONYMOUS_PRINCIPAL", "WILDCARD_PRINCIPAL", "parse_principal"]

USER_TYPE = "User"


class KafkaPrincipal(str):
    """``KafkaPrincipal("User", "alice") == "User:alice"``."""

    __slots__ = ()

    def __new__(cls, principal_type: str, name: str) -> "KafkaPrincipal":
        return super().__new__(cls, f"{principal_type}:{name}")

    def __getnewargs__(self):
        return (self.principal_type, self.name)

    @property
    def principal_type(self) -> str:
        return self.partition(":")[0]

    @property
    def name(self) -> str:
        return self.partition(":")[2]

    @classmethod
    def from_string(cls, text: str) -> "KafkaPrincipal":
        """``"User:alice"`` -> ``KafkaPrincipal("User", "alice")`` (``SecurityUtils.parseKafkaPrincipal``)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return cls(principal_type, name)

    def __repr__(self) -> str:
        return f"KafkaPrincipal({self.principal_type!r}, {self.name!r})"


#: The principal of an unauthenticated connection (``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
ANONYMOUS_PRINCIPAL = ANONYMOUS
#: ``User:*`` in an ACL: every user.
WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")


def parse_principal(text: str) -> KafkaPrincipal:
    """``"User:alice"`` -> ``KafkaPrincipal("User", "alice")``; ValueError with Kafka's message otherwise (a type
    and a name are both required)."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    principal_type, _, name = text.partition(":")
    if not principal_type or not name:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(principal_type, name)
