"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): SCRAM users in the coordination store,
and SaslHandshake (17) / SaslAuthenticate (36) on a connection that needs no (more) login.

Theory of operation
-------------------
A SCRAM user is a user config in the coordination store: ``/config/users/<sanitized user>`` holds
``{"SCRAM-SHA-256": "salt=..,stored_key=..,server_key=..,iterations=8192"}`` (the user name URL-encoded,
Kafka's ``Sanitizer``). AlterUserScramCredentials never carries a password: the client sends the salt and
the *salted* password (PBKDF2 done on the client), the broker derives the stored and server keys
(:meth:`~kafkalab.security.scram.ScramFormatter.generate_credential`), writes them and a change notification.
Validation is Kafka's, with its messages and codes: an empty user name (RESOURCE_NOT_FOUND "Username must not
be empty"), an unknown mechanism (UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"), iterations outside
4096-16384 (UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations"), one user and mechanism
twice (DUPLICATE_RESOURCE), deleting a credential that does not exist (RESOURCE_NOT_FOUND). Describe lists
mechanisms and iteration counts, never keys.

SaslHandshake and SaslAuthenticate reach the request handlers only when the connection needs no login (a
PLAINTEXT listener, or after a login without re-authentication): Kafka answers ILLEGAL_SASL_STATE.

Mirrors: ``ZkAdminManager.describeUserScramCredentials`` / ``alterUserScramCredentials``,
``KafkaApis.handleSaslHandshakeRequest`` / ``handleSaslAuthenticateRequest``, ``utils/Sanitizer.java``.
"""
from __future__ import annotations

import collections
import logging
from urllib.parse import quote, unquote

from kafkalab.protocol import ApiKey, ErrorCode, fit_error_message, response_class
from kafkalab.security.scram import (MAX_ITERATIONS, SCRAM_MECHANISMS, ScramFormatter, credential_from_string,
                                     credential_to_string)
from kafkalab.server.apis.base import handles, top_level_error

__all__ = ["sanitize", "desanitize", "user_scram_config", "MECHANISM_BY_TYPE"]

log = logging.getLogger("kafkalab.server.ScramCredentials")

USERS = "users"
MECHANISM_BY_TYPE = {m.type_id: m for m in SCRAM_MECHANISMS.values()}
_USERNAME_EMPTY = "Username must not be empty"
Describe = response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
Alter = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding (UTF-8) with ``*`` and space as ``%2A`` and ``%20``."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote(name)


def user_scram_config(zk, user: str) -> dict:
    """The user's config in the coordination store ({} when there is none)."""
    return zk.get_entity_configs(USERS, sanitize(user))


def _describe_one(zk, user: str, explicit: bool):
    config = user_scram_config(zk, user)
    infos = []
    try:
        for mechanism in SCRAM_MECHANISMS.values():
            if mechanism.mechanism_name in config:
                iterations = credential_from_string(config[mechanism.mechanism_name]).iterations
                infos.append(Describe.CredentialInfo(mechanism=mechanism.type_id, iterations=iterations))
    except ValueError as e:
        return Describe.DescribeUserScramCredentialsResult(user=user, error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                                                           error_message=str(e), credential_infos=())
    if not infos:
        if not explicit:
            return None
        return Describe.DescribeUserScramCredentialsResult(
            user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND, credential_infos=(),
            error_message=fit_error_message(f"Attempt to describe a user credential that does not exist: {user}"))
    return Describe.DescribeUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE, error_message=None,
                                                       credential_infos=tuple(infos))


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=(0, 0),
         error_response=top_level_error(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS))
def handle_describe_user_scram_credentials(broker, request):
    zk = broker.zk
    users = request.body.users
    results = []
    if not users:   # null or empty: every user with a SCRAM credential, sorted
        for name in sorted(desanitize(n) for n in zk.get_all_entities_with_config(USERS)):
            result = _describe_one(zk, name, explicit=False)
            if result is not None:
                results.append(result)
    else:
        names = [u.name for u in users]
        counts = collections.Counter(names)
        for name in dict.fromkeys(names):
            if not name:
                results.append(Describe.DescribeUserScramCredentialsResult(
                    user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND, error_message=_USERNAME_EMPTY,
                    credential_infos=()))
            elif counts[name] > 1:
                results.append(Describe.DescribeUserScramCredentialsResult(
                    user=name, error_code=ErrorCode.DUPLICATE_RESOURCE, credential_infos=(),
                    error_message=fit_error_message(
                        f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}")))
            else:
                results.append(_describe_one(zk, name, explicit=True))
    return Describe(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=tuple(results))


def _alter_error(user: str, code: int, message: str):
    return Alter.AlterUserScramCredentialsResult(user=user, error_code=code, error_message=fit_error_message(message))


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=(0, 0))
def handle_alter_user_scram_credentials(broker, request):
    deletions, upsertions = request.body.deletions or (), request.body.upsertions or ()
    errors: dict[str, tuple] = {}
    for d in deletions:
        if not d.name:
            errors[d.name] = (ErrorCode.RESOURCE_NOT_FOUND, _USERNAME_EMPTY)
        elif d.mechanism not in MECHANISM_BY_TYPE:
            errors[d.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    for u in upsertions:
        if not u.name:
            errors[u.name] = (ErrorCode.RESOURCE_NOT_FOUND, _USERNAME_EMPTY)
        elif u.mechanism not in MECHANISM_BY_TYPE:
            errors[u.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif u.iterations < MECHANISM_BY_TYPE[u.mechanism].min_iterations:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    results = [_alter_error(user, code, message) for user, (code, message) in errors.items()]
    pairs = [(x.name, x.mechanism) for x in (*upsertions, *deletions) if x.name not in errors]
    duplicated = {user for (user, _), n in collections.Counter(pairs).items() if n > 1}
    results += [_alter_error(user, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in "
                             "the same request") for user in dict.fromkeys(u for u, _ in pairs if u in duplicated)]
    candidates = list(dict.fromkeys(u for u, _ in pairs if u not in duplicated))
    zk = broker.zk
    configs = {user: dict(user_scram_config(zk, user)) for user in candidates}
    missing = {d.name for d in deletions if d.name in configs
               and MECHANISM_BY_TYPE[d.mechanism].mechanism_name not in configs[d.name]}
    results += [_alter_error(user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does "
                             "not exist") for user in candidates if user in missing]
    for user in (u for u in candidates if u not in missing):
        config = configs[user]
        try:
            for d in (d for d in deletions if d.name == user):
                config.pop(MECHANISM_BY_TYPE[d.mechanism].mechanism_name, None)
            for u in (u for u in upsertions if u.name == user):
                mechanism = MECHANISM_BY_TYPE[u.mechanism]
                credential = ScramFormatter(mechanism).generate_credential(bytes(u.salt), bytes(u.salted_password),
                                                                           u.iterations)
                config[mechanism.mechanism_name] = credential_to_string(credential)
            zk.set_or_create_entity_configs(USERS, sanitize(user), config)
            zk.create_config_change_notification(f"{USERS}/{sanitize(user)}")
        except Exception as e:  # noqa: BLE001 -- reported per user, as Kafka does
            log.info("Error encountered while altering user SCRAM credentials: %s", type(e).__name__)
            results.append(_alter_error(user, ErrorCode.UNKNOWN_SERVER_ERROR, None))
            continue
        log.info("[%s] SCRAM credentials of user %s altered", broker.name, user)
        results.append(_alter_error(user, ErrorCode.NONE, None))
    return Alter(throttle_time_ms=0, results=tuple(results))


@handles(ApiKey.SASL_HANDSHAKE, versions=(0, 1), error_response=top_level_error(ApiKey.SASL_HANDSHAKE))
def handle_sasl_handshake(broker, request):
    return response_class(ApiKey.SASL_HANDSHAKE)(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())


@handles(ApiKey.SASL_AUTHENTICATE, versions=(0, 2), error_response=top_level_error(ApiKey.SASL_AUTHENTICATE))
def handle_sasl_authenticate(broker, request):
    return response_class(ApiKey.SASL_AUTHENTICATE)(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"", session_lifetime_ms=0,
        error_message="SaslAuthenticate request received after successful authentication")
