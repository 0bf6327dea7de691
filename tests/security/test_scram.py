"""SCRAM-SHA-256/512: RFC 7677's and RFC 5802's vectors, the credential format, and every way a login fails."""
import base64

import pytest

from kafkalab.security.errors import SaslAuthenticationException, SaslException
from kafkalab.security.scram import (SCRAM_MECHANISMS, ClientFinalMessage, ClientFirstMessage, ScramFormatter,
                                     credential_from_string, credential_to_string, escape_username,
                                     unescape_username)
from kafkalab.security.scram_sasl import ScramSaslClient, ScramSaslServer, ScramServerState

SHA256 = ScramFormatter(SCRAM_MECHANISMS["SCRAM-SHA-256"])
RFC7677 = dict(user="user", password="pencil", cnonce="rOprNGfwEbeRWgbNEkqO",
               snonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))


def _server(credentials, mechanism="SCRAM-SHA-256", snonce=RFC7677["snonce"]):
    return ScramSaslServer(mechanism, credentials.get, nonce=lambda: snonce)


def test_rfc7677_exchange_client_and_server():
    v = RFC7677
    credential = SHA256.credential_from_password(v["password"], 4096, v["salt"])
    server = _server({"user": credential})
    client = ScramSaslClient("SCRAM-SHA-256", v["user"], v["password"], nonce=v["cnonce"])
    first = client.initial_response()
    assert first == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.evaluate_response(first)
    assert server_first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = client.evaluate_challenge(server_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = server.evaluate_response(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert client.evaluate_challenge(server_final) is None
    assert client.complete and server.complete and server.authorization_id == "user"


def test_rfc5802_sha1_vector_with_the_same_arithmetic():
    """RFC 5802 §5 (SHA-1): the formatter's arithmetic is hash-agnostic."""
    from kafkalab.security.scram import ScramMechanism

    sha1 = ScramFormatter(ScramMechanism("SCRAM-SHA-1", "sha1", 0))
    salted = sha1.salted_password("pencil", base64.b64decode("QSXCR+Q6sek8bf92"), 4096)
    first = ClientFirstMessage("user", "fyko+d2lbbFgONRv9qkxdawL")
    from kafkalab.security.scram import ServerFirstMessage
    server_first = ServerFirstMessage("fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j", base64.b64decode("QSXCR+Q6sek8bf92"),
                                      4096)
    final = ClientFinalMessage(b"n,,", server_first.nonce)
    auth = ScramFormatter.auth_message(first, server_first, final)
    assert base64.b64encode(sha1.client_proof(salted, auth)) == b"v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    assert base64.b64encode(sha1.server_signature(sha1.server_key(salted), auth)) == b"rmF9pqV8S7suAoZWja4dJRkFsKQ="


def test_credential_string_round_trip_and_password_never_stored():
    c = SHA256.credential_from_password("secret", 8192)
    text = credential_to_string(c)
    assert text.startswith("salt=") and ",stored_key=" in text and text.endswith(",iterations=8192")
    assert "secret" not in text and "secret" not in repr(c)
    assert credential_from_string(text) == c
    with pytest.raises(ValueError):
        credential_from_string("salt=AA==,iterations=4096")


@pytest.mark.parametrize("name,escaped", [("a,b", "a=2Cb"), ("a=b", "a=3Db"), ("plain", "plain")])
def test_rfc5802_name_escaping(name, escaped):
    assert escape_username(name) == escaped
    assert unescape_username(escaped) == name


def test_escaped_user_logs_in():
    credential = SHA256.credential_from_password("pw", 4096)
    server = ScramSaslServer("SCRAM-SHA-256", {"al,i=ce": credential}.get)
    client = ScramSaslClient("SCRAM-SHA-256", "al,i=ce", "pw")
    assert b"n=al=2Ci=3Dce" in client.initial_response()
    client.evaluate_challenge(server.evaluate_response(
        client.evaluate_challenge(server.evaluate_response(client.initial_response()))))
    assert server.authorization_id == "al,i=ce" and client.complete


def test_invalid_escape_is_refused():
    server = ScramSaslServer("SCRAM-SHA-256", {}.get)
    with pytest.raises(SaslException):
        server.evaluate_response(b"n,,n=a=2Xb,r=abc")
    assert server.state is ScramServerState.FAILED


def _login(server, client):
    return client.evaluate_challenge(server.evaluate_response(client.initial_response()))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_and_unknown_user_fail_alike(mechanism):
    credential = ScramFormatter(SCRAM_MECHANISMS[mechanism]).credential_from_password("right", 4096)
    users = {"alice": credential}
    messages = []
    for user, password in (("alice", "wrong"), ("mallory", "anything")):
        server = ScramSaslServer(mechanism, users.get)
        client = ScramSaslClient(mechanism, user, password)
        server_first = server.evaluate_response(client.initial_response())
        assert b",i=4096" in server_first   # an unknown user gets a server-first too
        with pytest.raises(SaslException) as e:
            server.evaluate_response(client.evaluate_challenge(server_first))
        messages.append(str(e.value))
        assert server.state is ScramServerState.FAILED
    assert messages[0] == messages[1] == "Invalid client credentials"


def test_unknown_user_salt_is_stable():
    a = ScramSaslServer("SCRAM-SHA-256", {}.get).evaluate_response(b"n,,n=ghost,r=abc")
    b = ScramSaslServer("SCRAM-SHA-256", {}.get).evaluate_response(b"n,,n=ghost,r=abc")
    assert a.split(b",s=")[1] == b.split(b",s=")[1]


def test_cve_2024_56128_final_nonce_must_be_the_combined_nonce():
    credential = SHA256.credential_from_password("pw", 4096)
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": credential}.get, nonce=lambda: "SERVER")
    server.evaluate_response(b"n,,n=alice,r=CLIENT")
    # a client-final whose nonce only ends with the server's part, not the combined nonce
    with pytest.raises(SaslException, match="nonce"):
        server.evaluate_response(b"c=biws,r=OTHERSERVER,p=" + base64.b64encode(bytes(32)))
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": credential}.get, nonce=lambda: "SERVER")
    server.evaluate_response(b"n,,n=alice,r=CLIENT")
    with pytest.raises(SaslException, match="nonce"):   # no nonce from the server at all
        server.evaluate_response(b"c=biws,r=CLIENT,p=" + base64.b64encode(bytes(32)))


def test_librdkafka_before_2_6_1_repeated_client_nonce_is_accepted_as_kafka_3_9_does():
    """librdkafka#4895: r=<client nonce><client nonce><server nonce>; the proof is over what it sent."""
    credential = SHA256.credential_from_password("pw", 4096)
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": credential}.get, nonce=lambda: "SERVER")
    first = ClientFirstMessage("alice", "CLIENT")
    server_first_bytes = server.evaluate_response(first.to_bytes())
    from kafkalab.security.scram import ServerFirstMessage
    server_first = ServerFirstMessage.parse(server_first_bytes)
    final = ClientFinalMessage(b"n,,", "CLIENT" + server_first.nonce)
    salted = SHA256.salted_password("pw", server_first.salt, 4096)
    proof = SHA256.client_proof(salted, ScramFormatter.auth_message(first, server_first, final))
    assert server.evaluate_response(ClientFinalMessage(b"n,,", final.nonce, proof).to_bytes()).startswith(b"v=")


def test_too_few_iterations_refused_by_server_and_client():
    weak = SHA256.credential_from_password("pw", 1000)
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": weak}.get)
    with pytest.raises(SaslException, match="less than the minimum 4096"):
        server.evaluate_response(b"n,,n=alice,r=abc")
    client = ScramSaslClient("SCRAM-SHA-256", "alice", "pw", nonce="abc")
    client.initial_response()
    with pytest.raises(SaslAuthenticationException, match="minimum 4096"):
        client.evaluate_challenge(b"r=abcdef,s=AAAA,i=1000")


def test_client_refuses_foreign_nonce_and_forged_server_signature():
    client = ScramSaslClient("SCRAM-SHA-256", "alice", "pw", nonce="abc")
    with pytest.raises(SaslAuthenticationException, match="nonce"):
        client.evaluate_challenge(b"r=xyz123,s=AAAA,i=4096")
    credential = SHA256.credential_from_password("pw", 4096)
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": credential}.get)
    client = ScramSaslClient("SCRAM-SHA-256", "alice", "pw")
    server.evaluate_response(_login(server, client))
    with pytest.raises(SaslAuthenticationException, match="server signature"):
        client.evaluate_challenge(b"v=" + base64.b64encode(bytes(32)))


@pytest.mark.parametrize("token", [b"", b"garbage", b"n,,n=,r=x", b"\xff\xfe", b"n,,n=a,r=b" + b"x" * 10000 + b",",
                                   b"y,,n=a,r=b", b"n,a=bob,n=alice,r=x"])
def test_malformed_client_first_fails_cleanly(token):
    server = ScramSaslServer("SCRAM-SHA-256", {}.get)
    with pytest.raises((SaslException, SaslAuthenticationException)):
        server.evaluate_response(token)
    assert server.state is ScramServerState.FAILED


def test_no_third_message_after_completion():
    credential = SHA256.credential_from_password("pw", 4096)
    server = ScramSaslServer("SCRAM-SHA-256", {"alice": credential}.get)
    client = ScramSaslClient("SCRAM-SHA-256", "alice", "pw")
    server.evaluate_response(_login(server, client))
    with pytest.raises(SaslException):
        server.evaluate_response(b"again")
