"""A lab PKI for the TLS tests: one CA, a broker certificate (SANs localhost, 127.0.0.1), client certificates,
written as PEM files with :mod:`kafkalab.security.certs` (no openssl command)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalab.security.certs import CertificateAuthority, Identity, IdentityFiles

KEY_PASSWORD = "broker-key-secret-9f3a"


@dataclass
class Pki:
    directory: Path
    ca: CertificateAuthority
    broker: Identity
    broker_files: IdentityFiles
    alice: Identity             # CN=alice,OU=eng,O=acme: a client certificate
    alice_files: IdentityFiles
    stranger_files: IdentityFiles   # a certificate from another CA (untrusted by the broker)
    other_ca: Path                  # that other CA's certificate (a truststore that does not trust the broker)

    def broker_configs(self, **kw) -> dict:
        return self.broker.broker_configs(self.broker_files, **kw)


def make_pki(directory: Path) -> Pki:
    ca = CertificateAuthority.create()
    broker = ca.issue("broker", organizational_unit="kafkalab", key_password=KEY_PASSWORD)
    alice = ca.issue("alice", hosts=(), organizational_unit="eng", organization="acme")
    other = CertificateAuthority.create("some other CA")
    stranger = other.issue("mallory", hosts=())
    return Pki(directory, ca, broker, broker.write(directory, "broker"), alice, alice.write(directory, "alice"),
               stranger.write(directory / "other", "mallory"), other.write(directory / "other"))
