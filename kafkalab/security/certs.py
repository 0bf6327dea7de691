"""Certificates for a lab: a CA of our own, broker certificates and client certificates, as PEM files.

Theory of operation
-------------------
TLS needs three things a learner rarely has at hand: a certificate authority (CA) that both sides trust, a
certificate for each broker (its public key, signed by the CA, naming the host names and addresses clients
use to reach it, so hostname verification passes), and -- for mutual TLS -- a certificate for each client,
whose *subject* (``CN=alice,OU=...``) becomes the client's principal on the broker. Kafka's documentation
makes them with ``keytool`` and ``openssl``; here the ``cryptography`` library makes them in-process, so a
notebook or a test needs no command-line tool:

* :meth:`CertificateAuthority.create` -- a self-signed CA (basic constraints ``CA:TRUE``, key usage
  ``keyCertSign``);
* :meth:`CertificateAuthority.issue` -- a leaf certificate with subject alternative names (``localhost``,
  ``127.0.0.1`` by default), usable as a TLS server and client certificate, returned as an :class:`Identity`;
* :meth:`Identity.write` -- the PEM files Kafka's ``ssl.keystore.type=PEM`` reads: one file with the private
  key (PKCS#8, encrypted when a key password is given) followed by the certificate chain, plus the pieces
  separately for clients that want them apart (librdkafka's ``ssl.certificate.location`` and
  ``ssl.key.location``);
* :meth:`Identity.broker_configs` / :meth:`Identity.client_configs` -- the matching Kafka settings.

Keys are ECDSA P-256 by default (fast to make, understood by every client); ``key_type="rsa"`` gives RSA 2048.

Mirrors the role of ``docs/security.html`` "Encryption and Authentication using SSL" (steps 1-3: keys, a CA,
signing) and of Kafka's test helper ``clients/src/test/java/org/apache/kafka/test/TestSslUtils.java``.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .ssl_principal import distinguished_name

__all__ = ["CertificateAuthority", "Identity", "IdentityFiles", "DEFAULT_HOSTS"]

#: What a lab broker is reached by: hostname verification (``ssl.endpoint.identification.algorithm=https``)
#: checks the host a client connects to against these subject alternative names.
DEFAULT_HOSTS = ("localhost", "127.0.0.1", "::1")

_ATTRIBUTES = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME,
               "L": NameOID.LOCALITY_NAME, "ST": NameOID.STATE_OR_PROVINCE_NAME, "C": NameOID.COUNTRY_NAME}


def _new_key(key_type: str):
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"key_type must be 'ec' or 'rsa', not {key_type!r}")


def _name(common_name: str, **attributes: Optional[str]) -> x509.Name:
    """A subject in the usual order, most general first (``C, ST, L, O, OU, CN``): printed the RFC 2253 way
    (as Kafka prints a principal) it reads ``CN=...,OU=...,O=...``."""
    parts = [x509.NameAttribute(_ATTRIBUTES[k], v) for k in ("C", "ST", "L", "O", "OU")
             if (v := attributes.get(k)) is not None]
    return x509.Name(parts + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(hosts: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _validity(days: int) -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)   # a day back: clock skew


@dataclass(frozen=True)
class IdentityFiles:
    """The PEM files of one identity. ``keystore`` is what ``ssl.keystore.location`` (type PEM) reads: the
    private key, then the certificate chain; ``certificate`` and ``key`` are the same pieces apart;
    ``ca`` is the CA certificate (``ssl.truststore.location``, librdkafka's ``ssl.ca.location``)."""

    keystore: Path
    certificate: Path
    key: Path
    ca: Path


@dataclass(frozen=True)
class Identity:
    """A certificate issued by a :class:`CertificateAuthority`, with its private key (PEM)."""

    subject: str              # the distinguished name as Kafka prints it (RFC 2253): CN=...,OU=...
    certificate_pem: bytes
    private_key_pem: bytes    # PKCS#8; encrypted with key_password when one was given
    ca_pem: bytes
    key_password: Optional[str] = None

    @property
    def chain_pem(self) -> bytes:
        """This certificate followed by the CA's (``ssl.keystore.certificate.chain``)."""
        return self.certificate_pem + self.ca_pem

    @property
    def keystore_pem(self) -> bytes:
        """Key and chain in one PEM (the file ``ssl.keystore.location`` names when ``ssl.keystore.type=PEM``)."""
        return self.private_key_pem + self.chain_pem

    def write(self, directory, name: str) -> IdentityFiles:
        """Write ``<name>.keystore.pem``, ``<name>.pem``, ``<name>.key`` and ``ca.pem`` into ``directory``;
        files holding a private key are readable by their owner only."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        files = IdentityFiles(directory / f"{name}.keystore.pem", directory / f"{name}.pem",
                              directory / f"{name}.key", directory / "ca.pem")
        _write(files.keystore, self.keystore_pem, private=True)
        _write(files.key, self.private_key_pem, private=True)
        _write(files.certificate, self.chain_pem)
        _write(files.ca, self.ca_pem)
        return files

    # ------------------------------------------------------------------------------------------ Kafka settings
    def broker_configs(self, files: IdentityFiles, *, client_auth: Optional[str] = None,
                       prefix: str = "") -> dict[str, str]:
        """The broker settings for this identity as its keystore and the CA as truststore; ``prefix`` such as
        ``"listener.name.ssl."`` makes them per-listener overrides."""
        configs = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.keystore),
                   "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca)}
        if self.key_password is not None:
            configs["ssl.key.password"] = self.key_password
        if client_auth is not None:
            configs["ssl.client.auth"] = client_auth
        return {prefix + k: v for k, v in configs.items()}

    def client_configs(self, files: IdentityFiles) -> dict[str, str]:
        """Kafka client settings (Java names, as kafkalab's clients take them) presenting this certificate."""
        configs = {"security.protocol": "SSL", "ssl.keystore.type": "PEM",
                   "ssl.keystore.location": str(files.keystore), "ssl.truststore.type": "PEM",
                   "ssl.truststore.location": str(files.ca)}
        if self.key_password is not None:
            configs["ssl.key.password"] = self.key_password
        return configs


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


class CertificateAuthority:
    """A lab CA: signs broker and client certificates. Keep it in memory, or :meth:`write` its certificate."""

    def __init__(self, certificate: x509.Certificate, private_key, key_type: str = "ec"):
        self.certificate = certificate
        self._key = private_key
        self.key_type = key_type

    @classmethod
    def create(cls, common_name: str = "kafkalab lab CA", *, days: int = 365, key_type: str = "ec",
               organization: Optional[str] = "kafkalab") -> "CertificateAuthority":
        key = _new_key(key_type)
        name = _name(common_name, O=organization)
        not_before, not_after = _validity(days)
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(not_before)
                .not_valid_after(not_after)
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                             key_encipherment=False, data_encipherment=False, key_agreement=False,
                                             key_cert_sign=True, crl_sign=True, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(ski, critical=False)
                .sign(key, hashes.SHA256()))
        return cls(cert, key, key_type)

    @property
    def certificate_pem(self) -> bytes:
        return _pem(self.certificate)

    def write(self, directory) -> Path:
        """Write the CA certificate (never its key) as ``ca.pem``; returns the path."""
        path = Path(directory) / "ca.pem"
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, self.certificate_pem)
        return path

    def issue(self, common_name: str, *, hosts: Sequence[str] = DEFAULT_HOSTS, organizational_unit: Optional[str] = None,
              organization: Optional[str] = None, country: Optional[str] = None, days: int = 365,
              key_password: Optional[str] = None, key_type: Optional[str] = None) -> Identity:
        """A certificate for ``common_name`` signed by this CA, good as a TLS server and client certificate.
        ``hosts`` become subject alternative names (DNS names or IP addresses; empty for a client that needs
        none); ``key_password`` encrypts the private key (Kafka's ``ssl.key.password``)."""
        key = _new_key(key_type or self.key_type)
        subject = _name(common_name, C=country, O=organization, OU=organizational_unit)
        not_before, not_after = _validity(days)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.certificate.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(not_before).not_valid_after(not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=(key_type or self.key_type) == "rsa",
                                                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                                crl_sign=False, encipher_only=False, decipher_only=False),
                                  critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                  critical=False))
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                      else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        return Identity(distinguished_name(cert.subject), _pem(cert), key_pem, self.certificate_pem,
                        key_password or None)
