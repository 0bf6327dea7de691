"""Lab 12's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". Fast: no broker except one short login test (the notebook runs the rest under nbval)."""
from __future__ import annotations

import base64
import re

from kafkalab import Cluster
from kafkalab.labs import lab12
from kafkalab.security.jaas import jaas_line
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter

ACLS = [("User:alice", "ALLOW", "READ", "TOPIC", "orders"),
        ("User:bob", "DENY", "WRITE", "TOPIC", "orders"),
        ("User:*", "ALLOW", "WRITE", "TOPIC", "orders")]
QUESTIONS = {"describe": ("User:alice", "DESCRIBE", "TOPIC", "orders"),
             "deny wins": ("User:bob", "WRITE", "TOPIC", "orders"),
             "no acl": ("User:carol", "READ", "TOPIC", "clicks"),
             "super": ("User:admin", "ALTER", "CLUSTER", "kafka-cluster")}
RIGHT = {"describe": "ALLOWED", "deny wins": "DENIED", "no acl": "ALLOWED", "super": "ALLOWED"}
OPTIONS = {"super_users": ["User:admin"], "allow_everyone_if_no_acl_found": True}
RFC = {"username": "user", "password": "pencil", "salt_b64": "W22ZaJ0SNY7soEsUEjb6gQ==", "iterations": 4096,
       "client_nonce": "rOprNGfwEbeRWgbNEkqO", "combined_nonce": "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"}


def test_acl_predictions():
    assert lab12.check_acl_predictions(RIGHT, ACLS, QUESTIONS, **OPTIONS).passed
    wrong = lab12.check_acl_predictions(dict(RIGHT, **{"deny wins": "ALLOWED"}), ACLS, QUESTIONS, **OPTIONS)
    assert not wrong.passed and "3 of 4" in wrong.message and "DENY" in wrong.text()
    # without the no-ACL default the same answers are wrong for "no acl"
    assert not lab12.check_acl_predictions(RIGHT, ACLS, QUESTIONS, super_users=["User:admin"]).passed
    assert "ALLOWED' or 'DENIED" in lab12.check_acl_predictions(dict(RIGHT, super=True), ACLS, QUESTIONS,
                                                               **OPTIONS).text()
    assert lab12.check_acl_predictions(..., ACLS, QUESTIONS, **OPTIONS).status == "todo"


def test_acl_table_names_rule_and_acl():
    rows = {r["question"]: r for r in lab12.acl_table(ACLS, QUESTIONS, **OPTIONS)}
    assert rows["describe"]["rule"] == "allow acl"
    assert rows["describe"]["deciding ACLs"] == "ALLOW User:* WRITE on LITERAL orders; ALLOW User:alice READ on LITERAL orders"
    assert rows["deny wins"]["deciding ACLs"] == "DENY User:bob WRITE on LITERAL orders"
    assert rows["deny wins"]["rule"] == "deny acl" and rows["no acl"]["rule"] == "no acl found"
    assert rows["super"]["rule"] == "super user"


def test_server_signature_is_rfc_7677s():
    assert lab12.check_server_signature("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", **RFC).passed
    proof = lab12.check_server_signature("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", **RFC)
    assert not proof.passed and "client proof" in proof.text()
    assert "base64 text" in lab12.check_server_signature(b"x", **RFC).text()
    assert lab12.check_server_signature(..., **RFC).status == "todo"


def test_refusals_computed_by_kafka_config():
    base = {"listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,BROKER:PLAINTEXT", "sasl.enabled.mechanisms":
            "PLAIN", "listener.name.client.plain.sasl.jaas.config": jaas_line("PLAIN", "admin", "pw")}
    configs = {"ok": {**base, "inter.broker.listener.name": "BROKER"},
               "gssapi": {**base, "inter.broker.listener.name": "CLIENT"},
               "unknown": {**base, "inter.broker.listener.name": "INTERNAL"}}
    assert lab12.check_refusals({"gssapi", "unknown"}, configs).passed
    assert lab12.check_refusals(["gssapi", "unknown"], configs).passed
    assert not lab12.check_refusals({"gssapi"}, configs).passed
    assert "not in the task" in lab12.check_refusals({"gssapi", "unknown", "zzz"}, configs).text()


def test_token_text_hides_only_what_a_broker_draws_at_random():
    salt = base64.b64encode(b"s" * 16).decode()
    server_first = f"r=abcXYZ,s={salt},i=4096".encode()
    assert lab12.token_text(server_first, "abc") == "r=abc<+3 chars of server nonce>,s=<16-byte salt>,i=4096"
    assert lab12.token_text(server_first) == server_first.decode()
    assert lab12.token_text(b"c=biws,r=abcXYZ,p=AAAA", "abc") == "c=biws,r=abc<+3 chars of server nonce>,p=<client proof>"
    assert lab12.token_text(b"\0alice\0pw", "") == "\\0alice\\0pw"


def test_hand_fed_login_follows_the_state_table():
    f = ScramFormatter(SCRAM_MECHANISMS["SCRAM-SHA-256"])
    salt = base64.b64decode(RFC["salt_b64"])
    credential = f.generate_credential(salt, f.salted_password("pencil", salt, 4096), 4096)
    rows, auth = lab12.hand_fed_login("SCRAM-SHA-256", "user", "pencil", credentials={"user": credential},
                                      client_nonce=RFC["client_nonce"], server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert [r["state after"] for r in rows] == ["HANDSHAKE_REQUEST", "AUTHENTICATE", "AUTHENTICATE", "COMPLETE"]
    assert rows[-1]["answer token"] == "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    # the table names the messages; the tokens go in full to conversation(), one line each
    assert [r["fed"] for r in rows][2:] == ["SaslAuthenticate v2 (client-first)", "SaslAuthenticate v2 (client-final)"]
    assert [r["answer"] for r in rows] == ["", "", "server-first", "server-final"]
    lines = lab12.conversation(rows).splitlines()
    assert [line.split()[:2] for line in lines] == [["client", "client-first:"], ["broker", "server-first:"],
                                                    ["client", "client-final:"], ["broker", "server-final:"]]
    assert lines[-1].endswith(" v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert lab12.message_name(b"\0alice\0pw") == lab12.message_name("\\0alice\\0pw") == "PLAIN token"
    assert str(auth.principal) == "User:user"
    drawn = lab12.state_diagram(auth.history).source
    assert 'AUTHENTICATE -> COMPLETE [label="token (last)" color="#2b8a3e"' in drawn
    assert 'INITIAL_REQUEST -> AUTHENTICATE [label=SaslHandshake color="#adb5bd"' in drawn
    rows, auth = lab12.hand_fed_login("PLAIN", "alice", "wrong", credentials={}, client_nonce="", server_nonce="",
                                      handshake_version=0)
    assert rows[-1]["decision"] == "close" and auth.principal is None


def test_refused_requests_parse_the_broker_log_line():
    line = ("[KafkaApi-0] Error when handling request: clientId=0, correlationId=0, api=UPDATE_METADATA, version=7\n"
            "org.apache.kafka.common.errors.ClusterAuthorizationException: Request Request(processor=0, "
            "connectionId=<connection>, session=Session(User:ANONYMOUS,/127.0.0.1), listenerName=ListenerName("
            "PLAINTEXT), securityProtocol=PLAINTEXT, buffer=null) is not authorized.")
    assert lab12.refused_requests([line, "something else"]) == [
        {"broker": 0, "clientId": "0", "correlationId": 0, "api": "UPDATE_METADATA",
         "exception": "ClusterAuthorizationException", "principal": "User:ANONYMOUS", "listener": "PLAINTEXT"}]


def test_settings_refusal_and_a_login_on_the_wire():
    assert "sasl.mechanism.inter.broker.protocol must be included" in lab12.refusal(
        lab12.listener_overrides(mechanisms=("SCRAM-SHA-256",)))
    with Cluster(brokers=1, overrides=lab12.listener_overrides()) as c:
        port = next(e.port for e in c.broker(0).bound_endpoints if e.listener_name == "CLIENT")
        wire = lab12.Wire(port)
        assert lab12.login(wire, "PLAIN", "alice", "alice-secret")["error_code"] == 0
        wire.close()
        assert [r["SASL token"] for r in lab12.steps_table(wire.steps)] == ["", "", "\\0alice\\0alice-secret", ""]
        source = lab12.listeners_diagram(c).source
        assert '"0_BROKER" -> "0_BROKER"' in source and 'client -> "0_CLIENT"' in source
        # a lone broker without topics got only UpdateMetadata from its controller: the picture says no more
        assert '"0_BROKER" -> "0_BROKER" [label=UpdateMetadata' in source and "LeaderAndIsr" not in source
        wire = lab12.Wire(port)
        failed = lab12.login(wire, "PLAIN", "alice", "wrong")
        assert failed["error_code"] == 58 and wire.closed()
        wire.close()


def test_listener_overrides_with_a_control_plane_listener():
    config = lab12.listener_overrides(control_plane=True)
    assert config["listeners"] == "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0,CONTROL://127.0.0.1:0"
    assert config["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT,CONTROL:SASL_PLAINTEXT"
    assert config["control.plane.listener.name"] == "CONTROL"
    assert {"listener.name.control.plain.sasl.jaas.config", "listener.name.control.scram-sha-256.sasl.jaas.config"} <= set(config)
    assert "control.plane.listener.name" not in lab12.listener_overrides()
    assert "should have a different value from the inter broker listener name" in lab12.refusal(
        lab12.listener_overrides(**{"control.plane.listener.name": "BROKER"}))


def test_the_sasl_state_picture_fits_a_page_without_shrinking_its_text():
    """Drawn left to right it was 1794 pt wide: a notebook shrank it to half, its 12 px labels to 6 px."""
    width_pt = float(re.search(r'<svg width="([\d.]+)pt"', lab12.state_diagram().svg()).group(1))
    assert width_pt * 4 / 3 <= 1000          # px; a notebook's output area is about 1150 px wide at a 1280 px window
