"""SCRAM users through the admin protocol: ``Admin.describe_user_scram_credentials`` and
``Admin.alter_user_scram_credentials`` (DescribeUserScramCredentials 50, AlterUserScramCredentials 51).

Theory of operation
-------------------
The password never leaves the client. For an upsertion the client picks a random salt, computes
``SaltedPassword = PBKDF2(password, salt, iterations)`` itself and sends salt, salted password and iteration
count; the broker derives the stored and server keys from them and keeps those (see
:mod:`kafkalab.security.scram`). Describing users returns mechanisms and iteration counts only. Errors come
back per user with Kafka's codes (UNACCEPTABLE_CREDENTIAL for iterations outside 4096-16384,
RESOURCE_NOT_FOUND for an unknown user, ...) and are raised as :class:`~kafkalab.clients.admin.AdminError`
only when asked for (``results[user]`` is None on success, else the error).

Mirrors: ``clients/.../clients/admin/{UserScramCredentialUpsertion,UserScramCredentialDeletion,
ScramCredentialInfo,UserScramCredentialsDescription}.java`` and ``KafkaAdminClient.alterUserScramCredentials``.
"""
from __future__ import annotations

import secrets
from typing import NamedTuple, Optional

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, request_class
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter

__all__ = ["ScramCredentialInfo", "UserScramCredentialUpsertion", "UserScramCredentialDeletion",
           "UserScramCredentialsDescription", "describe_user_scram_credentials", "alter_user_scram_credentials"]

_BY_TYPE = {m.type_id: name for name, m in SCRAM_MECHANISMS.items()}


class ScramCredentialInfo(NamedTuple):
    mechanism: str          # "SCRAM-SHA-256" or "SCRAM-SHA-512"
    iterations: int


class UserScramCredentialUpsertion(NamedTuple):
    user: str
    info: ScramCredentialInfo
    password: str

    def __repr__(self) -> str:
        return f"UserScramCredentialUpsertion({self.user!r}, {self.info})"


class UserScramCredentialDeletion(NamedTuple):
    user: str
    mechanism: str


class UserScramCredentialsDescription(NamedTuple):
    name: str
    credential_infos: tuple


def _type_id(mechanism: str) -> int:
    m = SCRAM_MECHANISMS.get(mechanism)
    return m.type_id if m is not None else 0          # 0: UNKNOWN, which the broker refuses with its message


async def describe_user_scram_credentials(client, users: Optional[list] = None) -> dict:
    """{user: UserScramCredentialsDescription or ApiException}."""
    Req = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    names = None if users is None else tuple(Req.UserName(name=u) for u in users)
    resp = await client.send_any(Req(users=names))
    body = resp.body
    if body.error_code:
        raise ApiException(body.error_code, body.error_message)
    out = {}
    for r in body.results:
        if r.error_code:
            out[r.user] = ApiException(r.error_code, r.error_message)
        else:
            out[r.user] = UserScramCredentialsDescription(r.user, tuple(
                ScramCredentialInfo(_BY_TYPE.get(i.mechanism, "UNKNOWN"), i.iterations) for i in r.credential_infos))
    return out


async def alter_user_scram_credentials(client, alterations) -> dict:
    """{user: None (done) or ApiException}."""
    Req = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    upsertions, deletions = [], []
    for a in alterations:
        if isinstance(a, UserScramCredentialUpsertion):
            salt = secrets.token_bytes(32)
            mechanism = SCRAM_MECHANISMS.get(a.info.mechanism)
            salted = ScramFormatter(mechanism).salted_password(a.password, salt, a.info.iterations) \
                if mechanism is not None and 0 < a.info.iterations <= 16384 else b""
            upsertions.append(Req.ScramCredentialUpsertion(name=a.user, mechanism=_type_id(a.info.mechanism),
                                                           iterations=a.info.iterations, salt=salt,
                                                           salted_password=salted))
        elif isinstance(a, UserScramCredentialDeletion):
            deletions.append(Req.ScramCredentialDeletion(name=a.user, mechanism=_type_id(a.mechanism)))
        else:
            raise TypeError(f"not a SCRAM credential alteration: {a!r}")
    resp = await client.send_any(Req(deletions=tuple(deletions), upsertions=tuple(upsertions)))
    return {r.user: None if r.error_code == ErrorCode.NONE else ApiException(r.error_code, r.error_message)
            for r in resp.body.results}
