"""SaslServerAuthenticator, fed frames by hand: the state table, Kafka's errors, re-authentication (KIP-368)."""
import pytest

from kafkalab.protocol import ApiKey, ErrorCode, encode_request, make_request, request_class
from kafkalab.security.plain import PlainSaslServer, plain_client_token
from kafkalab.security.sasl_client import SaslClientAuthenticator
from kafkalab.security.sasl_server import Outcome, SaslServerAuthenticator, SaslState
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter
from kafkalab.security.scram_sasl import ScramSaslServer

VERSIONS = {ApiKey.API_VERSIONS: (0, 4), ApiKey.SASL_HANDSHAKE: (0, 1), ApiKey.SASL_AUTHENTICATE: (0, 2),
            ApiKey.METADATA: (0, 12)}
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM = {"alice": ScramFormatter(SCRAM_MECHANISMS["SCRAM-SHA-256"]).credential_from_password("alice-secret", 4096)}


def _factory(mechanism):
    if mechanism == "PLAIN":
        return PlainSaslServer(USERS.get)
    return ScramSaslServer(mechanism, SCRAM.get)


def _auth(reauth_ms=0, mechanisms=("PLAIN", "SCRAM-SHA-256")):
    return SaslServerAuthenticator(mechanisms, _factory, VERSIONS, connections_max_reauth_ms=reauth_ms)


def frame(key, version, corr=1, **fields):
    return encode_request(make_request(request_class(key)(**fields), api_version=version, correlation_id=corr))


def handshake(mechanism, version=1):
    return frame(ApiKey.SASL_HANDSHAKE, version, mechanism=mechanism)


def authenticate(token, version=2, corr=3):
    return frame(ApiKey.SASL_AUTHENTICATE, version, corr, auth_bytes=token)


def test_plain_v1_login_path():
    auth = _auth()
    d = auth.receive(frame(ApiKey.API_VERSIONS, 3, client_software_name="x", client_software_version="1"), 0)
    assert d.outcome is Outcome.FORWARD and auth.state is SaslState.HANDSHAKE_REQUEST
    d = auth.receive(handshake("PLAIN"), 0)
    assert d.outcome is Outcome.CONTINUE and d.response.body.error_code == 0
    assert list(d.response.body.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
    d = auth.receive(authenticate(plain_client_token("alice", "alice-secret")), 0)
    assert d.outcome is Outcome.AUTHENTICATED and str(d.principal) == "User:alice"
    assert d.response.correlation_id == 3 and d.response.body.error_code == 0
    assert auth.authenticated and auth.state is SaslState.COMPLETE
    assert [h[1] for h in auth.history] == ["ApiVersions", "SaslHandshake", "token (last)"]


def test_plain_v0_raw_tokens():
    auth = _auth()
    assert auth.receive(handshake("PLAIN", version=0), 0).outcome is Outcome.CONTINUE
    d = auth.receive(plain_client_token("alice", "alice-secret"), 0)
    assert d.outcome is Outcome.AUTHENTICATED and d.token == b"" and d.response is None


def test_v0_wrong_password_closes_without_response():
    auth = _auth()
    auth.receive(handshake("PLAIN", version=0), 0)
    d = auth.receive(plain_client_token("alice", "nope"), 0)
    assert d.outcome is Outcome.CLOSE and d.response is None and d.token is None


def test_scram_v1_login_with_the_client_half():
    auth = _auth()
    client = SaslClientAuthenticator("SCRAM-SHA-256", "alice", "alice-secret")
    d = auth.receive(handshake("SCRAM-SHA-256"), 0)
    client.on_handshake_response(d.response.body)
    while (request := client.next_request()) is not None:
        _key, version, body = request
        d = auth.receive(encode_request(make_request(body, api_version=version, correlation_id=5)), 0)
        client.on_authenticate_response(d.response.body)
    assert d.outcome is Outcome.AUTHENTICATED and client.complete and str(auth.principal) == "User:alice"


def test_unsupported_mechanism_lists_enabled_and_fails():
    auth = _auth()
    d = auth.receive(handshake("GSSAPI"), 0)
    assert d.outcome is Outcome.FAIL
    assert d.response.body.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert list(d.response.body.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]


@pytest.mark.parametrize("first", [
    frame(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False),
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",            # a TLS ClientHello on a SASL_PLAINTEXT port
    b"",
    b"\x00\x11",                                                # a header cut short
])
def test_anything_but_apiversions_or_handshake_closes_without_response(first):
    auth = _auth()
    d = auth.receive(first, 0)
    assert d.outcome is Outcome.CLOSE and d.response is None and auth.state is SaslState.FAILED


def test_after_v1_handshake_other_requests_get_illegal_sasl_state():
    auth = _auth()
    auth.receive(handshake("PLAIN"), 0)
    d = auth.receive(handshake("PLAIN"), 0)
    assert d.outcome is Outcome.FAIL and d.response.body.error_code == ErrorCode.ILLEGAL_SASL_STATE
    # Kafka answers any other request with its getErrorResponse (IllegalSaslStateException), then closes: without
    # the broker's error builders, the response's top-level error code carries it
    auth = _auth()
    auth.receive(handshake("PLAIN"), 0)
    d = auth.receive(frame(ApiKey.METADATA, 12, 7, topics=None, allow_auto_topic_creation=False), 0)
    assert d.outcome is Outcome.FAIL and d.response.api_key == ApiKey.METADATA and d.response.correlation_id == 7
    assert d.response.body.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert d.reason == "Unexpected Kafka request of type METADATA during SASL authentication."
    assert auth.state is SaslState.FAILED


def test_after_v1_handshake_a_request_that_cannot_carry_the_error_only_closes():
    seen = []

    def no_error_field(request, code, message):
        seen.append((request.api_key, code, message))
        return None
    auth = SaslServerAuthenticator(("PLAIN",), _factory, VERSIONS, error_response=no_error_field)
    auth.receive(handshake("PLAIN"), 0)
    d = auth.receive(frame(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False), 0)
    assert d.outcome is Outcome.CLOSE and d.response is None
    assert seen == [(ApiKey.METADATA, ErrorCode.ILLEGAL_SASL_STATE,
                     "Unexpected Kafka request of type METADATA during SASL authentication.")]


def test_wrong_password_and_unknown_user_same_generic_error():
    bodies = []
    for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
        auth = _auth()
        client = SaslClientAuthenticator("SCRAM-SHA-256", user, password)
        client.on_handshake_response(auth.receive(handshake("SCRAM-SHA-256"), 0).response.body)
        d = auth.receive(encode_request(make_request(client.next_request()[2], api_version=2)), 0)
        client.on_authenticate_response(d.response.body)
        d = auth.receive(encode_request(make_request(client.next_request()[2], api_version=2)), 0)
        assert d.outcome is Outcome.FAIL
        bodies.append((d.response.body.error_code, d.response.body.error_message))
    assert bodies[0] == bodies[1] == (ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed during "
                                      "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")


def test_oversize_pre_auth_frame_closes():
    auth = SaslServerAuthenticator(["PLAIN"], _factory, VERSIONS, max_receive_size=100)
    d = auth.receive(b"\0" * 101, 0)
    assert d.outcome is Outcome.CLOSE and "invalid receive size" in d.reason


def test_second_apiversions_closes():
    auth = _auth()
    auth.receive(frame(ApiKey.API_VERSIONS, 0), 0)
    assert auth.receive(frame(ApiKey.API_VERSIONS, 0), 0).outcome is Outcome.CLOSE


def test_apiversions_too_new_is_forwarded_and_state_kept():
    auth = _auth()
    versions = {**VERSIONS, ApiKey.API_VERSIONS: (0, 2)}
    auth.supported_versions = versions
    assert auth.receive(frame(ApiKey.API_VERSIONS, 3, client_software_name="a", client_software_version="1"),
                        0).outcome is Outcome.FORWARD
    assert auth.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST


def _login(auth, now, user="alice", password="alice-secret", version=2):
    auth.receive(handshake("PLAIN"), now)
    return auth.receive(authenticate(plain_client_token(user, password), version=version), now)


def test_reauthentication_session_lifetime_and_expiry():
    auth = _auth(reauth_ms=1000)
    d = _login(auth, 0)
    assert d.session_lifetime_ms == 1000 and d.response.body.session_lifetime_ms == 1000
    assert not auth.session_expired(1000) and auth.session_expired(1001)
    assert auth.begins_reauthentication(handshake("PLAIN"))
    d = _login(auth, 900)
    assert d.outcome is Outcome.AUTHENTICATED and auth.session_expiration_ms == 1900
    assert ("COMPLETE", "SaslHandshake (re-authentication)") in [(str(a), b) for a, b, _ in auth.history]


def test_no_reauthentication_without_max_reauth():
    auth = _auth()
    d = _login(auth, 0)
    assert d.session_lifetime_ms == 0 and not auth.session_expired(10**12)
    assert not auth.begins_reauthentication(handshake("PLAIN"))


def test_reauthentication_cannot_change_principal_or_mechanism():
    auth = _auth(reauth_ms=1000)
    _login(auth, 0)
    d = _login(auth, 10, user="bob", password="bob-secret")
    assert d.outcome is Outcome.FAIL and "Cannot change principals during re-authentication from User:alice: " \
                                          "User:bob" in d.response.body.error_message
    auth = _auth(reauth_ms=1000)
    _login(auth, 0)
    assert auth.receive(handshake("SCRAM-SHA-256"), 10).outcome is Outcome.CONTINUE
    d = auth.receive(authenticate(b"n,,n=alice,r=x"), 10)
    assert d.outcome is Outcome.CLOSE and "not supported for re-authentication" in d.reason


def test_fuzz_any_bytes_give_a_decision_never_an_exception():
    """h11's invariant: whatever arrives, the authenticator answers with a decision (never raises), in any state."""
    import random

    rng = random.Random(16)
    prefixes = [b"", handshake("PLAIN"), handshake("SCRAM-SHA-256"), handshake("PLAIN", version=0),
                handshake("SCRAM-SHA-256", version=0)]
    valid = [handshake("PLAIN"), authenticate(b"\0alice\0alice-secret"), authenticate(b"n,,n=alice,r=abc"),
             frame(ApiKey.API_VERSIONS, 3, client_software_name="a", client_software_version="1")]
    for _ in range(3000):
        auth = _auth(reauth_ms=rng.choice([0, 1000]))
        for p in rng.sample(prefixes, 1):
            if p:
                auth.receive(p, 0)
        base = rng.choice(valid)
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.4 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif kind < 0.7:
                del data[rng.randrange(len(data) + 1):]
            else:
                data[rng.randrange(len(data) + 1):0] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        d = auth.receive(bytes(data), 0)
        assert isinstance(d.outcome, Outcome)
        if d.outcome in (Outcome.CLOSE, Outcome.FAIL):
            assert auth.state is SaslState.FAILED


def test_no_secret_reaches_any_log(caplog):
    """Failed and successful logins, PLAIN and SCRAM, with every logger at DEBUG: no password, proof or key."""
    import logging

    caplog.set_level(logging.DEBUG)
    secrets_seen = ["alice-secret", "wrong-pass-123"]
    for token in (plain_client_token("alice", "alice-secret"), plain_client_token("alice", "wrong-pass-123")):
        auth = _auth()
        auth.receive(handshake("PLAIN", version=0), 0)
        auth.receive(token, 0)
    for password in ("alice-secret", "wrong-pass-123"):
        auth = _auth()
        client = SaslClientAuthenticator("SCRAM-SHA-256", "alice", password)
        client.on_handshake_response(auth.receive(handshake("SCRAM-SHA-256"), 0).response.body)
        d = auth.receive(encode_request(make_request(client.next_request()[2], api_version=2)), 0)
        client.on_authenticate_response(d.response.body)
        final = bytes(client.next_request()[2].auth_bytes)
        secrets_seen.append(final.split(b",p=")[1].decode())
        outcome = auth.receive(authenticate(final), 0).outcome
        assert outcome is (Outcome.AUTHENTICATED if password == "alice-secret" else Outcome.FAIL)
    text = "\n".join(r.getMessage() for r in caplog.records)
    for secret in secrets_seen:
        assert secret not in text


def test_scram_over_handshake_v0_raw_tokens():
    auth = _auth()
    assert auth.receive(handshake("SCRAM-SHA-256", version=0), 0).outcome is Outcome.CONTINUE
    from kafkalab.security.scram_sasl import ScramSaslClient

    client = ScramSaslClient("SCRAM-SHA-256", "alice", "alice-secret")
    d = auth.receive(client.initial_response(), 0)
    assert d.outcome is Outcome.CONTINUE and d.token.startswith(b"r=") and d.response is None
    d = auth.receive(client.evaluate_challenge(d.token), 0)
    assert d.outcome is Outcome.AUTHENTICATED and d.token.startswith(b"v=")
    assert client.evaluate_challenge(d.token) is None and client.complete
