"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the arithmetic, the stored credential, the messages.

Theory of operation
-------------------
SCRAM proves that both sides know a password without sending it and without the server storing it. The
server keeps, per user and mechanism, a **credential** (Kafka stores it as a user config in the coordination
store, under ``/config/users/<user>``, key ``SCRAM-SHA-256``)::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>

derived from the password once (:meth:`ScramFormatter.generate_credential`)::

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)      (iterations: 4096 .. 16384 in Kafka)
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")

The exchange, with RFC 7677's values (user ``user``, password ``pencil``)::

    client-first   n,,n=user,r=rOprNGfwEbeRWgbNEkqO
    server-first   r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096
    client-final   c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,
                   p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=
    server-final   v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=

``AuthMessage`` = client-first-bare + "," + server-first + "," + client-final-without-proof. The client sends
``proof = ClientKey XOR HMAC(StoredKey, AuthMessage)``; the server recovers ClientKey from it, hashes it
and compares with StoredKey in constant time; then it proves itself with ``HMAC(ServerKey, AuthMessage)``.
The server checks that the client-final nonce carries the combined nonce it sent (CVE-2024-56128: Kafka before
3.7.2/3.8.1/3.9.0 did not check it at all; those releases check that it *ends with* the combined nonce, as
kafkalab does, because librdkafka before 2.6.1 repeats the client nonce; Kafka 4 demands equality). ``c=biws`` is base64 of the GS2 header ``n,,`` (no channel binding). User names
are escaped in messages (RFC 5802 §5.1: ``,`` -> ``=2C``, ``=`` -> ``=3D``).

Mirrors: ``clients/.../security/scram/internals/{ScramMechanism,ScramFormatter,ScramMessages}.java`` and
``ScramCredentialUtils.java``.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import re
import secrets
from typing import Optional

from kafkalab.security.errors import SaslException

__all__ = ["ScramMechanism", "SCRAM_MECHANISMS", "ScramCredential", "ScramFormatter", "credential_to_string",
           "credential_from_string", "escape_username", "unescape_username", "ClientFirstMessage",
           "ServerFirstMessage", "ClientFinalMessage", "ServerFinalMessage", "MAX_ITERATIONS"]

#: The most iterations AlterUserScramCredentials accepts (ZkAdminManager / ControllerApis ``maxIterations``).
MAX_ITERATIONS = 16384


@dataclasses.dataclass(frozen=True)
class ScramMechanism:
    mechanism_name: str
    hash_name: str
    type_id: int            # the byte AlterUserScramCredentials and DescribeUserScramCredentials carry
    min_iterations: int = 4096


SCRAM_MECHANISMS = {m.mechanism_name: m for m in (ScramMechanism("SCRAM-SHA-256", "sha256", 1),
                                                   ScramMechanism("SCRAM-SHA-512", "sha512", 2))}


@dataclasses.dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys are secrets
        return f"ScramCredential(iterations={self.iterations})"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SaslException("invalid base64") from None


def credential_to_string(credential: ScramCredential) -> str:
    return (f"salt={_b64(credential.salt)},stored_key={_b64(credential.stored_key)},"
            f"server_key={_b64(credential.server_key)},iterations={credential.iterations}")


def credential_from_string(text: str) -> ScramCredential:
    """Parse ``salt=..,stored_key=..,server_key=..,iterations=..``; ValueError if anything is missing."""
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError("Credentials not valid: " + ",".join(sorted(fields)))
    try:
        return ScramCredential(_unb64(fields["salt"]), _unb64(fields["stored_key"]), _unb64(fields["server_key"]),
                               int(fields["iterations"]))
    except SaslException:
        raise ValueError("Credentials not valid: bad base64") from None


def escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(saslname: str) -> str:
    """``=2C`` -> ``,`` and ``=3D`` -> ``=``; any other ``=`` is invalid (RFC 5802 §5.1)."""
    if re.search(r"=(?!2C|3D)", saslname):
        raise SaslException("Invalid username: " + saslname)
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramFormatter:
    """The SCRAM arithmetic of one mechanism."""

    def __init__(self, mechanism: ScramMechanism):
        self.mechanism = mechanism
        self.hash_name = mechanism.hash_name

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode("utf-8"), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def generate_credential(self, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
        """From a salted password (what AlterUserScramCredentials carries: the password never travels)."""
        return ScramCredential(salt, self.stored_key(self.client_key(salted_password)),
                               self.server_key(salted_password), iterations)

    def credential_from_password(self, password: str, iterations: int, salt: Optional[bytes] = None
                                 ) -> ScramCredential:
        salt = secrets.token_bytes(32) if salt is None else salt
        return self.generate_credential(salt, self.salted_password(password, salt, iterations), iterations)

    @staticmethod
    def auth_message(client_first: "ClientFirstMessage", server_first: "ServerFirstMessage",
                     client_final: "ClientFinalMessage") -> bytes:
        return (client_first.bare() + "," + server_first.to_string() + ","
                + client_final.without_proof()).encode("utf-8")

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        signature = self.hmac(self.stored_key(client_key), auth_message)
        return bytes(a ^ b for a, b in zip(client_key, signature))

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(server_key, auth_message)

    def verify_client_proof(self, stored_key: bytes, auth_message: bytes, proof: bytes) -> bool:
        """H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey, compared in constant time."""
        signature = self.hmac(stored_key, auth_message)
        if len(proof) != len(signature):
            return False
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        return hmac.compare_digest(self.hash(client_key), stored_key)


def secure_nonce() -> str:
    """A printable nonce without ``,`` (RFC 5802's ``printable``)."""
    return secrets.token_urlsafe(24)


# ------------------------------------------------------------------------------------------------ messages
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_EXTENSIONS = r"(?:,[A-Za-z][A-Za-z0-9]*=[\x01-\x2B\x2D-\x7F]*)*"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,n=(?P<saslname>{_SASLNAME}),"
                           rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
_SERVER_FIRST = re.compile(rf"(?:m=[^,]*,)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
                           rf"{_EXTENSIONS}")
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}),"
                           rf"p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_PRINTABLE})|v=(?P<signature>{_BASE64})){_EXTENSIONS}")


def _text(data: bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise SaslException("SCRAM message is not UTF-8") from None


@dataclasses.dataclass(frozen=True)
class ClientFirstMessage:
    username: str
    nonce: str
    authorization_id: str = ""
    extensions: str = ""

    @classmethod
    def parse(cls, data: bytes) -> "ClientFirstMessage":
        m = _CLIENT_FIRST.fullmatch(_text(data))
        if m is None:
            raise SaslException("Invalid SCRAM client first message format")
        authzid = unescape_username(m["authzid"]) if m["authzid"] else ""
        return cls(unescape_username(m["saslname"]), m["nonce"], authzid, m["extensions"] or "")

    def gs2_header(self) -> str:
        return f"n,{'a=' + escape_username(self.authorization_id) if self.authorization_id else ''},"

    def bare(self) -> str:
        return f"n={escape_username(self.username)},r={self.nonce}{self.extensions}"

    def to_bytes(self) -> bytes:
        return (self.gs2_header() + self.bare()).encode("utf-8")


@dataclasses.dataclass(frozen=True)
class ServerFirstMessage:
    nonce: str          # client nonce + server nonce
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, data: bytes) -> "ServerFirstMessage":
        m = _SERVER_FIRST.fullmatch(_text(data))
        if m is None:
            raise SaslException("Invalid SCRAM server first message format")
        return cls(m["nonce"], _unb64(m["salt"]), int(m["iterations"]))

    def to_string(self) -> str:
        return f"r={self.nonce},s={_b64(self.salt)},i={self.iterations}"

    def to_bytes(self) -> bytes:
        return self.to_string().encode("utf-8")


@dataclasses.dataclass(frozen=True)
class ClientFinalMessage:
    channel_binding: bytes
    nonce: str
    proof: bytes = b""
    extensions: str = ""

    @classmethod
    def parse(cls, data: bytes) -> "ClientFinalMessage":
        m = _CLIENT_FINAL.fullmatch(_text(data))
        if m is None:
            raise SaslException("Invalid SCRAM client final message format")
        return cls(_unb64(m["channel"]), m["nonce"], _unb64(m["proof"]), m["extensions"] or "")

    def without_proof(self) -> str:
        return f"c={_b64(self.channel_binding)},r={self.nonce}{self.extensions}"

    def to_bytes(self) -> bytes:
        return f"{self.without_proof()},p={_b64(self.proof)}".encode("utf-8")


@dataclasses.dataclass(frozen=True)
class ServerFinalMessage:
    server_signature: bytes = b""
    error: Optional[str] = None

    @classmethod
    def parse(cls, data: bytes) -> "ServerFinalMessage":
        m = _SERVER_FINAL.fullmatch(_text(data))
        if m is None:
            raise SaslException("Invalid SCRAM server final message format")
        return cls(_unb64(m["signature"]) if m["signature"] is not None else b"", m["error"])

    def to_bytes(self) -> bytes:
        return (f"e={self.error}" if self.error else f"v={_b64(self.server_signature)}").encode("utf-8")
