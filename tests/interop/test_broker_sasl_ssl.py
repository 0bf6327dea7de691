"""SASL over TLS (SASL_SSL): a broker whose only listener is SASL_SSL -- the controller and the clients first
make a TLS connection, then log in with SASL -- and confluent-kafka, kafka-python, aiokafka, kcat, kafkajs and
kafkalab's own clients produce and consume through it with PLAIN and SCRAM-SHA-256."""
from __future__ import annotations

import json
import time

import pytest

from kafkalab import Cluster
from kafkalab.security.jaas import jaas_line

from tests.security import _pki

from ._broker_support import (aiokafka_consume, aiokafka_produce, assert_same_records, confluent_consume,
                              confluent_produce, kafka_python_consume, kafka_python_produce, kafkajs,
                              kafkajs_records, kcat, kcat_lines, require_kafkajs, sample_records, unique)

pytestmark = pytest.mark.interop
#: per mechanism, who logs in: PLAIN's user from the JAAS line, SCRAM's created over the wire by the fixture
LOGINS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("sam", "sam-secret")}


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
        _create_scram_user(c.bootstrap_servers, pki)
        yield c


def _create_scram_user(bootstrap, pki):
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                         "ssl.ca.location": str(pki.broker_files.ca), "sasl.mechanism": "PLAIN",
                         "sasl.username": "admin", "sasl.password": "admin-secret"})
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "sam", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"sam-secret")]).values():
        f.result(10)


@pytest.fixture
def topic(cluster, request):
    name = unique(request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:50])
    cluster.create_topic(name, 2)
    return name


def test_controller_logged_in_over_tls(cluster):
    def controller_principals():
        return {r.principal for r in cluster.brokers[0].channel.request_log.records
                if r.api_name in ("LeaderAndIsr", "UpdateMetadata")}
    end = time.monotonic() + 10
    while not controller_principals() and time.monotonic() < end:
        time.sleep(0.05)
    assert controller_principals() == {"User:admin"}


@pytest.mark.parametrize("mechanism", LOGINS)
def test_confluent_kafka_over_sasl_ssl(cluster, pki, topic, mechanism):
    user, password = LOGINS[mechanism]
    conf = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.broker_files.ca),
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    records = sample_records(f"ck-sasl-ssl-{mechanism}")
    confluent_produce(cluster.bootstrap_servers, topic, records, **conf)
    assert_same_records(confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf), records)
    assert f"User:{user}" in {r.principal for r in cluster.brokers[0].channel.request_log.records
                              if r.api_name == "Produce"}


@pytest.mark.parametrize("mechanism", LOGINS)
def test_kafka_python_over_sasl_ssl(cluster, pki, topic, mechanism):
    user, password = LOGINS[mechanism]
    conf = dict(security_protocol="SASL_SSL", ssl_cafile=str(pki.broker_files.ca), sasl_mechanism=mechanism,
                sasl_plain_username=user, sasl_plain_password=password)
    records = sample_records(f"kp-sasl-ssl-{mechanism}")
    kafka_python_produce(cluster.bootstrap_servers, topic, records, **conf)
    assert_same_records(kafka_python_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf),
                        records)


@pytest.mark.parametrize("mechanism", LOGINS)
def test_aiokafka_over_sasl_ssl(cluster, pki, topic, mechanism):
    from aiokafka.helpers import create_ssl_context

    user, password = LOGINS[mechanism]

    def conf():   # a context per event loop (each helper runs its own)
        return dict(security_protocol="SASL_SSL", ssl_context=create_ssl_context(cafile=str(pki.broker_files.ca)),
                    sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    records = sample_records(f"aio-sasl-ssl-{mechanism}")
    aiokafka_produce(cluster.bootstrap_servers, topic, records, **conf())
    assert_same_records(aiokafka_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf()), records)


@pytest.mark.parametrize("mechanism", LOGINS)
def test_kcat_over_sasl_ssl(cluster, pki, topic, mechanism):
    user, password = LOGINS[mechanism]
    opts = ["-X", "security.protocol=SASL_SSL", "-X", f"ssl.ca.location={pki.broker_files.ca}",
            "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]
    records = [r._replace(headers=(), timestamp=0) for r in sample_records(f"kc-sasl-ssl-{mechanism}",
                                                                            ascii_only=True, null_values=False)
               if r.key]
    kcat(cluster.bootstrap_servers, *opts, "-P", "-t", topic, "-p", "0", "-K", ":", input=kcat_lines(records))
    out = kcat(cluster.bootstrap_servers, *opts, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J", "-q")
    got = [json.loads(line) for line in out.splitlines()]
    assert [(m["key"], m["payload"]) for m in got] == [(r.key.decode(), (r.value or b"").decode()) for r in records]


@pytest.mark.parametrize("mechanism", LOGINS)
def test_kafkajs_over_sasl_ssl(cluster, pki, topic, mechanism):
    require_kafkajs()
    user, password = LOGINS[mechanism]
    spec = {"brokers": [cluster.bootstrap_servers], "topic": topic, "ssl": {"ca": str(pki.broker_files.ca)},
            "sasl": {"mechanism": mechanism.lower(), "username": user, "password": password}}
    records = sample_records(f"js-sasl-ssl-{mechanism}")
    report = kafkajs({**spec, "action": "produce", "produce": {"idempotent": True,
                                                               "records": kafkajs_records(records)}})
    assert all(a["error_code"] == 0 for a in report["acks"])
    report = kafkajs({**spec, "action": "consume", "consume": {"group": unique("js-sasl-ssl"),
                                                               "count": len(records)}}, timeout=60)
    assert len(report["records"]) == len(records)


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
