"""kafkalab's own clients over SASL_PLAINTEXT: Java's settings (security.protocol, sasl.mechanism,
sasl.jaas.config), SCRAM users through the admin protocol, a wrong password, and KIP-368 re-authentication."""
from __future__ import annotations

import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import (Admin, ConfigException, Consumer, NewTopic, Producer, ScramCredentialInfo,
                              TopicPartition, UserScramCredentialDeletion, UserScramCredentialUpsertion)
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.security.jaas import jaas_line
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides

from .conftest import unique


@pytest.fixture(scope="module")
def cluster():
    overrides = sasl_plaintext_overrides({"alice": "alice-secret"})
    overrides["connection.failed.authentication.delay.ms"] = 20
    with Cluster(brokers=1, overrides=overrides) as c:
        yield c


def sasl(cluster, mechanism, user, password, **extra):
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.jaas.config": jaas_line(mechanism, user, password), **extra}


def admin_conf(cluster):
    return sasl(cluster, "PLAIN", "admin", "admin-secret")


def test_admin_creates_scram_users_that_produce_and_consume(cluster):
    with Admin(admin_conf(cluster)) as admin:
        results = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("kim", ScramCredentialInfo("SCRAM-SHA-256", 4096), "kim-256"),
            UserScramCredentialUpsertion("kim", ScramCredentialInfo("SCRAM-SHA-512", 8192), "kim-512"),
            UserScramCredentialUpsertion("lee", ScramCredentialInfo("SCRAM-SHA-256", 100), "x")])
        assert results["kim"] is None
        assert isinstance(results["lee"], ApiException) and results["lee"].error_code == \
            ErrorCode.UNACCEPTABLE_CREDENTIAL and str(results["lee"]) == "Too few iterations"
        described = admin.describe_user_scram_credentials(["kim"])
        assert [(i.mechanism, i.iterations) for i in described["kim"].credential_infos] == \
            [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]
        topic = unique("sasl")
        admin.create_topics([NewTopic(topic, 1, 1)])
    for mechanism, password in (("SCRAM-SHA-256", "kim-256"), ("SCRAM-SHA-512", "kim-512"), ("PLAIN", None)):
        user, pw = ("alice", "alice-secret") if mechanism == "PLAIN" else ("kim", password)
        with Producer(sasl(cluster, mechanism, user, pw)) as p:
            p.send(topic, mechanism.encode()).result(10)
    with Consumer(sasl(cluster, "SCRAM-SHA-512", "kim", "kim-512", **{"auto.offset.reset": "earliest"})) as c:
        c.assign([TopicPartition(topic, 0)])
        got, end = [], time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < end:
            got += [r.value for r in c.poll(0.2)]
    assert got == [b"SCRAM-SHA-256", b"SCRAM-SHA-512", b"PLAIN"]
    principals = {r.principal for r in cluster.brokers[0].channel.request_log.records if r.api_name == "Produce"}
    assert {"User:kim", "User:alice"} <= principals
    with Admin(admin_conf(cluster)) as admin:
        assert admin.alter_user_scram_credentials([UserScramCredentialDeletion("kim", "SCRAM-SHA-512")]) == \
            {"kim": None}


def test_wrong_password_fails_with_the_brokers_error(cluster):
    from kafkalab.security.errors import SaslAuthenticationException

    with pytest.raises(SaslAuthenticationException, match="Authentication failed: Invalid username or password"):
        with Admin(sasl(cluster, "PLAIN", "alice", "wrong", **{"default.api.timeout.ms": 3000})) as admin:
            admin.list_topics()
    with pytest.raises(SaslAuthenticationException, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        with Producer(sasl(cluster, "SCRAM-SHA-256", "nobody", "x", **{"max.block.ms": 3000})) as p:
            p.send("t", b"v").result(5)


@pytest.mark.parametrize("config,message", [
    ({"sasl.mechanism": "GSSAPI"}, "Invalid value GSSAPI for configuration sasl.mechanism"),
    ({"sasl.mechanism": "PLAIN"}, "Could not find a 'KafkaClient' entry in the JAAS configuration"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config":
      "com.sun.security.auth.module.JndiLoginModule required user.provider.url=\"ldap://x\";"}, "is not one kafkalab"),
    ({"sasl.mechanism": "PLAIN", "sasl.jaas.config":
      "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";"}, "must set username and "
                                                                                            "password"),
])
def test_incomplete_sasl_settings_are_refused_at_construction(config, message):
    with pytest.raises(ConfigException, match=message):
        Producer({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT", **config})


def test_librdkafka_names_are_not_javas():
    with pytest.raises(ConfigException, match="sasl.username"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "sasl.username": "a"})


def test_reauthentication_keeps_the_connection(tmp_path):
    """KIP-368: with connections.max.reauth.ms the client logs in again on the same connection in time."""
    overrides = sasl_plaintext_overrides({"alice": "alice-secret"})
    overrides["connections.max.reauth.ms"] = 600
    with Cluster(brokers=1, overrides=overrides) as c:
        with Admin(sasl(c, "PLAIN", "alice", "alice-secret")) as admin:
            admin.list_topics()
            admin.list_topics()
            conn = admin.client.connections[0]
            assert conn.reauthenticate_at_ms is not None
            for _ in range(8):
                time.sleep(0.2)
                admin.list_topics()
            assert admin.client.connections[0] is conn and not conn.closed
            assert conn.authentications >= 2


def test_a_session_that_is_not_renewed_is_closed_by_the_broker():
    """A client that does not re-authenticate (a raw connection) is closed at its first request after expiry."""
    from kafkalab.network.inter_broker_client import InterBrokerConnection
    from kafkalab.protocol import ApiKey, request_class

    overrides = sasl_plaintext_overrides({"alice": "alice-secret"})
    overrides["connections.max.reauth.ms"] = 300
    with Cluster(brokers=1, overrides=overrides) as c:
        port = c.brokers[0].bound_endpoints[0].port
        body = request_class(ApiKey.METADATA)(topics=None, allow_auto_topic_creation=False)

        async def go():
            conn = InterBrokerConnection("127.0.0.1", port, client_id="old", sasl_login=("PLAIN", "alice",
                                                                                         "alice-secret"))
            conn.session_expires = None
            await conn.send(ApiKey.METADATA, 12, body)
            conn.session_expires = None           # behave like a client without KIP-368
            import asyncio
            await asyncio.sleep(0.5)
            with pytest.raises(ConnectionError):
                await conn._exchange(ApiKey.METADATA, 12, body)
            conn.close()
        c.run(go())
        metrics = c.brokers[0].metrics()
        assert metrics["expired-connections-killed-count"] == 1 and metrics["successful-authentication-total"] >= 2
