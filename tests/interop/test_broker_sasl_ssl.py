"""SASL over TLS (SASL_SSL): a broker whose only listener is SASL_SSL -- the controller and the clients first
make a TLS connection, then log in with SASL -- and confluent-kafka and kafkalab's own clients produce and consume
through it with SCRAM-SHA-256 and PLAIN. Needs the TLS room (wt/tls): skipped where it is not there."""
from __future__ import annotations

import time

import pytest

from kafkalab import Cluster
from kafkalab.security.jaas import jaas_line

from ._broker_support import assert_same_records, confluent_consume, confluent_produce, sample_records, unique

_pki = pytest.importorskip("tests.security._pki", reason="SASL_SSL needs the TLS room (kafkalab.security.certs)")
pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return _pki.make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(pki):
    overrides = {"listeners": "SASL_SSL://127.0.0.1:0", "security.inter.broker.protocol": "SASL_SSL",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol": "PLAIN",
                 "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas_line(
                     "PLAIN", "admin", "admin-secret", admin="admin-secret", alice="alice-secret"),
                 "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": jaas_line("SCRAM-SHA-256", "admin", "x"),
                 **pki.broker_configs()}
    with Cluster(brokers=1, overrides=overrides) as c:
        yield c


def test_controller_logged_in_over_tls(cluster):
    def controller_principals():
        return {r.principal for r in cluster.brokers[0].channel.request_log.records
                if r.api_name in ("LeaderAndIsr", "UpdateMetadata")}
    end = time.monotonic() + 10
    while not controller_principals() and time.monotonic() < end:
        time.sleep(0.05)
    assert controller_principals() == {"User:admin"}


def test_confluent_kafka_scram_over_sasl_ssl(cluster, pki):
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.broker_files.ca)}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **tls, "sasl.mechanism": "PLAIN",
                         "sasl.username": "admin", "sasl.password": "admin-secret"})
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "sam", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"sam-secret")]).values():
        f.result(10)
    topic = unique("sasl-ssl")
    cluster.create_topic(topic, 2)
    conf = {**tls, "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "sam", "sasl.password": "sam-secret"}
    records = sample_records("sasl-ssl")
    confluent_produce(cluster.bootstrap_servers, topic, records, **conf)
    assert_same_records(confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf), records)
    assert "User:sam" in {r.principal for r in cluster.brokers[0].channel.request_log.records
                          if r.api_name == "Produce"}


def test_kafkalab_clients_over_sasl_ssl(cluster, pki):
    from kafkalab.clients import Consumer, Producer, TopicPartition

    conf = {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_SSL",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.broker_files.ca),
            "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas_line("PLAIN", "alice", "alice-secret")}
    topic = unique("own-sasl-ssl")
    with Producer(conf) as p:
        assert p.send(topic, b"over TLS, logged in").result(10).offset == 0
    with Consumer({**conf, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, 0)])
        got, end = [], time.monotonic() + 10
        while not got and time.monotonic() < end:
            got = [r.value for r in c.poll(0.2)]
    assert got == [b"over TLS, logged in"]
