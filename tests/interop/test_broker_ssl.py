"""Real clients over TLS: confluent-kafka (librdkafka), kafka-python, aiokafka, kcat and kafkajs produce and
consume through an SSL listener, confluent-kafka also with a client certificate (mTLS, ``ssl.client.auth=required``),
and a client that does not trust the broker's CA fails with a TLS error instead of hanging.

One broker with three listeners: PLAINTEXT (inter-broker), SSL and MTLS (SSL with required client
certificates); the certificates come from :mod:`kafkalab.security.certs` (tests/security/_pki.py). Metadata
and FindCoordinator answer with the endpoint of the listener asked, so each client stays on TLS.
"""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from kafkalab import Cluster
from tests.security._pki import make_pki

from ._broker_support import (PHASE_S, Rec, aiokafka_consume, aiokafka_produce, assert_same_records,
                              confluent_consume, confluent_produce, kafka_python_consume, kafka_python_produce,
                              run_async,
                              kafkajs, kafkajs_records, kcat, kcat_lines, sample_records, unique)

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_cluster(pki):
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "listener.name.mtls.ssl.client.auth": "required",
        "group.initial.rebalance.delay.ms": 0,
        **pki.broker_configs()}
    with Cluster(brokers=1, overrides=overrides) as c:
        yield c


def bootstrap(cluster, listener: str = "SSL") -> str:
    return f"127.0.0.1:{cluster.broker(0).socket_server.bound_port(listener)}"


@pytest.fixture
def tls_topic(tls_cluster, request):
    name = unique(request.node.name.replace("_", "-")[:40])
    tls_cluster.create_topic(name, 2)
    return name


# -- confluent-kafka (librdkafka) ------------------------------------------------------------------------------------
def test_confluent_kafka_over_ssl(tls_cluster, tls_topic, pki):
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.broker_files.ca)}
    records = sample_records("ck-ssl")
    confluent_produce(bootstrap(tls_cluster), tls_topic, records, **conf)
    assert_same_records(confluent_consume(bootstrap(tls_cluster), tls_topic, [0, 1], len(records), **conf), records)


def test_confluent_kafka_with_a_client_certificate(tls_cluster, tls_topic, pki):
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.broker_files.ca),
            "ssl.certificate.location": str(pki.alice_files.certificate),
            "ssl.key.location": str(pki.alice_files.key)}
    records = sample_records("ck-mtls")
    confluent_produce(bootstrap(tls_cluster, "MTLS"), tls_topic, records, **conf)
    assert_same_records(confluent_consume(bootstrap(tls_cluster, "MTLS"), tls_topic, [0, 1], len(records), **conf),
                        records)


def confluent_errors(conf: dict) -> list[str]:
    """The errors librdkafka reports (``error_cb``, served by ``poll``) while it tries to connect with ``conf``."""
    import confluent_kafka as ck

    errors: list[str] = []
    producer = ck.Producer({**conf, "error_cb": lambda e: errors.append(str(e)), "log_level": 0})
    end = time.monotonic() + PHASE_S
    while not errors and time.monotonic() < end:
        producer.poll(0.2)
    return errors


def test_confluent_kafka_without_the_ca_or_without_a_certificate_fails_with_a_tls_error(tls_cluster, pki):
    untrusting = confluent_errors({"bootstrap.servers": bootstrap(tls_cluster), "security.protocol": "SSL",
                                   "ssl.ca.location": str(pki.other_ca)})
    # librdkafka may shorten a long error string in the middle ("certificate v...failed"): OpenSSL's code
    # 0A000086 (SSL_R_CERTIFICATE_VERIFY_FAILED) says the same
    assert any("SSL handshake failed" in e and ("certificate verify failed" in e or "0A000086" in e)
               for e in untrusting), untrusting
    anonymous = confluent_errors({"bootstrap.servers": bootstrap(tls_cluster, "MTLS"), "security.protocol": "SSL",
                                  "ssl.ca.location": str(pki.broker_files.ca)})
    # TLS 1.3: the client's half of the handshake ends before the broker checks for a certificate; the broker's
    # alert then closes the connection, which librdkafka reports as the broker being down
    assert any("SSL" in e or "_ALL_BROKERS_DOWN" in e or "_TRANSPORT" in e for e in anonymous), anonymous


# -- kafka-python ---------------------------------------------------------------------------------------------------
def test_kafka_python_over_ssl(tls_cluster, tls_topic, pki):
    conf = dict(security_protocol="SSL", ssl_cafile=str(pki.broker_files.ca))
    records = sample_records("kp-ssl")
    kafka_python_produce(bootstrap(tls_cluster), tls_topic, records, **conf)
    assert_same_records(kafka_python_consume(bootstrap(tls_cluster), tls_topic, [0, 1], len(records), **conf),
                        records)


def test_kafka_python_that_does_not_trust_the_ca_fails(tls_cluster, pki):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    started = time.monotonic()
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=bootstrap(tls_cluster), security_protocol="SSL",
                      ssl_cafile=str(pki.other_ca), bootstrap_timeout_ms=3000, max_block_ms=3000,
                      request_timeout_ms=3000).close()
    assert time.monotonic() - started < PHASE_S


# -- aiokafka -------------------------------------------------------------------------------------------------------
def test_aiokafka_over_ssl(tls_cluster, tls_topic, pki):
    from aiokafka.helpers import create_ssl_context

    records = sample_records("aio-ssl")

    def conf():   # a context per event loop (each helper runs its own)
        return dict(security_protocol="SSL", ssl_context=create_ssl_context(cafile=str(pki.broker_files.ca)))
    aiokafka_produce(bootstrap(tls_cluster), tls_topic, records, **conf())
    assert_same_records(aiokafka_consume(bootstrap(tls_cluster), tls_topic, [0, 1], len(records), **conf()),
                        records)


def test_aiokafka_that_does_not_trust_the_ca_fails(tls_cluster, pki):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError
    from aiokafka.helpers import create_ssl_context

    async def main():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap(tls_cluster), security_protocol="SSL",
                                    ssl_context=create_ssl_context(cafile=str(pki.other_ca)),
                                    request_timeout_ms=3000)
        try:
            with pytest.raises(KafkaError):
                await producer.start()
        finally:
            await producer.stop()
    run_async(main())


# -- kcat -----------------------------------------------------------------------------------------------------------
def test_kcat_over_ssl(tls_cluster, tls_topic, pki):
    tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki.broker_files.ca}"]
    records = [Rec(0, b"k%d" % i, b"kcat-ssl-%d" % i, (), 0) for i in range(5)]
    kcat(bootstrap(tls_cluster), *tls, "-P", "-t", tls_topic, "-p", "0", "-K:", input=kcat_lines(records))
    out = kcat(bootstrap(tls_cluster), *tls, "-C", "-t", tls_topic, "-p", "0", "-o", "beginning", "-e", "-J", "-q")
    got = [json.loads(line) for line in out.splitlines()]
    assert [(m["key"], m["payload"]) for m in got] == [(r.key.decode(), r.value.decode()) for r in records]


def test_kcat_without_the_ca_fails(tls_cluster, pki):
    from ._broker_support import require_kcat

    res = subprocess.run([require_kcat(), "-b", bootstrap(tls_cluster), "-m", "3", "-L", "-X", "security.protocol=SSL",
                          "-X", f"ssl.ca.location={pki.other_ca}"], capture_output=True, timeout=PHASE_S)
    assert res.returncode != 0
    assert b"certificate verify failed" in res.stderr


# -- kafkajs --------------------------------------------------------------------------------------------------------
def test_kafkajs_over_ssl(tls_cluster, tls_topic, pki):
    tls = {"ca": str(pki.broker_files.ca)}
    records = sample_records("js-ssl")
    report = kafkajs({"brokers": [bootstrap(tls_cluster)], "action": "produce", "topic": tls_topic, "ssl": tls,
                      "produce": {"idempotent": True, "acks": -1, "compression": "none",
                                  "records": kafkajs_records(records)}})
    assert sorted((a["partition"], a["error_code"]) for a in report["acks"]) == [(0, 0), (1, 0)]
    report = kafkajs({"brokers": [bootstrap(tls_cluster)], "action": "consume", "topic": tls_topic, "ssl": tls,
                      "consume": {"group": unique("js-ssl"), "count": len(records)}}, timeout=60)
    assert len(report["records"]) == len(records)
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki.broker_files.ca)}
    assert_same_records(confluent_consume(bootstrap(tls_cluster), tls_topic, [0, 1], len(records), **conf), records,
                        "librdkafka reads what kafkajs wrote over TLS")
