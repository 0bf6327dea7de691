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

Mirrors: ``clients/src/main/java/org/apache/kafka/common/security/auth/KafkaPrincipal.java``.
"""
from __future__ import annotations

__all__ = ["KafkaPrincipal", "USER_TYPE", "ANONYMOUS"]

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
