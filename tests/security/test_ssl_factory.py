"""SSL contexts from Kafka's ssl.* settings: what is accepted, what is refused and with which message, the
per-listener overrides of a broker, and the lab certificates themselves."""
from __future__ import annotations

import ssl
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kafkalab.common.config import ConfigDef, ConfigException
from kafkalab.security.ssl_configs import define_broker_ssl_configs, listener_ssl_values
from kafkalab.security.ssl_factory import CLIENT, NO_KEYSTORE_MESSAGE, SERVER, SslFactory
from kafkalab.server.config import KafkaConfig

from ._pki import KEY_PASSWORD, make_pki

TABLE = define_broker_ssl_configs(ConfigDef())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def factory(mode=SERVER, **configs) -> SslFactory:
    return SslFactory(mode, TABLE.parse(configs), listener_name="SSL")


# -- the certificates -------------------------------------------------------------------------------------------
def test_lab_certificates_chain_to_the_ca_and_name_the_local_host(pki):
    broker = x509.load_pem_x509_certificate(pki.broker.certificate_pem)
    assert broker.issuer == pki.ca.certificate.subject
    broker.verify_directly_issued_by(pki.ca.certificate)
    sans = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    assert pki.alice.subject == "CN=alice,OU=eng,O=acme"


def test_private_keys_are_pkcs8_owner_only_and_encrypted_with_the_key_password(pki):
    assert stat.S_IMODE(pki.broker_files.keystore.stat().st_mode) == 0o600
    text = pki.broker_files.keystore.read_text()
    assert text.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----") and text.count("BEGIN CERTIFICATE") == 2
    serialization.load_pem_private_key(pki.broker.private_key_pem, KEY_PASSWORD.encode())
    with pytest.raises(TypeError):
        serialization.load_pem_private_key(pki.broker.private_key_pem, None)
    assert pki.alice_files.key.read_text().startswith("-----BEGIN PRIVATE KEY-----")


# -- accepted ------------------------------------------------------------------------------------------------------
def test_a_pem_keystore_file_and_inline_pem_both_make_a_server_context(pki):
    from_file = factory(**pki.broker_configs(client_auth="required"))
    assert from_file.context.verify_mode == ssl.CERT_REQUIRED and from_file.has_truststore
    inline = factory(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.alice.private_key_pem.decode(),
                        "ssl.keystore.certificate.chain": pki.alice.chain_pem.decode(),
                        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pki.alice.ca_pem.decode(),
                        "ssl.client.auth": "requested"})
    assert inline.context.verify_mode == ssl.CERT_OPTIONAL and inline.has_keystore


def test_inline_pem_on_one_line_as_a_properties_file_gives_it(pki, tmp_path):
    from kafkalab.common.config import load_properties
    lines = ["ssl.keystore.type=PEM", "ssl.truststore.type=PEM"]
    for key, pem in (("ssl.keystore.key", pki.alice.private_key_pem), ("ssl.keystore.certificate.chain",
                     pki.alice.chain_pem), ("ssl.truststore.certificates", pki.alice.ca_pem)):
        lines.append(f"{key}=" + " \\\n    ".join(pem.decode().strip().splitlines()))
    (tmp_path / "server.properties").write_text("\n".join(lines) + "\n")
    props = load_properties(tmp_path / "server.properties")
    assert "\n" not in props["ssl.keystore.key"]            # continuation lines joined: one line of PEM
    assert factory(**props).has_keystore


def test_protocol_versions_and_hostname_verification():
    tls12 = factory(CLIENT, **{"ssl.protocol": "TLSv1.2"}).context
    assert tls12.maximum_version == ssl.TLSVersion.TLSv1_2
    default = factory(CLIENT).context
    assert (default.minimum_version, default.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    assert default.check_hostname and default.verify_mode == ssl.CERT_REQUIRED
    assert not factory(CLIENT, **{"ssl.endpoint.identification.algorithm": ""}).context.check_hostname
    only13 = factory(CLIENT, **{"ssl.enabled.protocols": "TLSv1.3"}).context
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3


# -- refused, with Kafka's messages --------------------------------------------------------------------------------
def test_an_ssl_listener_without_a_keystore_is_refused_with_kafkas_message():
    with pytest.raises(ConfigException) as e:
        factory()
    assert str(e.value).startswith("Invalid value javax.net.ssl.SSLHandshakeException: No available "
                                   f"authentication scheme for configuration {NO_KEYSTORE_MESSAGE}")
    assert "listener SSL has no key store" in str(e.value)


@pytest.mark.parametrize("store", ["keystore", "truststore"])
@pytest.mark.parametrize("store_type", ["JKS", "PKCS12"])
def test_jks_and_pkcs12_stores_are_refused(pki, store, store_type):
    with pytest.raises(ConfigException, match=f"Invalid value {store_type} for configuration ssl.{store}.type: "
                                              f"kafkalab reads PEM {store[:3]}"):
        factory(**{**pki.broker_configs(), f"ssl.{store}.type": store_type})


@pytest.mark.parametrize("configs, message", [
    ({"ssl.keystore.password": "x"}, "SSL key store password cannot be specified with PEM format"),
    ({"ssl.truststore.password": "x"}, "SSL trust store password cannot be specified for PEM format."),
    ({"ssl.keystore.key": "k"}, "Both SSL key store location and separate private key are specified."),
    ({"ssl.keystore.certificate.chain": "c"}, "SSL certificate chain is specified, but private key is not"),
    ({"ssl.truststore.certificates": "c"}, "Both SSL trust store location and separate trust certificates"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "kafkalab cannot restrict cipher suites"),
    ({"ssl.key.password": None}, "Failed to load PEM SSL keystore .*broker.keystore.pem: Private key could not "
                                 "be loaded"),
    ({"ssl.key.password": "wrong"}, "Failed to load PEM SSL keystore"),
    ({"ssl.keystore.location": "/nonexistent/k.pem"}, "Failed to load PEM SSL keystore /nonexistent/k.pem"),
])
def test_bad_store_settings_are_refused(pki, configs, message):
    merged = {k: v for k, v in {**pki.broker_configs(), **configs}.items() if v is not None}
    if "ssl.keystore.key" in configs:
        merged["ssl.keystore.certificate.chain"] = "c"
    with pytest.raises(ConfigException, match=message):
        factory(**merged)


def test_an_inline_key_of_the_wrong_kind_is_refused(pki, tmp_path):
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    key = load_pem_private_key(pki.alice.private_key_pem, None)
    traditional = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()).decode()
    with pytest.raises(ConfigException, match="Invalid PEM keystore configs: Private key could not be loaded"):
        factory(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": traditional,
                   "ssl.keystore.certificate.chain": pki.alice.chain_pem.decode()})
    with pytest.raises(ConfigException, match="No matching CERTIFICATE entries in PEM file"):
        factory(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.alice.private_key_pem.decode(),
                   "ssl.keystore.certificate.chain": "nothing here"})


def test_messages_never_carry_key_material(pki):
    with pytest.raises(ConfigException) as e:
        factory(**{"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.alice.private_key_pem.decode()[:-40],
                   "ssl.keystore.certificate.chain": pki.alice.chain_pem.decode()})
    assert "PRIVATE KEY-----" not in str(e.value) and "MII" not in str(e.value)


# -- the broker's per-listener values -------------------------------------------------------------------------------
def test_listener_overrides_and_sasl_ssl_client_auth(pki):
    config = KafkaConfig({
        "listeners": "SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,INTERNAL:SSL",
        "security.inter.broker.protocol": "SSL",
        "ssl.client.auth": "required",
        "listener.name.internal.ssl.client.auth": "none",
        "listener.name.internal.ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/",
        **pki.broker_configs()})
    assert config.listener_ssl_values("SSL")["ssl.client.auth"] == "required"
    assert config.listener_ssl_values("INTERNAL")["ssl.client.auth"] == "none"
    assert config.listener_ssl_values("INTERNAL")["ssl.principal.mapping.rules"] == "RULE:^CN=(.*?),.*$/$1/"
    # KIP-684: the broker-wide ssl.client.auth is for SSL listeners; SASL_SSL only by its own override
    originals = {**config.originals, "listener.name.sasl_ssl2.ssl.client.auth": "requested"}
    assert listener_ssl_values(config.values, originals, TABLE, "SASL_SSL", "SASL_SSL")["ssl.client.auth"] == "none"
    assert listener_ssl_values(config.values, originals, TABLE, "SASL_SSL2", "SASL_SSL")["ssl.client.auth"] \
        == "requested"
    assert "listener.name.internal.ssl.client.auth" not in config.unknown
    assert str(config.values["ssl.key.password"]) == "[hidden]"
    with_inline = KafkaConfig({**config.originals, "listener.name.internal.ssl.key.password": "inline-secret"})
    assert KEY_PASSWORD not in repr(with_inline) and "inline-secret" not in repr(with_inline)
