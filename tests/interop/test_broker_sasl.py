"""Real clients over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: confluent-kafka, kafka-python,
aiokafka, kcat and kafkajs each produce and consume; a wrong password fails cleanly for each; confluent-kafka's
``AdminClient.alter_user_scram_credentials`` creates the SCRAM users that then log in."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from kafkalab import Cluster
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides

from ._broker_support import (TIMEOUT_MS, aiokafka_consume, aiokafka_produce, assert_same_records, confluent_consume,
                              confluent_produce, kafka_python_consume, kafka_python_produce, kafkajs,
                              kafkajs_records, kcat, kcat_lines, require_kafkajs, require_kcat,
                              sample_records, unique)

pytestmark = pytest.mark.interop

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: per mechanism, the user that logs in with it (PLAIN's from the JAAS line, SCRAM's created over the wire)
LOGINS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("sam", "sam-256-secret"),
          "SCRAM-SHA-512": ("sue", "sue-512-secret")}


@pytest.fixture(scope="module")
def cluster():
    overrides = sasl_plaintext_overrides({"alice": "alice-secret"})
    overrides["connection.failed.authentication.delay.ms"] = 50
    with Cluster(brokers=1, overrides=overrides) as c:
        _create_scram_users(c.bootstrap_servers)
        yield c


def _create_scram_users(bootstrap):
    """confluent-kafka's AdminClient, logged in as the PLAIN admin, creates the SCRAM users."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    admin = AdminClient({"bootstrap.servers": bootstrap, **confluent_sasl("PLAIN", "admin", "admin-secret")})
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")),
                                                                      8192), password.encode())
               for m, (user, password) in LOGINS.items() if m != "PLAIN"]
    for future in admin.alter_user_scram_credentials(upserts, request_timeout=10).values():
        future.result(timeout=10)
    described = {u: f.result(timeout=10) for u, f in admin.describe_user_scram_credentials(["sam", "sue"]).items()}
    assert {u: [str(i.mechanism) for i in d.scram_credential_infos] for u, d in described.items()} == \
        {"sam": ["ScramMechanism.SCRAM_SHA_256"], "sue": ["ScramMechanism.SCRAM_SHA_512"]}


@pytest.fixture
def topic(cluster, request):
    name = unique(request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:50])
    cluster.create_topic(name, 2)
    return name


def confluent_sasl(mechanism, user, password):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password}


def python_sasl(mechanism, user, password):
    return dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_plain_username=user,
                sasl_plain_password=password)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(cluster, topic, mechanism):
    records = sample_records(f"ck-{mechanism}")
    conf = confluent_sasl(mechanism, *LOGINS[mechanism])
    confluent_produce(cluster.bootstrap_servers, topic, records, **conf)
    got = confluent_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf)
    assert_same_records(got, records, f"confluent-kafka over {mechanism}")
    user = LOGINS[mechanism][0]
    principals = {r.principal for r in cluster.brokers[0].channel.request_log.records if r.api_name == "Produce"
                  and r.listener_name == "SASL_PLAINTEXT"}
    assert f"User:{user}" in principals


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(cluster, topic, mechanism):
    records = sample_records(f"kp-{mechanism}")
    conf = python_sasl(mechanism, *LOGINS[mechanism])
    kafka_python_produce(cluster.bootstrap_servers, topic, records, **conf)
    got = kafka_python_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf)
    assert_same_records(got, records, f"kafka-python over {mechanism}")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(cluster, topic, mechanism):
    records = sample_records(f"aio-{mechanism}")
    conf = python_sasl(mechanism, *LOGINS[mechanism])
    aiokafka_produce(cluster.bootstrap_servers, topic, records, **conf)
    got = aiokafka_consume(cluster.bootstrap_servers, topic, [0, 1], len(records), **conf)
    assert_same_records(got, records, f"aiokafka over {mechanism}")


def kcat_sasl(mechanism, user, password):
    return ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}", "-X",
            f"sasl.username={user}", "-X", f"sasl.password={password}"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat(cluster, topic, mechanism):
    records = [r._replace(headers=(), timestamp=0) for r in sample_records(f"kc-{mechanism}", ascii_only=True,
                                                                            null_values=False) if r.key]
    sasl = kcat_sasl(mechanism, *LOGINS[mechanism])
    kcat(cluster.bootstrap_servers, *sasl, "-P", "-t", topic, "-p", "0", "-K", ":", input=kcat_lines(records))
    got = [(r.key, r.value) for r in _kcat_consume(cluster.bootstrap_servers, topic, sasl)]
    assert got == [(r.key, r.value or b"") for r in records]


def _kcat_consume(bootstrap, topic, sasl):
    out = kcat(bootstrap, *sasl, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J", "-q")
    from ._broker_support import Rec
    return [Rec(m["partition"], m["key"].encode() if m["key"] is not None else None,
                (m["payload"] or "").encode(), (), m["ts"]) for m in map(json.loads, out.splitlines())]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafkajs(cluster, topic, mechanism):
    require_kafkajs()
    user, password = LOGINS[mechanism]
    sasl = {"mechanism": mechanism.lower(), "username": user, "password": password}
    records = sample_records(f"js-{mechanism}")
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "produce", "topic": topic, "sasl": sasl,
                      "produce": {"idempotent": True, "records": kafkajs_records(records)}})
    assert all(a["error_code"] == 0 for a in report["acks"])
    report = kafkajs({"brokers": [cluster.bootstrap_servers], "action": "consume", "topic": topic, "sasl": sasl,
                      "consume": {"group": unique("js-sasl"), "count": len(records)}})
    assert len(report["records"]) == len(records)


# ------------------------------------------------------------------------------------------------ wrong passwords
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_confluent(cluster, mechanism):
    import confluent_kafka as ck

    errors = []
    user = LOGINS[mechanism][0]
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, **confluent_sasl(mechanism, user, "bad"),
                            "error_cb": errors.append, "socket.timeout.ms": TIMEOUT_MS})
    end = time.monotonic() + 10
    while not errors and time.monotonic() < end:
        producer.poll(0.1)
    assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION, errors
    assert "Authentication failed" in errors[0].str()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_kafka_python(cluster, mechanism):
    """kafka-python retries the bootstrap until its timeout; the broker refused each login (whether the client
    reads the error response before the close is its own affair: it logs either the message or the close)."""
    from kafka.errors import KafkaError

    failed = cluster.brokers[0].metrics().get("failed-authentication-total", 0)
    with pytest.raises(KafkaError):
        kafka_python_produce(cluster.bootstrap_servers, "t", sample_records("x")[:1],
                             **python_sasl(mechanism, LOGINS[mechanism][0], "bad"), max_block_ms=2000,
                             bootstrap_timeout_ms=2000)
    assert cluster.brokers[0].metrics()["failed-authentication-total"] > failed


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_aiokafka(cluster, mechanism, caplog):
    from aiokafka.errors import KafkaError

    with pytest.raises(KafkaError):
        aiokafka_produce(cluster.bootstrap_servers, "t", sample_records("x")[:1],
                         **python_sasl(mechanism, LOGINS[mechanism][0], "bad"))
    assert "SaslAuthenticationFailed" in caplog.text and "Authentication failed" in caplog.text


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_kcat(cluster, mechanism):
    cmd = [require_kcat(), "-b", cluster.bootstrap_servers, "-m", "3", "-L",
           *kcat_sasl(mechanism, LOGINS[mechanism][0], "bad")]
    res = subprocess.run(cmd, capture_output=True, timeout=30)
    assert res.returncode != 0
    assert b"Authentication failed" in res.stderr or b"SASL authentication error" in res.stderr, res.stderr


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_kafkajs(cluster, mechanism):
    require_kafkajs()
    from ._broker_support import KAFKAJS_DRIVER, REPO, REPORT_PREFIX

    spec = {"brokers": [cluster.bootstrap_servers], "action": "metadata", "timeout": TIMEOUT_MS,
            "sasl": {"mechanism": mechanism.lower(), "username": LOGINS[mechanism][0], "password": "bad"}}
    res = subprocess.run(["node", str(KAFKAJS_DRIVER)], input=json.dumps(spec).encode(), capture_output=True,
                         timeout=60, cwd=REPO)
    report = json.loads([x for x in res.stdout.decode().splitlines() if x.startswith(REPORT_PREFIX)][-1]
                        [len(REPORT_PREFIX):])
    assert "SASL" in report.get("error", "") and "Authentication failed" in report["error"], report


def test_confluent_kafka_reauthenticates_kip_368():
    """With connections.max.reauth.ms the broker returns a session lifetime; librdkafka logs in again on the
    same connection before it ends, so a producer keeps going and no connection is killed as expired."""
    overrides = sasl_plaintext_overrides({"alice": "alice-secret"})
    overrides["connections.max.reauth.ms"] = 1000
    with Cluster(brokers=1, overrides=overrides) as c:
        import confluent_kafka as ck

        producer = ck.Producer({"bootstrap.servers": c.bootstrap_servers, "linger.ms": 5,
                                **confluent_sasl("PLAIN", "alice", "alice-secret")})
        delivered = []
        end = time.monotonic() + 3.5
        while time.monotonic() < end:
            producer.produce("reauth", b"x", on_delivery=lambda err, msg: delivered.append(err))
            producer.poll(0.1)
        assert producer.flush(10) == 0
        assert delivered and all(e is None for e in delivered)
        metrics = c.brokers[0].metrics()
        assert metrics["successful-reauthentication-total"] >= 1
        assert metrics.get("expired-connections-killed-count", 0) == 0
