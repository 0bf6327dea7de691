"""A broker with a SASL_PLAINTEXT listener, on the wire: logins, refusals, the principal, SCRAM users, and the
start-up checks that keep a SASL listener from ever serving without authentication."""
from __future__ import annotations

import time

import pytest

from kafkalab import Cluster
from kafkalab.common.config import ConfigException
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.security.errors import SaslAuthenticationException
from kafkalab.security.plain import plain_client_token
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter
from kafkalab.server.config import KafkaConfig
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides

from ._raw_wire import Conn, request_frame

USERS = {"alice": "alice-secret"}


@pytest.fixture(scope="module")
def cluster():
    overrides = sasl_plaintext_overrides(USERS)
    overrides["connection.failed.authentication.delay.ms"] = 300
    with Cluster(brokers=1, overrides=overrides) as c:
        yield c


def port(cluster) -> int:
    return cluster.brokers[0].bound_endpoints[0].port


def call(cluster, login, api_key, version, body):
    async def go():
        conn = InterBrokerConnection("127.0.0.1", port(cluster), client_id="sasl-test", sasl_login=login,
                                     request_timeout_ms=5000)
        try:
            return await conn.send(api_key, version, body)
        finally:
            conn.close()
    return cluster.run(go())


def metadata_request():
    return request_class(ApiKey.METADATA)(topics=None, allow_auto_topic_creation=False)


def handshake(conn, mechanism, version=1):
    return conn.call(request_class(ApiKey.SASL_HANDSHAKE)(mechanism=mechanism), version)


def authenticate(conn, token, version=2, correlation_id=2):
    return conn.call(request_class(ApiKey.SASL_AUTHENTICATE)(auth_bytes=token), version, correlation_id)


def test_plain_login_then_requests_carry_the_principal(cluster):
    response = call(cluster, ("PLAIN", "alice", "alice-secret"), ApiKey.METADATA, 12, metadata_request())
    assert response.brokers and response.brokers[0].node_id == 0
    records = [r for r in cluster.brokers[0].channel.request_log.records if r.client_id == "sasl-test"]
    assert records and {r.principal for r in records} == {"User:alice"}
    # the controller (client id "0") logged in as the inter-broker user
    end = time.monotonic() + 10
    while time.monotonic() < end and not any(r.client_id == "0" for r in cluster.brokers[0].channel.request_log.records):
        time.sleep(0.05)
    controller = [r for r in cluster.brokers[0].channel.request_log.records if r.client_id == "0"]
    assert controller and {r.principal for r in controller} == {"User:admin"}


def test_unauthenticated_metadata_closes_without_response(cluster):
    with Conn(port(cluster)) as conn:
        conn.send(request_frame(metadata_request(), 12, 1))
        conn.assert_closed_without_response()


def test_apiversions_before_login_lists_the_sasl_apis(cluster):
    with Conn(port(cluster)) as conn:
        body = conn.call(request_class(ApiKey.API_VERSIONS)(), 0)
        keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert keys[ApiKey.SASL_HANDSHAKE] == (0, 1) and keys[ApiKey.SASL_AUTHENTICATE] == (0, 2)
        assert keys[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS] == (0, 0)
        assert handshake(conn, "PLAIN").error_code == 0
        assert authenticate(conn, plain_client_token("alice", "alice-secret")).error_code == 0
        assert conn.call(metadata_request(), 12, 3).brokers


def test_unsupported_mechanism(cluster):
    with Conn(port(cluster)) as conn:
        body = handshake(conn, "GSSAPI")
        assert body.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert list(body.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        conn.assert_closed_without_response()


def test_wrong_password_is_delayed_then_closed(cluster):
    with Conn(port(cluster)) as conn:
        handshake(conn, "PLAIN")
        start = time.monotonic()
        body = authenticate(conn, plain_client_token("alice", "wrong"))
        assert time.monotonic() - start >= 0.25       # connection.failed.authentication.delay.ms=300
        assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert body.error_message == "Authentication failed: Invalid username or password"
        conn.assert_closed_without_response()


def test_another_request_instead_of_sasl_authenticate_gets_its_error_response_then_the_close(cluster):
    """After SaslHandshake v1 only SaslAuthenticate may come. Kafka's SaslServerAuthenticator answers anything
    else with that request's error response, ILLEGAL_SASL_STATE wherever it has an error code (Metadata: each
    topic asked for; Produce: each partition), after the failed-authentication delay, and closes."""
    Produce = request_class(ApiKey.PRODUCE)
    produce = Produce(transactional_id=None, acks=1, timeout_ms=1000, topic_data=(Produce.TopicProduceData(
        name="orders", partition_data=(Produce.PartitionProduceData(index=0, records=None),
                                       Produce.PartitionProduceData(index=1, records=None))),))
    asked = request_class(ApiKey.METADATA)(topics=(request_class(ApiKey.METADATA).MetadataRequestTopic(
        name="orders"),), allow_auto_topic_creation=False)
    for body, version in ((asked, 12), (produce, 9)):
        with Conn(port(cluster)) as conn:
            assert handshake(conn, "PLAIN").error_code == 0
            start = time.monotonic()
            response = conn.call(body, version, correlation_id=5)
            assert time.monotonic() - start >= 0.25       # connection.failed.authentication.delay.ms=300
            if body is asked:
                assert [(t.name, t.error_code) for t in response.topics] == [("orders", ErrorCode.ILLEGAL_SASL_STATE)]
            else:
                (topic,) = response.responses
                assert [(p.index, p.error_code) for p in topic.partition_responses] == [
                    (0, ErrorCode.ILLEGAL_SASL_STATE), (1, ErrorCode.ILLEGAL_SASL_STATE)]
                assert topic.partition_responses[0].error_message == (
                    "Unexpected Kafka request of type PRODUCE during SASL authentication.")
            conn.assert_closed_without_response()


def test_failed_logins_do_not_slow_other_connections(cluster):
    """A failed login waits out its delay on its own connection; another client is answered meanwhile."""
    conns = [Conn(port(cluster)) for _ in range(5)]
    try:
        for c in conns:
            handshake(c, "PLAIN")
            c.send(request_frame(request_class(ApiKey.SASL_AUTHENTICATE)(auth_bytes=b"\0alice\0bad"), 2, 2))
        start = time.monotonic()
        call(cluster, ("PLAIN", "alice", "alice-secret"), ApiKey.METADATA, 12, metadata_request())
        assert time.monotonic() - start < 2.0
    finally:
        for c in conns:
            c.close()


def test_handshake_v0_raw_tokens(cluster):
    with Conn(port(cluster)) as conn:
        assert handshake(conn, "PLAIN", version=0).error_code == 0
        token = plain_client_token("alice", "alice-secret")
        conn.send(len(token).to_bytes(4, "big") + token)
        assert conn.recv_frame() == b""                 # PLAIN's empty answer, size-prefixed
        assert conn.call(metadata_request(), 12, 3).brokers


def test_oversize_pre_auth_frame_closes(cluster):
    with Conn(port(cluster)) as conn:
        conn.send((524288 + 1).to_bytes(4, "big") + b"\0" * 64)
        conn.assert_closed_without_response()


def test_sasl_apis_after_login_get_illegal_sasl_state(cluster):
    body = call(cluster, ("PLAIN", "alice", "alice-secret"), ApiKey.SASL_HANDSHAKE, 1,
                request_class(ApiKey.SASL_HANDSHAKE)(mechanism="PLAIN"))
    assert body.error_code == ErrorCode.ILLEGAL_SASL_STATE


def _upsert(user, password, mechanism="SCRAM-SHA-256", iterations=4096):
    m = SCRAM_MECHANISMS[mechanism]
    salt = b"0123456789abcdef"
    Req = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    return Req.ScramCredentialUpsertion(name=user, mechanism=m.type_id, iterations=iterations, salt=salt,
                                        salted_password=ScramFormatter(m).salted_password(password, salt, iterations))


def test_scram_users_created_described_and_logging_in(cluster):
    admin = ("PLAIN", "admin", "admin-secret")
    Req = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    body = call(cluster, admin, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, Req(deletions=(), upsertions=(
        _upsert("carol", "carol-secret"), _upsert("carol", "carol-512", "SCRAM-SHA-512", 8192),
        _upsert("dave", "x", iterations=1000), _upsert("erin", "x", iterations=20000), _upsert("", "x"))))
    results = {r.user: (r.error_code, r.error_message) for r in body.results}
    assert results == {"carol": (0, None), "dave": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
                       "erin": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
                       "": (ErrorCode.RESOURCE_NOT_FOUND, "Username must not be empty")}
    stored = cluster.brokers[0].zk.get_entity_configs("users", "carol")
    assert set(stored) == {"SCRAM-SHA-256", "SCRAM-SHA-512"} and "carol-secret" not in str(stored)
    assert stored["SCRAM-SHA-512"].endswith("iterations=8192")
    for mechanism, password in (("SCRAM-SHA-256", "carol-secret"), ("SCRAM-SHA-512", "carol-512")):
        assert call(cluster, (mechanism, "carol", password), ApiKey.METADATA, 12, metadata_request()).brokers
    with pytest.raises(SaslAuthenticationException, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        call(cluster, ("SCRAM-SHA-256", "carol", "wrong"), ApiKey.METADATA, 12, metadata_request())
    with pytest.raises(SaslAuthenticationException, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        call(cluster, ("SCRAM-SHA-256", "nobody", "wrong"), ApiKey.METADATA, 12, metadata_request())
    Describe = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    body = call(cluster, admin, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, Describe(users=None))
    assert [(r.user, [(i.mechanism, i.iterations) for i in r.credential_infos]) for r in body.results] == \
        [("carol", [(1, 4096), (2, 8192)])]
    body = call(cluster, admin, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                Describe(users=(Describe.UserName(name="zed"),)))
    assert body.results[0].error_code == ErrorCode.RESOURCE_NOT_FOUND
    Del = Req.ScramCredentialDeletion
    body = call(cluster, admin, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0,
                Req(deletions=(Del(name="carol", mechanism=2), Del(name="zed", mechanism=1)), upsertions=()))
    assert {r.user: r.error_code for r in body.results} == {"carol": 0, "zed": ErrorCode.RESOURCE_NOT_FOUND}
    with pytest.raises(SaslAuthenticationException):
        call(cluster, ("SCRAM-SHA-512", "carol", "carol-512"), ApiKey.METADATA, 12, metadata_request())


# ------------------------------------------------------------------------------------------------ start-up checks
BASE = {"log.dirs": "/tmp/unused"}


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_listener_without_jaas_refuses_to_start(protocol):
    with pytest.raises(ConfigException, match="Could not find a 'KafkaServer' or 'client.KafkaServer' entry in the "
                                              "JAAS configuration. System property "
                                              "'java.security.auth.login.config' is not set"):
        KafkaConfig({**BASE, "listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
                     "listener.security.protocol.map": f"CLIENT:{protocol},BROKER:PLAINTEXT",
                     "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "PLAIN"})


def test_default_gssapi_refuses_to_start():
    with pytest.raises(ConfigException, match="Could not find a 'KafkaServer'"):
        KafkaConfig({**BASE, "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                     "security.inter.broker.protocol": "SASL_PLAINTEXT"})


def test_unimplemented_mechanism_refuses_to_start():
    with pytest.raises(ConfigException, match="Invalid value GSSAPI for configuration sasl.enabled.mechanisms"):
        KafkaConfig({**BASE, "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                     "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "GSSAPI",
                     "listener.name.sasl_plaintext.gssapi.sasl.jaas.config":
                         "org.apache.kafka.common.security.plain.PlainLoginModule required;"})


def test_inter_broker_mechanism_must_be_enabled():
    config = {**BASE, **sasl_plaintext_overrides(USERS, mechanisms=("SCRAM-SHA-256",)),
              "sasl.mechanism.inter.broker.protocol": "PLAIN"}
    with pytest.raises(ConfigException, match="requirement failed: sasl.mechanism.inter.broker.protocol must be "
                                              "included in sasl.enabled.mechanisms when SASL is used for "
                                              "inter-broker communication"):
        KafkaConfig(config)


def test_plaintext_only_broker_needs_no_sasl_settings():
    KafkaConfig({**BASE, "listeners": "PLAINTEXT://127.0.0.1:0"})


def test_socket_server_refuses_a_sasl_listener_without_authenticator():
    from kafkalab.network import RequestChannel, SocketServer
    from kafkalab.network.endpoint import parse_listeners

    with pytest.raises(ValueError, match="have no authenticator"):
        SocketServer(parse_listeners("SASL_PLAINTEXT://127.0.0.1:0", {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}),
                     RequestChannel(10), {})


def test_cli_broker_and_cluster_refuse_an_unconfigured_sasl_listener(capsys, tmp_path):
    from kafkalab.cli import main

    args = ["broker", "--override", "listeners=SASL_PLAINTEXT://127.0.0.1:0", "--override",
            "security.inter.broker.protocol=SASL_PLAINTEXT", "--override", f"log.dirs={tmp_path}"]
    assert main(args) == 1
    assert "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry" in capsys.readouterr().err
    cluster = Cluster(brokers=1, overrides={"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                                            "security.inter.broker.protocol": "SASL_PLAINTEXT"})
    try:
        with pytest.raises(ConfigException, match="Could not find a 'KafkaServer'"):
            cluster.start()
    finally:
        cluster.stop()


def test_broker_config_never_shows_jaas_passwords():
    config = KafkaConfig({**BASE, **sasl_plaintext_overrides({"alice": "alice-secret"})})
    assert "alice-secret" not in repr(config) and "admin-secret" not in repr(config)


def test_tls_client_hello_on_a_sasl_plaintext_port_closes(cluster):
    """A TLS client on a plaintext SASL port: its ClientHello reads as a 369 MB size, over the pre-auth cap."""
    with Conn(port(cluster)) as conn:
        conn.send(bytes.fromhex("16030100f8010000f40303") + b"\0" * 32)
        conn.assert_closed_without_response()


def test_many_failed_logins_in_a_row_leave_the_broker_serving():
    overrides = sasl_plaintext_overrides(USERS)
    overrides["connection.failed.authentication.delay.ms"] = 0
    with Cluster(brokers=1, overrides=overrides) as c:
        for i in range(300):
            with Conn(port(c)) as conn:
                handshake(conn, "PLAIN", version=1)
                body = authenticate(conn, plain_client_token("alice", f"guess-{i}"))
                assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert call(c, ("PLAIN", "alice", "alice-secret"), ApiKey.METADATA, 12, metadata_request()).brokers
        assert c.brokers[0].metrics()["failed-authentication-total"] == 300


def test_per_listener_mechanisms_and_jaas():
    from kafkalab.security.jaas import jaas_line
    from kafkalab.server.sasl_listeners import enabled_mechanisms, inter_broker_login

    config = KafkaConfig({**BASE, "listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
                          "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT",
                          "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                          "listener.name.broker.sasl.enabled.mechanisms": "PLAIN",
                          "sasl.mechanism.inter.broker.protocol": "PLAIN",
                          "listener.name.client.scram-sha-512.sasl.jaas.config":
                              "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                          "listener.name.broker.plain.sasl.jaas.config": jaas_line("PLAIN", "kafka", "pw", kafka="pw")})
    assert enabled_mechanisms(config, "CLIENT") == ["SCRAM-SHA-512"]
    assert enabled_mechanisms(config, "BROKER") == ["PLAIN"]
    login = inter_broker_login(config)
    assert (login.mechanism, login.username, login.password) == ("PLAIN", "kafka", "pw") and "pw" not in repr(login)
