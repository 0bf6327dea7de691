"""An SSL context from Kafka's ``ssl.*`` settings, for a broker listener (server) or a connection (client).

Theory of operation
-------------------
Kafka turns a listener's or a client's ``ssl.*`` values into one ``SSLContext`` (``DefaultSslEngineFactory``)
and makes an ``SSLEngine`` from it per connection. Here :class:`SslFactory` makes a Python
:class:`ssl.SSLContext` that asyncio uses for every connection of the listener or client:

* **key store** -- the certificate chain and private key this side presents: ``ssl.keystore.type=PEM`` with
  ``ssl.keystore.location`` (one file: the PKCS#8 private key and the chain) or with
  ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (inline PEM); an encrypted key is opened with
  ``ssl.key.password``. A broker's SSL listener needs one (clients cannot verify a server without a
  certificate); a client needs one only to authenticate itself (mutual TLS).
* **trust store** -- the CA certificates whose signatures this side accepts: ``ssl.truststore.type=PEM`` with
  ``ssl.truststore.location`` or ``ssl.truststore.certificates``; none: the system's trusted CAs.
* **server side**: ``ssl.client.auth`` ``required`` (a client without a trusted certificate cannot connect),
  ``requested`` (a certificate is asked for, not required) or ``none``; the client certificate's subject,
  mapped by ``ssl.principal.mapping.rules``, becomes the connection's principal (:meth:`SslFactory.principal`).
* **client side**: the server's chain is always verified; ``ssl.endpoint.identification.algorithm=https``
  (the default) also checks that the certificate names the host connected to; empty turns that check off.
* ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3) and ``ssl.protocol`` bound the TLS versions.

Everything is checked when the factory is made -- at broker start-up, or when a client is created -- with
Kafka's messages where Kafka has one. What kafkalab does not implement is refused, never ignored: JKS and
PKCS12 stores, a key-store password with PEM, ``ssl.cipher.suites``. Messages name files, never their
contents: no key or password ever reaches a message or a log.

Mirrors: ``clients/.../common/security/ssl/DefaultSslEngineFactory.java`` (``createKeystore``,
``createTruststore``, ``createSslEngine``) and ``SslFactory.java``.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from typing import Any, Mapping, Optional

from kafkalab.common.config import ConfigException

from .principal import KafkaPrincipal
from .ssl_configs import PEM
from .ssl_principal import SslPrincipalMapper, principal_from_certificate

__all__ = ["SslFactory", "SERVER", "CLIENT", "NO_KEYSTORE_MESSAGE"]

SERVER, CLIENT = "server", "client"

#: What Kafka says when a server-side SSL context cannot complete a handshake with itself (no key store).
NO_KEYSTORE_MESSAGE = ("A client SSLEngine created with the provided settings can't connect to a server SSLEngine "
                       "created with those settings.")

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_PEM_ENTRY = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)
_VERIFY = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


def _secret(value: Any) -> Optional[str]:
    """A PASSWORD value (``Password`` or plain text) as text; None when unset."""
    if value is None:
        return None
    return getattr(value, "value", value)


class SslFactory:
    """``SslFactory(SERVER, values, listener_name="SSL")`` or ``SslFactory(CLIENT, values)``; ``values`` maps
    the ``ssl.*`` keys to parsed values (a broker listener's, after per-listener overrides, or a client's).
    ``context`` is the :class:`ssl.SSLContext`."""

    def __init__(self, mode: str, values: Mapping[str, Any], *, listener_name: Optional[str] = None):
        if mode not in (SERVER, CLIENT):
            raise ValueError(f"mode must be {SERVER!r} or {CLIENT!r}")
        self.mode = mode
        self.listener_name = listener_name
        self.client_auth = str(values.get("ssl.client.auth") or "none").lower() if mode == SERVER else "none"
        self.endpoint_identification = values.get("ssl.endpoint.identification.algorithm") or ""
        self.principal_mapper = SslPrincipalMapper(values.get("ssl.principal.mapping.rules"))
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if mode == SERVER else ssl.PROTOCOL_TLS_CLIENT)
        self._set_versions(values)
        if values.get("ssl.cipher.suites"):
            raise ConfigException("ssl.cipher.suites", values["ssl.cipher.suites"], "kafkalab cannot restrict "
                                  "cipher suites (Python's ssl module cannot choose TLS 1.3 suites): leave it "
                                  "unset to use the TLS library's secure defaults")
        self.has_keystore = self._load_keystore(values)
        self.has_truststore = self._load_truststore(values)
        if mode == SERVER:
            if not self.has_keystore:
                where = f"listener {listener_name}" if listener_name else "the listener"
                raise ConfigException(NO_KEYSTORE_MESSAGE, "javax.net.ssl.SSLHandshakeException: No available "
                                      "authentication scheme", f"{where} has no key store: set "
                                      f"ssl.keystore.type=PEM and ssl.keystore.location (or "
                                      f"ssl.keystore.certificate.chain and ssl.keystore.key)")
            self.context.check_hostname = False
            self.context.verify_mode = _VERIFY[self.client_auth]
            if self.client_auth != "none" and not self.has_truststore:
                self.context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        else:
            self.context.check_hostname = self.endpoint_identification.lower() == "https"
            self.context.verify_mode = ssl.CERT_REQUIRED
            if not self.has_truststore:
                self.context.load_default_certs(ssl.Purpose.SERVER_AUTH)

    def __repr__(self) -> str:
        return (f"SslFactory({self.mode}, listener={self.listener_name}, client_auth={self.client_auth}, "
                f"keystore={self.has_keystore}, truststore={self.has_truststore})")

    # ------------------------------------------------------------------------------------------ per connection
    def principal(self, ssl_object: Optional[ssl.SSLObject]) -> KafkaPrincipal:
        """The principal of a server-side connection once its handshake is done: the client certificate's
        distinguished name through ``ssl.principal.mapping.rules``, or ``User:ANONYMOUS`` without one."""
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        return principal_from_certificate(der, self.principal_mapper)

    # ------------------------------------------------------------------------------------------ set-up
    def _set_versions(self, values: Mapping[str, Any]) -> None:
        protocol = values.get("ssl.protocol") or "TLSv1.3"
        enabled = list(values.get("ssl.enabled.protocols") or _VERSIONS)
        unknown = [p for p in enabled if p not in _VERSIONS]
        if unknown:
            raise ConfigException("ssl.enabled.protocols", enabled, "kafkalab speaks TLSv1.2 and TLSv1.3 only")
        if protocol == "TLSv1.2":
            enabled = [p for p in enabled if p == "TLSv1.2"]
            if not enabled:
                raise ConfigException("ssl.enabled.protocols", values.get("ssl.enabled.protocols"),
                                      "no enabled protocol is available with ssl.protocol=TLSv1.2")
        versions = sorted(_VERSIONS[p] for p in enabled)
        self.context.minimum_version, self.context.maximum_version = versions[0], versions[-1]

    def _load_keystore(self, values: Mapping[str, Any]) -> bool:
        store_type = str(values.get("ssl.keystore.type") or "JKS")
        location = values.get("ssl.keystore.location")
        password = _secret(values.get("ssl.keystore.password"))
        key_password = _secret(values.get("ssl.key.password"))
        key = _secret(values.get("ssl.keystore.key"))
        chain = _secret(values.get("ssl.keystore.certificate.chain"))
        is_pem = store_type.upper() == PEM
        if key is not None:
            if not is_pem:
                raise ConfigException(f"SSL private key can be specified only for PEM, but key store type is "
                                      f"{store_type}.")
            if chain is None:
                raise ConfigException("SSL private key is specified, but certificate chain is not specified.")
            if location is not None:
                raise ConfigException("Both SSL key store location and separate private key are specified.")
            if password is not None:
                raise ConfigException("SSL key store password cannot be specified with PEM format, only key "
                                      "password may be specified.")
            self._load_inline_keystore(_normalized_pem(chain), _normalized_pem(key), key_password)
            return True
        if chain is not None:
            raise ConfigException("SSL certificate chain is specified, but private key is not specified")
        if location is None:
            if password is not None:
                raise ConfigException("SSL key store is not specified, but key store password is specified.")
            return False
        if not is_pem:
            raise ConfigException("ssl.keystore.type", store_type, "kafkalab reads PEM key stores only: convert "
                                  f"{location} to PEM (the PKCS#8 private key, then the certificate chain) and "
                                  f"set ssl.keystore.type=PEM")
        if password is not None:
            raise ConfigException("SSL key store password cannot be specified with PEM format, only key password "
                                  "may be specified")
        try:
            with open(location, "rb") as f:
                text = f.read().decode("ascii", errors="replace")
            _check_keystore_pem(text, key_password)
            self.context.load_cert_chain(location, location, password=lambda: (key_password or "").encode())
        except (OSError, ssl.SSLError, ValueError) as e:
            raise ConfigException(f"Failed to load PEM SSL keystore {location}: {_reason(e)}") from None
        return True

    def _load_inline_keystore(self, chain: str, key: str, key_password: Optional[str]) -> None:
        """``load_cert_chain`` reads files only: the inline PEM goes to a private temporary directory (0700)
        for the moment of loading and is removed at once."""
        try:
            _check_keystore_pem(key + "\n" + chain, key_password, certificates_in=chain)
            with tempfile.TemporaryDirectory(prefix="kafkalab-ssl-") as tmp:
                cert_path, key_path = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
                for path, text in ((cert_path, chain), (key_path, key)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "w") as f:
                        f.write(text)
                self.context.load_cert_chain(cert_path, key_path, password=lambda: (key_password or "").encode())
        except (OSError, ssl.SSLError, ValueError) as e:
            raise ConfigException(f"Invalid PEM keystore configs: {_reason(e)}") from None

    def _load_truststore(self, values: Mapping[str, Any]) -> bool:
        store_type = str(values.get("ssl.truststore.type") or "JKS")
        location = values.get("ssl.truststore.location")
        password = _secret(values.get("ssl.truststore.password"))
        certificates = _secret(values.get("ssl.truststore.certificates"))
        is_pem = store_type.upper() == PEM
        if certificates is not None:
            if not is_pem:
                raise ConfigException(f"SSL trust store certs can be specified only for PEM, but trust store type "
                                      f"is {store_type}.")
            if location is not None:
                raise ConfigException("Both SSL trust store location and separate trust certificates are "
                                      "specified.")
            if password is not None:
                raise ConfigException("SSL trust store password cannot be specified for PEM format.")
            try:
                _check_certificates(certificates)
                self.context.load_verify_locations(cadata=_normalized_pem(certificates))
            except (ssl.SSLError, ValueError) as e:
                raise ConfigException(f"Invalid PEM truststore configs: {_reason(e)}") from None
            return True
        if location is None:
            if password is not None:
                raise ConfigException("SSL trust store is not specified, but trust store password is specified.")
            return False
        if not is_pem:
            raise ConfigException("ssl.truststore.type", store_type, "kafkalab reads PEM trust stores only: convert "
                                  f"{location} to PEM (the trusted certificates) and set ssl.truststore.type=PEM")
        if password is not None:
            raise ConfigException("SSL trust store password cannot be specified for PEM format.")
        try:
            with open(location, "rb") as f:
                _check_certificates(f.read().decode("ascii", errors="replace"))
            self.context.load_verify_locations(cafile=location)
        except (OSError, ssl.SSLError, ValueError) as e:
            raise ConfigException(f"Failed to load PEM SSL keystore {location}: {_reason(e)}") from None
        return True


def _normalized_pem(text: str) -> str:
    """Inline PEM as OpenSSL reads it: each block's base64 re-wrapped at 64 characters. A value from a
    ``.properties`` file often arrives on one line (continuation lines joined), which Kafka's PEM parser
    accepts and OpenSSL does not."""
    blocks = []
    for label, body in _PEM_BLOCK.findall(text):
        data = "".join(body.split())
        lines = [data[i:i + 64] for i in range(0, len(data), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    return "\n".join(blocks) + "\n" if blocks else text


def _check_certificates(text: str) -> None:
    if "CERTIFICATE" not in _PEM_ENTRY.findall(text):
        raise ValueError("No matching CERTIFICATE entries in PEM file")


def _check_keystore_pem(text: str, key_password: Optional[str], certificates_in: Optional[str] = None) -> None:
    """Kafka's PEM rules: exactly one PKCS#8 private key (``PRIVATE KEY``, or ``ENCRYPTED PRIVATE KEY`` when
    ``ssl.key.password`` is set) and at least one certificate."""
    entries = _PEM_ENTRY.findall(text)
    keys = [e for e in entries if e.endswith("PRIVATE KEY")]
    if not keys:
        raise ValueError("No matching PRIVATE KEY entries in PEM file")
    if len(keys) != 1:
        raise ValueError(f"Expected one private key, but found {len(keys)}")
    expected = "ENCRYPTED PRIVATE KEY" if key_password else "PRIVATE KEY"
    if keys[0] != expected:
        raise ValueError(f"Private key could not be loaded: expected a PKCS#8 key (BEGIN {expected}), found "
                         f"BEGIN {keys[0]}" + ("" if key_password or keys[0] != "ENCRYPTED PRIVATE KEY"
                                               else " without ssl.key.password"))
    _check_certificates(text if certificates_in is None else certificates_in)


def _reason(error: BaseException) -> str:
    """An error's text without anything that could carry key material (OpenSSL names the failing step)."""
    if isinstance(error, ssl.SSLError):
        return error.reason or "the TLS library refused it"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return str(error)
